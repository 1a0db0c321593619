/*
 * gemma4.c - the Gemma 4 text decoder (transformers' Gemma4TextModel, dense layers):
 *
 *   x   = embed(tokens) * sqrt(n_embd)
 *   ple = (rmsnorm(W_ple x / sqrt(n_embd)) + embed_ple(tokens) * sqrt(P)) / sqrt(2)
 *                                                 per-layer inputs [T][n_layer][P]
 *   for each layer il:
 *     x += post_attn_norm(attn(attn_norm(x)))     q/k/v RMS-normed per head (v without weight),
 *                                                 no 1/sqrt(d): q.k is used as is; sliding
 *                                                 layers: window, their head size, RoPE base
 *                                                 10k; full layers: their head size, kv heads,
 *                                                 proportional RoPE (only the first dims turn)
 *     x += post_ffn_norm(geglu_ffn(ffn_norm(x)))  double-wide on KV-shared layers; with a
 *                                                 mixture of experts, the experts' sum is added
 *                                                 to the MLP's output first (gemma4_moe)
 *     x += ple_norm(W_proj(gelu(W_gate x) * ple[il]))
 *     x *= layer_scalar
 *   logits = softcap(output(final_norm(x)))
 *
 * KV sharing: a layer from n_layer_kv on has no k/v projections; it attends to the cache of
 * the last earlier layer of its kind (hearth_hparams_kv_layer), through that layer's block
 * table (its group's), and stores nothing. The cache rows are sized for the widest kind (hparams head_dim x n_head_kv); each layer uses its own
 * width of them. The assistant drafter (gemma4_assistant.c) runs these layers with every one
 * reading a target's cache (kv is then the target's, one entry per assistant layer), its
 * queries turned to f->rope_pos (the drafted token's position, pos + 1: the cache holds up to
 * pos) and its sliding layers seeing the window + 1 positions up to pos, as transformers'
 * bidirectional sliding mask over the shared KV does. With attention_k_eq_v the full layers' values are the key projection (before
 * the key norm), normed as values. Norm weights multiply as stored (no 1 + w in Gemma 4).
 */
#include "models/forward_internal.h"

#include <math.h>
#include <stdlib.h>

static void gemma4_attn(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, int32_t il) {
    const hearth_hparams *hp = &f->m->hp;
    const hearth_layer *l = &f->m->layers[il];
    hearth_backend *be = f->be;
    int64_t T = b->n_tokens;
    int32_t hd = hearth_hparams_head_dim(hp, il), n_kv = hearth_hparams_n_head_kv(hp, il);
    bool borrowed = hp->n_embd_backbone > 0; /* the assistant: the target's cache, read only */
    int32_t src = hearth_hparams_kv_layer(hp, il);
    int64_t q_w = (int64_t)hp->n_head * hd, k_w = (int64_t)n_kv * hd;
    bool swa = hearth_hparams_is_swa(hp, il);
    if (borrowed) src = -1;

    if (src == il) {
        const hearth_weight *qkv[3] = {&l->wq, &l->wk, &l->wv};
        float *const out[3] = {f->q, f->k, f->v};
        const int64_t ld[3] = {q_w, k_w, k_w};
        hearth_op_matmul_n(be, qkv, out, ld, 3, f->xb, T);
        hearth_blk_lora(f, il, HEARTH_LORA_K, f->xb, f->k, k_w);
        hearth_blk_lora(f, il, HEARTH_LORA_V, f->xb, f->v, k_w);
    } else {
        hearth_op_matmul(be, &l->wq, f->xb, T, f->q, q_w);
    }
    hearth_blk_lora(f, il, HEARTH_LORA_Q, f->xb, f->q, q_w);
    hearth_op_rmsnorm(be, f->q, l->q_norm, f->q, T * hp->n_head, hd, hp->norm_eps);
    hearth_blk_rope(f, f->q, hp->n_head, hd, hd, borrowed ? f->rope_pos : b->pos, swa);
    hearth_fwd_trace(f, "Qcur", il, "ROPE", f->q, T, q_w);
    if (src == il) {
        hearth_op_rmsnorm(be, f->k, l->k_norm, f->k, T * n_kv, hd, hp->norm_eps);
        hearth_blk_rope(f, f->k, n_kv, hd, hd, b->pos, swa);
        hearth_op_rmsnorm(be, f->v, NULL, f->v, T * n_kv, hd, hp->norm_eps);
        hearth_fwd_trace(f, "Kcur", il, "ROPE", f->k, T, k_w);
        hearth_fwd_trace(f, "Vcur", il, "RMS_NORM", f->v, T, k_w);
        hearth_kv_blocks own = hearth_kv_view_blocks(kv, il); /* the table of the layer's group */
        hearth_op_kv_store(be, f->k, T, k_w, b->seq, b->pos, kv->k[il], &own, hearth_kv_view_k_type(kv, il));
        hearth_op_kv_store(be, f->v, T, k_w, b->seq, b->pos, kv->v[il], &own, hearth_kv_view_v_type(kv, il));
    }
    if (borrowed) src = il; /* the view's entry il is the target layer this one reads */
    hearth_attn_args a = {
        .n_tok = T, .n_head = hp->n_head, .n_head_kv = n_kv, .head_dim = hd, .head_dim_v = hd,
        .q = f->q, .out = f->att, .pos = b->pos, .seq = b->seq,
        .k = kv->k[src], .v = kv->v[src], .blocks = hearth_kv_view_blocks(kv, src),
        .k_type = hearth_kv_view_k_type(kv, src), .v_type = hearth_kv_view_v_type(kv, src),
        .n_swa = swa ? hp->n_swa + borrowed : 0, .scale = hp->attn_scale, .softcap = 0, .max_len = f->max_len,
        .max_run = f->max_run,
    };
    hearth_op_attention(be, &a);
    hearth_fwd_trace(f, "kqv_out", il, "CONT", f->att, T, q_w);
    hearth_op_matmul(be, &l->wo, f->att, T, f->xb, hp->n_embd);
    hearth_blk_lora(f, il, HEARTH_LORA_O, f->att, f->xb, hp->n_embd);
    hearth_fwd_trace(f, "attn_out", il, "MUL_MAT", f->xb, T, hp->n_embd);
}

/* The mixture-of-experts half of layer il's feed-forward (transformers' Gemma4TextRouter and
 * Gemma4TextExperts), added to f->xb (the dense MLP's output, normed here by
 * post_feedforward_layernorm_1). The router reads the residual f->x:
 *   p = softmax(W_router (rmsnorm(x) * scale / sqrt(n_embd)));  the top k of p, renormalized,
 *   times per_expert_scale, weigh the experts' gelu(x2 W_gate_e) * (x2 W_up_e) W_down_e with
 *   x2 = pre_feedforward_layernorm_2(x); their sum (models/moe.c: grouped by expert, in
 *   ascending order as index_add_ does) is normed by post_feedforward_layernorm_2. */
static void gemma4_moe(hearth_fwd *f, int64_t T, int32_t il) {
    const hearth_hparams *hp = &f->m->hp;
    const hearth_layer *l = &f->m->layers[il];
    hearth_backend *be = f->be;
    int64_t E = hp->n_embd, NE = hp->n_expert, K = hp->n_expert_used;
    hearth_op_rmsnorm(be, f->xb, l->post_ffn_norm_1, f->xb, T, E, hp->norm_eps);
    hearth_op_rmsnorm(be, f->x, l->router_scale, f->moe_in, T, E, hp->norm_eps);
    hearth_op_scale(be, f->moe_in, T * E, (float)(1.0 / sqrt((double)E)));
    hearth_op_matmul(be, &l->router, f->moe_in, T, f->moe_logits, NE);
    hearth_moe_route(f, T, true);
    for (int64_t i = 0; i < T * K; i++) f->moe_w[i] *= l->expert_scale[f->moe_sel[i]];
    hearth_op_rmsnorm(be, f->x, l->pre_ffn_norm_2, f->moe_in, T, E, hp->norm_eps);
    hearth_moe_experts(f, f->moe_in, T, il, HEARTH_GLU_GEGLU);
    hearth_op_rmsnorm(be, f->moe_out, l->post_ffn_norm_2, f->moe_out, T, E, hp->norm_eps);
    hearth_op_add(be, f->xb, f->moe_out, T * E);
}

/* The per-layer inputs of the step's tokens into f->ple_tok: [T][n_layer * P]. */
static void gemma4_ple(hearth_fwd *f, const hearth_batch *b) {
    const hearth_model *m = f->m;
    const hearth_hparams *hp = &m->hp;
    int64_t T = b->n_tokens, P = hp->n_embd_ple, LP = (int64_t)hp->n_layer * P;
    hearth_op_get_rows(f->be, &m->ple_embd, b->token, T, sqrtf((float)P), f->ple_tok);
    hearth_op_matmul(f->be, &m->ple_model_proj, f->x, T, f->ple_ctx, LP);
    hearth_op_scale(f->be, f->ple_ctx, T * LP, (float)(1.0 / sqrt((double)hp->n_embd)));
    hearth_op_rmsnorm(f->be, f->ple_ctx, m->ple_proj_norm, f->ple_ctx, T * hp->n_layer, P, hp->norm_eps);
    hearth_op_add(f->be, f->ple_tok, f->ple_ctx, T * LP);
    hearth_op_scale(f->be, f->ple_tok, T * LP, (float)(1.0 / sqrt(2.0)));
    hearth_fwd_trace(f, "per_layer_inputs", -1, "SCALE", f->ple_tok, T, LP);
}

void hearth_gemma4_forward(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, float *logits) {
    const hearth_model *m = f->m;
    const hearth_hparams *hp = &m->hp;
    int64_t T = b->n_tokens, E = hp->n_embd, P = hp->n_embd_ple;

    hearth_op_get_rows(f->be, &m->tok_embd, b->token, T, hp->embd_scale, f->x);
    hearth_fwd_trace(f, "inp_scaled", -1, "SCALE", f->x, T, E);
    if (P > 0) gemma4_ple(f, b);
    for (int32_t il = 0; il < hp->n_layer; il++) hearth_gemma4_layer(f, b, kv, il);
    hearth_blk_logits(f, logits);
}

void hearth_gemma4_layer(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, int32_t il) {
    const hearth_hparams *hp = &f->m->hp;
    const hearth_layer *l = &f->m->layers[il];
    int64_t T = b->n_tokens, E = hp->n_embd, P = hp->n_embd_ple;
    hearth_op_rmsnorm(f->be, f->x, l->attn_norm, f->xb, T, E, hp->norm_eps);
    gemma4_attn(f, b, kv, il);
    hearth_op_rmsnorm(f->be, f->xb, l->post_attn_norm, f->xb, T, E, hp->norm_eps);
    hearth_op_add(f->be, f->x, f->xb, T * E);
    hearth_op_rmsnorm(f->be, f->x, l->ffn_norm, f->xb, T, E, hp->norm_eps);
    hearth_blk_ffn(f, (int32_t)T, il);
    if (hp->n_expert > 0) gemma4_moe(f, T, il);
    hearth_op_rmsnorm(f->be, f->xb, l->post_ffn_norm, f->xb, T, E, hp->norm_eps);
    hearth_op_add(f->be, f->x, f->xb, T * E);
    if (P > 0) {
        hearth_op_copy_rows(f->be, f->ple_tok, P, f->ple_rows + (int64_t)il * f->max_tok, T, f->ple_x);
        hearth_op_matmul(f->be, &l->ple_gate, f->x, T, f->ple_g, P);
        hearth_op_glu(f->be, f->ple_g, f->ple_x, T * P, HEARTH_GLU_GEGLU);
        hearth_op_matmul(f->be, &l->ple_proj, f->ple_g, T, f->xb, E);
        hearth_op_rmsnorm(f->be, f->xb, l->ple_norm, f->xb, T, E, hp->norm_eps);
        hearth_op_add(f->be, f->x, f->xb, T * E);
    }
    if (l->out_scale != 1.0f) hearth_op_scale(f->be, f->x, T * E, l->out_scale);
    hearth_fwd_trace(f, "l_out", il, "ADD", f->x, T, E);
}
