/*
 * test_server_conns.c - the connection guard (server/conns.h) on real loopback TCP pairs: the
 * idle, header and body deadlines close a socket near their time and not before, a busy
 * connection is never closed, and the caps evict the oldest waiting connection or refuse.
 *
 * A connection "closed by the guard" is seen from the client's side: recv returns 0 (the
 * server's end was shut down). Timings have generous upper bounds (a loaded machine) and
 * tight lower ones (a deadline must not fire early).
 */
#include "server/conns.h"
#include "test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int client, server;
    struct sockaddr_in peer;
} pair;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int listener(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 16) ||
        getsockname(fd, (struct sockaddr *)&a, &len))
        return -1;
    *port = ntohs(a.sin_port);
    return fd;
}

static bool connect_pair(int lfd, int port, pair *p) {
    p->client = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (p->client < 0 || connect(p->client, (struct sockaddr *)&a, sizeof a)) return false;
    socklen_t len = sizeof p->peer;
    p->server = accept(lfd, (struct sockaddr *)&p->peer, &len);
    return p->server >= 0;
}

static void close_pair(pair *p) {
    close(p->client);
    close(p->server);
}

/* Milliseconds until the client sees the end of the stream, or -1 when it does not within
 * max_ms. Bytes the server never sends: any readable state is the shutdown. */
static double ms_until_closed(const pair *p, int max_ms) {
    double t0 = now_ms();
    struct pollfd pf = {.fd = p->client, .events = POLLIN};
    if (poll(&pf, 1, max_ms) != 1) return -1;
    char b;
    if (recv(p->client, &b, 1, MSG_DONTWAIT) != 0) return -1;
    return now_ms() - t0;
}

static bool is_closed_now(const pair *p) { return ms_until_closed(p, 0) >= 0; }

static hearth_conns_params fast(void) {
    return (hearth_conns_params){.header_timeout_ms = 400, .idle_timeout_ms = 250, .min_body_rate = 1000,
                                 .max_total = 8, .max_per_addr = 8};
}

TEST(idle_connection_closed_after_idle_timeout) {
    int port, lfd = listener(&port);
    pair p;
    CHECK(lfd >= 0 && connect_pair(lfd, port, &p));
    hearth_conns_params cp = fast();
    hearth_conns *g = hearth_conns_create(&cp);
    hearth_conn *c = hearth_conns_open(g, p.server, (struct sockaddr *)&p.peer, sizeof p.peer);
    double ms = ms_until_closed(&p, 3000);
    CHECK(ms >= 200 && ms < 1500); /* 250 ms, closed by a tick of 62 ms */
    hearth_conns_counts cc;
    hearth_conns_get(g, &cc);
    CHECK_EQ(cc.timed_out, 1);
    CHECK_EQ(cc.open, 1);
    hearth_conns_close(g, c);
    hearth_conns_get(g, &cc);
    CHECK_EQ(cc.open, 0);
    hearth_conns_destroy(g);
    close_pair(&p);
    close(lfd);
}

TEST(dribbled_headers_closed_at_header_deadline) {
    int port, lfd = listener(&port);
    pair p;
    CHECK(lfd >= 0 && connect_pair(lfd, port, &p));
    hearth_conns_params cp = fast();
    cp.idle_timeout_ms = 2000; /* idle would be much later: the header deadline must act */
    hearth_conns *g = hearth_conns_create(&cp);
    hearth_conn *c = hearth_conns_open(g, p.server, (struct sockaddr *)&p.peer, sizeof p.peer);
    double t0 = now_ms(), closed_at = -1;
    for (int i = 0; i < 60 && closed_at < 0; i++) { /* a byte every 50 ms keeps it from being idle */
        if (send(p.client, "x", 1, MSG_NOSIGNAL) != 1 || is_closed_now(&p)) closed_at = now_ms() - t0;
        else sleep_ms(50);
    }
    CHECK(closed_at >= 350 && closed_at < 1500);
    hearth_conns_close(g, c);
    hearth_conns_destroy(g);
    close_pair(&p);
    close(lfd);
}

TEST(body_deadline_scales_with_its_size) {
    int port, lfd = listener(&port);
    pair a, b;
    CHECK(lfd >= 0 && connect_pair(lfd, port, &a) && connect_pair(lfd, port, &b));
    hearth_conns_params cp = fast();
    hearth_conns *g = hearth_conns_create(&cp);
    hearth_conn *ca = hearth_conns_open(g, a.server, (struct sockaddr *)&a.peer, sizeof a.peer);
    hearth_conn *cb = hearth_conns_open(g, b.server, (struct sockaddr *)&b.peer, sizeof b.peer);
    CHECK(hearth_conns_request(g, ca, 0));    /* 400 ms */
    CHECK(hearth_conns_request(g, cb, 1000)); /* 400 ms + 1000 B at 1000 B/s */
    double ms = ms_until_closed(&a, 3000);
    CHECK(ms >= 350 && ms < 1500);
    CHECK(!is_closed_now(&b));
    ms = ms_until_closed(&b, 4000);
    CHECK(ms >= 500 && ms < 2500);
    hearth_conns_close(g, ca);
    hearth_conns_close(g, cb);
    hearth_conns_destroy(g);
    close_pair(&a);
    close_pair(&b);
    close(lfd);
}

TEST(busy_connection_is_never_closed_then_idles_again) {
    int port, lfd = listener(&port);
    pair p;
    CHECK(lfd >= 0 && connect_pair(lfd, port, &p));
    hearth_conns_params cp = fast();
    hearth_conns *g = hearth_conns_create(&cp);
    hearth_conn *c = hearth_conns_open(g, p.server, (struct sockaddr *)&p.peer, sizeof p.peer);
    CHECK(hearth_conns_request(g, c, 0));
    hearth_conns_busy(g, c); /* a long quiet stream */
    CHECK(ms_until_closed(&p, 1200) < 0);
    hearth_conns_wait(g, c); /* response sent: idle again, closed after the idle timeout */
    double ms = ms_until_closed(&p, 3000);
    CHECK(ms >= 200 && ms < 1500);
    hearth_conns_close(g, c);
    hearth_conns_destroy(g);
    close_pair(&p);
    close(lfd);
}

TEST(per_address_cap_evicts_the_oldest_waiting_one) {
    int port, lfd = listener(&port);
    pair p[3];
    hearth_conns_params cp = fast();
    cp.idle_timeout_ms = cp.header_timeout_ms = 10000;
    cp.max_per_addr = 2;
    hearth_conns *g = hearth_conns_create(&cp);
    hearth_conn *c[3];
    for (int i = 0; i < 3; i++) {
        CHECK(lfd >= 0 && connect_pair(lfd, port, &p[i]));
        c[i] = hearth_conns_open(g, p[i].server, (struct sockaddr *)&p[i].peer, sizeof p[i].peer);
        if (i == 0) hearth_conns_busy(g, c[0]); /* working: not evictable */
    }
    CHECK(ms_until_closed(&p[1], 1000) >= 0); /* the oldest waiting one made room */
    CHECK(!is_closed_now(&p[0]));
    CHECK(!is_closed_now(&p[2]));
    CHECK(hearth_conns_request(g, c[2], 0));
    hearth_conns_counts cc;
    hearth_conns_get(g, &cc);
    CHECK_EQ(cc.evicted, 1);
    CHECK_EQ(cc.refused, 0);
    for (int i = 0; i < 3; i++) {
        hearth_conns_close(g, c[i]);
        close_pair(&p[i]);
    }
    hearth_conns_destroy(g);
    close(lfd);
}

TEST(server_cap_refuses_when_nothing_can_be_closed) {
    int port, lfd = listener(&port);
    pair p[3];
    hearth_conns_params cp = fast();
    cp.idle_timeout_ms = cp.header_timeout_ms = 10000;
    cp.max_total = 2;
    hearth_conns *g = hearth_conns_create(&cp);
    hearth_conn *c[3];
    for (int i = 0; i < 3; i++) {
        CHECK(lfd >= 0 && connect_pair(lfd, port, &p[i]));
        c[i] = hearth_conns_open(g, p[i].server, (struct sockaddr *)&p[i].peer, sizeof p[i].peer);
        if (i < 2) hearth_conns_busy(g, c[i]);
    }
    CHECK(!hearth_conns_request(g, c[2], 0)); /* answered 503 by the caller */
    hearth_conns_counts cc;
    hearth_conns_get(g, &cc);
    CHECK_EQ(cc.refused, 1);
    CHECK_EQ(cc.evicted, 0);
    CHECK_EQ(cc.open, 3);
    for (int i = 0; i < 2; i++) CHECK(!is_closed_now(&p[i]));
    for (int i = 0; i < 3; i++) {
        hearth_conns_close(g, c[i]);
        close_pair(&p[i]);
    }
    hearth_conns_destroy(g);
    close(lfd);
}

TEST(close_waiting_closes_idle_connections_only) {
    int port, lfd = listener(&port);
    pair a, b;
    CHECK(lfd >= 0 && connect_pair(lfd, port, &a) && connect_pair(lfd, port, &b));
    hearth_conns_params cp = fast();
    cp.idle_timeout_ms = cp.header_timeout_ms = 10000;
    hearth_conns *g = hearth_conns_create(&cp);
    hearth_conn *ca = hearth_conns_open(g, a.server, (struct sockaddr *)&a.peer, sizeof a.peer);
    hearth_conn *cb = hearth_conns_open(g, b.server, (struct sockaddr *)&b.peer, sizeof b.peer);
    hearth_conns_busy(g, cb);
    hearth_conns_close_waiting(g);
    CHECK(ms_until_closed(&a, 1000) >= 0);
    CHECK(!is_closed_now(&b));
    hearth_conns_close(g, ca);
    hearth_conns_close(g, cb);
    hearth_conns_destroy(g);
    close_pair(&a);
    close_pair(&b);
    close(lfd);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
