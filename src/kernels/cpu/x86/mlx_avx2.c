/*
 * mlx_avx2.c - AVX2 dots of the MLX affine types with f32 activations (the scalar twin is
 * hearth_vec_dot_<t>_ref in kernels/ref/mlx_ref.c). Eight elements at a time: a 4-bit group of
 * eight is one little-endian u32 word, broadcast and shifted right by 0, 4, ..., 28 per lane;
 * an 8-bit group of eight is eight bytes widened. Each weight is dequantized (q * scale + bias,
 * one FMA) and multiplied into the accumulator (a second FMA), so the result differs from the
 * scalar twin only in float rounding order.
 */
#include <immintrin.h>
#include <string.h>

#include "kernels/cpu/x86/quant_x86.h"
#include "tensor/quant.h"

static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline __m256i q8_of(const uint8_t *q, int bits, int k) {
    if (bits == 4) {
        uint32_t w;
        memcpy(&w, q + 4 * k, 4);
        const __m256i sh = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
        return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)w), sh), _mm256_set1_epi32(15));
    }
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(q + 8 * k)));
}

static void dot(int64_t n, float *s, const uint8_t *x, const float *y, int bits, int g) {
    size_t bsz = HEARTH_MLX_BLOCK_HDR + (size_t)(g * bits / 8);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / g; b++, x += bsz, y += g) {
        float sc, bi;
        memcpy(&sc, x, 4);
        memcpy(&bi, x + 4, 4);
        const __m256 vs = _mm256_set1_ps(sc), vb = _mm256_set1_ps(bi);
        for (int k = 0; k < g / 8; k += 2) {
            __m256 w0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q8_of(x + 8, bits, k)), vs, vb);
            __m256 w1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q8_of(x + 8, bits, k + 1)), vs, vb);
            acc0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(y + 8 * k), acc0);
            acc1 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(y + 8 * k + 8), acc1);
        }
    }
    *s = hsum8(_mm256_add_ps(acc0, acc1));
}

void hearth_vec_dot_mlx4_g32_avx2(int64_t n, float *s, const void *x, const void *y) { dot(n, s, x, y, 4, 32); }
void hearth_vec_dot_mlx4_g64_avx2(int64_t n, float *s, const void *x, const void *y) { dot(n, s, x, y, 4, 64); }
void hearth_vec_dot_mlx8_g32_avx2(int64_t n, float *s, const void *x, const void *y) { dot(n, s, x, y, 8, 32); }
void hearth_vec_dot_mlx8_g64_avx2(int64_t n, float *s, const void *x, const void *y) { dot(n, s, x, y, 8, 64); }
