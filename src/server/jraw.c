/*
 * jraw.c - in-place JSON scanning (see jraw.h). A recursive skipper with an explicit depth
 * limit; iteration re-uses it to find where each member's value ends.
 */
#include "server/jraw.h"

#include <string.h>

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static const char *ws(const char *p, const char *e) {
    while (p < e && is_ws(*p)) p++;
    return p;
}

/* The end of the string whose opening quote is at p, or NULL. */
static const char *skip_str(const char *p, const char *e) {
    for (p++; p < e; p++) {
        if (*p == '\\') {
            if (++p >= e) return NULL;
        } else if (*p == '"') return p + 1;
        else if ((unsigned char)*p < 0x20) return NULL;
    }
    return NULL;
}

static const char *skip_val(const char *p, const char *e, int depth);

/* A container whose opening bracket is at p. */
static const char *skip_cont(const char *p, const char *e, int depth) {
    char close = *p == '{' ? '}' : ']';
    bool obj = *p == '{';
    if (depth >= HEARTH_JRAW_MAX_DEPTH) return NULL;
    p = ws(p + 1, e);
    if (p < e && *p == close) return p + 1;
    for (;;) {
        if (obj) {
            if (p >= e || *p != '"' || !(p = skip_str(p, e))) return NULL;
            p = ws(p, e);
            if (p >= e || *p != ':') return NULL;
            p++;
        }
        if (!(p = skip_val(p, e, depth + 1))) return NULL;
        p = ws(p, e);
        if (p >= e) return NULL;
        if (*p == close) return p + 1;
        if (*p != ',') return NULL;
        p = ws(p + 1, e);
    }
}

static const char *skip_val(const char *p, const char *e, int depth) {
    p = ws(p, e);
    if (p >= e) return NULL;
    switch (*p) {
    case '{':
    case '[': return skip_cont(p, e, depth);
    case '"': return skip_str(p, e);
    case 't': return e - p >= 4 && !memcmp(p, "true", 4) ? p + 4 : NULL;
    case 'f': return e - p >= 5 && !memcmp(p, "false", 5) ? p + 5 : NULL;
    case 'n': return e - p >= 4 && !memcmp(p, "null", 4) ? p + 4 : NULL;
    default: break;
    }
    const char *q = p;
    while (q < e && (strchr("0123456789+-.eE", *q) && *q)) q++;
    /* a number at the very end of the input may still be growing */
    if (q == p || q == e || (*p != '-' && (*p < '0' || *p > '9'))) return NULL;
    return q;
}

size_t hearth_jraw_skip(const char *s, size_t n) {
    const char *end = skip_val(s, s + n, 0);
    return end ? (size_t)(end - s) : 0;
}

hearth_span hearth_jraw_trim(const char *s, size_t n) {
    while (n && is_ws(*s)) s++, n--;
    while (n && is_ws(s[n - 1])) n--;
    return (hearth_span){s, n};
}

bool hearth_jraw_iter(hearth_span v, hearth_jraw_it *it) {
    memset(it, 0, sizeof *it);
    if (!v.ptr) return false; /* an unknown text (NULL, 0): no pointer arithmetic on it */
    const char *p = ws(v.ptr, v.ptr + v.len), *e = v.ptr + v.len;
    if (p >= e || (*p != '{' && *p != '[')) return false;
    it->obj = *p == '{';
    it->p = p + 1;
    it->end = e;
    return true;
}

bool hearth_jraw_next(hearth_jraw_it *it, hearth_span *key, hearth_span *val) {
    if (it->err || !it->p) return false;
    const char *p = ws(it->p, it->end), *e = it->end;
    if (p < e && (*p == ',')) p = ws(p + 1, e);
    if (p >= e) goto bad;
    if (*p == (it->obj ? '}' : ']')) {
        it->p = NULL;
        return false;
    }
    if (key) *key = (hearth_span){NULL, 0};
    if (it->obj) {
        const char *k = p, *ke = *p == '"' ? skip_str(p, e) : NULL;
        if (!ke) goto bad;
        if (key) *key = (hearth_span){k + 1, (size_t)(ke - k - 2)};
        p = ws(ke, e);
        if (p >= e || *p != ':') goto bad;
        p = ws(p + 1, e);
    }
    const char *ve = skip_val(p, e, 1);
    if (!ve) goto bad;
    *val = (hearth_span){p, (size_t)(ve - p)};
    it->p = ve;
    return true;
bad:
    it->err = true;
    return false;
}

bool hearth_jraw_get(hearth_span obj, const char *key, hearth_span *val) {
    hearth_jraw_it it;
    hearth_span k, v;
    if (!hearth_jraw_iter(obj, &it) || !it.obj) return false;
    while (hearth_jraw_next(&it, &k, &v))
        if (hearth_span_eq(k, key)) {
            *val = v;
            return true;
        }
    return false;
}

char hearth_jraw_kind(hearth_span v) {
    hearth_span t = hearth_jraw_trim(v.ptr, v.len);
    if (!t.len) return 0;
    switch (t.ptr[0]) {
    case '{': case '[': case '"': case 't': case 'f': return t.ptr[0];
    case 'n': return 'N';
    default: return 'n';
    }
}
