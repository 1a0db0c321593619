/*
 * rd.h - a bounds-checked reader over untrusted bytes (STYLE 2.5).
 *
 * {start, p, end} plus a sticky error: once a read runs past end, every later read returns
 * zeros and the reader stays failed, so a parser can read a whole record and check once.
 * Values are little-endian and read with memcpy (never by casting mapped bytes to structs).
 * Plain data over caller-owned bytes; one thread at a time.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    const uint8_t *start; /* borrowed: the input */
    const uint8_t *p;     /* next byte to read */
    const uint8_t *end;   /* one past the last byte */
    bool           failed; /* sticky: a read ran out of bytes */
} hearth_rd;

static inline hearth_rd hearth_rd_init(const void *data, size_t n) {
    hearth_rd r = {(const uint8_t *)data, (const uint8_t *)data, (const uint8_t *)data + n, false};
    return r;
}

static inline size_t hearth_rd_left(const hearth_rd *r) { return (size_t)(r->end - r->p); }
static inline size_t hearth_rd_pos(const hearth_rd *r) { return (size_t)(r->p - r->start); }

/* Copy n bytes into dst (zeros on failure). Returns false once the reader has failed. */
static inline bool hearth_rd_bytes(hearth_rd *r, void *dst, size_t n) {
    if (r->failed || hearth_rd_left(r) < n) {
        r->failed = true;
        memset(dst, 0, n);
        return false;
    }
    memcpy(dst, r->p, n);
    r->p += n;
    return true;
}

/* Borrow n bytes in place (NULL on failure); the pointer stays valid while the input does. */
static inline const uint8_t *hearth_rd_take(hearth_rd *r, size_t n) {
    if (r->failed || hearth_rd_left(r) < n) {
        r->failed = true;
        return NULL;
    }
    const uint8_t *q = r->p;
    r->p += n;
    return q;
}

static inline bool hearth_rd_skip(hearth_rd *r, size_t n) { return hearth_rd_take(r, n) != NULL || n == 0; }

#define HEARTH_RD_SCALAR(name, type)                     \
    static inline type hearth_rd_##name(hearth_rd *r) {  \
        type v;                                          \
        hearth_rd_bytes(r, &v, sizeof v);                \
        return v;                                        \
    }
HEARTH_RD_SCALAR(u8, uint8_t)
HEARTH_RD_SCALAR(u16, uint16_t)
HEARTH_RD_SCALAR(u32, uint32_t)
HEARTH_RD_SCALAR(u64, uint64_t)
HEARTH_RD_SCALAR(i32, int32_t)
HEARTH_RD_SCALAR(i64, int64_t)
HEARTH_RD_SCALAR(f32, float)
HEARTH_RD_SCALAR(f64, double)
#undef HEARTH_RD_SCALAR
