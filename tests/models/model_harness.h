/*
 * model_harness.h - load a model and run prompts through the forward pass directly (no
 * engine thread), for the model golden tests: prefill with logits at every position, then
 * greedy decode one token at a time on the same KV slot. Header-only, test code.
 */
#pragma once
#include "backend/backend.h"
#include "support/kv.h"
#include "model/model.h"
#include "models/forward.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    hearth_model   *m;
    hearth_backend *be;
    hearth_fwd     *fwd;
    hearth_kv      *kv;
    int32_t         n_vocab, max_tok, n_ctx;
    int32_t        *tok, *pos, *seq; /* [max_tok] */
    int8_t         *want;            /* [max_tok] */
} harness;

/* NULL (with the reason printed) when the model cannot be loaded. */
static inline harness *harness_open_scheme(const char *path, int32_t max_tok, int32_t n_ctx, hearth_kv_scheme kv,
                                           int n_threads) {
    hearth_err err = {0};
    harness *h = calloc(1, sizeof *h);
    if (hearth_model_load(path, &h->m, &err)) {
        fprintf(stderr, "  cannot load %s: %s\n", path, err.msg);
        free(h);
        return NULL;
    }
    const hearth_hparams *hp = hearth_model_hparams(h->m);
    int64_t width = hp->n_ff > hp->n_embd ? hp->n_ff : hp->n_embd;
    if ((int64_t)hp->n_head * hp->head_dim_v > width) width = (int64_t)hp->n_head * hp->head_dim_v;
    h->n_vocab = hp->n_vocab;
    h->max_tok = max_tok;
    h->n_ctx = n_ctx;
    h->be = hearth_backend_cpu_create(n_threads, max_tok, width, n_ctx, NULL);
    h->fwd = hearth_fwd_create(h->m, h->be, max_tok, NULL);
    if (hearth_kv_create_scheme(NULL, h->m, 1, n_ctx, kv, &h->kv, &err)) fprintf(stderr, "  KV cache: %s\n", err.msg);
    h->tok = calloc((size_t)max_tok, sizeof(int32_t));
    h->pos = calloc((size_t)max_tok, sizeof(int32_t));
    h->seq = calloc((size_t)max_tok, sizeof(int32_t));
    h->want = calloc((size_t)max_tok, 1);
    return h;
}

static inline harness *harness_open(const char *path, int32_t max_tok, int32_t n_ctx, bool kv_f16, int n_threads) {
    return harness_open_scheme(path, max_tok, n_ctx, kv_f16 ? HEARTH_KV_SCHEME_F16 : HEARTH_KV_SCHEME_F32, n_threads);
}

static inline void harness_close(harness *h) {
    if (!h) return;
    hearth_kv_destroy(h->kv);
    hearth_fwd_destroy(h->fwd);
    hearth_backend_destroy(h->be);
    hearth_model_destroy(h->m);
    free(h->tok);
    free(h->pos);
    free(h->seq);
    free(h->want);
    free(h);
}

/* Run ids[0..n) at positions pos0.. ; logits for every token (all=true) or the last one into
 * out ([n or 1][n_vocab]). n <= max_tok. */
static inline hearth_status harness_run(harness *h, const int32_t *ids, int32_t n, int32_t pos0, bool all,
                                        float *out) {
    for (int32_t i = 0; i < n; i++) {
        h->tok[i] = ids[i];
        h->pos[i] = pos0 + i;
        h->seq[i] = 0;
        h->want[i] = all || i == n - 1;
    }
    hearth_batch b = {.n_tokens = n, .token = h->tok, .pos = h->pos, .seq = h->seq, .want_logits = h->want};
    return hearth_forward(h->fwd, &b, hearth_kv_view_of(h->kv), out);
}

static inline int32_t argmax_f(const float *x, int32_t n) {
    int32_t b = 0;
    for (int32_t i = 1; i < n; i++) if (x[i] > x[b]) b = i;
    return b;
}
