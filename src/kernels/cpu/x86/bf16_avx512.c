/*
 * bf16_avx512.c - the AVX-512 bf16 tiles (bf16_x86.h): 4 rows x up to 4 tokens per pass in
 * the vdpbf16ps order of kernels/ref/bf16_dp_ref.h, with vdpbf16ps itself or with f32 FMAs.
 *
 * A chunk is 32 bf16 values, one 512-bit load per row and per token; its 32-bit element j
 * holds the pair (2j, 2j+1), the high half being the odd value. The FMA variant splits a
 * vector once into odd values (the pair masked to its high half, already an f32) and even
 * values (the pair shifted left by 16), and runs fma(odd, odd) then fma(even, even) per lane,
 * vdpbf16ps's order. The lanes of each pair are then summed by halves (hsum16).
 */
#include <immintrin.h>

#include "kernels/cpu/x86/bf16_x86.h"
#include "kernels/kernels.h"

#define INLINE static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 16")

/* The lanes summed by halves: (l, l+8), then (l, l+4), (l, l+2), (0, 1): the twin's tree. */
INLINE float hsum16(__m512 v) {
    __m256 h8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
    __m128 h2 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
    return _mm_cvtss_f32(_mm_add_ss(h2, _mm_shuffle_ps(h2, h2, 1)));
}

/* One chunk (32 values, masked by m) of 4 rows x NT tokens into acc. */
INLINE void chunk(__m512 acc[4][4], const uint16_t *const xr[4], const uint16_t *const yt[4], int64_t c,
                  __mmask32 m, const int NT, const int HW) {
    const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
    __m512i w[4];
    UNROLL
    for (int r = 0; r < 4; r++) w[r] = _mm512_maskz_loadu_epi16(m, xr[r] + c);
    if (HW) {
        UNROLL
        for (int t = 0; t < NT; t++) {
            __m512i a = _mm512_maskz_loadu_epi16(m, yt[t] + c);
            UNROLL
            for (int r = 0; r < 4; r++) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], (__m512bh)w[r], (__m512bh)a);
        }
    } else {
        __m512 wo[4], we[4];
        UNROLL
        for (int r = 0; r < 4; r++) {
            wo[r] = _mm512_castsi512_ps(_mm512_and_si512(w[r], hi));
            we[r] = _mm512_castsi512_ps(_mm512_slli_epi32(w[r], 16));
        }
        UNROLL
        for (int t = 0; t < NT; t++) {
            __m512i a = _mm512_maskz_loadu_epi16(m, yt[t] + c);
            __m512 ao = _mm512_castsi512_ps(_mm512_and_si512(a, hi));
            __m512 ae = _mm512_castsi512_ps(_mm512_slli_epi32(a, 16));
            UNROLL
            for (int r = 0; r < 4; r++) {
                acc[r][t] = _mm512_fmadd_ps(wo[r], ao, acc[r][t]);
                acc[r][t] = _mm512_fmadd_ps(we[r], ae, acc[r][t]);
            }
        }
    }
}

/* Rows x .. x + 3 rows (stride bx bytes) x tokens y .. y + NT - 1 (stride by bytes). */
INLINE void tile4(int64_t n, float *s, int64_t bs, const uint8_t *x, size_t bx, const uint8_t *y, size_t by,
                  const int NT, const int HW) {
    const uint16_t *xr[4], *yt[4];
    __m512 acc[4][4];
    UNROLL
    for (int r = 0; r < 4; r++) xr[r] = (const uint16_t *)(x + (size_t)r * bx);
    UNROLL
    for (int t = 0; t < NT; t++) yt[t] = (const uint16_t *)(y + (size_t)t * by);
    UNROLL
    for (int r = 0; r < 4; r++)
        UNROLL
        for (int t = 0; t < NT; t++) acc[r][t] = _mm512_setzero_ps();
    int64_t c = 0;
    for (; c + 32 <= n; c += 32) chunk(acc, xr, yt, c, (__mmask32)~0u, NT, HW);
    if (c < n) chunk(acc, xr, yt, c, (__mmask32)((1u << (n - c)) - 1), NT, HW);
    UNROLL
    for (int t = 0; t < NT; t++)
        UNROLL
        for (int r = 0; r < 4; r++) s[t * bs + r] = hsum16(acc[r][t]);
}

#define TILE(name, HW)                                                                                    \
    void name(int64_t n, float *s, int64_t bs, const void *vx, size_t bx, int nr, const void *vy, size_t by, \
              int nt) {                                                                                   \
        for (int r = 0; r < nr; r += 4)                                                                   \
            for (int t = 0; t < nt; t += 4) {                                                             \
                const uint8_t *x = (const uint8_t *)vx + (size_t)r * bx;                                  \
                const uint8_t *y = (const uint8_t *)vy + (size_t)t * by;                                  \
                float *st = s + t * bs + r;                                                               \
                switch (nt - t) {                                                                         \
                case 1: tile4(n, st, bs, x, bx, y, by, 1, HW); break;                                     \
                case 2: tile4(n, st, bs, x, bx, y, by, 2, HW); break;                                     \
                case 3: tile4(n, st, bs, x, bx, y, by, 3, HW); break;                                     \
                default: tile4(n, st, bs, x, bx, y, by, 4, HW); break;                                    \
                }                                                                                         \
            }                                                                                             \
    }
TILE(hearth_tile_bf16_dp_avx512bf16, 1)
TILE(hearth_tile_bf16_dp_avx512, 0)
