/*
 * forward_internal.h - the forward context shared by the family files and blocks.c.
 */
#pragma once
#include "model/model_internal.h"
#include "models/forward.h"

struct hearth_fwd {
    const hearth_model *m;   /* borrowed */
    hearth_backend     *be;  /* borrowed */
    int32_t             max_tok;
    /* activations, [max_tok][width] each; owned, one allocation */
    float *x;                /* residual stream [T][n_embd] */
    float *xb;               /* normed input / block output [T][n_embd] */
    float *q, *k, *v;        /* [T][n_head*head_dim], [T][n_head_kv*head_dim], [T][n_head_kv*head_dim_v] */
    float *att;              /* [T][n_head*head_dim_v] */
    float *g, *u;            /* [T][n_ff] */
    float *inv_freq;         /* [n_rot/2] global layers (host memory) */
    float *inv_freq_swa;     /* [n_rot/2] sliding-window layers (host memory) */
    hearth_rope_params rope, rope_swa; /* the recipe per layer kind (see forward.c) */
    hearth_glu_kind    glu;            /* the ffn activation as this kernel set computes it */
    bool               scale_q;        /* apply attn_scale to q before attention (llama.cpp's
                                        * gemma3 graph on the default path), else to the scores */
    void  *mem;              /* owned backend buffer: the activations */
    void  *host_mem;         /* owned host memory: inv_freq tables */
    /* the step's index arrays as the ops read them: on a host backend the caller's, else copies
     * in idx_dev, packed in idx_host first (token, pos, seq, out_rows, block table) */
    int32_t *idx_host;       /* owned host */
    int32_t *idx_dev;        /* owned backend buffer, idx_cap entries (NULL on a host backend) */
    int64_t  idx_cap;
    const int32_t *out_rows; /* [n_out] tokens that want logits, in order (backend memory) */
    int32_t  n_out;
    int32_t  max_len;        /* longest key range of the step */
    float   *logits_dev;     /* owned backend buffer [logits_rows][n_vocab] (device backends) */
    int32_t  logits_rows;
    hearth_fwd_script_fn script; /* tests: replaces the family forward (be and scratch unused) */
    void  *script_ctx;
    hearth_fwd_trace_fn trace; /* debugging (forward.h); NULL = off */
    void  *trace_user;
};

/* Pass an activation to the trace hook, if one is set. */
static inline void hearth_fwd_trace(const hearth_fwd *f, const char *name, int32_t il, const char *op,
                                    const float *x, int64_t n_rows, int64_t width) {
    if (f->trace) f->trace(f->trace_user, name, il, op, x, n_rows, width);
}

/* Blocks (blocks.c). Each reads f->xb (the normed input) and leaves its output in f->xb. */
void hearth_blk_attn(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, int32_t il);
void hearth_blk_ffn(hearth_fwd *f, int32_t n_tok, int32_t il);
/* Final norm + output projection for the f->n_out rows f->out_rows, into logits (backend memory). */
void hearth_blk_logits(hearth_fwd *f, float *logits);

/* Family forwards (llama.c: llama, qwen2, qwen3; gemma3.c). */
void hearth_llama_forward(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, float *logits);
void hearth_gemma3_forward(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, float *logits);
