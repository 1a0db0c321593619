/*
 * test_lora_kernel.c - the segmented LoRA update (kernels/ref/lora_ref.h, kernels/lora.h): the
 * reference row (f32 and f16 A and B) against a double-precision B (A x) of the same values (a
 * tolerance from the length of the sums),
 * the pool split against the reference bit for bit (odd ranks, odd widths, rows outside every
 * segment left alone, y wider than n_out, 1..5 threads) on every kernel set this CPU runs
 * (AVX2 and AVX-512 take the vector row, lora_avx2.c), the vector row itself against the
 * reference row bit for bit (widths around multiples of 8, f32 and f16), and the CPU backend's
 * op against the reference.
 */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "kernels/kernels.h"
#include "kernels/lora.h"
#if defined(__x86_64__)
#include "kernels/cpu/x86/lora_x86.h"
#endif
#include "tensor/dtype.h"
#include "test.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)(rng >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}
static float *rnd_vec(int64_t n) {
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = rnd();
    return v;
}

/* n random matrix values in [-1, 1): halves (as an adapter keeps f16 sources) or floats. */
static void *rnd_mat(int64_t n, bool half) {
    if (!half) return rnd_vec(n);
    uint16_t *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = hearth_fp32_to_fp16(rnd());
    return v;
}
static double mat_at(const void *m, bool half, int64_t i) {
    return half ? (double)hearth_fp16_to_fp32(((const uint16_t *)m)[i]) : (double)((const float *)m)[i];
}

TEST(row_ref_matches_double) {
    const int64_t shapes[][3] = {{1, 1, 1}, {7, 33, 19}, {16, 64, 128}, {3, 130, 5}, {256, 40, 24}};
    for (int half = 0; half < 2; half++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            int32_t r = (int32_t)shapes[s][0];
            int64_t n_in = shapes[s][1], n_out = shapes[s][2];
            void *a = rnd_mat(r * n_in, half), *b = rnd_mat(n_out * r, half);
            float *x = rnd_vec(n_in), *y = rnd_vec(n_out);
            float *y0 = malloc((size_t)n_out * sizeof *y0);
            memcpy(y0, y, (size_t)n_out * sizeof *y0);
            hearth_lora_row_ref(a, b, half, r, 0.75f, x, n_in, y, n_out);
            double worst = 0;
            for (int64_t o = 0; o < n_out; o++) {
                double acc = 0;
                for (int32_t k = 0; k < r; k++) {
                    double h = 0;
                    for (int64_t i = 0; i < n_in; i++) h += mat_at(a, half, k * n_in + i) * x[i];
                    acc += mat_at(b, half, o * r + k) * h;
                }
                worst = fmax(worst, fabs(y0[o] + 0.75 * acc - y[o]));
            }
            CHECK(worst <= 1e-6 * (double)(n_in + r) * 4);
            free(a), free(b), free(x), free(y), free(y0);
        }
}

/* Segments over rows [0, T) with gaps, different ranks, the same n_in / n_out; segments 0 and 2
 * keep f16 matrices, 1 and 3 f32 ones. */
typedef struct {
    hearth_lora_seg segs[4];
    int             n;
    void           *mem[8];
} segset;

static void make_segs(segset *s, int64_t n_in, int64_t n_out) {
    const int64_t t0[] = {0, 3, 4, 9}, n[] = {2, 1, 5, 3};
    const int32_t r[] = {8, 1, 17, 4};
    s->n = 4;
    for (int i = 0; i < 4; i++) {
        s->mem[2 * i] = rnd_mat(r[i] * n_in, i % 2 == 0);
        s->mem[2 * i + 1] = rnd_mat(n_out * r[i], i % 2 == 0);
        s->segs[i] = (hearth_lora_seg){.t0 = t0[i], .n = n[i], .r = r[i], .scale = 0.5f + (float)i,
                                       .half = i % 2 == 0, .a = s->mem[2 * i], .b = s->mem[2 * i + 1]};
    }
}
static void free_segs(segset *s) {
    for (int i = 0; i < 8; i++) free(s->mem[i]);
}

TEST(rows_match_ref_bitwise) {
    enum { T = 12, NI = 37, NO = 29, LDY = 31 };
    segset s;
    make_segs(&s, NI, NO);
    float *x = rnd_vec(T * NI), *y = rnd_vec(T * LDY);
    float *want = malloc(sizeof(float) * T * LDY), *got = malloc(sizeof(float) * T * LDY);
    memcpy(want, y, sizeof(float) * T * LDY);
    hearth_lora_ref(s.segs, s.n, x, NI, want, LDY, NO);
    int changed = 0;
    for (int i = 0; i < T * LDY; i++) changed += want[i] != y[i];
    CHECK(changed > 0);
    /* row 2 and rows 8, 12.. are in no segment; columns NO..LDY are outside n_out */
    CHECK(!memcmp(want + 2 * LDY, y + 2 * LDY, sizeof(float) * LDY));
    CHECK(!memcmp(want + 3 * LDY + NO, y + 3 * LDY + NO, sizeof(float) * (LDY - NO)));
    hearth_isa was = hearth_kernels_isa();
    for (int isa = 0; isa < HEARTH_ISA_COUNT; isa++) {
        if (!hearth_isa_available((hearth_isa)isa)) continue;
        CHECK(hearth_kernels_select((hearth_isa)isa));
        for (int nth = 1; nth <= 5; nth++) {
            memcpy(got, y, sizeof(float) * T * LDY);
            for (int ith = 0; ith < nth; ith++) hearth_lora_rows(s.segs, s.n, x, NI, got, LDY, NO, ith, nth);
            CHECK(!memcmp(got, want, sizeof(float) * T * LDY));
        }
    }
    hearth_kernels_select(was);
    free(x), free(y), free(want), free(got);
    free_segs(&s);
}

#if defined(__x86_64__)
TEST(avx2_row_matches_ref_bitwise) {
    if (!hearth_isa_available(HEARTH_ISA_AVX2)) {
        fprintf(stderr, "  skipped: no AVX2 here\n");
        return;
    }
    const int64_t shapes[][3] = {{1, 1, 1}, {16, 576, 576}, {7, 33, 19}, {8, 8, 8}, {17, 65, 9}, {256, 40, 24}};
    for (int half = 0; half < 2; half++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            int32_t r = (int32_t)shapes[s][0];
            int64_t n_in = shapes[s][1], n_out = shapes[s][2];
            void *a = rnd_mat(r * n_in, half), *b = rnd_mat(n_out * r, half);
            float *x = rnd_vec(n_in), *want = rnd_vec(n_out), *got = malloc((size_t)n_out * sizeof *got);
            memcpy(got, want, (size_t)n_out * sizeof *got);
            hearth_lora_row_ref(a, b, half, r, 1.25f, x, n_in, want, n_out);
            hearth_lora_row_avx2(a, b, half, r, 1.25f, x, n_in, got, n_out);
            CHECK(!memcmp(got, want, (size_t)n_out * sizeof *got));
            free(a), free(b), free(x), free(want), free(got);
        }
}
#endif

TEST(cpu_backend_op) {
    enum { T = 12, NI = 64, NO = 48 };
    hearth_backend *be = hearth_backend_cpu_create(3, T, 128, 64, NULL);
    CHECK(be != NULL && hearth_backend_has_lora(be));
    if (!be) return;
    segset s;
    make_segs(&s, NI, NO);
    float *x = rnd_vec(T * NI), *y = rnd_vec(T * NO);
    float *want = malloc(sizeof(float) * T * NO);
    memcpy(want, y, sizeof(float) * T * NO);
    hearth_lora_ref(s.segs, s.n, x, NI, want, NO, NO);
    hearth_op_lora(be, s.segs, s.n, x, NI, y, NO, NO);
    CHECK(!memcmp(y, want, sizeof(float) * T * NO));
    free(x), free(y), free(want);
    free_segs(&s);
    hearth_backend_destroy(be);
}

int main(int argc, char **argv) {
    hearth_kernels_init();
    return test_main(argc, argv);
}
