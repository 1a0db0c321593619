/*
 * json_out.h - a small JSON writer for responses and the per-token SSE frames, plus the strict
 * UTF-8 check the server applies to request bodies.
 *
 * The writer appends to one growable buffer that the caller keeps for a whole response (or a
 * whole stream): hearth_jw_reset rewinds it, so after the first few frames a stream writes
 * tokens without allocating. Commas are placed automatically from a small per-depth "first
 * element" bit set. Strings are escaped as RFC 8259 asks, and any invalid UTF-8 in them is
 * written as U+FFFD, so the output is always valid JSON in valid UTF-8 whatever bytes a token
 * decodes to. An allocation failure is sticky (oom) and the caller answers 500.
 *
 * Thread rule: a writer belongs to one thread at a time.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/utf8.h" /* hearth_utf8_valid, which request bodies go through */

#define HEARTH_JW_MAX_DEPTH 63

typedef struct {
    hearth_buf b;        /* owned: the text (b.p, b.len), NUL-terminated after every write;
                          * b.oom is sticky: a write did not fit and could not grow it */
    bool     after_key;  /* the next value follows a key: no comma */
    int      depth;      /* open containers */
    uint64_t first;      /* bit d: nothing written yet in the container at depth d */
} hearth_jw;

void hearth_jw_init(hearth_jw *w);
void hearth_jw_fini(hearth_jw *w);
/* Empty the buffer (keeps its memory) and the nesting state. */
void hearth_jw_reset(hearth_jw *w);

void hearth_jw_obj(hearth_jw *w);
void hearth_jw_obj_end(hearth_jw *w);
void hearth_jw_arr(hearth_jw *w);
void hearth_jw_arr_end(hearth_jw *w);
/* An object key (NUL-terminated); the next call writes its value. */
void hearth_jw_key(hearth_jw *w, const char *k);
/* A key of n bytes (escaped as a string is). */
void hearth_jw_keyn(hearth_jw *w, const char *k, size_t n);
/* A string value of n bytes, escaped; invalid UTF-8 becomes U+FFFD. */
void hearth_jw_str(hearth_jw *w, const char *s, size_t n);
/* A NUL-terminated string value, or null when s is NULL. */
void hearth_jw_cstr(hearth_jw *w, const char *s);
void hearth_jw_int(hearth_jw *w, int64_t v);
/* A number; NaN and infinities (not JSON) are written as null. */
void hearth_jw_num(hearth_jw *w, double v);
void hearth_jw_bool(hearth_jw *w, bool v);
void hearth_jw_null(hearth_jw *w);
/* A value that is already serialized JSON (comma handling as for any value). */
void hearth_jw_json(hearth_jw *w, const char *json, size_t n);
/* Raw bytes outside the JSON grammar (SSE "data: " prefixes, newlines). */
void hearth_jw_raw(hearth_jw *w, const char *s, size_t n);

