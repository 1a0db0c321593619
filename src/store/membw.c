/*
 * membw.c - the machine's memory read bandwidth, measured STREAM-style and cached; see fit.h.
 * The figure feeds fit's decode prediction: decoding one token streams the weights once.
 */
#include "store/fit.h"

#include "base/thread.h"
#include "store/hub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { MEMBW_PASSES = 5, MEMBW_MAX_AGE_DAYS = 30 };
#define MEMBW_BUFFER_BYTES ((int64_t)256 << 20)

typedef struct {
    const uint64_t *words;
    size_t          n_words;
    uint64_t        sums[64 * 8]; /* one cache line per thread, so threads do not share lines */
} read_job;

static void read_slice(void *arg, int ith, int nth) {
    read_job *j = arg;
    size_t per = j->n_words / (size_t)nth, a = per * (size_t)ith, b = ith == nth - 1 ? j->n_words : a + per;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = a;
    for (; i + 4 <= b; i += 4) {
        s0 += j->words[i];
        s1 += j->words[i + 1];
        s2 += j->words[i + 2];
        s3 += j->words[i + 3];
    }
    for (; i < b; i++) s0 += j->words[i];
    if (ith < 64) j->sums[ith * 8] = s0 + s1 + s2 + s3; /* keeps the loads alive */
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

double hearth_membw_measure(int n_threads, int64_t buffer_bytes) {
    if (buffer_bytes < (1 << 20)) return 0;
    read_job *j = calloc(1, sizeof *j);
    uint64_t *buf = aligned_alloc(64, (size_t)buffer_bytes);
    hearth_pool *pool = hearth_pool_create(n_threads);
    double best = 0;
    if (!j || !buf || !pool) goto done;
    j->words = buf;
    j->n_words = (size_t)buffer_bytes / 8;
    for (size_t i = 0; i < j->n_words; i++) buf[i] = i; /* fault the pages in */
    hearth_pool_run(pool, read_slice, j);               /* warm-up */
    for (int pass = 0; pass < MEMBW_PASSES; pass++) {
        double t0 = now_s();
        hearth_pool_run(pool, read_slice, j);
        double dt = now_s() - t0;
        if (dt > 0 && (double)buffer_bytes / dt > best) best = (double)buffer_bytes / dt;
    }
done:
    hearth_pool_destroy(pool);
    free(buf);
    free(j);
    return best;
}

static void today(char *buf, size_t n, time_t t) {
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%d", &tm);
}

/* Parse the cache file; false when missing, malformed, stale or for another CPU count. */
static bool read_cache(const char *path, int n_threads, hearth_membw *out) {
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char line[256];
    double bw = 0;
    long long thr = 0, buf = 0;
    char date[16] = "";
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "bytes_per_s=", 12)) bw = strtod(line + 12, NULL);
        else if (!strncmp(line, "threads=", 8)) thr = strtoll(line + 8, NULL, 10);
        else if (!strncmp(line, "buffer_bytes=", 13)) buf = strtoll(line + 13, NULL, 10);
        else if (!strncmp(line, "date=", 5)) snprintf(date, sizeof date, "%.10s", line + 5);
    }
    fclose(f);
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    if (!(bw > 0) || thr != n_threads || strlen(date) != 10 ||
        sscanf(date, "%d-%d-%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday) != 3)
        return false;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    tm.tm_isdst = -1;
    time_t then = mktime(&tm);
    double age_days = difftime(time(NULL), then) / 86400.0;
    if (then == (time_t)-1 || age_days > MEMBW_MAX_AGE_DAYS || age_days < -1) return false;
    out->bytes_per_s = bw;
    out->n_threads = (int)thr;
    out->buffer_bytes = buf;
    snprintf(out->date, sizeof out->date, "%s", date);
    return true;
}

bool hearth_membw_cached(hearth_membw *out) {
    memset(out, 0, sizeof *out);
    char dir[4096];
    if (!hearth_hub_state_dir(dir, sizeof dir) || snprintf(out->path, sizeof out->path, "%s/membw", dir) >= (int)sizeof out->path)
        return false;
    out->from_cache = read_cache(out->path, hearth_cpu_count(), out);
    return out->from_cache;
}

hearth_status hearth_membw_get(bool remeasure, hearth_membw *out, hearth_err *err) {
    memset(out, 0, sizeof *out);
    char dir[4096];
    if (!hearth_hub_state_dir(dir, sizeof dir) || snprintf(out->path, sizeof out->path, "%s/membw", dir) >= (int)sizeof out->path)
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "the hearth state directory path is too long");
    int n_threads = hearth_cpu_count();
    if (!remeasure && read_cache(out->path, n_threads, out)) {
        out->from_cache = true;
        return HEARTH_OK;
    }
    out->n_threads = n_threads;
    out->buffer_bytes = MEMBW_BUFFER_BYTES;
    out->bytes_per_s = hearth_membw_measure(n_threads, MEMBW_BUFFER_BYTES);
    if (!(out->bytes_per_s > 0)) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "cannot measure memory bandwidth");
    today(out->date, sizeof out->date, time(NULL));
    /* cache it (best effort: a read-only home still gets a figure) */
    hearth_status st = hearth_hub_mkdirs(dir, NULL);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", out->path, (int)getpid());
    FILE *f = st == HEARTH_OK ? fopen(tmp, "w") : NULL;
    if (f) {
        fprintf(f, "# hearth: memory read bandwidth, %d threads summing a %lld-byte buffer, best of %d passes\n",
                n_threads, (long long)out->buffer_bytes, MEMBW_PASSES);
        fprintf(f, "bytes_per_s=%.0f\nthreads=%d\nbuffer_bytes=%lld\ndate=%s\n", out->bytes_per_s, n_threads,
                (long long)out->buffer_bytes, out->date);
        if (fclose(f) != 0 || rename(tmp, out->path) != 0) unlink(tmp);
    }
    return HEARTH_OK;
}
