/*
 * bench_attn_kv.c - one decode query group's attention over a long quantized KV cache, per cache
 * kind and kernel set: the kernel alone, without the model around it.
 *
 * Built on demand (`cmake --build build --target bench_attn_kv`), then:
 *   build/bench_attn_kv [n_keys [reps [head_dim [nq]]]]   (defaults: 16384, 20, 64, 3)
 *
 * The defaults are one SmolLM2 decode step's work for one kv head at 16k tokens of context (heads
 * of 64, three query heads a kv head). The cache holds pseudo-random keys and values (a fixed
 * seed) in paged blocks of 16 rows; every cache kind is timed on the same rows: turbo k8v3, k4v4,
 * k4v3 (hearth_attn_turbo_fn) and q8_0 / q4_0 (hearth_attn_quant_fn), with every x86 set this
 * CPU runs and the scalar twin. It prints the minimum over reps of the wall time of one call and
 * the nanoseconds per key, and whether the set's output equals the twin's bit for bit (the
 * tests check that; here it guards the figure). Measurements only, never assertions.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/kv_type.h"
#include "kernels/kernels.h"
#include "kernels/ref/turbo_ref.h"

enum { BS = 16 };

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint32_t rng = 1;
static float uniform(void) {
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / 16777216.0f - 0.5f;
}

typedef struct {
    const char *name;
    int         turbo_k, turbo_v; /* bits of a turbo cache, 0: a quantized one */
    hearth_type qtype;            /* q8_0 or q4_0 for a quantized cache */
} kind;

int main(int argc, char **argv) {
    const int64_t n = argc > 1 ? atoll(argv[1]) : 16384;
    const int     reps = argc > 2 ? atoi(argv[2]) : 20;
    const int64_t d = argc > 3 ? atoll(argv[3]) : 64;
    const int     nq = argc > 4 ? atoi(argv[4]) : 3;
    if (n <= 0 || reps <= 0 || d <= 0 || d % 64 || d > HEARTH_ATTN_QUANT_DIM_MAX || nq <= 0 ||
        nq > HEARTH_ATTN_QUANT_NQ_MAX) {
        fprintf(stderr, "usage: bench_attn_kv [n_keys [reps [head_dim (a multiple of 64, <= %d) [nq (<= %d)]]]]\n",
                HEARTH_ATTN_QUANT_DIM_MAX, HEARTH_ATTN_QUANT_NQ_MAX);
        return 2;
    }
    const kind kinds[] = {{"turbo k8v3", 8, 3, 0},           {"turbo k4v4", 4, 4, 0},
                          {"turbo k4v3", 4, 3, 0},           {"q8_0", 0, 0, HEARTH_TYPE_Q8_0},
                          {"q4_0", 0, 0, HEARTH_TYPE_Q4_0}};
    const int64_t nblk = (n + BS - 1) / BS;
    int32_t *table = malloc((size_t)nblk * sizeof *table);
    float   *row = malloc((size_t)d * sizeof *row), *qs = malloc((size_t)(nq * d) * sizeof *qs);
    float   *o_ref = malloc((size_t)(nq * d) * sizeof *o_ref), *o = malloc((size_t)(nq * d) * sizeof *o);
    if (!table || !row || !qs || !o_ref || !o) return 1;
    for (int64_t b = 0; b < nblk; b++) table[b] = (int32_t)(nblk - 1 - b); /* blocks reversed */
    const float *q[HEARTH_ATTN_QUANT_NQ_MAX];
    float *out[HEARTH_ATTN_QUANT_NQ_MAX], *out_ref[HEARTH_ATTN_QUANT_NQ_MAX];
    for (int i = 0; i < nq; i++) {
        for (int64_t e = 0; e < d; e++) qs[i * d + e] = uniform();
        q[i] = qs + i * d, out[i] = o + i * d, out_ref[i] = o_ref + i * d;
    }
    printf("%lld keys, heads of %lld, %d queries a kv head, min of %d calls\n", (long long)n, (long long)d, nq, reps);
    for (size_t ki = 0; ki < sizeof kinds / sizeof *kinds; ki++) {
        const kind *c = &kinds[ki];
        const bool turbo = c->turbo_k > 0;
        const hearth_kv_type kt = turbo                        ? hearth_kv_turbo_type(c->turbo_k)
                                  : c->qtype == HEARTH_TYPE_Q8_0 ? HEARTH_KV_Q8_0
                                                                 : HEARTH_KV_Q4_0;
        const size_t k_row = hearth_kv_row_bytes(kt, d);
        const size_t v_row = turbo ? hearth_kv_row_bytes(hearth_kv_turbo_type(c->turbo_v), d) : k_row;
        char *kc = calloc((size_t)(nblk * BS), k_row), *vc = calloc((size_t)(nblk * BS), v_row);
        if (!kc || !vc) return 1;
        hearth_from_float_fn qz = turbo ? NULL : hearth_kernels_kv_quantizer(c->qtype);
        rng = 7;
        for (int64_t r = 0; r < nblk * BS; r++) {
            for (int kv = 0; kv < 2; kv++) {
                for (int64_t e = 0; e < d; e++) row[e] = uniform();
                char *dst = (kv ? vc + r * v_row : kc + r * k_row);
                if (turbo) hearth_turbo_quantize_row(row, dst, d, kv ? c->turbo_v : c->turbo_k);
                else qz(row, dst, d);
            }
        }
        hearth_attn_turbo_args ta = {.k = kc, .v = vc, .k_row = k_row, .v_row = v_row, .k_bits = c->turbo_k,
                                     .v_bits = c->turbo_v, .table_row = table, .block_size = BS, .head_dim = d,
                                     .head_dim_v = d, .j0 = 0, .j1 = n, .scale = 0.125f};
        hearth_attn_quant_args qa = {.k = kc, .v = vc, .k_row = k_row, .v_row = v_row, .k_type = c->qtype,
                                     .v_type = c->qtype, .table_row = table, .block_size = BS, .head_dim = d,
                                     .head_dim_v = d, .j0 = 0, .j1 = n, .scale = 0.125f};
        if (turbo) hearth_attn_turbo_ref(nq, q, out_ref, &ta);
        else hearth_attn_quant_ref(nq, q, out_ref, &qa);
        for (int isa = HEARTH_ISA_SCALAR; isa < HEARTH_ISA_COUNT; isa++) {
            const bool twin = isa == HEARTH_ISA_SCALAR; /* the scalar twin, timed as "twin" */
            hearth_attn_turbo_fn tf = NULL;
            hearth_attn_quant_fn qf = NULL;
            if (turbo) tf = twin ? hearth_attn_turbo_ref : hearth_kernels_attn_turbo_isa((hearth_isa)isa);
            else qf = twin ? hearth_attn_quant_ref : hearth_kernels_attn_quant_isa((hearth_isa)isa);
            if (!tf && !qf) continue;
            double best = 1e30;
            for (int r = 0; r < reps; r++) {
                const double t0 = now();
                if (tf) tf(nq, q, out, &ta);
                else qf(nq, q, out, &qa);
                const double t = now() - t0;
                best = t < best ? t : best;
            }
            printf("%-11s %-7s %9.3f ms  %7.2f ns/key  %s\n", c->name, twin ? "twin" : hearth_isa_name((hearth_isa)isa),
                   best * 1e3, best * 1e9 / (double)n,
                   memcmp(o, o_ref, (size_t)(nq * d) * sizeof *o) ? "DIFFERS from the twin" : "= twin");
        }
        free(kc);
        free(vc);
    }
    free(table), free(row), free(qs), free(o_ref), free(o);
    return 0;
}
