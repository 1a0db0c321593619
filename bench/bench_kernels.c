/*
 * bench_kernels.c - vec_dot and matmul throughput per weight type and kernel set.
 *
 * Not built by CMake. From the repo root, against a built hearth_core:
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Isrc bench/bench_kernels.c build/libhearth_core.a \
 *      -lpcre2-8 -lpthread -lm -o build/bench_kernels
 *   build/bench_kernels [threads [set [n_tok]]]     (defaults: all CPUs, every set, 17)
 *
 * For each type and set it reports weight-bytes GB/s of
 *   hot     vec_dot over one 4096-wide row that stays in L1 (the kernel's compute speed),
 *   stream  vec_dot over a 64 MiB-class matrix, row after row (the memory-bound decode case),
 *   mm1     hearth_matmul of a 4096x4096 matrix with n_tok = 1 on the pool (decode),
 * and GFLOP/s of mmN, hearth_matmul with n_tok = N (17: a small prefill chunk). A checksum of the
 * outputs is printed with each line (SQLite speedtest1 --verify): equal across sets up to
 * rounding. Timings are medians of a few runs; they are measurements, never assertions.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/thread.h"
#include "kernels/kernels.h"
#include "tensor/dtype.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng = 88172645463325252ull;
static float rnd_unit(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)(rng >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}

static void *xalloc(size_t n) {
    void *p = aligned_alloc(64, (n + 63) & ~(size_t)63);
    if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
    return p;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    hearth_type t;
    const hearth_kernel_traits *tr;
    const uint8_t *w;
    size_t row_bytes;
    int64_t n_in, n_rows;
    const void *act;
    float sum;
} dot_job;

enum { N_IN = 4096, N_OUT = 4096, REPS = 5 };

int main(int argc, char **argv) {
    int nth = argc > 1 ? atoi(argv[1]) : hearth_cpu_count();
    const char *only = argc > 2 ? argv[2] : NULL;
    int64_t n_tok = argc > 3 ? atoi(argv[3]) : 17;
    if (nth < 1 || n_tok < 1 || n_tok > 512) { fprintf(stderr, "bad arguments\n"); return 1; }
    hearth_pool *pool = hearth_pool_create(nth);
    static const hearth_type types[] = {
        HEARTH_TYPE_F32,  HEARTH_TYPE_F16,  HEARTH_TYPE_BF16, HEARTH_TYPE_Q4_0, HEARTH_TYPE_Q4_1,
        HEARTH_TYPE_Q5_0, HEARTH_TYPE_Q5_1, HEARTH_TYPE_Q8_0, HEARTH_TYPE_Q4_K, HEARTH_TYPE_Q5_K,
        HEARTH_TYPE_Q6_K, HEARTH_TYPE_MLX4_G32, HEARTH_TYPE_MLX4_G64, HEARTH_TYPE_MLX8_G32,
        HEARTH_TYPE_MLX8_G64,
    };
    float *xf = xalloc((size_t)n_tok * N_IN * sizeof(float));
    for (int64_t i = 0; i < n_tok * N_IN; i++) xf[i] = rnd_unit();
    float *wf = xalloc((size_t)N_IN * sizeof(float));
    float *y = xalloc((size_t)n_tok * N_OUT * sizeof(float));
    printf("threads %d; GB/s of weight bytes (hot: one row in L1; stream: %dx%d matrix, 1 thread;"
           " mm1: matmul n_tok=1 on the pool), GFLOP/s of mm%lld\n",
           nth, N_OUT, N_IN, (long long)n_tok);
    printf("%-8s %-7s %8s %8s %8s %8s%-3lld %s\n", "type", "set", "hot", "stream", "mm1", "mm",
           (long long)n_tok, "checksum");
    for (size_t it = 0; it < sizeof types / sizeof types[0]; it++) {
        hearth_type t = types[it];
        size_t row_bytes = hearth_row_size(t, N_IN);
        uint8_t *w = xalloc(row_bytes * N_OUT);
        const hearth_kernel_traits *q = hearth_kernels_traits_isa(t, HEARTH_ISA_SCALAR);
        for (int64_t r = 0; r < N_OUT; r++) {
            for (int64_t i = 0; i < N_IN; i++) wf[i] = rnd_unit();
            q->from_float(wf, w + (size_t)r * row_bytes, N_IN);
        }
        for (int isa = 0; isa < HEARTH_ISA_COUNT; isa++) {
            if (only && strcmp(only, hearth_isa_name((hearth_isa)isa)) != 0) continue;
            if (!hearth_kernels_select((hearth_isa)isa)) continue;
            const hearth_kernel_traits *tr = hearth_kernels_traits(t);
            const hearth_kernel_traits *ta = hearth_kernels_traits(tr->vec_dot_type);
            void *act = xalloc(hearth_row_size(tr->vec_dot_type, N_IN));
            ta->from_float(xf, act, N_IN);
            double hot[REPS], stream[REPS], mm1[REPS], mmn[REPS];
            float s = 0, chk = 0;
            for (int rep = 0; rep < REPS; rep++) {
                int iters = isa == HEARTH_ISA_REF ? 200 : 4000;
                double t0 = now_s();
                for (int i = 0; i < iters; i++) tr->vec_dot(N_IN, &s, w, act);
                hot[rep] = (double)row_bytes * iters / (now_s() - t0) / 1e9;
                int64_t rows = isa == HEARTH_ISA_REF ? 256 : N_OUT;
                t0 = now_s();
                for (int64_t r = 0; r < rows; r++) {
                    tr->vec_dot(N_IN, &s, w + (size_t)r * row_bytes, act);
                    chk += s;
                }
                stream[rep] = (double)row_bytes * (double)rows / (now_s() - t0) / 1e9;
                size_t sb = hearth_matmul_scratch_bytes(t, N_IN, n_tok, nth);
                void *scratch = sb ? xalloc(sb) : NULL;
                t0 = now_s();
                hearth_matmul(pool, t, w, row_bytes, N_OUT, N_IN, xf, 1, y, N_OUT, scratch);
                mm1[rep] = (double)row_bytes * N_OUT / (now_s() - t0) / 1e9;
                t0 = now_s();
                hearth_matmul(pool, t, w, row_bytes, N_OUT, N_IN, xf, n_tok, y, N_OUT, scratch);
                mmn[rep] = 2.0 * N_OUT * N_IN * (double)n_tok / (now_s() - t0) / 1e9;
                free(scratch);
            }
            qsort(hot, REPS, sizeof(double), cmp_double);
            qsort(stream, REPS, sizeof(double), cmp_double);
            qsort(mm1, REPS, sizeof(double), cmp_double);
            qsort(mmn, REPS, sizeof(double), cmp_double);
            double ysum = 0;
            for (int64_t i = 0; i < n_tok * N_OUT; i++) ysum += y[i];
            printf("%-8s %-7s %8.2f %8.2f %8.2f %11.2f  %.6g\n", hearth_type_name((int)t),
                   hearth_isa_name((hearth_isa)isa), hot[REPS / 2], stream[REPS / 2], mm1[REPS / 2],
                   mmn[REPS / 2], ysum);
            free(act);
        }
        free(w);
    }
    hearth_pool_destroy(pool);
    free(xf);
    free(wf);
    free(y);
    return 0;
}
