/* attn_fma_avx2.c - attn_llamacpp_order.h compiled with FMA (fmaf is one instruction here); the
 * avx2 and avx512 sets run it. Bit-identical to attn_x86_ref.c. */
#include "kernels/cpu/x86/quant_x86.h"
#include "kernels/ref/attn_llamacpp_order.h"

void hearth_attn_head_x86_fma(const float *q, const uint16_t *k, const uint16_t *v, int64_t kv_stride,
                              const int32_t *table_row, int32_t block_size, int64_t head_dim, int64_t j0, int64_t j1,
                              float scale, float softcap, bool single, float *scores, float *out) {
    hearth_attn_head_x86_impl(q, k, v, kv_stride, table_row, block_size, head_dim, j0, j1, scale, softcap, single,
                              scores, out);
}
