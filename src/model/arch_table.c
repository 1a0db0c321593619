/* arch_table.c - one row per supported family; see arch.h. */
#include "model/arch.h"

#include <string.h>

static const hearth_arch_info arch_rows[HEARTH_ARCH_COUNT] = {
    /* arch                gguf      hf                   hf model_type   neox   bias   qknorm post   embd   ffn                swa  base_swa */
    {HEARTH_ARCH_LLAMA,   "llama",  "LlamaForCausalLM",   "llama",        false, false, false, false, false, HEARTH_FFN_SWIGLU, 0, 0.0f},
    {HEARTH_ARCH_QWEN2,   "qwen2",  "Qwen2ForCausalLM",   "qwen2",        true,  true,  false, false, false, HEARTH_FFN_SWIGLU, 0, 0.0f},
    {HEARTH_ARCH_QWEN3,   "qwen3",  "Qwen3ForCausalLM",   "qwen3",        true,  false, true,  false, false, HEARTH_FFN_SWIGLU, 0, 0.0f},
    /* Gemma 3: every sixth layer is global, the rest slide; local layers use RoPE base 10000 */
    {HEARTH_ARCH_GEMMA3,  "gemma3", "Gemma3ForCausalLM",  "gemma3_text",  true,  false, true,  true,  true,  HEARTH_FFN_GEGLU,  6, 10000.0f},
    /* the rows below with gguf NULL load from safetensors only; HF RoPE is always rotate_half */
    {HEARTH_ARCH_MISTRAL, NULL,     "MistralForCausalLM", "mistral",      true,  false, false, false, false, HEARTH_FFN_SWIGLU, 0, 0.0f},
    /* Gemma 2: sliding and global layers alternate, both with the same RoPE base */
    {HEARTH_ARCH_GEMMA2,  NULL,     "Gemma2ForCausalLM",  "gemma2",       true,  false, false, true,  true,  HEARTH_FFN_GEGLU,  2, 0.0f},
    {HEARTH_ARCH_PHI3,    NULL,     "Phi3ForCausalLM",    "phi3",         true,  false, false, false, false, HEARTH_FFN_SWIGLU, 0, 0.0f},
    {HEARTH_ARCH_SMOLLM3, NULL,     "SmolLM3ForCausalLM", "smollm3",      true,  false, false, false, false, HEARTH_FFN_SWIGLU, 0, 0.0f},
    /* Gemma 4 (models/gemma4.c): per-layer head sizes, KV sharing, per-layer inputs */
    {HEARTH_ARCH_GEMMA4,  NULL,     "Gemma4ForCausalLM",  "gemma4_text",  true,  false, true,  true,  true,  HEARTH_FFN_GEGLU,  6, 10000.0f},
    /* Qwen3 MoE: qwen3's attention; the feed-forward of most layers is a routed mixture of experts */
    {HEARTH_ARCH_QWEN3MOE, "qwen3moe", "Qwen3MoeForCausalLM", "qwen3_moe", true, false, true, false, false, HEARTH_FFN_SWIGLU, 0, 0.0f},
    /* gpt-oss: sliding and full layers alternate; every layer's feed-forward is routed experts */
    {HEARTH_ARCH_GPT_OSS, "gpt-oss", "GptOssForCausalLM",  "gpt_oss",      true,  true,  false, false, false, HEARTH_FFN_SWIGLU, 2, 0.0f},
    /* Qwen3.5 (text) and Qwen3-Next: gated DeltaNet layers beside gated full attention (llama.c) */
    {HEARTH_ARCH_QWEN3_5, "qwen35", "Qwen3_5ForCausalLM", "qwen3_5_text", true,  false, true,  false, false, HEARTH_FFN_SWIGLU, 0, 0.0f},
    {HEARTH_ARCH_QWEN3NEXT, "qwen3next", "Qwen3NextForCausalLM", "qwen3_next", true,  false, true,  false, false, HEARTH_FFN_SWIGLU, 0, 0.0f},
    {HEARTH_ARCH_QWEN3_5MOE, "qwen35moe", "Qwen3_5MoeForCausalLM", "qwen3_5_moe_text", true, false, true, false, false, HEARTH_FFN_SWIGLU, 0, 0.0f},
};

const hearth_arch_info *hearth_arch_by_gguf_name(const char *name) {
    for (int i = 0; i < HEARTH_ARCH_COUNT; i++)
        if (arch_rows[i].gguf_name && !strcmp(arch_rows[i].gguf_name, name)) return &arch_rows[i];
    return NULL;
}

const hearth_arch_info *hearth_arch_by_hf_type(const char *model_type) {
    for (int i = 0; i < HEARTH_ARCH_COUNT; i++)
        if (!strcmp(arch_rows[i].hf_type, model_type)) return &arch_rows[i];
    return NULL;
}

const hearth_arch_info *hearth_arch_info_of(hearth_arch arch) {
    return (unsigned)arch < HEARTH_ARCH_COUNT ? &arch_rows[arch] : NULL;
}

bool hearth_hparams_is_swa(const hearth_hparams *hp, int32_t il) {
    return hp->n_swa > 0 && hp->swa_pattern > 0 && il % hp->swa_pattern < hp->swa_pattern - 1;
}

bool hearth_hparams_has_rope(const hearth_hparams *hp, int32_t il) {
    return !(hp->nope_interval > 0 && (il + 1) % hp->nope_interval == 0);
}

int32_t hearth_hparams_head_dim(const hearth_hparams *hp, int32_t il) {
    int32_t d = hearth_hparams_is_swa(hp, il) ? hp->head_dim_swa : hp->head_dim_full;
    return d > 0 ? d : hp->head_dim;
}

int32_t hearth_hparams_n_head_kv(const hearth_hparams *hp, int32_t il) {
    int32_t n = hearth_hparams_is_swa(hp, il) ? hp->n_head_kv_swa : hp->n_head_kv_full;
    return n > 0 ? n : hp->n_head_kv;
}

int32_t hearth_hparams_n_ff(const hearth_hparams *hp, int32_t il) {
    return hp->n_ff_kv > 0 && il < hp->n_layer_kv ? hp->n_ff_kv : hp->n_ff;
}

int64_t hearth_hparams_lin_state_floats(const hearth_hparams *hp) {
    if (hp->lin_n_v <= 0) return 0;
    int64_t conv_ch = 2 * (int64_t)hp->lin_n_k * hp->lin_k_dim + (int64_t)hp->lin_n_v * hp->lin_v_dim;
    return conv_ch * (hp->lin_conv - 1) + (int64_t)hp->lin_n_v * hp->lin_k_dim * hp->lin_v_dim;
}

int32_t hearth_hparams_kv_layer(const hearth_hparams *hp, int32_t il) {
    if (hp->n_layer_kv <= 0 || il < hp->n_layer_kv) return il;
    bool swa = hearth_hparams_is_swa(hp, il);
    for (int32_t j = hp->n_layer_kv - 1; j >= 0; j--)
        if (hearth_hparams_is_swa(hp, j) == swa) return j;
    return -1;
}
