/*
 * pool_responses.c - a stored response found among the pool's children (pool_responses.h).
 */
#include "server/pool_responses.h"
#include "base/buf.h"
#include "server/engine_get.h"
#include "server/engines.h"
#include "server/proxy.h"

#include <stdlib.h>

#define MAX_CHILDREN   16
#define ASK_TIMEOUT_MS 2000

void hearth_pool_response(hearth_http_req *r) {
    hearth_engine_addr *kids = calloc(MAX_CHILDREN, sizeof *kids);
    int n = kids ? hearth_engines_ready(r->srv->engines, kids, MAX_CHILDREN) : 0;
    const char *model = NULL;
    hearth_buf body = {0};
    for (int i = 0; i < n && !model; i++) {
        int status = 0;
        hearth_buf_reset(&body);
        if (hearth_engine_get(kids[i].sock, "GET", r->path, ASK_TIMEOUT_MS, &status, &body) && status == 200)
            model = kids[i].model_id;
    }
    hearth_buf_fini(&body);
    hearth_proxy_forward(r, model); /* NULL: the default model's child, which says not found */
    free(kids);
}
