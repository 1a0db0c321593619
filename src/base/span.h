/*
 * span.h - a borrowed byte range {ptr, len}. Not NUL-terminated; the owner is stated where a
 * span is returned. Header-only.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

typedef struct {
    const char *ptr; /* borrowed */
    size_t      len; /* bytes */
} hearth_span;

static inline hearth_span hearth_span_cstr(const char *s) {
    hearth_span r = {s, s ? strlen(s) : 0};
    return r;
}

static inline bool hearth_span_eq(hearth_span a, const char *s) {
    size_t n = strlen(s);
    return a.len == n && (n == 0 || memcmp(a.ptr, s, n) == 0);
}
