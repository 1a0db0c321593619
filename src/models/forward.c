/*
 * forward.c - the forward context (activation scratch sized once for the largest step) and
 * the per-family dispatch with the batch checks that protect the cache.
 */
#include "models/forward_internal.h"
#include "kernels/kernels.h"
#include "kernels/ref/ops_ref.h"
#include "model/hf_config.h"

#include <math.h>

#include <stdlib.h>
#include <string.h>

static size_t up64(size_t n) { return (n + 63) & ~(size_t)63; }

hearth_fwd *hearth_fwd_create(const hearth_model *m, hearth_backend *be, int32_t max_tok) {
    const hearth_hparams *hp = &m->hp;
    hearth_fwd *f = calloc(1, sizeof *f);
    if (!f || max_tok <= 0) {
        free(f);
        return NULL;
    }
    f->m = m;
    f->be = be;
    f->max_tok = max_tok;
    size_t T = (size_t)max_tok, E = (size_t)hp->n_embd;
    size_t qw = (size_t)hp->n_head * (size_t)hp->head_dim, kw = (size_t)hp->n_head_kv * (size_t)hp->head_dim,
           vw = (size_t)hp->n_head_kv * (size_t)hp->head_dim_v, aw = (size_t)hp->n_head * (size_t)hp->head_dim_v;
    size_t sizes[] = {T * E, T * E, T * qw, T * kw, T * vw, T * aw, T * (size_t)hp->n_ff, T * (size_t)hp->n_ff,
                      T, (size_t)hp->n_rot / 2, (size_t)hp->n_rot / 2};
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) total += up64(sizes[i] * sizeof(float));
    f->mem = aligned_alloc(64, total);
    if (!f->mem) {
        free(f);
        return NULL;
    }
    char *p = f->mem;
    float **slots[] = {&f->x, &f->xb, &f->q, &f->k, &f->v, &f->att, &f->g, &f->u};
    for (size_t i = 0; i < 8; i++) {
        *slots[i] = (float *)p;
        p += up64(sizes[i] * sizeof(float));
    }
    f->out_rows = (int32_t *)p;
    p += up64(sizes[8] * sizeof(float));
    f->inv_freq = (float *)p;
    p += up64(sizes[9] * sizeof(float));
    f->inv_freq_swa = (float *)p;
    /* NOTE: the reference kernel set computes as transformers does (the f32 specification it is
     * compared with); the quantized sets round as llama.cpp does for GGUF models, since with
     * 8-bit activations and f16 KV every rounding difference can flip a later rounding.
     * Hugging Face checkpoints (hf_numerics) always take transformers' angles (scaling included)
     * and exact GELU. */
    bool ref = hearth_kernels_isa() == HEARTH_ISA_REF;
    bool hf_angles = ref || hp->hf_numerics;
    if (hp->hf_numerics) {
        hearth_hparams_inv_freq(hp, false, f->inv_freq);
        hearth_hparams_inv_freq(hp, true, f->inv_freq_swa);
    } else {
        hearth_rope_inv_freq(f->inv_freq, hp->n_rot, hp->rope_base, hp->rope_scale);
        hearth_rope_inv_freq(f->inv_freq_swa, hp->n_rot, hp->rope_base_swa, 1.0f);
    }
    float mscale = hp->rope_mscale > 0 ? hp->rope_mscale : 1.0f;
    f->rope = (hearth_rope_params){.inv_freq = hf_angles ? f->inv_freq : NULL, .neox = hp->rope_neox,
                                   .theta_scale = powf(hp->rope_base, -2.0f / (float)hp->n_rot),
                                   .freq_scale = 1.0f / hp->rope_scale, .mscale = mscale};
    f->rope_swa = (hearth_rope_params){.inv_freq = hf_angles ? f->inv_freq_swa : NULL, .neox = hp->rope_neox,
                                       .theta_scale = powf(hp->rope_base_swa, -2.0f / (float)hp->n_rot),
                                       .freq_scale = 1.0f, .mscale = mscale};
    /* mscale applies to the global layers' scaled rope only (yarn); sliding gemma3 layers are plain */
    if (hearth_arch_info_of(hp->arch) && hearth_arch_info_of(hp->arch)->rope_base_swa > 0) f->rope_swa.mscale = 1.0f;
    /* llama.cpp scales Gemma's queries before they are rounded to f16 for the KQ product */
    f->scale_q = !hf_angles && hp->arch == HEARTH_ARCH_GEMMA3;
    f->glu = hp->ffn == HEARTH_FFN_SWIGLU ? HEARTH_GLU_SWIGLU
             : hf_angles                  ? HEARTH_GLU_GEGLU
                                          : HEARTH_GLU_GEGLU_F16;
    return f;
}

hearth_fwd *hearth_fwd_create_scripted(const hearth_model *m, int32_t max_tok, hearth_fwd_script_fn fn, void *ctx) {
    hearth_fwd *f = max_tok > 0 && fn ? calloc(1, sizeof *f) : NULL;
    if (!f) return NULL;
    f->m = m;
    f->max_tok = max_tok;
    f->script = fn;
    f->script_ctx = ctx;
    return f;
}

void hearth_fwd_destroy(hearth_fwd *f) {
    if (!f) return;
    free(f->mem);
    free(f);
}

void hearth_fwd_set_trace(hearth_fwd *f, hearth_fwd_trace_fn fn, void *user) {
    f->trace = fn;
    f->trace_user = user;
}

int32_t hearth_fwd_max_tokens(const hearth_fwd *f) { return f->max_tok; }

hearth_status hearth_forward(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, float *logits) {
    if (b->n_tokens <= 0 || b->n_tokens > f->max_tok) return HEARTH_E_INVALID;
    for (int32_t t = 0; t < b->n_tokens; t++) {
        if (b->seq[t] < 0 || b->seq[t] >= kv->n_slots || b->pos[t] < 0 || b->pos[t] >= kv->n_ctx ||
            b->token[t] < 0 || b->token[t] >= f->m->hp.n_vocab)
            return HEARTH_E_INVALID;
        const hearth_kv_blocks *bl = &kv->blocks;
        int32_t blk = bl->table[(int64_t)b->seq[t] * bl->max_blocks + b->pos[t] / bl->block_size];
        if (blk < 0 || blk >= kv->n_blocks) return HEARTH_E_INVALID;
    }
    if (f->script) return f->script(f->script_ctx, b, kv, logits);
    switch (f->m->hp.arch) {
    case HEARTH_ARCH_GEMMA2:
    case HEARTH_ARCH_GEMMA3:
        hearth_gemma3_forward(f, b, kv, logits);
        break;
    case HEARTH_ARCH_LLAMA:
    case HEARTH_ARCH_QWEN2:
    case HEARTH_ARCH_QWEN3:
    case HEARTH_ARCH_MISTRAL:
    case HEARTH_ARCH_PHI3:
    case HEARTH_ARCH_SMOLLM3:
        hearth_llama_forward(f, b, kv, logits);
        break;
    default:
        return HEARTH_E_UNSUPPORTED;
    }
    return HEARTH_OK;
}
