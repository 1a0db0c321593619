/*
 * bert.c - the encoder forward: a batch of whole sequences in, one pooled vector per sequence
 * out (bert.h).
 *
 * Layout. The sequences of one forward are laid end to end: T tokens in all, sequence s owning
 * rows [start[s], start[s] + len[s]) of every activation buffer, so each matmul runs once over
 * all T rows and no row is padding: kernels/gemm_f32.h's packed f32 GEMM on the encoder's pool
 * (the weights were packed at load, f16 and bf16 converted to f32 exactly). Attention is the one place the sequences stay apart: each (sequence, head)
 * pair attends its own rows only, bidirectionally (kernels/ref/encoder_ref.h), the pairs shared
 * out over the pool's threads. Nothing survives the call: there is no KV cache.
 *
 * One layer, post-LN as BERT has it (d = hidden size, d_ff = intermediate size):
 *   qkv = x [Wq Wk Wv]^T + [bq bk bv]             one GEMM of the stacked weights, [T][3d]
 *   ctx = attention(q, k, v) per sequence, head   scale 1/sqrt(head_dim)
 *   x   = LayerNorm(x + ctx Wo^T + bo)
 *   h   = gelu_erf(x Wup^T + bup)                 [T][d_ff]
 *   x   = LayerNorm(x + h Wdown^T + bdown)
 * before the first layer x = LayerNorm(word[id] + position[p] + token_type[0]), p counting from
 * 0 in each sequence (from pad_token_id + 1 for RoBERTa and XLM-R). NomicBERT (b->rope) is the
 * same layer with no biases, no position table, q and k rotated by position after the QKV GEMM,
 * and silu(x Wgate^T) * (x Wup^T) in place of the GELU. After the last, the pooling (mean over the sequence's rows, summed in
 * double; the first row; the last row) and, when configured, L2 normalization, as
 * sentence-transformers' Pooling and Normalize modules compute them.
 *
 * Batches longer than params.max_batch_tokens are cut into several forwards of whole sequences;
 * a sequence's result does not depend on its neighbours (the GEMM's output of a row is its own),
 * so cutting changes no bits. Buffers are allocated per forward (request-sized memory).
 */
#include "models/bert_internal.h"

#include "base/size.h"
#include "kernels/encoder_ops.h"
#include "kernels/gemm_f32.h"
#include "kernels/kernels.h"
#include "kernels/ref/encoder_ref.h"
#include "kernels/ref/ops_ref.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef enum { ROWS_EMBED, ROWS_QKV_BIAS, ROWS_RESIDUAL_LN, ROWS_UP_GELU } rows_kind;

typedef struct {
    const hearth_bert *b;
    int64_t            n_tok;
    const int32_t     *tok_ids;   /* [n_tok] */
    const int32_t     *tok_pos;   /* [n_tok] */
    float             *x;         /* [n_tok][d] the residual stream */
    float             *qkv;       /* [n_tok][3d] */
    float             *ctx;       /* [n_tok][d] attention output */
    float             *tmp;       /* [n_tok][d] a projection before its residual add */
    float             *ff;        /* [n_tok][d_ff] */
    float             *scores;    /* [n_threads][max_len] */
    int64_t            max_len;
    const int64_t     *start, *len; /* [n_seq] */
    int64_t            n_seq;
    /* the job */
    rows_kind          kind;
    hearth_gelu_fn      gelu;     /* the active set's kernels */
    hearth_attn_full_fn attn;
    hearth_layernorm_fn layernorm;
    const bert_layer  *l;
    const float       *ln_w, *ln_b, *bias;
    atomic_int_fast64_t next;
} fwd;

static void row_of(const hearth_weight *w, int64_t r, float *out) {
    const char *p = (const char *)w->data + (size_t)r * w->row_bytes;
    if (w->type == HEARTH_TYPE_F32) memcpy(out, p, (size_t)w->ne0 * sizeof *out);
    else hearth_kernels_traits_isa(w->type, HEARTH_ISA_SCALAR)->to_float(p, out, w->ne0);
}

/* x[i] += a[i] (+ b[i]) over n. Blocks of 8 with a tail: -O2's vectorizer takes a loop of a
 * known trip count (the inner one) and not one that needs an epilogue. */
static void add_to(float *restrict x, const float *restrict a, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) x[i + j] += a[i + j];
    for (; i < n; i++) x[i] += a[i];
}
static void add2_to(float *restrict x, const float *restrict a, const float *restrict b, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) x[i + j] += a[i + j] + b[i + j];
    for (; i < n; i++) x[i] += a[i] + b[i];
}

static void rows_job(void *arg, int ith, int nth) {
    fwd *f = arg;
    const hearth_bert *b = f->b;
    const int64_t d = b->d;
    for (int64_t r = ith; r < f->n_tok; r += nth) {
        float *xr = f->x + r * d;
        switch (f->kind) {
        case ROWS_EMBED: {
            float *t = f->tmp + r * d;
            row_of(&b->word, f->tok_ids[r], xr);
            if (b->pos.data) { /* NomicBERT has none: its positions are rotary */
                row_of(&b->pos, f->tok_pos[r], t);
                add_to(xr, t, d);
            }
            row_of(&b->type, 0, t);
            add_to(xr, t, d);
            f->layernorm(xr, b->emb_ln_w, b->emb_ln_b, xr, 1, d, b->eps);
            break;
        }
        case ROWS_QKV_BIAS: {
            float *q = f->qkv + r * 3 * d;
            if (f->l->bq) {
                add_to(q, f->l->bq, d);
                add_to(q + d, f->l->bk, d);
                add_to(q + 2 * d, f->l->bv, d);
            }
            if (b->rope) { /* NomicBERT: q's heads, then k's, rotated by position (rotate-half) */
                hearth_rope_params rp = {.inv_freq = b->inv_freq_global, .neox = true};
                for (int32_t hh = 0; hh < 2 * b->n_head; hh++)
                    hearth_rope_ref(q + (int64_t)hh * b->head_dim, b->head_dim, f->tok_pos[r], &rp);
            }
            break;
        }
        case ROWS_RESIDUAL_LN: {
            const float *y = f->tmp + r * d;
            if (f->bias) add2_to(xr, y, f->bias, d);
            else add_to(xr, y, d);
            f->layernorm(xr, f->ln_w, f->ln_b, xr, 1, d, b->eps);
            break;
        }
        case ROWS_UP_GELU: {
            if (f->l->w_gate.data) { /* NomicBERT: silu(gate) * up, in place over the gate half */
                float *u = f->ff + r * 2 * b->d_ff;
                for (int64_t i = 0; i < b->d_ff; i++) u[i] = u[i] / (1.0f + expf(-u[i])) * u[b->d_ff + i];
                break;
            }
            float *h = f->ff + r * b->d_ff;
            add_to(h, f->l->b_up, b->d_ff);
            f->gelu(h, b->d_ff);
            break;
        }
        }
    }
}

static void run_rows(fwd *f, rows_kind kind) {
    f->kind = kind;
    hearth_pool_run(f->b->pool, rows_job, f);
}

/* (sequence, head) pairs taken from a shared counter: sequences differ in length. */
static void attn_job(void *arg, int ith, int nth) {
    (void)nth;
    fwd *f = arg;
    const hearth_bert *b = f->b;
    const int64_t d = b->d, n_pairs = f->n_seq * b->n_head;
    float *scores = f->scores + ith * f->max_len;
    const float scale = 1.0f / sqrtf((float)b->head_dim);
    for (;;) {
        int64_t p = atomic_fetch_add(&f->next, 1);
        if (p >= n_pairs) break;
        int64_t s = p / b->n_head, h = p % b->n_head, off = h * b->head_dim;
        const float *q = f->qkv + f->start[s] * 3 * d + off;
        f->attn(q, q + d, q + 2 * d, 3 * d, f->ctx + f->start[s] * d + off, d, f->len[s], 1,
                             b->head_dim, scale, scores);
    }
}

static void gemm(const hearth_bert *b, const float *packed, int64_t n_out, int64_t n_in, const float *x, int64_t n_tok,
                 float *y) {
    hearth_gemm_f32(b->pool, packed, n_out, n_in, x, n_in, n_tok, y, n_out);
}

/* The pooled vector of rows [start, start + len) of x into out[0..out_dim): the pooling, then the
 * Dense modules (y = W x + b in float, each output one dot product in order), then the
 * normalization. tmp: two halves of `half` floats (the widest of d and every Dense output), used in
 * turn. */
static void pool_out(const hearth_bert *b, const float *x, int64_t start, int64_t len, float *tmp, int64_t half,
                     float *out) {
    const int64_t d = b->d;
    float *v = b->n_dense ? tmp : out;
    hearth_pool_ref(x + start * d, len, d, (int)b->pooling, v);
    for (int k = 0; k < b->n_dense; k++) {
        const int64_t n_in = b->dense[k].n_in, n_out = b->dense[k].n_out;
        float *y = k == b->n_dense - 1 ? out : (v == tmp ? tmp + half : tmp);
        for (int64_t o = 0; o < n_out; o++) {
            const float *w = b->dense[k].w + o * n_in;
            float acc = 0;
            for (int64_t i = 0; i < n_in; i++) acc += w[i] * v[i];
            y[o] = acc + (b->dense[k].bias ? b->dense[k].bias[o] : 0.0f);
        }
        v = y;
    }
    if (b->normalize) hearth_embed_normalize(out, b->out_dim);
}

void hearth_embed_normalize(float *x, int64_t dim) {
    double ss = 0;
    for (int64_t i = 0; i < dim; i++) ss += (double)x[i] * x[i];
    double norm = sqrt(ss);
    if (norm < 1e-12) norm = 1e-12; /* torch.nn.functional.normalize's eps */
    const float inv = (float)(1.0 / norm);
    for (int64_t i = 0; i < dim; i++) x[i] *= inv;
}

/* One forward of sequences [s0, s1): n_tok tokens, the longest max_len. */
static hearth_status forward(hearth_bert *b, const int32_t *const *ids, const size_t *n_ids, int64_t s0, int64_t s1,
                             int64_t n_tok, int64_t max_len, float *out) {
    const int64_t d = b->d, n_seq = s1 - s0;
    const int nth = hearth_pool_size(b->pool);
    const int64_t ff_w = b->rope ? 2 * b->d_ff : b->d_ff; /* NomicBERT's gate | up */
    size_t n_floats = (size_t)n_tok * (size_t)(d * 6 + ff_w) + (size_t)nth * (size_t)max_len;
    int64_t widest = d;
    for (int k = 0; k < b->n_dense; k++) widest = b->dense[k].n_out > widest ? b->dense[k].n_out : widest;
    float *buf = malloc(n_floats * sizeof(float)), *pool_tmp = malloc((size_t)widest * 2 * sizeof(float));
    int32_t *tok = malloc((size_t)n_tok * 2 * sizeof *tok);
    int64_t *start = malloc((size_t)n_seq * 2 * sizeof *start);
    hearth_status st = HEARTH_OK;
    if (!buf || !tok || !start || !pool_tmp) {
        st = HEARTH_E_NOMEM;
        goto out;
    }
    fwd f = {.b = b, .n_tok = n_tok, .max_len = max_len, .n_seq = n_seq, .start = start, .len = start + n_seq};
    f.x = buf;
    f.qkv = f.x + n_tok * d;
    f.ctx = f.qkv + n_tok * 3 * d;
    f.tmp = f.ctx + n_tok * d;
    f.ff = f.tmp + n_tok * d;
    f.scores = f.ff + n_tok * ff_w;
    int32_t *tok_ids = tok, *tok_pos = tok + n_tok;
    int64_t t = 0;
    for (int64_t s = 0; s < n_seq; s++) {
        start[s] = t;
        start[n_seq + s] = (int64_t)n_ids[s0 + s];
        for (size_t i = 0; i < n_ids[s0 + s]; i++, t++) {
            tok_ids[t] = ids[s0 + s][i];
            tok_pos[t] = (int32_t)i + b->pos_offset;
        }
    }
    if (b->modern || b->decoder) {
        st = (b->modern ? hearth_modernbert_forward : hearth_qwen3_embed_forward)(b, tok_ids, tok_pos, n_tok, start,
                                                                                start + n_seq, n_seq, max_len, f.x);
        if (st) goto out;
        goto pool;
    }
    f.gelu = hearth_kernels_gelu_erf();
    f.attn = hearth_kernels_attn_full();
    f.layernorm = hearth_kernels_layernorm();
    f.tok_ids = tok_ids;
    f.tok_pos = tok_pos;

    run_rows(&f, ROWS_EMBED);
    for (int64_t il = 0; il < b->n_layer; il++) {
        const bert_layer *l = &b->layers[il];
        f.l = l;
        gemm(b, l->p_qkv, 3 * d, d, f.x, n_tok, f.qkv);
        run_rows(&f, ROWS_QKV_BIAS);
        atomic_store(&f.next, 0);
        hearth_pool_run(b->pool, attn_job, &f);
        gemm(b, l->p_o, d, d, f.ctx, n_tok, f.tmp);
        f.bias = l->bo;
        f.ln_w = l->ln1_w;
        f.ln_b = l->ln1_b;
        run_rows(&f, ROWS_RESIDUAL_LN);
        gemm(b, l->p_up, ff_w, d, f.x, n_tok, f.ff);
        run_rows(&f, ROWS_UP_GELU);
        hearth_gemm_f32(b->pool, l->p_down, d, b->d_ff, f.ff, ff_w, n_tok, f.tmp, d);
        f.bias = l->b_down;
        f.ln_w = l->ln2_w;
        f.ln_b = l->ln2_b;
        run_rows(&f, ROWS_RESIDUAL_LN);
    }
pool:
    for (int64_t s = 0; s < n_seq; s++) pool_out(b, f.x, start[s], f.len[s], pool_tmp, widest,
                                                    out + (s0 + s) * b->out_dim);
out:
    free(pool_tmp);
    free(start);
    free(tok);
    free(buf);
    return st;
}

hearth_status hearth_bert_embed(hearth_bert *b, const int32_t *const *ids, const size_t *n_ids, int64_t n_seq,
                                float *out, hearth_err *err) {
    if (n_seq <= 0 || !ids || !n_ids || !out)
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "nothing to embed");
    for (int64_t s = 0; s < n_seq; s++) {
        if (n_ids[s] == 0) return hearth_err_set(err, HEARTH_E_INVALID, s, "input %lld is empty", (long long)s);
        if (n_ids[s] > (size_t)b->max_tokens)
            return hearth_err_set(err, HEARTH_E_INVALID, s, "input %lld has %zu tokens, more than the model's %d",
                                  (long long)s, n_ids[s], b->max_tokens);
        for (size_t i = 0; i < n_ids[s]; i++)
            if (ids[s][i] < 0 || ids[s][i] >= b->n_vocab)
                return hearth_err_set(err, HEARTH_E_INVALID, s, "input %lld: token id %d is outside the vocabulary "
                                      "(0..%d)", (long long)s, ids[s][i], b->n_vocab - 1);
    }
    hearth_status st = HEARTH_OK;
    pthread_mutex_lock(&b->mu);
    if (b->be) st = hearth_bert_device_embed(b, ids, n_ids, n_seq, out); /* bert_device.c */
    for (int64_t s0 = 0; s0 < n_seq && !st && !b->be;) {
        int64_t s1 = s0, n_tok = 0, max_len = 0;
        while (s1 < n_seq && (s1 == s0 || n_tok + (int64_t)n_ids[s1] <= b->params.max_batch_tokens)) {
            n_tok += (int64_t)n_ids[s1];
            if ((int64_t)n_ids[s1] > max_len) max_len = (int64_t)n_ids[s1];
            s1++;
        }
        st = forward(b, ids, n_ids, s0, s1, n_tok, max_len, out);
        s0 = s1;
    }
    pthread_mutex_unlock(&b->mu);
    if (st) hearth_err_set(err, st, -1, "out of memory for a batch of %lld inputs", (long long)n_seq);
    return st;
}

hearth_status hearth_bert_tokenize(const hearth_bert *b, const char *text, size_t n, int32_t **ids, size_t *n_ids) {
    return hearth_tok_encode(b->tok, text, n, true, true, ids, n_ids);
}

size_t hearth_bert_truncate(const hearth_bert *b, int32_t *ids, size_t n_ids, size_t max) {
    if (n_ids <= max || max == 0) return n_ids;
    int32_t last = ids[n_ids - 1];
    if (max >= 2 && hearth_tok_is_control(b->tok, last)) ids[max - 1] = last;
    return max;
}
