/*
 * gemm_f32_avx2.c - the AVX2 micro-kernel of the packed f32 GEMM (kernels/gemm_f32.h): 6 token
 * rows x 16 outputs of one panel in 12 accumulators, k from 0 to n_in, one FMA per (token,
 * 8 outputs) per k, over one range of k: a later range continues the chains from the values
 * the earlier one stored (a float stored and loaded back is the same float). Each lane is the
 * reference's fmaf chain, so the results equal hearth_gemm_f32_ref bit for bit.
 */
#include <immintrin.h>

#include "kernels/cpu/x86/gemm_x86.h"

static inline __m256 load_part(const float *y, int nc, int half) {
    if (nc == 16) return _mm256_loadu_ps(y + 8 * half);
    float tmp[16] = {0};
    for (int j = 0; j < nc; j++) tmp[j] = y[j];
    return _mm256_loadu_ps(tmp + 8 * half);
}

void hearth_gemm_f32_6x16_avx2(const float *panel, int64_t k0, int64_t k1, const float *const x[6], float *const y[6],
                               int nc, bool cont) {
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    if (cont) { /* carry on the chains the previous k range stored */
        const float *z = y[0]; /* a row that is not stored repeats row 0 */
        c00 = load_part(y[0], nc, 0), c01 = load_part(y[0], nc, 1);
        c10 = load_part(y[1] ? y[1] : z, nc, 0), c11 = load_part(y[1] ? y[1] : z, nc, 1);
        c20 = load_part(y[2] ? y[2] : z, nc, 0), c21 = load_part(y[2] ? y[2] : z, nc, 1);
        c30 = load_part(y[3] ? y[3] : z, nc, 0), c31 = load_part(y[3] ? y[3] : z, nc, 1);
        c40 = load_part(y[4] ? y[4] : z, nc, 0), c41 = load_part(y[4] ? y[4] : z, nc, 1);
        c50 = load_part(y[5] ? y[5] : z, nc, 0), c51 = load_part(y[5] ? y[5] : z, nc, 1);
    }
    const float *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3], *x4 = x[4], *x5 = x[5];
    for (int64_t k = k0; k < k1; k++) {
        const __m256 w0 = _mm256_loadu_ps(panel + k * 16), w1 = _mm256_loadu_ps(panel + k * 16 + 8);
        __m256 b = _mm256_broadcast_ss(x0 + k);
        c00 = _mm256_fmadd_ps(b, w0, c00);
        c01 = _mm256_fmadd_ps(b, w1, c01);
        b = _mm256_broadcast_ss(x1 + k);
        c10 = _mm256_fmadd_ps(b, w0, c10);
        c11 = _mm256_fmadd_ps(b, w1, c11);
        b = _mm256_broadcast_ss(x2 + k);
        c20 = _mm256_fmadd_ps(b, w0, c20);
        c21 = _mm256_fmadd_ps(b, w1, c21);
        b = _mm256_broadcast_ss(x3 + k);
        c30 = _mm256_fmadd_ps(b, w0, c30);
        c31 = _mm256_fmadd_ps(b, w1, c31);
        b = _mm256_broadcast_ss(x4 + k);
        c40 = _mm256_fmadd_ps(b, w0, c40);
        c41 = _mm256_fmadd_ps(b, w1, c41);
        b = _mm256_broadcast_ss(x5 + k);
        c50 = _mm256_fmadd_ps(b, w0, c50);
        c51 = _mm256_fmadd_ps(b, w1, c51);
    }
    const __m256 c[6][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
    for (int r = 0; r < 6; r++) {
        if (!y[r]) continue;
        if (nc == 16) {
            _mm256_storeu_ps(y[r], c[r][0]);
            _mm256_storeu_ps(y[r] + 8, c[r][1]);
        } else {
            float tmp[16];
            _mm256_storeu_ps(tmp, c[r][0]);
            _mm256_storeu_ps(tmp + 8, c[r][1]);
            for (int j = 0; j < nc; j++) y[r][j] = tmp[j];
        }
    }
}
