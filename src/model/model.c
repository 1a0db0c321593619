/*
 * model.c - load a GGUF model (Hugging Face checkpoints go to model_st.c): hparams from metadata through the arch table, weights bound by
 * name with type and shape checked, tokenizer and chat template from metadata.
 *
 * Tensor names follow GGUF's convention (token_embd, output_norm, output, blk.N.attn_q, ...);
 * a qwen3moe / gpt-oss layer with blk.N.ffn_gate_inp has its experts in 3-D
 * blk.N.ffn_{gate,up,down}_exps (gpt-oss's in MXFP4, read into bf16 at load: mxfp4.h).
 * The hybrid families (qwen35, qwen35moe, qwen3next) add gated DeltaNet layers, bound by
 * model_linear.c (which lists what llama.cpp's converter did to their tensors), a doubled
 * attn_q (each head's query, then its output gate), and on routed layers a shared expert
 * (ffn_{gate,up,down}_shexp, weighed by sigmoid(ffn_gate_inp_shexp . x)); their norms were
 * stored as (1 + w) by the converter, so they multiply as they are, as every GGUF norm does.
 * A missing required tensor, a shape that disagrees with the hparams, or a tensor type hearth
 * cannot multiply is a load error naming the tensor: a model never half-loads.
 */
#include "model/model.h"
#include "model/model_internal.h"
#include "model/model_linear.h"
#include "model/mxfp4.h"
#include "model/tok_gguf.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
    hearth_model *m;
    const char   *arch;  /* GGUF architecture name, the key prefix */
    hearth_err   *err;
} loader;

static bool key_u32(loader *L, const char *suffix, uint32_t *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", L->arch, suffix);
    return hearth_gguf_get_u32(L->m->gguf, key, out);
}

static bool key_f32(loader *L, const char *suffix, float *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", L->arch, suffix);
    return hearth_gguf_get_f32(L->m->gguf, key, out);
}

static hearth_status need_u32(loader *L, const char *suffix, int32_t *out, uint32_t max) {
    uint32_t v;
    if (!key_u32(L, suffix, &v))
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "missing metadata key %s.%s", L->arch, suffix);
    if (v == 0 || v > max)
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "metadata %s.%s = %u is out of range (1..%u)",
                              L->arch, suffix, v, max);
    *out = (int32_t)v;
    return HEARTH_OK;
}

/* gpt-oss (llama.cpp's gpt-oss arch): experts, attention sinks, and YaRN RoPE from
 * rope.scaling.{type,factor,original_context_length}. Its angles are computed as transformers
 * computes them (hf_numerics) with the ramp's ends rounded to whole dims, as llama.cpp's
 * ggml_rope_yarn_corr_dims rounds them (transformers' truncate: true); attention factor
 * 1 + 0.1 ln(factor), as both compute it. */
static hearth_status read_gpt_oss(loader *L, hearth_hparams *hp) {
    hearth_status st;
    if ((st = need_u32(L, "expert_count", &hp->n_expert, 1024)) ||
        (st = need_u32(L, "expert_used_count", &hp->n_expert_used, (uint32_t)hp->n_expert)) ||
        (st = need_u32(L, "expert_feed_forward_length", &hp->n_ff_exp, 1 << 20)))
        return st;
    hp->moe_norm_topk = true;
    hp->attn_sinks = true;
    hp->hf_numerics = true;
    float factor = 0;
    uint32_t orig = 0;
    hearth_span type = {0};
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.type", L->arch);
    if (!hearth_gguf_get_str(L->m->gguf, key, &type) || hearth_span_eq(type, "none")) return HEARTH_OK;
    if (!hearth_span_eq(type, "yarn"))
        return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "gpt-oss rope scaling type '%.*s' is not supported",
                              (int)type.len, type.ptr);
    if (!key_f32(L, "rope.scaling.factor", &factor) || !(factor > 0) ||
        !key_u32(L, "rope.scaling.original_context_length", &orig) || orig == 0)
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "yarn rope scaling needs %s.rope.scaling.factor and "
                              "%s.rope.scaling.original_context_length", L->arch, L->arch);
    hp->rope_kind = HEARTH_ROPE_YARN;
    hp->rope_factor = factor;
    hp->rope_orig_ctx = (int32_t)orig;
    hp->yarn_beta_fast = 32.0f;
    hp->yarn_beta_slow = 1.0f;
    hp->rope_mscale = factor <= 1 ? 1.0f : (float)(0.1 * log((double)factor) + 1.0);
    return HEARTH_OK;
}

static bool is_hybrid(hearth_arch a) {
    return a == HEARTH_ARCH_QWEN3_5 || a == HEARTH_ARCH_QWEN3_5MOE || a == HEARTH_ARCH_QWEN3NEXT;
}

/* qwen35 / qwen35moe / qwen3next: the DeltaNet shapes (ssm.*: conv_kernel taps, state_size the
 * key head dim, group_count the key heads, time_step_rank the value heads, inner_size all value
 * dims), which layers are linear (attention.recurrent_layers, else every layer but each
 * full_attention_interval-th), the experts and the shared expert. */
static hearth_status read_hybrid(loader *L, hearth_hparams *hp) {
    hearth_status st;
    int32_t inner = 0;
    if ((st = need_u32(L, "ssm.conv_kernel", &hp->lin_conv, 64)) ||
        (st = need_u32(L, "ssm.state_size", &hp->lin_k_dim, 4096)) ||
        (st = need_u32(L, "ssm.group_count", &hp->lin_n_k, 1024)) ||
        (st = need_u32(L, "ssm.time_step_rank", &hp->lin_n_v, 1024)) ||
        (st = need_u32(L, "ssm.inner_size", &inner, 1 << 20)))
        return st;
    if (hp->lin_conv < 2 || hp->lin_n_v % hp->lin_n_k || inner % hp->lin_n_v || inner / hp->lin_n_v > 4096)
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "%s.ssm.*: %d key heads, %d value heads (a multiple), "
                              "inner size %d (whole value heads) and conv width %d (>= 2) do not fit", L->arch,
                              hp->lin_n_k, hp->lin_n_v, inner, hp->lin_conv);
    hp->lin_v_dim = inner / hp->lin_n_v;
    hp->lin_v_tiled = hp->arch != HEARTH_ARCH_QWEN3NEXT; /* see model_linear.c */
    char key[128];
    snprintf(key, sizeof key, "%s.attention.recurrent_layers", L->arch);
    hearth_gguf_type et;
    uint64_t n = 0;
    if (hearth_gguf_get_arr(L->m->gguf, key, &et, &n)) {
        const uint8_t *v = hearth_gguf_arr_data(L->m->gguf, key);
        if (et != HEARTH_GGUF_BOOL || n < (uint64_t)hp->n_layer || !v)
            return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "%s is not an array of %d bools", key, hp->n_layer);
        for (int32_t il = 0; il < hp->n_layer; il++)
            if (v[il]) hp->lin_layer[il / 64] |= (uint64_t)1 << (il % 64);
    } else {
        uint32_t fai = 4;
        key_u32(L, "full_attention_interval", &fai);
        if (fai == 0) return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "%s.full_attention_interval is 0", L->arch);
        for (int32_t il = 0; il < hp->n_layer; il++)
            if ((il + 1) % (int32_t)fai) hp->lin_layer[il / 64] |= (uint64_t)1 << (il % 64);
    }
    hp->attn_out_gate = true;
    uint32_t v;
    if (key_u32(L, "expert_count", &v) && v > 0) {
        /* llama.cpp's qwen35moe and qwen3next graphs always renormalize the chosen experts' weights */
        if ((st = need_u32(L, "expert_count", &hp->n_expert, 1024)) ||
            (st = need_u32(L, "expert_used_count", &hp->n_expert_used, (uint32_t)hp->n_expert)) ||
            (st = need_u32(L, "expert_feed_forward_length", &hp->n_ff_exp, 1 << 20)) ||
            (st = need_u32(L, "expert_shared_feed_forward_length", &hp->n_ff_shexp, 1 << 20)))
            return st;
        hp->moe_norm_topk = true;
        if (hp->n_ff <= 0) hp->n_ff = hp->n_ff_shexp; /* qwen35moe has no dense MLP */
    }
    if (hp->n_ff <= 0) return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "missing metadata key %s.feed_forward_length",
                                             L->arch);
    return HEARTH_OK;
}

static hearth_status read_hparams(loader *L, const hearth_arch_info *ai) {
    hearth_hparams *hp = &L->m->hp;
    hearth_status st;
    memset(hp, 0, sizeof *hp);
    hp->arch = ai->arch;
    if ((st = need_u32(L, "embedding_length", &hp->n_embd, 1 << 16)) ||
        (st = need_u32(L, "block_count", &hp->n_layer, 1024)) ||
        (!is_hybrid(ai->arch) && (st = need_u32(L, "feed_forward_length", &hp->n_ff, 1 << 20))) ||
        (st = need_u32(L, "attention.head_count", &hp->n_head, 1024)))
        return st;
    uint32_t v;
    if (is_hybrid(ai->arch)) {
        /* the multi-token-prediction blocks the converter may append (nextn_predict_layers) are
         * not part of the forward pass */
        if (key_u32(L, "nextn_predict_layers", &v) && v > 0 && v < (uint32_t)hp->n_layer) hp->n_layer -= (int32_t)v;
        if (key_u32(L, "feed_forward_length", &v) && v <= (1u << 20)) hp->n_ff = (int32_t)v;
    }
    hp->n_head_kv = key_u32(L, "attention.head_count_kv", &v) ? (int32_t)v : hp->n_head;
    hp->n_ctx_train = key_u32(L, "context_length", &v) ? (int32_t)v : 4096;
    hp->head_dim = key_u32(L, "attention.key_length", &v) ? (int32_t)v : hp->n_embd / hp->n_head;
    hp->head_dim_v = key_u32(L, "attention.value_length", &v) ? (int32_t)v : hp->head_dim;
    hp->n_rot = key_u32(L, "rope.dimension_count", &v) ? (int32_t)v : hp->head_dim;
    if (hp->n_head_kv <= 0 || hp->n_head % hp->n_head_kv || hp->head_dim <= 0 ||
        hp->head_dim > 512 || hp->head_dim_v <= 0 || hp->head_dim_v > 512 || hp->n_rot > hp->head_dim ||
        hp->n_rot % 2)
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1,
                              "inconsistent attention shape: %d heads, %d kv heads, head dim %d/%d, %d rotated",
                              hp->n_head, hp->n_head_kv, hp->head_dim, hp->head_dim_v, hp->n_rot);
    hp->norm_eps = 1e-5f;
    if (!key_f32(L, "attention.layer_norm_rms_epsilon", &hp->norm_eps))
        key_f32(L, "attention.layer_norm_epsilon", &hp->norm_eps);
    hp->rope_base = 10000.0f;
    key_f32(L, "rope.freq_base", &hp->rope_base);
    hp->rope_base_swa = ai->rope_base_swa > 0 ? ai->rope_base_swa : hp->rope_base;
    hp->rope_scale = 1.0f;
    float f;
    if (ai->arch == HEARTH_ARCH_GPT_OSS) {
        hearth_status yst = read_gpt_oss(L, hp);
        if (yst) return yst;
    } else if (key_f32(L, "rope.scaling.factor", &f) && f > 0) {
        hearth_span type = {0};
        char key[128];
        snprintf(key, sizeof key, "%s.rope.scaling.type", L->arch);
        if (hearth_gguf_get_str(L->m->gguf, key, &type) && !hearth_span_eq(type, "linear") &&
            !hearth_span_eq(type, "none"))
            return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "rope scaling type '%.*s' is not supported yet",
                                  (int)type.len, type.ptr);
        if (hearth_span_eq(type, "linear")) hp->rope_scale = f;
    }
    if (key_u32(L, "attention.sliding_window", &v)) hp->n_swa = (int32_t)v;
    hp->swa_pattern = ai->swa_pattern;
    if (key_u32(L, "attention.sliding_window_pattern", &v)) hp->swa_pattern = (int32_t)v;
    key_f32(L, "attn_logit_softcapping", &hp->attn_softcap);
    key_f32(L, "final_logit_softcapping", &hp->final_softcap);
    /* Gemma scales q by query_pre_attn_scalar^-1/2, which equals head_dim for the released
     * text models; everyone else by head_dim^-1/2. */
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    hp->embd_scale = ai->embd_scaled ? sqrtf((float)hp->n_embd) : 1.0f;
    hp->rope_neox = ai->rope_neox;
    hp->qkv_bias = ai->qkv_bias;
    hp->qk_norm = ai->qk_norm;
    hp->post_norms = ai->post_norms;
    hp->ffn = ai->ffn;
    if (ai->arch == HEARTH_ARCH_QWEN3MOE) {
        /* llama.cpp's qwen3moe graph always renormalizes the chosen experts' weights */
        if ((st = need_u32(L, "expert_count", &hp->n_expert, 1024)) ||
            (st = need_u32(L, "expert_used_count", &hp->n_expert_used, (uint32_t)hp->n_expert)) ||
            (st = need_u32(L, "expert_feed_forward_length", &hp->n_ff_exp, 1 << 20)))
            return st;
        hp->moe_norm_topk = true;
    }
    if (is_hybrid(ai->arch)) return read_hybrid(L, hp);
    return HEARTH_OK;
}

/* Bind a 2-D weight: ne0 must equal in, ne1 out (when out > 0). Absent + !required is fine. */
static hearth_status bind_mat(loader *L, const char *name, int64_t in, int64_t out, bool required,
                              hearth_weight *w) {
    memset(w, 0, sizeof *w);
    const hearth_gguf_tensor *t = hearth_gguf_find_tensor(L->m->gguf, name);
    if (!t) {
        if (!required) return HEARTH_OK;
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "missing tensor '%s'", name);
    }
    const hearth_type_traits *tr = hearth_type_traits_of((int)t->type);
    const hearth_kernel_traits *kt = hearth_kernels_traits(t->type);
    if (!tr || !tr->supported || !kt || !kt->vec_dot)
        return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "tensor '%s' has type %s, which hearth cannot multiply",
                              name, hearth_type_name((int)t->type));
    if (t->n_dims > 2 || t->ne[0] != in || (out > 0 && t->ne[1] != out))
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1,
                              "tensor '%s' has shape [%lld, %lld], expected [%lld, %lld]", name,
                              (long long)t->ne[0], (long long)t->ne[1], (long long)in, (long long)out);
    w->type = t->type;
    w->ne0 = t->ne[0];
    w->ne1 = t->ne[1];
    w->row_bytes = hearth_row_size(t->type, t->ne[0]);
    w->data = t->data;
    return HEARTH_OK;
}

/* Bind a 3-D stack of n expert matrices (ne [in, rows, n], as llama.cpp's *_exps tensors lie)
 * as one weight of n * rows rows: expert e's rows from row e * rows on. */
static hearth_status bind_exps(loader *L, const char *name, int64_t in, int64_t rows, int64_t n, hearth_weight *w) {
    memset(w, 0, sizeof *w);
    const hearth_gguf_tensor *t = hearth_gguf_find_tensor(L->m->gguf, name);
    if (!t) return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "missing tensor '%s'", name);
    const hearth_type_traits *tr = hearth_type_traits_of((int)t->type);
    const hearth_kernel_traits *kt = hearth_kernels_traits(t->type);
    if (!tr || !tr->supported || !kt || !kt->vec_dot)
        return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "tensor '%s' has type %s, which hearth cannot multiply",
                              name, hearth_type_name((int)t->type));
    if (t->n_dims != 3 || t->ne[0] != in || t->ne[1] != rows || t->ne[2] != n)
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "tensor '%s' has shape [%lld, %lld, %lld] in %d dims, "
                              "expected [%lld, %lld, %lld]", name, (long long)t->ne[0], (long long)t->ne[1],
                              (long long)t->ne[2], t->n_dims, (long long)in, (long long)rows, (long long)n);
    *w = (hearth_weight){.type = t->type, .ne0 = in, .ne1 = rows * n, .row_bytes = hearth_row_size(t->type, in),
                         .data = t->data};
    return HEARTH_OK;
}

/* gpt-oss experts in GGUF MXFP4 (type 39, ne [in, rows, n]): read into bf16 rows in the arena
 * (mxfp4.h), expert e's rows from row e * rows on. */
static hearth_status bind_exps_mxfp4(loader *L, const hearth_gguf_tensor *t, int64_t in, int64_t rows, int64_t n,
                                     hearth_weight *w) {
    if (t->n_dims != 3 || t->ne[0] != in || t->ne[1] != rows || t->ne[2] != n || in % 32)
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "tensor '%s' has shape [%lld, %lld, %lld], expected "
                              "[%lld, %lld, %lld]", t->name, (long long)t->ne[0], (long long)t->ne[1],
                              (long long)t->ne[2], (long long)in, (long long)rows, (long long)n);
    uint16_t *dst = hearth_arena_alloc_aligned(&L->m->arena, (size_t)(in * rows * n) * 2, 64);
    if (!dst) return hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory reading '%s'", t->name);
    size_t row_in = (size_t)(in / 32) * 17;
    for (int64_t r = 0; r < rows * n; r++)
        hearth_mxfp4_ggml_row_to_bf16((const uint8_t *)t->data + (size_t)r * row_in, in, dst + r * in);
    *w = (hearth_weight){.type = HEARTH_TYPE_BF16, .ne0 = in, .ne1 = rows * n, .row_bytes = (size_t)in * 2,
                         .data = dst};
    return HEARTH_OK;
}

/* Bind a vector of n elements as an f32 copy in the model arena. */
static hearth_status bind_vec(loader *L, const char *name, int64_t n, bool required, const float **out) {
    *out = NULL;
    const hearth_gguf_tensor *t = hearth_gguf_find_tensor(L->m->gguf, name);
    if (!t) {
        if (!required) return HEARTH_OK;
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "missing tensor '%s'", name);
    }
    /* 2-D biases (gpt-oss's per-expert ones) are read whole, n = ne0 x ne1 */
    if (t->n_dims > 2 || t->ne[0] * (t->n_dims == 2 ? t->ne[1] : 1) != n)
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "tensor '%s' has %lld elements in %d dims, expected %lld",
                              name, (long long)(t->ne[0] * (t->n_dims == 2 ? t->ne[1] : 1)), t->n_dims, (long long)n);
    const hearth_kernel_traits *kt = hearth_kernels_traits_isa(t->type, HEARTH_ISA_SCALAR);
    if (!kt || !kt->to_float)
        return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "tensor '%s' has type %s, which hearth cannot read",
                              name, hearth_type_name((int)t->type));
    float *v = hearth_arena_alloc_aligned(&L->m->arena, (size_t)n * sizeof(float), 64);
    if (!v) return hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory loading '%s'", name);
    kt->to_float(t->data, v, n);
    *out = v;
    return HEARTH_OK;
}

/* The weight source model_linear.c binds a gated DeltaNet layer through. */
static hearth_status lin_mat(void *ctx, const char *name, int64_t in, int64_t out, hearth_weight *w) {
    return bind_mat(ctx, name, in, out, true, w);
}

static hearth_status lin_vec(void *ctx, const char *name, int64_t n, const float **out) {
    return bind_vec(ctx, name, n, true, out);
}

/* ssm_conv1d.weight: ne [cols, rows] (the converter squeezed transformers' [rows][1][cols]) */
static hearth_status lin_conv(void *ctx, const char *name, int64_t rows, int64_t cols, const float **out) {
    loader *L = ctx;
    const hearth_gguf_tensor *t = hearth_gguf_find_tensor(L->m->gguf, name);
    if (t && (t->n_dims != 2 || t->ne[0] != cols || t->ne[1] != rows))
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "tensor '%s' has shape [%lld, %lld] in %d dims, expected "
                              "[%lld, %lld]", name, (long long)t->ne[0], (long long)t->ne[1], t->n_dims,
                              (long long)cols, (long long)rows);
    return bind_vec(L, name, rows * cols, true, out);
}

static hearth_status bind_layer(loader *L, int il) {
    const hearth_hparams *hp = &L->m->hp;
    hearth_layer *l = &L->m->layers[il];
    int64_t E = hp->n_embd, q_out = (int64_t)hp->n_head * hp->head_dim,
            k_out = (int64_t)hp->n_head_kv * hp->head_dim, v_out = (int64_t)hp->n_head_kv * hp->head_dim_v;
    char n[96];
    hearth_status st;
    bool linear = hearth_hparams_is_linear(hp, il);
    /* llama.cpp names the pre-ffn norm post_attention_norm in gpt-oss and the hybrids */
    bool post_name = hp->arch == HEARTH_ARCH_GPT_OSS || is_hybrid(hp->arch);
#define NAME(s) (snprintf(n, sizeof n, "blk.%d." s, il), n)
    if ((st = bind_vec(L, NAME("attn_norm.weight"), E, true, &l->attn_norm)) ||
        (st = bind_vec(L, post_name ? NAME("post_attention_norm.weight") : NAME("ffn_norm.weight"),
                       E, !hp->post_norms, &l->ffn_norm)))
        return st;
    if (linear) {
        const hearth_lin_src src = {L, L->err, &L->m->arena, lin_mat, lin_vec, lin_conv};
        if ((st = hearth_linear_bind(&src, HEARTH_LIN_GGUF, L->m, NULL, il))) return st;
    } else if ((st = bind_mat(L, NAME("attn_q.weight"), E, hp->attn_out_gate ? 2 * q_out : q_out, true, &l->wq)) ||
               (st = bind_mat(L, NAME("attn_k.weight"), E, k_out, true, &l->wk)) ||
               (st = bind_mat(L, NAME("attn_v.weight"), E, v_out, true, &l->wv)) ||
               (st = bind_mat(L, NAME("attn_output.weight"), (int64_t)hp->n_head * hp->head_dim_v, E, true,
                              &l->wo))) {
        return st;
    }
    if (hp->arch == HEARTH_ARCH_GPT_OSS && /* llama.cpp names the pre-ffn norm post_attention_norm */
        ((st = bind_vec(L, NAME("attn_output.bias"), E, true, &l->bo)) ||
         (st = bind_vec(L, NAME("attn_sinks.weight"), hp->n_head, true, &l->sinks))))
        return st;
    /* a mixture-of-experts layer (qwen3moe): the router ffn_gate_inp and the experts stacked
     * in 3-D tensors, instead of the MLP */
    if (hp->n_expert > 0 && hearth_gguf_find_tensor(L->m->gguf, NAME("ffn_gate_inp.weight"))) {
        int64_t NE = hp->n_expert, I = hp->n_ff_exp;
        l->exp_stride = I;
        if ((st = bind_mat(L, NAME("ffn_gate_inp.weight"), E, NE, true, &l->router))) return st;
        static const char *const exps[3] = {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"};
        hearth_weight *ew[3] = {&l->exp_gate, &l->exp_up, &l->exp_down};
        for (int k = 0; k < 3; k++) {
            int64_t in = k == 2 ? I : E, rows = k == 2 ? E : I;
            snprintf(n, sizeof n, "blk.%d.%s.weight", il, exps[k]);
            const hearth_gguf_tensor *t = hearth_gguf_find_tensor(L->m->gguf, n);
            if ((st = t && t->type == 39 ? bind_exps_mxfp4(L, t, in, rows, NE, ew[k]) /* GGML_TYPE_MXFP4 */
                                         : bind_exps(L, n, in, rows, NE, ew[k])))
                return st;
        }
        if (hp->arch == HEARTH_ARCH_GPT_OSS &&
            ((st = bind_vec(L, NAME("ffn_gate_inp.bias"), NE, true, &l->router_b)) ||
             (st = bind_vec(L, NAME("ffn_gate_exps.bias"), NE * I, true, &l->exp_gate_b)) ||
             (st = bind_vec(L, NAME("ffn_up_exps.bias"), NE * I, true, &l->exp_up_b)) ||
             (st = bind_vec(L, NAME("ffn_down_exps.bias"), NE * E, true, &l->exp_down_b))))
            return st;
        if (hp->n_ff_shexp > 0 && /* the shared expert and its gate's logit row */
            ((st = bind_mat(L, NAME("ffn_gate_shexp.weight"), E, hp->n_ff_shexp, true, &l->sh_gate)) ||
             (st = bind_mat(L, NAME("ffn_up_shexp.weight"), E, hp->n_ff_shexp, true, &l->sh_up)) ||
             (st = bind_mat(L, NAME("ffn_down_shexp.weight"), hp->n_ff_shexp, E, true, &l->sh_down)) ||
             (st = bind_mat(L, NAME("ffn_gate_inp_shexp.weight"), E, 1, true, &l->sh_gate_inp))))
            return st;
    } else if ((st = bind_mat(L, NAME("ffn_gate.weight"), E, hp->n_ff, true, &l->w_gate)) ||
               (st = bind_mat(L, NAME("ffn_up.weight"), E, hp->n_ff, true, &l->w_up)) ||
               (st = bind_mat(L, NAME("ffn_down.weight"), hp->n_ff, E, true, &l->w_down))) {
        return st;
    }
    if (hp->qkv_bias &&
        ((st = bind_vec(L, NAME("attn_q.bias"), q_out, true, &l->bq)) ||
         (st = bind_vec(L, NAME("attn_k.bias"), k_out, true, &l->bk)) ||
         (st = bind_vec(L, NAME("attn_v.bias"), v_out, true, &l->bv))))
        return st;
    if (hp->qk_norm && !linear &&
        ((st = bind_vec(L, NAME("attn_q_norm.weight"), hp->head_dim, true, &l->q_norm)) ||
         (st = bind_vec(L, NAME("attn_k_norm.weight"), hp->head_dim, true, &l->k_norm))))
        return st;
    if (hp->post_norms) {
        /* gemma: the pre-ffn norm is called ffn_norm in GGUF, the post ones have their own names */
        if ((st = bind_vec(L, NAME("post_attention_norm.weight"), E, true, &l->post_attn_norm)) ||
            (st = bind_vec(L, NAME("post_ffw_norm.weight"), E, true, &l->post_ffn_norm)))
            return st;
        if (!l->ffn_norm) return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "missing tensor '%s'",
                                                NAME("ffn_norm.weight"));
    }
#undef NAME
    return HEARTH_OK;
}

static void describe_quant(hearth_model *m) {
    int64_t counts[HEARTH_TYPE_COUNT] = {0};
    size_t bytes = 0;
    for (int64_t i = 0; i < hearth_gguf_n_tensors(m->gguf); i++) {
        const hearth_gguf_tensor *t = hearth_gguf_tensor_at(m->gguf, i);
        if ((unsigned)t->type < HEARTH_TYPE_COUNT) counts[t->type]++;
        bytes += t->n_bytes;
    }
    m->weight_bytes = bytes;
    size_t off = 0;
    m->quant_desc[0] = 0;
    for (int pass = 0; pass < HEARTH_TYPE_COUNT; pass++) {
        /* most frequent first */
        int best = -1;
        for (int t = 0; t < HEARTH_TYPE_COUNT; t++)
            if (counts[t] > 0 && (best < 0 || counts[t] > counts[best])) best = t;
        if (best < 0) break;
        int w = snprintf(m->quant_desc + off, sizeof m->quant_desc - off, "%s%s (%lld)", off ? ", " : "",
                         hearth_type_name(best), (long long)counts[best]);
        if (w < 0 || (size_t)w >= sizeof m->quant_desc - off) break;
        off += (size_t)w;
        counts[best] = 0;
    }
}

static bool is_hf_checkpoint(const char *path) {
    struct stat st;
    size_t n = strlen(path);
    return (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) ||
           (n > 12 && !strcmp(path + n - 12, ".safetensors"));
}

hearth_status hearth_model_load(const char *path, hearth_model **out, hearth_err *err) {
    *out = NULL;
    hearth_kernels_init();
    if (is_hf_checkpoint(path)) return hearth_model_load_st(path, out, err);
    hearth_model *m = calloc(1, sizeof *m);
    if (!m) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    hearth_arena_init(&m->arena, 0);
    loader L = {m, NULL, err};
    hearth_status st = hearth_gguf_open(path, &m->gguf, err);
    if (st) goto fail;
    hearth_span arch = {0};
    if (!hearth_gguf_get_str(m->gguf, "general.architecture", &arch)) {
        st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "missing metadata key general.architecture");
        goto fail;
    }
    char *arch_name = hearth_arena_strndup(&m->arena, arch.ptr, arch.len);
    const hearth_arch_info *ai = arch_name ? hearth_arch_by_gguf_name(arch_name) : NULL;
    if (!ai) {
        st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "model architecture '%.*s' is not supported "
                            "(supported: llama, qwen2, qwen3, qwen3moe, gpt-oss, gemma3, qwen35, qwen35moe, qwen3next)", (int)arch.len, arch.ptr);
        goto fail;
    }
    L.arch = arch_name;
    if ((st = read_hparams(&L, ai))) goto fail;
    hearth_hparams *hp = &m->hp;

    if ((st = bind_mat(&L, "token_embd.weight", hp->n_embd, 0, true, &m->tok_embd))) goto fail;
    if (m->tok_embd.ne1 <= 0 || m->tok_embd.ne1 > (1 << 24)) {
        st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "token_embd.weight has %lld rows",
                            (long long)m->tok_embd.ne1);
        goto fail;
    }
    hp->n_vocab = (int32_t)m->tok_embd.ne1;
    if ((st = bind_vec(&L, "output_norm.weight", hp->n_embd, true, &m->output_norm))) goto fail;
    if ((st = bind_mat(&L, "output.weight", hp->n_embd, hp->n_vocab, false, &m->output))) goto fail;
    if (!m->output.data) m->output = m->tok_embd; /* tied embeddings */
    m->layers = hearth_arena_calloc(&m->arena, (size_t)hp->n_layer, sizeof *m->layers);
    if (!m->layers) {
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        goto fail;
    }
    for (int il = 0; il < hp->n_layer; il++)
        if ((st = bind_layer(&L, il))) goto fail;

    if ((st = hearth_tok_from_gguf(m->gguf, &m->tok, err))) goto fail;
    if (hearth_tok_n_vocab(m->tok) > hp->n_vocab) {
        st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "vocabulary has %d tokens but token_embd has %d rows",
                            hearth_tok_n_vocab(m->tok), hp->n_vocab);
        goto fail;
    }
    hearth_span s;
    if (hearth_gguf_get_str(m->gguf, "general.name", &s)) m->name = hearth_arena_strndup(&m->arena, s.ptr, s.len);
    if (!m->name) {
        const char *slash = strrchr(path, '/');
        m->name = hearth_arena_strndup(&m->arena, slash ? slash + 1 : path, strlen(slash ? slash + 1 : path));
    }
    if (hearth_gguf_get_str(m->gguf, "tokenizer.chat_template", &s))
        m->chat_template = hearth_arena_strndup(&m->arena, s.ptr, s.len);
    describe_quant(m);
    m->gen.bos = hearth_tok_bos(m->tok);
    hearth_gen_add_eos(&m->gen, hearth_tok_eos(m->tok));
    *out = m;
    return HEARTH_OK;
fail:
    hearth_model_destroy(m);
    return st;
}

void hearth_model_destroy(hearth_model *m) {
    if (!m) return;
    hearth_tok_destroy(m->tok);
    hearth_gguf_close(m->gguf);
    hearth_st_close(m->st);
    hearth_arena_fini(&m->arena);
    free(m);
}

const hearth_hparams *hearth_model_hparams(const hearth_model *m) { return &m->hp; }
const hearth_tok *hearth_model_tok(const hearth_model *m) { return m->tok; }
const char *hearth_model_name(const hearth_model *m) { return m->name ? m->name : "model"; }
const char *hearth_model_chat_template(const hearth_model *m) { return m->chat_template; }
size_t hearth_model_weight_bytes(const hearth_model *m) { return m->weight_bytes; }
const char *hearth_model_quant_desc(const hearth_model *m) { return m->quant_desc; }
const hearth_gen_defaults *hearth_model_gen_defaults(const hearth_model *m) { return &m->gen; }
