/*
 * hf_config.h - a Hugging Face checkpoint's config.json and generation_config.json, read into
 * the hparams the forward pass uses plus what the safetensors loader needs to bind weights.
 *
 * Families (config model_type): llama, mistral, qwen2, qwen3, qwen3_moe, gpt_oss, gemma2, gemma3_text, gemma4_text,
 * qwen3_5_text (also a qwen3_5 config whose text_config holds it), qwen3_next
 * (also a gemma3 / gemma4 config whose text_config holds the text model), phi3, smollm3. Both config layouts of
 * transformers are read: v5's rope_parameters (one dict, or one per layer type) and v4's
 * rope_theta / rope_scaling / rope_local_base_freq. Per-layer features are checked against
 * the patterns hearth runs (layer_types must follow a period the arch table can express;
 * smollm3's no_rope_layers must follow no_rope_layer_interval); anything else is
 * HEARTH_E_UNSUPPORTED naming the key, never a silent difference.
 *
 * Plain data; the parse functions are pure; any thread.
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "model/arch.h"

enum { HEARTH_MAX_EOS = 8 };

/* Default sampling and stop tokens of a checkpoint (generation_config.json). A field applies
 * only when its has_ flag is set; the request's own values override these, which override the
 * server's defaults. eos lists every end-of-sequence id (generation_config's eos_token_id,
 * config.json's, and the tokenizer's eos), without repeats. */
typedef struct {
    bool    has_temperature, has_top_p, has_top_k, has_min_p, has_repetition_penalty, has_do_sample,
            has_max_new_tokens;
    float   temperature, top_p, min_p, repetition_penalty;
    int32_t top_k, max_new_tokens;
    bool    do_sample;
    int32_t n_eos;
    int32_t eos[HEARTH_MAX_EOS];
    int32_t bos; /* generation_config / config bos_token_id, or -1 */
} hearth_gen_defaults;

/* MLX affine quantization as config.json states it: the default for every quantized module
 * and per-module overrides ("model.layers.0.mlp.down_proj": {"bits": 8, "group_size": 64}). */
typedef struct {
    int32_t bits, group_size; /* 0 = the checkpoint is not quantized */
} hearth_mlx_quant;

typedef struct {
    hearth_hparams          hp;
    const hearth_arch_info *ai;
    bool   tied;          /* tie_word_embeddings (family default when absent) */
    bool   attn_out_bias; /* o_proj carries a bias (llama/qwen3/smollm3 attention_bias) */
    bool   norm_plus_one; /* RMSNorm multiplies by (1 + w) (gemma) */
    bool   fused_qkv;     /* phi3: qkv_proj and gate_up_proj */
    bool   text_config;   /* weights live under a language model prefix */
    /* Qwen3 MoE: bit il % 64 of moe_layer[il / 64] is set when layer il routes to experts (every
     * decoder_sparse_step-th layer not in mlp_only_layers); the others have a dense MLP */
    uint64_t moe_layer[1024 / 64];
    bool   mxfp4;         /* gpt-oss quantization_config quant_method mxfp4: experts in MXFP4 blocks */
    hearth_mlx_quant quant;
    char  *quant_json;    /* owned: the "quantization" object as JSON (per-module overrides), or NULL */
    hearth_gen_defaults gen;
} hearth_hf_config;

/* Parse config.json (json[0..n)) into cfg (release it with hearth_hf_config_fini, also after
 * a failure). Errors: HEARTH_E_FORMAT (not JSON, a key of the
 * wrong type or out of range), HEARTH_E_UNSUPPORTED (unknown model_type, a feature hearth does
 * not run), both with a message naming the key. */
hearth_status hearth_hf_config_parse(const char *json, size_t n, hearth_hf_config *cfg, hearth_err *err);
void          hearth_hf_config_fini(hearth_hf_config *cfg);
/* Read generation_config.json (json[0..n)) into cfg->gen, adding its eos ids. */
hearth_status hearth_hf_gen_config_parse(const char *json, size_t n, hearth_hf_config *cfg, hearth_err *err);
/* Add id to gen's eos list when it is not there (ignored when full or id < 0). */
void          hearth_gen_add_eos(hearth_gen_defaults *gen, int32_t id);
/* Bits and group size the config gives the module (e.g. "model.layers.0.mlp.down_proj"):
 * its override or the default; {0, 0} when the config says it is not quantized. */
hearth_mlx_quant hearth_hf_config_quant_of(const hearth_hf_config *cfg, const char *module);
/* Does layer il route to experts (Qwen3 MoE)? */
static inline bool hearth_hf_config_moe_layer(const hearth_hf_config *cfg, int32_t il) {
    return il >= 0 && il < 1024 && (cfg->moe_layer[il / 64] >> (il % 64) & 1);
}

/* RoPE inverse frequencies of the global (swa = false) or sliding layers,
 * [hearth_hparams_rope_dims / 2], in float as transformers' rope init functions compute them
 * (default, linear, dynamic, yarn, llama3, longrope, proportional), for sequences within the
 * training context (longrope: within the original context). */
void hearth_hparams_inv_freq(const hearth_hparams *hp, bool swa, float *inv_freq);
/* The same for a forward over a sequence of seq_len tokens (transformers takes the largest
 * position + 1 of the call): dynamic NTK grows its base past the training context, longrope
 * takes its long factors past the original context. Other kinds ignore seq_len. */
void hearth_hparams_inv_freq_at(const hearth_hparams *hp, bool swa, int32_t seq_len, float *inv_freq);
/* Does a sequence of seq_len tokens take frequencies other than the base ones (above)? */
bool hearth_hparams_rope_stretched(const hearth_hparams *hp, int32_t seq_len);
/* Entries x 2 of the inverse-frequency table of a layer kind (its rotated width). */
int32_t hearth_hparams_rope_dims(const hearth_hparams *hp, bool swa);
