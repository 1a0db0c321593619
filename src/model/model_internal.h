/*
 * model_internal.h - the layout of a loaded model, for the forward functions in models/ and
 * for tests. Everything here is immutable after hearth_model_load.
 */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "model/gguf.h"
#include "model/hf_config.h"
#include "model/safetensors.h"
#include "model/model.h"
#include "tensor/dtype.h"
#include "tensor/tensor.h"

/* Per-layer tensors. Vectors are f32 copies in the model arena (NULL when absent). */
typedef struct {
    const float  *attn_norm;      /* [n_embd] */
    hearth_weight wq, wk, wv;     /* [n_head*head_dim | n_head_kv*head_dim | n_head_kv*head_dim_v][n_embd] */
    const float  *bq, *bk, *bv;   /* biases (qkv_bias) */
    const float  *q_norm, *k_norm;/* [head_dim] (qk_norm) */
    hearth_weight wo;             /* [n_embd][n_head*head_dim_v] */
    const float  *bo;             /* [n_embd] output bias (llama attention_bias), or NULL */
    const float  *post_attn_norm; /* [n_embd] (post_norms) */
    const float  *ffn_norm;       /* [n_embd] */
    hearth_weight w_gate, w_up;   /* [n_ff][n_embd] */
    hearth_weight w_down;         /* [n_embd][n_ff] */
    const float  *post_ffn_norm;  /* [n_embd] (post_norms) */
    /* Gemma 4 (models/gemma4.c); empty elsewhere */
    hearth_weight ple_gate;       /* [n_embd_ple][n_embd] per_layer_input_gate */
    hearth_weight ple_proj;       /* [n_embd][n_embd_ple] per_layer_projection */
    const float  *ple_norm;       /* [n_embd] post_per_layer_input_norm */
    float         out_scale;      /* layer_scalar: the layer's output is multiplied by it */
    /* Gemma 4 mixture of experts (n_expert > 0) */
    hearth_weight router;         /* [n_expert][n_embd] router.proj */
    const float  *router_scale;   /* [n_embd] */
    const float  *expert_scale;   /* [n_expert] per_expert_scale */
    hearth_weight exp_gate, exp_up; /* [..][n_embd]: expert e's n_ff_exp gate / up rows from row e * exp_stride */
    int64_t       exp_stride;     /* n_ff_exp (separate gate and up) or 2 n_ff_exp (views of one gate_up) */
    hearth_weight exp_down;       /* [n_expert * n_embd][n_ff_exp] */
    /* gpt-oss: biases of the router [n_expert] and of expert e's gate / up [e][n_ff_exp] and
     * down [e][n_embd] rows; the attention sinks [n_head] (NULL elsewhere) */
    const float  *router_b, *exp_gate_b, *exp_up_b, *exp_down_b;
    const float  *sinks;
    const float  *post_ffn_norm_1, *pre_ffn_norm_2, *post_ffn_norm_2; /* [n_embd] */
    /* gated DeltaNet (hearth_hparams_is_linear; models/deltanet.c), with K = lin_n_k * lin_k_dim
     * and V = lin_n_v * lin_v_dim: */
    hearth_weight lin_qkv;        /* [2K + V][n_embd] in_proj_qkv: q, k, v (the conv's channels) */
    hearth_weight lin_z;          /* [V][n_embd] in_proj_z: the output gate */
    hearth_weight lin_b, lin_a;   /* [lin_n_v][n_embd] in_proj_b (beta), in_proj_a (decay) */
    const float  *lin_conv_w;     /* [2K + V][lin_conv] conv1d taps */
    const float  *lin_dt_bias;    /* [lin_n_v] */
    const float  *lin_a_neg;      /* [lin_n_v] -exp(A_log) */
    const float  *lin_norm;       /* [lin_v_dim] the gated RMSNorm's weight (no + 1) */
    hearth_weight lin_out;        /* [n_embd][V] out_proj */
    /* the shared expert of a routed layer (n_ff_shexp > 0: Qwen3-Next, Qwen3.5 MoE) */
    hearth_weight sh_gate, sh_up; /* [n_ff_shexp][n_embd] */
    hearth_weight sh_down;        /* [n_embd][n_ff_shexp] */
    hearth_weight sh_gate_inp;    /* [1][n_embd] shared_expert_gate: the logit of its sigmoid weight */
} hearth_layer;

struct hearth_model {
    hearth_hparams hp;
    hearth_gguf   *gguf;         /* owned: the mapping the weights point into (GGUF), or NULL */
    hearth_st     *st;           /* owned: the mappings of a safetensors checkpoint, or NULL */
    hearth_tok    *tok;          /* owned */
    hearth_arena   arena;        /* owned: f32 vectors, strings */
    hearth_weight  tok_embd;     /* [n_vocab][n_embd] */
    const float   *output_norm;  /* [n_embd] */
    hearth_weight  output;       /* [n_vocab][n_embd]; tok_embd when tied */
    hearth_layer  *layers;       /* [n_layer], in arena */
    /* Gemma 4 per-layer inputs (n_embd_ple > 0) */
    hearth_weight  ple_embd;     /* [n_vocab_ple][n_layer * n_embd_ple] embed_tokens_per_layer */
    hearth_weight  ple_model_proj; /* [n_layer * n_embd_ple][n_embd] per_layer_model_projection */
    const float   *ple_proj_norm;/* [n_embd_ple] per_layer_projection_norm */
    /* Gemma 4 assistant drafter (hp.n_embd_backbone > 0; models/gemma4_assistant.c) */
    hearth_weight  pre_proj_e, pre_proj_h; /* [n_embd][n_embd_backbone] each: pre_projection's
                                  * columns that take the target's embedding, then its hidden
                                  * state (views into one [n_embd][2 n_embd_backbone] tensor) */
    hearth_weight  post_proj;    /* [n_embd_backbone][n_embd] post_projection */
    hearth_weight  centroids;    /* [n_centroids][n_embd] masked_embedding.centroids (n_centroids > 0) */
    const int32_t *token_order;  /* [n_vocab] in arena: masked_embedding.token_ordering, the ids of
                                  * centroid c at [c * n_vocab / n_centroids ..) (n_centroids > 0) */
    const char    *name;         /* in arena */
    const char    *chat_template;/* in arena, or NULL */
    hearth_gen_defaults gen;     /* generation_config.json defaults and the eos union */
    size_t         weight_bytes;
    char           quant_desc[128];
};

/* Load a Hugging Face checkpoint (model_st.c): path is its folder or one .safetensors file. */
hearth_status hearth_model_load_st(const char *path, hearth_model **out, hearth_err *err);
