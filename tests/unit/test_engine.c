/*
 * test_engine.c - the engine seam: submit / events / cancel on the engine thread, with the
 * committed tiny qwen2 model. Token values are checked against a direct forward pass (the
 * harness), so the test fails if the engine feeds positions, cache or sampling wrongly.
 */
#include "engine/engine.h"
#include "../models/model_harness.h"
#include "test.h"

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
    /* cancel after the first token: ends early with CANCELLED */
    rp.max_tokens = 50;
    CHECK_EQ(hearth_engine_submit(e, &rp, &r, &err), HEARTH_OK);
    hearth_event ev;
    CHECK_EQ(hearth_request_next(r, &ev, 20000), HEARTH_OK);
    CHECK_EQ(ev.kind, HEARTH_EV_TOKEN);
    hearth_engine_cancel(e, r);
    int n = collect(r, toks, 64, &done);
    CHECK_EQ(done.finish, HEARTH_FINISH_CANCELLED);
    CHECK(n < 49);
    hearth_request_release(r);
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

int main(int argc, char **argv) { return test_main(argc, argv); }
