/*
 * gemm_f32_avx512.c - the AVX-512 micro-kernel of the packed f32 GEMM (kernels/gemm_f32.h): 12
 * token rows x 32 outputs (two adjacent 16-output panels) in 24 accumulators, k over one range
 * (a later range continues the chains from the stored values, as gemm_f32_avx2.c does).
 *
 * Per k: two loads of 16 weights (one per panel), 12 broadcasts of x, 24 FMAs. The 24
 * accumulators, the two weight vectors and the broadcast fit the 32 ZMM registers; against
 * the 12 x 16 shape (13 loads for 12 FMAs) the loads per FMA fall from 1.08 to 0.58, which is
 * what keeps both FMA ports busy. The x rows are read through three row pointers and the row
 * stride (rows r, r + 1, r + 2, r + 3 at [p], [p + ld], [p + 2 ld], [p + ld3]) so the loop
 * needs no more general registers than x86-64 has.
 *
 * Each lane is the reference's fmaf chain, k ascending from 0 (or from the stored value), so
 * the results equal hearth_gemm_f32_ref bit for bit.
 */
#include <immintrin.h>

#include "kernels/cpu/x86/gemm_x86.h"

#define ROW(r, xp) \
    do { \
        const __m512 b = _mm512_set1_ps(*(xp)); \
        c##r##0 = _mm512_fmadd_ps(b, w0, c##r##0); \
        c##r##1 = _mm512_fmadd_ps(b, w1, c##r##1); \
    } while (0)

void hearth_gemm_f32_12x32_avx512(const float *p0, const float *p1, int64_t kc, const float *x, int64_t ldx,
                                  float *y, int64_t ldy, int n_rows, int nc, bool cont) {
    const __mmask16 m0 = (__mmask16)(nc >= 16 ? 0xffffu : (1u << nc) - 1u);
    const __mmask16 m1 = (__mmask16)(nc >= 32 ? 0xffffu : nc > 16 ? (1u << (nc - 16)) - 1u : 0u);
    __m512 c[12][2];
    for (int r = 0; r < 12; r++) {
        const bool ld = cont && r < n_rows;
        c[r][0] = ld ? _mm512_maskz_loadu_ps(m0, y + r * ldy) : _mm512_setzero_ps();
        c[r][1] = ld ? _mm512_maskz_loadu_ps(m1, y + r * ldy + 16) : _mm512_setzero_ps();
    }
    __m512 c00 = c[0][0], c01 = c[0][1], c10 = c[1][0], c11 = c[1][1], c20 = c[2][0], c21 = c[2][1];
    __m512 c30 = c[3][0], c31 = c[3][1], c40 = c[4][0], c41 = c[4][1], c50 = c[5][0], c51 = c[5][1];
    __m512 c60 = c[6][0], c61 = c[6][1], c70 = c[7][0], c71 = c[7][1], c80 = c[8][0], c81 = c[8][1];
    __m512 c90 = c[9][0], c91 = c[9][1], cA0 = c[10][0], cA1 = c[10][1], cB0 = c[11][0], cB1 = c[11][1];
    const float *xa = x, *xb = x + 4 * ldx, *xc = x + 8 * ldx;
    const int64_t l1 = ldx, l3 = 3 * ldx;
    for (int64_t k = 0; k < kc; k++) {
        const __m512 w0 = _mm512_loadu_ps(p0 + k * 16), w1 = _mm512_loadu_ps(p1 + k * 16);
        ROW(0, xa + k);
        ROW(1, xa + l1 + k);
        ROW(2, xa + 2 * l1 + k);
        ROW(3, xa + l3 + k);
        ROW(4, xb + k);
        ROW(5, xb + l1 + k);
        ROW(6, xb + 2 * l1 + k);
        ROW(7, xb + l3 + k);
        ROW(8, xc + k);
        ROW(9, xc + l1 + k);
        ROW(A, xc + 2 * l1 + k);
        ROW(B, xc + l3 + k);
    }
    const __m512 out[12][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51},
                               {c60, c61}, {c70, c71}, {c80, c81}, {c90, c91}, {cA0, cA1}, {cB0, cB1}};
    for (int r = 0; r < n_rows; r++) {
        _mm512_mask_storeu_ps(y + r * ldy, m0, out[r][0]);
        if (m1) _mm512_mask_storeu_ps(y + r * ldy + 16, m1, out[r][1]);
    }
}
