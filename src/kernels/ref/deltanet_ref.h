/*
 * deltanet_ref.h - the gated DeltaNet core of the hybrid families' linear-attention layers
 * (Qwen3.5, Qwen3-Next; transformers' Qwen3_5GatedDeltaNet), the specification of any faster
 * twin. It takes the layer's projections and leaves the output before the gated norm.
 *
 * Per token t of sequence slot s = seq[t], in order (a sequence's tokens come in position order;
 * a token at position 0 first zeroes its slot's state, so a slot starts each sequence afresh):
 *
 *   conv:  for each channel c of qkv (C = 2K + V: all q heads, all k heads, all v heads)
 *            win_c = the slot's last conv - 1 inputs of channel c (zeros before position 0)
 *            qkv[t][c] = silu(sum_j w[c][j] * [win_c, x][j])      (a causal depthwise conv)
 *   heads: for each value head h (key head kh = h / (n_v / n_k), or h % n_k with v_tiled):
 *            q = l2norm(q_kh) / sqrt(k_dim),  k = l2norm(k_kh)       l2norm: x * rsqrt(sum x^2 + 1e-6)
 *            beta = sigmoid(b[t][h]),  g = a_neg[h] * softplus(a[t][h] + dt_bias[h])
 *            S = S * exp(g)                                          S: the slot's [k_dim][v_dim]
 *            S = S + k^T (beta * (v_h - S^T k))                      (the delta rule)
 *            out[t][h] = S^T q
 *
 * (transformers' torch_recurrent_gated_delta_rule; its chunked form is the same sums in another
 * order.) Every column j of S is updated independently of the others; the loops below go column
 * by column. State layout of one slot: the conv windows [C][conv - 1], oldest input first, then
 * S [n_v][k_dim][v_dim].
 *
 * Pure functions of their slices; any thread; two calls on disjoint channel or head ranges may
 * run at once, but conv must finish before the heads of the same tokens start.
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>

typedef struct {
    int64_t        n_tok;
    int32_t        n_k, n_v;      /* key heads, value heads (a multiple) */
    int32_t        k_dim, v_dim;  /* per head */
    int32_t        conv;          /* conv taps (>= 2) */
    bool           v_tiled;       /* value head h reads key head h % n_k (llama.cpp's tiled order of the
                                   * value heads) instead of h / (n_v / n_k) (transformers' grouped one) */
    float         *qkv;           /* [n_tok][2 n_k k_dim + n_v v_dim]: in the projections, out after the conv */
    const float   *b, *a;         /* [n_tok][n_v]: in_proj_b / in_proj_a outputs */
    const float   *conv_w;        /* [C][conv] */
    const float   *dt_bias;       /* [n_v] */
    const float   *a_neg;         /* [n_v] -exp(A_log) */
    float         *out;           /* [n_tok][n_v v_dim] */
    const int32_t *pos, *seq;     /* [n_tok] */
    float         *state;         /* [n_slots][state_floats] this layer's states */
    int64_t        state_floats;  /* C (conv - 1) + n_v k_dim v_dim */
} hearth_deltanet_args;

/* The key head that value head h reads. */
static inline int64_t hearth_deltanet_key_head(const hearth_deltanet_args *a, int64_t h) {
    return a->v_tiled ? h % a->n_k : h / (a->n_v / a->n_k);
}
/* The conv of channels [c0, c1) over every token. */
void hearth_deltanet_conv_ref(const hearth_deltanet_args *a, int64_t c0, int64_t c1);
/* The delta rule of value heads [h0, h1) over every token (after the conv of those tokens). */
void hearth_deltanet_heads_ref(const hearth_deltanet_args *a, int64_t h0, int64_t h1);
/* Both, whole. */
void hearth_deltanet_ref(const hearth_deltanet_args *a);
