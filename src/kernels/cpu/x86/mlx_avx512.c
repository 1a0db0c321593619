/*
 * mlx_avx512.c - AVX-512 dots of the MLX affine types with f32 activations (the scalar twin is
 * hearth_vec_dot_<t>_ref in kernels/ref/mlx_ref.c). Sixteen elements at a time: two 4-bit
 * words, each broadcast to eight lanes and shifted by 0, 4, ..., 28; or sixteen 8-bit values
 * widened. Dequantize with one FMA, accumulate with a second, as the AVX2 version does.
 */
#include <immintrin.h>
#include <string.h>

#include "kernels/cpu/x86/quant_x86.h"
#include "tensor/quant.h"

static inline __m512i q16_of(const uint8_t *q, int bits, int k) {
    if (bits == 4) {
        uint32_t w[2];
        memcpy(w, q + 8 * k, 8);
        const __m512i sh = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28);
        __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi32((int)w[0])),
                                       _mm256_set1_epi32((int)w[1]), 1);
        return _mm512_and_si512(_mm512_srlv_epi32(v, sh), _mm512_set1_epi32(15));
    }
    return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(q + 16 * k)));
}

static void dot(int64_t n, float *s, const uint8_t *x, const float *y, int bits, int g) {
    size_t bsz = HEARTH_MLX_BLOCK_HDR + (size_t)(g * bits / 8);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    for (int64_t b = 0; b < n / g; b++, x += bsz, y += g) {
        float sc, bi;
        memcpy(&sc, x, 4);
        memcpy(&bi, x + 4, 4);
        const __m512 vs = _mm512_set1_ps(sc), vb = _mm512_set1_ps(bi);
        for (int k = 0; k < g / 16; k += 2) {
            __m512 w0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(q16_of(x + 8, bits, k)), vs, vb);
            __m512 w1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(q16_of(x + 8, bits, k + 1)), vs, vb);
            acc0 = _mm512_fmadd_ps(w0, _mm512_loadu_ps(y + 16 * k), acc0);
            acc1 = _mm512_fmadd_ps(w1, _mm512_loadu_ps(y + 16 * k + 16), acc1);
        }
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

void hearth_vec_dot_mlx4_g32_avx512(int64_t n, float *s, const void *x, const void *y) { dot(n, s, x, y, 4, 32); }
void hearth_vec_dot_mlx4_g64_avx512(int64_t n, float *s, const void *x, const void *y) { dot(n, s, x, y, 4, 64); }
void hearth_vec_dot_mlx8_g32_avx512(int64_t n, float *s, const void *x, const void *y) { dot(n, s, x, y, 8, 32); }
void hearth_vec_dot_mlx8_g64_avx512(int64_t n, float *s, const void *x, const void *y) { dot(n, s, x, y, 8, 64); }
