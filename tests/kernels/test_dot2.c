/*
 * test_dot2.c - the two-blocks-per-vector dots and their 4-token forms (dot2_avx512.c) against
 * the one-block-per-vector AVX-512 dots of quant_avx512.c, bit for bit.
 *
 * The quant_avx512.c dots are the ones test_quant.c holds to the reference with its tolerance
 * table; the dot2 forms claim to do the same float operations in a different register layout,
 * so every result must be equal as bits, not merely close. Weights are random bytes with sane
 * scales (every quant bit pattern) and realistically quantized rows; activations are quantized
 * from random floats by the avx512 quantizers; block counts 1..9 and 18, 20, 48 (odd counts take
 * the reference tail; q4_K blocks are 256 elements, with random scale bytes). The 4-token
 * forms are compared with 4 calls of the single dot, with the outputs strided as the matmul
 * writes them.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "tensor/dtype.h"
#include "tensor/quant.h"
#include "test.h"

#if defined(__x86_64__)
#include "kernels/cpu/x86/quant_x86.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static float rnd(void) { return (float)(next() >> 40) / (float)(1 << 24) * 2.0f - 1.0f; }

typedef struct {
    hearth_type         wtype, atype;
    hearth_vec_dot_fn   one, two;
    hearth_vec_dot_4_fn four;
} case_t;

/* random weight row: random bytes, then every f16 scale replaced by a sane one */
static void fill_weights(hearth_type t, uint8_t *w, int64_t nb, bool quantized, int64_t n) {
    if (quantized) {
        float *f = malloc((size_t)n * sizeof(float));
        for (int64_t i = 0; i < n; i++) f[i] = rnd() * (float)(1 + (next() & 7));
        hearth_kernels_traits_isa(t, HEARTH_ISA_SCALAR)->from_float(f, w, n);
        free(f);
        return;
    }
    size_t bsz = hearth_type_traits_of((int)t)->type_size;
    for (size_t i = 0; i < (size_t)nb * bsz; i++) w[i] = (uint8_t)next();
    for (int64_t b = 0; b < nb; b++) {
        uint16_t *h = (uint16_t *)(w + (size_t)b * bsz); /* d (and m / dmin) lead every block */
        h[0] = hearth_fp32_to_fp16(0.01f + 0.02f * (rnd() + 1.0f));
        if (t == HEARTH_TYPE_Q4_1 || t == HEARTH_TYPE_Q4_K) h[1] = hearth_fp32_to_fp16(0.05f * (rnd() + 1.0f));
    }
}

static int run_case(const case_t *c, int64_t nb, bool quantized) {
    const int64_t n = nb * hearth_type_traits_of((int)c->wtype)->blck_size;
    size_t wb = hearth_row_size(c->wtype, n), ab = hearth_row_size(c->atype, n);
    uint8_t *w = malloc(wb), *a = malloc(4 * ab);
    float *f = malloc((size_t)n * sizeof(float));
    fill_weights(c->wtype, w, nb, quantized, n);
    const hearth_kernel_traits *at = hearth_kernels_traits_isa(c->atype, HEARTH_ISA_AVX512);
    for (int i = 0; i < 4; i++) {
        for (int64_t k = 0; k < n; k++) f[k] = rnd() * (float)(1 + (next() & 15));
        at->from_float(f, a + (size_t)i * ab, n);
    }
    int bad = 0;
    float want[4], got[4], got4[4 * 3];
    for (int i = 0; i < 4; i++) {
        c->one(n, &want[i], w, a + (size_t)i * ab);
        c->two(n, &got[i], w, a + (size_t)i * ab);
    }
    memset(got4, 0xff, sizeof got4);
    c->four(n, got4, 3, w, a, ab);
    for (int i = 0; i < 4; i++) {
        if (memcmp(&want[i], &got[i], 4) || memcmp(&want[i], &got4[3 * i], 4)) {
            if (bad < 3)
                fprintf(stderr, "  %s nb=%lld token %d: one %.9g, two %.9g, four %.9g\n",
                        hearth_type_traits_of((int)c->wtype)->name, (long long)nb, i, (double)want[i], (double)got[i],
                        (double)got4[3 * i]);
            bad++;
        }
    }
    free(w), free(a), free(f);
    return bad;
}

TEST(dot2_and_dot4_equal_quant_avx512_bitwise) {
    if (!hearth_isa_available(HEARTH_ISA_AVX512)) TEST_SKIP("this CPU has no avx512 set");
    const case_t cases[] = {
        {HEARTH_TYPE_Q4_1, HEARTH_TYPE_Q8_1, hearth_vec_dot_q4_1_q8_1_avx512, hearth_vec_dot_q4_1_q8_1_dot2_avx512,
         hearth_vec_dot_4_q4_1_q8_1_avx512},
        {HEARTH_TYPE_Q5_0, HEARTH_TYPE_Q8_0, hearth_vec_dot_q5_0_q8_0_avx512, hearth_vec_dot_q5_0_q8_0_dot2_avx512,
         hearth_vec_dot_4_q5_0_q8_0_avx512},
        {HEARTH_TYPE_Q8_0, HEARTH_TYPE_Q8_0, hearth_vec_dot_q8_0_q8_0_avx512, hearth_vec_dot_q8_0_q8_0_dot2_avx512,
         hearth_vec_dot_4_q8_0_q8_0_avx512},
        /* K-quants have no dot2 form: the single dot stands in for it */
        {HEARTH_TYPE_Q4_K, HEARTH_TYPE_Q8_K, hearth_vec_dot_q4_K_q8_K_avx512, hearth_vec_dot_q4_K_q8_K_avx512,
         hearth_vec_dot_4_q4_K_q8_K_avx512},
    };
    static const int64_t nbs[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 18, 20, 48};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t k = 0; k < sizeof nbs / sizeof nbs[0]; k++)
            for (int rep = 0; rep < 20; rep++) CHECK_EQ(run_case(&cases[c], nbs[k], rep & 1), 0);
}

TEST(avx512_table_uses_them) {
    if (!hearth_isa_available(HEARTH_ISA_AVX512)) TEST_SKIP("this CPU has no avx512 set");
    CHECK(hearth_kernels_traits_isa(HEARTH_TYPE_Q4_1, HEARTH_ISA_AVX512)->vec_dot ==
          hearth_vec_dot_q4_1_q8_1_dot2_avx512);
    CHECK(hearth_kernels_traits_isa(HEARTH_TYPE_Q8_0, HEARTH_ISA_AVX512)->vec_dot_4 ==
          hearth_vec_dot_4_q8_0_q8_0_avx512);
    CHECK(hearth_kernels_traits_isa(HEARTH_TYPE_Q8_0, HEARTH_ISA_SCALAR)->vec_dot_4 == NULL);
}
#endif

int main(int argc, char **argv) { return test_main(argc, argv); }
