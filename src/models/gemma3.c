/*
 * gemma3.c - the Gemma 3 text decoder (transformers' Gemma3TextModel), and Gemma 2, which is
 * the same list of ops without QK-norm and with soft-capped attention and logits (flags):
 *
 *   x = embed(tokens) * sqrt(n_embd)        an image's soft tokens take its projected rows
 *                                          instead (unscaled), and see each other both ways
 *   for each layer:
 *     x += post_attn_norm(attn(attn_norm(x)))      QK-norm; RoPE base 10k on sliding layers,
 *     x += post_ffn_norm(geglu_ffn(ffn_norm(x)))   1M on global ones (every sixth layer)
 *   logits = tok_embd(final_norm(x))               tied output
 *
 * GGUF stores Gemma's RMSNorm weights with the +1 already added (the safetensors loader adds it),
 * so they multiply directly.
 */
#include "models/forward_internal.h"

void hearth_gemma3_forward(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, float *logits) {
    const hearth_model *m = f->m;
    const hearth_hparams *hp = &m->hp;
    int64_t T = b->n_tokens, E = hp->n_embd;

    hearth_op_get_rows(f->be, &m->tok_embd, b->token, T, hp->embd_scale, f->x);
    for (int64_t t = 0; b->embd && t < T; t++) /* an image's rows, as they are (forward.h) */
        if (b->embd[t]) hearth_buf_upload(f->be, f->x + t * E, b->embd[t], (size_t)E * sizeof(float));
    hearth_fwd_trace(f, "inp_scaled", -1, "SCALE", f->x, T, E);
    for (int32_t il = 0; il < hp->n_layer; il++) {
        const hearth_layer *l = &m->layers[il];
        hearth_op_rmsnorm(f->be, f->x, l->attn_norm, f->xb, T, E, hp->norm_eps);
        hearth_fwd_trace(f, "attn_norm", il, "MUL", f->xb, T, E);
        hearth_blk_attn(f, b, kv, il);
        hearth_op_rmsnorm(f->be, f->xb, l->post_attn_norm, f->xb, T, E, hp->norm_eps);
        hearth_fwd_trace(f, "attn_post_norm", il, "MUL", f->xb, T, E);
        hearth_op_add(f->be, f->x, f->xb, T * E);
        hearth_fwd_trace(f, "sa_out", il, "ADD", f->x, T, E);
        hearth_op_rmsnorm(f->be, f->x, l->ffn_norm, f->xb, T, E, hp->norm_eps);
        hearth_fwd_trace(f, "ffn_norm", il, "MUL", f->xb, T, E);
        hearth_blk_ffn(f, (int32_t)T, il);
        hearth_op_rmsnorm(f->be, f->xb, l->post_ffn_norm, f->xb, T, E, hp->norm_eps);
        hearth_fwd_trace(f, "ffn_post_norm", il, "MUL", f->xb, T, E);
        hearth_op_add(f->be, f->x, f->xb, T * E);
        hearth_fwd_trace(f, "l_out", il, "ADD", f->x, T, E);
    }
    hearth_blk_logits(f, logits);
}
