/*
 * gemm_f32_avx512.c - the AVX-512 micro-kernel of the packed f32 GEMM (kernels/gemm_f32.h): 12
 * token rows x the 16 outputs of one panel, one 16-lane accumulator per row, k over one range
 * (a later range continues the chains from the stored values, as gemm_f32_avx2.c does). Per k:
 * one load of the panel's 16 weights, 12 broadcasts, 12 FMAs. Each lane is the reference's fmaf
 * chain, so the results equal hearth_gemm_f32_ref bit for bit.
 */
#include <immintrin.h>

#include "kernels/cpu/x86/gemm_x86.h"

void hearth_gemm_f32_12x16_avx512(const float *panel, int64_t k0, int64_t k1, const float *const x[12],
                                  float *const y[12], int nc, bool cont) {
    const __mmask16 m = (__mmask16)((1u << nc) - 1u);
    __m512 c[12];
    for (int r = 0; r < 12; r++)
        c[r] = cont ? _mm512_maskz_loadu_ps(m, y[r] ? y[r] : y[0]) : _mm512_setzero_ps();
    __m512 c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3], c4 = c[4], c5 = c[5];
    __m512 c6 = c[6], c7 = c[7], c8 = c[8], c9 = c[9], c10 = c[10], c11 = c[11];
    const float *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3], *x4 = x[4], *x5 = x[5];
    const float *x6 = x[6], *x7 = x[7], *x8 = x[8], *x9 = x[9], *x10 = x[10], *x11 = x[11];
    for (int64_t k = k0; k < k1; k++) {
        const __m512 w = _mm512_loadu_ps(panel + k * 16);
        c0 = _mm512_fmadd_ps(_mm512_set1_ps(x0[k]), w, c0);
        c1 = _mm512_fmadd_ps(_mm512_set1_ps(x1[k]), w, c1);
        c2 = _mm512_fmadd_ps(_mm512_set1_ps(x2[k]), w, c2);
        c3 = _mm512_fmadd_ps(_mm512_set1_ps(x3[k]), w, c3);
        c4 = _mm512_fmadd_ps(_mm512_set1_ps(x4[k]), w, c4);
        c5 = _mm512_fmadd_ps(_mm512_set1_ps(x5[k]), w, c5);
        c6 = _mm512_fmadd_ps(_mm512_set1_ps(x6[k]), w, c6);
        c7 = _mm512_fmadd_ps(_mm512_set1_ps(x7[k]), w, c7);
        c8 = _mm512_fmadd_ps(_mm512_set1_ps(x8[k]), w, c8);
        c9 = _mm512_fmadd_ps(_mm512_set1_ps(x9[k]), w, c9);
        c10 = _mm512_fmadd_ps(_mm512_set1_ps(x10[k]), w, c10);
        c11 = _mm512_fmadd_ps(_mm512_set1_ps(x11[k]), w, c11);
    }
    const __m512 out[12] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11};
    for (int r = 0; r < 12; r++)
        if (y[r]) _mm512_mask_storeu_ps(y[r], m, out[r]);
}
