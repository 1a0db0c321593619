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

/* The row's two sums with elements of type T read by LOAD: the one formula for f32 and f16. */
#define LORA_ROW(T, LOAD)                                                                                            \
    do {                                                                                                             \
        const T *pa = a, *pb = b;                                                                                    \
        for (int32_t k = 0; k < r; k++) { /* h = A x */                                                             \
            float s = 0.0f;                                                                                          \
            for (int64_t i = 0; i < n_in; i++) s += LOAD(pa[(int64_t)k * n_in + i]) * x[i];                          \
            h[k] = s;                                                                                                \
        }                                                                                                            \
        for (int64_t o = 0; o < n_out; o++) { /* y += scale * B h */                                                 \
            float s = 0.0f;                                                                                          \
            for (int32_t k = 0; k < r; k++) s += LOAD(pb[o * r + k]) * h[k];                                         \
            y[o] += scale * s;                                                                                       \
        }                                                                                                            \
    } while (0)
#define F32(v) (v)

void hearth_lora_row_ref(const void *a, const void *b, bool half, int32_t r, float scale, const float *x, int64_t n_in,
                         float *y, int64_t n_out) {
    HEARTH_ASSERT(r > 0 && r <= HEARTH_LORA_MAX_RANK);
    float h[HEARTH_LORA_MAX_RANK];
    if (half)
        LORA_ROW(uint16_t, h2f);
    else
        LORA_ROW(float, F32);
}

void hearth_lora_ref(const hearth_lora_seg *segs, int n_seg, const float *x, int64_t n_in, float *y, int64_t ldy,
                     int64_t n_out) {
    for (int s = 0; s < n_seg; s++)
        for (int64_t t = segs[s].t0; t < segs[s].t0 + segs[s].n; t++)
            hearth_lora_row_ref(segs[s].a, segs[s].b, segs[s].half, segs[s].r, segs[s].scale, x + t * n_in, n_in,
                                y + t * ldy, n_out);
}
