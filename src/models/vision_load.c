/*
 * vision_load.c - load a Gemma 3 checkpoint's SigLIP tower and projector (see vision.h).
 *
 * config.json gives the shape: vision_config (SigLIP's own defaults for what it leaves out, as
 * transformers' SiglipVisionConfig has them), mm_tokens_per_image, the image token ids and
 * text_config.hidden_size; preprocessor_config.json, when there, image_mean / image_std. Every
 * tensor is checked against that shape and widened to an f32 copy, the matrices packed for the
 * encoder GEMM; nothing points into the mapping afterwards, so it is closed before returning.
 * Tensor names: transformers 4 writes "vision_tower.vision_model.*", transformers 5
 * "vision_tower.*" (either may sit behind "model."); the projector is
 * "multi_modal_projector.*" with the same optional prefix.
 */
#include "models/vision_internal.h"
#include "base/file.h"
#include "kernels/gemm_f32.h"
#include "model/safetensors.h"
#include "tensor/dtype.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_JSON_BYTES = 4 << 20 };

static cJSON *read_json(const char *dir, const char *name) {
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) return NULL;
    char *text = hearth_file_read(path, MAX_JSON_BYTES, NULL);
    if (!text) return NULL;
    cJSON *j = cJSON_Parse(text);
    free(text);
    return j;
}

static double num(const cJSON *o, const char *key, double dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static const char *const tower_prefixes[] = {"vision_tower.vision_model.", "model.vision_tower.vision_model.",
                                             "vision_tower.", "model.vision_tower.", NULL};
static const char *const proj_prefixes[] = {"multi_modal_projector.", "model.multi_modal_projector.", NULL};

/* The prefix under which st holds name, or NULL. */
static const char *find_prefix(const hearth_st *st, const char *const *prefixes, const char *name) {
    char full[256];
    for (const char *const *p = prefixes; *p; p++) {
        snprintf(full, sizeof full, "%s%s", *p, name);
        if (hearth_st_find(st, full)) return *p;
    }
    return NULL;
}

/* A supported vision_config in cfg? why: what is not, when not. */
static bool config_ok(const cJSON *cfg, char *why, size_t cap) {
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    const cJSON *vc = cJSON_GetObjectItemCaseSensitive(cfg, "vision_config");
    const cJSON *vmt = cJSON_GetObjectItemCaseSensitive(vc, "model_type");
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(vc, "hidden_act");
    if (!cJSON_IsObject(vc)) return snprintf(why, cap, "config.json has no vision_config"), false;
    if (!cJSON_IsString(mt) || strcmp(mt->valuestring, "gemma3"))
        return snprintf(why, cap, "vision models of model_type '%s' are not supported (gemma3 only)",
                        cJSON_IsString(mt) ? mt->valuestring : "?"),
               false;
    if (!cJSON_IsString(vmt) || strcmp(vmt->valuestring, "siglip_vision_model"))
        return snprintf(why, cap, "vision_config.model_type '%s' is not supported (siglip_vision_model only)",
                        cJSON_IsString(vmt) ? vmt->valuestring : "?"),
               false;
    if (cJSON_IsString(act) && strcmp(act->valuestring, "gelu_pytorch_tanh"))
        return snprintf(why, cap, "vision_config.hidden_act '%s' is not supported (gelu_pytorch_tanh only)",
                        act->valuestring),
               false;
    if (num(vc, "num_channels", 3) != 3) return snprintf(why, cap, "vision_config.num_channels must be 3"), false;
    return true;
}

bool hearth_vision_probe(const char *path) {
    char why[160];
    cJSON *cfg = read_json(path, "config.json");
    bool ok = cfg && config_ok(cfg, why, sizeof why);
    cJSON_Delete(cfg);
    if (!ok) return false;
    hearth_st *st = NULL;
    if (hearth_st_open(path, &st, NULL) != HEARTH_OK) return false;
    ok = find_prefix(st, tower_prefixes, "embeddings.patch_embedding.weight") &&
         find_prefix(st, proj_prefixes, "mm_input_projection_weight");
    hearth_st_close(st);
    return ok;
}

typedef struct {
    hearth_vision *v;
    hearth_st     *st;
    hearth_err    *err;
    hearth_status  failed; /* the first failure (err may be NULL) */
} loader;

static void *fail_with(loader *L, hearth_status st) {
    if (!L->failed) L->failed = st;
    return NULL;
}

static void *keep(hearth_vision *v, void *p) {
    if (!p) return NULL;
    void **grown = realloc(v->owned, (size_t)(v->n_owned + 1) * sizeof *grown);
    if (!grown) {
        free(p);
        return NULL;
    }
    v->owned = grown;
    v->owned[v->n_owned++] = p;
    return p;
}

/* prefix + name as an owned f32 array of n elements (its shape's product must be n, its first
 * dimension d0 when d0 > 0). */
static float *get(loader *L, const char *prefix, const char *name, int64_t d0, int64_t n) {
    char full[256];
    snprintf(full, sizeof full, "%s%s", prefix, name);
    const hearth_st_tensor *t = hearth_st_find(L->st, full);
    if (!t) {
        return fail_with(L, hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "vision tensor %s is missing", full));
    }
    if (t->n_elem != n || (d0 > 0 && (t->n_dims < 1 || t->shape[0] != d0))) {
        return fail_with(L, hearth_err_set(L->err, HEARTH_E_FORMAT, -1,
                                           "vision tensor %s has %lld elements, the config says %lld", full,
                                           (long long)t->n_elem, (long long)n));
    }
    if (t->dtype != HEARTH_ST_F32 && t->dtype != HEARTH_ST_F16 && t->dtype != HEARTH_ST_BF16) {
        return fail_with(L, hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1,
                                           "vision tensor %s is %s (f32, f16 or bf16 only)", full,
                                           hearth_st_dtype_name(t->dtype)));
    }
    float *out = keep(L->v, malloc((size_t)n * sizeof(float)));
    if (!out) {
        return fail_with(L, hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory loading %s", full));
    }
    const uint8_t *b = t->data; /* unaligned reads through memcpy */
    for (int64_t i = 0; i < n; i++) {
        if (t->dtype == HEARTH_ST_F32) {
            memcpy(&out[i], b + i * 4, 4);
        } else {
            uint16_t h;
            memcpy(&h, b + i * 2, 2);
            out[i] = t->dtype == HEARTH_ST_F16 ? hearth_fp16_to_fp32(h) : hearth_bf16_to_fp32(h);
        }
    }
    L->v->weight_bytes += t->n_bytes;
    return out;
}

/* w [n_out][n_in] packed for the GEMM (an owned copy). */
static const float *pack(loader *L, const float *w, int64_t n_out, int64_t n_in) {
    if (!w) return NULL;
    float *p = keep(L->v, malloc(hearth_gemm_f32_packed_floats(n_out, n_in) * sizeof(float)));
    if (!p) {
        return fail_with(L, hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory packing the vision weights"));
    }
    hearth_gemm_f32_pack(w, n_in, n_out, n_in, p);
    return p;
}

static hearth_status load_layer(loader *L, const char *pfx, int32_t il) {
    hearth_vision *v = L->v;
    const int64_t D = v->info.width, F = v->n_ff;
    hearth_vision_layer *l = &v->layers[il];
    char n[128];
#define LAYER(name) (snprintf(n, sizeof n, "encoder.layers.%d.%s", il, name), n)
    const float *q = get(L, pfx, LAYER("self_attn.q_proj.weight"), D, D * D);
    const float *k = q ? get(L, pfx, LAYER("self_attn.k_proj.weight"), D, D * D) : NULL;
    const float *vv = k ? get(L, pfx, LAYER("self_attn.v_proj.weight"), D, D * D) : NULL;
    const float *qb = vv ? get(L, pfx, LAYER("self_attn.q_proj.bias"), D, D) : NULL;
    const float *kb = qb ? get(L, pfx, LAYER("self_attn.k_proj.bias"), D, D) : NULL;
    const float *vb = kb ? get(L, pfx, LAYER("self_attn.v_proj.bias"), D, D) : NULL;
    if (!vb) return L->failed;
    float *qkv = keep(v, malloc((size_t)(3 * D * D) * sizeof(float)));
    float *bqkv = keep(v, malloc((size_t)(3 * D) * sizeof(float)));
    if (!qkv || !bqkv) return hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory loading the vision tower");
    memcpy(qkv, q, (size_t)(D * D) * sizeof(float));
    memcpy(qkv + D * D, k, (size_t)(D * D) * sizeof(float));
    memcpy(qkv + 2 * D * D, vv, (size_t)(D * D) * sizeof(float));
    memcpy(bqkv, qb, (size_t)D * sizeof(float));
    memcpy(bqkv + D, kb, (size_t)D * sizeof(float));
    memcpy(bqkv + 2 * D, vb, (size_t)D * sizeof(float));
    l->p_qkv = pack(L, qkv, 3 * D, D);
    l->b_qkv = bqkv;
    l->p_o = l->p_qkv ? pack(L, get(L, pfx, LAYER("self_attn.out_proj.weight"), D, D * D), D, D) : NULL;
    l->b_o = l->p_o ? get(L, pfx, LAYER("self_attn.out_proj.bias"), D, D) : NULL;
    l->ln1_w = l->b_o ? get(L, pfx, LAYER("layer_norm1.weight"), D, D) : NULL;
    l->ln1_b = l->ln1_w ? get(L, pfx, LAYER("layer_norm1.bias"), D, D) : NULL;
    l->ln2_w = l->ln1_b ? get(L, pfx, LAYER("layer_norm2.weight"), D, D) : NULL;
    l->ln2_b = l->ln2_w ? get(L, pfx, LAYER("layer_norm2.bias"), D, D) : NULL;
    l->p_fc1 = l->ln2_b ? pack(L, get(L, pfx, LAYER("mlp.fc1.weight"), F, F * D), F, D) : NULL;
    l->b_fc1 = l->p_fc1 ? get(L, pfx, LAYER("mlp.fc1.bias"), F, F) : NULL;
    l->p_fc2 = l->b_fc1 ? pack(L, get(L, pfx, LAYER("mlp.fc2.weight"), D, D * F), D, F) : NULL;
    l->b_fc2 = l->p_fc2 ? get(L, pfx, LAYER("mlp.fc2.bias"), D, D) : NULL;
#undef LAYER
    return l->b_fc2 ? HEARTH_OK : L->failed;
}

/* Shape from the configs into v->info; HEARTH_E_UNSUPPORTED / FORMAT saying why. */
static hearth_status read_config(hearth_vision *v, const char *path, hearth_err *err) {
    char why[192];
    cJSON *cfg = read_json(path, "config.json");
    if (!cfg) return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s/config.json is missing or not JSON", path);
    if (!config_ok(cfg, why, sizeof why)) {
        cJSON_Delete(cfg);
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "%s", why);
    }
    const cJSON *vc = cJSON_GetObjectItemCaseSensitive(cfg, "vision_config");
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(cfg, "text_config");
    hearth_vision_info *in = &v->info;
    /* SiglipVisionConfig's defaults, Gemma3Config's for the token ids */
    in->width = (int32_t)num(vc, "hidden_size", 768);
    v->n_ff = (int32_t)num(vc, "intermediate_size", 3072);
    in->n_layer = (int32_t)num(vc, "num_hidden_layers", 12);
    in->n_head = (int32_t)num(vc, "num_attention_heads", 12);
    in->image_size = (int32_t)num(vc, "image_size", 224);
    in->patch_size = (int32_t)num(vc, "patch_size", 16);
    v->eps = (float)num(vc, "layer_norm_eps", 1e-6);
    in->mm_tokens = (int32_t)num(cfg, "mm_tokens_per_image", 256);
    in->boi_id = (int32_t)num(cfg, "boi_token_index", 255999);
    in->eoi_id = (int32_t)num(cfg, "eoi_token_index", 256000);
    in->image_id = (int32_t)num(cfg, "image_token_index", 262144);
    in->n_embd_out = (int32_t)num(tc, "hidden_size", 2304);
    cJSON_Delete(cfg);
    for (int c = 0; c < 3; c++) in->mean[c] = in->std[c] = 0.5f;
    cJSON *pp = read_json(path, "preprocessor_config.json");
    const cJSON *mean = cJSON_GetObjectItemCaseSensitive(pp, "image_mean");
    const cJSON *std = cJSON_GetObjectItemCaseSensitive(pp, "image_std");
    for (int c = 0; c < 3; c++) {
        const cJSON *m = cJSON_IsArray(mean) ? cJSON_GetArrayItem(mean, c) : NULL;
        const cJSON *s = cJSON_IsArray(std) ? cJSON_GetArrayItem(std, c) : NULL;
        if (cJSON_IsNumber(m)) in->mean[c] = (float)m->valuedouble;
        if (cJSON_IsNumber(s) && s->valuedouble > 0) in->std[c] = (float)s->valuedouble;
    }
    cJSON_Delete(pp);
    int64_t side = in->patch_size > 0 ? in->image_size / in->patch_size : 0;
    int64_t tps = in->mm_tokens > 0 ? (int64_t)lrint(sqrt((double)in->mm_tokens)) : 0;
    if (in->width <= 0 || v->n_ff <= 0 || in->n_layer <= 0 || in->n_layer > 256 || in->n_head <= 0 ||
        in->width % in->n_head || in->image_size <= 0 || in->image_size > 4096 || in->patch_size <= 0 ||
        in->image_size % in->patch_size || in->n_embd_out <= 0)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json: the vision_config's sizes do not fit together");
    if (tps <= 0 || tps * tps != in->mm_tokens || side % tps)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1,
                              "config.json: mm_tokens_per_image %d is not a square dividing the %lld x %lld patch grid",
                              in->mm_tokens, (long long)side, (long long)side);
    in->n_patches = (int32_t)(side * side);
    return HEARTH_OK;
}

hearth_status hearth_vision_load(const char *path, hearth_vision **out, hearth_err *err) {
    *out = NULL;
    hearth_vision *v = calloc(1, sizeof *v);
    if (!v) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    loader L = {v, NULL, err, HEARTH_OK};
    hearth_status st = read_config(v, path, err);
    if (st) goto fail;
    if ((st = hearth_st_open(path, &L.st, err))) goto fail;
    const char *tp = find_prefix(L.st, tower_prefixes, "embeddings.patch_embedding.weight");
    const char *pp = find_prefix(L.st, proj_prefixes, "mm_input_projection_weight");
    if (!tp || !pp) {
        st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s holds no %s", path,
                            tp ? "multi_modal_projector.mm_input_projection_weight"
                               : "vision_tower embeddings.patch_embedding.weight");
        goto fail;
    }
    const hearth_vision_info *in = &v->info;
    const int64_t D = in->width, K = 3 * (int64_t)in->patch_size * in->patch_size, N = in->n_patches;
    v->layers = calloc((size_t)in->n_layer, sizeof *v->layers);
    if (!v->layers) {
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        goto fail;
    }
    v->p_patch = pack(&L, get(&L, tp, "embeddings.patch_embedding.weight", D, D * K), D, K);
    v->b_patch = v->p_patch ? get(&L, tp, "embeddings.patch_embedding.bias", D, D) : NULL;
    v->pos = v->b_patch ? get(&L, tp, "embeddings.position_embedding.weight", N, N * D) : NULL;
    v->post_w = v->pos ? get(&L, tp, "post_layernorm.weight", D, D) : NULL;
    v->post_b = v->post_w ? get(&L, tp, "post_layernorm.bias", D, D) : NULL;
    float *norm = v->post_b ? get(&L, pp, "mm_soft_emb_norm.weight", D, D) : NULL;
    float *proj = norm ? get(&L, pp, "mm_input_projection_weight", D, D * in->n_embd_out) : NULL;
    if (!proj) {
        st = L.failed;
        goto fail;
    }
    for (int64_t i = 0; i < D; i++) norm[i] += 1.0f; /* Gemma's RMSNorm multiplies by 1 + w */
    v->mm_norm = norm;
    float *tr = malloc((size_t)(D * in->n_embd_out) * sizeof(float)); /* [n_embd_out][D] */
    if (!tr) {
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        goto fail;
    }
    for (int64_t i = 0; i < D; i++)
        for (int64_t o = 0; o < in->n_embd_out; o++) tr[o * D + i] = proj[i * in->n_embd_out + o];
    v->p_proj = pack(&L, tr, in->n_embd_out, D);
    free(tr);
    if (!v->p_proj) {
        st = L.failed;
        goto fail;
    }
    for (int32_t il = 0; il < in->n_layer; il++)
        if ((st = load_layer(&L, tp, il))) goto fail;
    hearth_st_close(L.st);
    L.st = NULL;
    /* scratch: patches, x, xb, qkv, ff, scores, vt, pk */
    int64_t mm = (int64_t)in->mm_tokens * D, hd = D / in->n_head;
    size_t pk = hearth_gemm_f32_packed_floats(N, hd), pvt = hearth_gemm_f32_packed_floats(hd, N);
    size_t floats = (size_t)(N * K + N * D + (N * D > mm ? N * D : mm) + 3 * N * D + N * v->n_ff + N * N + hd * N) +
                    (pk > pvt ? pk : pvt) + 16;
    v->scratch = malloc(floats * sizeof(float));
    if (!v->scratch) {
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        goto fail;
    }
    v->patches = v->scratch;
    v->x = v->patches + N * K;
    v->xb = v->x + N * D;
    v->qkv = v->xb + (N * D > mm ? N * D : mm);
    v->ff = v->qkv + 3 * N * D;
    v->scores = v->ff + N * v->n_ff;
    v->vt = v->scores + N * N;
    v->pk = v->vt + hd * N;
    *out = v;
    return HEARTH_OK;
fail:
    hearth_st_close(L.st);
    hearth_vision_free(v);
    return st ? st : HEARTH_E_FORMAT;
}

void hearth_vision_free(hearth_vision *v) {
    if (!v) return;
    for (int64_t i = 0; i < v->n_owned; i++) free(v->owned[i]);
    free(v->owned);
    free(v->layers);
    free(v->scratch);
    free(v);
}

const hearth_vision_info *hearth_vision_get_info(const hearth_vision *v) { return &v->info; }
size_t hearth_vision_weight_bytes(const hearth_vision *v) { return v->weight_bytes; }

hearth_status hearth_vision_preprocess(const hearth_vision *v, const uint8_t *rgb, int32_t w, int32_t h,
                                       float *pixels) {
    const int32_t S = v->info.image_size;
    if (w < 1 || h < 1) return HEARTH_E_INVALID;
    uint8_t *r = malloc((size_t)S * (size_t)S * 3);
    if (!r) return HEARTH_E_NOMEM;
    hearth_status st = hearth_image_resize_bilinear(rgb, w, h, r, S, S);
    if (st == HEARTH_OK)
        for (int c = 0; c < 3; c++)
            for (int64_t i = 0; i < (int64_t)S * S; i++) /* as transformers: u8 * (1/255), then (x - mean) / std */
                pixels[c * S * S + i] = (r[i * 3 + c] * (float)(1.0 / 255.0) - v->info.mean[c]) / v->info.std[c];
    free(r);
    return st;
}

hearth_status hearth_vision_tower(hearth_vision *v, hearth_pool *pool, const float *pixels, float *out) {
    hearth_siglip_forward(v, pool, pixels, out);
    return HEARTH_OK;
}

hearth_status hearth_vision_encode(hearth_vision *v, hearth_pool *pool, const float *pixels, float *out) {
    float *tower = malloc((size_t)v->info.n_patches * (size_t)v->info.width * sizeof(float));
    if (!tower) return HEARTH_E_NOMEM;
    hearth_siglip_forward(v, pool, pixels, tower);
    hearth_gemma3_mm_project(v, pool, tower, out);
    free(tower);
    return HEARTH_OK;
}
