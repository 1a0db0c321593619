/*
 * openai.c - OpenAI request bodies -> hearth_gen_spec, and the model-list endpoints.
 *
 * Parsing is strict about what it reads and silent about what it does not: every field hearth
 * uses is type- and range-checked (400 naming the field), unknown fields are ignored as the
 * OpenAI API does. Before cJSON sees a body it is checked to be UTF-8 and to nest no deeper
 * than MAX_DEPTH (cJSON's own limit is 1000 levels of recursion on this thread's stack).
 *
 * Precedence of sampling values: the request's field, else the server's flag, else hearth's
 * default (temperature 0.7, top_p 1, top_k 0 = off; max_tokens: rest of the context for chat,
 * 512 for completions - mlx_lm.server's and mlx-bun's defaults).
 */
#include "server/openai.h"
#include "server/chat.h"
#include "server/generate.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_DEPTH 64
#define MAX_LOGIT_BIAS 1024
#define DEFAULT_TEMPERATURE 0.7
#define DEFAULT_COMPLETION_TOKENS 512

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

static cJSON *parse_body(hearth_http_req *r, hearth_api_err *e) {
    size_t bad = 0;
    if (r->n_body == 0) {
        hearth_api_err_set(e, 400, "invalid_json", NULL, "the request body is empty: send a JSON object");
        return NULL;
    }
    if (!hearth_utf8_valid(r->body, r->n_body, &bad)) {
        hearth_api_err_set(e, 400, "invalid_encoding", NULL, "the request body is not valid UTF-8 (byte %zu)", bad);
        return NULL;
    }
    if (json_depth(r->body, r->n_body) > MAX_DEPTH) {
        hearth_api_err_set(e, 400, "invalid_json", NULL, "the request JSON nests deeper than %d levels", MAX_DEPTH);
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

/* A field, with JSON null read as absent. */
static const cJSON *field(const cJSON *root, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, k);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

/* Optional number in [lo, hi]: 1 read, 0 absent, -1 error (e filled). */
static int opt_num(const cJSON *root, const char *k, double lo, double hi, double *out, hearth_api_err *e) {
    const cJSON *v = field(root, k);
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

static int opt_int(const cJSON *root, const char *k, double lo, double hi, int64_t *out, hearth_api_err *e) {
    const cJSON *v = field(root, k);
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

static int opt_bool(const cJSON *root, const char *k, bool *out, hearth_api_err *e) {
    const cJSON *v = field(root, k);
    if (!v) return 0;
    if (!cJSON_IsBool(v)) {
        hearth_api_err_set(e, 400, "invalid_type", k, "'%s' must be a boolean", k);
        return -1;
    }
    *out = cJSON_IsTrue(v);
    return 1;
}

static bool unsupported(hearth_api_err *e, const char *param, const char *what) {
    return hearth_api_err_set(e, 400, "unsupported", param, "%s is not supported yet by hearth", what);
}

static bool parse_stop(const cJSON *root, hearth_gen_spec *g, hearth_api_err *e) {
    const cJSON *v = field(root, "stop");
    if (!v) return true;
    const cJSON *one = cJSON_IsString(v) ? v : NULL;
    if (!one && !cJSON_IsArray(v))
        return hearth_api_err_set(e, 400, "invalid_type", "stop", "'stop' must be a string or a list of strings");
    int n = one ? 1 : cJSON_GetArraySize(v);
    if (n > HEARTH_STOP_MAX)
        return hearth_api_err_set(e, 400, "invalid_value", "stop", "at most %d stop strings are allowed", HEARTH_STOP_MAX);
    for (int i = 0; i < n; i++) {
        const cJSON *s = one ? one : cJSON_GetArrayItem(v, i);
        if (!cJSON_IsString(s))
            return hearth_api_err_set(e, 400, "invalid_type", "stop", "'stop' must be a string or a list of strings");
        size_t len = strlen(s->valuestring);
        if (len > HEARTH_STOP_MAX_BYTES)
            return hearth_api_err_set(e, 400, "invalid_value", "stop", "a stop string is longer than %d bytes",
                                      HEARTH_STOP_MAX_BYTES);
        if (!len) continue;
        char *copy = strdup(s->valuestring);
        if (!copy) return hearth_api_err_set(e, 503, "out_of_memory", NULL, "out of memory");
        g->stop_text[g->n_stops] = copy;
        g->stops[g->n_stops].ptr = copy;
        g->stops[g->n_stops].len = len;
        g->n_stops++;
    }
    return true;
}

static bool parse_logit_bias(const cJSON *root, int32_t n_vocab, hearth_gen_spec *g, hearth_api_err *e) {
    const cJSON *v = field(root, "logit_bias");
    if (!v) return true;
    if (!cJSON_IsObject(v))
        return hearth_api_err_set(e, 400, "invalid_type", "logit_bias",
                                  "'logit_bias' must be an object of token ids to numbers");
    int n = cJSON_GetArraySize(v);
    if (n > MAX_LOGIT_BIAS)
        return hearth_api_err_set(e, 400, "invalid_value", "logit_bias", "at most %d logit_bias entries are allowed",
                                  MAX_LOGIT_BIAS);
    if (n == 0) return true;
    g->bias = calloc((size_t)n, sizeof *g->bias);
    if (!g->bias) return hearth_api_err_set(e, 503, "out_of_memory", NULL, "out of memory");
    int i = 0;
    for (const cJSON *it = v->child; it; it = it->next, i++) {
        char *end = NULL;
        long id = it->string && *it->string ? strtol(it->string, &end, 10) : -1;
        if (!end || *end || id < 0 || id >= n_vocab)
            return hearth_api_err_set(e, 400, "invalid_value", "logit_bias",
                                      "logit_bias key '%.40s' is not a token id of this model (0..%d)",
                                      it->string ? it->string : "", n_vocab - 1);
        if (!cJSON_IsNumber(it) || !(it->valuedouble >= -100 && it->valuedouble <= 100))
            return hearth_api_err_set(e, 400, "invalid_value", "logit_bias",
                                      "logit_bias values must be numbers between -100 and 100");
        g->bias[i].token = (int32_t)id;
        g->bias[i].bias = (float)it->valuedouble;
    }
    g->sampling.n_bias = n;
    return true;
}

/* Fields shared by chat and completions. */
static bool parse_common(hearth_server *s, const cJSON *root, bool chat, hearth_gen_spec *g, hearth_api_err *e) {
    double d;
    int64_t i;
    bool b;
    int rc;
    g->chat = chat;
    g->sampling = hearth_sampler_params_default();
    g->sampling.temperature = (float)(s->p.temperature >= 0 ? s->p.temperature : DEFAULT_TEMPERATURE);
    g->sampling.top_p = (float)(s->p.top_p >= 0 ? s->p.top_p : 1.0);
    g->sampling.top_k = s->p.top_k >= 0 ? s->p.top_k : 0;
    g->max_tokens = s->p.max_tokens > 0 ? s->p.max_tokens : chat ? 0 : DEFAULT_COMPLETION_TOKENS;

    if ((rc = opt_int(root, "n", -1e9, 1e9, &i, e)) < 0) return false;
    if (rc && i != 1) {
        if (i < 1) return hearth_api_err_set(e, 400, "invalid_value", "n", "'n' must be at least 1");
        return unsupported(e, "n", "n > 1 (several choices per request)");
    }
    if ((rc = opt_int(root, "best_of", -1e9, 1e9, &i, e)) < 0) return false;
    if (rc && i != 1) return unsupported(e, "best_of", "best_of");
    if (opt_bool(root, "stream", &g->stream, e) < 0) return false;
    const cJSON *so = field(root, "stream_options");
    if (so) {
        if (!cJSON_IsObject(so))
            return hearth_api_err_set(e, 400, "invalid_type", "stream_options", "'stream_options' must be an object");
        if (opt_bool(so, "include_usage", &g->include_usage, e) < 0) return false;
        g->include_usage = g->include_usage && g->stream;
    }
    if ((rc = opt_int(root, "max_tokens", -1e12, 1e12, &i, e)) < 0) return false;
    int64_t mt = rc ? i : 0;
    bool mt_set = rc;
    if (chat && (rc = opt_int(root, "max_completion_tokens", -1e12, 1e12, &i, e)) < 0) return false;
    if (chat && rc) {
        mt = i;
        mt_set = true;
    }
    if (mt_set) {
        if (mt < 1) return hearth_api_err_set(e, 400, "invalid_value", "max_tokens", "'max_tokens' must be at least 1");
        g->max_tokens = mt > INT32_MAX ? INT32_MAX : (int32_t)mt;
        g->max_tokens_set = true;
    }
    if ((rc = opt_num(root, "temperature", 0, 10, &d, e)) < 0) return false;
    if (rc) g->sampling.temperature = (float)d;
    if ((rc = opt_num(root, "top_p", 0, 1, &d, e)) < 0) return false;
    if (rc) g->sampling.top_p = d <= 0 ? 1e-6f : (float)d; /* 0: only the most likely token */
    if ((rc = opt_int(root, "top_k", -1, 1 << 24, &i, e)) < 0) return false;
    if (rc) g->sampling.top_k = i < 0 ? 0 : (int32_t)i;
    if ((rc = opt_num(root, "min_p", 0, 1, &d, e)) < 0) return false;
    if (rc) g->sampling.min_p = (float)d;
    if ((rc = opt_int(root, "seed", -9.2e18, 9.2e18, &i, e)) < 0) return false;
    if (rc) g->sampling.seed = (uint64_t)i;
    else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        g->sampling.seed = ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^
                           atomic_fetch_add_explicit(&s->n_ids, 1, memory_order_relaxed) * 0x9E3779B97F4A7C15ull;
    }
    const char *rp_key = field(root, "repetition_penalty") ? "repetition_penalty" : "repeat_penalty";
    if ((rc = opt_num(root, rp_key, 0.01, 100, &d, e)) < 0) return false;
    if (rc) g->sampling.repeat_penalty = (float)d;
    const char *rn_key = field(root, "repetition_context_size") ? "repetition_context_size" : "repeat_last_n";
    if ((rc = opt_int(root, rn_key, 0, 1 << 24, &i, e)) < 0) return false;
    if (rc) g->sampling.repeat_last_n = (int32_t)i;
    if ((rc = opt_num(root, "presence_penalty", -2, 2, &d, e)) < 0) return false;
    if (rc) g->sampling.presence_penalty = (float)d;
    if ((rc = opt_num(root, "frequency_penalty", -2, 2, &d, e)) < 0) return false;
    if (rc) g->sampling.frequency_penalty = (float)d;
    if (opt_bool(root, "ignore_eos", &g->ignore_eos, e) < 0) return false;
    if (!parse_logit_bias(root, hearth_tok_n_vocab(hearth_model_tok(s->m)), g, e)) return false;
    if (!parse_stop(root, g, e)) return false;

    /* Later work: say so rather than ignore it. */
    if (chat) {
        if ((rc = opt_bool(root, "logprobs", &b, e)) < 0) return false;
        if (rc && b) return unsupported(e, "logprobs", "logprobs");
    } else {
        if ((rc = opt_int(root, "logprobs", 0, 20, &i, e)) < 0) return false;
        if (rc && i > 0) return unsupported(e, "logprobs", "logprobs");
        if ((rc = opt_bool(root, "echo", &b, e)) < 0) return false;
        if (rc && b) return unsupported(e, "echo", "echo");
        const cJSON *sfx = field(root, "suffix");
        if (sfx && (!cJSON_IsString(sfx) || *sfx->valuestring)) return unsupported(e, "suffix", "suffix (insertion)");
    }
    const char *tool_keys[] = {"tools", "functions"};
    for (int k = 0; k < 2; k++) {
        const cJSON *t = field(root, tool_keys[k]);
        if (t && (!cJSON_IsArray(t) || cJSON_GetArraySize(t) > 0))
            return unsupported(e, tool_keys[k], "tool calling (tools / tool_calls)");
    }
    const cJSON *rf = field(root, "response_format");
    if (rf) {
        const cJSON *t = cJSON_IsObject(rf) ? field(rf, "type") : NULL;
        if (!t || !cJSON_IsString(t))
            return hearth_api_err_set(e, 400, "invalid_type", "response_format",
                                      "'response_format' must be an object with a 'type'");
        if (strcmp(t->valuestring, "text")) return unsupported(e, "response_format", "structured output (response_format)");
    }
    return true;
}

void hearth_openai_chat(hearth_http_req *r) {
    hearth_api_err e;
    hearth_gen_spec g = {0};
    cJSON *root = parse_body(r, &e);
    if (!root) goto fail;
    if (!parse_common(r->srv, root, true, &g, &e)) goto fail;
    if (!hearth_chat_prompt(r->srv, root, &g.prompt, &g.n_prompt, &e)) goto fail;
    cJSON_Delete(root);
    hearth_gen_run(r, &g);
    return;
fail:
    cJSON_Delete(root);
    hearth_gen_spec_free(&g);
    hearth_http_send_error(r, &e);
}

/* prompt: a string, a list of token ids, or a list holding exactly one of those. */
static bool completion_prompt(hearth_server *s, const cJSON *root, hearth_gen_spec *g, hearth_api_err *e) {
    const cJSON *p = field(root, "prompt");
    if (!p) return hearth_api_err_set(e, 400, "missing_required_parameter", "prompt", "'prompt' is required");
    if (cJSON_IsArray(p) && cJSON_GetArraySize(p) >= 1 && !cJSON_IsNumber(p->child)) {
        if (cJSON_GetArraySize(p) > 1) return unsupported(e, "prompt", "a list of several prompts (batched completions)");
        p = p->child;
    }
    const hearth_tok *tok = hearth_model_tok(s->m);
    if (cJSON_IsString(p)) {
        size_t n = strlen(p->valuestring);
        if (hearth_tok_encode(tok, p->valuestring, n, true, true, &g->prompt, &g->n_prompt))
            return hearth_api_err_set(e, 400, "invalid_value", "prompt", "the prompt could not be tokenized");
    } else if (cJSON_IsArray(p)) {
        int n = cJSON_GetArraySize(p);
        int32_t n_vocab = hearth_tok_n_vocab(tok);
        g->prompt = malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
        if (!g->prompt) return hearth_api_err_set(e, 503, "out_of_memory", NULL, "out of memory");
        for (const cJSON *it = p->child; it; it = it->next) {
            double v = cJSON_IsNumber(it) ? it->valuedouble : -1;
            if (v != floor(v) || v < 0 || v >= n_vocab)
                return hearth_api_err_set(e, 400, "invalid_value", "prompt",
                                          "prompt token ids must be integers in [0, %d)", n_vocab);
            g->prompt[g->n_prompt++] = (int32_t)v;
        }
    } else {
        return hearth_api_err_set(e, 400, "invalid_type", "prompt",
                                  "'prompt' must be a string, a list of token ids, or a list with one of those");
    }
    if (g->n_prompt == 0) return hearth_api_err_set(e, 400, "invalid_value", "prompt", "the prompt is empty");
    return true;
}

void hearth_openai_completions(hearth_http_req *r) {
    hearth_api_err e;
    hearth_gen_spec g = {0};
    cJSON *root = parse_body(r, &e);
    if (!root) goto fail;
    if (!parse_common(r->srv, root, false, &g, &e)) goto fail;
    if (!completion_prompt(r->srv, root, &g, &e)) goto fail;
    cJSON_Delete(root);
    hearth_gen_run(r, &g);
    return;
fail:
    cJSON_Delete(root);
    hearth_gen_spec_free(&g);
    hearth_http_send_error(r, &e);
}

static void model_json(hearth_server *s, hearth_jw *w) {
    hearth_jw_obj(w);
    hearth_jw_key(w, "id");
    hearth_jw_cstr(w, s->model_id);
    hearth_jw_key(w, "object");
    hearth_jw_cstr(w, "model");
    hearth_jw_key(w, "created");
    hearth_jw_int(w, s->info.started_at);
    hearth_jw_key(w, "owned_by");
    hearth_jw_cstr(w, "hearth");
    hearth_jw_key(w, "context_window");
    hearth_jw_int(w, hearth_engine_n_ctx(s->e));
    hearth_jw_key(w, "chat_template");
    hearth_jw_bool(w, s->tmpl != NULL);
    hearth_jw_obj_end(w);
}

void hearth_openai_models(hearth_http_req *r) {
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_jw_obj(&w);
    hearth_jw_key(&w, "object");
    hearth_jw_cstr(&w, "list");
    hearth_jw_key(&w, "data");
    hearth_jw_arr(&w);
    model_json(r->srv, &w);
    hearth_jw_arr_end(&w);
    hearth_jw_obj_end(&w);
    hearth_http_send_json(r, 200, &w);
    hearth_jw_fini(&w);
}

void hearth_openai_model(hearth_http_req *r) {
    const char *id = r->path + strlen("/v1/models/");
    if (strcmp(id, r->srv->model_id)) {
        hearth_api_err e;
        hearth_api_err_set(&e, 404, "model_not_found", "model", "The model '%.200s' does not exist", id);
        hearth_http_send_error(r, &e);
        return;
    }
    hearth_jw w;
    hearth_jw_init(&w);
    model_json(r->srv, &w);
    hearth_http_send_json(r, 200, &w);
    hearth_jw_fini(&w);
}

void hearth_openai_index(hearth_http_req *r) {
    static const char *const endpoints[] = {
        "POST /v1/chat/completions", "POST /v1/completions", "GET /v1/models", "GET /v1",
        "GET /health", "GET /stats", "GET /metrics",
    };
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_jw_obj(&w);
    hearth_jw_key(&w, "name");
    hearth_jw_cstr(&w, "hearth");
    hearth_jw_key(&w, "version");
    hearth_jw_cstr(&w, HEARTH_VERSION);
    hearth_jw_key(&w, "model");
    hearth_jw_cstr(&w, r->srv->model_id);
    hearth_jw_key(&w, "endpoints");
    hearth_jw_arr(&w);
    for (size_t i = 0; i < sizeof endpoints / sizeof endpoints[0]; i++) hearth_jw_cstr(&w, endpoints[i]);
    hearth_jw_arr_end(&w);
    hearth_jw_obj_end(&w);
    hearth_http_send_json(r, 200, &w);
    hearth_jw_fini(&w);
}
