/*
 * bench_engine.c - the engine's scheduler under concurrent load, on a real model.
 *
 * Not built by CMake. From the repo root, against a built hearth_core:
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Isrc bench/bench_engine.c build/libhearth_core.a \
 *      -lxxhash -lutf8proc -lpcre2-8 -lpthread -lm -o build/bench_engine
 *   build/bench_engine MODEL.gguf [threads [gen_tokens [max_streams]]]   (defaults: 2, 64, 8)
 *
 * Reports, greedy with random prompts of 32 tokens:
 *   serial   a plain loop of hearth_forward over a contiguous cache, one token per step:
 *            the single-stream decode rate with no scheduler;
 *   streams  N concurrent requests through the engine (batch N): aggregate tok/s over the
 *            wall time from submit to the last DONE (prefill included), and the single-stream
 *            rate through the scheduler against the serial loop;
 *   prefix   time to first token of a request whose 2,000-token prefix an earlier request
 *            already computed, against the same request cold (prefix caching off).
 * Measurements, never assertions.
 */
#include "backend/backend.h"
#include "engine/engine.h"
#include "engine/kv.h"
#include "models/forward.h"

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
    hearth_backend *be = hearth_backend_cpu_create(threads, 64, width, 1024);
    hearth_fwd *f = hearth_fwd_create(m, be, 64);
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
    ep.kv_budget = (int64_t)hearth_kv_bytes_per_token(m, true) * n_ctx * (batch > 1 ? batch : 1);
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

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_engine MODEL.gguf [threads [gen_tokens [max_streams]]]\n");
        return 2;
    }
    int threads = argc > 2 ? atoi(argv[2]) : 2, gen = argc > 3 ? atoi(argv[3]) : 64;
    int max_streams = argc > 4 ? atoi(argv[4]) : 8;
    hearth_model *m = NULL;
    hearth_err err;
    if (hearth_model_load(argv[1], &m, &err)) {
        fprintf(stderr, "cannot load %s: %s\n", argv[1], err.msg);
        return 1;
    }
    double serial = serial_loop(m, threads, gen);
    printf("serial loop          1 stream   %7.1f tok/s\n", serial);
    double single = 0;
    for (int n = 1; n <= max_streams; n *= 2) {
        hearth_engine *e = engine(m, threads, n, 256, -1);
        if (!e) return 1;
        hearth_request **r = calloc((size_t)n, sizeof *r);
        int32_t p[32];
        double t0 = now_s();
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < 32; j++) p[j] = rnd_tok();
            hearth_request_params rp = {.prompt = p, .n_prompt = 32, .max_tokens = gen,
                                        .sampling = hearth_sampler_params_default(), .ignore_eog = true};
            hearth_engine_submit(e, &rp, &r[i], &err);
        }
        long total = 0;
        double decode_ms = 0;
        for (int i = 0; i < n; i++) {
            hearth_event d = wait_done(r[i]);
            total += d.n_generated;
            decode_ms += d.decode_ms / (d.n_generated > 1 ? d.n_generated - 1 : 1);
            hearth_request_release(r[i]);
        }
        double wall = now_s() - t0;
        printf("engine, batch %-2d   %2d streams  %7.1f tok/s aggregate (wall, prefill included)", n, n,
               (double)total / wall);
        if (n == 1) {
            single = 1000.0 / decode_ms;
            printf("; decode %.1f tok/s = %.3f x serial loop", single, single / serial);
        } else {
            printf("; %.2f x one stream", (double)total / wall / single);
        }
        printf("\n");
        free(r);
        hearth_engine_destroy(e);
    }
    /* prefix: 2,000 shared tokens + 16 own */
    enum { PRE = 2000, OWN = 16 };
    int32_t *p = malloc((PRE + OWN) * sizeof(int32_t));
    for (int j = 0; j < PRE + OWN; j++) p[j] = rnd_tok();
    double ttft[2];
    for (int warm = 0; warm < 2; warm++) {
        hearth_engine *e = engine(m, threads, 2, 4096, warm ? -1 : 0);
        hearth_request_params rp = {.prompt = p, .n_prompt = PRE + OWN, .max_tokens = 1,
                                    .sampling = hearth_sampler_params_default(), .ignore_eog = true};
        hearth_request *r = NULL;
        hearth_engine_submit(e, &rp, &r, &err); /* the earlier request */
        wait_done(r);
        hearth_request_release(r);
        for (int j = PRE; j < PRE + OWN; j++) p[j] = rnd_tok(); /* a different tail */
        hearth_engine_submit(e, &rp, &r, &err);
        hearth_event d = wait_done(r);
        ttft[warm] = d.prefill_ms;
        printf("prefix %s: time to first token %.1f ms, %d prompt tokens cached\n", warm ? "warm" : "cold",
               d.prefill_ms, d.n_cached);
        hearth_request_release(r);
        hearth_engine_destroy(e);
    }
    printf("prefix hit / cold = %.3f\n", ttft[1] / ttft[0]);
    free(p);
    hearth_model_destroy(m);
    return 0;
}
