/*
 * pool_models.c - the model list and the resolver of the model pool (pool_models.h).
 *
 * The registry is scanned on each call (a scan stats the model files and re-reads only the
 * changed ones: milliseconds), so a model fetched with `hearth get` or POST /downloads is
 * listed and servable at once.
 */
#include "server/pool_models.h"
#include "server/engines.h"
#include "store/registry.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static hearth_registry *scanned(hearth_err *err) {
    hearth_registry *reg = NULL;
    if (hearth_registry_open(NULL, &reg, err) || hearth_registry_scan(reg, NULL, NULL, NULL, err)) {
        hearth_registry_close(reg);
        return NULL;
    }
    return reg;
}

bool hearth_pool_resolve(void *cls, const char *name, char *id, size_t id_cap, char *path, size_t path_cap) {
    (void)cls;
    if (!*name || name[0] == '/' || name[0] == '.' || name[0] == '~' || strstr(name, "..")) return false;
    hearth_err err = {0};
    hearth_registry *reg = scanned(&err);
    if (!reg) return false;
    hearth_registry_row row;
    bool ok = !hearth_registry_resolve(reg, name, &row, &err) && !row.error[0] && strlen(row.repo_id) < id_cap &&
              strlen(row.path) < path_cap;
    if (ok) {
        snprintf(id, id_cap, "%s", row.repo_id);
        snprintf(path, path_cap, "%s", row.path);
    }
    hearth_registry_close(reg);
    return ok;
}

bool hearth_pool_names_other(const char *name, const char *served_path, char *other, size_t cap) {
    if (!strchr(name, '/') || name[0] == '/' || name[0] == '.' || name[0] == '~') return false;
    hearth_err err = {0};
    hearth_registry *reg = scanned(&err);
    if (!reg) return false;
    hearth_registry_row row;
    bool hit = !hearth_registry_resolve(reg, name, &row, &err) && !row.error[0];
    hearth_registry_close(reg);
    if (!hit) return false;
    char label[1024];
    snprintf(label, sizeof label, "%s/%s", row.repo_id, row.file);
    if (strcasecmp(name, row.repo_id) && strcasecmp(name, label)) return false; /* a part of a name only */
    char real[PATH_MAX];
    if (served_path && realpath(row.path, real) && !strcmp(real, served_path)) return false; /* the served one */
    snprintf(other, cap, "%s", row.repo_id);
    return true;
}

/* One model; row is its registry row (NULL: the default model outside the registry, taken as
 * text-only). Its capabilities are the served model's (openai.c): text, and vision when the
 * store finds a vision tower (store/modality.h, kept in the row's caps). */
static void one(hearth_server *s, hearth_jw *w, const char *id, const hearth_registry_row *row) {
    hearth_jw_obj(w);
    hearth_jw_key(w, "id");
    hearth_jw_cstr(w, id);
    hearth_jw_key(w, "object");
    hearth_jw_cstr(w, "model");
    hearth_jw_key(w, "created");
    hearth_jw_int(w, row ? row->scanned_at : s->info.started_at);
    hearth_jw_key(w, "owned_by");
    hearth_jw_cstr(w, "hearth");
    hearth_jw_key(w, "loaded");
    hearth_jw_bool(w, hearth_engines_loaded(s->engines, id));
    hearth_jw_key(w, "capabilities");
    hearth_jw_arr(w);
    hearth_jw_cstr(w, "text");
    if (row && (row->f.caps & HEARTH_CAP_VISION)) hearth_jw_cstr(w, "vision");
    hearth_jw_arr_end(w);
    hearth_jw_obj_end(w);
}

/* The registry's canonical rows (*n of them; free *rows), or false with r answered. */
static bool rows_of(hearth_http_req *r, hearth_registry_row **rows, size_t *n) {
    hearth_err err = {0};
    hearth_registry *reg = scanned(&err);
    if (!reg || hearth_registry_list(reg, NULL, rows, n, &err)) {
        hearth_registry_close(reg);
        hearth_api_err e;
        hearth_api_fail(&e, HEARTH_E_IO, "registry_error", NULL, "%s", err.msg);
        hearth_http_send_error(r, &e);
        return false;
    }
    hearth_registry_close(reg);
    return true;
}

/* The first readable row of repo_id, or NULL. */
static const hearth_registry_row *row_of(const hearth_registry_row *rows, size_t n, const char *repo_id) {
    for (size_t i = 0; i < n; i++)
        if (!rows[i].error[0] && !strcmp(rows[i].repo_id, repo_id)) return &rows[i];
    return NULL;
}

/* Is row listed (a model the pool serves: readable, and its repo's first row)? */
static bool listed(const hearth_registry_row *rows, size_t i, const char *dflt) {
    if (rows[i].error[0] || !strcmp(rows[i].repo_id, dflt)) return false;
    return i == 0 || strcmp(rows[i].repo_id, rows[i - 1].repo_id);
}

void hearth_pool_models(hearth_http_req *r) {
    hearth_server *s = r->srv;
    hearth_registry_row *rows = NULL;
    size_t n = 0;
    if (!rows_of(r, &rows, &n)) return;
    const char *dflt = hearth_engines_default_id(s->engines);
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_jw_obj(&w);
    hearth_jw_key(&w, "object");
    hearth_jw_cstr(&w, "list");
    hearth_jw_key(&w, "data");
    hearth_jw_arr(&w);
    one(s, &w, dflt, row_of(rows, n, dflt));
    for (size_t i = 0; i < n; i++)
        if (listed(rows, i, dflt)) one(s, &w, rows[i].repo_id, &rows[i]);
    hearth_jw_arr_end(&w);
    hearth_jw_obj_end(&w);
    hearth_http_send_json(r, 200, &w);
    hearth_jw_fini(&w);
    free(rows);
}

void hearth_pool_model(hearth_http_req *r) {
    hearth_server *s = r->srv;
    const char *id = r->path + strlen("/v1/models/");
    const char *dflt = hearth_engines_default_id(s->engines);
    hearth_registry_row *rows = NULL;
    size_t n = 0;
    if (strcmp(id, dflt) && !rows_of(r, &rows, &n)) return;
    if (!strcmp(id, dflt)) { /* its capabilities from its row when the registry answers; else text */
        hearth_err err = {0};
        hearth_registry *reg = scanned(&err);
        if (reg && hearth_registry_list(reg, NULL, &rows, &n, &err)) {
            rows = NULL;
            n = 0;
        }
        hearth_registry_close(reg);
    }
    const hearth_registry_row *hit = NULL;
    for (size_t i = 0; i < n && !hit; i++)
        if (listed(rows, i, dflt) && !strcmp(rows[i].repo_id, id)) hit = &rows[i];
    if (!strcmp(id, dflt)) hit = row_of(rows, n, dflt);
    if (strcmp(id, dflt) && !hit) {
        hearth_api_err e;
        hearth_api_fail(&e, HEARTH_E_NOTFOUND, "model_not_found", "model", "The model '%.200s' does not exist", id);
        hearth_http_send_error(r, &e);
        free(rows);
        return;
    }
    hearth_jw w;
    hearth_jw_init(&w);
    one(s, &w, id, hit);
    hearth_http_send_json(r, 200, &w);
    hearth_jw_fini(&w);
    free(rows);
}
