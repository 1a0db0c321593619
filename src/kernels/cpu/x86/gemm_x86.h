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
/* The same for 12 token rows (AVX-512: one 16-lane accumulator per row). */
void hearth_gemm_f32_12x16_avx512(const float *panel, int64_t k0, int64_t k1, const float *const x[12],
                                  float *const y[12], int nc, bool cont);
