/*
 * spec_ngram.c - prompt lookup, the model-free draft source of spec.h.
 *
 * The scan runs backwards from the sequence's end, so the first match is the most recent one:
 * in an edit of a file that the prompt holds, the text just generated is followed most often by
 * what followed it last. A round costs O(n * ngram_max) comparisons per sequence, small next to
 * a forward.
 */
#include "engine/spec.h"

#include <stdlib.h>
#include <string.h>

int32_t hearth_ngram_draft(const int32_t *tokens, int32_t n, int32_t ngram_min, int32_t ngram_max, int32_t k,
                           int32_t *out) {
    if (ngram_min < 1) ngram_min = 1;
    if (k <= 0) return 0;
    for (int32_t g = ngram_max < n - 1 ? ngram_max : n - 1; g >= ngram_min; g--) {
        const int32_t *tail = tokens + n - g;
        /* an occurrence starting at i ends before the tail starts: i + g <= n - 1, so at least
         * one token follows it (it may overlap the tail) */
        for (int32_t i = n - g - 1; i >= 0; i--) {
            if (tokens[i] != tail[0] || memcmp(tokens + i, tail, (size_t)g * sizeof *tokens)) continue;
            int32_t from = i + g, m = n - from < k ? n - from : k;
            memcpy(out, tokens + from, (size_t)m * sizeof *out);
            return m;
        }
    }
    return 0;
}

int32_t hearth_spec_best_k(double alpha, double share, double per_tok, double per_draft, int32_t kmax) {
    if (alpha < 0) alpha = 0;
    if (alpha > 1) alpha = 1;
    if (share < 0) share = 0;
    if (per_tok < 0) per_tok = 0;
    if (per_draft < 0) per_draft = 0;
    if (share + per_tok <= 0) return kmax > 0 ? kmax : 0; /* no cost measured: nothing to lose */
    double plain = 1.0 / (share + per_tok), best = plain * 1.05, expect = 1, pow = 1;
    int32_t best_k = 0;
    for (int32_t k = 1; k <= kmax; k++) {
        pow *= alpha;
        expect += pow; /* 1 + alpha + ... + alpha^k */
        double rate = expect / (share + per_tok * (double)(k + 1) + per_draft * (double)k);
        if (rate > best) {
            best = rate;
            best_k = k;
        }
    }
    return best_k;
}

typedef struct {
    hearth_drafter base;
    int32_t        ngram_min, ngram_max;
} ngram_src;

static void ngram_propose(hearth_drafter *d, hearth_draft_job *jobs, int32_t n_jobs) {
    ngram_src *s = (ngram_src *)d;
    for (int32_t j = 0; j < n_jobs; j++) {
        hearth_draft_job *jb = &jobs[j];
        jb->q_set = false;
        jb->n = hearth_ngram_draft(jb->toks, jb->n_toks, s->ngram_min, s->ngram_max, jb->k, jb->draft);
    }
}

static void ngram_release(hearth_drafter *d, int32_t slot) {
    (void)d;
    (void)slot;
}

static void ngram_destroy(hearth_drafter *d) { free(d); }

hearth_drafter *hearth_drafter_ngram(int32_t n_vocab, int32_t ngram_min, int32_t ngram_max) {
    ngram_src *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->base = (hearth_drafter){.kind = "ngram", .n_vocab = n_vocab, .propose = ngram_propose,
                               .release = ngram_release, .destroy = ngram_destroy};
    s->ngram_min = ngram_min < 1 ? 1 : ngram_min;
    s->ngram_max = ngram_max < s->ngram_min ? s->ngram_min : ngram_max;
    return &s->base;
}
