/*
 * tile_avx2.c - AVX2 block-dot tiles (tile_x86.h): 4 weight rows at a time x nt tokens, each
 * (row, token) pair equal to quant_avx2.c's one-row dot bit for bit.
 *
 * With 16 vector registers a pass takes two tokens (nt tokens run in passes of two).
 * q4_0 / q4_1 / q5_0: a 256-bit vector holds the 16 nibble bytes of two rows (a 128-bit lane per
 * row); masking and a shift give the low- and high-nibble elements, vpmaddubsw + vpmaddwd
 * dot them with the token's activation half broadcast to both lanes (exact: products of at
 * most 15 * 127, summed in pairs). Scales and q4_1's minimum chains come from one vcvtph2ps of
 * the 4 rows' first 4 bytes, as in tile_avx512.c; q4_0's offset is subtracted as
 * 8 * (sum of the activation bytes), once per token and block for all rows; q5_0's fifth bits
 * are spread to bytes (vpshufb of the rows' qh, test, compare) and or-ed in as 16, and its
 * offset 16 is taken out the same way.
 * q8_0: one row per 256-bit vector, the sign trick of quant_avx2.c (|x| times y with x's sign).
 */
#include <immintrin.h>
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

INLINE __m256 head4(const uint8_t *p, size_t bx) {
    __m128i v = _mm_setr_epi32((int)hearth_tile_u32(p), (int)hearth_tile_u32(p + bx),
                               (int)hearth_tile_u32(p + 2 * bx), (int)hearth_tile_u32(p + 3 * bx));
    return _mm256_cvtph_ps(v);
}

INLINE __m256i rows16(const uint8_t *p, size_t bx) {
    return _mm256_loadu2_m128i((const __m128i *)(p + bx), (const __m128i *)p);
}

INLINE __m256i dot_us8(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

INLINE __m256i bcast16(const int8_t *p) { return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)p)); }

/* The reference's hsum8 (llamacpp_order_ref.h: ((a0+a4) + (a2+a6)) + ((a1+a5) + (a3+a7))) of 4 rows
 * at once, from lo / hi vectors holding lanes 0..3 / 4..7 of rows 0, 1 (lo01, hi01: a 128-bit
 * half each) and of rows 2, 3: B = lo + hi, then (B0 + B2) + (B1 + B3) in each half; the 4
 * results are returned in row order. Each row's adds are those of the tree, in its order. */
INLINE __m128 hsum8x4_lohi(__m256 lo01, __m256 hi01, __m256 lo23, __m256 hi23) {
    __m256 b01 = _mm256_add_ps(lo01, hi01), b23 = _mm256_add_ps(lo23, hi23);
    b01 = _mm256_add_ps(b01, _mm256_permute_ps(b01, _MM_SHUFFLE(1, 0, 3, 2)));
    b23 = _mm256_add_ps(b23, _mm256_permute_ps(b23, _MM_SHUFFLE(1, 0, 3, 2)));
    b01 = _mm256_add_ps(b01, _mm256_permute_ps(b01, _MM_SHUFFLE(2, 3, 0, 1)));
    b23 = _mm256_add_ps(b23, _mm256_permute_ps(b23, _MM_SHUFFLE(2, 3, 0, 1)));
    const __m256 u = _mm256_shuffle_ps(b01, b23, _MM_SHUFFLE(0, 0, 0, 0)); /* [r0 r0 r2 r2 | r1 r1 r3 r3] */
    return _mm_blend_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1), 0xa);
}

/* The same from 4 vectors of one row's 8 lanes each. */
INLINE __m128 hsum8x4(__m256 r0, __m256 r1, __m256 r2, __m256 r3) {
    return hsum8x4_lohi(_mm256_permute2f128_ps(r0, r1, 0x20), _mm256_permute2f128_ps(r0, r1, 0x31),
                        _mm256_permute2f128_ps(r2, r3, 0x20), _mm256_permute2f128_ps(r2, r3, 0x31));
}

enum { K4_0, K4_1, K5_0 }; /* the nibble kinds */

/* 16 * the fifth bits of q5_0 blocks (their qh at p) of rows 0..3 in rows16's layout, for the
 * vectors [lo01, hi01, lo23, hi23]: byte j of a row's lane gets bit j (lo) or 16 + j (hi). */
INLINE void fifth_bits(const uint8_t *p, size_t bx, __m256i f[4]) {
    const __m256i v = _mm256_broadcastsi128_si256(_mm_setr_epi32((int)hearth_tile_u32(p), (int)hearth_tile_u32(p + bx),
                                                                 (int)hearth_tile_u32(p + 2 * bx),
                                                                 (int)hearth_tile_u32(p + 3 * bx)));
    const __m256i bit = _mm256_set1_epi64x((int64_t)0x8040201008040201), c16 = _mm256_set1_epi8(16);
    /* the qh byte each output byte tests: row 2 * (k / 2) + lane, byte (k % 2 ? 2 : 0) + j / 8 */
    const __m256i idx[4] = {
        _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101, 0x0404040404040404, 0x0505050505050505),
        _mm256_setr_epi64x(0x0202020202020202, 0x0303030303030303, 0x0606060606060606, 0x0707070707070707),
        _mm256_setr_epi64x(0x0808080808080808, 0x0909090909090909, 0x0c0c0c0c0c0c0c0c, 0x0d0d0d0d0d0d0d0d),
        _mm256_setr_epi64x(0x0a0a0a0a0a0a0a0a, 0x0b0b0b0b0b0b0b0b, 0x0e0e0e0e0e0e0e0e, 0x0f0f0f0f0f0f0f0f),
    };
    UNROLL
    for (int k = 0; k < 4; k++) {
        __m256i t = _mm256_and_si256(_mm256_shuffle_epi8(v, idx[k]), bit);
        f[k] = _mm256_and_si256(_mm256_cmpeq_epi8(t, bit), c16);
    }
}

/* q4_0, q4_1 or q5_0 (KIND), tokens t0 .. t0 + NT. */
INLINE void nib_tile(int64_t n, float *s, int64_t bs, const uint8_t *x, size_t bx, const uint8_t *y, size_t by,
                     const int NT, const int KIND) {
    const int MIN = KIND == K4_1;
    const size_t xbs = KIND == K4_0 ? sizeof(q4_0) : KIND == K4_1 ? sizeof(q4_1) : sizeof(q5_0);
    const size_t qso = KIND == K4_0 ? offsetof(q4_0, qs) : KIND == K4_1 ? offsetof(q4_1, qs) : offsetof(q5_0, qs);
    const size_t ybs = MIN ? sizeof(q8_1) : sizeof(q8_0), yqo = MIN ? offsetof(q8_1, qs) : offsetof(q8_0, qs);
    /* the offset taken out of q4_0 (8) and q5_0 (16) */
    const __m256i m4 = _mm256_set1_epi8(15), c8 = _mm256_set1_epi8(KIND == K5_0 ? 16 : 8);
    const __m256i dup01 = _mm256_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2), dup23 = _mm256_setr_epi32(4, 4, 4, 4, 6, 6, 6, 6);
    __m256 a[2][4], sm[2]; /* [token][lo01, hi01, lo23, hi23] */
    UNROLL
    for (int t = 0; t < NT; t++) {
        sm[t] = _mm256_setzero_ps();
        UNROLL
        for (int k = 0; k < 4; k++) a[t][k] = _mm256_setzero_ps();
    }
    for (int64_t b = 0; b < n / 32; b++) {
        const uint8_t *xb = x + (size_t)b * xbs;
        hearth_tile_prefetch(x, bx, b, n / 32);
        const __m256 dm = head4(xb, bx);
        const __m256i q01 = rows16(xb + qso, bx), q23 = rows16(xb + qso + 2 * bx, bx);
        __m256i u[4] = {_mm256_and_si256(q01, m4), _mm256_and_si256(_mm256_srli_epi16(q01, 4), m4),
                        _mm256_and_si256(q23, m4), _mm256_and_si256(_mm256_srli_epi16(q23, 4), m4)};
        if (KIND == K5_0) { /* q = nibble + 16 * fifth bit */
            __m256i f[4];
            fifth_bits(xb + offsetof(q5_0, qh), bx, f);
            UNROLL
            for (int k = 0; k < 4; k++) u[k] = _mm256_or_si256(u[k], f[k]);
        }
        UNROLL
        for (int t = 0; t < NT; t++) {
            const uint8_t *yb = y + (size_t)t * by + (size_t)b * ybs;
            const __m256 dys = _mm256_cvtph_ps(_mm_set1_epi32(MIN ? (int)hearth_tile_u32(yb)
                                                                  : (int)(hearth_tile_u32(yb) & 0xffff) * 0x10001));
            if (MIN) sm[t] = _mm256_fmadd_ps(dm, dys, sm[t]); /* odd lanes: fma(m_r, s_y, summs_r) */
            const __m256 sc = _mm256_mul_ps(dm, dys);
            const __m256 sc01 = _mm256_permutevar8x32_ps(sc, dup01), sc23 = _mm256_permutevar8x32_ps(sc, dup23);
            const __m256i yh[2] = {bcast16((const int8_t *)yb + yqo), bcast16((const int8_t *)yb + yqo + 16)};
            __m256i off[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
            if (!MIN) off[0] = dot_us8(c8, yh[0]), off[1] = dot_us8(c8, yh[1]);
            UNROLL
            for (int k = 0; k < 4; k++) {
                __m256i p = _mm256_sub_epi32(dot_us8(u[k], yh[k & 1]), off[k & 1]);
                a[t][k] = _mm256_fmadd_ps(k < 2 ? sc01 : sc23, _mm256_cvtepi32_ps(p), a[t][k]);
            }
        }
    }
    UNROLL
    for (int t = 0; t < NT; t++) {
        __m128 v = hsum8x4_lohi(a[t][0], a[t][1], a[t][2], a[t][3]);
        if (MIN) /* + summs_r */
            v = _mm_add_ps(v, _mm256_castps256_ps128(
                                  _mm256_permutevar8x32_ps(sm[t], _mm256_setr_epi32(1, 3, 5, 7, 1, 3, 5, 7))));
        _mm_storeu_ps(s + t * bs, v);
    }
}

INLINE void q8_tile(int64_t n, float *s, int64_t bs, const uint8_t *x, size_t bx, const uint8_t *y, size_t by,
                    const int NT) {
    __m256 a[2][4];
    UNROLL
    for (int t = 0; t < NT; t++)
        UNROLL
        for (int r = 0; r < 4; r++) a[t][r] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / 32; b++) {
        const uint8_t *xb = x + (size_t)b * sizeof(q8_0);
        hearth_tile_prefetch(x, bx, b, n / 32);
        const __m256 d = head4(xb, bx); /* d_r in lane 2r */
        UNROLL
        for (int t = 0; t < NT; t++) {
            const q8_0 *yb = (const q8_0 *)(y + (size_t)t * by) + b;
            const __m256 sc = _mm256_mul_ps(d, _mm256_cvtph_ps(_mm_set1_epi16((short)yb->d)));
            const __m256i yq = _mm256_loadu_si256((const __m256i *)yb->qs);
            UNROLL
            for (int r = 0; r < 4; r++) {
                const __m256i xq = _mm256_loadu_si256((const __m256i *)(xb + (size_t)r * bx + offsetof(q8_0, qs)));
                __m256i p = dot_us8(_mm256_abs_epi8(xq), _mm256_sign_epi8(yq, xq));
                a[t][r] = _mm256_fmadd_ps(_mm256_permutevar8x32_ps(sc, _mm256_set1_epi32(2 * r)), _mm256_cvtepi32_ps(p),
                                          a[t][r]);
            }
        }
    }
    UNROLL
    for (int t = 0; t < NT; t++) _mm_storeu_ps(s + t * bs, hsum8x4(a[t][0], a[t][1], a[t][2], a[t][3]));
}

/* A 4x4 transpose of s32: out[p] = [in[0]_p, in[1]_p, in[2]_p, in[3]_p]. */
INLINE void transpose4(const __m128i in[4], __m128i out[4]) {
    __m128i l01 = _mm_unpacklo_epi32(in[0], in[1]), h01 = _mm_unpackhi_epi32(in[0], in[1]);
    __m128i l23 = _mm_unpacklo_epi32(in[2], in[3]), h23 = _mm_unpackhi_epi32(in[2], in[3]);
    out[0] = _mm_unpacklo_epi64(l01, l23);
    out[1] = _mm_unpackhi_epi64(l01, l23);
    out[2] = _mm_unpacklo_epi64(h01, h23);
    out[3] = _mm_unpackhi_epi64(h01, h23);
}

/* q4_K (llamacpp_order_ref.h): 4 rows x NT tokens. A row's nibbles and sub-block scales are unpacked
 * once per super-block (kept on the stack: 16 registers hold no more) for all NT tokens; its
 * four sub-block pair sums per token come out of one vphaddd tree, exact. The float chains of
 * a token's 4 rows run as the lanes of 4-float vectors (a: the sums, m: the minimum terms),
 * one FMA per super-block (gemv) or per pair of sub-blocks (PAIR: the gemm order), the
 * one-row kernel's fmaf of each (row, token) pair in its own lane. */
INLINE void q4_K_tile(int64_t n, float *s, int64_t bs, const uint8_t *x, size_t bx, const uint8_t *y, size_t by,
                      const int NT, const int PAIR) {
    typedef hearth_block_q4_K q4_K;
    typedef hearth_block_q8_K q8_K;
    const __m256i m4 = _mm256_set1_epi8(15);
    const __m256i even = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    __m128 a[4], m[4]; /* [token], lane r */
    UNROLL
    for (int t = 0; t < NT; t++) a[t] = m[t] = _mm_setzero_ps();
    const int64_t nb = n / HEARTH_QK_K;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *xb0 = x + (size_t)b * sizeof(q4_K);
        hearth_tile_prefetch(x, bx, b, nb);
        const __m256 dd = _mm256_permutevar8x32_ps(head4(xb0, bx), even); /* d_r in lanes 0..3, dmin_r 4..7 */
        const __m128 xd = _mm256_castps256_ps128(dd), xm = _mm256_extractf128_ps(dd, 1);
        __m128i sq[4][4], mn[4]; /* [token][row]: the pair sums p = 0..3; [row]: minimums as s16 pairs */
        for (int r = 0; r < 4; r++) {
            const q4_K *xb = (const q4_K *)(xb0 + (size_t)r * bx);
            uint8_t sc[8], mn8[8];
            hearth_k_scales_unpack(xb->scales, sc, mn8);
            mn[r] = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)mn8));
            __m256i lo[4], hi[4], s0[4], s1[4];
            UNROLL
            for (int g = 0; g < 4; g++) { /* 32 bytes: low nibbles = sub-block 2g, high = 2g + 1 */
                __m256i q4 = _mm256_loadu_si256((const __m256i *)(xb->qs + 32 * g));
                lo[g] = _mm256_and_si256(q4, m4);
                hi[g] = _mm256_and_si256(_mm256_srli_epi16(q4, 4), m4);
                s0[g] = _mm256_set1_epi16(sc[2 * g]);
                s1[g] = _mm256_set1_epi16(sc[2 * g + 1]);
            }
            UNROLL
            for (int t = 0; t < NT; t++) {
                const q8_K *yb = (const q8_K *)(y + (size_t)t * by) + b;
                __m256i v[4];
                UNROLL
                for (int g = 0; g < 4; g++) {
                    __m256i p0 = _mm256_maddubs_epi16(lo[g], _mm256_loadu_si256((const __m256i *)(yb->qs + 64 * g)));
                    __m256i p1 =
                        _mm256_maddubs_epi16(hi[g], _mm256_loadu_si256((const __m256i *)(yb->qs + 64 * g + 32)));
                    v[g] = _mm256_add_epi32(_mm256_madd_epi16(p0, s0[g]), _mm256_madd_epi16(p1, s1[g]));
                }
                /* [sum v_0, .., sum v_3]: hadd pairs, then the two 128-bit halves */
                __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
                sq[t][r] = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
            }
        }
        __m128i mnp[4]; /* [p]: lane r = row r's minimums 2p, 2p + 1 */
        transpose4(mn, mnp);
        UNROLL
        for (int t = 0; t < NT; t++) {
            const q8_K *yb = (const q8_K *)(y + (size_t)t * by) + b;
            /* bsums[2i] + bsums[2i + 1], i < 8: s32 element p = the pair for sub-blocks 2p, 2p + 1 */
            const __m128i b2 = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)yb->bsums),
                                              _mm_loadu_si128((const __m128i *)(yb->bsums + 8)));
            __m128i q[4], pm[4];
            transpose4(sq[t], q); /* q[p]: lane r = row r's pair p */
            pm[0] = _mm_madd_epi16(_mm_shuffle_epi32(b2, 0x00), mnp[0]);
            pm[1] = _mm_madd_epi16(_mm_shuffle_epi32(b2, 0x55), mnp[1]);
            pm[2] = _mm_madd_epi16(_mm_shuffle_epi32(b2, 0xaa), mnp[2]);
            pm[3] = _mm_madd_epi16(_mm_shuffle_epi32(b2, 0xff), mnp[3]);
            const __m128 yd = _mm_set1_ps(yb->d), da = _mm_mul_ps(xd, yd), dm = _mm_mul_ps(xm, yd);
            if (PAIR) {
                UNROLL
                for (int p = 0; p < 4; p++) {
                    a[t] = _mm_fmadd_ps(_mm_cvtepi32_ps(q[p]), da, a[t]);
                    m[t] = _mm_fmadd_ps(_mm_cvtepi32_ps(pm[p]), dm, m[t]);
                }
            } else { /* the four pairs' sums first (exact) */
                __m128i sqa = _mm_add_epi32(_mm_add_epi32(q[0], q[1]), _mm_add_epi32(q[2], q[3]));
                __m128i sma = _mm_add_epi32(_mm_add_epi32(pm[0], pm[1]), _mm_add_epi32(pm[2], pm[3]));
                a[t] = _mm_fmadd_ps(_mm_cvtepi32_ps(sqa), da, a[t]);
                m[t] = _mm_fmadd_ps(_mm_cvtepi32_ps(sma), dm, m[t]);
            }
        }
    }
    UNROLL
    for (int t = 0; t < NT; t++) _mm_storeu_ps(s + t * bs, _mm_sub_ps(a[t], m[t]));
}

/* q6_K (llamacpp_order_ref.h): 4 rows x NT tokens. A row's 6-bit values and per-half scales are
 * unpacked once per super-block for all NT tokens (kquant_avx2.c's one-row kernel says how);
 * each (row, token) pair keeps its own 8 float lanes, one FMA per super-block, and hsum8. */
INLINE void q6_K_tile(int64_t n, float *s, int64_t bs, const uint8_t *x, size_t bx, const uint8_t *y, size_t by,
                      const int NT) {
    typedef hearth_block_q6_K q6_K;
    typedef hearth_block_q8_K q8_K;
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(0x30);
    __m256 acc[4][4]; /* [token][row] */
    UNROLL
    for (int t = 0; t < NT; t++)
        for (int r = 0; r < 4; r++) acc[t][r] = _mm256_setzero_ps();
    const int64_t nb = n / HEARTH_QK_K;
    for (int64_t b = 0; b < nb; b++) {
        hearth_tile_prefetch(x, bx, b, nb);
        for (int r = 0; r < 4; r++) {
            const q6_K *xb = (const q6_K *)(x + (size_t)r * bx) + b;
            __m256i q[8], sc[8]; /* quarter k of half h: [4h + k] */
            UNROLL
            for (int half = 0; half < 2; half++) {
                const uint8_t *ql = xb->ql + 64 * half, *qhp = xb->qh + 32 * half;
                const int8_t *scp = xb->scales + 8 * half;
                __m256i l0 = _mm256_loadu_si256((const __m256i *)ql), l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
                __m256i h = _mm256_loadu_si256((const __m256i *)qhp);
                __m256i *qq = q + 4 * half;
                qq[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(h, 4), m2));
                qq[1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(h, 2), m2));
                qq[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(h, m2));
                qq[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                        _mm256_and_si256(_mm256_srli_epi16(h, 2), m2));
                UNROLL
                for (int k = 0; k < 4; k++) /* elements 0..15 of the quarter use sc[2k], 16..31 sc[2k + 1] */
                    sc[4 * half + k] = _mm256_set_m128i(_mm_set1_epi16(scp[2 * k + 1]), _mm_set1_epi16(scp[2 * k]));
            }
            const float xd = _cvtsh_ss(xb->d);
            const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)xb->scales));
            UNROLL
            for (int t = 0; t < NT; t++) {
                const q8_K *yb = (const q8_K *)(y + (size_t)t * by) + b;
                __m256i sumi = _mm256_setzero_si256();
                UNROLL
                for (int k = 0; k < 8; k++) { /* q * y per s16 pair, q unsigned */
                    const __m256i yk = _mm256_loadu_si256((const __m256i *)(yb->qs + 32 * k));
                    __m256i p = _mm256_maddubs_epi16(q[k], yk);
                    sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, sc[k]));
                }
                /* the -32 offset per lane l: 32 * (sc_2l * bsums_2l + sc_2l+1 * bsums_2l+1) */
                const __m256i bs16 = _mm256_loadu_si256((const __m256i *)yb->bsums);
                sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(_mm256_madd_epi16(bs16, sc16), 5));
                acc[t][r] = _mm256_fmadd_ps(_mm256_set1_ps(yb->d * xd), _mm256_cvtepi32_ps(sumi), acc[t][r]);
            }
        }
    }
    UNROLL
    for (int t = 0; t < NT; t++) _mm_storeu_ps(s + t * bs, hsum8x4(acc[t][0], acc[t][1], acc[t][2], acc[t][3]));
}

/* each 4 rows, nt tokens as passes of at most PASS (the nibble and q8_0 tiles 2, the K-quant
 * tiles 4: 16 registers hold no more) */
#define TILE_FN(name, body, PASS)                                                                           \
    void name(int64_t n, float *s0, int64_t bs, const void *vx, size_t bx, int nr, const void *vy, size_t by, \
              int nt0) {                                                                                     \
        for (int r = 0; r < nr; r += 4) {                                                                    \
            const uint8_t *x = (const uint8_t *)vx + (size_t)r * bx, *y = vy;                                \
            float *s = s0 + r;                                                                               \
            int nt = nt0;                                                                                    \
            for (; nt >= PASS; nt -= PASS, s += PASS * bs, y += PASS * by) body(PASS);                       \
            if (nt == 1) body(1);                                                                            \
            else if (nt == 2) body(PASS > 2 ? 2 : 1);                                                        \
            else if (nt == 3) body(PASS > 3 ? 3 : 1);                                                        \
        }                                                                                                    \
    }
#define Q4_0_BODY(NT) nib_tile(n, s, bs, x, bx, y, by, NT, K4_0)
#define Q4_1_BODY(NT) nib_tile(n, s, bs, x, bx, y, by, NT, K4_1)
#define Q5_0_BODY(NT) nib_tile(n, s, bs, x, bx, y, by, NT, K5_0)
#define Q8_0_BODY(NT) q8_tile(n, s, bs, x, bx, y, by, NT)
TILE_FN(hearth_tile_q4_0_q8_0_avx2, Q4_0_BODY, 2)
TILE_FN(hearth_tile_q4_1_q8_1_avx2, Q4_1_BODY, 2)
TILE_FN(hearth_tile_q5_0_q8_0_avx2, Q5_0_BODY, 2)
TILE_FN(hearth_tile_q8_0_q8_0_avx2, Q8_0_BODY, 2)

#define Q4_K_BODY(NT) q4_K_tile(n, s, bs, x, bx, y, by, NT, 0)
#define Q4_K_GEMM_BODY(NT) q4_K_tile(n, s, bs, x, bx, y, by, NT, 1)
#define Q6_K_BODY(NT) q6_K_tile(n, s, bs, x, bx, y, by, NT)
TILE_FN(hearth_tile_q4_K_q8_K_avx2, Q4_K_BODY, 4)
TILE_FN(hearth_tile_q4_K_q8_K_gemm_avx2, Q4_K_GEMM_BODY, 4)
TILE_FN(hearth_tile_q6_K_q8_K_avx2, Q6_K_BODY, 4)

/* q6_K in llama.cpp's tiled order (hearth_vec_dot_q6_K_q8_K_x86_tiled_ref): 4 rows x NT tokens
 * (up to HEARTH_TILE_NT). Per super-block the 4 rows' 6-bit values and scales are unpacked once
 * onto the stack (a quarter of 32 elements per vector: its low 16 take scale 2j, its high 16
 * scale 2j + 1); then each token's 256 activation bytes stay in registers while the 4 rows are
 * dotted with them: vpmaddubsw, vpmaddwd by the scales, the -32 offset as 32 * (scales .
 * bsums), all exact, so the order of these integer sums is free. One vphaddd tree gathers the
 * 4 rows' block sums S_r into the lanes of a 4-float vector, and the one float chain of each
 * (row, token) pair is the twin's: acc_r = fma((float)S_r * d_r, dy, acc_r). */
typedef struct {
    __m256i q[4][8], sc[4][8], sc16[4]; /* [row][quarter]; sc16: the 16 scales as s16 */
} q6t_rows;

INLINE void q6t_unpack(const uint8_t *x, size_t bx, int64_t b, q6t_rows *u) {
    typedef hearth_block_q6_K q6_K;
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(0x30);
    /* s16 pair j % 4 of a 128-bit lane of scales: its first s16 to the low lane, second to the high */
    static const int8_t pick[4][32] = {
        {0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3},
        {4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7},
        {8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9,
         10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11},
        {12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13,
         14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15},
    };
    UNROLL
    for (int r = 0; r < 4; r++) {
        const q6_K *xb = (const q6_K *)(x + (size_t)r * bx) + b;
        UNROLL
        for (int half = 0; half < 2; half++) { /* quarter k of half h: elements 128h + 32k .. + 31 */
            const uint8_t *ql = xb->ql + 64 * half, *qhp = xb->qh + 32 * half;
            __m256i l0 = _mm256_loadu_si256((const __m256i *)ql), l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
            __m256i h = _mm256_loadu_si256((const __m256i *)qhp);
            __m256i *qq = u->q[r] + 4 * half;
            qq[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(h, 4), m2));
            qq[1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(h, 2), m2));
            qq[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(h, m2));
            qq[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                    _mm256_and_si256(_mm256_srli_epi16(h, 2), m2));
        }
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)xb->scales));
        const __m256i lo = _mm256_broadcastsi128_si256(_mm256_castsi256_si128(sc16));
        const __m256i hi = _mm256_broadcastsi128_si256(_mm256_extracti128_si256(sc16, 1));
        u->sc16[r] = sc16;
        UNROLL
        for (int j = 0; j < 8; j++)
            u->sc[r][j] = _mm256_shuffle_epi8(j < 4 ? lo : hi, _mm256_loadu_si256((const __m256i *)pick[j % 4]));
    }
}

INLINE void q6_K_tiled_tile(int64_t n, float *s, int64_t bs, const uint8_t *x, size_t bx, const uint8_t *y, size_t by,
                            const int NT) {
    typedef hearth_block_q6_K q6_K;
    typedef hearth_block_q8_K q8_K;
    __m128 acc[HEARTH_TILE_NT]; /* [token], lane r */
    UNROLL
    for (int t = 0; t < NT; t++) acc[t] = _mm_setzero_ps();
    const int64_t nb = n / HEARTH_QK_K;
    q6t_rows u;
    for (int64_t b = 0; b < nb; b++) {
        hearth_tile_prefetch(x, bx, b, nb);
        q6t_unpack(x, bx, b, &u);
        const size_t dof = (size_t)b * sizeof(q6_K) + offsetof(q6_K, d);
        uint16_t d16[4];
        for (int r = 0; r < 4; r++) memcpy(&d16[r], x + (size_t)r * bx + dof, 2);
        const __m128 xd = _mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)d16));
        for (int t = 0; t < NT; t++) {
            const q8_K *yb = (const q8_K *)(y + (size_t)t * by) + b;
            __m256i yq[8];
            UNROLL
            for (int j = 0; j < 8; j++) yq[j] = _mm256_loadu_si256((const __m256i *)(yb->qs + 32 * j));
            const __m256i bs16 = _mm256_loadu_si256((const __m256i *)yb->bsums);
            __m256i sum[4];
            UNROLL
            for (int r = 0; r < 4; r++) {
                /* 32 * (scales . bsums) first, then the scaled q * y pairs (q unsigned) */
                __m256i v = _mm256_sub_epi32(_mm256_setzero_si256(),
                                             _mm256_slli_epi32(_mm256_madd_epi16(bs16, u.sc16[r]), 5));
                UNROLL
                for (int j = 0; j < 8; j++)
                    v = _mm256_add_epi32(v, _mm256_madd_epi16(_mm256_maddubs_epi16(u.q[r][j], yq[j]), u.sc[r][j]));
                sum[r] = v;
            }
            /* [S_0, S_1, S_2, S_3]: hadd pairs, then the two 128-bit halves */
            const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(sum[0], sum[1]), _mm256_hadd_epi32(sum[2], sum[3]));
            const __m128i sr = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
            acc[t] = _mm_fmadd_ps(_mm_mul_ps(_mm_cvtepi32_ps(sr), xd), _mm_set1_ps(yb->d), acc[t]);
        }
    }
    UNROLL
    for (int t = 0; t < NT; t++) _mm_storeu_ps(s + t * bs, acc[t]);
}

void hearth_tile_q6_K_q8_K_tiled_avx2(int64_t n, float *s0, int64_t bs, const void *vx, size_t bx, int nr,
                                      const void *vy, size_t by, int nt) {
    for (int r = 0; r < nr; r += 4) {
        const uint8_t *x = (const uint8_t *)vx + (size_t)r * bx, *y = vy;
        float *s = s0 + r;
        switch (nt) {
        case 1: q6_K_tiled_tile(n, s, bs, x, bx, y, by, 1); break;
        case 2: q6_K_tiled_tile(n, s, bs, x, bx, y, by, 2); break;
        case 3: q6_K_tiled_tile(n, s, bs, x, bx, y, by, 3); break;
        case 4: q6_K_tiled_tile(n, s, bs, x, bx, y, by, 4); break;
        case 5: q6_K_tiled_tile(n, s, bs, x, bx, y, by, 5); break;
        case 6: q6_K_tiled_tile(n, s, bs, x, bx, y, by, 6); break;
        case 7: q6_K_tiled_tile(n, s, bs, x, bx, y, by, 7); break;
        default: q6_K_tiled_tile(n, s, bs, x, bx, y, by, 8); break;
        }
    }
}
