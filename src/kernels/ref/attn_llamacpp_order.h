/*
 * attn_llamacpp_order.h - one attention head over an f16 paged KV cache, in the operation order of
 * llama.cpp's AVX-512 build without flash attention (the default path's attention).
 *
 * llama.cpp runs attention as two matmuls around a softmax: KQ = K . f16(q), softmax(KQ *
 * scale + mask), KQV = V^T . f16(p). The float order depends on how many tokens the step
 * holds for the sequence (single):
 *   several tokens (llamafile tinyBLAS, f16 x f16):  every dot is one 16-lane FMA accumulator
 *       over its k dimension in chunks of 16, then reduce16;
 *   one token (ggml_vec_dot_f16):  four 16-lane accumulators over chunks of 64, combined as
 *       (a0+a2)+(a1+a3), reduce16 into a double, and the last k % 64 products added in double.
 * The KQV dot runs over the cache length llama.cpp attends, n_kv = round_up(pos + 1, 256)
 * (hearth_attn_x86_n_kv; llama.cpp pads it so and keeps its cache a multiple of 256), key j in
 * lane j % 16 (batch) or j % 64 (single); masked keys have p = 0 and add nothing, so the
 * single order's double tail is empty (it was not while llama.cpp padded to 32). The softmax exponentials are
 * ggml's vector expf (hearth_expf_x86_ref), summed 16 keys at a time (reduce16, into a double
 * sum), and p = e * (float)(1 / sum).
 * reduce16 is the 16-lane tree of _mm512_reduce_add_ps: halves, quarters, then pairs.
 *
 * Written once as static inline C so that two translation units share it: the plain reference
 * (kernels/ref/attn_x86_ref.c, fmaf from libm) and the FMA-compiled one the SIMD sets run
 * (kernels/cpu/x86/attn_fma_avx2.c, fmaf as one instruction); fmaf is exact either way, so
 * the two are bit-identical (tests/kernels/test_llamacpp_order.c).
 */
#pragma once
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernels/ref/llamacpp_order_ref.h"
#include "tensor/dtype.h"

#define HEARTH_ATTN_X86_MAX_HEAD_DIM 512
#define HEARTH_ATTN_X86_KV_PAD       256 /* llama.cpp's padding of the attended cache length */

/* the cache length llama.cpp's attention runs over when keys [0, j1) are filled */
static inline int64_t hearth_attn_x86_n_kv(int64_t j1) {
    return (j1 + HEARTH_ATTN_X86_KV_PAD - 1) / HEARTH_ATTN_X86_KV_PAD * HEARTH_ATTN_X86_KV_PAD;
}

static inline float hearth_reduce16(const float a[16]) {
    float h8[8], h4[4];
    for (int i = 0; i < 8; i++) h8[i] = a[i + 8] + a[i];
    for (int i = 0; i < 4; i++) h4[i] = h8[i + 4] + h8[i];
    return (h4[0] + h4[2]) + (h4[1] + h4[3]);
}

static inline int64_t hearth_attn_row(const int32_t *table_row, int32_t bs, int64_t j, int64_t kv_stride) {
    return ((int64_t)table_row[j / bs] * bs + j % bs) * kv_stride;
}

/* dot of n f16 values with n f16 values (as floats in y), in the single-token or batch order */
static inline float hearth_dot_f16_x86(const uint16_t *x, const float *y, int64_t n, bool single) {
    float acc[4][16] = {{0}};
    if (!single) {
        for (int64_t c = 0; c < n; c += 16)
            for (int l = 0; l < 16; l++) acc[0][l] = fmaf(hearth_fp16_to_fp32(x[c + l]), y[c + l], acc[0][l]);
        return hearth_reduce16(acc[0]);
    }
    int64_t np = n & ~(int64_t)63;
    for (int64_t c = 0; c < np; c += 64)
        for (int a = 0; a < 4; a++)
            for (int l = 0; l < 16; l++)
                acc[a][l] = fmaf(hearth_fp16_to_fp32(x[c + 16 * a + l]), y[c + 16 * a + l], acc[a][l]);
    for (int l = 0; l < 16; l++) acc[0][l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
    double sum = hearth_reduce16(acc[0]);
    for (int64_t i = np; i < n; i++) sum += (double)(hearth_fp16_to_fp32(x[i]) * y[i]);
    return (float)sum;
}

/* q: [head_dim] f32; k, v: this head's first element in block 0 of the layer's f16 pool;
 * keys j0..j1-1 attended (j1 = pos + 1); scores: [round_up(j1, 32)] scratch; out: [head_dim]. */
static inline void hearth_attn_head_x86_impl(const float *q, const uint16_t *k, const uint16_t *v, int64_t kv_stride,
                                             const int32_t *table_row, int32_t bs, int64_t head_dim, int64_t j0,
                                             int64_t j1, float scale, float softcap, bool single, float *scores,
                                             float *out) {
    float qh[HEARTH_ATTN_X86_MAX_HEAD_DIM];
    for (int64_t d = 0; d < head_dim; d++) qh[d] = hearth_fp16_to_fp32(hearth_fp32_to_fp16(q[d]));
    int64_t n_kv = (j1 + 31) / 32 * 32; /* the scratch cleared past j1 */
    float max = -INFINITY;
    for (int64_t j = j0; j < j1; j++) {
        float s = hearth_dot_f16_x86(k + hearth_attn_row(table_row, bs, j, kv_stride), qh, head_dim, single);
        s *= scale;
        if (softcap > 0.0f) s = softcap * tanhf(s / softcap);
        scores[j] = s;
        if (s > max) max = s;
    }
    /* exponentials, summed 16 keys at a time from key 0 (masked keys are exact zeros) */
    double sum = 0.0;
    for (int64_t c = j0 / 16 * 16; c < j1; c += 16) {
        float e[16];
        for (int l = 0; l < 16; l++) {
            int64_t j = c + l;
            e[l] = j >= j0 && j < j1 ? hearth_expf_x86_ref(scores[j] - max) : 0.0f;
            if (j >= j0 && j < j1) scores[j] = e[l];
        }
        sum += (double)hearth_reduce16(e);
    }
    float inv = (float)(1.0 / sum);
    for (int64_t j = 0; j < n_kv; j++)
        scores[j] = j >= j0 && j < j1 ? hearth_fp16_to_fp32(hearth_fp32_to_fp16(scores[j] * inv)) : 0.0f;
    /* out[d] = V^T row d . p over the attended length, in the same order as the KQ dots */
    int64_t c0 = single ? 0 : j0 / 16 * 16;
    for (int64_t d = 0; d < head_dim; d++) {
        float acc[4][16] = {{0}};
        if (!single) {
            for (int64_t c = c0; c < j1; c += 16)
                for (int l = 0; l < 16; l++) {
                    int64_t j = c + l;
                    if (j >= j0 && j < j1)
                        acc[0][l] = fmaf(hearth_fp16_to_fp32(v[hearth_attn_row(table_row, bs, j, kv_stride) + d]),
                                         scores[j], acc[0][l]);
                }
            out[d] = hearth_reduce16(acc[0]);
            continue;
        }
        int64_t np = hearth_attn_x86_n_kv(j1) & ~(int64_t)63;
        for (int64_t j = j0; j < j1 && j < np; j++) {
            float *a = &acc[(j % 64) / 16][j % 16];
            *a = fmaf(hearth_fp16_to_fp32(v[hearth_attn_row(table_row, bs, j, kv_stride) + d]), scores[j], *a);
        }
        for (int l = 0; l < 16; l++) acc[0][l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
        double s = hearth_reduce16(acc[0]);
        for (int64_t j = np > j0 ? np : j0; j < j1; j++)
            s += (double)(hearth_fp16_to_fp32(v[hearth_attn_row(table_row, bs, j, kv_stride) + d]) * scores[j]);
        out[d] = (float)s;
    }
}
