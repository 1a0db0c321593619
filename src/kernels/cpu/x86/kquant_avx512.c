/*
 * kquant_avx512.c - AVX-512 (BW + VNNI) dots of the K-quants (q4_K, q5_K, q6_K) against q8_K.
 *
 * A 256-element super-block is four 64-byte vectors of unsigned weights. vpmaddubsw with the
 * activation bytes gives 32 s16 pair sums (|.| <= 63*127*2 < 2^15: no saturation), and VNNI's
 * vpdpwssd multiplies them by the per-sub-block scales (one s16 per lane) and accumulates
 * pairs into 16 s32 lanes, exactly. The block's int sum is scaled once in float. Offsets stay
 * out of the vector loop, as in kquant_avx2.c:
 *   q4_K/q5_K: - dmin * sum_i mn_i * (bsums_2i + bsums_2i+1)
 *   q6_K:      - 32 * (sc_2l bsums_2l + sc_2l+1 bsums_2l+1) from int lane l, as llama.cpp does
 * Every block is one iteration, so these loops have no tail.
 * q4_K and q6_K end in llama.cpp's x86 float order (llamacpp_order_ref.h: repacked q4_K's two FMA
 * chains; q6_K's 8 lanes with the offset taken by sub-block sums) and equal llamacpp_order_ref.c bit
 * for bit.
 */
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>

#include "kernels/cpu/x86/quant_x86.h"
#include "tensor/quant.h"

static inline __m512i load64(const void *p) { return _mm512_loadu_si512(p); }
static inline __m256i load32(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* Two 256-bit halves of s16 lanes: a in lanes 0..15, b in 16..31. */
static inline __m512i halves_epi16(int a, int b) {
    return _mm512_inserti64x4(_mm512_set1_epi16((short)a), _mm256_set1_epi16((short)b), 1);
}

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

/* 32 bytes of nibbles -> 64 bytes: low nibbles then high nibbles (sub-blocks 2g, 2g+1). */
static inline __m512i unpack_nibbles64(const uint8_t *q) {
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256i t = load32(q);
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(t, m4)),
                              _mm256_and_si256(_mm256_srli_epi16(t, 4), m4), 1);
}

/* q4_K in llama.cpp's repacked order (llamacpp_order_ref.h): exact integer sums, scaled into two
 * FMA chains once per super-block (gemv) or once per pair of sub-blocks (gemm rows). */
static inline float q4_K_dot(int64_t n, const hearth_block_q4_K *x, const hearth_block_q8_K *y, bool per_pair) {
    float a = 0.0f, m = 0.0f;
    for (int64_t b = 0; b < n / HEARTH_QK_K; b++) {
        uint8_t sc[8], mn[8];
        hearth_k_scales_unpack(x[b].scales, sc, mn);
        float da = _cvtsh_ss(x[b].d) * y[b].d, dm = _cvtsh_ss(x[b].dmin) * y[b].d;
        __m512i sumi = _mm512_setzero_si512();
        int summ = 0;
        for (int g = 0; g < 4; g++) {
            __m512i q = unpack_nibbles64(x[b].qs + 32 * g);
            __m512i p = _mm512_maddubs_epi16(q, load64(y[b].qs + 64 * g));
            int pm = mn[2 * g] * (y[b].bsums[4 * g] + y[b].bsums[4 * g + 1]) +
                     mn[2 * g + 1] * (y[b].bsums[4 * g + 2] + y[b].bsums[4 * g + 3]);
            if (per_pair) {
                __m512i pi = _mm512_dpwssd_epi32(_mm512_setzero_si512(), p, halves_epi16(sc[2 * g], sc[2 * g + 1]));
                a = fmaf((float)_mm512_reduce_add_epi32(pi), da, a);
                m = fmaf((float)pm, dm, m);
            } else {
                sumi = _mm512_dpwssd_epi32(sumi, p, halves_epi16(sc[2 * g], sc[2 * g + 1]));
                summ += pm;
            }
        }
        if (!per_pair) {
            a = fmaf((float)_mm512_reduce_add_epi32(sumi), da, a);
            m = fmaf((float)summ, dm, m);
        }
    }
    return a - m;
}

void hearth_vec_dot_q4_K_q8_K_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    *s = q4_K_dot(n, vx, vy, false);
}

void hearth_vec_dot_q4_K_q8_K_gemm_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    *s = q4_K_dot(n, vx, vy, true);
}

void hearth_vec_dot_q5_K_q8_K_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q5_K *x = vx;
    const hearth_block_q8_K *y = vy;
    const __m512i b4 = _mm512_set1_epi8(0x10);
    __m512 acc = _mm512_setzero_ps();
    float summf = 0.0f;
    for (int64_t b = 0; b < n / HEARTH_QK_K; b++) {
        uint8_t sc[8];
        int summ = k_scales(x[b].scales, y[b].bsums, sc);
        __m512i qh = _mm512_broadcast_i64x4(load32(x[b].qh)); /* qh[l] at bytes l and 32 + l */
        __m512i sumi = _mm512_setzero_si512();
        for (int g = 0; g < 4; g++) {
            /* fifth bit of byte l: bit 2g of qh[l]; of byte 32 + l: bit 2g+1 of qh[l] */
            __m512i sel = _mm512_inserti64x4(_mm512_set1_epi8((char)(1 << (2 * g))),
                                             _mm256_set1_epi8((char)(1 << (2 * g + 1))), 1);
            __m512i q = _mm512_or_si512(unpack_nibbles64(x[b].qs + 32 * g),
                                        _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(qh, sel), b4));
            __m512i p = _mm512_maddubs_epi16(q, load64(y[b].qs + 64 * g));
            sumi = _mm512_dpwssd_epi32(sumi, p, halves_epi16(sc[2 * g], sc[2 * g + 1]));
        }
        float d = y[b].d * _cvtsh_ss(x[b].d);
        acc = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc);
        summf += y[b].d * _cvtsh_ss(x[b].dmin) * (float)summ;
    }
    *s = _mm512_reduce_add_ps(acc) - summf;
}

void hearth_vec_dot_q6_K_q8_K_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q6_K *x = vx;
    const hearth_block_q8_K *y = vy;
    const __m512i m4 = _mm512_set1_epi8(15), m2 = _mm512_set1_epi8(0x30);
    /* s16 lane k of 64-element chunk c (elements 64c + 2k, +1) uses scale 4c + k/8 */
    static const int16_t lane_group[32] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                           2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
    const __m512i grp = load64(lane_group);
    /* high-2-bit shifts (quant.h): bytes 0..31 take qh bits 0-1 (chunk A) / 4-5 (chunk B),
     * bytes 32..63 bits 2-3 / 6-7; moved to bits 4-5 */
    const __m512i shl_a = halves_epi16(4, 2), shr_b = halves_epi16(0, 2);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / HEARTH_QK_K; b++) {
        __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[b].scales));
        __m512i sc16 = _mm512_inserti64x4(_mm512_setzero_si512(), sc, 0);
        __m512i sumi = _mm512_setzero_si512();
        for (int half = 0; half < 2; half++) {
            __m512i l = load64(x[b].ql + 64 * half);
            __m512i h = _mm512_broadcast_i64x4(load32(x[b].qh + 32 * half));
            __m512i ha = _mm512_and_si512(_mm512_sllv_epi16(h, shl_a), m2);
            __m512i hb = _mm512_and_si512(_mm512_srlv_epi16(h, shr_b), m2);
            __m512i qa = _mm512_or_si512(_mm512_and_si512(l, m4), ha);
            __m512i qb = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4), hb);
            const int8_t *q8 = y[b].qs + 128 * half;
            /* q * y per s16 pair, q unsigned (|q y| pair sums <= 16002: no saturation) */
            __m512i ya = load64(q8), yb = load64(q8 + 64);
            __m512i pa = _mm512_maddubs_epi16(qa, ya);
            __m512i pb = _mm512_maddubs_epi16(qb, yb);
            __m512i ia = _mm512_add_epi16(grp, _mm512_set1_epi16((short)(8 * half)));
            __m512i ib = _mm512_add_epi16(grp, _mm512_set1_epi16((short)(8 * half + 4)));
            __m512i sa = _mm512_permutexvar_epi16(ia, sc16);
            __m512i sb = _mm512_permutexvar_epi16(ib, sc16);
            sumi = _mm512_dpwssd_epi32(sumi, pa, sa);
            sumi = _mm512_dpwssd_epi32(sumi, pb, sb);
        }
        /* llama.cpp's 8 lanes: element e in lane (e % 32) / 4, i.e. lanes m and m + 8 here */
        __m256i lanes = _mm256_add_epi32(_mm512_castsi512_si256(sumi), _mm512_extracti64x4_epi64(sumi, 1));
        /* the -32 offset per lane l: 32 * (sc_2l * bsums_2l + sc_2l+1 * bsums_2l+1) */
        lanes = _mm256_sub_epi32(lanes, _mm256_slli_epi32(_mm256_madd_epi16(load32(y[b].bsums), sc), 5));
        float d = y[b].d * _cvtsh_ss(x[b].d);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(lanes), acc);
    }
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    *s = _mm_cvtss_f32(r);
}

