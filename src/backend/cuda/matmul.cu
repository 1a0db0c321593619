/*
 * matmul.cu - y = x W^T for every weight type (twin of hearth_matmul's reference set).
 *
 * Few tokens (decode, <= HC_GEMV_MAX_TOK): the matrix-vector kernels of gemv.cu, which read
 * each weight byte once; one launch serves several weights that share the input (hc_matmul_n:
 * q, k and v; gate and up), with the activations quantized once. F32/F16/BF16 rows meet f32
 * activations. Q4_0, Q4_1 and Q8_0 rows meet activations quantized to 8 bits per 32-element
 * block first (as the CPU's default kernels and llama.cpp do: the scale rounded to f16, the
 * block's sum kept for Q4_1's minimum) and are dotted four bytes at a time with dp4a. That
 * quantization is a launch of its own, except for one token on the persistent layout with
 * HEARTH_CUDA_FUSE_Q8=1, where each block of the kernel quantizes the activations as it stages
 * them (nothing is kept between calls: every call quantizes its own input). Rows that
 * do not fall in 16-byte pieces take the older kernels below, as do the other quantized types,
 * which go 32 elements (a block, or a K-quant sub-block) per lane, dequantized to f32.
 *
 * A few dozen tokens (a batch of decodes): skinny.cu's tensor-core kernel for Q8_0, Q4_0, Q4_K and
 * Q6_K weights (dequantized as they are loaded, not copied first) and for 16-bit weights where
 * cuBLAS measured slower (the smaller ones: q, k and v in one launch, o), over the activations
 * rounded once to f16 (bf16 for BF16 weights), as for cuBLAS below.
 *
 * Many tokens (prefill, large batches): cuBLAS. F32 weights run as an f32 GEMM; F16 and BF16
 * weights multiply activations rounded to the weights' type, accumulating in f32; quantized
 * weights are first dequantized to f16 into a scratch buffer kept between calls (grown as
 * needed), then go the F16 way.
 */
#include "backend/cuda/gemv.cuh"
#include "backend/cuda/skinny.cuh"

#include <cublas_v2.h>

/* the 8-bit activations: at most HC_GEMV_MAX_TOK rows of at most QMAX_IN values, allocated once
 * (a step graph holds their address) */
#define QMAX_IN 65536

struct hc_matmul_ctx {
    cudaStream_t   stream;
    cublasHandle_t blas;
    void          *wbuf, *xbuf, *sbuf; /* sbuf: skinny.cu's partial sums */
    size_t         wcap, xcap, scap;
    int8_t        *xq;  /* [tok][n_in] */
    float         *xd;  /* [tok][n_in / 32] scale, then f16(scale * sum) */
};

static bool q8_fuse;
static long q8_fused;

void hc_q8_fuse_configure(bool on) { q8_fuse = on; }
long hc_q8_fused_count(void) { return q8_fused; } /* launches that quantized inside */

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
    cudaFree(c->sbuf);
    cudaFree(c->xq);
    cudaFree(c->xd);
    free(c);
}

/* ---- matrix-vector kernels ---- */

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

/* The older kernels: rows of any alignment or width, the types without an 8-bit path, and
 * Q4_0/Q4_1/Q8_0 rows whose blocks do not fall in 16-byte groups. */
template <int NT>
static void gemv_slow(hc_matmul_ctx *c, int type, const uint8_t *w, size_t rb, int64_t n_out, int64_t n_in,
                      const float *x, int n_tok, float *y, int64_t ldy, bool q8) {
    cudaStream_t s = c->stream;
    unsigned g4 = hc_blocks(n_out, 4);
    if (type == HC_F32 || type == HC_F16 || type == HC_BF16) {
        if (type == HC_F32) gemv_plain_any<HC_F32, NT><<<g4, 128, 0, s>>>(w, rb, n_out, n_in, x, n_tok, y, ldy);
        else if (type == HC_F16) gemv_plain_any<HC_F16, NT><<<g4, 128, 0, s>>>(w, rb, n_out, n_in, x, n_tok, y, ldy);
        else gemv_plain_any<HC_BF16, NT><<<g4, 128, 0, s>>>(w, rb, n_out, n_in, x, n_tok, y, ldy);
        return;
    }
    if (q8) { /* activations already quantized into c->xq, c->xd */
        int S = warps_per_row(n_out);
        unsigned g = hc_blocks(n_out, 8 / S);
        if (type == HC_Q4_0) HC_S_SWITCH(S, (gemv_q8<HC_Q4_0, NT, SS><<<g, 256, 0, s>>>(w, rb, n_out, n_in, c->xq, c->xd, n_tok, y, ldy)))
        else if (type == HC_Q4_1) HC_S_SWITCH(S, (gemv_q8<HC_Q4_1, NT, SS><<<g, 256, 0, s>>>(w, rb, n_out, n_in, c->xq, c->xd, n_tok, y, ldy)))
        else HC_S_SWITCH(S, (gemv_q8<HC_Q8_0, NT, SS><<<g, 256, 0, s>>>(w, rb, n_out, n_in, c->xq, c->xd, n_tok, y, ldy)))
        return;
    }
    HC_QUANT_SWITCH(type, (gemv_quant<QT, NT><<<g4, 128, 0, s>>>(w, rb, n_out, n_in, x, n_tok, y, ldy)));
}

/* Up to HC_MV_MAX weights of one type and width against the same few tokens. */
static void gemv_n(hc_matmul_ctx *c, int type, const uint8_t *const *w, size_t rb, const int64_t *n_out, int n,
                   int64_t n_in, const float *x, int n_tok, float *const *y, const int64_t *ldy, bool exact) {
    hc_mv m = {};
    m.n = n;
    m.row_bytes = rb;
    m.n_in = n_in;
    for (int i = 0; i < n; i++) {
        m.w[i] = w[i];
        m.y[i] = y[i];
        m.ldy[i] = ldy[i];
        m.end[i] = (i ? m.end[i - 1] : 0) + n_out[i];
    }
    bool plain = type == HC_F32 || type == HC_F16 || type == HC_BF16;
    bool q8 = !exact && (type == HC_Q4_0 || type == HC_Q4_1 || type == HC_Q8_0) && n_in <= QMAX_IN;
    for (int i = 0; i < n; i++) q8 = q8 && (type != HC_Q4_1 || ((uintptr_t)w[i] & 3) == 0);
    const bool fast = (plain || q8) && hc_mv_fast_ok(type, &m, q8);
    /* one token on the persistent layout: its blocks may quantize it as they stage it */
    const bool inside = fast && q8 && q8_fuse && hc_mv_q8_quantizes(n_tok);
    if (q8 && !inside) hc_mv_quantize(x, n_tok * (n_in / 32), c->xq, c->xd, c->stream);
    if (inside) q8_fused++;
    if (fast) {
        if (plain) hc_mv_plain(type, &m, x, n_tok, c->stream);
        else hc_mv_q8(type, &m, c->xq, c->xd, inside ? x : NULL, n_tok, c->stream);
        return;
    }
    for (int i = 0; i < n; i++) {
        if (n_tok == 1) gemv_slow<1>(c, type, w[i], rb, n_out[i], n_in, x, 1, y[i], ldy[i], q8);
        else gemv_slow<HC_GEMV_MAX_TOK>(c, type, w[i], rb, n_out[i], n_in, x, n_tok, y[i], ldy[i], q8);
    }
}

static bool glu_fuse = true;

void hc_glu_fuse_configure(bool on) { glu_fuse = on; }
bool hc_matmul_glu_on(void) { return glu_fuse && hc_mv_glu_layout(); }

bool hc_matmul_glu(hc_matmul_ctx *c, int type, const void *wg, const void *wu, size_t rb, int64_t n_out, int64_t n_in,
                   const float *x, int64_t n_tok, float *g, int64_t ldg, int kind) {
    /* SwiGLU only: the fused launch's GeGLU rows of f16/bf16 weights were seen to differ from
     * the separate GLU in the last bits (test_cuda_matmul, matmul_gemv_gate_up_then_glu), and the
     * ffn_glu contract is the same bits either way */
    if (!glu_fuse || kind != 0 || n_tok < 1 || n_tok > HC_GEMV_MAX_TOK || ((uintptr_t)x & 15) != 0 ||
        n_in % 4 != 0 || (type != HC_F32 && type != HC_F16 && type != HC_BF16))
        return false;
    hc_mv m = {};
    m.n = 2;
    m.row_bytes = rb;
    m.n_in = n_in;
    m.w[0] = (const uint8_t *)wg;
    m.w[1] = (const uint8_t *)wu;
    m.y[0] = m.y[1] = g;
    m.ldy[0] = m.ldy[1] = ldg;
    m.end[0] = n_out;
    m.end[1] = 2 * n_out;
    if (!hc_mv_glu_ok(type, &m)) return false;
    hc_mv_plain_glu(type, &m, x, (int)n_tok, kind, c->stream);
    return true;
}

/* activations x of n_tok rows rounded into c->xbuf as the 16-bit type the GEMM of a type-t
 * weight reads (bf16 for BF16 weights, f16 for the rest) */
static int x_to_16(hc_matmul_ctx *c, int type, const float *x, int64_t nx) {
    int e = grow(&c->xbuf, &c->xcap, (size_t)nx * 2);
    if (e) return e;
    if (type == HC_BF16) x_to_bf16_k<<<hc_blocks(nx, 256), 256, 0, c->stream>>>(x, nx, (__nv_bfloat16 *)c->xbuf);
    else x_to_f16_k<<<hc_blocks(nx, 256), 256, 0, c->stream>>>(x, nx, (__half *)c->xbuf);
    return 0;
}

/* the cuBLAS product of a non-f32 weight with the activations already in c->xbuf (x_to_16) */
static int gemm_16(hc_matmul_ctx *c, int type, const uint8_t *w, size_t rb, int64_t n_out, int64_t n_in,
                   int64_t n_tok, float *y, int64_t ldy) {
    const float one = 1.0f, zero = 0.0f;
    const void *A = w;
    int lda = (int)(rb / 2);
    cudaDataType at = type == HC_BF16 ? CUDA_R_16BF : CUDA_R_16F;
    if (type != HC_BF16 && type != HC_F16) {
        int e = grow(&c->wbuf, &c->wcap, (size_t)(n_out * n_in) * 2);
        if (e) return e;
        unsigned g = hc_blocks(n_out * (n_in / 32), 128);
        HC_QUANT_SWITCH(type, (dequant_f16_k<QT><<<g, 128, 0, c->stream>>>(w, rb, n_out, n_in, (__half *)c->wbuf)));
        A = c->wbuf;
        lda = (int)n_in;
    }
    cublasStatus_t st = cublasGemmEx(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)n_out, (int)n_tok, (int)n_in, &one, A,
                                     at, lda, c->xbuf, at, (int)n_in, &zero, y, CUDA_R_32F, (int)ldy,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    return (int)st;
}

static int skinny(hc_matmul_ctx *c, int type, const void *const *w, int n, size_t rb, const int64_t *n_out,
                  int64_t n_in, int64_t n_tok, float *const *y, const int64_t *ldy) {
    int e = grow(&c->sbuf, &c->scap, hc_skinny_scratch(n_out, n, n_in, n_tok));
    if (e) return e;
    hc_skinny(type, w, n, rb, n_out, n_in, c->xbuf, n_tok, y, ldy, (float *)c->sbuf, c->stream);
    return (int)cudaGetLastError();
}

/* n weights that share the activations in c->xbuf: one skinny.cu launch for all where it takes
 * them, else each its own (skinny.cu or cuBLAS); a weight gives the same bits either way */
static int gemm_16n(hc_matmul_ctx *c, int type, const void *const *w, int n, size_t rb, const int64_t *n_out,
                    int64_t n_in, int64_t n_tok, float *const *y, const int64_t *ldy) {
    if (hc_skinny_ok(type, w, n, rb, n_out, n_in, n_tok)) return skinny(c, type, w, n, rb, n_out, n_in, n_tok, y, ldy);
    for (int i = 0; i < n; i++) {
        int e = hc_skinny_ok(type, &w[i], 1, rb, &n_out[i], n_in, n_tok)
                    ? skinny(c, type, &w[i], 1, rb, &n_out[i], n_in, n_tok, &y[i], &ldy[i])
                    : gemm_16(c, type, (const uint8_t *)w[i], rb, n_out[i], n_in, n_tok, y[i], ldy[i]);
        if (e) return e;
    }
    return 0;
}

bool hc_matmul_n_ok(int n, int64_t n_tok) { return n >= 1 && n <= HC_MV_MAX && n_tok >= 1 && n_tok <= HC_GEMV_MAX_TOK; }

int hc_matmul_n(hc_matmul_ctx *c, int type, const void *const *w, size_t rb, const int64_t *n_out, int n,
                int64_t n_in, const float *x, int64_t n_tok, float *const *y, const int64_t *ldy, bool exact) {
    if (!hc_matmul_n_ok(n, n_tok) || ((uintptr_t)x & 15) != 0 || n_in % 4 != 0) {
        /* where hc_matmul takes cuBLAS for each weight: the activations rounded once for all */
        const bool blas = n_tok > HC_GEMV_MAX_TOK || ((uintptr_t)x & 15) != 0 || n_in % 4 != 0;
        if (blas && type != HC_F32) {
            int e = x_to_16(c, type, x, n_tok * n_in);
            return e ? e : gemm_16n(c, type, w, n, rb, n_out, n_in, n_tok, y, ldy);
        }
        for (int i = 0; i < n; i++) {
            int e = hc_matmul(c, type, w[i], rb, n_out[i], n_in, x, n_tok, y[i], ldy[i], exact);
            if (e) return e;
        }
        return 0;
    }
    gemv_n(c, type, (const uint8_t *const *)w, rb, n_out, n, n_in, x, (int)n_tok, y, ldy, exact);
    return (int)cudaGetLastError();
}

int hc_matmul(hc_matmul_ctx *c, int type, const void *wv, size_t rb, int64_t n_out, int64_t n_in, const float *x,
              int64_t n_tok, float *y, int64_t ldy, bool exact) {
    const uint8_t *w = (const uint8_t *)wv;
    if (n_tok <= 0) return 0;
    if (n_tok <= HC_GEMV_MAX_TOK && ((uintptr_t)x & 15) == 0 && n_in % 4 == 0) {
        gemv_n(c, type, &w, rb, &n_out, 1, n_in, x, (int)n_tok, &y, &ldy, exact);
        return (int)cudaGetLastError();
    }
    if (type == HC_F32) {
        const float one = 1.0f, zero = 0.0f;
        return (int)cublasSgemm(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)n_out, (int)n_tok, (int)n_in, &one,
                                (const float *)w, (int)(rb / 4), x, (int)n_in, &zero, y, (int)ldy);
    }
    int e = x_to_16(c, type, x, n_tok * n_in);
    return e ? e : gemm_16n(c, type, &wv, 1, rb, &n_out, n_in, n_tok, &y, &ldy);
}
