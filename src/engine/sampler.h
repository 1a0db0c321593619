/*
 * sampler.h - turns one position's logits into a token, per request.
 *
 * The chain, in order (temperature first, as transformers, vLLM and the OpenAI API define it):
 *   logit bias -> repetition penalty (llama.cpp's: positive logits divided, negative multiplied,
 *   over the last repeat_last_n tokens) -> presence/frequency penalties (OpenAI's:
 *   logit -= frequency * count + presence * (count > 0), over every token generated so far)
 *   -> temperature 0: argmax (lowest id on ties); else logits / T -> top-k -> top-p -> min-p
 *   (relative to the top probability) -> draw with the request's RNG.
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
    uint64_t seed;
    const hearth_logit_bias *bias; /* [n_bias] borrowed for create only (copied) */
    int32_t  n_bias;
} hearth_sampler_params;

typedef struct hearth_sampler hearth_sampler;

/* Greedy, no penalties, seed 0. */
hearth_sampler_params hearth_sampler_params_default(void);

/* NULL on OOM or invalid params (bias tokens out of range, negative penalties). */
hearth_sampler *hearth_sampler_create(const hearth_sampler_params *p, int32_t n_vocab, hearth_err *err);
void            hearth_sampler_destroy(hearth_sampler *s); /* accepts NULL */
/* Record a generated token for the penalties. */
void            hearth_sampler_accept(hearth_sampler *s, int32_t token);
/* Choose a token from logits[n_vocab] (modified in place). */
int32_t         hearth_sampler_sample(hearth_sampler *s, float *logits);
