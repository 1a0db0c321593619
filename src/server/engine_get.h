/*
 * engine_get.h - a short request of the serving process itself to one engine child of
 * `serve --isolate` (a /metrics scrape, a stored response looked up), as opposed to a client's
 * request, which proxy.h forwards.
 *
 * One connection per request (`Connection: close`), no body sent; the answer is read until
 * the child closes, within a deadline: a child that is stopped, swapping or busy past it
 * counts as not answering, so the caller's own answer is never held longer than that.
 *
 * Thread rule: any thread; no state.
 */
#pragma once
#include <stdbool.h>

#include "base/buf.h"

/* METHOD path on the child listening at sock, within timeout_ms. true with *status and the
 * body (de-chunked when the child sent it chunked) in body; false when the child could not be
 * reached, did not answer in time, or sent a malformed answer. */
bool hearth_engine_get(const char *sock, const char *method, const char *path, int timeout_ms, int *status,
                       hearth_buf *body);
