/*
 * json_out.c - the response JSON writer and the UTF-8 checker (see json_out.h).
 *
 * Escaping writes runs of plain bytes with one memcpy and only stops at '"', '\\', control
 * bytes and the lead byte of a multi-byte sequence, which is checked (RFC 3629's table:
 * E0 needs A0..BF next, ED needs 80..9F, F0 needs 90..BF, F4 needs 80..8F) and copied whole.
 */
#include "server/json_out.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


void hearth_jw_init(hearth_jw *w) { memset(w, 0, sizeof *w); }

void hearth_jw_fini(hearth_jw *w) {
    hearth_buf_fini(&w->b);
    memset(w, 0, sizeof *w);
}

void hearth_jw_reset(hearth_jw *w) {
    hearth_buf_reset(&w->b);
    w->after_key = false;
    w->depth = 0;
    w->first = 0;
}

static void put(hearth_jw *w, const char *s, size_t n) { hearth_buf_put(&w->b, s, n); }

/* Before a value or key: a comma unless it is the first in its container or follows a key. */
static void sep(hearth_jw *w) {
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (w->depth == 0) return;
    uint64_t bit = 1ull << w->depth;
    if (w->first & bit) w->first &= ~bit;
    else put(w, ",", 1);
}

static void open_c(hearth_jw *w, char c) {
    sep(w);
    put(w, &c, 1);
    if (w->depth >= HEARTH_JW_MAX_DEPTH) {
        w->b.oom = true; /* a bug in the caller: treat as a failed write */
        return;
    }
    w->depth++;
    w->first |= 1ull << w->depth;
}

static void close_c(hearth_jw *w, char c) {
    if (w->depth > 0) {
        w->first &= ~(1ull << w->depth);
        w->depth--;
    }
    w->after_key = false;
    put(w, &c, 1);
}

void hearth_jw_obj(hearth_jw *w) { open_c(w, '{'); }
void hearth_jw_obj_end(hearth_jw *w) { close_c(w, '}'); }
void hearth_jw_arr(hearth_jw *w) { open_c(w, '['); }
void hearth_jw_arr_end(hearth_jw *w) { close_c(w, ']'); }

static void escape(hearth_jw *w, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    put(w, "\"", 1);
    size_t run = 0; /* start of the pending run of plain bytes */
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0x80) {
            uint32_t cp;
            size_t k = hearth_utf8_decode(p + i, n - i, &cp);
            if (k) {
                i += k; /* valid: part of the run */
                continue;
            }
        }
        put(w, s + run, i - run);
        char esc[8];
        size_t m = 2;
        esc[0] = '\\';
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            if (c < 0x20) {
                memcpy(esc, "\\u00", 4);
                esc[4] = hex[c >> 4];
                esc[5] = hex[c & 15];
                m = 6;
            } else {
                memcpy(esc, "\xEF\xBF\xBD", 3); /* U+FFFD for a bad byte */
                m = 3;
            }
        }
        put(w, esc, m);
        i++;
        run = i;
    }
    put(w, s + run, n - run);
    put(w, "\"", 1);
}

void hearth_jw_key(hearth_jw *w, const char *k) { hearth_jw_keyn(w, k, strlen(k)); }

void hearth_jw_keyn(hearth_jw *w, const char *k, size_t n) {
    sep(w);
    escape(w, k, n);
    put(w, ":", 1);
    w->after_key = true;
}

void hearth_jw_str(hearth_jw *w, const char *s, size_t n) {
    sep(w);
    escape(w, s ? s : "", s ? n : 0);
}

void hearth_jw_cstr(hearth_jw *w, const char *s) {
    if (!s) hearth_jw_null(w);
    else hearth_jw_str(w, s, strlen(s));
}

void hearth_jw_int(hearth_jw *w, int64_t v) {
    char b[24];
    int n = snprintf(b, sizeof b, "%lld", (long long)v);
    sep(w);
    put(w, b, (size_t)n);
}

void hearth_jw_num(hearth_jw *w, double v) {
    if (!isfinite(v)) {
        hearth_jw_null(w);
        return;
    }
    char b[32];
    int n = snprintf(b, sizeof b, "%.10g", v);
    sep(w);
    put(w, b, (size_t)n);
}

void hearth_jw_bool(hearth_jw *w, bool v) {
    sep(w);
    put(w, v ? "true" : "false", v ? 4 : 5);
}

void hearth_jw_null(hearth_jw *w) {
    sep(w);
    put(w, "null", 4);
}

void hearth_jw_json(hearth_jw *w, const char *json, size_t n) {
    sep(w);
    put(w, json, n);
}

void hearth_jw_raw(hearth_jw *w, const char *s, size_t n) { put(w, s, n); }
