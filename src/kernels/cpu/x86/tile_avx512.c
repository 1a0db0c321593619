/*
 * tile_avx512.c - AVX-512 VNNI block-dot tiles (tile_x86.h): 4 weight rows x nt <= 4 tokens,
 * each (row, token) pair equal to quant_avx512.c's one-row dot bit for bit.
 *
 * q4_0 / q4_1 / q5_0: one 512-bit vector holds the 16 nibble bytes of the 4 rows (a 128-bit lane per
 * row); masking gives the low-nibble elements, a shift the high ones, and each is dotted by
 * vpdpbusd with the token's activation half broadcast to the 4 lanes: 16 s32 lanes = 4 rows x
 * the reference's 4 lanes of that half. The scales d_r * d_y of the 4 rows come from one
 * vcvtph2ps of the rows' first 4 bytes (d and m interleaved) and one multiply; q4_1's minimum
 * chains fma(m_r, s_y, summs_r) run in the odd lanes of the same 8-float vector. q5_0's fifth
 * bits become byte masks (vptestmb of the rows' qh bytes, shuffled into place) that add 16. q4_0
 * and q5_0 take their offset (8, 16) out of the weights once per block, leaving signed values,
 * and dot them as q8_0 does below: vpdpbusd of (y + 128) started from -128 * (sum of the signed
 * weight bytes); the integer sums are exact and equal the reference's.
 * q8_0: a 512-bit vector holds two rows' 32 bytes (a 256-bit half each = the reference's 8
 * lanes); the signed x signed product is vpdpbusd of (y + 128) as unsigned with x, started
 * from -128 * (sum of x's bytes), which is exact and equals the reference's integer sums.
 */
#include <immintrin.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "kernels/cpu/x86/tile_x86.h"
#include "tensor/quant.h"

typedef hearth_block_q4_0 q4_0;
typedef hearth_block_q4_1 q4_1;
typedef hearth_block_q5_0 q5_0;
typedef hearth_block_q8_0 q8_0;
typedef hearth_block_q8_1 q8_1;

#define INLINE static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 4") /* the per-token and per-row arrays stay in registers */

/* The first 4 bytes of the block at p in rows 0..3 (stride bx) as 8 halves, converted. */
INLINE __m256 head4(const uint8_t *p, size_t bx) {
    __m128i v = _mm_setr_epi32((int)hearth_tile_u32(p), (int)hearth_tile_u32(p + bx),
                               (int)hearth_tile_u32(p + 2 * bx), (int)hearth_tile_u32(p + 3 * bx));
    return _mm256_cvtph_ps(v);
}

/* 16 bytes at p of rows 0..3, a 128-bit lane each. */
INLINE __m512i rows16(const uint8_t *p, size_t bx) {
    __m512i q = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)p));
    q = _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *)(p + bx)), 1);
    q = _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *)(p + 2 * bx)), 2);
    return _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *)(p + 3 * bx)), 3);
}

/* 32 bytes at p of two rows, a 256-bit half each. */
INLINE __m512i rows32(const uint8_t *p, size_t bx) {
    __m512i q = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)p));
    return _mm512_inserti64x4(q, _mm256_loadu_si256((const __m256i *)(p + bx)), 1);
}

/* -(sum over each 4 bytes of u * v), u unsigned, v signed: an offset term started from */
INLINE __m512i neg_dot(__m512i u, __m512i v) {
    return _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, v));
}

INLINE __m512i bcast16(const int8_t *p) { return _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)p)); }

/* Store the lo/hi accumulators of token t and finish its 4 results (+ extra[2r + 1] if given). */
INLINE void finish_lohi(__m512 lo, __m512 hi, const float *extra, float *s) {
    float l[16], h[16];
    _mm512_storeu_ps(l, lo);
    _mm512_storeu_ps(h, hi);
    UNROLL
    for (int r = 0; r < 4; r++) {
        float v = hearth_tile_hsum8(l + 4 * r, h + 4 * r);
        s[r] = extra ? v + extra[2 * r + 1] : v;
    }
}

enum { K4_0, K4_1, K5_0 }; /* the nibble kinds */

/* The fifth bits of q5_0 blocks at p (their qh) in rows 0..3, as byte masks over rows16's
 * layout: byte 16r + j of *lo is element j of row r, of *hi element 16 + j. */
INLINE void fifth_masks(const uint8_t *p, size_t bx, __mmask64 *lo, __mmask64 *hi) {
    const __m512i v = _mm512_broadcast_i32x4(_mm_setr_epi32((int)hearth_tile_u32(p), (int)hearth_tile_u32(p + bx),
                                                            (int)hearth_tile_u32(p + 2 * bx),
                                                            (int)hearth_tile_u32(p + 3 * bx)));
    /* lane r, byte j: qh_r's byte j / 8 (lo) or 2 + j / 8 (hi), tested for bit j % 8 */
    const __m512i slo =
        _mm512_set_epi64(0x0d0d0d0d0d0d0d0d, 0x0c0c0c0c0c0c0c0c, 0x0909090909090909, 0x0808080808080808,
                         0x0505050505050505, 0x0404040404040404, 0x0101010101010101, 0x0000000000000000);
    const __m512i shi = _mm512_add_epi8(slo, _mm512_set1_epi8(2));
    const __m512i bit = _mm512_set1_epi64((int64_t)0x8040201008040201);
    *lo = _mm512_test_epi8_mask(_mm512_shuffle_epi8(v, slo), bit);
    *hi = _mm512_test_epi8_mask(_mm512_shuffle_epi8(v, shi), bit);
}

/* q4_0, q4_1 or q5_0 (KIND): NT tokens. */
INLINE void nib_tile(int64_t n, float *s, int64_t bs, const uint8_t *x, size_t bx, const uint8_t *y, size_t by,
                     const int NT, const int KIND) {
    const int MIN = KIND == K4_1;
    const size_t xbs = KIND == K4_0 ? sizeof(q4_0) : KIND == K4_1 ? sizeof(q4_1) : sizeof(q5_0);
    const size_t qso = KIND == K4_0 ? offsetof(q4_0, qs) : KIND == K4_1 ? offsetof(q4_1, qs) : offsetof(q5_0, qs);
    const size_t ybs = MIN ? sizeof(q8_1) : sizeof(q8_0), yqo = MIN ? offsetof(q8_1, qs) : offsetof(q8_0, qs);
    /* the offset taken out of q4_0 (8) and q5_0 (16) */
    const __m512i m4 = _mm512_set1_epi8(15), c16 = _mm512_set1_epi8(16), coff = _mm512_set1_epi8(KIND == K5_0 ? 16 : 8);
    const __m512i c128 = _mm512_set1_epi8((char)0x80);
    const __m512i dup = _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6);
    __m512 alo[4], ahi[4];
    __m256 sm[4];
    UNROLL
    for (int t = 0; t < NT; t++) alo[t] = ahi[t] = _mm512_setzero_ps(), sm[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / 32; b++) {
        const uint8_t *xb = x + (size_t)b * xbs;
        hearth_tile_prefetch(x, bx, b, n / 32);
        const __m256 dm = head4(xb, bx); /* d_r in lane 2r; q4_1: m_r in lane 2r + 1 */
        const __m512 d16 = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(dm)); /* d_r in lanes 4r..4r+3 */
        const __m512i q = rows16(xb + qso, bx);
        __m512i lo = _mm512_and_si512(q, m4), hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
        if (KIND == K5_0) { /* q = nibble + 16 * fifth bit */
            __mmask64 klo, khi;
            fifth_masks(xb + offsetof(q5_0, qh), bx, &klo, &khi);
            lo = _mm512_mask_add_epi8(lo, klo, lo, c16);
            hi = _mm512_mask_add_epi8(hi, khi, hi, c16);
        }
        __m512i olo = lo, ohi = hi;
        if (!MIN) { /* signed q - c, and -128 sum (q - c) to start vpdpbusd of (y + 128) from, once per block */
            lo = _mm512_sub_epi8(lo, coff);
            hi = _mm512_sub_epi8(hi, coff);
            olo = neg_dot(c128, lo);
            ohi = neg_dot(c128, hi);
        }
        UNROLL
        for (int t = 0; t < NT; t++) {
            const uint8_t *yb = y + (size_t)t * by + (size_t)b * ybs;
            /* d_y (and q4_1's s_y) in every even (odd) lane */
            __m512 sc;
            if (MIN) {
                const __m256 dys = _mm256_cvtph_ps(_mm_set1_epi32((int)hearth_tile_u32(yb)));
                sm[t] = _mm256_fmadd_ps(dm, dys, sm[t]); /* odd lanes: fma(m_r, s_y, summs_r) */
                sc = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_mul_ps(dm, dys)));
            } else { /* the same products d_r * d_y, from d_r already in place */
                sc = _mm512_mul_ps(d16, _mm512_set1_ps(_cvtsh_ss((unsigned short)hearth_tile_u32(yb))));
            }
            const __m512i ylo = bcast16((const int8_t *)yb + yqo), yhi = bcast16((const int8_t *)yb + yqo + 16);
            __m512i plo, phi;
            if (MIN) {
                plo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, ylo);
                phi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), hi, yhi);
            } else { /* sum (q - c) y = sum (y + 128)(q - c) - 128 sum (q - c) */
                plo = _mm512_dpbusd_epi32(olo, _mm512_xor_si512(ylo, c128), lo);
                phi = _mm512_dpbusd_epi32(ohi, _mm512_xor_si512(yhi, c128), hi);
            }
            alo[t] = _mm512_fmadd_ps(sc, _mm512_cvtepi32_ps(plo), alo[t]);
            ahi[t] = _mm512_fmadd_ps(sc, _mm512_cvtepi32_ps(phi), ahi[t]);
        }
    }
    UNROLL
    for (int t = 0; t < NT; t++) {
        float m[8];
        _mm256_storeu_ps(m, sm[t]);
        finish_lohi(alo[t], ahi[t], MIN ? m : NULL, s + t * bs);
    }
}

INLINE void q8_tile(int64_t n, float *s, int64_t bs, const uint8_t *x, size_t bx, const uint8_t *y, size_t by,
                    const int NT) {
    const __m512i c128 = _mm512_set1_epi8((char)0x80);
    const __m512i dup01 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2);
    const __m512i dup23 = _mm512_setr_epi32(4, 4, 4, 4, 4, 4, 4, 4, 6, 6, 6, 6, 6, 6, 6, 6);
    __m512 a01[4], a23[4];
    UNROLL
    for (int t = 0; t < NT; t++) a01[t] = a23[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < n / 32; b++) {
        const uint8_t *xb = x + (size_t)b * sizeof(q8_0);
        hearth_tile_prefetch(x, bx, b, n / 32);
        const __m256 d = head4(xb, bx); /* d_r in lane 2r */
        const __m512i x01 = rows32(xb + offsetof(q8_0, qs), bx);
        const __m512i x23 = rows32(xb + offsetof(q8_0, qs) + 2 * bx, bx);
        /* sum x y = sum (y + 128) x - 128 sum x: start vpdpbusd from -128 sum x */
        const __m512i o01 = neg_dot(c128, x01), o23 = neg_dot(c128, x23);
        UNROLL
        for (int t = 0; t < NT; t++) {
            const q8_0 *yb = (const q8_0 *)(y + (size_t)t * by) + b;
            const __m256 dy = _mm256_cvtph_ps(_mm_set1_epi16((short)yb->d));
            const __m512 sc = _mm512_castps256_ps512(_mm256_mul_ps(d, dy));
            const __m512i yu =
                _mm512_xor_si512(_mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)yb->qs)), c128);
            const __m512 p01 = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(o01, yu, x01));
            const __m512 p23 = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(o23, yu, x23));
            a01[t] = _mm512_fmadd_ps(_mm512_permutexvar_ps(dup01, sc), p01, a01[t]);
            a23[t] = _mm512_fmadd_ps(_mm512_permutexvar_ps(dup23, sc), p23, a23[t]);
        }
    }
    UNROLL
    for (int t = 0; t < NT; t++) {
        float a[32];
        _mm512_storeu_ps(a, a01[t]);
        _mm512_storeu_ps(a + 16, a23[t]);
        /* a row's 8 lanes are consecutive: lo = a[0..3], hi = a[4..7] */
        UNROLL
        for (int r = 0; r < 4; r++) s[t * bs + r] = hearth_tile_hsum8(a + 8 * r, a + 8 * r + 4);
    }
}

/* [sum of v[0], ..., sum of v[3]] (s32), by a tree that shares its shuffles. */
INLINE __m128i reduce4(const __m512i v[4]) {
    __m512i c = _mm512_add_epi32(_mm512_shuffle_i64x2(v[0], v[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm512_shuffle_i64x2(v[0], v[1], _MM_SHUFFLE(3, 2, 3, 2)));
    __m512i d = _mm512_add_epi32(_mm512_shuffle_i64x2(v[2], v[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm512_shuffle_i64x2(v[2], v[3], _MM_SHUFFLE(3, 2, 3, 2)));
    __m512i e = _mm512_add_epi32(_mm512_shuffle_i64x2(c, d, _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_i64x2(c, d, _MM_SHUFFLE(3, 1, 3, 1)));
    e = _mm512_add_epi32(e, _mm512_shuffle_epi32(e, _MM_PERM_BADC));
    e = _mm512_add_epi32(e, _mm512_shuffle_epi32(e, _MM_PERM_CDAB));
    return _mm512_castsi512_si128(_mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                                              0, 0, 0), e));
}

/* q4_K (x86_order_ref.h): 4 rows x NT tokens. Each row's nibbles and scales are unpacked once per
 * super-block for all NT tokens; the integer sums are exact, and each (row, token) pair keeps
 * its own two float chains, one FMA each per super-block (gemv) or per pair of sub-blocks
 * (PAIR: the gemm order), as the one-row kernels of kquant_avx512.c. */
INLINE void q4_K_tile(int64_t n, float *s, int64_t bs, const uint8_t *x, size_t bx, const uint8_t *y, size_t by,
                      const int NT, const int PAIR) {
    typedef hearth_block_q4_K q4_K;
    typedef hearth_block_q8_K q8_K;
    const __m256i m4 = _mm256_set1_epi8(15);
    float a[4][4] = {{0}}, m[4][4] = {{0}}; /* [token][row] */
    const int64_t nb = n / HEARTH_QK_K;
    for (int64_t b = 0; b < nb; b++) {
        hearth_tile_prefetch(x, bx, b, nb);
        __m128i b2[4]; /* per token: bsums[2i] + bsums[2i + 1], i < 8 */
        UNROLL
        for (int t = 0; t < NT; t++) {
            const q8_K *yb = (const q8_K *)(y + (size_t)t * by) + b;
            b2[t] = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)yb->bsums),
                                   _mm_loadu_si128((const __m128i *)(yb->bsums + 8)));
        }
        for (int r = 0; r < 4; r++) {
            const q4_K *xb = (const q4_K *)(x + (size_t)r * bx) + b;
            uint8_t sc[8], mn[8];
            hearth_k_scales_unpack(xb->scales, sc, mn);
            const __m128i mn16 = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)mn));
            __m512i qv[4], sv[4];
            UNROLL
            for (int g = 0; g < 4; g++) {
                __m256i t8 = _mm256_loadu_si256((const __m256i *)(xb->qs + 32 * g));
                qv[g] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(t8, m4)),
                                           _mm256_and_si256(_mm256_srli_epi16(t8, 4), m4), 1);
                sv[g] = _mm512_inserti64x4(_mm512_set1_epi16((short)sc[2 * g]),
                                           _mm256_set1_epi16((short)sc[2 * g + 1]), 1);
            }
            const float xd = _cvtsh_ss(xb->d), xm = _cvtsh_ss(xb->dmin);
            UNROLL
            for (int t = 0; t < NT; t++) {
                const q8_K *yb = (const q8_K *)(y + (size_t)t * by) + b;
                __m512i pg[4];
                UNROLL
                for (int g = 0; g < 4; g++) {
                    __m512i p16 = _mm512_maddubs_epi16(qv[g], _mm512_loadu_si512(yb->qs + 64 * g));
                    pg[g] = _mm512_dpwssd_epi32(_mm512_setzero_si512(), p16, sv[g]);
                }
                const __m128i pm = _mm_madd_epi16(b2[t], mn16); /* lane p: pair p's minimum sum */
                const float da = xd * yb->d, dm = xm * yb->d;
                if (PAIR) {
                    float sq[4], sm[4];
                    _mm_storeu_ps(sq, _mm_cvtepi32_ps(reduce4(pg)));
                    _mm_storeu_ps(sm, _mm_cvtepi32_ps(pm));
                    for (int p = 0; p < 4; p++) {
                        a[t][r] = fmaf(sq[p], da, a[t][r]);
                        m[t][r] = fmaf(sm[p], dm, m[t][r]);
                    }
                } else {
                    __m512i all = _mm512_add_epi32(_mm512_add_epi32(pg[0], pg[1]), _mm512_add_epi32(pg[2], pg[3]));
                    __m128i pm2 = _mm_add_epi32(pm, _mm_shuffle_epi32(pm, _MM_SHUFFLE(1, 0, 3, 2)));
                    pm2 = _mm_add_epi32(pm2, _mm_shuffle_epi32(pm2, _MM_SHUFFLE(2, 3, 0, 1)));
                    a[t][r] = fmaf((float)_mm512_reduce_add_epi32(all), da, a[t][r]);
                    m[t][r] = fmaf((float)_mm_cvtsi128_si32(pm2), dm, m[t][r]);
                }
            }
        }
    }
    UNROLL
    for (int t = 0; t < NT; t++)
        for (int r = 0; r < 4; r++) s[t * bs + r] = a[t][r] - m[t][r];
}

/* q6_K (x86_order_ref.h): 4 rows x NT tokens. Each row's 6-bit values and per-lane scales are
 * unpacked once per super-block for all NT tokens (kquant_avx512.c's one-row kernel says how);
 * each (row, token) pair keeps its own 8 float lanes, one FMA per super-block, and hsum8. */
INLINE void q6_K_tile(int64_t n, float *s, int64_t bs, const uint8_t *x, size_t bx, const uint8_t *y, size_t by,
                      const int NT) {
    typedef hearth_block_q6_K q6_K;
    typedef hearth_block_q8_K q8_K;
    const __m512i m4 = _mm512_set1_epi8(15), m2 = _mm512_set1_epi8(0x30), c32 = _mm512_set1_epi8(32);
    /* s16 lane k of a 64-element chunk uses scale k / 8 of its 4; the high-2-bit shifts */
    const __m512i grp = _mm512_set_epi16(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0,
                                         0, 0, 0, 0, 0);
    const __m512i shl_a = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    const __m512i shr_b = _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1);
    __m256 acc[4][4]; /* [token][row] */
    UNROLL
    for (int t = 0; t < NT; t++)
        for (int r = 0; r < 4; r++) acc[t][r] = _mm256_setzero_ps();
    const int64_t nb = n / HEARTH_QK_K;
    for (int64_t b = 0; b < nb; b++) {
        hearth_tile_prefetch(x, bx, b, nb);
        for (int r = 0; r < 4; r++) {
            const q6_K *xb = (const q6_K *)(x + (size_t)r * bx) + b;
            const __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)xb->scales));
            const __m512i sc16 = _mm512_inserti64x4(_mm512_setzero_si512(), sc, 0);
            __m512i qa[2], qb[2], sa[2], sb[2];
            UNROLL
            for (int half = 0; half < 2; half++) {
                __m512i l = _mm512_loadu_si512(xb->ql + 64 * half);
                __m512i h = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(xb->qh + 32 * half)));
                qa[half] = _mm512_or_si512(_mm512_and_si512(l, m4), _mm512_and_si512(_mm512_sllv_epi16(h, shl_a), m2));
                qb[half] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
                                           _mm512_and_si512(_mm512_srlv_epi16(h, shr_b), m2));
                sa[half] = _mm512_permutexvar_epi16(_mm512_add_epi16(grp, _mm512_set1_epi16((short)(8 * half))), sc16);
                sb[half] = _mm512_permutexvar_epi16(_mm512_add_epi16(grp, _mm512_set1_epi16((short)(8 * half + 4))), sc16);
            }
            const float xd = _cvtsh_ss(xb->d);
            UNROLL
            for (int t = 0; t < NT; t++) {
                const q8_K *yb = (const q8_K *)(y + (size_t)t * by) + b;
                __m512i sumi = _mm512_setzero_si512();
                UNROLL
                for (int half = 0; half < 2; half++) {
                    const __m512i ya = _mm512_loadu_si512(yb->qs + 128 * half);
                    const __m512i yv = _mm512_loadu_si512(yb->qs + 128 * half + 64);
                    /* (q - 32) * y per s16 pair, the offset taken in each lane as the one-row kernel does */
                    __m512i pa = _mm512_sub_epi16(_mm512_maddubs_epi16(qa[half], ya), _mm512_maddubs_epi16(c32, ya));
                    __m512i pb = _mm512_sub_epi16(_mm512_maddubs_epi16(qb[half], yv), _mm512_maddubs_epi16(c32, yv));
                    sumi = _mm512_dpwssd_epi32(sumi, pa, sa[half]);
                    sumi = _mm512_dpwssd_epi32(sumi, pb, sb[half]);
                }
                __m256i lanes = _mm256_add_epi32(_mm512_castsi512_si256(sumi), _mm512_extracti64x4_epi64(sumi, 1));
                acc[t][r] = _mm256_fmadd_ps(_mm256_set1_ps(yb->d * xd), _mm256_cvtepi32_ps(lanes), acc[t][r]);
            }
        }
    }
    UNROLL
    for (int t = 0; t < NT; t++)
        for (int r = 0; r < 4; r++) {
            float v[8];
            _mm256_storeu_ps(v, acc[t][r]);
            s[t * bs + r] = hearth_tile_hsum8(v, v + 4);
        }
}

#define TILE_FN(name, body)                                                                                   \
    void name(int64_t n, float *s, int64_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nt) { \
        const uint8_t *x = vx, *y = vy;                                                                        \
        switch (nt) {                                                                                          \
        case 1: body(1); break;                                                                                \
        case 2: body(2); break;                                                                                \
        case 3: body(3); break;                                                                                \
        default: body(4); break;                                                                               \
        }                                                                                                      \
    }
#define Q4_0_BODY(NT) nib_tile(n, s, bs, x, bx, y, by, NT, K4_0)
#define Q4_1_BODY(NT) nib_tile(n, s, bs, x, bx, y, by, NT, K4_1)
#define Q5_0_BODY(NT) nib_tile(n, s, bs, x, bx, y, by, NT, K5_0)
#define Q8_0_BODY(NT) q8_tile(n, s, bs, x, bx, y, by, NT)
#define Q6_K_BODY(NT) q6_K_tile(n, s, bs, x, bx, y, by, NT)
#define Q4_K_BODY(NT) q4_K_tile(n, s, bs, x, bx, y, by, NT, 0)
#define Q4_K_GEMM_BODY(NT) q4_K_tile(n, s, bs, x, bx, y, by, NT, 1)
TILE_FN(hearth_tile_q4_0_q8_0_avx512, Q4_0_BODY)
TILE_FN(hearth_tile_q4_1_q8_1_avx512, Q4_1_BODY)
TILE_FN(hearth_tile_q5_0_q8_0_avx512, Q5_0_BODY)
TILE_FN(hearth_tile_q8_0_q8_0_avx512, Q8_0_BODY)
TILE_FN(hearth_tile_q4_K_q8_K_avx512, Q4_K_BODY)
TILE_FN(hearth_tile_q6_K_q8_K_avx512, Q6_K_BODY)
TILE_FN(hearth_tile_q4_K_q8_K_gemm_avx512, Q4_K_GEMM_BODY)
