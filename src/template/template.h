/*
 * template.h - chat templates: a sandboxed Jinja2 interpreter with the semantics transformers
 * uses for apply_chat_template (trim_blocks and lstrip_blocks on, autoescape off,
 * raise_exception, strftime_now, transformers' tojson, loop.*, namespace(), macros, the
 * filters, tests and str/list/dict methods real templates use).
 *
 * The render context is one JSON object (the variables: messages, tools, add_generation_prompt,
 * bos_token, eos_token, enable_thinking, and any extra kwargs), so callers (CLI, server) build
 * plain JSON and never see the interpreter's value model. template/ depends on base/ only
 * (plus cJSON for reading the context).
 *
 * Limits (output bytes, loop iterations, call depth) keep a hostile template from exhausting
 * the process; a parse or render error carries the template line and column in hearth_err.
 *
 * Thread rule: a parsed template is immutable; render it from any number of threads.
 */
#pragma once
#include <stddef.h>

#include "base/status.h"

typedef struct hearth_tmpl hearth_tmpl;

typedef struct {
    size_t max_output_bytes; /* default 8 MiB */
    size_t max_steps;        /* loop iterations + calls; default 10 million */
    int    max_depth;        /* nesting of calls/macros/includes; default 64 */
} hearth_tmpl_limits;

hearth_tmpl_limits hearth_tmpl_limits_default(void);

/* Parse src[0..n). On failure *out = NULL and err has line/col of the problem. */
hearth_status hearth_tmpl_parse(const char *src, size_t n, hearth_tmpl **out, hearth_err *err);
void          hearth_tmpl_destroy(hearth_tmpl *t); /* accepts NULL */

/* Render with the variables of the JSON object ctx_json[0..n). *out is malloc'ed, NUL-
 * terminated, *out_len bytes (caller frees). raise_exception('msg') in the template gives
 * HEARTH_E_INVALID with msg in err. limits may be NULL (defaults). */
hearth_status hearth_tmpl_render(const hearth_tmpl *t, const char *ctx_json, size_t n,
                                 const hearth_tmpl_limits *limits, char **out, size_t *out_len,
                                 hearth_err *err);
