/*
 * store_api.c - /library, /fit and /downloads; see store_api.h.
 *
 * /library and /fit read the registry after a scan of the whole hub cache: a scan only stats
 * the model files and re-reads the changed ones (store/registry.h), so it costs milliseconds
 * and the listing is never stale, whoever changed the cache (hearth get in a terminal,
 * huggingface_hub, gc). The fit uses the cached memory bandwidth only: measuring takes a
 * second of every core, which a serving process must not spend on a listing, so until
 * `hearth fit` (or the first run) has measured it, decode_tok_s is null.
 */
#include "server/store_api.h"
#include "server/reqjson.h"

#include "server/downloads.h"
#include "server/web.h"
#include "store/facts.h"
#include "store/fit.h"
#include "store/hub.h"
#include "store/registry.h"

#include <cJSON.h>
#include <limits.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool send_err(hearth_http_req *r, hearth_status st, const char *code, const char *param, const char *msg) {
    hearth_api_err e;
    hearth_api_fail(&e, st, code, param, "%s", msg);
    return hearth_http_send_error(r, &e);
}

static const char *query_arg(hearth_http_req *r, const char *name) {
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

/* A registry freshly scanned, or NULL with the error answered. */
static hearth_registry *open_scanned(hearth_http_req *r) {
    hearth_registry *reg = NULL;
    hearth_err err = {0};
    if (hearth_registry_open(NULL, &reg, &err) || hearth_registry_scan(reg, NULL, NULL, NULL, &err)) {
        hearth_registry_close(reg);
        send_err(r, HEARTH_E_IO, "registry_error", NULL, err.msg);
        return NULL;
    }
    return reg;
}

/* Is path the file being served (compared by real path: hub snapshots are symlinks)? */
static bool is_serving(const hearth_server *s, const char *path) {
    if (!s->model_path) return false;
    char real[PATH_MAX];
    return realpath(path, real) && !strcmp(real, s->model_path);
}

typedef struct {
    hearth_fit_params fp;
    hearth_membw      bw;
    bool              have_bw;
} fit_ctx;

static void fit_ctx_init(fit_ctx *c, int32_t ctx) {
    memset(c, 0, sizeof *c);
    c->fp.ctx = ctx;
    c->have_bw = hearth_membw_cached(&c->bw);
    if (c->have_bw) c->fp.bw_bytes_per_s = c->bw.bytes_per_s;
}

static void fit_json(hearth_jw *w, const hearth_model_facts *f, const fit_ctx *c) {
    hearth_fit fit = hearth_fit_compute(f, &c->fp);
    hearth_jw_obj(w);
    hearth_jw_key(w, "ctx");
    hearth_jw_int(w, fit.ctx);
    hearth_jw_key(w, "fits");
    hearth_jw_bool(w, fit.fits);
    hearth_jw_key(w, "max_ctx");
    hearth_jw_int(w, fit.max_ctx);
    hearth_jw_key(w, "weights_bytes");
    hearth_jw_int(w, fit.weights_bytes);
    hearth_jw_key(w, "kv_bytes");
    hearth_jw_int(w, fit.kv_bytes);
    hearth_jw_key(w, "transient_bytes");
    hearth_jw_int(w, fit.transient_bytes);
    hearth_jw_key(w, "total_bytes");
    hearth_jw_int(w, fit.total_bytes);
    hearth_jw_key(w, "budget_bytes");
    hearth_jw_int(w, fit.budget_bytes);
    hearth_jw_key(w, "read_bytes_per_token");
    hearth_jw_int(w, fit.read_bytes_per_token);
    hearth_jw_key(w, "decode_tok_s");
    if (c->have_bw && fit.decode_tok_s > 0) hearth_jw_num(w, fit.decode_tok_s);
    else hearth_jw_null(w);
    hearth_jw_obj_end(w);
}

static void machine_json(hearth_jw *w, const fit_ctx *c) {
    hearth_jw_key(w, "machine");
    hearth_jw_obj(w);
    hearth_jw_key(w, "ram_bytes");
    hearth_jw_int(w, hearth_fit_ram_bytes());
    hearth_jw_key(w, "budget_bytes");
    hearth_jw_int(w, (int64_t)(HEARTH_FIT_BUDGET_SHARE * (double)hearth_fit_ram_bytes()));
    hearth_jw_key(w, "bandwidth_bytes_per_s");
    if (c->have_bw) hearth_jw_num(w, c->bw.bytes_per_s);
    else hearth_jw_null(w);
    hearth_jw_key(w, "bandwidth_date");
    hearth_jw_cstr(w, c->have_bw ? c->bw.date : NULL);
    hearth_jw_obj_end(w);
}

/* One model: a registry row (row non-NULL) or the served file outside the registry. */
static void model_json(hearth_jw *w, const hearth_registry_row *row, const char *id, const hearth_model_facts *f,
                       bool serving, const fit_ctx *c) {
    hearth_jw_obj(w);
    hearth_jw_key(w, "id");
    hearth_jw_cstr(w, id);
    hearth_jw_key(w, "repo");
    hearth_jw_cstr(w, row ? row->repo_id : NULL);
    hearth_jw_key(w, "file");
    hearth_jw_cstr(w, row && row->file[0] ? row->file : NULL);
    hearth_jw_key(w, "revision");
    hearth_jw_cstr(w, row ? row->revision : NULL);
    hearth_jw_key(w, "format");
    hearth_jw_cstr(w, f->format);
    hearth_jw_key(w, "architecture");
    hearth_jw_cstr(w, f->arch);
    hearth_jw_key(w, "name");
    hearth_jw_cstr(w, f->name[0] ? f->name : NULL);
    hearth_jw_key(w, "parameters");
    hearth_jw_int(w, f->n_params);
    hearth_jw_key(w, "size");
    hearth_jw_int(w, f->file_bytes);
    hearth_jw_key(w, "quantization");
    hearth_jw_cstr(w, f->quant[0] ? f->quant : NULL);
    hearth_jw_key(w, "context_length");
    hearth_jw_int(w, f->n_ctx_train);
    hearth_jw_key(w, "kv_bytes_per_token");
    hearth_jw_int(w, f->kv_bytes_per_token);
    hearth_jw_key(w, "supported");
    hearth_jw_bool(w, (f->caps & HEARTH_CAP_SUPPORTED) != 0);
    hearth_jw_key(w, "capabilities");
    hearth_jw_arr(w);
    char caps[160];
    hearth_facts_caps_str(f->caps, caps, sizeof caps);
    for (char *p = caps, *save = NULL, *t; (t = strtok_r(p, ",", &save)); p = NULL) hearth_jw_cstr(w, t);
    hearth_jw_arr_end(w);
    hearth_jw_key(w, "license");
    hearth_jw_cstr(w, f->license[0] ? f->license : NULL);
    hearth_jw_key(w, "error");
    hearth_jw_cstr(w, row && row->error[0] ? row->error : NULL);
    hearth_jw_key(w, "serving");
    hearth_jw_bool(w, serving);
    hearth_jw_key(w, "fit");
    fit_json(w, f, c);
    hearth_jw_obj_end(w);
}

static void row_id(const hearth_registry_row *row, char *out, size_t cap) {
    snprintf(out, cap, "%s%s%s", row->repo_id, row->file[0] ? "/" : "", row->file);
}

void hearth_store_library(hearth_http_req *r) {
    const char *accept = hearth_http_header(r, "Accept");
    if (accept && strstr(accept, "text/html")) { /* a browser navigation: the app's view */
        hearth_web_deep_link(r);
        return;
    }
    if (!hearth_http_authorized(r)) {
        send_err(r, HEARTH_E_DENIED, "invalid_api_key", NULL,
                 "Incorrect or missing API key: send it as 'Authorization: Bearer KEY' or 'x-api-key: KEY'");
        return;
    }
    hearth_registry *reg = open_scanned(r);
    if (!reg) return;
    hearth_registry_filter flt = {.query = query_arg(r, "q")};
    hearth_registry_row *rows = NULL;
    size_t n = 0;
    hearth_err err = {0};
    if (hearth_registry_list(reg, &flt, &rows, &n, &err)) {
        hearth_registry_close(reg);
        send_err(r, HEARTH_E_IO, "registry_error", NULL, err.msg);
        return;
    }
    hearth_registry_close(reg);
    fit_ctx c;
    fit_ctx_init(&c, 0);
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_jw_obj(&w);
    hearth_jw_key(&w, "object");
    hearth_jw_cstr(&w, "list");
    hearth_jw_key(&w, "serving");
    hearth_jw_cstr(&w, r->srv->model_id);
    machine_json(&w, &c);
    hearth_jw_key(&w, "models");
    hearth_jw_arr(&w);
    for (size_t i = 0; i < n; i++) {
        char id[400];
        row_id(&rows[i], id, sizeof id);
        model_json(&w, &rows[i], id, &rows[i].f, is_serving(r->srv, rows[i].path), &c);
    }
    hearth_jw_arr_end(&w);
    hearth_jw_obj_end(&w);
    free(rows);
    hearth_http_send_json(r, 200, &w);
    hearth_jw_fini(&w);
}

void hearth_store_fit(hearth_http_req *r) {
    const char *q = query_arg(r, "model"), *ctx_s = query_arg(r, "ctx");
    long ctx = 0;
    if (ctx_s) {
        char *end;
        ctx = strtol(ctx_s, &end, 10);
        if (!*ctx_s || *end || ctx < 1 || ctx > (1L << 30)) {
            send_err(r, HEARTH_E_INVALID, "invalid_value", "ctx",
                     "'ctx' must be a whole number of tokens from 1 to 2^30");
            return;
        }
    }
    hearth_registry *reg = open_scanned(r);
    if (!reg) return;
    hearth_registry_row row;
    hearth_model_facts facts;
    hearth_err err = {0};
    hearth_status st;
    bool found = false;
    if (q && *q) {
        st = hearth_registry_resolve(reg, q, &row, &err);
        found = st == HEARTH_OK;
    } else { /* the serving model: its registry row when it has one, else its file's facts */
        hearth_registry_row *rows = NULL;
        size_t n = 0;
        hearth_registry_filter all = {.all_revisions = true};
        st = hearth_registry_list(reg, &all, &rows, &n, &err);
        for (size_t i = 0; st == HEARTH_OK && i < n && !found; i++)
            if (is_serving(r->srv, rows[i].path)) {
                row = rows[i];
                found = true;
            }
        free(rows);
        if (st == HEARTH_OK && !found) {
            if (!r->srv->model_path) st = hearth_err_set(&err, HEARTH_E_NOTFOUND, -1, "no model is serving");
            else st = hearth_facts_gguf(r->srv->model_path, &facts, &err);
        }
    }
    hearth_registry_close(reg);
    if (st) {
        if (st == HEARTH_E_NOTFOUND) send_err(r, HEARTH_E_NOTFOUND, "model_not_found", "model", err.msg);
        else if (st == HEARTH_E_AMBIGUOUS) send_err(r, HEARTH_E_AMBIGUOUS, "ambiguous_model", "model", err.msg);
        else send_err(r, HEARTH_E_IO, "registry_error", NULL, err.msg);
        return;
    }
    fit_ctx c;
    fit_ctx_init(&c, (int32_t)ctx);
    char id[400];
    if (found) row_id(&row, id, sizeof id);
    else snprintf(id, sizeof id, "%s", r->srv->model_id);
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_jw_obj(&w);
    hearth_jw_key(&w, "model");
    model_json(&w, found ? &row : NULL, id, found ? &row.f : &facts, found ? is_serving(r->srv, row.path) : true, &c);
    machine_json(&w, &c);
    hearth_jw_obj_end(&w);
    hearth_http_send_json(r, 200, &w);
    hearth_jw_fini(&w);
}

void hearth_store_downloads(hearth_http_req *r) {
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_downloads_json(r->srv->dl, &w);
    hearth_http_send_json(r, 200, &w);
    hearth_jw_fini(&w);
}

/* An optional string field: 1 read, 0 absent or null, -1 answered with 400. */
static int opt_str(hearth_http_req *r, const cJSON *root, const char *k, const char **out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, k);
    *out = NULL;
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsString(v)) {
        char msg[64];
        snprintf(msg, sizeof msg, "'%s' must be a string", k);
        send_err(r, HEARTH_E_INVALID, "invalid_type", k, msg);
        return -1;
    }
    *out = v->valuestring;
    return 1;
}

void hearth_store_download_start(hearth_http_req *r) {
    /* the router has checked the media type (application/json) */
    hearth_api_err pe;
    cJSON *root = hearth_req_parse(r, &pe); /* UTF-8, depth, control bytes, one object */
    if (!root) {
        hearth_http_send_error(r, &pe);
        return;
    }
    const char *repo, *file, *rev;
    if (opt_str(r, root, "repo", &repo) < 0 || opt_str(r, root, "file", &file) < 0 ||
        opt_str(r, root, "revision", &rev) < 0) {
        cJSON_Delete(root);
        return;
    }
    if (!repo) {
        cJSON_Delete(root);
        send_err(r, HEARTH_E_INVALID, "missing_field", "repo", "'repo' is required: the hub repo id, \"org/name\"");
        return;
    }
    /* "org/name:glob", as `hearth get` takes it */
    char repo_buf[256];
    const char *colon = strchr(repo, ':');
    if (colon && !file && (size_t)(colon - repo) < sizeof repo_buf) {
        memcpy(repo_buf, repo, (size_t)(colon - repo));
        repo_buf[colon - repo] = 0;
        file = colon + 1;
        repo = repo_buf;
    }
    char id[32];
    bool existing = false;
    hearth_err err = {0};
    hearth_status st = hearth_downloads_start(r->srv->dl, repo, file, rev, id, sizeof id, &existing, &err);
    cJSON_Delete(root);
    if (st == HEARTH_E_BUSY) {
        send_err(r, st, "too_many_downloads", NULL, err.msg);
        return;
    }
    if (st) { /* a bad repo id, glob or revision; anything else is the server's fault */
        if (st == HEARTH_E_INVALID) send_err(r, st, "invalid_value", NULL, err.msg);
        else send_err(r, HEARTH_E_IO, "server_error", NULL, err.msg);
        return;
    }
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_jw_obj(&w);
    hearth_jw_key(&w, "id");
    hearth_jw_cstr(&w, id);
    hearth_jw_key(&w, "state");
    hearth_jw_cstr(&w, "running");
    hearth_jw_key(&w, "existing");
    hearth_jw_bool(&w, existing);
    hearth_jw_obj_end(&w);
    hearth_http_send_json(r, existing ? 200 : 202, &w);
    hearth_jw_fini(&w);
}
