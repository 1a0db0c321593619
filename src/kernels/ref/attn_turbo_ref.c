/*
 * attn_turbo_ref.c - the plain-C twin of the turbo-cache attention (kernels.h
 * hearth_attn_turbo_fn; the order is in kernels/cpu/attn_turbo_body.inc): the reference
 * dequantizer, a 16-lane fmaf dot, element loops with fmaf. The x86 kernels must equal it bit
 * for bit (tests/kernels/test_attn_turbo.c).
 */
#include <math.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "kernels/ref/turbo_ref.h"

static inline void dequant_row(const char *x, float *y, int64_t n, int bits) { hearth_turbo_dequant_ref(x, y, n, bits); }

static inline float dot_f32(const float *a, const float *b, int64_t n) {
    float l[16] = {0};
    for (int64_t i = 0; i < n; i += 16)
        for (int k = 0; k < 16; k++) l[k] = fmaf(a[i + k], b[i + k], l[k]);
    for (int w = 8; w >= 1; w >>= 1)
        for (int k = 0; k < w; k++) l[k] += l[k + w];
    return l[0];
}
static inline void mad_f32(float *y, const float *x, float v, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = fmaf(x[i], v, y[i]);
}
static inline void scale_f32(float *y, float v, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] *= v;
}

#define ATTN_TURBO_FN hearth_attn_turbo_ref
#include "kernels/cpu/attn_turbo_body.inc"
