/*
 * test_deltanet_prefix.c - prefix caching on the hybrid families (gated DeltaNet layers beside
 * full attention: Qwen3.5 text, Qwen3-Next; checkpoints by tools/make_deltanet_tiny.py in
 * tests/golden/hf/), through the engine.
 *
 * A prefix hit on these models must give back the recurrent state as it stood at the cut, from
 * the state snapshot kept with the cut's block (engine/kv_pool.h, prefix_cache.h). Every request
 * here is compared with the same prompt run cold (an engine of one slot without a prompt cache):
 * the same greedy tokens and the same log-probabilities of the chosen token and the top 5 at
 * every generated position, bitwise (batch-invariant numerics: the batched-vs-alone tests'
 * bound). With blocks of 4 tokens a prompt A of 40 tokens keeps snapshots after blocks 1, 2, 4
 * (positions 4, 8, 16) and its last full block (36); the hits are then known exactly:
 *
 *   B = A[0..30) + its own 10: the cached chain is 7 blocks, the last snapshot in it at 16
 *       (the share ends mid-block); B snapshots the chain's end, 28
 *   C = A[0..30) + another 10: 28 (B's branch snapshot)
 *   A again: 36
 *   D, E = A[0..22) + each its own 18, in one batch: 16 each
 *
 * and the engine's counters must say so. A restore that gives the zero state (or a stale one)
 * changes the logits of the tokens after the hit. Then all of them at once in a pool too small
 * for them (preemption by recompute resumes from the snapshots of the sequence's own blocks).
 */
#include "engine/engine.h"
#include "hf_golden.h"
#include "model/model_internal.h"
#include "test.h"

#include <string.h>
#include <time.h>

enum { BS = 4, CTX = 64, NGEN = 8, TOPK = 5, NP = 6, MAXP = 40 };

typedef struct {
    int32_t tok[NGEN];
    float   lp[NGEN][1 + TOPK]; /* the chosen token's logprob, then the top 5's */
    int32_t top[NGEN][TOPK];
    int32_t n_cached;
} gen;

/* An engine of batch slots on blocks of BS tokens; the KV budget holds pool_tokens and snaps
 * state snapshots (cache 0: no prompt cache). */
static hearth_engine *engine_of(hearth_model *m, int32_t batch, int32_t pool_tokens, int64_t cache, int32_t snaps) {
    const hearth_hparams *hp = hearth_model_hparams(m);
    int64_t n_lin = 0;
    for (int32_t il = 0; il < hp->n_layer; il++) n_lin += hearth_hparams_is_linear(hp, il);
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_threads = 2;
    ep.n_ctx = CTX;
    ep.batch = batch;
    ep.block_size = BS;
    ep.max_step = 64;
    ep.prompt_cache = cache;
    ep.state_snaps = snaps;
    ep.debug_checks = true;
    ep.numerics.batch_invariant = true;
    ep.kv_budget = (int64_t)hearth_kv_bytes_per_token(m, HEARTH_KV_SCHEME_F16) * pool_tokens +
                   (int64_t)snaps * n_lin * hearth_hparams_lin_state_floats(hp) * 4;
    hearth_engine *e = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_engine_create(m, &ep, &e, &err), HEARTH_OK);
    return e;
}

/* Submit prompts p[0..n) (lengths len[]) at once, greedy, NGEN tokens each with logprobs. */
static void run_all(hearth_engine *e, int32_t p[][MAXP], const int32_t *len, int n, gen *out) {
    hearth_request *r[NP] = {0};
    hearth_err err = {0};
    for (int i = 0; i < n; i++) {
        hearth_request_params rp = {.prompt = p[i], .n_prompt = (size_t)len[i], .max_tokens = NGEN,
                                    .sampling = hearth_sampler_params_default(), .ignore_eog = true,
                                    .logprobs = true, .top_logprobs = TOPK};
        rp.sampling.temperature = 0;
        CHECK_EQ(hearth_engine_submit(e, &rp, &r[i], &err), HEARTH_OK);
    }
    for (int i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].n_cached = -1;
        int k = 0;
        for (;;) {
            hearth_event ev;
            if (!r[i] || hearth_request_next(r[i], &ev, 120000) != HEARTH_OK) {
                CHECK(!"timed out waiting for a token");
                break;
            }
            if (ev.kind == HEARTH_EV_DONE) {
                CHECK_EQ(ev.status, HEARTH_OK);
                out[i].n_cached = ev.n_cached;
                break;
            }
            if (ev.kind != HEARTH_EV_TOKEN) continue;
            if (k < NGEN) {
                CHECK(ev.has_logprobs && ev.lp.n_top == TOPK);
                out[i].tok[k] = ev.token;
                out[i].lp[k][0] = ev.lp.logprob;
                for (int j = 0; j < TOPK; j++) out[i].lp[k][1 + j] = ev.lp.top_logprob[j], out[i].top[k][j] = ev.lp.top_id[j];
            }
            k++;
        }
        CHECK_EQ(k, NGEN);
        if (r[i]) hearth_request_release(r[i]);
    }
}

/* Tokens, top ids and logprobs bitwise equal. */
static bool same(const gen *a, const gen *b) {
    return memcmp(a->tok, b->tok, sizeof a->tok) == 0 && memcmp(a->top, b->top, sizeof a->top) == 0 &&
           memcmp(a->lp, b->lp, sizeof a->lp) == 0;
}

static hearth_engine_stats idle(hearth_engine *e) {
    hearth_engine_stats st;
    for (int i = 0; i < 5000; i++) {
        hearth_engine_stats_get(e, &st);
        if (st.running == 0 && st.waiting == 0) break;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return st;
}

static void check_prefix(const char *path) {
    hearth_model *m = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_model_load(path, &m, &err), HEARTH_OK);
    if (!m) return;
    /* A, B, C, D, E (head comment), F: a prompt of its own */
    int32_t p[NP][MAXP], len[NP] = {40, 40, 40, 40, 40, 33};
    uint32_t s = 777;
    for (int i = 0; i < NP; i++)
        for (int j = 0; j < MAXP; j++) {
            s = s * 1103515245u + 12345u;
            int32_t own = 3 + (int32_t)((s >> 8) % 280u);
            int share = i == 1 || i == 2 ? 30 : i == 3 || i == 4 ? 22 : 0;
            p[i][j] = i > 0 && j < share ? p[0][j] : own;
        }
    gen cold[NP], got[NP];
    hearth_engine *e = engine_of(m, 1, CTX, 0, 0);
    for (int i = 0; e && i < NP; i++) run_all(e, &p[i], &len[i], 1, &cold[i]);
    hearth_engine_destroy(e);
    for (int i = 0; i < NP; i++) CHECK_EQ(cold[i].n_cached, 0);
    CHECK(!same(&cold[1], &cold[2]) && !same(&cold[3], &cold[4])); /* the continuations differ */

    e = engine_of(m, 4, 4 * CTX, -1, 32);
    if (e) {
        hearth_engine_info info;
        hearth_engine_info_get(e, &info);
        CHECK_EQ(info.n_snaps, 32);
        int32_t order[4] = {0, 1, 2, 0}, want[4] = {0, 16, 28, 36};
        for (int k = 0; k < 4; k++) {
            int i = order[k];
            run_all(e, &p[i], &len[i], 1, &got[0]);
            fprintf(stderr, "  prompt %c: %d cached tokens (want %d)\n", 'A' + i, got[0].n_cached, want[k]);
            CHECK_EQ(got[0].n_cached, want[k]);
            CHECK(same(&got[0], &cold[i]));
        }
        /* D and E in one batch: each hits A's 16 tokens; when one is admitted a step after the
         * other has prefilled past their shared 22 tokens (a slow build, a loaded machine), it
         * also hits the other's block 5, snapshotted at that branch point: 20 */
        run_all(e, &p[3], &len[3], 2, got);
        for (int i = 0; i < 2; i++) {
            CHECK(got[i].n_cached == 16 || got[i].n_cached == 20);
            CHECK(same(&got[i], &cold[3 + i]));
        }
        CHECK(got[0].n_cached == 16 || got[1].n_cached == 16); /* the first admitted has only A to hit */
        hearth_engine_stats st = idle(e);
        CHECK_EQ(st.cache_hits, 5);
        CHECK_EQ(st.cache_hit_tokens, 16 + 28 + 36 + got[0].n_cached + got[1].n_cached);
        CHECK_EQ(st.check_failures, 0);
    }
    hearth_engine_destroy(e);

    /* all six at once in a pool of about two of them: preempted sequences resume from their own
     * blocks' snapshots */
    e = engine_of(m, 4, 2 * (MAXP + NGEN), -1, 24);
    if (e) {
        run_all(e, p, len, NP, got);
        int differing = 0;
        for (int i = 0; i < NP; i++) differing += !same(&got[i], &cold[i]);
        CHECK_EQ(differing, 0);
        hearth_engine_stats st = idle(e);
        fprintf(stderr, "  tiny pool: %lld preemptions, %lld cache hits\n", (long long)st.preemptions,
                (long long)st.cache_hits);
        CHECK(st.preemptions > 0);
        CHECK_EQ(st.check_failures, 0);
    }
    hearth_engine_destroy(e);
    hearth_model_destroy(m);
}

TEST(qwen3_5_prefix_hits_resume_from_state_snapshots) { check_prefix(HF_GOLD "qwen3_5_text"); }
TEST(qwen3_next_prefix_hits_resume_from_state_snapshots) { check_prefix(HF_GOLD "qwen3_next"); }

int main(int argc, char **argv) {
    hearth_kernels_init();
    return test_main(argc, argv);
}
