/* hadamard.cu - the orthonormal Walsh-Hadamard rotation of rows (twin of hearth_hadamard_ref,
 * kernels/ref/ops_ref.h): one block per row, the row in shared memory, every element scaled by
 * 1/sqrt(n), then one butterfly per thread and span. Each element sees the twin's additions in
 * the twin's order, so the bits are the same. */
#include "backend/cuda/common.cuh"

static __global__ void hadamard_k(float *x, int64_t n) {
    hc_pdl_begin();
    extern __shared__ float s[];
    float *row = x + (int64_t)blockIdx.x * n;
    const float scale = 1.0f / sqrtf((float)n);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s[i] = row[i] * scale;
    __syncthreads();
    for (int64_t len = 1; len < n; len <<= 1) {
        for (int64_t j = threadIdx.x; j < n / 2; j += blockDim.x) {
            const int64_t i = (j / len) * 2 * len + j % len;
            const float u = s[i], v = s[i + len];
            s[i] = __fadd_rn(u, v);
            s[i + len] = __fsub_rn(u, v);
        }
        __syncthreads();
    }
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) row[i] = s[i];
}

void hc_hadamard(float *x, int64_t n_rows, int64_t n, void *stream) {
    if (n_rows <= 0) return;
    const int threads = n / 2 < 256 ? (int)(n / 2 > 0 ? n / 2 : 1) : 256;
    hc_launch(hadamard_k, dim3((unsigned)n_rows), threads, (size_t)n * sizeof(float), stream, x, n);
}
