/*
 * pool_responses.h - GET and DELETE /v1/responses/ID of `serve --isolate --model-pool N`.
 *
 * A stored response lives in the engine child of the model that made it (resp_store.h is
 * per process), and the request names no model. So each resident child is asked in turn
 * (GET of the same path, the default model's child first, a short deadline each); the
 * request is forwarded to the first that has it. When none has it the default model's
 * child answers (its 404 not_found). A response of a model that was evicted went with its
 * child.
 *
 * Thread rule: the connection's thread.
 */
#pragma once
#include "server/server_internal.h"

void hearth_pool_response(hearth_http_req *r);
