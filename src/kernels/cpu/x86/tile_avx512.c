/*
 * tile_avx512.c - AVX-512 VNNI block-dot tiles (tile_x86.h): 4 weight rows at a time x nt
 * tokens, each (row, token) pair equal to quant_avx512.c's one-row dot bit for bit. A tile runs
 * up to 8 tokens in one pass (a whole token tile of hearth_matmul), so each weight block is
 * unpacked once for 8 tokens; q8_0 / q4_0 / q5_0 prepare a full token tile's activations once
 * for all the 4-row groups of a call (sgn_prep).
 *
 * q8_0: a 512-bit vector holds two rows' 32 bytes (a 256-bit half each = the reference's 8
 * lanes); the signed x signed product is vpdpbusd of (y + 128) as unsigned with x, started
 * from -128 * (sum of x's bytes), which is exact and equals the reference's integer sums. The
 * rows' scales d_r come from one vcvtph2ps of the 4 rows' first 4 bytes, spread to the two
 * halves once per block; a token's d_y is one broadcast and its products d_r * d_y two
 * multiplies.
 * q4_0 / q5_0: the same two-rows-per-vector layout, once the nibbles are in it (a 256-bit half
 * = the row's low-nibble elements 0..15 then its high ones 16..31, in element order); the
 * offset (8, 16) comes out of the weights once per block, q5_0's clear fifth bits subtracting
 * 16 under a 64-bit byte mask that is just two rows' qh words side by side; then as q8_0.
 * q4_1: one 512-bit vector holds the 16 nibble bytes of the 4 rows (a 128-bit lane per row),
 * masked / shifted into low and high elements and dotted (unsigned) with the token's
 * activation half broadcast to the 4 lanes: 16 s32 lanes = 4 rows x the reference's 4 lanes of
 * that half; the minimum chains fma(m_r, s_y, summs_r) run in the odd lanes of an 8-float
 * vector whose even lanes give the scales.
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
#define UNROLL _Pragma("GCC unroll 8") /* the per-token and per-row arrays stay in registers */

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

/* The reference's hsum8 (llamacpp_order_ref.h: ((a0+a4) + (a2+a6)) + ((a1+a5) + (a3+a7))) of 4 rows
 * at once, from lo / hi vectors holding the rows' lanes 0..3 / 4..7 in 128-bit lane r:
 * B = lo + hi, then (B0 + B2) + (B1 + B3) in each 128-bit lane; the 4 results are returned in
 * row order. Each row's adds are those of the tree, in its order. */
INLINE __m128 hsum8x4_lohi(__m512 lo, __m512 hi) {
    __m512 b = _mm512_add_ps(lo, hi);
    b = _mm512_add_ps(b, _mm512_permute_ps(b, _MM_SHUFFLE(1, 0, 3, 2)));
    b = _mm512_add_ps(b, _mm512_permute_ps(b, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm512_castps512_ps128(_mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                                          0, 0, 0), b));
}

/* The same from two vectors of two rows each, a row's 8 lanes consecutive (a 256-bit half). */
INLINE __m128 hsum8x4(__m512 x01, __m512 x23) {
    return hsum8x4_lohi(_mm512_shuffle_f32x4(x01, x23, _MM_SHUFFLE(2, 0, 2, 0)),
                        _mm512_shuffle_f32x4(x01, x23, _MM_SHUFFLE(3, 1, 3, 1)));
}

INLINE __m512i bcast16(const int8_t *p) { return _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)p)); }

/* q4_1: NT tokens. One 512-bit vector holds the 16 nibble bytes of the 4 rows (a 128-bit lane per
 * row); masking gives the low-nibble elements, a shift the high ones, and each is dotted by
 * vpdpbusd with the token's activation half broadcast to the 4 lanes: 16 s32 lanes = 4 rows x
 * the reference's 4 lanes of that half (lo and hi accumulators, tile_x86.h). The minimum chains
 * fma(m_r, s_y, summs_r) run in the odd lanes of an 8-float vector per token. */
INLINE void q4_1_tile(int64_t n, float *s, int64_t bs, const uint8_t *x, size_t bx, const uint8_t *y, size_t by,
                      const int NT) {
    const __m512i m4 = _mm512_set1_epi8(15);
    const __m512i dup = _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6);
    __m512 alo[HEARTH_TILE_NT], ahi[HEARTH_TILE_NT];
    __m256 sm[HEARTH_TILE_NT];
    UNROLL
    for (int t = 0; t < NT; t++) alo[t] = ahi[t] = _mm512_setzero_ps(), sm[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / 32; b++) {
        const uint8_t *xb = x + (size_t)b * sizeof(q4_1);
        hearth_tile_prefetch(x, bx, b, n / 32);
        const __m256 dm = head4(xb, bx); /* d_r in lane 2r, m_r in lane 2r + 1 */
        const __m512i q = rows16(xb + offsetof(q4_1, qs), bx);
        const __m512i lo = _mm512_and_si512(q, m4), hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
        UNROLL
        for (int t = 0; t < NT; t++) {
            const q8_1 *yb = (const q8_1 *)(y + (size_t)t * by) + b;
            const __m256 dys = _mm256_cvtph_ps(_mm_set1_epi32((int)hearth_tile_u32((const uint8_t *)yb)));
            sm[t] = _mm256_fmadd_ps(dm, dys, sm[t]); /* odd lanes: fma(m_r, s_y, summs_r) */
            const __m512 sc = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_mul_ps(dm, dys)));
            const __m512i plo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, bcast16(yb->qs));
            const __m512i phi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), hi, bcast16(yb->qs + 16));
            alo[t] = _mm512_fmadd_ps(sc, _mm512_cvtepi32_ps(plo), alo[t]);
            ahi[t] = _mm512_fmadd_ps(sc, _mm512_cvtepi32_ps(phi), ahi[t]);
        }
    }
    const __m256i odd = _mm256_setr_epi32(1, 3, 5, 7, 1, 3, 5, 7);
    UNROLL
    for (int t = 0; t < NT; t++) /* hsum8 + summs_r */
        _mm_storeu_ps(s + t * bs, _mm_add_ps(hsum8x4_lohi(alo[t], ahi[t]),
                                             _mm256_castps256_ps128(_mm256_permutevar8x32_ps(sm[t], odd))));
}

enum { K4_0, K5_0, K8_0 }; /* the kinds sgn_tile dots as signed bytes */

/* HEARTH_TILE_NT tokens' q8_0 activations as sgn_tile reads them, prepared once for all the
 * 4-row groups of a call: per block and token, the 32 bytes + 128 (unsigned) and d_y as a
 * float, so a row group's token step is two loads instead of five instructions. */
enum { PREP_BLOCKS = 128 }; /* rows of up to 4096 elements: 36 KB of stack */
typedef struct {
    uint8_t yu[PREP_BLOCKS][HEARTH_TILE_NT][32];
    float   dy[PREP_BLOCKS][HEARTH_TILE_NT];
} sgn_prep;

static void sgn_prepare(int64_t nb, const uint8_t *y, size_t by, sgn_prep *pp) {
    const __m256i c128 = _mm256_set1_epi8((char)0x80);
    for (int64_t b = 0; b < nb; b++)
        for (int t = 0; t < HEARTH_TILE_NT; t++) {
            const q8_0 *yb = (const q8_0 *)(y + (size_t)t * by) + b;
            _mm256_store_si256((__m256i *)pp->yu[b][t],
                               _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)yb->qs), c128));
            pp->dy[b][t] = _cvtsh_ss(yb->d);
        }
}

/* q8_0, q4_0 or q5_0 (KIND): NT tokens, two rows per 512-bit vector (a 256-bit half each holds a
 * row's 32 elements in order, so its 8 s32 lanes are the reference's 8 lanes). The nibble
 * kinds get there by a permute of their low and high nibbles, and become signed (q - 8,
 * q - 16) once per block, q5_0's clear fifth bits subtracting 16 under a byte mask read
 * straight from the rows' qh. */
INLINE void sgn_tile(int64_t n, float *s, int64_t bs, const uint8_t *x, size_t bx, const uint8_t *y, size_t by,
                     const int NT, const int KIND, const sgn_prep *pp) {
    const size_t xbs = KIND == K4_0 ? sizeof(q4_0) : KIND == K5_0 ? sizeof(q5_0) : sizeof(q8_0);
    const size_t qso = KIND == K4_0 ? offsetof(q4_0, qs) : KIND == K5_0 ? offsetof(q5_0, qs) : offsetof(q8_0, qs);
    const __m512i m4 = _mm512_set1_epi8(15), c16 = _mm512_set1_epi8(16), c8 = _mm512_set1_epi8(8);
    const __m512i c128 = _mm512_set1_epi8((char)0x80);
    /* rows16's 128-bit lanes of the low (0..7) and high (8..15) nibbles -> [lo_r, hi_r, lo_r+1, hi_r+1] */
    const __m512i i01 = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
    const __m512i i23 = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
    const __m512i dup01 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2);
    const __m512i dup23 = _mm512_setr_epi32(4, 4, 4, 4, 4, 4, 4, 4, 6, 6, 6, 6, 6, 6, 6, 6);
    __m512 a01[HEARTH_TILE_NT], a23[HEARTH_TILE_NT];
    UNROLL
    for (int t = 0; t < NT; t++) a01[t] = a23[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < n / 32; b++) {
        const uint8_t *xb = x + (size_t)b * xbs;
        hearth_tile_prefetch(x, bx, b, n / 32);
        const __m512 d = _mm512_castps256_ps512(head4(xb, bx)); /* d_r in lane 2r */
        const __m512 d01 = _mm512_permutexvar_ps(dup01, d), d23 = _mm512_permutexvar_ps(dup23, d);
        __m512i w01, w23;
        if (KIND == K8_0) {
            w01 = rows32(xb + qso, bx);
            w23 = rows32(xb + qso + 2 * bx, bx);
        } else {
            const __m512i q = rows16(xb + qso, bx);
            const __m512i lo = _mm512_and_si512(q, m4), hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
            w01 = _mm512_permutex2var_epi64(lo, i01, hi);
            w23 = _mm512_permutex2var_epi64(lo, i23, hi);
        }
        if (KIND == K5_0) { /* byte 32r + e: element e of row r, fifth bit e of its qh */
            const uint8_t *qh = xb + offsetof(q5_0, qh);
            const __mmask64 k01 = _cvtu64_mask64(~((uint64_t)hearth_tile_u32(qh) |
                                                   (uint64_t)hearth_tile_u32(qh + bx) << 32));
            const __mmask64 k23 = _cvtu64_mask64(~((uint64_t)hearth_tile_u32(qh + 2 * bx) |
                                                   (uint64_t)hearth_tile_u32(qh + 3 * bx) << 32));
            w01 = _mm512_mask_sub_epi8(w01, k01, w01, c16);
            w23 = _mm512_mask_sub_epi8(w23, k23, w23, c16);
        } else if (KIND == K4_0) {
            w01 = _mm512_sub_epi8(w01, c8);
            w23 = _mm512_sub_epi8(w23, c8);
        }
        /* sum w y = sum (y + 128) w - 128 sum w: start vpdpbusd from -128 sum w */
        const __m512i o01 = neg_dot(c128, w01), o23 = neg_dot(c128, w23);
        UNROLL
        for (int t = 0; t < NT; t++) {
            __m512 dy;
            __m512i yu; /* y + 128 */
            if (pp) { /* prepared (NT == HEARTH_TILE_NT) */
                dy = _mm512_set1_ps(pp->dy[b][t]);
                yu = _mm512_broadcast_i64x4(_mm256_load_si256((const __m256i *)pp->yu[b][t]));
            } else {
                const q8_0 *yb = (const q8_0 *)(y + (size_t)t * by) + b;
                dy = _mm512_cvtph_ps(_mm256_set1_epi16((short)yb->d));
                yu = _mm512_xor_si512(_mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)yb->qs)), c128);
            }
            const __m512 f01 = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(o01, yu, w01));
            const __m512 f23 = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(o23, yu, w23));
            a01[t] = _mm512_fmadd_ps(_mm512_mul_ps(d01, dy), f01, a01[t]);
            a23[t] = _mm512_fmadd_ps(_mm512_mul_ps(d23, dy), f23, a23[t]);
        }
    }
    UNROLL
    for (int t = 0; t < NT; t++) _mm_storeu_ps(s + t * bs, hsum8x4(a01[t], a23[t]));
}

/* The first two levels of a tree that sums each of v[0..3] (s32): 128-bit lane g of the result
 * holds 4 partial sums of v[g]. */
INLINE __m512i partial4(const __m512i v[4]) {
    __m512i c = _mm512_add_epi32(_mm512_shuffle_i64x2(v[0], v[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm512_shuffle_i64x2(v[0], v[1], _MM_SHUFFLE(3, 2, 3, 2)));
    __m512i d = _mm512_add_epi32(_mm512_shuffle_i64x2(v[2], v[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm512_shuffle_i64x2(v[2], v[3], _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm512_add_epi32(_mm512_shuffle_i64x2(c, d, _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_i64x2(c, d, _MM_SHUFFLE(3, 1, 3, 1)));
}

/* The last level for 4 of partial4's results at once: lane 4g + r = the sum of e[r]'s lane g. */
INLINE __m512i finish4(const __m512i e[4]) {
    __m512i s01 = _mm512_add_epi32(_mm512_unpacklo_epi32(e[0], e[1]), _mm512_unpackhi_epi32(e[0], e[1]));
    __m512i s23 = _mm512_add_epi32(_mm512_unpacklo_epi32(e[2], e[3]), _mm512_unpackhi_epi32(e[2], e[3]));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23), _mm512_unpackhi_epi64(s01, s23));
}

/* 128-bit lane g of v (each case an immediate: -O0 builds do not fold a constant argument) */
INLINE __m128 lane4(__m512 v, const int g) {
    switch (g) {
    case 0: return _mm512_castps512_ps128(v);
    case 1: return _mm512_extractf32x4_ps(v, 1);
    case 2: return _mm512_extractf32x4_ps(v, 2);
    default: return _mm512_extractf32x4_ps(v, 3);
    }
}

/* out[k] lane j = v[j] lane k (128-bit lanes of 4 vectors, a 4 x 4 transpose) */
INLINE void transpose4_ps(const __m512 v[4], __m512 out[4]) {
    const __m512 a = _mm512_shuffle_f32x4(v[0], v[1], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512 b = _mm512_shuffle_f32x4(v[0], v[1], _MM_SHUFFLE(3, 2, 3, 2));
    const __m512 c = _mm512_shuffle_f32x4(v[2], v[3], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512 d = _mm512_shuffle_f32x4(v[2], v[3], _MM_SHUFFLE(3, 2, 3, 2));
    out[0] = _mm512_shuffle_f32x4(a, c, _MM_SHUFFLE(2, 0, 2, 0));
    out[1] = _mm512_shuffle_f32x4(a, c, _MM_SHUFFLE(3, 1, 3, 1));
    out[2] = _mm512_shuffle_f32x4(b, d, _MM_SHUFFLE(2, 0, 2, 0));
    out[3] = _mm512_shuffle_f32x4(b, d, _MM_SHUFFLE(3, 1, 3, 1));
}

/* q4_K's activations as its tile reads them, prepared once per call for all its 4-row groups
 * (a full token tile, rows of up to Q4K_PREP_BLOCKS super-blocks): each token's 256 bytes
 * transposed into pair-lane order and its paired bsums. */
enum { Q4K_PREP_BLOCKS = 32 }; /* rows of up to 8192 elements: 68 KB of stack */
typedef struct {
    __m512i yq[Q4K_PREP_BLOCKS][HEARTH_TILE_NT][4];
    __m128i b2[Q4K_PREP_BLOCKS][HEARTH_TILE_NT];
} q4k_prep;

/* yq[k] lane j = lane k of the token's elements 64j .. 64j + 63 (pair j) */
INLINE void q4k_act(const hearth_block_q8_K *yb, __m512i yq[4]) {
    const __m512i l0 = _mm512_loadu_si512(yb->qs), l1 = _mm512_loadu_si512(yb->qs + 64);
    const __m512i l2 = _mm512_loadu_si512(yb->qs + 128), l3 = _mm512_loadu_si512(yb->qs + 192);
    const __m512i t01a = _mm512_shuffle_i64x2(l0, l1, _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i t01b = _mm512_shuffle_i64x2(l0, l1, _MM_SHUFFLE(3, 2, 3, 2));
    const __m512i t23a = _mm512_shuffle_i64x2(l2, l3, _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i t23b = _mm512_shuffle_i64x2(l2, l3, _MM_SHUFFLE(3, 2, 3, 2));
    yq[0] = _mm512_shuffle_i64x2(t01a, t23a, _MM_SHUFFLE(2, 0, 2, 0));
    yq[1] = _mm512_shuffle_i64x2(t01a, t23a, _MM_SHUFFLE(3, 1, 3, 1));
    yq[2] = _mm512_shuffle_i64x2(t01b, t23b, _MM_SHUFFLE(2, 0, 2, 0));
    yq[3] = _mm512_shuffle_i64x2(t01b, t23b, _MM_SHUFFLE(3, 1, 3, 1));
}

/* bsums[2i] + bsums[2i + 1], i < 8 */
INLINE __m128i q4k_b2(const hearth_block_q8_K *yb) {
    return _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)yb->bsums),
                          _mm_loadu_si128((const __m128i *)(yb->bsums + 8)));
}

static void q4k_prepare(int64_t nb, const uint8_t *y, size_t by, q4k_prep *pp) {
    for (int64_t b = 0; b < nb; b++)
        for (int t = 0; t < HEARTH_TILE_NT; t++) {
            const hearth_block_q8_K *yb = (const hearth_block_q8_K *)(y + (size_t)t * by) + b;
            q4k_act(yb, pp->yq[b][t]);
            pp->b2[b][t] = q4k_b2(yb);
        }
}

/* q4_K (llamacpp_order_ref.h): 4 rows x NT tokens. Each row's nibbles and scales are unpacked once per
 * super-block for all NT tokens, in a layout where 128-bit lane j of every vector belongs to
 * sub-block pair j (vector k < 2: 16 low nibbles of the pair's bytes 16k..16k+15, sub-block 2j;
 * k >= 2: the high nibbles of the same bytes, sub-block 2j + 1), and each token's 256
 * activation bytes are transposed to match once for the 4 rows (four 128-bit-lane transposes).
 * Then a row's two vpdpbusd chains (vectors 0, 1: the even sub-blocks; 2, 3: the odd ones) leave
 * 4 partial sums of sub-block 2j (2j + 1) in lane j, finish4 gathers each chain's sums of the 4
 * rows into lane order (lane 4p + r), and one vpmulld per chain applies the 4 rows' sub-block
 * scales (lane 4p + r: row r's scale 2p or 2p + 1) before the two are added: the pair's
 * scaled sum. The integer sums are exact, so their order is free. Each (row, token)
 * pair keeps the one-row kernels' two float chains (a: the sums, m: the minimum terms) in a
 * lane of its own: gemv order, one FMA per super-block, the 4 rows of a token in one 4-float
 * vector; PAIR (the gemm order), one FMA per pair of sub-blocks, 4 tokens x 4 rows in one
 * 512-bit vector (lane 4u + r), the 4 tokens' pair sums moved there by a 128-bit-lane
 * transpose. pp: the activations prepared by q4k_prepare (PAIR, a full token tile), or NULL. */
INLINE void q4_K_tile(int64_t n, float *s, int64_t bs, const uint8_t *x, size_t bx, const uint8_t *y, size_t by,
                      const int NT, const int PAIR, const q4k_prep *pp) {
    typedef hearth_block_q4_K q4_K;
    typedef hearth_block_q8_K q8_K;
    const __m512i m4 = _mm512_set1_epi8(15);
    /* lane 4p + r <- lane 4r + p; element p of a 128-bit lane to all of lane p */
    const __m512i trans = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m512i bdup = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m256i even = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    __m128 a[HEARTH_TILE_NT], m[HEARTH_TILE_NT]; /* [token], lane r (gemv order) */
    __m512 a4[HEARTH_TILE_NT / 4], m4v[HEARTH_TILE_NT / 4]; /* [token / 4], lane 4 (token % 4) + r (PAIR) */
    UNROLL
    for (int t = 0; t < NT; t++) a[t] = m[t] = _mm_setzero_ps();
    UNROLL
    for (int g = 0; g < HEARTH_TILE_NT / 4; g++) a4[g] = m4v[g] = _mm512_setzero_ps();
    const int64_t nb = n / HEARTH_QK_K;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *xb0 = x + (size_t)b * sizeof(q4_K);
        hearth_tile_prefetch(x, bx, b, nb);
        /* d_r in lanes 0..3, dmin_r in lanes 4..7 */
        const __m256 dd = _mm256_permutevar8x32_ps(head4(xb0, bx), even);
        const __m128 xd = _mm256_castps256_ps128(dd), xm = _mm256_extractf128_ps(dd, 1);
        __m512i sq4[HEARTH_TILE_NT]; /* [token]: lane 4p + r = pair p's scaled sum of row r */
        __m512i mn = _mm512_setzero_si512(); /* 128-bit lane r: row r's 8 minimums, s16 */
        __m512i scm = _mm512_setzero_si512(); /* 128-bit lane r: row r's 8 scales, s16 */
        __m512i wq[4][4];                     /* [row][k]: nibbles */
        UNROLL
        for (int r = 0; r < 4; r++) {
            const q4_K *xb = (const q4_K *)(xb0 + (size_t)r * bx);
            uint8_t sc[8], mn8[8];
            hearth_k_scales_unpack(xb->scales, sc, mn8);
            /* into 128-bit lane r (a masked broadcast: no immediate, so -O0 builds compile it) */
            mn = _mm512_mask_broadcast_i32x4(mn, (__mmask16)(0xFu << (4 * r)),
                                             _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)mn8)));
            scm = _mm512_mask_broadcast_i32x4(scm, (__mmask16)(0xFu << (4 * r)),
                                              _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)sc)));
            const __m512i lo = _mm512_loadu_si512(xb->qs), hi = _mm512_loadu_si512(xb->qs + 64);
            const __m512i x0 = _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)); /* bytes 32j + 0..15 */
            const __m512i x1 = _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)); /* bytes 32j + 16..31 */
            wq[r][0] = _mm512_and_si512(x0, m4);
            wq[r][1] = _mm512_and_si512(x1, m4);
            wq[r][2] = _mm512_and_si512(_mm512_srli_epi16(x0, 4), m4);
            wq[r][3] = _mm512_and_si512(_mm512_srli_epi16(x1, 4), m4);
        }
        scm = _mm512_permutexvar_epi32(trans, scm); /* lane 4p + r: row r's scales 2p, 2p + 1 */
        const __m512i sce = _mm512_and_si512(scm, _mm512_set1_epi32(0xffff)), sco = _mm512_srli_epi32(scm, 16);
        UNROLL
        for (int t = 0; t < NT; t++) {
            const q8_K *yb = (const q8_K *)(y + (size_t)t * by) + b;
            __m512i yq[4];
            if (pp) {
                UNROLL
                for (int k = 0; k < 4; k++) yq[k] = _mm512_load_si512(&pp->yq[b][t][k]);
            } else {
                q4k_act(yb, yq);
            }
            __m512i ee[4], eo[4]; /* [row]: lane j = 4 partial sums of sub-block 2j / 2j + 1 */
            UNROLL
            for (int r = 0; r < 4; r++) {
                ee[r] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), wq[r][0], yq[0]), wq[r][1], yq[1]);
                eo[r] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), wq[r][2], yq[2]), wq[r][3], yq[3]);
            }
            /* lane 4p + r: pair p's scaled sum of row r */
            sq4[t] = _mm512_add_epi32(_mm512_mullo_epi32(finish4(ee), sce), _mm512_mullo_epi32(finish4(eo), sco));
        }
        mn = _mm512_permutexvar_epi32(trans, mn); /* lane 4p + r: row r's minimums 2p, 2p + 1 */
        if (PAIR) { /* 4 tokens at a time: lane 4u + r of a vector = (row r, token 4g + u) */
            const __m512 xd16 = _mm512_broadcast_f32x4(xd), xm16 = _mm512_broadcast_f32x4(xm);
            UNROLL
            for (int g = 0; g < (NT + 3) / 4; g++) {
                __m512 fq[4], fm[4], q[4], mq[4];
                float yd[4];
                UNROLL
                for (int u = 0; u < 4; u++) {
                    const int t = 4 * g + u;
                    if (t >= NT) { /* no token: zeros, never stored */
                        fq[u] = fm[u] = _mm512_setzero_ps();
                        yd[u] = 0.0f;
                        continue;
                    }
                    const q8_K *yb = (const q8_K *)(y + (size_t)t * by) + b;
                    const __m128i b2 = pp ? pp->b2[b][t] : q4k_b2(yb);
                    fq[u] = _mm512_cvtepi32_ps(sq4[t]);
                    fm[u] = _mm512_cvtepi32_ps(
                        _mm512_madd_epi16(_mm512_permutexvar_epi32(bdup, _mm512_castsi128_si512(b2)), mn));
                    yd[u] = yb->d;
                }
                transpose4_ps(fq, q); /* q[p] lane 4u + r: fq[u] lane 4p + r */
                transpose4_ps(fm, mq);
                const __m128 yd4 = _mm_setr_ps(yd[0], yd[1], yd[2], yd[3]);
                const __m512 yd16 = _mm512_permutexvar_ps(bdup, _mm512_castps128_ps512(yd4)); /* lane 4u + r: yd[u] */
                const __m512 da = _mm512_mul_ps(xd16, yd16), dm = _mm512_mul_ps(xm16, yd16);
                UNROLL
                for (int p = 0; p < 4; p++) {
                    a4[g] = _mm512_fmadd_ps(q[p], da, a4[g]);
                    m4v[g] = _mm512_fmadd_ps(mq[p], dm, m4v[g]);
                }
            }
            continue;
        }
        UNROLL
        for (int t = 0; t < NT; t++) {
            const q8_K *yb = (const q8_K *)(y + (size_t)t * by) + b;
            /* bsums[2i] + bsums[2i + 1], i < 8; lane 4p + r: the pair p of them */
            const __m128i b2 = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)yb->bsums),
                                              _mm_loadu_si128((const __m128i *)(yb->bsums + 8)));
            __m512i sq = sq4[t];
            __m512i sm = _mm512_madd_epi16(_mm512_permutexvar_epi32(bdup, _mm512_castsi128_si512(b2)), mn);
            const __m128 yd = _mm_set1_ps(yb->d), da = _mm_mul_ps(xd, yd), dm = _mm_mul_ps(xm, yd);
            /* the four pairs' sums first (exact) */
            sq = _mm512_add_epi32(sq, _mm512_shuffle_i64x2(sq, sq, _MM_SHUFFLE(1, 0, 3, 2)));
            sm = _mm512_add_epi32(sm, _mm512_shuffle_i64x2(sm, sm, _MM_SHUFFLE(1, 0, 3, 2)));
            sq = _mm512_add_epi32(sq, _mm512_shuffle_i64x2(sq, sq, _MM_SHUFFLE(2, 3, 0, 1)));
            sm = _mm512_add_epi32(sm, _mm512_shuffle_i64x2(sm, sm, _MM_SHUFFLE(2, 3, 0, 1)));
            a[t] = _mm_fmadd_ps(_mm_cvtepi32_ps(_mm512_castsi512_si128(sq)), da, a[t]);
            m[t] = _mm_fmadd_ps(_mm_cvtepi32_ps(_mm512_castsi512_si128(sm)), dm, m[t]);
        }
    }
    UNROLL
    for (int t = 0; t < NT; t++)
        _mm_storeu_ps(s + t * bs, PAIR ? lane4(_mm512_sub_ps(a4[t / 4], m4v[t / 4]), t % 4) : _mm_sub_ps(a[t], m[t]));
}

/* q6_K (llamacpp_order_ref.h): 4 rows x NT tokens. Each row's 6-bit values and per-lane scales are
 * unpacked once per super-block for all NT tokens (kquant_avx512.c's one-row kernel says how);
 * each (row, token) pair keeps its own 8 float lanes, one FMA per super-block, and hsum8. */
INLINE void q6_K_tile(int64_t n, float *s, int64_t bs, const uint8_t *x, size_t bx, const uint8_t *y, size_t by,
                      const int NT) {
    typedef hearth_block_q6_K q6_K;
    typedef hearth_block_q8_K q8_K;
    const __m512i m4 = _mm512_set1_epi8(15), m2 = _mm512_set1_epi8(0x30);
    /* s16 lane k of a 64-element chunk uses scale k / 8 of its 4; the high-2-bit shifts */
    const __m512i grp = _mm512_set_epi16(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0,
                                         0, 0, 0, 0, 0);
    const __m512i shl_a = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    const __m512i shr_b = _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1);
    __m256 acc[HEARTH_TILE_NT][4]; /* [token][row] */
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
                    /* q * y per s16 pair, q unsigned (the one-row kernel says how the offset goes) */
                    __m512i pa = _mm512_maddubs_epi16(qa[half], ya);
                    __m512i pb = _mm512_maddubs_epi16(qb[half], yv);
                    sumi = _mm512_dpwssd_epi32(sumi, pa, sa[half]);
                    sumi = _mm512_dpwssd_epi32(sumi, pb, sb[half]);
                }
                __m256i lanes = _mm256_add_epi32(_mm512_castsi512_si256(sumi), _mm512_extracti64x4_epi64(sumi, 1));
                const __m256i bs16 = _mm256_loadu_si256((const __m256i *)yb->bsums);
                lanes = _mm256_sub_epi32(lanes, _mm256_slli_epi32(_mm256_madd_epi16(bs16, sc), 5));
                acc[t][r] = _mm256_fmadd_ps(_mm256_set1_ps(yb->d * xd), _mm256_cvtepi32_ps(lanes), acc[t][r]);
            }
        }
    }
    UNROLL
    for (int t = 0; t < NT; t++)
        _mm_storeu_ps(s + t * bs, hsum8x4(_mm512_insertf32x8(_mm512_castps256_ps512(acc[t][0]), acc[t][1], 1),
                                          _mm512_insertf32x8(_mm512_castps256_ps512(acc[t][2]), acc[t][3], 1)));
}

/* each 4 rows, all nt (<= 8) tokens in one pass; PRE runs first and may do the whole call */
#define TILE_FN(name, body, PRE)                                                                            \
    void name(int64_t n, float *s0, int64_t bs, const void *vx, size_t bx, int nr, const void *vy, size_t by, \
              int nt) {                                                                                      \
        PRE                                                                                                  \
        for (int r = 0; r < nr; r += 4) {                                                                    \
            const uint8_t *x = (const uint8_t *)vx + (size_t)r * bx, *y = vy;                                \
            float *s = s0 + r;                                                                               \
            switch (nt) {                                                                                    \
            case 1: body(1); break;                                                                          \
            case 2: body(2); break;                                                                          \
            case 3: body(3); break;                                                                          \
            case 4: body(4); break;                                                                          \
            case 5: body(5); break;                                                                          \
            case 6: body(6); break;                                                                          \
            case 7: body(7); break;                                                                          \
            default: body(8); break;                                                                         \
            }                                                                                                \
        }                                                                                                    \
    }
/* several row groups and a full token tile: the activations prepared once (sgn_prep) */
#define SGN_PREP(KIND)                                                                                      \
    if (nr > 4 && nt == HEARTH_TILE_NT && n / 32 <= PREP_BLOCKS) {                                           \
        _Alignas(64) sgn_prep pp;                                                                            \
        sgn_prepare(n / 32, vy, by, &pp);                                                                    \
        for (int r = 0; r < nr; r += 4)                                                                      \
            sgn_tile(n, s0 + r, bs, (const uint8_t *)vx + (size_t)r * bx, bx, NULL, 0, HEARTH_TILE_NT, KIND,  \
                     &pp);                                                                                   \
        return;                                                                                              \
    }
#define Q4_0_BODY(NT) sgn_tile(n, s, bs, x, bx, y, by, NT, K4_0, NULL)
#define Q4_1_BODY(NT) q4_1_tile(n, s, bs, x, bx, y, by, NT)
#define Q5_0_BODY(NT) sgn_tile(n, s, bs, x, bx, y, by, NT, K5_0, NULL)
#define Q8_0_BODY(NT) sgn_tile(n, s, bs, x, bx, y, by, NT, K8_0, NULL)
#define Q6_K_BODY(NT) q6_K_tile(n, s, bs, x, bx, y, by, NT)
#define Q4_K_BODY(NT) q4_K_tile(n, s, bs, x, bx, y, by, NT, 0, NULL)
#define Q4_K_GEMM_BODY(NT) q4_K_tile(n, s, bs, x, bx, y, by, NT, 1, NULL)
/* several row groups and a full token tile: the activations prepared once (q4k_prep) */
#define Q4K_PREP                                                                                             \
    if (nr > 4 && nt == HEARTH_TILE_NT && n / HEARTH_QK_K <= Q4K_PREP_BLOCKS) {                              \
        _Alignas(64) q4k_prep pp;                                                                            \
        q4k_prepare(n / HEARTH_QK_K, vy, by, &pp);                                                           \
        for (int r = 0; r < nr; r += 4)                                                                      \
            q4_K_tile(n, s0 + r, bs, (const uint8_t *)vx + (size_t)r * bx, bx, vy, by, HEARTH_TILE_NT, 1, &pp); \
        return;                                                                                              \
    }
TILE_FN(hearth_tile_q4_0_q8_0_avx512, Q4_0_BODY, SGN_PREP(K4_0))
TILE_FN(hearth_tile_q4_1_q8_1_avx512, Q4_1_BODY, )
TILE_FN(hearth_tile_q5_0_q8_0_avx512, Q5_0_BODY, SGN_PREP(K5_0))
TILE_FN(hearth_tile_q8_0_q8_0_avx512, Q8_0_BODY, SGN_PREP(K8_0))
TILE_FN(hearth_tile_q4_K_q8_K_avx512, Q4_K_BODY, )
TILE_FN(hearth_tile_q6_K_q8_K_avx512, Q6_K_BODY, )
TILE_FN(hearth_tile_q4_K_q8_K_gemm_avx512, Q4_K_GEMM_BODY, Q4K_PREP)

/* q6_K in llama.cpp's tiled order (hearth_vec_dot_q6_K_q8_K_x86_tiled_ref): 4 rows x NT tokens.
 * Per super-block the 4 rows' 6-bit values are unpacked once onto the stack as q6_K_tile does
 * (vector v holds elements 64v .. 64v + 63, its 128-bit lane g the 16 elements of scale 4v + g,
 * whose s16 it is dotted with by vpdpwssd); then each token's 256 activation bytes stay in
 * registers while the 4 rows are dotted with them, the -32 offset started from as
 * -32 * (scales . bsums). All exact, so the order of the integer sums is free; partial4 and
 * two in-lane levels leave row r's block sum S_r in lane r of a 4-float vector, where the one
 * float chain of each (row, token) pair is the twin's: acc_r = fma((float)S_r * d_r, dy, acc_r). */
typedef struct {
    __m512i q[4][4], sc[4][4]; /* [row][v] */
    __m256i m32[4];            /* [row]: -32 * the 16 scales, s16 */
} q6t_rows;

INLINE void q6t_unpack(const uint8_t *x, size_t bx, int64_t b, q6t_rows *u) {
    typedef hearth_block_q6_K q6_K;
    const __m512i m4 = _mm512_set1_epi8(15), m2 = _mm512_set1_epi8(0x30);
    const __m512i grp = _mm512_set_epi16(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0,
                                         0, 0, 0, 0, 0);
    const __m512i shl_a = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    const __m512i shr_b = _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1);
    UNROLL
    for (int r = 0; r < 4; r++) {
        const q6_K *xb = (const q6_K *)(x + (size_t)r * bx) + b;
        const __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)xb->scales));
        const __m512i sc16 = _mm512_inserti64x4(_mm512_setzero_si512(), sc, 0);
        u->m32[r] = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc, 5));
        UNROLL
        for (int half = 0; half < 2; half++) { /* v = 2 half: quarters 0, 1 of the half; v = 2 half + 1: 2, 3 */
            __m512i l = _mm512_loadu_si512(xb->ql + 64 * half);
            __m512i h = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(xb->qh + 32 * half)));
            u->q[r][2 * half] =
                _mm512_or_si512(_mm512_and_si512(l, m4), _mm512_and_si512(_mm512_sllv_epi16(h, shl_a), m2));
            u->q[r][2 * half + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
                                                    _mm512_and_si512(_mm512_srlv_epi16(h, shr_b), m2));
            u->sc[r][2 * half] =
                _mm512_permutexvar_epi16(_mm512_add_epi16(grp, _mm512_set1_epi16((short)(8 * half))), sc16);
            u->sc[r][2 * half + 1] =
                _mm512_permutexvar_epi16(_mm512_add_epi16(grp, _mm512_set1_epi16((short)(8 * half + 4))), sc16);
        }
    }
}

INLINE void q6_K_tiled_tile(int64_t n, float *s, int64_t bs, const uint8_t *x, size_t bx, const uint8_t *y, size_t by,
                            const int NT) {
    typedef hearth_block_q6_K q6_K;
    typedef hearth_block_q8_K q8_K;
    const __m512i first = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
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
            __m512i yq[4];
            UNROLL
            for (int v = 0; v < 4; v++) yq[v] = _mm512_loadu_si512(yb->qs + 64 * v);
            const __m256i bs16 = _mm256_loadu_si256((const __m256i *)yb->bsums);
            __m512i sum[4];
            UNROLL
            for (int r = 0; r < 4; r++) {
                __m512i v = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_madd_epi16(bs16, u.m32[r]), 0);
                UNROLL
                for (int j = 0; j < 4; j++)
                    v = _mm512_dpwssd_epi32(v, _mm512_maddubs_epi16(u.q[r][j], yq[j]), u.sc[r][j]);
                sum[r] = v;
            }
            __m512i p = partial4(sum); /* 128-bit lane r: 4 partial sums of row r */
            p = _mm512_add_epi32(p, _mm512_shuffle_epi32(p, (_MM_PERM_ENUM)0x4e));
            p = _mm512_add_epi32(p, _mm512_shuffle_epi32(p, (_MM_PERM_ENUM)0xb1));
            const __m128i sr = _mm512_castsi512_si128(_mm512_permutexvar_epi32(first, p));
            acc[t] = _mm_fmadd_ps(_mm_mul_ps(_mm_cvtepi32_ps(sr), xd), _mm_set1_ps(yb->d), acc[t]);
        }
    }
    UNROLL
    for (int t = 0; t < NT; t++) _mm_storeu_ps(s + t * bs, acc[t]);
}
#define Q6_K_TILED_BODY(NT) q6_K_tiled_tile(n, s, bs, x, bx, y, by, NT)
TILE_FN(hearth_tile_q6_K_q8_K_tiled_avx512, Q6_K_TILED_BODY, )
