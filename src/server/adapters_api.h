/*
 * adapters_api.h - the /v1/adapters routes and a generation request's adapter choice
 * (adapters_api.c says how a request picks one).
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "lora/lora.h"
#include "server/server_internal.h"

struct cJSON;

void hearth_adapters_list(hearth_http_req *r);         /* GET /v1/adapters */
void hearth_adapters_available(hearth_http_req *r);    /* GET /v1/adapters/available */
void hearth_adapters_mount_route(hearth_http_req *r);  /* POST /v1/adapters */
void hearth_adapters_delete(hearth_http_req *r);       /* DELETE /v1/adapters/{id} */

/* The adapter a generation request's body asks for: *lora a reference (the caller releases
 * it; NULL: the base model) and *uid its mount's uid. False with e filled (400 naming the
 * field) for an adapter that is not mounted or a field of the wrong type. */
bool hearth_adapters_pick(hearth_server *s, const struct cJSON *root, const hearth_lora **lora, uint64_t *uid,
                          hearth_api_err *e);
