/*
 * matcher.c - the pushdown matcher and the vocabulary walk (see matcher.h).
 *
 * A configuration is a stack of grammar positions stored flat: c[0] = depth d, c[1..d] the
 * positions, c[d] the top (always a byte-set item once expanded; d = 0 means complete). A set
 * holds configurations back to back with a stride of max_stack + 1 words, plus a hash of each
 * for deduplication. Expansion (closure) follows grammar_internal.h:
 *
 *   top is SET  -> keep the configuration
 *   top is END  -> pop: the caller's return position is the new top
 *   top is REF r and more items follow -> top = next item, push each alternative of r
 *   top is REF r as the last item      -> tail call: replace the top by each alternative of r
 *
 * Work per expansion and the size of a set are bounded (a grammar that would exceed them is
 * ambiguous far beyond any schema we build; the excess is dropped and counted).
 */
#include "constrain/matcher.h"
#include "constrain/grammar_internal.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

#define MAX_CONFIGS 512     /* configurations in one set */
#define MAX_EXPAND  65536   /* closure steps per advanced configuration */
#define MAX_RECURSE 1024    /* closure nesting (pushes, pops and tail calls without a byte) */

struct hearth_cx_vocab {
    _Atomic int refs;
    int32_t   n_vocab;
    char     *bytes;  /* owned: every piece back to back */
    size_t   *off;    /* owned [n_vocab] */
    uint32_t *len;    /* owned [n_vocab] */
    bool     *eog;    /* owned [n_vocab] */
    int32_t  *sorted; /* owned [n_sorted]: ids of tokens with bytes, by their bytes */
    uint32_t *lcp;    /* owned [n_sorted]: bytes shared with the previous sorted token */
    int32_t   n_sorted;
    uint32_t  max_len;
};

typedef struct {
    uint32_t *c;  /* owned [cap_c * stride] */
    uint32_t *h;  /* owned [cap_h] */
    int32_t   n;
    size_t    cap_c, cap_h;
} cset;

struct hearth_cx_matcher {
    hearth_cx_grammar     *g;      /* owned */
    hearth_cx_vocab       *v;      /* a reference (may be NULL) */
    int32_t                stride; /* max_stack + 1 */
    cset                   cur;    /* the state */
    cset                   tmp[2]; /* fits / feed */
    cset                  *lv;     /* owned [n_lv]: the vocabulary walk's sets by prefix length */
    int32_t                n_lv;
    uint32_t              *w;      /* owned [max_stack + 2]: the stack being expanded */
    bool                  *ok;     /* owned [n_vocab] once masking ran: allowed tokens */
    int64_t                dropped;
    int32_t                work;
    bool                   oom;
};

/* ---- vocabulary ---- */

static int cmp_tok(const void *x, const void *y, void *ctx) {
    const hearth_cx_vocab *v = ctx;
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    uint32_t na = v->len[a], nb = v->len[b];
    int d = memcmp(v->bytes + v->off[a], v->bytes + v->off[b], na < nb ? na : nb);
    if (d) return d;
    return na < nb ? -1 : na > nb ? 1 : (a > b) - (a < b);
}

hearth_cx_vocab *hearth_cx_vocab_create(int32_t n_vocab, const hearth_span *pieces, const bool *eog) {
    if (n_vocab <= 0) return NULL;
    hearth_cx_vocab *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    atomic_init(&v->refs, 1);
    v->n_vocab = n_vocab;
    size_t total = 0;
    for (int32_t i = 0; i < n_vocab; i++) total += pieces[i].len;
    v->bytes = malloc(total ? total : 1);
    v->off = malloc((size_t)n_vocab * sizeof *v->off);
    v->len = malloc((size_t)n_vocab * sizeof *v->len);
    v->eog = calloc((size_t)n_vocab, sizeof *v->eog);
    v->sorted = malloc((size_t)n_vocab * sizeof *v->sorted);
    v->lcp = malloc((size_t)n_vocab * sizeof *v->lcp);
    if (!v->bytes || !v->off || !v->len || !v->eog || !v->sorted || !v->lcp) {
        hearth_cx_vocab_destroy(v);
        return NULL;
    }
    size_t o = 0;
    for (int32_t i = 0; i < n_vocab; i++) {
        v->off[i] = o;
        v->len[i] = (uint32_t)pieces[i].len;
        if (pieces[i].len) memcpy(v->bytes + o, pieces[i].ptr, pieces[i].len);
        o += pieces[i].len;
        v->eog[i] = eog && eog[i];
        if (v->len[i] > v->max_len) v->max_len = v->len[i];
        if (v->len[i] && !v->eog[i]) v->sorted[v->n_sorted++] = i;
    }
    qsort_r(v->sorted, (size_t)v->n_sorted, sizeof *v->sorted, cmp_tok, v);
    for (int32_t k = 0; k < v->n_sorted; k++) {
        uint32_t l = 0;
        if (k > 0) {
            int32_t a = v->sorted[k - 1], b = v->sorted[k];
            uint32_t n = v->len[a] < v->len[b] ? v->len[a] : v->len[b];
            const char *pa = v->bytes + v->off[a], *pb = v->bytes + v->off[b];
            while (l < n && pa[l] == pb[l]) l++;
        }
        v->lcp[k] = l;
    }
    return v;
}

hearth_cx_vocab *hearth_cx_vocab_ref(const hearth_cx_vocab *v) {
    hearth_cx_vocab *w = (hearth_cx_vocab *)v; /* the count is the one mutable field */
    if (w) atomic_fetch_add_explicit(&w->refs, 1, memory_order_relaxed);
    return w;
}

void hearth_cx_vocab_destroy(hearth_cx_vocab *v) {
    if (!v || atomic_fetch_sub_explicit(&v->refs, 1, memory_order_acq_rel) != 1) return;
    free(v->bytes);
    free(v->off);
    free(v->len);
    free(v->eog);
    free(v->sorted);
    free(v->lcp);
    free(v);
}

int32_t hearth_cx_vocab_n(const hearth_cx_vocab *v) { return v->n_vocab; }

/* ---- configuration sets ---- */

static void cset_free(cset *s) {
    free(s->c);
    free(s->h);
    *s = (cset){0};
}

/* Add the stack w[1..d] to s unless it is there. */
static void cset_add(hearth_cx_matcher *m, cset *s, const uint32_t *w, int32_t d) {
    uint32_t h = 2166136261u;
    h = (h ^ (uint32_t)d) * 16777619u;
    for (int32_t i = 1; i <= d; i++) h = (h ^ w[i]) * 16777619u;
    for (int32_t k = 0; k < s->n; k++) {
        const uint32_t *c = s->c + (size_t)k * (size_t)m->stride;
        if (s->h[k] == h && c[0] == (uint32_t)d && !memcmp(c + 1, w + 1, (size_t)d * sizeof *w)) return;
    }
    if (s->n == MAX_CONFIGS) {
        m->dropped++;
        return;
    }
    size_t need = (size_t)s->n + 1;
    if (!hearth_buf_grow(&s->c, &s->cap_c, need, (size_t)m->stride * sizeof *s->c, 8) ||
        !hearth_buf_grow(&s->h, &s->cap_h, need, sizeof *s->h, 8)) {
        m->oom = true;
        return;
    }
    uint32_t *c = s->c + (size_t)s->n * (size_t)m->stride;
    c[0] = (uint32_t)d;
    memcpy(c + 1, w + 1, (size_t)d * sizeof *w);
    s->h[s->n++] = h;
}

/* Expand the stack w[1..d] into s (w is restored before returning). */
static void closure(hearth_cx_matcher *m, int32_t d, cset *s, int rec) {
    if (++m->work > MAX_EXPAND || rec > MAX_RECURSE) {
        m->dropped++;
        return;
    }
    const hearth_cx_grammar *g = m->g;
    uint32_t *w = m->w;
    if (d == 0) {
        cset_add(m, s, w, 0);
        return;
    }
    uint32_t p = w[d];
    cx_sym sym = g->syms[p];
    if (sym.kind == CX_SET) {
        cset_add(m, s, w, d);
        return;
    }
    if (sym.kind == CX_END) {
        closure(m, d - 1, s, rec + 1);
        return;
    }
    int32_t r = (int32_t)sym.arg, a0 = g->rule_alt0[r], na = g->rule_n_alt[r];
    if (g->syms[p + 1].kind == CX_END) { /* tail call */
        for (int32_t k = 0; k < na; k++) {
            w[d] = (uint32_t)g->alt_start[a0 + k];
            closure(m, d, s, rec + 1);
        }
        w[d] = p;
        return;
    }
    if (d >= g->max_stack + 1) { /* cannot happen for a built grammar (max_stack is exact) */
        m->dropped++;
        return;
    }
    w[d] = p + 1;
    for (int32_t k = 0; k < na; k++) {
        w[d + 1] = (uint32_t)g->alt_start[a0 + k];
        closure(m, d + 1, s, rec + 1);
    }
    w[d] = p;
}

/* out = in advanced by byte c. */
static void step(hearth_cx_matcher *m, const cset *in, uint8_t c, cset *out) {
    out->n = 0;
    const hearth_cx_grammar *g = m->g;
    for (int32_t k = 0; k < in->n; k++) {
        const uint32_t *cf = in->c + (size_t)k * (size_t)m->stride;
        uint32_t d = cf[0];
        if (!d) continue;
        cx_sym sym = g->syms[cf[d]];
        if (!cx_set_has(g->sets[sym.arg], c)) continue;
        memcpy(m->w + 1, cf + 1, d * sizeof *cf);
        m->w[d] = cf[d] + 1;
        m->work = 0;
        closure(m, (int32_t)d, out, 0);
    }
}

hearth_cx_matcher *hearth_cx_matcher_create(hearth_cx_grammar *g, const hearth_cx_vocab *v) {
    hearth_cx_matcher *m = calloc(1, sizeof *m);
    if (!m) {
        hearth_cx_grammar_destroy(g);
        return NULL;
    }
    m->g = g;
    m->v = hearth_cx_vocab_ref(v);
    m->stride = g->max_stack + 1;
    m->w = calloc((size_t)g->max_stack + 2, sizeof *m->w);
    if (!m->w) goto fail;
    for (int32_t k = 0; k < g->rule_n_alt[g->root]; k++) {
        m->w[1] = (uint32_t)g->alt_start[g->rule_alt0[g->root] + k];
        m->work = 0;
        closure(m, 1, &m->cur, 0);
    }
    if (m->oom) goto fail;
    return m;
fail:
    hearth_cx_matcher_destroy(m);
    return NULL;
}

void hearth_cx_matcher_destroy(hearth_cx_matcher *m) {
    if (!m) return;
    hearth_cx_grammar_destroy(m->g);
    hearth_cx_vocab_destroy(m->v);
    cset_free(&m->cur);
    cset_free(&m->tmp[0]);
    cset_free(&m->tmp[1]);
    for (int32_t i = 0; i < m->n_lv; i++) cset_free(&m->lv[i]);
    free(m->lv);
    free(m->w);
    free(m->ok);
    free(m);
}

/* The set after s[0..n) from cur, in one of tmp (NULL when it died on the way). */
static cset *run(hearth_cx_matcher *m, const char *s, size_t n) {
    const cset *in = &m->cur;
    cset *out = NULL;
    for (size_t i = 0; i < n; i++) {
        out = &m->tmp[i & 1];
        step(m, in, (uint8_t)s[i], out);
        if (!out->n) return NULL;
        in = out;
    }
    return out ? out : &m->cur;
}

bool hearth_cx_matcher_fits(hearth_cx_matcher *m, const char *s, size_t n) { return run(m, s, n) != NULL; }

bool hearth_cx_matcher_feed(hearth_cx_matcher *m, const char *s, size_t n) {
    cset *r = run(m, s, n);
    if (!r) return false;
    if (r != &m->cur) { /* swap the buffers: no copy */
        cset t = m->cur;
        m->cur = *r;
        *r = t;
    }
    return true;
}

bool hearth_cx_matcher_can_end(const hearth_cx_matcher *m) {
    for (int32_t k = 0; k < m->cur.n; k++)
        if (m->cur.c[(size_t)k * (size_t)m->stride] == 0) return true;
    return false;
}

bool hearth_cx_matcher_done(const hearth_cx_matcher *m) { return m->cur.n == 1 && hearth_cx_matcher_can_end(m); }

bool hearth_cx_matcher_allows(hearth_cx_matcher *m, int32_t t) {
    const hearth_cx_vocab *v = m->v;
    if (!v || t < 0 || t >= v->n_vocab) return false;
    if (v->eog[t]) return hearth_cx_matcher_can_end(m);
    return v->len[t] && hearth_cx_matcher_fits(m, v->bytes + v->off[t], v->len[t]);
}

bool hearth_cx_matcher_accept(hearth_cx_matcher *m, int32_t t) {
    const hearth_cx_vocab *v = m->v;
    if (!v || t < 0 || t >= v->n_vocab) return false;
    if (v->eog[t]) return hearth_cx_matcher_can_end(m);
    return v->len[t] && hearth_cx_matcher_feed(m, v->bytes + v->off[t], v->len[t]);
}

int32_t hearth_cx_matcher_allowed(hearth_cx_matcher *m, bool *allowed) {
    const hearth_cx_vocab *v = m->v;
    memset(allowed, 0, (size_t)v->n_vocab * sizeof *allowed);
    int32_t n_ok = 0;
    bool end = hearth_cx_matcher_can_end(m);
    for (int32_t t = 0; t < v->n_vocab; t++)
        if (v->eog[t] && end) allowed[t] = true, n_ok++;
    if ((int32_t)v->max_len + 1 > m->n_lv) {
        cset *lv = realloc(m->lv, ((size_t)v->max_len + 1) * sizeof *lv);
        if (!lv) return n_ok;
        for (int32_t i = m->n_lv; i <= (int32_t)v->max_len; i++) lv[i] = (cset){0};
        m->lv = lv;
        m->n_lv = (int32_t)v->max_len + 1;
    }
    /* lv[k]: the set after the first k bytes of the current token (lv[0] is cur, not copied) */
    uint32_t have = 0;         /* lv[1..have] are valid for the current prefix */
    uint32_t dead = UINT32_MAX; /* the last walk died after this many bytes */
    for (int32_t k = 0; k < v->n_sorted; k++) {
        int32_t t = v->sorted[k];
        uint32_t l = v->lcp[k], len = v->len[t];
        const uint8_t *b = (const uint8_t *)v->bytes + v->off[t];
        if (dead != UINT32_MAX && l >= dead) continue; /* shares the prefix that died */
        dead = UINT32_MAX;
        if (have > l) have = l;
        while (have < len) {
            const cset *in = have ? &m->lv[have] : &m->cur;
            step(m, in, b[have], &m->lv[have + 1]);
            have++;
            if (!m->lv[have].n) {
                dead = have;
                break;
            }
        }
        if (dead == UINT32_MAX) {
            allowed[t] = true;
            n_ok++;
        } else {
            have = dead - 1; /* lv[dead] is empty: keep only what is alive */
        }
    }
    return n_ok;
}

int32_t hearth_cx_matcher_mask(hearth_cx_matcher *m, float *logits) {
    int32_t n = m->v->n_vocab;
    if (!m->ok && !(m->ok = malloc((size_t)n * sizeof *m->ok))) return -1;
    int32_t n_ok = hearth_cx_matcher_allowed(m, m->ok);
    for (int32_t t = 0; t < n; t++)
        if (!m->ok[t]) logits[t] = -INFINITY;
    return n_ok;
}

int64_t hearth_cx_matcher_n_dropped(const hearth_cx_matcher *m) { return m->dropped; }
