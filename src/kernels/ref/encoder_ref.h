/*
 * encoder_ref.h - reference f32 kernels of the encoder (BERT-style) forward: LayerNorm with
 * weight and bias, the exact GELU, and bidirectional attention within one sequence.
 *
 * Plain loops, written to be read; each states its formula and the shapes. They are the
 * specification a SIMD or CUDA twin is tested against (tests/kernels/test_encoder_ops.c holds
 * them against double-precision formulas) and what models/bert.c runs today: next to the
 * matmuls they are a small share of an encoder forward. Pure functions; any thread.
 */
#pragma once
#include <stdint.h>

/* y[r][i] = (x[r][i] - mean_r) / sqrt(var_r + eps) * w[i] + b[i] for n_rows rows of dim, with
 * the mean and the (biased) variance summed in double. x, y: [n_rows][dim] (may alias);
 * w, b: [dim], either may be NULL (1 and 0). */
void hearth_layernorm_ref(const float *x, const float *w, const float *b, float *y, int64_t n_rows, int64_t dim,
                          float eps);

/* x[i] = 0.5 x (1 + erf(x / sqrt(2))) over n, in place: the GELU of BERT ("gelu" in a
 * transformers config), not the tanh approximation. */
void hearth_gelu_erf_ref(float *x, int64_t n);

/* Bidirectional attention of one sequence of n_tok tokens: every query sees every key.
 *   q, k, v: row t of head h at q[t * ld + h * head_dim] (ld >= n_head * head_dim);
 *   out:     [n_tok][n_head * head_dim], row stride ldo;
 *   out[t,h] = sum_j softmax_j(scale * q[t,h] . k[j,h]) v[j,h], the softmax with the maximum
 *   subtracted and its sum in float.
 * scores: n_tok floats of scratch. */
void hearth_attn_full_ref(const float *q, const float *k, const float *v, int64_t ld, float *out, int64_t ldo,
                          int64_t n_tok, int32_t n_head, int32_t head_dim, float scale, float *scores);

/* The pooling of one sequence's n rows x: [n][dim] into out[dim], as sentence-transformers'
 * Pooling module: kind 0 the mean (each column summed in double, divided by n), 1 the first
 * row (CLS), 2 the last row (hearth_pooling's values, models/bert.h). */
void hearth_pool_ref(const float *x, int64_t n, int64_t dim, int kind, float *out);
