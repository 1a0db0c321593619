/*
 * test_spec_sampling.c - speculative decoding keeps the target's output distribution exactly.
 *
 * A tiny scripted model is a Markov chain over V tokens: the logits after token a are row a of a
 * fixed table, so the distribution of every generated token is known in closed form (powers of
 * the chain's matrix). A scripted draft source proposes runs of drafts drawn from a different
 * chain (q), or certain drafts (no distribution). Thousands of seeded requests run through the
 * real scheduler, verification and sampler (batch 8, rounds of up to 3 drafts); the counts of
 * (token 2, token 3) pairs and of token 4 are compared with the target chain's by a chi-square
 * test. The same test with a source that lies about q (claims uniform while it draws from its
 * own chain: exactly a wrong acceptance ratio) must fail the bound, which shows the test can
 * tell a broken rule from the right one. Deterministic: every seed is fixed.
 * The sampler's hearth_sampler_verify is also checked alone: with truncation (top-k) the
 * residual never leaves the target's support.
 */
#include "engine/kv_pool.h"
#include "engine/request.h"
#include "engine/sched.h"
#include "model/model_internal.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { V = 6, MAXTOK = 5, BATCH = 8 };

/* the target's logits after token a (row a), and the draft chain's */
static const float TARGET[V][V] = {
    {1.0f, 0.2f, -0.5f, 0.7f, 0.0f, -1.0f}, {0.1f, 0.9f, 0.4f, -0.3f, 0.6f, 0.0f},
    {-0.6f, 0.3f, 1.2f, 0.5f, 0.2f, 0.4f},  {0.4f, -0.2f, 0.0f, 0.8f, 1.1f, 0.3f},
    {0.9f, 0.5f, 0.1f, 0.2f, -0.4f, 0.7f},  {0.0f, 0.6f, 0.8f, -0.1f, 0.3f, 1.0f},
};
static const float DRAFT[V][V] = {
    {0.2f, 1.0f, 0.3f, 0.0f, 0.5f, 0.1f},  {0.8f, 0.0f, 0.2f, 0.6f, -0.2f, 0.4f},
    {0.3f, 0.3f, 0.3f, 0.3f, 0.3f, 0.3f},  {1.0f, 0.1f, 0.7f, 0.0f, 0.2f, -0.5f},
    {0.0f, 0.0f, 0.9f, 0.9f, 0.1f, 0.2f},  {0.5f, -0.3f, 0.0f, 0.6f, 0.4f, 0.2f},
};

static void softmax_row(const float *lg, float temp, double *p) {
    double mx = lg[0], sum = 0;
    for (int i = 1; i < V; i++) mx = lg[i] > mx ? lg[i] : mx;
    for (int i = 0; i < V; i++) sum += p[i] = exp(((double)lg[i] - mx) / temp);
    for (int i = 0; i < V; i++) p[i] /= sum;
}

static hearth_status chain_fwd(void *ctx, const hearth_batch *b, const hearth_kv_view *kv, float *logits) {
    (void)ctx;
    (void)kv;
    int32_t n_out = 0;
    for (int32_t t = 0; t < b->n_tokens; t++)
        if (b->want_logits[t]) memcpy(logits + (size_t)n_out++ * V, TARGET[b->token[t]], sizeof TARGET[0]);
    return HEARTH_OK;
}

/* The draft source: drafts drawn from the DRAFT chain at the request's temperature. mode 0:
 * honest q; 1: certain drafts (no q); 2: claims a uniform q (a broken acceptance ratio). */
typedef struct {
    hearth_drafter base;
    int            mode;
    uint64_t       rng;
    int64_t        drafted;
} chain_drafter;

static double unif(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (double)(*s >> 11) * 0x1.0p-53;
}

static void chain_propose(hearth_drafter *d, hearth_draft_job *jobs, int32_t n_jobs) {
    chain_drafter *c = (chain_drafter *)d;
    for (int32_t j = 0; j < n_jobs; j++) {
        hearth_draft_job *jb = &jobs[j];
        int32_t prev = jb->toks[jb->n_toks - 1];
        jb->n = jb->k < 3 ? jb->k : 3;
        jb->q_set = c->mode != 1 && jb->q;
        for (int32_t i = 0; i < jb->n; i++) {
            double q[V], u = unif(&c->rng), cum = 0;
            softmax_row(DRAFT[prev], jb->sp->temperature, q);
            int32_t t = V - 1;
            for (int32_t v = 0; v < V; v++)
                if (u < (cum += q[v])) {
                    t = v;
                    break;
                }
            jb->draft[i] = t;
            if (jb->q_set)
                for (int32_t v = 0; v < V; v++) jb->q[(size_t)i * V + v] = c->mode == 2 ? 1.0f / V : (float)q[v];
            prev = t;
        }
        c->drafted += jb->n;
    }
}

static void chain_release(hearth_drafter *d, int32_t slot) {
    (void)d;
    (void)slot;
}

/* Chi-square critical value at upper tail 1e-4 for df degrees of freedom (Wilson-Hilferty). */
static double chi2_crit(int df) {
    double z = 3.719, a = 2.0 / (9.0 * df);
    double r = 1 - a + z * sqrt(a);
    return df * r * r * r;
}

typedef struct {
    double pair, last; /* chi-square statistics */
    int    df_pair, df_last;
    int64_t drafted, accepted;
} result;

/* n requests of prompt [0], seeds 1..n, at temperature temp (top_k: 0 off), drafts by mode. */
static result run(int mode, int n, float temp, int32_t top_k) {
    result res = {0};
    hearth_model m = {0};
    m.hp.n_layer = 1;
    m.hp.n_head = m.hp.n_head_kv = 1;
    m.hp.head_dim = m.hp.head_dim_v = 2;
    m.hp.n_vocab = V;
    m.hp.n_ctx_train = 16;
    hearth_fwd *fwd = hearth_fwd_create_scripted(&m, 32, chain_fwd, NULL);
    hearth_kv_layout lay = hearth_kv_layout_of(&m, false);
    hearth_kv_pool_params pp = {.budget_bytes = hearth_kv_layout_block_bytes(&lay, &m, HEARTH_KV_SCHEME_F32, 4) * 64,
                                .block_size = 4, .n_seqs = BATCH, .max_seq_len = 16, .kv = HEARTH_KV_SCHEME_F32};
    hearth_kv_pool *pool = NULL;
    hearth_err err;
    CHECK_EQ(hearth_kv_pool_create(&m, &pp, &pool, &err), HEARTH_OK);
    chain_drafter cd = {.base = {.kind = "chain", .n_vocab = V, .propose = chain_propose, .release = chain_release},
                        .mode = mode, .rng = 0x9e3779b97f4a7c15ull};
    hearth_sched_params sp = {.batch = BATCH, .max_step = 32, .n_ctx = 16, .draft = &cd.base, .n_draft = 3,
                              .draft_fixed = true};
    hearth_sched *s = hearth_sched_create(&m, fwd, pool, NULL, &sp);
    CHECK(s != NULL && fwd != NULL && pool != NULL);
    if (!s) return res;
    static int64_t pair[V][V], last[V];
    memset(pair, 0, sizeof pair);
    memset(last, 0, sizeof last);
    const int32_t prompt[1] = {0};
    hearth_request *live[BATCH];
    int n_live = 0, added = 0, bad = 0;
    while (added < n || n_live > 0) {
        while (added < n && n_live < BATCH) {
            hearth_sampler_params smp = hearth_sampler_params_default();
            smp.temperature = temp;
            smp.top_k = top_k;
            smp.seed = (uint64_t)added + 1;
            hearth_request_params rp = {.prompt = prompt, .n_prompt = 1, .max_tokens = MAXTOK, .sampling = smp,
                                        .ignore_eog = true};
            hearth_request *r = hearth_req_create(&rp);
            hearth_sched_add(s, r); /* the scheduler takes one reference, live[] keeps the other */
            live[n_live++] = r;
            added++;
        }
        hearth_sched_step(s);
        for (int i = 0; i < n_live;) {
            hearth_request *r = live[i];
            pthread_mutex_lock(&r->mu);
            bool done = r->done;
            pthread_mutex_unlock(&r->mu);
            if (!done) {
                i++;
                continue;
            }
            int32_t t[MAXTOK], k = 0;
            hearth_event ev;
            while (hearth_request_next(r, &ev, 0) == HEARTH_OK && ev.kind == HEARTH_EV_TOKEN && k < MAXTOK)
                t[k++] = ev.token;
            bad += k != MAXTOK;
            if (k == MAXTOK) {
                pair[t[1]][t[2]]++;
                last[t[3]]++;
            }
            hearth_req_unref(r);
            live[i] = live[--n_live];
        }
    }
    CHECK_EQ(bad, 0);
    /* expected: the marginal of token 2 (after two steps of the chain from token 0), then the
     * pair with token 3, and token 4's marginal */
    double P[V][V], pi[V] = {1, 0, 0, 0, 0, 0}, nx[V];
    for (int a = 0; a < V; a++) {
        softmax_row(TARGET[a], temp, P[a]);
        if (top_k > 0) { /* keep the top_k largest, renormalized */
            double kept = 0;
            for (int v = 0; v < V; v++) {
                int above = 0;
                for (int w = 0; w < V; w++) above += TARGET[a][w] > TARGET[a][v] || (TARGET[a][w] == TARGET[a][v] && w < v);
                if (above >= top_k) P[a][v] = 0;
                kept += P[a][v];
            }
            for (int v = 0; v < V; v++) P[a][v] /= kept;
        }
    }
    for (int step = 0; step < 2; step++) { /* pi: token 2's marginal (tokens are 1-based here) */
        for (int b = 0; b < V; b++) {
            nx[b] = 0;
            for (int a = 0; a < V; a++) nx[b] += pi[a] * P[a][b];
        }
        memcpy(pi, nx, sizeof pi);
    }
    for (int a = 0; a < V; a++)
        for (int b = 0; b < V; b++) {
            double e = n * pi[a] * P[a][b];
            if (e <= 0) {
                bad += pair[a][b] != 0; /* outside the support: never */
                continue;
            }
            res.pair += (pair[a][b] - e) * (pair[a][b] - e) / e;
            res.df_pair++;
        }
    double p3[V] = {0}, p4[V] = {0};
    for (int b = 0; b < V; b++)
        for (int a = 0; a < V; a++) p3[b] += pi[a] * P[a][b];
    for (int c = 0; c < V; c++)
        for (int b = 0; b < V; b++) p4[c] += p3[b] * P[b][c];
    for (int c = 0; c < V; c++) {
        double e = n * p4[c];
        if (e <= 0) {
            bad += last[c] != 0;
            continue;
        }
        res.last += (last[c] - e) * (last[c] - e) / e;
        res.df_last++;
    }
    CHECK_EQ(bad, 0);
    res.df_pair--;
    res.df_last--;
    const hearth_engine_stats *st = hearth_sched_stats(s);
    res.drafted = st->spec_drafted;
    res.accepted = st->spec_accepted;
    fprintf(stderr, "  mode %d T %.2f top_k %d: chi2 pairs %.1f (df %d, bound %.1f), token 4 %.1f (df %d, bound %.1f); "
            "%lld drafted, %lld accepted\n", mode, (double)temp, top_k, res.pair, res.df_pair, chi2_crit(res.df_pair),
            res.last, res.df_last, chi2_crit(res.df_last), (long long)res.drafted, (long long)res.accepted);
    hearth_sched_destroy(s);
    hearth_kv_pool_destroy(pool);
    hearth_fwd_destroy(fwd);
    return res;
}

static int n_requests(void) { return getenv("HEARTH_TEST_SANITIZED") ? 6000 : 40000; }

TEST(drafts_with_their_distribution_keep_the_target_distribution) {
    result r = run(0, n_requests(), 1.0f, 0);
    CHECK(r.pair < chi2_crit(r.df_pair));
    CHECK(r.last < chi2_crit(r.df_last));
    CHECK(r.accepted > 0 && r.accepted < r.drafted); /* both branches of the rule ran */
    result t = run(0, n_requests(), 0.7f, 4);        /* temperature and truncation */
    CHECK(t.pair < chi2_crit(t.df_pair));
    CHECK(t.last < chi2_crit(t.df_last));
    CHECK(t.accepted > 0 && t.accepted < t.drafted);
}

TEST(certain_drafts_keep_the_target_distribution) {
    result r = run(1, n_requests(), 1.0f, 0);
    CHECK(r.pair < chi2_crit(r.df_pair));
    CHECK(r.last < chi2_crit(r.df_last));
    CHECK(r.accepted > 0 && r.accepted < r.drafted);
}

TEST(a_wrong_acceptance_ratio_fails_the_bound) {
    /* the source claims q uniform while drawing from its chain: p / q is wrong */
    result r = run(2, n_requests(), 1.0f, 0);
    CHECK(r.pair > chi2_crit(r.df_pair));
}

TEST(verify_with_truncation_stays_in_the_support) {
    /* top_k 2 leaves ids 0 and 3 after token 0; a draft outside, with a q that favours it, is
     * always replaced by a token of the support */
    hearth_sampler_params sp = hearth_sampler_params_default();
    sp.temperature = 1.0f;
    sp.top_k = 2;
    float q[V] = {0.02f, 0.02f, 0.9f, 0.02f, 0.02f, 0.02f};
    int64_t outside = 0, drafts_kept = 0;
    for (uint64_t seed = 1; seed <= 2000; seed++) {
        sp.seed = seed;
        hearth_err err;
        hearth_sampler *smp = hearth_sampler_create(&sp, V, &err);
        float lg[V];
        memcpy(lg, TARGET[0], sizeof lg);
        int32_t t = hearth_sampler_verify(smp, lg, NULL, 2, q);
        outside += t != 0 && t != 3;
        drafts_kept += t == 2;
        hearth_sampler_destroy(smp);
    }
    CHECK_EQ(outside, 0);
    CHECK_EQ(drafts_kept, 0);
}

TEST(verify_is_greedy_at_temperature_zero) {
    hearth_sampler_params sp = hearth_sampler_params_default();
    hearth_err err;
    hearth_sampler *smp = hearth_sampler_create(&sp, V, &err);
    float q[V] = {0, 0, 0, 0, 1, 0};
    for (int a = 0; a < V; a++) {
        float lg[V];
        memcpy(lg, TARGET[a], sizeof lg);
        int32_t best = 0;
        for (int v = 1; v < V; v++) best = TARGET[a][v] > TARGET[a][best] ? v : best;
        CHECK_EQ(hearth_sampler_verify(smp, lg, NULL, 4, q), best);
    }
    hearth_sampler_destroy(smp);
}

TEST(drafting_pays_only_where_a_step_has_a_fixed_cost) {
    /* all cost per token (a compute-bound CPU): never, however good the drafts */
    CHECK_EQ(hearth_spec_best_k(0.95, 0.0, 1.0, 0.0, 10), 0);
    /* all cost fixed (a bandwidth-bound GPU): as far as allowed when every draft lands */
    CHECK_EQ(hearth_spec_best_k(1.0, 10.0, 0.0, 0.0, 10), 10);
    int32_t good = hearth_spec_best_k(0.9, 10.0, 0.1, 0.0, 10);
    CHECK(good >= 5 && good <= 10);
    /* drafts that rarely land do not pay even there */
    CHECK(hearth_spec_best_k(0.05, 10.0, 0.1, 0.0, 10) <= 1);
    /* a costly draft source shortens the rounds */
    CHECK(hearth_spec_best_k(0.9, 10.0, 0.1, 3.0, 10) < good);
    /* no cost measured yet: no reason to hold back */
    CHECK_EQ(hearth_spec_best_k(0.5, 0.0, 0.0, 0.0, 7), 7);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
