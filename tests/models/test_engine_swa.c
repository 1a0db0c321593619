/*
 * test_engine_swa.c - sliding-window block release on the real Gemma 3 (5 of every 6 layers
 * slide over 512 tokens), through the scheduler with the real forward:
 *
 *   one greedy request of a 536-token prompt (prefilled in chunks of 512) and 16 tokens, run
 *   with the window groups releasing their blocks and with every layer keeping all of them
 *   (swa_full): the tokens must be identical (the window layers read the same keys either
 *   way), and after every step the pool's used blocks must be what the layout implies: the
 *   full group ceil(n / bs) blocks, each window group the blocks from the window of the next
 *   query (n - 511) to n, nothing else. Then all of it is free.
 *
 * The block counts are printed. The model comes from HEARTH_GEMMA3_GGUF; skipped under the
 * sanitizers. The same runs on the committed tiny Gemma 3 checkpoint (window 8) cover it there,
 * and on the CUDA backend where a GPU is usable; the tiny Gemma 4 one adds layers that share
 * an earlier layer's cache.
 */
#include "backend/backend.h"
#include "support/kv.h"
#include "engine/kv_pool.h"
#include "engine/request.h"
#include "engine/sched.h"
#include "test.h"

#include <stdlib.h>

enum { MAX_GEN = 32, MAX_PROMPT = 8192 };

/* One run's shape: prompt and generated tokens, prefill chunk, block size, backend. */
typedef struct {
    int32_t prompt, gen, step, bs;
    bool    cuda;
} shape;

typedef struct {
    int32_t toks[MAX_GEN];
    int32_t n_got;
    int32_t used_at_end;   /* blocks held by the sequence after its last decode step */
    int32_t max_used;
    size_t  block_bytes;
    int64_t bad_steps;     /* steps after which the used blocks differ from the layout's count */
} outcome;

/* Blocks a sequence holds after a step that leaves n_done tokens in the cache. */
static int32_t expected_blocks(const hearth_kv_layout *lay, int32_t n_done, int32_t bs) {
    int32_t all = (n_done + bs - 1) / bs;
    int32_t first = lay->n_swa > 0 && n_done >= lay->n_swa ? (n_done - lay->n_swa + 1) / bs : 0;
    return lay->n_full * all + lay->n_win * (all - first);
}

static void run(hearth_model *m, const int32_t *prompt, const shape *sh, bool swa_full, outcome *o) {
    const hearth_hparams *hp = hearth_model_hparams(m);
    const int32_t PROMPT = sh->prompt, GEN = sh->gen, STEP = sh->step, BS = sh->bs;
    int64_t width = hp->n_ff > hp->n_embd ? hp->n_ff : hp->n_embd;
    int32_t CTX = (PROMPT + GEN + BS - 1) / BS * BS;
    hearth_err err = {0};
    hearth_backend *be = sh->cuda ? hearth_backend_cuda_create(0, STEP, NULL, &err)
                                  : hearth_backend_cpu_create(2, STEP, width, CTX, NULL);
    hearth_fwd *fwd = be ? hearth_fwd_create(m, be, STEP, NULL) : NULL;
    hearth_kv_pool *pool = NULL;
    hearth_kv_pool_params pp = {.budget_bytes = hearth_kv_bytes_per_token(m, HEARTH_KV_SCHEME_F16) * (size_t)CTX, .block_size = BS,
                                .n_seqs = 1, .max_seq_len = CTX, .kv = HEARTH_KV_SCHEME_F16, .swa_full = swa_full,
                                .be = sh->cuda ? be : NULL};
    CHECK(be != NULL);
    if (be) CHECK_EQ(hearth_kv_pool_create(m, &pp, &pool, &err), HEARTH_OK);
    hearth_sched_params sp = {.batch = 1, .max_step = STEP, .n_ctx = CTX};
    hearth_sched *s = fwd && pool ? hearth_sched_create(m, fwd, pool, NULL, &sp) : NULL;
    CHECK(s != NULL);
    if (!s) goto out;
    const hearth_kv_layout *lay = hearth_kv_pool_layout(pool);
    o->block_bytes = hearth_kv_pool_block_bytes(pool);
    hearth_request_params rp = {.prompt = prompt, .n_prompt = PROMPT, .max_tokens = GEN,
                                .sampling = hearth_sampler_params_default(), .ignore_eog = true};
    rp.sampling.temperature = 0;
    hearth_request *r = hearth_req_create(&rp);
    CHECK(r != NULL);
    if (!r) goto out;
    hearth_sched_add(s, r);
    int32_t total = hearth_kv_pool_n_blocks(pool);
    for (int32_t step = 0; !hearth_sched_idle(s) && step < 1000; step++) {
        hearth_sched_step(s);
        CHECK(hearth_sched_check(s));
        hearth_event ev;
        while (hearth_request_next(r, &ev, 0) == HEARTH_OK && ev.kind == HEARTH_EV_TOKEN)
            if (o->n_got < GEN) o->toks[o->n_got++] = ev.token;
        if (hearth_sched_idle(s)) break;
        /* prefill chunks of STEP, then one token a step; the last sampled token is not fed yet */
        int32_t n_done = o->n_got == 0 ? (step + 1) * STEP : PROMPT + o->n_got - 1;
        int32_t used = total - hearth_kv_pool_n_free(pool);
        int32_t want = swa_full ? (n_done + BS - 1) / BS : expected_blocks(lay, n_done, BS);
        o->bad_steps += used != want;
        if (used > o->max_used) o->max_used = used;
        o->used_at_end = used;
    }
    CHECK_EQ(o->n_got, GEN);
    CHECK(hearth_sched_idle(s));
    CHECK_EQ(hearth_kv_pool_n_free(pool), total); /* the finished request freed everything */
    hearth_req_unref(r);
out:
    hearth_sched_destroy(s);
    hearth_kv_pool_destroy(pool);
    hearth_fwd_destroy(fwd);
    hearth_backend_destroy(be);
}

/* Release on and off give the same tokens and the layout's block counts; returns on's and
 * off's bytes held after the last decode step. */
static void compare(hearth_model *m, const shape *sh, double *mb_on, double *mb_off) {
    const hearth_hparams *hp = hearth_model_hparams(m);
    CHECK(hp->n_swa > 0 && hp->n_swa < sh->prompt); /* the sequence outgrows the window */
    hearth_kv_layout lay = hearth_kv_layout_of(m, false);
    CHECK(lay.n_win > 0 && lay.n_full > 0 && lay.per_group * (lay.n_full + lay.n_win) == hearth_kv_n_cache_layers(m));
    int32_t *prompt = malloc((size_t)sh->prompt * sizeof(int32_t));
    uint32_t s = 777;
    for (int i = 0; i < sh->prompt; i++) {
        s = s * 1103515245u + 12345u;
        prompt[i] = 1 + (int32_t)((s >> 8) % (uint32_t)(hp->n_vocab < 20000 ? hp->n_vocab - 1 : 20000));
    }
    outcome on = {0}, off = {0};
    run(m, prompt, sh, false, &on);
    run(m, prompt, sh, true, &off);
    CHECK_EQ(on.bad_steps, 0);
    CHECK_EQ(off.bad_steps, 0);
    int diff = 0;
    for (int i = 0; i < sh->gen; i++) diff += on.toks[i] != off.toks[i];
    CHECK_EQ(diff, 0);
    *mb_on = (double)on.used_at_end * (double)on.block_bytes / 1e6;
    *mb_off = (double)off.used_at_end * (double)off.block_bytes / 1e6;
    printf("  %s, %d tokens cached: release on %d blocks of %d layers (%.3f MB), off %d blocks of %d layers "
           "(%.3f MB)\n", sh->cuda ? "cuda" : "cpu", sh->prompt + sh->gen - 2, on.used_at_end, lay.per_group, *mb_on,
           off.used_at_end, hearth_kv_n_cache_layers(m), *mb_off);
    CHECK(*mb_on < *mb_off);
    free(prompt);
}

/* A tiny checkpoint (window 8): blocks of 4, chunks of 16, so windows cross blocks within and
 * between steps; on the CPU, then on the GPU where there is one. */
static void compare_tiny(hearth_model *m) {
    shape sh = {.prompt = 45, .gen = 24, .step = 16, .bs = 4};
    double on, off;
    compare(m, &sh, &on, &off);
    if (hearth_cuda_device_count() > 0) {
        sh.cuda = true;
        compare(m, &sh, &on, &off);
    }
}

TEST(gemma3_window_release_keeps_the_tokens_and_frees_the_window) {
    if (getenv("HEARTH_TEST_SANITIZED")) TEST_SKIP("real models run in the normal build");
    const char *path = getenv("HEARTH_GEMMA3_GGUF");
    if (!path) TEST_SKIP("model path not set");
    hearth_model *m = NULL;
    hearth_err err;
    CHECK_EQ(hearth_model_load(path, &m, &err), HEARTH_OK);
    if (!m) return;
    hearth_kv_layout lay = hearth_kv_layout_of(m, false);
    CHECK_EQ(lay.n_win, 5 * lay.n_full); /* 5 of every 6 layers slide */
    shape sh = {.prompt = 536, .gen = 16, .step = 512, .bs = 16};
    const char *env = getenv("HEARTH_SWA_TEST_PROMPT"); /* a longer run shows more saving */
    if (env && atoi(env) > 0 && atoi(env) <= MAX_PROMPT) sh.prompt = atoi(env);
    double on, off;
    compare(m, &sh, &on, &off);
    hearth_model_destroy(m);
}

/* The tiny Gemma 3 checkpoint (2 layers: one sliding over 8 tokens, one full): blocks of 4,
 * chunks of 16, so windows cross blocks within and between steps; fast enough for the
 * sanitizers, and on the GPU where there is one. */
TEST(tiny_gemma3_window_release_cpu_and_cuda) {
    hearth_model *m = NULL;
    hearth_err err;
    CHECK_EQ(hearth_model_load("tests/golden/hf/gemma3_text", &m, &err), HEARTH_OK);
    if (!m) return;
    compare_tiny(m);
    hearth_model_destroy(m);
}

/* The tiny Gemma 4 checkpoint (4 layers: sliding over 8 tokens and full, alternating; the last
 * two read the cache of the first two, KV sharing): only the two that store K and V have blocks,
 * one in the full group and one in the window group, and each layer reads its own group's table
 * (a shared layer its source's). */
TEST(tiny_gemma4_shared_layers_window_release) {
    hearth_model *m = NULL;
    hearth_err err;
    CHECK_EQ(hearth_model_load("tests/golden/hf/gemma4_text", &m, &err), HEARTH_OK);
    if (!m) return;
    CHECK_EQ(hearth_kv_n_cache_layers(m), 2);
    hearth_kv_layout lay = hearth_kv_layout_of(m, false);
    CHECK(lay.per_group == 1 && lay.n_full == 1 && lay.n_win == 1);
    compare_tiny(m);
    hearth_model_destroy(m);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
