/*
 * adapters_api.c - the adapter routes (docs/server.md "Adapters") over the table of
 * adapters.h, and the choice of a generation request's adapter:
 *
 *   GET    /v1/adapters            the mounted ones
 *   POST   /v1/adapters            {"path": folder | .gguf | hub repo id, "id"?: name} mounts one
 *   DELETE /v1/adapters/{id}       unmounts (requests using it finish with it)
 *   GET    /v1/adapters/available  adapters found in the hub cache
 *
 * A generation request picks its adapter with "adapter" (an id, or "none" for the base model);
 * without it, a "model" of "<served id>:<adapter id>" (as /v1/models lists them) or of an
 * adapter id picks that adapter; otherwise the default (--adapter), if any. An id that is not
 * mounted is a 400 naming it, never the base model in its place.
 */
#include "server/adapters_api.h"

#include "server/adapters.h"
#include "server/reqjson.h"

#include <stdio.h>
#include <string.h>

static void send_err(hearth_http_req *r, hearth_status st, const char *code, const char *param, const char *msg) {
    hearth_api_err e;
    hearth_api_fail(&e, st, code, param, "%s", msg);
    hearth_http_send_error(r, &e);
}

void hearth_adapters_list(hearth_http_req *r) {
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_adapters_json(r->srv->adapters, &w);
    hearth_http_send_json(r, 200, &w);
    hearth_jw_fini(&w);
}

void hearth_adapters_available(hearth_http_req *r) {
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_adapters_available_json(r->srv->adapters, &w);
    hearth_http_send_json(r, 200, &w);
    hearth_jw_fini(&w);
}

void hearth_adapters_mount_route(hearth_http_req *r) {
    hearth_api_err pe;
    cJSON *root = hearth_req_parse(r, &pe);
    if (!root) {
        hearth_http_send_error(r, &pe);
        return;
    }
    const char *path = NULL, *id = NULL;
    if (hearth_req_str(root, "path", &path, &pe) < 0 || hearth_req_str(root, "id", &id, &pe) < 0) {
        cJSON_Delete(root);
        hearth_http_send_error(r, &pe);
        return;
    }
    if (!path || !*path) {
        cJSON_Delete(root);
        send_err(r, HEARTH_E_INVALID, "missing_field", "path", "'path' is required: an adapter folder, a GGUF LoRA "
                 "file, or a hub repo id");
        return;
    }
    char why[160];
    if (!hearth_engine_lora_supported(r->srv->e, why, sizeof why)) {
        cJSON_Delete(root);
        send_err(r, HEARTH_E_UNSUPPORTED, "adapters_unsupported", NULL, why);
        return;
    }
    hearth_err err = {0};
    char got[HEARTH_ADAPTER_ID_MAX];
    hearth_status st = hearth_adapters_mount(r->srv->adapters, path, id, false, got, sizeof got, &err);
    cJSON_Delete(root);
    if (st) {
        /* a file that does not fit the served model is the request's fault: 400 naming it */
        send_err(r, st == HEARTH_E_NOTFOUND ? st : st == HEARTH_E_NOMEM ? st : HEARTH_E_INVALID,
                 st == HEARTH_E_NOTFOUND ? "adapter_not_found" : "invalid_adapter", "path", err.msg);
        return;
    }
    hearth_jw w;
    hearth_jw_init(&w);
    if (!hearth_adapters_json_one(r->srv->adapters, got, &w)) { /* unmounted at once by another request */
        hearth_jw_fini(&w);
        send_err(r, HEARTH_E_NOTFOUND, "adapter_not_found", "id", "the adapter was unmounted meanwhile");
        return;
    }
    hearth_http_send_json(r, 200, &w);
    hearth_jw_fini(&w);
}

void hearth_adapters_delete(hearth_http_req *r) {
    const char *id = r->path + strlen("/v1/adapters/");
    char msg[256];
    if (hearth_adapters_unmount(r->srv->adapters, id)) {
        snprintf(msg, sizeof msg, "no adapter '%.200s' is mounted", id);
        send_err(r, HEARTH_E_NOTFOUND, "adapter_not_found", "id", msg);
        return;
    }
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_jw_obj(&w);
    hearth_jw_key(&w, "id");
    hearth_jw_cstr(&w, id);
    hearth_jw_key(&w, "object");
    hearth_jw_cstr(&w, "adapter");
    hearth_jw_key(&w, "deleted");
    hearth_jw_bool(&w, true);
    hearth_jw_obj_end(&w);
    hearth_http_send_json(r, 200, &w);
    hearth_jw_fini(&w);
}

bool hearth_adapters_pick(hearth_server *s, const cJSON *root, const hearth_lora **lora, uint64_t *uid,
                          hearth_api_err *e) {
    *lora = NULL;
    *uid = 0;
    const char *name = NULL, *model = NULL;
    int has = hearth_req_str(root, "adapter", &name, e);
    if (has < 0 || hearth_req_str(root, "model", &model, e) < 0) return false;
    if (has > 0) {
        if (!strcmp(name, "none")) return true;
        if (!s->adapters || !(*lora = hearth_adapters_get(s->adapters, name, uid)))
            return hearth_api_fail(e, HEARTH_E_INVALID, "adapter_not_found", "adapter", "no adapter '%.200s' is "
                                   "mounted (GET /v1/adapters lists them; \"none\" is the base model)", name);
        return true;
    }
    if (!s->adapters) return true;
    if (model) { /* "<served id>:<adapter>" or an adapter id */
        size_t n = strlen(s->model_id);
        const char *want = !strncmp(model, s->model_id, n) && model[n] == ':' ? model + n + 1 : model;
        if ((*lora = hearth_adapters_get(s->adapters, want, uid))) return true;
        if (want != model)
            return hearth_api_fail(e, HEARTH_E_INVALID, "adapter_not_found", "model", "no adapter '%.200s' is "
                                   "mounted (GET /v1/models lists the served ids)", want);
    }
    *lora = hearth_adapters_get(s->adapters, NULL, uid); /* the default, or none */
    return true;
}
