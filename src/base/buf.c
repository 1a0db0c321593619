/*
 * buf.c - the growable byte buffer and checked array growth (see buf.h).
 *
 * Every heap buffer of the program grows here, by doubling (hearth_grow_cap): amortised O(1)
 * appends, and one place where the size arithmetic is checked. The byte buffer keeps one byte beyond len for the NUL.
 */
#include "base/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/size.h"
#include "base/utf8.h"

bool hearth_buf_grow(void *pp, size_t *cap, size_t need, size_t elem_bytes, size_t first) {
    if (need <= *cap) return true;
    size_t n;
    if (!hearth_grow_cap(*cap, need, elem_bytes, first, &n)) return false;
    size_t bytes = n * elem_bytes; /* hearth_grow_cap checked it */
    void *old;
    memcpy(&old, pp, sizeof old);
    void *p = realloc(old, bytes ? bytes : 1);
    if (!p) return false;
    memcpy(pp, &p, sizeof p);
    *cap = n;
    return true;
}

bool hearth_buf_reserve(hearth_buf *b, size_t extra) {
    if (b->oom) return false;
    size_t need;
    if (!hearth_add_size(b->len, extra, &need) || !hearth_add_size(need, 1, &need)) {
        b->oom = true;
        return false;
    }
    if (b->p && need <= b->cap) return true;
    if (!hearth_buf_grow(&b->p, &b->cap, need, 1, 64)) {
        b->oom = true;
        return false;
    }
    return true;
}

bool hearth_buf_put(hearth_buf *b, const void *s, size_t n) {
    if (!hearth_buf_reserve(b, n)) return false;
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
    return true;
}

bool hearth_buf_puts(hearth_buf *b, const char *s) { return hearth_buf_put(b, s, strlen(s)); }

bool hearth_buf_putc(hearth_buf *b, char c) { return hearth_buf_put(b, &c, 1); }

bool hearth_buf_put_cp(hearth_buf *b, unsigned cp) {
    char u[4];
    return hearth_buf_put(b, u, hearth_utf8_encode(cp, u));
}

bool hearth_buf_vprintf(hearth_buf *b, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0 || !hearth_buf_reserve(b, (size_t)n)) {
        b->oom = true;
        return false;
    }
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return true;
}

bool hearth_buf_printf(hearth_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bool ok = hearth_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return ok;
}

void hearth_buf_reset(hearth_buf *b) {
    b->len = 0;
    b->oom = false;
    if (b->p) b->p[0] = 0;
}

char *hearth_buf_take(hearth_buf *b) {
    char *p = b->oom ? NULL : b->p;
    if (!p && !b->oom) p = calloc(1, 1);
    if (b->oom) free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
    b->oom = false;
    return p;
}

void hearth_buf_fini(hearth_buf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}
