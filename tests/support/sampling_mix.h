/* sampling_mix.h - one batch of concurrent requests with every kind of sampling setting, for
 * tests that compare two ways of sampling (on the rows, on the backend's row summaries): greedy
 * with logprobs, top-k, top-p, min-p, plain temperature draws, logit bias, the repetition,
 * presence and frequency penalties, seeded, logprobs on every other request. They are the n choices of one prompt (hearth_engine_submit_n), so every run packs the
 * same steps (a GPU's sums depend on a step's rows): one prefill, whose logits every choice
 * draws its first token from on the host, then steps of one token of each. */
#pragma once
#include "backend/backend.h"
#include "engine/engine.h"

enum { HEARTH_MIX_REQ = 8, HEARTH_MIX_TOK = 12 };

typedef struct {
    int32_t               tok[HEARTH_MIX_REQ][HEARTH_MIX_TOK];
    hearth_token_logprobs lp[HEARTH_MIX_REQ][HEARTH_MIX_TOK]; /* even requests only */
    int64_t               topm_rows, topm_short;               /* the engine's counters after */
} hearth_sampling_mix;

/* The mix on a fresh engine of m (batch 8) on device with params.topm = topm; false (with a
 * message on stderr) when the engine or a request failed. */
bool hearth_sampling_mix_run(const hearth_model *m, hearth_device device, int8_t topm, hearth_sampling_mix *out);
/* How many tokens differ, or logprobs by more than tol (each difference printed on stderr). */
int  hearth_sampling_mix_diff(const hearth_sampling_mix *a, const hearth_sampling_mix *b, double tol);
/* The mix with rows sampled on the host (topm -1) against sampling on the backend (topm), on
 * device: the number of failures (printed on stderr): a run that failed, a row-path run that
 * used summaries, a backend run where a token did not come through the summary path (every one
 * but the choices' first, drawn from the prefill's row) or fewer than 6 of the 8 requests took
 * the summaries (the tiny models' flat rows leave top-p short), differing tokens or logprobs. */
int  hearth_sampling_mix_check(const hearth_model *m, hearth_device device, int8_t topm, double tol);
