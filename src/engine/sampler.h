/*
 * sampler.h - turns one position's logits into a token, per request.
 *
 * The chain, in order (temperature first, as transformers, vLLM and the OpenAI API define it):
 *   logit bias -> repetition penalty (llama.cpp's: positive logits divided, negative multiplied,
 *   over the last repeat_last_n tokens) -> presence/frequency penalties (OpenAI's:
 *   logit -= frequency * count + presence * (count > 0), over every token generated so far)
 *   -> temperature 0: argmax (lowest id on ties); else logits / T -> top-k -> top-p -> min-p
 *   (relative to the top probability) -> XTC -> draw with the request's RNG.
 * XTC ("exclude top choices", llama.cpp's): with probability xtc_probability (one RNG draw per
 * token), when at least two candidates have a probability (renormalized over the candidates
 * left) of at least xtc_threshold, all of those but the least probable are removed: the draw
 * then avoids the obvious choices. A threshold above 0.5 can never find two, so it changes
 * nothing (and draws nothing). Greedy decoding (temperature 0) does not use it.
 * The RNG is seeded per request (splitmix64 -> xoshiro256**), so the same seed and request give
 * the same tokens. Penalties count generated tokens only (pass prompt tokens to accept() too
 * if a caller wants them counted).
 *
 * Thread rule: a sampler belongs to one request, used by one thread at a time.
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "constrain/matcher.h"
#include "kernels/ref/topm_ref.h"

typedef struct {
    int32_t token;
    float   bias; /* added to the logit; -INFINITY bans the token */
} hearth_logit_bias;

typedef struct {
    float    temperature;       /* <= 0: greedy */
    int32_t  top_k;             /* <= 0: off */
    float    top_p;             /* >= 1: off */
    float    min_p;             /* <= 0: off */
    float    repeat_penalty;    /* 1: off */
    int32_t  repeat_last_n;     /* window of the repetition penalty, tokens */
    float    presence_penalty;  /* 0: off */
    float    frequency_penalty; /* 0: off */
    float    xtc_probability;   /* 0: off; 0..1 */
    float    xtc_threshold;     /* default 0.1 */
    uint64_t seed;
    const hearth_logit_bias *bias; /* [n_bias] borrowed for create only (copied) */
    int32_t  n_bias;
} hearth_sampler_params;

typedef struct hearth_sampler hearth_sampler;

#define HEARTH_TOP_LOGPROBS_MAX 20

/* Log-probabilities of one sampled position (OpenAI's logprobs): natural logs of the
 * distribution after logit bias and penalties, before temperature and truncation (what the
 * model, as the request shaped it, says), as mlx-lm and vLLM report them. */
typedef struct {
    float   logprob;                             /* the chosen token's */
    int32_t n_top;                               /* alternatives below, most likely first */
    int32_t top_id[HEARTH_TOP_LOGPROBS_MAX];     /* ties: the lower id first */
    float   top_logprob[HEARTH_TOP_LOGPROBS_MAX];
} hearth_token_logprobs;

/* Greedy, no penalties, seed 0. */
hearth_sampler_params hearth_sampler_params_default(void);

/* NULL on OOM or invalid params (bias tokens out of range, negative penalties). */
hearth_sampler *hearth_sampler_create(const hearth_sampler_params *p, int32_t n_vocab, hearth_err *err);
void            hearth_sampler_destroy(hearth_sampler *s); /* accepts NULL */
/* Record a generated token for the penalties. */
void            hearth_sampler_accept(hearth_sampler *s, int32_t token);
/* True when the choice is the plain argmax of the logits (temperature 0, no bias, no penalty):
 * a device backend may then pick it where the logits are. */
bool            hearth_sampler_is_argmax(const hearth_sampler *s);
/* Choose a token from logits[n_vocab] (modified in place: afterwards they hold the logits with
 * bias and penalties applied, the input of hearth_sampler_logprobs). */
int32_t         hearth_sampler_sample(hearth_sampler *s, float *logits);
/* hearth_sampler_sample under a constraint: the token drawn (or the argmax) when the matcher
 * allows it, which costs one check. Otherwise greedy takes the best allowed token (looked for
 * among the 64 best first), and a draw is repeated without the rejected tokens (up to 64
 * times), which samples the distribution renormalized over the allowed tokens of the draw's
 * support; past that the logits of disallowed tokens become -INFINITY and the chain runs
 * again. The matcher is not advanced. -1 when no token is allowed. */
int32_t         hearth_sampler_sample_constrained(hearth_sampler *s, float *logits, hearth_cx_matcher *m);
/* Speculative decoding (spec.h): the token a position takes when a draft d was proposed for
 * it; d is accepted when the result equals it. logits are the target's at the position
 * (modified in place as by hearth_sampler_sample); q is the distribution d was drawn from
 * ([n_vocab]) or NULL when d is certain (a point mass). The rule is the standard one, so the
 * output is distributed exactly as the target's: accept with min(1, p(d) / q(d)), else draw from
 * max(0, p - q) renormalized, where p is the target's distribution after the whole chain
 * (penalties, temperature, truncation, XTC). For a point mass that is a plain draw from p (d
 * comes out with probability p(d); anything else is p without d), which is what q NULL does,
 * also under a constraint m (NULL: none; q is then ignored). Greedy: the argmax, as
 * hearth_sampler_sample. The matcher is not advanced. -1 when the constraint allows no token. */
int32_t         hearth_sampler_verify(hearth_sampler *s, float *logits, hearth_cx_matcher *m, int32_t d,
                                      const float *q);
/* The log-softmax of logits[n_vocab] at chosen, and the k (<= HEARTH_TOP_LOGPROBS_MAX) most
 * likely tokens. Pure function; any thread. */
void            hearth_sampler_logprobs(const float *logits, int32_t n_vocab, int32_t chosen, int32_t k,
                                        hearth_token_logprobs *out);

/* Sampling on a device (kernels/ref/topm_ref.h): the device summarizes a logits row (its best
 * HEARTH_TOPM entries, the normalizers, and for a plain temperature draw the draw itself over the
 * whole row), and the sampler finishes on the summary with the same chain and the same RNG
 * draws as hearth_sampler_sample on the row. What a sampler can finish on:
 *   OFF   the row is needed: XTC on an unsorted draw, a token twice in the logit bias;
 *   CANDS greedy, or top-k / top-p (the candidates are sorted, and their head is in the summary;
 *         rarely it is not, e.g. top-p mass beyond HEARTH_TOPM entries: the row is then needed);
 *   DRAW  a temperature draw without top-k / top-p (min-p allowed): the device draws with the
 *         uniform this sampler draws in hearth_sampler_topm_req. */
typedef enum { HEARTH_TOPM_OFF, HEARTH_TOPM_CANDS, HEARTH_TOPM_DRAW } hearth_topm_mode;
hearth_topm_mode hearth_sampler_topm_mode(const hearth_sampler *s);
/* What to ask the device for this sampler's next row (a DRAW sampler draws its uniform here). */
void             hearth_sampler_topm_req(hearth_sampler *s, hearth_topm_req *rq);
/* The token, from the summary the request asked for; -2 when the summary does not hold what the
 * chain needs (only for CANDS, and before any RNG draw): sample the row with
 * hearth_sampler_sample instead. */
int32_t          hearth_sampler_sample_topm(hearth_sampler *s, const hearth_topm *t);
/* The logit bias and penalties as edits of the row before its summary (hearth_topm_edit, one
 * per token touched): e gets at most hearth_sampler_topm_edits_max(s); returns the count. */
int32_t          hearth_sampler_topm_edits_max(const hearth_sampler *s);
int32_t          hearth_sampler_topm_edits(const hearth_sampler *s, hearth_topm_edit *e);
/* hearth_sampler_sample on a row whose bias and penalties are already applied (a row copied
 * after its summary fell short). */
int32_t          hearth_sampler_sample_edited(hearth_sampler *s, const float *logits);
/* hearth_sampler_logprobs from a summary (chosen: a token hearth_sampler_sample_topm gave). */
void             hearth_sampler_logprobs_topm(const hearth_topm *t, int32_t chosen, int32_t k,
                                              hearth_token_logprobs *out);
