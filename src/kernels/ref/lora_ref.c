/*
 * lora_ref.c - the segmented LoRA update as plain loops (lora_ref.h has the formula).
 */
#include "kernels/ref/lora_ref.h"

#include "base/assert.h"

void hearth_lora_row_ref(const float *a, const float *b, int32_t r, float scale, const float *x, int64_t n_in,
                         float *y, int64_t n_out) {
    HEARTH_ASSERT(r > 0 && r <= HEARTH_LORA_MAX_RANK);
    float h[HEARTH_LORA_MAX_RANK];
    for (int32_t k = 0; k < r; k++) { /* h = A x */
        float s = 0.0f;
        for (int64_t i = 0; i < n_in; i++) s += a[(int64_t)k * n_in + i] * x[i];
        h[k] = s;
    }
    for (int64_t o = 0; o < n_out; o++) { /* y += scale * B h */
        float s = 0.0f;
        for (int32_t k = 0; k < r; k++) s += b[o * r + k] * h[k];
        y[o] += scale * s;
    }
}

void hearth_lora_ref(const hearth_lora_seg *segs, int n_seg, const float *x, int64_t n_in, float *y, int64_t ldy,
                     int64_t n_out) {
    for (int s = 0; s < n_seg; s++)
        for (int64_t t = segs[s].t0; t < segs[s].t0 + segs[s].n; t++)
            hearth_lora_row_ref(segs[s].a, segs[s].b, segs[s].r, segs[s].scale, x + t * n_in, n_in, y + t * ldy, n_out);
}
