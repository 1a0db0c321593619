/* kv_store.cu - write a step's key or value rows into the paged cache (twin of the CPU
 * backend's kv_store): one thread per element, rounded to f16 when the cache is f16. */
#include "backend/cuda/common.cuh"

static __global__ void kv_store_k(const float *x, int64_t n_tok, int64_t width, const int32_t *seq,
                                  const int32_t *pos, void *cache, const int32_t *table, int32_t max_blocks,
                                  int32_t bs, bool f16) {
    hc_pdl_begin();
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_tok * width) return;
    int64_t t = i / width, e = i % width;
    int32_t blk = table[(int64_t)seq[t] * max_blocks + pos[t] / bs];
    int64_t dst = ((int64_t)blk * bs + pos[t] % bs) * width + e;
    if (f16) ((uint16_t *)cache)[dst] = hc_f2h(x[i]);
    else ((float *)cache)[dst] = x[i];
}

void hc_kv_store(const float *x, int64_t n_tok, int64_t width, const int32_t *seq, const int32_t *pos,
                 void *cache, const int32_t *table, int32_t max_blocks, int32_t block_size, bool f16, void *stream) {
    if (n_tok * width <= 0) return;
    hc_launch(kv_store_k, hc_blocks(n_tok * width, 256), 256, 0, stream, x, n_tok, width, seq, pos, cache,
                                                                                 table, max_blocks, block_size, f16);
}
