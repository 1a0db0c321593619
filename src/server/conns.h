/*
 * conns.h - the server's guard on its TCP connections: deadlines for slow clients and caps on
 * how many connections one address, and everyone together, may hold.
 *
 * A connection is in one of three states, and only the first two have a deadline:
 *
 *   WAIT  between requests (new, or its last response sent). Until a byte of the next
 *         request arrives it is idle and is closed after idle_timeout_ms (keep-alive); once
 *         bytes arrive its headers must be complete within header_timeout_ms.
 *   BODY  headers read, body coming: closed when it is not complete by header_timeout_ms plus
 *         its length at min_body_rate bytes/s (a big upload gets the time it needs, a trickle
 *         does not).
 *   BUSY  the request is being answered (a long generation, a stream): no deadline at all, so
 *         a stream is never cut for being quiet.
 *
 * Caps: a connection that would put its address over max_per_addr, or the server over
 * max_total, first makes room by closing the oldest WAIT connection (of that address for the
 * per-address cap): slow or idle sockets can never lock out a client that sends a request.
 * When nothing can be closed (every connection is working) the new one is marked `over` and
 * its request is answered 503 with Retry-After (http.c).
 *
 * Closing means shutdown(2) on the socket from the guard's own thread: the connection's thread
 * (libmicrohttpd's) sees the end of the stream and tears the connection down as usual. The
 * guard's lock is held around the shutdown and around hearth_conns_close, which the owner
 * calls before the descriptor is closed, so a descriptor is never shut down after reuse.
 *
 * "Bytes arrived" comes from the kernel (TCP_INFO's time since the last data segment), so the
 * guard needs no hook into the HTTP parser. The guard knows nothing of HTTP: it works on plain
 * sockets (tests drive it with loopback pairs).
 *
 * Thread rule: any thread; one internal thread checks the deadlines every tick.
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

typedef struct hearth_conns hearth_conns;
typedef struct hearth_conn hearth_conn;

typedef struct {
    int     header_timeout_ms; /* <= 0: 10 s */
    int     idle_timeout_ms;   /* <= 0: 15 s */
    int64_t min_body_rate;     /* bytes/s a body must at least arrive at; <= 0: 64 KiB/s */
    int     max_total;         /* <= 0: 256 */
    int     max_per_addr;      /* <= 0: 128 */
} hearth_conns_params;

/* What the guard did so far (for /stats). */
typedef struct {
    int64_t open;       /* connections open now */
    int64_t timed_out;  /* closed at a header, body or idle deadline */
    int64_t evicted;    /* WAIT connections closed to make room under a cap */
    int64_t refused;    /* requests answered 503: over a cap with nothing to close */
} hearth_conns_counts;

/* Start the guard (its thread). NULL on OOM or when the thread cannot start. */
hearth_conns *hearth_conns_create(const hearth_conns_params *p);
/* Stop the thread and free; every connection must have been closed. Accepts NULL. */
void          hearth_conns_destroy(hearth_conns *g);

/* A connection was accepted on socket fd from addr: track it (state WAIT). NULL on OOM (the
 * connection then goes unguarded). */
hearth_conn *hearth_conns_open(hearth_conns *g, int fd, const struct sockaddr *addr, socklen_t addr_len);
/* The connection is going away (before its descriptor is closed). Accepts NULL. */
void         hearth_conns_close(hearth_conns *g, hearth_conn *c);

/* Its request's headers are complete and body_bytes of body are announced (the body cap when
 * the length is unknown): state BODY. Returns false when the connection is over a cap (the
 * caller answers 503 and closes; counted as refused); then the state stays. A NULL c: true. */
bool hearth_conns_request(hearth_conns *g, hearth_conn *c, int64_t body_bytes);
/* Its request is complete and being answered: state BUSY. Accepts NULL. */
void hearth_conns_busy(hearth_conns *g, hearth_conn *c);
/* Its response is done; the next request may come: state WAIT. Accepts NULL. */
void hearth_conns_wait(hearth_conns *g, hearth_conn *c);
/* Close every connection in state WAIT now (a server that stops taking requests). */
void hearth_conns_close_waiting(hearth_conns *g);

void hearth_conns_get(hearth_conns *g, hearth_conns_counts *out);
