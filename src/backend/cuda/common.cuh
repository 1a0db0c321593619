/*
 * common.cuh - device helpers shared by the CUDA op files: error checks, warp reductions, the
 * half/bfloat16 conversions, and the dequantization of one 32-element chunk of a weight row
 * for every supported block format (the formulas of tensor/quant.h, as kernels/ref/quant_ref.c
 * spells them). Included by .cu files only.
 */
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "backend/cuda/cuda_ops.h"

#define HC_WARP 32

static __device__ __forceinline__ float hc_warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

static __device__ __forceinline__ float hc_warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

static __device__ __forceinline__ float hc_h2f(uint16_t h) { return __half2float(__ushort_as_half(h)); }
static __device__ __forceinline__ float hc_bf2f(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
static __device__ __forceinline__ uint16_t hc_f2h(float f) { return __half_as_ushort(__float2half_rn(f)); }
static __device__ __forceinline__ float hc_round_h(float f) { return __half2float(__float2half_rn(f)); }

static __device__ __forceinline__ uint16_t hc_ld16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static __device__ __forceinline__ uint32_t hc_ld32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Bytes of the block that holds 32-element chunk c of a row, and where chunk c starts in it. */
struct hc_chunk_info {
    int block_bytes, per_block; /* per_block: chunks per block (1 or 8) */
};

static __host__ __device__ __forceinline__ hc_chunk_info hc_chunk_of(int type) {
    switch (type) {
    case HC_Q4_0: return {18, 1};
    case HC_Q4_1: return {20, 1};
    case HC_Q5_0: return {22, 1};
    case HC_Q5_1: return {24, 1};
    case HC_Q8_0: return {34, 1};
    case HC_Q4_K: return {144, 8};
    case HC_Q5_K: return {176, 8};
    case HC_Q6_K: return {210, 8};
    default: return {0, 0};
    }
}

/* The 6-bit scale and minimum of sub-block i of a Q4_K/Q5_K block (hearth_k_scale_min). */
static __device__ __forceinline__ void hc_k_scale_min(const uint8_t *s, int i, float *sc, float *mn) {
    if (i < 4) {
        *sc = (float)(s[i] & 63);
        *mn = (float)(s[i + 4] & 63);
    } else {
        *sc = (float)((s[i + 4] & 15) | (s[i - 4] >> 6) << 4);
        *mn = (float)((s[i + 4] >> 4) | (s[i] >> 6) << 4);
    }
}

/* y[0..31] = elements 32c..32c+31 of a quantized row; row: the row's first byte. */
template <int T>
static __device__ __forceinline__ void hc_dequant32(const uint8_t *row, int64_t c, float *y) {
    if (T == HC_Q4_0 || T == HC_Q4_1 || T == HC_Q5_0 || T == HC_Q5_1 || T == HC_Q8_0) {
        constexpr int bb = T == HC_Q4_0 ? 18 : T == HC_Q4_1 ? 20 : T == HC_Q5_0 ? 22 : T == HC_Q5_1 ? 24 : 34;
        const uint8_t *b = row + c * bb;
        float d = hc_h2f(hc_ld16(b));
        if (T == HC_Q8_0) {
#pragma unroll
            for (int j = 0; j < 32; j++) y[j] = d * (float)(int8_t)b[2 + j];
            return;
        }
        float m = (T == HC_Q4_1 || T == HC_Q5_1) ? hc_h2f(hc_ld16(b + 2)) : 0.0f;
        const uint8_t *qs = b + (T == HC_Q4_0 ? 2 : T == HC_Q4_1 ? 4 : T == HC_Q5_0 ? 6 : 8);
        uint32_t qh = (T == HC_Q5_0) ? hc_ld32(b + 2) : (T == HC_Q5_1) ? hc_ld32(b + 4) : 0u;
#pragma unroll
        for (int j = 0; j < 16; j++) {
            int lo = qs[j] & 15, hi = qs[j] >> 4;
            if (T == HC_Q5_0 || T == HC_Q5_1) {
                lo |= (int)((qh >> j) & 1) << 4;
                hi |= (int)((qh >> (j + 16)) & 1) << 4;
            }
            if (T == HC_Q4_0) { y[j] = d * (float)(lo - 8); y[j + 16] = d * (float)(hi - 8); }
            else if (T == HC_Q5_0) { y[j] = d * (float)(lo - 16); y[j + 16] = d * (float)(hi - 16); }
            else { y[j] = d * (float)lo + m; y[j + 16] = d * (float)hi + m; }
        }
    } else if (T == HC_Q4_K || T == HC_Q5_K) {
        constexpr int bb = T == HC_Q4_K ? 144 : 176;
        const uint8_t *b = row + (c >> 3) * bb;
        int sub = (int)(c & 7), g = sub >> 1, h = sub & 1;
        float d = hc_h2f(hc_ld16(b)), dmin = hc_h2f(hc_ld16(b + 2)), sc, mn;
        hc_k_scale_min(b + 4, sub, &sc, &mn);
        float dl = d * sc, ml = dmin * mn;
        const uint8_t *qs = b + (T == HC_Q4_K ? 16 : 48) + 32 * g;
#pragma unroll
        for (int l = 0; l < 32; l++) {
            int q = h ? (qs[l] >> 4) : (qs[l] & 15);
            if (T == HC_Q5_K) q |= ((b[16 + l] >> (2 * g + h)) & 1) << 4;
            y[l] = dl * (float)q - ml;
        }
    } else if (T == HC_Q6_K) {
        const uint8_t *b = row + (c >> 3) * 210;
        int sub = (int)(c & 7), half = sub >> 2, k = sub & 3;
        float d = hc_h2f(hc_ld16(b + 208));
        const uint8_t *ql = b + 64 * half + 32 * (k & 1), *qh = b + 128 + 32 * half;
        const int8_t *scales = (const int8_t *)(b + 192);
        float s0 = d * (float)scales[8 * half + 2 * k], s1 = d * (float)scales[8 * half + 2 * k + 1];
#pragma unroll
        for (int l = 0; l < 32; l++) {
            int q = ((ql[l] >> (4 * (k >> 1))) & 15) | ((qh[l] >> (2 * k)) & 3) << 4;
            y[l] = (l < 16 ? s0 : s1) * (float)(q - 32);
        }
    }
}

/* ---- the quantized KV cache (backend/kv_type.h): q8_0 and q4_0 blocks of 32 elements ---- */

/* A cache is a plain run of 32-element blocks (a row of n_head_kv heads is whole blocks), so
 * element e of a layer's cache lives in block e / 32, whatever the row and head. */
static __host__ __device__ __forceinline__ bool hc_kv_quantized(int type) { return type == HC_Q8_0 || type == HC_Q4_0; }
static __host__ __device__ __forceinline__ int hc_kv_block_bytes(int type) { return type == HC_Q8_0 ? 34 : 18; }

/* Quantize one block held one element per lane of a full warp (x: this lane's element, lane
 * i = element i) into the block at dst, byte for byte as the CPU stores it:
 *   q8_0  llama.cpp's x86 quantizer (kernels/ref/llamacpp_order_ref.c): d = amax / 127 as f16,
 *         q = round-half-even(x * (127 / amax))
 *   q4_0  ggml's reference (kernels/ref/quant_ref.c): m the first element of largest magnitude
 *         (its sign kept, +0 when all are zero), d = m / -8 as f16, q = min(15, (int)(x / d +
 *         8.5)) with x / d as x * (1 / d); element i's nibble low in byte i, element i+16's high
 * The products and sums are spelled as single roundings (no fused multiply-add), as in C. */
static __device__ __forceinline__ void hc_kv_quant_block(float x, uint8_t *dst, int type, int lane) {
    const float amax = hc_warp_max(fabsf(x));
    uint16_t dh;
    if (type == HC_Q8_0) {
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        dh = hc_f2h(amax / 127.0f);
        dst[2 + lane] = (uint8_t)(int8_t)__float2int_rn(__fmul_rn(x, id));
    } else {
        const unsigned first = __ffs(__ballot_sync(0xffffffffu, fabsf(x) == amax)) - 1;
        const float m = amax != 0.0f ? __shfl_sync(0xffffffffu, x, first) : 0.0f;
        const float d = m / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        int q = (int)__fadd_rn(__fmul_rn(x, id), 8.5f);
        q = q < 0 ? 0 : q > 15 ? 15 : q;
        const int hi = __shfl_down_sync(0xffffffffu, q, 16);
        dh = hc_f2h(d);
        if (lane < 16) dst[2 + lane] = (uint8_t)(q | hi << 4);
    }
    if (lane == 0) {
        dst[0] = (uint8_t)(dh & 0xff);
        dst[1] = (uint8_t)(dh >> 8);
    }
}

/* o[0..7] = elements idx..idx+7 (idx a multiple of 8) of a q8_0 or q4_0 cache, dequantized
 * exactly as the CPU's to_float: q * d, (q - 8) * d */
static __device__ __forceinline__ void hc_kv_load8_quant(const void *base, int64_t idx, int type, float *o) {
    const int w = (int)(idx & 31);
    if (type == HC_Q8_0) {
        const uint8_t *b = (const uint8_t *)base + (idx >> 5) * 34;
        const float d = hc_h2f(hc_ld16(b));
        const uint16_t *p = (const uint16_t *)(b + 2 + w); /* blocks are 2-byte aligned */
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const uint16_t u = p[k];
            o[2 * k] = d * (float)(int8_t)(u & 0xff);
            o[2 * k + 1] = d * (float)(int8_t)(u >> 8);
        }
    } else {
        const uint8_t *b = (const uint8_t *)base + (idx >> 5) * 18;
        const float d = hc_h2f(hc_ld16(b));
        const uint16_t *p = (const uint16_t *)(b + 2 + (w & 15));
        const int sh = w < 16 ? 0 : 4;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const uint16_t u = p[k];
            o[2 * k] = d * (float)((int)((u & 0xff) >> sh & 15) - 8);
            o[2 * k + 1] = d * (float)((int)((u >> 8) >> sh & 15) - 8);
        }
    }
}

/* ---- the turbo KV cache (backend/kv_type.h, kernels/ref/turbo_ref.h) ---- */

static __host__ __device__ __forceinline__ bool hc_kv_turbo(int type) { return type > HC_TURBO0 && type <= HC_TURBO8; }
static __host__ __device__ __forceinline__ int hc_turbo_bits(int type) { return type - HC_TURBO0; }

/* hearth_turbo_sign(i): the sign of bit 63 of splitmix64 output i of seed HEARTH_TURBO_SEED,
 * the same integer steps */
static __device__ __forceinline__ float hc_turbo_sign(int i) {
    unsigned long long z = 0x7475726230ull + (unsigned long long)(i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (z >> 63) ? -1.0f : 1.0f;
}

/* the Lloyd-Max levels of turbo_ref.c (the same decimal literals, so the same floats) */
static __constant__ float hc_turbo_lv2[4] = {-1.5104f, -0.4528f, 0.4528f, 1.5104f};
static __constant__ float hc_turbo_lv3[8] = {-2.1520f, -1.3439f, -0.7560f, -0.2451f,
                                             0.2451f,  0.7560f,  1.3439f,  2.1520f};
static __constant__ float hc_turbo_lv4[16] = {-2.7326f, -2.0690f, -1.6181f, -1.2562f, -0.9424f, -0.6568f,
                                              -0.3881f, -0.1284f, 0.1284f,  0.3881f,  0.6568f,  0.9424f,
                                              1.2562f,  1.6181f,  2.0690f,  2.7326f};

/* hearth_turbo_level: code q of the B-bit codebook at scale 1 */
static __device__ __forceinline__ float hc_turbo_level(int bits, int q) {
    switch (bits) {
    case 2: return hc_turbo_lv2[q];
    case 3: return hc_turbo_lv3[q];
    case 4: return hc_turbo_lv4[q];
    default: return (float)(2 * q + 1 - (1 << bits));
    }
}

/* o[0..7] = elements idx..idx+7 (idx a multiple of 8) of a turbo cache of B bits, still
 * rotated, exactly as hearth_turbo_dequant_ref: level(code) * s, one rounding */
static __device__ __forceinline__ void hc_turbo_load8(const void *base, int64_t idx, int bits, float *o) {
    const uint8_t *b = (const uint8_t *)base + (idx >> 5) * (2 + 4 * bits);
    const float s = hc_h2f(hc_ld16(b));
    const uint8_t *p = b + 2 + ((idx & 31) >> 3) * bits;
    unsigned long long w = 0;
    for (int k = 0; k < bits; k++) w |= (unsigned long long)p[k] << (8 * k);
    const unsigned long long mask = (1ull << bits) - 1;
#pragma unroll
    for (int k = 0; k < 8; k++) o[k] = __fmul_rn(hc_turbo_level(bits, (int)((w >> (k * bits)) & mask)), s);
}

/* Dispatch on a runtime type id: the body is instantiated for each quantized format. */
#define HC_QUANT_SWITCH(type, BODY)                                              \
    switch (type) {                                                              \
    case HC_Q4_0: { constexpr int QT = HC_Q4_0; BODY; } break;                   \
    case HC_Q4_1: { constexpr int QT = HC_Q4_1; BODY; } break;                   \
    case HC_Q5_0: { constexpr int QT = HC_Q5_0; BODY; } break;                   \
    case HC_Q5_1: { constexpr int QT = HC_Q5_1; BODY; } break;                   \
    case HC_Q8_0: { constexpr int QT = HC_Q8_0; BODY; } break;                   \
    case HC_Q4_K: { constexpr int QT = HC_Q4_K; BODY; } break;                   \
    case HC_Q5_K: { constexpr int QT = HC_Q5_K; BODY; } break;                   \
    case HC_Q6_K: { constexpr int QT = HC_Q6_K; BODY; } break;                   \
    default: break;                                                              \
    }

/* One gated activation (glu.cu, and gemv.cu's fused gate/up rows): act(x) * u for kind 0 SwiGLU,
 * 1 GeGLU (tanh), 2 GeGLU evaluated at x rounded to f16 and rounded to f16 as the reference's
 * table holds it. */
static __device__ __forceinline__ float hc_gelu_tanh(float x) {
    const float c = 0.7978845608028654f;
    return 0.5f * x * (1.0f + tanhf(c * x * (1.0f + 0.044715f * x * x)));
}
static __device__ __forceinline__ float hc_glu1(float x, float u, int kind) {
    float r;
    if (kind == 0) r = x / (1.0f + expf(-x));
    else if (kind == 1) r = hc_gelu_tanh(x);
    else r = x <= -10.0f ? 0.0f : x >= 10.0f ? x : hc_round_h(hc_gelu_tanh(hc_round_h(x)));
    return r * u;
}

static inline unsigned hc_blocks(int64_t n, int per) { return (unsigned)((n + per - 1) / per); }

/* Programmatic dependent launch (sm_90): a kernel queued with hc_launch may start while the
 * kernel before it on the stream is still running, so a step's chain of small kernels does not
 * pay a full drain and launch between each pair. Such a kernel calls hc_pdl_begin() before it
 * reads anything an earlier kernel wrote or writes anything at all (it may read weights before:
 * the matrix-vector kernels fetch their first weights early this way); hc_pdl_begin then lets
 * the next kernel launch. Kernels launched with <<<>>> wait for their predecessor as usual. */
static __device__ __forceinline__ void hc_pdl_begin(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

template <typename... P, typename... A>
static inline void hc_launch(void (*k)(P...), dim3 grid, dim3 block, size_t smem, void *stream, A... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = (cudaStream_t)stream;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    cudaLaunchKernelEx(&cfg, k, (P)args...);
}
