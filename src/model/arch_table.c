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
    /* the families below load from safetensors only (gguf NULL); HF RoPE is always rotate_half */
    {HEARTH_ARCH_MISTRAL, NULL,     "MistralForCausalLM", "mistral",      true,  false, false, false, false, HEARTH_FFN_SWIGLU, 0, 0.0f},
    /* Gemma 2: sliding and global layers alternate, both with the same RoPE base */
    {HEARTH_ARCH_GEMMA2,  NULL,     "Gemma2ForCausalLM",  "gemma2",       true,  false, false, true,  true,  HEARTH_FFN_GEGLU,  2, 0.0f},
    {HEARTH_ARCH_PHI3,    NULL,     "Phi3ForCausalLM",    "phi3",         true,  false, false, false, false, HEARTH_FFN_SWIGLU, 0, 0.0f},
    {HEARTH_ARCH_SMOLLM3, NULL,     "SmolLM3ForCausalLM", "smollm3",      true,  false, false, false, false, HEARTH_FFN_SWIGLU, 0, 0.0f},
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
