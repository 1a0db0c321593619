/*
 * infill.c - the fill-in-the-middle prompt of infill.h.
 *
 * The extra context is built whole, then only its tail is kept (the budget cuts from the
 * front, so the files nearest the edited one survive); the prefix keeps its tail and the
 * suffix its head for the same reason: the tokens next to the cursor matter most.
 */
#include "server/infill.h"

#include "base/buf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int32_t *v;
    size_t   n, cap;
    bool     oom;
} ids_buf;

static void push_n(ids_buf *b, const int32_t *v, size_t n) {
    if (b->oom || n == 0) return;
    if (n > SIZE_MAX - b->n || !hearth_buf_grow(&b->v, &b->cap, b->n + n, sizeof *b->v, 64)) {
        b->oom = true;
        return;
    }
    memcpy(b->v + b->n, v, n * sizeof *v);
    b->n += n;
}

static void push(ids_buf *b, int32_t id) { push_n(b, &id, 1); }

/* Tokens of text[0..n) (no BOS, special-token text kept plain) appended to b. */
static hearth_status push_text(ids_buf *b, const hearth_tok *tok, const char *text, size_t n) {
    int32_t *ids = NULL;
    size_t n_ids = 0;
    hearth_status st = hearth_tok_encode(tok, text, n, false, false, &ids, &n_ids);
    if (st) return st;
    push_n(b, ids, n_ids);
    free(ids);
    return b->oom ? HEARTH_E_NOMEM : HEARTH_OK;
}

/* Text and a newline (a file name line). */
static hearth_status push_line(ids_buf *b, const hearth_tok *tok, const char *text, size_t n) {
    char *line = malloc(n + 1);
    if (!line) return HEARTH_E_NOMEM;
    memcpy(line, text, n);
    line[n] = '\n';
    hearth_status st = push_text(b, tok, line, n + 1);
    free(line);
    return st;
}

bool hearth_infill_supported(const hearth_tok *tok, char *why, size_t cap) {
    static const char *const names[] = {"prefix", "suffix", "middle"};
    static const hearth_tok_fim_kind kinds[] = {HEARTH_TOK_FIM_PRE, HEARTH_TOK_FIM_SUF, HEARTH_TOK_FIM_MID};
    size_t len = 0;
    if (cap) why[0] = 0;
    for (int i = 0; i < 3; i++) {
        if (hearth_tok_fim(tok, kinds[i]) >= 0) continue;
        if (cap) {
            const char *head = len ? ", " : "no fill-in-the-middle ";
            size_t need = strlen(head) + strlen(names[i]);
            if (len + need < cap) {
                memcpy(why + len, head, strlen(head));
                memcpy(why + len + strlen(head), names[i], strlen(names[i]));
                len += need;
                why[len] = 0;
            }
        }
        if (!cap) return false;
    }
    if (len == 0) return true;
    const char *tail = " token";
    if (len + strlen(tail) < cap) memcpy(why + len, tail, strlen(tail) + 1);
    return false;
}

static hearth_status build_extra(const hearth_tok *tok, const hearth_infill_parts *p, ids_buf *x) {
    static const char k_snippet[] = "\n\n--- snippet ---\n\n";
    int32_t rep = hearth_tok_fim(tok, HEARTH_TOK_FIM_REP), sep = hearth_tok_fim(tok, HEARTH_TOK_FIM_SEP);
    hearth_status st;
    if (rep >= 0) {
        push(x, rep);
        if ((st = push_text(x, tok, "myproject\n", strlen("myproject\n")))) return st;
    }
    for (size_t i = 0; i < p->n_extra; i++) {
        const hearth_infill_chunk *c = &p->extra[i];
        if (sep >= 0) {
            push(x, sep);
            const char *fn = c->filename ? c->filename : "tmp";
            size_t n_fn = c->filename ? c->n_filename : 3;
            if ((st = push_line(x, tok, fn, n_fn))) return st;
        } else if ((st = push_text(x, tok, k_snippet, sizeof k_snippet - 1))) {
            return st;
        }
        if ((st = push_text(x, tok, c->text ? c->text : "", c->text ? c->n_text : 0))) return st;
    }
    if (sep >= 0) {
        push(x, sep);
        if ((st = push_text(x, tok, "filename\n", strlen("filename\n")))) return st;
    }
    return x->oom ? HEARTH_E_NOMEM : HEARTH_OK;
}

/* Does the vocab put BOS before a text (llama_vocab_get_add_bos)? Asked of the tokenizer itself,
 * which knows it for GGUF and tokenizer.json alike. */
static bool adds_bos(const hearth_tok *tok) {
    int32_t *ids = NULL;
    size_t n = 0;
    bool yes = !hearth_tok_encode(tok, "", 0, true, false, &ids, &n) && n >= 1 && ids[0] == hearth_tok_bos(tok) &&
               ids[0] >= 0;
    free(ids);
    return yes;
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

hearth_status hearth_infill_build(const hearth_tok *tok, const hearth_infill_parts *p, int32_t **ids,
                                  size_t *n_ids) {
    if (ids) *ids = NULL;
    if (n_ids) *n_ids = 0;
    if (!tok || !p || !ids || !n_ids || p->n_batch <= 0 || (p->n_extra && !p->extra) ||
        (p->n_prefix && !p->prefix) || (p->n_suffix && !p->suffix) || (p->n_prompt && !p->prompt))
        return HEARTH_E_INVALID;
    if (!hearth_infill_supported(tok, NULL, 0)) return HEARTH_E_UNSUPPORTED;
    ids_buf x = {0}, out = {0};
    hearth_status st = build_extra(tok, p, &x);
    if (st) goto done;

    int64_t quarter = p->n_batch / 4;
    int64_t n_pre = min64((int64_t)p->n_prefix, 3 * quarter);
    int64_t n_suf = min64((int64_t)p->n_suffix, max64(0, quarter - (2 + (int64_t)p->n_prompt)));
    int64_t n_predict = p->n_predict < 0 ? -1 : p->n_predict;
    int64_t n_x = min64(max64(0, (int64_t)p->n_ctx - p->n_batch - 2 * n_predict), (int64_t)x.n);

    push_n(&out, x.v + x.n - (size_t)n_x, (size_t)n_x);
    if (adds_bos(tok)) push(&out, hearth_tok_bos(tok));
    for (int part = 0; part < 2; part++) {
        if ((part == 0) != p->spm) { /* the prefix part */
            push(&out, hearth_tok_fim(tok, HEARTH_TOK_FIM_PRE));
            push_n(&out, p->prefix + p->n_prefix - (size_t)n_pre, (size_t)n_pre);
            push_n(&out, p->prompt, p->n_prompt);
        } else {
            push(&out, hearth_tok_fim(tok, HEARTH_TOK_FIM_SUF));
            push_n(&out, p->suffix, (size_t)n_suf);
        }
    }
    push(&out, hearth_tok_fim(tok, HEARTH_TOK_FIM_MID));
    if (out.oom) {
        st = HEARTH_E_NOMEM;
        goto done;
    }
    *ids = out.v;
    *n_ids = out.n;
    out.v = NULL;
done:
    free(x.v);
    free(out.v);
    return st;
}
