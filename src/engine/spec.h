/*
 * spec.h - speculative decoding's draft sources (ARCHITECTURE 4; docs/engine.md "Speculative
 * decoding").
 *
 * A decoding sequence may carry a run of draft tokens into a step: the scheduler feeds its last
 * known token and the drafts in one forward, takes the target model's logits at every one of
 * those positions, and verifies the drafts in order (sched.c): a draft is committed while the
 * target would have produced it (greedy: the same argmax; sampled: the rejection rule of
 * hearth_sampler_verify), the first one it would not is replaced by the target's own token, and
 * the KV written for the drafts after it is rolled back. So every sequence's output is exactly
 * what it would have been without speculation (greedy: token for token; sampled: in
 * distribution).
 *
 * A draft source proposes drafts for many sequences at once (a model drafter runs them as one
 * batch):
 *
 *   ngram  prompt lookup, model-free: the most recent earlier occurrence of the sequence's last
 *          n tokens (n from ngram_max down to ngram_min) in its own tokens, and the tokens that
 *          followed it. A draft is certain (no distribution).
 *   model      a second, smaller model with the target's vocabulary and its own KV (draft_model.c).
 *   assistant  the Gemma 4 assistant drafter (draft_assistant.c): a small head that reads the
 *              target's KV (never writes it) and its last hidden state.
 *
 * The source keeps whatever state it needs per sequence slot; the scheduler tells it when a
 * slot's sequence is gone (ended or preempted) with release, and (to a source that asks, by
 * setting produced) which row of a step's logits made each sequence's newest token. A source may
 * propose anything: a wrong draft costs time, never correctness.
 *
 * Thread rule: engine thread only.
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/kv_type.h"
#include "base/status.h"
#include "engine/kv_pool.h"
#include "engine/sampler.h"
#include "model/model.h"

/* One sequence's request for drafts. */
typedef struct {
    int32_t        slot;   /* the sequence's slot in the target's pool (0 .. batch) */
    const int32_t *toks;   /* its known tokens: prompt, then what it generated */
    int32_t        n_toks;
    int32_t        k;      /* drafts wanted, >= 1 */
    const hearth_sampler_params *sp; /* the request's sampling (a model source may draw under it) */
    uint64_t       seed;   /* a per-round seed for a source that draws */
    int32_t       *draft;  /* out [k] */
    float         *q;      /* out [k][n_vocab], or NULL when the source cannot give distributions:
                            * the distribution each draft was drawn from; the source sets *q_set */
    bool           q_set;  /* out: q holds the drafts' distributions (else each draft is certain) */
    int32_t        n;      /* out: drafts made, 0 .. k */
} hearth_draft_job;

typedef struct hearth_drafter hearth_drafter;
struct hearth_drafter {
    const char *kind;      /* "ngram", "two-model", "assistant" */
    int32_t     n_vocab;   /* the vocabulary of the drafts (the target's) */
    /* Fill jobs[0..n_jobs) (each a distinct slot). */
    void (*propose)(hearth_drafter *d, hearth_draft_job *jobs, int32_t n_jobs);
    /* The slot's sequence ended or was preempted: forget it. */
    void (*release)(hearth_drafter *d, int32_t slot);
    /* NULL, or: the target's last step made the slot's token n_toks - 1 (its sequence now has
     * n_toks tokens) from that step's logits row `row` (rows in the step's order). Called after
     * the token is taken, for every sequence that goes on. */
    void (*produced)(hearth_drafter *d, int32_t slot, int32_t row, int32_t n_toks);
    void (*destroy)(hearth_drafter *d);
};

static inline void hearth_drafter_destroy(hearth_drafter *d) {
    if (d) d->destroy(d);
}

/* Prompt lookup: drafts (at most k) for tokens[0..n) into out; returns how many. The longest
 * n-gram first (ngram_max down to ngram_min); for each, the most recent earlier occurrence of
 * the last n tokens that has a continuation; the continuation, up to k tokens, is the draft. */
int32_t hearth_ngram_draft(const int32_t *tokens, int32_t n, int32_t ngram_min, int32_t ngram_max, int32_t k,
                           int32_t *out);

/* Whether drafting pays, and how far: the draft length k in [1, kmax] that maximizes the expected
 * tokens a round commits per unit of step time, or 0 when no k beats decoding one token by 5%.
 * alpha: the chance that a draft is accepted (each in turn; a round commits (1 - alpha^(k+1)) /
 * (1 - alpha) tokens on average); share: the fixed cost of a step that falls to one sequence (the
 * step's cost at zero tokens over its sequences); per_tok: what one more token adds to a step.
 * A step whose cost is all per token (a compute-bound CPU) never pays; one whose cost is all
 * fixed (a bandwidth-bound GPU) pays at any alpha > 0. per_draft: what making one draft costs
 * (a draft model's forward share; about 0 for prompt lookup). Pure function. */
int32_t hearth_spec_best_k(double alpha, double share, double per_tok, double per_draft, int32_t kmax);

/* The ngram source (n_vocab: the target's). NULL on OOM. */
hearth_drafter *hearth_drafter_ngram(int32_t n_vocab, int32_t ngram_min, int32_t ngram_max);

/* Two-model drafts (draft_model.c). The draft model must have the target's tokenizer: the same
 * number of tokens, the same text for every id, the same control tokens, the same BOS and EOS
 * and the same end-of-generation set. The number of rows of the models' embeddings and output
 * heads may differ (a padded embedding): drafts are only ever tokenizer ids. A refusal
 * (HEARTH_E_INVALID) names the first difference. */
hearth_status hearth_draft_vocab_check(const hearth_model *target, const hearth_model *draft, hearth_err *err);

typedef struct {
    int32_t          batch;      /* the target's sequence slots: one draft slot each */
    int32_t          n_ctx;      /* positions per sequence */
    int32_t          max_step;   /* tokens per draft forward, at most */
    int32_t          block_size; /* tokens per KV block; <= 0: 16 */
    hearth_kv_scheme kv;         /* the draft cache's element types ({0}: f32) */
    int64_t          max_pool_bytes; /* cap on the draft pool; <= 0: none (batch full contexts) */
} hearth_draft_model_params;

/* K+V bytes of the draft pool the drafter makes: batch full contexts of the draft model (every
 * layer keeps every block, sliding-window layers too), at most max_pool_bytes. */
int64_t hearth_draft_model_pool_bytes(const hearth_model *draft, const hearth_draft_model_params *p);

/* The two-model source ("two-model"): a forward of draft on be (the target's backend,
 * borrowed, as are both models; the CPU backend must have been made wide enough for the draft
 * model's rows too) and its own KV pool, one slot per target slot. HEARTH_E_UNSUPPORTED when be
 * cannot run the draft model, HEARTH_E_LIMIT when the pool's cap holds no block. */
hearth_status hearth_drafter_model(const hearth_model *target, const hearth_model *draft, hearth_backend *be,
                                   const hearth_draft_model_params *p, hearth_drafter **out, hearth_err *err);

/* The Gemma 4 assistant (draft_assistant.c): does asst (a model with n_embd_backbone > 0) draft
 * for target? It must: be an assistant, for a Gemma 4 target whose hidden size is its backbone
 * size and whose output has as many rows as its own; for each kind of its layers (sliding,
 * full) the target must have a layer of that kind that stores its own KV (the last one is read)
 * with the assistant's head size and kv heads of that kind, and the same RoPE base. A refusal
 * (HEARTH_E_INVALID) names the first difference. */
hearth_status hearth_draft_assistant_check(const hearth_model *target, const hearth_model *asst, hearth_err *err);

/* Positions up to and including a query's that a window group of the target's pool must keep
 * for asst: its sliding layers read window + 1 positions before the drafted token's, one more
 * than the target's own window reads (0 when it has no sliding layer). kv_pool.h's window_keep. */
int32_t hearth_draft_assistant_window(const hearth_model *asst);

/* The assistant source ("assistant"): a forward of asst on be (the target's backend, borrowed,
 * as are the models, the target's pool and its forward target_fwd) for up to batch sequences at
 * a time. It asks target_fwd for its hidden states (hearth_fwd_set_hidden_out) until it is
 * destroyed (so destroy it before target_fwd), and reads the pool's KV of the target's sequence
 * slots. HEARTH_E_UNSUPPORTED when be is not a host-memory backend (the CPU). */
hearth_status hearth_drafter_assistant(const hearth_model *target, const hearth_model *asst, hearth_backend *be,
                                       hearth_fwd *target_fwd, const hearth_kv_pool *pool, int32_t batch,
                                       int32_t max_step, hearth_drafter **out, hearth_err *err);
