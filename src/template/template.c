/*
 * template.c - the public face of template/: parse (normalize, lex, build the AST) and render
 * (read the JSON context, walk the AST under limits, hand back a malloc'ed string).
 *
 * Source normalization is jinja2's: every "\r\n" and "\r" becomes "\n" and one trailing
 * newline is dropped (keep_trailing_newline=False), so line numbers in errors are the file's.
 * The text must be UTF-8 (a template string in Python is Unicode; bytes that are not cannot
 * come from a tokenizer_config.json or a GGUF string that Python could read).
 */
#include "template/template.h"
#include "template/tmpl_internal.h"

#include <stdlib.h>
#include <string.h>

#define TMPL_MAX_SOURCE_BYTES ((size_t)16 << 20)

hearth_tmpl_limits hearth_tmpl_limits_default(void) {
    hearth_tmpl_limits l = {
        .max_output_bytes = (size_t)8 << 20,
        .max_steps = 10 * 1000 * 1000,
        .max_depth = 64,
        .max_memory_bytes = (size_t)256 << 20,
    };
    return l;
}

void tmpl_linecol(const char *src, size_t len, size_t pos, int32_t *line, int32_t *col) {
    if (pos > len) pos = len;
    int32_t ln = 1;
    size_t bol = 0;
    for (size_t i = 0; i < pos; i++)
        if (src[i] == '\n') {
            ln++;
            bol = i + 1;
        }
    *line = ln;
    *col = (int32_t)utf8_count(src + bol, pos - bol, NULL) + 1;
}

/* First byte offset where s[0..n) is not strict UTF-8, or n. */
static size_t utf8_invalid_at(const char *s, size_t n) {
    size_t bad = n;
    hearth_utf8_valid(s, n, &bad);
    return bad;
}

hearth_status hearth_tmpl_parse(const char *src, size_t n, hearth_tmpl **out, hearth_err *err) {
    hearth_err_clear(err);
    if (!out) return hearth_err_set(err, HEARTH_E_INVALID, -1, "no output pointer");
    *out = NULL;
    if (!src && n) return hearth_err_set(err, HEARTH_E_INVALID, -1, "no template text");
    if (n > TMPL_MAX_SOURCE_BYTES)
        return hearth_err_set(err, HEARTH_E_LIMIT, -1, "template of %zu bytes is larger than %zu", n,
                              TMPL_MAX_SOURCE_BYTES);
    size_t bad = utf8_invalid_at(src ? src : "", n);
    if (bad < n) {
        hearth_status st = hearth_err_set(err, HEARTH_E_FORMAT, (int64_t)bad, "the template is not valid UTF-8");
        if (err) tmpl_linecol(src, n, bad, &err->line, &err->col);
        return st;
    }
    hearth_tmpl *t = calloc(1, sizeof *t);
    if (!t) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    hearth_arena_init(&t->arena, 0);
    char *s = hearth_arena_alloc(&t->arena, n + 1);
    if (!s) {
        hearth_tmpl_destroy(t);
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    }
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        if (src[i] == '\r') {
            s[len++] = '\n';
            if (i + 1 < n && src[i + 1] == '\n') i++;
        } else {
            s[len++] = src[i];
        }
    }
    if (len > 0 && s[len - 1] == '\n') len--;
    s[len] = 0;
    t->src = s;
    t->len = len;
    token *toks = NULL;
    size_t n_toks = 0;
    hearth_status st = tmpl_lex(t, &toks, &n_toks, err);
    if (st == HEARTH_OK) st = tmpl_parse_tokens(t, toks, n_toks, err);
    if (st != HEARTH_OK) {
        hearth_tmpl_destroy(t);
        return st;
    }
    *out = t;
    return HEARTH_OK;
}

void hearth_tmpl_destroy(hearth_tmpl *t) {
    if (!t) return;
    hearth_arena_fini(&t->arena);
    free(t);
}

/* Everything between setjmp and the end lives in *r (heap), so nothing needs `volatile`. */
typedef struct {
    rt    r;
    tbuf  main_out;
    tv    ctx;
} render_state;

hearth_status hearth_tmpl_render(const hearth_tmpl *t, const char *ctx_json, size_t n,
                                 const hearth_tmpl_limits *limits, char **out, size_t *out_len,
                                 hearth_err *err) {
    hearth_err_clear(err);
    if (out) *out = NULL;
    if (out_len) *out_len = 0;
    if (!t || !out || (!ctx_json && n)) return hearth_err_set(err, HEARTH_E_INVALID, -1, "bad arguments");
    render_state *st = calloc(1, sizeof *st);
    if (!st) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    rt *r = &st->r;
    hearth_tmpl_limits def = hearth_tmpl_limits_default();
    r->lim = limits ? *limits : def;
    if (!r->lim.max_output_bytes) r->lim.max_output_bytes = def.max_output_bytes;
    if (!r->lim.max_steps) r->lim.max_steps = def.max_steps;
    if (r->lim.max_depth <= 0) r->lim.max_depth = def.max_depth;
    if (!r->lim.max_memory_bytes) r->lim.max_memory_bytes = def.max_memory_bytes;
    r->mem_cap = r->lim.max_memory_bytes;
    r->t = t;
    r->err = err;
    r->out = &st->main_out;
    hearth_arena_init(&r->arena, 0);
    hearth_status status = HEARTH_OK;
    if (setjmp(r->jb)) {
        status = r->status;
        goto done;
    }
    json_to_tv(r, ctx_json ? ctx_json : "", n, &st->ctx);
    if (st->ctx.kind != TV_DICT) rt_fail(r, NULL, HEARTH_E_INVALID, "the template context must be a JSON object");
    r->globals = st->ctx.u.d;
    tmpl_exec(r);
    char *res = malloc(st->main_out.len + 1);
    if (!res) rt_fail(r, NULL, HEARTH_E_NOMEM, "out of memory");
    if (st->main_out.len) memcpy(res, st->main_out.p, st->main_out.len);
    res[st->main_out.len] = 0;
    *out = res;
    if (out_len) *out_len = st->main_out.len;
done:
    hearth_arena_fini(&r->arena);
    free(st);
    return status;
}
