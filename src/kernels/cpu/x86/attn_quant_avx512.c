/*
 * attn_quant_avx512.c - attention over a quantized KV cache (kernels/cpu/attn_quant_body.inc)
 * with the avx512 set's quantizer and block dots and 16-lane FMA element loops. Bit-identical to
 * hearth_attn_quant_ref (tests/kernels/test_attn_quant.c): the element loops round each element
 * once, as the twin's fmaf and multiply do.
 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels/cpu/x86/attn_x86.h"
#include "kernels/kernels.h"

static inline void mad_f32(float *y, const float *x, float v, int64_t n) {
    const __m512 vv = _mm512_set1_ps(v);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_fmadd_ps(_mm512_loadu_ps(x + i), vv, _mm512_loadu_ps(y + i)));
    for (; i < n; i++) y[i] = fmaf(x[i], v, y[i]);
}
static inline void scale_f32(float *y, float v, int64_t n) {
    const __m512 vv = _mm512_set1_ps(v);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(y + i), vv));
    for (; i < n; i++) y[i] *= v;
}

#define ATTN_QUANT_FN  hearth_attn_quant_avx512
#define ATTN_QUANT_ISA HEARTH_ISA_AVX512
#include "kernels/cpu/attn_quant_body.inc"
