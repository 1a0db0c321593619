/* rmsnorm.cu - RMSNorm per row (twin of hearth_rmsnorm_ref): one block per row, the sum of
 * squares reduced in float per thread, then across the block. */
#include "backend/cuda/common.cuh"

static __global__ void rmsnorm_k(const float *x, const float *w, float *y, int64_t dim, float eps) {
    hc_pdl_begin();
    __shared__ float part[32];
    const float *xr = x + (int64_t)blockIdx.x * dim;
    float *yr = y + (int64_t)blockIdx.x * dim;
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) s += xr[i] * xr[i];
    s = hc_warp_sum(s);
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) part[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = lane < (int)(blockDim.x / 32) ? part[lane] : 0.0f;
        s = hc_warp_sum(s);
        if (lane == 0) part[0] = s;
    }
    __syncthreads();
    float scale = rsqrtf(part[0] / (float)dim + eps);
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) yr[i] = xr[i] * scale * (w ? w[i] : 1.0f);
}

void hc_rmsnorm(const float *x, const float *w, float *y, int64_t n_rows, int64_t dim, float eps, void *stream) {
    if (n_rows <= 0) return;
    /* few rows (decode): wide blocks, so one row's latency is short */
    int th = dim >= 1024 ? 256 : dim >= 256 ? 128 : 32;
    if (n_rows < 128 && dim >= 2048) th = dim >= 4096 ? 1024 : 512;
    hc_launch(rmsnorm_k, (unsigned)n_rows, th, 0, (cudaStream_t)stream, x, w, y, dim, eps);
}
