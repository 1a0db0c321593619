/*
 * llama.c - the forward pass of llama-shaped decoders: llama (SmolLM2), qwen2 (QKV bias),
 * qwen3 (QK-norm), mistral (sliding window), phi3 (fused projections, bound as row views;
 * partial rotary), smollm3 (layers without RoPE) and qwen3 MoE (a layer with a router runs
 * the mixture of experts of moe.c as its ffn), qwen3.5 / qwen3-next (gated DeltaNet layers of
 * deltanet.c in place of attention on most layers, gated attention on the others); the
 * differences are flags of the arch table and hparams read inside the blocks.
 *
 *   x = embed(tokens)
 *   for each layer:  x += attn(rmsnorm(x));  x += ffn(rmsnorm(x))
 *   logits = output(rmsnorm(x))
 */
#include "models/forward_internal.h"

void hearth_llama_forward(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, float *logits) {
    const hearth_model *m = f->m;
    const hearth_hparams *hp = &m->hp;
    int64_t T = b->n_tokens, E = hp->n_embd;

    hearth_op_get_rows(f->be, &m->tok_embd, b->token, T, hp->embd_scale, f->x);
    hearth_fwd_trace(f, "inp_embd", -1, "GET_ROWS", f->x, T, E);
    /* each residual add and the norm after it are one op (one kernel on a GPU) */
    if (hp->n_layer > 0) hearth_op_rmsnorm(f->be, f->x, m->layers[0].attn_norm, f->xb, T, E, hp->norm_eps);
    for (int32_t il = 0; il < hp->n_layer; il++) {
        const hearth_layer *l = &m->layers[il];
        hearth_fwd_trace(f, "attn_norm", il, "MUL", f->xb, T, E);
        if (hearth_hparams_is_linear(hp, il)) hearth_blk_deltanet(f, b, kv, il);
        else hearth_blk_attn(f, b, kv, il);
        hearth_op_add_rmsnorm(f->be, f->x, f->xb, l->ffn_norm, f->xb, T, E, hp->norm_eps);
        hearth_fwd_trace(f, "ffn_inp", il, "ADD", f->x, T, E);
        hearth_fwd_trace(f, "ffn_norm", il, "MUL", f->xb, T, E);
        if (l->router.data) hearth_blk_moe(f, (int32_t)T, il);
        else hearth_blk_ffn(f, (int32_t)T, il);
        if (il + 1 < hp->n_layer)
            hearth_op_add_rmsnorm(f->be, f->x, f->xb, m->layers[il + 1].attn_norm, f->xb, T, E, hp->norm_eps);
        else
            hearth_op_add(f->be, f->x, f->xb, T * E);
        hearth_fwd_trace(f, "l_out", il, "ADD", f->x, T, E);
    }
    hearth_blk_logits(f, logits);
}
