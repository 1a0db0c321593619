/* attn_x86_ref.c - the plain-C build of attn_llamacpp_order.h (the reference of attn_fma_avx2.c). */
#include "kernels/ref/attn_llamacpp_order.h"
#include "kernels/ref/llamacpp_order_ref.h"

void hearth_attn_head_x86_ref(const float *q, const uint16_t *k, const uint16_t *v, int64_t kv_stride,
                              const int32_t *table_row, int32_t block_size, int64_t head_dim, int64_t j0, int64_t j1,
                              float scale, float softcap, bool single, float *scores, float *out) {
    hearth_attn_head_x86_impl(q, k, v, kv_stride, table_row, block_size, head_dim, j0, j1, scale, softcap, single,
                              scores, out);
}
