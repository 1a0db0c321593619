/* argmax.cu - greedy sampling on the device: the first index of each row's maximum (as the
 * host sampler's greedy pick), so only token ids cross to the host. One block of 1024 threads
 * per row, reading 16 bytes at a time with four loads in flight per thread: a vocabulary row is
 * read at a fraction of a microsecond per 100k logits instead of at one load latency per
 * element. */
#include "backend/cuda/common.cuh"

/* the better of two candidates: the larger value, the smaller index on ties */
static __device__ __forceinline__ void take(float &best, int32_t &idx, float v, int32_t i) {
    if (v > best || (v == best && i < idx)) {
        best = v;
        idx = i;
    }
}

static __global__ void __launch_bounds__(1024) argmax_k(const float *x, int64_t n, int32_t *out) {
    hc_pdl_begin();
    __shared__ float bv[32];
    __shared__ int32_t bi[32];
    const float *r = x + (int64_t)blockIdx.x * n;
    float best = -INFINITY;
    int32_t idx = 0x7fffffff;
    int64_t head = 0;
    if (((uintptr_t)r & 15) == 0) { /* the 16-byte part: four float4 per thread per round */
        const float4 *r4 = (const float4 *)r;
        const int64_t n4 = n / 4;
        for (int64_t i = threadIdx.x; i < n4; i += 4 * (int64_t)blockDim.x) {
            float4 v[4];
#pragma unroll
            for (int u = 0; u < 4; u++) {
                int64_t k = i + u * (int64_t)blockDim.x;
                v[u] = k < n4 ? __ldg(r4 + k) : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
            }
#pragma unroll
            for (int u = 0; u < 4; u++) {
                int32_t k = (int32_t)(4 * (i + u * (int64_t)blockDim.x));
                take(best, idx, v[u].x, k);
                take(best, idx, v[u].y, k + 1);
                take(best, idx, v[u].z, k + 2);
                take(best, idx, v[u].w, k + 3);
            }
        }
        head = n4 * 4;
    }
    for (int64_t i = head + threadIdx.x; i < n; i += blockDim.x) take(best, idx, r[i], (int32_t)i);
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, best, o);
        int32_t oi = __shfl_xor_sync(0xffffffffu, idx, o);
        take(best, idx, ov, oi);
    }
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) { bv[warp] = best; bi[warp] = idx; }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)(blockDim.x / 32); w++) take(best, idx, bv[w], bi[w]);
        out[blockIdx.x] = idx == 0x7fffffff ? 0 : idx;
    }
}

void hc_argmax(const float *x, int64_t n_rows, int64_t n, int32_t *out, void *stream) {
    if (n_rows > 0) hc_launch(argmax_k, (unsigned)n_rows, 1024, 0, stream, x, n, out);
}
