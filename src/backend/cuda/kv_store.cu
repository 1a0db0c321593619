/* kv_store.cu - write a step's key or value rows into the paged cache (twin of the CPU
 * backend's kv_store): f32 and f16 one thread per element (rounded to f16 for an f16 cache);
 * q8_0 and q4_0 one warp per 32-element block, quantized by hc_kv_quant_block (common.cuh) to
 * the bytes the CPU stores for the same rows; the turbo types rotated and quantized by turbo.cu. */
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

/* one warp per (token, block of the row); whole warps leave together */
static __global__ void kv_store_quant_k(const float *x, int64_t n_tok, int64_t width, const int32_t *seq,
                                        const int32_t *pos, uint8_t *cache, const int32_t *table, int32_t max_blocks,
                                        int32_t bs, int type) {
    hc_pdl_begin();
    const int lane = threadIdx.x % HC_WARP;
    const int64_t w = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / HC_WARP, nb = width / 32;
    if (w >= n_tok * nb) return;
    const int64_t t = w / nb, b = w % nb;
    const int32_t blk = table[(int64_t)seq[t] * max_blocks + pos[t] / bs];
    const int bb = hc_kv_block_bytes(type);
    uint8_t *dst = cache + (((int64_t)blk * bs + pos[t] % bs) * nb + b) * bb;
    hc_kv_quant_block(x[t * width + b * 32 + lane], dst, type, lane);
}

void hc_kv_store(const float *x, int64_t n_tok, int64_t width, const int32_t *seq, const int32_t *pos,
                 void *cache, const int32_t *table, int32_t max_blocks, int32_t block_size, int type, void *stream) {
    if (n_tok * width <= 0) return;
    if (hc_kv_turbo(type)) {
        hc_kv_store_turbo(x, n_tok, width, seq, pos, cache, table, max_blocks, block_size, hc_turbo_bits(type),
                          stream);
        return;
    }
    if (hc_kv_quantized(type)) {
        hc_launch(kv_store_quant_k, hc_blocks(n_tok * (width / 32) * HC_WARP, 256), 256, 0, stream, x, n_tok, width,
                  seq, pos, (uint8_t *)cache, table, max_blocks, block_size, type);
        return;
    }
    hc_launch(kv_store_k, hc_blocks(n_tok * width, 256), 256, 0, stream, x, n_tok, width, seq, pos, cache, table,
              max_blocks, block_size, type == HC_F16);
}
