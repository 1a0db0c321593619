/*
 * lora_ref.c - the segmented LoRA update as plain loops (lora_ref.h has the formula).
 */
#include "kernels/ref/lora_ref.h"

#include "base/assert.h"

#include <string.h>

/* IEEE half to float, exactly (hearth_fp16_to_fp32's values, inlined for the inner loops). */
static inline float h2f(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, u;
    if (e == 0) { /* zero or subnormal: m 2^-24 */
        float v = (float)m * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    u = sign | (e == 31 ? 0x7f800000u | (m << 13) : ((e + 112) << 23) | (m << 13));
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The 8-lane dot product of n elements of w (type T, widened by LOAD) with v (lora_ref.h). */
#define LORA_DOT(name, T, LOAD)                                                                                      \
    static float name(const T *w, const float *v, int64_t n) {                                                   \
        float acc[8] = {0};                                                                                          \
        for (int64_t i = 0; i < n; i += 8)                                                                           \
            for (int l = 0; l < 8; l++) acc[l] += i + l < n ? LOAD(w[i + l]) * v[i + l] : 0.0f;                      \
        return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));                    \
    }
#define F32(v) (v)
LORA_DOT(dot_f32, float, F32)
LORA_DOT(dot_f16, uint16_t, h2f)

void hearth_lora_row_ref(const void *a, const void *b, bool half, int32_t r, float scale, const float *x, int64_t n_in,
                         float *y, int64_t n_out) {
    HEARTH_ASSERT(r > 0 && r <= HEARTH_LORA_MAX_RANK);
    float h[HEARTH_LORA_MAX_RANK];
    for (int32_t k = 0; k < r; k++) /* h = A x */
        h[k] = half ? dot_f16((const uint16_t *)a + (int64_t)k * n_in, x, n_in)
                    : dot_f32((const float *)a + (int64_t)k * n_in, x, n_in);
    for (int64_t o = 0; o < n_out; o++) /* y += scale * B h */
        y[o] += scale * (half ? dot_f16((const uint16_t *)b + o * r, h, r) : dot_f32((const float *)b + o * r, h, r));
}

void hearth_lora_ref(const hearth_lora_seg *segs, int n_seg, const float *x, int64_t n_in, float *y, int64_t ldy,
                     int64_t n_out) {
    for (int s = 0; s < n_seg; s++)
        for (int64_t t = segs[s].t0; t < segs[s].t0 + segs[s].n; t++)
            hearth_lora_row_ref(segs[s].a, segs[s].b, segs[s].half, segs[s].r, segs[s].scale, x + t * n_in, n_in,
                                y + t * ldy, n_out);
}
