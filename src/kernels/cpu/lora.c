/*
 * lora.c - the segmented LoRA update split by rows over the pool (kernels/lora.h); each row is
 * the AVX2 row kernel on the AVX2 and AVX-512 sets, the reference row otherwise (equal bit for
 * bit).
 */
#include "kernels/lora.h"

#include "kernels/kernels.h"

#if defined(__x86_64__)
#include "kernels/cpu/x86/lora_x86.h"
#endif

static hearth_lora_row_fn row_fn(void) {
#if defined(__x86_64__)
    hearth_isa isa = hearth_kernels_isa();
    if (isa == HEARTH_ISA_AVX2 || isa == HEARTH_ISA_AVX512) return hearth_lora_row_avx2;
#endif
    return hearth_lora_row_ref;
}

void hearth_lora_rows(const hearth_lora_seg *segs, int n_seg, const float *x, int64_t n_in, float *y, int64_t ldy,
                      int64_t n_out, int ith, int nth) {
    hearth_lora_row_fn row = row_fn();
    int64_t k = 0; /* the row's number across segments */
    for (int s = 0; s < n_seg; s++) {
        const hearth_lora_seg *g = &segs[s];
        for (int64_t t = g->t0; t < g->t0 + g->n; t++, k++)
            if (k % nth == ith) row(g->a, g->b, g->half, g->r, g->scale, x + t * n_in, n_in, y + t * ldy, n_out);
    }
}
