/*
 * test_deltanet.c - the hybrid families (gated DeltaNet layers beside gated full attention:
 * Qwen3.5 text, Qwen3-Next) against transformers (goldens and checkpoints by
 * tools/make_deltanet_tiny.py in tests/golden/hf/).
 *
 * Each checkpoint has 3 layers: linear, full, linear (so layer 2's state carries across a full
 * layer). On the ref kernel set (f32 arithmetic, f32 KV cache) the f32 checkpoints must give
 * transformers' logits within 1e-4 at every position of both prompts (12 and 24 tokens, one
 * prefill step each), the same argmax everywhere and the same 32-token greedy continuation,
 * decoded one token at a time on the states and the cache (transformers recomputes the whole
 * sequence with its chunked delta rule at each step, so the recurrent state is checked against
 * a computation that keeps none). The bf16 checkpoint is held to the same on its own golden
 * (the bf16 values widened). The other kernel sets, with the f16 KV cache, to test_hf_tiny.c's
 * bound for f32 weights (0.05) and to QWEN3_5_BF16_BOUND for bf16 ones (below).
 */
#include "engine/engine.h"
#include "hf_golden.h"
#include "model/model_internal.h"
#include "test.h"

#include <string.h>
#include <time.h>

static void check_ref(const char *name, const char *golden) {
    hearth_isa was = hearth_kernels_isa();
    hf_result r = hf_golden_run(name, golden, HEARTH_ISA_REF, false, true);
    fprintf(stderr, "  %-18s ref: max |dlogit| %.2e, argmax diffs %d, greedy mismatches %d\n", name, r.max_d,
            r.am_diff, r.greedy_mismatch);
    CHECK(r.max_d <= 1e-4);
    CHECK_EQ(r.am_diff, 0);
    CHECK_EQ(r.greedy_mismatch, 0);
    hearth_kernels_select(was);
}

/* The bf16 checkpoint on the fast kernel sets: bf16 weights multiply activations rounded to bf16.
 * This model is more sensitive to that than test_hf_tiny.c's (whose 0.5 rests on a measured
 * 0.19): transformers itself, with every Linear's input rounded to bf16, moves its logits by up
 * to 0.43 (recorded by tools/make_deltanet_tiny.py as the golden's bf16_activations_max_dlogit;
 * the q and k of each DeltaNet head are L2-normalized after the rounding and the delta rule
 * feeds each token's error into every later output). hearth measures 0.52 with the f16 cache
 * added. We require 0.75, test_hf_tiny.c's worst case of aligned roundings. */
#define QWEN3_5_BF16_BOUND 0.75

TEST(qwen3_5_f32) {
    check_ref("qwen3_5_text", "qwen3_5_text");
    hf_golden_check("qwen3_5_text", "qwen3_5_text", 0.05);
}
TEST(qwen3_5_bf16) {
    check_ref("qwen3_5_text-bf16", "qwen3_5_text-bf16");
    hf_golden_check("qwen3_5_text-bf16", "qwen3_5_text-bf16", QWEN3_5_BF16_BOUND);
}
TEST(qwen3_next_f32) {
    check_ref("qwen3_next", "qwen3_next");
    hf_golden_check("qwen3_next", "qwen3_next", 0.05);
}

enum { NQ = 8, PLEN = 20, NGEN = 12, CTX = 64 };

static hearth_engine *hy_engine(hearth_model *m, int32_t batch, int32_t block, int32_t pool_tokens, int64_t cache,
                                hearth_err *err) {
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_threads = 2;
    ep.n_ctx = CTX;
    ep.batch = batch;
    ep.block_size = block;
    ep.max_step = 64;
    ep.prompt_cache = cache;
    ep.debug_checks = true;
    ep.numerics.batch_invariant = true;
    ep.kv_budget = (int64_t)hearth_kv_bytes_per_token(m, HEARTH_KV_SCHEME_F16) * pool_tokens;
    hearth_engine *e = NULL;
    CHECK_EQ(hearth_engine_create(m, &ep, &e, err), HEARTH_OK);
    return e;
}

/* Submit n prompts of PLEN tokens (n_choices <= 2 each), greedy, NGEN tokens each; out[i * n_choices + c]. */
static void hy_run(hearth_engine *e, int32_t p[][PLEN], int n, int n_choices, int32_t out[][NGEN]) {
    hearth_request *r[NQ * 2] = {0};
    hearth_err err = {0};
    for (int i = 0; i < n; i++) {
        hearth_request_params rp = {.prompt = p[i], .n_prompt = PLEN, .max_tokens = NGEN,
                                    .sampling = hearth_sampler_params_default(), .ignore_eog = true};
        rp.sampling.temperature = 0;
        hearth_request_params each[2] = {rp, rp};
        if (n_choices == 1) CHECK_EQ(hearth_engine_submit(e, &rp, &r[i], &err), HEARTH_OK);
        else CHECK_EQ(hearth_engine_submit_n(e, each, n_choices, &r[i * n_choices], &err), HEARTH_OK);
    }
    for (int i = 0; i < n * n_choices; i++) {
        if (!r[i]) continue;
        int k = 0;
        for (;;) {
            hearth_event ev;
            if (hearth_request_next(r[i], &ev, 120000) != HEARTH_OK) {
                CHECK(!"timed out waiting for a token");
                break;
            }
            if (ev.kind == HEARTH_EV_DONE) {
                CHECK_EQ(ev.status, HEARTH_OK);
                break;
            }
            if (k < NGEN) out[i][k] = ev.token;
            k++;
        }
        CHECK_EQ(k, NGEN);
        hearth_request_release(r[i]);
    }
}

static int hy_differing(int32_t a[][NGEN], int32_t b[][NGEN], int n) {
    int d = 0;
    for (int i = 0; i < n; i++) d += memcmp(a[i], b[i], sizeof a[i]) != 0;
    return d;
}

static hearth_engine_stats hy_idle(hearth_engine *e) {
    hearth_engine_stats st;
    for (int i = 0; i < 5000; i++) {
        hearth_engine_stats_get(e, &st);
        if (st.running == 0 && st.waiting == 0) break;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return st;
}

/* Batched equals alone: 8 prompts (pairs sharing a 16-token stem) decoded one at a time in an
 * engine of one slot are the reference (each admission starts its slot's states afresh); all 8
 * at once (each sequence its own state slot), again in the same engine (slots reused, the
 * prompt cache off for this family, so no prefix is reused), in a pool small enough to force
 * preemption (a preempted sequence is recomputed from its start), and as 2 choices of each of
 * 4 prompts (the second forked off the first at the end of its prefill, the states copied)
 * must give the same tokens. */
static void check_engine(const char *path) {
    hearth_model *m = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_model_load(path, &m, &err), HEARTH_OK);
    if (!m) return;
    int32_t p[NQ][PLEN], alone[NQ][NGEN], got[NQ][NGEN];
    uint32_t s = 2323;
    for (int i = 0; i < NQ; i++)
        for (int j = 0; j < PLEN; j++) {
            s = s * 1103515245u + 12345u;
            p[i][j] = (i % 2 && j < 16) ? p[i - 1][j] : 3 + (int32_t)((s >> 8) % 280u);
        }
    hearth_engine *e = hy_engine(m, 1, 16, CTX, 0, &err);
    for (int i = 0; e && i < NQ; i++) hy_run(e, &p[i], 1, 1, &alone[i]);
    hearth_engine_destroy(e);
    int distinct = 0;
    for (int i = 1; i < NQ; i++) distinct += memcmp(alone[i], alone[0], sizeof alone[0]) != 0;
    CHECK(distinct > 0);
    e = hy_engine(m, NQ, 16, NQ * CTX, -1, &err);
    if (e) {
        hearth_engine_info info;
        hearth_engine_info_get(e, &info);
        CHECK_EQ(info.prompt_cache_bytes, 0); /* turned off for this family */
        hy_run(e, p, NQ, 1, got);
        CHECK_EQ(hy_differing(got, alone, NQ), 0);
        memset(got, 0, sizeof got);
        hy_run(e, p, NQ, 1, got);
        CHECK_EQ(hy_differing(got, alone, NQ), 0);
        hearth_engine_stats st = hy_idle(e);
        CHECK_EQ(st.check_failures, 0);
        /* choices: prompts 0, 2, 4, 6 twice each */
        int32_t q4[NQ / 2][PLEN], two[NQ][NGEN];
        for (int i = 0; i < NQ / 2; i++) memcpy(q4[i], p[2 * i], sizeof q4[i]);
        hy_run(e, q4, NQ / 2, 2, two);
        for (int i = 0; i < NQ / 2; i++) {
            CHECK(memcmp(two[2 * i], alone[2 * i], sizeof alone[0]) == 0);
            CHECK(memcmp(two[2 * i + 1], alone[2 * i], sizeof alone[0]) == 0);
        }
    }
    hearth_engine_destroy(e);
    e = hy_engine(m, NQ, 4, 3 * (PLEN + NGEN), 0, &err); /* room for about three: preemption */
    if (e) {
        memset(got, 0, sizeof got);
        hy_run(e, p, NQ, 1, got);
        CHECK_EQ(hy_differing(got, alone, NQ), 0);
        hearth_engine_stats st = hy_idle(e);
        CHECK(st.preemptions > 0);
        CHECK_EQ(st.check_failures, 0);
    }
    hearth_engine_destroy(e);
    hearth_model_destroy(m);
}

TEST(qwen3_5_engine_batched_equals_alone) { check_engine(HF_GOLD "qwen3_5_text"); }
TEST(qwen3_next_engine_batched_equals_alone) { check_engine(HF_GOLD "qwen3_next"); }

int main(int argc, char **argv) {
    hearth_kernels_init();
    return test_main(argc, argv);
}
