/*
 * bench_cuda.c - hearth's decode, prefill and batched decode rates on a GPU (or the CPU), as
 * JSON lines for tools/cuda_h200.py, which runs PyTorch on the same checkpoint in the same run
 * and writes the table of bench/cuda-h200.md.
 *
 * Built on demand (CMake target bench_cuda, linked as the tests are: `cmake --build build --target
 * bench_cuda`), or by hand from the repo root, against a hearth_core built with CUDA:
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Isrc -Itests bench/bench_cuda.c \
 *      build/libhearth_test_support.a build/libhearth_core.a \
 *      -lpcre2-8 -lcjson -lmicrohttpd -lcurl -lsqlite3 -lcrypto -lutf8proc -lxxhash \
 *      -L<cuda>/lib64 -lcudart -lcublas -lstdc++ -lpthread -lm -o build/bench_cuda
 *   build/bench_cuda MODEL.gguf [--device cuda|cpu] [--gen N] [--prefill N] [--streams N[,N...]]
 *                    [--kv-quant off|8|4] [--depth N] [--temperature T] [--top-k K] [--top-p P]
 *   build/bench_cuda --attn CTX [--heads H/HKV] [--dim D] [--tok N]
 *   build/bench_cuda --mv N
 *   build/bench_cuda --gemm T1,T2,... [bf16|q8_0|q4_0]
 *
 * Reports (greedy, random prompt tokens):
 *   decode   one sequence: a 32-token prompt (--depth N: an N-token one, forwarded 512 tokens at
 *            a time, so the steps attend over N cached tokens), then gen steps of one token through
 *            hearth_forward_argmax (only the id leaves the device); ms per token after 8 warm-up
 *            steps, and the first 32 greedy ids (to compare kernel variants);
 *   prefill  one forward of a prefill-token prompt (logits of the last token only), after a
 *            warm-up forward of the same size;
 *   streams  N requests of 32 prompt tokens and gen new tokens each through the engine at batch
 *            N: aggregate generated tokens per second of wall time, prefill included (a list
 *            16,64 runs each count in turn, one engine each); greedy, or seeded draws with
 *            --temperature / --top-k / --top-p (HEARTH_TOPM=0 in the environment: the rows go to
 *            the host sampler, the comparison for sampling on the GPU).
 * --kv-quant runs all three over that KV cache (q8_0 / q4_0 keys and values; off: f16).
 *   attn     (no model) one attention op of N queries (default 1: decode; 128 or more: the
 *            prefill kernel) at the end of a CTX-token paged cache of f16, q8_0 and q4_0 keys and
 *            values, H query heads over HKV kv heads of D dims (default 32/8, 128: an 8B model's
 *            layer): microseconds per call, averaged over 200 after 20 warm-up.
 *   mv       (no model) one matmul of a bf16 14336 x 4096 weight (an 8B model's gate or up) at
 *            1, 2, ... N tokens (N <= 8: the matrix-vector kernels): microseconds per call
 *            (averaged over 200 after 20 warm-up), the weight's read rate, and the time over the
 *            one-token call's (HEARTH_CUDA_MV_ROWS=1 in the environment: one row per row group,
 *            the comparison).
 *   gemm     (no model) the bf16 (or q8_0, q4_0) matmuls of an 8B layer (gate/up 14336 x 4096, down 4096 x
 *            14336, q/o 4096 x 4096, k/v 1024 x 4096) at each listed token count (a batch of
 *            decodes): microseconds per call and the weight's read rate (HEARTH_CUDA_SKINNY=0 in
 *            the environment: cuBLAS, the comparison).
 * Measurements, never assertions.
 */
#include "backend/backend.h"
#include "engine/engine.h"
#include "support/kv.h"
#include "kernels/ref/quant_ref.h"
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

static hearth_kv_scheme scheme_of(const hearth_kv_quant *q) {
    if (q->mode == HEARTH_KVQ_8) return hearth_kv_scheme_of(HEARTH_KV_Q8_0, HEARTH_KV_Q8_0);
    if (q->mode == HEARTH_KVQ_4) return hearth_kv_scheme_of(HEARTH_KV_Q4_0, HEARTH_KV_Q4_0);
    return HEARTH_KV_SCHEME_F16;
}
static hearth_kv_quant kvq; /* --kv-quant */

static void decode_and_prefill(const hearth_model *m, bool cuda, int gen, int prefill, int depth) {
    const hearth_hparams *hp = hearth_model_hparams(m);
    const int32_t n_prompt = depth > 32 ? depth : 32;
    int32_t max_tok = prefill > 32 ? prefill : 32;
    if (depth > 0 && max_tok < 512) max_tok = 512;
    const int32_t n_ctx = (n_prompt > max_tok ? n_prompt : max_tok) + gen + 64;
    hearth_backend *be = backend(m, cuda, max_tok, n_ctx);
    if (!be) exit(1);
    hearth_fwd *f = hearth_fwd_create(m, be, max_tok, NULL);
    hearth_kv *kv = NULL;
    hearth_err err;
    if (!f || hearth_kv_create_scheme(hearth_backend_host_memory(be) ? NULL : be, m, 1, n_ctx, scheme_of(&kvq), &kv,
                                      &err)) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    float *logits = malloc((size_t)hp->n_vocab * sizeof(float));
    int32_t *tok = malloc(sizeof(int32_t) * max_tok), *pos = malloc(sizeof(int32_t) * max_tok),
            *seq = calloc((size_t)max_tok, sizeof(int32_t)), id = 0;
    for (int i = 0; i < max_tok; i++) tok[i] = rnd_tok(), pos[i] = i;
    double t_first = now_s();
    for (int32_t p0 = 0; p0 < n_prompt; p0 += max_tok) { /* the first call copies the weights in */
        int32_t n = n_prompt - p0 < max_tok ? n_prompt - p0 : max_tok;
        for (int32_t i = 0; i < n; i++) pos[i] = p0 + i;
        hearth_batch b = {.n_tokens = n, .token = tok, .pos = pos, .seq = seq};
        hearth_forward_argmax(f, &b, hearth_kv_view_of(kv), logits, &id);
    }
    for (int i = 0; i < max_tok; i++) pos[i] = i;
    double first = now_s() - t_first, t0 = 0;
    int32_t ids[32];
    for (int i = 0; i < gen + 8; i++) {
        if (i == 8) t0 = now_s();
        if (i < 32) ids[i] = id;
        int32_t p = n_prompt + i;
        hearth_batch s = {.n_tokens = 1, .token = &id, .pos = &p, .seq = seq};
        hearth_forward_argmax(f, &s, hearth_kv_view_of(kv), logits, &id);
    }
    double dt = now_s() - t0;
    hearth_backend_info bi;
    hearth_backend_get_info(be, &bi);
    printf("{\"what\":\"decode\",\"device\":\"%s\",\"depth\":%d,\"tokens\":%d,\"ms_per_token\":%.4f,"
           "\"tok_s\":%.2f,\"first_step_s\":%.3f,\"ids\":[",
           bi.device, n_prompt, gen, dt * 1e3 / gen, gen / dt, first);
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

static hearth_sampler_params sampling; /* the streams' (greedy unless --temperature) */

static void streams(const hearth_model *m, bool cuda, int n, int gen) {
    hearth_engine_params ep = hearth_engine_params_default();
    ep.device = cuda ? HEARTH_DEVICE_CUDA : HEARTH_DEVICE_CPU;
    ep.batch = n;
    ep.n_ctx = 32 + gen + 32;
    ep.max_step = 2048;
    ep.prompt_cache = 0;
    ep.kv_quant = kvq;
    ep.kv_budget = (int64_t)hearth_kv_bytes_per_token(m, scheme_of(&kvq)) * ep.n_ctx * n;
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
                                        .sampling = sampling, .ignore_eog = true};
            rp.sampling.seed = (uint64_t)i + 1;
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
            printf("{\"what\":\"streams\",\"n\":%d,\"gen\":%d,\"temperature\":%g,\"top_k\":%d,\"top_p\":%g,"
                   "\"generated\":%ld,\"wall_s\":%.3f,\"agg_tok_s\":%.1f}\n",
                   n, gen, sampling.temperature, sampling.top_k, sampling.top_p, total, wall, total / wall);
        free(r);
    }
    fflush(stdout);
    hearth_engine_destroy(e);
}

/* one decode attention op over a ctx-token cache of each type (see the top comment) */
static void attn_bench(int32_t ctx, int32_t n_head, int32_t n_head_kv, int32_t D, int32_t n_q) {
    hearth_err err = {0};
    if (n_q < 1 || n_q > ctx || n_q > 1024) {
        fprintf(stderr, "--tok: 1 to min(CTX, 1024)\n");
        exit(2);
    }
    hearth_backend *be = hearth_backend_cuda_create(0, n_q > 64 ? n_q : 64, NULL, &err);
    if (!be) {
        fprintf(stderr, "backend: %s\n", err.msg);
        exit(1);
    }
    const int32_t bs = 16, n_blocks = (ctx + bs - 1) / bs, chunk = 1024;
    const int64_t kvw = (int64_t)n_head_kv * D, qw = (int64_t)n_head * D * n_q;
    int32_t *table = malloc(sizeof(int32_t) * n_blocks), *pos = malloc(sizeof(int32_t) * chunk),
            *seq = calloc(chunk, sizeof(int32_t));
    for (int32_t i = 0; i < n_blocks; i++) table[i] = i;
    float *x = malloc(sizeof(float) * chunk * kvw), *q = malloc(sizeof(float) * qw);
    for (int64_t i = 0; i < chunk * kvw; i++) x[i] = (float)(rnd_tok() % 2001 - 1000) / 1000.0f;
    for (int64_t i = 0; i < qw; i++) q[i] = (float)(rnd_tok() % 2001 - 1000) / 1000.0f;
    int32_t *dtable = hearth_buf_alloc(be, sizeof(int32_t) * n_blocks),
            *dpos = hearth_buf_alloc(be, sizeof(int32_t) * chunk), *dseq = hearth_buf_alloc(be, sizeof(int32_t) * chunk);
    float *dx = hearth_buf_alloc(be, sizeof(float) * chunk * kvw), *dq = hearth_buf_alloc(be, sizeof(float) * qw),
          *dout = hearth_buf_alloc(be, sizeof(float) * qw), *out = malloc(sizeof(float) * qw);
    hearth_buf_upload(be, dtable, table, sizeof(int32_t) * n_blocks);
    hearth_buf_upload(be, dseq, seq, sizeof(int32_t) * chunk);
    hearth_buf_upload(be, dx, x, sizeof(float) * chunk * kvw);
    hearth_buf_upload(be, dq, q, sizeof(float) * qw);
    hearth_kv_blocks bl = {.table = dtable, .max_blocks = n_blocks, .block_size = bs};
    static const hearth_kv_type types[3] = {HEARTH_KV_F16, HEARTH_KV_Q8_0, HEARTH_KV_Q4_0};
    for (int ti = 0; ti < 3; ti++) {
        const hearth_kv_type t = types[ti];
        const size_t bytes = (size_t)n_blocks * bs * hearth_kv_row_bytes(t, kvw);
        void *k = hearth_buf_alloc(be, bytes), *v = hearth_buf_alloc(be, bytes);
        if (!k || !v) {
            fprintf(stderr, "out of device memory\n");
            exit(1);
        }
        for (int32_t p0 = 0; p0 < ctx; p0 += chunk) { /* the same rows again in each chunk */
            int32_t n = ctx - p0 < chunk ? ctx - p0 : chunk;
            for (int32_t i = 0; i < n; i++) pos[i] = p0 + i;
            hearth_buf_upload(be, dpos, pos, sizeof(int32_t) * n);
            hearth_op_kv_store(be, dx, n, kvw, dseq, dpos, k, &bl, t);
            hearth_op_kv_store(be, dx, n, kvw, dseq, dpos, v, &bl, t);
        }
        for (int32_t i = 0; i < n_q; i++) pos[i] = ctx - n_q + i; /* seq stays 0 */
        hearth_buf_upload(be, dpos, pos, sizeof(int32_t) * n_q);
        hearth_attn_args a = {.n_tok = n_q, .n_head = n_head, .n_head_kv = n_head_kv, .head_dim = D, .head_dim_v = D,
                              .q = dq, .out = dout, .pos = dpos, .seq = dseq, .k = k, .v = v, .blocks = bl,
                              .k_type = t, .v_type = t, .scale = 1.0f / 11.3f, .max_len = ctx, .min_run = n_q};
        for (int i = 0; i < 20; i++) hearth_op_attention(be, &a);
        hearth_buf_download(be, out, dout, sizeof(float) * qw); /* waits for the stream */
        const int iters = 200;
        double t0 = now_s();
        for (int i = 0; i < iters; i++) hearth_op_attention(be, &a);
        hearth_buf_download(be, out, dout, sizeof(float) * qw);
        double us = (now_s() - t0) * 1e6 / iters;
        printf("{\"what\":\"attn\",\"kv\":\"%s\",\"ctx\":%d,\"tok\":%d,\"heads\":\"%d/%d\",\"dim\":%d,\"us\":%.2f,"
               "\"cache_gb_s\":%.1f,\"out0\":%.6f}\n",
               hearth_kv_type_name(t), ctx, n_q, n_head, n_head_kv, D, us,
               2.0 * (double)ctx * (double)hearth_kv_row_bytes(t, kvw) / (us * 1e3),
               (double)out[0]);
        fflush(stdout);
        hearth_buf_free(be, k);
        hearth_buf_free(be, v);
    }
    void *d[] = {dtable, dpos, dseq, dx, dq, dout};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) hearth_buf_free(be, d[i]);
    free(table);
    free(pos);
    free(seq);
    free(x);
    free(q);
    free(out);
    hearth_backend_destroy(be);
}

/* one bf16 matmul of 1..n_max tokens (see the top comment) */
static void mv_bench(int n_max) {
    const int64_t ne1 = 14336, ne0 = 4096;
    if (n_max < 1 || n_max > 8) {
        fprintf(stderr, "--mv: 1 to 8 tokens\n");
        exit(2);
    }
    hearth_err err = {0};
    hearth_backend *be = hearth_backend_cuda_create(0, 64, NULL, &err);
    if (!be) {
        fprintf(stderr, "backend: %s\n", err.msg);
        exit(1);
    }
    const size_t rb = hearth_row_size(HEARTH_TYPE_BF16, ne0);
    uint16_t *w = malloc(rb * (size_t)ne1); /* lives as long as the backend: its device copy is keyed by it */
    float *x = malloc(sizeof(float) * n_max * ne0), *y = malloc(sizeof(float) * n_max * ne1);
    for (int64_t i = 0; i < ne1 * ne0; i++) {
        float v = (float)(rnd_tok() % 2001 - 1000) / 32000.0f;
        uint32_t u;
        memcpy(&u, &v, 4);
        w[i] = (uint16_t)(u >> 16);
    }
    for (int64_t i = 0; i < n_max * ne0; i++) x[i] = (float)(rnd_tok() % 2001 - 1000) / 1000.0f;
    const hearth_weight wt = {.type = HEARTH_TYPE_BF16, .ne0 = ne0, .ne1 = ne1, .row_bytes = rb, .data = w};
    float *dx = hearth_buf_alloc(be, sizeof(float) * n_max * ne0),
          *dy = hearth_buf_alloc(be, sizeof(float) * n_max * ne1);
    hearth_buf_upload(be, dx, x, sizeof(float) * n_max * ne0);
    double us1 = 0;
    for (int n = 1; n <= n_max; n++) {
        for (int i = 0; i < 20; i++) hearth_op_matmul(be, &wt, dx, n, dy, ne1);
        hearth_buf_download(be, y, dy, sizeof(float) * n * ne1); /* waits for the stream */
        const int iters = 200;
        double t0 = now_s();
        for (int i = 0; i < iters; i++) hearth_op_matmul(be, &wt, dx, n, dy, ne1);
        hearth_buf_download(be, y, dy, sizeof(float) * n * ne1);
        double us = (now_s() - t0) * 1e6 / iters;
        if (n == 1) us1 = us;
        printf("{\"what\":\"mv\",\"type\":\"bf16\",\"rows\":%lld,\"width\":%lld,\"tok\":%d,\"us\":%.2f,"
               "\"weight_gb_s\":%.1f,\"vs_one\":%.3f,\"y0\":%.6f}\n",
               (long long)ne1, (long long)ne0, n, us, (double)rb * (double)ne1 / (us * 1e3), us / us1, (double)y[0]);
        fflush(stdout);
    }
    hearth_buf_free(be, dx);
    hearth_buf_free(be, dy);
    hearth_backend_destroy(be);
    free(w);
    free(x);
    free(y);
}

/* one weight of ne1 x ne0 (bf16, q8_0 or q4_0) at each token count of list: us per call and
 * weight GB/s */
static void gemm_bench(const char *list, const char *type) {
    const hearth_type wty = !strcmp(type, "q8_0")   ? HEARTH_TYPE_Q8_0
                            : !strcmp(type, "q4_0") ? HEARTH_TYPE_Q4_0
                                                    : HEARTH_TYPE_BF16;
    const int64_t shapes[][2] = {{14336, 4096}, {4096, 14336}, {4096, 4096}, {1024, 4096}};
    int toks[32], nt = 0, tmax = 1;
    for (const char *p = list; *p && nt < 32;) {
        toks[nt] = atoi(p);
        if (toks[nt] < 1 || toks[nt] > 4096) {
            fprintf(stderr, "--gemm: token counts 1 to 4096\n");
            exit(2);
        }
        if (toks[nt] > tmax) tmax = toks[nt];
        nt++;
        p = strchr(p, ',');
        if (!p) break;
        p++;
    }
    hearth_err err = {0};
    hearth_backend *be = hearth_backend_cuda_create(0, tmax, NULL, &err);
    if (!be) {
        fprintf(stderr, "backend: %s\n", err.msg);
        exit(1);
    }
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int64_t ne1 = shapes[si][0], ne0 = shapes[si][1];
        const size_t rb = hearth_row_size(wty, ne0);
        uint8_t *w = malloc(rb * (size_t)ne1); /* kept until the backend goes: its device copy is keyed by it */
        float *x = malloc(sizeof(float) * tmax * ne0), *y = malloc(sizeof(float) * tmax * ne1),
              *row = malloc(sizeof(float) * ne0);
        for (int64_t r = 0; r < ne1; r++) {
            for (int64_t i = 0; i < ne0; i++) row[i] = (float)(rnd_tok() % 2001 - 1000) / 32000.0f;
            if (wty == HEARTH_TYPE_Q8_0) hearth_q8_0_from_float_ref(row, w + (size_t)r * rb, ne0);
            else if (wty == HEARTH_TYPE_Q4_0) hearth_q4_0_from_float_ref(row, w + (size_t)r * rb, ne0);
            else hearth_bf16_from_float_ref(row, w + (size_t)r * rb, ne0);
        }
        free(row);
        for (int64_t i = 0; i < tmax * ne0; i++) x[i] = (float)(rnd_tok() % 2001 - 1000) / 1000.0f;
        const hearth_weight wt = {.type = wty, .ne0 = ne0, .ne1 = ne1, .row_bytes = rb, .data = w};
        float *dx = hearth_buf_alloc(be, sizeof(float) * tmax * ne0), *dy = hearth_buf_alloc(be, sizeof(float) * tmax * ne1);
        hearth_buf_upload(be, dx, x, sizeof(float) * tmax * ne0);
        for (int k = 0; k < nt; k++) {
            const int n = toks[k], iters = 100;
            for (int i = 0; i < 10; i++) hearth_op_matmul(be, &wt, dx, n, dy, ne1);
            hearth_buf_download(be, y, dy, sizeof(float) * n * ne1);
            double t0 = now_s();
            for (int i = 0; i < iters; i++) hearth_op_matmul(be, &wt, dx, n, dy, ne1);
            hearth_buf_download(be, y, dy, sizeof(float) * n * ne1);
            double us = (now_s() - t0) * 1e6 / iters;
            printf("{\"what\":\"gemm\",\"type\":\"%s\",\"rows\":%lld,\"width\":%lld,\"tok\":%d,\"us\":%.2f,"
                   "\"weight_gb_s\":%.1f,\"y0\":%.6f}\n",
                   hearth_type_name(wty), (long long)ne1, (long long)ne0, n, us, (double)rb * (double)ne1 / (us * 1e3), (double)y[0]);
            fflush(stdout);
        }
        hearth_buf_free(be, dx);
        hearth_buf_free(be, dy);
        free(x);
        free(y);
    }
    hearth_backend_destroy(be);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_cuda MODEL.gguf [--device cuda|cpu] [--gen N] [--prefill N] [--streams N[,N...]] "
                        "[--kv-quant off|8|4] [--depth N]\n"
                        "       bench_cuda --attn CTX [--heads H/HKV] [--dim D] [--tok N]\n"
                        "       bench_cuda --mv N\n       bench_cuda --gemm T1,T2,... [bf16|q8_0|q4_0]\n");
        return 2;
    }
    if (!strcmp(argv[1], "--gemm") && argc >= 3) {
        gemm_bench(argv[2], argc >= 4 ? argv[3] : "bf16");
        return 0;
    }
    if (!strcmp(argv[1], "--mv") && argc >= 3) {
        mv_bench(atoi(argv[2]));
        return 0;
    }
    if (!strcmp(argv[1], "--attn") && argc >= 3) {
        int32_t h = 32, hkv = 8, d = 128, n_q = 1;
        for (int i = 3; i + 1 < argc; i += 2) {
            if (!strcmp(argv[i], "--heads")) sscanf(argv[i + 1], "%d/%d", &h, &hkv);
            else if (!strcmp(argv[i], "--dim")) d = atoi(argv[i + 1]);
            else if (!strcmp(argv[i], "--tok")) n_q = atoi(argv[i + 1]);
        }
        attn_bench(atoi(argv[2]), h, hkv, d, n_q);
        return 0;
    }
    bool cuda = true;
    int gen = 128, prefill = 0, depth = 0;
    const char *stream_list = NULL;
    sampling = hearth_sampler_params_default();
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--device")) cuda = strcmp(argv[i + 1], "cpu") != 0;
        else if (!strcmp(argv[i], "--gen")) gen = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--prefill")) prefill = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--streams")) stream_list = argv[i + 1];
        else if (!strcmp(argv[i], "--depth")) depth = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--temperature")) sampling.temperature = (float)atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--top-k")) sampling.top_k = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--top-p")) sampling.top_p = (float)atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--kv-quant") && !hearth_kv_quant_parse(argv[i + 1], &kvq, NULL, 0)) {
            fprintf(stderr, "--kv-quant: expected off, 8 or 4\n");
            return 2;
        }
    }
    int stream_n[16], n_lists = 0; /* --streams 16,64 */
    for (const char *s = stream_list; s && *s;) {
        char *end;
        long n = strtol(s, &end, 10);
        if (end == s || n < 1 || n > 4096 || (*end && *end != ',') || n_lists == 16) {
            fprintf(stderr, "--streams: up to 16 counts of 1 to 4096, comma-separated (16,64), not '%s'\n",
                    stream_list);
            return 2;
        }
        stream_n[n_lists++] = (int)n;
        s = *end ? end + 1 : end;
    }
    if (depth < 0 || depth > 1 << 20) {
        fprintf(stderr, "--depth: 0 to %d tokens\n", 1 << 20);
        return 2;
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
    decode_and_prefill(m, cuda, gen, prefill, depth);
    for (int i = 0; i < n_lists; i++) streams(m, cuda, stream_n[i], gen);
    hearth_model_destroy(m);
    return 0;
}
