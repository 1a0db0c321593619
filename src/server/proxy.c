/*
 * proxy.c - forwarding one API request to an engine child (proxy.h says what is promised).
 *
 * The child's answer is read from its socket into `raw`; the body is then de-chunked (the
 * child answers HTTP/1.1 with Content-Length, or chunked for an unknown length: streams)
 * into `body`. Every wait on the child polls in 50 ms steps and checks the client's socket,
 * as generate.c does while it waits for tokens, so a client that leaves is noticed in that
 * time and the child's connection is closed (the child then cancels the generation).
 */
#include "server/proxy.h"
#include "base/buf.h"
#include "base/log.h"
#include "server/engines.h"
#include "server/jraw.h"
#include "server/unixsock.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define WAIT_STEP_MS 50
#define CONNECT_RETRY_MS 5000 /* a child whose socket refuses: wait this long for its respawn */

typedef struct {
    hearth_server      *srv;
    hearth_engine_lease lease;
    int                 fd;         /* the child's connection, -1 when closed */
    int                 client_fd;  /* the client's socket, for hang-up checks */
    const char         *dialect;    /* "openai", "anthropic", "responses" */
    hearth_buf          raw;        /* bytes from the child not yet de-chunked */
    hearth_buf          body;       /* de-chunked body bytes not yet passed on */
    bool                chunked, eof, complete, failed, ended;
    long long           left;       /* bytes left in the current chunk, or of a Content-Length body */
    size_t              sent;       /* of body, for a stream: bytes already passed on */
} fwd;

static const char *dialect_of(const char *path) {
    if (hearth_api_path_anthropic(path)) return "anthropic";
    if (!strncmp(path, "/v1/responses", 13)) return "responses";
    return "openai";
}

/* Read what the child has sent within WAIT_STEP_MS into f->raw. 1: got bytes, 0: nothing yet,
 * -1: the child closed (f->eof) or failed. */
static int pull(fwd *f) {
    struct pollfd pf = {.fd = f->fd, .events = POLLIN};
    int n = poll(&pf, 1, WAIT_STEP_MS);
    if (n == 0) return 0;
    if (n < 0) return errno == EINTR ? 0 : -1;
    if (!hearth_buf_reserve(&f->raw, 16384)) return -1;
    ssize_t k = recv(f->fd, f->raw.p + f->raw.len, 16384, 0);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
    if (k <= 0) {
        f->eof = true;
        return -1;
    }
    f->raw.len += (size_t)k;
    f->raw.p[f->raw.len] = 0;
    return 1;
}

static void drop_front(hearth_buf *b, size_t n) {
    memmove(b->p, b->p + n, b->len - n);
    b->len -= n;
    if (b->p) b->p[b->len] = 0;
}

/* Move body bytes from raw to body: de-chunk, or count down Content-Length. Sets complete at
 * the body's end; false on a malformed chunk header (treated as a failed child). */
static bool dechunk(fwd *f) {
    while (!f->complete && f->raw.len) {
        if (!f->chunked) {
            size_t n = f->left >= 0 && (long long)f->raw.len > f->left ? (size_t)f->left : f->raw.len;
            if (!hearth_buf_put(&f->body, f->raw.p, n)) return false;
            drop_front(&f->raw, n);
            if (f->left >= 0 && (f->left -= (long long)n) == 0) f->complete = true;
            continue;
        }
        if (f->left > 0) {
            size_t n = (long long)f->raw.len > f->left ? (size_t)f->left : f->raw.len;
            if (!hearth_buf_put(&f->body, f->raw.p, n)) return false;
            drop_front(&f->raw, n);
            f->left -= (long long)n;
            continue;
        }
        /* at a chunk boundary: "\r\n" after the previous data (left == 0), then "HEX\r\n" */
        char *p = f->raw.p;
        if (f->left == 0) {
            if (f->raw.len < 2) return true;
            if (p[0] != '\r' || p[1] != '\n') return false;
            drop_front(&f->raw, 2);
            f->left = -1;
            continue;
        }
        char *eol = strstr(f->raw.p, "\r\n");
        if (!eol) return f->raw.len < 64;
        char *end = NULL;
        long long size = strtoll(f->raw.p, &end, 16);
        if (end == f->raw.p || size < 0) return false;
        drop_front(&f->raw, (size_t)(eol + 2 - f->raw.p));
        if (size == 0) f->complete = true; /* trailers, if any, are not read */
        else f->left = size;
    }
    return true;
}

/* The header `name` of the head [h, h+n) copied into out; false when absent. */
static bool head_value(const char *h, const char *name, char *out, size_t cap) {
    size_t k = strlen(name);
    for (const char *p = strstr(h, "\r\n"); p && p[2] && !(p[2] == '\r'); p = strstr(p + 2, "\r\n")) {
        const char *l = p + 2;
        if (strncasecmp(l, name, k) || l[k] != ':') continue;
        l += k + 1;
        while (*l == ' ' || *l == '\t') l++;
        const char *e = strstr(l, "\r\n");
        size_t n = e ? (size_t)(e - l) : strlen(l);
        if (n >= cap) n = cap - 1;
        memcpy(out, l, n);
        out[n] = 0;
        return true;
    }
    return false;
}

/* The API error that ends a request its child failed. */
static void died_error(const fwd *f, hearth_api_err *e) {
    hearth_api_fail(e, HEARTH_E_TIMEOUT, "engine_restarting", NULL,
                    "the engine process of '%.200s' ended while serving this request; it is being restarted, "
                    "retry shortly", f->lease.model_id);
}

static void send_died(hearth_http_req *r, const fwd *f) {
    hearth_api_err e;
    died_error(f, &e);
    r->retry_after_s = 1;
    hearth_http_send_error(r, &e);
}

/* The error event that ends a stream whose child died, in f's dialect. */
static void stream_error(fwd *f) {
    hearth_api_err e;
    died_error(f, &e);
    hearth_jw w;
    hearth_jw_init(&w);
    if (!strcmp(f->dialect, "anthropic")) {
        hearth_jw_raw(&w, "event: error\ndata: ", 19);
        hearth_api_err_json_anthropic(&w, &e);
        hearth_jw_raw(&w, "\n\n", 2);
    } else if (!strcmp(f->dialect, "responses")) {
        char id[64];
        hearth_server_new_id(f->srv, "resp_", id, sizeof id);
        hearth_jw_raw(&w, "event: response.failed\ndata: ", 29);
        hearth_jw_obj(&w);
        hearth_jw_key(&w, "type");
        hearth_jw_cstr(&w, "response.failed");
        hearth_jw_key(&w, "response");
        hearth_jw_obj(&w);
        hearth_jw_key(&w, "id");
        hearth_jw_cstr(&w, id);
        hearth_jw_key(&w, "object");
        hearth_jw_cstr(&w, "response");
        hearth_jw_key(&w, "status");
        hearth_jw_cstr(&w, "failed");
        hearth_jw_key(&w, "model");
        hearth_jw_cstr(&w, f->lease.model_id);
        hearth_jw_key(&w, "output");
        hearth_jw_arr(&w);
        hearth_jw_arr_end(&w);
        hearth_jw_key(&w, "error");
        hearth_api_err_json_response(&w, &e);
        hearth_jw_obj_end(&w);
        hearth_jw_obj_end(&w);
        hearth_jw_raw(&w, "\n\n", 2);
    } else {
        hearth_jw_raw(&w, "data: ", 6);
        hearth_api_err_json(&w, &e);
        hearth_jw_raw(&w, "\n\ndata: [DONE]\n\n", 16);
    }
    if (!w.b.oom) hearth_buf_put(&f->body, w.b.p, w.b.len);
    hearth_jw_fini(&w);
}

static void fwd_close(fwd *f) {
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
}

static void fwd_free(void *cls) {
    fwd *f = cls;
    fwd_close(f);
    hearth_engines_release(f->srv->engines, &f->lease);
    hearth_buf_fini(&f->raw);
    hearth_buf_fini(&f->body);
    free(f);
}

/* The length of the whole SSE frames at the start of [p, p+n): up to the last "\n\n". */
static size_t whole_frames(const char *p, size_t n) {
    for (size_t i = n; i >= 2; i--)
        if (p[i - 1] == '\n' && p[i - 2] == '\n') return i;
    return 0;
}

/* The stream's content reader: whole frames as the child sends them; an error event when it
 * dies first. */
static long stream_read(void *cls, char *buf, size_t max) {
    fwd *f = cls;
    for (;;) {
        size_t ready = f->ended ? f->body.len : whole_frames(f->body.p ? f->body.p : "", f->body.len);
        if (ready > f->sent) {
            size_t n = ready - f->sent < max ? ready - f->sent : max;
            memcpy(buf, f->body.p + f->sent, n);
            f->sent += n;
            if (f->sent == f->body.len || f->sent > 65536) {
                drop_front(&f->body, f->sent);
                f->sent = 0;
            }
            return (long)n;
        }
        if (f->ended) return -1;
        if (f->complete) {
            f->ended = true; /* what is left is passed on as it is */
            continue;
        }
        if (hearth_fd_peer_gone(f->client_fd)) return -2;
        int got = f->fd >= 0 ? pull(f) : -1;
        if (got > 0 && !dechunk(f)) got = -1;
        if (got < 0) {
            if (!dechunk(f) || !f->complete) {
                hearth_log(HEARTH_LOG_ERROR, "isolate: the engine of %s (pid %d) ended a stream early",
                           f->lease.model_id, (int)f->lease.pid);
                hearth_engines_suspect(f->srv->engines, &f->lease);
                /* drop a frame the death cut, then end with the error event */
                f->body.len = whole_frames(f->body.p ? f->body.p : "", f->body.len);
                if (f->sent > f->body.len) f->sent = f->body.len;
                stream_error(f);
            }
            fwd_close(f);
            f->ended = true;
        }
    }
}

/* Write the request to the child. */
static bool send_request(hearth_http_req *r, int fd) {
    hearth_buf h = {0};
    const char *ct = hearth_http_header(r, "Content-Type");
    const char *accept = hearth_http_header(r, "Accept");
    const char *av = hearth_http_header(r, "anthropic-version");
    hearth_buf_printf(&h, "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n", r->method, r->path);
    if (ct) hearth_buf_printf(&h, "Content-Type: %s\r\n", ct);
    if (accept) hearth_buf_printf(&h, "Accept: %s\r\n", accept);
    if (av) hearth_buf_printf(&h, "anthropic-version: %s\r\n", av);
    if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD")) hearth_buf_printf(&h, "Content-Length: %zu\r\n", r->n_body);
    hearth_buf_puts(&h, "\r\n");
    if (r->n_body) hearth_buf_put(&h, r->body, r->n_body);
    bool ok = !h.oom;
    for (size_t off = 0; ok && off < h.len;) {
        ssize_t k = send(fd, h.p + off, h.len - off, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) ok = false;
        else off += (size_t)k;
    }
    hearth_buf_fini(&h);
    return ok;
}

void hearth_proxy_forward(hearth_http_req *r, const char *model) {
    hearth_server *s = r->srv;
    fwd *f = calloc(1, sizeof *f);
    hearth_api_err e;
    if (!f) {
        hearth_api_oom(&e);
        hearth_http_send_error(r, &e);
        return;
    }
    f->srv = s;
    f->fd = -1;
    f->left = -1;
    f->client_fd = hearth_http_fd(r);
    f->dialect = dialect_of(r->path);
    double give_up = hearth_now_ms() + CONNECT_RETRY_MS;
    for (;;) {
        int retry = 0;
        if (!hearth_engines_acquire(s->engines, model, &f->lease, &e, &retry)) {
            r->retry_after_s = retry;
            hearth_http_send_error(r, &e);
            free(f);
            return;
        }
        f->fd = hearth_unix_connect(f->lease.sock);
        if (f->fd >= 0 && send_request(r, f->fd)) break;
        /* dead or dying: tell the supervisor, wait for the respawn, try again */
        fwd_close(f);
        hearth_engines_suspect(s->engines, &f->lease);
        hearth_engines_release(s->engines, &f->lease);
        if (hearth_now_ms() > give_up || hearth_fd_peer_gone(f->client_fd)) {
            send_died(r, f);
            free(f);
            return;
        }
        usleep(100 * 1000);
    }
    /* the head */
    char *end = NULL;
    while (!(end = f->raw.p ? strstr(f->raw.p, "\r\n\r\n") : NULL)) {
        if (hearth_fd_peer_gone(f->client_fd)) { /* the client left: closing cancels it there */
            fwd_free(f);
            return;
        }
        if (pull(f) < 0 || f->raw.len > 65536) {
            hearth_engines_suspect(s->engines, &f->lease);
            send_died(r, f);
            fwd_free(f);
            return;
        }
    }
    *end = 0;
    int status = 0;
    char ctype[128] = "application/json", val[64];
    if (sscanf(f->raw.p, "HTTP/1.%*d %d", &status) != 1 || status < 100) status = 502;
    head_value(f->raw.p, "Content-Type", ctype, sizeof ctype);
    if (head_value(f->raw.p, "Retry-After", val, sizeof val)) r->retry_after_s = atoi(val);
    (void)head_value(f->raw.p, "Allow", r->allow, sizeof r->allow); /* a 405's, copied as it is */
    f->chunked = head_value(f->raw.p, "Transfer-Encoding", val, sizeof val) && strstr(val, "chunked");
    if (!f->chunked && head_value(f->raw.p, "Content-Length", val, sizeof val)) f->left = atoll(val);
    if (f->left == 0 || !strcmp(r->method, "HEAD")) f->complete = true;
    drop_front(&f->raw, (size_t)(end + 4 - f->raw.p));
    if (!dechunk(f)) f->failed = true;
    if (!strncmp(ctype, "text/event-stream", 17)) {
        hearth_http_send_reader(r, status, ctype, stream_read, fwd_free, f);
        return;
    }
    /* not a stream: the whole body first */
    while (!f->complete && !f->failed) {
        if (hearth_fd_peer_gone(f->client_fd)) {
            fwd_free(f);
            return;
        }
        int got = pull(f);
        if (got > 0 && !dechunk(f)) f->failed = true;
        if (got < 0) {
            if (!f->chunked && f->left < 0) f->complete = true; /* a body that ends with the connection */
            else f->failed = true;
        }
    }
    if (f->failed) {
        hearth_engines_suspect(s->engines, &f->lease);
        send_died(r, f);
    } else hearth_http_send(r, status, ctype, f->body.p ? f->body.p : "", f->body.len);
    fwd_free(f);
}

bool hearth_proxy_model_of(const hearth_http_req *r, char *out, size_t cap) {
    hearth_span v;
    if (!r->n_body || !hearth_jraw_get((hearth_span){r->body, r->n_body}, "model", &v) || hearth_jraw_kind(v) != '"' ||
        v.len < 2 || v.len - 2 >= cap)
        return false;
    memcpy(out, v.ptr + 1, v.len - 2);
    out[v.len - 2] = 0;
    return out[0] != 0;
}
