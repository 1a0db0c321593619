/*
 * kv_config.c - reading a model's kv_config.json into per-layer cache types (kv_config.h).
 *
 * Every shape is reduced to one loop: a default (the top-level "bits", else 16) fills every
 * layer, then each layer entry overrides its layer once (a layer named twice is refused, so a
 * file cannot mean two things). Errors say which layer and which value, with the file's name
 * added by the loader.
 */
#include "engine/kv_config.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { MAX_KV_CONFIG_BYTES = 1 << 20 };

bool hearth_kv_config_find(const char *model_path, char *out, size_t cap) {
    struct stat st;
    if (!model_path || !*model_path || stat(model_path, &st) != 0) return false;
    int n;
    if (S_ISDIR(st.st_mode)) {
        n = snprintf(out, cap, "%s/kv_config.json", model_path);
        return n > 0 && (size_t)n < cap && stat(out, &st) == 0 && S_ISREG(st.st_mode);
    }
    n = snprintf(out, cap, "%s.kv_config.json", model_path); /* F.kv_config.json */
    if (n > 0 && (size_t)n < cap && stat(out, &st) == 0 && S_ISREG(st.st_mode)) return true;
    const char *slash = strrchr(model_path, '/');
    if (slash) n = snprintf(out, cap, "%.*s/kv_config.json", (int)(slash - model_path), model_path);
    else n = snprintf(out, cap, "kv_config.json");
    return n > 0 && (size_t)n < cap && stat(out, &st) == 0 && S_ISREG(st.st_mode);
}

/* bits (a number, or null = 16) -> the cache types; layer -1 is the default. */
static hearth_status bits_scheme(const cJSON *v, int32_t layer, hearth_kv_scheme *out, hearth_err *err) {
    char who[32];
    if (layer < 0) snprintf(who, sizeof who, "the default");
    else snprintf(who, sizeof who, "layer %d", layer);
    if (cJSON_IsNull(v)) {
        *out = HEARTH_KV_SCHEME_F16;
        return HEARTH_OK;
    }
    if (!cJSON_IsNumber(v))
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: bits must be a number (8, 4 or 16) or null", who);
    double b = v->valuedouble;
    hearth_kv_type t = b == 8 ? HEARTH_KV_Q8_0 : b == 4 ? HEARTH_KV_Q4_0 : b == 16 ? HEARTH_KV_F16 : HEARTH_KV_TYPE_COUNT;
    if (t == HEARTH_KV_TYPE_COUNT)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1,
                              "%s: bits %g is not supported (8 -> q8_0, 4 -> q4_0, 16 or null -> f16)", who, b);
    *out = hearth_kv_scheme_of(t, t);
    return HEARTH_OK;
}

/* group_size: absent, null, 32 or 64 (kv_config.h says why those two); anything else is refused. */
static hearth_status check_group(const cJSON *o, int32_t layer, hearth_err *err) {
    const cJSON *g = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, "group_size") : NULL;
    if (!g || cJSON_IsNull(g)) return HEARTH_OK;
    if (cJSON_IsNumber(g) && (g->valuedouble == HEARTH_KV_QBLOCK || g->valuedouble == 2 * HEARTH_KV_QBLOCK))
        return HEARTH_OK;
    char who[32];
    if (layer < 0) snprintf(who, sizeof who, "the default");
    else snprintf(who, sizeof who, "layer %d", layer);
    char *txt = cJSON_PrintUnformatted(g);
    hearth_status st = hearth_err_set(err, HEARTH_E_FORMAT, -1,
                                      "%s: group_size %s is not supported: the cache quantizes blocks of %d "
                                      "elements with an f16 scale each, the bytes of mlx's groups of %d with a "
                                      "scale and a bias; give %d, %d or leave it out",
                                      who, txt ? txt : "?", HEARTH_KV_QBLOCK, 2 * HEARTH_KV_QBLOCK, HEARTH_KV_QBLOCK,
                                      2 * HEARTH_KV_QBLOCK);
    free(txt);
    return st;
}

/* One entry for layer il: a number / null (its bits) or an object with "bits" (and
 * "group_size"). seen[] refuses a layer named twice. */
static hearth_status set_layer(const cJSON *v, int32_t il, int32_t n_layer, char *seen, hearth_kv_scheme *out,
                               hearth_err *err) {
    if (il < 0 || il >= n_layer)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "layer %d does not exist (the model has %d layers)", il,
                              n_layer);
    if (seen[il]) return hearth_err_set(err, HEARTH_E_FORMAT, -1, "layer %d is named twice", il);
    seen[il] = 1;
    if (cJSON_IsObject(v)) {
        hearth_status st = check_group(v, il, err);
        if (st) return st;
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(v, "bits");
        if (!b) return hearth_err_set(err, HEARTH_E_FORMAT, -1, "layer %d: no \"bits\"", il);
        return bits_scheme(b, il, &out[il], err);
    }
    return bits_scheme(v, il, &out[il], err);
}

/* The integer under "layer_idx" (or "layer") of a list entry. */
static hearth_status entry_layer(const cJSON *e, int32_t pos, int32_t *il, hearth_err *err) {
    const cJSON *i = cJSON_GetObjectItemCaseSensitive(e, "layer_idx");
    if (!i) i = cJSON_GetObjectItemCaseSensitive(e, "layer");
    if (!cJSON_IsNumber(i) || i->valuedouble != floor(i->valuedouble) || fabs(i->valuedouble) > 1e9)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "entry %d of the layer list has no integer \"layer_idx\"", pos);
    *il = (int32_t)i->valuedouble;
    return HEARTH_OK;
}

static hearth_status parse_list(const cJSON *list, int32_t n_layer, char *seen, hearth_kv_scheme *out,
                                hearth_err *err) {
    int32_t pos = 0, n = cJSON_GetArraySize(list);
    bool positional = n > 0 && !cJSON_IsObject(cJSON_GetArrayItem(list, 0));
    if (positional && n != n_layer)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "a list of bits needs one entry per layer: %d, not %d", n_layer,
                              n);
    for (const cJSON *e = list ? list->child : NULL; e; e = e->next, pos++) {
        int32_t il = pos;
        hearth_status st;
        if (positional && cJSON_IsObject(e))
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "entry %d: a list of bits mixes numbers and objects", pos);
        if (!positional && !cJSON_IsObject(e))
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "entry %d of the layer list is not an object", pos);
        if (!positional && (st = entry_layer(e, pos, &il, err))) return st;
        if ((st = set_layer(e, il, n_layer, seen, out, err))) return st;
    }
    return HEARTH_OK;
}

hearth_status hearth_kv_config_parse(const char *text, size_t len, int32_t n_layer, hearth_kv_scheme *out,
                                     hearth_err *err) {
    if (n_layer <= 0) return hearth_err_set(err, HEARTH_E_INVALID, -1, "a model without layers");
    cJSON *root = cJSON_ParseWithLength(text, len);
    if (!root) return hearth_err_set(err, HEARTH_E_FORMAT, -1, "not valid JSON");
    char *seen = calloc((size_t)n_layer, 1);
    hearth_status st = seen ? HEARTH_OK : hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    hearth_kv_scheme def = HEARTH_KV_SCHEME_F16;
    if (!st && cJSON_IsObject(root)) {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(root, "bits");
        if (!b) b = cJSON_GetObjectItemCaseSensitive(root, "default_bits");
        if (b) st = bits_scheme(b, -1, &def, err);
        if (!st) st = check_group(root, -1, err);
    }
    for (int32_t il = 0; !st && il < n_layer; il++) out[il] = def;
    if (st) {
    } else if (cJSON_IsArray(root)) {
        st = parse_list(root, n_layer, seen, out, err);
    } else if (cJSON_IsObject(root)) {
        const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
        if (cJSON_IsArray(layers)) {
            st = parse_list(layers, n_layer, seen, out, err);
        } else if (cJSON_IsObject(layers)) {
            for (const cJSON *e = layers->child; e && !st; e = e->next) {
                char *end = NULL;
                long il = strtol(e->string, &end, 10);
                if (!*e->string || *end || il < 0 || il > INT32_MAX)
                    st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "\"layers\" key \"%s\" is not a layer index",
                                        e->string);
                else st = set_layer(e, (int32_t)il, n_layer, seen, out, err);
            }
        } else if (layers || !cJSON_GetObjectItemCaseSensitive(root, "bits")) {
            st = hearth_err_set(err, HEARTH_E_FORMAT, -1,
                                "expected a list of layers, or an object with \"layers\" (a list or a map) and/or "
                                "\"bits\"");
        }
    } else {
        st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "expected a JSON list or object");
    }
    free(seen);
    cJSON_Delete(root);
    return st;
}

hearth_status hearth_kv_config_load(const char *path, int32_t n_layer, hearth_kv_scheme *out, hearth_err *err) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return hearth_err_set(err, HEARTH_E_IO, -1, "%s: cannot be read", path);
    char *buf = malloc(MAX_KV_CONFIG_BYTES + 1);
    size_t n = buf ? fread(buf, 1, MAX_KV_CONFIG_BYTES + 1, fp) : 0;
    bool bad = ferror(fp) != 0;
    fclose(fp);
    if (!buf) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    if (bad || n > MAX_KV_CONFIG_BYTES) {
        free(buf);
        return hearth_err_set(err, bad ? HEARTH_E_IO : HEARTH_E_FORMAT, -1, "%s: %s", path,
                              bad ? "cannot be read" : "larger than 1 MiB");
    }
    hearth_err e2 = {0};
    hearth_status st = hearth_kv_config_parse(buf, n, n_layer, out, &e2);
    free(buf);
    if (st) return hearth_err_set(err, st, -1, "%s: %s", path, e2.msg);
    return HEARTH_OK;
}
