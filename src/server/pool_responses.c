/*
 * pool_responses.c - GET and DELETE of a stored response with a pool (pool_responses.h).
 */
#include "server/pool_responses.h"
#include "server/engines.h"
#include "server/proxy.h"

void hearth_pool_response(hearth_http_req *r) {
    hearth_engine_addr kid;
    /* every child reads the one shared store: any that is up answers */
    int n = hearth_engines_ready(r->srv->engines, &kid, 1);
    hearth_proxy_forward(r, n ? kid.model_id : NULL);
}
