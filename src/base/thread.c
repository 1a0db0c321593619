/*
 * thread.c - fork-join pool: a generation counter publishes each job; workers spin on it for a
 * short while, then sleep on cv. Completion is an atomic count the caller spins on (jobs are
 * short and the caller has done its own share by then).
 *
 * A decode step issues a few jobs per layer, each tens of microseconds long, so the publish
 * path must cost next to nothing while the workers spin: the caller takes the mutex and
 * signals cv only when a worker has announced (n_sleeping, under the mutex) that it is about
 * to sleep. Both sides use seq_cst for that handshake: either the caller sees the announcement
 * and signals, or the worker sees the new generation and does not wait. The words each side
 * spins on sit on their own cache lines, so a spinning thread does not steal the line the
 * other is writing.
 */
#include "base/thread.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* pause is ~23 ns on the Zen 5 dev box (10-150 cycles elsewhere). A worker spins ~0.4 ms before it
 * sleeps: a decode step's gaps between jobs (sampling over a 262k vocabulary, the engine's
 * bookkeeping) outlast 23 us, and a sleeping worker costs a futex wake on the next job (1-3 a
 * token before: 491 -> 32 wakes in a SmolLM2 `hearth benchmark` at 2 threads, 1566 -> 49 for
 * Gemma 3). The caller waiting for the workers yields after ~23 us. */
enum { WORKER_SPIN = 1 << 14, WAIT_SPIN = 1 << 10 };

#define CACHE_LINE 64

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

typedef struct {
    hearth_pool *pool; /* borrowed */
    int          ith;
} worker;

struct hearth_pool {
    int              nth;
    pthread_t       *threads; /* owned: nth - 1 */
    worker          *workers; /* owned: nth - 1 */
    pthread_mutex_t  mu;
    pthread_cond_t   cv;
    hearth_pool_fn   fn;      /* current job; written before gen is bumped */
    void            *arg;
    _Atomic bool     stop;
    _Alignas(CACHE_LINE) _Atomic uint64_t gen; /* bumped once per job; workers spin on it */
    _Atomic int      n_sleeping;               /* workers in (or entering) cond_wait */
    _Alignas(CACHE_LINE) _Atomic int n_done;   /* workers finished with the current job */
    _Alignas(CACHE_LINE) _Atomic int bar_count; /* barrier arrivals in the current phase */
    _Alignas(CACHE_LINE) _Atomic int bar_phase;
};

int hearth_cpu_count(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static void *worker_main(void *p) {
    worker *w = p;
    hearth_pool *pool = w->pool;
    pthread_setname_np(pthread_self(), "hearth-compute");
    uint64_t seen = 0;
    for (;;) {
        uint64_t g = atomic_load_explicit(&pool->gen, memory_order_acquire);
        for (int i = 0; g == seen && i < WORKER_SPIN; i++) {
            if (atomic_load_explicit(&pool->stop, memory_order_relaxed)) return NULL;
            cpu_relax();
            g = atomic_load_explicit(&pool->gen, memory_order_acquire);
        }
        if (g == seen) {
            pthread_mutex_lock(&pool->mu);
            atomic_fetch_add(&pool->n_sleeping, 1); /* seq_cst: before the gen check below */
            while ((g = atomic_load(&pool->gen)) == seen &&
                   !atomic_load_explicit(&pool->stop, memory_order_relaxed))
                pthread_cond_wait(&pool->cv, &pool->mu);
            atomic_fetch_sub(&pool->n_sleeping, 1);
            pthread_mutex_unlock(&pool->mu);
        }
        if (atomic_load_explicit(&pool->stop, memory_order_relaxed)) return NULL;
        seen = g;
        pool->fn(pool->arg, w->ith, pool->nth);
        atomic_fetch_add_explicit(&pool->n_done, 1, memory_order_release);
    }
}

hearth_pool *hearth_pool_create(int n_threads) {
    if (n_threads <= 0) n_threads = hearth_cpu_count();
    hearth_pool *pool = aligned_alloc(CACHE_LINE, sizeof *pool); /* sizeof is a multiple of it */
    if (!pool) return NULL;
    memset(pool, 0, sizeof *pool);
    pool->nth = n_threads;
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->cv, NULL);
    if (n_threads > 1) {
        pool->threads = calloc((size_t)n_threads - 1, sizeof *pool->threads);
        pool->workers = calloc((size_t)n_threads - 1, sizeof *pool->workers);
        if (!pool->threads || !pool->workers) goto fail;
        for (int i = 0; i < n_threads - 1; i++) {
            pool->workers[i].pool = pool;
            pool->workers[i].ith = i + 1;
            if (pthread_create(&pool->threads[i], NULL, worker_main, &pool->workers[i]) != 0) {
                pool->nth = i + 1; /* join only those started */
                goto fail;
            }
        }
    }
    return pool;
fail:
    hearth_pool_destroy(pool);
    return NULL;
}

void hearth_pool_destroy(hearth_pool *pool) {
    if (!pool) return;
    pthread_mutex_lock(&pool->mu);
    atomic_store_explicit(&pool->stop, true, memory_order_relaxed);
    pthread_cond_broadcast(&pool->cv);
    pthread_mutex_unlock(&pool->mu);
    if (pool->threads)
        for (int i = 0; i < pool->nth - 1; i++) pthread_join(pool->threads[i], NULL);
    pthread_mutex_destroy(&pool->mu);
    pthread_cond_destroy(&pool->cv);
    free(pool->threads);
    free(pool->workers);
    free(pool);
}

int hearth_pool_size(const hearth_pool *pool) { return pool ? pool->nth : 1; }

void hearth_pool_run(hearth_pool *pool, hearth_pool_fn fn, void *arg) {
    if (!pool || pool->nth == 1) {
        fn(arg, 0, 1);
        return;
    }
    pool->fn = fn;
    pool->arg = arg;
    atomic_store_explicit(&pool->n_done, 0, memory_order_relaxed);
    atomic_store_explicit(&pool->bar_count, 0, memory_order_relaxed);
    atomic_fetch_add(&pool->gen, 1); /* seq_cst: before the n_sleeping check */
    if (atomic_load(&pool->n_sleeping) > 0) {
        pthread_mutex_lock(&pool->mu);
        pthread_cond_broadcast(&pool->cv);
        pthread_mutex_unlock(&pool->mu);
    }
    fn(arg, 0, pool->nth);
    for (int i = 0; atomic_load_explicit(&pool->n_done, memory_order_acquire) != pool->nth - 1; i++) {
        if (i > WAIT_SPIN) sched_yield();
        else cpu_relax();
    }
}

void hearth_pool_barrier(hearth_pool *pool) {
    if (!pool || pool->nth == 1) return;
    int phase = atomic_load_explicit(&pool->bar_phase, memory_order_acquire);
    if (atomic_fetch_add_explicit(&pool->bar_count, 1, memory_order_acq_rel) == pool->nth - 1) {
        atomic_store_explicit(&pool->bar_count, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&pool->bar_phase, 1, memory_order_release);
        return;
    }
    for (int i = 0; atomic_load_explicit(&pool->bar_phase, memory_order_acquire) == phase; i++) {
        if (i > WAIT_SPIN) sched_yield();
        else cpu_relax();
    }
}
