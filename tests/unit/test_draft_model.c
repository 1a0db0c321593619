/*
 * test_draft_model.c - the two-model draft source (engine/draft_model.c, spec.h).
 *
 * On the committed tiny qwen2 model, always:
 *   vocab     the check accepts the model against itself and refuses tiny-llama64, naming the
 *             difference, and a copy whose <|im_end|> reads <|im_enD|>, naming the token
 *   drafts    the drafter's greedy drafts are the model's own greedy continuation (a direct
 *             forward with its own cache, the harness), for three slots in one call, also after
 *             a round whose drafts the sequence did not take (the drafter rolls its KV back)
 *             and after a release; a pool too small for a job gives that job no drafts. The
 *             same on the tiny Gemma 3 checkpoint, whose sliding layer's window (8) the
 *             sequences pass and whose output head has more rows than its tokenizer has tokens
 *   sampled   drafts drawn at temperature 0.8 come with q rows that are distributions holding
 *             the draft; the same seed draws the same drafts
 *   engine    8 concurrent greedy requests (two with no_spec), the draft model being the target
 *             loaded a second time: the tokens of an engine without speculation, token for token,
 *             with drafts made and accepted; a second round through the prefix cache; a pool
 *             small enough to preempt; a sampled round (fixed seeds) runs to its lengths, its
 *             drafts drawn from q and nearly all accepted
 *
 *   memory    the draft's weights, pool and activations count in the memory budget (a budget
 *             that holds the target alone refuses the pair, naming the draft); a draft with
 *             another tokenizer, or none, is refused at create
 * On a GPU (skipped without one): the engine runs on the CUDA backend, greedy picks made on
 * the device; a verify step is a several-token step whose GEMMs round otherwise there, so a
 * sequence may take the reference's runner-up where its top two are within CUDA_TIE nats (as
 * tests/models/test_cuda_models.c allows its speculative runs); anything else fails.
 * On SmolLM2 (HEARTH_SMOLLM2_GGUF; skipped without it, or under the sanitizers): the check
 * refuses Gemma 3 (HEARTH_GEMMA3_GGUF) naming the vocabulary sizes and accepts the tiny qwen2
 * (SmolLM2's tokenizer), and the engine runs above
 * with SmolLM2 drafting for itself, with batch-invariant numerics: in the default ones a
 * verify step's attention takes the several-token order (docs/engine.md, "Batch invariance"),
 * whose logits on SmolLM2 differ from a one-token step's by up to 0.6 once the context passes
 * a few dozen tokens, which parts greedy runs at margins of a quarter nat with any draft source.
 * Batch-invariant, the tokens must match exactly.
 */
#include "engine/engine.h"
#include "engine/spec.h"
#include "../models/model_harness.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TINY "tests/golden/tiny/tiny-qwen2.gguf"
#define TINY_LLAMA "tests/golden/tiny/tiny-llama64.gguf"
#define TINY_GEMMA3 "tests/golden/hf/gemma3_text"
#define CUDA_TIE 0.2f

static hearth_model *load(const char *path) {
    hearth_model *m = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_model_load(path, &m, &err), HEARTH_OK);
    if (!m) fprintf(stderr, "  %s: %s\n", path, err.msg);
    return m;
}

/* ---- the vocabulary check ---- */

TEST(vocab_check_accepts_the_same_tokenizer_and_names_a_difference) {
    hearth_model *a = load(TINY), *b = load(TINY), *c = load(TINY_LLAMA);
    hearth_err err = {0};
    if (a && b) CHECK_EQ(hearth_draft_vocab_check(a, b, &err), HEARTH_OK);
    if (a && c) {
        memset(&err, 0, sizeof err);
        CHECK_EQ(hearth_draft_vocab_check(a, c, &err), HEARTH_E_INVALID);
        printf("  tiny-qwen2 vs tiny-llama64: %s\n", err.msg);
        CHECK(strstr(err.msg, "draft model") != NULL);
    }
    hearth_model_destroy(a);
    hearth_model_destroy(b);
    hearth_model_destroy(c);
}

/* A copy of the tiny model whose token text `from` (a GGUF string: a 64-bit length, then the
 * bytes) reads `to` (the same length); the path goes to out. False when that cannot be made. */
static bool copy_with_token(const char *from, const char *to, char *out, size_t cap) {
    FILE *f = fopen(TINY, "rb");
    if (!f) return false;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *img = n > 0 ? malloc((size_t)n) : NULL;
    bool ok = img && fread(img, 1, (size_t)n, f) == (size_t)n;
    fclose(f);
    uint8_t pat[64];
    uint64_t len = strlen(from);
    memcpy(pat, &len, 8); /* little-endian, as GGUF and x86 */
    memcpy(pat + 8, from, len);
    size_t at = 0, hits = 0;
    for (size_t i = 0; ok && i + 8 + len <= (size_t)n; i++)
        if (!memcmp(img + i, pat, 8 + len)) {
            at = i;
            hits++;
        }
    ok = ok && hits == 1 && strlen(to) == len;
    if (ok) memcpy(img + at + 8, to, len);
    const char *tmp = getenv("TMPDIR");
    snprintf(out, cap, "%s/hearth_test_draft_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = ok ? mkstemp(out) : -1;
    ok = fd >= 0 && write(fd, img, (size_t)n) == (ssize_t)n;
    if (fd >= 0) close(fd);
    free(img);
    return ok;
}

TEST(vocab_check_names_a_token_whose_text_differs) {
    char path[512];
    bool made = copy_with_token("<|im_end|>", "<|im_enD|>", path, sizeof path);
    CHECK(made);
    hearth_model *a = load(TINY), *b = made ? load(path) : NULL;
    if (made) unlink(path);
    if (a && b) {
        hearth_err err = {0};
        int32_t id = hearth_tok_find(hearth_model_tok(a), "<|im_end|>", 10);
        CHECK(id >= 0);
        CHECK_EQ(hearth_draft_vocab_check(a, b, &err), HEARTH_E_INVALID);
        printf("  %s\n", err.msg);
        char want[128];
        snprintf(want, sizeof want, "token %d is '<|im_end|>' in the target and '<|im_enD|>' in the draft model", id);
        CHECK_STR(err.msg, want);
        CHECK_EQ(err.pos, id);
    }
    hearth_model_destroy(a);
    hearth_model_destroy(b);
}

TEST(vocab_check_refuses_gemma3_for_smollm2) {
    const char *s = getenv("HEARTH_SMOLLM2_GGUF"), *g = getenv("HEARTH_GEMMA3_GGUF");
    if (!s || !g) TEST_SKIP("model paths not set");
    hearth_model *a = load(s), *b = load(g);
    hearth_err err = {0};
    if (a) CHECK_EQ(hearth_draft_vocab_check(a, a, &err), HEARTH_OK);
    hearth_model *t = load(TINY); /* random weights, SmolLM2's tokenizer: a valid (useless) draft */
    if (a && t) CHECK_EQ(hearth_draft_vocab_check(a, t, &err), HEARTH_OK);
    hearth_model_destroy(t);
    if (a && b) {
        CHECK_EQ(hearth_draft_vocab_check(a, b, &err), HEARTH_E_INVALID);
        printf("  smollm2 vs gemma3: %s\n", err.msg);
        char want[128];
        snprintf(want, sizeof want, "the draft model's vocabulary has %d tokens, the target's %d",
                 hearth_tok_n_vocab(hearth_model_tok(b)), hearth_tok_n_vocab(hearth_model_tok(a)));
        CHECK_STR(err.msg, want);
    }
    hearth_model_destroy(a);
    hearth_model_destroy(b);
}

/* ---- the drafter on its own ---- */

enum { CTX = 96, K = 5 };

/* The greedy continuation of toks[0..n) by the harness's forward: out[0..k), among the
 * tokenizer's ids (a padded output head has more rows; drafts are tokens only). */
static void greedy_after(harness *h, const int32_t *toks, int32_t n, int32_t k, int32_t *out) {
    float *lg = malloc((size_t)h->n_vocab * sizeof(float));
    harness_run(h, toks, n, 0, false, lg);
    for (int32_t i = 0; i < k; i++) {
        out[i] = argmax_f(lg, hearth_tok_n_vocab(hearth_model_tok(h->m)));
        if (i + 1 < k) harness_run(h, &out[i], 1, n + i, false, lg);
    }
    free(lg);
}

static void prompt_of(int32_t *p, int32_t n, uint32_t seed, int32_t n_vocab) {
    for (int32_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = 3 + (int32_t)((seed >> 8) % (uint32_t)(n_vocab - 3));
    }
}

static void check_greedy_drafts(const char *path) {
    harness *h = harness_open(path, 64, CTX, false, 2);
    CHECK(h != NULL);
    if (!h) return;
    hearth_drafter *d = NULL;
    hearth_err err = {0};
    hearth_draft_model_params dp = {.batch = 4, .n_ctx = CTX, .max_step = 16, .block_size = 8,
                                    .kv = HEARTH_KV_SCHEME_F32};
    CHECK_EQ(hearth_drafter_model(h->m, h->m, h->be, &dp, &d, &err), HEARTH_OK);
    if (!d) {
        fprintf(stderr, "  %s\n", err.msg);
        harness_close(h);
        return;
    }
    CHECK_STR(d->kind, "two-model");
    hearth_sampler_params greedy = hearth_sampler_params_default();
    /* three sequences in slots 0, 2, 3; prompts of 20, 37 (more than a step) and 5 tokens */
    enum { NS = 3 };
    static int32_t toks[NS][CTX];
    int32_t n[NS] = {20, 37, 5}, slot[NS] = {0, 2, 3}, drafts[NS][K], want[K];
    for (int s = 0; s < NS; s++) prompt_of(toks[s], n[s], 100u + (uint32_t)s, h->n_vocab);
    for (int round = 0; round < 6; round++) {
        hearth_draft_job jobs[NS];
        for (int s = 0; s < NS; s++)
            jobs[s] = (hearth_draft_job){.slot = slot[s], .toks = toks[s], .n_toks = n[s], .k = K - s % 2,
                                         .sp = &greedy, .seed = 1, .draft = drafts[s]};
        d->propose(d, jobs, NS);
        for (int s = 0; s < NS; s++) {
            CHECK_EQ(jobs[s].n, K - s % 2);
            CHECK(!jobs[s].q_set);
            greedy_after(h, toks[s], n[s], jobs[s].n, want);
            for (int i = 0; i < jobs[s].n; i++) CHECK_EQ(drafts[s][i], want[i]);
            /* the sequence goes on: rounds 0-1 take every draft and one more token, round 2 two
             * drafts then another token, round 3 none and three other tokens (as a sequence
             * does that skips drafting for a while after a rejection: the drafter must roll
             * back to before the first draft), round 5 after a release */
            int take = round < 2 ? jobs[s].n : round == 2 ? 2 : 0, extra = round == 3 ? 3 : 1;
            for (int i = 0; i < take; i++) toks[s][n[s]++] = drafts[s][i];
            for (int e = 0; e < extra; e++) {
                int32_t next = 3 + (toks[s][n[s] - 1] * 31 + 7 + round) % (h->n_vocab - 3);
                if (e == 0 && take < jobs[s].n && next == drafts[s][take]) next = 3 + (next - 2) % (h->n_vocab - 3);
                toks[s][n[s]++] = next; /* the first one not the draft */
            }
            if (round == 4 && s == 1) d->release(d, slot[s]);
        }
    }
    /* a pool of two blocks of 8 rows: the 20-token prompt cannot be held, the job gets no drafts */
    hearth_drafter_destroy(d);
    d = NULL;
    dp.max_pool_bytes = 2 * 8 * (int64_t)hearth_kv_bytes_per_token(h->m, HEARTH_KV_SCHEME_F32);
    CHECK_EQ(hearth_drafter_model(h->m, h->m, h->be, &dp, &d, &err), HEARTH_OK);
    if (d) {
        int32_t p[20], dr[K];
        prompt_of(p, 20, 7u, h->n_vocab);
        hearth_draft_job job = {.slot = 1, .toks = p, .n_toks = 20, .k = K, .sp = &greedy, .draft = dr};
        d->propose(d, &job, 1);
        CHECK_EQ(job.n, 0);
        job.n_toks = 12; /* 12 + 4 drafts fed back = 16 rows: fits */
        d->propose(d, &job, 1);
        CHECK_EQ(job.n, K);
        greedy_after(h, p, 12, K, want);
        for (int i = 0; i < job.n; i++) CHECK_EQ(dr[i], want[i]);
    }
    hearth_drafter_destroy(d);
    harness_close(h);
}

TEST(greedy_drafts_are_the_models_continuation_after_rollbacks) { check_greedy_drafts(TINY); }

/* The tiny Gemma 3 checkpoint: one of its two layers slides over 8 tokens, which the draft pool
 * keeps whole (swa_full); the prompts and drafts run far past the window. */
TEST(greedy_drafts_of_a_sliding_window_model) { check_greedy_drafts(TINY_GEMMA3); }

TEST(sampled_drafts_come_with_their_distributions) {
    harness *h = harness_open(TINY, 64, CTX, false, 2);
    CHECK(h != NULL);
    if (!h) return;
    hearth_drafter *d = NULL;
    hearth_err err = {0};
    hearth_draft_model_params dp = {.batch = 2, .n_ctx = CTX, .max_step = 32, .block_size = 16,
                                    .kv = HEARTH_KV_SCHEME_F16};
    CHECK_EQ(hearth_drafter_model(h->m, h->m, h->be, &dp, &d, &err), HEARTH_OK);
    if (!d) {
        harness_close(h);
        return;
    }
    CHECK_EQ(d->n_vocab, h->n_vocab);
    hearth_sampler_params sp = hearth_sampler_params_default();
    sp.temperature = 0.8f;
    sp.top_k = 40;
    int32_t p[16], dr[2][K];
    prompt_of(p, 16, 3u, h->n_vocab);
    float *q = malloc(2 * (size_t)K * (size_t)h->n_vocab * sizeof(float));
    int32_t first[K] = {0};
    for (int rep = 0; rep < 3; rep++) {
        hearth_draft_job jobs[2];
        for (int j = 0; j < 2; j++)
            jobs[j] = (hearth_draft_job){.slot = j, .toks = p, .n_toks = 16, .k = K, .sp = &sp,
                                         .seed = rep == 2 ? 99u : 42u, .draft = dr[j],
                                         .q = q + (size_t)j * K * (size_t)h->n_vocab};
        d->propose(d, jobs, 2);
        for (int j = 0; j < 2; j++) {
            CHECK_EQ(jobs[j].n, K);
            CHECK(jobs[j].q_set);
            for (int i = 0; i < jobs[j].n; i++) {
                const float *row = jobs[j].q + (size_t)i * (size_t)h->n_vocab;
                double sum = 0;
                int nz = 0;
                for (int32_t t = 0; t < h->n_vocab; t++) {
                    CHECK(row[t] >= 0);
                    sum += row[t];
                    nz += row[t] > 0;
                }
                CHECK_NEAR(sum, 1.0, 1e-4);
                CHECK(nz >= 1 && nz <= 40); /* top_k */
                CHECK(row[dr[j][i]] > 0);
            }
        }
        /* both slots drew with seed 42 from the same sequence: the same drafts, as the first time */
        for (int i = 0; i < K; i++) CHECK_EQ(dr[0][i], dr[1][i]);
        if (rep == 0) memcpy(first, dr[0], sizeof first);
        else if (rep == 1) CHECK(memcmp(first, dr[0], sizeof first) == 0);
    }
    free(q);
    /* greedy with q offered: argmax drafts, no distributions */
    sp.temperature = 0;
    hearth_draft_job job = {.slot = 0, .toks = p, .n_toks = 16, .k = K, .sp = &sp, .draft = dr[0],
                            .q = malloc((size_t)K * (size_t)h->n_vocab * sizeof(float))};
    d->propose(d, &job, 1);
    CHECK_EQ(job.n, K);
    CHECK(!job.q_set);
    int32_t want[K];
    greedy_after(h, p, 16, K, want);
    for (int i = 0; i < K; i++) CHECK_EQ(dr[0][i], want[i]);
    free(job.q);
    hearth_drafter_destroy(d);
    harness_close(h);
}

/* ---- the engine ---- */

enum { NQ = 8, PLEN = 24, NGEN_MAX = 24 };

typedef struct {
    int32_t p[NQ][PLEN];
    int32_t ngen;
    int32_t out[NQ][NGEN_MAX];
    float   margin[NQ][NGEN_MAX]; /* the reference's top two log-probabilities apart */
    int32_t second[NQ][NGEN_MAX]; /* and its runner-up */
} runs;

static bool invariant;    /* the engines of a run compute with batch-invariant numerics */
static bool on_cuda;      /* ... on the GPU */

static hearth_engine *engine(const hearth_model *m, const hearth_model *draft, int32_t pool_tokens, int64_t prompt_cache,
                             int32_t block_size) {
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_threads = 2;
    ep.n_ctx = 64;
    ep.batch = NQ;
    ep.block_size = block_size;
    ep.max_step = 64;
    ep.prompt_cache = prompt_cache;
    ep.debug_checks = true;
    ep.kv_f16 = 1;
    ep.numerics.batch_invariant = invariant;
    if (on_cuda) ep.device = HEARTH_DEVICE_CUDA;
    ep.kv_budget = (int64_t)hearth_kv_bytes_per_token(m, HEARTH_KV_SCHEME_F16) * pool_tokens;
    if (draft) /* fixed rounds: the step cost model would hold drafts back on a compute-bound CPU */
        ep.spec = (hearth_spec_params){.kind = HEARTH_DRAFT_MODEL, .n_draft = 4, .fixed = true, .draft_model = draft};
    hearth_engine *e = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_engine_create(m, &ep, &e, &err), HEARTH_OK);
    if (!e) fprintf(stderr, "  engine: %s\n", err.msg);
    if (e && draft) {
        hearth_engine_info in;
        hearth_engine_info_get(e, &in);
        CHECK_STR(in.spec_kind, "two-model");
        CHECK_EQ(in.spec.n_draft, 4);
        CHECK(in.draft_weight_bytes > 0 && in.draft_pool_bytes > 0);
        CHECK(in.draft_pool_bytes <= in.pool_bytes);
    }
    return e;
}

/* The 8 prompts at once (each request its own seed; temperature 0: greedy); no_spec for
 * requests 1 and 6, which must then have no drafts. margins: the reference run, whose top two
 * log-probabilities go to r. */
static void submit_all(hearth_engine *e, runs *r, float temperature, int32_t out[NQ][NGEN_MAX], int32_t *cached,
                       bool margins) {
    hearth_request *req[NQ] = {0};
    hearth_err err = {0};
    for (int i = 0; i < NQ; i++) {
        hearth_request_params rp = {.prompt = r->p[i], .n_prompt = PLEN, .max_tokens = r->ngen,
                                    .sampling = hearth_sampler_params_default(), .ignore_eog = true,
                                    .no_spec = i == 1 || i == 6, .logprobs = margins, .top_logprobs = 2};
        rp.sampling.temperature = temperature;
        rp.sampling.top_p = temperature > 0 ? 0.95f : 1.0f;
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
                CHECK_EQ(ev.n_generated, r->ngen);
                if (cached) cached[i] = ev.n_cached;
                if (i == 1 || i == 6) CHECK_EQ(ev.n_drafted, 0);
                break;
            }
            if (ev.kind != HEARTH_EV_TOKEN) continue;
            if (n < NGEN_MAX) {
                out[i][n] = ev.token;
                if (margins) CHECK(ev.has_logprobs && ev.lp.n_top == 2);
                if (margins && ev.has_logprobs && ev.lp.n_top == 2) {
                    r->margin[i][n] = ev.lp.top_logprob[0] - ev.lp.top_logprob[1];
                    r->second[i][n] = ev.lp.top_id[1];
                }
            }
            n++;
        }
        CHECK_EQ(n, r->ngen);
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

/* Sequences of got that differ from the reference (the first difference of each is printed),
 * but for the reference's runner-up taken where its top two are within tie nats. */
static int differing(const runs *r, int32_t got[NQ][NGEN_MAX], float tie) {
    int n = 0;
    for (int i = 0; i < NQ; i++)
        for (int t = 0; t < r->ngen; t++) {
            if (got[i][t] == r->out[i][t]) continue;
            bool near = r->margin[i][t] < tie && got[i][t] == r->second[i][t];
            printf("  prompt %d step %d: token %d, without speculation %d (margin %.4f nats)%s\n", i, t, got[i][t],
                   r->out[i][t], (double)r->margin[i][t], near ? ": near tie, accepted" : "");
            n += !near;
            break;
        }
    return n;
}

/* The engine checks of the file header on model path (the draft: the same file, loaded again). */
static void check_engine(const char *path, int32_t ngen, bool inv, bool cuda) {
    hearth_model *m = load(path), *dm = load(path);
    static runs r;
    static int32_t got[NQ][NGEN_MAX];
    invariant = inv;
    on_cuda = cuda;
    float tie = cuda ? CUDA_TIE : 0;
    if (!m || !dm) goto out;
    int32_t n_vocab = hearth_tok_n_vocab(hearth_model_tok(m));
    r.ngen = ngen;
    for (int i = 0; i < NQ; i++) { /* pairs share a 16-token stem: prefixes also meet in a batch */
        prompt_of(r.p[i], PLEN, 77u + (uint32_t)i, n_vocab / 2);
        if (i % 2) memcpy(r.p[i], r.p[i - 1], 16 * sizeof(int32_t));
    }
    hearth_engine_stats st;
    /* the reference: no speculation */
    hearth_engine *e = engine(m, NULL, NQ * 64, 0, 16);
    if (!e) goto out;
    submit_all(e, &r, 0, r.out, NULL, true);
    hearth_engine_destroy(e);

    /* speculation, the prefix cache on, twice */
    e = engine(m, dm, NQ * 64, -1, 16);
    if (e) {
        int32_t cached[NQ];
        memset(got, 0, sizeof got);
        submit_all(e, &r, 0, got, NULL, false);
        CHECK_EQ(differing(&r, got, tie), 0);
        memset(got, 0, sizeof got);
        submit_all(e, &r, 0, got, cached, false);
        CHECK_EQ(differing(&r, got, tie), 0);
        for (int i = 0; i < NQ; i++) CHECK(cached[i] >= 16);
        idle_stats(e, &st);
        printf("  self-drafting: %lld rounds, %lld drafted, %lld accepted, %lld steps\n", (long long)st.spec_rounds,
               (long long)st.spec_drafted, (long long)st.spec_accepted, (long long)st.steps);
        CHECK(st.spec_drafted > 0);
        /* a model drafting for itself: on the CPU (batch-invariant) every draft; on CUDA the draft
         * steps take the one-token kernels and the verify steps the many-token ones, whose sums are
         * ordered otherwise, so near ties of the random tiny model part (0.88-0.91 of the drafts
         * accepted on the H200); a broken rollback or row accepts far fewer */
        if (cuda) CHECK(st.spec_accepted * 5 >= st.spec_drafted * 4);
        else CHECK(st.spec_accepted * 10 >= st.spec_drafted * 9);
        CHECK_EQ(st.check_failures, 0);
    }
    hearth_engine_destroy(e);

    /* a pool of about three sequences, blocks of 4, no cache: preemptions; the draft pool is
     * capped at the same bytes, so some rounds find no room for drafts */
    e = engine(m, dm, 3 * (PLEN + ngen), 0, 4);
    if (e) {
        memset(got, 0, sizeof got);
        submit_all(e, &r, 0, got, NULL, false);
        CHECK_EQ(differing(&r, got, tie), 0);
        idle_stats(e, &st);
        printf("  preempting: %lld preemptions, %lld drafted, %lld accepted\n", (long long)st.preemptions,
               (long long)st.spec_drafted, (long long)st.spec_accepted);
        CHECK(st.preemptions > 0);
        CHECK(st.spec_accepted > 0);
        CHECK_EQ(st.check_failures, 0);
        CHECK_EQ(st.blocks_free, st.blocks_total);
    }
    hearth_engine_destroy(e);

    /* sampled, fixed seeds: the lengths, and drafts drawn from q accepted */
    e = engine(m, dm, NQ * 64, -1, 16);
    if (e) {
        memset(got, 0, sizeof got);
        submit_all(e, &r, 0.8f, got, NULL, false);
        idle_stats(e, &st);
        printf("  sampled: %lld rounds, %lld drafted, %lld accepted\n", (long long)st.spec_rounds,
               (long long)st.spec_drafted, (long long)st.spec_accepted);
        CHECK(st.spec_drafted > 0);
        /* drawn from q (about the target's own distribution): nearly all accepted; argmax drafts
         * verified as certain would be accepted with the target's probability of each */
        CHECK(st.spec_accepted * 10 >= st.spec_drafted * 9);
        CHECK_EQ(st.check_failures, 0);
    }
    hearth_engine_destroy(e);
out:
    hearth_model_destroy(m);
    hearth_model_destroy(dm);
    invariant = on_cuda = false;
}

TEST(tiny_engine_self_drafting_matches_without_speculation) { check_engine(TINY, 16, false, false); }

TEST(smollm2_engine_self_drafting_matches_without_speculation) {
    if (getenv("HEARTH_TEST_SANITIZED")) TEST_SKIP("real models run in the normal build");
    const char *path = getenv("HEARTH_SMOLLM2_GGUF");
    if (!path) TEST_SKIP("model path not set");
    check_engine(path, 16, true, false);
}

TEST(the_draft_model_counts_in_the_memory_budget) {
    hearth_model *m = load(TINY), *dm = load(TINY), *other = load(TINY_LLAMA);
    if (!m || !dm || !other) goto out;
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_threads = 1;
    ep.n_ctx = 64;
    ep.batch = 4;
    ep.max_step = 32;
    ep.kv_budget = (int64_t)hearth_kv_bytes_per_token(m, HEARTH_KV_SCHEME_F16) * 256;
    hearth_engine *e = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_engine_create(m, &ep, &e, &err), HEARTH_OK);
    hearth_engine_info in = {0};
    if (e) hearth_engine_info_get(e, &in);
    hearth_engine_destroy(e);
    e = NULL;
    CHECK_EQ(in.draft_weight_bytes, 0);
    /* a budget that holds the target, its pool and 1 MB more: not the draft model too */
    ep.memory_budget = in.weight_bytes + in.transient_bytes + ep.kv_budget + (1 << 20);
    CHECK_EQ(hearth_engine_create(m, &ep, &e, &err), HEARTH_OK);
    hearth_engine_destroy(e);
    e = NULL;
    ep.spec = (hearth_spec_params){.kind = HEARTH_DRAFT_MODEL, .draft_model = dm};
    CHECK_EQ(hearth_engine_create(m, &ep, &e, &err), HEARTH_E_LIMIT);
    printf("  %s\n", err.msg);
    CHECK(strstr(err.msg, "the draft model (") != NULL);
    hearth_engine_destroy(e);
    e = NULL;
    /* without a memory budget it runs, and says what the draft takes */
    ep.memory_budget = 0;
    CHECK_EQ(hearth_engine_create(m, &ep, &e, &err), HEARTH_OK);
    if (e) {
        hearth_engine_info_get(e, &in);
        CHECK_EQ(in.draft_weight_bytes, (int64_t)hearth_model_weight_bytes(dm));
        CHECK(in.draft_pool_bytes > 0 && in.draft_pool_bytes <= in.pool_bytes);
    }
    hearth_engine_destroy(e);
    e = NULL;
    /* a draft with another tokenizer, or none given: refused at create, saying why */
    ep.spec.draft_model = other;
    CHECK_EQ(hearth_engine_create(m, &ep, &e, &err), HEARTH_E_INVALID);
    CHECK(strstr(err.msg, "vocabulary") != NULL);
    ep.spec.draft_model = NULL;
    CHECK_EQ(hearth_engine_create(m, &ep, &e, &err), HEARTH_E_INVALID);
    CHECK(e == NULL);
out:
    hearth_model_destroy(m);
    hearth_model_destroy(dm);
    hearth_model_destroy(other);
}

/* The same on the GPU (skipped without one): the drafter's forward and pool on the CUDA backend
 * beside the target's, greedy picks taken on the device. SmolLM2 when its path is set, else the
 * tiny model. */
TEST(cuda_engine_self_drafting_matches_without_speculation) {
    if (hearth_cuda_device_count() <= 0) TEST_SKIP("no CUDA device");
    const char *path = getenv("HEARTH_SMOLLM2_GGUF");
    check_engine(path ? path : TINY, 24, false, true);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
