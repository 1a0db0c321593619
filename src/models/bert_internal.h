/*
 * bert_internal.h - the layout of a loaded encoder, shared by bert_load.c (which fills it) and
 * bert.c (the forward). Immutable after load except the compute state under mu.
 */
#pragma once
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "base/thread.h"
#include "model/gguf.h"
#include "model/safetensors.h"
#include "models/bert.h"
#include "tensor/tensor.h"
#include "tokenizer/tokenizer.h"

typedef struct {
    hearth_weight wq, wk, wv, wo;        /* [d][d] */
    const float  *bq, *bk, *bv, *bo;     /* [d] */
    const float  *ln1_w, *ln1_b;         /* attention.output.LayerNorm [d] */
    hearth_weight w_up;                  /* intermediate.dense [d_ff][d] */
    const float  *b_up;                  /* [d_ff] */
    hearth_weight w_down;                /* output.dense [d][d_ff] */
    const float  *b_down;                /* [d] */
    const float  *ln2_w, *ln2_b;         /* output.LayerNorm [d] */
    /* the matrices packed for kernels/gemm_f32.h, in f32 (owned, in the encoder's list) */
    const float  *p_qkv;                 /* [3d][d]: query, key and value rows in that order */
    const float  *p_o, *p_up, *p_down;
    /* ModernBERT (modernbert.c): ln1 is attn_norm (NULL in layer 0), ln2 mlp_norm, p_up the GLU's
     * Wi [2 d_ff][d] (input half, then gate half), p_down mlp.Wo; biases may be NULL */
    bool          sliding;               /* a sliding-window (local) attention layer */
    /* Qwen3 (qwen3_embed.c): ln1 input_layernorm, ln2 post_attention_layernorm (RMSNorm
     * weights), p_qkv q | k | v rows, p_up gate | up rows */
    const float  *q_norm, *k_norm;       /* [head_dim] */
    const float  *post_attn_w, *post_ffn_w; /* EmbeddingGemma's sandwich norms [d] (1 + w folded in) */
    const float  *b_qkv;                 /* bq | bk | bv [3d] for the device path (bert_device.c), owned
                                          * in the encoder's list; NULL without biases or on the CPU */
    hearth_weight w_gate;                /* Qwen3's gate_proj, NomicBERT's ffn_gate [d_ff][d]; when set,
                                          * p_up is gate | up [2 d_ff][d] */
} bert_layer;

struct hearth_bert {
    int64_t        d, d_ff, n_layer;
    int32_t        n_head, head_dim;
    int32_t        n_vocab, n_pos, n_type;
    int32_t        max_tokens;           /* max_seq_length, or n_pos - pos_offset */
    int32_t        pos_offset;           /* position of a sequence's first token: 0 (BERT), or
                                          * pad_token_id + 1 (RoBERTa, XLM-R) */
    char           family[16];           /* "bert", "roberta", "xlm-roberta", "modernbert" */
    bool           modern;               /* ModernBERT: pre-LN, rotary positions, GLU (modernbert.c) */
    bool           decoder;              /* Qwen3: a causal decoder embedding model (qwen3_embed.c) */
    bool           rope;                 /* NomicBERT: BERT's post-LN layers with rotary positions (no
                                          * position table), fused q | k | v, SwiGLU (w_gate), no biases */
    int32_t        n_head_kv;            /* Qwen3's key/value heads (grouped-query attention) */
    bool           gemma;                /* EmbeddingGemma: a bidirectional Gemma 3 (decoder is set too) */
    float          embed_scale;          /* Gemma: word rows times sqrt(d) */
    float          attn_scale;           /* Gemma: query_pre_attn_scalar^-1/2 */
    int64_t        out_dim;              /* the embedding's size: d, or the last Dense module's output */
    int            n_dense;              /* sentence-transformers Dense modules after the pooling */
    struct {
        float         *w;                /* owned [n_out][n_in] f32 */
        float         *bias;             /* owned [n_out] or NULL */
        int64_t        n_in, n_out;
    } dense[4];
    const float   *final_w, *final_b;    /* ModernBERT's final_norm [d] (b may be NULL) */
    float          inv_freq_global[256], inv_freq_local[256]; /* rotary, head_dim / 2 each */
    int32_t        window;               /* sliding layers: keys within |i - j| <= window */
    float          eps;
    hearth_pooling pooling;
    bool           normalize;
    hearth_st     *st;                   /* owned: the mapping the weights point into (safetensors) */
    hearth_gguf   *gg;                   /* owned: the same for a GGUF file (bert_gguf.c) */
    hearth_tok    *tok;                  /* owned */
    hearth_weight  word, pos, type;      /* embedding tables [n][d] */
    const float   *emb_ln_w, *emb_ln_b;  /* [d] */
    bert_layer    *layers;               /* owned: [n_layer] */
    void         **owned;                /* owned: f32 copies and realigned tensors */
    int64_t        n_owned;
    size_t         weight_bytes;
    char           desc[192];
    hearth_bert_params params;
    /* compute state: one forward at a time */
    pthread_mutex_t mu;
    hearth_pool   *pool;                 /* owned */
    hearth_backend *be;                  /* owned: the device the forward runs on (bert_device.c), or
                                          * NULL: the CPU path of bert.c */
    const float   *type0;                /* [d] token type 0's row in f32 for the device path (owned
                                          * in the encoder's list) */
};

/* bert_load.c's helpers, shared with the GGUF loader (bert_gguf.c). */
void         *hearth_bert_keep(hearth_bert *b, void *p);   /* b owns p from now on; NULL (p freed) on no memory */
hearth_status hearth_bert_pack_layers(hearth_bert *b, hearth_err *err);
/* Load a GGUF file (general.architecture bert or qwen3) into b: shape, pooling, weights,
 * tokenizer. b->params is set; the caller packs the layers and starts the pool. */
hearth_status hearth_bert_load_gguf(hearth_bert *b, const char *path, hearth_err *err);
/* Is path a GGUF file of an embedding model (bert, or qwen3 with a pooling_type)? */
bool          hearth_bert_probe_gguf(const char *path);

/* One (sequence, head) of attention over n rows (embed_attn.c): query row i at q + i ld, key
 * and value rows j at k + j ld and v + j ld, the output row at o + i ldo. Keys: all, 0..i when
 * causal, and within |i - j| <= window when window >= 0. sc: n floats of scratch. */
void hearth_embed_attn_head(const float *q, const float *k, const float *v, int64_t ld, float *o, int64_t ldo,
                            int64_t n, int32_t hd, float scale, bool causal, int32_t window, float *sc);

/* Qwen3's forward, the same contract (qwen3_embed.c). */
hearth_status hearth_qwen3_embed_forward(const hearth_bert *b, const int32_t *tok_ids, const int32_t *tok_pos,
                                         int64_t n_tok, const int64_t *start, const int64_t *len, int64_t n_seq,
                                         int64_t max_len, float *x);

/* ModernBERT's forward of one batch laid end to end (modernbert.c); bert.c's forward calls it.
 * x: [n_tok][d] out: the last hidden states, final_norm applied. */
hearth_status hearth_modernbert_forward(const hearth_bert *b, const int32_t *tok_ids, const int32_t *tok_pos,
                                        int64_t n_tok, const int64_t *start, const int64_t *len, int64_t n_seq,
                                        int64_t max_len, float *x);

/* The device path (bert_device.c). Can be's ops run b (false with the reason in why)? */
bool          hearth_bert_device_check(const hearth_bert *b, hearth_backend *be, char *why, size_t cap);
/* Make what the device path needs beside the weights (the token-type row and the concatenated
 * QKV biases in f32), once, after the layers are bound. */
hearth_status hearth_bert_device_prepare(hearth_bert *b, hearth_err *err);
/* hearth_bert_embed's work on b->be (inputs already checked, under b->mu). */
hearth_status hearth_bert_device_embed(hearth_bert *b, const int32_t *const *ids, const size_t *n_ids, int64_t n_seq,
                                       float *out);
