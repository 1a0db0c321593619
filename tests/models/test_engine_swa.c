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
 * sanitizers (tests/unit/test_sched_fake.c covers the same bookkeeping there).
 */
#include "engine/kv.h"
#include "engine/kv_pool.h"
#include "engine/request.h"
#include "engine/sched.h"
#include "test.h"

#include <stdlib.h>

enum { GEN = 16, STEP = 512, BS = 16, MAX_PROMPT = 8192 };
static int32_t PROMPT = 536; /* HEARTH_SWA_TEST_PROMPT overrides (a longer run shows more saving) */

typedef struct {
    int32_t toks[GEN];
    int32_t n_got;
    int32_t used_at_end;   /* blocks held by the sequence after its last decode step */
    int32_t max_used;
    size_t  block_bytes;
    int64_t bad_steps;     /* steps after which the used blocks differ from the layout's count */
} outcome;

/* Blocks a sequence holds after a step that leaves n_done tokens in the cache. */
static int32_t expected_blocks(const hearth_kv_layout *lay, int32_t n_done) {
    int32_t all = (n_done + BS - 1) / BS;
    int32_t first = lay->n_swa > 0 && n_done >= lay->n_swa ? (n_done - lay->n_swa + 1) / BS : 0;
    return lay->n_full * all + lay->n_win * (all - first);
}

static void run(hearth_model *m, const int32_t *prompt, bool swa_full, outcome *o) {
    const hearth_hparams *hp = hearth_model_hparams(m);
    int64_t width = hp->n_ff > hp->n_embd ? hp->n_ff : hp->n_embd;
    int32_t CTX = (PROMPT + GEN + BS - 1) / BS * BS;
    hearth_backend *be = hearth_backend_cpu_create(2, STEP, width, CTX);
    hearth_fwd *fwd = be ? hearth_fwd_create(m, be, STEP) : NULL;
    hearth_kv_pool *pool = NULL;
    hearth_err err;
    hearth_kv_pool_params pp = {.budget_bytes = hearth_kv_bytes_per_token(m, true) * CTX, .block_size = BS,
                                .n_seqs = 1, .max_seq_len = CTX, .f16 = true, .swa_full = swa_full};
    CHECK_EQ(hearth_kv_pool_create(m, &pp, &pool, &err), HEARTH_OK);
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
        int32_t want = swa_full ? (n_done + BS - 1) / BS : expected_blocks(lay, n_done);
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

TEST(gemma3_window_release_keeps_the_tokens_and_frees_the_window) {
    if (getenv("HEARTH_TEST_SANITIZED")) TEST_SKIP("real models run in the normal build");
    const char *path = getenv("HEARTH_GEMMA3_GGUF");
    if (!path) TEST_SKIP("model path not set");
    hearth_model *m = NULL;
    hearth_err err;
    CHECK_EQ(hearth_model_load(path, &m, &err), HEARTH_OK);
    if (!m) return;
    const hearth_hparams *hp = hearth_model_hparams(m);
    CHECK(hp->n_swa > 0 && hp->n_swa < PROMPT); /* the sequence outgrows the window */
    hearth_kv_layout lay = hearth_kv_layout_of(m, false);
    CHECK(lay.n_win > 0 && lay.n_full > 0 && lay.per_group * (lay.n_full + lay.n_win) == hp->n_layer);
    CHECK_EQ(lay.n_win, 5 * lay.n_full); /* 5 of every 6 layers slide */
    const char *env = getenv("HEARTH_SWA_TEST_PROMPT");
    if (env && atoi(env) > 0 && atoi(env) <= MAX_PROMPT) PROMPT = atoi(env);
    int32_t *prompt = malloc((size_t)PROMPT * sizeof(int32_t));
    uint32_t s = 777;
    for (int i = 0; i < PROMPT; i++) {
        s = s * 1103515245u + 12345u;
        prompt[i] = 100 + (int32_t)((s >> 8) % 20000u);
    }
    outcome on = {0}, off = {0};
    run(m, prompt, false, &on);
    run(m, prompt, true, &off);
    CHECK_EQ(on.bad_steps, 0);
    CHECK_EQ(off.bad_steps, 0);
    int diff = 0;
    for (int i = 0; i < GEN; i++) diff += on.toks[i] != off.toks[i];
    CHECK_EQ(diff, 0);
    /* bytes held at the end: release on against every layer keeping every block */
    double mb_on = (double)on.used_at_end * (double)on.block_bytes / 1e6,
           mb_off = (double)off.used_at_end * (double)off.block_bytes / 1e6;
    printf("  %d tokens cached: release on %d blocks of %d layers (%.2f MB, peak %d), off %d blocks of %d layers "
           "(%.2f MB, peak %d)\n", PROMPT + GEN - 2, on.used_at_end, lay.per_group, mb_on, on.max_used,
           off.used_at_end, hp->n_layer, mb_off, off.max_used);
    CHECK(mb_on < mb_off);
    free(prompt);
    hearth_model_destroy(m);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
