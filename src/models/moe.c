/*
 * moe.c - the mixture-of-experts feed-forward of the families that route tokens to experts
 * (Gemma 4 beside its MLP, Qwen3 MoE in place of it on the layers that have a router):
 *
 *   p      = softmax(router logits)             per token, in f32, on the host
 *   sel, w = the k largest p (a tie goes to the lower expert), renormalized to sum 1 if asked
 *   out[t] = sum over j < k of w[t][j] * down_e(glu(gate_e x[t], up_e x[t])),  e = sel[t][j]
 *
 * Grouped by expert: the rows routed to an expert are gathered (copy_rows) into one block, run
 * through its gate / up projections (one fused op) and its down projection, one matmul each
 * over all its rows of the step, then scaled and added back row by row; experts in ascending
 * order, as transformers' index_add_ accumulates them. Expert e's gate and up rows start at
 * row e * exp_stride of exp_gate / exp_up, its down rows at e * n_embd of exp_down (model.h's
 * layer layout), so one stacked tensor serves as every expert's matrix through row views.
 *
 * gpt-oss adds biases (router, and each expert's gate, up and down rows: the gate and up then
 * go as two matmuls, bias, then the clamped SwiGLU) and routes by a softmax over the k largest
 * logits, which is the renormalized top k of the whole softmax.
 *
 * Qwen3-Next and Qwen3.5 MoE add a shared expert: a SwiGLU MLP on every token, weighed by
 * sigmoid(x . shared_expert_gate) (downloaded and taken on the host as the router's logits are)
 * and added after the routed experts, as transformers adds it.
 *
 * The router's logits are downloaded and the choice is made on the host: a step with experts
 * is never replayed as a captured graph (forward.c).
 */
#include "models/forward_internal.h"

#include <math.h>

enum { MOE_CHUNK = 256 }; /* rows of one expert gathered at a time */

/* Rows [r0, r0 + n) of w as a weight of their own (one expert's slice). */
static hearth_weight rows_view(const hearth_weight *w, int64_t r0, int64_t n) {
    hearth_weight v = *w;
    v.ne1 = n;
    v.data = (const uint8_t *)w->data + (size_t)r0 * w->row_bytes;
    return v;
}

void hearth_moe_route(hearth_fwd *f, int64_t T, bool renorm) {
    const hearth_hparams *hp = &f->m->hp;
    int64_t NE = hp->n_expert, K = hp->n_expert_used;
    hearth_buf_download(f->be, f->moe_host, f->moe_logits, (size_t)(T * NE) * sizeof(float));
    for (int64_t t = 0; t < T; t++) {
        float *p = f->moe_host + t * NE, mx = p[0], sum = 0, top = 0;
        for (int64_t e = 1; e < NE; e++) mx = p[e] > mx ? p[e] : mx;
        for (int64_t e = 0; e < NE; e++) sum += p[e] = expf(p[e] - mx);
        for (int64_t e = 0; e < NE; e++) p[e] /= sum;
        for (int64_t k = 0; k < K; k++) {
            int32_t best = -1;
            for (int64_t e = 0; e < NE; e++) {
                bool taken = false;
                for (int64_t j = 0; j < k; j++) taken |= f->moe_sel[t * K + j] == e;
                if (!taken && (best < 0 || p[e] > p[best])) best = (int32_t)e;
            }
            f->moe_sel[t * K + k] = best;
            f->moe_w[t * K + k] = p[best];
            top += p[best];
        }
        if (renorm)
            for (int64_t k = 0; k < K; k++) f->moe_w[t * K + k] /= top;
    }
}

void hearth_moe_experts(hearth_fwd *f, const float *x, int64_t T, int32_t il, hearth_glu_kind glu) {
    const hearth_hparams *hp = &f->m->hp;
    const hearth_layer *l = &f->m->layers[il];
    hearth_backend *be = f->be;
    int64_t E = hp->n_embd, I = hp->n_ff_exp, NE = hp->n_expert, K = hp->n_expert_used;
    hearth_op_scale(be, f->moe_out, T * E, 0.0f);
    int64_t off = 0; /* each expert's token list goes to its own part of moe_rows */
    int32_t list[MOE_CHUNK];
    float weight[MOE_CHUNK];
    for (int64_t e = 0; e < NE; e++) {
        for (int64_t t0 = 0; t0 < T; t0 += MOE_CHUNK) {
            int32_t n = 0;
            for (int64_t t = t0; t < T && t < t0 + MOE_CHUNK; t++)
                for (int64_t k = 0; k < K; k++)
                    if (f->moe_sel[t * K + k] == e) list[n] = (int32_t)t, weight[n++] = f->moe_w[t * K + k];
            if (n == 0) continue;
            hearth_buf_upload(be, f->moe_rows + off, list, (size_t)n * sizeof(int32_t));
            hearth_op_copy_rows(be, x, E, f->moe_rows + off, n, f->moe_gx);
            off += n;
            hearth_weight gate = rows_view(&l->exp_gate, e * l->exp_stride, I),
                          up = rows_view(&l->exp_up, e * l->exp_stride, I), down = rows_view(&l->exp_down, e * E, E);
            if (l->exp_gate_b) { /* gpt-oss: biases on the gate, up and down rows */
                const hearth_weight *gu[2] = {&gate, &up};
                float *const out[2] = {f->moe_g, f->moe_u};
                const int64_t ld[2] = {I, I};
                hearth_op_matmul_n(be, gu, out, ld, 2, f->moe_gx, n);
                hearth_op_add_rows(be, f->moe_g, l->exp_gate_b + e * I, n, I);
                hearth_op_add_rows(be, f->moe_u, l->exp_up_b + e * I, n, I);
                hearth_op_glu(be, f->moe_g, f->moe_u, (int64_t)n * I, glu);
            } else {
                hearth_op_ffn_glu(be, &gate, &up, f->moe_gx, n, f->moe_g, f->moe_u, glu);
            }
            hearth_op_matmul(be, &down, f->moe_g, n, f->moe_d, E);
            if (l->exp_down_b) hearth_op_add_rows(be, f->moe_d, l->exp_down_b + e * E, n, E);
            for (int32_t j = 0; j < n; j++) {
                hearth_op_scale(be, f->moe_d + j * E, E, weight[j]);
                hearth_op_add(be, f->moe_out + list[j] * E, f->moe_d + j * E, E);
            }
        }
    }
}

void hearth_blk_moe(hearth_fwd *f, int32_t n_tok, int32_t il) {
    const hearth_hparams *hp = &f->m->hp;
    const hearth_layer *l = &f->m->layers[il];
    int64_t T = n_tok, E = hp->n_embd;
    hearth_op_matmul(f->be, &l->router, f->xb, T, f->moe_logits, hp->n_expert);
    if (l->router_b) hearth_op_add_rows(f->be, f->moe_logits, l->router_b, T, hp->n_expert);
    hearth_fwd_trace(f, "ffn_moe_logits", il, "MUL_MAT", f->moe_logits, T, hp->n_expert);
    hearth_moe_route(f, T, hp->moe_norm_topk);
    hearth_moe_experts(f, f->xb, T, il, hp->arch == HEARTH_ARCH_GPT_OSS ? HEARTH_GLU_SWIGLU_OAI : f->glu);
    if (l->sh_gate.data) { /* Qwen3-Next / Qwen3.5 MoE: + sigmoid(x w_g) * shared_mlp(x), row by row */
        hearth_op_matmul(f->be, &l->sh_gate_inp, f->xb, T, f->moe_logits, 1);
        hearth_buf_download(f->be, f->moe_host, f->moe_logits, (size_t)T * sizeof(float));
        hearth_op_ffn_glu(f->be, &l->sh_gate, &l->sh_up, f->xb, T, f->g, f->u, f->glu);
        hearth_op_matmul(f->be, &l->sh_down, f->g, T, f->moe_d, E);
        hearth_fwd_trace(f, "ffn_shexp", il, "MUL_MAT", f->moe_d, T, E);
        for (int64_t t = 0; t < T; t++) {
            hearth_op_scale(f->be, f->moe_d + t * E, E, 1.0f / (1.0f + expf(-f->moe_host[t])));
            hearth_op_add(f->be, f->moe_out + t * E, f->moe_d + t * E, E);
        }
    }
    hearth_op_scale(f->be, f->xb, T * E, 0.0f);
    hearth_op_add(f->be, f->xb, f->moe_out, T * E);
    hearth_fwd_trace(f, "ffn_moe_out", il, "ADD", f->xb, T, E);
}
