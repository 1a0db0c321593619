/*
 * embeddings.c - POST /v1/embeddings (embeddings.h): read the inputs, tokenize, check lengths,
 * run the encoder once over all of them, write the list.
 *
 * Limits: at most MAX_INPUTS inputs (OpenAI's 2048) and the body cap of the server; every
 * input non-empty. Errors name the field and, for one input, its index: "input[3] has 300
 * tokens, more than the model's limit of 256".
 */
#include "server/embeddings.h"

#include "models/bert.h"
#include "server/reqjson.h"
#include "server/openai.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_INPUTS = 2048 };

typedef struct {
    int32_t **ids;    /* [n] owned */
    size_t   *n_ids;  /* [n] */
    size_t    n;
} inputs;

static void inputs_free(inputs *in) {
    for (size_t i = 0; in->ids && i < in->n; i++) free(in->ids[i]);
    free(in->ids);
    free(in->n_ids);
}

/* A JSON array of token ids into ids[i]. */
static bool read_ids(const hearth_bert *b, const cJSON *arr, const char *where, int32_t **out, size_t *n_out,
                     hearth_api_err *e) {
    int n = cJSON_GetArraySize(arr);
    if (n == 0) return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "input", "%s is empty", where);
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    if (!ids) return hearth_api_oom(e);
    int k = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, arr) {
        double v = cJSON_IsNumber(t) ? t->valuedouble : -1;
        if (!cJSON_IsNumber(t) || v != (double)(int64_t)v || v < 0 || v >= hearth_bert_n_vocab(b)) {
            free(ids);
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "input",
                                   "%s[%d] must be a token id from 0 to %d", where, k, hearth_bert_n_vocab(b) - 1);
        }
        ids[k++] = (int32_t)v;
    }
    *out = ids;
    *n_out = (size_t)n;
    return true;
}

static bool tokenize_text(const hearth_bert *b, const cJSON *s, const char *where, int32_t **out, size_t *n_out,
                          hearth_api_err *e) {
    size_t len = strlen(s->valuestring);
    if (len == 0) return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "input", "%s is an empty string", where);
    hearth_status st = hearth_bert_tokenize(b, s->valuestring, len, out, n_out);
    if (st == HEARTH_E_NOMEM) return hearth_api_oom(e);
    if (st) return hearth_api_fail(e, st, "invalid_value", "input", "%s cannot be tokenized", where);
    return true;
}

/* "input" in any of its four shapes. */
static bool read_inputs(const hearth_bert *b, const cJSON *input, inputs *in, hearth_api_err *e) {
    if (!input)
        return hearth_api_fail(e, HEARTH_E_INVALID, "missing_required_parameter", "input", "'input' is required");
    size_t n = 1;
    bool one_ids = false; /* a flat list of token ids: one input */
    if (cJSON_IsArray(input)) {
        int na = cJSON_GetArraySize(input);
        if (na == 0) return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "input", "'input' is an empty list");
        one_ids = cJSON_IsNumber(input->child);
        n = one_ids ? 1 : (size_t)na;
    } else if (!cJSON_IsString(input))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "input", "'input' must be a string, a list of "
                               "strings, a list of token ids or a list of lists of token ids");
    if (n > MAX_INPUTS)
        return hearth_api_fail(e, HEARTH_E_LIMIT, "invalid_value", "input", "'input' has %zu items, more than %d", n,
                               MAX_INPUTS);
    in->ids = calloc(n, sizeof *in->ids);
    in->n_ids = calloc(n, sizeof *in->n_ids);
    in->n = n;
    if (!in->ids || !in->n_ids) return hearth_api_oom(e);
    if (cJSON_IsString(input)) return tokenize_text(b, input, "input", &in->ids[0], &in->n_ids[0], e);
    if (one_ids) return read_ids(b, input, "input", &in->ids[0], &in->n_ids[0], e);
    const cJSON *item;
    size_t i = 0;
    bool strings = cJSON_IsString(input->child);
    cJSON_ArrayForEach(item, input) {
        char where[32];
        snprintf(where, sizeof where, "input[%zu]", i);
        if (strings && cJSON_IsString(item)) {
            if (!tokenize_text(b, item, where, &in->ids[i], &in->n_ids[i], e)) return false;
        } else if (!strings && cJSON_IsArray(item)) {
            if (!read_ids(b, item, where, &in->ids[i], &in->n_ids[i], e)) return false;
        } else
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "input", "%s must be %s, as the first item "
                                   "is", where, strings ? "a string" : "a list of token ids");
        i++;
    }
    return true;
}

static void put_base64(hearth_jw *w, const float *v, int64_t n) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n_bytes = (size_t)n * 4, n_out = (n_bytes + 2) / 3 * 4;
    unsigned char *raw = malloc(n_bytes);
    char *out = malloc(n_out);
    if (!raw || !out) {
        free(raw);
        free(out);
        w->b.oom = true;
        return;
    }
    for (int64_t i = 0; i < n; i++) { /* little-endian f32, whatever the host */
        uint32_t u;
        memcpy(&u, &v[i], 4);
        raw[4 * i] = (unsigned char)u, raw[4 * i + 1] = (unsigned char)(u >> 8);
        raw[4 * i + 2] = (unsigned char)(u >> 16), raw[4 * i + 3] = (unsigned char)(u >> 24);
    }
    size_t o = 0;
    for (size_t i = 0; i < n_bytes; i += 3) {
        uint32_t x = (uint32_t)raw[i] << 16;
        if (i + 1 < n_bytes) x |= (uint32_t)raw[i + 1] << 8;
        if (i + 2 < n_bytes) x |= raw[i + 2];
        out[o++] = tab[(x >> 18) & 63];
        out[o++] = tab[(x >> 12) & 63];
        out[o++] = i + 1 < n_bytes ? tab[(x >> 6) & 63] : '=';
        out[o++] = i + 2 < n_bytes ? tab[x & 63] : '=';
    }
    hearth_jw_str(w, out, o);
    free(raw);
    free(out);
}

static bool embed(hearth_server *s, const cJSON *root, hearth_jw *w, hearth_api_err *e) {
    hearth_bert *b = s->p.embedder;
    const int64_t dim = hearth_bert_dim(b);
    const size_t max = (size_t)hearth_bert_max_tokens(b);
    const char *fmt = NULL, *model = NULL, *user = NULL;
    int64_t dims = 0;
    bool truncate = false, base64 = false;
    if (hearth_req_str(root, "encoding_format", &fmt, e) < 0 || hearth_req_str(root, "model", &model, e) < 0 ||
        hearth_req_str(root, "user", &user, e) < 0 || hearth_req_bool(root, "truncate", &truncate, e) < 0 ||
        hearth_req_int(root, "dimensions", 1, 1 << 30, &dims, e) < 0)
        return false;
    if (fmt && strcmp(fmt, "float") && strcmp(fmt, "base64"))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "encoding_format",
                               "'encoding_format' must be \"float\" or \"base64\"");
    base64 = fmt && !strcmp(fmt, "base64");
    if (dims > dim)
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "dimensions",
                               "'dimensions' is %lld, more than the model's %lld", (long long)dims, (long long)dim);
    const int64_t out_dim = dims ? dims : dim;
    inputs in = {0};
    float *vec = NULL;
    bool ok = read_inputs(b, hearth_req_field(root, "input"), &in, e);
    size_t n_tokens = 0;
    for (size_t i = 0; ok && i < in.n; i++) {
        if (in.n_ids[i] > max) {
            if (!truncate) {
                ok = hearth_api_fail(e, HEARTH_E_INVALID, "context_length_exceeded", "input",
                                     "input[%zu] has %zu tokens, more than the model's limit of %zu (send "
                                     "\"truncate\": true to cut it)", i, in.n_ids[i], max);
                break;
            }
            in.n_ids[i] = hearth_bert_truncate(b, in.ids[i], in.n_ids[i], max);
        }
        n_tokens += in.n_ids[i];
    }
    if (ok && !(vec = malloc(in.n * (size_t)dim * sizeof *vec))) ok = hearth_api_oom(e);
    hearth_err err = {0};
    if (ok) {
        hearth_status st = hearth_bert_embed(b, (const int32_t *const *)in.ids, in.n_ids, (int64_t)in.n, vec, &err);
        if (st == HEARTH_E_NOMEM) ok = hearth_api_oom(e);
        else if (st) ok = hearth_api_err_from_status(e, st, "input", err.msg);
    }
    if (ok) {
        hearth_jw_obj(w);
        hearth_jw_key(w, "object");
        hearth_jw_cstr(w, "list");
        hearth_jw_key(w, "data");
        hearth_jw_arr(w);
        for (size_t i = 0; i < in.n; i++) {
            float *v = vec + i * (size_t)dim;
            if (dims) hearth_embed_normalize(v, out_dim);
            hearth_jw_obj(w);
            hearth_jw_key(w, "object");
            hearth_jw_cstr(w, "embedding");
            hearth_jw_key(w, "index");
            hearth_jw_int(w, (int64_t)i);
            hearth_jw_key(w, "embedding");
            if (base64) put_base64(w, v, out_dim);
            else {
                hearth_jw_arr(w);
                for (int64_t k = 0; k < out_dim; k++) hearth_jw_num(w, v[k]);
                hearth_jw_arr_end(w);
            }
            hearth_jw_obj_end(w);
        }
        hearth_jw_arr_end(w);
        hearth_jw_key(w, "model");
        hearth_jw_cstr(w, s->model_id);
        hearth_jw_key(w, "usage");
        hearth_jw_obj(w);
        hearth_jw_key(w, "prompt_tokens");
        hearth_jw_int(w, (int64_t)n_tokens);
        hearth_jw_key(w, "total_tokens");
        hearth_jw_int(w, (int64_t)n_tokens);
        hearth_jw_obj_end(w);
        hearth_jw_obj_end(w);
    }
    free(vec);
    inputs_free(&in);
    return ok;
}

void hearth_embeddings(hearth_http_req *r) {
    hearth_api_err e;
    hearth_jw w;
    hearth_jw_init(&w);
    bool ok = false;
    if (!r->srv->p.embedder) {
        hearth_api_fail(&e, HEARTH_E_UNSUPPORTED, "model_not_supported", "model",
                        "the model '%.200s' is a chat model and this server has no embedding model: serve one "
                        "with `hearth serve EMBEDDING_MODEL` for /v1/embeddings", r->srv->model_id);
    } else {
        cJSON *root = hearth_req_parse(r, &e);
        if (root) ok = embed(r->srv, root, &w, &e);
        cJSON_Delete(root);
    }
    if (ok) hearth_http_send_json(r, 200, &w);
    else hearth_http_send_error(r, &e);
    hearth_jw_fini(&w);
}

bool hearth_embeddings_only_route(void (*fn)(hearth_http_req *r)) {
    return fn == hearth_embeddings || fn == hearth_openai_models || fn == hearth_openai_model ||
           fn == hearth_openai_index;
}
