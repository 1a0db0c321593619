/*
 * buf.h - growth of heap memory: one growable byte buffer and one checked way to grow an array.
 *
 * hearth_buf is the byte buffer every module appends text to (JSON writers, HTTP bodies,
 * tokenizer scratch, reply bodies). It is NUL-terminated after every write, so its text can be
 * handed to C string functions, and out-of-memory is sticky: after a failed write every later
 * write fails too and oom stays set, so a writer may check once at the end. Zero-initialised
 * storage ({0}) is an empty buffer; hearth_buf_fini frees it.
 *
 * hearth_buf_grow is the doubling behind it, for heap arrays of any element: capacity doubles
 * from a first size until it holds the need (hearth_grow_cap in size.h, the rule arena arrays
 * follow too), and every multiplication is overflow-checked, so a hostile count fails cleanly
 * instead of wrapping into a small allocation. Not thread-safe per buffer; no global state.
 */
#pragma once
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char  *p;        /* owned (malloc); NUL-terminated once anything was written */
    size_t len, cap; /* bytes used (without the NUL) / allocated */
    bool   oom;      /* sticky: a write could not grow the buffer */
} hearth_buf;

/* Grow the array *pp of elem_bytes-sized elements to hold at least need elements: capacity
 * doubles from max(*cap, first) until it does. On success *pp and *cap are updated (the new
 * elements are uninitialised); on overflow or out of memory both are left as they were and
 * false is returned. */
bool hearth_buf_grow(void *pp, size_t *cap, size_t need, size_t elem_bytes, size_t first);

/* Room for extra more bytes (plus the NUL); false (and oom) when it cannot grow. */
bool hearth_buf_reserve(hearth_buf *b, size_t extra);
/* Append n bytes of s (s may be NULL when n is 0). */
bool hearth_buf_put(hearth_buf *b, const void *s, size_t n);
bool hearth_buf_puts(hearth_buf *b, const char *s);
bool hearth_buf_putc(hearth_buf *b, char c);
/* Append the UTF-8 encoding of code point cp. */
bool hearth_buf_put_cp(hearth_buf *b, unsigned cp);
/* Append printf-formatted text. */
bool hearth_buf_printf(hearth_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool hearth_buf_vprintf(hearth_buf *b, const char *fmt, va_list ap);
/* Empty the buffer and clear oom, keeping its memory. */
void hearth_buf_reset(hearth_buf *b);
/* Hand the text to the caller (free() it; never NULL unless out of memory) and empty b. */
char *hearth_buf_take(hearth_buf *b);
void hearth_buf_fini(hearth_buf *b);
