/*
 * reqjson.c - request-body checks and typed field readers (see reqjson.h).
 *
 * The depth check runs on the raw bytes before cJSON sees them: cJSON recurses once per
 * level (up to 1000) on the connection thread's stack, and a body of 20000 '[' must be
 * refused without that.
 */
#include "server/reqjson.h"

#include <math.h>
#include <string.h>

/* Deepest nesting of [ and { outside strings. */
static int json_depth(const char *s, size_t n) {
    int d = 0, max = 0;
    bool str = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (str) {
            if (c == '\\') i++;
            else if (c == '"') str = false;
        } else if (c == '"') str = true;
        else if (c == '[' || c == '{') {
            if (++d > max) max = d;
        } else if (c == ']' || c == '}') d--;
    }
    return max;
}

cJSON *hearth_req_parse(hearth_http_req *r, hearth_api_err *e) {
    size_t bad = 0;
    if (r->n_body == 0) {
        hearth_api_err_set(e, 400, "invalid_json", NULL, "the request body is empty: send a JSON object");
        return NULL;
    }
    if (!hearth_utf8_valid(r->body, r->n_body, &bad)) {
        hearth_api_err_set(e, 400, "invalid_encoding", NULL, "the request body is not valid UTF-8 (byte %zu)", bad);
        return NULL;
    }
    if (json_depth(r->body, r->n_body) > HEARTH_REQ_MAX_DEPTH) {
        hearth_api_err_set(e, 400, "invalid_json", NULL, "the request JSON nests deeper than %d levels",
                           HEARTH_REQ_MAX_DEPTH);
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(r->body, r->n_body, &end, 0);
    if (root && end) {
        while (end < r->body + r->n_body && (*end == ' ' || *end == '\n' || *end == '\r' || *end == '\t')) end++;
        if (end != r->body + r->n_body) {
            cJSON_Delete(root);
            root = NULL;
        }
    }
    if (!root) {
        size_t at = end && end >= r->body ? (size_t)(end - r->body) : 0;
        hearth_api_err_set(e, 400, "invalid_json", NULL,
                           "We could not parse the JSON body of your request (near byte %zu).", at);
        return NULL;
    }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        hearth_api_err_set(e, 400, "invalid_json", NULL, "the request body must be a JSON object");
        return NULL;
    }
    return root;
}

const cJSON *hearth_req_field(const cJSON *obj, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, k);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

int hearth_req_num(const cJSON *obj, const char *k, double lo, double hi, double *out, hearth_api_err *e) {
    const cJSON *v = hearth_req_field(obj, k);
    if (!v) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
        hearth_api_err_set(e, 400, "invalid_type", k, "'%s' must be a number", k);
        return -1;
    }
    if (v->valuedouble < lo || v->valuedouble > hi) {
        hearth_api_err_set(e, 400, "invalid_value", k, "'%s' must be between %g and %g (got %g)", k, lo, hi,
                           v->valuedouble);
        return -1;
    }
    *out = v->valuedouble;
    return 1;
}

int hearth_req_int(const cJSON *obj, const char *k, double lo, double hi, int64_t *out, hearth_api_err *e) {
    const cJSON *v = hearth_req_field(obj, k);
    if (!v) return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || !isfinite(v->valuedouble)) {
        hearth_api_err_set(e, 400, "invalid_type", k, "'%s' must be an integer", k);
        return -1;
    }
    if (v->valuedouble < lo || v->valuedouble > hi) {
        hearth_api_err_set(e, 400, "invalid_value", k, "'%s' must be between %.0f and %.0f (got %.0f)", k, lo, hi,
                           v->valuedouble);
        return -1;
    }
    *out = (int64_t)v->valuedouble;
    return 1;
}

int hearth_req_bool(const cJSON *obj, const char *k, bool *out, hearth_api_err *e) {
    const cJSON *v = hearth_req_field(obj, k);
    if (!v) return 0;
    if (!cJSON_IsBool(v)) {
        hearth_api_err_set(e, 400, "invalid_type", k, "'%s' must be a boolean", k);
        return -1;
    }
    *out = cJSON_IsTrue(v);
    return 1;
}

int hearth_req_str(const cJSON *obj, const char *k, const char **out, hearth_api_err *e) {
    const cJSON *v = hearth_req_field(obj, k);
    if (!v) return 0;
    if (!cJSON_IsString(v)) {
        hearth_api_err_set(e, 400, "invalid_type", k, "'%s' must be a string", k);
        return -1;
    }
    *out = v->valuestring;
    return 1;
}
