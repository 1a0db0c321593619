/*
 * draft_pick.c - a draft from a row of draft logits; see draft_pick.h.
 */
#include "engine/draft_pick.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *x) { return (double)(splitmix64(x) >> 11) * 0x1.0p-53; }

static int cmp_cand_desc(const void *a, const void *b) {
    const hearth_draft_cand *x = a, *y = b;
    if (x->p != y->p) return x->p < y->p ? 1 : -1;
    return x->id < y->id ? -1 : x->id > y->id;
}

int32_t hearth_draft_argmax(const float *row, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (row[i] > row[best]) best = i;
    return best;
}

int32_t hearth_draft_draw(const hearth_sampler_params *sp, const float *row, int32_t n_cand, int32_t n_vocab,
                          uint64_t *rng, hearth_draft_cand *c, float *q) {
    int32_t nc = 0;
    float max = row[hearth_draft_argmax(row, n_cand)], t = sp->temperature;
    double sum = 0;
    for (int32_t i = 0; i < n_cand; i++) {
        float w = expf((row[i] - max) / t);
        if (w < 1e-6f) continue; /* the far tail: see draft_pick.h */
        c[nc++] = (hearth_draft_cand){i, w};
        sum += w;
    }
    qsort(c, (size_t)nc, sizeof *c, cmp_cand_desc);
    if (sp->top_k > 0 && sp->top_k < nc) nc = sp->top_k;
    if (sp->top_p > 0 && sp->top_p < 1) {
        double total = 0, cum = 0;
        for (int32_t i = 0; i < nc; i++) total += c[i].p;
        for (int32_t i = 0; i < nc; i++) {
            cum += c[i].p;
            if (cum >= sp->top_p * total) {
                nc = i + 1;
                break;
            }
        }
    }
    if (sp->min_p > 0) {
        int32_t m = 1;
        while (m < nc && c[m].p >= sp->min_p * c[0].p) m++;
        nc = m;
    }
    sum = 0;
    for (int32_t i = 0; i < nc; i++) sum += c[i].p;
    double u = uniform(rng) * sum, cum = 0;
    int32_t pick = c[nc - 1].id;
    for (int32_t i = 0; i < nc; i++) {
        cum += c[i].p;
        if (u < cum) {
            pick = c[i].id;
            break;
        }
    }
    memset(q, 0, (size_t)n_vocab * sizeof *q);
    for (int32_t i = 0; i < nc; i++) q[c[i].id] = (float)(c[i].p / sum);
    return pick;
}
