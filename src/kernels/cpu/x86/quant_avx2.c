/*
 * quant_avx2.c - AVX2+FMA+F16C kernels: f32/f16/bf16 dots, the 32-element block dots (q4_0,
 * q4_1, q5_0, q5_1, q8_0 against q8_0/q8_1) and the q8 activation quantizers.
 *
 * Block dots: a block's 32 weights are expanded to 32 bytes (element e in byte e), multiplied
 * with the 32 activation bytes by vpmaddubsw (u8 x s8 -> pairs summed to s16; no saturation
 * here: |products| <= 128*127*2 < 2^15) and vpmaddwd by ones (-> 8 s32 lanes), all exact; the
 * lanes are scaled by dx*dy in float and accumulated with FMA. Signed weights use the sign
 * trick: |x| (u8) times y with x's sign. q4_0, q4_1, q5_0 and q8_0 keep one accumulator in
 * llama.cpp's x86 order and equal llamacpp_order_ref.c bit for bit; q5_1 takes two blocks per
 * iteration, an odd last block through the reference. kquant_avx2.c holds the K-quants.
 *
 * The q8_0/q8_1 activation quantizers are bit-identical to llamacpp_order_ref.c (llama.cpp's x86
 * recipe: multiplier 127 / amax, half to even), q8_K to quant_ref.c (nearest_int as cvtps,
 * ties to even in the default MXCSR).
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/cpu/x86/quant_x86.h"
#include "kernels/ref/dot_ref.h"
#include "kernels/ref/quant_ref.h"
#include "tensor/dtype.h"
#include "tensor/quant.h"

static inline float hsum_ps(__m256 v) {
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

static inline int hsum_epi32(__m256i v) {
    __m128i r = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    r = _mm_add_epi32(r, _mm_shuffle_epi32(r, _MM_SHUFFLE(1, 0, 3, 2)));
    r = _mm_add_epi32(r, _mm_shuffle_epi32(r, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(r);
}

static inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

/* ---- plain dots: 4 x 8 lanes of FMA, then 8 at a time, then the reference's double loop --- */

static inline __m256 load_f16(const uint16_t *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

static inline __m256 load_bf16(const uint16_t *p) {
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

void hearth_vec_dot_f32_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    const float *x = vx, *y = vy;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), a1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 16), _mm256_loadu_ps(y + i + 16), a2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 24), _mm256_loadu_ps(y + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8)
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), a0);
    float sum = hsum_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    float tail;
    hearth_vec_dot_f32_ref(n - i, &tail, x + i, y + i);
    *s = sum + tail;
}

void hearth_vec_dot_f16_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(load_f16(x + i), load_f16(y + i), a0);
        a1 = _mm256_fmadd_ps(load_f16(x + i + 8), load_f16(y + i + 8), a1);
        a2 = _mm256_fmadd_ps(load_f16(x + i + 16), load_f16(y + i + 16), a2);
        a3 = _mm256_fmadd_ps(load_f16(x + i + 24), load_f16(y + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(load_f16(x + i), load_f16(y + i), a0);
    float sum = hsum_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    float tail;
    hearth_vec_dot_f16_ref(n - i, &tail, x + i, y + i);
    *s = sum + tail;
}

void hearth_vec_dot_bf16_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(load_bf16(x + i), load_bf16(y + i), a0);
        a1 = _mm256_fmadd_ps(load_bf16(x + i + 8), load_bf16(y + i + 8), a1);
        a2 = _mm256_fmadd_ps(load_bf16(x + i + 16), load_bf16(y + i + 16), a2);
        a3 = _mm256_fmadd_ps(load_bf16(x + i + 24), load_bf16(y + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(load_bf16(x + i), load_bf16(y + i), a0);
    float sum = hsum_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    float tail;
    hearth_vec_dot_bf16_ref(n - i, &tail, x + i, y + i);
    *s = sum + tail;
}

/* ---- 32-element block helpers ----------------------------------------------------------- */

/* 16 bytes of nibbles -> 32 bytes: byte j = low nibble of q[j], byte 16+j = high nibble. */
static inline __m256i unpack_nibbles(const uint8_t *q) {
    __m128i t = _mm_loadu_si128((const __m128i *)q);
    __m256i b = _mm256_set_m128i(_mm_srli_epi16(t, 4), t);
    return _mm256_and_si256(b, _mm256_set1_epi8(15));
}

/* 32 bits of qh (element e -> bit e) -> 32 bytes, 0xff where the bit is set. */
static inline __m256i expand_bits(const uint8_t *qh4) {
    uint32_t qh;
    memcpy(&qh, qh4, 4);
    /* byte e takes qh's byte e/8, then tests bit e%8 */
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)qh),
                                    _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                      0x0101010101010101, 0x0000000000000000));
    __m256i bit = _mm256_set1_epi64x((int64_t)0x8040201008040201);
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

/* u8 x s8, 32 bytes -> 8 s32 lanes, each the sum of 4 adjacent products. */
static inline __m256i dot_us8(__m256i ux, __m256i sy) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(ux, sy), _mm256_set1_epi16(1));
}

/* s8 x s8 (y != -128) via |x| times y with x's sign. */
static inline __m256i dot_ss8(__m256i x, __m256i y) {
    return dot_us8(_mm256_abs_epi8(x), _mm256_sign_epi8(y, x));
}

static inline __m256i load32(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* ---- block dots: llama.cpp's x86 order (llamacpp_order_ref.h), one accumulator ---------------- */

void hearth_vec_dot_q4_0_q8_0_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q4_0 *x = vx;
    const hearth_block_q8_0 *y = vy;
    const __m256i off = _mm256_set1_epi8(8); /* q - 8 in [-8, 7] */
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / HEARTH_QK4_0; b++) {
        __m256i p = dot_ss8(_mm256_sub_epi8(unpack_nibbles(x[b].qs), off), load32(y[b].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[b].d) * h2f(y[b].d)), _mm256_cvtepi32_ps(p), acc);
    }
    *s = hsum_ps(acc);
}

void hearth_vec_dot_q4_1_q8_1_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q4_1 *x = vx;
    const hearth_block_q8_1 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    float summs = 0.0f; /* sum of m * s: the minimum times the activation block sum */
    for (int64_t b = 0; b < n / HEARTH_QK4_1; b++) {
        summs = fmaf(h2f(x[b].m), h2f(y[b].s), summs);
        __m256i p = dot_us8(unpack_nibbles(x[b].qs), load32(y[b].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[b].d) * h2f(y[b].d)), _mm256_cvtepi32_ps(p), acc);
    }
    *s = hsum_ps(acc) + summs;
}

/* Q5_0 value - 16 as a signed byte: nibble | (fifth bit ? 0 : 0xf0). */
static inline __m256i q5_0_signed(const hearth_block_q5_0 *b) {
    __m256i hi = _mm256_andnot_si256(expand_bits(b->qh), _mm256_set1_epi8((char)0xf0));
    return _mm256_or_si256(unpack_nibbles(b->qs), hi);
}

void hearth_vec_dot_q5_0_q8_0_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q5_0 *x = vx;
    const hearth_block_q8_0 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / HEARTH_QK5_0; b++) {
        __m256i p = dot_ss8(q5_0_signed(&x[b]), load32(y[b].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[b].d) * h2f(y[b].d)), _mm256_cvtepi32_ps(p), acc);
    }
    *s = hsum_ps(acc);
}

/* Q5_1 value 0..31: nibble | (fifth bit ? 0x10 : 0). */
static inline __m256i q5_1_unsigned(const hearth_block_q5_1 *b) {
    __m256i hi = _mm256_and_si256(expand_bits(b->qh), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(unpack_nibbles(b->qs), hi);
}

void hearth_vec_dot_q5_1_q8_1_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q5_1 *x = vx;
    const hearth_block_q8_1 *y = vy;
    const int64_t nb = n / HEARTH_QK5_1;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;
    float summs = 0.0f;
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        __m256i p0 = dot_us8(q5_1_unsigned(&x[b]), load32(y[b].qs));
        __m256i p1 = dot_us8(q5_1_unsigned(&x[b + 1]), load32(y[b + 1].qs));
        __m256 d0 = _mm256_set1_ps(h2f(x[b].d) * h2f(y[b].d));
        __m256 d1 = _mm256_set1_ps(h2f(x[b + 1].d) * h2f(y[b + 1].d));
        acc0 = _mm256_fmadd_ps(d0, _mm256_cvtepi32_ps(p0), acc0);
        acc1 = _mm256_fmadd_ps(d1, _mm256_cvtepi32_ps(p1), acc1);
        summs += h2f(x[b].m) * h2f(y[b].s) + h2f(x[b + 1].m) * h2f(y[b + 1].s);
    }
    float tail;
    hearth_vec_dot_q5_1_q8_1_ref((nb - b) * HEARTH_QK5_1, &tail, x + b, y + b);
    *s = hsum_ps(_mm256_add_ps(acc0, acc1)) + summs + tail;
}

void hearth_vec_dot_q8_0_q8_0_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q8_0 *x = vx;
    const hearth_block_q8_0 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / HEARTH_QK8_0; b++) {
        /* weights may hold -128: |x| = 128 is fine as u8; activations are in [-127, 127] */
        __m256i p = dot_ss8(load32(x[b].qs), load32(y[b].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(x[b].d) * h2f(y[b].d)), _mm256_cvtepi32_ps(p), acc);
    }
    *s = hsum_ps(acc);
}

/* ---- q8 activation quantizers (bit-identical to llamacpp_order_ref.c) --------------------- */

static inline float hmax_ps(__m256 v) {
    __m128 r = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    r = _mm_max_ps(r, _mm_movehl_ps(r, r));
    r = _mm_max_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

/* 4 x 8 int32 (elements 0..31 in order, each in [-128, 127]) -> 32 int8. */
static inline __m256i pack_i32x32(__m256i i0, __m256i i1, __m256i i2, __m256i i3) {
    __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
    /* the packs interleave 128-bit lanes: dwords hold elements 0-3, 8-11, 16-19, 24-27,
     * 4-7, 12-15, 20-23, 28-31 */
    return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* One 32-element q8 block as llama.cpp's x86 build quantizes activations (multiplier
 * 127 / amax, half to even): writes qs, returns d (as float, before rounding to half) and the
 * sum of the qs. */
static inline float q8_block(const float *x, int8_t *qs, int *sum) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
    __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
    __m256 m01 = _mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1));
    __m256 m23 = _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3));
    __m256 m = _mm256_max_ps(m01, m23);
    float amax = hmax_ps(m);
    float d = amax / 127.0f, id = amax != 0.0f ? 127.0f / amax : 0.0f;
    __m256 vid = _mm256_set1_ps(id);
    /* cvtps rounds half to even (default MXCSR), as llama.cpp's x86 quantizer */
    __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(v0, vid)), i1 = _mm256_cvtps_epi32(_mm256_mul_ps(v1, vid));
    __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(v2, vid)), i3 = _mm256_cvtps_epi32(_mm256_mul_ps(v3, vid));
    _mm256_storeu_si256((__m256i *)qs, pack_i32x32(i0, i1, i2, i3));
    if (sum)
        *sum = hsum_epi32(_mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3)));
    return d;
}

void hearth_q8_0_from_float_avx2(const float *x, void *vy, int64_t n) {
    hearth_block_q8_0 *y = vy;
    for (int64_t i = 0; i < n / HEARTH_QK8_0; i++) {
        float d = q8_block(x + i * HEARTH_QK8_0, y[i].qs, NULL);
        y[i].d = hearth_fp32_to_fp16(d);
    }
}

void hearth_q8_1_from_float_avx2(const float *x, void *vy, int64_t n) {
    hearth_block_q8_1 *y = vy;
    for (int64_t i = 0; i < n / HEARTH_QK8_1; i++) {
        int sum;
        float d = q8_block(x + i * HEARTH_QK8_1, y[i].qs, &sum);
        y[i].d = hearth_fp32_to_fp16(d);
        y[i].s = hearth_fp32_to_fp16(d * (float)sum);
    }
}

void hearth_q8_K_from_float_avx2(const float *x, void *vy, int64_t n) {
    hearth_block_q8_K *y = vy;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t i = 0; i < n / HEARTH_QK_K; i++, x += HEARTH_QK_K) {
        __m256 m = _mm256_setzero_ps();
        for (int k = 0; k < 32; k++)
            m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k)));
        float amax = hmax_ps(m);
        if (amax == 0.0f) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        /* the first element of largest magnitude, with its sign (the reference's choice) */
        float max = 0.0f;
        __m256 vamax = _mm256_set1_ps(amax);
        for (int k = 0; k < 32; k++) {
            __m256 a = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k));
            int mask = _mm256_movemask_ps(_mm256_cmp_ps(a, vamax, _CMP_EQ_OQ));
            if (mask) {
                max = x[8 * k + __builtin_ctz((unsigned)mask)];
                break;
            }
        }
        float iscale = -127.0f / max;
        __m256 vs = _mm256_set1_ps(iscale);
        const __m256i lim = _mm256_set1_epi32(127);
        for (int k = 0; k < 8; k++) {
            const float *xk = x + 32 * k;
            __m256i q[4];
            for (int j = 0; j < 4; j++) {
                __m256i v = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xk + 8 * j), vs));
                q[j] = _mm256_min_epi32(v, lim);
            }
            _mm256_storeu_si256((__m256i *)(y[i].qs + 32 * k), pack_i32x32(q[0], q[1], q[2], q[3]));
            y[i].bsums[2 * k] = (int16_t)hsum_epi32(_mm256_add_epi32(q[0], q[1]));
            y[i].bsums[2 * k + 1] = (int16_t)hsum_epi32(_mm256_add_epi32(q[2], q[3]));
        }
        y[i].d = 1.0f / iscale;
    }
}
