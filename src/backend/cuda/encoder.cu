/* encoder.cu - the ops of a BERT-style encoder that a decoder step has no use for (the CUDA
 * twins of kernels/ref/encoder_ref.h and of models/bert.c's pooling): LayerNorm with weight and
 * bias, the exact GELU, bidirectional attention over a padded batch of sequences, pooling per
 * sequence and L2 normalization of rows.
 *
 * The batch is padded (models/bert_device.c): sequence s owns rows s * L .. s * L + L - 1 of
 * every activation, its first len[s] real and the rest padding. The matmuls run over the padding
 * too (its rows are never read by a real one); attention masks keys j >= len[s] and writes zeros
 * for padding queries; the pooling reads the real rows only.
 *
 * Sums follow the references where they are in double (LayerNorm's mean and variance, the mean
 * pooling, the L2 norm); attention sums in float in another order than the reference (a tree
 * over the block instead of one running sum), held to the attention_f32 tolerance.
 */
#include "backend/cuda/common.cuh"

enum { ENC_THREADS = 128 };

/* The sum of v over the block's ENC_THREADS threads, returned to every thread. */
template <typename T>
static __device__ __forceinline__ T block_sum(T v, T *red) {
#pragma unroll
    for (int o = HC_WARP / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x % HC_WARP == 0) red[threadIdx.x / HC_WARP] = v;
    __syncthreads();
    T s = 0;
#pragma unroll
    for (int w = 0; w < ENC_THREADS / HC_WARP; w++) s += red[w];
    __syncthreads(); /* red is reused by the next call */
    return s;
}

static __device__ __forceinline__ float block_max(float v, float *red) {
#pragma unroll
    for (int o = HC_WARP / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (threadIdx.x % HC_WARP == 0) red[threadIdx.x / HC_WARP] = v;
    __syncthreads();
    float m = -INFINITY;
#pragma unroll
    for (int w = 0; w < ENC_THREADS / HC_WARP; w++) m = fmaxf(m, red[w]);
    __syncthreads();
    return m;
}

/* one block per row: hearth_layernorm_ref */
static __global__ void __launch_bounds__(ENC_THREADS) layernorm_k(const float *x, const float *w, const float *b,
                                                                    float *y, int64_t dim, float eps) {
    hc_pdl_begin();
    __shared__ double red[ENC_THREADS / HC_WARP];
    const float *xr = x + (int64_t)blockIdx.x * dim;
    float *yr = y + (int64_t)blockIdx.x * dim;
    double s = 0;
    for (int64_t i = threadIdx.x; i < dim; i += ENC_THREADS) s += xr[i];
    const double mean = block_sum(s, red) / (double)dim;
    double v = 0;
    for (int64_t i = threadIdx.x; i < dim; i += ENC_THREADS) {
        const double d = (double)xr[i] - mean;
        v += d * d;
    }
    const double var = block_sum(v, red) / (double)dim;
    const float inv = (float)(1.0 / sqrt(var + (double)eps)), m = (float)mean;
    for (int64_t i = threadIdx.x; i < dim; i += ENC_THREADS) {
        float o = (xr[i] - m) * inv;
        if (w) o *= w[i];
        if (b) o += b[i];
        yr[i] = o;
    }
}

/* hearth_gelu_erf_ref */
static __global__ void gelu_erf_k(float *x, int64_t n) {
    hc_pdl_begin();
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}

/* one block per (query row i, head h, sequence s): the scores of keys 0 .. len[s] - 1 in shared
 * memory (L floats), their maximum, the exponentials and their sum, then each output dim as the
 * weighted sum of the values; hearth_attn_full_ref over the sequence's real rows */
static __global__ void __launch_bounds__(ENC_THREADS) attn_k(const float *q, const float *k, const float *v,
                                                               int64_t ld, float *out, int64_t ldo, int32_t L,
                                                               const int32_t *len, int32_t head_dim, float scale) {
    hc_pdl_begin();
    extern __shared__ float sc[]; /* [L] scores, then [head_dim] the query */
    __shared__ float red[ENC_THREADS / HC_WARP];
    const int64_t s = blockIdx.z, i = blockIdx.x, h = blockIdx.y, n = len[s];
    const int64_t off = h * head_dim, row0 = s * (int64_t)L;
    float *ot = out + (row0 + i) * ldo + off;
    if (i >= n) { /* a padding query: zeros */
        for (int d = threadIdx.x; d < head_dim; d += ENC_THREADS) ot[d] = 0.0f;
        return;
    }
    float *qs = sc + L;
    for (int d = threadIdx.x; d < head_dim; d += ENC_THREADS) qs[d] = q[(row0 + i) * ld + off + d];
    __syncthreads();
    float mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < n; j += ENC_THREADS) {
        const float *kj = k + (row0 + j) * ld + off;
        float a = 0;
        for (int d = 0; d < head_dim; d++) a += qs[d] * kj[d];
        a *= scale;
        sc[j] = a;
        mx = fmaxf(mx, a);
    }
    mx = block_max(mx, red);
    float sum = 0;
    for (int64_t j = threadIdx.x; j < n; j += ENC_THREADS) {
        const float e = expf(sc[j] - mx);
        sc[j] = e;
        sum += e;
    }
    sum = block_sum(sum, red); /* its barriers also publish sc */
    const float inv = 1.0f / sum;
    for (int d = threadIdx.x; d < head_dim; d += ENC_THREADS) {
        float a = 0;
        for (int64_t j = 0; j < n; j++) a += sc[j] * inv * v[(row0 + j) * ld + off + d];
        ot[d] = a;
    }
}

/* one block per sequence: its mean (summed in double, as bert.c's pool_out), first or last row */
static __global__ void pool_k(const float *x, int64_t dim, int32_t L, const int32_t *len, int kind, float *out) {
    hc_pdl_begin();
    const int64_t s = blockIdx.x, n = len[s];
    const float *xs = x + s * (int64_t)L * dim;
    float *os = out + s * dim;
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
        if (kind == 1) os[i] = xs[i];                       /* CLS */
        else if (kind == 2) os[i] = xs[(n - 1) * dim + i];  /* last */
        else {
            double sum = 0;
            for (int64_t t = 0; t < n; t++) sum += xs[t * dim + i];
            os[i] = (float)(sum / (double)n);
        }
    }
}

/* one block per row: x / max(||x||, 1e-12), the norm summed in double (hearth_embed_normalize) */
static __global__ void __launch_bounds__(ENC_THREADS) l2norm_k(float *x, int64_t dim) {
    hc_pdl_begin();
    __shared__ double red[ENC_THREADS / HC_WARP];
    float *xr = x + (int64_t)blockIdx.x * dim;
    double ss = 0;
    for (int64_t i = threadIdx.x; i < dim; i += ENC_THREADS) ss += (double)xr[i] * xr[i];
    double norm = sqrt(block_sum(ss, red));
    if (norm < 1e-12) norm = 1e-12;
    const float inv = (float)(1.0 / norm);
    for (int64_t i = threadIdx.x; i < dim; i += ENC_THREADS) xr[i] *= inv;
}

void hc_layernorm(const float *x, const float *w, const float *b, float *y, int64_t n_rows, int64_t dim, float eps,
                  void *stream) {
    if (n_rows > 0) hc_launch(layernorm_k, dim3((unsigned)n_rows), ENC_THREADS, 0, stream, x, w, b, y, dim, eps);
}

void hc_gelu_erf(float *x, int64_t n, void *stream) {
    if (n > 0) hc_launch(gelu_erf_k, hc_blocks(n, 256), 256, 0, stream, x, n);
}

bool hc_attn_enc_supported(int32_t L, int32_t head_dim) {
    return L > 0 && head_dim > 0 && ((size_t)L + (size_t)head_dim) * sizeof(float) <= 48 * 1024;
}

void hc_attn_enc(const float *q, const float *k, const float *v, int64_t ld, float *out, int64_t ldo, int64_t n_seq,
                 int32_t L, const int32_t *len, int32_t n_head, int32_t head_dim, float scale, void *stream) {
    if (n_seq <= 0 || L <= 0) return;
    size_t smem = ((size_t)L + (size_t)head_dim) * sizeof(float);
    hc_launch(attn_k, dim3((unsigned)L, (unsigned)n_head, (unsigned)n_seq), ENC_THREADS, smem, stream, q, k, v, ld,
              out, ldo, L, len, head_dim, scale);
}

void hc_pool(const float *x, int64_t n_seq, int32_t L, int64_t dim, const int32_t *len, int kind, float *out,
             void *stream) {
    if (n_seq > 0) hc_launch(pool_k, dim3((unsigned)n_seq), 256, 0, stream, x, dim, L, len, kind, out);
}

void hc_l2norm(float *x, int64_t n_rows, int64_t dim, void *stream) {
    if (n_rows > 0) hc_launch(l2norm_k, dim3((unsigned)n_rows), ENC_THREADS, 0, stream, x, dim);
}
