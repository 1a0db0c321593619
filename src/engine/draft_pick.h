/*
 * draft_pick.h - how a model draft source turns a row of draft logits into a draft (the
 * two-model source, draft_model.c, and the Gemma 4 assistant, draft_assistant.c).
 *
 * Greedy: the argmax over the tokenizer's ids (ties: the lower id). Sampled (a request with
 * temperature > 0 that asks for distributions): a draw from q, the softmax of the logits / T
 * over the ids within a factor 1e-6 of the most likely one, then the request's top-k, top-p and
 * min-p in the sampler's order; q is written whole, zeros outside the support. Verification is
 * exact for any q (spec.h), so cutting the far tail only trades tokens of negligible mass for
 * speed; penalties, bias and XTC shape the target's p, never q. The draws use a splitmix64
 * stream the source seeds with the job's seed.
 *
 * Thread rule: pure functions over the caller's buffers.
 */
#pragma once
#include <stdint.h>

#include "engine/sampler.h"

typedef struct {
    int32_t id;
    float   p;
} hearth_draft_cand;

/* The first index of row[0..n)'s maximum. */
int32_t hearth_draft_argmax(const float *row, int32_t n);

/* Draw from row[0..n_cand) (the tokenizer's ids) under sp; q [n_vocab] gets the distribution
 * drawn from. cands: scratch [n_cand]. rng: the stream's state. */
int32_t hearth_draft_draw(const hearth_sampler_params *sp, const float *row, int32_t n_cand, int32_t n_vocab,
                          uint64_t *rng, hearth_draft_cand *cands, float *q);
