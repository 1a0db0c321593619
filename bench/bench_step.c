/*
 * bench_step.c - where one decode step of the forward spends its time, per op, for a batch of
 * N sequences (one token each) against one.
 *
 * Built on demand (CMake target bench_step):
 *   cmake --build build --target bench_step
 *   build/bench_step MODEL.gguf [n_seqs [threads [steps [prompt]]]]   (defaults: 8, 2, 60, 32)
 *
 * N sequences of `prompt` tokens are prefilled into a contiguous cache, then `steps` decode
 * steps of one token per sequence run through hearth_forward. The forward's trace hook (forward.h)
 * timestamps every traced op, so the time between two traced activations is charged to the
 * second one (e.g. "kqv_out/CONT" is the scale, KV store and attention after RoPE; "ffn_out/
 * MUL_MAT" the down projection). Each op figure is the minimum over the steps after five warm-up
 * steps, the one least disturbed by other work on a shared machine; ops under 0.03 ms are not
 * printed. The hook costs a clock read per op. Measurements only, never assertions.
 */
#include "backend/backend.h"
#include "support/kv.h"
#include "models/forward.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_OPS = 64, MAX_SEQS = 64, WARM = 5 };

static char   names[MAX_OPS][40];
static double acc[MAX_OPS], best[MAX_OPS], last;
static int    n_ops;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void hook(void *user, const char *name, int32_t il, const char *op, const float *x, int64_t rows,
                 int64_t width) {
    (void)user, (void)il, (void)x, (void)rows, (void)width;
    double t = now_ms();
    char key[40];
    snprintf(key, sizeof key, "%s/%s", name, op);
    int i = 0;
    while (i < n_ops && strcmp(names[i], key)) i++;
    if (i == n_ops && n_ops < MAX_OPS) snprintf(names[n_ops++], sizeof names[0], "%s", key);
    if (i < MAX_OPS) acc[i] += t - last;
    last = now_ms();
}

static int cmp_ms(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_step MODEL.gguf [n_seqs [threads [steps [prompt]]]]\n");
        return 2;
    }
    int n_seqs = argc > 2 ? atoi(argv[2]) : 8, threads = argc > 3 ? atoi(argv[3]) : 2;
    int steps = argc > 4 ? atoi(argv[4]) : 60, prompt = argc > 5 ? atoi(argv[5]) : 32;
    if (n_seqs < 1 || n_seqs > MAX_SEQS || steps <= WARM || prompt < 1 || prompt > 65536) {
        fprintf(stderr, "n_seqs must be 1..%d, steps > %d and prompt 1..65536\n", MAX_SEQS, WARM);
        return 2;
    }
    hearth_model *m = NULL;
    hearth_err err;
    if (hearth_model_load(argv[1], &m, &err)) {
        fprintf(stderr, "cannot load %s: %s\n", argv[1], err.msg);
        return 1;
    }
    const hearth_hparams *hp = hearth_model_hparams(m);
    int32_t ctx = prompt + steps, max_tok = n_seqs * prompt;
    int64_t width = hp->n_ff > hp->n_embd ? hp->n_ff : hp->n_embd;
    hearth_backend *be = hearth_backend_cpu_create(threads, max_tok, width, ctx, NULL);
    hearth_fwd *f = be ? hearth_fwd_create(m, be, max_tok, NULL) : NULL;
    hearth_kv *kv = NULL;
    int32_t *tok = malloc((size_t)max_tok * sizeof(int32_t)), *pos = malloc((size_t)max_tok * sizeof(int32_t));
    int32_t *seq = malloc((size_t)max_tok * sizeof(int32_t));
    int8_t *want = calloc((size_t)max_tok, 1);
    float *logits = malloc((size_t)n_seqs * (size_t)hp->n_vocab * sizeof(float));
    if (!f || !tok || !pos || !seq || !want || !logits || hearth_kv_create(m, n_seqs, ctx, true, &kv, &err)) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    for (int s = 0; s < n_seqs; s++)
        for (int i = 0; i < prompt; i++) {
            tok[s * prompt + i] = 100 + (s * 37 + i * 11) % 5000;
            pos[s * prompt + i] = i;
            seq[s * prompt + i] = s;
        }
    hearth_batch b = {.n_tokens = max_tok, .token = tok, .pos = pos, .seq = seq, .want_logits = want};
    hearth_forward(f, &b, hearth_kv_view_of(kv), logits);
    for (int s = 0; s < n_seqs; s++) want[s] = 1;
    double step_best = 1e30, *step_ms = malloc((size_t)steps * sizeof(double));
    int n_step_ms = 0;
    for (int i = 0; i < MAX_OPS; i++) best[i] = 1e30;
    for (int st = 0; st < steps; st++) {
        for (int s = 0; s < n_seqs; s++) {
            tok[s] = 100 + st;
            pos[s] = prompt + st;
            seq[s] = s;
        }
        b.n_tokens = n_seqs;
        if (st == WARM) hearth_fwd_set_trace(f, hook, NULL);
        memset(acc, 0, sizeof acc);
        double t0 = now_ms();
        last = t0;
        hearth_forward(f, &b, hearth_kv_view_of(kv), logits);
        double dt = now_ms() - t0;
        if (st < WARM) continue;
        if (dt < step_best) step_best = dt;
        if (step_ms) step_ms[n_step_ms++] = dt;
        for (int i = 0; i < n_ops; i++)
            if (acc[i] < best[i]) best[i] = acc[i];
    }
    double med = 0;
    if (n_step_ms > 0) {
        qsort(step_ms, (size_t)n_step_ms, sizeof *step_ms, cmp_ms);
        med = step_ms[n_step_ms / 2];
    }
    printf("%s, %d threads: decode step of %d sequence(s) at positions %d..%d: %.2f ms (min), %.2f ms (median)\n",
           hearth_model_name(m), threads, n_seqs, prompt + WARM, prompt + steps - 1, step_best, med);
    for (int i = 0; i < n_ops; i++)
        if (best[i] > 0.03) printf("  %-30s %7.3f ms\n", names[i], best[i]);
    hearth_kv_destroy(kv);
    hearth_fwd_destroy(f);
    hearth_backend_destroy(be);
    hearth_model_destroy(m);
    free(tok), free(pos), free(seq), free(want), free(logits), free(step_ms);
    return 0;
}
