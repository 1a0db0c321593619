/*
 * modernbert.c - the ModernBERT forward (bert.h's encoder API; bert_load.c reads the
 * checkpoint), for a batch of sequences laid end to end as bert.c lays them.
 *
 * Pre-LN layers with rotary positions and a gated MLP, as transformers' ModernBertModel:
 *   x   = LayerNorm(word[id])                                  no position or type tables
 *   h   = attn_norm(x)  (layer 0: x itself)
 *   qkv = h Wqkv^T                                             [T][3d], q | k | v
 *   q, k rotated by position p (from 0 in each sequence), rotate-half style, with the global
 *        base on full-attention layers and the local base on sliding ones
 *   x  += attention(q, k, v) Wo^T                              per sequence and head; a
 *        sliding layer sees keys with |i - j| <= window (local_attention / 2)
 *   u   = mlp_norm(x) Wi^T                                     [T][2 d_ff]: input | gate
 *   x  += (gelu_erf(input) * gate) Wo^T
 * and final_norm at the end. LayerNorms have a weight and, with norm_bias, a bias. The matmuls
 * are the packed f32 GEMM (kernels/gemm_f32.h); attention is plain C here (windowed), the GELU
 * the active set's (kernels/encoder_ops.h).
 */
#include "models/bert_internal.h"

#include "kernels/encoder_ops.h"
#include "kernels/gemm_f32.h"
#include "kernels/kernels.h"
#include "kernels/ref/encoder_ref.h"
#include "kernels/ref/ops_ref.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef enum { M_EMBED, M_NORM, M_ROPE, M_ADD, M_GLU, M_FINAL } m_kind;

typedef struct {
    const hearth_bert *b;
    const bert_layer  *l;
    int64_t            n_tok, n_seq, max_len;
    const int32_t     *tok_ids, *tok_pos;
    const int64_t     *start, *len;
    float             *x, *h, *qkv, *ctx, *u, *g, *scores;
    m_kind             kind;
    hearth_gelu_fn     gelu;
    atomic_int_fast64_t next;
} mfwd;

static void rows_job(void *arg, int ith, int nth) {
    mfwd *f = arg;
    const hearth_bert *b = f->b;
    const int64_t d = b->d, ff = b->d_ff;
    for (int64_t r = ith; r < f->n_tok; r += nth) {
        float *xr = f->x + r * d, *hr = f->h + r * d;
        switch (f->kind) {
        case M_EMBED: {
            const char *src = (const char *)b->word.data + (size_t)f->tok_ids[r] * b->word.row_bytes;
            if (b->word.type == HEARTH_TYPE_F32) memcpy(xr, src, (size_t)d * sizeof *xr);
            else hearth_kernels_traits_isa(b->word.type, HEARTH_ISA_SCALAR)->to_float(src, xr, d);
            hearth_layernorm_ref(xr, b->emb_ln_w, b->emb_ln_b, xr, 1, d, b->eps);
            break;
        }
        case M_NORM: /* h = attn_norm(x) (layer 0: x), or mlp_norm(x) */
            if (f->l->ln1_w) hearth_layernorm_ref(xr, f->l->ln1_w, f->l->ln1_b, hr, 1, d, b->eps);
            else memcpy(hr, xr, (size_t)d * sizeof *hr);
            break;
        case M_ROPE: {
            hearth_rope_params rp = {.inv_freq = f->l->sliding ? b->inv_freq_local : b->inv_freq_global, .neox = true};
            float *q = f->qkv + r * 3 * d;
            if (f->l->bq)
                for (int64_t i = 0; i < 3 * d; i++) q[i] += f->l->bq[i];
            for (int32_t hh = 0; hh < 2 * b->n_head; hh++) /* q's heads, then k's */
                hearth_rope_ref(q + (int64_t)hh * b->head_dim, b->head_dim, f->tok_pos[r], &rp);
            break;
        }
        case M_ADD: /* x += h (+ bias) */
            for (int64_t i = 0; i < d; i++) xr[i] += hr[i] + (f->l->bo ? f->l->bo[i] : 0.0f);
            break;
        case M_GLU: {
            const float *ur = f->u + r * 2 * ff;
            float *gr = f->g + r * ff;
            memcpy(gr, ur, (size_t)ff * sizeof *gr);
            f->gelu(gr, ff);
            for (int64_t i = 0; i < ff; i++) gr[i] *= ur[ff + i];
            break;
        }
        case M_FINAL:
            hearth_layernorm_ref(xr, b->final_w, b->final_b, xr, 1, d, b->eps);
            break;
        }
    }
}

static void run(mfwd *f, m_kind k) {
    f->kind = k;
    hearth_pool_run(f->b->pool, rows_job, f);
}

/* (sequence, head) pairs; a sliding layer's query i sees keys [i - window, i + window]. */
static void attn_job(void *arg, int ith, int nth) {
    (void)nth;
    mfwd *f = arg;
    const hearth_bert *b = f->b;
    const int64_t d = b->d, ld = 3 * d, n_pairs = f->n_seq * b->n_head;
    const int32_t hd = b->head_dim;
    const float scale = 1.0f / sqrtf((float)hd);
    float *sc = f->scores + ith * f->max_len;
    for (;;) {
        int64_t p = atomic_fetch_add(&f->next, 1);
        if (p >= n_pairs) break;
        const int64_t s = p / b->n_head, off = (p % b->n_head) * hd, n = f->len[s];
        const float *q0 = f->qkv + f->start[s] * ld + off;
        hearth_embed_attn_head(q0, q0 + d, q0 + 2 * d, ld, f->ctx + f->start[s] * d + off, d, n, hd, scale, false,
                               f->l->sliding ? b->window : -1, sc);
    }
}

hearth_status hearth_modernbert_forward(const hearth_bert *b, const int32_t *tok_ids, const int32_t *tok_pos,
                                        int64_t n_tok, const int64_t *start, const int64_t *len, int64_t n_seq,
                                        int64_t max_len, float *x) {
    const int64_t d = b->d, ff = b->d_ff;
    const int nth = hearth_pool_size(b->pool);
    size_t n_floats = (size_t)n_tok * (size_t)(d * 5 + ff * 3) + (size_t)nth * (size_t)max_len;
    float *buf = malloc(n_floats * sizeof *buf);
    if (!buf) return HEARTH_E_NOMEM;
    mfwd f = {.b = b, .n_tok = n_tok, .n_seq = n_seq, .max_len = max_len, .tok_ids = tok_ids, .tok_pos = tok_pos,
              .start = start, .len = len, .x = x, .gelu = hearth_kernels_gelu_erf()};
    f.h = buf;
    f.qkv = f.h + n_tok * d;
    f.ctx = f.qkv + n_tok * 3 * d;
    f.u = f.ctx + n_tok * d;
    f.g = f.u + n_tok * 2 * ff;
    f.scores = f.g + n_tok * ff;
    run(&f, M_EMBED);
    for (int64_t il = 0; il < b->n_layer; il++) {
        const bert_layer *l = &b->layers[il];
        f.l = l;
        run(&f, M_NORM);
        hearth_gemm_f32(b->pool, l->p_qkv, 3 * d, d, f.h, d, n_tok, f.qkv, 3 * d);
        run(&f, M_ROPE);
        atomic_store(&f.next, 0);
        hearth_pool_run(b->pool, attn_job, &f);
        hearth_gemm_f32(b->pool, l->p_o, d, d, f.ctx, d, n_tok, f.h, d);
        run(&f, M_ADD);
        /* mlp_norm through the same row job: point ln1 at it for this pass */
        bert_layer mlp = *l;
        mlp.ln1_w = l->ln2_w, mlp.ln1_b = l->ln2_b, mlp.bo = NULL;
        f.l = &mlp;
        run(&f, M_NORM);
        hearth_gemm_f32(b->pool, l->p_up, 2 * ff, d, f.h, d, n_tok, f.u, 2 * ff);
        run(&f, M_GLU);
        hearth_gemm_f32(b->pool, l->p_down, d, ff, f.g, ff, n_tok, f.h, d);
        run(&f, M_ADD);
    }
    run(&f, M_FINAL);
    free(buf);
    return HEARTH_OK;
}
