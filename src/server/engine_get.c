/*
 * engine_get.c - short requests to engine children (engine_get.h): write each request, read
 * everything until each child closes (it answers with Connection: close), polling all their
 * sockets together against one deadline, then split each head from its body.
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

/* One request in flight: its socket and what came back so far. */
typedef struct {
    int        fd;     /* -1: done (closed by the child, or failed) */
    bool       ok;     /* sent, and read to the child's close */
    hearth_buf raw;
} pending;

/* Send METHOD path on p->fd; false when it cannot be written. */
static bool send_get(int fd, const char *method, const char *path) {
    hearth_buf req = {0};
    bool ok = hearth_buf_printf(&req, "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", method,
                                path);
    for (size_t off = 0; ok && off < req.len;) {
        ssize_t k = send(fd, req.p + off, req.len - off, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) ok = false;
        else off += (size_t)k;
    }
    hearth_buf_fini(&req);
    return ok;
}

/* Read what p's child sent; at its close p is done and ok. */
static void read_some(pending *p) {
    if (!hearth_buf_reserve(&p->raw, 16384)) {
        close(p->fd);
        p->fd = -1;
        return;
    }
    ssize_t k = recv(p->fd, p->raw.p + p->raw.len, 16384, 0);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (k > 0) {
        p->raw.len += (size_t)k;
        p->raw.p[p->raw.len] = 0;
        return;
    }
    p->ok = k == 0;
    close(p->fd);
    p->fd = -1;
}

/* Split p's answer into *status and body. */
static bool finish(pending *p, int *status, hearth_buf *body) {
    char *end = p->ok && p->raw.p ? strstr(p->raw.p, "\r\n\r\n") : NULL;
    if (!end || sscanf(p->raw.p, "HTTP/1.%*d %d", status) != 1) return false;
    const char *b = end + 4;
    size_t n = p->raw.len - (size_t)(b - p->raw.p);
    if (head_has(p->raw.p, end, "Transfer-Encoding", "chunked")) return dechunk(b, n, body);
    return hearth_buf_put(body, b, n);
}

int hearth_engine_get_all(const char *const *socks, int n, const char *method, const char *path, int timeout_ms,
                          int *status, hearth_buf *bodies, bool *ok) {
    pending *ps = calloc((size_t)(n > 0 ? n : 1), sizeof *ps);
    struct pollfd *pf = calloc((size_t)(n > 0 ? n : 1), sizeof *pf);
    int n_ok = 0;
    for (int i = 0; i < n; i++) ok[i] = false;
    if (!ps || !pf) {
        free(ps);
        free(pf);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        ps[i].fd = hearth_unix_connect(socks[i]);
        if (ps[i].fd >= 0 && !send_get(ps[i].fd, method, path)) {
            close(ps[i].fd);
            ps[i].fd = -1;
        }
    }
    double until = hearth_now_ms() + timeout_ms; /* one deadline for all of them */
    for (;;) {
        int m = 0;
        for (int i = 0; i < n; i++)
            if (ps[i].fd >= 0) pf[m++] = (struct pollfd){.fd = ps[i].fd, .events = POLLIN};
        int wait = (int)(until - hearth_now_ms());
        if (!m || wait <= 0) break;
        int k = poll(pf, (nfds_t)m, wait);
        if (k < 0 && errno != EINTR) break;
        for (int j = 0; j < m && k > 0; j++) {
            if (!pf[j].revents) continue;
            for (int i = 0; i < n; i++)
                if (ps[i].fd == pf[j].fd) {
                    read_some(&ps[i]);
                    break;
                }
        }
    }
    for (int i = 0; i < n; i++) {
        if (ps[i].fd >= 0) close(ps[i].fd); /* past the deadline: not answering */
        ok[i] = finish(&ps[i], &status[i], &bodies[i]);
        n_ok += ok[i];
        hearth_buf_fini(&ps[i].raw);
    }
    free(ps);
    free(pf);
    return n_ok;
}

bool hearth_engine_get(const char *sock, const char *method, const char *path, int timeout_ms, int *status,
                       hearth_buf *body) {
    bool ok = false;
    hearth_engine_get_all(&sock, 1, method, path, timeout_ms, status, body, &ok);
    return ok;
}
