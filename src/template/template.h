/*
 * template.h - chat templates: a sandboxed Jinja2 interpreter with the semantics transformers
 * uses for apply_chat_template (trim_blocks and lstrip_blocks on, autoescape off,
 * raise_exception, strftime_now, transformers' tojson, loop.*, namespace(), macros, the
 * filters, tests and str/list/dict methods real templates use).
 *
 * The render context is one JSON object (the variables: messages, tools, add_generation_prompt,
 * bos_token, eos_token, enable_thinking, and any extra kwargs), so callers (CLI, server) build
 * plain JSON and never see the interpreter's value model. Pass it the way transformers calls
 * the template: tools and documents present (null when there are none), the tokenizer's
 * special tokens, then the caller's kwargs. template/ depends on base/ only, plus utf8proc for
 * Unicode case mapping; it reads the JSON itself (json_ctx.c) because Python keeps 1 and 1.0
 * apart and `tojson` prints them back.
 *
 * Limits (output bytes, loop iterations, call depth, memory) keep a hostile template from
 * exhausting the process; a parse or render error carries the template line and column in
 * hearth_err (1-based; column in characters), and err->pos the byte offset in the template
 * after newline normalization. Parse errors are HEARTH_E_FORMAT (HEARTH_E_UNSUPPORTED for a
 * jinja2 feature hearth does not implement, such as {% include %}); render errors are
 * HEARTH_E_INVALID (what jinja2 would raise: undefined attribute access, type errors,
 * raise_exception), HEARTH_E_LIMIT, HEARTH_E_FORMAT (the context is not valid JSON),
 * HEARTH_E_UNSUPPORTED or HEARTH_E_NOMEM.
 *
 * Thread rule: a parsed template is immutable; render it from any number of threads.
 */
#pragma once
#include <stddef.h>

#include "base/status.h"

typedef struct hearth_tmpl hearth_tmpl;

typedef struct {
    size_t max_output_bytes; /* default 8 MiB; also the longest string a render may build */
    size_t max_steps;        /* loop iterations + calls; default 10 million */
    int    max_depth;        /* nesting of calls/macros/includes; default 64 */
    size_t max_memory_bytes; /* everything one render allocates; default 256 MiB */
} hearth_tmpl_limits;

/* The defaults above. A field left 0 in the limits given to hearth_tmpl_render means its
 * default too. */
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
