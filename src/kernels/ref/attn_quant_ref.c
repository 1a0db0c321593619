/*
 * attn_quant_ref.c - the plain-C twin of the quantized-cache attention (kernels.h
 * hearth_attn_quant_fn; the order is in kernels/cpu/attn_quant_body.inc): the scalar set's
 * quantizer and block dots, element loops with fmaf. The x86 kernels must equal it bit for bit
 * (tests/kernels/test_attn_quant.c).
 */
#include <math.h>
#include <stdint.h>

#include "kernels/kernels.h"

static inline void mad_f32(float *y, const float *x, float v, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = fmaf(x[i], v, y[i]);
}
static inline void scale_f32(float *y, float v, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] *= v;
}

#define ATTN_QUANT_FN  hearth_attn_quant_ref
#define ATTN_QUANT_ISA HEARTH_ISA_SCALAR
#include "kernels/cpu/attn_quant_body.inc"
