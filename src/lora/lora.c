/*
 * lora.c - the adapter table every format fills (lora.h): module names, the checks against the
 * base model's layers, the room for the matrices, and the lookups the forward makes.
 *
 * The check is one place for all three formats, so that PEFT, mlx-lm and GGUF adapters are
 * refused with the same words: the tensor, the layer, the projection, and the shape the base
 * model has. Phi-3's fused projections are cut here (lora.h).
 */
#include "lora/lora.h"

#include "kernels/kernels.h"
#include "model/model_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const mod_names[HEARTH_LORA_N_MOD] = {"q_proj", "k_proj", "v_proj", "o_proj",
                                                         "gate_proj", "up_proj", "down_proj"};

const char *hearth_lora_mod_name(hearth_lora_mod mod) {
    return mod >= 0 && mod < HEARTH_LORA_N_MOD ? mod_names[mod] : "?";
}

bool hearth_lora_touches(const hearth_lora *a, hearth_lora_mod mod) {
    for (int32_t il = 0; il < a->n_layer; il++)
        if (a->mats[il][mod].r > 0) return true;
    return false;
}

static const hearth_weight *layer_weight(const hearth_layer *l, hearth_lora_mod mod) {
    switch (mod) {
    case HEARTH_LORA_Q: return &l->wq;
    case HEARTH_LORA_K: return &l->wk;
    case HEARTH_LORA_V: return &l->wv;
    case HEARTH_LORA_O: return &l->wo;
    case HEARTH_LORA_GATE: return &l->w_gate;
    case HEARTH_LORA_UP: return &l->w_up;
    case HEARTH_LORA_DOWN: return &l->w_down;
    default: return NULL;
    }
}

bool hearth_lora_to_f32(int type, const void *src, float *dst, int64_t n) {
    const uint8_t *p = src;
    switch (type) {
    case HEARTH_TYPE_F32: memcpy(dst, src, (size_t)n * sizeof(float)); return true;
    case HEARTH_TYPE_F16:
    case HEARTH_TYPE_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            dst[i] = type == HEARTH_TYPE_F16 ? hearth_fp16_to_fp32(h) : hearth_bf16_to_fp32(h);
        }
        return true;
    default: {
        const hearth_kernel_traits *tr = hearth_kernels_traits((hearth_type)type);
        if (!tr || !tr->to_float) return false;
        tr->to_float(src, dst, n);
        return true;
    }
    }
}

/* The projections a module name covers: one, or phi3's fused three / two. */
static int module_parts(const char *module, hearth_lora_mod *parts) {
    for (int i = 0; i < HEARTH_LORA_N_MOD; i++)
        if (!strcmp(module, mod_names[i])) {
            parts[0] = (hearth_lora_mod)i;
            return 1;
        }
    if (!strcmp(module, "qkv_proj")) {
        parts[0] = HEARTH_LORA_Q, parts[1] = HEARTH_LORA_K, parts[2] = HEARTH_LORA_V;
        return 3;
    }
    if (!strcmp(module, "gate_up_proj")) {
        parts[0] = HEARTH_LORA_GATE, parts[1] = HEARTH_LORA_UP;
        return 2;
    }
    return 0;
}

hearth_status hearth_lora_add(hearth_lora_builder *L, const char *name, int32_t il, const char *module, int64_t r,
                              int64_t n_in, int64_t n_out, float scale, bool half, float **a_out, float **b_out) {
    const hearth_hparams *hp = &L->m->hp;
    hearth_lora *a = L->a;
    hearth_lora_mod parts[3];
    int n_parts = module_parts(module, parts);
    if (n_parts == 0)
        return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "adapter tensor '%s' adapts '%s': hearth applies "
                              "adapters to q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj and down_proj (and "
                              "phi3's qkv_proj, gate_up_proj) only", name, module);
    if (n_parts > 1 && hp->arch != HEARTH_ARCH_PHI3)
        return hearth_err_set(L->err, HEARTH_E_INVALID, -1, "adapter tensor '%s' adapts a fused %s, which the base "
                              "model (not phi3) does not have", name, module);
    if (il < 0 || il >= hp->n_layer)
        return hearth_err_set(L->err, HEARTH_E_INVALID, -1, "adapter tensor '%s' is for layer %d but the base model "
                              "has %d layers", name, il, hp->n_layer);
    if (r <= 0 || r > HEARTH_LORA_MAX_RANK)
        return hearth_err_set(L->err, r <= 0 ? HEARTH_E_FORMAT : HEARTH_E_UNSUPPORTED, -1, "adapter tensor '%s' has "
                              "rank %lld; hearth takes ranks 1..%d", name, (long long)r, HEARTH_LORA_MAX_RANK);
    const hearth_layer *l = &L->m->layers[il];
    int64_t want_out = 0, want_in = -1;
    for (int i = 0; i < n_parts; i++) {
        const hearth_weight *w = layer_weight(l, parts[i]);
        if (!w->data)
            return hearth_err_set(L->err, HEARTH_E_INVALID, -1, "adapter tensor '%s': layer %d of the base model has "
                                  "no %s", name, il, mod_names[parts[i]]);
        if (a->mats[il][parts[i]].r)
            return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "adapter tensor '%s': layer %d's %s is adapted twice",
                                  name, il, mod_names[parts[i]]);
        want_out += w->ne1;
        want_in = w->ne0;
    }
    if (n_in != want_in || n_out != want_out)
        return hearth_err_set(L->err, HEARTH_E_INVALID, -1, "adapter tensor '%s' maps %lld inputs to %lld outputs but "
                              "layer %d's %s of the base model maps %lld to %lld: the adapter was made for another "
                              "base model", name, (long long)n_in, (long long)n_out, il, module, (long long)want_in,
                              (long long)want_out);
    size_t na = (size_t)r * (size_t)n_in, nb = (size_t)n_out * (size_t)r;
    hearth_arena *ar = half ? &L->staging : &a->arena;
    float *pa = hearth_arena_alloc_aligned(ar, na * sizeof(float), 64);
    float *pb = hearth_arena_alloc_aligned(ar, nb * sizeof(float), 64);
    if (!pa || !pb) return hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory loading adapter tensor '%s'", name);
    int64_t row0 = 0;
    for (int i = 0; i < n_parts; i++) {
        const hearth_weight *w = layer_weight(l, parts[i]);
        a->mats[il][parts[i]] = (hearth_lora_mat){.r = (int32_t)r, .n_in = n_in, .n_out = w->ne1, .scale = scale,
                                                  .half = half, .a32 = pa, .b32 = pb + row0 * r};
        if (!half) a->mats[il][parts[i]].a = pa, a->mats[il][parts[i]].b = pb + row0 * r;
        row0 += w->ne1;
        a->n_mats++;
    }
    if (r > a->max_rank) a->max_rank = (int32_t)r;
    if (!half) a->bytes += (na + nb) * sizeof(float);
    *a_out = pa;
    *b_out = pb;
    return HEARTH_OK;
}

bool hearth_lora_half_types(int type_a, int type_b) {
    return (type_a == HEARTH_TYPE_F16 || type_a == HEARTH_TYPE_BF16) &&
           (type_b == HEARTH_TYPE_F16 || type_b == HEARTH_TYPE_BF16);
}

/* dst = src rounded to f16; false when a value is beyond f16's range (or not a number). */
static bool round_f16(const float *src, uint16_t *dst, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        if (!(fabsf(src[i]) <= 65504.0f)) return false;
        dst[i] = hearth_fp32_to_fp16(src[i]);
    }
    return true;
}

hearth_status hearth_lora_finish(hearth_lora_builder *L) {
    hearth_lora *a = L->a;
    for (int32_t il = 0; il < a->n_layer; il++)
        for (int mod = 0; mod < HEARTH_LORA_N_MOD; mod++) {
            hearth_lora_mat *mt = &a->mats[il][mod];
            if (!mt->r || !mt->half) continue;
            size_t na = (size_t)mt->r * (size_t)mt->n_in, nb = (size_t)mt->n_out * (size_t)mt->r;
            for (int p = 0; p < mod; p++) /* phi3: the fused projections share one A */
                if (a->mats[il][p].r && a->mats[il][p].half && a->mats[il][p].a32 == mt->a32) mt->a = a->mats[il][p].a, na = 0;
            uint16_t *pa = na ? hearth_arena_alloc_aligned(&a->arena, na * sizeof(uint16_t), 64) : NULL;
            uint16_t *pb = hearth_arena_alloc_aligned(&a->arena, nb * sizeof(uint16_t), 64);
            if ((na && !pa) || !pb) return hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory");
            if ((na && !round_f16(mt->a32, pa, (int64_t)na)) || !round_f16(mt->b32, pb, (int64_t)nb))
                return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "adapter: layer %d's %s has a value beyond "
                                      "f16's range (65504), which hearth keeps adapters in", il,
                                      mod_names[mod]);
            if (na) mt->a = pa;
            mt->b = pb;
            a->bytes += (na + nb) * sizeof(uint16_t);
        }
    for (int32_t il = 0; il < a->n_layer; il++) /* the staging arena is freed by the caller */
        for (int mod = 0; mod < HEARTH_LORA_N_MOD; mod++) a->mats[il][mod].a32 = a->mats[il][mod].b32 = NULL;
    return HEARTH_OK;
}

const hearth_lora *hearth_lora_retain(const hearth_lora *a) {
    if (a) atomic_fetch_add_explicit(&((hearth_lora *)a)->refs, 1, memory_order_relaxed);
    return a;
}

bool hearth_lora_sole_ref(const hearth_lora *a) {
    return atomic_load_explicit(&((hearth_lora *)a)->refs, memory_order_acquire) == 1;
}

void hearth_lora_release(const hearth_lora *c) {
    hearth_lora *a = (hearth_lora *)c; /* the last reference owns it */
    if (!a || atomic_fetch_sub_explicit(&a->refs, 1, memory_order_acq_rel) != 1) return;
    hearth_arena_fini(&a->arena);
    free(a);
}
