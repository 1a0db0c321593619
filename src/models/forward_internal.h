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
    /* RoPE of the step's tokens in runs: run r covers tokens [t0, t0 + n) of one sequence, with
     * the tables of that sequence's length in the step (dynamic NTK and longrope change them
     * past the training context; one run of f->rope / f->rope_swa otherwise) */
    struct hearth_rope_run { int32_t t0, n; hearth_rope_params rp, rp_swa; } *runs; /* owned [max_tok] */
    int32_t  n_runs;
    bool     stretched;      /* a run of this step has stretched tables: no graph replay */
    float   *inv_freq_long;  /* longrope past the original context (host, in host_mem) */
    float  **dyn_chunks;     /* owned: dynamic NTK tables, DYN_CHUNK sequence lengths each, from
                              * n_ctx_train + 1 up; never moved (a device backend keys them by address) */
    int32_t  n_dyn_chunks;
    size_t   cap_dyn_chunks;
    /* Gemma 4 per-layer inputs (n_embd_ple > 0): backend memory, in mem */
    float   *ple_tok;        /* [T][n_layer * n_embd_ple] token part, then the combined inputs */
    float   *ple_ctx;        /* [T][n_layer * n_embd_ple] projection of the embeddings */
    float   *ple_x, *ple_g;  /* [T][n_embd_ple] layer il's input, its gate */
    int32_t *ple_rows;       /* owned backend buffer [n_layer][max_tok]: rows t * n_layer + il */
    /* mixture of experts (n_expert > 0; moe.c): backend memory in mem, except as noted */
    float   *moe_in, *moe_out, *moe_gx, *moe_d; /* [T][n_embd] */
    float   *moe_g, *moe_u;  /* [T][n_ff_exp] */
    float   *moe_logits;     /* [T][n_expert] */
    float   *moe_host;       /* owned host [T][n_expert]: the router's logits, then probabilities */
    int32_t *moe_sel;        /* owned host [T][n_expert_used] chosen experts, then [T * used] rows */
    float   *moe_w;          /* owned host [T][n_expert_used] their weights */
    int32_t *moe_rows;       /* owned backend buffer [T * n_expert_used]: tokens of each expert */
    /* Gemma 4 assistant drafter (hp.n_embd_backbone > 0; gemma4_assistant.c): backend memory in
     * mem, except as noted */
    const hearth_model *asst_target; /* borrowed, for one step: the model whose embeddings it reads */
    float   *asst_e, *asst_h;  /* [T][n_embd_backbone] the target's embeddings of the step's tokens,
                                * the target's (or the previous draft's) hidden states */
    float   *asst_out;         /* [T][n_embd_backbone] post_projection of the normed output */
    float   *asst_cent;        /* [T][n_centroids] the centroids' logits */
    int32_t *rope_pos;         /* owned backend buffer [T]: where RoPE turns the queries (pos + 1) */
    int32_t *rope_pos_host;    /* owned host [T] */
    float   *cent_host;        /* owned host [T][n_centroids], then one [n_vocab] logits row */
    /* hybrid models (linear-attention layers, deltanet.c; the attention's output gate): backend
     * memory in mem, except as noted */
    float   *lin_qkv;        /* [T][2K + V] the DeltaNet's q, k, v projections, then convolved */
    float   *lin_z;          /* [T][V] its output gate, then the layer's gated output */
    float   *lin_b, *lin_a;  /* [T][lin_n_v] */
    float   *lin_out;        /* [T][V] the delta rule's output */
    float   *qg;             /* [T][n_head][2 head_dim] q_proj with each head's output gate */
    float   *gate;           /* [T][n_head * head_dim] the gates, then the gated attention output */
    int32_t *gate_rows;      /* owned backend buffer [2][max_tok * n_head]: rows of qg's query
                              * halves (2i), then of its gate halves (2i + 1) */
    int32_t *lin_next;       /* owned host [lin_cap]: step_check's next position per slot */
    int32_t  lin_cap;
    hearth_numerics    nx;             /* resolved at create */
    hearth_glu_kind    glu;            /* the ffn activation as the numerics compute it */
    bool               scale_q;        /* apply attn_scale to q before attention (llama.cpp's
                                        * gemma3 graph on the default path), else to the scores */
    void  *mem;              /* owned backend buffer: the activations */
    void  *host_mem;         /* owned host memory: inv_freq tables */
    /* the step's index arrays, packed in idx_host (token, pos, seq, out_rows, block table) and
     * staged for the ops (hearth_step_stage) */
    int32_t *idx_host;       /* owned host, idx_cap entries */
    int64_t  idx_cap;
    const int32_t *out_rows; /* [n_out] tokens that want logits, in order (backend memory) */
    int32_t  n_out;
    int32_t  max_len;        /* longest key range of the step */
    int32_t  min_run;        /* fewest consecutive tokens of one sequence in the step */
    int32_t  max_run;        /* most consecutive tokens of one sequence in the step */
    /* LoRA (batch.lora): the step's runs of consecutive tokens with one adapter, and room for
     * one op's segments; host memory [max_tok] each */
    struct hearth_lora_run { int32_t t0, n; const hearth_lora *a; } *lora_runs; /* owned */
    int32_t          n_lora_runs;
    hearth_lora_seg *lora_segs; /* owned */
    bool             lora_gate_up; /* a run's adapter touches gate_proj or up_proj: no fused ffn_glu */
    /* adapters whose matrices the backend may hold copies of (a device backend: it keeps them
     * by host address, backend.h): one reference each, dropped with the copies once it is the
     * last one (hearth_fwd_lora_sweep); host memory, owned array */
    const hearth_lora **lora_kept;
    int32_t          n_lora_kept, cap_lora_kept;
    hearth_fwd_script_fn script; /* tests: replaces the family forward (be and scratch unused) */
    void  *script_ctx;
    float *hidden_out;       /* borrowed host [max_tok][n_embd], or NULL (hearth_fwd_set_hidden_out) */
    const float *last_out;   /* the last step's logits rows where they live (hearth_forward_row) */
    hearth_fwd_trace_fn trace; /* debugging (forward.h); NULL = off */
    void  *trace_user;
};

/* Pass an activation to the trace hook, if one is set. */
static inline void hearth_fwd_trace(const hearth_fwd *f, const char *name, int32_t il, const char *op,
                                    const float *x, int64_t n_rows, int64_t width) {
    if (f->trace) f->trace(f->trace_user, name, il, op, x, n_rows, width);
}

/* Check the batch, stage it and run the family's forward (forward.c); logits land in backend
 * memory (*out). */
hearth_status hearth_fwd_step_run(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, float *logits,
                                  float **out);

/* Blocks (blocks.c). Each reads f->xb (the normed input) and leaves its output in f->xb. */
void hearth_blk_attn(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, int32_t il);
void hearth_blk_ffn(hearth_fwd *f, int32_t n_tok, int32_t il);
/* RoPE on x: [n_tok][n_head][head_dim] by the step's runs (see hearth_fwd.runs), the
 * sliding-window tables when swa. */
void hearth_blk_rope(hearth_fwd *f, float *x, int32_t n_head, int32_t head_dim, int32_t n_rot, const int32_t *pos,
                     bool swa);
/* y += each run's low-rank update of layer il's projection mod: x [T][n_in] is the input of
 * the projection, y [T][ldy] its output (after the base matmul). Nothing without adapters. */
void hearth_blk_lora(hearth_fwd *f, int32_t il, hearth_lora_mod mod, const float *x, float *y, int64_t ldy);
/* Final norm + output projection for the f->n_out rows f->out_rows, into logits (backend memory). */
void hearth_blk_logits(hearth_fwd *f, float *logits);

/* Mixture of experts (moe.c). route: f->moe_logits [T][n_expert] (backend memory, the router's
 * output) to the k chosen experts and their weights per token in f->moe_sel / f->moe_w (host),
 * renormalized to sum 1 when renorm. experts: the chosen experts of layer il on the rows of x
 * [T][n_embd] (backend memory), weighted and summed into f->moe_out (overwritten). blk_moe: the
 * feed-forward of a routed layer (Qwen3 MoE), f->xb in and out. */
void hearth_moe_route(hearth_fwd *f, int64_t T, bool renorm);
void hearth_moe_experts(hearth_fwd *f, const float *x, int64_t T, int32_t il, hearth_glu_kind glu);
void hearth_blk_moe(hearth_fwd *f, int32_t n_tok, int32_t il);

/* The gated DeltaNet of linear-attention layer il (deltanet.c): f->xb in and out, the state of
 * each token's slot in kv->lin_state[il] advanced. */
void hearth_blk_deltanet(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, int32_t il);

/* Family forwards (llama.c: llama, qwen2, qwen3, qwen3 MoE; gemma3.c). */
void hearth_llama_forward(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, float *logits);
void hearth_gemma3_forward(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, float *logits);
void hearth_gemma4_forward(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, float *logits);
/* One Gemma 4 layer on the residual f->x (gemma4.c), for the assistant too. */
void hearth_gemma4_layer(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, int32_t il);
void hearth_gemma4_assistant_forward(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, float *logits);
