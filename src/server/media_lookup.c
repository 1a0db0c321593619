/*
 * media_lookup.c - a host lookup with a time limit, for the media fetcher (media_fetch.h).
 *
 * getaddrinfo has no timeout of its own: a resolver that does not answer holds the caller for
 * the system's retries (tens of seconds). The lookup runs on a detached thread instead, and the
 * caller waits on a condition variable until the answer or its deadline, whichever comes
 * first. A lookup that is late is abandoned, not cancelled: the thread finishes on its own and
 * the last of the two owners (caller, thread) frees the shared record and any late answer, so
 * nothing is leaked and nothing is freed twice. At most one thread per fetch is in flight,
 * and only as long as the system resolver's own timeout.
 *
 * Thread rule: any thread.
 */
#include "server/media_fetch.h"

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    pthread_mutex_t   mu;
    pthread_cond_t    cv;
    int               owners; /* 2 while both the caller and the thread hold it */
    bool              done;
    int               rc;
    struct addrinfo  *res;
    hearth_resolver_fn resolve;
    char              host[];
} lookup;

static void release(lookup *l) {
    pthread_mutex_lock(&l->mu);
    bool last = --l->owners == 0;
    pthread_mutex_unlock(&l->mu);
    if (!last) return;
    if (l->res) freeaddrinfo(l->res);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

static void *run(void *p) {
    lookup *l = p;
    struct addrinfo *res = NULL;
    int rc = l->resolve(l->host, &res);
    pthread_mutex_lock(&l->mu);
    l->rc = rc;
    l->res = res;
    l->done = true;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    release(l);
    return NULL;
}

int hearth_media_resolve_system(const char *host, struct addrinfo **res) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    return getaddrinfo(host, NULL, &hints, res);
}

int hearth_media_lookup(const char *host, long timeout_ms, hearth_resolver_fn resolve, struct addrinfo **res,
                        bool *late) {
    *res = NULL;
    *late = false;
    size_t n = strlen(host) + 1;
    lookup *l = calloc(1, sizeof *l + n);
    if (!l) return EAI_MEMORY;
    memcpy(l->host, host, n);
    l->resolve = resolve ? resolve : hearth_media_resolve_system;
    l->owners = 2;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    pthread_attr_t at;
    pthread_t th;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int e = pthread_create(&th, &at, run, l);
    pthread_attr_destroy(&at);
    if (e) {
        l->owners = 1;
        release(l);
        return EAI_AGAIN;
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    long ms = timeout_ms > 0 ? timeout_ms : 1;
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&l->mu);
    while (!l->done && pthread_cond_timedwait(&l->cv, &l->mu, &until) != ETIMEDOUT) {}
    int rc = 0;
    if (l->done) {
        rc = l->rc;
        *res = l->res;
        l->res = NULL; /* the caller's now */
    } else {
        *late = true;
    }
    pthread_mutex_unlock(&l->mu);
    release(l);
    return rc;
}
