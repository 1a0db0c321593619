/*
 * test_matmul_n.c - hearth_matmul_n (several matrices over the same activations as one job)
 * against separate hearth_matmul calls, bit for bit, in every kernel set this CPU runs.
 *
 * Parts of one activation type (q5_0 + q8_0 + q5_0, as Gemma's q/k/v; q4_1 x 3 as SmolLM2's),
 * parts that need different activation types (q4_1 + q4_K: run one by one), f32 weights, token
 * counts 1, 5 and 17 (4-token forms and their tails), 1..3 threads, odd row counts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/thread.h"
#include "kernels/kernels.h"
#include "tensor/dtype.h"
#include "test.h"

static uint64_t rng = 0x853c49e6748fea9bull;
static float rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)(rng >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}

enum { N_IN = 512 };

static int check(const hearth_type *types, const int64_t *n_outs, int n, int64_t n_tok, int nth) {
    hearth_pool *pool = hearth_pool_create(nth);
    size_t scratch_bytes = 0;
    hearth_matmul_part parts[HEARTH_MATMUL_MAX_PARTS];
    float *want[HEARTH_MATMUL_MAX_PARTS];
    float *x = malloc((size_t)(n_tok * N_IN) * sizeof(float)), *w32 = malloc(N_IN * sizeof(float));
    for (int64_t i = 0; i < n_tok * N_IN; i++) x[i] = rnd() * 3.0f;
    for (int i = 0; i < n; i++) {
        size_t rb = hearth_row_size(types[i], N_IN);
        uint8_t *w = malloc(rb * (size_t)n_outs[i]);
        for (int64_t r = 0; r < n_outs[i]; r++) {
            for (int k = 0; k < N_IN; k++) w32[k] = rnd();
            hearth_kernels_traits_isa(types[i], HEARTH_ISA_SCALAR)->from_float(w32, w + rb * (size_t)r, N_IN);
        }
        int64_t ldy = n_outs[i] + 3;
        parts[i] = (hearth_matmul_part){types[i], w, rb, n_outs[i], calloc((size_t)(n_tok * ldy), sizeof(float)), ldy, false};
        want[i] = calloc((size_t)(n_tok * ldy), sizeof(float));
        size_t b = hearth_matmul_scratch_bytes(types[i], N_IN, n_tok, nth);
        if (b > scratch_bytes) scratch_bytes = b;
    }
    void *scratch = aligned_alloc(64, scratch_bytes + 64);
    for (int i = 0; i < n; i++)
        hearth_matmul(pool, types[i], parts[i].w, parts[i].w_row_bytes, n_outs[i], N_IN, x, n_tok, want[i],
                      parts[i].ldy, scratch);
    hearth_matmul_n(pool, parts, n, N_IN, x, n_tok, scratch);
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (memcmp(want[i], parts[i].y, (size_t)(n_tok * parts[i].ldy) * sizeof(float))) bad++;
    for (int i = 0; i < n; i++) {
        free((void *)parts[i].w);
        free(parts[i].y);
        free(want[i]);
    }
    free(scratch), free(x), free(w32);
    hearth_pool_destroy(pool);
    return bad;
}

TEST(matmul_n_equals_separate_matmuls) {
    static const hearth_type gemma[] = {HEARTH_TYPE_Q5_0, HEARTH_TYPE_Q5_0, HEARTH_TYPE_Q8_0};
    static const hearth_type smol[] = {HEARTH_TYPE_Q4_1, HEARTH_TYPE_Q4_1, HEARTH_TYPE_Q4_1};
    static const hearth_type mixed[] = {HEARTH_TYPE_Q4_1, HEARTH_TYPE_Q4_K};
    static const hearth_type plain[] = {HEARTH_TYPE_F32, HEARTH_TYPE_F16};
    static const int64_t outs[] = {67, 13, 40};
    static const int64_t toks[] = {1, 5, 17};
    const hearth_isa active = hearth_kernels_isa();
    for (int isa = 0; isa < HEARTH_ISA_COUNT; isa++) {
        if (!hearth_kernels_select((hearth_isa)isa)) continue;
        for (size_t t = 0; t < 3; t++)
            for (int nth = 1; nth <= 3; nth++) {
                CHECK_EQ(check(gemma, outs, 3, toks[t], nth), 0);
                CHECK_EQ(check(smol, outs, 3, toks[t], nth), 0);
                CHECK_EQ(check(mixed, outs, 2, toks[t], nth), 0);
                CHECK_EQ(check(plain, outs, 2, toks[t], nth), 0);
            }
    }
    CHECK(hearth_kernels_select(active));
}

int main(int argc, char **argv) { return test_main(argc, argv); }
