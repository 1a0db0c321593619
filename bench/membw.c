/*
 * membw.c - the machine's memory read bandwidth, STREAM-style: the roofline that decode speed
 * is held against in bench/speed.py (decoding one token streams every weight once).
 *
 * Each of N threads first writes its own slice of one buffer (first touch places the pages
 * near it), then all threads read their slices in passes, summing 32-byte vectors into four
 * independent accumulators so the loads, not the adds, set the pace. A pass starts behind a
 * barrier and ends when the slowest thread is done; the rate is buffer bytes / pass time. The
 * buffer (default 512 MiB) is far larger than any last-level cache, so the figure is DRAM's.
 *
 * Built by `make bench` (cc -O3 -march=native -pthread); run alone:
 *   build/membw [threads [MiB [passes]]]      (defaults: 1, 512, 7)
 * Prints one JSON object: threads, bytes, best and median GB/s (1 GB = 1e9 bytes) over passes.
 * A measurement, never an assertion.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef uint64_t v4u64 __attribute__((vector_size(32)));

typedef struct {
    int               ith, nth, passes;
    const v4u64      *slice;    /* borrowed: this thread's part of the buffer */
    size_t            n_vec;
    pthread_barrier_t *bar;
    double           *t_pass;   /* [passes] written by thread 0 */
    uint64_t          sink;     /* keeps the loads alive */
} worker;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *run(void *arg) {
    worker *w = arg;
    v4u64 *p = (v4u64 *)w->slice;
    for (size_t i = 0; i < w->n_vec; i++) p[i] = (v4u64){i, i + 1, i + 2, i + 3}; /* first touch */
    uint64_t sink = 0;
    for (int pass = -1; pass < w->passes; pass++) { /* pass -1 warms up */
        pthread_barrier_wait(w->bar);
        double t0 = now_s();
        v4u64 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
        size_t i = 0;
        for (; i + 4 <= w->n_vec; i += 4) {
            a0 += w->slice[i];
            a1 += w->slice[i + 1];
            a2 += w->slice[i + 2];
            a3 += w->slice[i + 3];
        }
        for (; i < w->n_vec; i++) a0 += w->slice[i];
        v4u64 s = a0 + a1 + a2 + a3;
        sink += s[0] + s[1] + s[2] + s[3];
        pthread_barrier_wait(w->bar);
        if (w->ith == 0 && pass >= 0) w->t_pass[pass] = now_s() - t0;
    }
    w->sink = sink;
    return NULL;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int nth = argc > 1 ? atoi(argv[1]) : 1;
    long mib = argc > 2 ? atol(argv[2]) : 512;
    int passes = argc > 3 ? atoi(argv[3]) : 7;
    if (nth < 1 || nth > 256 || mib < 16 || passes < 1 || passes > 1000) {
        fprintf(stderr, "usage: membw [threads (1..256) [MiB (>= 16) [passes (1..1000)]]]\n");
        return 2;
    }
    size_t bytes = (size_t)mib << 20, n_vec = bytes / sizeof(v4u64);
    v4u64 *buf = aligned_alloc(64, bytes);
    worker *ws = calloc((size_t)nth, sizeof *ws);
    pthread_t *th = calloc((size_t)nth, sizeof *th);
    double *t_pass = calloc((size_t)passes, sizeof *t_pass);
    if (!buf || !ws || !th || !t_pass) {
        fprintf(stderr, "membw: out of memory\n");
        return 1;
    }
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)nth);
    for (int i = 0; i < nth; i++) {
        size_t a = n_vec * (size_t)i / (size_t)nth, b = n_vec * (size_t)(i + 1) / (size_t)nth;
        ws[i] = (worker){.ith = i, .nth = nth, .passes = passes, .slice = buf + a, .n_vec = b - a, .bar = &bar,
                         .t_pass = t_pass};
        if (pthread_create(&th[i], NULL, run, &ws[i]) != 0) {
            fprintf(stderr, "membw: cannot start thread %d\n", i);
            return 1;
        }
    }
    uint64_t sink = 0;
    for (int i = 0; i < nth; i++) {
        pthread_join(th[i], NULL);
        sink += ws[i].sink;
    }
    qsort(t_pass, (size_t)passes, sizeof *t_pass, cmp_d);
    double best = (double)bytes / t_pass[0] / 1e9, med = (double)bytes / t_pass[passes / 2] / 1e9;
    printf("{\"threads\": %d, \"bytes\": %zu, \"passes\": %d, \"best_gbps\": %.3f, \"median_gbps\": %.3f, "
           "\"checksum\": %llu}\n",
           nth, bytes, passes, best, med, (unsigned long long)(sink & 0xffff));
    pthread_barrier_destroy(&bar);
    free(t_pass);
    free(th);
    free(ws);
    free(buf);
    return 0;
}
