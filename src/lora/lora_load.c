/*
 * lora_load.c - find an adapter's format and read PEFT and mlx-lm adapters (lora.h has the
 * formats; lora_gguf.c reads GGUF ones).
 *
 * A folder with adapter_model.safetensors is PEFT, one with adapters.safetensors is mlx-lm;
 * both need adapter_config.json. A file ending in .gguf is a GGUF LoRA. Tensor names are
 * parsed as <prefix>layers.<N>.<block>.<module>.<suffix>, where the prefix (after PEFT's
 * "base_model.model.") must be the text decoder's ("model.", "model.language_model.",
 * "language_model.model."), the suffix lora_A.weight / lora_B.weight (PEFT) or lora_a / lora_b
 * (mlx-lm); any other tensor is refused with its name: an adapter is applied whole or not at all.
 */
#include "base/file.h"
#include "lora/lora.h"

#include "model/model_internal.h"
#include "model/safetensors.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { MAX_CONFIG_BYTES = 1 << 20 };

static bool is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* What a tensor name says: its layer, its module ("q_proj") and which matrix (0 = A, 1 = B). */
typedef struct {
    int32_t il;
    char    module[32];
    int     which;
    char    base[256]; /* the name without the A/B suffix: pairs A with B */
} tname;

static hearth_status parse_name(hearth_lora_builder *L, const char *name, bool mlx, tname *out) {
    const char *s = name;
    if (!strncmp(s, "base_model.model.", 17)) s += 17;
    static const char *const prefixes[] = {"model.layers.", "model.language_model.layers.",
                                           "language_model.model.layers."};
    const char *rest = NULL;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0] && !rest; i++)
        if (!strncmp(s, prefixes[i], strlen(prefixes[i]))) rest = s + strlen(prefixes[i]);
    if (!rest)
        return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "adapter tensor '%s' is not in a layer of the text "
                              "decoder: hearth applies adapters to the decoder layers' projections only", name);
    char *end = NULL;
    long il = strtol(rest, &end, 10);
    if (end == rest || *end != '.' || il < 0 || il > 1 << 20)
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "adapter tensor '%s' has no layer index", name);
    const char *sfx_a = mlx ? ".lora_a" : ".lora_A.weight", *sfx_b = mlx ? ".lora_b" : ".lora_B.weight";
    size_t n = strlen(name), la = strlen(sfx_a), lb = strlen(sfx_b);
    size_t cut;
    if (n > la && !strcmp(name + n - la, sfx_a)) out->which = 0, cut = n - la;
    else if (n > lb && !strcmp(name + n - lb, sfx_b)) out->which = 1, cut = n - lb;
    else
        return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "adapter tensor '%s' is not a LoRA matrix (%s or %s): "
                              "DoRA, biases and saved modules are not applied", name, sfx_a + 1, sfx_b + 1);
    if (cut >= sizeof out->base) return hearth_err_set(L->err, HEARTH_E_LIMIT, -1, "adapter tensor name too long");
    memcpy(out->base, name, cut);
    out->base[cut] = 0;
    const char *mod = strrchr(out->base, '.');
    mod = mod ? mod + 1 : out->base;
    if (strlen(mod) >= sizeof out->module)
        return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "adapter tensor '%s' adapts an unknown module", name);
    strcpy(out->module, mod);
    out->il = (int32_t)il;
    return HEARTH_OK;
}

static int st_type(hearth_st_dtype dt) {
    return dt == HEARTH_ST_F32 ? HEARTH_TYPE_F32 : dt == HEARTH_ST_F16 ? HEARTH_TYPE_F16
         : dt == HEARTH_ST_BF16 ? HEARTH_TYPE_BF16 : -1;
}

/* Every A/B pair of a safetensors adapter; scale from the config (peft: alpha and rsLoRA). */
static hearth_status read_pairs(hearth_lora_builder *L, const hearth_st *st, bool mlx, int64_t want_r, float alpha,
                                bool rs, float mlx_scale) {
    hearth_status s;
    float *tmp = NULL;
    for (int64_t i = 0; i < hearth_st_n_tensors(st); i++) {
        const hearth_st_tensor *t = hearth_st_tensor_at(st, i);
        tname tn;
        if ((s = parse_name(L, t->name, mlx, &tn))) goto fail;
        char other[300];
        snprintf(other, sizeof other, "%s%s", tn.base, mlx ? ".lora_b" : ".lora_B.weight");
        const hearth_st_tensor *b = hearth_st_find(st, other);
        if (tn.which == 1) {
            snprintf(other, sizeof other, "%s%s", tn.base, mlx ? ".lora_a" : ".lora_A.weight");
            if (!hearth_st_find(st, other)) {
                s = hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "adapter tensor '%s' has no '%s'", t->name, other);
                goto fail;
            }
            continue; /* read with its A */
        }
        if (!b) {
            s = hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "adapter tensor '%s' has no '%s'", t->name, other);
            goto fail;
        }
        if (t->n_dims != 2 || b->n_dims != 2 || st_type(t->dtype) < 0 || st_type(b->dtype) < 0) {
            s = hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "adapter tensors '%s' / '%s' must be 2-D f32, f16 or "
                               "bf16", t->name, b->name);
            goto fail;
        }
        /* peft: A [r][in], B [out][r];  mlx-lm: lora_a [in][r], lora_b [r][out] */
        int64_t r = mlx ? t->shape[1] : t->shape[0], n_in = mlx ? t->shape[0] : t->shape[1];
        int64_t r_b = mlx ? b->shape[0] : b->shape[1], n_out = mlx ? b->shape[1] : b->shape[0];
        if (r != r_b || (want_r > 0 && r != want_r)) {
            s = hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "adapter tensors '%s' / '%s' have ranks %lld / %lld but "
                               "the config says %lld", t->name, b->name, (long long)r, (long long)r_b,
                               (long long)want_r);
            goto fail;
        }
        float scale = mlx ? mlx_scale : rs ? alpha / sqrtf((float)r) : alpha / (float)r;
        float *pa, *pb;
        if ((s = hearth_lora_add(L, t->name, tn.il, tn.module, r, n_in, n_out, scale,
                                   hearth_lora_half_types(st_type(t->dtype), st_type(b->dtype)), &pa, &pb))) goto fail;
        if (!mlx) {
            hearth_lora_to_f32(st_type(t->dtype), t->data, pa, r * n_in);
            hearth_lora_to_f32(st_type(b->dtype), b->data, pb, n_out * r);
            continue;
        }
        size_t big = (size_t)(r * n_in > n_out * r ? r * n_in : n_out * r);
        free(tmp);
        if (!(tmp = malloc(big * sizeof(float)))) {
            s = hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory reading '%s'", t->name);
            goto fail;
        }
        hearth_lora_to_f32(st_type(t->dtype), t->data, tmp, r * n_in); /* [in][r] -> [r][in] */
        for (int64_t k = 0; k < r; k++)
            for (int64_t j = 0; j < n_in; j++) pa[k * n_in + j] = tmp[j * r + k];
        hearth_lora_to_f32(st_type(b->dtype), b->data, tmp, n_out * r); /* [r][out] -> [out][r] */
        for (int64_t o = 0; o < n_out; o++)
            for (int64_t k = 0; k < r; k++) pb[o * r + k] = tmp[k * n_out + o];
    }
    s = HEARTH_OK;
fail:
    free(tmp);
    return s;
}

static bool json_nonempty(const cJSON *v) {
    return v && !cJSON_IsNull(v) && !(cJSON_IsObject(v) && !v->child) && !(cJSON_IsArray(v) && !v->child) &&
           !cJSON_IsFalse(v) && !(cJSON_IsString(v) && !v->valuestring[0]);
}

/* adapter_config.json of PEFT or mlx-lm into the scale parameters; the rest of the config is
 * checked for what hearth does not apply. */
static hearth_status read_config(hearth_lora_builder *L, const char *dir, bool mlx, int64_t *r, float *alpha, bool *rs,
                                 float *mlx_scale) {
    char path[4096];
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    char *text = hearth_file_read(path, MAX_CONFIG_BYTES, NULL);
    if (!text) return hearth_err_set(L->err, HEARTH_E_NOTFOUND, -1, "%s: no adapter_config.json", dir);
    cJSON *c = cJSON_Parse(text);
    free(text);
    hearth_status s = HEARTH_OK;
    if (!cJSON_IsObject(c)) {
        s = hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "%s is not a JSON object", path);
        goto done;
    }
    if (mlx) {
        const cJSON *ft = cJSON_GetObjectItemCaseSensitive(c, "fine_tune_type");
        if (cJSON_IsString(ft) && strcmp(ft->valuestring, "lora")) {
            s = hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "%s: fine_tune_type '%s' (hearth applies \"lora\")",
                               path, ft->valuestring);
            goto done;
        }
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "use_dora"))) {
            s = hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "%s: DoRA adapters are not applied", path);
            goto done;
        }
        const cJSON *lp = cJSON_GetObjectItemCaseSensitive(c, "lora_parameters");
        const cJSON *rk = cJSON_GetObjectItemCaseSensitive(lp, "rank"), *sc = cJSON_GetObjectItemCaseSensitive(lp, "scale");
        if (!cJSON_IsNumber(rk) || !cJSON_IsNumber(sc)) {
            s = hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "%s: lora_parameters.rank and .scale must be numbers", path);
            goto done;
        }
        *r = (int64_t)rk->valuedouble;
        *mlx_scale = (float)sc->valuedouble;
        goto done;
    }
    const cJSON *pt = cJSON_GetObjectItemCaseSensitive(c, "peft_type");
    if (cJSON_IsString(pt) && strcmp(pt->valuestring, "LORA")) {
        s = hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "%s: peft_type '%s' (hearth applies LORA)", path,
                           pt->valuestring);
        goto done;
    }
    static const char *const refused[] = {"use_dora", "rank_pattern", "alpha_pattern", "modules_to_save",
                                          "layer_replication", "use_qalora", "lora_bias", "fan_in_fan_out",
                                          "trainable_token_indices", "target_parameters"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (json_nonempty(cJSON_GetObjectItemCaseSensitive(c, refused[i]))) {
            s = hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "%s: '%s' is set; hearth does not apply it", path,
                               refused[i]);
            goto done;
        }
    const cJSON *bias = cJSON_GetObjectItemCaseSensitive(c, "bias");
    if (cJSON_IsString(bias) && strcmp(bias->valuestring, "none")) {
        s = hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "%s: bias '%s' (hearth applies \"none\")", path,
                           bias->valuestring);
        goto done;
    }
    const cJSON *jr = cJSON_GetObjectItemCaseSensitive(c, "r"), *ja = cJSON_GetObjectItemCaseSensitive(c, "lora_alpha");
    if (!cJSON_IsNumber(jr) || !cJSON_IsNumber(ja) || jr->valuedouble < 1) {
        s = hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "%s: r and lora_alpha must be numbers (r >= 1)", path);
        goto done;
    }
    *r = (int64_t)jr->valuedouble;
    *alpha = (float)ja->valuedouble;
    *rs = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "use_rslora"));
    /* target_modules: every name must be one hearth adapts (a list, or one module name) */
    const cJSON *tm = cJSON_GetObjectItemCaseSensitive(c, "target_modules");
    static const char *const known[] = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
                                        "qkv_proj", "gate_up_proj"};
    const cJSON *list = cJSON_IsArray(tm) ? tm : NULL, *e;
    cJSON_ArrayForEach(e, list) {
        bool ok = false;
        for (size_t i = 0; cJSON_IsString(e) && i < sizeof known / sizeof known[0]; i++) ok |= !strcmp(e->valuestring, known[i]);
        if (!ok) {
            s = hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "%s: target module '%s' is not one hearth adapts "
                               "(q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, qkv_proj, gate_up_proj)",
                               path, cJSON_IsString(e) ? e->valuestring : "?");
            goto done;
        }
    }
done:
    cJSON_Delete(c);
    return s;
}

/* A llama GGUF stores q and k with each head's rows interleaved (llama.cpp's converter permutes
 * them so that RoPE rotates adjacent pairs): row h hd + 2 i + j of the GGUF weight is row
 * h hd + j hd/2 + i of the Hugging Face one. An adapter made on the Hugging Face model gets its
 * B rows moved the same way, so it applies to such a base unchanged. */
static hearth_status permute_qk(hearth_lora_builder *L) {
    const hearth_hparams *hp = &L->m->hp;
    int64_t hd = hp->head_dim;
    float *tmp = NULL;
    for (int32_t il = 0; il < L->a->n_layer; il++)
        for (int k = 0; k < 2; k++) {
            hearth_lora_mat *mt = &L->a->mats[il][k ? HEARTH_LORA_K : HEARTH_LORA_Q];
            if (!mt->r) continue;
            int64_t rows = mt->n_out, r = mt->r;
            if (rows % hd || hd % 2) return hearth_err_set(L->err, HEARTH_E_INVALID, -1, "adapter: q/k rows not whole heads");
            free(tmp);
            if (!(tmp = malloc((size_t)(rows * r) * sizeof(float))))
                return hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory");
            float *b = mt->b32;
            memcpy(tmp, b, (size_t)(rows * r) * sizeof(float));
            for (int64_t h = 0; h < rows / hd; h++)
                for (int64_t i = 0; i < hd / 2; i++)
                    for (int64_t j = 0; j < 2; j++)
                        memcpy(b + (h * hd + 2 * i + j) * r, tmp + (h * hd + j * hd / 2 + i) * r, (size_t)r * sizeof(float));
        }
    free(tmp);
    return HEARTH_OK;
}

hearth_status hearth_lora_load(const char *path, const hearth_model *m, hearth_lora **out, hearth_err *err) {
    *out = NULL;
    hearth_lora *a = calloc(1, sizeof *a);
    if (!a) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    atomic_init(&a->refs, 1);
    hearth_arena_init(&a->arena, 1 << 20);
    a->n_layer = m->hp.n_layer;
    a->mats = hearth_arena_calloc(&a->arena, (size_t)m->hp.n_layer, sizeof *a->mats);
    a->path = hearth_arena_strndup(&a->arena, path, strlen(path));
    hearth_lora_builder L = {.a = a, .m = m, .err = err};
    hearth_arena_init(&L.staging, 1 << 20);
    hearth_status s;
    hearth_st *st = NULL;
    if (!a->mats || !a->path) {
        s = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        goto fail;
    }
    size_t n = strlen(path);
    char file[4096];
    if (n > 5 && !strcmp(path + n - 5, ".gguf")) {
        a->format = "gguf";
        if ((s = hearth_lora_load_gguf(&L, path))) goto fail;
    } else {
        bool mlx = false;
        snprintf(file, sizeof file, "%s/adapter_model.safetensors", path);
        if (!is_file(file)) {
            snprintf(file, sizeof file, "%s/adapters.safetensors", path);
            mlx = is_file(file);
            if (!mlx) {
                s = hearth_err_set(err, HEARTH_E_NOTFOUND, -1, "%s: no adapter there (a PEFT folder has "
                                   "adapter_model.safetensors, an mlx-lm one adapters.safetensors; a GGUF LoRA is "
                                   "a .gguf file)", path);
                goto fail;
            }
        }
        a->format = mlx ? "mlx" : "peft";
        int64_t r = 0;
        float alpha = 0, mlx_scale = 0;
        bool rs = false;
        if ((s = read_config(&L, path, mlx, &r, &alpha, &rs, &mlx_scale))) goto fail;
        if ((s = hearth_st_open(file, &st, err))) goto fail;
        if ((s = read_pairs(&L, st, mlx, r, alpha, rs, mlx_scale))) goto fail;
        if (m->gguf && !m->hp.rope_neox && (s = permute_qk(&L))) goto fail;
    }
    if (a->n_mats == 0) {
        s = hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: the adapter has no LoRA matrices", path);
        goto fail;
    }
    if ((s = hearth_lora_finish(&L))) goto fail;
    hearth_st_close(st);
    hearth_arena_fini(&L.staging);
    *out = a;
    return HEARTH_OK;
fail:
    hearth_st_close(st);
    hearth_arena_fini(&L.staging);
    hearth_lora_release(a);
    return s;
}
