/*
 * topm_ref.c - the row summary of topm_ref.h as plain loops: a sort of the whole row for the best
 * entries, sequential sums, a sequential walk for the draw. The reference the CUDA kernel
 * (backend/cuda/topm.cu) is tested against, and what the host sampler's tests feed it.
 */
#include "kernels/ref/topm_ref.h"

#include <math.h>
#include <stdlib.h>

static int better(float a, int32_t ia, float b, int32_t ib) { return a > b || (a == b && ia < ib); }

void hearth_topm_row_ref(const float *x, int64_t n, const hearth_topm_req *rq, hearth_topm *out) {
    float mx = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        if (x[i] > mx) mx = x[i];
    out->max = mx;
    double zt = 0, z1 = 0;
    for (int64_t i = 0; i < n; i++) {
        zt += expf((x[i] - mx) / rq->temperature);
        z1 += exp((double)x[i] - (double)mx);
    }
    out->z_t = zt;
    out->z_1 = z1;
    /* the best HEARTH_TOPM by insertion (a plain pass; the reference need not be fast) */
    int32_t m = 0, cap = n < HEARTH_TOPM ? (int32_t)n : HEARTH_TOPM;
    for (int64_t i = 0; i < n; i++) {
        if (m == cap && !better(x[i], (int32_t)i, out->x[m - 1], out->id[m - 1])) continue;
        int32_t j = m < cap ? m++ : cap - 1;
        while (j > 0 && better(x[i], (int32_t)i, out->x[j - 1], out->id[j - 1])) {
            out->x[j] = out->x[j - 1];
            out->id[j] = out->id[j - 1];
            j--;
        }
        out->x[j] = x[i];
        out->id[j] = (int32_t)i;
    }
    out->n = m;
    out->drawn = -1;
    out->drawn_x = 0;
    if (rq->u < 0 || n == 0) return;
    float top = (float)(1.0 / zt), floor = rq->min_p > 0 ? rq->min_p * top : -1.0f;
    double total = 0;
    for (int64_t i = 0; i < n; i++) {
        float p = (float)(expf((x[i] - mx) / rq->temperature) / zt);
        if (p >= floor) total += p;
    }
    double target = rq->u * total, cum = 0;
    int64_t last = -1;
    for (int64_t i = 0; i < n; i++) {
        float p = (float)(expf((x[i] - mx) / rq->temperature) / zt);
        if (p < floor) continue;
        last = i;
        cum += p;
        if (target < cum) break;
    }
    out->drawn = (int32_t)last;
    out->drawn_x = x[last];
}

void hearth_topm_edit_ref(float *x, const hearth_topm_edit *e, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        float v = x[e[i].token];
        if (e[i].flags & HEARTH_TOPM_ADD) v += e[i].add;
        if (e[i].flags & HEARTH_TOPM_REP) v = v > 0 ? v / e[i].rp : v * e[i].rp;
        if (e[i].flags & HEARTH_TOPM_SUB) v -= e[i].sub;
        x[e[i].token] = v;
    }
}
