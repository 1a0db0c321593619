/* test_sampler.c - the sampling chain: greedy, truncations, penalties, bias, seeding. */
#include "engine/sampler.h"
#include "test.h"

#include <math.h>

enum { V = 8 };

static hearth_sampler *make(hearth_sampler_params p) {
    hearth_err err;
    hearth_sampler *s = hearth_sampler_create(&p, V, &err);
    CHECK(s != NULL);
    return s;
}

static int32_t draw(hearth_sampler *s, const float *base) {
    float l[V];
    memcpy(l, base, sizeof l);
    return hearth_sampler_sample(s, l);
}

static const float logits0[V] = {1.0f, 3.0f, 2.5f, -1.0f, 0.0f, 2.9f, -4.0f, 0.5f};

TEST(greedy_is_argmax_lowest_id_on_ties) {
    hearth_sampler *s = make(hearth_sampler_params_default());
    CHECK_EQ(draw(s, logits0), 1);
    float tie[V] = {0, 5, 1, 5, 0, 0, 0, 0};
    CHECK_EQ(draw(s, tie), 1);
    hearth_sampler_destroy(s);
}

TEST(top_k_1_is_greedy_at_any_temperature) {
    hearth_sampler_params p = hearth_sampler_params_default();
    p.temperature = 5.0f;
    p.top_k = 1;
    p.seed = 7;
    hearth_sampler *s = make(p);
    for (int i = 0; i < 200; i++) CHECK_EQ(draw(s, logits0), 1);
    hearth_sampler_destroy(s);
}

TEST(top_k_and_top_p_restrict_support) {
    hearth_sampler_params p = hearth_sampler_params_default();
    p.temperature = 1.0f;
    p.top_k = 3; /* ids 1, 5, 2 */
    p.seed = 1;
    hearth_sampler *s = make(p);
    int seen[V] = {0};
    for (int i = 0; i < 3000; i++) seen[draw(s, logits0)]++;
    CHECK(seen[1] > 0 && seen[5] > 0 && seen[2] > 0);
    CHECK_EQ(seen[0] + seen[3] + seen[4] + seen[6] + seen[7], 0);
    hearth_sampler_destroy(s);

    /* top_p: p(1) ~ 0.35, p(5) ~ 0.32, p(2) ~ 0.21: 0.6 keeps exactly {1, 5} */
    p.top_k = 0;
    p.top_p = 0.6f;
    s = make(p);
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < 3000; i++) seen[draw(s, logits0)]++;
    CHECK(seen[1] > 0 && seen[5] > 0);
    CHECK_EQ(3000 - seen[1] - seen[5], 0);
    hearth_sampler_destroy(s);
}

TEST(min_p_drops_unlikely) {
    hearth_sampler_params p = hearth_sampler_params_default();
    p.temperature = 1.0f;
    p.min_p = 0.5f; /* keeps tokens with p >= 0.5 p_max: ids 1 (3.0), 5 (2.9), 2 (2.5: e^-0.5=0.61) */
    p.seed = 3;
    hearth_sampler *s = make(p);
    int seen[V] = {0};
    for (int i = 0; i < 3000; i++) seen[draw(s, logits0)]++;
    CHECK(seen[1] > 0 && seen[5] > 0 && seen[2] > 0);
    CHECK_EQ(3000 - seen[1] - seen[5] - seen[2], 0);
    hearth_sampler_destroy(s);
}

TEST(frequencies_follow_softmax) {
    hearth_sampler_params p = hearth_sampler_params_default();
    p.temperature = 1.0f;
    p.seed = 42;
    hearth_sampler *s = make(p);
    enum { N = 40000 };
    int seen[V] = {0};
    for (int i = 0; i < N; i++) seen[draw(s, logits0)]++;
    double z = 0;
    for (int i = 0; i < V; i++) z += exp(logits0[i]);
    for (int i = 0; i < V; i++) {
        double pe = exp(logits0[i]) / z, sd = sqrt(pe * (1 - pe) / N);
        CHECK_NEAR((double)seen[i] / N, pe, 5 * sd + 1e-4);
    }
    hearth_sampler_destroy(s);
}

TEST(temperature_sharpens) {
    hearth_sampler_params p = hearth_sampler_params_default();
    p.temperature = 0.1f;
    p.seed = 9;
    hearth_sampler *s = make(p);
    int top = 0;
    for (int i = 0; i < 2000; i++) top += draw(s, logits0) == 1;
    /* p(1)/p(5) = e^(0.1/0.1) = e: p(1) ~ 0.73 */
    CHECK(top > 1300 && top < 1620);
    hearth_sampler_destroy(s);
}

TEST(same_seed_same_tokens_other_seed_differs) {
    hearth_sampler_params p = hearth_sampler_params_default();
    p.temperature = 1.5f;
    p.seed = 1234;
    hearth_sampler *a = make(p), *b = make(p);
    p.seed = 1235;
    hearth_sampler *c = make(p);
    int differ = 0;
    for (int i = 0; i < 100; i++) {
        int32_t ta = draw(a, logits0), tb = draw(b, logits0), tc = draw(c, logits0);
        CHECK_EQ(ta, tb);
        differ += ta != tc;
    }
    CHECK(differ > 10);
    hearth_sampler_destroy(a);
    hearth_sampler_destroy(b);
    hearth_sampler_destroy(c);
}

TEST(penalties_and_bias_change_logits_exactly) {
    hearth_logit_bias bias[] = {{3, 10.0f}, {1, -INFINITY}};
    hearth_sampler_params p = hearth_sampler_params_default();
    p.bias = bias;
    p.n_bias = 2;
    hearth_sampler *s = make(p);
    float l[V];
    memcpy(l, logits0, sizeof l);
    CHECK_EQ(hearth_sampler_sample(s, l), 3); /* -1 + 10 = 9 */
    CHECK_NEAR(l[3], 9.0f, 1e-6);
    hearth_sampler_destroy(s);

    p = hearth_sampler_params_default();
    p.repeat_penalty = 2.0f;
    p.frequency_penalty = 0.5f;
    p.presence_penalty = 0.25f;
    s = make(p);
    hearth_sampler_accept(s, 1);
    hearth_sampler_accept(s, 1);
    hearth_sampler_accept(s, 3);
    memcpy(l, logits0, sizeof l);
    int32_t t = hearth_sampler_sample(s, l);
    /* id 1: 3/2 - 0.5*2 - 0.25 = 0.25; id 3: -1*2 - 0.5 - 0.25 = -2.75 */
    CHECK_NEAR(l[1], 0.25f, 1e-6);
    CHECK_NEAR(l[3], -2.75f, 1e-6);
    CHECK_NEAR(l[5], 2.9f, 1e-6);
    CHECK_EQ(t, 5);
    hearth_sampler_destroy(s);
}

TEST(repeat_window_forgets_old_tokens) {
    hearth_sampler_params p = hearth_sampler_params_default();
    p.repeat_penalty = 10.0f;
    p.repeat_last_n = 2;
    hearth_sampler *s = make(p);
    hearth_sampler_accept(s, 1);
    hearth_sampler_accept(s, 4);
    hearth_sampler_accept(s, 4); /* window now {4, 4}: 1 no longer penalized */
    float l[V];
    memcpy(l, logits0, sizeof l);
    CHECK_EQ(hearth_sampler_sample(s, l), 1);
    CHECK_NEAR(l[1], 3.0f, 1e-6);
    hearth_sampler_destroy(s);
}

TEST(invalid_params_refused) {
    hearth_logit_bias bias[] = {{V, 1.0f}};
    hearth_sampler_params p = hearth_sampler_params_default();
    p.bias = bias;
    p.n_bias = 1;
    hearth_err err;
    CHECK(hearth_sampler_create(&p, V, &err) == NULL);
    CHECK(strstr(err.msg, "outside the vocabulary") != NULL);
    p = hearth_sampler_params_default();
    p.repeat_penalty = 0.0f;
    CHECK(hearth_sampler_create(&p, V, &err) == NULL);
}

/* Reference for hearth_sampler_logprobs: a full log-softmax in double and a stable sort. */
static int lp_ref_cmp(const void *a, const void *b) {
    const double *x = a, *y = b; /* {logit, id} pairs */
    if (x[0] != y[0]) return x[0] < y[0] ? 1 : -1;
    return x[1] < y[1] ? -1 : 1;
}

TEST(logprobs_match_full_log_softmax) {
    enum { N = 1000 };
    static float logits[N];
    static double pairs[N][2];
    uint64_t x = 12345;
    for (int trial = 0; trial < 20; trial++) {
        for (int i = 0; i < N; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            logits[i] = (float)((double)(x >> 40) / (double)(1ull << 24) * 20.0 - 10.0);
            if (trial % 4 == 0 && i % 7 == 0) logits[i] = 3.0f; /* ties */
        }
        double max = logits[0], sum = 0;
        for (int i = 1; i < N; i++) if (logits[i] > max) max = logits[i];
        for (int i = 0; i < N; i++) sum += exp((double)logits[i] - max);
        double lz = max + log(sum);
        for (int i = 0; i < N; i++) pairs[i][0] = logits[i], pairs[i][1] = i;
        qsort(pairs, N, sizeof pairs[0], lp_ref_cmp);
        int k = trial % (HEARTH_TOP_LOGPROBS_MAX + 1), chosen = (trial * 37) % N;
        hearth_token_logprobs lp;
        hearth_sampler_logprobs(logits, N, chosen, k, &lp);
        CHECK_NEAR(lp.logprob, logits[chosen] - lz, 1e-5);
        CHECK_EQ(lp.n_top, k);
        double mass = 0;
        for (int j = 0; j < lp.n_top; j++) {
            CHECK_EQ(lp.top_id[j], (int)pairs[j][1]);
            CHECK_NEAR(lp.top_logprob[j], pairs[j][0] - lz, 1e-5);
            if (j) CHECK(lp.top_logprob[j] <= lp.top_logprob[j - 1]);
            mass += exp(lp.top_logprob[j]);
        }
        CHECK(mass <= 1.0 + 1e-6);
    }
    hearth_token_logprobs lp;
    float two[2] = {0.0f, 0.0f};
    hearth_sampler_logprobs(two, 2, 1, 99, &lp); /* k clamped to the vocab */
    CHECK_EQ(lp.n_top, 2);
    CHECK_NEAR(lp.logprob, log(0.5), 1e-6);
    CHECK_EQ(lp.top_id[0], 0);
}

/* XTC at temperature 1 over logits0: p(1) ~ 0.36, p(5) ~ 0.32, p(2) ~ 0.22, the rest < 0.05. */
TEST(xtc_removes_the_top_choices_but_the_least_of_them) {
    hearth_sampler_params p = hearth_sampler_params_default();
    p.temperature = 1.0f;
    p.seed = 3;
    p.xtc_probability = 1.0f;
    p.xtc_threshold = 0.1f; /* above it: 1, 5, 2; 2 is kept */
    hearth_sampler *s = make(p);
    int seen[V] = {0};
    for (int i = 0; i < 3000; i++) seen[draw(s, logits0)]++;
    CHECK_EQ(seen[1], 0);
    CHECK_EQ(seen[5], 0);
    CHECK(seen[2] > 2000); /* ~0.22 / (0.22 + 0.10) of the draws */
    CHECK(seen[0] > 0 && seen[7] > 0);
    hearth_sampler_destroy(s);

    /* one token over the threshold: nothing to exclude */
    p.xtc_threshold = 0.33f;
    s = make(p);
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < 3000; i++) seen[draw(s, logits0)]++;
    CHECK(seen[1] > 800 && seen[5] > 800);
    hearth_sampler_destroy(s);

    /* greedy ignores it */
    p.temperature = 0.0f;
    p.xtc_threshold = 0.1f;
    s = make(p);
    CHECK_EQ(draw(s, logits0), 1);
    hearth_sampler_destroy(s);
}

TEST(xtc_probability_and_threshold) {
    hearth_sampler_params p = hearth_sampler_params_default();
    p.temperature = 1.0f;
    p.seed = 11;
    /* a threshold over 0.5 never finds two tokens: the very same draws as without XTC */
    hearth_sampler *plain = make(p);
    p.xtc_probability = 1.0f;
    p.xtc_threshold = 0.51f;
    hearth_sampler *high = make(p);
    for (int i = 0; i < 500; i++) CHECK_EQ(draw(high, logits0), draw(plain, logits0));
    hearth_sampler_destroy(high);
    hearth_sampler_destroy(plain);

    /* probability 0.5: the top token keeps about half its share (0.36 -> ~0.18) */
    p.xtc_probability = 0.5f;
    p.xtc_threshold = 0.1f;
    hearth_sampler *half = make(p);
    int top = 0, n = 6000;
    for (int i = 0; i < n; i++) top += draw(half, logits0) == 1;
    CHECK(top > n * 0.14 && top < n * 0.22);
    hearth_sampler_destroy(half);

    /* seeded: the same seed gives the same tokens */
    hearth_sampler *a = make(p), *b = make(p);
    for (int i = 0; i < 300; i++) CHECK_EQ(draw(a, logits0), draw(b, logits0));
    hearth_sampler_destroy(a);
    hearth_sampler_destroy(b);

    hearth_err err;
    p.xtc_probability = 1.5f;
    CHECK(hearth_sampler_create(&p, V, &err) == NULL);
    p.xtc_probability = NAN;
    CHECK(hearth_sampler_create(&p, V, &err) == NULL);
}

int main(int argc, char **argv) { return test_main(argc, argv); }

/* A grammar allowing exactly one of the literals "b" / "f" / "h" (tokens 1, 5, 7 of a vocab
 * whose token i is the letter 'a' + i). */
static hearth_cx_matcher *one_of_bfh(hearth_cx_vocab **v) {
    static const char letters[V] = {'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'};
    hearth_span pieces[V];
    for (int i = 0; i < V; i++) pieces[i] = (hearth_span){&letters[i], 1};
    *v = hearth_cx_vocab_create(V, pieces, NULL);
    hearth_cx_builder *b = hearth_cx_builder_create(hearth_cx_limits_default());
    const char *lits[] = {"b", "f", "h"};
    size_t lens[] = {1, 1, 1};
    int root = hearth_cx_rule_choice(b, lits, lens, 3);
    hearth_err err;
    hearth_cx_grammar *g = hearth_cx_build(b, root, &err);
    hearth_cx_builder_destroy(b);
    return hearth_cx_matcher_create(g, *v);
}

TEST(constrained_greedy_takes_the_best_allowed) {
    hearth_cx_vocab *v;
    hearth_cx_matcher *m = one_of_bfh(&v);
    hearth_sampler *s = make(hearth_sampler_params_default());
    float l[V];
    memcpy(l, logits0, sizeof l);
    CHECK_EQ(hearth_sampler_sample_constrained(s, l, m), 1); /* the argmax is allowed: kept */
    float l2[V] = {9, 0, 8, 7, 6, 2.5f, 5, 3};
    CHECK_EQ(hearth_sampler_sample_constrained(s, l2, m), 7); /* h (3) over f (2.5) and b (0) */
    hearth_sampler_destroy(s);
    hearth_cx_matcher_destroy(m);
    hearth_cx_vocab_destroy(v);
}

/* Sampling under a constraint follows the softmax renormalized over the allowed tokens. */
TEST(constrained_sampling_follows_the_masked_softmax) {
    hearth_cx_vocab *v;
    hearth_cx_matcher *m = one_of_bfh(&v);
    hearth_sampler_params p = hearth_sampler_params_default();
    p.temperature = 1.0f;
    p.seed = 9;
    hearth_sampler *s = make(p);
    enum { N = 30000 };
    int seen[V] = {0};
    for (int i = 0; i < N; i++) {
        float l[V];
        memcpy(l, logits0, sizeof l);
        int32_t t = hearth_sampler_sample_constrained(s, l, m);
        CHECK(t >= 0 && t < V);
        if (t >= 0 && t < V) seen[t]++;
    }
    double z = exp(logits0[1]) + exp(logits0[5]) + exp(logits0[7]);
    for (int i = 0; i < V; i++) {
        double pe = i == 1 || i == 5 || i == 7 ? exp(logits0[i]) / z : 0, sd = sqrt(pe * (1 - pe) / N);
        CHECK_NEAR((double)seen[i] / N, pe, 5 * sd + 1e-4);
    }
    hearth_sampler_destroy(s);
    hearth_cx_matcher_destroy(m);
    hearth_cx_vocab_destroy(v);
}

/* When the allowed tokens are too unlikely for redraws to find, the vocabulary is masked. */
TEST(constrained_sampling_masks_when_redraws_fail) {
    enum { NV = 200 };
    static char bytes[NV];
    hearth_span pieces[NV];
    for (int i = 0; i < NV; i++) {
        bytes[i] = (char)(i + 1);
        pieces[i] = (hearth_span){&bytes[i], 1};
    }
    hearth_cx_vocab *v = hearth_cx_vocab_create(NV, pieces, NULL);
    hearth_cx_builder *b = hearth_cx_builder_create(hearth_cx_limits_default());
    int root = hearth_cx_rule_lit(b, "\x06", 1); /* token 5 only */
    hearth_err err;
    hearth_cx_grammar *g = hearth_cx_build(b, root, &err);
    hearth_cx_builder_destroy(b);
    hearth_cx_matcher *m = hearth_cx_matcher_create(g, v);
    hearth_sampler_params p = hearth_sampler_params_default();
    p.temperature = 1.0f;
    p.seed = 3;
    hearth_sampler *s = hearth_sampler_create(&p, NV, &err);
    for (int rep = 0; rep < 20; rep++) {
        float l[NV];
        for (int i = 0; i < NV; i++) l[i] = i == 5 ? -30.0f : 0.0f;
        CHECK_EQ(hearth_sampler_sample_constrained(s, l, m), 5);
        CHECK(isinf(l[0]) && l[0] < 0); /* the mask ran */
    }
    hearth_sampler_destroy(s);
    hearth_cx_matcher_destroy(m);
    hearth_cx_vocab_destroy(v);
}
