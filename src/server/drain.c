/*
 * drain.c - the server's graceful drain (see server.h): SIGTERM and POST /admin/drain.
 *
 *   1. stop accepting: MHD stops polling the listening socket (MHD_quiesce_daemon) and the
 *      socket stops listening (shutdown(2): new connections are refused at once instead of
 *      waiting in the backlog); it is closed only after MHD has stopped, as MHD asks;
 *   2. close every connection waiting for a request (conns.h); the rest get Connection: close
 *      on their answers, and a request that still arrives gets 503 + Retry-After (http.c);
 *   3. requests queued in the engine and not admitted yet answer 503 + Retry-After by
 *      themselves (generate.c sees the flag while it waits for admission);
 *   4. a thread waits for the requests in flight to end, up to drain_timeout_s; past it the
 *      engine cancels everything, and each generation ends the way its API ends an error
 *      (OpenAI: an error event and [DONE]; Anthropic: event: error; Responses:
 *      response.failed; non-streaming: a 503 body). Then `drained` is set; the CLI, which
 *      waits for it, tears the server down.
 */
#include "base/log.h"
#include "server/conns.h"
#include "server/server_internal.h"

#include <errno.h>
#include <microhttpd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CUT_GRACE_MS 5000 /* after cancelling: time for the last frames to go out */

/* Wait on the drain's condition variable until nothing is in flight, until_ms (monotonic)
 * passes, or destroy cuts the drain short. Under drain_mu. */
static void wait_idle(hearth_server *s, double until_ms) {
    while (hearth_stats_n_active(s->stats) > 0 && hearth_now_ms() < until_ms) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&s->drain_cv, &s->drain_mu, &ts);
        if (atomic_load(&s->drained)) return; /* destroy cut it short */
    }
}

static void *drain_main(void *arg) {
    hearth_server *s = arg;
    pthread_mutex_lock(&s->drain_mu);
    double t0 = hearth_now_ms();
    wait_idle(s, t0 + 1e3 * s->p.drain_timeout_s);
    int64_t left = hearth_stats_n_active(s->stats);
    if (left > 0 && !atomic_load(&s->drained)) {
        hearth_log(HEARTH_LOG_INFO, "server: drain: %lld requests still running after %d s; cancelling them",
                   (long long)left, s->p.drain_timeout_s);
        if (s->e) hearth_engine_cancel_all(s->e); /* an embedding-only server has none */
        wait_idle(s, hearth_now_ms() + CUT_GRACE_MS);
    }
    hearth_log(HEARTH_LOG_INFO, "server: drained in %.0f ms", hearth_now_ms() - t0);
    atomic_store(&s->drained, true);
    pthread_mutex_unlock(&s->drain_mu);
    return NULL;
}

void hearth_server_drain(hearth_server *s) {
    pthread_mutex_lock(&s->drain_mu);
    if (atomic_load(&s->draining)) {
        pthread_mutex_unlock(&s->drain_mu);
        return;
    }
    atomic_store(&s->draining, true);
    int fd = s->d ? MHD_quiesce_daemon(s->d) : MHD_INVALID_SOCKET;
    if (fd != MHD_INVALID_SOCKET) {
        shutdown(fd, SHUT_RDWR); /* a listening socket stops listening: connects are refused */
        s->listen_fd = fd;
    }
    hearth_conns_close_waiting(s->conns);
    hearth_log(HEARTH_LOG_INFO, "server: draining: %lld requests in flight, up to %d s",
               (long long)hearth_stats_n_active(s->stats), s->p.drain_timeout_s);
    s->drain_thread_on = pthread_create(&s->drain_thread, NULL, drain_main, s) == 0;
    if (!s->drain_thread_on) atomic_store(&s->drained, true); /* no thread: nothing waits */
    pthread_mutex_unlock(&s->drain_mu);
}

bool hearth_server_draining(const hearth_server *s) { return atomic_load(&s->draining); }
bool hearth_server_drained(const hearth_server *s) { return atomic_load(&s->drained); }

void hearth_drain_fini(hearth_server *s) {
    pthread_mutex_lock(&s->drain_mu);
    bool on = s->drain_thread_on;
    atomic_store(&s->drained, true);
    pthread_cond_broadcast(&s->drain_cv);
    pthread_mutex_unlock(&s->drain_mu);
    if (on) pthread_join(s->drain_thread, NULL);
    s->drain_thread_on = false;
}
