/*
 * digest.h - the checksums the hub publishes for its files, computed while bytes stream in:
 *   LFS files:   sha256 of the content (the LFS oid, also the blob's name in the cache)
 *   small files: git's blob id, sha1("blob <size>\0" + content)
 * Both through OpenSSL's EVP interface (libcrypto).
 * A hearth_digest belongs to one thread.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct hearth_digest hearth_digest;

typedef enum {
    HEARTH_DIGEST_SHA256 = 0,
    HEARTH_DIGEST_GIT_SHA1, /* needs the content's total size up front */
} hearth_digest_kind;

/* NULL on allocation failure. total_bytes is used by GIT_SHA1 only. */
hearth_digest *hearth_digest_create(hearth_digest_kind kind, int64_t total_bytes);
void           hearth_digest_destroy(hearth_digest *d); /* accepts NULL */
/* Start over (same kind and total). */
bool           hearth_digest_reset(hearth_digest *d);
bool           hearth_digest_update(hearth_digest *d, const void *data, size_t n);
/* Hash the first n bytes of the open file fd (read with pread; the offset is untouched). */
hearth_status  hearth_digest_update_fd(hearth_digest *d, int fd, int64_t n, hearth_err *err);
/* Finish: lower-case hex into hex (65 bytes for sha256, 41 for sha1). */
bool           hearth_digest_final_hex(hearth_digest *d, char *hex, size_t n);
/* Is s n lower-case hex digits? */
bool           hearth_digest_is_hex(const char *s, size_t n);
