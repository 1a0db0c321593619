/*
 * server.c - the server object: parameters, the chat template, counters, then http.c's
 * daemon; and the response ids.
 */
#include "base/log.h"
#include "constrain/matcher.h"
#include "models/bert.h"
#include "server/vision_prompt.h"
#include "server/adapters.h"
#include "server/chat.h"
#include "server/conns.h"
#include "server/downloads.h"
#include "server/media.h"
#include "server/resp_store.h"
#include "server/server_internal.h"
#include "store/modality.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

hearth_server_params hearth_server_params_default(void) {
    hearth_server_params p = {
        .host = "127.0.0.1", .port = 8080, .model_id = NULL, .api_key = NULL, .cors = NULL,
        .temperature = -1, .top_p = -1, .top_k = -1, .max_tokens = -1, .seed = -1, .enable_thinking = -1,
        .max_body_bytes = 8u << 20, .max_connections = 256, .max_conns_per_addr = 128,
        .header_timeout_s = 10, .idle_timeout_s = 15, .drain_timeout_s = 30,
    };
    p.media = hearth_media_fetch_opts_default();
    return p;
}

static char *dup_or_null(const char *s) { return s && *s ? strdup(s) : NULL; }

/* What the served model has towers for, by the store's one check (store/modality.h). The path
 * is the one the model was named by, not its real path: a hub snapshot's file is a link into
 * blobs/, and its projector sits beside the link. A model whose files cannot be probed is
 * served as text-only, with the reason logged. */
static void media_caps_init(hearth_server *s, const char *model_path) {
    if (!model_path) return;
    hearth_modality mo;
    hearth_err err = {0};
    if (hearth_modality_probe(model_path, &mo, &err)) {
        hearth_log(HEARTH_LOG_WARN, "serve: cannot tell whether %s has a vision tower: %s", model_path, err.msg);
        return;
    }
    if (mo.note[0]) hearth_log(HEARTH_LOG_WARN, "serve: %s", mo.note);
    s->media_caps = (mo.vision ? HEARTH_MEDIA_CAP_IMAGE : 0u) | (mo.audio ? HEARTH_MEDIA_CAP_AUDIO : 0u);
    s->media_runs = 0; /* hearth_vprompt_init adds images when the tower loads and runs here */
    snprintf(s->media_source, sizeof s->media_source, "%s", mo.source);
}

static hearth_status create(const hearth_server_params *p, const hearth_model *m, hearth_engine *e, bool driven,
                            hearth_server **out, hearth_err *err) {
    *out = NULL;
    hearth_server *s = calloc(1, sizeof *s);
    if (!s) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    s->p = *p;
    s->driven = driven;
    pthread_mutex_init(&s->cx_mu, NULL);
    pthread_mutex_init(&s->drain_mu, NULL);
    pthread_cond_init(&s->drain_cv, NULL);
    s->listen_fd = -1;
    s->m = m;
    s->e = e;
    if (!s->p.max_body_bytes) s->p.max_body_bytes = 8u << 20;
    if (s->p.max_connections <= 0) s->p.max_connections = 256;
    if (s->p.max_conns_per_addr <= 0) s->p.max_conns_per_addr = 128;
    if (s->p.header_timeout_s <= 0) s->p.header_timeout_s = 10;
    if (s->p.idle_timeout_s <= 0) s->p.idle_timeout_s = 15;
    if (s->p.drain_timeout_s < 0) s->p.drain_timeout_s = 30;
    s->host = strdup(p->host && *p->host ? p->host : "127.0.0.1");
    s->engines = p->engines;
    if (!m || !e) {
        if (m || e || (!p->embedder && !p->engines)) {
            free(s);
            return hearth_err_set(err, HEARTH_E_INVALID, -1, "a server needs a model and its engine, or an embedding "
                                  "model");
        }
    }
    s->model_id = strdup(p->model_id && *p->model_id ? p->model_id : m ? hearth_model_name(m) : "embeddings");
    s->api_key = dup_or_null(p->api_key);
    s->unix_path = dup_or_null(p->unix_path);
    s->cors = dup_or_null(p->cors);
    s->allowed_hosts = dup_or_null(p->allowed_hosts);
    s->admin_key = dup_or_null(p->admin_key);
    hearth_conns_params cp = {.header_timeout_ms = s->p.header_timeout_s * 1000,
                              .idle_timeout_ms = s->p.idle_timeout_s * 1000,
                              .max_total = s->p.max_connections, .max_per_addr = s->p.max_conns_per_addr};
    s->conns = hearth_conns_create(&cp);
    s->tmpl_src = dup_or_null(p->chat_template);
    s->stats = hearth_stats_create();
    s->responses = hearth_resp_store_create((hearth_resp_store_params){.dir = p->responses_dir});
    hearth_status st;
    char real[PATH_MAX];
    if (p->model_path && realpath(p->model_path, real) && !(s->model_path = strdup(real))) {
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        goto fail;
    }
    hearth_downloads_params dp = {.max_active = p->max_downloads};
    if ((st = hearth_downloads_create(&dp, &s->dl, err))) goto fail;
    if (m && !(s->adapters = hearth_adapters_create(m))) {
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        goto fail;
    }
    if (p->adapter_path && *p->adapter_path) { /* the default adapter (--adapter) */
        char why[160];
        if (!e || !hearth_engine_lora_supported(e, why, sizeof why)) {
            st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "--adapter: %s", e ? why : "no generation model");
            goto fail;
        }
        hearth_err aerr = {0};
        if ((st = hearth_adapters_mount(s->adapters, p->adapter_path, NULL, true, NULL, 0, &aerr))) {
            hearth_err_set(err, st, -1, "--adapter %.200s: %s", p->adapter_path, aerr.msg);
            goto fail;
        }
    }
    if (!s->host || !s->model_id || !s->stats || !s->responses || !s->conns ||
        (p->api_key && *p->api_key && !s->api_key) || (p->admin_key && *p->admin_key && !s->admin_key) ||
        (p->unix_path && *p->unix_path && !s->unix_path) ||
        (p->cors && *p->cors && !s->cors) || (p->allowed_hosts && *p->allowed_hosts && !s->allowed_hosts) ||
        (p->chat_template && *p->chat_template && !s->tmpl_src)) {
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        goto fail;
    }
    s->p.host = s->host;
    s->p.model_id = s->model_id;
    s->p.api_key = s->api_key;
    s->p.unix_path = s->unix_path;
    s->p.cors = s->cors;
    s->p.allowed_hosts = s->allowed_hosts;
    s->p.admin_key = s->admin_key;
    s->p.chat_template = s->tmpl_src;
    s->p.model_path = s->model_path;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    s->id_salt = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)s;
    if (m) media_caps_init(s, p->model_path); /* what the model has towers for */
    if (m && (st = hearth_vprompt_init(s, err))) goto fail; /* and what of it runs */
    if (m) hearth_chat_init(s);
    else if (p->engines) snprintf(s->tmpl_error, sizeof s->tmpl_error, "the models run in engine processes");
    else snprintf(s->tmpl_error, sizeof s->tmpl_error, "the model '%.200s' is an embedding model: it serves "
                  "POST /v1/embeddings", s->model_id);
    if ((st = hearth_http_start(s, err))) goto fail;
    s->info = (hearth_stats_info){.model = s->model_id, .host = s->host, .version = HEARTH_VERSION,
                                  .port = s->port, .started_at = (int64_t)ts.tv_sec,
                                  .n_ctx = e ? hearth_engine_n_ctx(e) : p->embedder ? hearth_bert_max_tokens(p->embedder) : 0,
                                  .engine = e, .conns = s->conns, .engines = p->engines};
    *out = s;
    return HEARTH_OK;
fail:
    hearth_server_destroy(s);
    return st;
}

hearth_status hearth_server_create(const hearth_server_params *p, const hearth_model *m, hearth_engine *e,
                                   hearth_server **out, hearth_err *err) {
    return create(p, m, e, false, out, err);
}

hearth_status hearth_server_create_driven(const hearth_server_params *p, const hearth_model *m, hearth_engine *e,
                                          hearth_server **out, hearth_err *err) {
    return create(p, m, e, true, out, err);
}

int hearth_server_port(const hearth_server *s) { return s->port; }

void hearth_server_destroy(hearth_server *s) {
    if (!s) return;
    hearth_drain_fini(s);
    hearth_http_stop(s);
    hearth_conns_destroy(s->conns); /* after MHD: every connection is closed */
    hearth_downloads_destroy(s->dl); /* after the connections: none can start another */
    hearth_chat_fini(s);
    hearth_vprompt_fini(s);
    hearth_stats_destroy(s->stats);
    hearth_resp_store_destroy(s->responses);
    hearth_adapters_destroy(s->adapters); /* after MHD: no request holds the table */
    free(s->host);
    free(s->model_id);
    free(s->api_key);
    free(s->unix_path);
    free(s->cors);
    free(s->allowed_hosts);
    free(s->admin_key);
    free(s->tmpl_src);
    free(s->model_path);
    hearth_cx_vocab_destroy(s->cx_vocab); /* matchers still in the engine hold their own reference */
    pthread_mutex_destroy(&s->cx_mu);
    pthread_mutex_destroy(&s->drain_mu);
    pthread_cond_destroy(&s->drain_cv);
    free(s);
}

/* splitmix64's finalizer: distinct counters give unrelated-looking ids. */
static uint64_t mix(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

void hearth_server_new_id(hearth_server *s, const char *prefix, char *out, size_t cap) {
    uint64_t n = atomic_fetch_add_explicit(&s->n_ids, 1, memory_order_relaxed);
    uint64_t a = mix(s->id_salt + n), b = mix(a ^ n);
    snprintf(out, cap, "%s%016llx%08llx", prefix, (unsigned long long)a, (unsigned long long)(b >> 32));
}
