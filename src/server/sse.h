/*
 * sse.h - Server-Sent Events responses (the OpenAI streaming wire format):
 *
 *   HTTP/1.1 200, Content-Type: text/event-stream, chunked
 *   data: {...}\n\n   one event per frame
 *   data: [DONE]\n\n  the end (OpenAI)
 *
 * A stream is driven by a fill function that the connection's thread calls whenever the
 * bytes of the previous frames have gone out: it may block (waiting for tokens), appends one
 * or more whole frames to the writer, and says whether more will come. The writer's buffer
 * is reused from call to call, so a steady stream does not allocate.
 *
 * Thread rule: everything runs on the connection's thread.
 */
#pragma once
#include "server/server_internal.h"

/* Append frames to w. Returns 1: more later; 0: that was the last; -1: abort the connection
 * (the client is gone). */
typedef int (*hearth_sse_fill_fn)(void *ctx, hearth_jw *w);

/* Answer r with a 200 event stream fed by fill(ctx); done(ctx) runs exactly once when the
 * stream is over for any reason (also when starting it fails). */
bool hearth_sse_start(hearth_http_req *r, hearth_sse_fill_fn fill, void (*done)(void *ctx), void *ctx);

/* Frame helpers: "data: " + one JSON value + "\n\n". */
void hearth_sse_begin(hearth_jw *w);
void hearth_sse_end(hearth_jw *w);
/* A named event's head: "event: NAME\ndata: " (Anthropic's and the Responses API's frames);
 * hearth_sse_end closes it. */
void hearth_sse_event(hearth_jw *w, const char *name);
/* "data: [DONE]\n\n" */
void hearth_sse_done(hearth_jw *w);
