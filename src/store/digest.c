/* digest.c - streaming sha256 / git blob sha1 through EVP; see digest.h. */
#include "store/digest.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct hearth_digest {
    EVP_MD_CTX        *ctx; /* owned */
    hearth_digest_kind kind;
    int64_t            total_bytes;
};

bool hearth_digest_reset(hearth_digest *d) {
    const EVP_MD *md = d->kind == HEARTH_DIGEST_SHA256 ? EVP_sha256() : EVP_sha1();
    if (EVP_DigestInit_ex(d->ctx, md, NULL) != 1) return false;
    if (d->kind == HEARTH_DIGEST_GIT_SHA1) {
        char head[48];
        int n = snprintf(head, sizeof head, "blob %lld", (long long)d->total_bytes);
        return EVP_DigestUpdate(d->ctx, head, (size_t)n + 1) == 1; /* with the NUL */
    }
    return true;
}

hearth_digest *hearth_digest_create(hearth_digest_kind kind, int64_t total_bytes) {
    hearth_digest *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->kind = kind;
    d->total_bytes = total_bytes;
    d->ctx = EVP_MD_CTX_new();
    if (!d->ctx || !hearth_digest_reset(d)) {
        hearth_digest_destroy(d);
        return NULL;
    }
    return d;
}

void hearth_digest_destroy(hearth_digest *d) {
    if (!d) return;
    EVP_MD_CTX_free(d->ctx);
    free(d);
}

bool hearth_digest_update(hearth_digest *d, const void *data, size_t n) {
    return n == 0 || EVP_DigestUpdate(d->ctx, data, n) == 1;
}

hearth_status hearth_digest_update_fd(hearth_digest *d, int fd, int64_t n, hearth_err *err) {
    enum { CHUNK = 1 << 20 };
    char *buf = malloc(CHUNK);
    if (!buf) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    hearth_status st = HEARTH_OK;
    for (int64_t off = 0; off < n;) {
        size_t want = n - off < CHUNK ? (size_t)(n - off) : CHUNK;
        ssize_t got = pread(fd, buf, want, (off_t)off);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            st = hearth_err_set(err, HEARTH_E_IO, off, "cannot re-read a partial download: %s",
                                got < 0 ? strerror(errno) : "file is shorter than expected");
            break;
        }
        if (!hearth_digest_update(d, buf, (size_t)got)) {
            st = hearth_err_set(err, HEARTH_E_IO, off, "digest failed");
            break;
        }
        off += got;
    }
    free(buf);
    return st;
}

bool hearth_digest_final_hex(hearth_digest *d, char *hex, size_t n) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(d->ctx, md, &len) != 1 || n < 2 * (size_t)len + 1) return false;
    for (unsigned i = 0; i < len; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
    return true;
}

bool hearth_digest_is_hex(const char *s, size_t n) {
    if (strlen(s) != n) return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
    return true;
}
