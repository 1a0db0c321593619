/* rmsnorm.cu - RMSNorm per row (twin of hearth_rmsnorm_ref): one block per row, the sum of
 * squares reduced in float per thread, then across the block.
 *
 * Rows of up to 16k floats in 16-byte pieces (every model's hidden size) keep their values in
 * registers between the two passes: one load of x (all of a thread's loads in flight at once),
 * one reduction, one store; the weight is fetched before the kernel waits for the one before it.
 * Decode steps spend a norm's whole time in these latencies, twice per layer. The same kernel
 * adds the residual first when asked (hc_add_rmsnorm: x += r, then the norm), saving the add's
 * own launch. */
#include "backend/cuda/common.cuh"

static __device__ __forceinline__ float block_sum(float s, float *part) {
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
    return part[0];
}

static __global__ void rmsnorm_k(const float *x, const float *w, float *y, int64_t dim, float eps) {
    hc_pdl_begin();
    __shared__ float part[32];
    const float *xr = x + (int64_t)blockIdx.x * dim;
    float *yr = y + (int64_t)blockIdx.x * dim;
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) s += xr[i] * xr[i];
    float scale = rsqrtf(block_sum(s, part) / (float)dim + eps);
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) yr[i] = xr[i] * scale * (w ? w[i] : 1.0f);
}

/* dim % 4 == 0, dim <= 4 * 256 * R, rows 16-byte aligned. ADD: x += r first (written back). */
template <int R, bool ADD>
static __global__ void __launch_bounds__(256) rmsnorm_reg_k(float *x, const float *r, const float *w, float *y,
                                                            int64_t dim, float eps) {
    __shared__ float part[32];
    const int64_t n4 = dim / 4;
    float4 wv[R], xv[R];
#pragma unroll
    for (int k = 0; k < R; k++) {
        int64_t i = threadIdx.x + k * 256;
        wv[k] = w && i < n4 ? __ldg((const float4 *)w + i) : make_float4(1.0f, 1.0f, 1.0f, 1.0f);
    }
    hc_pdl_begin();
    float4 *xr = (float4 *)(x + (int64_t)blockIdx.x * dim);
    const float4 *rr = (const float4 *)(r + (ADD ? (int64_t)blockIdx.x * dim : 0));
    float4 *yr = (float4 *)(y + (int64_t)blockIdx.x * dim);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < R; k++) {
        int64_t i = threadIdx.x + k * 256;
        xv[k] = i < n4 ? xr[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (ADD && i < n4) {
            float4 a = rr[i];
            xv[k] = make_float4(xv[k].x + a.x, xv[k].y + a.y, xv[k].z + a.z, xv[k].w + a.w);
            xr[i] = xv[k];
        }
    }
#pragma unroll
    for (int k = 0; k < R; k++) s += xv[k].x * xv[k].x + xv[k].y * xv[k].y + xv[k].z * xv[k].z + xv[k].w * xv[k].w;
    const float scale = rsqrtf(block_sum(s, part) / (float)dim + eps);
#pragma unroll
    for (int k = 0; k < R; k++) {
        int64_t i = threadIdx.x + k * 256;
        const float4 v = make_float4(xv[k].x * scale * wv[k].x, xv[k].y * scale * wv[k].y,
                                     xv[k].z * scale * wv[k].z, xv[k].w * scale * wv[k].w);
        if (i < n4) yr[i] = v;
    }
}

static bool reg_ok(const float *x, const float *w, const float *y, const float *r, int64_t dim) {
    return dim % 4 == 0 && dim >= 1024 && dim <= 4 * 256 * 16 && ((uintptr_t)x & 15) == 0 &&
           ((uintptr_t)y & 15) == 0 && ((uintptr_t)w & 15) == 0 && ((uintptr_t)r & 15) == 0;
}

template <bool ADD>
static void launch_reg(float *x, const float *r, const float *w, float *y, int64_t n_rows, int64_t dim, float eps,
                       void *stream) {
    int64_t k = (dim / 4 + 255) / 256;
    if (k <= 2) hc_launch(rmsnorm_reg_k<2, ADD>, (unsigned)n_rows, 256, 0, stream, x, r, w, y, dim, eps);
    else if (k <= 4) hc_launch(rmsnorm_reg_k<4, ADD>, (unsigned)n_rows, 256, 0, stream, x, r, w, y, dim, eps);
    else if (k <= 8) hc_launch(rmsnorm_reg_k<8, ADD>, (unsigned)n_rows, 256, 0, stream, x, r, w, y, dim, eps);
    else hc_launch(rmsnorm_reg_k<16, ADD>, (unsigned)n_rows, 256, 0, stream, x, r, w, y, dim, eps);
}

void hc_rmsnorm(const float *x, const float *w, float *y, int64_t n_rows, int64_t dim, float eps, void *stream) {
    if (n_rows <= 0) return;
    if (reg_ok(x, w, y, NULL, dim)) {
        launch_reg<false>((float *)x, NULL, w, y, n_rows, dim, eps, stream); /* x is only read */
        return;
    }
    /* few rows (decode): wide blocks, so one row's latency is short */
    int th = dim >= 1024 ? 256 : dim >= 256 ? 128 : 32;
    if (n_rows < 128 && dim >= 2048) th = dim >= 4096 ? 1024 : 512;
    hc_launch(rmsnorm_k, (unsigned)n_rows, th, 0, (cudaStream_t)stream, x, w, y, dim, eps);
}

void hc_add_rmsnorm(float *x, const float *r, const float *w, float *y, int64_t n_rows, int64_t dim, float eps,
                    void *stream) {
    if (n_rows <= 0) return;
    if (reg_ok(x, w, y, r, dim)) {
        launch_reg<true>(x, r, w, y, n_rows, dim, eps, stream);
        return;
    }
    hc_add(x, r, n_rows * dim, stream);
    hc_rmsnorm(x, w, y, n_rows, dim, eps, stream);
}
