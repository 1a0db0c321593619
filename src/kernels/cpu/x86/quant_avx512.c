/*
 * quant_avx512.c - AVX-512 (F/BW/VL/DQ + VNNI) kernels: f32/f16/bf16 dots over 512-bit
 * vectors, the 32-element block dots (q4_0, q4_1, q5_0, q5_1, q8_0) and the q8 activation
 * quantizers. kquant_avx512.c holds the K-quants.
 *
 * Block dots keep one block per 256-bit vector (AVX512-VL encodings) and use VNNI's vpdpbusd
 * (u8 x s8, four products summed into s32, no saturation) where AVX2 needs vpmaddubsw +
 * vpmaddwd. Unsigned-offset weights (q4_0, q5_0) are dotted as stored and the offset is taken
 * out exactly with a second vpdpbusd against the activation bytes:
 *   sum (q - c) y = sum q y - c * sum y     (c = 8 for q4_0, 16 for q5_0)
 * q8_0 uses the sign trick (|x| times y with x's sign). q4_0, q4_1, q5_0 and q8_0 keep one
 * accumulator, block after block, in llama.cpp's x86 order (llamacpp_order_ref.h), and equal
 * llamacpp_order_ref.c bit for bit; q5_1 takes two blocks per iteration into two accumulators.
 * NOTE: packing two blocks per 512-bit vector was measured too: ~8% faster on the AMD EPYC dev
 * box, slower or equal on a Sapphire-Rapids-class Xeon VM (lane inserts + shuffles per pair);
 * the simpler form stays until a later tuning pass.
 *
 * The avx512 set requires VNNI (dispatch.c): AVX-512 CPUs without it (Skylake-SP/X) run avx2.
 * No AVX512-BF16 instruction is used (bf16 is widened by a shift), so BF16 is not required.
 * The q8_0/q8_1 activation quantizers are bit-identical to llamacpp_order_ref.c, q8_K to
 * quant_ref.c (see quant_avx2.c).
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/cpu/x86/quant_x86.h"
#include "kernels/ref/dot_ref.h"
#include "kernels/ref/quant_ref.h"
#include "tensor/dtype.h"
#include "tensor/quant.h"

static inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

/* ---- plain dots: 4 x 16 lanes of FMA, then 16 at a time, then the reference -------------- */

static inline __m512 load_f16(const uint16_t *p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}

static inline __m512 load_bf16(const uint16_t *p) {
    __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

void hearth_vec_dot_f32_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const float *x = vx, *y = vy;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), a0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(y + i + 16), a1);
        a2 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 32), _mm512_loadu_ps(y + i + 32), a2);
        a3 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 48), _mm512_loadu_ps(y + i + 48), a3);
    }
    for (; i + 16 <= n; i += 16)
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), a0);
    float sum = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
    float tail;
    hearth_vec_dot_f32_ref(n - i, &tail, x + i, y + i);
    *s = sum + tail;
}

void hearth_vec_dot_f16_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        a0 = _mm512_fmadd_ps(load_f16(x + i), load_f16(y + i), a0);
        a1 = _mm512_fmadd_ps(load_f16(x + i + 16), load_f16(y + i + 16), a1);
        a2 = _mm512_fmadd_ps(load_f16(x + i + 32), load_f16(y + i + 32), a2);
        a3 = _mm512_fmadd_ps(load_f16(x + i + 48), load_f16(y + i + 48), a3);
    }
    for (; i + 16 <= n; i += 16) a0 = _mm512_fmadd_ps(load_f16(x + i), load_f16(y + i), a0);
    float sum = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
    float tail;
    hearth_vec_dot_f16_ref(n - i, &tail, x + i, y + i);
    *s = sum + tail;
}

void hearth_vec_dot_bf16_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        a0 = _mm512_fmadd_ps(load_bf16(x + i), load_bf16(y + i), a0);
        a1 = _mm512_fmadd_ps(load_bf16(x + i + 16), load_bf16(y + i + 16), a1);
        a2 = _mm512_fmadd_ps(load_bf16(x + i + 32), load_bf16(y + i + 32), a2);
        a3 = _mm512_fmadd_ps(load_bf16(x + i + 48), load_bf16(y + i + 48), a3);
    }
    for (; i + 16 <= n; i += 16) a0 = _mm512_fmadd_ps(load_bf16(x + i), load_bf16(y + i), a0);
    float sum = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
    float tail;
    hearth_vec_dot_bf16_ref(n - i, &tail, x + i, y + i);
    *s = sum + tail;
}

/* ---- block helpers: one 32-element block per 256-bit vector (AVX512-VL VNNI) ------------- */

/* 16 bytes of nibbles -> 32 bytes: byte j = low nibble of q[j], byte 16+j = high nibble. */
static inline __m256i unpack_nibbles(const uint8_t *q) {
    __m128i t = _mm_loadu_si128((const __m128i *)q);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), _mm256_set1_epi8(15));
}

static inline __m256i load32(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* The fifth bits of a Q5 block (element e -> bit e) as 0x10 bytes. */
static inline __m256i fifth_bits(const uint8_t *qh4) {
    uint32_t qh;
    memcpy(&qh, qh4, 4);
    return _mm256_maskz_mov_epi8((__mmask32)qh, _mm256_set1_epi8(0x10));
}

/* sum over each 4 bytes of u * y (u8 x s8), exact */
static inline __m256i dot_us8(__m256i u, __m256i y) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, y);
}

/* sum over each 4 bytes of (u - c) * y = dpbusd(u, y) - dpbusd(c, y), c a byte constant */
static inline __m256i dot_offset(__m256i u, __m256i y, __m256i c) {
    return _mm256_sub_epi32(dot_us8(u, y), dot_us8(c, y));
}

/* dx * dy broadcast: a block pair's scale product, as the reference computes it */
static inline __m256 scale8(uint16_t dx, uint16_t dy) { return _mm256_set1_ps(h2f(dx) * h2f(dy)); }

static inline float hsum_ps(__m256 v) {
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

/* ---- block dots ------------------------------------------------------------------------- */

void hearth_vec_dot_q4_0_q8_0_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q4_0 *x = vx;
    const hearth_block_q8_0 *y = vy;
    const __m256i c8 = _mm256_set1_epi8(8);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / HEARTH_QK4_0; b++) {
        __m256i p = dot_offset(unpack_nibbles(x[b].qs), load32(y[b].qs), c8);
        acc = _mm256_fmadd_ps(scale8(x[b].d, y[b].d), _mm256_cvtepi32_ps(p), acc);
    }
    *s = hsum_ps(acc);
}

void hearth_vec_dot_q4_1_q8_1_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q4_1 *x = vx;
    const hearth_block_q8_1 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    float summs = 0.0f; /* sum of m * s: the minimum times the activation block sum */
    for (int64_t b = 0; b < n / HEARTH_QK4_1; b++) {
        summs = fmaf(h2f(x[b].m), h2f(y[b].s), summs);
        __m256i p = dot_us8(unpack_nibbles(x[b].qs), load32(y[b].qs));
        acc = _mm256_fmadd_ps(scale8(x[b].d, y[b].d), _mm256_cvtepi32_ps(p), acc);
    }
    *s = hsum_ps(acc) + summs;
}

void hearth_vec_dot_q5_0_q8_0_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q5_0 *x = vx;
    const hearth_block_q8_0 *y = vy;
    const __m256i c16 = _mm256_set1_epi8(16);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / HEARTH_QK5_0; b++) {
        /* q = nibble | fifth bit << 4, in 0..31; the -16 is the offset */
        __m256i q = _mm256_or_si256(unpack_nibbles(x[b].qs), fifth_bits(x[b].qh));
        __m256i p = dot_offset(q, load32(y[b].qs), c16);
        acc = _mm256_fmadd_ps(scale8(x[b].d, y[b].d), _mm256_cvtepi32_ps(p), acc);
    }
    *s = hsum_ps(acc);
}

void hearth_vec_dot_q5_1_q8_1_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q5_1 *x = vx;
    const hearth_block_q8_1 *y = vy;
    const int64_t nb = n / HEARTH_QK5_1;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;
    float summs = 0.0f;
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        __m256i q0 = _mm256_or_si256(unpack_nibbles(x[b].qs), fifth_bits(x[b].qh));
        __m256i q1 = _mm256_or_si256(unpack_nibbles(x[b + 1].qs), fifth_bits(x[b + 1].qh));
        __m256i p0 = dot_us8(q0, load32(y[b].qs)), p1 = dot_us8(q1, load32(y[b + 1].qs));
        acc0 = _mm256_fmadd_ps(scale8(x[b].d, y[b].d), _mm256_cvtepi32_ps(p0), acc0);
        acc1 = _mm256_fmadd_ps(scale8(x[b + 1].d, y[b + 1].d), _mm256_cvtepi32_ps(p1), acc1);
        summs += h2f(x[b].m) * h2f(y[b].s) + h2f(x[b + 1].m) * h2f(y[b + 1].s);
    }
    float tail;
    hearth_vec_dot_q5_1_q8_1_ref((nb - b) * HEARTH_QK5_1, &tail, x + b, y + b);
    *s = hsum_ps(_mm256_add_ps(acc0, acc1)) + summs + tail;
}

void hearth_vec_dot_q8_0_q8_0_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q8_0 *x = vx;
    const hearth_block_q8_0 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / HEARTH_QK8_0; b++) {
        /* sign trick: |x| (u8; -128 gives 128) times y with x's sign (y is never -128) */
        __m256i xb = load32(x[b].qs);
        __m256i p = dot_us8(_mm256_abs_epi8(xb), _mm256_sign_epi8(load32(y[b].qs), xb));
        acc = _mm256_fmadd_ps(scale8(x[b].d, y[b].d), _mm256_cvtepi32_ps(p), acc);
    }
    *s = hsum_ps(acc);
}

/* ---- q8 activation quantizers (bit-identical to llamacpp_order_ref.c) ------------------------ */

/* One 32-element q8 block as llama.cpp's x86 build quantizes activations: multiplier
 * 127 / amax, round half to even. Writes qs, returns d = amax / 127 and the sum of the qs. */
static inline float q8_block(const float *x, int8_t *qs, int *sum) {
    __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
    float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    float d = amax / 127.0f, id = amax != 0.0f ? 127.0f / amax : 0.0f;
    __m512 vid = _mm512_set1_ps(id);
    __m512i i0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, vid)); /* MXCSR default: half to even */
    __m512i i1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, vid));
    _mm_storeu_si128((__m128i *)qs, _mm512_cvtepi32_epi8(i0));
    _mm_storeu_si128((__m128i *)(qs + 16), _mm512_cvtepi32_epi8(i1));
    if (sum) *sum = _mm512_reduce_add_epi32(_mm512_add_epi32(i0, i1));
    return d;
}

void hearth_q8_0_from_float_avx512(const float *x, void *vy, int64_t n) {
    hearth_block_q8_0 *y = vy;
    for (int64_t i = 0; i < n / HEARTH_QK8_0; i++)
        y[i].d = hearth_fp32_to_fp16(q8_block(x + i * HEARTH_QK8_0, y[i].qs, NULL));
}

void hearth_q8_1_from_float_avx512(const float *x, void *vy, int64_t n) {
    hearth_block_q8_1 *y = vy;
    for (int64_t i = 0; i < n / HEARTH_QK8_1; i++) {
        int sum;
        float d = q8_block(x + i * HEARTH_QK8_1, y[i].qs, &sum);
        y[i].d = hearth_fp32_to_fp16(d);
        y[i].s = hearth_fp32_to_fp16(d * (float)sum);
    }
}

void hearth_q8_K_from_float_avx512(const float *x, void *vy, int64_t n) {
    hearth_block_q8_K *y = vy;
    for (int64_t i = 0; i < n / HEARTH_QK_K; i++, x += HEARTH_QK_K) {
        __m512 m = _mm512_setzero_ps();
        for (int k = 0; k < 16; k++)
            m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_loadu_ps(x + 16 * k)));
        float amax = _mm512_reduce_max_ps(m);
        if (amax == 0.0f) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        /* the first element of largest magnitude, with its sign (the reference's choice) */
        float max = 0.0f;
        for (int k = 0; k < 16; k++) {
            __mmask16 eq = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(x + 16 * k)),
                                              _mm512_set1_ps(amax), _CMP_EQ_OQ);
            if (eq) {
                max = x[16 * k + __builtin_ctz((unsigned)eq)];
                break;
            }
        }
        float iscale = -127.0f / max;
        __m512 vs = _mm512_set1_ps(iscale);
        for (int k = 0; k < 16; k++) {
            /* cvtps rounds to nearest even (default MXCSR), as nearest_int; 16 lanes = bsums[k] */
            __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + 16 * k), vs));
            q = _mm512_min_epi32(q, _mm512_set1_epi32(127));
            _mm_storeu_si128((__m128i *)(y[i].qs + 16 * k), _mm512_cvtepi32_epi8(q));
            y[i].bsums[k] = (int16_t)_mm512_reduce_add_epi32(q);
        }
        y[i].d = 1.0f / iscale;
    }
}
