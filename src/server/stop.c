/*
 * stop.c - the stop-string matcher (see stop.h).
 *
 * held[] keeps the unreleased tail. Each push first drops what the previous call released,
 * appends the new text, looks for the first stop string to complete, and otherwise releases
 * all but the longest suffix that is a proper prefix of a stop string. held stays shorter
 * than the longest stop string plus one piece, so the scans are short.
 */
#include "server/stop.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

hearth_status hearth_stop_init(hearth_stop *s, const hearth_span *stops, int n) {
    memset(s, 0, sizeof *s);
    s->hit = -1;
    if (n < 0 || n > HEARTH_STOP_MAX) return HEARTH_E_LIMIT;
    for (int i = 0; i < n; i++) {
        if (stops[i].len > HEARTH_STOP_MAX_BYTES) return HEARTH_E_LIMIT;
        if (stops[i].len > 0) s->stops[s->n_stops++] = stops[i];
    }
    return HEARTH_OK;
}

void hearth_stop_fini(hearth_stop *s) {
    free(s->held);
    memset(s, 0, sizeof *s);
}

/* Length of the longest proper prefix of stop that text[0..n) ends with. */
static size_t tail_overlap(const char *text, size_t n, hearth_span stop) {
    size_t k = stop.len - 1 < n ? stop.len - 1 : n;
    for (; k > 0; k--)
        if (memcmp(text + n - k, stop.ptr, k) == 0) return k;
    return 0;
}

bool hearth_stop_push(hearth_stop *s, const char *text, size_t n, hearth_span *out) {
    out->ptr = "";
    out->len = 0;
    if (s->stopped) return true;
    if (s->n_stops == 0) {
        out->ptr = text;
        out->len = n;
        return false;
    }
    if (s->n_released) {
        memmove(s->held, s->held + s->n_released, s->n_held - s->n_released);
        s->n_held -= s->n_released;
        s->n_released = 0;
    }
    if (!hearth_buf_grow(&s->held, &s->cap, s->n_held + n, 1, 256)) {
        /* out of memory: stop matching rather than lose text */
        out->ptr = text;
        out->len = n;
        return false;
    }
    if (n) memcpy(s->held + s->n_held, text, n);
    s->n_held += n;
    if (!s->n_held) return false; /* nothing seen yet (held may still be NULL): nothing to match */

    /* The generation ends where the first stop string completes: the smallest end, and of
     * those ending there the earliest start. Any split of the text into pieces gives the same
     * cut, since held keeps every incomplete occurrence. */
    const char *best = NULL, *best_end = NULL;
    int         best_i = -1;
    for (int i = 0; i < s->n_stops; i++) {
        const char *hit = memmem(s->held, s->n_held, s->stops[i].ptr, s->stops[i].len);
        if (!hit) continue;
        const char *end = hit + s->stops[i].len;
        if (!best || end < best_end || (end == best_end && hit < best)) {
            best = hit;
            best_end = end;
            best_i = i;
        }
    }
    if (best) {
        s->stopped = true;
        s->hit = best_i;
        out->ptr = s->held;
        out->len = (size_t)(best - s->held);
        return true;
    }
    size_t hold = 0;
    for (int i = 0; i < s->n_stops; i++) {
        size_t k = tail_overlap(s->held, s->n_held, s->stops[i]);
        if (k > hold) hold = k;
    }
    out->ptr = s->held;
    out->len = s->n_held - hold;
    s->n_released = out->len;
    return false;
}

hearth_span hearth_stop_flush(hearth_stop *s) {
    hearth_span r = {"", 0};
    if (s->stopped || !s->held) return r;
    r.ptr = s->held + s->n_released;
    r.len = s->n_held - s->n_released;
    s->n_released = s->n_held;
    return r;
}
