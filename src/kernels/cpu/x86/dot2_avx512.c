/*
 * dot2_avx512.c - the 32-element block dots of quant_avx512.c (q4_1, q5_0, q8_0 against their
 * q8 activations) with two blocks per 512-bit vector, and their 4-token forms for prefill.
 *
 * quant_avx512.c keeps two 8-lane accumulators, acc0 for even blocks and acc1 for odd ones.
 * Here one 16-lane accumulator holds both: lanes 0-7 are acc0 (block b), lanes 8-15 acc1 (block
 * b+1), every lane gets the same fused multiply-add with the same scale, and the end is the same
 * hsum of acc0 + acc1. So the results are bit-identical to quant_avx512.c's (tests/kernels/
 * test_dot2.c checks it), which is tested against the reference (test_quant.c); the difference is
 * half the vector instructions per block, which decides decode speed once the dot is what limits
 * it rather than memory. The integer part differs in form only: AVX-512 has no vpsignb, so q8_0
 * moves x's sign onto y with a masked subtract (the 4-byte sums are the same integers).
 *
 *   vec_dot     one weight row with one activation row (decode);
 *   vec_dot_4   one weight row with 4 activation rows y, y + by, ... (prefill): the weight
 *               blocks are unpacked once for 4 tokens; s[i * bs] gets token i's dot.
 */
#include <immintrin.h>
#include <string.h>

#include "kernels/cpu/x86/quant_x86.h"
#include "kernels/ref/dot_ref.h"
#include "tensor/quant.h"

static inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

/* quant_avx512.c's hsum_ps of acc0 + acc1, the two halves of acc */
static inline float hsum_pair(__m512 acc) {
    __m256 v = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

/* s0 in lanes 0-7, s1 in lanes 8-15 */
static inline __m512 scale16(float s0, float s1) {
    return _mm512_insertf32x8(_mm512_set1_ps(s0), _mm256_set1_ps(s1), 1);
}

/* two 32-byte blocks' quants side by side */
static inline __m512i load_pair(const int8_t *a, const int8_t *b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a)),
                              _mm256_loadu_si256((const __m256i *)b), 1);
}

/* 2 x 16 bytes of nibbles -> per block: low nibbles, then high nibbles (quant_avx512.c's order) */
static inline __m512i unpack_pair(const uint8_t *qa, const uint8_t *qb) {
    __m256i t = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)qb), _mm_loadu_si128((const __m128i *)qa));
    __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(t), _mm256_srli_epi16(t, 4), 1); /* a, b, a>>4, b>>4 */
    z = _mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(3, 1, 2, 0));                               /* a, a>>4, b, b>>4 */
    return _mm512_and_si512(z, _mm512_set1_epi8(15));
}

/* fifth bits of two q5 blocks (element e -> bit e of qh) as 0x10 bytes */
static inline __m512i fifth_pair(const uint8_t *qha, const uint8_t *qhb) {
    uint32_t a, b;
    memcpy(&a, qha, 4);
    memcpy(&b, qhb, 4);
    return _mm512_maskz_mov_epi8((__mmask64)a | (__mmask64)b << 32, _mm512_set1_epi8(0x10));
}

static inline __m512i dot_us8(__m512i u, __m512i y) { return _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, y); }

/* The leading f16 pair (d, and m or s) of up to 16 blocks of `stride` bytes, with one gather:
 * *lo gets the first f16 of each block as f32, *hi the second. Lanes past m are zero. */
static inline void gather_scales(const void *blocks, int stride, int m, __m512 *lo, __m512 *hi) {
    const __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                           _mm512_set1_epi32(stride));
    const __mmask16 k = (__mmask16)(m >= 16 ? 0xffff : (1u << m) - 1);
    __m512i w = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), k, idx, blocks, 1);
    *lo = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(w));
    if (hi) *hi = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(w, 16)));
}

/* lanes 0-7: sc[2k], lanes 8-15: sc[2k+1] (scale16 of a block pair, from 16 scales at once) */
static inline __m512 pair_scale(__m512 sc, int k) {
    const __m512i base = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    return _mm512_permutexvar_ps(_mm512_add_epi32(base, _mm512_set1_epi32(2 * k)), sc);
}

/* ---- q4_1 x q8_1 ------------------------------------------------------------------------- */

void hearth_vec_dot_q4_1_q8_1_dot2_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q4_1 *x = vx;
    const hearth_block_q8_1 *y = vy;
    const int64_t nb = n / HEARTH_QK4_1, npb = nb & ~(int64_t)1;
    __m512 acc = _mm512_setzero_ps();
    float summs = 0.0f, tail = 0.0f, ms[16];
    for (int64_t g = 0; g < npb; g += 16) {
        /* the scales of 16 blocks at once: products d_x d_y (exact: f16 x f16), and the pair
         * sums m_x s_y + m_x' s_y' the one-block form adds to summs, in the same order */
        const int m = npb - g < 16 ? (int)(npb - g) : 16;
        __m512 xd, xm, yd, ys;
        gather_scales(x + g, (int)sizeof *x, m, &xd, &xm);
        gather_scales(y + g, (int)sizeof *y, m, &yd, &ys);
        const __m512 sc = _mm512_mul_ps(xd, yd), mp = _mm512_mul_ps(xm, ys);
        _mm512_storeu_ps(ms, _mm512_add_ps(mp, _mm512_permute_ps(mp, 0xb1))); /* lane 2k: pair k's sum */
        for (int b = 0; b < m; b += 2) {
            const hearth_block_q4_1 *xb = x + g + b;
            const hearth_block_q8_1 *yb = y + g + b;
            __m512i p = dot_us8(unpack_pair(xb[0].qs, xb[1].qs), load_pair(yb[0].qs, yb[1].qs));
            acc = _mm512_fmadd_ps(pair_scale(sc, b / 2), _mm512_cvtepi32_ps(p), acc);
            summs += ms[b];
        }
    }
    if (npb < nb) hearth_vec_dot_q4_1_q8_1_ref((nb - npb) * HEARTH_QK4_1, &tail, x + npb, y + npb);
    *s = hsum_pair(acc) + summs + tail;
}

void hearth_vec_dot_4_q4_1_q8_1_avx512(int64_t n, float *s, int64_t bs, const void *vx, const void *vy, size_t by) {
    const hearth_block_q4_1 *x = vx;
    const hearth_block_q8_1 *y[4];
    for (int i = 0; i < 4; i++) y[i] = (const hearth_block_q8_1 *)((const char *)vy + (size_t)i * by);
    const int64_t nb = n / HEARTH_QK4_1;
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    float summs[4] = {0}, tail[4] = {0};
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const __m512i q = unpack_pair(x[b].qs, x[b + 1].qs);
        const float d0 = h2f(x[b].d), d1 = h2f(x[b + 1].d), m0 = h2f(x[b].m), m1 = h2f(x[b + 1].m);
        for (int i = 0; i < 4; i++) {
            const hearth_block_q8_1 *yb = y[i] + b;
            __m512i p = dot_us8(q, load_pair(yb[0].qs, yb[1].qs));
            acc[i] = _mm512_fmadd_ps(scale16(d0 * h2f(yb[0].d), d1 * h2f(yb[1].d)), _mm512_cvtepi32_ps(p), acc[i]);
            summs[i] += m0 * h2f(yb[0].s) + m1 * h2f(yb[1].s);
        }
    }
    for (int i = 0; i < 4; i++) {
        if (b < nb) hearth_vec_dot_q4_1_q8_1_ref((nb - b) * HEARTH_QK4_1, &tail[i], x + b, y[i] + b);
        s[i * bs] = hsum_pair(acc[i]) + summs[i] + tail[i];
    }
}

/* ---- q5_0 x q8_0 ------------------------------------------------------------------------- */

void hearth_vec_dot_q5_0_q8_0_dot2_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q5_0 *x = vx;
    const hearth_block_q8_0 *y = vy;
    const int64_t nb = n / HEARTH_QK5_0, npb = nb & ~(int64_t)1;
    const __m512i c16 = _mm512_set1_epi8(16);
    __m512 acc = _mm512_setzero_ps();
    float tail = 0.0f;
    for (int64_t g = 0; g < npb; g += 16) {
        const int m = npb - g < 16 ? (int)(npb - g) : 16;
        __m512 xd, yd;
        gather_scales(x + g, (int)sizeof *x, m, &xd, NULL);
        gather_scales(y + g, (int)sizeof *y, m, &yd, NULL);
        const __m512 sc = _mm512_mul_ps(xd, yd);
        for (int b = 0; b < m; b += 2) {
            const hearth_block_q5_0 *xb = x + g + b;
            const hearth_block_q8_0 *yb = y + g + b;
            /* q = nibble | fifth bit << 4 in 0..31; sum (q - 16) y = sum q y - sum 16 y */
            __m512i q = _mm512_or_si512(unpack_pair(xb[0].qs, xb[1].qs), fifth_pair(xb[0].qh, xb[1].qh));
            __m512i yy = load_pair(yb[0].qs, yb[1].qs);
            __m512i p = _mm512_sub_epi32(dot_us8(q, yy), dot_us8(c16, yy));
            acc = _mm512_fmadd_ps(pair_scale(sc, b / 2), _mm512_cvtepi32_ps(p), acc);
        }
    }
    if (npb < nb) hearth_vec_dot_q5_0_q8_0_ref((nb - npb) * HEARTH_QK5_0, &tail, x + npb, y + npb);
    *s = hsum_pair(acc) + tail;
}

void hearth_vec_dot_4_q5_0_q8_0_avx512(int64_t n, float *s, int64_t bs, const void *vx, const void *vy, size_t by) {
    const hearth_block_q5_0 *x = vx;
    const hearth_block_q8_0 *y[4];
    for (int i = 0; i < 4; i++) y[i] = (const hearth_block_q8_0 *)((const char *)vy + (size_t)i * by);
    const int64_t nb = n / HEARTH_QK5_0;
    const __m512i c16 = _mm512_set1_epi8(16);
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    float tail[4] = {0};
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const __m512i q = _mm512_or_si512(unpack_pair(x[b].qs, x[b + 1].qs), fifth_pair(x[b].qh, x[b + 1].qh));
        const float d0 = h2f(x[b].d), d1 = h2f(x[b + 1].d);
        for (int i = 0; i < 4; i++) {
            const hearth_block_q8_0 *yb = y[i] + b;
            __m512i yy = load_pair(yb[0].qs, yb[1].qs);
            __m512i p = _mm512_sub_epi32(dot_us8(q, yy), dot_us8(c16, yy));
            acc[i] = _mm512_fmadd_ps(scale16(d0 * h2f(yb[0].d), d1 * h2f(yb[1].d)), _mm512_cvtepi32_ps(p), acc[i]);
        }
    }
    for (int i = 0; i < 4; i++) {
        if (b < nb) hearth_vec_dot_q5_0_q8_0_ref((nb - b) * HEARTH_QK5_0, &tail[i], x + b, y[i] + b);
        s[i * bs] = hsum_pair(acc[i]) + tail[i];
    }
}

/* ---- q8_0 x q8_0 ------------------------------------------------------------------------- */

/* |x| as u8 (-128 gives 128) and y with x's sign (zero where x is zero, as vpsignb gives) */
static inline __m512i dot_q8_pair(__m512i xx, __m512i yy) {
    __mmask64 neg = _mm512_movepi8_mask(xx), zero = _mm512_testn_epi8_mask(xx, xx);
    __m512i ys = _mm512_mask_sub_epi8(yy, neg, _mm512_setzero_si512(), yy);
    ys = _mm512_mask_mov_epi8(ys, zero, _mm512_setzero_si512());
    return dot_us8(_mm512_abs_epi8(xx), ys);
}

void hearth_vec_dot_q8_0_q8_0_dot2_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q8_0 *x = vx;
    const hearth_block_q8_0 *y = vy;
    const int64_t nb = n / HEARTH_QK8_0, npb = nb & ~(int64_t)1;
    __m512 acc = _mm512_setzero_ps();
    float tail = 0.0f;
    for (int64_t g = 0; g < npb; g += 16) {
        const int m = npb - g < 16 ? (int)(npb - g) : 16;
        __m512 xd, yd;
        gather_scales(x + g, (int)sizeof *x, m, &xd, NULL);
        gather_scales(y + g, (int)sizeof *y, m, &yd, NULL);
        const __m512 sc = _mm512_mul_ps(xd, yd);
        for (int b = 0; b < m; b += 2) {
            __m512i p = dot_q8_pair(load_pair(x[g + b].qs, x[g + b + 1].qs), load_pair(y[g + b].qs, y[g + b + 1].qs));
            acc = _mm512_fmadd_ps(pair_scale(sc, b / 2), _mm512_cvtepi32_ps(p), acc);
        }
    }
    if (npb < nb) hearth_vec_dot_q8_0_q8_0_ref((nb - npb) * HEARTH_QK8_0, &tail, x + npb, y + npb);
    *s = hsum_pair(acc) + tail;
}

void hearth_vec_dot_4_q8_0_q8_0_avx512(int64_t n, float *s, int64_t bs, const void *vx, const void *vy, size_t by) {
    const hearth_block_q8_0 *x = vx;
    const hearth_block_q8_0 *y[4];
    for (int i = 0; i < 4; i++) y[i] = (const hearth_block_q8_0 *)((const char *)vy + (size_t)i * by);
    const int64_t nb = n / HEARTH_QK8_0;
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    float tail[4] = {0};
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const __m512i xx = load_pair(x[b].qs, x[b + 1].qs);
        const __mmask64 neg = _mm512_movepi8_mask(xx), zero = _mm512_testn_epi8_mask(xx, xx);
        const __m512i ax = _mm512_abs_epi8(xx);
        const float d0 = h2f(x[b].d), d1 = h2f(x[b + 1].d);
        for (int i = 0; i < 4; i++) {
            const hearth_block_q8_0 *yb = y[i] + b;
            __m512i yy = load_pair(yb[0].qs, yb[1].qs);
            __m512i ys = _mm512_mask_sub_epi8(yy, neg, _mm512_setzero_si512(), yy);
            ys = _mm512_mask_mov_epi8(ys, zero, _mm512_setzero_si512());
            __m512i p = dot_us8(ax, ys);
            acc[i] = _mm512_fmadd_ps(scale16(d0 * h2f(yb[0].d), d1 * h2f(yb[1].d)), _mm512_cvtepi32_ps(p), acc[i]);
        }
    }
    for (int i = 0; i < 4; i++) {
        if (b < nb) hearth_vec_dot_q8_0_q8_0_ref((nb - b) * HEARTH_QK8_0, &tail[i], x + b, y[i] + b);
        s[i * bs] = hsum_pair(acc[i]) + tail[i];
    }
}
