/*
 * infill_api.c - POST /infill and /v1/completions' suffix (infill_api.h): request fields to a
 * hearth_gen_spec whose prompt infill.c builds, and llama-server's /completion response shape.
 *
 * The prompt budget uses llama-server's defaults: a batch of HEARTH_INFILL_BATCH tokens, the
 * engine's context, and n_predict -1 (llama-server reads its own --n-predict there, not the
 * request's; hearth's counterpart is --max-tokens).
 */
#include "server/infill_api.h"
#include "server/infill.h"
#include "server/reqjson.h"
#include "server/sse.h"

#include "base/buf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int32_t *v;
    size_t   n, cap;
} ids;

/* llama-server's "mixed" prompt: a string, or a list of strings and token ids (a string is
 * tokenized without BOS, special-token text kept plain). */
static bool mixed_tokens(const hearth_tok *tok, const cJSON *v, const char *param, ids *out, hearth_api_err *e) {
    *out = (ids){0};
    bool one = cJSON_IsString(v);
    if (!one && !cJSON_IsArray(v))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", param,
                               "'%s' must be a string or a list of strings and token ids", param);
    int32_t n_vocab = hearth_tok_n_vocab(tok);
    for (const cJSON *it = one ? v : v->child; it; it = one ? NULL : it->next) {
        int32_t *part = NULL;
        size_t n_part = 0, n_new;
        if (cJSON_IsString(it)) {
            const char *t = it->valuestring;
            hearth_status st = hearth_tok_encode(tok, t, strlen(t), false, false, &part, &n_part);
            if (st == HEARTH_E_NOMEM) return hearth_api_oom(e);
            if (st)
                return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", param, "'%s' could not be tokenized",
                                       param);
        } else {
            double d = cJSON_IsNumber(it) ? it->valuedouble : -1;
            if (d != floor(d) || d < 0 || d >= n_vocab)
                return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", param,
                                       "'%s' holds something that is neither a string nor a token id in [0, %d)", param,
                                       n_vocab);
            if (!(part = malloc(sizeof *part))) return hearth_api_oom(e);
            part[0] = (int32_t)d;
            n_part = 1;
        }
        n_new = out->n + n_part;
        if (!hearth_buf_grow(&out->v, &out->cap, n_new, sizeof *out->v, 16)) {
            free(part);
            return hearth_api_oom(e);
        }
        if (n_part) memcpy(out->v + out->n, part, n_part * sizeof *part);
        out->n = n_new;
        free(part);
    }
    return true;
}

static bool check_model(hearth_server *s, hearth_api_err *e) {
    char why[96];
    if (hearth_infill_supported(hearth_model_tok(s->m), why, sizeof why)) return true;
    return hearth_api_fail(e, HEARTH_E_UNSUPPORTED, "unsupported", NULL,
                           "Fill-in-the-middle is not supported by this model: its vocabulary has %s", why);
}

/* Build g->prompt from token parts and extra files. */
static bool build(hearth_server *s, hearth_infill_parts *p, hearth_gen_spec *g, hearth_api_err *e) {
    p->n_batch = HEARTH_INFILL_BATCH;
    p->n_ctx = hearth_engine_n_ctx(s->e);
    p->n_predict = s->p.max_tokens > 0 ? s->p.max_tokens : -1;
    hearth_status st = hearth_infill_build(hearth_model_tok(s->m), p, &g->prompt, &g->n_prompt);
    if (st == HEARTH_E_NOMEM) return hearth_api_oom(e);
    if (st)
        return hearth_api_fail(e, st, "invalid_value", g->prompt_param,
                               "the fill-in-the-middle prompt could not be built");
    return true;
}

bool hearth_infill_completion_prompt(hearth_server *s, const cJSON *root, hearth_gen_spec *g, hearth_api_err *e) {
    if (!check_model(s, e)) return false;
    const hearth_tok *tok = hearth_model_tok(s->m);
    const cJSON *p = hearth_req_field(root, "prompt"), *sfx = hearth_req_field(root, "suffix");
    if (!p) return hearth_api_fail(e, HEARTH_E_INVALID, "missing_required_parameter", "prompt", "'prompt' is required");
    if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1 && !cJSON_IsNumber(p->child)) p = p->child;
    if (cJSON_IsArray(p) && p->child && !cJSON_IsNumber(p->child))
        return hearth_api_fail(e, HEARTH_E_UNSUPPORTED, "unsupported", "prompt",
                               "a list of several prompts (batched completions) is not supported yet by hearth");
    ids pre = {0}, suf = {0};
    bool ok = mixed_tokens(tok, p, "prompt", &pre, e) && mixed_tokens(tok, sfx, "suffix", &suf, e);
    if (ok) {
        hearth_infill_parts parts = {.prefix = pre.v, .n_prefix = pre.n, .suffix = suf.v, .n_suffix = suf.n};
        ok = build(s, &parts, g, e);
    }
    free(pre.v);
    free(suf.v);
    return ok;
}

/* ---- /infill ---- */

typedef struct {
    char  **fields;   /* response_fields: the final object's keys to send (NULL: all) */
    int     n_fields;
} infill_ctx;

static void ctx_free(void *ctx) {
    infill_ctx *c = ctx;
    if (!c) return;
    for (int i = 0; i < c->n_fields; i++) free(c->fields[i]);
    free(c->fields);
    free(c);
}

/* response_fields: llama-server sends only these keys of the final object, each under its
 * path's name ("timings/prompt_n" stays a flat key). hearth's object has no nested members,
 * so a path with a '/' names nothing and is left out, as llama-server leaves out a path that
 * is not there. */
static bool parse_fields(const cJSON *root, infill_ctx *c, hearth_api_err *e) {
    const cJSON *f = hearth_req_field(root, "response_fields");
    if (!f) return true;
    if (!cJSON_IsArray(f))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "response_fields",
                               "'response_fields' must be a list of strings");
    int n = cJSON_GetArraySize(f);
    if (n == 0) return true;
    if (!(c->fields = calloc((size_t)n, sizeof *c->fields))) return hearth_api_oom(e);
    for (const cJSON *it = f->child; it; it = it->next) {
        if (!cJSON_IsString(it))
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "response_fields",
                                   "'response_fields' must be a list of strings");
        if (!(c->fields[c->n_fields] = strdup(it->valuestring))) return hearth_api_oom(e);
        c->n_fields++;
    }
    return true;
}

extern const hearth_gen_dialect hearth_infill_out;

static bool parse_extra(const cJSON *x, hearth_infill_chunk **out, size_t *n, hearth_api_err *e) {
    static const char msg[] = "'input_extra' must be a list of {\"filename\": string, \"text\": string}";
    *out = NULL;
    *n = 0;
    if (!x) return true;
    if (!cJSON_IsArray(x)) return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "input_extra", msg);
    int count = cJSON_GetArraySize(x);
    if (count == 0) return true;
    hearth_infill_chunk *c = calloc((size_t)count, sizeof *c);
    if (!c) return hearth_api_oom(e);
    *out = c;
    for (const cJSON *it = x->child; it; it = it->next, c++) {
        const cJSON *t = cJSON_IsObject(it) ? hearth_req_field(it, "text") : NULL;
        const cJSON *f = cJSON_IsObject(it) ? hearth_req_field(it, "filename") : NULL;
        if (!cJSON_IsString(t) || (f && !cJSON_IsString(f)))
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "input_extra", msg);
        c->text = t->valuestring;
        c->n_text = strlen(t->valuestring);
        if (f) {
            c->filename = f->valuestring;
            c->n_filename = strlen(f->valuestring);
        }
        (*n)++;
    }
    return true;
}

static bool parse_prompt(hearth_server *s, const cJSON *root, hearth_gen_spec *g, hearth_api_err *e) {
    const hearth_tok *tok = hearth_model_tok(s->m);
    const cJSON *pre = hearth_req_field(root, "input_prefix"), *suf = hearth_req_field(root, "input_suffix");
    if (!pre)
        return hearth_api_fail(e, HEARTH_E_INVALID, "missing_required_parameter", "input_prefix",
                               "'input_prefix' is required");
    if (!suf)
        return hearth_api_fail(e, HEARTH_E_INVALID, "missing_required_parameter", "input_suffix",
                               "'input_suffix' is required");
    const char *cursor = "";
    if (hearth_req_str(root, "prompt", &cursor, e) < 0) return false;
    ids a = {0}, b = {0}, c = {0};
    hearth_infill_chunk *extra = NULL;
    size_t n_extra = 0;
    bool ok = mixed_tokens(tok, pre, "input_prefix", &a, e) && mixed_tokens(tok, suf, "input_suffix", &b, e) &&
              parse_extra(hearth_req_field(root, "input_extra"), &extra, &n_extra, e);
    if (ok) { /* the cursor's text: special-token text parsed, no BOS (llama-server's) */
        hearth_status st = hearth_tok_encode(tok, cursor, strlen(cursor), false, true, &c.v, &c.n);
        if (st) ok = st == HEARTH_E_NOMEM ? hearth_api_oom(e)
                                          : hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "prompt",
                                                            "'prompt' could not be tokenized");
    }
    if (ok) {
        hearth_infill_parts parts = {.prefix = a.v, .n_prefix = a.n, .suffix = b.v, .n_suffix = b.n,
                                     .prompt = c.v, .n_prompt = c.n, .extra = extra, .n_extra = n_extra};
        ok = build(s, &parts, g, e);
    }
    free(a.v);
    free(b.v);
    free(c.v);
    free(extra);
    return ok;
}

/* Fields that would change the output and that /infill does not honour: reqjson.h's list,
 * minus what is read here (n_predict, response_fields) and what llama.vim sends on every
 * request, accepted on /infill so that editor plugin works (docs/server.md lists them):
 * samplers (hearth's order is fixed), n_indent, t_max_prompt_ms, t_max_predict_ms. */
static bool refuse_unhonoured(const cJSON *root, hearth_api_err *e) {
    static const char *const accepted[] = {"n_predict", "samplers", "n_indent", "t_max_prompt_ms",
                                           "t_max_predict_ms", "response_fields", "cache_prompt", "id_slot"};
    cJSON *copy = cJSON_Duplicate(root, true);
    if (!copy) return hearth_api_oom(e);
    for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++)
        cJSON_DeleteItemFromObjectCaseSensitive(copy, accepted[i]);
    bool ok = hearth_req_refuse_unhonoured(copy, true, e);
    cJSON_Delete(copy);
    return ok;
}

/* *n_predict: the request's (-1 when unset or -1). */
static bool parse_infill(hearth_server *s, const cJSON *root, hearth_gen_spec *g, int64_t *n_predict,
                         hearth_api_err *e) {
    double d;
    int64_t i;
    int rc;
    hearth_gen_spec_init(s, g, &hearth_infill_out, 0);
    g->prompt_param = "input_prefix";
    if (!(g->ctx = calloc(1, sizeof(infill_ctx)))) return hearth_api_oom(e);
    if (!check_model(s, e)) return false;
    *n_predict = -1;
    const char *np_key = hearth_req_field(root, "n_predict") ? "n_predict" : "max_tokens";
    if ((rc = hearth_req_int(root, np_key, -1, 1e12, &i, e)) < 0) return false;
    if (rc && i >= 0) {
        *n_predict = i;
        g->max_tokens = i > INT32_MAX ? INT32_MAX : (int32_t)(i > 0 ? i : 1);
        g->max_tokens_set = true;
    }
    if ((rc = hearth_req_num(root, "temperature", 0, 10, &d, e)) < 0) return false;
    if (rc) g->sampling.temperature = (float)d;
    if ((rc = hearth_req_num(root, "top_p", 0, 1, &d, e)) < 0) return false;
    if (rc) g->sampling.top_p = d <= 0 ? 1e-6f : (float)d;
    if ((rc = hearth_req_int(root, "top_k", -1, 1 << 24, &i, e)) < 0) return false;
    if (rc) g->sampling.top_k = i < 0 ? 0 : (int32_t)i;
    if ((rc = hearth_req_num(root, "min_p", 0, 1, &d, e)) < 0) return false;
    if (rc) g->sampling.min_p = (float)d;
    if ((rc = hearth_req_int(root, "seed", -9.2e18, 9.2e18, &i, e)) < 0) return false;
    if (rc && i != -1) g->sampling.seed = (uint64_t)i; /* -1: random (llama-server's) */
    if ((rc = hearth_req_num(root, "repeat_penalty", 0.01, 100, &d, e)) < 0) return false;
    if (rc) g->sampling.repeat_penalty = (float)d;
    if ((rc = hearth_req_int(root, "repeat_last_n", -1, 1 << 24, &i, e)) < 0) return false;
    if (rc) g->sampling.repeat_last_n = i < 0 ? hearth_engine_n_ctx(s->e) : (int32_t)i;
    if ((rc = hearth_req_num(root, "presence_penalty", -2, 2, &d, e)) < 0) return false;
    if (rc) g->sampling.presence_penalty = (float)d;
    if ((rc = hearth_req_num(root, "frequency_penalty", -2, 2, &d, e)) < 0) return false;
    if (rc) g->sampling.frequency_penalty = (float)d;
    if (hearth_req_bool(root, "stream", &g->stream, e) < 0) return false;
    if (hearth_req_bool(root, "ignore_eos", &g->ignore_eos, e) < 0) return false;
    if (!parse_fields(root, g->ctx, e)) return false;
    if ((rc = hearth_req_int(root, "n_probs", 0, 1e9, &i, e)) < 0) return false;
    if (rc && i > 0)
        return hearth_api_fail(e, HEARTH_E_UNSUPPORTED, "unsupported", "n_probs",
                               "'n_probs' is not supported on /infill yet");
    const cJSON *lb = hearth_req_field(root, "logit_bias");
    if (lb && ((!cJSON_IsArray(lb) && !cJSON_IsObject(lb)) || lb->child))
        return hearth_api_fail(e, HEARTH_E_UNSUPPORTED, "unsupported", "logit_bias",
                               "'logit_bias' is not supported on /infill yet");
    const cJSON *sm = hearth_req_field(root, "samplers");
    if (sm && !cJSON_IsArray(sm) && !cJSON_IsString(sm))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "samplers", "'samplers' must be a list of names");
    if (!refuse_unhonoured(root, e)) return false;
    const cJSON *stop = hearth_req_field(root, "stop");
    if (stop) {
        bool one = cJSON_IsString(stop);
        if (!one && !cJSON_IsArray(stop))
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "stop", "'stop' must be a list of strings");
        for (const cJSON *it = one ? stop : stop->child; it; it = one ? NULL : it->next) {
            if (!cJSON_IsString(it))
                return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "stop", "'stop' must be a list of strings");
            if (!hearth_gen_add_stop(g, it->valuestring, "stop", e)) return false;
        }
    }
    if (!parse_prompt(s, root, g, e)) return false;
    return true;
}

/* ---- the /completion shape ---- */

static const char *stop_type(const hearth_gen_out *g) {
    switch (g->end) {
    case HEARTH_GEN_END_EOG: return "eos";
    case HEARTH_GEN_END_STOP: return "word";
    default: return "limit";
    }
}

/* Write key k of a frame unless the final object's response_fields leave it out. */
static bool key(const hearth_gen_out *g, hearth_jw *w, bool final, const char *k) {
    const infill_ctx *c = g->ctx;
    bool want = !final || !c || !c->fields;
    for (int i = 0; !want && i < c->n_fields; i++) want = !strcmp(c->fields[i], k);
    if (want) hearth_jw_key(w, k);
    return want;
}

/* A frame: {"content": piece, "stop": false, ...} while streaming, the whole final object at
 * the end (stop = true). */
static void frame(const hearth_gen_out *g, hearth_jw *w, hearth_span content, bool stop) {
    hearth_jw_obj(w);
    if (key(g, w, stop, "index")) hearth_jw_int(w, 0);
    if (key(g, w, stop, "content")) hearth_jw_str(w, content.ptr, content.len);
    if (key(g, w, stop, "tokens")) {
        hearth_jw_arr(w);
        hearth_jw_arr_end(w);
    }
    if (key(g, w, stop, "stop")) hearth_jw_bool(w, stop);
    if (key(g, w, stop, "id_slot")) hearth_jw_int(w, stop ? 0 : -1);
    if (key(g, w, stop, "tokens_predicted")) hearth_jw_int(w, g->n_gen);
    if (key(g, w, stop, "tokens_evaluated")) hearth_jw_int(w, (int64_t)g->spec->n_prompt);
    if (!stop) {
        hearth_jw_obj_end(w);
        return;
    }
    if (key(g, w, stop, "model")) hearth_jw_cstr(w, g->srv->model_id);
    if (key(g, w, stop, "prompt")) {
        char *text = hearth_tok_decode(hearth_model_tok(g->srv->m), g->spec->prompt, g->spec->n_prompt, true);
        hearth_jw_cstr(w, text ? text : "");
        free(text);
    }
    if (key(g, w, stop, "has_new_line")) hearth_jw_bool(w, memchr(g->text.ptr, '\n', g->text.len) != NULL);
    if (key(g, w, stop, "truncated")) hearth_jw_bool(w, false);
    if (key(g, w, stop, "stop_type")) hearth_jw_cstr(w, stop_type(g));
    if (key(g, w, stop, "stopping_word")) {
        bool word = g->end == HEARTH_GEN_END_STOP;
        hearth_jw_str(w, word ? g->stop.ptr : "", word ? g->stop.len : 0);
    }
    if (key(g, w, stop, "tokens_cached")) hearth_jw_int(w, (int64_t)g->spec->n_prompt + g->n_gen);
    hearth_jw_obj_end(w);
}

static void final_obj(const hearth_gen_out *g, hearth_jw *w, hearth_span content) { frame(g, w, content, true); }

static void out_start(hearth_gen_out *g, hearth_jw *w) { (void)g, (void)w; }

static void out_text(hearth_gen_out *g, hearth_jw *w, hearth_span piece) {
    hearth_sse_begin(w);
    frame(g, w, piece, false);
    hearth_sse_end(w);
}

static void out_end(hearth_gen_out *g, hearth_jw *w) {
    hearth_sse_begin(w);
    final_obj(g, w, (hearth_span){"", 0});
    hearth_sse_end(w);
}

static void out_error(hearth_gen_out *g, hearth_jw *w, const hearth_api_err *e) {
    (void)g;
    hearth_sse_begin(w);
    hearth_api_err_json(w, e);
    hearth_sse_end(w);
}

static void out_body(hearth_gen_out *g, hearth_jw *w) { final_obj(g, w, g->text); }

const hearth_gen_dialect hearth_infill_out = {
    .id_prefix = "cmpl-", .start = out_start, .text = out_text, .end = out_end,
    .error = out_error, .body = out_body, .ctx_free = ctx_free,
};

/* n_predict 0: the prompt is checked and built but nothing generated (llama.vim sends such
 * requests to warm the cache); the answer is the final object with no content. */
static void answer_empty(hearth_http_req *r, hearth_gen_spec *g) {
    hearth_gen_out out = {.srv = r->srv, .spec = g, .ctx = g->ctx, .end = HEARTH_GEN_END_LENGTH, .text = {"", 0}};
    hearth_jw w;
    hearth_jw_init(&w);
    if (g->stream) { /* one frame, as a stream */
        hearth_sse_begin(&w);
        final_obj(&out, &w, out.text);
        hearth_sse_end(&w);
        hearth_http_send(r, 200, "text/event-stream", w.b.p ? w.b.p : "", w.b.len);
    } else {
        final_obj(&out, &w, out.text);
        hearth_http_send_json(r, 200, &w);
    }
    hearth_jw_fini(&w);
}

void hearth_infill_handle(hearth_http_req *r) {
    hearth_api_err e;
    hearth_gen_spec g = {0};
    int64_t n_predict = -1;
    cJSON *root = hearth_req_parse(r, &e);
    bool ok = root && parse_infill(r->srv, root, &g, &n_predict, &e) && hearth_gen_parse_common(root, &g, &e);
    cJSON_Delete(root);
    if (ok && n_predict == 0) {
        answer_empty(r, &g);
        hearth_gen_spec_free(&g);
        return;
    }
    if (ok) {
        hearth_gen_run(r, &g);
        return;
    }
    hearth_gen_spec_free(&g);
    hearth_http_send_error(r, &e);
}
