/*
 * bench_engine.c - the engine's scheduler under concurrent load, on a real model.
 *
 * Built on demand (CMake target bench_engine, linked as the tests are); `make bench-engine`
 * builds and runs it (bench/README.md). Usage:
 *   build/bench_engine MODEL.gguf [threads [gen_tokens [repeats [what]]]]   (defaults: 2, 64, 3, all)
 *   what: all | streams | streams=N (N streams alone, for profiling) | prefix | serial
 *
 * Reports, greedy with random prompts of 32 tokens, the median over `repeats` runs (and every
 * run), with the load average before and after:
 *   serial   a plain loop of hearth_forward over a contiguous cache, one token per step: the
 *            single-stream decode rate with no scheduler; and one request through the engine
 *            (batch 1): its decode rate (tokens after the first / time after the first) as a
 *            ratio to the loop's;
 *   streams  N = 1, 2, 4, 8, 16 concurrent requests through the engine (batch N): aggregate
 *            decode tok/s = tokens after each stream's first / the longest stream's decode time,
 *            and the ratio to one stream;
 *   prefix   time to first token of a request whose 2,000-token prefix an earlier request
 *            already computed (16 own tokens), against the same request cold (caching off).
 * Measurements, never assertions.
 */
#include "backend/backend.h"
#include "engine/engine.h"
#include "support/kv.h"
#include "models/forward.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint32_t rng = 12345;
static int32_t rnd_tok(void) {
    rng = rng * 1664525u + 1013904223u;
    return 100 + (int32_t)((rng >> 8) % 10000);
}

static int32_t argmax(const float *x, int32_t n) {
    int32_t b = 0;
    for (int32_t i = 1; i < n; i++) if (x[i] > x[b]) b = i;
    return b;
}

/* tokens/s of a plain decode loop: prefill 32, then gen tokens one by one */
static double serial_loop(const hearth_model *m, int threads, int gen) {
    const hearth_hparams *hp = hearth_model_hparams(m);
    int64_t width = hp->n_ff > hp->n_embd ? hp->n_ff : hp->n_embd;
    hearth_backend *be = hearth_backend_cpu_create(threads, 64, width, 1024, NULL);
    hearth_fwd *f = hearth_fwd_create(m, be, 64, NULL);
    hearth_kv *kv = NULL;
    hearth_err err;
    hearth_kv_create(m, 1, 1024, true, &kv, &err);
    float *logits = malloc((size_t)hp->n_vocab * sizeof(float));
    int32_t tok[32], pos[32], seq[32] = {0};
    for (int i = 0; i < 32; i++) tok[i] = rnd_tok(), pos[i] = i;
    hearth_batch b = {.n_tokens = 32, .token = tok, .pos = pos, .seq = seq};
    hearth_forward(f, &b, hearth_kv_view_of(kv), logits);
    double t0 = now_s();
    for (int i = 0; i < gen; i++) {
        tok[0] = argmax(logits, hp->n_vocab);
        pos[0] = 32 + i;
        b.n_tokens = 1;
        hearth_forward(f, &b, hearth_kv_view_of(kv), logits);
    }
    double rate = gen / (now_s() - t0);
    free(logits);
    hearth_kv_destroy(kv);
    hearth_fwd_destroy(f);
    hearth_backend_destroy(be);
    return rate;
}

static hearth_engine *engine(const hearth_model *m, int threads, int batch, int32_t n_ctx, int64_t prompt_cache) {
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_threads = threads;
    ep.batch = batch;
    ep.n_ctx = n_ctx;
    ep.prompt_cache = prompt_cache;
    ep.kv_budget = (int64_t)hearth_kv_bytes_per_token(m, HEARTH_KV_SCHEME_F16) * n_ctx * (batch > 1 ? batch : 1);
    hearth_engine *e = NULL;
    hearth_err err;
    if (hearth_engine_create(m, &ep, &e, &err)) fprintf(stderr, "engine: %s\n", err.msg);
    return e;
}

static hearth_event wait_done(hearth_request *r) {
    hearth_event ev;
    do hearth_request_next(r, &ev, -1);
    while (ev.kind != HEARTH_EV_DONE);
    return ev;
}

static double median(double *x, int n) {
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && x[j] < x[j - 1]; j--) {
            double t = x[j];
            x[j] = x[j - 1];
            x[j - 1] = t;
        }
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

static void loadavg(const char *when) {
    char buf[128] = "?";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (!fgets(buf, sizeof buf, f)) buf[0] = 0;
        fclose(f);
    }
    printf("load average %s: %s", when, buf);
    if (!strchr(buf, '\n')) printf("\n");
}

/* Aggregate decode tok/s of n concurrent requests through an engine of batch n. */
static double streams(const hearth_model *m, int threads, int n, int gen) {
    hearth_engine *e = engine(m, threads, n, 256, -1);
    if (!e) return 0;
    hearth_request **r = calloc((size_t)n, sizeof *r);
    hearth_err err;
    int32_t p[32];
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < 32; j++) p[j] = rnd_tok();
        hearth_request_params rp = {.prompt = p, .n_prompt = 32, .max_tokens = gen,
                                    .sampling = hearth_sampler_params_default(), .ignore_eog = true};
        rp.sampling.temperature = 0;
        hearth_engine_submit(e, &rp, &r[i], &err);
    }
    long tokens = 0;
    double longest = 0;
    for (int i = 0; i < n; i++) {
        hearth_event d = wait_done(r[i]);
        tokens += d.n_generated - 1;
        if (d.decode_ms > longest) longest = d.decode_ms;
        hearth_request_release(r[i]);
    }
    free(r);
    hearth_engine_destroy(e);
    return longest > 0 ? (double)tokens / (longest / 1000.0) : 0;
}

/* Time to first token (ms) of a request sharing a 2,000-token prefix with an earlier one. */
static double prefix_ttft(const hearth_model *m, int threads, bool warm, int32_t *n_cached) {
    enum { PRE = 2000, OWN = 16 };
    int32_t *p = malloc((PRE + OWN) * sizeof(int32_t));
    for (int j = 0; j < PRE + OWN; j++) p[j] = rnd_tok();
    hearth_engine *e = engine(m, threads, 2, 4096, warm ? -1 : 0);
    hearth_request_params rp = {.prompt = p, .n_prompt = PRE + OWN, .max_tokens = 1,
                                .sampling = hearth_sampler_params_default(), .ignore_eog = true};
    hearth_request *r = NULL;
    hearth_err err;
    hearth_engine_submit(e, &rp, &r, &err); /* the earlier request */
    wait_done(r);
    hearth_request_release(r);
    for (int j = PRE; j < PRE + OWN; j++) p[j] = rnd_tok(); /* a different tail */
    hearth_engine_submit(e, &rp, &r, &err);
    hearth_event d = wait_done(r);
    *n_cached = d.n_cached;
    hearth_request_release(r);
    hearth_engine_destroy(e);
    free(p);
    return d.prefill_ms;
}

enum { MAX_REP = 15 };

static void report(const char *what, double *x, int n, const char *unit) {
    printf("%-34s", what);
    for (int i = 0; i < n; i++) printf(" %8.1f", x[i]);
    printf("   median %8.1f %s\n", median(x, n), unit);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_engine MODEL.gguf [threads [gen_tokens [repeats [all|streams|streams=N|prefix|serial]]]]\n");
        return 2;
    }
    int threads = argc > 2 ? atoi(argv[2]) : 2, gen = argc > 3 ? atoi(argv[3]) : 64;
    int reps = argc > 4 ? atoi(argv[4]) : 3;
    const char *what = argc > 5 ? argv[5] : "all";
    if (reps < 1) reps = 1;
    if (reps > MAX_REP) reps = MAX_REP;
    bool all = !strcmp(what, "all");
    setvbuf(stdout, NULL, _IOLBF, 0); /* each figure as it comes, also into a file */
    hearth_model *m = NULL;
    hearth_err err;
    if (hearth_model_load(argv[1], &m, &err)) {
        fprintf(stderr, "cannot load %s: %s\n", argv[1], err.msg);
        return 1;
    }
    printf("model %s, %d threads, %d tokens per stream, %d runs\n", hearth_model_name(m), threads, gen, reps);
    loadavg("before");
    double x[MAX_REP], y[MAX_REP], ratio[MAX_REP];
    if (all || !strcmp(what, "serial")) {
        for (int i = 0; i < reps; i++) {
            x[i] = serial_loop(m, threads, gen);
            y[i] = streams(m, threads, 1, gen);
            ratio[i] = y[i] / x[i];
        }
        report("serial loop, tok/s", x, reps, "tok/s");
        report("one request via the engine, tok/s", y, reps, "tok/s");
        for (int i = 0; i < reps; i++) ratio[i] *= 1000; /* shown in thousandths */
        report("engine / serial loop (x1000)", ratio, reps, "");
    }
    if (all || !strncmp(what, "streams", 7)) {
        double one = 0;
        int only = what[7] == '=' ? atoi(what + 8) : 0; /* streams=N: that count alone (profiling) */
        for (int n = only > 0 ? only : 1; n <= (only > 0 ? only : 16); n *= 2) {
            for (int i = 0; i < reps; i++) x[i] = streams(m, threads, n, gen);
            char label[64];
            snprintf(label, sizeof label, "%2d streams, aggregate decode tok/s", n);
            report(label, x, reps, "tok/s");
            double med = median(x, reps);
            if (n == 1) one = med;
            else if (one > 0) printf("%-34s %.2f x one stream\n", "", med / one);
        }
    }
    if (all || !strcmp(what, "prefix")) {
        int32_t cached = 0;
        for (int i = 0; i < reps; i++) {
            x[i] = prefix_ttft(m, threads, false, &cached);
            y[i] = prefix_ttft(m, threads, true, &cached);
            ratio[i] = 1000 * y[i] / x[i];
        }
        report("TTFT cold, ms", x, reps, "ms");
        report("TTFT sharing a 2,000-token prefix", y, reps, "ms");
        report("shared / cold (x1000)", ratio, reps, "");
        printf("(%d prompt tokens came from the cache)\n", cached);
    }
    loadavg("after");
    hearth_model_destroy(m);
    return 0;
}
