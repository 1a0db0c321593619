/*
 * http.c - the libmicrohttpd glue: daemon start/stop, request bodies, responses, disconnects.
 *
 * Threading model: MHD_USE_THREAD_PER_CONNECTION (with poll). The engine's API is blocking -
 * a connection waits for its tokens in hearth_request_next - so every connection gets its own
 * thread and may block in its handler (non-streaming) or in its content reader (SSE) without
 * holding up any other connection: /health answers at once however many streams are open,
 * and a stream is just a loop on its own thread. A local appliance has tens of connections,
 * not tens of thousands, so a thread each is cheap (stacks are reserved, not committed). When
 * the engine grows an event callback, MHD's suspend/resume can park idle streams instead.
 * A driven server (hearth_server_create_driven, for the fuzz harness) starts MHD without
 * threads; its owner runs every callback here from MHD_run.
 *
 * Disconnects: a waiting connection wakes every 50 ms (hearth_request_next's timeout) and
 * polls its socket for POLLRDHUP/POLLHUP; a client that went away is seen within that time,
 * and its generation is cancelled (the engine stops it at its next step). MHD's own write
 * errors end a stream too (the content reader is told via the response's free callback).
 * Such requests count as "cancelled" in the request counters, not as server errors.
 *
 * The front door (guard.h): before any body is read, the head is checked for strict framing,
 * its Host and its Origin; a refused request is answered at once, and MHD then closes the
 * connection without reading on. %00 in the target is seen in MHD's URI log callback, the
 * one place that has the target before it is unescaped.
 *
 * Bodies: collected up to max_body_bytes; past that the rest is read and dropped (up to 4x
 * the cap, then the connection is closed) and the answer is 413 - reading it all first means
 * the client sees the 413 instead of a reset while it is still sending.
 *
 * Request heads: libmicrohttpd parses a head into the connection's memory (HEARTH_MHD_CONN_MEMORY:
 * the head's bytes plus an entry of some 60 bytes per header line and query argument) and
 * builds the response head there too. A head too big to parse gets its own 431 (or 414); one
 * that just fits is passed on, but when what it leaves cannot hold the response head,
 * libmicrohttpd (0.9.75, and its later releases alike) closes the connection with nothing sent
 * and logs "Closing connection (failed to create response header)". Only its own error
 * answers retry after freeing the request, and the server cannot see the room left, so such a
 * head - some 450 short header lines, or 9 KB of 260 lines - ends without an answer; the fuzz
 * harness allows exactly that (docs/testing.md, "Fuzzing"). No answer of the server's grows with
 * the request (a preflight echoes Access-Control-Request-Headers only up to 1 KiB), so only a
 * head near that limit can meet it.
 *
 * Slow clients: conns.c guards every connection (header, body and idle deadlines; per-address
 * and server-wide caps). This file only tells it where each request is (headers read, being
 * answered, done) and answers 503 + Retry-After when it says the connection is over a cap or
 * the server is draining (drain.c). MHD's own inactivity timeout is off: it would cut quiet
 * streams, which conns.c leaves alone.
 */
#include "server/server_internal.h"
#include "base/buf.h"
#include "base/log.h"
#include "server/conns.h"
#include "server/guard.h"
#include "server/unixsock.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

double hearth_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

const char *hearth_http_header(hearth_http_req *r, const char *name) {
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

static void common_headers(hearth_http_req *r, struct MHD_Response *resp) {
    MHD_add_response_header(resp, "Server", "hearth/" HEARTH_VERSION);
    if (r->retry_after_s > 0) {
        char ra[16];
        snprintf(ra, sizeof ra, "%d", r->retry_after_s);
        MHD_add_response_header(resp, "Retry-After", ra);
    }
    if (r->close || hearth_server_draining(r->srv)) MHD_add_response_header(resp, "Connection", "close");
    const char *cors = r->srv->cors;
    const char *origin = hearth_http_header(r, "Origin");
    if (cors && origin && hearth_guard_origin_listed(cors, origin)) {
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", origin);
        MHD_add_response_header(resp, "Vary", "Origin");
    }
    if (r->allow[0]) MHD_add_response_header(resp, "Allow", r->allow);
}

static bool queue(hearth_http_req *r, int http, struct MHD_Response *resp, const char *ctype) {
    if (!resp) return false;
    common_headers(r, resp);
    if (ctype) MHD_add_response_header(resp, "Content-Type", ctype);
    enum MHD_Result ok = MHD_queue_response(r->conn, (unsigned)http, resp);
    MHD_destroy_response(resp);
    if (ok == MHD_YES) r->http = http;
    return ok == MHD_YES;
}

bool hearth_http_send(hearth_http_req *r, int http, const char *ctype, const char *body, size_t n) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(n, (void *)(n ? body : ""), MHD_RESPMEM_MUST_COPY);
    return queue(r, http, resp, ctype);
}

bool hearth_http_send_json(hearth_http_req *r, int http, const hearth_jw *w) {
    if (w->b.oom) {
        const char *body;
        size_t n;
        int code = hearth_api_fallback(&body, &n);
        return hearth_http_send(r, code, "application/json", body, n);
    }
    return hearth_http_send(r, http, "application/json", w->b.p ? w->b.p : "", w->b.len);
}

bool hearth_http_send_error(hearth_http_req *r, const hearth_api_err *e) {
    hearth_jw w;
    hearth_jw_init(&w);
    if (hearth_api_path_anthropic(r->path)) hearth_api_err_json_anthropic(&w, e);
    else hearth_api_err_json(&w, e);
    bool ok = hearth_http_send_json(r, hearth_api_err_http(e), &w);
    hearth_jw_fini(&w);
    return ok;
}

/* The longest Access-Control-Request-Headers a preflight echoes; a longer list (a browser asks
 * for a few names) gets the default list, so an answer's head stays small whatever was asked. */
enum { HEARTH_PREFLIGHT_ECHO_MAX = 1024 };

bool hearth_http_send_preflight(hearth_http_req *r) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!resp) return false;
    const char *origin = hearth_http_header(r, "Origin");
    if (r->srv->cors && origin && hearth_guard_origin_listed(r->srv->cors, origin)) {
        /* the headers asked for are echoed, up to a bound: the answer's head is built in the
         * connection's memory, which a long list there would have to fit twice ("Request heads") */
        const char *want = hearth_http_header(r, "Access-Control-Request-Headers");
        if (want && strlen(want) > HEARTH_PREFLIGHT_ECHO_MAX) want = NULL;
        MHD_add_response_header(resp, "Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
        MHD_add_response_header(resp, "Access-Control-Allow-Headers",
                                want ? want : "Authorization, Content-Type, X-Api-Key");
        MHD_add_response_header(resp, "Access-Control-Max-Age", "600");
    }
    return queue(r, 204, resp, NULL);
}

typedef struct {
    hearth_http_reader reader;
    void (*free_fn)(void *);
    void *cls;
} reader_box;

static ssize_t box_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    reader_box *b = cls;
    long n = b->reader(b->cls, buf, max);
    if (n == -1) return MHD_CONTENT_READER_END_OF_STREAM;
    if (n < 0) return MHD_CONTENT_READER_END_WITH_ERROR;
    return (ssize_t)n;
}

static void box_free(void *cls) {
    reader_box *b = cls;
    b->free_fn(b->cls);
    free(b);
}

bool hearth_http_send_reader(hearth_http_req *r, int http, const char *ctype, hearth_http_reader reader,
                             void (*free_fn)(void *cls), void *cls) {
    reader_box *b = malloc(sizeof *b);
    if (!b) {
        free_fn(cls);
        return false;
    }
    b->reader = reader;
    b->free_fn = free_fn;
    b->cls = cls;
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, box_read, b, box_free);
    if (!resp) {
        box_free(b);
        return false;
    }
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    return queue(r, http, resp, ctype); /* destroying resp runs box_free once MHD is done */
}

int hearth_http_fd(hearth_http_req *r) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

bool hearth_fd_peer_gone(int fd) {
    if (fd < 0) return false;
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    if (poll(&p, 1, 0) <= 0) return false;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

bool hearth_http_peer_loopback(hearth_http_req *r) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    if (!sa) return false;
    if (sa->sa_family == AF_UNIX) return true; /* a unix socket (mode 0600): this user's processes only */
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family != AF_INET6) return false;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(a)) return true;
    return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
}

bool hearth_http_key_ok(hearth_http_req *r, const char *key) {
    if (!key || !*key) return true;
    const char *got = hearth_http_header(r, "x-api-key");
    const char *auth = hearth_http_header(r, "Authorization");
    if (!got && auth && !strncasecmp(auth, "Bearer ", 7)) {
        got = auth + 7;
        while (*got == ' ') got++;
    }
    if (!got) return false;
    size_t n = strlen(key), m = strlen(got);
    unsigned diff = (unsigned)(n ^ m);
    for (size_t i = 0; i < n; i++) diff |= (unsigned)(key[i] ^ got[i < m ? i : 0]); /* no early exit */
    return diff == 0;
}

/* *con_cls before a request's first call when its raw target holds %00 (only the address is used). */
static char nul_target;

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c) {
    (void)cls;
    (void)c;
    return hearth_guard_target_has_nul(uri) ? &nul_target : NULL;
}

bool hearth_http_authorized(hearth_http_req *r) { return hearth_http_key_ok(r, r->srv->api_key); }

static hearth_conn *conn_of(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* 503 + Retry-After, closing the connection: over a cap, or draining. */
static enum MHD_Result refuse(hearth_http_req *r, int retry_s, const char *code, const char *msg) {
    hearth_api_err e;
    hearth_api_fail(&e, HEARTH_E_CANCELLED, code, NULL, "%s", msg);
    r->retry_after_s = retry_s;
    r->close = true;
    return hearth_http_send_error(r, &e) ? MHD_YES : MHD_NO;
}

/* MHD calls this with the headers (first call), each piece of the body, then once more with
 * upload_data NULL: that last call is the end of the request. A piece may be empty - after
 * "Expect: 100-continue" on a request with no body, libmicrohttpd (0.9.75) hands over an empty
 * one when the next pipelined request is already in its buffer - and is then no end: the
 * request is answered on the call that follows (an answer queued on the empty piece would be
 * refused, and the connection closed with nothing sent but the 100). */
static enum MHD_Result on_access(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                 const char *version, const char *upload_data, size_t *upload_size,
                                 void **con_cls) {
    hearth_server *s = cls;
    bool nul = *con_cls == &nul_target;
    hearth_http_req *r = nul ? NULL : *con_cls;
    size_t cap = s->p.max_body_bytes;
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r) return MHD_NO;
        r->srv = s;
        r->conn = c;
        r->method = method;
        r->path = url;
        r->ep = HEARTH_EP_OTHER;
        r->nul_in_target = nul;
        *con_cls = r;
        hearth_stats_request_begin(s->stats);
        hearth_api_err ge;
        if (!hearth_guard_request(r, version, &ge)) return hearth_http_send_error(r, &ge) ? MHD_YES : MHD_NO;
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        unsigned long long want = cl ? strtoull(cl, NULL, 10) : 0;
        if (!hearth_conns_request(s->conns, conn_of(c), cl ? (int64_t)(want < cap ? want : cap) : (int64_t)cap))
            return refuse(r, 1, "too_many_connections",
                          "the server is at its connection limit; retry shortly");
        if (hearth_server_draining(s))
            return refuse(r, 5, "server_draining", "the server is shutting down and takes no new requests");
        if (want > (unsigned long long)cap * 4) { /* not worth reading: answer now, then close */
            hearth_api_err e;
            hearth_api_fail(&e, HEARTH_E_TOO_LARGE, "request_too_large", NULL,
                            "the request body (%llu bytes) is over the limit of %zu bytes", want, cap);
            return hearth_http_send_error(r, &e) ? MHD_YES : MHD_NO;
        }
        return MHD_YES;
    }
    if (!*upload_size && upload_data) return MHD_YES; /* an empty piece, not the end (see above) */
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (r->http) return MHD_YES; /* already answered (413 up front): drop the rest */
        if (r->n_over || r->n_body + n > cap) {
            r->n_over += n;
            return r->n_over > cap * 3 ? MHD_NO : MHD_YES;
        }
        if (!hearth_buf_grow(&r->body, &r->cap_body, r->n_body + n + 1, 1, 4096)) return MHD_NO;
        memcpy(r->body + r->n_body, upload_data, n);
        r->n_body += n;
        r->body[r->n_body] = 0;
        return MHD_YES;
    }
    if (r->http) return MHD_YES; /* answered already */
    r->t_done_ms = hearth_now_ms();
    if (r->n_over) {
        hearth_api_err e;
        hearth_api_fail(&e, HEARTH_E_TOO_LARGE, "request_too_large", NULL,
                        "the request body (%zu bytes) is over the limit of %zu bytes", r->n_body + r->n_over, cap);
        return hearth_http_send_error(r, &e) ? MHD_YES : MHD_NO;
    }
    if (!r->body) {
        r->body = calloc(1, 1);
        if (!r->body) return MHD_NO;
    }
    hearth_conns_busy(s->conns, conn_of(c));
    hearth_route(r);
    return r->http ? MHD_YES : MHD_NO;
}

/* The status class a finished request counts under: what was sent when it completed; a
 * client that went away first (closed, reset, or its socket shows the hang-up our abort
 * reacted to) is "cancelled", not a server error. */
static int outcome(hearth_http_req *r, enum MHD_RequestTerminationCode toe) {
    switch (toe) {
    case MHD_REQUEST_TERMINATED_COMPLETED_OK: return r->http;
    case MHD_REQUEST_TERMINATED_CLIENT_ABORT:
    case MHD_REQUEST_TERMINATED_READ_ERROR: return HEARTH_HTTP_CANCELLED;
    case MHD_REQUEST_TERMINATED_WITH_ERROR: return hearth_fd_peer_gone(hearth_http_fd(r)) ? HEARTH_HTTP_CANCELLED : 0;
    default: return 0;
    }
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    hearth_server *s = cls;
    hearth_http_req *r = *con_cls;
    if (!r || *con_cls == &nul_target) { /* MHD ended it before the first call */
        *con_cls = NULL;
        return;
    }
    hearth_stats_request_end(s->stats, r->ep, outcome(r, toe));
    free(r->body);
    free(r);
    *con_cls = NULL;
    hearth_conns_wait(s->conns, conn_of(c));
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
    hearth_server *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *ad = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        const struct sockaddr *sa = ad ? ad->client_addr : NULL;
        socklen_t len = !sa ? 0 : sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
        *socket_context = fd ? hearth_conns_open(s->conns, fd->connect_fd, sa, len) : NULL;
    } else {
        hearth_conns_close(s->conns, *socket_context);
        *socket_context = NULL;
    }
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    char b[256];
    vsnprintf(b, sizeof b, fmt, ap);
    size_t n = strlen(b);
    while (n && (b[n - 1] == '\n' || b[n - 1] == '\r')) b[--n] = 0;
    hearth_log(HEARTH_LOG_DEBUG, "http: %s", b);
}

/* The daemon's options but the listening address: the same for TCP and a unix socket. */
#define HEARTH_MHD_COMMON_OPTIONS(s, hard_limit)                                                \
    MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s, /* first: it then sees every message */           \
        MHD_OPTION_CONNECTION_LIMIT, hard_limit, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)0,       \
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HEARTH_MHD_CONN_MEMORY, MHD_OPTION_NOTIFY_COMPLETED, \
        on_completed, s, MHD_OPTION_URI_LOG_CALLBACK, on_uri, s, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s

/* `serve --unix PATH`: MHD serves a listening socket made here (unixsock.h), mode 0600. */
static hearth_status start_unix(hearth_server *s, hearth_err *err) {
    int fd = hearth_unix_listen(s->p.unix_path, err);
    if (fd < 0) return err ? err->code : HEARTH_E_IO;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
                     MHD_USE_ERROR_LOG | MHD_USE_ITC;
    unsigned hard_limit = (unsigned)s->p.max_connections + (unsigned)s->p.max_connections / 4 + 16;
    s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_access, s, HEARTH_MHD_COMMON_OPTIONS(s, hard_limit),
                            MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_END);
    if (!s->d) {
        close(fd);
        unlink(s->p.unix_path);
        return hearth_err_set(err, HEARTH_E_IO, -1, "cannot serve on the unix socket '%.200s'", s->p.unix_path);
    }
    s->unix_listening = true;
    s->port = 0;
    return HEARTH_OK;
}

hearth_status hearth_http_start(hearth_server *s, hearth_err *err) {
    if (s->p.unix_path) return start_unix(s, err);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV}, *ai = NULL;
    char port[16];
    snprintf(port, sizeof port, "%d", s->p.port);
    int rc = getaddrinfo(s->host, port, &hints, &ai);
    if (rc != 0 || !ai)
        return hearth_err_set(err, HEARTH_E_IO, -1, "cannot resolve the host '%s': %s", s->host, gai_strerror(rc));
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
                     MHD_USE_ERROR_LOG | MHD_USE_ITC; /* ITC: MHD_quiesce_daemon (drain.c) */
    if (s->driven) flags = MHD_USE_ERROR_LOG | MHD_USE_ITC; /* no threads: the owner calls MHD_run */
    /* the guard holds the caps (with a clean 503); MHD's limit is only a backstop above them */
    unsigned hard_limit = (unsigned)s->p.max_connections + (unsigned)s->p.max_connections / 4 + 16;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    s->d = MHD_start_daemon(flags, (uint16_t)s->p.port, NULL, NULL, on_access, s,
                            MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s, /* first: it then sees every message */
                            MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                            MHD_OPTION_CONNECTION_LIMIT, hard_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)0,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HEARTH_MHD_CONN_MEMORY,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                            MHD_OPTION_URI_LOG_CALLBACK, on_uri, s,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
                            MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!s->d)
        return hearth_err_set(err, HEARTH_E_IO, -1, "cannot listen on %s:%d (in use, or not an address of this host?)",
                              s->host, s->p.port);
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di && di->port ? di->port : s->p.port;
    return HEARTH_OK;
}

void hearth_http_stop(hearth_server *s) {
    if (s->d) MHD_stop_daemon(s->d);
    s->d = NULL;
    /* MHD closed a unix listening socket it was given, or a drain handed it to listen_fd */
    if (s->p.unix_path && s->unix_listening) unlink(s->p.unix_path);
    s->unix_listening = false;
    if (s->listen_fd >= 0) close(s->listen_fd); /* quiesced by a drain: closed only after MHD stopped */
    s->listen_fd = -1;
}
