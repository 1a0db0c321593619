/*
 * bf16_dp_ref.c - the vdpbf16ps-order bf16 dot in plain C (bf16_dp_ref.h says the order):
 * the twin the bf16 tiles are tested against bit for bit.
 */
#include "kernels/ref/bf16_dp_ref.h"

#include <math.h>
#include <string.h>

#include "tensor/dtype.h"

/* bf16 -> f32 with a subnormal read as zero of its sign (DAZ). */
static float bf16_daz(uint16_t h) {
    if ((h & 0x7f80) == 0) h &= 0x8000;
    return hearth_bf16_to_fp32(h);
}

/* fma rounded to nearest even, a subnormal result flushed to zero of its sign (FTZ). */
static float fma_ftz(float a, float b, float c) {
    float r = fmaf(a, b, c);
    return fpclassify(r) == FP_SUBNORMAL ? copysignf(0.0f, r) : r;
}

void hearth_vec_dot_bf16_dp_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    float lane[16];
    memset(lane, 0, sizeof lane);
    for (int64_t c = 0; c < n; c += 32) {
        for (int j = 0; j < 16; j++) {
            int64_t i = c + 2 * j;
            float xo = i + 1 < n ? bf16_daz(x[i + 1]) : 0.0f, yo = i + 1 < n ? bf16_daz(y[i + 1]) : 0.0f;
            float xe = i < n ? bf16_daz(x[i]) : 0.0f, ye = i < n ? bf16_daz(y[i]) : 0.0f;
            lane[j] = fma_ftz(xo, yo, lane[j]);
            lane[j] = fma_ftz(xe, ye, lane[j]);
        }
    }
    float h8[8], h4[4];
    for (int l = 0; l < 8; l++) h8[l] = lane[l] + lane[l + 8];
    for (int l = 0; l < 4; l++) h4[l] = h8[l] + h8[l + 4];
    *s = (h4[0] + h4[2]) + (h4[1] + h4[3]);
}
