/*
 * gemm_f32_ref.c - packing and the reference of the packed f32 GEMM (kernels/gemm_f32.h): one
 * fused multiply-add chain per output, k ascending, as the SIMD kernel's lanes compute it.
 */
#include "kernels/gemm_f32.h"

#include <math.h>
#include <string.h>

size_t hearth_gemm_f32_packed_floats(int64_t n_out, int64_t n_in) {
    const int64_t n_panels = (n_out + HEARTH_GEMM_NR - 1) / HEARTH_GEMM_NR;
    return (size_t)n_panels * (size_t)n_in * HEARTH_GEMM_NR;
}

void hearth_gemm_f32_pack(const float *w, int64_t ldw, int64_t n_out, int64_t n_in, float *packed) {
    const int64_t n_panels = (n_out + HEARTH_GEMM_NR - 1) / HEARTH_GEMM_NR;
    for (int64_t p = 0; p < n_panels; p++)
        for (int64_t k = 0; k < n_in; k++) {
            float *dst = packed + ((size_t)p * (size_t)n_in + (size_t)k) * HEARTH_GEMM_NR;
            for (int j = 0; j < HEARTH_GEMM_NR; j++) {
                const int64_t o = p * HEARTH_GEMM_NR + j;
                dst[j] = o < n_out ? w[o * ldw + k] : 0.0f;
            }
        }
}

void hearth_gemm_f32_ref(const float *packed, int64_t n_out, int64_t n_in, const float *x, int64_t ldx, int64_t n_tok,
                         float *y, int64_t ldy) {
    for (int64_t t = 0; t < n_tok; t++)
        for (int64_t o = 0; o < n_out; o++) {
            const float *panel = packed + (size_t)(o / HEARTH_GEMM_NR) * (size_t)n_in * HEARTH_GEMM_NR;
            const int j = (int)(o % HEARTH_GEMM_NR);
            float acc = 0.0f;
            for (int64_t k = 0; k < n_in; k++) acc = fmaf(x[t * ldx + k], panel[k * HEARTH_GEMM_NR + j], acc);
            y[t * ldy + o] = acc;
        }
}
