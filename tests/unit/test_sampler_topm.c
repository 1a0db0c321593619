/*
 * test_sampler_topm.c - sampling on a row summary (sampler.h's topm, kernels/ref/topm_ref.h)
 * picks what sampling on the row picks: two samplers of one seed, one given each row whole and
 * the other its summary (made by the reference, whose sums run in the row sampler's order, so
 * the tokens and the RNG streams must stay equal draw for draw), over greedy, top-k, top-p,
 * min-p, XTC and plain temperature draws, with and without logit bias and the three penalties
 * (applied to the row as the sampler's edits), peaked and flat rows, rows with many ties. Also: the
 * summary falls short (-2, no RNG draw) exactly where its head cannot decide, and the logprobs
 * from a summary equal those from the row.
 */
#include "engine/sampler.h"
#include "test.h"

#include <math.h>

enum { NV = 5000 };

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static double unif(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (double)(rs >> 11) * 0x1.0p-53;
}

/* kind 0: peaked (a few dozen likely tokens), 1: flat, 2: peaked with values on a 0.25 grid (ties) */
static void make_row(float *x, int kind) {
    for (int i = 0; i < NV; i++) {
        double g = sqrt(-2 * log(unif() + 1e-12)) * cos(6.283185307 * unif());
        x[i] = kind == 1 ? (float)(0.05 * g) : (float)(1.5 * g);
    }
    if (kind != 1)
        for (int k = 0; k < 40; k++) x[(int)(unif() * NV)] += (float)(4 + 6 * unif());
    if (kind == 2)
        for (int i = 0; i < NV; i++) x[i] = roundf(x[i] * 4) / 4;
}

typedef struct {
    const char *name;
    hearth_sampler_params p;
    hearth_topm_mode mode;
} config;

static hearth_sampler_params P(float t, int32_t k, float top_p, float min_p, float xtc_p) {
    hearth_sampler_params p = hearth_sampler_params_default();
    p.temperature = t;
    p.top_k = k;
    p.top_p = top_p;
    p.min_p = min_p;
    p.xtc_probability = xtc_p;
    p.xtc_threshold = 0.05f;
    p.seed = 11;
    return p;
}

static hearth_sampler *make(const hearth_sampler_params *p) {
    hearth_err err;
    hearth_sampler *s = hearth_sampler_create(p, NV, &err);
    CHECK(s != NULL);
    return s;
}

/* n_short: rows whose summary fell short */
static void run(const config *c, int kind, int steps, int *n_short) {
    hearth_sampler *a = make(&c->p), *b = make(&c->p);
    CHECK_EQ(hearth_sampler_topm_mode(b), c->mode);
    static float x[NV], xa[NV], xb[NV];
    static hearth_topm t;
    for (int s = 0; s < steps; s++) {
        make_row(x, kind);
        memcpy(xa, x, sizeof x);
        memcpy(xb, x, sizeof x);
        int32_t ta = hearth_sampler_sample(a, xa);
        hearth_topm_req rq;
        hearth_sampler_topm_req(b, &rq);
        static hearth_topm_edit e[NV];
        CHECK(hearth_sampler_topm_edits_max(b) <= NV);
        rq.n_edit = hearth_sampler_topm_edits(b, e);
        hearth_topm_edit_ref(xb, e, rq.n_edit);
        hearth_topm_row_ref(xb, NV, &rq, &t);
        int32_t tb = hearth_sampler_sample_topm(b, &t);
        bool fell_short = tb == -2;
        if (fell_short) {
            (*n_short)++;
            tb = hearth_sampler_sample_edited(b, xb);
        }
        if (ta != tb) fprintf(stderr, "  %s row kind %d step %d: row %d, summary %d\n", c->name, kind, s, ta, tb);
        CHECK_EQ(ta, tb);
        if (!fell_short) {
            hearth_token_logprobs la, lb;
            hearth_sampler_logprobs(xa, NV, ta, 5, &la);
            hearth_sampler_logprobs_topm(&t, tb, 5, &lb);
            CHECK_EQ(la.n_top, lb.n_top);
            CHECK_NEAR(la.logprob, lb.logprob, 1e-6);
            for (int j = 0; j < la.n_top; j++) {
                CHECK_EQ(la.top_id[j], lb.top_id[j]);
                CHECK_NEAR(la.top_logprob[j], lb.top_logprob[j], 1e-6);
            }
        }
        hearth_sampler_accept(a, ta);
        hearth_sampler_accept(b, tb);
    }
    hearth_sampler_destroy(a);
    hearth_sampler_destroy(b);
}

static const char *const NAMES[] = {"greedy", "top_k 40", "top_p 0.9", "top_k 40 top_p 0.95 min_p 0.05",
                                    "top_k 1000 min_p 0.1", "top_k 20 xtc", "temperature", "temperature min_p 0.05",
                                    "greedy bias penalties", "top_k 40 penalties", "temperature bias penalties"};
static const hearth_logit_bias BIAS[] = {{7, 5.0f}, {4000, -3.0f}, {123, -INFINITY}, {9, 2.5f}};
enum { N_CONFIGS = sizeof NAMES / sizeof *NAMES };

static config cfg(int i) {
    config c = {NAMES[i], hearth_sampler_params_default(), i == 6 || i == 7 || i == 10 ? HEARTH_TOPM_DRAW
                                                                                      : HEARTH_TOPM_CANDS};
    switch (i) {
    case 0: c.p = P(0, 0, 1, 0, 0); break;
    case 1: c.p = P(0.8f, 40, 1, 0, 0); break;
    case 2: c.p = P(1.0f, 0, 0.9f, 0, 0); break;
    case 3: c.p = P(0.7f, 40, 0.95f, 0.05f, 0); break;
    case 4: c.p = P(1.2f, 1000, 1, 0.1f, 0); break;
    case 5: c.p = P(1.0f, 20, 1, 0, 0.5f); break;
    case 6: c.p = P(1.0f, 0, 1, 0, 0); break;
    case 7: c.p = P(0.9f, 0, 1, 0.05f, 0); break;
    case 8: c.p = P(0, 0, 1, 0, 0); break;
    case 9: c.p = P(0.8f, 40, 1, 0, 0); break;
    default: c.p = P(1.0f, 0, 1, 0, 0); break;
    }
    if (i >= 8) { /* strong enough to change picks: the peaked rows' best tokens repeat */
        c.p.repeat_penalty = 1.5f;
        c.p.repeat_last_n = 8;
        c.p.presence_penalty = 0.7f;
        c.p.frequency_penalty = 0.4f;
    }
    if (i == 8 || i == 10) {
        c.p.bias = BIAS;
        c.p.n_bias = 4;
    }
    return c;
}

TEST(summary_picks_what_the_row_picks) {
    for (int i = 0; i < N_CONFIGS; i++) {
        config c = cfg(i);
        for (int kind = 0; kind < 3; kind++) {
            int n_short = 0;
            run(&c, kind, 60, &n_short);
            fprintf(stderr, "  %-32s rows %d: %d of 60 summaries fell short\n", c.name, kind, n_short);
            if (kind != 1) CHECK_EQ(n_short, 0); /* peaked rows: the head decides */
        }
    }
}

/* Where the head cannot decide, the summary says so: top-p 0.9 of a flat 5000-entry row needs
 * most of the row; top-k 1000 without a min-p cut needs 1000 entries */
TEST(summary_falls_short_where_its_head_cannot_decide) {
    config flat_p = cfg(2);
    int n_short = 0;
    run(&flat_p, 1, 20, &n_short);
    CHECK_EQ(n_short, 20);
    config k1000 = {"top_k 1000", P(1.0f, 1000, 1, 0, 0), HEARTH_TOPM_CANDS};
    n_short = 0;
    run(&k1000, 0, 20, &n_short);
    CHECK_EQ(n_short, 20);
}

/* The edits: one per token, the three operations merged (a token both recent and generated and
 * biased gets all three flags) */
TEST(edits_merge_per_token) {
    hearth_sampler_params p = P(1.0f, 40, 1, 0, 0);
    p.repeat_penalty = 1.3f;
    p.repeat_last_n = 4;
    p.presence_penalty = 0.5f;
    p.frequency_penalty = 0.25f;
    hearth_logit_bias bias[] = {{9, 1.0f}, {3, -2.0f}};
    p.bias = bias;
    p.n_bias = 2;
    hearth_sampler *s = make(&p);
    int32_t gen[] = {3, 5, 3, 11, 5, 3}; /* the window of 4 keeps 3, 11, 5, 3 */
    for (int i = 0; i < 6; i++) hearth_sampler_accept(s, gen[i]);
    hearth_topm_edit e[32];
    int32_t n = hearth_sampler_topm_edits(s, e);
    CHECK_EQ(n, 4); /* 3, 5, 9, 11 */
    CHECK_EQ(e[0].token, 3);
    CHECK_EQ(e[0].flags, HEARTH_TOPM_ADD | HEARTH_TOPM_REP | HEARTH_TOPM_SUB);
    CHECK_NEAR(e[0].sub, 0.25 * 3 + 0.5, 1e-6);
    CHECK_EQ(e[1].token, 5);
    CHECK_EQ(e[1].flags, HEARTH_TOPM_REP | HEARTH_TOPM_SUB);
    CHECK_EQ(e[2].token, 9);
    CHECK_EQ(e[2].flags, HEARTH_TOPM_ADD);
    CHECK_EQ(e[3].token, 11);
    CHECK_EQ(e[3].flags, HEARTH_TOPM_REP | HEARTH_TOPM_SUB);
    CHECK_NEAR(e[3].sub, 0.75, 1e-6);
    hearth_sampler_destroy(s);
}

TEST(what_needs_the_row) {
    hearth_sampler_params p = P(0, 0, 1, 0, 0);
    hearth_logit_bias bias[] = {{3, 2.0f}, {3, 1.0f}}; /* a token twice: added in turn on the row */
    p.bias = bias;
    p.n_bias = 2;
    hearth_sampler *s = make(&p);
    CHECK_EQ(hearth_sampler_topm_mode(s), HEARTH_TOPM_OFF);
    hearth_sampler_destroy(s);
    p = P(1.0f, 0, 1, 0, 0.5f); /* XTC on an unsorted draw */
    s = make(&p);
    CHECK_EQ(hearth_sampler_topm_mode(s), HEARTH_TOPM_OFF);
    hearth_sampler_destroy(s);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
