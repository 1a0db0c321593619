/*
 * engine_get.c - one short request to an engine child (engine_get.h): write the request, read
 * everything until the child closes (it answers with Connection: close), then split the head
 * from the body.
 */
#include "server/engine_get.h"
#include "server/server_internal.h"
#include "server/unixsock.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

/* Is the header `name` in the head [h, end) with a value containing `want`? */
static bool head_has(const char *h, const char *end, const char *name, const char *want) {
    size_t k = strlen(name);
    for (const char *l = strstr(h, "\r\n"); l && l < end; l = strstr(l + 2, "\r\n")) {
        const char *v = l + 2;
        if (v >= end || strncasecmp(v, name, k) || v[k] != ':') continue;
        const char *e = strstr(v, "\r\n");
        size_t n = e ? (size_t)(e - v) : strlen(v);
        char line[256];
        snprintf(line, sizeof line, "%.*s", (int)n, v);
        return strcasestr(line, want) != NULL;
    }
    return false;
}

/* De-chunk [p, p+n) into out; false when malformed or short. */
static bool dechunk(const char *p, size_t n, hearth_buf *out) {
    const char *end = p + n;
    for (;;) {
        char *e = NULL;
        if (p >= end) return false;
        unsigned long long size = strtoull(p, &e, 16);
        if (e == p) return false;
        const char *eol = memmem(e, (size_t)(end - e), "\r\n", 2);
        if (!eol) return false;
        p = eol + 2;
        if (size == 0) return true;
        if ((unsigned long long)(end - p) < size + 2) return false;
        if (!hearth_buf_put(out, p, (size_t)size)) return false;
        p += size + 2;
    }
}

bool hearth_engine_get(const char *sock, const char *method, const char *path, int timeout_ms, int *status,
                       hearth_buf *body) {
    int fd = hearth_unix_connect(sock);
    if (fd < 0) return false;
    hearth_buf raw = {0};
    bool ok = hearth_buf_printf(&raw, "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", method,
                                path);
    for (size_t off = 0; ok && off < raw.len;) {
        ssize_t k = send(fd, raw.p + off, raw.len - off, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) ok = false;
        else off += (size_t)k;
    }
    hearth_buf_fini(&raw); /* the answer starts in an empty buffer */
    double until = hearth_now_ms() + timeout_ms;
    bool closed = false;
    while (ok && !closed) {
        int wait = (int)(until - hearth_now_ms());
        if (wait <= 0) {
            ok = false;
            break;
        }
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int n = poll(&pf, 1, wait);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) continue; /* the deadline is checked above */
        if (!hearth_buf_reserve(&raw, 16384)) {
            ok = false;
            break;
        }
        ssize_t k = recv(fd, raw.p + raw.len, 16384, 0);
        if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (k < 0) ok = false;
        else if (k == 0) closed = true;
        else {
            raw.len += (size_t)k;
            raw.p[raw.len] = 0;
        }
    }
    close(fd);
    char *end = ok && raw.p ? strstr(raw.p, "\r\n\r\n") : NULL;
    if (!end || sscanf(raw.p, "HTTP/1.%*d %d", status) != 1) ok = false;
    if (ok) {
        const char *b = end + 4;
        size_t n = raw.len - (size_t)(b - raw.p);
        if (head_has(raw.p, end, "Transfer-Encoding", "chunked")) ok = dechunk(b, n, body);
        else ok = hearth_buf_put(body, b, n);
    }
    hearth_buf_fini(&raw);
    return ok;
}
