/*
 * proxy.h - `serve --isolate`: an API request forwarded to its model's engine child
 * (engines.h) over the child's unix socket, and the child's answer passed back.
 *
 * The request goes out as HTTP/1.1 with `Connection: close` (one connection per request: a
 * child's death then ends exactly the requests it was serving). A non-streaming answer is read
 * whole before it is passed on, so a child that dies half-way gives a clean 503 with
 * Retry-After instead of a truncated body. An event stream (text/event-stream) passes through
 * frame by frame as the child writes it; when the child's chunked body ends before its final
 * zero-length chunk, the child died: the stream gets its API's error event (OpenAI: a data
 * frame {"error": ...} and [DONE]; Anthropic: event: error; Responses: response.failed) and
 * ends. Only whole frames are passed on, so a frame cut by the death never reaches a client.
 * A client that goes away closes the child's connection, which cancels the generation there.
 *
 * Thread rule: the connection's thread.
 */
#pragma once
#include "server/server_internal.h"

/* Forward r to the engine of `model` (NULL: the default one) and answer r with what it says. */
void hearth_proxy_forward(hearth_http_req *r, const char *model);
/* The request body's "model" string (raw, as the client wrote it) into out; false when the
 * body has none (or it does not fit). */
bool hearth_proxy_model_of(const hearth_http_req *r, char *out, size_t cap);
