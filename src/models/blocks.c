/*
 * blocks.c - the layer pieces every family shares: attention (projections, optional QKV bias
 * and QK-norm, RoPE, cache store, causal/sliding attention, output projection), the gated
 * feed-forward (SwiGLU or GeGLU, through the fused ffn_glu op: its up output is scratch), and
 * the logits head. Qwen3.5's attention (attn_out_gate) also splits each head's output gate off
 * its q projection and multiplies the attention's output by its sigmoid before o_proj. Each is a list of backend ops.
 *
 * Around a q8_0 / q4_0 cache the attention rotates as llama.cpp does (its attn_rot_k / attn_rot_v):
 * queries and keys by the orthonormal Hadamard matrix of the largest power of two (>= 64)
 * dividing the head size, after RoPE and before the store; values by the 64-wide one before the
 * store, and the attention's output back by the same (the matrix is its own inverse). The
 * rotation spreads outliers over a block before it is quantized; q . k is unchanged.
 */
#include "models/forward_internal.h"

/* The Hadamard size for a cache of type t and heads of hd (keys: the largest power of two >= 64
 * dividing hd; values: 64), or 0 for none: only llama.cpp's quantized cache types rotate, and
 * only heads of a multiple of 64. */
static int32_t rot_size(hearth_kv_type t, int32_t hd, bool key) {
    if ((t != HEARTH_KV_Q8_0 && t != HEARTH_KV_Q4_0) || hd % 64) return 0;
    int32_t n = 64;
    while (key && hd % (2 * n) == 0) n *= 2;
    return n;
}

void hearth_blk_attn(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, int32_t il) {
    const hearth_hparams *hp = &f->m->hp;
    const hearth_layer *l = &f->m->layers[il];
    hearth_backend *be = f->be;
    int64_t T = b->n_tokens;
    int64_t q_w = (int64_t)hp->n_head * hp->head_dim, k_w = (int64_t)hp->n_head_kv * hp->head_dim,
            v_w = (int64_t)hp->n_head_kv * hp->head_dim_v;

    /* q, k and v read the same normed input: one job, the input quantized once */
    const hearth_weight *qkv[3] = {&l->wq, &l->wk, &l->wv};
    bool gated = hp->attn_out_gate; /* q_proj gives each head's query, then its output gate */
    float *const out[3] = {gated ? f->qg : f->q, f->k, f->v};
    const int64_t ld[3] = {gated ? 2 * q_w : q_w, k_w, v_w};
    hearth_op_matmul_n(be, qkv, out, ld, 3, f->xb, T);
    hearth_blk_lora(f, il, HEARTH_LORA_Q, f->xb, out[0], ld[0]);
    if (gated) { /* qg as rows of head_dim: 2i is head i's query, 2i + 1 its gate */
        hearth_op_copy_rows(be, f->qg, hp->head_dim, f->gate_rows, T * hp->n_head, f->q);
        hearth_op_copy_rows(be, f->qg, hp->head_dim, f->gate_rows + (int64_t)f->max_tok * hp->n_head,
                            T * hp->n_head, f->gate);
    }
    hearth_blk_lora(f, il, HEARTH_LORA_K, f->xb, f->k, k_w);
    hearth_blk_lora(f, il, HEARTH_LORA_V, f->xb, f->v, v_w);
    hearth_fwd_trace(f, "Qcur", il, "MUL_MAT", f->q, T, q_w);
    hearth_fwd_trace(f, "Kcur", il, "MUL_MAT", f->k, T, k_w);
    hearth_fwd_trace(f, "Vcur", il, "MUL_MAT", f->v, T, v_w);
    if (hp->qkv_bias) {
        hearth_op_add_rows(be, f->q, l->bq, T, q_w);
        hearth_op_add_rows(be, f->k, l->bk, T, k_w);
        hearth_op_add_rows(be, f->v, l->bv, T, v_w);
    }
    if (hp->qk_norm) {
        hearth_op_rmsnorm(be, f->q, l->q_norm, f->q, T * hp->n_head, hp->head_dim, hp->norm_eps);
        hearth_op_rmsnorm(be, f->k, l->k_norm, f->k, T * hp->n_head_kv, hp->head_dim, hp->norm_eps);
        hearth_fwd_trace(f, "Qcur_normed", il, "MUL", f->q, T, q_w);
        hearth_fwd_trace(f, "Kcur_normed", il, "MUL", f->k, T, k_w);
    }
    bool swa = hearth_hparams_is_swa(hp, il);
    hearth_kv_blocks bl = hearth_kv_view_blocks(kv, il); /* the table of the layer's group */
    float scale = hp->attn_scale;
    const struct hearth_rope_run *run1 = f->n_runs == 1 ? &f->runs[0] : NULL;
    const hearth_kv_type kt = hearth_kv_view_k_type(kv, il), vt = hearth_kv_view_v_type(kv, il);
    const int32_t rk = rot_size(kt, hp->head_dim, true), rv = rot_size(vt, hp->head_dim_v, false);
    if (hearth_hparams_has_rope(hp, il) && !f->scale_q && run1 && run1->t0 == 0 && run1->n == T && !rk && !rv) {
        /* one RoPE recipe for the whole step: RoPE and the cache store in one op */
        hearth_op_rope_store(be, f->q, f->k, f->v, T, hp->n_head, hp->n_head_kv, hp->head_dim, hp->n_rot, v_w, b->pos,
                             swa ? &run1->rp_swa : &run1->rp, b->seq, kv->k[il], kv->v[il], &bl, kt, vt);
        hearth_fwd_trace(f, "Qcur", il, "ROPE", f->q, T, q_w);
        hearth_fwd_trace(f, "Kcur", il, "ROPE", f->k, T, k_w);
    } else {
        if (hearth_hparams_has_rope(hp, il)) {
            hearth_blk_rope(f, f->q, hp->n_head, hp->head_dim, hp->n_rot, b->pos, swa);
            hearth_blk_rope(f, f->k, hp->n_head_kv, hp->head_dim, hp->n_rot, b->pos, swa);
        }
        hearth_fwd_trace(f, "Qcur", il, "ROPE", f->q, T, q_w);
        hearth_fwd_trace(f, "Kcur", il, "ROPE", f->k, T, k_w);
        if (f->scale_q) {
            hearth_op_scale(be, f->q, T * q_w, scale);
            scale = 1.0f;
        }
        if (rk) {
            hearth_op_hadamard(be, f->q, T * q_w / rk, rk);
            hearth_op_hadamard(be, f->k, T * k_w / rk, rk);
        }
        if (rv) hearth_op_hadamard(be, f->v, T * v_w / rv, rv);
        hearth_op_kv_store(be, f->k, T, k_w, b->seq, b->pos, kv->k[il], &bl, kt);
        hearth_op_kv_store(be, f->v, T, v_w, b->seq, b->pos, kv->v[il], &bl, vt);
    }

    hearth_attn_args a = {
        .n_tok = T, .n_head = hp->n_head, .n_head_kv = hp->n_head_kv,
        .head_dim = hp->head_dim, .head_dim_v = hp->head_dim_v,
        .q = f->q, .out = f->att, .pos = b->pos, .pos_end = b->pos_end, .seq = b->seq,
        .k = kv->k[il], .v = kv->v[il], .blocks = bl, .k_type = kt, .v_type = vt,
        .n_swa = swa ? hp->n_swa : 0, .scale = scale, .softcap = hp->attn_softcap, .sinks = l->sinks,
        .max_len = f->max_len, .min_run = f->min_run, .max_run = f->max_run,
    };
    hearth_op_attention(be, &a);
    if (rv) hearth_op_hadamard(be, f->att, T * hp->n_head * hp->head_dim_v / rv, rv);
    hearth_fwd_trace(f, "kqv_out", il, "CONT", f->att, T, (int64_t)hp->n_head * hp->head_dim_v);
    const float *att = f->att;
    if (gated) { /* att * sigmoid(gate), into gate */
        hearth_op_glu(be, f->gate, f->att, T * hp->n_head * hp->head_dim_v, HEARTH_GLU_SIGMOID);
        hearth_fwd_trace(f, "attn_gated", il, "MUL", f->gate, T, (int64_t)hp->n_head * hp->head_dim_v);
        att = f->gate;
    }
    hearth_op_matmul(be, &l->wo, att, T, f->xb, hp->n_embd);
    hearth_blk_lora(f, il, HEARTH_LORA_O, att, f->xb, hp->n_embd);
    if (l->bo) hearth_op_add_rows(be, f->xb, l->bo, T, hp->n_embd);
    hearth_fwd_trace(f, "attn_out", il, "MUL_MAT", f->xb, T, hp->n_embd);
}

void hearth_blk_rope(hearth_fwd *f, float *x, int32_t n_head, int32_t head_dim, int32_t n_rot, const int32_t *pos,
                     bool swa) {
    int64_t w = (int64_t)n_head * head_dim;
    for (int32_t r = 0; r < f->n_runs; r++) {
        const struct hearth_rope_run *run = &f->runs[r];
        hearth_op_rope(f->be, x + (int64_t)run->t0 * w, run->n, n_head, head_dim, n_rot, pos + run->t0,
                       swa ? &run->rp_swa : &run->rp);
    }
}

void hearth_blk_ffn(hearth_fwd *f, int32_t n_tok, int32_t il) {
    const hearth_layer *l = &f->m->layers[il];
    int64_t n_ff = hearth_hparams_n_ff(&f->m->hp, il);
    if (f->trace || f->lora_gate_up) { /* gate and up apart: for the hook, or for adapters */
        const hearth_weight *gu[2] = {&l->w_gate, &l->w_up};
        float *const out[2] = {f->g, f->u};
        const int64_t ld[2] = {n_ff, n_ff};
        hearth_op_matmul_n(f->be, gu, out, ld, 2, f->xb, n_tok);
        hearth_blk_lora(f, il, HEARTH_LORA_GATE, f->xb, f->g, n_ff);
        hearth_blk_lora(f, il, HEARTH_LORA_UP, f->xb, f->u, n_ff);
        hearth_fwd_trace(f, "ffn_gate", il, "MUL_MAT", f->g, n_tok, n_ff);
        hearth_fwd_trace(f, "ffn_up", il, "MUL_MAT", f->u, n_tok, n_ff);
        hearth_op_glu(f->be, f->g, f->u, (int64_t)n_tok * n_ff, f->glu);
    } else {
        /* f->u is scratch of the fused op: unspecified afterwards (backend.h, ffn_glu) */
        hearth_op_ffn_glu(f->be, &l->w_gate, &l->w_up, f->xb, n_tok, f->g, f->u, f->glu);
    }
    hearth_fwd_trace(f, f->glu == HEARTH_GLU_SWIGLU ? "ffn_swiglu" : "ffn_geglu", il,
                     f->glu == HEARTH_GLU_SWIGLU ? "SWIGLU" : "GEGLU", f->g, n_tok, n_ff);
    hearth_op_matmul(f->be, &l->w_down, f->g, n_tok, f->xb, f->m->hp.n_embd);
    hearth_blk_lora(f, il, HEARTH_LORA_DOWN, f->g, f->xb, f->m->hp.n_embd);
    hearth_fwd_trace(f, "ffn_out", il, "MUL_MAT", f->xb, n_tok, f->m->hp.n_embd);
}

void hearth_blk_lora(hearth_fwd *f, int32_t il, hearth_lora_mod mod, const float *x, float *y, int64_t ldy) {
    int n = 0;
    int64_t n_in = 0, n_out = 0;
    for (int32_t i = 0; i < f->n_lora_runs; i++) {
        const struct hearth_lora_run *run = &f->lora_runs[i];
        const hearth_lora_mat *mt = hearth_lora_get(run->a, il, mod);
        if (!mt->r) continue;
        f->lora_segs[n++] = (hearth_lora_seg){.t0 = run->t0, .n = run->n, .r = mt->r, .scale = mt->scale,
                                              .half = mt->half, .a = mt->a, .b = mt->b};
        n_in = mt->n_in; /* the same for every adapter: each was checked against this layer */
        n_out = mt->n_out;
    }
    if (n) hearth_op_lora(f->be, f->lora_segs, n, x, n_in, y, ldy, n_out);
}

void hearth_blk_logits(hearth_fwd *f, float *logits) {
    const hearth_hparams *hp = &f->m->hp;
    int64_t E = hp->n_embd, n_out = f->n_out;
    if (n_out == 0) return;
    hearth_op_copy_rows(f->be, f->x, E, f->out_rows, n_out, f->xb); /* the rows that want logits, in order */
    hearth_op_rmsnorm(f->be, f->xb, f->m->output_norm, f->xb, n_out, E, hp->norm_eps);
    hearth_fwd_trace(f, "result_norm", -1, "MUL", f->xb, n_out, E);
    hearth_op_matmul(f->be, &f->m->output, f->xb, n_out, logits, hp->n_vocab);
    hearth_fwd_trace(f, "result_output", -1, "MUL_MAT", logits, n_out, hp->n_vocab);
    if (hp->final_softcap > 0) hearth_op_softcap(f->be, logits, n_out * hp->n_vocab, hp->final_softcap);
}
