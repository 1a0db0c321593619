/*
 * arch.h - the architecture table: one row per model family, mapping GGUF metadata to one
 * hparams struct and naming each family's features (STYLE 2.9). A family that differs only
 * in flags (qwen2's QKV bias, qwen3's QK-norm) is a row here, not a new forward function.
 * Immutable tables; any thread.
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>

typedef enum {
    HEARTH_ARCH_LLAMA = 0,
    HEARTH_ARCH_QWEN2,
    HEARTH_ARCH_QWEN3,
    HEARTH_ARCH_GEMMA3,
    HEARTH_ARCH_MISTRAL,  /* safetensors only (GGUF files of Mistral say llama) */
    HEARTH_ARCH_GEMMA2,   /* safetensors only */
    HEARTH_ARCH_PHI3,     /* safetensors only */
    HEARTH_ARCH_SMOLLM3,  /* safetensors only */
    HEARTH_ARCH_GEMMA4,   /* safetensors only */
    HEARTH_ARCH_QWEN3MOE, /* qwen3 attention, mixture-of-experts feed-forward (models/moe.c) */
    HEARTH_ARCH_GPT_OSS,  /* attention sinks, biases, experts with the clamped SwiGLU */
    HEARTH_ARCH_QWEN3_5,  /* gated DeltaNet layers beside gated full attention (GGUF qwen35) */
    HEARTH_ARCH_QWEN3NEXT,/* Qwen3.5's layers, the DeltaNet projections fused per key head (GGUF qwen3next) */
    HEARTH_ARCH_QWEN3_5MOE, /* Qwen3.5 with a routed mixture and a shared expert on every layer (GGUF qwen35moe) */
    HEARTH_ARCH_COUNT,
} hearth_arch;

typedef enum {
    HEARTH_FFN_SWIGLU = 0, /* silu(gate) * up */
    HEARTH_FFN_GEGLU,      /* gelu_tanh(gate) * up */
} hearth_ffn_kind;

/* How RoPE frequencies are scaled (Hugging Face rope_type; model/rope_freq.c). */
typedef enum {
    HEARTH_ROPE_DEFAULT = 0,
    HEARTH_ROPE_LINEAR,   /* positions / factor */
    HEARTH_ROPE_DYNAMIC,  /* NTK-aware base growth past the training context (see hf_rope.c) */
    HEARTH_ROPE_YARN,     /* YaRN: frequency ramp between beta_fast and beta_slow, mscale */
    HEARTH_ROPE_LLAMA3,   /* Llama 3.1: low/high frequency bands */
    HEARTH_ROPE_PROPORTIONAL, /* Gemma 4: the whole head pairs as rotate_half does, only the first
                               * n_rot_freq dims get a frequency (base^(-2i/head_dim) / factor) */
    HEARTH_ROPE_LONGROPE, /* Phi-3 128k: per-frequency short/long factors, attention factor */
} hearth_rope_kind;

enum { HEARTH_LONGROPE_MAX = 256 }; /* longrope factors per list (rotated dims / 2) */

/* Everything a forward pass needs to know about a model's shape. Plain data. */
typedef struct {
    hearth_arch arch;
    int32_t n_vocab;
    int32_t n_ctx_train;     /* tokens */
    int32_t n_embd;          /* model width */
    int32_t n_layer;
    int32_t n_head;
    int32_t n_head_kv;
    int32_t head_dim;        /* per-head width of q and k */
    int32_t head_dim_v;      /* per-head width of v */
    int32_t n_ff;            /* feed-forward width */
    int32_t n_rot;           /* rotated dims per head (<= head_dim) */
    float   norm_eps;
    float   rope_base;       /* global layers */
    float   rope_base_swa;   /* sliding-window layers (gemma3: 10000) */
    float   rope_scale;      /* linear position scaling (1 = none) */
    /* Hugging Face rope scaling of the global layers (sliding layers use plain rope_base_swa) */
    hearth_rope_kind rope_kind;
    float   rope_factor;     /* rope_parameters.factor */
    int32_t rope_orig_ctx;   /* original_max_position_embeddings (yarn, llama3, dynamic) */
    float   rope_lo_freq, rope_hi_freq; /* llama3 low_freq_factor, high_freq_factor */
    float   yarn_beta_fast, yarn_beta_slow;
    bool    yarn_no_truncate; /* yarn truncate: false: the ramp's ends are not rounded to whole dims */
    float   rope_mscale;     /* cos and sin are multiplied by it (yarn attention_factor); 1 = none */
    bool    hf_numerics;     /* computed as transformers does on every kernel set (RoPE angles
                              * pos * inv_freq, exact tanh GELU): Hugging Face checkpoints. GGUF
                              * models follow llama.cpp's recipes off the ref set */
    int32_t nope_interval;   /* layer il skips RoPE iff nope_interval > 0 && (il + 1) % nope_interval == 0 (smollm3) */
    int32_t n_swa;           /* sliding window in tokens; 0 = none */
    int32_t swa_pattern;     /* layer il is sliding iff n_swa > 0 && il % swa_pattern < swa_pattern - 1 */
    float   attn_scale;      /* multiplies q.k */
    float   attn_softcap;    /* 0 = none */
    float   final_softcap;   /* 0 = none */
    float   embd_scale;      /* multiplies token embeddings (gemma: sqrt(n_embd)); 1 = none */
    bool    rope_neox;       /* rotate halves (true) or adjacent pairs */
    bool    qkv_bias;        /* q/k/v projections carry biases */
    bool    qk_norm;         /* RMSNorm on each q and k head before RoPE */
    bool    post_norms;      /* gemma: norms after attention and after the ffn */
    hearth_ffn_kind ffn;
    /* Gemma 4 (0 / false elsewhere). head_dim and n_head_kv above are then the largest of the
     * two layer kinds, which sizes the cache rows; each layer uses its kind's own: */
    int32_t head_dim_full, n_head_kv_full; /* full-attention layers */
    int32_t head_dim_swa, n_head_kv_swa;   /* sliding-window layers */
    int32_t n_rot_freq;      /* proportional RoPE of full layers: dims with a frequency */
    int32_t n_layer_kv;      /* layers il >= n_layer_kv reuse the cache of the last layer of their
                              * kind below n_layer_kv (KV sharing); 0 = every layer has its own */
    int32_t n_embd_ple;      /* per-layer input width (0 = none) */
    int32_t n_vocab_ple;     /* rows of the per-layer input embedding */
    int32_t n_ff_kv;         /* feed-forward width of the layers below n_layer_kv when the shared
                              * ones are double-wide (n_ff is then the wider); 0 = n_ff */
    bool    k_eq_v;          /* full layers: values come from the key projection */
    /* Gemma 4 assistant drafter (transformers' gemma4_assistant; 0 elsewhere): no cache of its
     * own, every layer attends to a target model's (models/gemma4_assistant.c) */
    int32_t n_embd_backbone; /* the target's hidden size, which its pre/post projections map
                              * from and to; > 0 marks an assistant */
    int32_t n_centroids;     /* centroid-masked logits (use_ordered_embeddings): centroids of
                              * n_vocab / n_centroids tokens; 0 = plain logits */
    int32_t centroid_top_k;  /* centroids whose tokens keep their logits */
    int32_t n_expert, n_expert_used, n_ff_exp; /* mixture-of-experts block (0 = none): beside the MLP
                              * (Gemma 4), or in its place on the layers that have a router (Qwen3 MoE) */
    bool    attn_sinks;      /* gpt-oss: a learned logit per head joins every softmax (attn_paged_ref.h) */
    /* Hybrid linear attention (Qwen3.5, Qwen3-Next; 0 elsewhere): the layers whose bit il % 64 of
     * lin_layer[il / 64] is set run a gated DeltaNet (models/deltanet.c) in place of attention,
     * with lin_n_k key heads and lin_n_v value heads (a multiple) of lin_k_dim / lin_v_dim and a
     * causal conv of lin_conv taps over q, k and v; each keeps a fixed-size state per sequence
     * (hearth_hparams_lin_state_floats) instead of KV rows */
    int32_t lin_n_k, lin_n_v, lin_k_dim, lin_v_dim, lin_conv;
    uint64_t lin_layer[1024 / 64];
    bool    lin_v_tiled;     /* value head h reads key head h % lin_n_k (the value heads in llama.cpp's
                              * tiled order: Qwen3.5 GGUF files); else h / (lin_n_v / lin_n_k), as
                              * transformers groups them */
    int32_t n_ff_shexp;      /* Qwen3-Next / Qwen3.5 MoE: the routed layers' shared expert width
                              * (a SwiGLU MLP beside the experts, weighed by a sigmoid gate); 0 = none */
    bool    attn_out_gate;   /* Qwen3.5: q_proj gives each head's query then its output gate g,
                              * and the head's attention output is multiplied by sigmoid(g) */
    bool    moe_norm_topk;   /* Qwen3 MoE: the k chosen probabilities are renormalized to sum 1
                              * (norm_topk_prob); Gemma 4 always renormalizes */
    /* dynamic NTK: the base grows with the sequence length past n_ctx_train (rope_freq.c);
     * longrope: factors of the rotated frequencies within (short) and past (long)
     * rope_orig_ctx, the attention factor in rope_mscale */
    float   longrope_short[HEARTH_LONGROPE_MAX], longrope_long[HEARTH_LONGROPE_MAX];
} hearth_hparams;

typedef struct {
    hearth_arch     arch;
    const char     *gguf_name;   /* general.architecture */
    const char     *hf_name;     /* config.json architectures[0] */
    const char     *hf_type;     /* config.json model_type */
    bool            rope_neox;
    bool            qkv_bias;
    bool            qk_norm;
    bool            post_norms;
    bool            embd_scaled;
    hearth_ffn_kind ffn;
    int32_t         swa_pattern;   /* default when the file does not say; 0 = no SWA */
    float           rope_base_swa; /* default local RoPE base for SWA layers */
} hearth_arch_info;

/* Row for a GGUF architecture name, or NULL when hearth does not support it. */
const hearth_arch_info *hearth_arch_by_gguf_name(const char *name);
/* Row for a config.json model_type ("llama", "gemma3_text"), or NULL. */
const hearth_arch_info *hearth_arch_by_hf_type(const char *model_type);
const hearth_arch_info *hearth_arch_info_of(hearth_arch arch);
/* Is layer il a sliding-window layer? */
bool hearth_hparams_is_swa(const hearth_hparams *hp, int32_t il);
/* Does layer il apply RoPE? */
bool hearth_hparams_has_rope(const hearth_hparams *hp, int32_t il);
/* Layer il's q/k/v head width and kv heads (they differ by layer kind in Gemma 4), and its
 * feed-forward width. */
int32_t hearth_hparams_n_ff(const hearth_hparams *hp, int32_t il);
int32_t hearth_hparams_head_dim(const hearth_hparams *hp, int32_t il);
int32_t hearth_hparams_n_head_kv(const hearth_hparams *hp, int32_t il);
/* Is layer il a linear-attention (gated DeltaNet) layer? */
static inline bool hearth_hparams_is_linear(const hearth_hparams *hp, int32_t il) {
    return hp->lin_n_v > 0 && il >= 0 && il < 1024 && (hp->lin_layer[il / 64] >> (il % 64) & 1);
}
/* Floats of one sequence's state in one linear-attention layer: the conv window
 * [conv channels][lin_conv - 1], then the recurrent state [lin_n_v][lin_k_dim][lin_v_dim]. 0 for
 * a model without such layers. */
int64_t hearth_hparams_lin_state_floats(const hearth_hparams *hp);
/* The layer whose cache layer il attends to: il itself, or for a KV-shared layer the last
 * layer of its kind below n_layer_kv (-1 when there is none: a config error). */
int32_t hearth_hparams_kv_layer(const hearth_hparams *hp, int32_t il);
/* Does layer il store keys and values of its own (not KV-shared, not linear attention)? */
static inline bool hearth_hparams_stores_kv(const hearth_hparams *hp, int32_t il) {
    return hearth_hparams_kv_layer(hp, il) == il && !hearth_hparams_is_linear(hp, il);
}
