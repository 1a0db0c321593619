/*
 * test_engine.c - the engine seam: submit / events / cancel on the engine thread, with the
 * committed tiny qwen2 model. Token values are checked against a direct forward pass (the
 * harness), so the test fails if the engine feeds positions, cache or sampling wrongly.
 * The scheduler: concurrent requests give the tokens each gives alone, under queueing and
 * preemption; cancellation frees blocks; the prefix cache serves repeated prefixes and evicts
 * under pressure; the pool's invariants hold after every step (debug_checks).
 */
#include "constrain/schema.h"
#include "engine/engine.h"
#include "../models/model_harness.h"
#include "support/sampling_mix.h"
#include "test.h"

#include <math.h>
#include <time.h>

#define TINY "tests/golden/tiny/tiny-qwen2.gguf"

static const int32_t prompt[] = {1, 504, 3527, 28, 253, 1345, 2284, 30, 378, 5536};
enum { N_PROMPT = sizeof prompt / sizeof prompt[0] };

/* Greedy tokens by the forward pass alone. */
static void reference_greedy(int32_t *out, int n) {
    harness *h = harness_open(TINY, 16, 128, true, 1);
    CHECK(h != NULL);
    if (!h) return;
    float *logits = malloc((size_t)h->n_vocab * sizeof(float));
    harness_run(h, prompt, N_PROMPT, 0, false, logits);
    for (int s = 0; s < n; s++) {
        out[s] = argmax_f(logits, h->n_vocab);
        harness_run(h, &out[s], 1, N_PROMPT + s, false, logits);
    }
    free(logits);
    harness_close(h);
}

static int collect(hearth_request *r, int32_t *toks, int cap, hearth_event *done) {
    int n = 0;
    for (;;) {
        hearth_event ev;
        CHECK_EQ(hearth_request_next(r, &ev, 20000), HEARTH_OK);
        if (ev.kind == HEARTH_EV_DONE) {
            *done = ev;
            return n;
        }
        if (n < cap) toks[n] = ev.token;
        n++;
    }
}

static hearth_model *load(void) {
    hearth_model *m = NULL;
    hearth_err err;
    CHECK_EQ(hearth_model_load(TINY, &m, &err), HEARTH_OK);
    return m;
}

TEST(greedy_request_matches_forward) {
    int32_t want[24];
    reference_greedy(want, 24);
    hearth_model *m = load();
    if (!m) return;
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_threads = 2;
    ep.n_ctx = 128;
    ep.max_step = 4; /* the prompt is prefilled in 3 chunks */
    ep.kv_f16 = 1;
    hearth_engine *e = NULL;
    hearth_err err;
    CHECK_EQ(hearth_engine_create(m, &ep, &e, &err), HEARTH_OK);
    hearth_request_params rp = {.prompt = prompt, .n_prompt = N_PROMPT, .max_tokens = 24,
                                .sampling = hearth_sampler_params_default(), .ignore_eog = true};
    hearth_request *r = NULL;
    CHECK_EQ(hearth_engine_submit(e, &rp, &r, &err), HEARTH_OK);
    int32_t got[24];
    hearth_event done;
    CHECK_EQ(collect(r, got, 24, &done), 24);
    CHECK_EQ(done.finish, HEARTH_FINISH_LENGTH);
    CHECK_EQ(done.n_prompt, N_PROMPT);
    CHECK_EQ(done.n_generated, 24);
    int diff = 0;
    for (int i = 0; i < 24; i++) diff += got[i] != want[i];
    CHECK_EQ(diff, 0);
    hearth_request_release(r);
    hearth_engine_destroy(e);
    hearth_model_destroy(m);
}

/* min_tokens: with the end-of-generation token pushed to the top by a logit bias, a greedy
 * request ends at once without it; with min_tokens = K it gives K tokens, each the best token
 * that does not end the generation (checked against a direct forward), then ends with STOP.
 * A request that asks for progress gets one PROGRESS event per prefill chunk first. */
TEST(min_tokens_masks_end_of_generation_and_progress_events) {
    enum { K = 5 };
    hearth_model *m = load();
    if (!m) return;
    const hearth_tok *tok = hearth_model_tok(m);
    int32_t eos = hearth_tok_eos(tok);
    CHECK(eos >= 0 && hearth_tok_is_eog(tok, eos));
    /* the reference: argmax over the tokens that do not end the generation */
    int32_t want[K];
    harness *h = harness_open(TINY, 16, 128, true, 1);
    CHECK(h != NULL);
    if (!h || eos < 0) {
        harness_close(h);
        hearth_model_destroy(m);
        return;
    }
    float *logits = malloc((size_t)h->n_vocab * sizeof(float));
    harness_run(h, prompt, N_PROMPT, 0, false, logits);
    for (int i = 0; i < K; i++) {
        for (int32_t t = 0; t < h->n_vocab; t++)
            if (hearth_tok_is_eog(tok, t)) logits[t] = -INFINITY;
        want[i] = argmax_f(logits, h->n_vocab);
        harness_run(h, &want[i], 1, N_PROMPT + i, false, logits);
    }
    free(logits);
    harness_close(h);

    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_threads = 2;
    ep.n_ctx = 128;
    ep.max_step = 4; /* the prompt is prefilled in 3 chunks: 4, 8, 10 */
    ep.kv_f16 = 1;
    ep.prompt_cache = 0;
    hearth_engine *e = NULL;
    hearth_err err;
    CHECK_EQ(hearth_engine_create(m, &ep, &e, &err), HEARTH_OK);
    hearth_logit_bias bias = {.token = eos, .bias = 100.0f};
    hearth_request_params rp = {.prompt = prompt, .n_prompt = N_PROMPT, .max_tokens = 20,
                                .sampling = hearth_sampler_params_default()};
    rp.sampling.bias = &bias;
    rp.sampling.n_bias = 1;
    hearth_request *r = NULL;
    int32_t got[20];
    hearth_event done;
    CHECK_EQ(hearth_engine_submit(e, &rp, &r, &err), HEARTH_OK);
    CHECK_EQ(collect(r, got, 20, &done), 0); /* the biased end of generation comes first */
    CHECK_EQ(done.finish, HEARTH_FINISH_STOP);
    hearth_request_release(r);

    rp.min_tokens = K;
    rp.progress = true;
    CHECK_EQ(hearth_engine_submit(e, &rp, &r, &err), HEARTH_OK);
    int n = 0, n_progress = 0;
    int32_t progress[4] = {0};
    for (;;) {
        hearth_event ev;
        CHECK_EQ(hearth_request_next(r, &ev, 20000), HEARTH_OK);
        if (ev.kind == HEARTH_EV_DONE) {
            done = ev;
            break;
        }
        if (ev.kind == HEARTH_EV_PROGRESS) {
            CHECK_EQ(n, 0); /* all before the first token */
            CHECK_EQ(ev.n_prompt, N_PROMPT);
            if (n_progress < 4) progress[n_progress] = ev.n_done;
            n_progress++;
            continue;
        }
        if (n < 20) got[n] = ev.token;
        n++;
    }
    CHECK_EQ(n_progress, 3);
    CHECK_EQ(progress[0], 4);
    CHECK_EQ(progress[1], 8);
    CHECK_EQ(progress[2], N_PROMPT);
    CHECK_EQ(n, K);
    CHECK_EQ(done.finish, HEARTH_FINISH_STOP);
    CHECK_EQ(done.n_generated, K);
    int diff = 0;
    for (int i = 0; i < K && i < n; i++) diff += got[i] != want[i];
    CHECK_EQ(diff, 0);
    hearth_request_release(r);
    rp.min_tokens = -1;
    CHECK_EQ(hearth_engine_submit(e, &rp, &r, &err), HEARTH_E_INVALID);
    hearth_engine_destroy(e);
    hearth_model_destroy(m);
}

/* The model's vocabulary for the matcher: each token's bytes, control tokens left out. */
static hearth_cx_vocab *model_vocab(const hearth_model *m) {
    const hearth_tok *tok = hearth_model_tok(m);
    int32_t n = hearth_tok_n_vocab(tok);
    hearth_span *pieces = calloc((size_t)n, sizeof *pieces);
    bool *eog = calloc((size_t)n, sizeof *eog);
    for (int32_t i = 0; i < n; i++) {
        pieces[i] = hearth_tok_is_control(tok, i) ? (hearth_span){"", 0} : hearth_tok_piece(tok, i, false);
        eog[i] = hearth_tok_is_eog(tok, i);
    }
    hearth_cx_vocab *v = hearth_cx_vocab_create(n, pieces, eog);
    free(pieces);
    free(eog);
    return v;
}

static hearth_cx_matcher *schema_matcher(const char *schema, const hearth_cx_vocab *v) {
    cJSON *doc = cJSON_Parse(schema);
    hearth_cx_builder *b = hearth_cx_builder_create(hearth_cx_limits_default());
    hearth_cx_json j;
    hearth_cx_json_init(&j, b, doc);
    int root = hearth_cx_json_value(&j, doc);
    hearth_err err = {0};
    hearth_cx_grammar *g = hearth_cx_build(b, root, &err);
    hearth_cx_builder_destroy(b);
    cJSON_Delete(doc);
    CHECK(g != NULL);
    return g ? hearth_cx_matcher_create(g, v) : NULL;
}

/* A constrained greedy request gives, token for token, the best allowed token of each step's
 * logits (found here by checking every token in logit order against a second matcher), and
 * its text is the JSON the schema asks for. */
TEST(constrained_greedy_matches_forward) {
    static const char schema[] = "{\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\"},"
                                 " \"s\": {\"enum\": [\"yes\", \"no\"]}}, \"required\": [\"n\", \"s\"],"
                                 " \"additionalProperties\": false}";
    enum { MAX = 40 };
    hearth_model *m = load();
    if (!m) return;
    hearth_cx_vocab *v = model_vocab(m);
    const hearth_tok *tok = hearth_model_tok(m);
    /* the reference: the forward pass and a brute-force choice */
    int32_t want[MAX];
    int n_want = 0;
    harness *h = harness_open(TINY, 16, 128, true, 1);
    hearth_cx_matcher *ref = schema_matcher(schema, v);
    if (h && ref) {
        float *logits = malloc((size_t)h->n_vocab * sizeof(float));
        harness_run(h, prompt, N_PROMPT, 0, false, logits);
        for (; n_want < MAX; n_want++) {
            int32_t best = -1;
            for (int32_t t = 0; t < h->n_vocab; t++) /* the highest logit, lowest id on ties, allowed */
                if (hearth_cx_matcher_allows(ref, t) && (best < 0 || logits[t] > logits[best])) best = t;
            CHECK(best >= 0);
            if (best < 0 || hearth_tok_is_eog(tok, best)) break;
            CHECK(hearth_cx_matcher_accept(ref, best));
            want[n_want] = best;
            harness_run(h, &want[n_want], 1, N_PROMPT + n_want, false, logits);
        }
        free(logits);
    }
    harness_close(h);
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_threads = 2;
    ep.n_ctx = 128;
    ep.kv_f16 = 1;
    hearth_engine *e = NULL;
    hearth_err err;
    CHECK_EQ(hearth_engine_create(m, &ep, &e, &err), HEARTH_OK);
    hearth_request_params rp = {.prompt = prompt, .n_prompt = N_PROMPT, .max_tokens = MAX,
                                .sampling = hearth_sampler_params_default(),
                                .constraint = schema_matcher(schema, v)};
    hearth_request *r = NULL;
    CHECK_EQ(hearth_engine_submit(e, &rp, &r, &err), HEARTH_OK);
    int32_t got[MAX];
    hearth_event done;
    int n_got = collect(r, got, MAX, &done);
    CHECK_EQ(n_got, n_want);
    for (int i = 0; i < n_got && i < n_want; i++) CHECK_EQ(got[i], want[i]);
    CHECK_EQ(done.finish, n_want < MAX ? HEARTH_FINISH_STOP : HEARTH_FINISH_LENGTH);
    if (done.finish == HEARTH_FINISH_STOP) { /* ended by the model inside the grammar: the JSON is whole */
        char *text = hearth_tok_decode(tok, got, (size_t)n_got, false);
        cJSON *j = cJSON_Parse(text);
        CHECK(cJSON_IsNumber(cJSON_GetObjectItem(j, "n")));
        CHECK(cJSON_IsString(cJSON_GetObjectItem(j, "s")));
        cJSON_Delete(j);
        free(text);
    }
    fprintf(stderr, "  %d constrained tokens, finish %d\n", n_got, done.finish);
    hearth_request_release(r);
    /* a constraint refused at submit is freed there (ASan: no leak) */
    rp.constraint = schema_matcher(schema, v);
    rp.n_prompt = 0;
    CHECK(hearth_engine_submit(e, &rp, &r, &err) != HEARTH_OK);
    hearth_engine_destroy(e);
    hearth_cx_matcher_destroy(ref);
    hearth_cx_vocab_destroy(v);
    hearth_model_destroy(m);
}

TEST(seeded_sampling_is_reproducible_and_requests_queue_fifo) {
    hearth_model *m = load();
    if (!m) return;
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_ctx = 128;
    hearth_engine *e = NULL;
    hearth_err err;
    CHECK_EQ(hearth_engine_create(m, &ep, &e, &err), HEARTH_OK);
    hearth_request_params rp = {.prompt = prompt, .n_prompt = N_PROMPT, .max_tokens = 16,
                                .sampling = hearth_sampler_params_default(), .ignore_eog = true};
    rp.sampling.temperature = 1.2f;
    rp.sampling.seed = 99;
    hearth_request *a = NULL, *b = NULL, *c = NULL;
    CHECK_EQ(hearth_engine_submit(e, &rp, &a, &err), HEARTH_OK);
    CHECK_EQ(hearth_engine_submit(e, &rp, &b, &err), HEARTH_OK);
    rp.sampling.seed = 100;
    CHECK_EQ(hearth_engine_submit(e, &rp, &c, &err), HEARTH_OK);
    int32_t ta[16], tb[16], tc[16];
    hearth_event da, db, dc;
    /* read in reverse order: all three run regardless of who reads first */
    CHECK_EQ(collect(c, tc, 16, &dc), 16);
    CHECK_EQ(collect(b, tb, 16, &db), 16);
    CHECK_EQ(collect(a, ta, 16, &da), 16);
    CHECK(memcmp(ta, tb, sizeof ta) == 0);
    CHECK(memcmp(ta, tc, sizeof ta) != 0);
    hearth_request_release(a);
    hearth_request_release(b);
    hearth_request_release(c);
    hearth_engine_destroy(e);
    hearth_model_destroy(m);
}

/* The engine's counters once it is idle: they are published after each step, so a DONE event
 * can arrive before its step's counts. */
static void idle_counters(hearth_engine *e, hearth_engine_stats *st) {
    for (int k = 0; k < 5000; k++) {
        hearth_engine_stats_get(e, st);
        if (st->running == 0 && st->waiting == 0) return;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
}

/* n choices through the engine seam: hearth_engine_submit_n and hearth_request_next_any. The
 * prompt is computed once (step tokens), choice i gives what seed + i gives alone, greedy
 * choices all give the forward's tokens. */
/* Sampling on the backend (sampler.h's topm) picks what sampling on the rows picks: the CPU
 * backend's summary is the reference's, whose sums run in the host sampler's order, so the mix
 * of tests/support/sampling_mix.h gives the same tokens and logprobs both ways, and the summary
 * path did run (its counters). */
TEST(sampling_on_the_backend_matches_sampling_on_the_rows) {
    hearth_model *m = load();
    if (!m) return;
    CHECK_EQ(hearth_sampling_mix_check(m, HEARTH_DEVICE_CPU, 1, 1e-6), 0);
    hearth_model_destroy(m);
}

TEST(choices_share_the_prefill_and_sample_as_their_seeds) {
    enum { N = 3, M = 12 };
    int32_t want[M];
    reference_greedy(want, M);
    hearth_model *m = load();
    if (!m) return;
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_threads = 2;
    ep.n_ctx = 128;
    ep.kv_f16 = 1;
    ep.prompt_cache = 0; /* nothing from the cache: the counts below are the group's alone */
    ep.debug_checks = true;
    hearth_engine *e = NULL;
    hearth_err err;
    CHECK_EQ(hearth_engine_create(m, &ep, &e, &err), HEARTH_OK);
    for (int greedy = 0; greedy < 2; greedy++) {
        hearth_request_params rp[N];
        for (int i = 0; i < N; i++) {
            rp[i] = (hearth_request_params){.prompt = prompt, .n_prompt = N_PROMPT, .max_tokens = M,
                                            .sampling = hearth_sampler_params_default(), .ignore_eog = true};
            rp[i].sampling.temperature = greedy ? 0 : 1.0f;
            rp[i].sampling.seed = 500 + (uint64_t)i;
        }
        hearth_engine_stats st0, st1;
        idle_counters(e, &st0); /* after the last run's final step */
        hearth_request *r[N];
        CHECK_EQ(hearth_engine_submit_n(e, rp, N, r, &err), HEARTH_OK);
        int32_t got[N][M], n_got[N] = {0}, which = N - 1, n_done = 0;
        hearth_request *live[N] = {r[0], r[1], r[2]};
        while (n_done < N) {
            hearth_event ev;
            if (hearth_request_next_any(live, N, &which, &ev, 20000) != HEARTH_OK) break;
            if (ev.kind == HEARTH_EV_DONE) {
                CHECK_EQ(ev.finish, HEARTH_FINISH_LENGTH);
                live[which] = NULL;
                n_done++;
                continue;
            }
            if (n_got[which] < M) got[which][n_got[which]] = ev.token;
            n_got[which]++;
        }
        CHECK_EQ(n_done, N);
        hearth_event none;
        CHECK_EQ(hearth_request_next_any(live, N, &which, &none, 0), HEARTH_E_INVALID); /* all done */
        idle_counters(e, &st1);
        CHECK_EQ(st1.step_tokens - st0.step_tokens, N_PROMPT + N * (M - 1));
        CHECK_EQ(st1.check_failures, 0);
        for (int i = 0; i < N; i++) {
            CHECK_EQ(n_got[i], M);
            hearth_request_release(r[i]);
            if (greedy) {
                CHECK(memcmp(got[i], want, sizeof want) == 0);
                continue;
            }
            hearth_request *one = NULL;
            CHECK_EQ(hearth_engine_submit(e, &rp[i], &one, &err), HEARTH_OK);
            int32_t alone[M];
            hearth_event done;
            CHECK_EQ(collect(one, alone, M, &done), M);
            CHECK(memcmp(got[i], alone, sizeof alone) == 0);
            hearth_request_release(one);
        }
        if (!greedy) CHECK(memcmp(got[0], got[1], sizeof got[0]) != 0);
    }
    /* a group whose prompts differ is refused, and nothing is queued */
    hearth_request_params bad[2] = {{.prompt = prompt, .n_prompt = N_PROMPT, .max_tokens = 4,
                                     .sampling = hearth_sampler_params_default()},
                                    {.prompt = prompt, .n_prompt = N_PROMPT - 1, .max_tokens = 4,
                                     .sampling = hearth_sampler_params_default()}};
    hearth_request *br[2];
    CHECK_EQ(hearth_engine_submit_n(e, bad, 2, br, &err), HEARTH_E_INVALID);
    CHECK(br[0] == NULL && br[1] == NULL);
    hearth_engine_destroy(e);
    hearth_model_destroy(m);
}

TEST(cancel_and_errors) {
    hearth_model *m = load();
    if (!m) return;
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_ctx = 64;
    hearth_engine *e = NULL;
    hearth_err err;
    CHECK_EQ(hearth_engine_create(m, &ep, &e, &err), HEARTH_OK);
    hearth_request_params rp = {.prompt = prompt, .n_prompt = N_PROMPT, .max_tokens = 50,
                                .sampling = hearth_sampler_params_default(), .ignore_eog = true};
    hearth_request *r = NULL;
    /* prompt + max_tokens over the context: refused at run time with a clear message */
    rp.max_tokens = 60;
    CHECK_EQ(hearth_engine_submit(e, &rp, &r, &err), HEARTH_OK);
    hearth_event done;
    int32_t toks[64];
    CHECK_EQ(collect(r, toks, 64, &done), 0);
    CHECK_EQ(done.finish, HEARTH_FINISH_ERROR);
    CHECK_EQ(done.status, HEARTH_E_LIMIT);
    CHECK(strstr(done.msg, "exceeds the context") != NULL);
    hearth_request_release(r);
    /* cancel after the first token: ends early with CANCELLED. The tiny model runs thousands
     * of tokens a second, so the request gets a budget it cannot finish before the cancel
     * lands (on an engine of a long context), not one a fast machine runs out in time. */
    {
        enum { LONG = 1 << 14 };
        hearth_engine_params lp = ep;
        lp.n_ctx = LONG;
        hearth_engine *le = NULL;
        CHECK_EQ(hearth_engine_create(m, &lp, &le, &err), HEARTH_OK);
        rp.max_tokens = LONG - N_PROMPT;
        CHECK_EQ(hearth_engine_submit(le, &rp, &r, &err), HEARTH_OK);
        hearth_event ev;
        CHECK_EQ(hearth_request_next(r, &ev, 20000), HEARTH_OK);
        CHECK_EQ(ev.kind, HEARTH_EV_TOKEN);
        hearth_engine_cancel(le, r);
        int n = 1;
        while (hearth_request_next(r, &done, 20000) == HEARTH_OK && done.kind == HEARTH_EV_TOKEN) n++;
        CHECK_EQ(done.kind, HEARTH_EV_DONE);
        CHECK_EQ(done.finish, HEARTH_FINISH_CANCELLED);
        CHECK(n < rp.max_tokens);
        printf("  cancelled after %d of %d tokens\n", n, rp.max_tokens);
        hearth_request_release(r);
        hearth_engine_destroy(le);
        rp.max_tokens = 50;
    }
    /* invalid submissions are refused before queueing */
    int32_t bad[] = {1, 999999};
    rp.prompt = bad;
    rp.n_prompt = 2;
    CHECK_EQ(hearth_engine_submit(e, &rp, &r, &err), HEARTH_E_INVALID);
    CHECK(r == NULL);
    rp.prompt = prompt;
    rp.n_prompt = 0;
    CHECK_EQ(hearth_engine_submit(e, &rp, &r, &err), HEARTH_E_INVALID);
    /* a released, still-queued request does not block the engine; destroy joins cleanly */
    rp.n_prompt = N_PROMPT;
    CHECK_EQ(hearth_engine_submit(e, &rp, &r, &err), HEARTH_OK);
    hearth_request_release(r);
    hearth_engine_destroy(e);
    hearth_model_destroy(m);
}

/* ---- the scheduler ---- */

static uint32_t lcg(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* Greedy tokens of any prompt by the forward pass alone. */
static void reference_of(const int32_t *p, int n_p, int32_t *out, int n) {
    harness *h = harness_open(TINY, 64, 128, true, 1);
    CHECK(h != NULL);
    if (!h) return;
    float *logits = malloc((size_t)h->n_vocab * sizeof(float));
    harness_run(h, p, n_p, 0, false, logits);
    for (int s = 0; s < n; s++) {
        out[s] = argmax_f(logits, h->n_vocab);
        harness_run(h, &out[s], 1, n_p + s, false, logits);
    }
    free(logits);
    harness_close(h);
}

enum { NQ = 6, QLEN = 40, QGEN = 20 };

/* NQ prompts: pairs share their first 24 tokens, lengths vary. */
static void make_prompts(int32_t p[NQ][QLEN], int *len) {
    uint32_t s = 5;
    for (int i = 0; i < NQ; i++) {
        len[i] = 20 + (int)(lcg(&s) % 21);
        for (int j = 0; j < QLEN; j++) p[i][j] = 1 + (int32_t)(lcg(&s) % 1999);
        if (i % 2 == 1) memcpy(p[i], p[i - 1], 24 * sizeof(int32_t));
    }
}

static void wait_idle(hearth_engine *e, hearth_engine_stats *st) {
    for (int i = 0; i < 2000; i++) {
        hearth_engine_stats_get(e, st);
        if (st->running == 0 && st->waiting == 0) return;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

/* Submit all NQ prompts at once on an engine with these params; every request must give the
 * tokens it gives alone. Returns the engine's counters at idle. */
static hearth_engine_stats run_concurrent(hearth_engine_params ep, int32_t pool_tokens) {
    static int32_t want[NQ][QGEN];
    static bool have_want;
    int32_t p[NQ][QLEN];
    int len[NQ];
    make_prompts(p, len);
    if (!have_want) {
        for (int i = 0; i < NQ; i++) reference_of(p[i], len[i], want[i], QGEN);
        have_want = true;
    }
    hearth_engine_stats st = {0};
    hearth_model *m = load();
    if (!m) return st;
    ep.n_threads = 2;
    ep.n_ctx = 64;
    ep.kv_f16 = 1;
    ep.debug_checks = true;
    ep.kv_budget = (int64_t)hearth_kv_bytes_per_token(m, HEARTH_KV_SCHEME_F16) * pool_tokens;
    hearth_engine *e = NULL;
    hearth_err err;
    CHECK_EQ(hearth_engine_create(m, &ep, &e, &err), HEARTH_OK);
    if (!e) {
        hearth_model_destroy(m);
        return st;
    }
    hearth_request *r[NQ];
    for (int i = 0; i < NQ; i++) {
        hearth_request_params rp = {.prompt = p[i], .n_prompt = (size_t)len[i], .max_tokens = QGEN,
                                    .sampling = hearth_sampler_params_default(), .ignore_eog = true};
        CHECK_EQ(hearth_engine_submit(e, &rp, &r[i], &err), HEARTH_OK);
    }
    int diff = 0;
    for (int i = 0; i < NQ; i++) {
        int32_t got[QGEN];
        hearth_event done;
        CHECK_EQ(collect(r[i], got, QGEN, &done), QGEN);
        CHECK_EQ(done.finish, HEARTH_FINISH_LENGTH);
        diff += memcmp(got, want[i], sizeof got) != 0;
        hearth_request_release(r[i]);
    }
    CHECK_EQ(diff, 0);
    wait_idle(e, &st);
    CHECK_EQ(st.check_failures, 0);
    CHECK_EQ(st.running + st.waiting, 0);
    CHECK_EQ(st.blocks_free + st.blocks_evictable, st.blocks_total); /* nothing leaks at idle */
    hearth_engine_destroy(e);
    hearth_model_destroy(m);
    return st;
}

TEST(concurrent_requests_match_each_alone) {
    hearth_engine_params ep = hearth_engine_params_default();
    ep.batch = 4; /* two wait in the queue at first */
    ep.max_step = 48; /* prefill chunks mix with decode */
    hearth_engine_stats st = run_concurrent(ep, 64 * 8);
    CHECK_EQ(st.preemptions, 0);
    CHECK(st.steps < NQ * (QGEN + 2)); /* batched: fewer steps than one request after another */
    /* pairs share 24 tokens = one full block of 16: the second of a pair may reuse it */
    CHECK(st.cache_hit_tokens % 16 == 0);
    ep.batch = 1; /* strictly serial */
    st = run_concurrent(ep, 64);
    CHECK_EQ(st.preemptions, 0);
    CHECK(st.cache_hit_tokens >= 3 * 16); /* each second of a pair runs after the first */
}

TEST(preemption_under_a_tiny_pool) {
    hearth_engine_params ep = hearth_engine_params_default();
    ep.batch = 6;
    ep.block_size = 4;
    ep.max_step = 32;
    hearth_engine_stats st = run_concurrent(ep, 64); /* 16 blocks: room for about one and a half */
    CHECK(st.preemptions > 0);
    ep.prompt_cache = 0; /* the same without prefix caching */
    st = run_concurrent(ep, 64);
    CHECK(st.preemptions > 0);
    CHECK_EQ(st.blocks_free, st.blocks_total);
    CHECK_EQ(st.cache_hit_tokens, 0);
}

static hearth_engine *small_engine(hearth_model *m, int32_t pool_tokens, int64_t prompt_cache) {
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_threads = 2;
    ep.n_ctx = 128;
    ep.kv_f16 = 1;
    ep.debug_checks = true;
    ep.prompt_cache = prompt_cache;
    ep.kv_budget = (int64_t)hearth_kv_bytes_per_token(m, HEARTH_KV_SCHEME_F16) * pool_tokens;
    hearth_engine *e = NULL;
    hearth_err err;
    CHECK_EQ(hearth_engine_create(m, &ep, &e, &err), HEARTH_OK);
    return e;
}

static int run_one(hearth_engine *e, const int32_t *p, int n_p, int max_tokens, int32_t *toks, hearth_event *done) {
    hearth_request_params rp = {.prompt = p, .n_prompt = (size_t)n_p, .max_tokens = max_tokens,
                                .sampling = hearth_sampler_params_default(), .ignore_eog = true};
    hearth_request *r = NULL;
    hearth_err err;
    CHECK_EQ(hearth_engine_submit(e, &rp, &r, &err), HEARTH_OK);
    if (!r) return -1;
    int n = collect(r, toks, max_tokens, done);
    hearth_request_release(r);
    return n;
}

TEST(cancel_frees_blocks_at_once) {
    hearth_model *m = load();
    if (!m) return;
    hearth_engine *e = small_engine(m, 128, 0);
    if (!e) return;
    hearth_request_params rp = {.prompt = prompt, .n_prompt = N_PROMPT, .max_tokens = 100,
                                .sampling = hearth_sampler_params_default(), .ignore_eog = true};
    hearth_request *r = NULL;
    hearth_err err;
    CHECK_EQ(hearth_engine_submit(e, &rp, &r, &err), HEARTH_OK);
    hearth_event ev, done;
    CHECK_EQ(hearth_request_next(r, &ev, 20000), HEARTH_OK);
    hearth_engine_stats st;
    for (int i = 0; i < 2000; i++) { /* counters are published after the step */
        hearth_engine_stats_get(e, &st);
        if (st.running == 1) break;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    CHECK(st.blocks_free < st.blocks_total); /* running: it holds blocks */
    hearth_engine_cancel(e, r);
    int32_t toks[128];
    collect(r, toks, 128, &done);
    CHECK_EQ(done.finish, HEARTH_FINISH_CANCELLED);
    hearth_request_release(r);
    wait_idle(e, &st);
    CHECK_EQ(st.blocks_free, st.blocks_total);
    CHECK_EQ(st.check_failures, 0);
    hearth_engine_destroy(e);
    hearth_model_destroy(m);
}

TEST(prefix_cache_hit_gives_same_tokens) {
    hearth_model *m = load();
    if (!m) return;
    hearth_engine *e = small_engine(m, 256, -1);
    if (!e) return;
    int32_t p[QLEN], a[16], b[16];
    uint32_t s = 3;
    for (int i = 0; i < QLEN; i++) p[i] = 1 + (int32_t)(lcg(&s) % 1999);
    hearth_event da, db;
    CHECK_EQ(run_one(e, p, QLEN, 16, a, &da), 16);
    CHECK_EQ(run_one(e, p, QLEN, 16, b, &db), 16);
    CHECK_EQ(da.n_cached, 0);
    CHECK_EQ(db.n_cached, 32); /* the full blocks of the 40-token prompt */
    CHECK(memcmp(a, b, sizeof a) == 0);
    int32_t want[16];
    reference_of(p, QLEN, want, 16);
    CHECK(memcmp(a, want, sizeof a) == 0);
    /* a prompt that ends on a block boundary reuses all but its last block */
    CHECK_EQ(run_one(e, p, 32, 4, a, &da), 4);
    CHECK_EQ(da.n_cached, 16);
    hearth_engine_stats st;
    wait_idle(e, &st);
    CHECK_EQ(st.check_failures, 0);
    CHECK(st.cache_hit_tokens >= 48);
    hearth_engine_destroy(e);
    hearth_model_destroy(m);
}

TEST(prefix_cache_evicts_under_pressure_and_by_cap) {
    hearth_model *m = load();
    if (!m) return;
    hearth_engine *e = small_engine(m, 96, -1); /* 6 blocks */
    if (!e) return;
    int32_t p[2][QLEN], t[24];
    uint32_t s = 9;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < QLEN; i++) p[k][i] = 1 + (int32_t)(lcg(&s) % 1999);
    hearth_event d;
    /* 40 + 24 tokens, the last never fed: 63 in the cache, its 3 full blocks stay cached */
    CHECK_EQ(run_one(e, p[0], QLEN, 24, t, &d), 24);
    hearth_engine_stats st;
    wait_idle(e, &st);
    CHECK_EQ(st.blocks_evictable, 3);
    CHECK_EQ(st.cache_evictions, 0);
    CHECK_EQ(run_one(e, p[1], QLEN, 24, t, &d), 24); /* its 4th block evicts p[0]'s LRU one */
    wait_idle(e, &st);
    CHECK_EQ(st.cache_evictions, 1);
    CHECK_EQ(st.check_failures, 0);
    int32_t want[24];
    reference_of(p[1], QLEN, want, 24);
    CHECK(memcmp(t, want, sizeof t) == 0);
    /* the tail block went first: p[0]'s first two blocks still serve */
    CHECK_EQ(run_one(e, p[0], QLEN, 4, t, &d), 4);
    CHECK_EQ(d.n_cached, 32);
    hearth_engine_destroy(e);
    /* a cap of one block keeps at most one evictable block */
    e = small_engine(m, 256, (int64_t)hearth_kv_bytes_per_token(m, HEARTH_KV_SCHEME_F16) * 16);
    if (e) {
        CHECK_EQ(run_one(e, p[0], QLEN, 24, t, &d), 24);
        wait_idle(e, &st);
        CHECK(st.blocks_evictable <= 1);
        CHECK_EQ(st.blocks_free + st.blocks_evictable, st.blocks_total);
        hearth_engine_destroy(e);
    }
    hearth_model_destroy(m);
}

TEST(cache_flush_empties_the_prefix_cache) {
    hearth_model *m = load();
    if (!m) return;
    hearth_engine *e = small_engine(m, 256, -1);
    if (!e) return;
    int32_t p[QLEN], t[8];
    uint32_t s = 5;
    for (int i = 0; i < QLEN; i++) p[i] = 1 + (int32_t)(lcg(&s) % 1999);
    hearth_event d;
    CHECK_EQ(run_one(e, p, QLEN, 8, t, &d), 8);
    hearth_engine_stats st;
    wait_idle(e, &st);
    CHECK(st.blocks_evictable >= 2);
    int32_t cached = (int32_t)st.blocks_evictable;
    CHECK_EQ(hearth_engine_cache_flush(e), cached);
    hearth_engine_stats_get(e, &st);
    CHECK_EQ(st.blocks_evictable, 0);
    CHECK_EQ(st.blocks_cached, 0);
    CHECK_EQ(st.blocks_free, st.blocks_total);
    CHECK_EQ(hearth_engine_cache_flush(e), 0); /* nothing left: a second flush frees nothing */
    CHECK_EQ(run_one(e, p, QLEN, 8, t, &d), 8);
    CHECK_EQ(d.n_cached, 0); /* the same prompt finds nothing cached */
    wait_idle(e, &st);
    CHECK_EQ(st.check_failures, 0);
    hearth_engine_destroy(e);
    hearth_model_destroy(m);
}

TEST(admitted_flag_and_cancel_all) {
    hearth_model *m = load();
    if (!m) return;
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_threads = 2;
    ep.n_ctx = 2048; /* a runs for up to 2000 tokens: still running when b is looked at, even on a fast machine */
    ep.batch = 1; /* the second request waits in the queue */
    ep.debug_checks = true;
    hearth_engine *e = NULL;
    hearth_err err;
    CHECK_EQ(hearth_engine_create(m, &ep, &e, &err), HEARTH_OK);
    if (!e) return;
    hearth_request_params rp = {.prompt = prompt, .n_prompt = N_PROMPT, .max_tokens = 2000,
                                .sampling = hearth_sampler_params_default(), .ignore_eog = true};
    hearth_request *a = NULL, *b = NULL;
    CHECK_EQ(hearth_engine_submit(e, &rp, &a, &err), HEARTH_OK);
    hearth_event ev, done;
    CHECK_EQ(hearth_request_next(a, &ev, 20000), HEARTH_OK); /* a runs */
    CHECK(hearth_request_admitted(a));
    CHECK_EQ(hearth_engine_submit(e, &rp, &b, &err), HEARTH_OK);
    struct timespec ts = {0, 20000000};
    nanosleep(&ts, NULL);
    CHECK(!hearth_request_admitted(b)); /* batch 1: b waits while a runs */
    hearth_engine_cancel_all(e);
    int32_t toks[128];
    collect(a, toks, 128, &done);
    CHECK_EQ(done.finish, HEARTH_FINISH_CANCELLED);
    CHECK_EQ(collect(b, toks, 128, &done), 0);
    CHECK_EQ(done.finish, HEARTH_FINISH_CANCELLED);
    hearth_request_release(a);
    hearth_request_release(b);
    /* the engine still serves after a cancel-all */
    CHECK_EQ(run_one(e, prompt, N_PROMPT, 4, toks, &done), 4);
    hearth_engine_stats st;
    wait_idle(e, &st);
    CHECK_EQ(st.check_failures, 0);
    hearth_engine_destroy(e);
    hearth_model_destroy(m);
}

TEST(admission_refuses_what_can_never_fit) {
    hearth_model *m = load();
    if (!m) return;
    hearth_engine *e = small_engine(m, 64, -1); /* 4 blocks of 16 */
    if (!e) return;
    hearth_request_params rp = {.prompt = prompt, .n_prompt = N_PROMPT, .max_tokens = 60,
                                .sampling = hearth_sampler_params_default(), .ignore_eog = true};
    hearth_request *r = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_engine_submit(e, &rp, &r, &err), HEARTH_E_LIMIT);
    CHECK(r == NULL);
    CHECK(strstr(err.msg, "the pool holds 64") != NULL);
    rp.max_tokens = 55; /* 10 + 55 - 1 = 64 tokens of KV: fits exactly */
    int32_t t[64];
    hearth_event d;
    CHECK_EQ(hearth_engine_submit(e, &rp, &r, &err), HEARTH_OK);
    CHECK_EQ(collect(r, t, 64, &d), 55);
    hearth_request_release(r);
    hearth_engine_destroy(e);
    hearth_model_destroy(m);
}

/* Random submits and cancels on a small pool: the invariants hold after every step and
 * nothing leaks at idle. */
TEST(random_submit_cancel_keeps_the_pool_sound) {
    hearth_model *m = load();
    if (!m) return;
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_threads = 2;
    ep.n_ctx = 64;
    ep.kv_f16 = 1;
    ep.debug_checks = true;
    ep.batch = 4;
    ep.block_size = 4;
    ep.max_step = 24;
    ep.kv_budget = (int64_t)hearth_kv_bytes_per_token(m, HEARTH_KV_SCHEME_F16) * 96;
    hearth_engine *e = NULL;
    hearth_err err;
    CHECK_EQ(hearth_engine_create(m, &ep, &e, &err), HEARTH_OK);
    if (!e) return;
    int rounds = getenv("HEARTH_TEST_SANITIZED") ? 20 : 80;
    uint32_t s = 17;
    enum { LIVE = 6 };
    hearth_request *live[LIVE] = {0};
    int32_t p[40];
    for (int i = 0; i < 40; i++) p[i] = 1 + (int32_t)(lcg(&s) % 1999);
    for (int k = 0; k < rounds; k++) {
        int slot = (int)(lcg(&s) % LIVE);
        if (live[slot]) {
            if (lcg(&s) % 2) hearth_engine_cancel(e, live[slot]);
            hearth_event ev;
            do CHECK_EQ(hearth_request_next(live[slot], &ev, 20000), HEARTH_OK);
            while (ev.kind != HEARTH_EV_DONE);
            CHECK(ev.finish == HEARTH_FINISH_LENGTH || ev.finish == HEARTH_FINISH_CANCELLED);
            hearth_request_release(live[slot]);
            live[slot] = NULL;
        }
        hearth_request_params rp = {.prompt = p + lcg(&s) % 8, .n_prompt = 4 + lcg(&s) % 28,
                                    .max_tokens = 1 + (int32_t)(lcg(&s) % 24),
                                    .sampling = hearth_sampler_params_default(), .ignore_eog = true};
        CHECK_EQ(hearth_engine_submit(e, &rp, &live[slot], &err), HEARTH_OK);
    }
    for (int i = 0; i < LIVE; i++) hearth_request_release(live[i]); /* cancels the rest */
    hearth_engine_stats st;
    wait_idle(e, &st);
    CHECK_EQ(st.check_failures, 0);
    CHECK_EQ(st.blocks_free + st.blocks_evictable, st.blocks_total);
    hearth_engine_destroy(e);
    hearth_model_destroy(m);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
