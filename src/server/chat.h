/*
 * chat.h - OpenAI chat messages to prompt tokens, through the model's chat template.
 *
 * Messages are normalized first (mlx-bun's normalizeMessages): `developer` becomes `system`,
 * content-part arrays become one string (text parts joined by newlines; image or audio parts
 * are refused: no vision yet), null content becomes "". The template context is the JSON
 * object {messages, tools?, add_generation_prompt: true, bos_token, eos_token,
 * enable_thinking?, ...chat_template_kwargs}; the rendered text is tokenized with special
 * tokens parsed, and a BOS the template wrote is not doubled by the tokenizer's own.
 *
 * Thread rule: any thread (the template is immutable once parsed).
 */
#pragma once
#include <cjson/cJSON.h>

#include "server/server_internal.h"

/* Build the prompt of a chat request (root: the parsed body). On success *ids (malloc'ed,
 * caller frees) holds *n_ids tokens; on failure e says why (400 for bad messages, a template
 * that raises, or a model without a template). */
bool hearth_chat_prompt(hearth_server *s, const cJSON *root, int32_t **ids, size_t *n_ids, hearth_api_err *e);

/* The model's template, parsed once at start (chat_template.c). On failure s->tmpl stays NULL
 * and s->tmpl_error says why (chat then answers with it); never fails the server. */
void          hearth_chat_init(hearth_server *s);
void          hearth_chat_fini(hearth_server *s);
/* Render s->tmpl (non-NULL) with the context JSON; *out malloc'ed (caller frees). */
hearth_status hearth_chat_render(hearth_server *s, const char *ctx_json, size_t n, char **out, size_t *out_len,
                                 hearth_err *err);
