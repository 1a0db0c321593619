/*
 * engine_get.h - a short request of the serving process itself to one engine child of
 * `serve --isolate` (a /metrics scrape, a stored response looked up), as opposed to a client's
 * request, which proxy.h forwards.
 *
 * One connection per request (`Connection: close`), no body sent; the answer is read until
 * the child closes, within a deadline: a child that is stopped, swapping or busy past it
 * counts as not answering, so the caller's own answer is never held longer than that. Several
 * children are asked at once, under one deadline for the whole gather.
 *
 * Thread rule: any thread; no state.
 */
#pragma once
#include <stdbool.h>

#include "base/buf.h"

/* METHOD path on each of the n children listening at socks[i], all at once, within one
 * deadline of timeout_ms for all of them (n stopped children cost timeout_ms, not n times
 * it). For each: ok[i], and with it status[i] and the body (de-chunked) in bodies[i];
 * ok[i] false when the child could not be reached, did not answer in time or sent a
 * malformed answer. Returns how many answered. */
int  hearth_engine_get_all(const char *const *socks, int n, const char *method, const char *path, int timeout_ms,
                           int *status, hearth_buf *bodies, bool *ok);
/* The same for one child: METHOD path on the child listening at sock, within timeout_ms. true with *status and the
 * body (de-chunked when the child sent it chunked) in body; false when the child could not be
 * reached, did not answer in time, or sent a malformed answer. */
bool hearth_engine_get(const char *sock, const char *method, const char *path, int timeout_ms, int *status,
                       hearth_buf *body);
