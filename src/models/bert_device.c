/*
 * bert_device.c - the encoder forward on a device backend (CUDA): BERT, RoBERTa and XLM-R
 * (post-LN layers, absolute positions, the exact GELU) through the backend's op table, the same
 * arithmetic as bert.c's CPU path in the same order.
 *
 * Layout: padded, unlike the CPU path. A forward of n_seq sequences, the longest L tokens, has
 * n_seq * L rows; sequence s owns rows s * L .. s * L + L - 1, its first len[s] real and the rest
 * padding (token 0 at the first position). Every matmul and row op runs over all of them (one
 * cuBLAS GEMM per weight for the whole batch); padding rows are never read by a real row:
 * attention masks keys past len[s] (attn_enc), the pooling reads the real rows only. Batches
 * are cut so that n_seq * L stays within params.max_batch_tokens.
 *
 *   x   = LayerNorm(word[id] + position[p] + token_type[0])    get_rows, add, add_rows, layernorm
 *   per layer:
 *     qkv = x [Wq Wk Wv]^T + [bq bk bv]                        matmul_n into [R][3d], add_rows
 *     ctx = attention(q, k, v) within each sequence            attn_enc, scale 1/sqrt(head_dim)
 *     x   = LayerNorm(x + (ctx Wo^T + bo))                     matmul, add_rows, add, layernorm
 *     h   = gelu_erf(x Wup^T + bup)                            matmul, add_rows, gelu_erf
 *     x   = LayerNorm(x + (h Wdown^T + bdown))
 *   out = pool(x) (mean, CLS or last), L2-normalized when configured, then downloaded
 *
 * The residual add is (projection + bias) added to x, as bert.c's add2_to computes it. Weights
 * are the checkpoint's own matrices (the backend copies each to the device the first time;
 * f16/bf16 ones multiply activations rounded to their type, as the CUDA matmul does), biases and
 * norms host vectors copied the same way; the concatenated QKV bias and the token-type row are
 * made once here (owned by the encoder).
 *
 * Not on the device (hearth_bert_device_check says which): ModernBERT, NomicBERT, the decoder
 * embedders (Qwen3, EmbeddingGemma) and Dense modules after the pooling.
 */
#include "models/bert_internal.h"

#include "base/log.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool hearth_bert_device_check(const hearth_bert *b, hearth_backend *be, char *why, size_t cap) {
    const char *what = b->modern ? "ModernBERT" : b->decoder ? (b->gemma ? "EmbeddingGemma" : "Qwen3")
                       : b->rope ? "NomicBERT" : b->n_dense ? "Dense modules after the pooling" : NULL;
    if (what) {
        snprintf(why, cap, "%s runs on the CPU only (the %s backend runs BERT, RoBERTa and XLM-R encoders)", what,
                 hearth_backend_name(be));
        return false;
    }
    if (!hearth_backend_has_encoder(be)) {
        snprintf(why, cap, "the %s backend has no encoder ops", hearth_backend_name(be));
        return false;
    }
    if (!hearth_backend_attn_enc_ok(be, b->max_tokens, b->head_dim)) {
        snprintf(why, cap, "the %s backend's encoder attention does not run %d tokens of heads of %d",
                 hearth_backend_name(be), b->max_tokens, b->head_dim);
        return false;
    }
    const hearth_weight *tables[] = {&b->word, &b->pos, &b->type};
    for (size_t i = 0; i < 3; i++)
        if (tables[i]->data && !hearth_backend_supports(be, tables[i]->type)) {
            snprintf(why, cap, "the %s backend has no kernel for %s embedding tables", hearth_backend_name(be),
                     hearth_type_name(tables[i]->type));
            return false;
        }
    for (int64_t il = 0; il < b->n_layer; il++) {
        const bert_layer *l = &b->layers[il];
        const hearth_weight *ws[] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_up, &l->w_down};
        for (size_t i = 0; i < 6; i++)
            if (ws[i]->data && !hearth_backend_supports(be, ws[i]->type)) {
                snprintf(why, cap, "the %s backend has no kernel for %s weights", hearth_backend_name(be),
                         hearth_type_name(ws[i]->type));
                return false;
            }
    }
    return true;
}

hearth_status hearth_bert_device_prepare(hearth_bert *b, hearth_err *err) {
    const int64_t d = b->d;
    float *type0 = hearth_bert_keep(b, malloc((size_t)d * sizeof(float)));
    if (!type0) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory preparing the encoder");
    const char *row = b->type.data;
    if (b->type.type == HEARTH_TYPE_F32) memcpy(type0, row, (size_t)d * sizeof(float));
    else hearth_kernels_traits_isa(b->type.type, HEARTH_ISA_SCALAR)->to_float(row, type0, d);
    b->type0 = type0;
    for (int64_t il = 0; il < b->n_layer; il++) {
        bert_layer *l = &b->layers[il];
        if (!l->bq) continue;
        float *bqkv = hearth_bert_keep(b, malloc((size_t)(3 * d) * sizeof(float)));
        if (!bqkv) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory preparing the encoder");
        memcpy(bqkv, l->bq, (size_t)d * sizeof(float));
        memcpy(bqkv + d, l->bk, (size_t)d * sizeof(float));
        memcpy(bqkv + 2 * d, l->bv, (size_t)d * sizeof(float));
        l->b_qkv = bqkv;
    }
    return HEARTH_OK;
}

/* One forward of sequences [s0, s1), padded to L rows each, into out. */
static hearth_status forward(hearth_bert *b, const int32_t *const *ids, const size_t *n_ids, int64_t s0, int64_t s1,
                             int32_t L, float *out) {
    hearth_backend *be = b->be;
    const int64_t d = b->d, n_seq = s1 - s0, R = n_seq * L, ff = b->d_ff;
    const size_t fl = sizeof(float);
    int32_t *host = malloc((size_t)(2 * R + n_seq) * sizeof(int32_t));
    float *x = hearth_buf_alloc(be, (size_t)(R * d) * fl), *qkv = hearth_buf_alloc(be, (size_t)(R * 3 * d) * fl);
    float *ctx = hearth_buf_alloc(be, (size_t)(R * d) * fl), *tmp = hearth_buf_alloc(be, (size_t)(R * d) * fl);
    float *h = hearth_buf_alloc(be, (size_t)(R * ff) * fl), *pooled = hearth_buf_alloc(be, (size_t)(n_seq * d) * fl);
    int32_t *idx = hearth_buf_alloc(be, (size_t)(2 * R + n_seq) * sizeof(int32_t));
    hearth_status st = HEARTH_OK;
    if (!host || !x || !qkv || !ctx || !tmp || !h || !pooled || !idx) {
        st = HEARTH_E_NOMEM;
        goto out;
    }
    int32_t *tok = host, *pos = host + R, *len = host + 2 * R;
    for (int64_t s = 0; s < n_seq; s++) {
        len[s] = (int32_t)n_ids[s0 + s];
        for (int32_t i = 0; i < L; i++) {
            bool real = (size_t)i < n_ids[s0 + s];
            tok[s * L + i] = real ? ids[s0 + s][i] : 0;
            pos[s * L + i] = (real ? i : 0) + b->pos_offset;
        }
    }
    hearth_buf_upload(be, idx, host, (size_t)(2 * R + n_seq) * sizeof(int32_t));
    const int32_t *d_tok = idx, *d_pos = idx + R, *d_len = idx + 2 * R;

    hearth_op_get_rows(be, &b->word, d_tok, R, 1.0f, x);
    if (b->pos.data) {
        hearth_op_get_rows(be, &b->pos, d_pos, R, 1.0f, tmp);
        hearth_op_add(be, x, tmp, R * d);
    }
    hearth_op_add_rows(be, x, b->type0, R, d);
    hearth_op_layernorm(be, x, b->emb_ln_w, b->emb_ln_b, x, R, d, b->eps);
    const float scale = 1.0f / sqrtf((float)b->head_dim);
    for (int64_t il = 0; il < b->n_layer; il++) {
        const bert_layer *l = &b->layers[il];
        if (l->wk.data) { /* q, k and v side by side in each row of qkv */
            const hearth_weight *w[3] = {&l->wq, &l->wk, &l->wv};
            float *const y[3] = {qkv, qkv + d, qkv + 2 * d};
            const int64_t ld[3] = {3 * d, 3 * d, 3 * d};
            hearth_op_matmul_n(be, w, y, ld, 3, x, R);
        } else { /* one fused [3d][d] weight (a GGUF attn_qkv) */
            hearth_op_matmul(be, &l->wq, x, R, qkv, 3 * d);
        }
        if (l->b_qkv) hearth_op_add_rows(be, qkv, l->b_qkv, R, 3 * d);
        hearth_op_attn_enc(be, qkv, qkv + d, qkv + 2 * d, 3 * d, ctx, d, n_seq, L, d_len, b->n_head, b->head_dim,
                           scale);
        hearth_op_matmul(be, &l->wo, ctx, R, tmp, d);
        if (l->bo) hearth_op_add_rows(be, tmp, l->bo, R, d);
        hearth_op_add(be, x, tmp, R * d);
        hearth_op_layernorm(be, x, l->ln1_w, l->ln1_b, x, R, d, b->eps);
        hearth_op_matmul(be, &l->w_up, x, R, h, ff);
        if (l->b_up) hearth_op_add_rows(be, h, l->b_up, R, ff);
        hearth_op_gelu_erf(be, h, R * ff);
        hearth_op_matmul(be, &l->w_down, h, R, tmp, d);
        if (l->b_down) hearth_op_add_rows(be, tmp, l->b_down, R, d);
        hearth_op_add(be, x, tmp, R * d);
        hearth_op_layernorm(be, x, l->ln2_w, l->ln2_b, x, R, d, b->eps);
    }
    hearth_op_pool_rows(be, x, n_seq, L, d, d_len, (int)b->pooling, pooled);
    if (b->normalize) hearth_op_l2norm(be, pooled, n_seq, d);
    hearth_buf_download(be, out + s0 * d, pooled, (size_t)(n_seq * d) * fl);
out:
    hearth_buf_free(be, idx);
    hearth_buf_free(be, pooled);
    hearth_buf_free(be, h);
    hearth_buf_free(be, tmp);
    hearth_buf_free(be, ctx);
    hearth_buf_free(be, qkv);
    hearth_buf_free(be, x);
    free(host);
    return st;
}

hearth_status hearth_bert_device_embed(hearth_bert *b, const int32_t *const *ids, const size_t *n_ids, int64_t n_seq,
                                       float *out) {
    hearth_status st = HEARTH_OK;
    for (int64_t s0 = 0; s0 < n_seq && !st;) {
        int64_t s1 = s0, L = 0;
        while (s1 < n_seq) { /* whole sequences while the padded rows fit */
            int64_t l = (int64_t)n_ids[s1] > L ? (int64_t)n_ids[s1] : L;
            if (s1 > s0 && (s1 - s0 + 1) * l > b->params.max_batch_tokens) break;
            L = l;
            s1++;
        }
        st = forward(b, ids, n_ids, s0, s1, (int32_t)L, out);
        s0 = s1;
    }
    return st;
}
