/*
 * status.h - result codes and the error record of recoverable failures.
 *
 * Three kinds of failure, three mechanisms (STYLE 2.5): broken invariants abort through
 * HEARTH_ASSERT (assert.h); recoverable errors return a hearth_status and, where the caller
 * wants detail, fill a hearth_err with a message and the position in the input (a byte offset,
 * or a line/column for text); capacity refusals are ordinary results, not errors.
 *
 * Codes are negative, grouped by area, and append-only: they reach logs and the wire.
 * LIMIT is a bound (a size or a count) that the input itself breaks, so trying again the same
 * way fails again; TIMEOUT and BUSY are "not now", where the same call may succeed later. The
 * server maps each code to an HTTP status in one table (server/errors.c).
 */
#pragma once
#include <stdint.h>
#include <stddef.h>

typedef enum {
    HEARTH_OK = 0,
    HEARTH_E_IO        = -1,  /* read/write/open/mmap failed */
    HEARTH_E_FORMAT    = -2,  /* input bytes are malformed (file or wire format) */
    HEARTH_E_NOMEM     = -3,  /* allocation failed */
    HEARTH_E_DEVICE    = -4,  /* accelerator error */
    HEARTH_E_LIMIT     = -5,  /* a size or count exceeds a bound we enforce */
    HEARTH_E_INVALID   = -6,  /* a caller passed an invalid argument or request */
    HEARTH_E_CANCELLED = -7,  /* the operation was cancelled */
    HEARTH_E_NOTFOUND  = -8,  /* a named thing does not exist */
    HEARTH_E_UNSUPPORTED = -9, /* valid input that hearth does not (yet) handle */
    HEARTH_E_AMBIGUOUS = -10, /* a query matched more than one thing */
    HEARTH_E_TIMEOUT   = -11, /* a wait ended before what it waited for happened ("not yet") */
    HEARTH_E_BUSY      = -12, /* a shared resource is taken (a lock, every slot); try again later */
    HEARTH_E_DENIED    = -13, /* the caller did not prove it may do this (no or a wrong key) */
    HEARTH_E_NOT_ALLOWED = -14, /* the target exists but does not offer this operation */
    HEARTH_E_TOO_LARGE = -15, /* the input as a whole is larger than the receiver takes */
    HEARTH_E_MEDIA_TYPE = -16, /* the input comes in a media type or encoding not taken here */
    HEARTH_E_NOT_IMPLEMENTED = -17, /* the request is fine, but serving it needs what hearth lacks
                                       * (say a model's chat template it cannot run) */
    HEARTH_E_FORBIDDEN = -18, /* refused whoever asks: the request comes from where it may not
                               * (a Host or Origin this server does not answer) */
} hearth_status;

/* Error record filled by parsers and loaders. pos is a byte offset into the input, or -1.
 * line/col are 1-based for text inputs, 0 when unused. Plain data, caller-provided storage. */
typedef struct {
    hearth_status code;
    int64_t       pos;
    int32_t       line, col;
    char          msg[256];
} hearth_err;

/* A short lower-case name for a status ("format error"). Never NULL. Any thread. */
const char *hearth_status_str(hearth_status s);

/* Fill err (may be NULL) with code, position and a printf-style message; returns code so a
 * caller can write `return hearth_err_set(err, HEARTH_E_FORMAT, off, "bad magic");`. */
hearth_status hearth_err_set(hearth_err *err, hearth_status code, int64_t pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Clear err to HEARTH_OK with an empty message. err may be NULL. */
void hearth_err_clear(hearth_err *err);
