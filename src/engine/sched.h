/*
 * sched.h - the engine's scheduler: continuous batching over the paged KV pool (ARCHITECTURE
 * 4; vLLM v1's scheduler vocabulary).
 *
 * Requests wait in FIFO order and run as sequences: up to `batch` at once, each with a slot
 * (block-table row) in the pool. Every step packs, oldest sequence first, the next tokens of
 * each running sequence under a budget of max_step tokens: one token for a decoding sequence,
 * a chunk for one still in prefill; then admits waiting requests while the budget, the batch
 * and the free blocks allow. One forward runs the whole step; the sequences whose chunk
 * reached their last known token sample their next one.
 *
 * When a sequence needs a block and none is free (nor evictable from the prefix cache), the
 * youngest running sequence is preempted by recompute: its blocks are released and it goes
 * back to the front of the queue with its prompt and generated tokens, to be prefilled again.
 * Its sampler state is kept, so at temperature 0 (and with a seed) it produces the same
 * tokens. A cancelled request ends at the next step and its blocks are freed at once.
 *
 * Speculative decoding (spec.h): before packing, every decoding sequence that may speculate
 * asks the draft source for drafts (one call for all of them); its step then carries its last
 * known token and the drafts, each asking for logits. After the forward the drafts are verified
 * in order (hearth_sampler_verify, or the device's argmax for a greedy sequence): each accepted
 * one is committed as the sequence's next token, the first rejected one is replaced by the
 * target's token, and the blocks reserved for positions past the last committed one are handed
 * back (the rows written there are garbage that the next step overwrites before any query reads
 * it; the prefix cache only indexes blocks below n_done, which counts committed tokens only).
 * Drafts never preempt a sequence: when their blocks cannot be found (evicting cached ones),
 * the sequence decodes one token as usual.
 *
 * Hybrid models: a prefix hit (and a preempted sequence's resume) restores the recurrent state
 * from a snapshot taken at a block boundary (sched.c's head comment).
 *
 * Thread rule: engine thread only (no locks).
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "engine/engine.h"
#include "engine/kv_pool.h"
#include "engine/prefix_cache.h"
#include "engine/spec.h"
#include "models/forward.h"

typedef struct hearth_sched hearth_sched;

typedef struct {
    int32_t batch;    /* sequences at once (= the pool's slots) */
    int32_t max_step; /* tokens per step (<= the forward's max) */
    int32_t n_ctx;    /* positions per sequence */
    /* speculative decoding (spec.h): a decoding sequence carries up to n_draft drafts from draft
     * into a step (adaptive unless draft_fixed); NULL: off */
    hearth_drafter *draft;  /* borrowed */
    int32_t n_draft;
    bool    draft_fixed;
    bool    draft_costed;   /* adaptive rounds also follow the step cost model (hearth_spec_best_k
                             * over the measured cost of a step's tokens): drafting stops where it
                             * does not pay. Off: the acceptance rule alone (deterministic) */
    /* sampling on the backend (sampler.h, hearth_forward_topm): 0 on a device backend, 1 on any
     * backend with the op (tests: the CPU's is the reference), -1 never */
    int8_t  topm;
} hearth_sched_params;

/* m, fwd, pool and pc (NULL: no prefix caching) are borrowed. NULL on OOM. */
hearth_sched *hearth_sched_create(const hearth_model *m, hearth_fwd *fwd, hearth_kv_pool *pool,
                                  hearth_prefix_cache *pc, const hearth_sched_params *p);
/* Ends every request still held with DONE/cancelled. Accepts NULL. */
void          hearth_sched_destroy(hearth_sched *s);
/* Queue a request; the scheduler takes over the engine's reference. */
void          hearth_sched_add(hearth_sched *s, hearth_request *r);
bool          hearth_sched_idle(const hearth_sched *s);
/* One step: reap cancellations, pack, forward, sample, emit. */
void          hearth_sched_step(hearth_sched *s);
/* Cancel everything (engine shutdown); the next step ends them. */
void          hearth_sched_cancel_all(hearth_sched *s);
/* The counters, with the gauges (running, waiting, pool and cache) refreshed. */
const hearth_engine_stats *hearth_sched_stats(hearth_sched *s);
/* Invariants: the pool's free list is sound, every block's reference count equals the
 * block-table rows plus the prefix cache holding it, and every state snapshot is free or kept by
 * one cached block. */
bool          hearth_sched_check(const hearth_sched *s);
