/*
 * sampler.c - the sampling chain of sampler.h. Top-p avoids sorting the whole vocabulary: it
 * sorts only the candidates above a probability floor, lowering the floor until their mass
 * reaches p (exact: every token of the nucleus is above any floor whose kept mass is >= p).
 */
#include "engine/sampler.h"
#include "engine/cand_sort.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef hearth_cand cand;

struct hearth_sampler {
    hearth_sampler_params p;
    int32_t            n_vocab;
    hearth_logit_bias *bias;     /* owned [n_bias] */
    int32_t           *counts;   /* owned [n_vocab]: generated occurrences */
    int32_t           *recent;   /* owned ring [repeat_last_n] */
    int32_t            n_recent, recent_head;
    cand              *cands;    /* owned [n_vocab] */
    cand              *cands_tmp; /* owned [n_vocab] when a long sort needed it (cand_sort.h) */
    uint64_t           rng[4];
    int32_t           *seen;     /* owned [cap_seen]: the distinct generated tokens, in order (topm edits) */
    int32_t            n_seen, cap_seen;
    bool               seen_lost; /* out of memory growing seen: no topm edits */
    bool               bias_dup;  /* a token twice in the logit bias: no topm edits */
};

hearth_sampler_params hearth_sampler_params_default(void) {
    hearth_sampler_params p = {
        .temperature = 0.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f,
        .repeat_penalty = 1.0f, .repeat_last_n = 64, .xtc_probability = 0.0f, .xtc_threshold = 0.1f,
    };
    return p;
}

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* xoshiro256** */
static uint64_t rng_next(uint64_t *s) {
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

static double rng_uniform(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1.0p-53; }

hearth_sampler *hearth_sampler_create(const hearth_sampler_params *p, int32_t n_vocab, hearth_err *err) {
    if (n_vocab <= 0 || p->repeat_penalty <= 0 || p->repeat_last_n < 0 || isnan(p->temperature) ||
        isnan(p->top_p) || isnan(p->min_p) || !(p->xtc_probability >= 0.0f && p->xtc_probability <= 1.0f) ||
        isnan(p->xtc_threshold)) {
        hearth_err_set(err, HEARTH_E_INVALID, -1, "invalid sampling parameters");
        return NULL;
    }
    for (int32_t i = 0; i < p->n_bias; i++)
        if (p->bias[i].token < 0 || p->bias[i].token >= n_vocab) {
            hearth_err_set(err, HEARTH_E_INVALID, -1, "logit_bias token %d is outside the vocabulary (0..%d)",
                           p->bias[i].token, n_vocab - 1);
            return NULL;
        }
    hearth_sampler *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    s->p = *p;
    s->n_vocab = n_vocab;
    s->counts = calloc((size_t)n_vocab, sizeof *s->counts);
    s->cands = malloc((size_t)n_vocab * sizeof *s->cands);
    s->recent = calloc((size_t)(p->repeat_last_n > 0 ? p->repeat_last_n : 1), sizeof *s->recent);
    s->bias = p->n_bias ? malloc((size_t)p->n_bias * sizeof *s->bias) : NULL;
    if (!s->counts || !s->cands || !s->recent || (p->n_bias && !s->bias)) goto oom;
    for (int32_t i = 0; i < p->n_bias; i++)
        for (int32_t k = 0; k < i; k++) s->bias_dup |= p->bias[i].token == p->bias[k].token;
    if (p->n_bias) memcpy(s->bias, p->bias, (size_t)p->n_bias * sizeof *s->bias);
    s->p.bias = s->bias;
    uint64_t x = p->seed;
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix64(&x);
    return s;
oom:
    hearth_sampler_destroy(s);
    hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    return NULL;
}

void hearth_sampler_destroy(hearth_sampler *s) {
    if (!s) return;
    free(s->bias);
    free(s->counts);
    free(s->recent);
    free(s->cands);
    free(s->cands_tmp);
    free(s->seen);
    free(s);
}

void hearth_sampler_accept(hearth_sampler *s, int32_t token) {
    if (token < 0 || token >= s->n_vocab) return;
    if (s->counts[token]++ == 0 && !s->seen_lost) {
        if (s->n_seen == s->cap_seen) {
            int32_t cap = s->cap_seen ? 2 * s->cap_seen : 64, *g = realloc(s->seen, (size_t)cap * sizeof *g);
            if (!g) s->seen_lost = true;
            else {
                s->seen = g;
                s->cap_seen = cap;
            }
        }
        if (!s->seen_lost) s->seen[s->n_seen++] = token;
    }
    if (s->p.repeat_last_n > 0) {
        s->recent[s->recent_head] = token;
        s->recent_head = (s->recent_head + 1) % s->p.repeat_last_n;
        if (s->n_recent < s->p.repeat_last_n) s->n_recent++;
    }
}

static int cmp_cand_desc(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->p != y->p) return x->p < y->p ? 1 : -1;
    return x->id - y->id;
}

static void apply_penalties(hearth_sampler *s, float *logits) {
    const hearth_sampler_params *p = &s->p;
    for (int32_t i = 0; i < p->n_bias; i++) logits[p->bias[i].token] += p->bias[i].bias;
    if (p->repeat_penalty != 1.0f) {
        /* each distinct recent token once */
        for (int32_t i = 0; i < s->n_recent; i++) {
            int32_t t = s->recent[i];
            bool seen = false;
            for (int32_t j = 0; j < i && !seen; j++) seen = s->recent[j] == t;
            if (seen) continue;
            logits[t] = logits[t] > 0 ? logits[t] / p->repeat_penalty : logits[t] * p->repeat_penalty;
        }
    }
    if (p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f)
        for (int32_t t = 0; t < s->n_vocab; t++)
            if (s->counts[t])
                logits[t] -= p->frequency_penalty * (float)s->counts[t] + p->presence_penalty;
}

static int32_t argmax(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* s->cands[0..n), in ascending id order, sorted by cmp_cand_desc's order */
static void sort_cands(hearth_sampler *s, int32_t n) {
    if (n >= 512 && !s->cands_tmp) s->cands_tmp = malloc((size_t)s->n_vocab * sizeof *s->cands_tmp);
    if (s->cands_tmp) hearth_cand_sort_desc(s->cands, s->cands_tmp, n);
    else qsort(s->cands, (size_t)n, sizeof *s->cands, cmp_cand_desc);
}

/* Keep the k largest of c[0..n) (sorted descending) using a partial selection sort over a
 * min-heap; returns the new count. */
static int32_t keep_top_k(cand *c, int32_t n, int32_t k) {
    if (k >= n) {
        qsort(c, (size_t)n, sizeof *c, cmp_cand_desc);
        return n;
    }
    /* min-heap of the best k in c[0..k) */
    for (int32_t i = k / 2 - 1; i >= 0; i--) {
        for (int32_t r = i;;) {
            int32_t l = 2 * r + 1, m = r;
            if (l < k && cmp_cand_desc(&c[l], &c[m]) > 0) m = l;
            if (l + 1 < k && cmp_cand_desc(&c[l + 1], &c[m]) > 0) m = l + 1;
            if (m == r) break;
            cand t = c[r]; c[r] = c[m]; c[m] = t;
            r = m;
        }
    }
    for (int32_t i = k; i < n; i++) {
        if (cmp_cand_desc(&c[i], &c[0]) >= 0) continue; /* not better than the heap's worst */
        c[0] = c[i];
        for (int32_t r = 0;;) {
            int32_t l = 2 * r + 1, m = r;
            if (l < k && cmp_cand_desc(&c[l], &c[m]) > 0) m = l;
            if (l + 1 < k && cmp_cand_desc(&c[l + 1], &c[m]) > 0) m = l + 1;
            if (m == r) break;
            cand t = c[r]; c[r] = c[m]; c[m] = t;
            r = m;
        }
    }
    qsort(c, (size_t)k, sizeof *c, cmp_cand_desc);
    return k;
}

/* XTC over s->cands[0..nc) (sampler.h); returns the new count. The candidates need not be
 * sorted: the ones at or above the threshold are found by one pass, and the least probable of
 * them (on a tie the higher id: the last in the sorted order) is the one kept. */
static int32_t xtc(hearth_sampler *s, int32_t nc) {
    const hearth_sampler_params *p = &s->p;
    if (p->xtc_probability <= 0.0f || p->xtc_threshold > 0.5f || nc < 2) return nc;
    if (rng_uniform(s->rng) >= p->xtc_probability) return nc;
    cand *c = s->cands;
    double total = 0;
    for (int32_t i = 0; i < nc; i++) total += c[i].p;
    float th = (float)(p->xtc_threshold * total);
    int32_t above = 0, keep = -1;
    for (int32_t i = 0; i < nc; i++) {
        if (c[i].p < th) continue;
        above++;
        if (keep < 0 || c[i].p < c[keep].p || (c[i].p == c[keep].p && c[i].id > c[keep].id)) keep = i;
    }
    if (above < 2) return nc;
    int32_t m = 0;
    for (int32_t i = 0; i < nc; i++)
        if (c[i].p < th || i == keep) c[m++] = c[i];
    return m;
}

/* The support of a draw (temperature > 0): temperature / top-k / top-p / min-p into
 * s->cands[0..nc) with their probabilities; returns nc. */
static int32_t support(hearth_sampler *s, const float *logits) {
    const hearth_sampler_params *p = &s->p;
    int32_t n = s->n_vocab;

    /* softmax of logits / T into candidates */
    float max = logits[argmax(logits, n)];
    double sum = 0.0;
    cand *c = s->cands;
    for (int32_t i = 0; i < n; i++) {
        c[i].id = i;
        c[i].p = expf((logits[i] - max) / p->temperature);
        sum += c[i].p;
    }
    for (int32_t i = 0; i < n; i++) c[i].p = (float)(c[i].p / sum);
    int32_t nc = n;
    bool sorted = false;
    if (p->top_k > 0) {
        nc = keep_top_k(c, nc, p->top_k);
        sorted = true;
    }
    if (p->top_p < 1.0f && p->top_p > 0.0f) {
        if (!sorted) {
            float top = 0;
            for (int32_t i = 0; i < nc; i++) if (c[i].p > top) top = c[i].p;
            for (float floor = top * 1e-3f;; floor *= 1e-3f) {
                double mass = 0;
                int32_t m = 0;
                for (int32_t i = 0; i < nc; i++)
                    if (c[i].p >= floor) mass += c[i].p;
                if (mass >= p->top_p || floor < 1e-30f) {
                    for (int32_t i = 0; i < nc; i++)
                        if (c[i].p >= floor || floor < 1e-30f) c[m++] = c[i];
                    nc = m;
                    break;
                }
            }
            sort_cands(s, nc); /* in id order so far: the linear-time sort applies */
            sorted = true;
        }
        double cum = 0;
        for (int32_t i = 0; i < nc; i++) {
            cum += c[i].p;
            if (cum >= p->top_p) {
                nc = i + 1;
                break;
            }
        }
    }
    if (p->min_p > 0.0f) {
        float top = 0;
        for (int32_t i = 0; i < nc; i++) if (c[i].p > top) top = c[i].p;
        int32_t m = 0;
        for (int32_t i = 0; i < nc; i++)
            if (c[i].p >= p->min_p * top) c[m++] = c[i];
        nc = m;
    }
    return xtc(s, nc);
}

/* Draw an index of s->cands[0..nc) by probability. */
static int32_t draw(hearth_sampler *s, int32_t nc) {
    const cand *c = s->cands;
    double total = 0;
    for (int32_t i = 0; i < nc; i++) total += c[i].p;
    double u = rng_uniform(s->rng) * total, cum = 0;
    for (int32_t i = 0; i < nc; i++) {
        cum += c[i].p;
        if (u < cum) return i;
    }
    return nc - 1;
}

/* The chain after the penalties: argmax, or a draw from the support. */
static int32_t choose(hearth_sampler *s, const float *logits) {
    if (s->p.temperature <= 0.0f) return (int32_t)hearth_kernels_argmax(logits, s->n_vocab);
    return s->cands[draw(s, support(s, logits))].id;
}

int32_t hearth_sampler_sample(hearth_sampler *s, float *logits) {
    apply_penalties(s, logits);
    return choose(s, logits);
}

/* Greedy under a constraint: the allowed token with the largest logit, looked for among the
 * best CANDS first (almost always enough), else over the masked vocabulary. */
#define CANDS 64
#define REDRAWS 64
static int32_t greedy_constrained(hearth_sampler *s, float *logits, hearth_cx_matcher *m) {
    cand *c = s->cands;
    for (int32_t i = 0; i < s->n_vocab; i++) c[i] = (cand){i, logits[i]};
    int32_t k = keep_top_k(c, s->n_vocab, CANDS < s->n_vocab ? CANDS : s->n_vocab);
    for (int32_t i = 0; i < k; i++)
        if (isfinite(c[i].p) && hearth_cx_matcher_allows(m, c[i].id)) return c[i].id;
    if (hearth_cx_matcher_mask(m, logits) <= 0) return -1;
    return (int32_t)hearth_kernels_argmax(logits, s->n_vocab);
}

int32_t hearth_sampler_sample_constrained(hearth_sampler *s, float *logits, hearth_cx_matcher *m) {
    apply_penalties(s, logits);
    if (s->p.temperature <= 0.0f) {
        int32_t t = (int32_t)hearth_kernels_argmax(logits, s->n_vocab);
        return hearth_cx_matcher_allows(m, t) ? t : greedy_constrained(s, logits, m); /* usually one check */
    }
    /* Draw; a rejected token leaves the support and the draw is repeated: drawing without
     * replacement until a token is allowed picks each allowed t with p(t) / A (A: the allowed
     * mass of the support), the masked distribution. Usually the first draw is allowed; when
     * many are rejected the allowed tokens are few and masking the vocabulary is cheap. */
    int32_t nc = support(s, logits);
    for (int32_t tries = 0; tries < REDRAWS && nc > 0; tries++) {
        int32_t i = draw(s, nc);
        if (hearth_cx_matcher_allows(m, s->cands[i].id)) return s->cands[i].id;
        s->cands[i] = s->cands[--nc];
    }
    if (hearth_cx_matcher_mask(m, logits) <= 0) return -1;
    return choose(s, logits);
}

int32_t hearth_sampler_verify(hearth_sampler *s, float *logits, hearth_cx_matcher *m, int32_t d, const float *q) {
    if (m) return hearth_sampler_sample_constrained(s, logits, m);
    if (!q || s->p.temperature <= 0.0f || d < 0 || d >= s->n_vocab) return hearth_sampler_sample(s, logits);
    apply_penalties(s, logits);
    int32_t nc = support(s, logits);
    cand *c = s->cands;
    double total = 0, pd = 0;
    for (int32_t i = 0; i < nc; i++) {
        total += c[i].p;
        if (c[i].id == d) pd = c[i].p;
    }
    pd = total > 0 ? pd / total : 0;
    double qd = q[d];
    if (pd >= qd || rng_uniform(s->rng) * qd < pd) return d; /* accept with min(1, p(d) / q(d)) */
    /* the residual max(0, p - q), over the support (p is 0 elsewhere) */
    int32_t m2 = 0;
    for (int32_t i = 0; i < nc; i++) {
        double r = c[i].p / total - (double)q[c[i].id];
        if (r > 0) c[m2++] = (cand){c[i].id, (float)r};
    }
    if (m2 == 0) return c[draw(s, nc)].id; /* p == q: nothing left over (cannot follow a rejection) */
    return c[draw(s, m2)].id;
}

void hearth_sampler_logprobs(const float *logits, int32_t n, int32_t chosen, int32_t k, hearth_token_logprobs *out) {
    if (k < 0) k = 0;
    if (k > HEARTH_TOP_LOGPROBS_MAX) k = HEARTH_TOP_LOGPROBS_MAX;
    if (k > n) k = n;
    float max = logits[0];
    for (int32_t i = 1; i < n; i++)
        if (logits[i] > max) max = logits[i];
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++) sum += exp((double)logits[i] - max);
    double log_z = max + log(sum);
    out->logprob = (float)(logits[chosen] - log_z);
    /* the k best by insertion into a sorted array (k <= 20: a pass over the vocab) */
    int32_t m = 0;
    for (int32_t i = 0; i < n && k > 0; i++) {
        float v = logits[i];
        if (m == k && v <= logits[out->top_id[m - 1]]) continue; /* equal: the lower id stays */
        int32_t j = m < k ? m++ : k - 1;
        while (j > 0 && logits[out->top_id[j - 1]] < v) {
            out->top_id[j] = out->top_id[j - 1];
            j--;
        }
        out->top_id[j] = i;
    }
    out->n_top = m;
    for (int32_t j = 0; j < m; j++) out->top_logprob[j] = (float)(logits[out->top_id[j]] - log_z);
}

bool hearth_sampler_is_argmax(const hearth_sampler *s) {
    const hearth_sampler_params *p = &s->p;
    return p->temperature <= 0.0f && p->n_bias == 0 && (p->repeat_penalty == 1.0f || p->repeat_last_n == 0) &&
           p->presence_penalty == 0.0f && p->frequency_penalty == 0.0f;
}

/* ---- finishing on a device's row summary (sampler.h, kernels/ref/topm_ref.h) ---- */

static bool xtc_live(const hearth_sampler_params *p) { return p->xtc_probability > 0.0f && p->xtc_threshold <= 0.5f; }
static bool top_p_on(const hearth_sampler_params *p) { return p->top_p < 1.0f && p->top_p > 0.0f; }

static bool penalized(const hearth_sampler_params *p) {
    return (p->repeat_penalty != 1.0f && p->repeat_last_n != 0) || p->presence_penalty != 0.0f ||
           p->frequency_penalty != 0.0f;
}

hearth_topm_mode hearth_sampler_topm_mode(const hearth_sampler *s) {
    const hearth_sampler_params *p = &s->p;
    if (s->bias_dup || (s->seen_lost && penalized(p))) return HEARTH_TOPM_OFF;
    if (p->temperature <= 0.0f || p->top_k > 0 || top_p_on(p)) return HEARTH_TOPM_CANDS;
    return xtc_live(p) ? HEARTH_TOPM_OFF : HEARTH_TOPM_DRAW;
}

void hearth_sampler_topm_req(hearth_sampler *s, hearth_topm_req *rq) {
    const hearth_sampler_params *p = &s->p;
    rq->temperature = p->temperature > 0.0f ? p->temperature : 1.0f;
    rq->min_p = p->min_p;
    rq->u = hearth_sampler_topm_mode(s) == HEARTH_TOPM_DRAW ? rng_uniform(s->rng) : -1.0;
}

int32_t hearth_sampler_sample_topm(hearth_sampler *s, const hearth_topm *t) {
    const hearth_sampler_params *p = &s->p;
    if (p->temperature <= 0.0f) return t->id[0];
    if (t->drawn >= 0) return t->drawn;
    /* support() on the summary: the candidates with the row's probabilities, in its sorted order */
    cand *c = s->cands;
    int32_t m = t->n;
    for (int32_t i = 0; i < m; i++)
        c[i] = (cand){t->id[i], (float)(expf((t->x[i] - t->max) / p->temperature) / t->z_t)};
    qsort(c, (size_t)m, sizeof *c, cmp_cand_desc); /* by p: differs from the value order only on float ties */
    int64_t nc = s->n_vocab;
    if (p->top_k > 0 && p->top_k < nc) nc = p->top_k;
    if (top_p_on(p)) {
        double cum = 0;
        int64_t lim = nc < m ? nc : m, i = 0;
        for (; i < lim; i++) {
            cum += c[i].p;
            if (cum >= p->top_p) break;
        }
        if (i < lim) nc = i + 1;
        else if (nc > m) nc = -1; /* the cut lies past the summary, unless min-p cuts first */
    }
    if (p->min_p > 0.0f && m > 0) {
        float floor = p->min_p * c[0].p;
        int64_t lim = nc < 0 || nc > m ? m : nc, k = 0;
        while (k < lim && c[k].p >= floor) k++;
        if (k < lim || (nc >= 0 && nc <= m)) nc = k;
        else return -2; /* all m pass: the support may go on past them */
    }
    if (nc < 0 || nc > m) return -2;
    int32_t n = xtc(s, (int32_t)nc);
    return c[draw(s, n)].id;
}

void hearth_sampler_logprobs_topm(const hearth_topm *t, int32_t chosen, int32_t k, hearth_token_logprobs *out) {
    double log_z = t->max + log(t->z_1);
    float x = t->drawn == chosen ? t->drawn_x : t->x[0];
    for (int32_t i = 0; i < t->n; i++)
        if (t->id[i] == chosen) {
            x = t->x[i];
            break;
        }
    out->logprob = (float)(x - log_z);
    if (k < 0) k = 0;
    if (k > HEARTH_TOP_LOGPROBS_MAX) k = HEARTH_TOP_LOGPROBS_MAX;
    if (k > t->n) k = t->n;
    out->n_top = k;
    for (int32_t j = 0; j < k; j++) {
        out->top_id[j] = t->id[j];
        out->top_logprob[j] = (float)(t->x[j] - log_z);
    }
}

int32_t hearth_sampler_topm_edits_max(const hearth_sampler *s) {
    return s->p.n_bias + s->n_recent + s->n_seen;
}

static int cmp_edit(const void *a, const void *b) {
    const hearth_topm_edit *x = a, *y = b;
    return (x->token > y->token) - (x->token < y->token);
}

/* apply_penalties as edits: one per token touched, in the order of the operations there */
int32_t hearth_sampler_topm_edits(const hearth_sampler *s, hearth_topm_edit *e) {
    const hearth_sampler_params *p = &s->p;
    int32_t n = 0;
    for (int32_t i = 0; i < p->n_bias; i++)
        e[n++] = (hearth_topm_edit){.token = p->bias[i].token, .flags = HEARTH_TOPM_ADD, .add = p->bias[i].bias};
    if (p->repeat_penalty != 1.0f)
        for (int32_t i = 0; i < s->n_recent; i++)
            e[n++] = (hearth_topm_edit){.token = s->recent[i], .flags = HEARTH_TOPM_REP, .rp = p->repeat_penalty};
    if (p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f)
        for (int32_t i = 0; i < s->n_seen; i++) {
            int32_t t = s->seen[i];
            e[n++] = (hearth_topm_edit){.token = t, .flags = HEARTH_TOPM_SUB,
                                        .sub = p->frequency_penalty * (float)s->counts[t] + p->presence_penalty};
        }
    /* merge each token's entries into one (the order of the three operations is fixed by flags) */
    qsort(e, (size_t)n, sizeof *e, cmp_edit);
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        if (m > 0 && e[m - 1].token == e[i].token) {
            hearth_topm_edit *d = &e[m - 1];
            if (e[i].flags & HEARTH_TOPM_ADD) d->add = e[i].add;
            if (e[i].flags & HEARTH_TOPM_REP) d->rp = e[i].rp;
            if (e[i].flags & HEARTH_TOPM_SUB) d->sub = e[i].sub;
            d->flags |= e[i].flags;
        } else
            e[m++] = e[i];
    }
    return m;
}

int32_t hearth_sampler_sample_edited(hearth_sampler *s, const float *logits) { return choose(s, logits); }
