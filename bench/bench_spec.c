/*
 * bench_spec.c - speculative decoding's decode rate on a real model: the same greedy requests
 * without speculation, with a draft model (two-model, or the Gemma 4 assistant when DRAFT is a
 * gemma4_assistant checkpoint) and with prompt lookup (ngram).
 *
 * Built on demand (CMake target bench_spec, linked as the tests are). Usage:
 *   build/bench_spec TARGET.gguf [DRAFT.gguf|- [threads [gen_tokens [streams [device [n_draft]]]]]]
 *   defaults: the target drafting for itself, 2 threads, 64 tokens, 1 stream, cpu, 3 drafts
 *   device: cpu | cuda
 *
 * Each stream's prompt is an English paragraph (tokenized, with a distinct lead sentence), the
 * requests greedy and submitted at once into a batch of `streams`. Reported per mode: aggregate
 * decode tok/s (tokens after each stream's first / the longest decode time), the steps the
 * engine ran, and the drafts verified and accepted (after a warm-up request of 8 tokens, which
 * puts both models' weights on the device). A target drafting for itself accepts nearly
 * every draft: that shows the cost of the mechanism (a draft forward per draft position plus a
 * verify step), not what a real, smaller draft model gains. Measurements, never assertions.
 */
#include "backend/backend.h"
#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *lead[] = {"Write a short story about a lighthouse keeper.", "Explain how a steam engine works.",
                             "List the planets of the solar system in order.", "Describe a walk through a forest.",
                             "Summarize the history of the printing press.", "Give advice to a new gardener.",
                             "Explain why the sky is blue.", "Describe the rules of chess."};
static const char *body = " Please answer in plain English, with complete sentences and without lists, as if "
                          "talking to a curious friend who has a few minutes to listen.";

typedef enum { PLAIN = 0, TWO_MODEL, NGRAM } mode;

static int run(const hearth_model *m, const hearth_model *dm, mode md, int threads, int gen, int streams, int device,
               int n_draft) {
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_threads = threads;
    ep.n_ctx = 512;
    ep.batch = streams;
    ep.device = device;
    bool assistant = hearth_model_hparams(dm)->n_embd_backbone > 0; /* a gemma4_assistant checkpoint */
    if (md == TWO_MODEL)
        ep.spec = (hearth_spec_params){.kind = assistant ? HEARTH_DRAFT_ASSISTANT : HEARTH_DRAFT_MODEL,
                                       .n_draft = n_draft, .draft_model = dm};
    if (md == NGRAM) ep.spec = (hearth_spec_params){.kind = HEARTH_DRAFT_NGRAM, .n_draft = n_draft};
    hearth_engine *e = NULL;
    hearth_err err = {0};
    if (hearth_engine_create(m, &ep, &e, &err)) {
        fprintf(stderr, "engine: %s\n", err.msg);
        return 1;
    }
    /* warm-up: a short request of its own first, so that both models' weights are on the device
     * (a backend uploads them at first use, the draft model's at the first drafting round, which
     * would otherwise fall inside the timed decode) */
    {
        static const char warm[] = "Say hello to the reader in one short sentence.";
        int32_t *ids = NULL;
        size_t n_ids = 0;
        hearth_request *w = NULL;
        if (hearth_tok_encode(hearth_model_tok(m), warm, strlen(warm), true, false, &ids, &n_ids)) return 1;
        hearth_request_params rp = {.prompt = ids, .n_prompt = n_ids, .max_tokens = 8,
                                    .sampling = hearth_sampler_params_default(), .ignore_eog = true};
        if (hearth_engine_submit(e, &rp, &w, &err)) {
            fprintf(stderr, "submit: %s\n", err.msg);
            return 1;
        }
        hearth_event ev;
        while (hearth_request_next(w, &ev, -1) == HEARTH_OK && ev.kind != HEARTH_EV_DONE) {}
        hearth_request_release(w);
        free(ids);
    }
    hearth_engine_stats st0;
    hearth_engine_stats_get(e, &st0);
    hearth_request **r = calloc((size_t)streams, sizeof *r);
    double *t_first = calloc((size_t)streams, sizeof(double)), *t_last = calloc((size_t)streams, sizeof(double));
    int *n = calloc((size_t)streams, sizeof(int));
    double t0 = now_s();
    for (int i = 0; i < streams; i++) {
        char text[512];
        snprintf(text, sizeof text, "%s%s", lead[i % 8], body);
        int32_t *ids = NULL;
        size_t n_ids = 0;
        if (hearth_tok_encode(hearth_model_tok(m), text, strlen(text), true, false, &ids, &n_ids)) return 1;
        hearth_request_params rp = {.prompt = ids, .n_prompt = n_ids, .max_tokens = gen,
                                    .sampling = hearth_sampler_params_default(), .ignore_eog = true};
        if (hearth_engine_submit(e, &rp, &r[i], &err)) {
            fprintf(stderr, "submit: %s\n", err.msg);
            return 1;
        }
        free(ids);
    }
    for (int i = 0; i < streams; i++) {
        hearth_event ev;
        while (hearth_request_next(r[i], &ev, -1) == HEARTH_OK && ev.kind != HEARTH_EV_DONE) {
            if (ev.kind != HEARTH_EV_TOKEN) continue;
            if (n[i]++ == 0) t_first[i] = now_s();
            t_last[i] = now_s();
        }
        hearth_request_release(r[i]);
    }
    double longest = 0;
    int64_t toks = 0;
    for (int i = 0; i < streams; i++) {
        if (t_last[i] - t_first[i] > longest) longest = t_last[i] - t_first[i];
        toks += n[i] - 1;
    }
    hearth_engine_stats st;
    hearth_engine_stats_get(e, &st);
    static const char *names[] = {"plain", "two-model", "ngram"};
    printf("%-10s %3d streams: %7.2f decode tok/s (%lld tokens in %.2f s, wall %.2f s), %lld steps, "
           "%lld drafted, %lld accepted\n",
           md == TWO_MODEL && assistant ? "assistant" : names[md], streams, longest > 0 ? (double)toks / longest : 0, (long long)toks, longest, now_s() - t0,
           (long long)(st.steps - st0.steps), (long long)(st.spec_drafted - st0.spec_drafted),
           (long long)(st.spec_accepted - st0.spec_accepted));
    fflush(stdout);
    hearth_engine_destroy(e);
    free(r);
    free(t_first);
    free(t_last);
    free(n);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s TARGET.gguf [DRAFT.gguf|- [threads [gen [streams [cpu|cuda [n_draft]]]]]]\n",
                argv[0]);
        return 2;
    }
    const char *dpath = argc > 2 && strcmp(argv[2], "-") ? argv[2] : argv[1];
    int threads = argc > 3 ? atoi(argv[3]) : 2, gen = argc > 4 ? atoi(argv[4]) : 64;
    int streams = argc > 5 ? atoi(argv[5]) : 1;
    hearth_device device = HEARTH_DEVICE_CPU;
    if (argc > 6 && !hearth_device_parse(argv[6], &device)) {
        fprintf(stderr, "device: cpu, cuda or auto\n");
        return 2;
    }
    int n_draft = argc > 7 ? atoi(argv[7]) : 3;
    hearth_model *m = NULL, *dm = NULL;
    hearth_err err = {0};
    if (hearth_model_load(argv[1], &m, &err) || hearth_model_load(dpath, &dm, &err)) { /* GGUF or a checkpoint dir */
        fprintf(stderr, "load: %s\n", err.msg);
        return 1;
    }
    int rc = 0;
    for (mode md = PLAIN; md <= NGRAM && !rc; md++) rc = run(m, dm, md, threads, gen, streams, (int)device, n_draft);
    hearth_model_destroy(m);
    hearth_model_destroy(dm);
    return rc;
}
