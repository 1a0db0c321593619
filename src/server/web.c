/*
 * web.c - serves the embedded web app (web_assets.h) and its small config endpoint.
 *
 * Caching: every file is sent with "Cache-Control: no-cache" and a strong ETag (a hash of its
 * bytes, fixed at build time), so a browser revalidates each load and gets a bodiless 304
 * while the binary is unchanged, and never runs a stale app.js against a newer server. HTML
 * also gets a Content-Security-Policy allowing only this origin's scripts and styles and no
 * inline script: the app renders model output as text nodes, and the policy is the second
 * line of defence should a bug ever put markup from a reply into the page.
 */
#include "server/web.h"
#include "server/web_assets.h"
#include "server/chat.h"

#include <microhttpd.h>
#include <string.h>

static const char csp[] = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                          "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

const hearth_web_asset *hearth_web_asset_find(const char *path) {
    for (size_t i = 0; i < hearth_web_n_assets; i++)
        if (!strcmp(hearth_web_assets[i].path, path)) return &hearth_web_assets[i];
    return NULL;
}

/* Queue resp (consumed) with the common headers; records the status for the counters. */
static void queue(hearth_http_req *r, int http, struct MHD_Response *resp) {
    if (!resp) return;
    MHD_add_response_header(resp, "Server", "hearth/" HEARTH_VERSION);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    if (MHD_queue_response(r->conn, (unsigned)http, resp) == MHD_YES) r->http = http;
    MHD_destroy_response(resp);
}

static void send_asset(hearth_http_req *r, const hearth_web_asset *a) {
    const char *inm = hearth_http_header(r, "If-None-Match");
    bool fresh = inm && strstr(inm, a->etag);
    struct MHD_Response *resp = MHD_create_response_from_buffer(fresh ? 0 : a->len, fresh ? (void *)"" : (void *)a->data,
                                                                MHD_RESPMEM_PERSISTENT);
    if (!resp) return;
    MHD_add_response_header(resp, "Content-Type", a->ctype);
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    MHD_add_response_header(resp, "ETag", a->etag);
    if (!strncmp(a->ctype, "text/html", 9)) {
        MHD_add_response_header(resp, "Content-Security-Policy", csp);
        MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    }
    queue(r, fresh ? 304 : 200, resp);
}

static void not_found(hearth_http_req *r) {
    hearth_api_err e;
    hearth_api_fail(&e, HEARTH_E_NOTFOUND, "unknown_url", NULL, "Invalid URL (%s %s)", r->method, r->path);
    hearth_http_send_error(r, &e);
}

void hearth_web_index(hearth_http_req *r) {
    const hearth_web_asset *a = hearth_web_asset_find("/index.html");
    if (a) send_asset(r, a);
    else not_found(r);
}

void hearth_web_deep_link(hearth_http_req *r) {
    /* /library is also the store's JSON listing in mlx-bun: only a browser navigation (one that
     * accepts HTML) is sent to the app, so an API client never gets a redirect. */
    const char *accept = hearth_http_header(r, "Accept");
    if (!strcmp(r->path, "/library") && !(accept && strstr(accept, "text/html"))) {
        not_found(r);
        return;
    }
    char loc[64];
    size_t n = strlen(r->path);
    if (n + 3 > sizeof loc) {
        not_found(r);
        return;
    }
    memcpy(loc, "/#", 2);
    memcpy(loc + 2, r->path, n + 1);
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!resp) return;
    MHD_add_response_header(resp, "Location", loc);
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    queue(r, 302, resp);
}

void hearth_web_file(hearth_http_req *r) {
    /* "/app/app.js" -> "/app.js"; index.html only at "/". */
    const char *name = r->path + 4;
    const hearth_web_asset *a = strcmp(name, "/index.html") ? hearth_web_asset_find(name) : NULL;
    if (a) send_asset(r, a);
    else not_found(r);
}

void hearth_web_config(hearth_http_req *r) {
    const hearth_server *s = r->srv;
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_jw_obj(&w);
    hearth_jw_key(&w, "name");
    hearth_jw_cstr(&w, "hearth");
    hearth_jw_key(&w, "version");
    hearth_jw_cstr(&w, HEARTH_VERSION);
    hearth_jw_key(&w, "model");
    hearth_jw_cstr(&w, s->model_id);
    hearth_jw_key(&w, "model_name");
    hearth_jw_cstr(&w, hearth_model_name(s->m));
    hearth_jw_key(&w, "model_bytes");
    hearth_jw_int(&w, (int64_t)hearth_model_weight_bytes(s->m));
    hearth_jw_key(&w, "quant");
    hearth_jw_cstr(&w, hearth_model_quant_desc(s->m));
    hearth_jw_key(&w, "n_ctx");
    hearth_jw_int(&w, hearth_engine_n_ctx(s->e));
    hearth_jw_key(&w, "chat");
    hearth_jw_bool(&w, s->tmpl != NULL);
    if (!s->tmpl) {
        hearth_jw_key(&w, "chat_error");
        hearth_jw_cstr(&w, s->tmpl_error[0] ? s->tmpl_error : "the model has no chat template");
    }
    /* The server-wide sampling defaults as a request without those fields gets them. */
    hearth_jw_key(&w, "defaults");
    hearth_jw_obj(&w);
    hearth_jw_key(&w, "temperature");
    hearth_jw_num(&w, s->p.temperature >= 0 ? s->p.temperature : 0.7);
    hearth_jw_key(&w, "top_p");
    hearth_jw_num(&w, s->p.top_p >= 0 ? s->p.top_p : 1.0);
    hearth_jw_key(&w, "top_k");
    hearth_jw_int(&w, s->p.top_k > 0 ? s->p.top_k : 0);
    hearth_jw_key(&w, "max_tokens");
    if (s->p.max_tokens > 0) hearth_jw_int(&w, s->p.max_tokens);
    else hearth_jw_null(&w);
    hearth_jw_obj_end(&w);
    /* The caps an image attachment meets: one item's bytes, and the whole request's. */
    hearth_jw_key(&w, "media");
    hearth_jw_obj(&w);
    hearth_jw_key(&w, "max_bytes");
    hearth_jw_int(&w, (int64_t)hearth_media_max(s));
    hearth_jw_key(&w, "max_body_bytes");
    hearth_jw_int(&w, (int64_t)s->p.max_body_bytes);
    hearth_jw_obj_end(&w);
    hearth_jw_key(&w, "endpoints");
    hearth_jw_obj(&w);
    hearth_jw_key(&w, "library"); /* GET /library, /fit, GET and POST /downloads (store_api.h) */
    hearth_jw_bool(&w, true);
    hearth_jw_key(&w, "downloads");
    hearth_jw_bool(&w, true);
    hearth_jw_obj_end(&w);
    hearth_jw_obj_end(&w);
    hearth_http_send_json(r, 200, &w);
    hearth_jw_fini(&w);
}
