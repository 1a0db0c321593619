/*
 * gemm_x86.h - the x86 micro-kernels of the packed f32 GEMM (kernels/gemm_f32.h).
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>

/* The 16 outputs of one packed panel (k-major, 16 floats per k) for token rows x[r], r < 6,
 * over k in [k0, k1): into y[r][0..nc), starting from 0, or with cont from what y[r] holds
 * (the chains of the k before k0). A NULL y[r] is not stored (x[r] must still be readable:
 * pass another row); y[0] is never NULL. */
void hearth_gemm_f32_6x16_avx2(const float *panel, int64_t k0, int64_t k1, const float *const x[6], float *const y[6],
                               int nc, bool cont);
/* AVX-512: 12 token rows x 32 outputs, two panels side by side. p0, p1: the two panels' parts
 * at the range's first k (16 floats per k; p1 may equal p0 when nc <= 16); x: row 0 of 12
 * readable rows of stride ldx, at the same k; kc: the range's length. y: row 0 of the outputs
 * (stride ldy), of which the first n_rows rows (1..12) and nc columns (1..32) are stored,
 * starting from 0 or, with cont, from what they hold. */
void hearth_gemm_f32_12x32_avx512(const float *p0, const float *p1, int64_t kc, const float *x, int64_t ldx,
                                  float *y, int64_t ldy, int n_rows, int nc, bool cont);
