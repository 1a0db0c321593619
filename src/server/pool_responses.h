/*
 * pool_responses.h - GET and DELETE /v1/responses/ID of `serve --isolate --model-pool N`.
 *
 * The request names no model, and needs none: the children keep their stored responses in
 * one shared folder (resp_disk.h), so the request goes to any child that is up (the default
 * model's first), which finds the entry whichever model made it, also one evicted since.
 * When no child is up the default model's is started for it.
 *
 * Thread rule: the connection's thread.
 */
#pragma once
#include "server/server_internal.h"

void hearth_pool_response(hearth_http_req *r);
