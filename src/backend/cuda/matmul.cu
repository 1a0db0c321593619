/*
 * matmul.cu - y = x W^T for every weight type (twin of hearth_matmul's reference set).
 *
 * Few tokens (decode, <= HC_GEMV_MAX_TOK): matrix-vector kernels that read each weight byte
 * once. A row is shared by S warps (S from 1 to 8, more when the matrix has few rows, so the
 * GPU has enough loads in flight), four 16-byte loads per lane in flight, dotted with every
 * token's activations in registers. F32/F16/BF16 rows meet f32 activations. Q4_0, Q4_1 and Q8_0
 * rows meet activations quantized to 8 bits per 32-element block first (as the CPU's default
 * kernels and llama.cpp do: the scale rounded to f16, the block's sum kept for Q4_1's minimum)
 * and are dotted four bytes at a time with dp4a. The other quantized types go 32 elements (a
 * block, or a K-quant sub-block) per lane, dequantized to f32.
 *
 * Many tokens (prefill, large batches): cuBLAS. F32 weights run as an f32 GEMM; F16 and BF16
 * weights multiply activations rounded to the weights' type, accumulating in f32; quantized
 * weights are first dequantized to f16 into a scratch buffer kept between calls (grown as
 * needed), then go the F16 way.
 */
#include "backend/cuda/common.cuh"

#include <cublas_v2.h>

/* the 8-bit activations: at most HC_GEMV_MAX_TOK rows of at most QMAX_IN values, allocated once
 * (a step graph holds their address) */
#define QMAX_IN 65536

struct hc_matmul_ctx {
    cudaStream_t   stream;
    cublasHandle_t blas;
    void          *wbuf, *xbuf;
    size_t         wcap, xcap;
    int8_t        *xq;  /* [tok][n_in] */
    float         *xd;  /* [tok][n_in / 32] scale, then f16(scale * sum) */
};

hc_matmul_ctx *hc_matmul_create(void *stream) {
    hc_matmul_ctx *c = (hc_matmul_ctx *)calloc(1, sizeof *c);
    if (!c) return NULL;
    c->stream = (cudaStream_t)stream;
    if (cublasCreate(&c->blas) != CUBLAS_STATUS_SUCCESS) {
        free(c);
        return NULL;
    }
    cublasSetStream(c->blas, c->stream);
    if (cudaMalloc((void **)&c->xq, (size_t)HC_GEMV_MAX_TOK * QMAX_IN) != cudaSuccess ||
        cudaMalloc((void **)&c->xd, (size_t)HC_GEMV_MAX_TOK * (QMAX_IN / 32) * 2 * sizeof(float)) != cudaSuccess) {
        hc_matmul_destroy(c);
        return NULL;
    }
    return c;
}

void hc_matmul_destroy(hc_matmul_ctx *c) {
    if (!c) return;
    cublasDestroy(c->blas);
    cudaFree(c->wbuf);
    cudaFree(c->xbuf);
    cudaFree(c->xq);
    cudaFree(c->xd);
    free(c);
}

/* ---- matrix-vector kernels ---- */

template <int T>
static __device__ __forceinline__ void load8(const uint8_t *row, int64_t i, float *w) {
    if (T == HC_F32) {
        float4 a = *(const float4 *)(row + i * 4), b = *(const float4 *)(row + i * 4 + 16);
        w[0] = a.x; w[1] = a.y; w[2] = a.z; w[3] = a.w; w[4] = b.x; w[5] = b.y; w[6] = b.z; w[7] = b.w;
    } else {
        uint4 u = *(const uint4 *)(row + i * 2);
        uint32_t p[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int k = 0; k < 4; k++) {
            if (T == HC_BF16) {
                w[2 * k] = __uint_as_float(p[k] << 16);
                w[2 * k + 1] = __uint_as_float(p[k] & 0xffff0000u);
            } else {
                w[2 * k] = hc_h2f((uint16_t)(p[k] & 0xffff));
                w[2 * k + 1] = hc_h2f((uint16_t)(p[k] >> 16));
            }
        }
    }
}

template <int T>
static __device__ __forceinline__ float load1(const uint8_t *row, int64_t i) {
    return T == HC_F32 ? ((const float *)row)[i] : T == HC_BF16 ? hc_bf2f(((const uint16_t *)row)[i])
                                                                : hc_h2f(((const uint16_t *)row)[i]);
}

template <int NT>
static __device__ __forceinline__ void finish(float *acc, int n_tok, int64_t o, float *y, int64_t ldy, int lane) {
#pragma unroll
    for (int t = 0; t < NT; t++) {
        if (t >= n_tok) break;
        float s = hc_warp_sum(acc[t]);
        if (lane == 0) y[t * ldy + o] = s;
    }
}

/* Sum each token's partial over the S warps of a row and store it. */
template <int NT, int S>
static __device__ __forceinline__ void finish_s(float *acc, int n_tok, int64_t o, int64_t n_out, float *y,
                                                int64_t ldy) {
    __shared__ float red[8][NT];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
    for (int t = 0; t < NT; t++) acc[t] = hc_warp_sum(acc[t]);
    if (S == 1) {
        if (lane == 0 && o < n_out)
#pragma unroll
            for (int t = 0; t < NT; t++)
                if (t < n_tok) y[t * ldy + o] = acc[t];
        return;
    }
    if (lane == 0)
#pragma unroll
        for (int t = 0; t < NT; t++) red[warp][t] = acc[t];
    __syncthreads();
    if (lane == 0 && warp % S == 0 && o < n_out)
#pragma unroll
        for (int t = 0; t < NT; t++) {
            if (t >= n_tok) break;
            float v = 0.0f;
#pragma unroll
            for (int k = 0; k < S; k++) v += red[warp + k][t];
            y[t * ldy + o] = v;
        }
}

template <int NT>
static __device__ __forceinline__ void fma8(float *acc, const float *wv, const float *__restrict__ x, int64_t n_in,
                                            int64_t i, int n_tok) {
#pragma unroll
    for (int t = 0; t < NT; t++) {
        if (t >= n_tok) break;
        const float4 *xp = (const float4 *)(x + t * n_in + i);
        float4 a = __ldg(xp), b = __ldg(xp + 1);
        acc[t] += wv[0] * a.x + wv[1] * a.y + wv[2] * a.z + wv[3] * a.w + wv[4] * b.x + wv[5] * b.y + wv[6] * b.z +
                  wv[7] * b.w;
    }
}

/* Rows 16-byte aligned, n_in % 8 == 0. 256 threads: 8 / S rows, S warps each. */
template <int T, int NT, int S>
static __global__ void __launch_bounds__(256) gemv_plain(const uint8_t *w, size_t row_bytes, int64_t n_out,
                                                         int64_t n_in, const float *__restrict__ x, int n_tok,
                                                         float *y, int64_t ldy) {
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int64_t o = (int64_t)blockIdx.x * (8 / S) + warp / S;
    float acc[NT];
#pragma unroll
    for (int t = 0; t < NT; t++) acc[t] = 0.0f;
    if (o < n_out) {
        const uint8_t *row = w + (size_t)o * row_bytes;
        const int64_t step = S * 256, i0 = ((warp % S) * 32 + lane) * 8;
        /* four loads in flight per lane: out-of-row ones read the lane's first group again
         * (always in the row) and are masked, so no branch separates the loads */
        for (int64_t i = i0; i < n_in; i += 4 * step) {
            float wv[4][8], keep[4];
#pragma unroll
            for (int u = 0; u < 4; u++) {
                bool in = i + u * step < n_in;
                keep[u] = in ? 1.0f : 0.0f;
                load8<T>(row, in ? i + u * step : i0, wv[u]);
            }
#pragma unroll
            for (int u = 0; u < 4; u++) {
#pragma unroll
                for (int e = 0; e < 8; e++) wv[u][e] *= keep[u];
                fma8<NT>(acc, wv[u], x, n_in, i + u * step < n_in ? i + u * step : i0, n_tok);
            }
        }
    }
    finish_s<NT, S>(acc, n_tok, o, n_out, y, ldy);
}

/* Any row alignment or width: one element per lane at a time, a warp per row. */
template <int T, int NT>
static __global__ void __launch_bounds__(128) gemv_plain_any(const uint8_t *w, size_t row_bytes, int64_t n_out,
                                                             int64_t n_in, const float *__restrict__ x, int n_tok,
                                                             float *y, int64_t ldy) {
    int lane = threadIdx.x % 32;
    int64_t o = (int64_t)blockIdx.x * 4 + threadIdx.x / 32;
    if (o >= n_out) return;
    const uint8_t *row = w + (size_t)o * row_bytes;
    float acc[NT];
#pragma unroll
    for (int t = 0; t < NT; t++) acc[t] = 0.0f;
    for (int64_t i = lane; i < n_in; i += 32) {
        float wv = load1<T>(row, i);
#pragma unroll
        for (int t = 0; t < NT; t++) {
            if (t >= n_tok) break;
            acc[t] += wv * x[t * n_in + i];
        }
    }
    finish<NT>(acc, n_tok, o, y, ldy, lane);
}

/* ---- 8-bit activations and dp4a dots (Q4_0, Q4_1, Q8_0) ---- */

/* One warp per 32-element block: q = round(x / d), d = max|x| / 127 rounded to f16 as stored by
 * the CPU's q8_0/q8_1; xd[2b] = d, xd[2b+1] = f16(d * sum q). */
static __global__ void quantize_q8_k(const float *x, int64_t n_blocks, int8_t *xq, float *xd) {
    int64_t b = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (b >= n_blocks) return;
    float v = x[b * 32 + lane];
    float amax = hc_warp_max(fabsf(v));
    float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    int q = (int)roundf(v * id);
    xq[b * 32 + lane] = (int8_t)q;
    float sum = hc_warp_sum((float)q);
    if (lane == 0) {
        xd[2 * b] = hc_round_h(d);
        xd[2 * b + 1] = hc_round_h(d * sum);
    }
}

static __device__ __forceinline__ uint32_t ld2x16(const uint8_t *p) {
    const uint16_t *h = (const uint16_t *)p;
    return (uint32_t)h[0] | (uint32_t)h[1] << 16;
}

/* dot of weight block c of a row with activation block c of token t, both as integers */
template <int T>
static __device__ __forceinline__ float dot_q8(const uint8_t *row, int64_t c, const int8_t *xq, const float *xd) {
    const int4 *xp = (const int4 *)(xq + c * 32);
    int4 x0 = __ldg(xp), x1 = __ldg(xp + 1);
    int xv[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
    float dx = xd[2 * c];
    if (T == HC_Q4_0) {
        const uint8_t *b = row + c * 18;
        float dw = hc_h2f(*(const uint16_t *)b);
        int s = 0, sx = 0;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            uint32_t q = ld2x16(b + 2 + 4 * k);
            s = __dp4a((int)(q & 0x0F0F0F0Fu), xv[k], s);
            s = __dp4a((int)((q >> 4) & 0x0F0F0F0Fu), xv[4 + k], s);
            sx = __dp4a(0x01010101, xv[k], sx);
            sx = __dp4a(0x01010101, xv[4 + k], sx);
        }
        return dw * dx * (float)(s - 8 * sx);
    } else if (T == HC_Q4_1) {
        const uint8_t *b = row + c * 20;
        const uint32_t *w = (const uint32_t *)b;
        uint32_t dm = w[0];
        float dw = hc_h2f((uint16_t)(dm & 0xffff)), mw = hc_h2f((uint16_t)(dm >> 16));
        int s = 0;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            uint32_t q = w[1 + k];
            s = __dp4a((int)(q & 0x0F0F0F0Fu), xv[k], s);
            s = __dp4a((int)((q >> 4) & 0x0F0F0F0Fu), xv[4 + k], s);
        }
        return dw * dx * (float)s + mw * xd[2 * c + 1];
    } else { /* Q8_0 */
        const uint8_t *b = row + c * 34;
        float dw = hc_h2f(*(const uint16_t *)b);
        int s = 0;
#pragma unroll
        for (int k = 0; k < 8; k++) s = __dp4a((int)ld2x16(b + 2 + 4 * k), xv[k], s);
        return dw * dx * (float)s;
    }
}

template <int T, int NT, int S>
static __global__ void __launch_bounds__(256) gemv_q8(const uint8_t *w, size_t row_bytes, int64_t n_out,
                                                      int64_t n_in, const int8_t *__restrict__ xq,
                                                      const float *__restrict__ xd, int n_tok, float *y, int64_t ldy) {
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int64_t o = (int64_t)blockIdx.x * (8 / S) + warp / S;
    float acc[NT];
#pragma unroll
    for (int t = 0; t < NT; t++) acc[t] = 0.0f;
    if (o < n_out) {
        const uint8_t *row = w + (size_t)o * row_bytes;
        const int64_t nb = n_in / 32, c0 = (warp % S) * 32 + lane, step = S * 32;
        /* four blocks per lane per round, masked past the row's end, so their loads overlap */
        for (int64_t c = c0; c < nb; c += 4 * step) {
#pragma unroll
            for (int t = 0; t < NT; t++) {
                if (t >= n_tok) break;
                float v[4];
#pragma unroll
                for (int u = 0; u < 4; u++) {
                    int64_t cu = c + u * step < nb ? c + u * step : c0;
                    v[u] = dot_q8<T>(row, cu, xq + t * n_in, xd + t * nb * 2);
                }
#pragma unroll
                for (int u = 0; u < 4; u++) acc[t] += c + u * step < nb ? v[u] : 0.0f;
            }
        }
    }
    finish_s<NT, S>(acc, n_tok, o, n_out, y, ldy);
}

template <int T, int NT>
static __global__ void __launch_bounds__(128) gemv_quant(const uint8_t *w, size_t row_bytes, int64_t n_out,
                                                         int64_t n_in, const float *__restrict__ x, int n_tok,
                                                         float *y, int64_t ldy) {
    int lane = threadIdx.x % 32;
    int64_t o = (int64_t)blockIdx.x * 4 + threadIdx.x / 32;
    if (o >= n_out) return;
    const uint8_t *row = w + (size_t)o * row_bytes;
    float acc[NT];
#pragma unroll
    for (int t = 0; t < NT; t++) acc[t] = 0.0f;
    for (int64_t c = lane; c < n_in / 32; c += 32) {
        float wv[32];
        hc_dequant32<T>(row, c, wv);
#pragma unroll
        for (int t = 0; t < NT; t++) {
            if (t >= n_tok) break;
            const float4 *xp = (const float4 *)(x + t * n_in + c * 32);
            float s = 0.0f;
#pragma unroll
            for (int k = 0; k < 8; k++) {
                float4 a = __ldg(xp + k);
                s += wv[4 * k] * a.x + wv[4 * k + 1] * a.y + wv[4 * k + 2] * a.z + wv[4 * k + 3] * a.w;
            }
            acc[t] += s;
        }
    }
    finish<NT>(acc, n_tok, o, y, ldy, lane);
}

/* ---- conversions for the cuBLAS path ---- */

template <int T>
static __global__ void dequant_f16_k(const uint8_t *w, size_t row_bytes, int64_t n_out, int64_t n_in, __half *out) {
    int64_t nc = n_in / 32, i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_out * nc) return;
    int64_t r = i / nc, c = i % nc;
    float v[32];
    hc_dequant32<T>(w + (size_t)r * row_bytes, c, v);
    __half *o = out + r * n_in + c * 32;
#pragma unroll
    for (int j = 0; j < 32; j++) o[j] = __float2half_rn(v[j]);
}

static __global__ void x_to_f16_k(const float *x, int64_t n, __half *o) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) o[i] = __float2half_rn(fminf(fmaxf(x[i], -65504.0f), 65504.0f));
}

static __global__ void x_to_bf16_k(const float *x, int64_t n, __nv_bfloat16 *o) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) o[i] = __float2bfloat16_rn(x[i]);
}

static int grow(void **buf, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    cudaFree(*buf);
    *buf = NULL;
    *cap = 0;
    cudaError_t e = cudaMalloc(buf, need);
    if (e != cudaSuccess) return (int)e;
    *cap = need;
    return 0;
}

/* warps per row: enough rows x warps in flight to cover the GPU's memory latency */
static int warps_per_row(int64_t n_out) {
    int S = 1;
    while (S < 8 && n_out * S < 132 * 48) S *= 2;
    return S;
}

#define HC_S_SWITCH(S, BODY)                                  \
    switch (S) {                                              \
    case 1: { constexpr int SS = 1; BODY; } break;            \
    case 2: { constexpr int SS = 2; BODY; } break;            \
    case 4: { constexpr int SS = 4; BODY; } break;            \
    default: { constexpr int SS = 8; BODY; } break;           \
    }

template <int NT>
static void gemv(hc_matmul_ctx *c, int type, const uint8_t *w, size_t rb, int64_t n_out, int64_t n_in, const float *x,
                 int n_tok, float *y, int64_t ldy, bool exact) {
    cudaStream_t s = c->stream;
    int S = warps_per_row(n_out);
    unsigned g = hc_blocks(n_out, 8 / S);
    bool v8 = n_in % 8 == 0 && rb % 16 == 0 && ((uintptr_t)w & 15) == 0;
    if (type == HC_F32 || type == HC_F16 || type == HC_BF16) {
        if (!v8) {
            unsigned g4 = hc_blocks(n_out, 4);
            if (type == HC_F32) gemv_plain_any<HC_F32, NT><<<g4, 128, 0, s>>>(w, rb, n_out, n_in, x, n_tok, y, ldy);
            else if (type == HC_F16) gemv_plain_any<HC_F16, NT><<<g4, 128, 0, s>>>(w, rb, n_out, n_in, x, n_tok, y, ldy);
            else gemv_plain_any<HC_BF16, NT><<<g4, 128, 0, s>>>(w, rb, n_out, n_in, x, n_tok, y, ldy);
            return;
        }
        if (type == HC_F32) HC_S_SWITCH(S, (gemv_plain<HC_F32, NT, SS><<<g, 256, 0, s>>>(w, rb, n_out, n_in, x, n_tok, y, ldy)))
        else if (type == HC_F16) HC_S_SWITCH(S, (gemv_plain<HC_F16, NT, SS><<<g, 256, 0, s>>>(w, rb, n_out, n_in, x, n_tok, y, ldy)))
        else HC_S_SWITCH(S, (gemv_plain<HC_BF16, NT, SS><<<g, 256, 0, s>>>(w, rb, n_out, n_in, x, n_tok, y, ldy)))
        return;
    }
    if (!exact && (type == HC_Q4_0 || type == HC_Q4_1 || type == HC_Q8_0) && n_in <= QMAX_IN &&
        (type != HC_Q4_1 || ((uintptr_t)w & 3) == 0)) {
        int64_t nb = n_tok * (n_in / 32);
        quantize_q8_k<<<hc_blocks(nb * 32, 256), 256, 0, s>>>(x, nb, c->xq, c->xd);
        if (type == HC_Q4_0) HC_S_SWITCH(S, (gemv_q8<HC_Q4_0, NT, SS><<<g, 256, 0, s>>>(w, rb, n_out, n_in, c->xq, c->xd, n_tok, y, ldy)))
        else if (type == HC_Q4_1) HC_S_SWITCH(S, (gemv_q8<HC_Q4_1, NT, SS><<<g, 256, 0, s>>>(w, rb, n_out, n_in, c->xq, c->xd, n_tok, y, ldy)))
        else HC_S_SWITCH(S, (gemv_q8<HC_Q8_0, NT, SS><<<g, 256, 0, s>>>(w, rb, n_out, n_in, c->xq, c->xd, n_tok, y, ldy)))
        return;
    }
    unsigned g4 = hc_blocks(n_out, 4);
    HC_QUANT_SWITCH(type, (gemv_quant<QT, NT><<<g4, 128, 0, s>>>(w, rb, n_out, n_in, x, n_tok, y, ldy)));
}

int hc_matmul(hc_matmul_ctx *c, int type, const void *wv, size_t rb, int64_t n_out, int64_t n_in, const float *x,
              int64_t n_tok, float *y, int64_t ldy, bool exact) {
    const uint8_t *w = (const uint8_t *)wv;
    cudaStream_t s = c->stream;
    if (n_tok <= 0) return 0;
    if (n_tok <= HC_GEMV_MAX_TOK && ((uintptr_t)x & 15) == 0 && n_in % 4 == 0) {
        if (n_tok == 1) gemv<1>(c, type, w, rb, n_out, n_in, x, 1, y, ldy, exact);
        else gemv<HC_GEMV_MAX_TOK>(c, type, w, rb, n_out, n_in, x, (int)n_tok, y, ldy, exact);
        return (int)cudaGetLastError();
    }
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t st;
    if (type == HC_F32) {
        st = cublasSgemm(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)n_out, (int)n_tok, (int)n_in, &one, (const float *)w,
                         (int)(rb / 4), x, (int)n_in, &zero, y, (int)ldy);
        return (int)st;
    }
    int64_t nx = n_tok * n_in;
    int e = grow(&c->xbuf, &c->xcap, (size_t)nx * 2);
    if (e) return e;
    const void *A = w;
    int lda = (int)(rb / 2);
    cudaDataType at = CUDA_R_16F;
    if (type == HC_BF16) {
        at = CUDA_R_16BF;
        x_to_bf16_k<<<hc_blocks(nx, 256), 256, 0, s>>>(x, nx, (__nv_bfloat16 *)c->xbuf);
    } else {
        x_to_f16_k<<<hc_blocks(nx, 256), 256, 0, s>>>(x, nx, (__half *)c->xbuf);
        if (type != HC_F16) {
            if ((e = grow(&c->wbuf, &c->wcap, (size_t)(n_out * n_in) * 2))) return e;
            unsigned g = hc_blocks(n_out * (n_in / 32), 128);
            HC_QUANT_SWITCH(type, (dequant_f16_k<QT><<<g, 128, 0, s>>>(w, rb, n_out, n_in, (__half *)c->wbuf)));
            A = c->wbuf;
            lda = (int)n_in;
        }
    }
    st = cublasGemmEx(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)n_out, (int)n_tok, (int)n_in, &one, A, at, lda, c->xbuf,
                      at, (int)n_in, &zero, y, CUDA_R_32F, (int)ldy, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    return (int)st;
}
