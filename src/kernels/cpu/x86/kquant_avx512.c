/*
 * kquant_avx512.c - AVX-512 (BW + VNNI) dots of the K-quants (q4_K, q5_K, q6_K) against q8_K.
 *
 * A 256-element super-block is four 64-byte vectors of unsigned weights. vpmaddubsw with the
 * activation bytes gives 32 s16 pair sums (|.| <= 63*127*2 < 2^15: no saturation), and VNNI's
 * vpdpwssd multiplies them by the per-sub-block scales (one s16 per lane) and accumulates
 * pairs into 16 s32 lanes, exactly. The block's int sum is scaled once in float. Offsets stay
 * out of the vector loop, as in kquant_avx2.c:
 *   q4_K/q5_K: - dmin * sum_i mn_i * (bsums_2i + bsums_2i+1)
 *   q6_K:      - 32 * sum_g sc_g * bsums_g, folded into lane 0 of the int accumulator
 * Every block is one iteration, so these loops have no tail.
 */
#include <immintrin.h>

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

void hearth_vec_dot_q4_K_q8_K_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q4_K *x = vx;
    const hearth_block_q8_K *y = vy;
    __m512 acc = _mm512_setzero_ps();
    float summf = 0.0f;
    for (int64_t b = 0; b < n / HEARTH_QK_K; b++) {
        uint8_t sc[8];
        int summ = k_scales(x[b].scales, y[b].bsums, sc);
        __m512i sumi = _mm512_setzero_si512();
        for (int g = 0; g < 4; g++) {
            __m512i q = unpack_nibbles64(x[b].qs + 32 * g);
            __m512i p = _mm512_maddubs_epi16(q, load64(y[b].qs + 64 * g));
            sumi = _mm512_dpwssd_epi32(sumi, p, halves_epi16(sc[2 * g], sc[2 * g + 1]));
        }
        float d = y[b].d * _cvtsh_ss(x[b].d);
        acc = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc);
        summf += y[b].d * _cvtsh_ss(x[b].dmin) * (float)summ;
    }
    *s = _mm512_reduce_add_ps(acc) - summf;
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
    __m512 acc = _mm512_setzero_ps();
    for (int64_t b = 0; b < n / HEARTH_QK_K; b++) {
        int off = 0;
        for (int g = 0; g < 16; g++) off += x[b].scales[g] * y[b].bsums[g];
        __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[b].scales));
        __m512i sc16 = _mm512_inserti64x4(_mm512_setzero_si512(), sc, 0);
        __m512i sumi = _mm512_maskz_set1_epi32(1, -32 * off);
        for (int half = 0; half < 2; half++) {
            __m512i l = load64(x[b].ql + 64 * half);
            __m512i h = _mm512_broadcast_i64x4(load32(x[b].qh + 32 * half));
            __m512i ha = _mm512_and_si512(_mm512_sllv_epi16(h, shl_a), m2);
            __m512i hb = _mm512_and_si512(_mm512_srlv_epi16(h, shr_b), m2);
            __m512i qa = _mm512_or_si512(_mm512_and_si512(l, m4), ha);
            __m512i qb = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4), hb);
            const int8_t *q8 = y[b].qs + 128 * half;
            __m512i pa = _mm512_maddubs_epi16(qa, load64(q8));
            __m512i pb = _mm512_maddubs_epi16(qb, load64(q8 + 64));
            __m512i ia = _mm512_add_epi16(grp, _mm512_set1_epi16((short)(8 * half)));
            __m512i ib = _mm512_add_epi16(grp, _mm512_set1_epi16((short)(8 * half + 4)));
            __m512i sa = _mm512_permutexvar_epi16(ia, sc16);
            __m512i sb = _mm512_permutexvar_epi16(ib, sc16);
            sumi = _mm512_dpwssd_epi32(sumi, pa, sa);
            sumi = _mm512_dpwssd_epi32(sumi, pb, sb);
        }
        float d = _cvtsh_ss(x[b].d) * y[b].d;
        acc = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc);
    }
    *s = _mm512_reduce_add_ps(acc);
}

/* hearth_vec_dot_q4_K_q8_K_avx512 for 4 activation rows (kernels.h hearth_vec_dot_4_fn): the
 * weight nibbles and scales are unpacked once, each token keeps its own accumulators, so every
 * result is bit-identical to the single-row dot (tests/kernels/test_dot2.c). */
void hearth_vec_dot_4_q4_K_q8_K_avx512(int64_t n, float *s, int64_t bs, const void *vx, const void *vy, size_t by) {
    const hearth_block_q4_K *x = vx;
    const hearth_block_q8_K *y[4];
    for (int i = 0; i < 4; i++) y[i] = (const hearth_block_q8_K *)((const char *)vy + (size_t)i * by);
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    float summf[4] = {0};
    for (int64_t b = 0; b < n / HEARTH_QK_K; b++) {
        uint8_t sc[8], mn[8];
        hearth_k_scales_unpack(x[b].scales, sc, mn);
        __m512i q[4], scv[4];
        for (int g = 0; g < 4; g++) {
            q[g] = unpack_nibbles64(x[b].qs + 32 * g);
            scv[g] = halves_epi16(sc[2 * g], sc[2 * g + 1]);
        }
        const float xd = _cvtsh_ss(x[b].d), xdmin = _cvtsh_ss(x[b].dmin);
        for (int i = 0; i < 4; i++) {
            const hearth_block_q8_K *yb = y[i] + b;
            uint8_t sc2[8];
            int summ = k_scales(x[b].scales, yb->bsums, sc2);
            __m512i sumi = _mm512_setzero_si512();
            for (int g = 0; g < 4; g++)
                sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q[g], load64(yb->qs + 64 * g)), scv[g]);
            float d = yb->d * xd;
            acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc[i]);
            summf[i] += yb->d * xdmin * (float)summ;
        }
    }
    for (int i = 0; i < 4; i++) s[i * bs] = _mm512_reduce_add_ps(acc[i]) - summf[i];
}
