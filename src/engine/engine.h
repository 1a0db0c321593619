/*
 * engine.h - the engine seam: one engine thread owns the model's forward context and KV cache;
 * other threads submit requests, cancel them, and read each request's stream of token events
 * (ARCHITECTURE 3-4, Redis bio.c's hand-off).
 *
 *   hearth_engine_submit(e, &params, &req)      any thread; the prompt is copied
 *   hearth_request_next(req, &ev, timeout_ms)   the submitter's thread: TOKEN... then DONE
 *   hearth_engine_cancel(e, req)                any thread; the request ends with DONE/cancelled
 *   hearth_request_release(req)                 the submitter drops its reference
 *   hearth_engine_submit_n(e, p, n, reqs)       n choices of one prompt (OpenAI's n), each its
 *                                               own request; hearth_request_next_any reads them
 *
 * The engine thread runs requests by continuous batching over a paged KV block pool with
 * automatic prefix caching (sched.h, kv_pool.h, prefix_cache.h): up to `batch` sequences per
 * step, FIFO queueing when the pool is full, preemption by recompute. A request whose
 * prompt + max_tokens exceeds the context ends at once with DONE/error HEARTH_E_LIMIT.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/kv_type.h"
#include "backend/numerics.h"
#include "base/status.h"
#include "engine/kv_quant.h"
#include "engine/sampler.h"
#include "model/model.h"

typedef struct hearth_engine hearth_engine;
typedef struct hearth_request hearth_request;

/* Speculative decoding (engine/spec.h, docs/engine.md): where drafts come from. */
typedef enum {
    HEARTH_DRAFT_NONE = 0,
    HEARTH_DRAFT_NGRAM,     /* prompt lookup in the sequence's own tokens */
    HEARTH_DRAFT_MODEL,     /* a second model with the same vocabulary ("two-model") */
    HEARTH_DRAFT_ASSISTANT, /* the Gemma 4 assistant drafter, reading the target's KV ("assistant") */
} hearth_draft_kind;

typedef struct {
    hearth_draft_kind   kind;
    int32_t             n_draft;    /* drafts per verify round, at most; <= 0: 3 (ngram: 10) */
    int32_t             ngram_min;  /* ngram: the shortest match; <= 0: 1 */
    int32_t             ngram_max;  /* ngram: the longest match; <= 0: 3 */
    bool                fixed;      /* always ask for n_draft (else adaptive: a sequence's round
                                     * asks for one more than it last accepted, doubling while
                                     * every draft is accepted, up to n_draft) */
    const hearth_model *draft_model; /* MODEL: borrowed, must outlive the engine; it must have the
                                     * target's tokenizer (hearth_draft_vocab_check). It runs on
                                     * the engine's backend with a KV pool of its own: batch full
                                     * contexts, at most the target pool's bytes, in the target's
                                     * cache scheme (f16 when that is a quantized one); its weights,
                                     * pool and activations count in memory_budget.
                                     * ASSISTANT: the Gemma 4 assistant (a gemma4_assistant
                                     * checkpoint, hearth_draft_assistant_check), borrowed as
                                     * above; it reads the target's pool (whose sliding-window
                                     * groups then keep window + 2 positions) and runs on the
                                     * CPU only: a GPU is not used (--device cuda is refused) */
} hearth_spec_params;

typedef struct {
    int     n_threads;     /* compute threads; <= 0: all CPUs */
    int32_t n_ctx;         /* tokens per sequence; <= 0: min(training context, 4096) */
    int32_t max_step;      /* prefill chunk, tokens per step; <= 0: 512 */
    int     kv_f16;        /* with kv_quant off: 1 f16, 0 f32, -1 auto (from the numerics: f32
                            * for ref, f16 otherwise) */
    hearth_kv_quant kv_quant; /* the cache's scheme (kv_quant.h); {0}: off. Tier l2 means 8 */
    const char *model_path; /* the model's file or folder: kv_quant config reads the kv_config.json
                             * that belongs to it (engine/kv_config.h); NULL: none. Read at create */
    int32_t batch;         /* sequences per step; <= 0: 8; 1 = strictly serial */
    int64_t kv_budget;     /* bytes of the KV block pool; <= 0: from memory_budget (below) */
    int64_t memory_budget; /* bytes for weights + KV + transients (the CLI passes 0.75 x RAM);
                            * with kv_budget <= 0 the pool gets what is left after the weights
                            * and transients, at most what the batch and the prompt cache can
                            * use; <= 0 and kv_budget <= 0: one full context (as `hearth fit`
                            * plans) */
    int32_t block_size;    /* tokens per KV block; <= 0: 16 */
    int64_t prompt_cache;  /* bytes of unreferenced cached blocks kept; < 0: as many as the pool
                            * holds (default); 0: no prefix caching */
    int32_t state_snaps;   /* hybrid models with prefix caching: the linear-attention state
                            * snapshots kept for prefix hits (kv_pool.h; docs/engine.md); < 0:
                            * chosen from the batch, context and budget (default); 0: none (no
                            * prefix hits). Taken out of an explicit budget */
    bool    debug_checks;  /* check the pool's invariants after every step (tests) */
    bool    kv_swa_full;   /* sliding-window layers keep every KV block (the default hands back
                            * the blocks that fall out of their window: docs/engine.md) */
    int     device;        /* hearth_device (backend/backend.h): CPU (the default), CUDA, or AUTO
                            * (the GPU when one is usable, else the CPU) */
    hearth_numerics numerics; /* the arithmetic and its A/B switches (backend/numerics.h); {0}:
                               * the default (l1, or ref on the reference kernel set). Tier l2
                               * is l1 with the 8-bit cache (kv_quant off or 8) */
    bool    force_wire;    /* lock the weights in RAM (mlock) at create; failing to (RLIMIT_MEMLOCK)
                            * fails the create, saying why */
    /* The prompt cache's disk tier (ssd_tier.h, docs/engine.md "SSD tier"): blocks evicted from
     * the RAM prefix cache go to files under ssd_cache_dir and come back on a RAM miss, across
     * restarts. Needs prefix caching (prompt_cache != 0). The strings are copied at create. */
    const char *ssd_cache_dir;   /* NULL or "": off */
    int64_t ssd_cache_max;       /* bytes of block files kept; <= 0: 32 GB */
    int32_t ssd_demote_idle;     /* seconds: cached blocks unused this long are written to the
                                  * tier and their pool blocks freed; < 0: 300; 0: never */
    bool    ssd_cache_verify;    /* check every restored block's payload checksum */
    const char *ssd_model_id;    /* the model's identity (hearth_ssd_model_id); NULL: computed
                                  * from ssd_model_path at create (the create fails without either) */
    const char *ssd_model_path;
    hearth_spec_params spec;     /* speculative decoding; {0}: off */
    int8_t      topm;            /* sampling on the backend (sampler.h): 0 on a device backend, 1 on
                                  * any backend with it (tests), -1 never; HEARTH_TOPM=0 in the
                                  * environment: never */
} hearth_engine_params;

hearth_engine_params hearth_engine_params_default(void);

/* Start the engine thread on model m (borrowed; must outlive the engine). Fails with
 * HEARTH_E_LIMIT, saying why, when the memory budget cannot hold the weights, the transients
 * and the KV cache of one full context (a model that cannot serve even one request). */
hearth_status hearth_engine_create(const hearth_model *m, const hearth_engine_params *p, hearth_engine **out,
                                   hearth_err *err);
/* Cancel everything, join the thread, free. Accepts NULL. */
void          hearth_engine_destroy(hearth_engine *e);
int32_t       hearth_engine_n_ctx(const hearth_engine *e);

/* An image in a prompt (models/vision.h): its soft tokens are prompt[pos .. pos + n), each fed
 * with its row of the image's projected embeddings instead of the token's own, the n of them
 * attending to each other both ways (models/forward.h). The prefix cache keys those positions
 * by digest (a hash of the image's pixels), not by the token id they share with every other
 * image, so two images never share KV blocks and a repeated image hits. */
typedef struct {
    int32_t      pos, n;  /* the soft tokens' span of the prompt */
    int32_t      width;   /* floats per row: the model's n_embd */
    const float *rows;    /* [n][width], copied at submit */
    uint64_t     digest;
} hearth_image_input;

typedef struct {
    const int32_t        *prompt;      /* [n_prompt] copied at submit */
    size_t                n_prompt;
    int32_t               max_tokens;  /* > 0 */
    hearth_sampler_params sampling;
    bool                  ignore_eog;  /* keep going past end-of-generation tokens */
    int32_t               min_tokens;  /* end-of-generation tokens are masked (never chosen) until
                                        * this many tokens were generated; 0: off */
    bool                  progress;    /* PROGRESS events as the prompt's prefill advances */
    bool                  logprobs;    /* TOKEN events carry the chosen token's logprob ... */
    int32_t               top_logprobs; /* ... and this many alternatives (<= HEARTH_TOP_LOGPROBS_MAX) */
    int32_t               score_from;  /* > 0: score the prompt (perplexity): the log-probability
                                        * of each prompt token t in [score_from, n_prompt) given the
                                        * tokens before it, from the logits at position t - 1 (a
                                        * log-softmax in double), read with hearth_request_scores
                                        * after DONE. Needs score_from < n_prompt; the prefix cache
                                        * serves only positions before score_from - 1. 0: off */
    bool                  no_spec;     /* no speculative decoding for this request */
    /* (optional) a LoRA adapter (lora/lora.h) loaded for the engine's model: each request made
     * from the params takes a reference (hearth_lora_retain) and drops it when freed, so the
     * caller may drop its own at any time after submit. NULL: the base model. lora_id names it in the prefix cache (unique among the
     * adapters the engine ever sees; 0 with lora NULL): sequences of different adapters never
     * share KV blocks. The engine's backend must apply adapters (hearth_engine_lora_supported). */
    const struct hearth_lora *lora;
    uint64_t              lora_id;
    const hearth_image_input *images;  /* (optional) [n_images] in prompt order, not overlapping,
                                        * each at most the engine's max_step tokens (its tokens
                                        * are prefilled in one step); copied at submit. Only a
                                        * Gemma 3 model on the CPU takes them (submit refuses
                                        * them elsewhere with HEARTH_E_UNSUPPORTED) */
    int32_t               n_images;
    hearth_cx_matcher    *constraint;  /* (optional) structured output: every token is one the
                                        * matcher allows (an end-of-generation token only where
                                        * it can end); taken over by submit in every case, the
                                        * engine frees it */
} hearth_request_params;

typedef enum {
    HEARTH_FINISH_NONE = 0,
    HEARTH_FINISH_STOP,      /* an end-of-generation token was produced (not emitted) */
    HEARTH_FINISH_LENGTH,    /* max_tokens reached */
    HEARTH_FINISH_CANCELLED,
    HEARTH_FINISH_ERROR,
} hearth_finish;

/* PROGRESS (only for a request that asked): after each prefill chunk of the prompt, the last
 * one included (its event comes before the first TOKEN); n_prompt, n_cached and n_done set. */
typedef enum { HEARTH_EV_TOKEN = 0, HEARTH_EV_DONE, HEARTH_EV_PROGRESS } hearth_event_kind;

typedef struct {
    hearth_event_kind kind;
    int32_t           token;       /* TOKEN */
    hearth_finish     finish;      /* DONE */
    hearth_status     status;      /* DONE: HEARTH_OK unless finish is ERROR */
    char              msg[160];    /* DONE with an error: what went wrong */
    int32_t           n_prompt;    /* DONE and PROGRESS: counts */
    int32_t           n_done;      /* PROGRESS: prompt tokens whose KV is in place (cached ones included) */
    int32_t           n_generated;
    int32_t           n_cached;    /* TOKEN and DONE: prompt tokens whose KV came from the prefix cache */
    bool              has_logprobs; /* TOKEN of a request that asked for logprobs: lp is set */
    hearth_token_logprobs lp;
    int32_t           n_drafted;   /* DONE: draft tokens verified for it (speculative decoding) */
    int32_t           n_accepted;  /* DONE: of them, accepted */
    double            prefill_ms;  /* DONE: time to the first token */
    double            decode_ms;   /* DONE: time after the first token */
} hearth_event;

/* Counters of the engine, as of its last step (any thread; each field is read atomically, the
 * set is not one snapshot). */
typedef struct {
    int64_t running, waiting;          /* sequences */
    int64_t blocks_total, blocks_free; /* KV pool */
    int64_t blocks_cached;             /* indexed by the prefix cache (referenced or not) */
    int64_t blocks_evictable;          /* cached and referenced by no sequence */
    int64_t cache_hit_tokens;          /* prompt tokens served from the cache */
    int64_t cache_hits, cache_misses;  /* admitted requests with / without a cached prefix */
    int64_t cache_query_tokens;        /* prompt tokens looked up */
    int64_t cache_evictions;           /* blocks */
    int64_t preemptions;
    int64_t steps, step_tokens;        /* forwards run and tokens they carried */
    /* the disk tier (all 0 when off): ssd_state 0 off, 1 on, 2 read-only (a write failed, or
     * the directory is not writable: RAM only from then on) */
    int64_t ssd_state, ssd_bytes, ssd_blocks;      /* files in the directory */
    int64_t ssd_hits, ssd_misses;      /* RAM misses looked up on disk: indexed there / not */
    int64_t ssd_restores;              /* blocks restored into the pool */
    int64_t ssd_verify_failures;       /* blocks dropped: checksum, truncation, model or scheme */
    int64_t ssd_demotions;             /* idle cached blocks written out and freed */
    int64_t ssd_writes, ssd_write_errors, ssd_write_skipped; /* skipped: the queue was full */
    int64_t ssd_evictions;             /* files deleted past ssd_cache_max */
    /* speculative decoding (0 when off): rounds that verified drafts, the drafts they verified and
     * how many were accepted (acceptance rate drafted / accepted, mean accepted length accepted /
     * rounds) */
    int64_t spec_rounds, spec_drafted, spec_accepted;
    /* sampling on the backend (sampler.h's topm): tokens picked from a row summary, and rows whose
     * summary fell short (their logits were copied after all) */
    int64_t topm_rows, topm_short;
    int64_t check_failures;            /* debug_checks: steps after which an invariant failed */
} hearth_engine_stats;

void          hearth_engine_stats_get(const hearth_engine *e, hearth_engine_stats *out);

/* How the engine was sized at create (fixed for its life; any thread). */
typedef struct {
    int32_t n_ctx, batch, block_size, n_blocks, max_step;
    int64_t block_bytes, pool_bytes;    /* K+V of one block (one layer group's layers); of the pool */
    int64_t kv_bytes_per_token;
    int64_t memory_budget;              /* 0: none given */
    int64_t weight_bytes, transient_bytes;
    int64_t prompt_cache_bytes;         /* cap on unreferenced cached blocks; 0: caching off */
    int32_t n_snaps;                    /* hybrid models: linear-attention state snapshots kept for
                                         * prefix hits (kv_pool.h), 0 without */
    int64_t snap_bytes;                 /* bytes of one */
    int32_t max_request_tokens;         /* prompt + max_tokens one request may have: min(n_ctx,
                                         * what the pool holds) - the largest safe context */
    hearth_kv_scheme kv;                /* element types of the cache's keys and values (layer 0's
                                         * under a per-layer scheme) */
    const hearth_kv_scheme *kv_layers;  /* borrowed: engine, [n_kv_layers]: each layer's types under a
                                         * per-layer scheme (kv_config.json); NULL: kv in every layer */
    int32_t n_kv_layers;
    hearth_kv_quant kv_quant;           /* the scheme as resolved (l2 -> 8, config -> what it names) */
    hearth_numerics numerics;           /* as resolved */
    bool    force_wire;                 /* the weights are locked in RAM */
    int64_t ssd_max_bytes;              /* the disk tier's cap; 0: the tier is off */
    int32_t ssd_demote_idle;            /* seconds; 0: no demotion */
    bool    ssd_verify;
    hearth_spec_params spec;            /* as resolved (kind NONE: off; draft_model not kept) */
    char    spec_kind[16];              /* "ngram", "two-model", "assistant", or "" */
    int64_t draft_weight_bytes;         /* two-model, assistant: the draft model's weights (0 otherwise) */
    int64_t draft_pool_bytes;           /* two-model: the draft's own KV pool (0 otherwise) */
} hearth_engine_info;

void          hearth_engine_info_get(const hearth_engine *e, hearth_engine_info *out);

/* Where the engine computes: the device's name and memory (backend.h), and the bytes of its KV
 * pool, which lives in that device's memory. Any thread. */
typedef struct {
    char    backend[16];  /* "cpu" or "cuda" */
    char    device[96];
    int64_t mem_total, mem_free; /* bytes; 0 on the CPU */
    int64_t kv_bytes;
} hearth_engine_device_info;
void          hearth_engine_device(const hearth_engine *e, hearth_engine_device_info *out);
/* Does the engine's backend apply LoRA adapters (request params lora)? False with the reason. */
bool          hearth_engine_lora_supported(const hearth_engine *e, char *why, size_t cap);

/* Queue a request. *out holds one reference for the caller. Fails (nothing queued) on invalid
 * params (HEARTH_E_INVALID), when prompt + max_tokens fits the context but could never fit the
 * KV pool (HEARTH_E_LIMIT, the limit in the message), or when the engine is shutting down. */
hearth_status hearth_engine_submit(hearth_engine *e, const hearth_request_params *p, hearth_request **out,
                                   hearth_err *err);
/* Queue n requests (choices) that share one prompt: p[0..n) must have equal prompts; each has
 * its own sampling (OpenAI's n choices give choice i the seed + i), max_tokens and constraint.
 * The prompt is prefilled once: when the first choice's prefill ends, the others start from its
 * KV (its full blocks shared by reference, its last partial block copied) and draw their first
 * token from the same logits, each with its own sampler. A choice that finds no free sequence
 * slot or block then is queued as a request of its own (it may still hit the prefix cache).
 * out[0..n) each hold one reference for the caller. All or nothing; every constraint is taken
 * over in every case. Fails as hearth_engine_submit does, and with HEARTH_E_INVALID when the
 * prompts differ. */
hearth_status hearth_engine_submit_n(hearth_engine *e, const hearth_request_params *p, int32_t n, hearth_request **out,
                                     hearth_err *err);
/* Ask the engine to stop req at its next step; harmless after DONE. */
void          hearth_engine_cancel(hearth_engine *e, hearth_request *req);
/* Wait up to timeout_ms (< 0: forever) for the next event. Returns HEARTH_OK with *ev filled,
 * or HEARTH_E_TIMEOUT when none came in time. After DONE it keeps returning the DONE event. */
hearth_status hearth_request_next(hearth_request *req, hearth_event *ev, int timeout_ms);
/* Has the scheduler admitted req (taken it from the waiting queue to run)? Any thread. */
bool          hearth_request_admitted(const hearth_request *req);
/* Cancel every request queued or running now (each ends with DONE/cancelled). Any thread. */
void          hearth_engine_cancel_all(hearth_engine *e);
/* Empty the prefix cache: drop every cached block no running sequence holds (without writing
 * it to the disk tier, whose files stay). Waits for the
 * engine thread to do it (at most one step). Returns the blocks freed. Any thread but the
 * engine's. */
int32_t       hearth_engine_cache_flush(hearth_engine *e);
/* The next event of any of reqs[0..n): the requests of one hearth_engine_submit_n (NULL
 * entries, e.g. choices already done, are skipped). *which: in, the index read last (the scan
 * starts after it, so the choices take turns); out, the index of the event's request. Returns
 * HEARTH_E_TIMEOUT when no event came within timeout_ms (< 0: forever), HEARTH_E_INVALID when
 * every entry is NULL or they are not of one group. */
hearth_status hearth_request_next_any(hearth_request *const *reqs, int32_t n, int32_t *which, hearth_event *ev,
                                      int timeout_ms);
/* The scores of a request made with score_from > 0: *n = n_prompt - score_from log-probabilities,
 * in prompt order (entry i is token score_from + i). Complete once DONE was read with finish
 * STOP or LENGTH; NULL (and *n = 0) for a request that does not score. */
const double *hearth_request_scores(const hearth_request *req, int32_t *n);
/* Drop the caller's reference (cancels the request if still running). Accepts NULL. */
void          hearth_request_release(hearth_request *req);
