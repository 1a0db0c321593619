/*
 * gemm_x86.h - the x86 micro-kernels of the packed f32 GEMM (kernels/gemm_f32.h).
 */
#pragma once
#include <stdint.h>

/* y[r][0..nc) = the 16 outputs of one packed panel (k-major, 16 floats per k) for token rows
 * x[r], r < 6; a NULL y[r] is not stored (its x[r] must still be readable: pass another row). */
void hearth_gemm_f32_6x16_avx2(const float *panel, int64_t n_in, const float *const x[6], float *const y[6], int nc);
