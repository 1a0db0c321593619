/*
 * test_gemm_f32.c - the packed f32 GEMM (kernels/gemm_f32.h): packing against the row-major
 * weight, the reference against a double-precision product (a tolerance from the length of
 * the sum), and the active set's kernel against the reference bit for bit over odd shapes
 * (outputs not a multiple of 16, token counts not a multiple of 6, 12 or of the token block, k
 * longer than one range,
 * strided x and y) on one thread and on a pool; columns past n_out are left alone.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gemm_f32.h"
#include "kernels/kernels.h"
#include "test.h"

static uint64_t rng = 0x853c49e6748fea9bull;
static float rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)(rng >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}

TEST(pack_layout) {
    enum { NO = 21, NI = 5 };
    float w[NO * NI];
    for (int i = 0; i < NO * NI; i++) w[i] = (float)i;
    CHECK_EQ(hearth_gemm_f32_packed_floats(NO, NI), (size_t)2 * NI * HEARTH_GEMM_NR);
    float *p = malloc(hearth_gemm_f32_packed_floats(NO, NI) * sizeof *p);
    hearth_gemm_f32_pack(w, NI, NO, NI, p);
    int bad = 0;
    for (int o = 0; o < 32; o++)
        for (int k = 0; k < NI; k++) {
            float got = p[(o / 16) * NI * 16 + k * 16 + o % 16];
            bad += got != (o < NO ? w[o * NI + k] : 0.0f);
        }
    CHECK_EQ(bad, 0);
    free(p);
}

static void run_case(int64_t n_out, int64_t n_in, int64_t n_tok, hearth_pool *pool) {
    const int64_t ldx = n_in + 3, ldy = n_out + 5;
    float *w = malloc((size_t)(n_out * n_in) * sizeof *w), *x = malloc((size_t)(n_tok * ldx) * sizeof *x);
    float *want = malloc((size_t)(n_tok * ldy) * sizeof *want), *got = malloc((size_t)(n_tok * ldy) * sizeof *got);
    float *p = malloc(hearth_gemm_f32_packed_floats(n_out, n_in) * sizeof *p);
    for (int64_t i = 0; i < n_out * n_in; i++) w[i] = rnd();
    for (int64_t i = 0; i < n_tok * ldx; i++) x[i] = rnd() * 3;
    hearth_gemm_f32_pack(w, n_in, n_out, n_in, p);
    for (int64_t i = 0; i < n_tok * ldy; i++) want[i] = got[i] = -9.0f;
    hearth_gemm_f32_ref(p, n_out, n_in, x, ldx, n_tok, want, ldy);
    /* the reference against double precision */
    double worst = 0;
    for (int64_t t = 0; t < n_tok; t++)
        for (int64_t o = 0; o < n_out; o++) {
            double s = 0;
            for (int64_t k = 0; k < n_in; k++) s += (double)x[t * ldx + k] * w[o * n_in + k];
            double e = fabs(s - want[t * ldy + o]);
            if (e > worst) worst = e;
        }
    CHECK(worst <= 3.0 * sqrt((double)n_in) * 3 * 1.2e-7 * 4);
    hearth_gemm_f32(pool, p, n_out, n_in, x, ldx, n_tok, got, ldy);
    CHECK(memcmp(want, got, (size_t)(n_tok * ldy) * sizeof *got) == 0); /* padding -9 included */
    free(w), free(x), free(want), free(got), free(p);
}

TEST(kernel_equals_reference) {
    const int64_t shapes[][3] = {{1, 1, 1},   {16, 8, 6},    {17, 33, 7},  {5, 3, 13},
                                 {48, 384, 5}, {96, 64, 49}, {40, 100, 97}, {1152, 384, 14},
                                 {80, 600, 25}, {31, 257, 12}};
    hearth_pool *pool = hearth_pool_create(3);
    const hearth_isa active = hearth_kernels_isa();
    for (int isa = 0; isa < HEARTH_ISA_COUNT; isa++) {
        if (!hearth_kernels_select((hearth_isa)isa)) {
            fprintf(stderr, "  %s: not available on this CPU, its kernel is not checked here\n",
                    hearth_isa_name((hearth_isa)isa));
            continue;
        }
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            run_case(shapes[i][0], shapes[i][1], shapes[i][2], NULL);
            run_case(shapes[i][0], shapes[i][1], shapes[i][2], pool);
        }
    }
    hearth_kernels_select(active);
    hearth_pool_destroy(pool);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
