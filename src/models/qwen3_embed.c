/*
 * qwen3_embed.c - a Qwen3 decoder as an embedding model (Qwen3-Embedding's layout: causal
 * attention, last-token pooling from sentence-transformers' config), for a batch laid end to
 * end as bert.c lays it (bert.h's encoder API; bert_load.c reads the checkpoint).
 *
 * As transformers' Qwen3Model, without a KV cache (every call starts from nothing):
 *   x   = word[id]
 *   h   = rmsnorm(x) * input_layernorm
 *   qkv = h [Wq Wk Wv]^T                       q: n_head heads, k and v: n_head_kv heads
 *   q, k: each head rmsnorm(.) * q_norm / k_norm, then rotated by position (rotate-half)
 *   x  += attention(q, k, v) Wo^T              causal, per sequence; query head h reads kv head
 *                                              h / (n_head / n_head_kv)
 *   h   = rmsnorm(x) * post_attention_layernorm
 *   x  += (silu(h Wgate^T) * (h Wup^T)) Wdown^T
 * and rmsnorm(x) * norm at the end.
 *
 * EmbeddingGemma (b->gemma, transformers' gemma3_text with use_bidirectional_attention) is the
 * same loop with: word rows times sqrt(d); RMSNorm weights used as (1 + w) (folded at load);
 * attention in both directions, a sliding layer seeing keys with |i - j| <= window and rotating
 * with the local base; scores scaled by query_pre_attn_scalar^-1/2; the attention and MLP outputs
 * each RMS-normalized (post_attention_layernorm, post_feedforward_layernorm) before their
 * residual add, pre_feedforward_layernorm in ln2's place; gelu_pytorch_tanh(gate) * up. The matmuls are the packed f32 GEMM (kernels/gemm_f32.h);
 * RMSNorm and RoPE the references of kernels/ref/ops_ref.h; attention plain C here.
 */
#include "models/bert_internal.h"

#include "kernels/gemm_f32.h"
#include "kernels/kernels.h"
#include "kernels/ref/ops_ref.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef enum { Q_EMBED, Q_NORM1, Q_QK, Q_ADD, Q_NORM2, Q_SWIGLU, Q_FINAL } q_kind;

typedef struct {
    const hearth_bert *b;
    const bert_layer  *l;
    int64_t            n_tok, n_seq, max_len, qd, kvd;
    const int32_t     *tok_ids, *tok_pos;
    const int64_t     *start, *len;
    float             *x, *h, *qkv, *ctx, *u, *g, *scores;
    const float       *post;      /* Gemma: the sandwich norm applied to h before Q_ADD, or NULL */
    q_kind             kind;
    atomic_int_fast64_t next;
} qfwd;

static void rows_job(void *arg, int ith, int nth) {
    qfwd *f = arg;
    const hearth_bert *b = f->b;
    const int64_t d = b->d, ff = b->d_ff, hd = b->head_dim, w = f->qd + 2 * f->kvd;
    for (int64_t r = ith; r < f->n_tok; r += nth) {
        float *xr = f->x + r * d, *hr = f->h + r * d;
        switch (f->kind) {
        case Q_EMBED: {
            const char *src = (const char *)b->word.data + (size_t)f->tok_ids[r] * b->word.row_bytes;
            if (b->word.type == HEARTH_TYPE_F32) memcpy(xr, src, (size_t)d * sizeof *xr);
            else hearth_kernels_traits_isa(b->word.type, HEARTH_ISA_SCALAR)->to_float(src, xr, d);
            if (b->gemma)
                for (int64_t i = 0; i < d; i++) xr[i] *= b->embed_scale;
            break;
        }
        case Q_NORM1: hearth_rmsnorm_ref(xr, f->l->ln1_w, hr, d, b->eps); break;
        case Q_NORM2: hearth_rmsnorm_ref(xr, f->l->ln2_w, hr, d, b->eps); break;
        case Q_FINAL: hearth_rmsnorm_ref(xr, b->final_w, xr, d, b->eps); break;
        case Q_QK: {
            hearth_rope_params rp = {.inv_freq = f->l->sliding ? b->inv_freq_local : b->inv_freq_global, .neox = true};
            float *q = f->qkv + r * w;
            for (int32_t hh = 0; hh < b->n_head + b->n_head_kv; hh++) { /* q's heads, then k's */
                float *v = q + (int64_t)hh * hd;
                hearth_rmsnorm_ref(v, hh < b->n_head ? f->l->q_norm : f->l->k_norm, v, hd, b->eps);
                hearth_rope_ref(v, hd, f->tok_pos[r], &rp);
            }
            break;
        }
        case Q_ADD:
            if (f->post) hearth_rmsnorm_ref(hr, f->post, hr, d, b->eps);
            for (int64_t i = 0; i < d; i++) xr[i] += hr[i];
            break;
        case Q_SWIGLU: {
            const float *ur = f->u + r * 2 * ff;
            float *gr = f->g + r * ff;
            if (b->gemma) /* gelu_pytorch_tanh(gate) * up */
                for (int64_t i = 0; i < ff; i++) {
                    const float x = ur[i];
                    gr[i] = 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x))) * ur[ff + i];
                }
            else
                for (int64_t i = 0; i < ff; i++) gr[i] = ur[i] / (1.0f + expf(-ur[i])) * ur[ff + i];
            break;
        }
        }
    }
}

static void run(qfwd *f, q_kind k) {
    f->kind = k;
    hearth_pool_run(f->b->pool, rows_job, f);
}

/* (sequence, query head) pairs; query i sees keys 0..i of its sequence (Qwen3), or every key of
 * it, within |i - j| <= window on sliding layers (EmbeddingGemma). */
static void attn_job(void *arg, int ith, int nth) {
    (void)nth;
    qfwd *f = arg;
    const hearth_bert *b = f->b;
    const int64_t hd = b->head_dim, w = f->qd + 2 * f->kvd, n_pairs = f->n_seq * b->n_head;
    const int32_t group = b->n_head / b->n_head_kv;
    const float scale = b->gemma ? b->attn_scale : 1.0f / sqrtf((float)hd);
    float *sc = f->scores + ith * f->max_len;
    for (;;) {
        int64_t p = atomic_fetch_add(&f->next, 1);
        if (p >= n_pairs) break;
        const int64_t s = p / b->n_head, h = p % b->n_head, n = f->len[s];
        const float *base = f->qkv + f->start[s] * w;
        const int64_t qo = h * hd, ko = f->qd + (h / group) * hd, vo = f->qd + f->kvd + (h / group) * hd;
        hearth_embed_attn_head(base + qo, base + ko, base + vo, w, f->ctx + f->start[s] * f->qd + qo, f->qd, n,
                               (int32_t)hd, scale, !b->gemma, b->gemma && f->l->sliding ? b->window : -1, sc);
    }
}

hearth_status hearth_qwen3_embed_forward(const hearth_bert *b, const int32_t *tok_ids, const int32_t *tok_pos,
                                         int64_t n_tok, const int64_t *start, const int64_t *len, int64_t n_seq,
                                         int64_t max_len, float *x) {
    const int64_t d = b->d, ff = b->d_ff, qd = (int64_t)b->n_head * b->head_dim,
                  kvd = (int64_t)b->n_head_kv * b->head_dim;
    const int nth = hearth_pool_size(b->pool);
    size_t n_floats = (size_t)n_tok * (size_t)(d + qd + 2 * kvd + qd + 3 * ff) + (size_t)nth * (size_t)max_len;
    float *buf = malloc(n_floats * sizeof *buf);
    if (!buf) return HEARTH_E_NOMEM;
    qfwd f = {.b = b, .n_tok = n_tok, .n_seq = n_seq, .max_len = max_len, .qd = qd, .kvd = kvd, .tok_ids = tok_ids,
              .tok_pos = tok_pos, .start = start, .len = len, .x = x};
    f.h = buf;
    f.qkv = f.h + n_tok * d;
    f.ctx = f.qkv + n_tok * (qd + 2 * kvd);
    f.u = f.ctx + n_tok * qd;
    f.g = f.u + n_tok * 2 * ff;
    f.scores = f.g + n_tok * ff;
    run(&f, Q_EMBED);
    for (int64_t il = 0; il < b->n_layer; il++) {
        const bert_layer *l = &b->layers[il];
        f.l = l;
        run(&f, Q_NORM1);
        hearth_gemm_f32(b->pool, l->p_qkv, qd + 2 * kvd, d, f.h, d, n_tok, f.qkv, qd + 2 * kvd);
        run(&f, Q_QK);
        atomic_store(&f.next, 0);
        hearth_pool_run(b->pool, attn_job, &f);
        hearth_gemm_f32(b->pool, l->p_o, d, qd, f.ctx, qd, n_tok, f.h, d);
        f.post = l->post_attn_w;
        run(&f, Q_ADD);
        run(&f, Q_NORM2);
        hearth_gemm_f32(b->pool, l->p_up, 2 * ff, d, f.h, d, n_tok, f.u, 2 * ff);
        run(&f, Q_SWIGLU);
        hearth_gemm_f32(b->pool, l->p_down, d, ff, f.g, ff, n_tok, f.h, d);
        f.post = l->post_ffn_w;
        run(&f, Q_ADD);
    }
    run(&f, Q_FINAL);
    free(buf);
    return HEARTH_OK;
}
