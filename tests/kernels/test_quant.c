/*
 * test_quant.c - block formats, reference kernels, SIMD kernels and the threaded matmul.
 *
 *   - the reference itself: hand-built blocks of every type decode to values worked out by
 *     hand from the layouts in tensor/quant.h; q8 quantizers give known integers on vectors
 *     with known results (ties included); f16/bf16 conversions round-trip every bit pattern;
 *   - every SIMD set against the scalar set: vec_dot on random blocks (random bytes, so every
 *     bit pattern, and realistically quantized rows) with 1, 3, 7, 33 blocks and plain rows
 *     with tails; q8 from_float bit for bit;
 *   - hearth_matmul in every set against a double-precision loop over dequantized weights, for
 *     n_tok 1, 5, 17 and 1..3 threads, with outputs identical across thread counts.
 *
 * Run from the repo root: <build dir>/test_quant. HEARTH_KERNELS=<set> also checks the selection.
 */
#include <stdint.h>
#include <stdlib.h>

#include "base/thread.h"
#include "kernels/kernels.h"
#include "kernels/ref/dot_ref.h"
#include "kernels/ref/quant_ref.h"
#include "tensor/dtype.h"
#include "tensor/quant.h"
#include "test.h"

static const hearth_type weight_types[] = {
    HEARTH_TYPE_F32,  HEARTH_TYPE_F16,  HEARTH_TYPE_BF16, HEARTH_TYPE_Q4_0,
    HEARTH_TYPE_Q4_1, HEARTH_TYPE_Q5_0, HEARTH_TYPE_Q5_1, HEARTH_TYPE_Q8_0,
    HEARTH_TYPE_Q4_K, HEARTH_TYPE_Q5_K, HEARTH_TYPE_Q6_K,
    HEARTH_TYPE_MLX4_G32, HEARTH_TYPE_MLX4_G64, HEARTH_TYPE_MLX8_G32, HEARTH_TYPE_MLX8_G64,
};
enum { N_WEIGHT_TYPES = sizeof weight_types / sizeof weight_types[0] };

/*
 * The tolerance table for SIMD vs scalar vec_dot: |simd - scalar| <= tol * sum_i |w_i a_i|
 * (dequantized terms). Integer block sums are exact in both, so the difference is float
 * summation order only: per-block products accumulated in lanes instead of one running sum
 * (and, for plain types, float lanes against the reference's double sum). Observed maxima on
 * the test data are <= 1e-7 relative (AMD EPYC and an Intel Xeon); the bounds leave >= 50x room.
 */
static double simd_tol(hearth_type t) {
    switch (t) {
    case HEARTH_TYPE_F32:
    case HEARTH_TYPE_F16:
    case HEARTH_TYPE_BF16: return 5e-6;  /* float lanes vs double reference, n up to 4099 */
    case HEARTH_TYPE_Q4_1:
    case HEARTH_TYPE_Q5_1: return 1e-5;  /* + the m * s terms summed separately */
    case HEARTH_TYPE_MLX4_G32:
    case HEARTH_TYPE_MLX4_G64:
    case HEARTH_TYPE_MLX8_G32:
    case HEARTH_TYPE_MLX8_G64: return 5e-6; /* dequantize-then-FMA lanes vs per-group float sums */
    default:               return 5e-6;  /* q4_0 q5_0 q8_0 q4_K q5_K q6_K */
    }
}

/* ---- helpers --------------------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}
static float rnd_unit(void) { return (float)(rnd() >> 40) / (float)(1 << 24) * 2.0f - 1.0f; }

static void *xalloc(size_t n) {
    void *p = aligned_alloc(64, (n + 63) & ~(size_t)63);
    if (!p) abort();
    return p;
}

static const hearth_type_traits *tt(hearth_type t) { return hearth_type_traits_of((int)t); }
static const hearth_kernel_traits *kt(hearth_type t, int isa) {
    return hearth_kernels_traits_isa(t, (hearth_isa)isa);
}
static int64_t blck(hearth_type t) { return tt(t)->blck_size; }

/* Offsets of the half-precision scale fields in a block (-1 ends the list). */
static const int *half_fields(hearth_type t) {
    static const int f0[] = {0, -1}, f02[] = {0, 2, -1}, f208[] = {208, -1}, none[] = {-1};
    switch (t) {
    case HEARTH_TYPE_Q4_0: case HEARTH_TYPE_Q5_0: case HEARTH_TYPE_Q8_0: return f0;
    case HEARTH_TYPE_Q4_1: case HEARTH_TYPE_Q5_1:
    case HEARTH_TYPE_Q4_K: case HEARTH_TYPE_Q5_K: return f02;
    case HEARTH_TYPE_Q6_K: return f208;
    default: return none;
    }
}

/* A row of n elements of type t: random bytes with sane random scales (every bit pattern of
 * the quants, -128 weights and scales included), or random floats quantized by the reference. */
static void make_row(hearth_type t, void *row, int64_t n, bool random_bytes) {
    float *f = xalloc((size_t)n * sizeof(float));
    float scale = 0.01f + 2.0f * (float)(rnd() % 100) / 100.0f;
    for (int64_t i = 0; i < n; i++) f[i] = rnd_unit() * scale + (i % 7 == 0 ? 0.3f * scale : 0.0f);
    const hearth_kernel_traits *tr = hearth_kernels_traits_isa(t, HEARTH_ISA_SCALAR);
    tr->from_float(f, row, n);
    if (random_bytes && tt(t)->is_quantized) {
        uint8_t *b = row;
        size_t bytes = hearth_row_size(t, n);
        for (size_t i = 0; i < bytes; i++) b[i] = (uint8_t)rnd();
        for (int64_t k = 0; k < n / blck(t); k++)
            for (const int *o = half_fields(t); *o >= 0; o++) {
                uint16_t h = hearth_fp32_to_fp16(rnd_unit() * 0.05f);
                memcpy(b + (size_t)k * tt(t)->type_size + *o, &h, 2);
            }
        if (tt(t)->internal) /* MLX blocks: f32 scale and bias first */
            for (int64_t k = 0; k < n / blck(t); k++) {
                float sb[2] = {rnd_unit() * 0.05f, rnd_unit() * 0.5f};
                memcpy(b + (size_t)k * tt(t)->type_size, sb, 8);
            }
    }
    free(f);
}

static bool isa_simd(hearth_isa isa) { return isa == HEARTH_ISA_AVX2 || isa == HEARTH_ISA_AVX512; }

/* ---- the reference on hand-built blocks --------------------------------------------------- */

TEST(ref_dequant_32_blocks) {
    float y[32];
    hearth_block_q4_0 q40 = {.d = 0x3800}; /* 0.5 */
    for (int j = 0; j < 16; j++) q40.qs[j] = (uint8_t)(j | (15 - j) << 4);
    hearth_q4_0_to_float_ref(&q40, y, 32);
    for (int j = 0; j < 16; j++) {
        CHECK_NEAR(y[j], (j - 8) * 0.5, 0);
        CHECK_NEAR(y[16 + j], (7 - j) * 0.5, 0);
    }
    CHECK_NEAR(y[0], -4.0, 0);
    CHECK_NEAR(y[31], -4.0, 0);

    hearth_block_q4_1 q41 = {.d = 0x3400, .m = 0xbc00}; /* 0.25, -1 */
    for (int j = 0; j < 16; j++) q41.qs[j] = (uint8_t)(j | (j ^ 5) << 4);
    hearth_q4_1_to_float_ref(&q41, y, 32);
    for (int j = 0; j < 16; j++) {
        CHECK_NEAR(y[j], 0.25 * j - 1.0, 0);
        CHECK_NEAR(y[16 + j], 0.25 * (j ^ 5) - 1.0, 0);
    }

    /* q5: nibbles as q4_0's, fifth bits 0xa5a50f0f (element e -> bit e) */
    hearth_block_q5_0 q50 = {.d = 0x4000, .qh = {0x0f, 0x0f, 0xa5, 0xa5}}; /* d = 2 */
    hearth_block_q5_1 q51 = {.d = 0x3800, .m = 0x3c00, .qh = {0x0f, 0x0f, 0xa5, 0xa5}};
    for (int j = 0; j < 16; j++) q50.qs[j] = q51.qs[j] = (uint8_t)(j | (15 - j) << 4);
    float y1[32];
    hearth_q5_0_to_float_ref(&q50, y, 32);
    hearth_q5_1_to_float_ref(&q51, y1, 32);
    for (int e = 0; e < 32; e++) {
        int nib = e < 16 ? e : 31 - e;
        int q = nib | (int)(0xa5a50f0fu >> e & 1) << 4;
        CHECK_NEAR(y[e], 2.0 * (q - 16), 0);
        CHECK_NEAR(y1[e], 0.5 * q + 1.0, 0);
    }
    CHECK_NEAR(y[0], 0.0, 0);    /* nibble 0, bit 1: 16 - 16 */
    CHECK_NEAR(y[4], -24.0, 0);  /* nibble 4, bit 0: 2 * (4 - 16) */
    CHECK_NEAR(y[16], 30.0, 0);  /* nibble 15, bit 1: 2 * (31 - 16) */
    CHECK_NEAR(y1[31], 9.0, 0);  /* nibble 0, bit 31 = 1: 0.5 * 16 + 1 */

    hearth_block_q8_0 q80 = {.d = 0x3000}; /* 0.125 */
    for (int j = 0; j < 32; j++) q80.qs[j] = (int8_t)(8 * j - 128);
    hearth_q8_0_to_float_ref(&q80, y, 32);
    for (int j = 0; j < 32; j++) CHECK_NEAR(y[j], j - 16.0, 0);
}

/* The Q4_K/Q5_K scale bytes for sc = {1,2,3,4,17,33,49,63}, mn = {0,5,10,63,16,32,48,1},
 * packed by hand per quant.h: bytes 0-3 = sc[0..3] | (sc[4..7] >> 4) << 6, bytes 4-7 =
 * mn[0..3] | (mn[4..7] >> 4) << 6, bytes 8-11 = (sc[4..7] & 15) | (mn[4..7] & 15) << 4. */
static const uint8_t k_scale_bytes[12] = {0x41, 0x82, 0xc3, 0xc4, 0x40, 0x85, 0xca, 0x3f,
                                          0x01, 0x01, 0x01, 0x1f};
static const int k_sc[8] = {1, 2, 3, 4, 17, 33, 49, 63}, k_mn[8] = {0, 5, 10, 63, 16, 32, 48, 1};

TEST(ref_dequant_q4_K_q5_K) {
    hearth_block_q4_K b4 = {.d = 0x4000, .dmin = 0x3800}; /* 2, 0.5 */
    hearth_block_q5_K b5 = {.d = 0x4000, .dmin = 0x3800};
    memcpy(b4.scales, k_scale_bytes, 12);
    memcpy(b5.scales, k_scale_bytes, 12);
    for (int i = 0; i < 8; i++) {
        uint8_t sc, mn;
        hearth_k_scale_min(k_scale_bytes, i, &sc, &mn);
        CHECK_EQ(sc, k_sc[i]);
        CHECK_EQ(mn, k_mn[i]);
    }
    /* the SIMD kernels' all-at-once unpack agrees with the per-index spec on any bytes */
    int bad = 0;
    for (int rep = 0; rep < 1000; rep++) {
        uint8_t bytes[12], sc8[8], mn8[8];
        for (int i = 0; i < 12; i++) bytes[i] = (uint8_t)rnd();
        if (rep == 0) memcpy(bytes, k_scale_bytes, 12);
        hearth_k_scales_unpack(bytes, sc8, mn8);
        for (int i = 0; i < 8; i++) {
            uint8_t sc, mn;
            hearth_k_scale_min(bytes, i, &sc, &mn);
            bad += sc != sc8[i] || mn != mn8[i];
        }
    }
    CHECK_EQ(bad, 0);
    for (int g = 0; g < 4; g++)
        for (int l = 0; l < 32; l++)
            b4.qs[32 * g + l] = b5.qs[32 * g + l] = (uint8_t)((l & 15) | (15 - (l & 15)) << 4);
    for (int l = 0; l < 32; l++) b5.qh[l] = (uint8_t)(l * 37);
    float y4[256], y5[256];
    hearth_q4_K_to_float_ref(&b4, y4, 256);
    hearth_q5_K_to_float_ref(&b5, y5, 256);
    for (int e = 0; e < 256; e++) {
        int l = e % 32, hi = (e % 64) >= 32, sub = e / 32; /* sub-block e/32 = 2g + hi */
        int q = hi ? 15 - (l & 15) : (l & 15);
        int q5 = q | ((l * 37 & 255) >> sub & 1) << 4;
        CHECK_NEAR(y4[e], 2.0 * k_sc[sub] * q - 0.5 * k_mn[sub], 0);
        CHECK_NEAR(y5[e], 2.0 * k_sc[sub] * q5 - 0.5 * k_mn[sub], 0);
    }
    CHECK_NEAR(y4[0], 0.0, 0);     /* sub 0: 2*1*0 - 0.5*0 */
    CHECK_NEAR(y4[33], 53.5, 0);   /* sub 1, high nibble 15-1: 2*2*14 - 0.5*5 */
    CHECK_NEAR(y4[130], 60.0, 0);  /* sub 4, low nibble 2: 2*17*2 - 0.5*16 */
    CHECK_NEAR(y4[255], -0.5, 0);  /* sub 7, high nibble 0: 0 - 0.5*1 */
    /* q5: element 33 = sub 1, l = 1, qh[1] = 37 = 0b100101, bit 1 = 0: same as q4 */
    CHECK_NEAR(y5[33], 53.5, 0);
    /* element 2: sub 0, qh[2] = 74 = 0b1001010, bit 0 = 0; element 64+2 (sub 2): bit 2 = 0;
     * element 32+2 (sub 1): bit 1 = 1 -> q = (15-2) | 16 = 29: 2*2*29 - 2.5 = 113.5 */
    CHECK_NEAR(y5[34], 113.5, 0);
}

TEST(ref_dequant_q6_K_q8_K) {
    /* values q(e) = 7e mod 64 placed per quant.h's drawing, one statement per quarter */
    hearth_block_q6_K b = {.d = 0x3400}; /* 0.25 */
    for (int g = 0; g < 16; g++) b.scales[g] = (int8_t)(g - 8);
    for (int half = 0; half < 2; half++)
        for (int l = 0; l < 32; l++) {
            int base = 128 * half;
            int q0 = 7 * (base + l) % 64, q1 = 7 * (base + l + 32) % 64;
            int q2 = 7 * (base + l + 64) % 64, q3 = 7 * (base + l + 96) % 64;
            b.ql[64 * half + l] = (uint8_t)((q0 & 15) | (q2 & 15) << 4);
            b.ql[64 * half + 32 + l] = (uint8_t)((q1 & 15) | (q3 & 15) << 4);
            b.qh[32 * half + l] =
                (uint8_t)(q0 >> 4 | (q1 >> 4) << 2 | (q2 >> 4) << 4 | (q3 >> 4) << 6);
        }
    float y[256];
    hearth_q6_K_to_float_ref(&b, y, 256);
    for (int e = 0; e < 256; e++) CHECK_NEAR(y[e], 0.25 * (e / 16 - 8) * (7 * e % 64 - 32), 0);
    CHECK_NEAR(y[0], 0.25 * -8 * -32, 0);      /* 64 */
    CHECK_NEAR(y[255], 0.25 * 7 * (1785 % 64 - 32), 0);

    hearth_block_q8_K k = {.d = 0.5f};
    for (int j = 0; j < 256; j++) k.qs[j] = (int8_t)(j - 128);
    hearth_q8_K_to_float_ref(&k, y, 256);
    for (int j = 0; j < 256; j++) CHECK_NEAR(y[j], 0.5 * (j - 128), 0);
}

/* dot(x, all-ones activations) = the sum of x's dequantized values, in every set. */
TEST(dot_against_ones) {
    for (int it = 0; it < N_WEIGHT_TYPES; it++) {
        hearth_type t = weight_types[it];
        if (!tt(t)->is_quantized) continue;
        int64_t n = 3 * blck(t);
        void *w = xalloc(hearth_row_size(t, n));
        make_row(t, w, n, true);
        float deq[768];
        hearth_kernels_traits_isa(t, HEARTH_ISA_SCALAR)->to_float(w, deq, n);
        double sum = 0, mag = 0;
        for (int64_t i = 0; i < n; i++) { sum += deq[i]; mag += fabs(deq[i]); }
        for (int isa = HEARTH_ISA_SCALAR; isa < HEARTH_ISA_COUNT; isa++) {
            const hearth_kernel_traits *tr = kt(t, isa);
            if (!tr) continue;
            uint8_t ones[3 * 292];
            hearth_type a = tr->vec_dot_type;
            for (int64_t i = 0; a == HEARTH_TYPE_F32 && i < n; i++) memcpy(ones + 4 * i, &(float){1.0f}, 4);
            for (int64_t k = 0; a != HEARTH_TYPE_F32 && k < n / blck(a); k++) {
                uint8_t *blk = ones + (size_t)k * tt(a)->type_size;
                if (a == HEARTH_TYPE_Q8_K) {
                    hearth_block_q8_K *q = (hearth_block_q8_K *)blk;
                    q->d = 1.0f;
                    memset(q->qs, 1, 256);
                    for (int g = 0; g < 16; g++) q->bsums[g] = 16;
                } else if (a == HEARTH_TYPE_Q8_1) {
                    hearth_block_q8_1 *q = (hearth_block_q8_1 *)blk;
                    q->d = 0x3c00;
                    q->s = hearth_fp32_to_fp16(32.0f);
                    memset(q->qs, 1, 32);
                } else {
                    hearth_block_q8_0 *q = (hearth_block_q8_0 *)blk;
                    q->d = 0x3c00;
                    memset(q->qs, 1, 32);
                }
            }
            float s;
            tr->vec_dot(n, &s, w, ones);
            CHECK_NEAR(s, sum, 1e-6 * mag + 1e-6);
        }
        free(w);
    }
}

/* ---- q8 quantizers on known vectors --------------------------------------------------------- */

TEST(q8_0_q8_1_known) {
    float x[64] = {127, 2.5f, -2.5f, 0.5f, -0.49f, 1.5f, -127, 126.5f};
    for (int j = 8; j < 32; j++) x[j] = (float)(j - 16);
    /* block 2: amax 254 -> d = 2, multiplier 0.5 */
    x[32] = -254; x[33] = 3; x[34] = -5; x[35] = 1; x[36] = 253;
    /* the ref set's quantizer is ggml's generic one (roundf: ties away from zero); the
     * activation quantizers of the other sets are llama.cpp's x86 ones (ties to even) */
    const int8_t away0[8] = {127, 3, -3, 1, 0, 2, -127, 127}, away1[5] = {-127, 2, -3, 1, 127};
    const int8_t even0[8] = {127, 2, -2, 0, 0, 2, -127, 126}, even1[5] = {-127, 2, -2, 0, 126};
    for (int isa = HEARTH_ISA_REF; isa < HEARTH_ISA_COUNT; isa++) {
        const hearth_kernel_traits *t0 = kt(HEARTH_TYPE_Q8_0, isa);
        const hearth_kernel_traits *t1 = kt(HEARTH_TYPE_Q8_1, isa);
        if (!t0) continue;
        const int8_t *want0 = isa == HEARTH_ISA_REF ? away0 : even0, *want1 = isa == HEARTH_ISA_REF ? away1 : even1;
        hearth_block_q8_0 b0[2];
        hearth_block_q8_1 b1[2];
        t0->from_float(x, b0, 64);
        t1->from_float(x, b1, 64);
        CHECK_EQ(b0[0].d, 0x3c00);
        CHECK_EQ(b0[1].d, 0x4000);
        CHECK_EQ(b1[0].d, 0x3c00);
        int sum0 = 0, sum1 = 0;
        for (int j = 0; j < 32; j++) {
            int w0 = j < 8 ? want0[j] : j - 16;
            int w1 = j < 5 ? want1[j] : 0;
            CHECK_EQ(b0[0].qs[j], w0);
            CHECK_EQ(b1[0].qs[j], w0);
            CHECK_EQ(b0[1].qs[j], w1);
            CHECK_EQ(b1[1].qs[j], w1);
            sum0 += w0;
            sum1 += w1;
        }
        CHECK_EQ(b1[0].s, hearth_fp32_to_fp16((float)sum0));
        CHECK_EQ(b1[1].s, hearth_fp32_to_fp16((float)sum1 * 2.0f));
    }
}

TEST(q8_K_known) {
    static float x[768];
    memset(x, 0, sizeof x);
    /* block 0: max = -127 (first of largest magnitude) -> iscale = 1: ties go to even */
    x[0] = -127; x[1] = 2.5f; x[2] = 3.5f; x[3] = -2.5f; x[4] = 0.5f; x[5] = 127;
    x[16] = 126.5f; x[17] = 1.4999f;
    /* block 1: max = +2 -> iscale = -63.5 */
    x[256] = 2; x[257] = -2; x[258] = 1; x[259] = 0.25f;
    /* block 2: all zero */
    for (int isa = HEARTH_ISA_SCALAR; isa < HEARTH_ISA_COUNT; isa++) {
        const hearth_kernel_traits *tr = kt(HEARTH_TYPE_Q8_K, isa);
        if (!tr) continue;
        hearth_block_q8_K b[3];
        memset(b, 0x55, sizeof b);
        tr->from_float(x, b, 768);
        const int8_t w0[6] = {-127, 2, 4, -2, 0, 127};
        for (int j = 0; j < 6; j++) CHECK_EQ(b[0].qs[j], w0[j]);
        CHECK_EQ(b[0].qs[16], 126);
        CHECK_EQ(b[0].qs[17], 1);
        CHECK_EQ(b[0].bsums[0], 4);
        CHECK_EQ(b[0].bsums[1], 127);
        CHECK(b[0].d == 1.0f);
        const int8_t w1[4] = {-127, 127, -64, -16}; /* 1 * -63.5 -> -64 (even), 0.25 -> -15.875 */
        for (int j = 0; j < 4; j++) CHECK_EQ(b[1].qs[j], w1[j]);
        CHECK_EQ(b[1].bsums[0], -80);
        CHECK(b[1].d == 1.0f / (-127.0f / 2.0f));
        CHECK(b[2].d == 0.0f);
        int nz = 0;
        for (int j = 0; j < 256; j++) nz += b[2].qs[j] != 0;
        for (int g = 0; g < 16; g++) nz += b[2].bsums[g] != 0;
        CHECK_EQ(nz, 0);
        for (int g = 2; g < 16; g++) CHECK_EQ(b[0].bsums[g], 0);
    }
}

/* ---- f16 / bf16 conversions ------------------------------------------------------------------ */

TEST(half_conversions) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = hearth_fp16_to_fp32((uint16_t)h);
        bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
        if (nan) bad += !isnan(f) || !isnan(hearth_fp16_to_fp32(hearth_fp32_to_fp16(f)));
        else bad += hearth_fp32_to_fp16(f) != h;
        float g = hearth_bf16_to_fp32((uint16_t)h);
        bool bnan = (h & 0x7f80) == 0x7f80 && (h & 0x7f);
        if (bnan) bad += !isnan(g) || !isnan(hearth_bf16_to_fp32(hearth_fp32_to_bf16(g)));
        else bad += hearth_fp32_to_bf16(g) != h;
    }
    CHECK_EQ(bad, 0);
    CHECK(hearth_fp16_to_fp32(0x0001) == 5.9604644775390625e-8f); /* smallest subnormal */
    CHECK(hearth_fp16_to_fp32(0x03ff) == 6.0975551605224609e-5f); /* largest subnormal */
    CHECK(hearth_fp16_to_fp32(0x8001) == -5.9604644775390625e-8f);
    CHECK(isinf(hearth_fp16_to_fp32(0x7c00)) && hearth_fp16_to_fp32(0xfc00) < 0);
    CHECK_EQ(hearth_fp32_to_fp16(65519.0f), 0x7bff);
    CHECK_EQ(hearth_fp32_to_fp16(65520.0f), 0x7c00);          /* rounds up to inf */
    CHECK_EQ(hearth_fp32_to_fp16(2.98023224e-8f), 0x0000);    /* 2^-25: tie -> even (0) */
    CHECK_EQ(hearth_fp32_to_fp16(8.94069672e-8f), 0x0002);    /* 1.5 * 2^-24: tie -> 2 */
    CHECK_EQ(hearth_fp32_to_fp16(1.0009765625f), 0x3c01);
    CHECK_EQ(hearth_fp32_to_fp16(1.00048828125f), 0x3c00);    /* tie -> even */
    CHECK_EQ(hearth_fp32_to_fp16(-INFINITY), 0xfc00);
    CHECK(isnan(hearth_fp16_to_fp32(hearth_fp32_to_fp16(NAN))));
    CHECK_EQ(hearth_fp32_to_bf16(1.00390625f), 0x3f80);       /* 0x3f808000: tie -> even */
    CHECK_EQ(hearth_fp32_to_bf16(1.01171875f), 0x3f82);       /* 0x3f818000: tie -> even */
    CHECK_EQ(hearth_fp32_to_bf16(INFINITY), 0x7f80);
    CHECK(isnan(hearth_bf16_to_fp32(hearth_fp32_to_bf16(NAN))));
    CHECK(hearth_bf16_to_fp32(0x0001) > 0); /* bf16 subnormal */
}

/* ---- SIMD against scalar ------------------------------------------------------------------- */

/* sum_i |w_i a_i| over dequantized rows: the scale the dot tolerances are relative to. */
static double dot_mag(hearth_type wt, const void *w, hearth_type at, const void *a, int64_t n) {
    float *fw = xalloc((size_t)n * 4), *fa = xalloc((size_t)n * 4);
    hearth_kernels_traits_isa(wt, HEARTH_ISA_SCALAR)->to_float(w, fw, n);
    hearth_kernels_traits_isa(at, HEARTH_ISA_SCALAR)->to_float(a, fa, n);
    double m = 0;
    for (int64_t i = 0; i < n; i++) m += fabs((double)fw[i] * fa[i]);
    free(fw);
    free(fa);
    return m;
}

TEST(vec_dot_simd_vs_scalar) {
    static const int64_t blocks[] = {1, 3, 7, 33};
    static const int64_t plain_n[] = {1, 7, 15, 31, 33, 64, 100, 257, 1000, 4099};
    for (int it = 0; it < N_WEIGHT_TYPES; it++) {
        hearth_type t = weight_types[it];
        const hearth_kernel_traits *ref = hearth_kernels_traits_isa(t, HEARTH_ISA_SCALAR);
        const hearth_kernel_traits *ta = kt(ref->vec_dot_type, HEARTH_ISA_SCALAR);
        double worst = 0;
        int n_sizes = tt(t)->is_quantized ? 4 : 10;
        for (int si = 0; si < n_sizes; si++)
            for (int mode = 0; mode < 2; mode++)
                for (int rep = 0; rep < 3; rep++) {
                    int64_t n = tt(t)->is_quantized ? blocks[si] * blck(t) : plain_n[si];
                    void *w = xalloc(hearth_row_size(t, n));
                    void *a = xalloc(hearth_row_size(ref->vec_dot_type, n));
                    float *x = xalloc((size_t)n * 4);
                    make_row(t, w, n, mode == 0);
                    for (int64_t i = 0; i < n; i++) x[i] = rnd_unit() * (1 + (float)(i % 5));
                    ta->from_float(x, a, n);
                    float s_ref;
                    ref->vec_dot(n, &s_ref, w, a);
                    double mag = dot_mag(t, w, ref->vec_dot_type, a, n);
                    for (int isa = 0; isa < HEARTH_ISA_COUNT; isa++) {
                        if (!isa_simd((hearth_isa)isa)) continue;
                        const hearth_kernel_traits *tr = kt(t, isa);
                        if (!tr) continue;
                        CHECK_EQ(tr->vec_dot_type, ref->vec_dot_type);
                        float s;
                        tr->vec_dot(n, &s, w, a);
                        double err = fabs((double)s - s_ref);
                        if (mag > 0 && err / mag > worst) worst = err / mag;
                        if (!(err <= simd_tol(t) * mag + 1e-30))
                            fprintf(stderr, "  %s %s n=%lld mode=%d: %.9g vs %.9g (mag %g)\n",
                                    hearth_type_name((int)t), hearth_isa_name((hearth_isa)isa),
                                    (long long)n, mode, s, s_ref, mag);
                        CHECK(err <= simd_tol(t) * mag + 1e-30);
                    }
                    free(w);
                    free(a);
                    free(x);
                }
        fprintf(stderr, "  %-5s worst |simd - scalar| / sum|w a| = %.2e (tol %.0e)\n",
                hearth_type_name((int)t), worst, simd_tol(t));
    }
}

TEST(q8_from_float_simd_bitexact) {
    static const hearth_type acts[] = {HEARTH_TYPE_Q8_0, HEARTH_TYPE_Q8_1, HEARTH_TYPE_Q8_K};
    const int64_t n = 256 * 9;
    float *x = xalloc((size_t)n * 4);
    uint8_t *r = xalloc(hearth_row_size(HEARTH_TYPE_Q8_K, n) + 4096);
    uint8_t *s = xalloc(hearth_row_size(HEARTH_TYPE_Q8_K, n) + 4096);
    for (int rep = 0; rep < 40; rep++) {
        float scale = rep % 4 == 0 ? 1e-3f : rep % 4 == 1 ? 1.0f : rep % 4 == 2 ? 30.0f : 1e4f;
        for (int64_t i = 0; i < n; i++) x[i] = rnd_unit() * scale;
        /* exact halves after scaling by 127/amax, to hit the rounding ties */
        if (rep % 5 == 0)
            for (int64_t i = 0; i < n; i++) x[i] = (float)((int64_t)(rnd() % 255) - 127) * 0.5f;
        if (rep == 3) memset(x + 256, 0, 256 * sizeof(float)); /* zero blocks */
        if (rep == 7) for (int64_t i = 0; i < n; i += 37) x[i] = -x[i] * 3.0f;
        for (int ia = 0; ia < 3; ia++) {
            size_t bytes = hearth_row_size(acts[ia], n);
            hearth_kernels_traits_isa(acts[ia], HEARTH_ISA_SCALAR)->from_float(x, r, n);
            for (int isa = 0; isa < HEARTH_ISA_COUNT; isa++) {
                const hearth_kernel_traits *tr = kt(acts[ia], isa);
                if (!tr || !isa_simd((hearth_isa)isa)) continue;
                memset(s, 0xa5, bytes);
                tr->from_float(x, s, n);
                if (memcmp(r, s, bytes) != 0)
                    fprintf(stderr, "  %s %s differs (rep %d)\n", hearth_type_name((int)acts[ia]),
                            hearth_isa_name((hearth_isa)isa), rep);
                CHECK(memcmp(r, s, bytes) == 0);
            }
        }
    }
    free(x);
    free(r);
    free(s);
}

/* The ref set's vec_dot (dequantize block by block, double sum) equals the f32 reference dot
 * of the dequantized row bit for bit, which is what hearth_matmul's ref path computes. */
TEST(ref_set_dot_is_dequant_dot) {
    for (int it = 0; it < N_WEIGHT_TYPES; it++) {
        hearth_type t = weight_types[it];
        const hearth_kernel_traits *tr = hearth_kernels_traits_isa(t, HEARTH_ISA_REF);
        CHECK(tr && tr->vec_dot_type == HEARTH_TYPE_F32);
        int64_t n = 3 * (blck(t) > 1 ? blck(t) : 100);
        void *w = xalloc(hearth_row_size(t, n));
        float *x = xalloc((size_t)n * 4), *d = xalloc((size_t)n * 4);
        make_row(t, w, n, true);
        for (int64_t i = 0; i < n; i++) x[i] = rnd_unit();
        tr->to_float(w, d, n);
        float s1, s2;
        tr->vec_dot(n, &s1, w, x);
        hearth_vec_dot_f32_ref(n, &s2, d, x);
        CHECK(s1 == s2);
        free(w);
        free(x);
        free(d);
    }
}

/* MLX affine blocks built by hand from the layout in tensor/quant.h: the packed bytes of a
 * checkpoint's uint32 words, element k of a word at bits k * bits. */
TEST(ref_dequant_mlx) {
    /* 4-bit: words 0x87654321 then 0xfedcba90 ... give elements 1..8, 0, 9, 10, ... */
    uint8_t b4[8 + 32];
    float sc = 0.5f, bi = -1.0f;
    memcpy(b4, &sc, 4);
    memcpy(b4 + 4, &bi, 4);
    for (int j = 0; j < 32; j++) b4[8 + j] = (uint8_t)((2 * j) % 16 | ((2 * j + 1) % 16) << 4);
    uint32_t w0 = 0x87654321u;
    memcpy(b4 + 8, &w0, 4);
    float y[64];
    hearth_kernels_traits_isa(HEARTH_TYPE_MLX4_G64, HEARTH_ISA_SCALAR)->to_float(b4, y, 64);
    for (int e = 0; e < 8; e++) CHECK_NEAR(y[e], 0.5f * (float)(e + 1) - 1.0f, 0);
    for (int e = 8; e < 64; e++) CHECK_NEAR(y[e], 0.5f * (float)(e % 16) - 1.0f, 0);
    /* 8-bit group 32: byte j = element j */
    uint8_t b8[8 + 32];
    sc = 0.25f, bi = 2.0f;
    memcpy(b8, &sc, 4);
    memcpy(b8 + 4, &bi, 4);
    for (int j = 0; j < 32; j++) b8[8 + j] = (uint8_t)(j * 8 + 3);
    hearth_kernels_traits_isa(HEARTH_TYPE_MLX8_G32, HEARTH_ISA_SCALAR)->to_float(b8, y, 32);
    for (int e = 0; e < 32; e++) CHECK_NEAR(y[e], 0.25f * (float)(e * 8 + 3) + 2.0f, 0);
    /* the test quantizer is the affine rule: the ends of each group come back exactly */
    float x[32];
    for (int e = 0; e < 32; e++) x[e] = (float)e / 31.0f * 3.0f - 1.0f;
    hearth_kernels_traits_isa(HEARTH_TYPE_MLX4_G32, HEARTH_ISA_SCALAR)->from_float(x, b8, 32);
    hearth_kernels_traits_isa(HEARTH_TYPE_MLX4_G32, HEARTH_ISA_SCALAR)->to_float(b8, y, 32);
    CHECK_NEAR(y[0], -1.0f, 1e-6);
    CHECK_NEAR(y[31], 2.0f, 1e-6);
    for (int e = 0; e < 32; e++) CHECK_NEAR(y[e], x[e], 3.0f / 15 / 2 + 1e-6);
    /* the MLX types are in-memory layouts, never GGUF ids */
    CHECK(hearth_type_traits_of(HEARTH_TYPE_MLX4_G32)->internal);
    CHECK_EQ(hearth_type_mlx(8, 64), HEARTH_TYPE_MLX8_G64);
    CHECK_EQ(hearth_type_mlx(3, 64), -1);
}

/* ---- dispatch ------------------------------------------------------------------------------ */

TEST(dispatch_tables) {
    hearth_kernels_init();
    CHECK(hearth_isa_available(HEARTH_ISA_REF) && hearth_isa_available(HEARTH_ISA_SCALAR));
    CHECK_STR(hearth_isa_name(HEARTH_ISA_AVX512), "avx512");
    fprintf(stderr, "  active: %s; available:", hearth_isa_name(hearth_kernels_isa()));
    for (int isa = 0; isa < HEARTH_ISA_COUNT; isa++)
        if (hearth_isa_available((hearth_isa)isa))
            fprintf(stderr, " %s", hearth_isa_name((hearth_isa)isa));
    fprintf(stderr, "\n");
    /* the default is the best set this CPU runs, unless HEARTH_KERNELS names another */
    const char *env = getenv("HEARTH_KERNELS");
    hearth_isa want = hearth_isa_available(HEARTH_ISA_AVX512) ? HEARTH_ISA_AVX512
                    : hearth_isa_available(HEARTH_ISA_AVX2)   ? HEARTH_ISA_AVX2 : HEARTH_ISA_SCALAR;
    for (int isa = 0; env && isa < HEARTH_ISA_COUNT; isa++)
        if (!strcmp(env, hearth_isa_name((hearth_isa)isa)) && hearth_isa_available((hearth_isa)isa))
            want = (hearth_isa)isa;
    CHECK_EQ(hearth_kernels_isa(), want);

    static const hearth_type pair[][2] = {
        {HEARTH_TYPE_F32, HEARTH_TYPE_F32},   {HEARTH_TYPE_F16, HEARTH_TYPE_F16},
        {HEARTH_TYPE_BF16, HEARTH_TYPE_BF16}, {HEARTH_TYPE_Q4_0, HEARTH_TYPE_Q8_0},
        {HEARTH_TYPE_Q4_1, HEARTH_TYPE_Q8_1}, {HEARTH_TYPE_Q5_0, HEARTH_TYPE_Q8_0},
        {HEARTH_TYPE_Q5_1, HEARTH_TYPE_Q8_1}, {HEARTH_TYPE_Q8_0, HEARTH_TYPE_Q8_0},
        {HEARTH_TYPE_Q4_K, HEARTH_TYPE_Q8_K}, {HEARTH_TYPE_Q5_K, HEARTH_TYPE_Q8_K},
        {HEARTH_TYPE_Q6_K, HEARTH_TYPE_Q8_K},
    };
    for (int isa = 0; isa < HEARTH_ISA_COUNT; isa++) {
        if (!hearth_isa_available((hearth_isa)isa)) continue;
        for (size_t i = 0; i < sizeof pair / sizeof pair[0]; i++) {
            const hearth_kernel_traits *tr = kt(pair[i][0], isa);
            CHECK(tr && tr->vec_dot && tr->to_float && tr->from_float);
            CHECK_EQ(tr->vec_dot_type, isa == HEARTH_ISA_REF ? HEARTH_TYPE_F32 : pair[i][1]);
        }
        static const hearth_type act_only[] = {HEARTH_TYPE_Q8_1, HEARTH_TYPE_Q8_K};
        for (int i = 0; i < 2; i++) {
            const hearth_kernel_traits *tr = kt(act_only[i], isa);
            CHECK(tr && tr->from_float && tr->to_float && !tr->vec_dot);
        }
        CHECK(kt(HEARTH_TYPE_Q2_K, isa) == NULL);
        CHECK(kt(HEARTH_TYPE_I8, isa) == NULL);
        CHECK(hearth_kernels_traits_isa((hearth_type)4, (hearth_isa)isa) == NULL);
    }
    CHECK(hearth_kernels_traits_isa(HEARTH_TYPE_F32, HEARTH_ISA_COUNT) == NULL);
    CHECK(!hearth_kernels_select(HEARTH_ISA_COUNT));
}

/* ---- matmul ---------------------------------------------------------------------------------- */

enum { MM_OUT = 37, MM_IN = 512, MM_PAD = 16, MM_LDY = MM_OUT + 3 };

/* Runs hearth_matmul for one set over n_tok = 1, 5, 17 and thread counts 1..3 (and a NULL
 * pool), checking each against double loops and all of them against each other. */
static void check_matmul(hearth_type t, hearth_isa isa, hearth_pool *pools[4]) {
    const int64_t n_tok_max = 17;
    size_t row_bytes = hearth_row_size(t, MM_IN) + MM_PAD;
    uint8_t *w = xalloc(row_bytes * MM_OUT);
    float *wf = xalloc((size_t)MM_OUT * MM_IN * 4);
    float *x = xalloc((size_t)n_tok_max * MM_IN * 4), *xq = xalloc((size_t)n_tok_max * MM_IN * 4);
    for (int r = 0; r < MM_OUT; r++) {
        make_row(t, w + (size_t)r * row_bytes, MM_IN, r % 2 == 0);
        memset(w + (size_t)r * row_bytes + row_bytes - MM_PAD, 0xee, MM_PAD);
        const uint8_t *wr = w + (size_t)r * row_bytes;
        kt(t, HEARTH_ISA_SCALAR)->to_float(wr, wf + (size_t)r * MM_IN, MM_IN);
    }
    for (int64_t i = 0; i < n_tok_max * MM_IN; i++) x[i] = rnd_unit() * (1.0f + (float)(i % 3));
    /* the activations as the set sees them: quantized to its vec_dot_type and back */
    const hearth_kernel_traits *tr = hearth_kernels_traits_isa(t, isa);
    const hearth_kernel_traits *ta = hearth_kernels_traits_isa(tr->vec_dot_type, isa);
    size_t act_bytes = hearth_row_size(tr->vec_dot_type, MM_IN);
    uint8_t *xqb = xalloc(act_bytes * n_tok_max);
    for (int64_t k = 0; k < n_tok_max; k++) {
        ta->from_float(x + k * MM_IN, xqb + k * act_bytes, MM_IN);
        ta->to_float(xqb + k * act_bytes, xq + k * MM_IN, MM_IN);
    }
    static const int64_t toks[] = {1, 5, 17};
    float *y[4];
    for (int it = 0; it < 3; it++) {
        int64_t n_tok = toks[it];
        for (int p = 0; p < 4; p++) {
            int nth = hearth_pool_size(pools[p]);
            size_t sb = hearth_matmul_scratch_bytes(t, MM_IN, n_tok, nth);
            void *scratch = sb ? xalloc(sb) : NULL;
            y[p] = xalloc((size_t)n_tok * MM_LDY * 4);
            for (int64_t i = 0; i < n_tok * MM_LDY; i++) y[p][i] = -12345.0f;
            hearth_matmul(pools[p], t, w, row_bytes, MM_OUT, MM_IN, x, n_tok, y[p], MM_LDY,
                          scratch);
            free(scratch);
        }
        int bad_exact = 0, bad_f32 = 0, bad_q = 0, bad_pad = 0;
        for (int64_t k = 0; k < n_tok; k++)
            for (int r = 0; r < MM_LDY; r++) {
                float v = y[0][k * MM_LDY + r];
                for (int p = 1; p < 4; p++) bad_exact += memcmp(&v, &y[p][k * MM_LDY + r], 4) != 0;
                if (r >= MM_OUT) { bad_pad += v != -12345.0f; continue; }
                /* against f32 activations: the activation rounding bounds the error */
                double ref = 0, refq = 0, bound = 0, mag = 0;
                for (int i = 0; i < MM_IN; i++) {
                    double wi = wf[r * MM_IN + i];
                    ref += wi * x[k * MM_IN + i];
                    refq += wi * xq[k * MM_IN + i];
                    bound += fabs(wi) * fabs((double)x[k * MM_IN + i] - xq[k * MM_IN + i]);
                    mag += fabs(wi * xq[k * MM_IN + i]);
                }
                bad_f32 += !(fabs(v - ref) <= bound + 1e-5 * mag + 1e-6);
                /* against the activations it really multiplied: float summation only, plus
                 * for q4_1/q5_1 the rounding of q8_1's s = half(d * sum q) times the min m */
                double s_err = 0;
                if (tr->vec_dot_type == HEARTH_TYPE_Q8_1)
                    for (int b = 0; b < MM_IN / 32; b++) {
                        const hearth_block_q8_1 *a =
                            (const hearth_block_q8_1 *)(xqb + k * act_bytes) + b;
                        const uint8_t *wb =
                            w + (size_t)r * row_bytes + (size_t)b * tt(t)->type_size;
                        uint16_t mh;
                        memcpy(&mh, wb + 2, 2); /* q4_1/q5_1: m follows d */
                        double sa = fabs(hearth_fp16_to_fp32(a->s));
                        s_err += fabs(hearth_fp16_to_fp32(mh)) * (sa * 0x1p-11 + 0x1p-24);
                    }
                bad_q += !(fabs(v - refq) <= s_err + 1e-5 * mag + 1e-6);
            }
        if (bad_exact || bad_f32 || bad_q || bad_pad)
            fprintf(stderr, "  %s %s n_tok=%lld: thread-dependent %d, vs f32 %d, vs quantized %d,"
                            " pad %d\n",
                    hearth_type_name((int)t), hearth_isa_name(isa), (long long)n_tok, bad_exact,
                    bad_f32, bad_q, bad_pad);
        CHECK_EQ(bad_exact, 0);
        CHECK_EQ(bad_f32, 0);
        CHECK_EQ(bad_q, 0);
        CHECK_EQ(bad_pad, 0);
        for (int p = 0; p < 4; p++) free(y[p]);
    }
    free(w);
    free(wf);
    free(x);
    free(xq);
    free(xqb);
}

TEST(matmul_all_sets) {
    hearth_pool *pools[4] = {NULL, hearth_pool_create(1), hearth_pool_create(2),
                             hearth_pool_create(3)};
    CHECK(pools[1] && pools[2] && pools[3]);
    hearth_isa saved = hearth_kernels_isa();
    for (int isa = 0; isa < HEARTH_ISA_COUNT; isa++) {
        if (!hearth_kernels_select((hearth_isa)isa)) continue;
        for (int it = 0; it < N_WEIGHT_TYPES; it++)
            check_matmul(weight_types[it], (hearth_isa)isa, pools);
    }
    CHECK(hearth_kernels_select(saved));
    for (int p = 1; p < 4; p++) hearth_pool_destroy(pools[p]);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
