/*
 * attn_turbo_avx2.c - attention over a turbo KV cache (kernels/cpu/attn_turbo_body.inc) with
 * the AVX2 dequantizer (turbo_x86.h), a dot of two 8-lane FMA accumulators (lanes 0-7 and 8-15
 * of the body's 16-lane order, then halved as it says) and 8-lane FMA element loops.
 * Bit-identical to hearth_attn_turbo_ref (tests/kernels/test_attn_turbo.c).
 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels/cpu/x86/attn_x86.h"
#include "kernels/cpu/x86/turbo_x86.h"
#include "kernels/kernels.h"

static inline void dequant_row(const char *x, float *y, int64_t n, int bits) { turbo_x86_dequant(x, y, n, bits); }

static inline float dot_f32(const float *a, const float *b, int64_t n) {
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) {
        lo = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), lo);
        hi = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), hi);
    }
    const __m256 s8 = _mm256_add_ps(lo, hi);
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    s4 = _mm_add_ss(s4, _mm_shuffle_ps(s4, s4, 1));
    return _mm_cvtss_f32(s4);
}
static inline void mad_f32(float *y, const float *x, float v, int64_t n) {
    const __m256 vv = _mm256_set1_ps(v);
    for (int64_t i = 0; i < n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(_mm256_loadu_ps(x + i), vv, _mm256_loadu_ps(y + i)));
}
static inline void scale_f32(float *y, float v, int64_t n) {
    const __m256 vv = _mm256_set1_ps(v);
    for (int64_t i = 0; i < n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), vv));
}

#define ATTN_TURBO_FN hearth_attn_turbo_avx2
#include "kernels/cpu/attn_turbo_body.inc"
