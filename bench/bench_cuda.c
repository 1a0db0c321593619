/*
 * bench_cuda.c - hearth's decode, prefill and batched decode rates on a GPU (or the CPU), as
 * JSON lines for tools/cuda_h200.py, which runs PyTorch on the same checkpoint in the same run
 * and writes the table of bench/cuda-h200.md.
 *
 * Not built by CMake. From the repo root, against a hearth_core built with CUDA:
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Isrc -Itests bench/bench_cuda.c \
 *      build/libhearth_test_support.a build/libhearth_core.a \
 *      -lpcre2-8 -lcjson -lmicrohttpd -lcurl -lsqlite3 -lcrypto -lutf8proc -lxxhash \
 *      -L<cuda>/lib64 -lcudart -lcublas -lstdc++ -lpthread -lm -o build/bench_cuda
 *   build/bench_cuda MODEL.gguf [--device cuda|cpu] [--gen N] [--prefill N] [--streams N]
 *
 * Reports (greedy, random prompt tokens):
 *   decode   one sequence: a 32-token prompt, then gen steps of one token through
 *            hearth_forward_argmax (only the id leaves the device); ms per token after 8 warm-up
 *            steps, and the first 32 greedy ids (to compare kernel variants);
 *   prefill  one forward of a prefill-token prompt (logits of the last token only), after a
 *            warm-up forward of the same size;
 *   streams  N requests of 32 prompt tokens and gen new tokens each through the engine at batch
 *            N: aggregate generated tokens per second of wall time, prefill included.
 * Measurements, never assertions.
 */
#include "backend/backend.h"
#include "engine/engine.h"
#include "support/kv.h"
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

static hearth_backend *backend(const hearth_model *m, bool cuda, int32_t max_tok, int32_t n_ctx) {
    const hearth_hparams *hp = hearth_model_hparams(m);
    int64_t width = hp->n_ff > hp->n_embd ? hp->n_ff : hp->n_embd;
    hearth_err err = {0};
    hearth_backend *be = cuda ? hearth_backend_cuda_create(0, max_tok, NULL, &err)
                              : hearth_backend_cpu_create(0, max_tok, width, n_ctx, NULL);
    if (!be) fprintf(stderr, "backend: %s\n", err.msg);
    return be;
}

static void decode_and_prefill(const hearth_model *m, bool cuda, int gen, int prefill) {
    const hearth_hparams *hp = hearth_model_hparams(m);
    int32_t max_tok = prefill > 32 ? prefill : 32, n_ctx = max_tok + gen + 64;
    hearth_backend *be = backend(m, cuda, max_tok, n_ctx);
    if (!be) exit(1);
    hearth_fwd *f = hearth_fwd_create(m, be, max_tok, NULL);
    hearth_kv *kv = NULL;
    hearth_err err;
    if (!f || hearth_kv_create_on(hearth_backend_host_memory(be) ? NULL : be, m, 1, n_ctx, true, &kv, &err)) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    float *logits = malloc((size_t)hp->n_vocab * sizeof(float));
    int32_t *tok = malloc(sizeof(int32_t) * max_tok), *pos = malloc(sizeof(int32_t) * max_tok),
            *seq = calloc((size_t)max_tok, sizeof(int32_t)), id = 0;
    for (int i = 0; i < max_tok; i++) tok[i] = rnd_tok(), pos[i] = i;
    double t_first = now_s();
    hearth_batch b = {.n_tokens = 32, .token = tok, .pos = pos, .seq = seq};
    hearth_forward_argmax(f, &b, hearth_kv_view_of(kv), logits, &id); /* copies the weights in */
    double first = now_s() - t_first, t0 = 0;
    int32_t ids[32];
    for (int i = 0; i < gen + 8; i++) {
        if (i == 8) t0 = now_s();
        if (i < 32) ids[i] = id;
        int32_t p = 32 + i;
        hearth_batch s = {.n_tokens = 1, .token = &id, .pos = &p, .seq = seq};
        hearth_forward_argmax(f, &s, hearth_kv_view_of(kv), logits, &id);
    }
    double dt = now_s() - t0;
    hearth_backend_info bi;
    hearth_backend_get_info(be, &bi);
    printf("{\"what\":\"decode\",\"device\":\"%s\",\"tokens\":%d,\"ms_per_token\":%.4f,\"tok_s\":%.2f,"
           "\"first_step_s\":%.3f,\"ids\":[", bi.device, gen, dt * 1e3 / gen, gen / dt, first);
    for (int i = 0; i < 32 && i < gen + 8; i++) printf("%s%d", i ? "," : "", ids[i]);
    printf("]}\n");
    fflush(stdout);
    if (prefill > 0) {
        double best = 1e30;
        for (int r = 0; r < 3; r++) {
            hearth_batch pb = {.n_tokens = prefill, .token = tok, .pos = pos, .seq = seq};
            double t = now_s();
            hearth_forward_argmax(f, &pb, hearth_kv_view_of(kv), logits, &id);
            t = now_s() - t;
            if (r > 0 && t < best) best = t;
        }
        printf("{\"what\":\"prefill\",\"tokens\":%d,\"ms\":%.3f,\"tok_s\":%.1f}\n", prefill, best * 1e3,
               prefill / best);
        fflush(stdout);
    }
    free(logits);
    free(tok);
    free(pos);
    free(seq);
    hearth_kv_destroy(kv);
    hearth_fwd_destroy(f);
    hearth_backend_destroy(be);
}

static void streams(const hearth_model *m, bool cuda, int n, int gen) {
    hearth_engine_params ep = hearth_engine_params_default();
    ep.device = cuda ? HEARTH_DEVICE_CUDA : HEARTH_DEVICE_CPU;
    ep.batch = n;
    ep.n_ctx = 32 + gen + 32;
    ep.max_step = 2048;
    ep.prompt_cache = 0;
    ep.kv_budget = (int64_t)hearth_kv_bytes_per_token(m, HEARTH_KV_SCHEME_F16) * ep.n_ctx * n;
    hearth_engine *e = NULL;
    hearth_err err;
    if (hearth_engine_create(m, &ep, &e, &err)) {
        fprintf(stderr, "engine: %s\n", err.msg);
        exit(1);
    }
    for (int round = 0; round < 2; round++) { /* the first round warms up */
        hearth_request **r = calloc((size_t)n, sizeof *r);
        int32_t p[32];
        double t0 = now_s();
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < 32; j++) p[j] = rnd_tok();
            hearth_request_params rp = {.prompt = p, .n_prompt = 32, .max_tokens = round ? gen : 4,
                                        .sampling = hearth_sampler_params_default(), .ignore_eog = true};
            if (hearth_engine_submit(e, &rp, &r[i], &err)) fprintf(stderr, "submit: %s\n", err.msg);
        }
        long total = 0;
        for (int i = 0; i < n; i++) {
            hearth_event ev;
            do hearth_request_next(r[i], &ev, -1);
            while (ev.kind != HEARTH_EV_DONE);
            total += ev.n_generated;
            hearth_request_release(r[i]);
        }
        double wall = now_s() - t0;
        if (round)
            printf("{\"what\":\"streams\",\"n\":%d,\"gen\":%d,\"generated\":%ld,\"wall_s\":%.3f,\"agg_tok_s\":%.1f}\n",
                   n, gen, total, wall, total / wall);
        free(r);
    }
    fflush(stdout);
    hearth_engine_destroy(e);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_cuda MODEL.gguf [--device cuda|cpu] [--gen N] [--prefill N] [--streams N]\n");
        return 2;
    }
    bool cuda = true;
    int gen = 128, prefill = 0, n_streams = 0;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--device")) cuda = strcmp(argv[i + 1], "cpu") != 0;
        else if (!strcmp(argv[i], "--gen")) gen = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--prefill")) prefill = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--streams")) n_streams = atoi(argv[i + 1]);
    }
    hearth_model *m = NULL;
    hearth_err err;
    double t = now_s();
    if (hearth_model_load(argv[1], &m, &err)) {
        fprintf(stderr, "cannot load %s: %s\n", argv[1], err.msg);
        return 1;
    }
    printf("{\"what\":\"load\",\"model\":\"%s\",\"weight_bytes\":%zu,\"s\":%.3f}\n", argv[1],
           hearth_model_weight_bytes(m), now_s() - t);
    decode_and_prefill(m, cuda, gen, prefill);
    if (n_streams > 0) streams(m, cuda, n_streams, gen);
    hearth_model_destroy(m);
    return 0;
}
