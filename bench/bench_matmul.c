/*
 * bench_matmul.c - a model's matmuls alone, on its real weights: the decode and prefill cost of
 * the quantized matmul kernels without attention, sampling or the engine around them.
 *
 * Built on demand (`cmake --build build --target bench_matmul`), then:
 *   build/bench_matmul MODEL.gguf [threads [n_tok [reps]]]   (defaults: 1, 1, 20)
 * (HEARTH_KERNELS=avx2|avx512|scalar picks the set.)
 *
 * One pass runs, in the model's order, each block's q/k/v (one hearth_matmul_n), attn_output,
 * ffn_gate+ffn_up (one hearth_matmul_n), ffn_down, then the output projection (output.weight,
 * else the tied token_embd.weight), on pseudo-random activations of n_tok rows. It reports,
 * per kind of matmul and in total, the minimum over reps of wall time and of the process's CPU
 * time (all pool threads) per pass, and the weight bytes a pass reads per second of wall time.
 * The minimum is the figure least disturbed by other work on a shared machine; CPU time shows
 * what spinning or waiting costs. The one-matrix steps (attn_output, ffn_down, output) are also
 * summed per weight type (e.g. Gemma 3's Q6_K ffn_down alone). Measurements only, never
 * assertions.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/thread.h"
#include "kernels/kernels.h"
#include "model/gguf.h"
#include "tensor/dtype.h"

enum { MAX_STEPS = 1024, KINDS = 6 };
static const char *const kind_names[KINDS] = {"qkv", "attn_out", "gate_up", "down", "output", "total"};

typedef struct {
    int kind;
    int n;                                   /* parts */
    const hearth_gguf_tensor *t[HEARTH_MATMUL_MAX_PARTS];
} step;

static double clk(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *xalloc(size_t n) {
    void *p = aligned_alloc(64, (n + 63) & ~(size_t)63);
    if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
    memset(p, 0, (n + 63) & ~(size_t)63);
    return p;
}

static const hearth_gguf_tensor *find(const hearth_gguf *g, int blk, const char *name) {
    char buf[96];
    snprintf(buf, sizeof buf, "blk.%d.%s.weight", blk, name);
    return hearth_gguf_find_tensor(g, buf);
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: bench_matmul MODEL.gguf [threads [n_tok [reps]]]\n"); return 1; }
    int nth = argc > 2 ? atoi(argv[2]) : 1;
    int64_t n_tok = argc > 3 ? atoll(argv[3]) : 1;
    int reps = argc > 4 ? atoi(argv[4]) : 20;
    if (nth < 1 || n_tok < 1 || n_tok > 4096 || reps < 1) { fprintf(stderr, "bad arguments\n"); return 1; }
    hearth_gguf *g = NULL;
    if (hearth_gguf_open(argv[1], &g, NULL) != 0) { fprintf(stderr, "cannot open %s\n", argv[1]); return 1; }
    static step steps[MAX_STEPS];
    int n_steps = 0;
    for (int b = 0; n_steps + 5 < MAX_STEPS; b++) {
        const hearth_gguf_tensor *q = find(g, b, "attn_q");
        if (!q) break;
        steps[n_steps++] = (step){0, 3, {q, find(g, b, "attn_k"), find(g, b, "attn_v")}};
        steps[n_steps++] = (step){1, 1, {find(g, b, "attn_output")}};
        steps[n_steps++] = (step){2, 2, {find(g, b, "ffn_gate"), find(g, b, "ffn_up")}};
        steps[n_steps++] = (step){3, 1, {find(g, b, "ffn_down")}};
    }
    const hearth_gguf_tensor *out = hearth_gguf_find_tensor(g, "output.weight");
    if (!out) out = hearth_gguf_find_tensor(g, "token_embd.weight");
    steps[n_steps++] = (step){4, 1, {out}};
    int64_t max_in = 0, max_out = 0;
    size_t scratch_bytes = 0, bytes[KINDS] = {0};
    for (int s = 0; s < n_steps; s++)
        for (int i = 0; i < steps[s].n; i++) {
            const hearth_gguf_tensor *t = steps[s].t[i];
            if (!t) { fprintf(stderr, "missing tensor in step %d\n", s); return 1; }
            if (t->ne[0] > max_in) max_in = t->ne[0];
            if (t->ne[1] > max_out) max_out = t->ne[1];
            size_t sb = hearth_matmul_scratch_bytes(t->type, t->ne[0], n_tok, nth);
            if (sb > scratch_bytes) scratch_bytes = sb;
            bytes[steps[s].kind] += t->n_bytes;
            bytes[KINDS - 1] += t->n_bytes;
        }
    float *x = xalloc((size_t)n_tok * (size_t)max_in * sizeof(float));
    uint64_t rng = 88172645463325252ull;
    for (int64_t i = 0; i < n_tok * max_in; i++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        x[i] = (float)(rng >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
    }
    float *y[HEARTH_MATMUL_MAX_PARTS];
    for (int i = 0; i < HEARTH_MATMUL_MAX_PARTS; i++) y[i] = xalloc((size_t)n_tok * (size_t)max_out * sizeof(float));
    void *scratch = xalloc(scratch_bytes);
    hearth_pool *pool = hearth_pool_create(nth);
    double best_w[KINDS], best_c[KINDS], tbest_w[HEARTH_TYPE_COUNT], tbest_c[HEARTH_TYPE_COUNT];
    size_t tbytes[HEARTH_TYPE_COUNT] = {0};
    int tsteps[HEARTH_TYPE_COUNT] = {0};
    for (int s = 0; s < n_steps; s++)
        if (steps[s].n == 1) tbytes[steps[s].t[0]->type] += steps[s].t[0]->n_bytes, tsteps[steps[s].t[0]->type]++;
    for (int k = 0; k < KINDS; k++) best_w[k] = best_c[k] = 1e30;
    for (int k = 0; k < HEARTH_TYPE_COUNT; k++) tbest_w[k] = tbest_c[k] = 1e30;
    for (int rep = -1; rep < reps; rep++) { /* rep -1 warms up (page faults) */
        double w[KINDS] = {0}, c[KINDS] = {0}, tw[HEARTH_TYPE_COUNT] = {0}, tc[HEARTH_TYPE_COUNT] = {0};
        for (int s = 0; s < n_steps; s++) {
            const step *st = &steps[s];
            hearth_matmul_part parts[HEARTH_MATMUL_MAX_PARTS];
            for (int i = 0; i < st->n; i++)
                parts[i] = (hearth_matmul_part){st->t[i]->type, st->t[i]->data,
                                                hearth_row_size(st->t[i]->type, st->t[i]->ne[0]), st->t[i]->ne[1],
                                                y[i], st->t[i]->ne[1], false};
            double w0 = clk(CLOCK_MONOTONIC), c0 = clk(CLOCK_PROCESS_CPUTIME_ID);
            hearth_matmul_n(pool, parts, st->n, st->t[0]->ne[0], x, n_tok, scratch);
            double dw = clk(CLOCK_MONOTONIC) - w0, dc = clk(CLOCK_PROCESS_CPUTIME_ID) - c0;
            w[st->kind] += dw;
            c[st->kind] += dc;
            if (st->n == 1) tw[st->t[0]->type] += dw, tc[st->t[0]->type] += dc;
        }
        for (int k = 0; k < KINDS - 1; k++) w[KINDS - 1] += w[k], c[KINDS - 1] += c[k];
        if (rep < 0) continue;
        for (int k = 0; k < KINDS; k++) {
            if (w[k] < best_w[k]) best_w[k] = w[k];
            if (c[k] < best_c[k]) best_c[k] = c[k];
        }
        for (int k = 0; k < HEARTH_TYPE_COUNT; k++) {
            if (tw[k] < tbest_w[k]) tbest_w[k] = tw[k];
            if (tc[k] < tbest_c[k]) tbest_c[k] = tc[k];
        }
    }
    double chk = 0;
    for (int64_t i = 0; i < n_tok * out->ne[1]; i++) chk += y[0][i];
    printf("%s: set %s, %d threads, n_tok %lld, min of %d passes (checksum %.6g)\n", argv[1],
           hearth_isa_name(hearth_kernels_isa()), nth, (long long)n_tok, reps, chk);
    printf("%-9s %9s %9s %9s %9s\n", "kind", "MB", "wall ms", "cpu ms", "GB/s");
    for (int k = 0; k < KINDS; k++)
        printf("%-9s %9.1f %9.3f %9.3f %9.2f\n", kind_names[k], (double)bytes[k] / 1e6, best_w[k] * 1e3,
               best_c[k] * 1e3, (double)bytes[k] / best_w[k] / 1e9);
    printf("one-matrix steps by weight type:\n");
    for (int k = 0; k < HEARTH_TYPE_COUNT; k++)
        if (tsteps[k])
            printf("%-9s %9.1f %9.3f %9.3f %9.2f  (%d matrices)\n", hearth_type_name(k), (double)tbytes[k] / 1e6,
                   tbest_w[k] * 1e3, tbest_c[k] * 1e3, (double)tbytes[k] / tbest_w[k] / 1e9, tsteps[k]);
    printf("per token: %.3f ms wall (%.1f tok/s of matmul)\n", best_w[KINDS - 1] * 1e3 / (double)n_tok,
           (double)n_tok / best_w[KINDS - 1]);
    hearth_pool_destroy(pool);
    hearth_gguf_close(g);
    return 0;
}
