/*
 * hearth_trace.c - dump every intermediate activation of hearth's forward pass, for lining
 * hearth up with llama.cpp tensor by tensor (tools/trace_compare.py; llama.cpp's side is
 * tools/llamacpp_trace.py).
 *
 *   hearth_trace MODEL.gguf IDS OUT [STEPS]
 *
 * IDS is a comma-separated list of token ids (llama.cpp's tokenization, as llamacpp_trace.py
 * prints it), evaluated as one batch at positions 0..n-1 with logits for every token; then
 * STEPS greedy tokens one at a time. OUT gets one record per traced tensor:
 *   u32 name length, name ("STEP:NAME-LAYER:OP", as llamacpp_trace.py keys them),
 *   i64 rows, i64 width, rows*width f32.
 * The kernel set is the process default (HEARTH_KERNELS to change it).
 */
#include "models/model_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    FILE *out;
    int   step;
} trace_ctx;

static void on_trace(void *user, const char *name, int32_t il, const char *op, const float *x, int64_t n_rows,
                     int64_t width) {
    trace_ctx *c = user;
    char key[160];
    if (il >= 0) snprintf(key, sizeof key, "%d:%s-%d:%s", c->step, name, il, op);
    else snprintf(key, sizeof key, "%d:%s:%s", c->step, name, op);
    uint32_t len = (uint32_t)strlen(key);
    fwrite(&len, 4, 1, c->out);
    fwrite(key, 1, len, c->out);
    fwrite(&n_rows, 8, 1, c->out);
    fwrite(&width, 8, 1, c->out);
    fwrite(x, sizeof(float), (size_t)(n_rows * width), c->out);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: hearth_trace MODEL.gguf ID,ID,... OUT [STEPS]\n");
        return 2;
    }
    int32_t ids[1024], n = 0;
    for (char *s = argv[2]; *s && n < 1024;) {
        ids[n++] = (int32_t)strtol(s, &s, 10);
        if (*s == ',') s++;
    }
    int steps = argc > 4 ? atoi(argv[4]) : 0;
    harness *h = harness_open(argv[1], n > 1 ? n : 1, 1024, true, 2);
    if (!h) return 1;
    trace_ctx c = {fopen(argv[3], "wb"), 0};
    if (!c.out) {
        perror(argv[3]);
        return 1;
    }
    hearth_fwd_set_trace(h->fwd, on_trace, &c);
    float *logits = malloc((size_t)n * (size_t)h->n_vocab * sizeof(float));
    if (harness_run(h, ids, n, 0, true, logits) != HEARTH_OK) return 1;
    int32_t next = argmax_f(logits + (size_t)(n - 1) * (size_t)h->n_vocab, h->n_vocab);
    for (int s = 1; s <= steps; s++) {
        c.step = s;
        if (harness_run(h, &next, 1, n + s - 1, true, logits) != HEARTH_OK) return 1;
        next = argmax_f(logits, h->n_vocab);
    }
    fclose(c.out);
    free(logits);
    harness_close(h);
    return 0;
}
