/*
 * bert_gguf.c - an embedding model from one GGUF file, as llama.cpp's convert_hf_to_gguf writes
 * it: general.architecture "bert" (BERT, and RoBERTa and XLM-R, whose position table the
 * converter has cut to start at pad_token_id + 1), "nomic-bert", "modern-bert",
 * "gemma-embedding" (EmbeddingGemma), or "qwen3" with a pooling_type (a Qwen3 embedding model).
 * It fills the same hearth_bert as bert_load.c does from safetensors, so the forwards (bert.c,
 * modernbert.c, qwen3_embed.c) and everything above them are shared.
 *
 * Metadata read, ARCH being the architecture: ARCH.embedding_length, .block_count,
 * .feed_forward_length, .attention.head_count (and .head_count_kv, .key_length for the
 * decoders), .attention.layer_norm_epsilon (.layer_norm_rms_epsilon for qwen3 and
 * gemma-embedding), .context_length, .rope.freq_base (and .rope.freq_base_swa, the sliding
 * window and its pattern for modern-bert and gemma-embedding: read_modern, read_gemma),
 * .attention.causal (must be false but for qwen3) and .pooling_type (1 mean, 2 CLS, 3 last; none
 * and rank are refused; an encoder without the key takes the mean, as sentence-transformers
 * does for a bare checkpoint). The tokenizer comes from tokenizer.ggml.* (model/tok_gguf.h:
 * "bert" is WordPiece, "gpt2" byte-level BPE, "t5" Unigram). Embeddings are L2-normalized, as
 * llama.cpp returns them (llama-server's default, and llama-cpp-python's embed()): a GGUF file
 * does not record sentence-transformers' Normalize.
 *
 * Tensors (ggml order: ne[0] is the input width). bert: token_embd, position_embd, token_types,
 * token_embd_norm.{weight,bias}; per layer blk.N.attn_q/attn_k/attn_v (or the fused attn_qkv)
 * with biases, attn_output, attn_output_norm, ffn_up, ffn_down (with biases), layer_output_norm.
 * nomic-bert: the same without position_embd and without biases, attn_qkv fused, ffn_gate beside
 * ffn_up (SwiGLU), rotary positions. modern-bert: bind_modern. qwen3: token_embd, output_norm;
 * blk.N.attn_norm, attn_q, attn_k, attn_v, attn_output, attn_q_norm, attn_k_norm, ffn_norm,
 * ffn_gate, ffn_up, ffn_down. gemma-embedding: bind_gemma. Matrices of any type with a
 * dequantizer (f32, f16, bf16, q8_0, ...) are used in place and packed to f32 at load
 * (bert_load.c); vectors are copied to f32. A missing or misshapen tensor is an error naming it.
 */
#include "models/bert_internal.h"

#include "kernels/kernels.h"
#include "kernels/ref/ops_ref.h"
#include "model/tok_gguf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { POOL_NONE = 0, POOL_MEAN = 1, POOL_CLS = 2, POOL_LAST = 3, POOL_RANK = 4 };

typedef struct {
    hearth_bert *b;
    hearth_err  *err;
    char         arch[16];
} gl;

static const char *akey(const gl *L, const char *suffix) {
    static _Thread_local char key[128];
    snprintf(key, sizeof key, "%s.%s", L->arch, suffix);
    return key;
}

/* general.architecture into arch (empty when missing or too long). */
static void read_arch(const hearth_gguf *g, char *arch, size_t cap) {
    hearth_span s;
    arch[0] = 0;
    if (hearth_gguf_get_str(g, "general.architecture", &s) && s.len < cap && !memchr(s.ptr, 0, s.len)) {
        memcpy(arch, s.ptr, s.len);
        arch[s.len] = 0;
    }
}

static bool arch_is_encoder(const char *arch) {
    return !strcmp(arch, "bert") || !strcmp(arch, "nomic-bert") || !strcmp(arch, "modern-bert") ||
           !strcmp(arch, "gemma-embedding");
}

bool hearth_bert_probe_gguf(const char *path) {
    hearth_gguf *g = NULL;
    if (hearth_gguf_open(path, &g, NULL)) return false;
    char arch[16];
    read_arch(g, arch, sizeof arch);
    uint32_t pool = 0;
    bool ok = arch_is_encoder(arch) ||
              (!strcmp(arch, "qwen3") && hearth_gguf_get_u32(g, "qwen3.pooling_type", &pool) && pool >= POOL_MEAN &&
               pool <= POOL_LAST);
    hearth_gguf_close(g);
    return ok;
}

static const hearth_gguf_tensor *tfind(gl *L, const char *name) { return hearth_gguf_find_tensor(L->b->gg, name); }

/* A matrix [rows][cols] (ggml ne = {cols, rows}) used in place. */
static hearth_status get_matrix(gl *L, const char *name, int64_t rows, int64_t cols, hearth_weight *w) {
    const hearth_gguf_tensor *t = tfind(L, name);
    if (!t) return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "tensor %s is missing", name);
    const hearth_kernel_traits *tr = hearth_kernels_traits_isa(t->type, HEARTH_ISA_SCALAR);
    if (!tr || !tr->to_float)
        return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "tensor %s is %s, a type hearth cannot read", name,
                              hearth_gguf_tensor_type_name(t->type));
    if (t->n_dims != 2 || t->ne[0] != cols || t->ne[1] != rows)
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "tensor %s: shape is not [%lld, %lld]", name,
                              (long long)cols, (long long)rows);
    *w = (hearth_weight){.type = t->type, .ne0 = cols, .ne1 = rows, .row_bytes = hearth_row_size(t->type, cols),
                         .data = t->data};
    L->b->weight_bytes += t->n_bytes;
    return HEARTH_OK;
}

/* A vector of n copied to f32. Optional ones (opt) leave *out NULL when absent. */
static hearth_status get_vector(gl *L, const char *name, int64_t n, bool opt, const float **out) {
    *out = NULL;
    const hearth_gguf_tensor *t = tfind(L, name);
    if (!t) return opt ? HEARTH_OK : hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "tensor %s is missing", name);
    const hearth_kernel_traits *tr = hearth_kernels_traits_isa(t->type, HEARTH_ISA_SCALAR);
    if (!tr || !tr->to_float || (t->type != HEARTH_TYPE_F32 && t->type != HEARTH_TYPE_F16 && t->type != HEARTH_TYPE_BF16))
        return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "tensor %s is %s (f32, f16 or bf16 only)", name,
                              hearth_gguf_tensor_type_name(t->type));
    if (t->n_dims != 1 || t->ne[0] != n)
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "tensor %s: shape is not [%lld]", name, (long long)n);
    float *v = hearth_bert_keep(L->b, malloc((size_t)n * sizeof *v));
    if (!v) return hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory copying %s", name);
    if (t->type == HEARTH_TYPE_F32) memcpy(v, t->data, (size_t)n * sizeof *v);
    else tr->to_float(t->data, v, n);
    L->b->weight_bytes += t->n_bytes;
    *out = v;
    return HEARTH_OK;
}

/* Rows of a table tensor (ne[1]), 0 when absent. */
static int64_t n_rows(gl *L, const char *name) {
    const hearth_gguf_tensor *t = tfind(L, name);
    return t && t->n_dims == 2 ? t->ne[1] : 0;
}

/* modern-bert's own keys (b->layers allocated): hidden_act (gelu only), the sliding window
 * (attention.sliding_window, seen as half of it each way, as llama.cpp's symmetric window and
 * transformers' local_attention / 2), which layers slide (attention.sliding_window_pattern:
 * every n-th layer from 0 attends globally, default 3, or one bool per layer, true sliding)
 * and the local rotary base (rope.freq_base_swa, default 10000). */
static hearth_status read_modern(gl *L) {
    hearth_bert *b = L->b;
    const hearth_gguf *g = b->gg;
    hearth_span act;
    if (hearth_gguf_get_str(g, akey(L, "hidden_act"), &act) && !(act.len == 4 && !memcmp(act.ptr, "gelu", 4)))
        return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "%s '%.*s' is not supported (gelu only)",
                              akey(L, "hidden_act"), (int)(act.len > 40 ? 40 : act.len), act.ptr);
    b->modern = true;
    uint32_t window = 0, every = 3;
    float theta_swa = 10000.0f;
    hearth_gguf_get_f32(g, akey(L, "rope.freq_base_swa"), &theta_swa);
    hearth_rope_inv_freq(b->inv_freq_local, b->head_dim, theta_swa, 1.0f);
    if (!hearth_gguf_get_u32(g, akey(L, "attention.sliding_window"), &window) || window == 0) return HEARTH_OK;
    if (window > (1u << 24))
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "%s %u is impossible", akey(L, "attention.sliding_window"),
                              window);
    b->window = (int32_t)(window / 2);
    hearth_gguf_type et;
    uint64_t n = 0;
    const char *pk = akey(L, "attention.sliding_window_pattern");
    if (hearth_gguf_get_arr(g, pk, &et, &n)) {
        const uint8_t *v = hearth_gguf_arr_data(g, pk);
        if (et != HEARTH_GGUF_BOOL || n != (uint64_t)b->n_layer || !v)
            return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "%s: not one bool per layer (%lld layers)", pk,
                                  (long long)b->n_layer);
        for (int64_t il = 0; il < b->n_layer; il++) b->layers[il].sliding = v[il] != 0;
        return HEARTH_OK;
    }
    hearth_gguf_get_u32(g, pk, &every);
    for (int64_t il = 0; il < b->n_layer; il++) b->layers[il].sliding = every > 0 && il % every != 0;
    return HEARTH_OK;
}

/* gemma-embedding's own keys (b->layers allocated; decoder keys read as for qwen3): the sliding
 * window (seen as half each way), which layers slide (attention.sliding_window_pattern: one bool
 * per layer, true sliding, or n: every n-th layer counting from 1 attends globally, default 6 as
 * llama.cpp takes it), the local rotary base (rope.freq_base_swa, default 10000). Queries are
 * scaled by head_dim^-1/2, as llama.cpp does (the file has no query_pre_attn_scalar), and word
 * rows by sqrt(embedding_length). */
static hearth_status read_gemma(gl *L) {
    hearth_bert *b = L->b;
    const hearth_gguf *g = b->gg;
    b->gemma = true;
    b->embed_scale = sqrtf((float)b->d);
    b->attn_scale = 1.0f / sqrtf((float)b->head_dim);
    uint32_t window = 0, every = 6;
    float theta_swa = 10000.0f;
    hearth_gguf_get_f32(g, akey(L, "rope.freq_base_swa"), &theta_swa);
    hearth_rope_inv_freq(b->inv_freq_local, b->head_dim, theta_swa, 1.0f);
    if (!hearth_gguf_get_u32(g, akey(L, "attention.sliding_window"), &window) || window == 0 || window > (1u << 24))
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "%s is missing or impossible",
                              akey(L, "attention.sliding_window"));
    b->window = (int32_t)(window / 2);
    hearth_gguf_type et;
    uint64_t n = 0;
    const char *pk = akey(L, "attention.sliding_window_pattern");
    if (hearth_gguf_get_arr(g, pk, &et, &n)) {
        const uint8_t *v = hearth_gguf_arr_data(g, pk);
        if (et != HEARTH_GGUF_BOOL || n != (uint64_t)b->n_layer || !v)
            return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "%s: not one bool per layer (%lld layers)", pk,
                                  (long long)b->n_layer);
        for (int64_t il = 0; il < b->n_layer; il++) b->layers[il].sliding = v[il] != 0;
        return HEARTH_OK;
    }
    hearth_gguf_get_u32(g, pk, &every);
    for (int64_t il = 0; il < b->n_layer; il++) b->layers[il].sliding = every == 0 || il % every < every - 1;
    return HEARTH_OK;
}

static hearth_status read_shape(gl *L) {
    hearth_bert *b = L->b;
    const hearth_gguf *g = b->gg;
    uint32_t d = 0, n_layer = 0, n_head = 0, n_head_kv = 0, d_ff = 0, ctx = 0, head_dim = 0, pool = POOL_MEAN;
    float eps = 0, theta = 0;
    bool causal = false, have_pool;
    const bool gemma = !strcmp(L->arch, "gemma-embedding"), qwen = !strcmp(L->arch, "qwen3") || gemma;
    const bool modern = !strcmp(L->arch, "modern-bert");
    hearth_gguf_get_u32(g, akey(L, "embedding_length"), &d);
    hearth_gguf_get_u32(g, akey(L, "block_count"), &n_layer);
    hearth_gguf_get_u32(g, akey(L, "attention.head_count"), &n_head);
    n_head_kv = n_head;
    hearth_gguf_get_u32(g, akey(L, "attention.head_count_kv"), &n_head_kv);
    hearth_gguf_get_u32(g, akey(L, "feed_forward_length"), &d_ff);
    hearth_gguf_get_u32(g, akey(L, "context_length"), &ctx);
    head_dim = n_head ? d / n_head : 0;
    hearth_gguf_get_u32(g, akey(L, "attention.key_length"), &head_dim);
    if (!hearth_gguf_get_f32(g, akey(L, qwen ? "attention.layer_norm_rms_epsilon" : "attention.layer_norm_epsilon"),
                             &eps))
        eps = qwen ? 1e-6f : modern ? 1e-5f : 1e-12f;
    if (!hearth_gguf_get_f32(g, akey(L, "rope.freq_base"), &theta))
        theta = qwen ? 1000000.0f : modern ? 160000.0f : 10000.0f;
    have_pool = hearth_gguf_get_u32(g, akey(L, "pooling_type"), &pool);
    if (hearth_gguf_get_bool(g, akey(L, "attention.causal"), &causal) && causal && (!qwen || gemma))
        return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "%s says attention is causal: an encoder attends "
                              "both ways", akey(L, "attention.causal"));
    if (!have_pool && qwen && !gemma)
        return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "qwen3.pooling_type is missing: a qwen3 GGUF without "
                              "it is a chat model, not an embedding model");
    switch (pool) {
    case POOL_MEAN: b->pooling = HEARTH_POOLING_MEAN; break;
    case POOL_CLS: b->pooling = HEARTH_POOLING_CLS; break;
    case POOL_LAST: b->pooling = HEARTH_POOLING_LAST; break;
    default:
        return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "%s %u is not supported (1 mean, 2 cls, 3 last; "
                              "none and rank are not embeddings)", akey(L, "pooling_type"), pool);
    }
    b->normalize = true;
    b->d = d, b->n_layer = n_layer, b->n_head = (int32_t)n_head, b->n_head_kv = (int32_t)n_head_kv;
    b->head_dim = (int32_t)head_dim, b->d_ff = d_ff, b->eps = eps;
    b->n_vocab = (int32_t)n_rows(L, "token_embd.weight");
    b->decoder = qwen;
    if (!strcmp(L->arch, "bert")) {
        b->n_pos = (int32_t)n_rows(L, "position_embd.weight");
        if (ctx == 0 || ctx > (uint32_t)b->n_pos) ctx = (uint32_t)b->n_pos;
    } else {
        b->n_pos = (int32_t)(ctx ? ctx : 2048);
        ctx = (uint32_t)b->n_pos;
    }
    b->n_type = (int32_t)n_rows(L, "token_types.weight");
    b->max_tokens = (int32_t)ctx;
    if (d == 0 || d > 65536 || n_layer == 0 || n_layer > 1024 || n_head == 0 || n_head_kv == 0 ||
        n_head % n_head_kv || head_dim == 0 || head_dim > 512 || head_dim % 2 || (!qwen && head_dim * n_head != d) ||
        d_ff == 0 || d_ff > (1u << 20) || b->n_vocab <= 0 || b->n_pos <= 0 || ctx == 0 || !(eps >= 0) ||
        (!qwen && !modern && b->n_type <= 0))
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "%s GGUF: a missing or impossible shape (embedding_length "
                              "%u, block_count %u, head_count %u, feed_forward_length %u, vocab %d)", L->arch, d,
                              n_layer, n_head, d_ff, b->n_vocab);
    hearth_rope_inv_freq(b->inv_freq_global, b->head_dim, theta, 1.0f);
    b->rope = !strcmp(L->arch, "nomic-bert");
    if (!(b->layers = calloc(n_layer, sizeof *b->layers)))
        return hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory");
    return modern ? read_modern(L) : gemma ? read_gemma(L) : HEARTH_OK;
}

static hearth_status bind_encoder(gl *L) {
    hearth_bert *b = L->b;
    const bool nomic = b->rope;
    const int64_t d = b->d, ff = b->d_ff;
    hearth_status st;
    if ((st = get_matrix(L, "token_embd.weight", b->n_vocab, d, &b->word)) ||
        (st = get_matrix(L, "token_types.weight", b->n_type, d, &b->type)) ||
        (!nomic && (st = get_matrix(L, "position_embd.weight", b->n_pos, d, &b->pos))) ||
        (st = get_vector(L, "token_embd_norm.weight", d, false, &b->emb_ln_w)) ||
        (st = get_vector(L, "token_embd_norm.bias", d, false, &b->emb_ln_b)))
        return st;
    for (int64_t il = 0; il < b->n_layer; il++) {
        bert_layer *l = &b->layers[il];
        char n[16][64];
        static const char *const parts[16] = {
            "attn_qkv.weight", "attn_qkv.bias", "attn_q.weight", "attn_q.bias", "attn_k.weight", "attn_k.bias",
            "attn_v.weight", "attn_v.bias", "attn_output.weight", "attn_output.bias", "attn_output_norm.weight",
            "attn_output_norm.bias", "ffn_up.weight", "ffn_up.bias", "ffn_down.weight", "ffn_down.bias"};
        for (int i = 0; i < 16; i++) snprintf(n[i], sizeof n[i], "blk.%lld.%s", (long long)il, parts[i]);
        if (tfind(L, n[0])) { /* fused q | k | v: packed as one weight, the bias split in three */
            if ((st = get_matrix(L, n[0], 3 * d, d, &l->wq)) || (st = get_vector(L, n[1], 3 * d, true, &l->bq)))
                return st;
            if (l->bq) l->bk = l->bq + d, l->bv = l->bq + 2 * d;
        } else if ((st = get_matrix(L, n[2], d, d, &l->wq)) || (st = get_vector(L, n[3], d, nomic, &l->bq)) ||
                   (st = get_matrix(L, n[4], d, d, &l->wk)) || (st = get_vector(L, n[5], d, nomic, &l->bk)) ||
                   (st = get_matrix(L, n[6], d, d, &l->wv)) || (st = get_vector(L, n[7], d, nomic, &l->bv)))
            return st;
        if ((!l->bq) != (!l->bk) || (!l->bq) != (!l->bv))
            return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "layer %lld: some of the q, k, v biases are missing",
                                  (long long)il);
        if ((st = get_matrix(L, n[8], d, d, &l->wo)) || (st = get_vector(L, n[9], d, nomic, &l->bo)) ||
            (st = get_vector(L, n[10], d, false, &l->ln1_w)) || (st = get_vector(L, n[11], d, false, &l->ln1_b)) ||
            (st = get_matrix(L, n[12], ff, d, &l->w_up)) || (st = get_vector(L, n[13], ff, nomic, &l->b_up)) ||
            (st = get_matrix(L, n[14], d, ff, &l->w_down)) || (st = get_vector(L, n[15], d, nomic, &l->b_down)))
            return st;
        char ln[2][64], gate[64];
        snprintf(ln[0], sizeof ln[0], "blk.%lld.layer_output_norm.weight", (long long)il);
        snprintf(ln[1], sizeof ln[1], "blk.%lld.layer_output_norm.bias", (long long)il);
        snprintf(gate, sizeof gate, "blk.%lld.ffn_gate.weight", (long long)il);
        if ((st = get_vector(L, ln[0], d, false, &l->ln2_w)) || (st = get_vector(L, ln[1], d, false, &l->ln2_b)) ||
            (nomic && (st = get_matrix(L, gate, ff, d, &l->w_gate))))
            return st;
        if (!nomic && tfind(L, gate))
            return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "tensor %s: a gated BERT feed-forward is not "
                                  "supported (nomic-bert has one)", gate);
    }
    return HEARTH_OK;
}

/* modern-bert: LayerNorms with optional biases, no attn_norm in layer 0 (the embeddings' norm
 * precedes it), fused q | k | v, the GLU's up weight as [2 d_ff][d] (GELU half, then gate). */
static hearth_status bind_modern(gl *L) {
    hearth_bert *b = L->b;
    const int64_t d = b->d, ff = b->d_ff;
    hearth_status st;
    if ((st = get_matrix(L, "token_embd.weight", b->n_vocab, d, &b->word)) ||
        (st = get_vector(L, "token_embd_norm.weight", d, false, &b->emb_ln_w)) ||
        (st = get_vector(L, "token_embd_norm.bias", d, true, &b->emb_ln_b)) ||
        (st = get_vector(L, "output_norm.weight", d, false, &b->final_w)) ||
        (st = get_vector(L, "output_norm.bias", d, true, &b->final_b)))
        return st;
    for (int64_t il = 0; il < b->n_layer; il++) {
        bert_layer *l = &b->layers[il];
        char n[9][64];
        static const char *const parts[9] = {"attn_norm.weight", "attn_norm.bias", "attn_qkv.weight",
                                             "attn_output.weight", "ffn_norm.weight", "ffn_norm.bias",
                                             "ffn_up.weight", "ffn_down.weight", "attn_qkv.bias"};
        for (int i = 0; i < 9; i++) snprintf(n[i], sizeof n[i], "blk.%lld.%s", (long long)il, parts[i]);
        if ((il > 0 && (st = get_vector(L, n[0], d, false, &l->ln1_w))) ||
            (il > 0 && (st = get_vector(L, n[1], d, true, &l->ln1_b))) ||
            (st = get_matrix(L, n[2], 3 * d, d, &l->wq)) || (st = get_matrix(L, n[3], d, d, &l->wo)) ||
            (st = get_vector(L, n[4], d, false, &l->ln2_w)) || (st = get_vector(L, n[5], d, true, &l->ln2_b)) ||
            (st = get_matrix(L, n[6], 2 * ff, d, &l->w_up)) || (st = get_matrix(L, n[7], d, ff, &l->w_down)))
            return st;
        if (tfind(L, n[8]))
            return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "tensor %s: ModernBERT attention biases are not "
                                  "supported", n[8]);
    }
    return HEARTH_OK;
}

/* One Dense projection of gemma-embedding, [n_out][n_in] copied to f32 (and an optional bias). */
static hearth_status get_dense(gl *L, const char *name, const char *bias, int64_t n_in, int64_t n_out) {
    hearth_bert *b = L->b;
    hearth_weight w;
    hearth_status st;
    const float *bv = NULL;
    if ((st = get_matrix(L, name, n_out, n_in, &w)) || (bias && (st = get_vector(L, bias, n_out, true, &bv))))
        return st;
    float *dst = hearth_bert_keep(b, malloc((size_t)(n_in * n_out) * sizeof *dst));
    if (!dst) return hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory copying %s", name);
    const hearth_kernel_traits *tr = hearth_kernels_traits_isa(w.type, HEARTH_ISA_SCALAR);
    for (int64_t r = 0; r < n_out; r++)
        tr->to_float((const char *)w.data + (size_t)r * w.row_bytes, dst + r * n_in, n_in);
    b->dense[b->n_dense].w = dst, b->dense[b->n_dense].bias = (float *)bv;
    b->dense[b->n_dense].n_in = n_in, b->dense[b->n_dense].n_out = n_out;
    b->n_dense++;
    return HEARTH_OK;
}

/* gemma-embedding: qwen3's names plus the sandwich norms (post_attention_norm, post_ffw_norm;
 * ffn_norm is pre_feedforward_layernorm), every norm stored as 1 + w already (the converter
 * shifts them); then dense_2 [dense_2_feat_out][d] and dense_3 [d][dense_3_feat_in] when the
 * file has them, applied after the pooling. */
static hearth_status bind_gemma(gl *L) {
    hearth_bert *b = L->b;
    const int64_t d = b->d, qd = (int64_t)b->n_head * b->head_dim, kvd = (int64_t)b->n_head_kv * b->head_dim;
    hearth_status st;
    if ((st = get_matrix(L, "token_embd.weight", b->n_vocab, d, &b->word)) ||
        (st = get_vector(L, "output_norm.weight", d, false, &b->final_w)))
        return st;
    for (int64_t il = 0; il < b->n_layer; il++) {
        bert_layer *l = &b->layers[il];
        char n[13][64];
        static const char *const parts[13] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                                              "attn_q_norm", "attn_k_norm", "post_attention_norm", "ffn_norm",
                                              "ffn_gate", "ffn_up", "ffn_down", "post_ffw_norm"};
        for (int i = 0; i < 13; i++) snprintf(n[i], sizeof n[i], "blk.%lld.%s.weight", (long long)il, parts[i]);
        if ((st = get_vector(L, n[0], d, false, &l->ln1_w)) || (st = get_matrix(L, n[1], qd, d, &l->wq)) ||
            (st = get_matrix(L, n[2], kvd, d, &l->wk)) || (st = get_matrix(L, n[3], kvd, d, &l->wv)) ||
            (st = get_matrix(L, n[4], d, qd, &l->wo)) || (st = get_vector(L, n[5], b->head_dim, false, &l->q_norm)) ||
            (st = get_vector(L, n[6], b->head_dim, false, &l->k_norm)) ||
            (st = get_vector(L, n[7], d, false, &l->post_attn_w)) || (st = get_vector(L, n[8], d, false, &l->ln2_w)) ||
            (st = get_matrix(L, n[9], b->d_ff, d, &l->w_gate)) || (st = get_matrix(L, n[10], b->d_ff, d, &l->w_up)) ||
            (st = get_matrix(L, n[11], d, b->d_ff, &l->w_down)) ||
            (st = get_vector(L, n[12], d, false, &l->post_ffn_w)))
            return st;
    }
    uint32_t out2 = 0, in3 = 0;
    const bool d2 = tfind(L, "dense_2.weight") != NULL, d3 = tfind(L, "dense_3.weight") != NULL;
    if (d2 != d3)
        return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "dense_%d.weight without dense_%d.weight", d2 ? 2 : 3,
                              d2 ? 3 : 2);
    if (!d2) return HEARTH_OK;
    hearth_gguf_get_u32(b->gg, akey(L, "dense_2_feat_out"), &out2);
    hearth_gguf_get_u32(b->gg, akey(L, "dense_3_feat_in"), &in3);
    if (out2 == 0 || out2 > 65536 || in3 != out2)
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "%s %u and %s %u do not chain", akey(L, "dense_2_feat_out"),
                              out2, akey(L, "dense_3_feat_in"), in3);
    if ((st = get_dense(L, "dense_2.weight", "dense_2.bias", d, out2)) ||
        (st = get_dense(L, "dense_3.weight", NULL, in3, d)))
        return st;
    return HEARTH_OK;
}

static hearth_status bind_qwen3(gl *L) {
    hearth_bert *b = L->b;
    const int64_t d = b->d, qd = (int64_t)b->n_head * b->head_dim, kvd = (int64_t)b->n_head_kv * b->head_dim;
    hearth_status st;
    if ((st = get_matrix(L, "token_embd.weight", b->n_vocab, d, &b->word)) ||
        (st = get_vector(L, "output_norm.weight", d, false, &b->final_w)))
        return st;
    for (int64_t il = 0; il < b->n_layer; il++) {
        bert_layer *l = &b->layers[il];
        char n[11][64];
        static const char *const parts[11] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "attn_q_norm",
                                              "attn_k_norm", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"};
        for (int i = 0; i < 11; i++) snprintf(n[i], sizeof n[i], "blk.%lld.%s.weight", (long long)il, parts[i]);
        if ((st = get_vector(L, n[0], d, false, &l->ln1_w)) || (st = get_matrix(L, n[1], qd, d, &l->wq)) ||
            (st = get_matrix(L, n[2], kvd, d, &l->wk)) || (st = get_matrix(L, n[3], kvd, d, &l->wv)) ||
            (st = get_matrix(L, n[4], d, qd, &l->wo)) || (st = get_vector(L, n[5], b->head_dim, false, &l->q_norm)) ||
            (st = get_vector(L, n[6], b->head_dim, false, &l->k_norm)) ||
            (st = get_vector(L, n[7], d, false, &l->ln2_w)) || (st = get_matrix(L, n[8], b->d_ff, d, &l->w_gate)) ||
            (st = get_matrix(L, n[9], b->d_ff, d, &l->w_up)) || (st = get_matrix(L, n[10], d, b->d_ff, &l->w_down)))
            return st;
    }
    return HEARTH_OK;
}

hearth_status hearth_bert_load_gguf(hearth_bert *b, const char *path, hearth_err *err) {
    hearth_status st;
    if ((st = hearth_gguf_open(path, &b->gg, err))) return st;
    gl L = {.b = b, .err = err};
    read_arch(b->gg, L.arch, sizeof L.arch);
    if (!arch_is_encoder(L.arch) && strcmp(L.arch, "qwen3"))
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "general.architecture '%.40s' is not an embedding model "
                              "hearth reads from GGUF (bert, nomic-bert, modern-bert, gemma-embedding, qwen3 with a "
                              "pooling_type)",
                              L.arch);
    snprintf(b->family, sizeof b->family, "%s", L.arch);
    if ((st = read_shape(&L)) ||
        (st = (b->gemma ? bind_gemma : b->decoder ? bind_qwen3 : b->modern ? bind_modern : bind_encoder)(&L)) ||
        (st = hearth_tok_from_gguf(b->gg, &b->tok, err)))
        return st;
    if (hearth_tok_n_vocab(b->tok) > b->n_vocab)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "the tokenizer has %d tokens but token_embd %d",
                              hearth_tok_n_vocab(b->tok), b->n_vocab);
    return HEARTH_OK;
}
