/*
 * model_linear.c - the tensors of a gated DeltaNet layer (Qwen3.5, Qwen3.5 MoE, Qwen3-Next;
 * models/deltanet.c runs them), from either format into one hearth_layer layout:
 *
 *   hearth field   transformers (linear_attn.*)      GGUF (blk.N.*, llama.cpp's converter)
 *   lin_qkv        in_proj_qkv  [2K + V][E]          attn_qkv.weight
 *                  (Qwen3-Next: in_proj_qkvz, rows per key head [q | k | v | z], regrouped here)
 *   lin_z          in_proj_z    [V][E]               attn_gate.weight
 *   lin_b, lin_a   in_proj_b / in_proj_a [n_v][E]    ssm_beta.weight / ssm_alpha.weight
 *                  (Qwen3-Next: in_proj_ba, rows per key head [b | a]; GGUF ssm_ba, the same
 *                  rows unchanged: regrouped here for both)
 *   lin_conv_w     conv1d.weight [C][1][KC]          ssm_conv1d.weight ne [KC, C] (squeezed)
 *   lin_dt_bias    dt_bias [n_v]                     ssm_dt.bias
 *   lin_a_neg      A_log [n_v]: -exp(A_log) here     ssm_a: the converter stored -exp(A_log)
 *   lin_norm       norm.weight [dv] (no + 1)         ssm_norm.weight (no + 1 either)
 *   lin_out        out_proj [E][V]                   ssm_out.weight
 *
 * with K = n_k dk, V = n_v dv, C = 2K + V. The converter's one reordering that is not undone
 * here: for Qwen3.5 and Qwen3.5 MoE with n_v > n_k it moves the value heads from transformers'
 * grouped order (key head h's r = n_v / n_k value heads together) to a tiled one (value head
 * j = i n_k + h is key head h's i-th), in every tensor with a value-head axis (the v rows of
 * qkv and of the conv, z, b, a, dt_bias, A, out_proj's columns). Undoing it would permute the
 * columns of a quantized out_proj inside its blocks, so the heads stay tiled and the layer says
 * so (hp->lin_v_tiled: the DeltaNet op pairs value head j with key head j % n_k); every
 * per-value-head quantity is consistent in either order. Qwen3-Next's converter leaves the
 * value heads grouped.
 */
#include "model/model_linear.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rows rows[0..n) of w, in that order, as an arena copy. */
static hearth_status gather_rows(const hearth_lin_src *s, const char *what, const hearth_weight *w,
                                 const int64_t *rows, int64_t n, hearth_weight *out) {
    uint8_t *dst = hearth_arena_alloc_aligned(s->arena, (size_t)n * w->row_bytes, 64);
    if (!dst) return hearth_err_set(s->err, HEARTH_E_NOMEM, -1, "out of memory reordering '%s'", what);
    for (int64_t r = 0; r < n; r++)
        memcpy(dst + (size_t)r * w->row_bytes, (const uint8_t *)w->data + (size_t)rows[r] * w->row_bytes, w->row_bytes);
    *out = *w;
    out->ne1 = n;
    out->data = dst;
    return HEARTH_OK;
}

/* Qwen3-Next's in_proj_qkvz, rows per key head h [q (dk) | k (dk) | v (r dv) | z (r dv)], into
 * lin_qkv [all q | all k | all v] and lin_z (fix_query_key_value_ordering). */
static hearth_status regroup_qkvz(const hearth_lin_src *s, const char *name, const hearth_hparams *hp,
                                  const hearth_weight *qkvz, hearth_layer *l) {
    int64_t nk = hp->lin_n_k, dk = hp->lin_k_dim, r = hp->lin_n_v / hp->lin_n_k, dv = hp->lin_v_dim;
    int64_t K = nk * dk, V = hp->lin_n_v * dv, C = 2 * K + V, g = 2 * dk + 2 * r * dv, o = 0;
    int64_t *rows = malloc((size_t)(C + V) * sizeof *rows);
    if (!rows) return hearth_err_set(s->err, HEARTH_E_NOMEM, -1, "out of memory");
    for (int64_t h = 0; h < nk; h++) for (int64_t i = 0; i < dk; i++) rows[o++] = h * g + i;              /* q */
    for (int64_t h = 0; h < nk; h++) for (int64_t i = 0; i < dk; i++) rows[o++] = h * g + dk + i;         /* k */
    for (int64_t h = 0; h < nk; h++) for (int64_t i = 0; i < r * dv; i++) rows[o++] = h * g + 2 * dk + i; /* v */
    for (int64_t h = 0; h < nk; h++)                                                                      /* z */
        for (int64_t i = 0; i < r * dv; i++) rows[o++] = h * g + 2 * dk + r * dv + i;
    hearth_status st = gather_rows(s, name, qkvz, rows, C, &l->lin_qkv);
    if (!st) st = gather_rows(s, name, qkvz, rows + C, V, &l->lin_z);
    free(rows);
    return st;
}

/* Qwen3-Next's in_proj_ba, rows per key head h [b (r) | a (r)], into lin_b and lin_a. */
static hearth_status regroup_ba(const hearth_lin_src *s, const char *name, const hearth_hparams *hp,
                                const hearth_weight *ba, hearth_layer *l) {
    int64_t nk = hp->lin_n_k, nv = hp->lin_n_v, r = nv / nk, o = 0;
    int64_t *rows = malloc((size_t)(2 * nv) * sizeof *rows);
    if (!rows) return hearth_err_set(s->err, HEARTH_E_NOMEM, -1, "out of memory");
    for (int64_t h = 0; h < nk; h++) for (int64_t i = 0; i < r; i++) rows[o++] = h * 2 * r + i;     /* b */
    for (int64_t h = 0; h < nk; h++) for (int64_t i = 0; i < r; i++) rows[o++] = h * 2 * r + r + i; /* a */
    hearth_status st = gather_rows(s, name, ba, rows, nv, &l->lin_b);
    if (!st) st = gather_rows(s, name, ba, rows + nv, nv, &l->lin_a);
    free(rows);
    return st;
}

typedef struct {
    const char *qkv, *z, *b, *a, *qkvz, *ba, *out, *dt_bias, *a_vec, *norm, *conv;
} lin_names;

static const lin_names hf_names = {"in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "in_proj_qkvz",
                                   "in_proj_ba", "out_proj", "dt_bias", "A_log", "norm.weight", "conv1d.weight"};
static const lin_names gguf_names = {"attn_qkv.weight", "attn_gate.weight", "ssm_beta.weight", "ssm_alpha.weight",
                                     NULL, "ssm_ba.weight", "ssm_out.weight", "ssm_dt.bias", "ssm_a",
                                     "ssm_norm.weight", "ssm_conv1d.weight"};

hearth_status hearth_linear_bind(const hearth_lin_src *s, hearth_lin_format fmt, hearth_model *m, const char *prefix,
                                 int il) {
    const hearth_hparams *hp = &m->hp;
    hearth_layer *l = &m->layers[il];
    const lin_names *nm = fmt == HEARTH_LIN_GGUF ? &gguf_names : &hf_names;
    int64_t E = hp->n_embd, nv = hp->lin_n_v, V = nv * (int64_t)hp->lin_v_dim;
    int64_t C = 2 * (int64_t)hp->lin_n_k * hp->lin_k_dim + V;
    char n[256];
    hearth_status st;
#define NAME(s) (fmt == HEARTH_LIN_GGUF ? snprintf(n, sizeof n, "blk.%d.%s", il, (s)) \
                                        : snprintf(n, sizeof n, "%slayers.%d.linear_attn.%s", prefix, il, (s)), n)
    /* Qwen3-Next: the projections fused per key head (in GGUF only b and a still are) */
    bool next = hp->arch == HEARTH_ARCH_QWEN3NEXT;
    if (next && fmt == HEARTH_LIN_HF) {
        hearth_weight qkvz;
        if ((st = s->mat(s->ctx, NAME(nm->qkvz), E, C + V, &qkvz)) || (st = regroup_qkvz(s, n, hp, &qkvz, l)))
            return st;
    } else if ((st = s->mat(s->ctx, NAME(nm->qkv), E, C, &l->lin_qkv)) ||
               (st = s->mat(s->ctx, NAME(nm->z), E, V, &l->lin_z))) {
        return st;
    }
    if (next) {
        hearth_weight ba;
        if ((st = s->mat(s->ctx, NAME(nm->ba), E, 2 * nv, &ba)) || (st = regroup_ba(s, n, hp, &ba, l))) return st;
    } else if ((st = s->mat(s->ctx, NAME(nm->b), E, nv, &l->lin_b)) ||
               (st = s->mat(s->ctx, NAME(nm->a), E, nv, &l->lin_a))) {
        return st;
    }
    const float *a_vec = NULL;
    if ((st = s->mat(s->ctx, NAME(nm->out), V, E, &l->lin_out)) ||
        (st = s->vec(s->ctx, NAME(nm->dt_bias), nv, &l->lin_dt_bias)) ||
        (st = s->vec(s->ctx, NAME(nm->a_vec), nv, &a_vec)) ||
        (st = s->vec(s->ctx, NAME(nm->norm), hp->lin_v_dim, &l->lin_norm)) ||
        (st = s->conv(s->ctx, NAME(nm->conv), C, hp->lin_conv, &l->lin_conv_w)))
        return st;
    if (fmt == HEARTH_LIN_HF) {
        float *a_neg = (float *)a_vec; /* the vec binder's arena copy, ours to change */
        for (int64_t h = 0; h < nv; h++) a_neg[h] = -expf(a_vec[h]);
    } else {
        for (int64_t h = 0; h < nv; h++) /* -exp(A_log) is negative; anything else is not this arch's ssm_a */
            if (!(a_vec[h] < 0))
                return hearth_err_set(s->err, HEARTH_E_FORMAT, -1, "tensor '%s'[%lld] = %g: expected -exp(A_log) < 0",
                                      NAME(nm->a_vec), (long long)h, (double)a_vec[h]);
    }
    l->lin_a_neg = a_vec;
#undef NAME
    return HEARTH_OK;
}
