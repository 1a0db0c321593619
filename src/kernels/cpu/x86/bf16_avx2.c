/*
 * bf16_avx2.c - the AVX2 bf16 tile (bf16_x86.h) in the vdpbf16ps order of
 * kernels/ref/bf16_dp_ref.h, with f32 FMAs: the twin's 16 lanes are two 8-float halves (lo:
 * the chunk's values 0..15, hi: 16..31), and 2 rows x 2 tokens run at a time, their 8
 * accumulators, the 2 rows' odd / even halves and a token's in the 16 ymm registers.
 *
 * As in bf16_avx512.c, a 32-bit pair's odd value is the pair masked to its high half and the
 * even value the pair shifted left by 16; fma(odd, odd) then fma(even, even) per lane. AVX2 has
 * no 16-bit masked load, so a row's last partial chunk is copied into zero-filled buffers.
 */
#include <immintrin.h>
#include <string.h>

#include "kernels/cpu/x86/bf16_x86.h"
#include "kernels/kernels.h"

#define INLINE static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 16")

/* lo + hi are the twin's 16 lanes; summed by halves as the twin does. */
INLINE float hsum16(__m256 lo, __m256 hi) {
    __m256 h8 = _mm256_add_ps(lo, hi);
    __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
    __m128 h2 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
    return _mm_cvtss_f32(_mm_add_ss(h2, _mm_shuffle_ps(h2, h2, 1)));
}

/* One chunk of 32 values at xr[r] and yt[t] of 2 rows x NT (1, 2) tokens into acc[r][t][half]. */
INLINE void chunk(__m256 acc[2][2][2], const uint16_t *const xr[2], const uint16_t *const yt[2], const int NT) {
    const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
    UNROLL
    for (int h = 0; h < 2; h++) {
        __m256 wo[2], we[2];
        UNROLL
        for (int r = 0; r < 2; r++) {
            __m256i w = _mm256_loadu_si256((const __m256i *)(xr[r] + 16 * h));
            wo[r] = _mm256_castsi256_ps(_mm256_and_si256(w, hi));
            we[r] = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
        }
        UNROLL
        for (int t = 0; t < NT; t++) {
            __m256i a = _mm256_loadu_si256((const __m256i *)(yt[t] + 16 * h));
            __m256 ao = _mm256_castsi256_ps(_mm256_and_si256(a, hi));
            __m256 ae = _mm256_castsi256_ps(_mm256_slli_epi32(a, 16));
            UNROLL
            for (int r = 0; r < 2; r++) {
                acc[r][t][h] = _mm256_fmadd_ps(wo[r], ao, acc[r][t][h]);
                acc[r][t][h] = _mm256_fmadd_ps(we[r], ae, acc[r][t][h]);
            }
        }
    }
}

INLINE void tile2(int64_t n, float *s, int64_t bs, const uint8_t *x, size_t bx, const uint8_t *y, size_t by,
                  const int NT) {
    const uint16_t *xr[2], *yt[2];
    __m256 acc[2][2][2];
    UNROLL
    for (int r = 0; r < 2; r++) xr[r] = (const uint16_t *)(x + (size_t)r * bx);
    UNROLL
    for (int t = 0; t < NT; t++) yt[t] = (const uint16_t *)(y + (size_t)t * by);
    UNROLL
    for (int r = 0; r < 2; r++)
        UNROLL
        for (int t = 0; t < 2; t++) acc[r][t][0] = acc[r][t][1] = _mm256_setzero_ps();
    int64_t c = 0;
    for (; c + 32 <= n; c += 32) {
        const uint16_t *xc[2] = {xr[0] + c, xr[1] + c}, *yc[2] = {yt[0] + c, NT > 1 ? yt[1] + c : NULL};
        chunk(acc, xc, yc, NT);
    }
    if (c < n) { /* the last chunk, zero-padded */
        uint16_t xb[2][32], yb[2][32];
        memset(xb, 0, sizeof xb);
        memset(yb, 0, sizeof yb);
        const uint16_t *xc[2] = {xb[0], xb[1]}, *yc[2] = {yb[0], yb[1]};
        for (int r = 0; r < 2; r++) memcpy(xb[r], xr[r] + c, (size_t)(n - c) * sizeof(uint16_t));
        for (int t = 0; t < NT; t++) memcpy(yb[t], yt[t] + c, (size_t)(n - c) * sizeof(uint16_t));
        chunk(acc, xc, yc, NT);
    }
    UNROLL
    for (int t = 0; t < NT; t++)
        UNROLL
        for (int r = 0; r < 2; r++) s[t * bs + r] = hsum16(acc[r][t][0], acc[r][t][1]);
}

void hearth_tile_bf16_dp_avx2(int64_t n, float *s, int64_t bs, const void *vx, size_t bx, int nr, const void *vy,
                              size_t by, int nt) {
    for (int r = 0; r < nr; r += 2)
        for (int t = 0; t < nt; t += 2) {
            const uint8_t *x = (const uint8_t *)vx + (size_t)r * bx, *y = (const uint8_t *)vy + (size_t)t * by;
            if (nt - t >= 2) tile2(n, s + t * bs + r, bs, x, bx, y, by, 2);
            else tile2(n, s + t * bs + r, bs, x, bx, y, by, 1);
        }
}
