/*
 * chat.h - the command line's chat-template plumbing, shared by `hearth template` and
 * `hearth generate`: where a model's template comes from, the render context as transformers
 * builds it, rendering with readable errors, and tokenizing the result without a doubled BOS.
 *
 * The context JSON is assembled as text around the caller's JSON (never parsed and printed
 * again), so numbers keep their spelling: `tojson` must print a tool schema's 1 as 1 and 1.0
 * as 1.0, as Python does.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "model/model.h"

/* The whole file at path, NUL-terminated and malloc'ed (*n bytes, without the NUL); NULL with
 * a message printed when it cannot be read or is larger than 256 MiB. what names the flag. */
char *cli_read_file(const char *what, const char *path, size_t *n);

/*
 * The chat template of a loaded model, malloc'ed: the GGUF's tokenizer.chat_template, else a
 * chat_template.jinja next to the model file, else the "chat_template" of a
 * tokenizer_config.json there (a list of named templates picks "tool_use" when tools are
 * given and it exists, else "default", as transformers does). NULL when there is none; origin
 * (may be NULL) gets where it came from.
 */
char *cli_chat_template(const hearth_model *m, const char *model_path, bool with_tools, char *origin,
                        size_t origin_cap);

/*
 * The render context, malloc'ed JSON text, in transformers' order (later keys win):
 * {"messages": MESSAGES, "tools": TOOLS or null, "documents": null, "add_generation_prompt":
 * AGP, "bos_token": ..., "eos_token": ... (when tok is given), KWARGS' members...}.
 * The caller has checked that messages_json is a JSON array, tools_json (or NULL) an array and
 * kwargs_json (or NULL) an object. NULL only when out of memory.
 */
char *cli_chat_context(const char *messages_json, const char *tools_json, bool add_generation_prompt,
                       const hearth_tok *tok, const char *kwargs_json);

/* [{"role": "user", "content": PROMPT}] as JSON text, malloc'ed (NULL when out of memory). */
char *cli_chat_user_message(const char *prompt);

/* Parse and render template src with the context; 0 with *out malloc'ed, or 1 after printing
 * the error with the template's line and column. */
int cli_chat_render(const char *src, const char *ctx_json, char **out, size_t *out_len);

/*
 * Tokens of a rendered prompt: special-token text becomes special tokens; a BOS is put in
 * front when the vocab asks for one and the text does not already start with the BOS token's
 * text (so a template that writes {{ bos_token }} never gets two); never an EOS.
 */
hearth_status cli_chat_tokenize(const hearth_tok *tok, const char *text, size_t n, int32_t **ids, size_t *n_ids);
