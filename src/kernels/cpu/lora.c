/*
 * lora.c - the segmented LoRA update split by rows over the pool (kernels/lora.h).
 */
#include "kernels/lora.h"

void hearth_lora_rows(const hearth_lora_seg *segs, int n_seg, const float *x, int64_t n_in, float *y, int64_t ldy,
                      int64_t n_out, int ith, int nth) {
    int64_t k = 0; /* the row's number across segments */
    for (int s = 0; s < n_seg; s++) {
        const hearth_lora_seg *g = &segs[s];
        for (int64_t t = g->t0; t < g->t0 + g->n; t++, k++)
            if (k % nth == ith) hearth_lora_row_ref(g->a, g->b, g->half, g->r, g->scale, x + t * n_in, n_in, y + t * ldy,
                                                    n_out);
    }
}
