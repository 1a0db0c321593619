/* argmax.cu - greedy sampling on the device: the first index of each row's maximum (as the
 * host sampler's greedy pick), so only token ids cross to the host. One block per row. */
#include "backend/cuda/common.cuh"

static __global__ void argmax_k(const float *x, int64_t n, int32_t *out) {
    hc_pdl_begin();
    __shared__ float bv[32];
    __shared__ int32_t bi[32];
    const float *r = x + (int64_t)blockIdx.x * n;
    float best = -INFINITY;
    int32_t idx = 0x7fffffff;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        if (r[i] > best) { best = r[i]; idx = (int32_t)i; }
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, best, o);
        int32_t oi = __shfl_xor_sync(0xffffffffu, idx, o);
        if (ov > best || (ov == best && oi < idx)) { best = ov; idx = oi; }
    }
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) { bv[warp] = best; bi[warp] = idx; }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)(blockDim.x / 32); w++)
            if (bv[w] > best || (bv[w] == best && bi[w] < idx)) { best = bv[w]; idx = bi[w]; }
        out[blockIdx.x] = idx == 0x7fffffff ? 0 : idx;
    }
}

void hc_argmax(const float *x, int64_t n_rows, int64_t n, int32_t *out, void *stream) {
    if (n_rows > 0) hc_launch(argmax_k, (unsigned)n_rows, 256, 0, (cudaStream_t)stream, x, n, out);
}
