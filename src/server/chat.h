/*
 * chat.h - OpenAI chat messages to prompt tokens, through the model's chat template.
 *
 * Messages are normalized first (mlx-bun's normalizeMessages): `developer` becomes `system`,
 * content-part arrays become one string (text parts joined by newlines; image and audio parts
 * are parsed into media items (media.h) and refused unless the model can use them), null content becomes "". The template context is the JSON
 * object {messages, tools (or null), documents (or null), add_generation_prompt: true,
 * bos_token, eos_token, enable_thinking?, reasoning_effort?, ...chat_template_kwargs} as
 * transformers builds it; assistant tool_calls carry their arguments as objects. The rendered text is tokenized with special
 * tokens parsed, and a BOS the template wrote is not doubled by the tokenizer's own.
 *
 * Thread rule: any thread (the template is immutable once parsed).
 */
#pragma once
#include <cjson/cJSON.h>

#include "engine/engine.h"
#include "server/media.h"
#include "server/reasoning.h"
#include "server/server_internal.h"
#include "server/toolcall.h"

/* Build the prompt of a chat request (root: the parsed body). On success *ids (malloc'ed,
 * caller frees) holds *n_ids tokens; on failure e says why (400 for bad messages, a template
 * that raises, or a model without a template). */
bool hearth_chat_prompt(hearth_server *s, const cJSON *root, int32_t **ids, size_t *n_ids, hearth_api_err *e);

/* What a dialect passes in and gets back besides the tokens. */
typedef struct {
    hearth_span      raw;            /* in: the text root was parsed from, if any: values copied
                                      * into the context keep their spelling (1.0 stays 1.0) */
    hearth_tc_format tools;          /* out: parse replies for tool calls in this format (NONE:
                                      * no tools, or tool_choice "none") */
    hearth_rs_format reasoning;      /* out: the model's reasoning markup */
    bool             reasoning_open; /* out: the prompt ends inside an open reasoning block */
    struct hearth_cx_grammar *constraint; /* out, owned by the caller (NULL: none): the reply's
                                      * forced shape: a tool call (tool_choice "required" or a
                                      * named function) or response_format's JSON (structured.h) */
    int              continue_final; /* in: continue the last message (assistant prefill):
                                      * 0 never, 1 always (400 unless the last message is an
                                      * assistant's with text), -1 when the last message is an
                                      * assistant's with text and no tool calls */
    bool             continued;      /* out: the prompt ends inside that message */
    char            *constraint_fed; /* out, owned by the caller (NULL: none): the continued
                                      * message's text, which response_format's constraint
                                      * takes in before the reply (an assistant prefill of the
                                      * JSON's start, such as "{") */
    hearth_media_list *media;        /* in, borrowed (NULL: none): the media items a dialect
                                      * collected while mapping its messages (their markers are in
                                      * the messages' text); chat's own messages' parts otherwise */
    bool             want_images;    /* in: encode the prompt's images into images (a generation;
                                      * counting tokens only expands them) */
    hearth_image_input *images;      /* out, owned by the caller (hearth_vprompt_free): the
                                      * prompt's images for the engine (vision_prompt.h) */
    int32_t          n_images;
    bool             want_text;      /* in: also return the rendered prompt text ... */
    char            *text;           /* out, owned by the caller: ... here (malloc'ed, NUL-terminated) */
    size_t           n_text;
} hearth_chat_opts;

/* hearth_chat_prompt with opts (may be NULL). Continuing the final message works as
 * transformers' continue_final_message: the template is rendered without a generation prompt
 * and the text is cut right after the last occurrence of that message's content (or of it
 * without surrounding whitespace), so the model carries on inside the turn; 400 when the
 * template does not show the content. Also reads `tools` (validated; a named
 * tool_choice keeps only that function, "none" drops them), `tool_choice` (with opts,
 * "required" and a named function set opts->constraint to force a call), `response_format`
 * (with opts: its constraint when no call is forced), `documents`,
 * `reasoning_effort` (none = enable_thinking false, a level = true; chat_template_kwargs wins,
 * then this, then --thinking). */
bool hearth_chat_prompt_opts(hearth_server *s, const cJSON *root, hearth_chat_opts *opts, int32_t **ids,
                             size_t *n_ids, hearth_api_err *e);

/* The cap on one media item's bytes (--media-max-bytes, test-only; default 64 MB). */
size_t hearth_media_max(const hearth_server *s);
/* Can the served model use every item of l? False with e filled (a 400 naming the first part
 * it cannot, and the model). The Anthropic and Responses parsers call it on what they
 * collected, chat on what its messages held. */
bool   hearth_server_media_admit(const hearth_server *s, const hearth_media_list *l, hearth_api_err *e);

/* The model's template, parsed once at start (chat_template.c). On failure s->tmpl stays NULL
 * and s->tmpl_error says why (chat then answers with it); never fails the server. */
void          hearth_chat_init(hearth_server *s);
void          hearth_chat_fini(hearth_server *s);
/* Render s->tmpl (non-NULL) with the context JSON; *out malloc'ed (caller frees). */
hearth_status hearth_chat_render(hearth_server *s, const char *ctx_json, size_t n, char **out, size_t *out_len,
                                 hearth_err *err);
