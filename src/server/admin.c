/*
 * admin.c - the operator's routes (mlx-bun names them the same):
 *
 *   POST /admin/drain         start the graceful drain (drain.c); 202 {"draining": true, ...}
 *   POST /admin/cache/flush   empty the engine's prefix cache; 200 {"flushed_blocks": N, ...}
 *
 * Who may call them: with --admin-key, requests carrying that key; else with --api-key,
 * requests carrying it; with neither, only clients on a loopback address and without an
 * Origin header (a web page in the user's browser sends one: it must not be able to stop the
 * server). Failing that: 401 when a key is configured, else 403.
 */
#include "server/server_internal.h"

#include <string.h>

bool hearth_admin_allowed(hearth_http_req *r) {
    hearth_server *s = r->srv;
    const char *key = s->admin_key ? s->admin_key : s->api_key;
    hearth_api_err e;
    if (key) {
        if (hearth_http_key_ok(r, key)) return true;
        hearth_api_fail(&e, HEARTH_E_DENIED, "invalid_api_key", NULL,
                        "the admin routes need the %s key: send 'Authorization: Bearer KEY' or 'x-api-key: KEY'",
                        s->admin_key ? "--admin-key" : "--api-key");
        hearth_http_send_error(r, &e);
        return false;
    }
    if (hearth_http_peer_loopback(r) && !hearth_http_header(r, "Origin")) return true;
    hearth_api_fail(&e, HEARTH_E_FORBIDDEN, "forbidden", NULL,
                    "without --admin-key or --api-key the admin routes take requests from this machine only, "
                    "and not from web pages");
    hearth_http_send_error(r, &e);
    return false;
}

void hearth_admin_drain(hearth_http_req *r) {
    if (!hearth_admin_allowed(r)) return;
    hearth_server_drain(r->srv);
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_jw_obj(&w);
    hearth_jw_key(&w, "draining");
    hearth_jw_bool(&w, true);
    hearth_jw_key(&w, "timeout_s");
    hearth_jw_int(&w, r->srv->p.drain_timeout_s);
    hearth_jw_obj_end(&w);
    hearth_http_send_json(r, 202, &w);
    hearth_jw_fini(&w);
}

void hearth_admin_cache_flush(hearth_http_req *r) {
    if (!hearth_admin_allowed(r)) return;
    hearth_engine_info in;
    hearth_engine_info_get(r->srv->e, &in);
    int32_t n = hearth_engine_cache_flush(r->srv->e);
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_jw_obj(&w);
    hearth_jw_key(&w, "flushed_blocks");
    hearth_jw_int(&w, n);
    hearth_jw_key(&w, "flushed_bytes");
    hearth_jw_int(&w, (int64_t)n * in.block_bytes);
    hearth_jw_obj_end(&w);
    hearth_http_send_json(r, 200, &w);
    hearth_jw_fini(&w);
}
