/*
 * test_server_engine_get.c - short requests of the serving process to its engine children
 * (server/engine_get.h), against stand-in children on unix sockets: one that answers (chunked,
 * de-chunked here), two that accept and never answer (a stopped child), one whose socket is
 * gone. Asked together, the silent ones cost one deadline for the whole gather, not one each.
 */
#include "server/engine_get.h"
#include "server/unixsock.h"
#include "test.h"

#include <pthread.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A child that answers one request: reads its head, sends a chunked 200, closes. */
static void *answer_once(void *arg) {
    int fd = *(int *)arg, c = accept(fd, NULL, NULL);
    if (c < 0) return NULL;
    char buf[1024];
    size_t got = 0;
    while (got < sizeof buf - 1) {
        ssize_t k = recv(c, buf + got, sizeof buf - 1 - got, 0);
        if (k <= 0) break;
        got += (size_t)k;
        buf[got] = 0;
        if (strstr(buf, "\r\n\r\n")) break;
    }
    static const char ans[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                              "6\r\nhello \r\n5\r\nworld\r\n0\r\n\r\n";
    if (strstr(buf, "GET /metrics HTTP/1.1\r\n")) (void)!send(c, ans, sizeof ans - 1, MSG_NOSIGNAL);
    close(c);
    return NULL;
}

TEST(one_deadline_for_all_children) {
    char dir[] = "/tmp/hearth-engine-get-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char paths[4][96];
    const char *socks[4];
    int lfd[3];
    hearth_err err = {0};
    for (int i = 0; i < 4; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/c%d.sock", dir, i);
        socks[i] = paths[i];
        if (i < 3) {
            lfd[i] = hearth_unix_listen(paths[i], &err); /* 1 and 2 accept (backlog) and never answer */
            CHECK(lfd[i] >= 0);
        }
    }
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, answer_once, &lfd[0]), 0);
    int status[4] = {0};
    bool ok[4];
    hearth_buf bodies[4] = {{0}};
    const int deadline_ms = 500;
    double t0 = now_ms();
    int n = hearth_engine_get_all(socks, 4, "GET", "/metrics", deadline_ms, status, bodies, ok);
    double took = now_ms() - t0;
    pthread_join(th, NULL);
    CHECK_EQ(n, 1);
    CHECK(ok[0] && !ok[1] && !ok[2] && !ok[3]);
    CHECK_EQ(status[0], 200);
    CHECK_EQ(bodies[0].len, 11);
    CHECK(bodies[0].p && !memcmp(bodies[0].p, "hello world", 11));
    /* the two silent children together: one deadline (asked one after the other: two) */
    CHECK(took >= deadline_ms - 5);
    CHECK(took < 1.8 * deadline_ms);
    /* one child alone: the same answer through the single-child call */
    CHECK_EQ(pthread_create(&th, NULL, answer_once, &lfd[0]), 0);
    hearth_buf one = {0};
    int st = 0;
    CHECK(hearth_engine_get(socks[0], "GET", "/metrics", deadline_ms, &st, &one));
    pthread_join(th, NULL);
    CHECK_EQ(st, 200);
    CHECK(one.len == 11 && !memcmp(one.p, "hello world", 11));
    CHECK(!hearth_engine_get(socks[3], "GET", "/metrics", deadline_ms, &st, &one)); /* no such child */
    hearth_buf_fini(&one);
    for (int i = 0; i < 4; i++) hearth_buf_fini(&bodies[i]);
    for (int i = 0; i < 3; i++) {
        close(lfd[i]);
        unlink(paths[i]);
    }
    rmdir(dir);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
