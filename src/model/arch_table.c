/* arch_table.c - one row per supported family; see arch.h. */
#include "model/arch.h"

#include <string.h>

static const hearth_arch_info arch_rows[HEARTH_ARCH_COUNT] = {
    /* arch               gguf      hf                     neox   bias   qknorm post   embd   ffn                swa  base_swa */
    {HEARTH_ARCH_LLAMA,  "llama",  "LlamaForCausalLM",    false, false, false, false, false, HEARTH_FFN_SWIGLU, 0, 0.0f},
    {HEARTH_ARCH_QWEN2,  "qwen2",  "Qwen2ForCausalLM",    true,  true,  false, false, false, HEARTH_FFN_SWIGLU, 0, 0.0f},
    {HEARTH_ARCH_QWEN3,  "qwen3",  "Qwen3ForCausalLM",    true,  false, true,  false, false, HEARTH_FFN_SWIGLU, 0, 0.0f},
    /* Gemma 3: every sixth layer is global, the rest slide; local layers use RoPE base 10000 */
    {HEARTH_ARCH_GEMMA3, "gemma3", "Gemma3ForCausalLM",   true,  false, true,  true,  true,  HEARTH_FFN_GEGLU,  6, 10000.0f},
};

const hearth_arch_info *hearth_arch_by_gguf_name(const char *name) {
    for (int i = 0; i < HEARTH_ARCH_COUNT; i++)
        if (!strcmp(arch_rows[i].gguf_name, name)) return &arch_rows[i];
    return NULL;
}

const hearth_arch_info *hearth_arch_info_of(hearth_arch arch) {
    return (unsigned)arch < HEARTH_ARCH_COUNT ? &arch_rows[arch] : NULL;
}

bool hearth_hparams_is_swa(const hearth_hparams *hp, int32_t il) {
    return hp->n_swa > 0 && hp->swa_pattern > 0 && il % hp->swa_pattern < hp->swa_pattern - 1;
}
