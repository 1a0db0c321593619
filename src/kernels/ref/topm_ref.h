/*
 * topm_ref.h - what a device sends back for a sampled logits row instead of the row: sampling
 * on the device (backend.h's topm op), specified by a plain loop.
 *
 * A 128k-entry vocabulary row is 512 KB; at 64 sequences a step would copy 32 MB to the host and
 * the host sampler would then walk every row. Instead the device summarizes each row, and the
 * host sampler (engine/sampler.c, hearth_sampler_sample_topm) finishes on the summary:
 *   - max and the two normalizers: z_t = sum of expf((x - max) / T) (float terms, a double sum,
 *     as the host sampler's softmax adds them) and z_1 = sum of exp(x - max) in double (the
 *     log-partition of logprobs, as hearth_sampler_logprobs computes it);
 *   - the HEARTH_TOPM best entries, by value descending and on ties the lower id first (the
 *     order of the host sampler's sorted candidates and of top_logprobs);
 *   - when u >= 0, a draw over the whole row in id order (the host sampler's order when neither
 *     top-k nor top-p sorts the candidates): p_i = (float)(expf((x_i - max) / T) / z_t), entries
 *     below min_p times the largest p left out, the first i whose running double sum of p
 *     exceeds u times the total of p; none (rounding): the last entry kept. drawn_x is its value.
 * Before the summary a row may be edited in place (logit bias and penalties, which only the
 * host knows): hearth_topm_edit, one per token touched, each applied as the host sampler would
 * (bias added, then the repetition penalty, then the presence / frequency amount subtracted).
 * Pure functions of their arguments; any thread.
 */
#pragma once
#include <stdint.h>

enum { HEARTH_TOPM = 256 };

enum { HEARTH_TOPM_ADD = 1, HEARTH_TOPM_REP = 2, HEARTH_TOPM_SUB = 4 };

typedef struct {
    int32_t token;
    int32_t flags; /* HEARTH_TOPM_ADD | REP | SUB: which of the three apply */
    float   add;   /* x += add (the logit bias) */
    float   rp;    /* x = x > 0 ? x / rp : x * rp (the repetition penalty) */
    float   sub;   /* x -= sub (frequency * count + presence, computed by the host) */
} hearth_topm_edit;

typedef struct {
    float   temperature; /* > 0 (greedy rows pass 1: their normalizer is unused) */
    float   min_p;       /* <= 0: off; only the draw reads it */
    double  u;           /* in [0, 1): draw; < 0: no draw */
    int32_t edit0, n_edit; /* the row's edits: edits[edit0 .. edit0 + n_edit), distinct tokens */
} hearth_topm_req;

typedef struct {
    float   max;
    int32_t n;                /* entries below: min(HEARTH_TOPM, row length) */
    double  z_t, z_1;
    int32_t drawn;            /* -1 without a draw */
    float   drawn_x;
    int32_t id[HEARTH_TOPM];
    float   x[HEARTH_TOPM];
} hearth_topm;

void hearth_topm_row_ref(const float *x, int64_t n, const hearth_topm_req *rq, hearth_topm *out);
/* x[e.token] edited by each of e[0..n) */
void hearth_topm_edit_ref(float *x, const hearth_topm_edit *e, int32_t n);
