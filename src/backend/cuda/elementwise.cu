/* elementwise.cu - the small row ops of a step (twins of the CPU backend's add, add_rows,
 * scale, softcap and the logits row gather): one thread per element. */
#include "backend/cuda/common.cuh"

static __global__ void add_k(float *x, const float *y, int64_t n) {
    hc_pdl_begin();
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += y[i];
}

static __global__ void add_rows_k(float *x, const float *b, int64_t n, int64_t dim) {
    hc_pdl_begin();
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += b[i % dim];
}

static __global__ void scale_k(float *x, int64_t n, float s) {
    hc_pdl_begin();
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}

static __global__ void softcap_k(float *x, int64_t n, float cap) {
    hc_pdl_begin();
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = cap * tanhf(x[i] / cap);
}

static __global__ void copy_rows_k(const float *x, int64_t dim, const int32_t *rows, int64_t n, float *y) {
    hc_pdl_begin();
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n * dim) y[i] = x[(int64_t)rows[i / dim] * dim + i % dim];
}

void hc_add(float *x, const float *y, int64_t n, void *stream) {
    if (n > 0) hc_launch(add_k, hc_blocks(n, 256), 256, 0, stream, x, y, n);
}

void hc_add_rows(float *x, const float *b, int64_t n_rows, int64_t dim, void *stream) {
    int64_t n = n_rows * dim;
    if (n > 0) hc_launch(add_rows_k, hc_blocks(n, 256), 256, 0, stream, x, b, n, dim);
}

void hc_scale(float *x, int64_t n, float s, void *stream) {
    if (n > 0) hc_launch(scale_k, hc_blocks(n, 256), 256, 0, stream, x, n, s);
}

void hc_softcap(float *x, int64_t n, float cap, void *stream) {
    if (n > 0) hc_launch(softcap_k, hc_blocks(n, 256), 256, 0, stream, x, n, cap);
}

void hc_copy_rows(const float *x, int64_t dim, const int32_t *rows, int64_t n, float *y, void *stream) {
    if (n * dim > 0) hc_launch(copy_rows_k, hc_blocks(n * dim, 256), 256, 0, stream, x, dim, rows, n, y);
}
