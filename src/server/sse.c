/*
 * sse.c - event-stream responses over http.c's content reader (see sse.h).
 *
 * MHD asks for up to `max` bytes whenever the socket can take more; the reader hands out what
 * is pending and only calls fill when everything before has been copied, so frames reach the
 * client in order and whole, and a slow client simply makes fill run less often.
 */
#include "server/sse.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    hearth_sse_fill_fn fill;
    void (*done)(void *ctx);
    void     *ctx;
    hearth_jw w;    /* pending bytes [off, w.len) */
    size_t    off;
    bool      last; /* fill said nothing more comes */
} sse;

static long sse_read(void *cls, char *buf, size_t max) {
    sse *s = cls;
    while (s->off == s->w.b.len) {
        if (s->last) return -1;
        hearth_jw_reset(&s->w);
        s->off = 0;
        int rc = s->fill(s->ctx, &s->w);
        if (rc < 0 || s->w.b.oom) return -2;
        if (rc == 0) s->last = true;
    }
    size_t n = s->w.b.len - s->off;
    if (n > max) n = max;
    memcpy(buf, s->w.b.p + s->off, n);
    s->off += n;
    return (long)n;
}

static void sse_free(void *cls) {
    sse *s = cls;
    s->done(s->ctx);
    hearth_jw_fini(&s->w);
    free(s);
}

bool hearth_sse_start(hearth_http_req *r, hearth_sse_fill_fn fill, void (*done)(void *ctx), void *ctx) {
    sse *s = calloc(1, sizeof *s);
    if (!s) {
        done(ctx);
        return false;
    }
    s->fill = fill;
    s->done = done;
    s->ctx = ctx;
    hearth_jw_init(&s->w);
    return hearth_http_send_reader(r, 200, "text/event-stream; charset=utf-8", sse_read, sse_free, s);
}

void hearth_sse_begin(hearth_jw *w) { hearth_jw_raw(w, "data: ", 6); }
void hearth_sse_end(hearth_jw *w) { hearth_jw_raw(w, "\n\n", 2); }
void hearth_sse_event(hearth_jw *w, const char *name) {
    hearth_jw_raw(w, "event: ", 7);
    hearth_jw_raw(w, name, strlen(name));
    hearth_jw_raw(w, "\ndata: ", 7);
}
void hearth_sse_done(hearth_jw *w) { hearth_jw_raw(w, "data: [DONE]\n\n", 14); }
