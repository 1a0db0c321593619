/*
 * engines.c - the engine children of `serve --isolate` and their pool (engines.h has the
 * state diagram).
 *
 * Everything about a slot is guarded by one mutex; the condition variable wakes requests
 * waiting for a slot to become READY (or to go away). The supervisor thread runs a 100 ms
 * tick: reap exited children, spawn the WANTED ones while fewer than pool_size processes
 * live, stop DRAINING ones once idle, and probe /health (without the lock held: a probe of a
 * stopped child takes up to its timeout). Children are found by pid only (kill(2) of the pid
 * we spawned and have not reaped yet can only reach that child).
 */
#include "server/engines.h"
#include "base/log.h"
#include "server/engine_get.h"
#include "server/jraw.h"
#include "server/resp_disk.h"
#include "server/unixsock.h"
#include "store/units.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SLOTS     16
#define TICK_MS       100
#define PROBE_EVERY_MS 1000
#define PROBE_TIMEOUT_MS 1000

typedef enum { S_EMPTY = 0, S_WANTED, S_STARTING, S_READY, S_DRAINING } slot_state;

static const char *const state_names[] = {"empty", "wanted", "starting", "ready", "draining"};

typedef struct {
    slot_state state;
    char       id[256];
    char       path[1024];
    bool       is_default;
    pid_t      pid;          /* 0: no process */
    unsigned   gen;          /* bumped at every spawn */
    char       sock[108];
    int        in_flight;
    double     last_used_ms, last_ok_ms, started_ms, next_probe_ms, term_ms;
    bool       term_sent;
    int        restarts;     /* respawns after a death or a hang */
    bool       suspect;      /* a request saw its socket fail: probe now */
    int        waiters;      /* requests waiting for it to become READY: it is not evicted */
    bool       was_ready;    /* has answered once: a later exit is a death, not a failed start */
    double     spawn_after_ms; /* a respawn waits this long after repeated deaths (backoff) */
    int64_t    mem_bytes;    /* resident bytes: the estimate, then the child's own figures */
    int64_t    kv_arg;       /* > 0: started with --kv-budget of this many bytes */
    bool       measured;     /* mem_bytes is the child's own (its /stats) */
    bool       measure_due;  /* READY and not measured yet: ask its /stats */
} slot;

struct hearth_engines {
    hearth_engines_params p;
    char            **argv_common, **argv_default; /* owned copies */
    char              dir[64];  /* the sockets' private directory (0700) */
    char              responses[80]; /* dir/responses: the children's shared Responses store */
    pthread_mutex_t   mu;
    pthread_cond_t    cv;
    slot              s[MAX_SLOTS];
    char              fail_id[256], fail_msg[320]; /* the last start failure, for its waiters */
    unsigned          fail_seq;
    bool              closing;  /* destroy has begun: no spawns, no leases, exits are final */
    bool              stop;     /* the supervisor's end (after every child is gone) */
    pthread_t         thread;
    bool              thread_on;
    long long         scrape_missed; /* children that did not answer a /metrics scrape (under mu) */
};

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static char **dup_argv(const char *const *v, int n) {
    char **o = calloc((size_t)n + 1, sizeof *o);
    if (!o) return NULL;
    for (int i = 0; i < n; i++)
        if (!(o[i] = strdup(v[i]))) return o; /* the NULL ends it: a short copy, freed the same way */
    return o;
}

static void free_argv(char **v) {
    if (!v) return;
    for (char **a = v; *a; a++) free(*a);
    free(v);
}

/* GET /health on sock within timeout_ms: true when it answers 200. */
static bool probe_health(const char *sock, int timeout_ms) {
    int fd = hearth_unix_connect(sock);
    if (fd < 0) return false;
    static const char req[] = "GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    bool ok = false;
    double until = now_ms() + timeout_ms;
    if (send(fd, req, sizeof req - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof req - 1)) {
        char buf[64];
        size_t got = 0;
        while (got < 12 && now_ms() < until) {
            struct pollfd pf = {.fd = fd, .events = POLLIN};
            int wait = (int)(until - now_ms());
            if (poll(&pf, 1, wait > 0 ? wait : 0) != 1) continue;
            ssize_t k = recv(fd, buf + got, sizeof buf - 1 - got, 0);
            if (k <= 0) break;
            got += (size_t)k;
        }
        buf[got] = 0;
        ok = got >= 12 && !strncmp(buf, "HTTP/1.", 7) && !strncmp(buf + 9, "200", 3);
    }
    close(fd);
    return ok;
}

/* Start s's child. Supervisor thread, under mu. */
static void spawn(hearth_engines *g, slot *s) {
    s->gen++;
    snprintf(s->sock, sizeof s->sock, "%s/e%d-%u.sock", g->dir, (int)(s - g->s), s->gen);
    unlink(s->sock);
    int n_common = g->p.n_common, n_def = s->is_default ? g->p.n_default : 0;
    char **argv = calloc((size_t)(n_common + n_def + 14), sizeof *argv);
    if (!argv) return;
    int k = 0;
    argv[k++] = "hearth";
    argv[k++] = "_engine";
    argv[k++] = s->path;
    argv[k++] = "--unix";
    argv[k++] = s->sock;
    argv[k++] = "--alias";
    argv[k++] = s->id;
    argv[k++] = "--responses-dir";
    argv[k++] = g->responses;
    /* a pool's children each take a folder of --ssd-cache DIR of their own (DIR/org--name): the
     * disk tier is one process's (ssd_tier.h locks it); the same model finds its folder again */
    char ssd[1400];
    for (int i = 0; i < n_common; i++) {
        argv[k++] = g->argv_common[i];
        if (g->p.resolve && !strcmp(g->argv_common[i], "--ssd-cache") && i + 1 < n_common) {
            int n = snprintf(ssd, sizeof ssd, "%s/", g->argv_common[++i]);
            for (const char *c = s->id; *c && n < (int)sizeof ssd - 3; c++) {
                if (*c == '/') ssd[n++] = '-', ssd[n++] = '-';
                else ssd[n++] = (*c == '.' && c == s->id) ? '_' : *c;
            }
            ssd[n] = 0;
            argv[k++] = ssd;
        }
    }
    for (int i = 0; i < n_def; i++) argv[k++] = g->argv_default[i];
    /* the KV pool admission counted on (pool_memory.h); last, so it wins over nothing given */
    char kv[32];
    if (s->kv_arg > 0) {
        snprintf(kv, sizeof kv, "%" PRId64 "B", s->kv_arg);
        argv[k++] = "--kv-budget";
        argv[k++] = kv;
    }
    argv[k] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, dfl;
    sigemptyset(&none);
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGPIPE);
    sigaddset(&dfl, SIGINT);
    sigaddset(&dfl, SIGTERM);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawnattr_init(&at);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dfl);
    /* a process group of its own: a terminal's Ctrl-C reaches the serving process alone,
     * which then stops its children in order */
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    extern char **environ;
    pid_t pid = 0;
    int rc = posix_spawn(&pid, g->p.exe, &fa, &at, argv, environ);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    free(argv);
    double t = now_ms();
    s->started_ms = t;
    s->next_probe_ms = t + TICK_MS;
    s->term_sent = false;
    s->suspect = false;
    if (rc != 0) {
        hearth_log(HEARTH_LOG_ERROR, "isolate: cannot start the engine of %s: %s", s->id, strerror(rc));
        snprintf(g->fail_id, sizeof g->fail_id, "%s", s->id);
        snprintf(g->fail_msg, sizeof g->fail_msg, "cannot start the engine process: %s", strerror(rc));
        g->fail_seq++;
        s->state = S_EMPTY;
        return;
    }
    s->pid = pid;
    s->state = S_STARTING;
    hearth_log(HEARTH_LOG_INFO, "isolate: engine of %s started (pid %d)", s->id, (int)pid);
}

static int n_live(const hearth_engines *g) {
    int n = 0;
    for (int i = 0; i < MAX_SLOTS; i++) n += g->s[i].pid > 0;
    return n;
}

/* Bytes held by the children alive now (draining ones too: their memory is not back yet). */
static int64_t live_bytes(const hearth_engines *g) {
    int64_t n = 0;
    for (int i = 0; i < MAX_SLOTS; i++)
        if (g->s[i].pid > 0) n += g->s[i].mem_bytes;
    return n;
}

/* May s's child start now: under the count cap, and with a memory budget its bytes next to
 * the live children's. Under mu. */
static bool room_for(const hearth_engines *g, const slot *s) {
    if (n_live(g) >= g->p.pool_size) return false;
    return g->p.memory_budget <= 0 || live_bytes(g) + s->mem_bytes <= g->p.memory_budget;
}

/* The child's own figures from its /stats ("memory": weights, KV pool, transients) into
 * *bytes; false when it did not answer or has none (an embedding model). Without the lock. */
static bool measure(const char *sock, int64_t *bytes) {
    hearth_buf body = {0};
    int status = 0;
    bool ok = hearth_engine_get(sock, "GET", "/stats", PROBE_TIMEOUT_MS, &status, &body) && status == 200;
    hearth_span mem, v;
    int64_t sum = 0;
    ok = ok && hearth_jraw_get((hearth_span){body.p, body.len}, "memory", &mem);
    static const char *const keys[] = {"weights_bytes", "kv_bytes", "transient_bytes"};
    for (size_t i = 0; ok && i < sizeof keys / sizeof keys[0]; i++) {
        ok = hearth_jraw_get(mem, keys[i], &v) && hearth_jraw_kind(v) == 'n';
        if (ok) sum += strtoll(v.ptr, NULL, 10);
    }
    hearth_buf_fini(&body);
    if (ok && sum > 0) *bytes = sum;
    return ok && sum > 0;
}

/* A child exited (status st). Under mu. */
static void reaped(hearth_engines *g, slot *s, int st) {
    char how[64];
    if (WIFSIGNALED(st)) snprintf(how, sizeof how, "killed by signal %d", WTERMSIG(st));
    else snprintf(how, sizeof how, "exit status %d", WEXITSTATUS(st));
    unlink(s->sock);
    s->pid = 0;
    s->in_flight = 0; /* its requests have failed; their releases (of this gen) are ignored */
    if (s->state == S_DRAINING || g->closing) {
        hearth_log(HEARTH_LOG_INFO, "isolate: engine of %s stopped (%s)", s->id, how);
        s->state = S_EMPTY;
    } else if (s->state == S_STARTING && !s->was_ready) {
        /* it never came up: a model that cannot load; its waiters get the failure */
        hearth_log(HEARTH_LOG_ERROR, "isolate: engine of %s failed to start (%s)", s->id, how);
        snprintf(g->fail_id, sizeof g->fail_id, "%s", s->id);
        snprintf(g->fail_msg, sizeof g->fail_msg, "the engine of '%.200s' failed to start (%.40s; the server's "
                 "log says why)", s->id, how);
        g->fail_seq++;
        s->state = S_EMPTY;
    } else {
        hearth_log(HEARTH_LOG_ERROR, "isolate: engine of %s died (%s); restarting it", s->id, how);
        s->restarts++;
        s->state = S_WANTED;
        /* one that dies again soon after starting waits longer each time, up to 5 s */
        double up = now_ms() - s->started_ms;
        s->spawn_after_ms = now_ms() + (up < 10000 ? (s->restarts < 10 ? s->restarts : 10) * 500.0 : 0);
    }
    pthread_cond_broadcast(&g->cv);
}

static void *supervise(void *arg) {
    hearth_engines *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        double t = now_ms();
        for (int i = 0; i < MAX_SLOTS; i++) {
            slot *s = &g->s[i];
            int st;
            if (s->pid > 0 && waitpid(s->pid, &st, WNOHANG) == s->pid) reaped(g, s, st);
        }
        for (int i = 0; i < MAX_SLOTS; i++) {
            slot *s = &g->s[i];
            if (s->state == S_WANTED && g->closing) s->state = S_EMPTY;
            if (s->state == S_WANTED && room_for(g, s) && t >= s->spawn_after_ms) spawn(g, s);
            if (s->state == S_DRAINING && s->pid > 0 && s->in_flight == 0 && !s->term_sent) {
                kill(s->pid, SIGTERM); /* `serve` drains and exits; its caches go to the SSD tier */
                s->term_sent = true;
                s->term_ms = t;
            }
            if (s->state == S_DRAINING && s->term_sent && s->pid > 0 && t - s->term_ms > 60000) kill(s->pid, SIGKILL);
            if (s->state == S_DRAINING && s->pid <= 0) s->state = S_EMPTY;
        }
        /* probes, one slot at a time without the lock */
        for (int i = 0; i < MAX_SLOTS && !g->stop; i++) {
            slot *s = &g->s[i];
            if ((s->state != S_STARTING && s->state != S_READY) || s->pid <= 0) continue;
            if (!s->suspect && now_ms() < s->next_probe_ms) continue;
            char sock[108];
            memcpy(sock, s->sock, sizeof sock);
            unsigned gen = s->gen;
            bool starting = s->state == S_STARTING;
            pthread_mutex_unlock(&g->mu);
            bool ok = probe_health(sock, starting ? 200 : PROBE_TIMEOUT_MS);
            pthread_mutex_lock(&g->mu);
            if (s->gen != gen || s->pid <= 0) continue;
            t = now_ms();
            s->suspect = false;
            s->next_probe_ms = t + (s->state == S_STARTING ? TICK_MS : PROBE_EVERY_MS);
            if (ok) {
                s->last_ok_ms = t;
                if (s->state == S_STARTING) {
                    s->state = S_READY;
                    s->was_ready = true;
                    s->measure_due = g->p.memory_budget > 0;
                    hearth_log(HEARTH_LOG_INFO, "isolate: engine of %s ready (pid %d, %.0f ms)", s->id, (int)s->pid,
                               t - s->started_ms);
                    pthread_cond_broadcast(&g->cv);
                }
            } else if (s->state == S_READY && t - s->last_ok_ms > g->p.hang_timeout_s * 1000.0) {
                hearth_log(HEARTH_LOG_ERROR, "isolate: engine of %s (pid %d) has not answered for %d s; killing it",
                           s->id, (int)s->pid, g->p.hang_timeout_s);
                kill(s->pid, SIGKILL); /* reaped at the next tick, then respawned */
                s->state = S_STARTING; /* not READY any more: new requests wait for the respawn */
                pthread_cond_broadcast(&g->cv);
            } else if (s->state == S_STARTING && t - s->started_ms > g->p.start_timeout_s * 1000.0) {
                hearth_log(HEARTH_LOG_ERROR, "isolate: engine of %s (pid %d) did not start within %d s; killing it",
                           s->id, (int)s->pid, g->p.start_timeout_s);
                kill(s->pid, SIGKILL);
            }
        }
        /* a child that came up: its own figures replace the estimate */
        for (int i = 0; i < MAX_SLOTS && !g->stop; i++) {
            slot *s = &g->s[i];
            if (!s->measure_due || s->state != S_READY) continue;
            s->measure_due = false;
            char sock[108];
            memcpy(sock, s->sock, sizeof sock);
            unsigned gen = s->gen;
            int64_t bytes = 0;
            pthread_mutex_unlock(&g->mu);
            bool ok = measure(sock, &bytes);
            pthread_mutex_lock(&g->mu);
            if (!ok || s->gen != gen) continue;
            hearth_log(HEARTH_LOG_INFO, "isolate: engine of %s holds %.1f MB (estimated %.1f MB)", s->id, bytes / 1e6,
                       s->mem_bytes / 1e6);
            s->mem_bytes = bytes;
            s->measured = true;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += TICK_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&g->cv, &g->mu, &ts);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

static slot *find(hearth_engines *g, const char *id) {
    for (int i = 0; i < MAX_SLOTS; i++)
        if (g->s[i].state != S_EMPTY && !strcmp(g->s[i].id, id)) return &g->s[i];
    return NULL;
}

/* A free slot for id at path (needing need's bytes), WANTED; over the count cap, or over the
 * memory budget next to the slots that stay, the least recently used resident slots start
 * draining until it fits. Only a slot that is up (READY) and that no request waits for is
 * evicted, so two models asked for at once cannot take turns evicting each other before
 * either is used. NULL when there is no room yet (the caller waits and asks again). Under mu. */
static slot *want(hearth_engines *g, const char *id, const char *path, bool is_default,
                  const hearth_engines_need *need) {
    slot *fresh = NULL;
    int n_kept = 0;
    int64_t kept_bytes = 0, need_bytes = need->weights + need->kv + need->transient;
    for (int i = 0; i < MAX_SLOTS; i++) {
        if (g->s[i].state == S_EMPTY) {
            if (!fresh) fresh = &g->s[i];
        } else if (g->s[i].state != S_DRAINING) {
            n_kept++;
            kept_bytes += g->s[i].mem_bytes;
        }
    }
    if (!fresh) return NULL;
    for (;;) {
        bool over_count = n_kept >= g->p.pool_size;
        bool over_mem = g->p.memory_budget > 0 && kept_bytes + need_bytes > g->p.memory_budget;
        if (!over_count && !over_mem) break;
        slot *lru = NULL;
        for (int i = 0; i < MAX_SLOTS; i++) {
            slot *s = &g->s[i];
            if (s->state != S_READY || s->waiters > 0) continue;
            if (!lru || s->last_used_ms < lru->last_used_ms) lru = s;
        }
        if (!lru) return NULL; /* the rest are starting or awaited: another round */
        if (over_count)
            hearth_log(HEARTH_LOG_INFO, "isolate: pool full (%d): %s drains to make room for %s", g->p.pool_size,
                       lru->id, id);
        else
            hearth_log(HEARTH_LOG_INFO,
                       "isolate: memory budget (%.1f MB): %s (%.1f MB) drains to make room for %s (%.1f MB)",
                       g->p.memory_budget / 1e6, lru->id, lru->mem_bytes / 1e6, id, need_bytes / 1e6);
        lru->state = S_DRAINING;
        n_kept--;
        kept_bytes -= lru->mem_bytes;
        pthread_cond_broadcast(&g->cv);
    }
    /* kept across uses: a lease of an earlier use never matches its gen, and a request still
     * waiting on the slot's index takes its count off the same slot */
    unsigned gen = fresh->gen;
    int waiters = fresh->waiters;
    memset(fresh, 0, sizeof *fresh);
    fresh->gen = gen;
    fresh->waiters = waiters;
    snprintf(fresh->id, sizeof fresh->id, "%s", id);
    snprintf(fresh->path, sizeof fresh->path, "%s", path);
    fresh->is_default = is_default;
    fresh->mem_bytes = need_bytes;
    fresh->kv_arg = need->kv_arg;
    fresh->state = S_WANTED;
    fresh->last_used_ms = now_ms();
    pthread_cond_broadcast(&g->cv);
    return fresh;
}

/* What the model id at path needs (zeros without a memory budget); false with e filled when
 * it cannot be estimated or is over the budget alone (400, type memory_admission). Without
 * the lock: the estimate reads the model's files. */
static bool need_of(hearth_engines *g, const char *id, const char *path, hearth_engines_need *need,
                    hearth_api_err *e) {
    memset(need, 0, sizeof *need);
    if (g->p.memory_budget <= 0) return true;
    char why[256] = "";
    if (!g->p.estimate(g->p.estimate_cls, path, need, why, sizeof why))
        return hearth_api_fail(e, HEARTH_E_IO, "model_unavailable", "model",
                               "cannot estimate the memory of the model '%.120s': %.160s", id, why);
    int64_t total = need->weights + need->kv + need->transient;
    if (total <= g->p.memory_budget) return true;
    char t[24], w[24], kv[24], tr[24], b[24];
    hearth_fmt_bytes(total, t, sizeof t);
    hearth_fmt_bytes(need->weights, w, sizeof w);
    hearth_fmt_bytes(need->kv, kv, sizeof kv);
    hearth_fmt_bytes(need->transient, tr, sizeof tr);
    hearth_fmt_bytes(g->p.memory_budget, b, sizeof b);
    hearth_api_fail(e, HEARTH_E_LIMIT, "model_over_budget", "model",
                    "the model '%.120s' needs about %s (weights %s, KV cache %s, transients %s), more than the "
                    "memory budget of %s for all resident models even alone: raise --memory-budget, or lower --ctx "
                    "or --kv-budget",
                    id, t, w, kv, tr, b);
    e->type = "memory_admission";
    return false;
}

hearth_status hearth_engines_create(const hearth_engines_params *p, hearth_engines **out, hearth_err *err) {
    *out = NULL;
    hearth_engines *g = calloc(1, sizeof *g);
    if (!g) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    g->p = *p;
    if (g->p.pool_size < 1) g->p.pool_size = 1;
    if (g->p.pool_size > MAX_SLOTS / 2) g->p.pool_size = MAX_SLOTS / 2;
    if (g->p.hang_timeout_s <= 0) g->p.hang_timeout_s = 10;
    if (!g->p.estimate) g->p.memory_budget = 0;
    if (g->p.start_timeout_s <= 0) g->p.start_timeout_s = 600;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->argv_common = dup_argv(p->argv_common, p->n_common);
    g->argv_default = dup_argv(p->argv_default, p->n_default);
    g->p.exe = strdup(p->exe);
    g->p.model_id = strdup(p->model_id);
    g->p.model_path = strdup(p->model_path);
    if (!g->argv_common || !g->argv_default || !g->p.exe || !g->p.model_id || !g->p.model_path) {
        hearth_engines_destroy(g, 0);
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    }
    const char *base = getenv("XDG_RUNTIME_DIR");
    if (!base || !*base || strlen(base) > 40 || access(base, W_OK)) base = "/tmp";
    snprintf(g->dir, sizeof g->dir, "%s/hearth-XXXXXX", base);
    if (!mkdtemp(g->dir)) {
        g->dir[0] = 0;
        hearth_engines_destroy(g, 0);
        return hearth_err_set(err, HEARTH_E_IO, -1, "cannot make a directory for the engine sockets: %s",
                              strerror(errno));
    }
    snprintf(g->responses, sizeof g->responses, "%s/responses", g->dir);
    if (mkdir(g->responses, 0700)) {
        g->responses[0] = 0;
        hearth_engines_destroy(g, 0);
        return hearth_err_set(err, HEARTH_E_IO, -1, "cannot make a directory for stored responses: %s",
                              strerror(errno));
    }
    hearth_engines_need need;
    hearth_api_err e;
    if (!need_of(g, g->p.model_id, g->p.model_path, &need, &e)) {
        hearth_engines_destroy(g, 0);
        return hearth_err_set(err, HEARTH_E_LIMIT, -1, "%s", e.msg);
    }
    pthread_mutex_lock(&g->mu);
    want(g, g->p.model_id, g->p.model_path, true, &need);
    pthread_mutex_unlock(&g->mu);
    if (pthread_create(&g->thread, NULL, supervise, g) != 0) {
        hearth_engines_destroy(g, 0);
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "cannot start the engine supervisor thread");
    }
    g->thread_on = true;
    *out = g;
    return HEARTH_OK;
}

const char *hearth_engines_default_id(const hearth_engines *g) { return g->p.model_id; }

bool hearth_engines_pooled(const hearth_engines *g) { return g->p.resolve != NULL; }

static void deadline(struct timespec *ts, int ms) {
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

hearth_status hearth_engines_wait_default(hearth_engines *g, int timeout_ms, hearth_err *err) {
    struct timespec until;
    deadline(&until, timeout_ms);
    pthread_mutex_lock(&g->mu);
    unsigned seq = g->fail_seq;
    hearth_status st = HEARTH_OK;
    for (;;) {
        slot *s = find(g, g->p.model_id);
        if (s && s->state == S_READY) break;
        if (g->fail_seq != seq || !s) {
            st = hearth_err_set(err, HEARTH_E_IO, -1, "%s", g->fail_msg[0] ? g->fail_msg : "the engine is gone");
            break;
        }
        if (pthread_cond_timedwait(&g->cv, &g->mu, &until) == ETIMEDOUT) {
            st = hearth_err_set(err, HEARTH_E_IO, -1, "the engine did not start within %d s", timeout_ms / 1000);
            break;
        }
    }
    pthread_mutex_unlock(&g->mu);
    return st;
}

bool hearth_engines_acquire(hearth_engines *g, const char *model, hearth_engine_lease *l, hearth_api_err *e,
                            int *retry_after_s) {
    char id[256], path[1024];
    /* without a pool the request's model name is not a choice (as in-process: it is echoed, not
     * checked); with one it picks the engine */
    bool is_default = !model || !*model || !strcmp(model, g->p.model_id) || !g->p.resolve;
    if (is_default) {
        snprintf(id, sizeof id, "%s", g->p.model_id);
        snprintf(path, sizeof path, "%s", g->p.model_path);
    } else {
        pthread_mutex_lock(&g->mu);
        slot *known = find(g, model);
        if (known) {
            snprintf(id, sizeof id, "%s", known->id);
            snprintf(path, sizeof path, "%s", known->path);
        }
        pthread_mutex_unlock(&g->mu);
        if (!known && !(g->p.resolve && g->p.resolve(g->p.resolve_cls, model, id, sizeof id, path, sizeof path)))
            return hearth_api_fail(e, HEARTH_E_NOTFOUND, "model_not_found", "model",
                                   "The model '%.120s' does not exist: this server serves '%.120s'%s", model,
                                   g->p.model_id,
                                   " and the models of its store (GET /v1/models lists them)");
        is_default = !strcmp(id, g->p.model_id);
    }
    /* a model with no child yet: what it needs, and is it over the budget on its own? */
    hearth_engines_need need = {0};
    pthread_mutex_lock(&g->mu);
    bool resident = find(g, id) != NULL;
    pthread_mutex_unlock(&g->mu);
    bool have_need = !resident;
    if (have_need && !need_of(g, id, path, &need, e)) return false;
    struct timespec until;
    deadline(&until, g->p.start_timeout_s * 1000 + 5000);
    pthread_mutex_lock(&g->mu);
    unsigned seq = g->fail_seq;
    bool ok = false;
    for (;;) {
        slot *s = find(g, id);
        if (s && s->state == S_READY) {
            s->in_flight++;
            s->last_used_ms = now_ms();
            l->slot = (int)(s - g->s);
            l->gen = s->gen;
            l->pid = s->pid;
            memcpy(l->sock, s->sock, sizeof l->sock);
            snprintf(l->model_id, sizeof l->model_id, "%s", s->id);
            ok = true;
            break;
        }
        if (g->fail_seq != seq && !strcmp(g->fail_id, id)) {
            hearth_api_fail(e, HEARTH_E_TIMEOUT, "model_unavailable", "model", "%s", g->fail_msg);
            *retry_after_s = 5;
            break;
        }
        if (g->closing) {
            hearth_api_fail(e, HEARTH_E_TIMEOUT, "server_draining", NULL, "the server is stopping");
            *retry_after_s = 5;
            break;
        }
        if (!s && !have_need) { /* evicted while this request waited: estimate it now */
            pthread_mutex_unlock(&g->mu);
            bool ok_need = need_of(g, id, path, &need, e);
            pthread_mutex_lock(&g->mu);
            if (!ok_need) break;
            have_need = true;
            continue;
        }
        if (!s && want(g, id, path, is_default, &need)) continue;
        /* not ready, or no room yet: wait (the model's slot, if any, is not evicted meanwhile) */
        if (s) s->waiters++;
        int rc = pthread_cond_timedwait(&g->cv, &g->mu, &until);
        if (s) s->waiters--;
        if (rc == ETIMEDOUT) {
            hearth_api_fail(e, HEARTH_E_TIMEOUT, "engine_unavailable", "model",
                            "the engine of '%.200s' is not ready (starting or restarting); retry shortly", id);
            *retry_after_s = 2;
            break;
        }
    }
    pthread_mutex_unlock(&g->mu);
    return ok;
}

void hearth_engines_release(hearth_engines *g, const hearth_engine_lease *l) {
    pthread_mutex_lock(&g->mu);
    slot *s = &g->s[l->slot];
    if (s->gen == l->gen) {
        if (s->in_flight > 0) s->in_flight--;
        s->last_used_ms = now_ms();
    }
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

void hearth_engines_suspect(hearth_engines *g, const hearth_engine_lease *l) {
    pthread_mutex_lock(&g->mu);
    slot *s = &g->s[l->slot];
    if (s->gen == l->gen) s->suspect = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

bool hearth_engines_loaded(hearth_engines *g, const char *model_id) {
    pthread_mutex_lock(&g->mu);
    slot *s = find(g, model_id);
    bool on = s && s->state == S_READY;
    pthread_mutex_unlock(&g->mu);
    return on;
}

int hearth_engines_ready(hearth_engines *g, hearth_engine_addr *out, int cap) {
    int n = 0;
    pthread_mutex_lock(&g->mu);
    for (int pass = 0; pass < 2; pass++) /* the default model's first */
        for (int i = 0; i < MAX_SLOTS && n < cap; i++) {
            slot *s = &g->s[i];
            if (s->state != S_READY || s->is_default != (pass == 0)) continue;
            snprintf(out[n].model_id, sizeof out[n].model_id, "%s", s->id);
            snprintf(out[n].sock, sizeof out[n].sock, "%s", s->sock);
            n++;
        }
    pthread_mutex_unlock(&g->mu);
    return n;
}

long long hearth_engines_scrape_missed(hearth_engines *g, int n) {
    pthread_mutex_lock(&g->mu);
    long long t = g->scrape_missed += n;
    pthread_mutex_unlock(&g->mu);
    return t;
}

void hearth_engines_json(hearth_engines *g, hearth_jw *w) {
    pthread_mutex_lock(&g->mu);
    slot *d = find(g, g->p.model_id);
    hearth_jw_key(w, "engine_pid");
    hearth_jw_int(w, d ? d->pid : 0);
    hearth_jw_key(w, "model_pool");
    hearth_jw_int(w, g->p.pool_size);
    hearth_jw_key(w, "memory_budget");
    hearth_jw_int(w, g->p.memory_budget > 0 ? g->p.memory_budget : 0);
    hearth_jw_key(w, "engines");
    hearth_jw_arr(w);
    for (int i = 0; i < MAX_SLOTS; i++) {
        slot *s = &g->s[i];
        if (s->state == S_EMPTY) continue;
        hearth_jw_obj(w);
        hearth_jw_key(w, "model");
        hearth_jw_cstr(w, s->id);
        hearth_jw_key(w, "pid");
        hearth_jw_int(w, s->pid);
        hearth_jw_key(w, "state");
        hearth_jw_cstr(w, state_names[s->state]);
        hearth_jw_key(w, "in_flight");
        hearth_jw_int(w, s->in_flight);
        hearth_jw_key(w, "restarts");
        hearth_jw_int(w, s->restarts);
        hearth_jw_key(w, "memory_bytes");
        hearth_jw_int(w, s->mem_bytes);
        hearth_jw_key(w, "memory_measured");
        hearth_jw_bool(w, s->measured);
        hearth_jw_obj_end(w);
    }
    hearth_jw_arr_end(w);
    pthread_mutex_unlock(&g->mu);
}

void hearth_engines_destroy(hearth_engines *g, int timeout_ms) {
    if (!g) return;
    /* SIGTERM first, with the supervisor still running: a child's parent-death signal is tied
     * to the thread that spawned it, so the supervisor must outlive the children's own exits
     * (`serve` drains and writes its prompt cache to the SSD tier) */
    pthread_mutex_lock(&g->mu);
    g->closing = true;
    for (int i = 0; i < MAX_SLOTS; i++)
        if (g->s[i].pid > 0) kill(g->s[i].pid, SIGTERM);
    pthread_cond_broadcast(&g->cv);
    double until = now_ms() + timeout_ms;
    for (;;) {
        if (!g->thread_on) { /* no supervisor: reap here */
            for (int i = 0; i < MAX_SLOTS; i++)
                if (g->s[i].pid > 0 && waitpid(g->s[i].pid, NULL, WNOHANG) == g->s[i].pid) g->s[i].pid = 0;
        }
        if (!n_live(g)) break;
        if (now_ms() > until) {
            for (int i = 0; i < MAX_SLOTS; i++)
                if (g->s[i].pid > 0) kill(g->s[i].pid, SIGKILL);
            until = now_ms() + 5000; /* SIGKILL cannot be refused: reaped at the next ticks */
            timeout_ms = -1;
        }
        if (timeout_ms < 0 && now_ms() > until) break;
        struct timespec ts;
        deadline(&ts, 20);
        pthread_cond_timedwait(&g->cv, &g->mu, &ts);
    }
    g->stop = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    if (g->thread_on) pthread_join(g->thread, NULL);
    for (int i = 0; i < MAX_SLOTS; i++) /* anything left: reap it now */
        if (g->s[i].pid > 0) {
            kill(g->s[i].pid, SIGKILL);
            waitpid(g->s[i].pid, NULL, 0);
            unlink(g->s[i].sock);
        }
    if (g->responses[0]) { /* stored responses live as long as the server, as in one process */
        hearth_resp_disk_clear(g->responses);
        rmdir(g->responses);
    }
    if (g->dir[0]) rmdir(g->dir);
    free_argv(g->argv_common);
    free_argv(g->argv_default);
    free((char *)g->p.exe);
    free((char *)g->p.model_id);
    free((char *)g->p.model_path);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g);
}
