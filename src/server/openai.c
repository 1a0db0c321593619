/*
 * openai.c - OpenAI request bodies -> hearth_gen_spec, and the model-list endpoints.
 *
 * Chat and completions are parse functions run by hearth_gen_handle (generate.h), the one
 * path every generating endpoint of every dialect takes; openai_out.c writes the answers.
 *
 * Parsing is strict about what it reads: every field hearth uses is type- and range-checked
 * (400 naming the field); a known field that would change the output and that hearth does not
 * honour (vLLM's and llama-server's extras: reqjson.h) is a 400 naming it; other unknown
 * fields (user, metadata...) are ignored as the OpenAI API does. Peers' fields that hearth
 * honours: min_tokens, ignore_eos (vLLM), n_probs (= top_logprobs), cache_prompt (accepted:
 * caching is automatic), timings_per_token and return_progress (llama-server). Before cJSON sees a body it is checked to be UTF-8 and to nest no deeper
 * than MAX_DEPTH (cJSON's own limit is 1000 levels of recursion on this thread's stack).
 *
 * Precedence of sampling values: the request's field, else the server's flag, else hearth's
 * default (temperature 0.7, top_p 1, top_k 0 = off; max_tokens: rest of the context for chat,
 * 512 for completions - mlx_lm.server's and mlx-bun's defaults).
 */
#include "server/openai.h"
#include "server/adapters.h"
#include "server/media.h"
#include "server/chat.h"
#include "server/generate.h"
#include "server/infill_api.h"
#include "server/reqjson.h"
#include "server/structured.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LOGIT_BIAS 1024
#define DEFAULT_COMPLETION_TOKENS 512

/* Short names for the field readers of reqjson.h, used on every line below. */
static const cJSON *field(const cJSON *o, const char *k) { return hearth_req_field(o, k); }
static int opt_num(const cJSON *o, const char *k, double lo, double hi, double *out, hearth_api_err *e) {
    return hearth_req_num(o, k, lo, hi, out, e);
}
static int opt_int(const cJSON *o, const char *k, double lo, double hi, int64_t *out, hearth_api_err *e) {
    return hearth_req_int(o, k, lo, hi, out, e);
}
static int opt_bool(const cJSON *o, const char *k, bool *out, hearth_api_err *e) {
    return hearth_req_bool(o, k, out, e);
}

static bool unsupported(hearth_api_err *e, const char *param, const char *what) {
    return hearth_api_fail(e, HEARTH_E_UNSUPPORTED, "unsupported", param, "%s is not supported yet by hearth", what);
}

static bool parse_stop(const cJSON *root, hearth_gen_spec *g, hearth_api_err *e) {
    const cJSON *v = field(root, "stop");
    if (!v) return true;
    const cJSON *one = cJSON_IsString(v) ? v : NULL;
    if (!one && !cJSON_IsArray(v))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "stop",
                               "'stop' must be a string or a list of strings");
    for (const cJSON *s = one ? one : v->child; s; s = one ? NULL : s->next) {
        if (!cJSON_IsString(s))
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "stop",
                                   "'stop' must be a string or a list of strings");
        if (!hearth_gen_add_stop(g, s->valuestring, "stop", e)) return false;
    }
    return true;
}

static bool parse_logit_bias(const cJSON *root, int32_t n_vocab, hearth_gen_spec *g, hearth_api_err *e) {
    const cJSON *v = field(root, "logit_bias");
    if (!v) return true;
    if (!cJSON_IsObject(v))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "logit_bias",
                               "'logit_bias' must be an object of token ids to numbers");
    int n = cJSON_GetArraySize(v);
    if (n > MAX_LOGIT_BIAS)
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "logit_bias",
                               "at most %d logit_bias entries are allowed", MAX_LOGIT_BIAS);
    if (n == 0) return true;
    g->bias = calloc((size_t)n, sizeof *g->bias);
    if (!g->bias) return hearth_api_oom(e);
    int i = 0;
    for (const cJSON *it = v->child; it; it = it->next, i++) {
        char *end = NULL;
        long id = it->string && *it->string ? strtol(it->string, &end, 10) : -1;
        if (!end || *end || id < 0 || id >= n_vocab)
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "logit_bias",
                                   "logit_bias key '%.40s' is not a token id of this model (0..%d)",
                                   it->string ? it->string : "", n_vocab - 1);
        if (!cJSON_IsNumber(it) || !(it->valuedouble >= -100 && it->valuedouble <= 100))
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "logit_bias",
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
    hearth_openai_out *o = calloc(1, sizeof *o);
    hearth_gen_spec_init(s, g, chat ? &hearth_openai_chat_out : &hearth_openai_text_out,
                         chat ? 0 : DEFAULT_COMPLETION_TOKENS);
    g->ctx = o;
    if (!o) return hearth_api_oom(e);
    g->prompt_param = chat ? "messages" : "prompt";

    /* n choices (prefilled once, choice i sampled with seed + i: generate.h); best_of >= n runs
     * best_of and answers the n with the highest sum of token logprobs (not streamed, as OpenAI) */
    const char *n_key = field(root, "n") ? "n" : "n_cmpl"; /* llama-server's name for n */
    if ((rc = opt_int(root, n_key, -1e9, 1e9, &i, e)) < 0) return false;
    if (rc && (i < 1 || i > HEARTH_CHOICES_MAX))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", n_key, "'%s' must be between 1 and %d",
                               n_key, HEARTH_CHOICES_MAX);
    g->n_choices = rc ? (int32_t)i : 1;
    if (opt_bool(root, "stream", &g->stream, e) < 0) return false;
    if ((rc = opt_int(root, "best_of", -1e9, 1e9, &i, e)) < 0) return false;
    if (rc && (i < g->n_choices || i > HEARTH_CHOICES_MAX))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "best_of",
                               "'best_of' must be at least n (%d) and at most %d", g->n_choices, HEARTH_CHOICES_MAX);
    if (rc && i > g->n_choices && g->stream)
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "best_of",
                               "'best_of' greater than n cannot be streamed (the best are known at the end)");
    g->best_of = rc ? (int32_t)i : g->n_choices;
    const cJSON *so = field(root, "stream_options");
    if (so) {
        if (!cJSON_IsObject(so))
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "stream_options",
                                   "'stream_options' must be an object");
        if (opt_bool(so, "include_usage", &o->include_usage, e) < 0) return false;
        o->include_usage = o->include_usage && g->stream;
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
        if (mt < 1) return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "max_tokens",
                                           "'max_tokens' must be at least 1");
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
    if ((rc = opt_num(root, "xtc_probability", 0, 1, &d, e)) < 0) return false;
    if (rc) g->sampling.xtc_probability = (float)d;
    if ((rc = opt_num(root, "xtc_threshold", 0, 1, &d, e)) < 0) return false;
    if (rc) g->sampling.xtc_threshold = (float)d;
    if (!hearth_req_refuse_unhonoured(root, true, e)) return false;
    if (opt_bool(root, "ignore_eos", &g->ignore_eos, e) < 0) return false;
    if ((rc = opt_int(root, "min_tokens", 0, 1e9, &i, e)) < 0) return false; /* vLLM's */
    if (rc && mt_set && i > g->max_tokens)
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "min_tokens",
                               "'min_tokens' (%lld) must not be larger than 'max_tokens' (%d)", (long long)i,
                               g->max_tokens);
    if (rc) g->min_tokens = (int32_t)i;
    if (opt_bool(root, "cache_prompt", &b, e) < 0) return false; /* llama-server's: caching is automatic */
    o->timings = s->p.timings;
    if (opt_bool(root, "timings_per_token", &o->timings_per_token, e) < 0) return false;
    if (o->timings_per_token) o->timings = true; /* in the body too */
    o->timings_per_token = o->timings_per_token && g->stream;
    if (opt_bool(root, "return_progress", &g->progress, e) < 0) return false; /* llama-server's */
    int64_t n_probs = 0; /* llama-server's spelling of top_logprobs */
    if ((rc = opt_int(root, "n_probs", 0, HEARTH_TOP_LOGPROBS_MAX, &n_probs, e)) < 0) return false;
    if (!parse_logit_bias(root, hearth_tok_n_vocab(hearth_model_tok(s->m)), g, e)) return false;
    if (!parse_stop(root, g, e)) return false;

    if (chat) { /* logprobs: bool, top_logprobs: 0..20 alternatives */
        if (opt_bool(root, "logprobs", &g->logprobs, e) < 0) return false;
        if ((rc = opt_int(root, "top_logprobs", 0, HEARTH_TOP_LOGPROBS_MAX, &i, e)) < 0) return false;
        if (rc && !g->logprobs && i > 0)
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "top_logprobs",
                                   "'top_logprobs' needs 'logprobs' set to true");
        if (rc) g->top_logprobs = (int32_t)i;
        if (n_probs > 0 && !field(root, "logprobs") && !rc) {
            g->logprobs = true;
            g->top_logprobs = (int32_t)n_probs;
        }
    } else { /* logprobs: N alternatives besides the chosen token (0..20) */
        if ((rc = opt_int(root, "logprobs", 0, HEARTH_TOP_LOGPROBS_MAX, &i, e)) < 0) return false;
        if (rc || n_probs > 0) {
            g->logprobs = true;
            g->top_logprobs = (int32_t)(rc ? i : n_probs);
        }
        if ((rc = opt_bool(root, "echo", &b, e)) < 0) return false;
        if (rc && b) return unsupported(e, "echo", "echo");
        const cJSON *sfx = field(root, "suffix"); /* insertion: infill_api.h */
        if (sfx && !cJSON_IsString(sfx))
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "suffix", "'suffix' must be a string");
    }
    const cJSON *fn = field(root, "functions"); /* the deprecated spelling of tools */
    if (fn && (!cJSON_IsArray(fn) || cJSON_GetArraySize(fn) > 0))
        return unsupported(e, "functions", "'functions' (the deprecated form of 'tools'; send 'tools')");
    /* structured output (structured.h): chat's through chat.c, after the template; a completion's
     * constrains the text that follows the raw prompt (as llama-server and vLLM do) */
    if (!chat && !hearth_structured_request(root, NULL, &g->constraint, e)) return false;
    return true;
}

static bool parse_chat(hearth_server *s, const cJSON *root, hearth_span raw, hearth_gen_spec *g, hearth_api_err *e) {
    if (!parse_common(s, root, true, g, e)) return false;
    const char *rf = NULL; /* llama-server's: hearth always splits reasoning into reasoning_content */
    if (hearth_req_str(root, "reasoning_format", &rf, e) < 0) return false;
    if (rf && strcmp(rf, "auto") && strcmp(rf, "deepseek"))
        return hearth_api_fail(e, HEARTH_E_UNSUPPORTED, "unsupported", "reasoning_format",
                               "reasoning_format '%.40s' is not supported by hearth: the reasoning is always split "
                               "into reasoning_content ('auto' or 'deepseek')", rf);
    hearth_chat_opts co = {.raw = raw, .continue_final = -1, .want_images = true};
    bool cont = false; /* vLLM's field; unset: continue a final assistant message (llama-server) */
    int rc = hearth_req_bool(root, "continue_final_message", &cont, e);
    if (rc < 0) return false;
    if (rc) co.continue_final = cont;
    if (!hearth_chat_prompt_opts(s, root, &co, &g->prompt, &g->n_prompt, e)) return false;
    g->tools = co.tools;
    g->reasoning = co.reasoning;
    g->reasoning_open = co.reasoning_open;
    g->constraint = co.constraint;
    g->constraint_fed = co.constraint_fed;
    g->images = co.images;
    g->n_images = co.n_images;
    return true;
}

void hearth_openai_chat(hearth_http_req *r) { hearth_gen_handle(r, parse_chat); }

/* prompt: a string, a list of token ids, or a list holding exactly one of those. */
static bool completion_prompt(hearth_server *s, const cJSON *root, hearth_gen_spec *g, hearth_api_err *e) {
    const cJSON *p = field(root, "prompt");
    if (!p) return hearth_api_fail(e, HEARTH_E_INVALID, "missing_required_parameter", "prompt", "'prompt' is required");
    if (cJSON_IsArray(p) && cJSON_GetArraySize(p) >= 1 && !cJSON_IsNumber(p->child)) {
        if (cJSON_GetArraySize(p) > 1) return unsupported(e, "prompt", "a list of several prompts (batched completions)");
        p = p->child;
    }
    const hearth_tok *tok = hearth_model_tok(s->m);
    if (cJSON_IsString(p)) {
        size_t n = strlen(p->valuestring);
        if (hearth_tok_encode(tok, p->valuestring, n, true, true, &g->prompt, &g->n_prompt))
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "prompt", "the prompt could not be tokenized");
    } else if (cJSON_IsArray(p)) {
        int n = cJSON_GetArraySize(p);
        int32_t n_vocab = hearth_tok_n_vocab(tok);
        g->prompt = malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
        if (!g->prompt) return hearth_api_oom(e);
        for (const cJSON *it = p->child; it; it = it->next) {
            double v = cJSON_IsNumber(it) ? it->valuedouble : -1;
            if (v != floor(v) || v < 0 || v >= n_vocab)
                return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "prompt",
                                       "prompt token ids must be integers in [0, %d)", n_vocab);
            g->prompt[g->n_prompt++] = (int32_t)v;
        }
    } else {
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "prompt",
                               "'prompt' must be a string, a list of token ids, or a list with one of those");
    }
    if (g->n_prompt == 0) return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "prompt", "the prompt is empty");
    return true;
}

static bool parse_completions(hearth_server *s, const cJSON *root, hearth_span raw, hearth_gen_spec *g,
                              hearth_api_err *e) {
    (void)raw;
    const cJSON *sfx = field(root, "suffix");
    if (!parse_common(s, root, false, g, e)) return false;
    if (sfx && *sfx->valuestring) return hearth_infill_completion_prompt(s, root, g, e);
    return completion_prompt(s, root, g, e);
}

void hearth_openai_completions(hearth_http_req *r) { hearth_gen_handle(r, parse_completions); }

/* The served model, or with adapter != NULL its "<model>:<adapter>" id (adapters_api.c). */
static void model_json(hearth_server *s, hearth_jw *w, const char *adapter) {
    hearth_jw_obj(w);
    hearth_jw_key(w, "id");
    if (adapter) {
        char id[512];
        snprintf(id, sizeof id, "%s:%s", s->model_id, adapter);
        hearth_jw_cstr(w, id);
        hearth_jw_key(w, "parent");
        hearth_jw_cstr(w, s->model_id);
        hearth_jw_key(w, "adapter");
        hearth_jw_cstr(w, adapter);
    } else {
        hearth_jw_cstr(w, s->model_id);
    }
    hearth_jw_key(w, "object");
    hearth_jw_cstr(w, "model");
    hearth_jw_key(w, "created");
    hearth_jw_int(w, s->info.started_at);
    hearth_jw_key(w, "owned_by");
    hearth_jw_cstr(w, "hearth");
    hearth_jw_key(w, "context_window");
    hearth_jw_int(w, s->info.n_ctx);
    hearth_jw_key(w, "chat_template");
    hearth_jw_bool(w, s->tmpl != NULL);
    hearth_jw_key(w, "capabilities"); /* what the model takes as input: text, and vision /
                                        * audio when it has the tower (store/modality.h), as
                                        * Ollama's "capabilities" names them */
    hearth_jw_arr(w);
    hearth_jw_cstr(w, "text");
    if (s->media_caps & HEARTH_MEDIA_CAP_IMAGE) hearth_jw_cstr(w, "vision");
    if (s->media_caps & HEARTH_MEDIA_CAP_AUDIO) hearth_jw_cstr(w, "audio");
    hearth_jw_arr_end(w);
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
    model_json(r->srv, &w, NULL);
    char id[HEARTH_ADAPTER_ID_MAX];
    for (int i = 0; r->srv->adapters && hearth_adapters_id_at(r->srv->adapters, i, id, sizeof id); i++)
        model_json(r->srv, &w, id);
    hearth_jw_arr_end(&w);
    hearth_jw_obj_end(&w);
    hearth_http_send_json(r, 200, &w);
    hearth_jw_fini(&w);
}

void hearth_openai_model(hearth_http_req *r) {
    const char *id = r->path + strlen("/v1/models/");
    size_t n = strlen(r->srv->model_id);
    const char *adapter = !strncmp(id, r->srv->model_id, n) && id[n] == ':' ? id + n + 1 : NULL;
    uint64_t uid = 0;
    const hearth_lora *a = adapter && r->srv->adapters ? hearth_adapters_get(r->srv->adapters, adapter, &uid) : NULL;
    hearth_lora_release(a); /* only asked whether it is mounted */
    if (adapter ? !a : strcmp(id, r->srv->model_id) != 0) {
        hearth_api_err e;
        hearth_api_fail(&e, HEARTH_E_NOTFOUND, "model_not_found", "model", "The model '%.200s' does not exist", id);
        hearth_http_send_error(r, &e);
        return;
    }
    hearth_jw w;
    hearth_jw_init(&w);
    model_json(r->srv, &w, adapter);
    hearth_http_send_json(r, 200, &w);
    hearth_jw_fini(&w);
}

void hearth_openai_index(hearth_http_req *r) {
    static const char *const endpoints[] = {
        "POST /v1/chat/completions", "POST /v1/completions", "POST /infill", "POST /v1/messages",
        "POST /v1/messages/count_tokens", "POST /v1/responses", "GET /v1/responses/{id}",
        "DELETE /v1/responses/{id}", "GET /v1/models", "GET /v1", "GET /v1/adapters", "POST /v1/adapters",
        "DELETE /v1/adapters/{id}", "GET /v1/adapters/available",
        "GET /health", "GET /stats", "GET /metrics", "POST /tokenize", "POST /detokenize",
        "POST /apply-template", "GET /props", "POST /v1/embeddings",
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
