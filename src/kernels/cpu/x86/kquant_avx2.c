/*
 * kquant_avx2.c - AVX2 dots of the K-quants (q4_K, q5_K, q6_K) against q8_K.
 *
 * Per 256-element super-block, the weights are expanded 32 at a time to unsigned bytes, and
 * vpmaddubsw with the activation bytes gives 16 s16 pair sums (|.| <= 63*127*2 < 2^15: no
 * saturation); vpmaddwd with the sub-block scale (broadcast per 128-bit lane when a vector
 * spans two sub-blocks) gives 8 s32 lanes that accumulate exactly over the block. The block's
 * int sum is scaled once in float, as the reference does. Offsets never enter the vector loop:
 *   q4_K/q5_K: - dmin * sum_i mn_i * (bsums_2i + bsums_2i+1)   (Q8_K's per-16 sums)
 *   q6_K:      - 32 * (sc_2l bsums_2l + sc_2l+1 bsums_2l+1) from int lane l, as llama.cpp does
 * Every block is one iteration, so these loops have no tail. q4_K and q6_K end in llama.cpp's
 * x86 float order (llamacpp_order_ref.h) and equal llamacpp_order_ref.c bit for bit; q4_K's block sums
 * are exact integers (hsum of the lanes), scaled into two FMA chains.
 */
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>

#include "kernels/cpu/x86/quant_x86.h"
#include "tensor/quant.h"

static inline float hsum_ps(__m256 v) {
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

static inline __m256i load32(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* sum_i mn_i * (bsums_2i + bsums_2i+1), and the 8 scales, of a Q4_K/Q5_K block. */
static inline int k_scales(const uint8_t *scales, const int16_t *bsums, uint8_t sc[8]) {
    uint8_t mn[8];
    hearth_k_scales_unpack(scales, sc, mn);
    /* pair sums of bsums (|.| <= 2 * 16 * 127, fits s16) times the 8 minimums */
    __m128i b = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)bsums),
                               _mm_loadu_si128((const __m128i *)(bsums + 8)));
    __m128i p = _mm_madd_epi16(b, _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)mn)));
    p = _mm_add_epi32(p, _mm_shuffle_epi32(p, _MM_SHUFFLE(1, 0, 3, 2)));
    p = _mm_add_epi32(p, _mm_shuffle_epi32(p, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(p);
}

static inline int hsum_epi32(__m256i v) {
    __m128i r = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    r = _mm_add_epi32(r, _mm_shuffle_epi32(r, _MM_SHUFFLE(1, 0, 3, 2)));
    r = _mm_add_epi32(r, _mm_shuffle_epi32(r, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(r);
}

/* q4_K in llama.cpp's repacked order (llamacpp_order_ref.h): exact integer sums, scaled into two
 * FMA chains once per super-block (gemv) or once per pair of sub-blocks (gemm rows). */
static inline float q4_K_dot(int64_t n, const hearth_block_q4_K *x, const hearth_block_q8_K *y, bool per_pair) {
    const __m256i m4 = _mm256_set1_epi8(15);
    float a = 0.0f, m = 0.0f;
    for (int64_t b = 0; b < n / HEARTH_QK_K; b++) {
        uint8_t sc[8], mn[8];
        hearth_k_scales_unpack(x[b].scales, sc, mn);
        float da = _cvtsh_ss(x[b].d) * y[b].d, dm = _cvtsh_ss(x[b].dmin) * y[b].d;
        int sumq = 0, summ = 0;
        for (int g = 0; g < 4; g++) {
            /* 32 bytes: low nibbles = sub-block 2g, high nibbles = sub-block 2g+1 */
            __m256i q4 = load32(x[b].qs + 32 * g);
            __m256i lo = _mm256_and_si256(q4, m4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q4, 4), m4);
            __m256i p0 = _mm256_maddubs_epi16(lo, load32(y[b].qs + 64 * g));
            __m256i p1 = _mm256_maddubs_epi16(hi, load32(y[b].qs + 64 * g + 32));
            p0 = _mm256_madd_epi16(p0, _mm256_set1_epi16(sc[2 * g]));
            p1 = _mm256_madd_epi16(p1, _mm256_set1_epi16(sc[2 * g + 1]));
            int pq = hsum_epi32(_mm256_add_epi32(p0, p1));
            int pm = mn[2 * g] * (y[b].bsums[4 * g] + y[b].bsums[4 * g + 1]) +
                     mn[2 * g + 1] * (y[b].bsums[4 * g + 2] + y[b].bsums[4 * g + 3]);
            if (per_pair) {
                a = fmaf((float)pq, da, a);
                m = fmaf((float)pm, dm, m);
            } else {
                sumq += pq;
                summ += pm;
            }
        }
        if (!per_pair) {
            a = fmaf((float)sumq, da, a);
            m = fmaf((float)summ, dm, m);
        }
    }
    return a - m;
}

void hearth_vec_dot_q4_K_q8_K_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    *s = q4_K_dot(n, vx, vy, false);
}

void hearth_vec_dot_q4_K_q8_K_gemm_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    *s = q4_K_dot(n, vx, vy, true);
}

void hearth_vec_dot_q5_K_q8_K_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q5_K *x = vx;
    const hearth_block_q8_K *y = vy;
    const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    float summf = 0.0f;
    for (int64_t b = 0; b < n / HEARTH_QK_K; b++) {
        uint8_t sc[8];
        int summ = k_scales(x[b].scales, y[b].bsums, sc);
        __m256i qh = load32(x[b].qh);
        __m256i sumi = _mm256_setzero_si256();
        for (int g = 0; g < 4; g++) {
            __m256i q4 = load32(x[b].qs + 32 * g);
            /* fifth bits: bit 2g (low half) and 2g+1 (high half) of qh[l], moved to bit 4; the
             * 16-bit shifts pull neighbour bits only into positions the mask drops */
            __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), one), 4);
            __m256i h1 =
                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g + 1), one), 4);
            __m256i lo = _mm256_or_si256(_mm256_and_si256(q4, m4), h0);
            __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q4, 4), m4), h1);
            __m256i p0 = _mm256_maddubs_epi16(lo, load32(y[b].qs + 64 * g));
            __m256i p1 = _mm256_maddubs_epi16(hi, load32(y[b].qs + 64 * g + 32));
            p0 = _mm256_madd_epi16(p0, _mm256_set1_epi16(sc[2 * g]));
            p1 = _mm256_madd_epi16(p1, _mm256_set1_epi16(sc[2 * g + 1]));
            sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p0, p1));
        }
        float d = y[b].d * _cvtsh_ss(x[b].d);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
        summf += y[b].d * _cvtsh_ss(x[b].dmin) * (float)summ;
    }
    *s = hsum_ps(acc) - summf;
}

void hearth_vec_dot_q6_K_q8_K_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q6_K *x = vx;
    const hearth_block_q8_K *y = vy;
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(0x30);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / HEARTH_QK_K; b++) {
        /* the -32 offset per int lane l: 32 * (sc_2l * bsums_2l + sc_2l+1 * bsums_2l+1) */
        __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[b].scales));
        __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(load32(y[b].bsums), sc16), 5);
        __m256i sumi = _mm256_setzero_si256();
        for (int half = 0; half < 2; half++) {
            const uint8_t *ql = x[b].ql + 64 * half, *qhp = x[b].qh + 32 * half;
            const int8_t *q8 = y[b].qs + 128 * half, *sc = x[b].scales + 8 * half;
            __m256i l0 = load32(ql), l1 = load32(ql + 32), h = load32(qhp);
            /* the four 32-element quarters (quant.h): low 4 bits | high 2 bits moved to 4..5 */
            __m256i q[4];
            __m256i l0h = _mm256_srli_epi16(l0, 4), l1h = _mm256_srli_epi16(l1, 4);
            __m256i h0 = _mm256_slli_epi16(h, 4), h1 = _mm256_slli_epi16(h, 2);
            __m256i h3 = _mm256_srli_epi16(h, 2);
            q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(h0, m2));
            q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(h1, m2));
            q[2] = _mm256_or_si256(_mm256_and_si256(l0h, m4), _mm256_and_si256(h, m2));
            q[3] = _mm256_or_si256(_mm256_and_si256(l1h, m4), _mm256_and_si256(h3, m2));
            for (int k = 0; k < 4; k++) {
                /* q * y per s16 pair, q unsigned */
                __m256i yk = load32(q8 + 32 * k);
                __m256i p = _mm256_maddubs_epi16(q[k], yk);
                /* elements 0..15 of the quarter use sc[2k], 16..31 use sc[2k+1] */
                __m256i scv =
                    _mm256_set_m128i(_mm_set1_epi16(sc[2 * k + 1]), _mm_set1_epi16(sc[2 * k]));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, scv));
            }
        }
        sumi = _mm256_sub_epi32(sumi, off);
        float d = y[b].d * _cvtsh_ss(x[b].d);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    *s = hsum_ps(acc);
}
