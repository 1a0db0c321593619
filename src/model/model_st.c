/*
 * model_st.c - load a Hugging Face checkpoint: config.json through hf_config.c, weights from
 * *.safetensors by their transformers names, tokenizer.json (or a SentencePiece tokenizer.model
 * alone), tokenizer_config.json /
 * chat_template.jinja, generation_config.json.
 *
 * Weights: f32, f16 and bf16 matrices are used in place in the mapping (copied only when the
 * writer left them unaligned for their element size). A module with "<name>.scales" is MLX
 * affine quantized: its uint32 "weight", "scales" and "biases" are repacked row by row into
 * hearth's MLX block types (tensor/quant.h), with bits and group size taken from the shapes and
 * checked against config.json's "quantization" (the default and per-module overrides). Norm
 * and bias vectors become f32 copies; Gemma's RMSNorm weights get their + 1 here, as GGUF
 * stores them. Phi-3's fused qkv_proj and gate_up_proj are bound once and cut into row views.
 * Gemma 4's experts are 3-D [expert][out][in] tensors, bound as matrices of expert x out rows:
 * transformers' float gate_up_proj / down_proj, or mlx-lm's switch_glu gate / up / down, MLX
 * quantized (the same triple with a leading expert dimension) or float. Qwen3 MoE's experts
 * come in those stacked layouts too, or one module per expert (the released checkpoints), then
 * stacked into one arena copy per projection at load. Gated DeltaNet layers (Qwen3.5,
 * Qwen3-Next) are bound by model_linear.c, which the GGUF loader shares.
 * As in model.c, a missing or misshapen tensor is a load error that names it.
 */
#include "model/model_internal.h"
#include "model/model_linear.h"
#include "model/mxfp4.h"

#include "base/file.h"
#include "base/size.h"
#include "kernels/kernels.h"
#include "tensor/quant.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { MAX_CONFIG_BYTES = 4 << 20, MAX_TOKENIZER_BYTES = 256 << 20 };

typedef struct {
    hearth_model     *m;
    hearth_hf_config *cfg;
    hearth_err       *err;
    const char       *pfx;   /* "model.", "model.language_model.", "language_model.model." */
    int64_t           n_by_type[HEARTH_TYPE_COUNT];
} loader;

static float elem_f32(hearth_st_dtype dt, const uint8_t *p) {
    if (dt == HEARTH_ST_F32) {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, p, 2);
    return dt == HEARTH_ST_F16 ? hearth_fp16_to_fp32(h) : hearth_bf16_to_fp32(h);
}

static bool float_dtype(hearth_st_dtype dt) {
    return dt == HEARTH_ST_F32 || dt == HEARTH_ST_F16 || dt == HEARTH_ST_BF16;
}

/* An MLX triple weight/scales/biases of module mod into w: [out][in] of an MLX block type. With
 * n_exp > 0 the triple is 3-D, [n_exp][out][..] (mlx-lm's stacked experts), and w has
 * n_exp * out rows, expert e's from row e * out on. */
static hearth_status bind_mlx(loader *L, const char *mod, const hearth_st_tensor *t, const hearth_st_tensor *sc,
                              int64_t n_exp, int64_t in, int64_t out, hearth_weight *w) {
    char name[192];
    snprintf(name, sizeof name, "%s.biases", mod);
    const hearth_st_tensor *bi = hearth_st_find(L->m->st, name);
    if (!bi) return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "missing tensor '%s'", name);
    int nd = n_exp > 0 ? 3 : 2;
    char lead_s[32] = ""; /* "n_exp, " in the shapes of messages */
    if (n_exp > 0) snprintf(lead_s, sizeof lead_s, "%lld, ", (long long)n_exp);
    int64_t lead = n_exp > 0 && t->n_dims == 3 ? t->shape[0] : 1;
    int64_t rows = t->n_dims == nd ? t->shape[nd - 2] : -1, words = t->n_dims == nd ? t->shape[nd - 1] : 0;
    if (t->dtype != HEARTH_ST_U32 || rows <= 0 || (out > 0 && rows != out) || words <= 0 ||
        (n_exp > 0 && lead != n_exp))
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "tensor '%s.weight' is %s in %d dims, expected packed U32 "
                              "[%s%lld, ..]", mod, hearth_st_dtype_name(t->dtype), t->n_dims, lead_s, (long long)out);
    int bits = words * 32 % in == 0 ? (int)(words * 32 / in) : 0;
    int64_t n_groups = sc->n_dims == nd ? sc->shape[nd - 1] : 0;
    int g = n_groups > 0 && in % n_groups == 0 ? (int)(in / n_groups) : 0;
    int type = hearth_type_mlx(bits, g);
    if (type < 0)
        return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "tensor '%s.weight' packs %lld inputs as %d bits in "
                              "groups of %d; hearth runs 4 or 8 bits in groups of 32 or 64",
                              mod, (long long)in, bits, g);
    bool same = float_dtype(sc->dtype) && bi->dtype == sc->dtype && bi->n_dims == nd;
    for (int d = 0; same && d < nd; d++) /* [lead,] rows, n_groups */
        same = sc->shape[d] == (d == nd - 1 ? n_groups : d == nd - 2 ? rows : lead) && bi->shape[d] == sc->shape[d];
    if (!same)
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "tensors '%s.scales' / '%s.biases' do not match [%s%lld, %lld] "
                              "of one float type", mod, mod, lead_s, (long long)rows, (long long)n_groups);
    hearth_mlx_quant q = hearth_hf_config_quant_of(L->cfg, mod);
    if (L->cfg->quant.bits && (q.bits != bits || q.group_size != g))
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "tensor '%s.weight' is %d-bit group %d but config.json "
                              "says %d-bit group %d", mod, bits, g, q.bits, q.group_size);
    rows *= lead; /* experts: their rows one after another, as the tensors lie in memory */
    size_t row_bytes = hearth_row_size((hearth_type)type, in), total;
    if (!hearth_mul_size(row_bytes, (size_t)rows, &total))
        return hearth_err_set(L->err, HEARTH_E_LIMIT, -1, "tensor '%s.weight' is too large", mod);
    uint8_t *dst = hearth_arena_alloc_aligned(&L->m->arena, total, 64);
    if (!dst) return hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory repacking '%s.weight'", mod);
    size_t es = hearth_st_dtype_size(sc->dtype), q_bytes = (size_t)(g * bits / 8);
    const uint8_t *src = t->data, *ps = sc->data, *pb = bi->data;
    for (int64_t r = 0; r < rows; r++) {
        uint8_t *row = dst + (size_t)r * row_bytes;
        for (int64_t k = 0; k < n_groups; k++) {
            size_t ik = (size_t)(r * n_groups + k);
            float s = elem_f32(sc->dtype, ps + ik * es), b = elem_f32(sc->dtype, pb + ik * es);
            uint8_t *blk = row + (size_t)k * (HEARTH_MLX_BLOCK_HDR + q_bytes);
            memcpy(blk, &s, 4);
            memcpy(blk + 4, &b, 4);
            memcpy(blk + 8, src + (size_t)r * (size_t)words * 4 + (size_t)k * q_bytes, q_bytes);
        }
    }
    *w = (hearth_weight){.type = (hearth_type)type, .ne0 = in, .ne1 = rows, .row_bytes = row_bytes, .data = dst};
    L->n_by_type[type]++;
    return HEARTH_OK;
}

/* Bind the matrix of module mod ("model.layers.0.self_attn.q_proj"): [out][in] (out 0 = any). */
static hearth_status bind_mat(loader *L, const char *mod, int64_t in, int64_t out, bool required, hearth_weight *w) {
    memset(w, 0, sizeof *w);
    char name[192];
    snprintf(name, sizeof name, "%s.weight", mod);
    const hearth_st_tensor *t = hearth_st_find(L->m->st, name);
    if (!t) {
        if (!required) return HEARTH_OK;
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "missing tensor '%s'", name);
    }
    snprintf(name, sizeof name, "%s.scales", mod);
    const hearth_st_tensor *sc = hearth_st_find(L->m->st, name);
    if (sc) return bind_mlx(L, mod, t, sc, 0, in, out, w);
    int type = hearth_st_dtype_to_type(t->dtype);
    const hearth_kernel_traits *kt = type >= 0 ? hearth_kernels_traits((hearth_type)type) : NULL;
    if (!kt || !kt->vec_dot)
        return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "tensor '%s.weight' has dtype %s, which hearth cannot "
                              "multiply", mod, hearth_st_dtype_name(t->dtype));
    if (t->n_dims != 2 || t->shape[1] != in || (out > 0 && t->shape[0] != out) || t->shape[0] <= 0)
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "tensor '%s.weight' has shape [%lld, %lld], expected [%lld, %lld]",
                              mod, (long long)t->shape[0], (long long)(t->n_dims > 1 ? t->shape[1] : 0),
                              (long long)out, (long long)in);
    const void *data = t->data;
    size_t es = hearth_st_dtype_size(t->dtype);
    if ((uintptr_t)data % es) { /* an unpadded header: copy to an aligned home */
        void *copy = hearth_arena_alloc_aligned(&L->m->arena, t->n_bytes, 64);
        if (!copy) return hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory copying '%s.weight'", mod);
        memcpy(copy, data, t->n_bytes);
        data = copy;
    }
    *w = (hearth_weight){.type = (hearth_type)type, .ne0 = in, .ne1 = t->shape[0],
                         .row_bytes = (size_t)in * es, .data = data};
    L->n_by_type[type]++;
    return HEARTH_OK;
}

/* Rows [r0, r0 + n) of w as a weight of its own (Phi-3's fused projections). */
static hearth_weight rows_of(const hearth_weight *w, int64_t r0, int64_t n) {
    hearth_weight v = *w;
    v.ne1 = n;
    v.data = (const uint8_t *)w->data + (size_t)r0 * w->row_bytes;
    return v;
}

/* A vector of n floats as an f32 copy (plus_one: Gemma's 1 + w). */
static hearth_status bind_vec(loader *L, const char *name, int64_t n, bool required, bool plus_one,
                              const float **out) {
    *out = NULL;
    const hearth_st_tensor *t = hearth_st_find(L->m->st, name);
    if (!t) {
        if (!required) return HEARTH_OK;
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "missing tensor '%s'", name);
    }
    if (t->n_dims != 1 || t->shape[0] != n || !float_dtype(t->dtype))
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "tensor '%s' is %s with %lld elements in %d dims, expected "
                              "%lld floats", name, hearth_st_dtype_name(t->dtype), (long long)t->n_elem, t->n_dims,
                              (long long)n);
    float *v = hearth_arena_alloc_aligned(&L->m->arena, (size_t)n * sizeof(float), 64);
    if (!v) return hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory loading '%s'", name);
    size_t es = hearth_st_dtype_size(t->dtype);
    for (int64_t i = 0; i < n; i++) {
        v[i] = elem_f32(t->dtype, (const uint8_t *)t->data + (size_t)i * es);
        if (plus_one) v[i] = 1.0f + v[i];
    }
    *out = v;
    return HEARTH_OK;
}

static hearth_status bind_moe_qwen3(loader *L, int il);
static hearth_status bind_moe_gpt_oss(loader *L, int il);

/* The weight source model_linear.c binds a gated DeltaNet layer through. */
static hearth_status lin_mat(void *ctx, const char *mod, int64_t in, int64_t out, hearth_weight *w) {
    return bind_mat(ctx, mod, in, out, true, w);
}

static hearth_status lin_vec(void *ctx, const char *name, int64_t n, const float **out) {
    return bind_vec(ctx, name, n, true, false, out);
}

/* conv1d.weight [rows][1][cols], float */
static hearth_status lin_conv(void *ctx, const char *name, int64_t rows, int64_t cols, const float **out) {
    loader *L = ctx;
    const hearth_st_tensor *t = hearth_st_find(L->m->st, name);
    if (!t) return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "missing tensor '%s'", name);
    if (t->n_dims != 3 || t->shape[0] != rows || t->shape[1] != 1 || t->shape[2] != cols || !float_dtype(t->dtype))
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "tensor '%s' is %s in %d dims, expected float [%lld, 1, "
                              "%lld]", name, hearth_st_dtype_name(t->dtype), t->n_dims, (long long)rows, (long long)cols);
    float *w = hearth_arena_alloc_aligned(&L->m->arena, (size_t)(rows * cols) * sizeof(float), 64);
    if (!w) return hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory loading '%s'", name);
    size_t es = hearth_st_dtype_size(t->dtype);
    for (int64_t i = 0; i < rows * cols; i++) w[i] = elem_f32(t->dtype, (const uint8_t *)t->data + (size_t)i * es);
    *out = w;
    return HEARTH_OK;
}

static hearth_status bind_linear(loader *L, int il) {
    const hearth_lin_src src = {L, L->err, &L->m->arena, lin_mat, lin_vec, lin_conv};
    return hearth_linear_bind(&src, HEARTH_LIN_HF, L->m, L->pfx, il);
}

static hearth_status bind_layer(loader *L, int il) {
    const hearth_hparams *hp = &L->m->hp;
    const hearth_hf_config *c = L->cfg;
    hearth_layer *l = &L->m->layers[il];
    int64_t E = hp->n_embd, q_out = (int64_t)hp->n_head * hp->head_dim,
            k_out = (int64_t)hp->n_head_kv * hp->head_dim, v_out = (int64_t)hp->n_head_kv * hp->head_dim_v;
    bool p1 = c->norm_plus_one;
    char n[192];
    hearth_status st;
#define NAME(s) (snprintf(n, sizeof n, "%slayers.%d." s, L->pfx, il), n)
    bool routed = hearth_hf_config_moe_layer(c, il); /* Qwen3 MoE: experts instead of the MLP */
    bool linear = hearth_hparams_is_linear(hp, il);   /* a gated DeltaNet instead of attention */
    if (hp->attn_out_gate) q_out *= 2;                 /* each head's query, then its gate */
    if ((st = bind_vec(L, NAME("input_layernorm.weight"), E, true, p1, &l->attn_norm)) ||
        (linear && (st = bind_linear(L, il))) ||
        (!linear && (st = bind_mat(L, NAME("self_attn.o_proj"), (int64_t)hp->n_head * hp->head_dim_v, E, true, &l->wo))) ||
        (routed && (st = hp->arch == HEARTH_ARCH_GPT_OSS ? bind_moe_gpt_oss(L, il) : bind_moe_qwen3(L, il))) ||
        (routed && hp->n_ff_shexp > 0 &&
         ((st = bind_mat(L, NAME("mlp.shared_expert.gate_proj"), E, hp->n_ff_shexp, true, &l->sh_gate)) ||
          (st = bind_mat(L, NAME("mlp.shared_expert.up_proj"), E, hp->n_ff_shexp, true, &l->sh_up)) ||
          (st = bind_mat(L, NAME("mlp.shared_expert.down_proj"), hp->n_ff_shexp, E, true, &l->sh_down)) ||
          (st = bind_mat(L, NAME("mlp.shared_expert_gate"), E, 1, true, &l->sh_gate_inp)))) ||
        (!routed && (st = bind_mat(L, NAME("mlp.down_proj"), hp->n_ff, E, true, &l->w_down))))
        return st;
    if (c->fused_qkv) {
        hearth_weight qkv, gu;
        if ((st = bind_mat(L, NAME("self_attn.qkv_proj"), E, q_out + k_out + v_out, true, &qkv)) ||
            (st = bind_mat(L, NAME("mlp.gate_up_proj"), E, 2 * (int64_t)hp->n_ff, true, &gu)))
            return st;
        l->wq = rows_of(&qkv, 0, q_out);
        l->wk = rows_of(&qkv, q_out, k_out);
        l->wv = rows_of(&qkv, q_out + k_out, v_out);
        l->w_gate = rows_of(&gu, 0, hp->n_ff);
        l->w_up = rows_of(&gu, hp->n_ff, hp->n_ff);
    } else if ((!linear && (st = bind_mat(L, NAME("self_attn.q_proj"), E, q_out, true, &l->wq))) ||
               (!linear && (st = bind_mat(L, NAME("self_attn.k_proj"), E, k_out, true, &l->wk))) ||
               (!linear && (st = bind_mat(L, NAME("self_attn.v_proj"), E, v_out, true, &l->wv))) ||
               (!routed && (st = bind_mat(L, NAME("mlp.gate_proj"), E, hp->n_ff, true, &l->w_gate))) ||
               (!routed && (st = bind_mat(L, NAME("mlp.up_proj"), E, hp->n_ff, true, &l->w_up)))) {
        return st;
    }
    if (hp->qkv_bias &&
        ((st = bind_vec(L, NAME("self_attn.q_proj.bias"), q_out, true, false, &l->bq)) ||
         (st = bind_vec(L, NAME("self_attn.k_proj.bias"), k_out, true, false, &l->bk)) ||
         (st = bind_vec(L, NAME("self_attn.v_proj.bias"), v_out, true, false, &l->bv))))
        return st;
    if (c->attn_out_bias && (st = bind_vec(L, NAME("self_attn.o_proj.bias"), E, true, false, &l->bo))) return st;
    if (hp->attn_sinks && (st = bind_vec(L, NAME("self_attn.sinks"), hp->n_head, true, false, &l->sinks))) return st;
    if (hp->qk_norm && !linear &&
        ((st = bind_vec(L, NAME("self_attn.q_norm.weight"), hp->head_dim, true, p1, &l->q_norm)) ||
         (st = bind_vec(L, NAME("self_attn.k_norm.weight"), hp->head_dim, true, p1, &l->k_norm))))
        return st;
    if (hp->post_norms) {
        if ((st = bind_vec(L, NAME("post_attention_layernorm.weight"), E, true, p1, &l->post_attn_norm)) ||
            (st = bind_vec(L, NAME("pre_feedforward_layernorm.weight"), E, true, p1, &l->ffn_norm)) ||
            (st = bind_vec(L, NAME("post_feedforward_layernorm.weight"), E, true, p1, &l->post_ffn_norm)))
            return st;
    } else if ((st = bind_vec(L, NAME("post_attention_layernorm.weight"), E, true, p1, &l->ffn_norm))) {
        return st;
    }
#undef NAME
    return HEARTH_OK;
}

static hearth_status bind_moe(loader *L, int il);

/* Gemma 4's layer (hparams from hf_config.c's read_gemma4): its kind's head shape, no k/v
 * projections on a KV-shared layer, keys as values on full layers with attention_k_eq_v, its
 * own feed-forward width, the per-layer input gate and projection, the layer scalar. Norms
 * multiply directly (Gemma4RMSNorm has no + 1). */
static hearth_status bind_layer_gemma4(loader *L, int il) {
    const hearth_hparams *hp = &L->m->hp;
    hearth_layer *l = &L->m->layers[il];
    int64_t E = hp->n_embd, hd = hearth_hparams_head_dim(hp, il), P = hp->n_embd_ple;
    int64_t q_out = (int64_t)hp->n_head * hd, k_out = (int64_t)hearth_hparams_n_head_kv(hp, il) * hd;
    int64_t n_ff = hearth_hparams_n_ff(hp, il);
    char n[192];
    hearth_status st;
#define NAME(s) (snprintf(n, sizeof n, "%slayers.%d." s, L->pfx, il), n)
    if ((st = bind_vec(L, NAME("input_layernorm.weight"), E, true, false, &l->attn_norm)) ||
        (st = bind_vec(L, NAME("post_attention_layernorm.weight"), E, true, false, &l->post_attn_norm)) ||
        (st = bind_vec(L, NAME("pre_feedforward_layernorm.weight"), E, true, false, &l->ffn_norm)) ||
        (st = bind_vec(L, NAME("post_feedforward_layernorm.weight"), E, true, false, &l->post_ffn_norm)) ||
        (st = bind_mat(L, NAME("self_attn.q_proj"), E, q_out, true, &l->wq)) ||
        (st = bind_vec(L, NAME("self_attn.q_norm.weight"), hd, true, false, &l->q_norm)) ||
        (st = bind_mat(L, NAME("self_attn.o_proj"), q_out, E, true, &l->wo)) ||
        (st = bind_mat(L, NAME("mlp.gate_proj"), E, n_ff, true, &l->w_gate)) ||
        (st = bind_mat(L, NAME("mlp.up_proj"), E, n_ff, true, &l->w_up)) ||
        (st = bind_mat(L, NAME("mlp.down_proj"), n_ff, E, true, &l->w_down)))
        return st;
    if (hearth_hparams_kv_layer(hp, il) == il && hp->n_embd_backbone == 0) { /* an assistant has none */
        if ((st = bind_mat(L, NAME("self_attn.k_proj"), E, k_out, true, &l->wk)) ||
            (st = bind_vec(L, NAME("self_attn.k_norm.weight"), hd, true, false, &l->k_norm)))
            return st;
        if (hp->k_eq_v && !hearth_hparams_is_swa(hp, il)) l->wv = l->wk;
        else if ((st = bind_mat(L, NAME("self_attn.v_proj"), E, k_out, true, &l->wv))) return st;
    }
    if (P > 0 &&
        ((st = bind_mat(L, NAME("per_layer_input_gate"), E, P, true, &l->ple_gate)) ||
         (st = bind_mat(L, NAME("per_layer_projection"), P, E, true, &l->ple_proj)) ||
         (st = bind_vec(L, NAME("post_per_layer_input_norm.weight"), E, true, false, &l->ple_norm))))
        return st;
    if (hp->n_expert > 0 && (st = bind_moe(L, il))) return st;
    const float *scalar = NULL;
    if ((st = bind_vec(L, NAME("layer_scalar"), 1, false, false, &scalar))) return st;
    l->out_scale = scalar ? scalar[0] : 1.0f;
#undef NAME
    return HEARTH_OK;
}

/* The Gemma 4 assistant's own tensors (transformers' Gemma4AssistantForCausalLM):
 * pre_projection [n_embd][2 B] (B = n_embd_backbone) split into the views over its first and its
 * last B columns (so the forward needs no concatenated input; float rows only, where a view is a
 * row stride), post_projection [B][n_embd], and with centroid-masked logits
 * masked_embedding.centroids [n_centroids][n_embd] and .token_ordering [n_vocab] (integers, each
 * an id). */
static hearth_status bind_assistant(loader *L) {
    hearth_model *m = L->m;
    const hearth_hparams *hp = &m->hp;
    int64_t E = hp->n_embd, B = hp->n_embd_backbone, V = hp->n_vocab;
    hearth_weight pre;
    hearth_status st;
    if ((st = bind_mat(L, "pre_projection", 2 * B, E, true, &pre)) ||
        (st = bind_mat(L, "post_projection", E, B, true, &m->post_proj)))
        return st;
    size_t half = hearth_row_size(pre.type, B);
    if ((pre.type != HEARTH_TYPE_F32 && pre.type != HEARTH_TYPE_F16 && pre.type != HEARTH_TYPE_BF16) || half == 0 ||
        pre.row_bytes != 2 * half)
        return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "gemma4_assistant: pre_projection must be f32, f16 "
                              "or bf16 (it is %s)", hearth_type_name(pre.type));
    m->pre_proj_e = m->pre_proj_h = pre;
    m->pre_proj_e.ne0 = m->pre_proj_h.ne0 = B;
    m->pre_proj_h.data = (const char *)pre.data + half;
    if (hp->n_centroids == 0) return HEARTH_OK;
    if ((st = bind_mat(L, "masked_embedding.centroids", E, hp->n_centroids, true, &m->centroids))) return st;
    const char *name = "masked_embedding.token_ordering";
    const hearth_st_tensor *t = hearth_st_find(m->st, name);
    if (!t || t->n_dims != 1 || t->shape[0] != V || (t->dtype != HEARTH_ST_I64 && t->dtype != HEARTH_ST_I32))
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "gemma4_assistant: tensor '%s' must hold %lld integers",
                              name, (long long)V);
    int32_t *ord = hearth_arena_alloc_aligned(&m->arena, (size_t)V * sizeof(int32_t), 64);
    if (!ord) return hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory");
    for (int64_t i = 0; i < V; i++) {
        int64_t id;
        if (t->dtype == HEARTH_ST_I64) memcpy(&id, (const char *)t->data + i * 8, 8);
        else {
            int32_t v32;
            memcpy(&v32, (const char *)t->data + i * 4, 4);
            id = v32;
        }
        if (id < 0 || id >= V)
            return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "gemma4_assistant: token_ordering[%lld] = %lld is "
                                  "not a token id (0..%lld)", (long long)i, (long long)id, (long long)V - 1);
        ord[i] = (int32_t)id;
    }
    m->token_order = ord;
    return HEARTH_OK;
}

/* A 3-D float tensor [n][rows][in] of experts as one matrix of n * rows rows (f32/f16/bf16). */
static hearth_status bind_experts(loader *L, const char *name, int64_t n, int64_t rows, int64_t in, hearth_weight *w) {
    const hearth_st_tensor *t = hearth_st_find(L->m->st, name);
    if (!t) return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "missing tensor '%s'", name);
    int type = hearth_st_dtype_to_type(t->dtype);
    if (!float_dtype(t->dtype) || type < 0)
        return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "tensor '%s' has dtype %s; hearth runs experts in "
                              "f32, f16 or bf16", name, hearth_st_dtype_name(t->dtype));
    if (t->n_dims != 3 || t->shape[0] != n || t->shape[1] != rows || t->shape[2] != in)
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "tensor '%s' is not [%lld, %lld, %lld]", name, (long long)n,
                              (long long)rows, (long long)in);
    const void *data = t->data;
    size_t es = hearth_st_dtype_size(t->dtype);
    if ((uintptr_t)data % es) {
        void *copy = hearth_arena_alloc_aligned(&L->m->arena, t->n_bytes, 64);
        if (!copy) return hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory copying '%s'", name);
        memcpy(copy, data, t->n_bytes);
        data = copy;
    }
    *w = (hearth_weight){.type = (hearth_type)type, .ne0 = in, .ne1 = n * rows, .row_bytes = (size_t)in * es,
                         .data = data};
    L->n_by_type[type]++;
    return HEARTH_OK;
}

/* One stacked expert matrix in mlx-lm's layout, module mod ("...experts.switch_glu.up_proj"):
 * MLX quantized (with "<mod>.scales") or a float "<mod>.weight" [n][rows][in]. */
static hearth_status bind_switch(loader *L, const char *mod, int64_t n, int64_t rows, int64_t in, hearth_weight *w) {
    char wname[192], sname[192];
    snprintf(wname, sizeof wname, "%s.weight", mod);
    snprintf(sname, sizeof sname, "%s.scales", mod);
    const hearth_st_tensor *t = hearth_st_find(L->m->st, wname), *sc = hearth_st_find(L->m->st, sname);
    if (t && sc) return bind_mlx(L, mod, t, sc, n, in, rows, w);
    if (t && t->dtype == HEARTH_ST_U32) return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "missing tensor '%s'", sname);
    return bind_experts(L, wname, n, rows, in, w);
}

/* Gemma 4's mixture-of-experts block of layer il. The experts come in transformers' layout
 * (experts.gate_up_proj [NE][2I][E], experts.down_proj [NE][E][I], float) or mlx-lm's
 * (experts.switch_glu.{gate,up,down}_proj, each [NE][out][in], MLX quantized or float). */
static hearth_status bind_moe(loader *L, int il) {
    const hearth_hparams *hp = &L->m->hp;
    hearth_layer *l = &L->m->layers[il];
    int64_t E = hp->n_embd, NE = hp->n_expert, I = hp->n_ff_exp;
    char n[192];
    hearth_status st;
#define NAME(s) (snprintf(n, sizeof n, "%slayers.%d." s, L->pfx, il), n)
    if ((st = bind_mat(L, NAME("router.proj"), E, NE, true, &l->router)) ||
        (st = bind_vec(L, NAME("router.scale"), E, true, false, &l->router_scale)) ||
        (st = bind_vec(L, NAME("router.per_expert_scale"), NE, true, false, &l->expert_scale)) ||
        (st = bind_vec(L, NAME("post_feedforward_layernorm_1.weight"), E, true, false, &l->post_ffn_norm_1)) ||
        (st = bind_vec(L, NAME("pre_feedforward_layernorm_2.weight"), E, true, false, &l->pre_ffn_norm_2)) ||
        (st = bind_vec(L, NAME("post_feedforward_layernorm_2.weight"), E, true, false, &l->post_ffn_norm_2)))
        return st;
    if (hearth_st_find(L->m->st, NAME("experts.switch_glu.gate_proj.weight"))) {
        l->exp_stride = I;
        if ((st = bind_switch(L, NAME("experts.switch_glu.gate_proj"), NE, I, E, &l->exp_gate)) ||
            (st = bind_switch(L, NAME("experts.switch_glu.up_proj"), NE, I, E, &l->exp_up)) ||
            (st = bind_switch(L, NAME("experts.switch_glu.down_proj"), NE, E, I, &l->exp_down)))
            return st;
    } else {
        hearth_weight gu;
        if ((st = bind_experts(L, NAME("experts.gate_up_proj"), NE, 2 * I, E, &gu)) ||
            (st = bind_experts(L, NAME("experts.down_proj"), NE, E, I, &l->exp_down)))
            return st;
        l->exp_stride = 2 * I; /* expert e: gate rows from e * 2I, its up rows I further */
        l->exp_gate = gu;
        l->exp_up = rows_of(&gu, I, NE * 2 * I - I);
    }
#undef NAME
    return HEARTH_OK;
}

/* Experts stored one module each ("<pfx>.<e>.<proj>.weight", [rows][in], float: the layout of
 * the released Qwen3 MoE checkpoints), copied into one stacked matrix of n * rows rows in the
 * model arena; every expert must have the same dtype. */
static hearth_status bind_expert_list(loader *L, const char *pfx, const char *proj, int64_t n, int64_t rows,
                                      int64_t in, hearth_weight *w) {
    char name[192];
    uint8_t *dst = NULL;
    hearth_st_dtype dt = HEARTH_ST_F32;
    size_t per = 0;
    for (int64_t e = 0; e < n; e++) {
        snprintf(name, sizeof name, "%s.%lld.%s.weight", pfx, (long long)e, proj);
        const hearth_st_tensor *t = hearth_st_find(L->m->st, name);
        if (!t) return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "missing tensor '%s'", name);
        if (!float_dtype(t->dtype) || (e > 0 && t->dtype != dt))
            return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "tensor '%s' has dtype %s; hearth runs these "
                                  "experts in f32, f16 or bf16, one dtype for all", name, hearth_st_dtype_name(t->dtype));
        if (t->n_dims != 2 || t->shape[0] != rows || t->shape[1] != in)
            return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "tensor '%s' is not [%lld, %lld]", name, (long long)rows,
                                  (long long)in);
        if (e == 0) {
            dt = t->dtype;
            per = t->n_bytes;
            size_t total;
            if (!hearth_mul_size(per, (size_t)n, &total))
                return hearth_err_set(L->err, HEARTH_E_LIMIT, -1, "tensor '%s' is too large", name);
            if (!(dst = hearth_arena_alloc_aligned(&L->m->arena, total, 64)))
                return hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory stacking '%s'", name);
        }
        memcpy(dst + (size_t)e * per, t->data, per);
    }
    int type = hearth_st_dtype_to_type(dt);
    *w = (hearth_weight){.type = (hearth_type)type, .ne0 = in, .ne1 = n * rows,
                         .row_bytes = (size_t)in * hearth_st_dtype_size(dt), .data = dst};
    L->n_by_type[type]++;
    return HEARTH_OK;
}

/* Qwen3 MoE's routed feed-forward of layer il: the router mlp.gate [NE][E] and the experts in
 * one of three layouts: one module per expert (mlp.experts.<e>.{gate,up,down}_proj, the released
 * checkpoints), transformers' stacked mlp.experts.gate_up_proj [NE][2I][E] / down_proj
 * [NE][E][I], or mlx-lm's mlp.switch_mlp.{gate,up,down}_proj [NE][out][in] (MLX quantized or
 * float). */
static hearth_status bind_moe_qwen3(loader *L, int il) {
    const hearth_hparams *hp = &L->m->hp;
    hearth_layer *l = &L->m->layers[il];
    int64_t E = hp->n_embd, NE = hp->n_expert, I = hp->n_ff_exp;
    char n[192], pfx[160];
    hearth_status st;
#define NAME(s) (snprintf(n, sizeof n, "%slayers.%d." s, L->pfx, il), n)
    if ((st = bind_mat(L, NAME("mlp.gate"), E, NE, true, &l->router))) return st;
    l->exp_stride = I;
    if (hearth_st_find(L->m->st, NAME("mlp.switch_mlp.gate_proj.weight"))) {
        if ((st = bind_switch(L, NAME("mlp.switch_mlp.gate_proj"), NE, I, E, &l->exp_gate)) ||
            (st = bind_switch(L, NAME("mlp.switch_mlp.up_proj"), NE, I, E, &l->exp_up)) ||
            (st = bind_switch(L, NAME("mlp.switch_mlp.down_proj"), NE, E, I, &l->exp_down)))
            return st;
    } else if (hearth_st_find(L->m->st, NAME("mlp.experts.gate_up_proj"))) {
        hearth_weight gu;
        if ((st = bind_experts(L, NAME("mlp.experts.gate_up_proj"), NE, 2 * I, E, &gu)) ||
            (st = bind_experts(L, NAME("mlp.experts.down_proj"), NE, E, I, &l->exp_down)))
            return st;
        l->exp_stride = 2 * I; /* expert e: gate rows from e * 2I, its up rows I further */
        l->exp_gate = gu;
        l->exp_up = rows_of(&gu, I, NE * 2 * I - I);
    } else {
        snprintf(pfx, sizeof pfx, "%slayers.%d.mlp.experts", L->pfx, il);
        if ((st = bind_expert_list(L, pfx, "gate_proj", NE, I, E, &l->exp_gate)) ||
            (st = bind_expert_list(L, pfx, "up_proj", NE, I, E, &l->exp_up)) ||
            (st = bind_expert_list(L, pfx, "down_proj", NE, E, I, &l->exp_down)))
            return st;
    }
#undef NAME
    return HEARTH_OK;
}

/* A float or uint8 tensor of exactly the given shape (nd dims), or an error naming it. */
static const hearth_st_tensor *need_shape(loader *L, const char *name, bool is_u8, int nd, const int64_t *shape,
                                          hearth_status *st) {
    const hearth_st_tensor *t = hearth_st_find(L->m->st, name);
    if (!t) {
        *st = hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "missing tensor '%s'", name);
        return NULL;
    }
    bool ok = t->n_dims == nd && (is_u8 ? t->dtype == HEARTH_ST_U8 : float_dtype(t->dtype));
    for (int d = 0; ok && d < nd; d++) ok = t->shape[d] == shape[d];
    if (!ok) {
        char want[96] = "";
        for (int d = 0, o = 0; d < nd && o < (int)sizeof want; d++)
            o += snprintf(want + o, sizeof want - (size_t)o, "%s%lld", d ? ", " : "", (long long)shape[d]);
        *st = hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "tensor '%s' is %s in %d dims, expected %s [%s]", name,
                             hearth_st_dtype_name(t->dtype), t->n_dims, is_u8 ? "U8" : "float", want);
        return NULL;
    }
    return t;
}

/* gpt-oss expert matrices from a stack [NE][in][cols] used as x @ W (transformers' layout): the
 * columns c with c % split == part (split 2: gate and up interleaved; 1: all) become the rows of
 * w, [NE * cols / split][in], in the tensor's own float type, in the model arena. */
static hearth_status experts_transposed(loader *L, const hearth_st_tensor *t, int64_t NE, int64_t in, int64_t cols,
                                        int split, int part, hearth_weight *w) {
    size_t es = hearth_st_dtype_size(t->dtype);
    int64_t rows = cols / split;
    uint8_t *dst = hearth_arena_alloc_aligned(&L->m->arena, (size_t)(NE * rows * in) * es, 64);
    if (!dst) return hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory transposing '%s'", t->name);
    const uint8_t *src = t->data;
    for (int64_t e = 0; e < NE; e++)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t k = 0; k < in; k++)
                memcpy(dst + (size_t)((e * rows + r) * in + k) * es,
                       src + (size_t)((e * in + k) * cols + r * split + part) * es, es);
    int type = hearth_st_dtype_to_type(t->dtype);
    *w = (hearth_weight){.type = (hearth_type)type, .ne0 = in, .ne1 = NE * rows, .row_bytes = (size_t)in * es,
                         .data = dst};
    L->n_by_type[type]++;
    return HEARTH_OK;
}

/* gpt-oss MXFP4 experts <base>_blocks [NE][rows][in / 32][16] / <base>_scales [NE][rows][in / 32]:
 * the rows r with r % split == part, as bf16 [NE * rows / split][in] (mxfp4.h). */
static hearth_status experts_mxfp4(loader *L, const char *base, int64_t NE, int64_t rows, int64_t in, int split,
                                   int part, hearth_weight *w) {
    char bn[200], sn[200];
    hearth_status st = HEARTH_OK;
    snprintf(bn, sizeof bn, "%s_blocks", base);
    snprintf(sn, sizeof sn, "%s_scales", base);
    if (in % 32)
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "tensor '%s': %lld inputs are not whole blocks of 32", bn,
                              (long long)in);
    const int64_t bshape[4] = {NE, rows, in / 32, 16}, sshape[3] = {NE, rows, in / 32};
    const hearth_st_tensor *b = need_shape(L, bn, true, 4, bshape, &st);
    const hearth_st_tensor *sc = b ? need_shape(L, sn, true, 3, sshape, &st) : NULL;
    if (!b || !sc) return st;
    int64_t out_rows = rows / split;
    uint16_t *dst = hearth_arena_alloc_aligned(&L->m->arena, (size_t)(NE * out_rows * in) * 2, 64);
    if (!dst) return hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory reading '%s'", bn);
    for (int64_t e = 0; e < NE; e++)
        for (int64_t r = 0; r < out_rows; r++) {
            int64_t src = e * rows + r * split + part;
            hearth_mxfp4_row_to_bf16((const uint8_t *)b->data + src * (in / 32) * 16,
                                     (const uint8_t *)sc->data + src * (in / 32), in, dst + (e * out_rows + r) * in);
        }
    *w = (hearth_weight){.type = HEARTH_TYPE_BF16, .ne0 = in, .ne1 = NE * out_rows, .row_bytes = (size_t)in * 2,
                         .data = dst};
    L->n_by_type[HEARTH_TYPE_BF16]++;
    return HEARTH_OK;
}

/* Bias vectors [NE][cols]: the columns c with c % split == part, as f32 [NE][cols / split]. */
static hearth_status expert_bias(loader *L, const char *name, int64_t NE, int64_t cols, int split, int part,
                                 const float **out) {
    hearth_status st = HEARTH_OK;
    const int64_t shape[2] = {NE, cols};
    const hearth_st_tensor *t = need_shape(L, name, false, 2, shape, &st);
    if (!t) return st;
    float *v = hearth_arena_alloc_aligned(&L->m->arena, (size_t)(NE * cols / split) * sizeof(float), 64);
    if (!v) return hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory loading '%s'", name);
    size_t es = hearth_st_dtype_size(t->dtype);
    for (int64_t i = 0; i < NE * cols / split; i++)
        v[i] = elem_f32(t->dtype, (const uint8_t *)t->data + (size_t)(i * split + part) * es);
    *out = v;
    return HEARTH_OK;
}

/* gpt-oss's routed feed-forward of layer il: the router mlp.router (weight [NE][E], bias) and
 * the experts as transformers lays them out: mlp.experts.gate_up_proj [NE][E][2I] (x @ W; gate i
 * is column 2i, up i column 2i + 1), down_proj [NE][I][E], float, or the released checkpoints'
 * MXFP4 gate_up_proj_blocks / _scales ([NE][2I][..], rows interleaved alike) and down_proj_*
 * ([NE][E][..]), with their biases [NE][2I] and [NE][E]. Each becomes hearth's [out][in] rows
 * (float kept in its type, MXFP4 read as bf16), gate and up apart, copied into the model arena. */
static hearth_status bind_moe_gpt_oss(loader *L, int il) {
    const hearth_hparams *hp = &L->m->hp;
    hearth_layer *l = &L->m->layers[il];
    int64_t E = hp->n_embd, NE = hp->n_expert, I = hp->n_ff_exp;
    char n[192], base[192];
    hearth_status st;
#define NAME(s) (snprintf(n, sizeof n, "%slayers.%d." s, L->pfx, il), n)
    if ((st = bind_mat(L, NAME("mlp.router"), E, NE, true, &l->router)) ||
        (st = bind_vec(L, NAME("mlp.router.bias"), NE, true, false, &l->router_b)) ||
        (st = expert_bias(L, NAME("mlp.experts.gate_up_proj_bias"), NE, 2 * I, 2, 0, &l->exp_gate_b)) ||
        (st = expert_bias(L, NAME("mlp.experts.gate_up_proj_bias"), NE, 2 * I, 2, 1, &l->exp_up_b)) ||
        (st = expert_bias(L, NAME("mlp.experts.down_proj_bias"), NE, E, 1, 0, &l->exp_down_b)))
        return st;
    l->exp_stride = I;
    snprintf(base, sizeof base, "%slayers.%d.mlp.experts.", L->pfx, il);
    if (L->cfg->mxfp4) {
        char gu[220], dn[220];
        snprintf(gu, sizeof gu, "%sgate_up_proj", base);
        snprintf(dn, sizeof dn, "%sdown_proj", base);
        if ((st = experts_mxfp4(L, gu, NE, 2 * I, E, 2, 0, &l->exp_gate)) ||
            (st = experts_mxfp4(L, gu, NE, 2 * I, E, 2, 1, &l->exp_up)) ||
            (st = experts_mxfp4(L, dn, NE, E, I, 1, 0, &l->exp_down)))
            return st;
    } else {
        const int64_t gshape[3] = {NE, E, 2 * I}, dshape[3] = {NE, I, E};
        const hearth_st_tensor *gu = need_shape(L, NAME("mlp.experts.gate_up_proj"), false, 3, gshape, &st);
        if (!gu) return st;
        const hearth_st_tensor *dn = need_shape(L, NAME("mlp.experts.down_proj"), false, 3, dshape, &st);
        if (!dn) return st;
        if ((st = experts_transposed(L, gu, NE, E, 2 * I, 2, 0, &l->exp_gate)) ||
            (st = experts_transposed(L, gu, NE, E, 2 * I, 2, 1, &l->exp_up)) ||
            (st = experts_transposed(L, dn, NE, I, E, 1, 0, &l->exp_down)))
            return st;
    }
#undef NAME
    return HEARTH_OK;
}

/* Gemma 4's model-level per-layer input tensors. */
static hearth_status bind_ple(loader *L) {
    const hearth_hparams *hp = &L->m->hp;
    int64_t LP = (int64_t)hp->n_layer * hp->n_embd_ple;
    char n[192];
    hearth_status st;
    snprintf(n, sizeof n, "%sembed_tokens_per_layer", L->pfx);
    if ((st = bind_mat(L, n, LP, hp->n_vocab_ple, true, &L->m->ple_embd))) return st;
    snprintf(n, sizeof n, "%sper_layer_model_projection", L->pfx);
    if ((st = bind_mat(L, n, hp->n_embd, LP, true, &L->m->ple_model_proj))) return st;
    snprintf(n, sizeof n, "%sper_layer_projection_norm.weight", L->pfx);
    return bind_vec(L, n, hp->n_embd_ple, true, false, &L->m->ple_proj_norm);
}

/* "org/name" for a hub-cache snapshot folder (models--org--name/snapshots/rev), else the
 * folder's name. */
static char *name_of(hearth_arena *a, const char *dir) {
    const char *p = strstr(dir, "models--");
    const char *snap = p ? strstr(p, "/snapshots/") : NULL;
    if (p && snap) {
        p += 8;
        size_t n = (size_t)(snap - p);
        char *s = hearth_arena_strndup(a, p, n);
        char *dd = s ? strstr(s, "--") : NULL;
        if (dd) {
            dd[0] = '/';
            memmove(dd + 1, dd + 2, strlen(dd + 2) + 1);
        }
        return s;
    }
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    const char *b = dir + n;
    while (b > dir && b[-1] != '/') b--;
    return hearth_arena_strndup(a, b, (size_t)(dir + n - b));
}

/* A special token of tokenizer_config.json: "eos_token": "<x>" or {"content": "<x>"}. */
static int32_t config_token(const hearth_tok *tok, const cJSON *tc, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(tc, key);
    if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "content");
    return cJSON_IsString(v) ? hearth_tok_find(tok, v->valuestring, strlen(v->valuestring)) : -1;
}

/* Does dir hold a tokenizer (tokenizer.json or tokenizer.model)? */
static bool has_tokenizer(const char *dir) {
    char path[4200];
    struct stat sb;
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    if (stat(path, &sb) == 0) return true;
    snprintf(path, sizeof path, "%s/tokenizer.model", dir);
    return stat(path, &sb) == 0;
}

/* tokenizer.json, then tokenizer_config.json's special tokens and chat template, or
 * chat_template.jinja (which transformers writes in preference). */
static hearth_status load_tokenizer(loader *L, const char *dir) {
    hearth_model *m = L->m;
    char path[4200];
    size_t len = 0;
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    char *text = hearth_file_read(path, MAX_TOKENIZER_BYTES, &len);
    bool spm = false;
    if (!text) { /* a SentencePiece model alone */
        snprintf(path, sizeof path, "%s/tokenizer.model", dir);
        spm = (text = hearth_file_read(path, MAX_TOKENIZER_BYTES, &len)) != NULL;
    }
    if (!text)
        return hearth_err_set(L->err, HEARTH_E_NOTFOUND, -1, "'%.200s' has no readable tokenizer.json or "
                              "tokenizer.model", dir);
    hearth_status st = spm ? hearth_tok_from_spm_model(text, len, &m->tok, L->err)
                           : hearth_tok_from_json(text, len, &m->tok, L->err);
    free(text);
    if (st) return st;
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    text = hearth_file_read(path, MAX_CONFIG_BYTES, &len);
    cJSON *tc = text ? cJSON_ParseWithLength(text, len) : NULL;
    free(text);
    if (tc) {
        hearth_tok_set_eos(m->tok, config_token(m->tok, tc, "eos_token"));
        hearth_tok_set_bos(m->tok, config_token(m->tok, tc, "bos_token"));
        const cJSON *ct = cJSON_GetObjectItemCaseSensitive(tc, "chat_template");
        if (cJSON_IsArray(ct)) { /* [{"name": "default", "template": ...}, ...] */
            const cJSON *e, *pick = NULL;
            cJSON_ArrayForEach(e, ct) {
                const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
                if (cJSON_IsString(nm) && !strcmp(nm->valuestring, "default")) pick = e;
            }
            ct = pick ? cJSON_GetObjectItemCaseSensitive(pick, "template") : NULL;
        }
        if (cJSON_IsString(ct))
            m->chat_template = hearth_arena_strndup(&m->arena, ct->valuestring, strlen(ct->valuestring));
        cJSON_Delete(tc);
    }
    snprintf(path, sizeof path, "%s/chat_template.jinja", dir);
    text = hearth_file_read(path, MAX_CONFIG_BYTES, &len);
    if (text) {
        m->chat_template = hearth_arena_strndup(&m->arena, text, len);
        free(text);
    }
    return HEARTH_OK;
}

static void describe(loader *L) {
    hearth_model *m = L->m;
    for (int64_t i = 0; i < hearth_st_n_tensors(m->st); i++) m->weight_bytes += hearth_st_tensor_at(m->st, i)->n_bytes;
    size_t off = 0;
    m->quant_desc[0] = 0;
    for (;;) {
        int best = -1;
        for (int t = 0; t < HEARTH_TYPE_COUNT; t++)
            if (L->n_by_type[t] > 0 && (best < 0 || L->n_by_type[t] > L->n_by_type[best])) best = t;
        if (best < 0) break;
        int w = snprintf(m->quant_desc + off, sizeof m->quant_desc - off, "%s%s (%lld)", off ? ", " : "",
                         hearth_type_name(best), (long long)L->n_by_type[best]);
        if (w < 0 || (size_t)w >= sizeof m->quant_desc - off) break;
        off += (size_t)w;
        L->n_by_type[best] = 0;
    }
}

hearth_status hearth_model_load_st(const char *path, hearth_model **out, hearth_err *err) {
    *out = NULL;
    hearth_model *m = calloc(1, sizeof *m);
    hearth_hf_config *cfg = calloc(1, sizeof *cfg);
    char dir[4000];
    char *text = NULL;
    hearth_status st = HEARTH_OK;
    if (!m || !cfg) {
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        goto fail;
    }
    hearth_arena_init(&m->arena, 0);
    loader L = {.m = m, .cfg = cfg, .err = err};
    struct stat sb;
    snprintf(dir, sizeof dir, "%s", path);
    if (stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0;
        else snprintf(dir, sizeof dir, ".");
    }
    char file[4200];
    size_t len = 0;
    snprintf(file, sizeof file, "%s/config.json", dir);
    if (!(text = hearth_file_read(file, MAX_CONFIG_BYTES, &len))) {
        st = hearth_err_set(err, HEARTH_E_NOTFOUND, -1, "'%.200s' has no readable config.json", dir);
        goto fail;
    }
    if ((st = hearth_hf_config_parse(text, len, cfg, err))) goto fail;
    free(text);
    snprintf(file, sizeof file, "%s/generation_config.json", dir);
    if ((text = hearth_file_read(file, MAX_CONFIG_BYTES, &len)) && (st = hearth_hf_gen_config_parse(text, len, cfg, err))) goto fail;
    free(text);
    text = NULL;
    if ((st = hearth_st_open(path, &m->st, err))) goto fail;
    m->hp = cfg->hp;
    hearth_hparams *hp = &m->hp;

    static const char *const prefixes[] = {"model.", "model.language_model.", "language_model.model."};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0] && !L.pfx; i++) {
        snprintf(file, sizeof file, "%sembed_tokens.weight", prefixes[i]);
        if (hearth_st_find(m->st, file)) L.pfx = prefixes[i];
    }
    if (!L.pfx) {
        st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "missing tensor 'model.embed_tokens.weight'");
        goto fail;
    }
    snprintf(file, sizeof file, "%sembed_tokens", L.pfx);
    if ((st = bind_mat(&L, file, hp->n_embd, hp->n_vocab, true, &m->tok_embd))) goto fail;
    snprintf(file, sizeof file, "%snorm.weight", L.pfx);
    if ((st = bind_vec(&L, file, hp->n_embd, true, cfg->norm_plus_one, &m->output_norm))) goto fail;
    if (!cfg->tied) {
        const char *head = strncmp(L.pfx, "language_model.", 15) ? "lm_head" : "language_model.lm_head";
        if ((st = bind_mat(&L, head, hp->n_embd, hp->n_vocab, true, &m->output))) goto fail;
    } else {
        m->output = m->tok_embd;
    }
    m->layers = hearth_arena_calloc(&m->arena, (size_t)hp->n_layer, sizeof *m->layers);
    if (!m->layers) {
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        goto fail;
    }
    for (int il = 0; il < hp->n_layer; il++)
        if ((st = hp->arch == HEARTH_ARCH_GEMMA4 ? bind_layer_gemma4(&L, il) : bind_layer(&L, il))) goto fail;
    if (hp->n_embd_ple > 0 && (st = bind_ple(&L))) goto fail;
    if (hp->n_embd_backbone > 0 && (st = bind_assistant(&L))) goto fail;

    if (hp->n_embd_backbone > 0 && !has_tokenizer(dir)) { /* an assistant drafts in its target's vocabulary */
        m->name = name_of(&m->arena, dir);
        describe(&L);
        hearth_hf_config_fini(cfg);
        free(cfg);
        *out = m;
        return HEARTH_OK;
    }
    if ((st = load_tokenizer(&L, dir))) goto fail;
    if (hearth_tok_n_vocab(m->tok) > hp->n_vocab) {
        st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "tokenizer.json has %d tokens but the model %d",
                            hearth_tok_n_vocab(m->tok), hp->n_vocab);
        goto fail;
    }
    m->gen = cfg->gen;
    hearth_gen_add_eos(&m->gen, hearth_tok_eos(m->tok));
    for (int i = 0; i < m->gen.n_eos; i++) hearth_tok_mark_eog(m->tok, m->gen.eos[i]);
    if (hearth_tok_eos(m->tok) < 0 && m->gen.n_eos > 0) hearth_tok_set_eos(m->tok, m->gen.eos[0]);
    if (m->gen.bos < 0) m->gen.bos = hearth_tok_bos(m->tok);
    m->name = name_of(&m->arena, dir);
    describe(&L);
    hearth_hf_config_fini(cfg);
    free(cfg);
    *out = m;
    return HEARTH_OK;
fail:
    free(text);
    hearth_hf_config_fini(cfg);
    free(cfg);
    hearth_model_destroy(m);
    return st;
}
