/* sampling_mix.c - the request mix of sampling_mix.h. */
#include "support/sampling_mix.h"

#include <math.h>
#include <stdio.h>
#include <time.h>

static const int32_t PROMPT[] = {1, 504, 3527, 28, 253, 1345, 2284, 30, 378, 5536};

static const hearth_logit_bias BIAS[] = {{300, 4.0f}, {301, -INFINITY}, {2000, 2.0f}};

static void settings(int i, hearth_sampler_params *sp) {
    sp->seed = 1000 + (uint64_t)i;
    switch (i) {
    case 0: break; /* greedy */
    case 1: sp->temperature = 0.8f; sp->top_k = 40; break;
    case 2: sp->temperature = 1.0f; sp->top_p = 0.9f; break;
    case 3: sp->temperature = 1.0f; sp->presence_penalty = 0.6f; sp->frequency_penalty = 0.4f; break;
    case 4: sp->temperature = 0.9f; sp->min_p = 0.05f; break;
    case 5:
        sp->temperature = 0.7f; sp->top_k = 40; sp->top_p = 0.95f; sp->min_p = 0.05f; sp->repeat_penalty = 1.3f;
        break;
    case 6: sp->temperature = 1.5f; sp->top_k = 20; sp->bias = BIAS; sp->n_bias = 3; break;
    default: sp->temperature = 1.1f; sp->top_p = 0.5f; sp->frequency_penalty = 0.5f; break;
    }
}

bool hearth_sampling_mix_run(const hearth_model *m, hearth_device device, int8_t topm, hearth_sampling_mix *out) {
    hearth_engine_params ep = hearth_engine_params_default();
    ep.device = device;
    ep.n_ctx = 128;
    ep.batch = HEARTH_MIX_REQ;
    ep.topm = topm;
    hearth_engine *e = NULL;
    hearth_err err = {0};
    if (hearth_engine_create(m, &ep, &e, &err)) {
        fprintf(stderr, "  engine: %s\n", err.msg);
        return false;
    }
    bool ok = true;
    hearth_request *r[HEARTH_MIX_REQ] = {0};
    hearth_request_params rp[HEARTH_MIX_REQ];
    for (int i = 0; i < HEARTH_MIX_REQ; i++) {
        rp[i] = (hearth_request_params){.prompt = PROMPT, .n_prompt = 10, .max_tokens = HEARTH_MIX_TOK,
                                        .sampling = hearth_sampler_params_default(), .ignore_eog = true,
                                        .logprobs = i % 2 == 0, .top_logprobs = 3};
        settings(i, &rp[i].sampling);
    }
    if (hearth_engine_submit_n(e, rp, HEARTH_MIX_REQ, r, &err)) {
        fprintf(stderr, "  submit: %s\n", err.msg);
        ok = false;
    }
    for (int i = 0; i < HEARTH_MIX_REQ && r[i]; i++) {
        for (int n = 0;; n++) {
            hearth_event ev;
            if (hearth_request_next(r[i], &ev, 60000)) {
                fprintf(stderr, "  request %d: no event in 60 s\n", i);
                ok = false;
                break;
            }
            if (ev.kind == HEARTH_EV_DONE) {
                if (n != HEARTH_MIX_TOK) {
                    fprintf(stderr, "  request %d: %d tokens (%s)\n", i, n, ev.msg);
                    ok = false;
                }
                break;
            }
            if (n >= HEARTH_MIX_TOK) continue;
            out->tok[i][n] = ev.token;
            if (ev.has_logprobs != (i % 2 == 0)) ok = false;
            if (ev.has_logprobs) out->lp[i][n] = ev.lp;
        }
        hearth_request_release(r[i]);
    }
    hearth_engine_stats st;
    for (int k = 0; k < 5000; k++) { /* counters are published after each step: wait for idle */
        hearth_engine_stats_get(e, &st);
        if (st.running == 0 && st.waiting == 0) break;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    out->topm_rows = st.topm_rows;
    out->topm_short = st.topm_short;
    hearth_engine_destroy(e);
    return ok;
}

int hearth_sampling_mix_diff(const hearth_sampling_mix *a, const hearth_sampling_mix *b, double tol) {
    int bad = 0;
    for (int i = 0; i < HEARTH_MIX_REQ; i++)
        for (int n = 0; n < HEARTH_MIX_TOK; n++) {
            if (a->tok[i][n] != b->tok[i][n]) {
                fprintf(stderr, "  request %d token %d: %d vs %d\n", i, n, a->tok[i][n], b->tok[i][n]);
                bad++;
                break; /* the rest of the sequence follows another context */
            }
            if (i % 2) continue;
            const hearth_token_logprobs *x = &a->lp[i][n], *y = &b->lp[i][n];
            bool off = fabs(x->logprob - y->logprob) > tol || x->n_top != y->n_top;
            for (int j = 0; j < x->n_top && !off; j++)
                off = x->top_id[j] != y->top_id[j] || fabs(x->top_logprob[j] - y->top_logprob[j]) > tol;
            if (off) {
                fprintf(stderr, "  request %d token %d: logprobs differ (%g vs %g)\n", i, n, x->logprob, y->logprob);
                bad++;
            }
        }
    return bad;
}

int hearth_sampling_mix_check(const hearth_model *m, hearth_device device, int8_t topm, double tol) {
    static hearth_sampling_mix rows, sums;
    if (!hearth_sampling_mix_run(m, device, -1, &rows) || !hearth_sampling_mix_run(m, device, topm, &sums)) return 1;
    fprintf(stderr, "  tokens from summaries %lld, summaries fallen short %lld\n", (long long)sums.topm_rows,
            (long long)sums.topm_short);
    int bad = 0;
    if (rows.topm_rows + rows.topm_short != 0 ||
        sums.topm_rows + sums.topm_short != HEARTH_MIX_REQ * (HEARTH_MIX_TOK - 1) ||
        sums.topm_rows < 6 * (HEARTH_MIX_TOK - 1)) {
        fprintf(stderr, "  unexpected counters: rows run %lld + %lld, summaries run %lld + %lld\n",
                (long long)rows.topm_rows, (long long)rows.topm_short, (long long)sums.topm_rows,
                (long long)sums.topm_short);
        bad++;
    }
    return bad + hearth_sampling_mix_diff(&rows, &sums, tol);
}
