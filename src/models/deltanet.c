/*
 * deltanet.c - the linear-attention layer of the hybrid families (Qwen3.5, Qwen3-Next:
 * transformers' Qwen3_5GatedDeltaNet), in place of attention on the layers hearth_hparams_is_linear
 * names:
 *
 *   qkv = x W_qkv^T,  z = x W_z^T,  b = x W_b^T,  a = x W_a^T          (the projections)
 *   o   = deltanet(qkv, b, a; the slot's conv window and state S)     (backend op; deltanet_ref.h)
 *   y   = (rmsnorm(o_h) * w_norm * silu(z_h)) W_out^T                  (the gated norm, per value head)
 *
 * Instead of KV rows each sequence slot keeps a fixed-size state per layer (kv->lin_state: the
 * last conv - 1 inputs of the conv and S), advanced token by token; the forward's batch check
 * (forward.c) guarantees each sequence continues where its state stands, or starts at 0.
 * Prefill runs the same per-token recurrence as decode (a chunked form is a faster twin still
 * to write). A step that asks for state snapshots (the prefix cache's, engine/kv_pool.h) runs
 * the op once per stretch of tokens between them and copies the slot's state after each.
 */
#include "models/forward_internal.h"

void hearth_blk_deltanet(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, int32_t il) {
    const hearth_hparams *hp = &f->m->hp;
    const hearth_layer *l = &f->m->layers[il];
    hearth_backend *be = f->be;
    int64_t T = b->n_tokens, nv = hp->lin_n_v, V = nv * hp->lin_v_dim;
    int64_t C = 2 * (int64_t)hp->lin_n_k * hp->lin_k_dim + V;

    const hearth_weight *w[4] = {&l->lin_qkv, &l->lin_z, &l->lin_b, &l->lin_a};
    float *const out[4] = {f->lin_qkv, f->lin_z, f->lin_b, f->lin_a};
    const int64_t ld[4] = {C, V, nv, nv};
    hearth_op_matmul_n(be, w, out, ld, 4, f->xb, T);
    hearth_fwd_trace(f, "lin_qkv", il, "MUL_MAT", f->lin_qkv, T, C);
    hearth_fwd_trace(f, "lin_z", il, "MUL_MAT", f->lin_z, T, V);
    hearth_deltanet_args a = {
        .n_tok = T, .n_k = hp->lin_n_k, .n_v = hp->lin_n_v, .k_dim = hp->lin_k_dim, .v_dim = hp->lin_v_dim,
        .conv = hp->lin_conv, .v_tiled = hp->lin_v_tiled, .qkv = f->lin_qkv, .b = f->lin_b, .a = f->lin_a, .conv_w = l->lin_conv_w,
        .dt_bias = l->lin_dt_bias, .a_neg = l->lin_a_neg, .out = f->lin_out, .pos = b->pos, .seq = b->seq,
        .state = kv->lin_state[il], .state_floats = hearth_hparams_lin_state_floats(hp),
    };
    /* the step in runs that end where a state snapshot is taken (hearth_batch's snap_at): the
     * recurrence is token by token, so the runs compute the same values as one call */
    for (int32_t i = 0, t0 = 0; i <= b->n_snap && t0 < T; i++) {
        int32_t t1 = i < b->n_snap ? b->snap_at[i] + 1 : (int32_t)T;
        hearth_deltanet_args run = a;
        run.n_tok = t1 - t0;
        run.qkv += (int64_t)t0 * C;
        run.b += (int64_t)t0 * nv;
        run.a += (int64_t)t0 * nv;
        run.out += (int64_t)t0 * V;
        run.pos += t0;
        run.seq += t0;
        hearth_op_deltanet(be, &run);
        if (i < b->n_snap) /* the slot's state row to the snapshot's row */
            hearth_op_copy_rows(be, a.state, a.state_floats, b->seq + t1 - 1, 1,
                                a.state + (int64_t)b->snap_to[i] * a.state_floats);
        t0 = t1;
    }
    hearth_fwd_trace(f, "lin_core", il, "GATED_DELTA_NET", f->lin_out, T, V);
    hearth_op_rmsnorm(be, f->lin_out, l->lin_norm, f->lin_out, T * nv, hp->lin_v_dim, hp->norm_eps);
    hearth_op_glu(be, f->lin_z, f->lin_out, T * V, HEARTH_GLU_SWIGLU); /* silu(z) * the normed output */
    hearth_fwd_trace(f, "lin_gated", il, "MUL", f->lin_z, T, V);
    hearth_op_matmul(be, &l->lin_out, f->lin_z, T, f->xb, hp->n_embd);
    hearth_fwd_trace(f, "attn_out", il, "MUL_MAT", f->xb, T, hp->n_embd);
}
