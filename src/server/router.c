/*
 * router.c - method + path -> handler, the API-key gate, and the small endpoints
 * (/health, /stats, /metrics, /openapi.json). Unknown paths get 404 and known paths with the
 * wrong method 405 with an Allow header, in OpenAI's error shape (Anthropic's under /v1/messages). /health,
 * /openapi.json and CORS preflights stay public when an API key is set (mlx_lm.server and
 * llama-server do the same), so monitors, browsers and API tools work. The description in
 * src/server/api/openapi.json lists every route of the table below; a test checks that.
 * Routes that take a JSON body (generation, tokenizer, downloads) answer 415 unless it comes
 * as application/json (guard.h says why).
 *
 * A path that no route knows is tried once more under /v1 (/models, /responses/ID, /embeddings
 * answer as /v1/models, /v1/responses/ID, /v1/embeddings do, as llama-server and vLLM accept
 * them); the handler then sees the /v1 path.
 */
#include "server/adapters_api.h"
#include "server/anthropic.h"
#include "server/embeddings.h"
#include "server/guard.h"
#include "server/infill_api.h"
#include "server/openai.h"
#include "server/engines.h"
#include "server/pool_metrics.h"
#include "server/pool_models.h"
#include "server/pool_responses.h"
#include "server/proxy.h"
#include "server/responses.h"
#include "server/server_internal.h"
#include "server/store_api.h"
#include "server/tokenize.h"
#include "server/web.h"
#include "server/web_assets.h"

#include <stdio.h>
#include <string.h>

static void h_health(hearth_http_req *r) {
    static const char ok[] = "{\"status\":\"ok\"}";
    hearth_http_send(r, 200, "application/json", ok, sizeof ok - 1);
}

static void h_stats(hearth_http_req *r) {
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_stats_json(r->srv->stats, &r->srv->info, &w);
    hearth_http_send_json(r, 200, &w);
    hearth_jw_fini(&w);
}

static void h_metrics(hearth_http_req *r) {
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_stats_prometheus(r->srv->stats, &r->srv->info, &w);
    if (r->srv->engines) hearth_pool_metrics(r->srv->engines, &w); /* --isolate: the children's series too */
    if (w.b.oom) hearth_http_send_json(r, 200, &w); /* answers the out-of-memory fallback */
    else hearth_http_send(r, 200, "text/plain; version=0.0.4; charset=utf-8", w.b.p ? w.b.p : "", w.b.len);
    hearth_jw_fini(&w);
}

static void h_openapi(hearth_http_req *r) {
    const hearth_web_asset *a = &hearth_api_assets[0];
    hearth_http_send(r, 200, a->ctype, (const char *)a->data, a->len);
}

typedef struct {
    const char     *method;
    const char     *path;
    bool            prefix;  /* path is a prefix ("/v1/models/" + id) */
    bool            open;    /* no API key needed */
    hearth_endpoint ep;
    void (*fn)(hearth_http_req *r);
} route;

static const route routes[] = {
    {"GET", "/health", false, true, HEARTH_EP_HEALTH, h_health},
    {"GET", "/v1", false, false, HEARTH_EP_INDEX, hearth_openai_index},
    {"GET", "/v1/", false, false, HEARTH_EP_INDEX, hearth_openai_index},
    {"GET", "/v1/models", false, false, HEARTH_EP_MODELS, hearth_openai_models},
    {"GET", "/v1/models/", true, false, HEARTH_EP_MODELS, hearth_openai_model},
    {"POST", "/v1/chat/completions", false, false, HEARTH_EP_CHAT, hearth_openai_chat},
    {"POST", "/chat/completions", false, false, HEARTH_EP_CHAT, hearth_openai_chat},
    {"POST", "/v1/completions", false, false, HEARTH_EP_COMPLETIONS, hearth_openai_completions},
    {"POST", "/completions", false, false, HEARTH_EP_COMPLETIONS, hearth_openai_completions},
    {"POST", "/infill", false, false, HEARTH_EP_COMPLETIONS, hearth_infill_handle},
    {"POST", "/v1/messages", false, false, HEARTH_EP_MESSAGES, hearth_anthropic_messages},
    {"POST", "/v1/messages/count_tokens", false, false, HEARTH_EP_MESSAGES, hearth_anthropic_count_tokens},
    {"POST", "/v1/responses", false, false, HEARTH_EP_RESPONSES, hearth_responses_create},
    {"POST", "/v1/embeddings", false, false, HEARTH_EP_OTHER, hearth_embeddings},
    {"GET", "/v1/adapters", false, false, HEARTH_EP_OTHER, hearth_adapters_list},
    {"POST", "/v1/adapters", false, false, HEARTH_EP_OTHER, hearth_adapters_mount_route},
    {"GET", "/v1/adapters/available", false, false, HEARTH_EP_OTHER, hearth_adapters_available},
    {"DELETE", "/v1/adapters/", true, false, HEARTH_EP_OTHER, hearth_adapters_delete},
    {"GET", "/v1/responses/", true, false, HEARTH_EP_RESPONSES, hearth_responses_get},
    {"DELETE", "/v1/responses/", true, false, HEARTH_EP_RESPONSES, hearth_responses_delete},
    {"POST", "/tokenize", false, false, HEARTH_EP_OTHER, hearth_tokenize},
    {"POST", "/detokenize", false, false, HEARTH_EP_OTHER, hearth_detokenize},
    {"POST", "/apply-template", false, false, HEARTH_EP_OTHER, hearth_apply_template},
    {"GET", "/props", false, false, HEARTH_EP_OTHER, hearth_props},
    {"GET", "/stats", false, false, HEARTH_EP_STATS, h_stats},
    {"GET", "/metrics", false, false, HEARTH_EP_METRICS, h_metrics},
    {"GET", "/openapi.json", false, true, HEARTH_EP_OTHER, h_openapi},
    {"GET", "/v1/app/config", false, false, HEARTH_EP_OTHER, hearth_web_config},
    {"GET", "/", false, true, HEARTH_EP_OTHER, hearth_web_index},
    {"GET", "/chat", false, true, HEARTH_EP_OTHER, hearth_web_deep_link},
    {"GET", "/status", false, true, HEARTH_EP_OTHER, hearth_web_deep_link},
    {"GET", "/library", false, true, HEARTH_EP_OTHER, hearth_store_library}, /* its own key check */
    {"GET", "/fit", false, false, HEARTH_EP_OTHER, hearth_store_fit},
    {"GET", "/downloads", false, false, HEARTH_EP_OTHER, hearth_store_downloads},
    {"POST", "/downloads", false, false, HEARTH_EP_OTHER, hearth_store_download_start},
    {"GET", "/app/", true, true, HEARTH_EP_OTHER, hearth_web_file},
    {"POST", "/admin/drain", false, true, HEARTH_EP_OTHER, hearth_admin_drain},             /* admin.c: its own */
    {"POST", "/admin/cache/flush", false, true, HEARTH_EP_OTHER, hearth_admin_cache_flush}, /* key check */
};

/* Does the route take a JSON body (and so refuse any other media type)? */
static bool takes_json(const route *rt) {
    if (strcmp(rt->method, "POST")) return false;
    return rt->ep == HEARTH_EP_CHAT || rt->ep == HEARTH_EP_COMPLETIONS || rt->ep == HEARTH_EP_MESSAGES ||
           rt->ep == HEARTH_EP_RESPONSES || rt->fn == hearth_store_download_start || rt->fn == hearth_tokenize ||
           rt->fn == hearth_detokenize || rt->fn == hearth_apply_template || rt->fn == hearth_embeddings ||
           rt->fn == hearth_adapters_mount_route;
}

/* With an embedding model alone (no engine), what stays served: the embeddings, the model
 * list, and the server's own routes that need no model (health, counters, the description,
 * the drain). */
static bool embedding_only_ok(const route *rt) {
    return hearth_embeddings_only_route(rt->fn) || rt->fn == h_health || rt->fn == h_stats || rt->fn == h_metrics ||
           rt->fn == h_openapi || rt->fn == hearth_admin_drain;
}

/* With --isolate, what the serving process answers itself: health, counters, the
 * description, the web app, the store and the drain. The rest goes to an engine child. */
static bool serving_process_route(const route *rt) {
    return rt->fn == h_health || rt->fn == h_stats || rt->fn == h_metrics || rt->fn == h_openapi ||
           rt->fn == hearth_web_index || rt->fn == hearth_web_deep_link || rt->fn == hearth_web_file ||
           rt->fn == hearth_store_library || rt->fn == hearth_store_fit || rt->fn == hearth_store_downloads ||
           rt->fn == hearth_store_download_start || rt->fn == hearth_admin_drain;
}

/* Without a pool (in-process, or --isolate without --model-pool): a request whose "model"
 * names another model of the store is refused with 404, pointing at --model-pool, instead of
 * being served by the one model under that name. A name that is no model of the store
 * ("gpt-4", "x") is served by the one model as always. True when r was answered. */
static bool other_model_refused(hearth_http_req *r, const route *rt) {
    if (strcmp(rt->method, "POST") || r->srv->p.engine_child) return false;
    if (rt->ep != HEARTH_EP_CHAT && rt->ep != HEARTH_EP_COMPLETIONS && rt->ep != HEARTH_EP_MESSAGES &&
        rt->ep != HEARTH_EP_RESPONSES && rt->fn != hearth_embeddings)
        return false;
    if (r->srv->engines && hearth_engines_pooled(r->srv->engines)) return false;
    char model[256], other[256];
    if (!hearth_proxy_model_of(r, model, sizeof model) || !strcmp(model, r->srv->model_id) ||
        !hearth_pool_names_other(model, r->srv->model_path, other, sizeof other))
        return false;
    hearth_api_err e;
    hearth_api_fail(&e, HEARTH_E_NOTFOUND, "model_not_found", "model",
                    "The model '%.120s' is another model of the store: this server serves '%.120s' only; start it "
                    "with --isolate --model-pool N to serve every model of the store by its name",
                    other, r->srv->model_id);
    hearth_http_send_error(r, &e);
    return true;
}

/* Add method to the Allow list r->allow once ("GET" brings HEAD). */
static void allow_add(hearth_http_req *r, const char *method) {
    char *a = r->allow;
    size_t n = strlen(a), m = strlen(method);
    for (const char *p = a; (p = strstr(p, method)); p += m)
        if ((p == a || p[-1] == ' ') && (!p[m] || p[m] == ',')) return;
    if (n + m + 3 > sizeof r->allow) return;
    snprintf(a + n, sizeof r->allow - n, "%s%s", n ? ", " : "", method);
    if (!strcmp(method, "GET")) allow_add(r, "HEAD");
}

static bool path_match(const route *rt, const char *path) {
    if (rt->prefix) return !strncmp(path, rt->path, strlen(rt->path)) && path[strlen(rt->path)];
    return !strcmp(path, rt->path);
}

/* The route of method + path (NULL: none); *known: some route has the path (their methods
 * go to r's Allow list). */
static const route *find(hearth_http_req *r, const char *method, const char *path, bool *known) {
    *known = false;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (!path_match(&routes[i], path)) continue;
        *known = true;
        allow_add(r, routes[i].method);
        if (!strcmp(routes[i].method, method)) return &routes[i];
    }
    return NULL;
}

void hearth_route(hearth_http_req *r) {
    hearth_api_err e;
    if (!strcmp(r->method, "OPTIONS")) {
        hearth_http_send_preflight(r);
        return;
    }
    const char *method = !strcmp(r->method, "HEAD") ? "GET" : r->method;
    bool path_known = false;
    const route *hit = find(r, method, r->path, &path_known);
    const char *path = r->path;
    char v1[1024];
    if (!path_known && strncmp(path, "/v1/", 4) && strlen(path) + 4 < sizeof v1) {
        snprintf(v1, sizeof v1, "/v1%s", path);
        bool known = false;
        const route *alt = find(r, method, v1, &known);
        if (known) {
            hit = alt;
            path_known = true;
            r->path = v1; /* for the handler's call only: v1 lives on this frame */
        }
    }
    if (!hit) {
        if (path_known) {
            allow_add(r, "OPTIONS");
            hearth_api_fail(&e, HEARTH_E_NOT_ALLOWED, "method_not_allowed", NULL, "%s is not supported on %s",
                            r->method, path);
        } else
            hearth_api_fail(&e, HEARTH_E_NOTFOUND, "unknown_url", NULL, "Invalid URL (%s %s)", r->method, path);
        hearth_http_send_error(r, &e);
        r->path = path;
        return;
    }
    r->allow[0] = 0;
    r->ep = hit->ep;
    if (!hit->open && !hearth_http_authorized(r)) {
        hearth_api_fail(&e, HEARTH_E_DENIED, "invalid_api_key", NULL,
                        "Incorrect or missing API key: send it as 'Authorization: Bearer KEY' or 'x-api-key: KEY'");
        hearth_http_send_error(r, &e);
        r->path = path;
        return;
    }
    if (r->srv->engines) { /* --isolate: the serving process's own routes, else the engine's */
        if (takes_json(hit) && !hearth_guard_json_type(hearth_http_header(r, "Content-Type"), &e)) {
            hearth_http_send_error(r, &e);
        } else if (serving_process_route(hit)) {
            hit->fn(r);
        } else if (other_model_refused(r, hit)) {
            /* answered */
        } else if (hearth_engines_pooled(r->srv->engines) && hit->fn == hearth_openai_models) {
            hearth_pool_models(r); /* every model of the store, loaded or not */
        } else if (hearth_engines_pooled(r->srv->engines) && hit->fn == hearth_openai_model) {
            hearth_pool_model(r);
        } else if (hearth_engines_pooled(r->srv->engines) &&
                   (hit->fn == hearth_responses_get || hit->fn == hearth_responses_delete)) {
            hearth_pool_response(r); /* the child that stored it */
        } else if (hit->fn != hearth_admin_cache_flush || hearth_admin_allowed(r)) {
            char model[256];
            hearth_proxy_forward(r, hearth_proxy_model_of(r, model, sizeof model) ? model : NULL);
        }
        r->path = path;
        return;
    }
    if (!r->srv->e && !embedding_only_ok(hit)) {
        hearth_api_fail(&e, HEARTH_E_UNSUPPORTED, "model_not_supported", "model",
                        "the model '%.200s' is an embedding model: it serves POST /v1/embeddings (and GET "
                        "/v1/models), not %s %s", r->srv->model_id, r->method, path);
        hearth_http_send_error(r, &e);
        r->path = path;
        return;
    }
    if (takes_json(hit) && !hearth_guard_json_type(hearth_http_header(r, "Content-Type"), &e)) {
        hearth_http_send_error(r, &e);
        r->path = path;
        return;
    }
    if (!other_model_refused(r, hit)) hit->fn(r);
    r->path = path;
}
