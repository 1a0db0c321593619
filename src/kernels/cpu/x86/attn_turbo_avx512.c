/*
 * attn_turbo_avx512.c - attention over a turbo KV cache (kernels/cpu/attn_turbo_body.inc) with
 * the AVX2 dequantizer (turbo_x86.h), a dot of one 16-lane FMA accumulator (the body's lanes,
 * halved as it says) and 16-lane FMA element loops. Bit-identical to hearth_attn_turbo_ref
 * (tests/kernels/test_attn_turbo.c).
 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels/cpu/x86/attn_x86.h"
#include "kernels/cpu/x86/turbo_x86.h"
#include "kernels/kernels.h"

static inline void dequant_row(const char *x, float *y, int64_t n, int bits) { turbo_x86_dequant(x, y, n, bits); }

static inline float dot_f32(const float *a, const float *b, int64_t n) {
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc);
    const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    s4 = _mm_add_ss(s4, _mm_shuffle_ps(s4, s4, 1));
    return _mm_cvtss_f32(s4);
}
static inline void mad_f32(float *y, const float *x, float v, int64_t n) {
    const __m512 vv = _mm512_set1_ps(v);
    for (int64_t i = 0; i < n; i += 16) _mm512_storeu_ps(y + i, _mm512_fmadd_ps(_mm512_loadu_ps(x + i), vv, _mm512_loadu_ps(y + i)));
}
static inline void scale_f32(float *y, float v, int64_t n) {
    const __m512 vv = _mm512_set1_ps(v);
    for (int64_t i = 0; i < n; i += 16) _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(y + i), vv));
}

#define ATTN_TURBO_FN hearth_attn_turbo_avx512
#include "kernels/cpu/attn_turbo_body.inc"
