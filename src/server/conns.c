/*
 * conns.c - deadlines and caps for the server's connections (see conns.h).
 *
 * The connections sit on one doubly linked list under one mutex, oldest first by the time they
 * last became WAIT; a local server holds hundreds at most, so every scan is a plain walk. The
 * guard's thread wakes every tick (a quarter of the shortest timeout, 10-250 ms), and for each
 * connection with a deadline asks the kernel whether data arrived since it became WAIT
 * (tcpi_last_data_recv: milliseconds since the last data segment) and shuts down the ones past
 * their deadline. A connection is shut down at most once (`closing`); the owner still closes
 * it and calls hearth_conns_close.
 */
#include "server/conns.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { ST_WAIT, ST_BODY, ST_BUSY };

struct hearth_conn {
    hearth_conn  *prev, *next;
    int           fd;
    unsigned char addr[16];   /* the peer's IPv4 or IPv6 address (port left out) */
    int           addr_len;
    int           state;
    bool          started;    /* WAIT: bytes of a request arrived since `since` */
    bool          over;       /* accepted over a cap with nothing to close: refuse its request */
    bool          closing;    /* shut down by the guard */
    double        since;      /* monotonic ms it entered its state (WAIT: its request began, once started) */
    double        deadline;   /* BODY: monotonic ms */
};

struct hearth_conns {
    hearth_conns_params p;
    pthread_mutex_t     mu;
    pthread_cond_t      cv;
    pthread_t           thread;
    bool                stop;
    hearth_conn        *head, *tail;
    int                 n;
    hearth_conns_counts counts;
    int                 tick_ms;
};

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void unlink_conn(hearth_conns *g, hearth_conn *c) {
    if (c->prev) c->prev->next = c->next;
    else g->head = c->next;
    if (c->next) c->next->prev = c->prev;
    else g->tail = c->prev;
    c->prev = c->next = NULL;
}

static void append(hearth_conns *g, hearth_conn *c) {
    c->prev = g->tail;
    c->next = NULL;
    if (g->tail) g->tail->next = c;
    else g->head = c;
    g->tail = c;
}

/* Under mu. */
static void shut(hearth_conns *g, hearth_conn *c, int64_t *counter) {
    if (c->closing) return;
    c->closing = true;
    shutdown(c->fd, SHUT_RDWR);
    (*counter)++;
    (void)g;
}

/* Milliseconds since data last arrived on fd; -1 when the kernel does not say. */
static double last_data_ago(int fd) {
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    memset(&ti, 0, sizeof ti);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 || len < sizeof ti) return -1;
    return (double)ti.tcpi_last_data_recv;
}

/* Under mu: the deadline of c now (0: none). */
static double deadline_of(hearth_conns *g, hearth_conn *c, double now) {
    if (c->state == ST_BUSY || c->closing) return 0;
    if (c->state == ST_BODY) return c->deadline;
    if (!c->started) {
        double ago = last_data_ago(c->fd), waited = now - c->since;
        /* the jiffy clock of the kernel is a few ms coarse: data counts from 5 ms after WAIT began */
        if (ago >= 0 && ago + 5 < waited) {
            c->started = true;
            c->since = now - ago;
        }
    }
    return c->since + (c->started ? g->p.header_timeout_ms : g->p.idle_timeout_ms);
}

static void *guard_main(void *arg) {
    hearth_conns *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        double now = now_ms();
        for (hearth_conn *c = g->head; c; c = c->next) {
            double d = deadline_of(g, c, now);
            if (d > 0 && now >= d) shut(g, c, &g->counts.timed_out);
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long ns = ts.tv_nsec + (long)g->tick_ms * 1000000L;
        ts.tv_sec += ns / 1000000000L;
        ts.tv_nsec = ns % 1000000000L;
        while (!g->stop && pthread_cond_timedwait(&g->cv, &g->mu, &ts) != ETIMEDOUT) {}
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

hearth_conns *hearth_conns_create(const hearth_conns_params *p) {
    hearth_conns *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->p = *p;
    if (g->p.header_timeout_ms <= 0) g->p.header_timeout_ms = 10000;
    if (g->p.idle_timeout_ms <= 0) g->p.idle_timeout_ms = 15000;
    if (g->p.min_body_rate <= 0) g->p.min_body_rate = 64 * 1024;
    if (g->p.max_total <= 0) g->p.max_total = 256;
    if (g->p.max_per_addr <= 0) g->p.max_per_addr = 128;
    int shortest = g->p.header_timeout_ms < g->p.idle_timeout_ms ? g->p.header_timeout_ms : g->p.idle_timeout_ms;
    g->tick_ms = shortest / 4 < 10 ? 10 : shortest / 4 > 250 ? 250 : shortest / 4;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    if (pthread_create(&g->thread, NULL, guard_main, g) != 0) {
        pthread_cond_destroy(&g->cv);
        pthread_mutex_destroy(&g->mu);
        free(g);
        return NULL;
    }
    return g;
}

void hearth_conns_destroy(hearth_conns *g) {
    if (!g) return;
    pthread_mutex_lock(&g->mu);
    g->stop = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    while (g->head) { /* none should be left; free them anyway */
        hearth_conn *c = g->head;
        unlink_conn(g, c);
        free(c);
    }
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

static bool same_addr(const hearth_conn *a, const hearth_conn *b) {
    return a->addr_len == b->addr_len && !memcmp(a->addr, b->addr, (size_t)a->addr_len);
}

/* Under mu: close the oldest WAIT connection (of c's address when per_addr). */
static bool evict_one(hearth_conns *g, const hearth_conn *c, bool per_addr) {
    for (hearth_conn *o = g->head; o; o = o->next) {
        if (o == c || o->closing || o->state != ST_WAIT || (per_addr && !same_addr(o, c))) continue;
        shut(g, o, &g->counts.evicted);
        return true;
    }
    return false;
}

/* Under mu: c's count of live (not closing) connections from its address, itself included. */
static int n_from(const hearth_conns *g, const hearth_conn *c) {
    int n = 0;
    for (const hearth_conn *o = g->head; o; o = o->next) n += !o->closing && same_addr(o, c);
    return n;
}

static int n_live(const hearth_conns *g) {
    int n = 0;
    for (const hearth_conn *o = g->head; o; o = o->next) n += !o->closing;
    return n;
}

hearth_conn *hearth_conns_open(hearth_conns *g, int fd, const struct sockaddr *addr, socklen_t addr_len) {
    hearth_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->fd = fd;
    if (addr && addr->sa_family == AF_INET && addr_len >= (socklen_t)sizeof(struct sockaddr_in)) {
        memcpy(c->addr, &((const struct sockaddr_in *)addr)->sin_addr, 4);
        c->addr_len = 4;
    } else if (addr && addr->sa_family == AF_INET6 && addr_len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        memcpy(c->addr, &((const struct sockaddr_in6 *)addr)->sin6_addr, 16);
        c->addr_len = 16;
    }
    c->state = ST_WAIT;
    c->since = now_ms();
    pthread_mutex_lock(&g->mu);
    append(g, c);
    g->n++;
    g->counts.open = g->n;
    if (n_from(g, c) > g->p.max_per_addr && !evict_one(g, c, true)) c->over = true;
    if (!c->over && n_live(g) > g->p.max_total && !evict_one(g, c, false)) c->over = true;
    pthread_mutex_unlock(&g->mu);
    return c;
}

void hearth_conns_close(hearth_conns *g, hearth_conn *c) {
    if (!c) return;
    pthread_mutex_lock(&g->mu);
    unlink_conn(g, c);
    g->n--;
    g->counts.open = g->n;
    pthread_mutex_unlock(&g->mu);
    free(c);
}

bool hearth_conns_request(hearth_conns *g, hearth_conn *c, int64_t body_bytes) {
    if (!c) return true;
    pthread_mutex_lock(&g->mu);
    bool ok = !c->over;
    if (ok) {
        double now = now_ms();
        if (body_bytes < 0) body_bytes = 0;
        c->state = ST_BODY;
        c->since = now;
        c->deadline = now + g->p.header_timeout_ms + (double)body_bytes * 1e3 / (double)g->p.min_body_rate;
    } else {
        g->counts.refused++;
    }
    pthread_mutex_unlock(&g->mu);
    return ok;
}

void hearth_conns_busy(hearth_conns *g, hearth_conn *c) {
    if (!c) return;
    pthread_mutex_lock(&g->mu);
    c->state = ST_BUSY;
    pthread_mutex_unlock(&g->mu);
}

void hearth_conns_wait(hearth_conns *g, hearth_conn *c) {
    if (!c) return;
    pthread_mutex_lock(&g->mu);
    c->state = ST_WAIT;
    c->started = false;
    c->since = now_ms();
    unlink_conn(g, c); /* the list stays ordered by the time each became WAIT */
    append(g, c);
    pthread_mutex_unlock(&g->mu);
}

void hearth_conns_close_waiting(hearth_conns *g) {
    pthread_mutex_lock(&g->mu);
    int64_t n = 0;
    for (hearth_conn *c = g->head; c; c = c->next)
        if (c->state == ST_WAIT) shut(g, c, &n);
    pthread_mutex_unlock(&g->mu);
}

void hearth_conns_get(hearth_conns *g, hearth_conns_counts *out) {
    pthread_mutex_lock(&g->mu);
    *out = g->counts;
    pthread_mutex_unlock(&g->mu);
}
