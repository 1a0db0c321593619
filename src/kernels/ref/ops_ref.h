/*
 * ops_ref.h - reference f32 kernels for the non-matmul ops of a transformer step.
 *
 * Plain loops, written to be read (llama2.c's run.c): each function states its formula and
 * the shape of every argument. They are the specification for any SIMD/CUDA twin, and what
 * the CPU backend runs today (these ops are a small share of a step's time next to matmul).
 * Pure functions of their arguments; any thread.
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>

/* y[i] = x[i] / sqrt(mean(x^2) + eps) * w[i]   x, y: [n]; w: [n] or NULL (no weight).
 * Each square is taken in float and summed in double, as llama.cpp's ggml_rms_norm does.
 * y may alias x. */
void hearth_rmsnorm_ref(const float *x, const float *w, float *y, int64_t n, float eps);

/* How RoPE angles are made. Two recipes that differ only in float rounding:
 *   transformers: theta_i = pos * inv_freq[i], inv_freq from hearth_rope_inv_freq (the
 *                 reference path, compared with transformers);
 *   llama.cpp:    theta_0 = pos, theta_{i+1} = theta_i * theta_scale (theta_scale =
 *                 base^(-2/n_rot)), angle freq_scale * theta_i (the default path, compared with
 *                 llama.cpp: each rounding difference can flip an f16 or 8-bit rounding later);
 *                 the rotation is then also llama.cpp's x86 one, x0 c - x1 s and x0 s + x1 c
 *                 each with one fused multiply-add: fma(x0, c, -(x1 s)), fma(x0, s, x1 c). */
typedef struct {
    const float *inv_freq;    /* [n_rot/2], or NULL for the llama.cpp recipe */
    float        theta_scale; /* llama.cpp recipe */
    float        freq_scale;  /* llama.cpp recipe: 1 / linear scaling factor */
    bool         neox;        /* rotate halves (x[i], x[i + n_rot/2]) as rotate_half does, else
                               * adjacent pairs (x[2i], x[2i+1]) (GGUF llama: weights pre-permuted) */
    float        mscale;      /* cos and sin are multiplied by it (YaRN attention factor); 0 or 1 = none */
} hearth_rope_params;

/* Rotary embedding of one head vector in place, x: [head_dim]; only the first n_rot dims
 * rotate, by angle theta_i (see hearth_rope_params), i < n_rot/2. */
void hearth_rope_ref(float *x, int64_t n_rot, int32_t pos, const hearth_rope_params *rp);
/* hearth_rope_ref in two halves, so that the heads of one position share one table: c[i], s[i]
 * (i < n_rot/2) are the cosine and sine it rotates pair i by (mscale included), and apply
 * rotates x with them exactly as hearth_rope_ref does. */
#define HEARTH_ROPE_MAX_HALF 256 /* n_rot / 2 at most (heads of up to 512) */
void hearth_rope_cs_ref(int64_t n_rot, int32_t pos, const hearth_rope_params *rp, float *c, float *s);
void hearth_rope_apply_ref(float *x, int64_t n_rot, const float *c, const float *s, const hearth_rope_params *rp);

/* inv_freq[i] = 1 / base^(2i / n_rot) / scale, i < n_rot/2, computed in float as
 * transformers' default rope init does (scale = linear position scaling factor, 1 = none). */
void hearth_rope_inv_freq(float *inv_freq, int64_t n_rot, float base, float scale);

/* x[i] = exp(x[i] - max) / sum, in place over n. */
void hearth_softmax_ref(float *x, int64_t n);

/* SwiGLU: g[i] = silu(g[i]) * u[i];  GeGLU (tanh GELU): g[i] = gelu_tanh(g[i]) * u[i]. */
void hearth_swiglu_ref(float *g, const float *u, int64_t n);
void hearth_geglu_ref(float *g, const float *u, int64_t n);
/* gpt-oss's clamped SwiGLU (transformers' GptOssExperts._apply_gate, alpha 1.702, limit 7):
 * g = min(g, 7); g = g * sigmoid(1.702 g) * (clamp(u, -7, 7) + 1). */
void hearth_swiglu_oai_ref(float *g, const float *u, int64_t n);
/* The sigmoid gate (Qwen3.5's attention output gate): g[i] = sigmoid(g[i]) * u[i]. */
void hearth_sigmoid_gate_ref(float *g, const float *u, int64_t n);
/* GeGLU as llama.cpp computes it: for |x| < 10 the GELU is looked up at x rounded to f16 and
 * the result is an f16 value (a 64K table of gelu_tanh over every f16); x <= -10 gives 0 and
 * x >= 10 gives x. The default path uses it so Gemma rounds as llama.cpp does. */
void hearth_geglu_f16_ref(float *g, const float *u, int64_t n);
/* That table (filled on first use), indexed by f16 bits; readable 4 bytes at any entry. */
const uint16_t *hearth_gelu_f16_table(void);

/*
 * Causal attention of one query head over one sequence's cached keys/values:
 *   out[d] = sum_j softmax_j(scale * q.k_j + mask_j) v_j[d],  j in [j0, j1)
 * q: [head_dim] f32; k_j, v_j: rows of [head_dim] at k + j*kv_stride (f32 or f16 elements, per
 * kv_f16); scores: [j1] scratch; out: [head_dim]. With kv_f16 the query is rounded to f16
 * and the probabilities too before the value sum, as llama.cpp's f16 KV path computes it.
 * head_dim <= HEARTH_ATTN_MAX_HEAD_DIM.
 */
#define HEARTH_ATTN_MAX_HEAD_DIM 512
void hearth_attn_head_ref(const float *q, const void *k, const void *v, int64_t kv_stride,
                          bool kv_f16, int64_t head_dim, int64_t j0, int64_t j1, float scale,
                          float softcap, float *scores, float *out);

/* The orthonormal Walsh-Hadamard rotation of each of n_rows rows of n floats (n a power of two),
 * in place, as llama.cpp rotates queries, keys and values around a quantized KV cache: every
 * element times 1/sqrt(n) first, then the butterflies (u, v) -> (u + v, u - v) over spans 1, 2,
 * 4, ... n/2 (Sylvester's order; the matrix is its own inverse). Each output element is one
 * fixed sequence of additions, so any vectorization gives the same bits. */
void hearth_hadamard_ref(float *x, int64_t n_rows, int64_t n);
