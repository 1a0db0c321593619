/*
 * act_avx512.c - AVX-512 activation functions in llama.cpp's x86 order: SwiGLU with the
 * vector exp of ggml's AVX-512 build, 16 lanes at a time. Bit-identical to
 * hearth_swiglu_x86_ref (kernels/ref/llamacpp_order_ref.c), which also handles the tail. GeGLU
 * with the f16 table: vcvtps2ph (round to nearest even, as the scalar converter), a 16-lane
 * gather from the table, vcvtph2ps and the multiply; bit-identical to hearth_geglu_f16_ref,
 * which takes a vector holding a NaN (whose payload the instruction would keep) and the tail.
 */
#include <immintrin.h>

#include "kernels/cpu/x86/quant_x86.h"
#include "kernels/ref/ops_ref.h"
#include "kernels/ref/llamacpp_order_ref.h"

/* hearth_expf_x86_ref on 16 lanes */
static inline __m512 expf16(__m512 x) {
    const __m512 r = _mm512_set1_ps(0x1.8p23f);
    __m512 z = _mm512_fmadd_ps(x, _mm512_set1_ps(0x1.715476p+0f), r);
    __m512 n = _mm512_sub_ps(z, r);
    __m512 b = _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.7f7d1cp-20f),
                                _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e4p-1f), x));
    __mmask16 big = _mm512_cmp_ps_mask(_mm512_abs_ps(n), _mm512_set1_ps(192.0f), _CMP_GT_OQ);
    __m512 u = _mm512_mul_ps(b, b);
    __m512 p = _mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_set1_ps(0x1.0e4020p-7f), b, _mm512_set1_ps(0x1.573e2ep-5f)), u,
                               _mm512_fmadd_ps(_mm512_set1_ps(0x1.555e66p-3f), b, _mm512_set1_ps(0x1.fffdb6p-2f)));
    __m512 j = _mm512_fmadd_ps(p, u, _mm512_fmadd_ps(_mm512_set1_ps(0x1.ffffecp-1f), b, _mm512_set1_ps(1.0f)));
    __m512 res = _mm512_scalef_ps(j, n);
    if (!big) return res;
    __mmask16 neg = _mm512_cmp_ps_mask(n, _mm512_setzero_ps(), _CMP_LE_OQ);
    __m512 alt = _mm512_mask_blend_ps(neg, _mm512_set1_ps(__builtin_inff()), _mm512_setzero_ps());
    return _mm512_mask_blend_ps(big, res, alt);
}

void hearth_swiglu_avx512(float *g, const float *u, int64_t n) {
    int64_t i = 0;
    const __m512 one = _mm512_set1_ps(1.0f);
    for (; i + 16 <= n; i += 16) {
        __m512 x = _mm512_loadu_ps(g + i);
        __m512 e = expf16(_mm512_sub_ps(_mm512_setzero_ps(), x));
        _mm512_storeu_ps(g + i, _mm512_mul_ps(_mm512_div_ps(x, _mm512_add_ps(one, e)), _mm512_loadu_ps(u + i)));
    }
    hearth_swiglu_x86_ref(g + i, u + i, n - i);
}

void hearth_geglu_f16_avx512(float *g, const float *u, int64_t n) {
    const uint16_t *table = hearth_gelu_f16_table();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 x = _mm512_loadu_ps(g + i), uu = _mm512_loadu_ps(u + i);
        if (_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q)) {
            hearth_geglu_f16_ref(g + i, u + i, 16);
            continue;
        }
        const __m512i h = _mm512_cvtepu16_epi32(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
        const __m512i e = _mm512_i32gather_epi32(h, (const void *)table, 2); /* entry in the low half */
        __m512 r = _mm512_mul_ps(_mm512_cvtph_ps(_mm512_cvtepi32_epi16(e)), uu);
        r = _mm512_mask_mul_ps(r, _mm512_cmp_ps_mask(x, _mm512_set1_ps(10.0f), _CMP_GE_OQ), x, uu);
        r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, _mm512_set1_ps(-10.0f), _CMP_LE_OQ), _mm512_setzero_ps());
        _mm512_storeu_ps(g + i, r);
    }
    hearth_geglu_f16_ref(g + i, u + i, n - i);
}
