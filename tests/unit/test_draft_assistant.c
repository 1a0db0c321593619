/*
 * test_draft_assistant.c - the Gemma 4 assistant draft source (engine/draft_assistant.c,
 * models/gemma4_assistant.c) on the committed tiny Gemma 4 target (tests/golden/hf/gemma4_text)
 * and the tiny assistant made for it by tools/make_gemma4_assistant.py, whose golden holds
 * transformers' drafts (gemma4_assistant.json):
 *
 *   check     the assistant loads (no tokenizer of its own, centroid-masked logits) and is
 *             accepted for its target; refused, naming the first difference, for a target that
 *             is not Gemma 4 (tiny Gemma 3), for one whose full-attention layers have other kv
 *             heads (tiny gemma4_moe: 2 kv heads of 32 where the assistant reads 1), and a plain
 *             model offered as the assistant
 *   golden    for each golden prompt, in a paged pool of blocks of 4 whose window blocks are
 *             handed back as the scheduler does: the target's greedy token after the prompt is
 *             transformers', each of the 4 draft steps' logits (through hearth_forward_assistant)
 *             is within LOGIT_TOL of transformers' (f32 weights and cache: only the order of
 *             sums differs), and the source's 4 drafts are transformers' exactly; the second
 *             prompt (20 tokens) runs past the window, so the sliding layer reads only the
 *             window + 1 positions transformers' mask lets through
 *   engine    8 concurrent greedy requests (two with no_spec): the tokens of an engine without
 *             speculation, token for token, with drafts made; again through the prefix cache;
 *             with a pool small enough to preempt; with a sampled round (fixed seeds) running to
 *             its lengths. A random assistant's drafts are rarely the target's token, so
 *             acceptance is not asserted; the identity is.
 *
 * On a GPU (skipped without one) both again on the CUDA backend: the golden checks with the
 * target's pool in device memory and the ref numerics (f32 activations and cache), logits within
 * CUDA_TOL of the largest (test_cuda_models.c's tolerance), a pick other than transformers' only
 * where its golden logits are that close; the engine checks against plain decoding on CUDA, a
 * sequence allowed the reference's runner-up where its top two are within CUDA_TIE nats (a verify
 * step orders its sums otherwise than a decode step, as test_draft_model.c allows).
 */
#include "engine/engine.h"
#include "engine/kv_pool.h"
#include "engine/spec.h"
#include "models/forward.h"
#include "test.h"
#include "cJSON.h"

#include "../golden_json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TARGET "tests/golden/hf/gemma4_text"
#define ASSISTANT "tests/golden/hf/gemma4_assistant"
#define GOLDEN "tests/golden/hf/gemma4_assistant.json"
#define LOGIT_TOL 1e-4
#define CUDA_TOL 1e-2  /* of the row's largest logit: test_cuda_models.c's TOL_TINY */
#define CUDA_TIE 0.2f  /* nats: test_draft_model.c's, for greedy runs on the GPU */

static hearth_model *load(const char *path) {
    hearth_model *m = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_model_load(path, &m, &err), HEARTH_OK);
    if (!m) fprintf(stderr, "  %s: %s\n", path, err.msg);
    return m;
}

TEST(the_assistant_is_checked_against_its_target) {
    hearth_model *t = load(TARGET), *a = load(ASSISTANT), *g3 = load("tests/golden/hf/gemma3_text"),
                 *moe = load("tests/golden/hf/gemma4_moe");
    if (!t || !a || !g3 || !moe) goto out;
    const hearth_hparams *hp = hearth_model_hparams(a);
    CHECK_EQ(hp->n_embd_backbone, 64);
    CHECK_EQ(hp->n_centroids, 8);
    CHECK_EQ(hp->centroid_top_k, 2);
    CHECK(hearth_model_tok(a) == NULL);
    hearth_err err = {0};
    CHECK_EQ(hearth_draft_assistant_check(t, a, &err), HEARTH_OK);
    CHECK_EQ(hearth_draft_assistant_window(a), 8 + 2);
    CHECK_EQ(hearth_draft_assistant_check(g3, a, &err), HEARTH_E_INVALID);
    printf("  gemma3 target: %s\n", err.msg);
    CHECK(strstr(err.msg, "Gemma 4 target") != NULL);
    CHECK_EQ(hearth_draft_assistant_check(moe, a, &err), HEARTH_E_INVALID);
    printf("  gemma4_moe target: %s\n", err.msg);
    CHECK_STR(err.msg, "the assistant's layer 1 (full-attention) reads 1 kv heads of 32 from the target's layer 1, "
                       "which has 2 of 32");
    CHECK_EQ(hearth_draft_assistant_check(t, t, &err), HEARTH_E_INVALID);
    CHECK(strstr(err.msg, "not a Gemma 4 assistant") != NULL);
out:
    hearth_model_destroy(t);
    hearth_model_destroy(a);
    hearth_model_destroy(g3);
    hearth_model_destroy(moe);
}

/* ---- against transformers ---- */

enum { BS = 4, CTX = 64, K = 4 };

/* Hand back the window groups' blocks the slot's next query (at pos) no longer reads, as the
 * scheduler does after a step. */
static void release_window(hearth_kv_pool *pool, int32_t slot, int32_t pos) {
    for (int32_t g = hearth_kv_pool_layout(pool)->n_full; g < hearth_kv_pool_n_groups(pool); g++) {
        int32_t first = hearth_kv_pool_first_needed(pool, g, pos);
        while (hearth_kv_pool_seq_dead(pool, g, slot) < first)
            hearth_kv_pool_unref(pool, hearth_kv_pool_seq_take(pool, g, slot));
    }
}

static void free_slot(hearth_kv_pool *pool, int32_t slot) {
    for (int32_t g = 0; g < hearth_kv_pool_n_groups(pool); g++)
        while (hearth_kv_pool_seq_blocks(pool, g, slot) > 0) {
            int32_t b = hearth_kv_pool_seq_pop(pool, g, slot);
            if (b < 0) break;
            hearth_kv_pool_unref(pool, b);
        }
}

static int32_t argmax_n(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* The largest |logit| of golden row gl and whether id (a pick other than want) is within tol of
 * want's logit there: a near tie the device's order of sums may part. */
static double golden_max(const cJSON *gl) {
    double mx = 0;
    for (int32_t v = 0; v < cJSON_GetArraySize(gl); v++)
        if (fabs(cJSON_GetArrayItem(gl, v)->valuedouble) > mx) mx = fabs(cJSON_GetArrayItem(gl, v)->valuedouble);
    return mx;
}
static bool near_tie(const cJSON *gl, int32_t id, int32_t want, double tol) {
    return fabs(cJSON_GetArrayItem(gl, want)->valuedouble - cJSON_GetArrayItem(gl, id)->valuedouble) <= tol;
}

/* On the CPU (cuda false; the default numerics, f32 cache): logits within LOGIT_TOL, drafts
 * exact. On the GPU (cuda true; the ref numerics: f32 activations and an f32 cache in device
 * memory): logits within CUDA_TOL of the row's largest golden logit, as test_cuda_models.c holds
 * whole models, each draft step fed transformers' draft so that one step's near tie does not
 * move the next; a pick other than transformers' passes only where the golden logits of the two
 * are within that tolerance (said so in the output). */
static void check_golden(bool cuda) {
    char *json = golden_slurp(GOLDEN, NULL);
    cJSON *doc = json ? cJSON_Parse(json) : NULL;
    const cJSON *prompts = cJSON_GetObjectItemCaseSensitive(doc, "prompts");
    CHECK(cJSON_GetArraySize(prompts) == 2);
    hearth_model *t = load(TARGET), *a = load(ASSISTANT);
    hearth_backend *be = NULL;
    hearth_kv_pool *pool = NULL;
    hearth_fwd *tf = NULL, *af = NULL;
    hearth_drafter *d = NULL;
    hearth_err err = {0};
    if (!t || !a || !doc) goto out;
    int32_t V = hearth_model_hparams(t)->n_vocab, E = hearth_model_hparams(t)->n_embd;
    if (cuda) {
        const hearth_numerics ref = {.tier = HEARTH_NUMERICS_REF};
        be = hearth_backend_cuda_create(0, CTX, &ref, &err);
        if (!be) {
            fprintf(stderr, "  the CUDA backend: %s\n", err.msg);
            test_cur_failed++;
            goto out;
        }
    } else {
        be = hearth_backend_cpu_create(2, CTX, 256, CTX, NULL);
    }
    hearth_kv_pool_params pp = {.budget_bytes = hearth_kv_bytes_per_token(t, HEARTH_KV_SCHEME_F32) * 4 * CTX,
                                .block_size = BS, .n_seqs = 2, .max_seq_len = CTX, .kv = HEARTH_KV_SCHEME_F32,
                                .window_keep = hearth_draft_assistant_window(a), .be = cuda ? be : NULL};
    CHECK_EQ(hearth_kv_pool_create(t, &pp, &pool, &err), HEARTH_OK);
    hearth_numerics bnx = hearth_backend_numerics(be); /* on the GPU: the ref numerics it was made with */
    tf = hearth_fwd_create(t, be, CTX, cuda ? &bnx : NULL);
    af = hearth_fwd_create(a, be, 2, cuda ? &bnx : NULL);
    if (!pool || !tf || !af) goto out;
    /* the assistant's view of the target's cache: its layers 0 (sliding) and 1 (full) read the
     * target's 0 and 1 (the last of each kind that stores its KV); sliding window + 1 */
    hearth_kv_view view = *hearth_kv_pool_view(pool);
    int32_t window[8] = {0};
    for (int32_t g = 0; g < view.n_groups && g < 8; g++)
        window[g] = view.group_window && view.group_window[g] > 0 ? hearth_model_hparams(a)->n_swa + 1 : 0;
    if (view.group_window) view.group_window = window;

    float *logits = malloc((size_t)CTX * (size_t)V * sizeof(float));
    float *hid = malloc((size_t)CTX * (size_t)E * sizeof(float)), *h2 = malloc((size_t)E * sizeof(float));
    double worst = 0;
    for (int ip = 0; ip < cJSON_GetArraySize(prompts); ip++) {
        const cJSON *pr = cJSON_GetArrayItem(prompts, ip), *ids = cJSON_GetObjectItemCaseSensitive(pr, "ids");
        const cJSON *gd = cJSON_GetObjectItemCaseSensitive(pr, "drafts");
        const cJSON *gl = cJSON_GetObjectItemCaseSensitive(pr, "logits");
        int32_t P = cJSON_GetArraySize(ids), slot = ip;
        int32_t toks[CTX], pos[CTX], sq[CTX];
        int8_t want[CTX];
        for (int32_t i = 0; i < P; i++) {
            toks[i] = cJSON_GetArrayItem(ids, i)->valueint;
            pos[i] = i;
            sq[i] = slot;
            want[i] = i == P - 1;
        }
        CHECK(hearth_kv_pool_seq_reserve(pool, slot, P));
        hearth_batch b = {.n_tokens = P, .token = toks, .pos = pos, .seq = sq, .want_logits = want};
        hearth_fwd_set_hidden_out(tf, hid); /* the test's own copy of the row's hidden state */
        CHECK_EQ(hearth_forward(tf, &b, hearth_kv_pool_view(pool), logits), HEARTH_OK);
        toks[P] = argmax_n(logits, V);
        if (toks[P] != cJSON_GetObjectItemCaseSensitive(pr, "next")->valueint)
            fprintf(stderr, "  prompt of %d: the target's token %d, transformers' %d\n", P, toks[P],
                    cJSON_GetObjectItemCaseSensitive(pr, "next")->valueint);
        CHECK_EQ(toks[P], cJSON_GetObjectItemCaseSensitive(pr, "next")->valueint);
        /* the source, which asks the target's forward for its own copy: the prefill once more
         * (the same KV written again) */
        CHECK_EQ(hearth_drafter_assistant(t, a, be, tf, pool, 2, CTX, &d, &err), HEARTH_OK);
        if (!d) {
            fprintf(stderr, "  %s\n", err.msg);
            break;
        }
        CHECK_STR(d->kind, "assistant");
        CHECK_EQ(hearth_forward(tf, &b, hearth_kv_pool_view(pool), logits), HEARTH_OK);
        release_window(pool, slot, P);
        /* the draft steps one at a time, against transformers' logits */
        memcpy(h2, hid, (size_t)E * sizeof(float));
        int32_t last = toks[P], p = P - 1, s = slot;
        int8_t one = 1;
        for (int i = 0; i < K; i++) {
            hearth_batch ab = {.n_tokens = 1, .token = &last, .pos = &p, .seq = &s, .want_logits = &one};
            CHECK_EQ(hearth_forward_assistant(af, t, &ab, &view, h2, logits, h2), HEARTH_OK);
            const cJSON *row = cJSON_GetArrayItem(gl, i);
            CHECK_EQ(cJSON_GetArraySize(row), V);
            double md = 0, tol = cuda ? CUDA_TOL * golden_max(row) : LOGIT_TOL;
            for (int32_t v = 0; v < V && v < cJSON_GetArraySize(row); v++) {
                double dd = fabs((double)logits[v] - cJSON_GetArrayItem(row, v)->valuedouble);
                if (!(dd <= md)) md = dd;
            }
            if (md > worst) worst = md;
            if (!(md <= tol))
                fprintf(stderr, "  prompt of %d, draft step %d: logits %.3g from transformers' (allowed %.3g)\n", P,
                        i, md, tol);
            CHECK(md <= tol);
            int32_t pick = argmax_n(logits, V), want_id = cJSON_GetArrayItem(gd, i)->valueint;
            if (pick != want_id) {
                bool tie = cuda && near_tie(row, pick, want_id, tol);
                fprintf(stderr, "  prompt of %d, draft step %d: picked %d, transformers %d%s\n", P, i, pick, want_id,
                        tie ? " (a near tie: accepted)" : "");
                CHECK(tie);
            }
            last = cuda ? want_id : pick;
        }
        /* the source: the same drafts, from the row the target's step says made the token */
        d->produced(d, slot, 0, P + 1);
        int32_t drafts[K];
        hearth_sampler_params greedy = hearth_sampler_params_default();
        hearth_draft_job job = {.slot = slot, .toks = toks, .n_toks = P + 1, .k = K, .sp = &greedy, .draft = drafts};
        d->propose(d, &job, 1);
        CHECK_EQ(job.n, K);
        for (int i = 0; i < job.n; i++) {
            int32_t want_id = cJSON_GetArrayItem(gd, i)->valueint;
            if (drafts[i] == want_id) continue;
            const cJSON *row = cJSON_GetArrayItem(gl, i);
            bool tie = cuda && near_tie(row, drafts[i], want_id, CUDA_TOL * golden_max(row));
            fprintf(stderr, "  prompt of %d: the source's draft %d is %d, transformers' %d%s\n", P, i, drafts[i],
                    want_id, tie ? " (a near tie: accepted; later drafts follow another token)" : "");
            CHECK(tie);
            break;
        }
        printf("  prompt of %d: drafts %d %d %d %d\n", P, drafts[0], drafts[1], drafts[2], drafts[3]);
        /* a job whose count is not the one the hidden state is for gets none */
        job.n_toks = P;
        d->propose(d, &job, 1);
        CHECK_EQ(job.n, 0);
        hearth_drafter_destroy(d);
        d = NULL;
    }
    printf("  %s: largest logit difference from transformers: %.2e\n", cuda ? "cuda" : "cpu", worst);
    free(logits);
    free(hid);
    free(h2);
out:
    hearth_drafter_destroy(d);
    if (pool) {
        free_slot(pool, 0);
        free_slot(pool, 1);
        CHECK(hearth_kv_pool_check(pool));
    }
    hearth_fwd_destroy(af);
    hearth_fwd_destroy(tf);
    hearth_kv_pool_destroy(pool);
    hearth_backend_destroy(be);
    hearth_model_destroy(t);
    hearth_model_destroy(a);
    cJSON_Delete(doc);
    free(json);
}

TEST(drafts_are_transformers_drafts) { check_golden(false); }

/* The same on the GPU (skipped without one): the target's forward, its pool and the assistant
 * on the CUDA backend; the target's hidden rows and the assistant's own come back from the
 * device, the pre-projection's column halves are views of one weight there. */
TEST(cuda_drafts_are_transformers_drafts) {
    if (hearth_cuda_device_count() <= 0) TEST_SKIP("no CUDA device");
    check_golden(true);
}

/* ---- the engine ---- */

enum { NQ = 8, PLEN = 24, NGEN = 16 };

static bool on_cuda; /* the engines of a run compute on the GPU */

/* The reference run's top two log-probabilities apart, and its runner-up, per token. */
static float   ref_margin[NQ][NGEN];
static int32_t ref_second[NQ][NGEN];

static hearth_engine *engine(const hearth_model *m, const hearth_model *asst, int32_t pool_tokens,
                             int64_t prompt_cache, int32_t block_size) {
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_threads = 2;
    ep.n_ctx = 64;
    ep.batch = NQ;
    ep.block_size = block_size;
    ep.max_step = 64;
    ep.prompt_cache = prompt_cache;
    ep.debug_checks = true;
    ep.kv_f16 = 1;
    ep.device = on_cuda ? HEARTH_DEVICE_CUDA : HEARTH_DEVICE_CPU;
    ep.kv_budget = (int64_t)hearth_kv_bytes_per_token(m, HEARTH_KV_SCHEME_F16) * pool_tokens;
    if (asst) /* fixed rounds: the step cost model would hold drafts back on a compute-bound CPU */
        ep.spec = (hearth_spec_params){.kind = HEARTH_DRAFT_ASSISTANT, .n_draft = 4, .fixed = true,
                                       .draft_model = asst};
    hearth_engine *e = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_engine_create(m, &ep, &e, &err), HEARTH_OK);
    if (!e) fprintf(stderr, "  engine: %s\n", err.msg);
    if (e && asst) {
        hearth_engine_info in;
        hearth_engine_info_get(e, &in);
        CHECK_STR(in.spec_kind, "assistant");
        CHECK_EQ(in.draft_weight_bytes, (int64_t)hearth_model_weight_bytes(asst));
    }
    if (e) {
        hearth_engine_device_info in;
        hearth_engine_device(e, &in);
        if (strcmp(in.backend, on_cuda ? "cuda" : "cpu"))
            fprintf(stderr, "  engine on %s, asked for %s\n", in.backend, on_cuda ? "cuda" : "cpu");
        CHECK_STR(in.backend, on_cuda ? "cuda" : "cpu");
    }
    return e;
}

/* The 8 prompts at once (temperature 0: greedy; else each its own seed); requests 1 and 6 with
 * no_spec, which must then have no drafts. margins: the reference run, whose top two
 * log-probabilities go to ref_margin and ref_second. */
static void submit_all(hearth_engine *e, int32_t p[NQ][PLEN], float temperature, int32_t out[NQ][NGEN],
                       int32_t *cached, bool margins) {
    hearth_request *req[NQ] = {0};
    hearth_err err = {0};
    for (int i = 0; i < NQ; i++) {
        hearth_request_params rp = {.prompt = p[i], .n_prompt = PLEN, .max_tokens = NGEN,
                                    .sampling = hearth_sampler_params_default(), .ignore_eog = true,
                                    .no_spec = i == 1 || i == 6, .logprobs = margins, .top_logprobs = 2};
        rp.sampling.temperature = temperature;
        rp.sampling.seed = 1000u + (uint64_t)i;
        CHECK_EQ(hearth_engine_submit(e, &rp, &req[i], &err), HEARTH_OK);
    }
    for (int i = 0; i < NQ; i++) {
        if (!req[i]) continue;
        int n = 0;
        for (;;) {
            hearth_event ev;
            if (hearth_request_next(req[i], &ev, 120000) != HEARTH_OK) {
                CHECK(!"timed out waiting for a token");
                break;
            }
            if (ev.kind == HEARTH_EV_DONE) {
                CHECK_EQ(ev.finish, HEARTH_FINISH_LENGTH);
                CHECK_EQ(ev.n_generated, NGEN);
                if (cached) cached[i] = ev.n_cached;
                if (i == 1 || i == 6) CHECK_EQ(ev.n_drafted, 0);
                break;
            }
            if (ev.kind != HEARTH_EV_TOKEN || n >= NGEN) continue;
            if (margins) CHECK(ev.has_logprobs && ev.lp.n_top == 2);
            if (margins && ev.has_logprobs && ev.lp.n_top == 2) {
                ref_margin[i][n] = ev.lp.top_logprob[0] - ev.lp.top_logprob[1];
                ref_second[i][n] = ev.lp.top_id[1];
            }
            out[i][n++] = ev.token;
        }
        hearth_request_release(req[i]);
    }
}

static void idle_stats(hearth_engine *e, hearth_engine_stats *st) {
    for (int i = 0; i < 10000; i++) {
        hearth_engine_stats_get(e, st);
        if (st->running == 0 && st->waiting == 0) return;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
}

/* Sequences of got that differ from want (the first difference of each is printed), but for
 * the reference's runner-up taken where its top two are within tie nats (0 on the CPU). */
static int differing(int32_t want[NQ][NGEN], int32_t got[NQ][NGEN], float tie) {
    int n = 0;
    for (int i = 0; i < NQ; i++)
        for (int t = 0; t < NGEN; t++)
            if (got[i][t] != want[i][t]) {
                bool near = ref_margin[i][t] < tie && got[i][t] == ref_second[i][t];
                printf("  prompt %d step %d: token %d, without speculation %d (margin %.4f nats)%s\n", i, t,
                       got[i][t], want[i][t], (double)ref_margin[i][t], near ? ": near tie, accepted" : "");
                n += !near;
                break;
            }
    return n;
}

/* The engine checks of the file header, on the CPU or (cuda) the GPU: there a verify step is a
 * several-token step whose sums are ordered otherwise than a decode step's, so a sequence may
 * take the reference's runner-up where its top two are within CUDA_TIE nats (as
 * test_draft_model.c allows); anything else fails. */
static void check_engine(bool cuda) {
    hearth_model *m = load(TARGET), *a = load(ASSISTANT);
    static int32_t p[NQ][PLEN], want[NQ][NGEN], got[NQ][NGEN];
    hearth_engine_stats st;
    hearth_engine *e = NULL;
    float tie = cuda ? CUDA_TIE : 0;
    on_cuda = cuda;
    if (!m || !a) goto out;
    uint32_t seed = 77u;
    int32_t n_tok = hearth_tok_n_vocab(hearth_model_tok(m));
    for (int i = 0; i < NQ; i++) /* pairs share a 16-token stem: prefixes also meet in a batch */
        for (int j = 0; j < PLEN; j++) {
            seed = seed * 1103515245u + 12345u;
            p[i][j] = i % 2 && j < 16 ? p[i - 1][j] : 3 + (int32_t)((seed >> 8) % (uint32_t)(n_tok - 3));
        }
    e = engine(m, NULL, NQ * 64, 0, 16); /* the reference: no speculation */
    if (!e) goto out;
    submit_all(e, p, 0, want, NULL, true);
    hearth_engine_destroy(e);

    e = engine(m, a, NQ * 64, -1, 16); /* the prefix cache on, twice */
    if (e) {
        int32_t cached[NQ];
        memset(got, 0, sizeof got);
        submit_all(e, p, 0, got, NULL, false);
        CHECK_EQ(differing(want, got, tie), 0);
        memset(got, 0, sizeof got);
        submit_all(e, p, 0, got, cached, false);
        CHECK_EQ(differing(want, got, tie), 0);
        for (int i = 0; i < NQ; i++) CHECK(cached[i] >= 16);
        idle_stats(e, &st);
        printf("  %s assistant: %lld rounds, %lld drafted, %lld accepted, %lld steps\n", cuda ? "cuda" : "cpu",
               (long long)st.spec_rounds, (long long)st.spec_drafted, (long long)st.spec_accepted,
               (long long)st.steps);
        CHECK(st.spec_drafted > 0);
        CHECK_EQ(st.check_failures, 0);
    }
    hearth_engine_destroy(e);

    /* a pool of about three sequences, blocks of 4, no cache: preemptions */
    e = engine(m, a, 3 * (PLEN + NGEN), 0, 4);
    if (e) {
        memset(got, 0, sizeof got);
        submit_all(e, p, 0, got, NULL, false);
        CHECK_EQ(differing(want, got, tie), 0);
        idle_stats(e, &st);
        printf("  %s preempting: %lld preemptions, %lld drafted, %lld accepted\n", cuda ? "cuda" : "cpu",
               (long long)st.preemptions, (long long)st.spec_drafted, (long long)st.spec_accepted);
        CHECK(st.preemptions > 0);
        CHECK(st.spec_drafted > 0);
        CHECK_EQ(st.check_failures, 0);
        CHECK_EQ(st.blocks_free, st.blocks_total);
    }
    hearth_engine_destroy(e);

    /* sampled, fixed seeds: every request runs to its length, drafts drawn from q */
    e = engine(m, a, NQ * 64, -1, 16);
    if (e) {
        memset(got, 0, sizeof got);
        submit_all(e, p, 0.8f, got, NULL, false);
        idle_stats(e, &st);
        printf("  %s sampled: %lld rounds, %lld drafted, %lld accepted\n", cuda ? "cuda" : "cpu",
               (long long)st.spec_rounds, (long long)st.spec_drafted, (long long)st.spec_accepted);
        CHECK(st.spec_drafted > 0);
        CHECK_EQ(st.check_failures, 0);
    }
    hearth_engine_destroy(e);
    e = NULL;
    if (cuda) goto out;

    /* refused at create: a plain model as the assistant */
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_ctx = 64;
    ep.batch = 2;
    ep.max_step = 32;
    ep.device = HEARTH_DEVICE_CPU;
    ep.spec = (hearth_spec_params){.kind = HEARTH_DRAFT_ASSISTANT, .draft_model = m};
    hearth_err err = {0};
    CHECK_EQ(hearth_engine_create(m, &ep, &e, &err), HEARTH_E_INVALID);
    printf("  %s\n", err.msg);
    CHECK(strstr(err.msg, "not a Gemma 4 assistant") != NULL);
out:
    hearth_model_destroy(m);
    hearth_model_destroy(a);
    on_cuda = false;
}

TEST(engine_with_the_assistant_matches_without_speculation) { check_engine(false); }

/* The same with both engines on the GPU (skipped without one): plain decoding on CUDA is the
 * reference for the assistant on CUDA, batched, through the prefix cache and preempted. */
TEST(cuda_engine_with_the_assistant_matches_without_speculation) {
    if (hearth_cuda_device_count() <= 0) TEST_SKIP("no CUDA device");
    check_engine(true);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
