/*
 * engine.c - the engine thread and the request hand-off.
 *
 * Submitters push onto a mutex-guarded FIFO and signal the engine's condition variable (the
 * only lock engine/ takes besides each request's event queue); the engine thread moves new
 * requests into the scheduler and runs steps while it has work (sched.c: continuous batching
 * over the paged pool of kv_pool.c with the prefix cache of prefix_cache.c), sleeping on the
 * condition variable when idle. Cancellation is an atomic flag the scheduler checks before
 * every step. Counters are published as relaxed atomics after every step.
 */
#include "engine/engine.h"
#include "backend/backend.h"
#include "base/log.h"
#include "engine/kv_config.h"
#include "engine/kv_pool.h"
#include "engine/prefix_cache.h"
#include "engine/request.h"
#include "engine/sched.h"
#include "engine/spec.h"
#include "engine/ssd_tier.h"
#include "kernels/kernels.h"
#include "lora/lora.h"
#include "model/arch.h"
#include "model/wire.h"
#include "models/forward.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

enum { N_STATS = sizeof(hearth_engine_stats) / sizeof(int64_t) };

/* publish and hearth_engine_stats_get (which /stats and /metrics read) copy hearth_engine_stats
 * as an array of int64_t with check_failures last. A field of another type, padding, or a new
 * field this list does not name must break the build, not the numbers: a new counter is one
 * more int64_t, named here, before check_failures. */
#define STAT_I64(f) _Generic(((hearth_engine_stats *)0)->f, int64_t: 1, default: 0)
_Static_assert(STAT_I64(running) && STAT_I64(waiting) && STAT_I64(blocks_total) && STAT_I64(blocks_free) &&
                   STAT_I64(blocks_cached) && STAT_I64(blocks_evictable) && STAT_I64(cache_hit_tokens) &&
                   STAT_I64(cache_hits) && STAT_I64(cache_misses) && STAT_I64(cache_query_tokens) &&
                   STAT_I64(cache_evictions) && STAT_I64(preemptions) && STAT_I64(steps) &&
                   STAT_I64(step_tokens) && STAT_I64(ssd_state) && STAT_I64(ssd_bytes) && STAT_I64(ssd_blocks) &&
                   STAT_I64(ssd_hits) && STAT_I64(ssd_misses) && STAT_I64(ssd_restores) &&
                   STAT_I64(ssd_verify_failures) && STAT_I64(ssd_demotions) && STAT_I64(ssd_writes) &&
                   STAT_I64(ssd_write_errors) && STAT_I64(ssd_write_skipped) && STAT_I64(ssd_evictions) &&
                   STAT_I64(spec_rounds) && STAT_I64(spec_drafted) && STAT_I64(spec_accepted) &&
                   STAT_I64(topm_rows) && STAT_I64(topm_short) && STAT_I64(check_failures),
               "every field of hearth_engine_stats is an int64_t");
_Static_assert(sizeof(hearth_engine_stats) == 32 * sizeof(int64_t),
               "hearth_engine_stats has exactly the fields named above (add a new one to the list)");
_Static_assert(offsetof(hearth_engine_stats, check_failures) == (N_STATS - 1) * sizeof(int64_t),
               "check_failures is the last field of hearth_engine_stats");
#undef STAT_I64

struct hearth_engine {
    const hearth_model  *m;      /* borrowed */
    hearth_engine_params p;
    hearth_engine_params p_in; /* as given (its strings are read during create only) */
    hearth_backend      *be;     /* owned */
    hearth_fwd          *fwd;    /* owned */
    hearth_kv_pool      *pool;   /* owned */
    hearth_kv_scheme    *layer_kv; /* owned [n_layer]: a per-layer scheme (kv_config.json); NULL:
                                    * one scheme for every layer */
    hearth_prefix_cache *pc;     /* owned, NULL when caching is off */
    hearth_ssd_tier     *tier;   /* owned, NULL when the disk tier is off */
    double               demote_ms; /* idle time after which cached blocks go to the tier; 0: never */
    hearth_sched        *sched;  /* owned; engine thread only */
    hearth_drafter      *draft;  /* owned, NULL when speculative decoding is off */
    pthread_t            thread;
    pthread_mutex_t      mu;     /* guards the FIFO and stop */
    pthread_cond_t       cv;
    hearth_request      *head, *tail;
    bool                 stop;
    bool                 cancel_all; /* hearth_engine_cancel_all asked; guarded by mu */
    uint64_t             flush_asked, flush_done; /* cache flush tickets, guarded by mu */
    int32_t              flush_freed; /* blocks the last flush freed */
    int32_t              n_blocks; /* the pool's, fixed at create (read by submitters) */
    hearth_engine_info   info;     /* fixed at create */
    bool                 wired;    /* the weights are mlocked (force_wire): unlock at free */
    _Atomic int64_t      stats[N_STATS]; /* hearth_engine_stats, field by field */
};

hearth_engine_params hearth_engine_params_default(void) {
    hearth_engine_params p = {.n_threads = 0, .n_ctx = 0, .max_step = 512, .kv_f16 = -1, .batch = 8,
                              .kv_budget = 0, .block_size = 16, .prompt_cache = -1, .state_snaps = -1,
                              .device = HEARTH_DEVICE_CPU, .ssd_demote_idle = -1};
    return p;
}

static void publish(hearth_engine *e) {
    hearth_engine_stats st = *hearth_sched_stats(e->sched);
    if (e->p.debug_checks && !hearth_sched_check(e->sched))
        st.check_failures = atomic_load_explicit(&e->stats[N_STATS - 1], memory_order_relaxed) + 1;
    else st.check_failures = atomic_load_explicit(&e->stats[N_STATS - 1], memory_order_relaxed);
    if (e->tier) { /* the prefix cache's (engine thread only); the tier's are read live */
        st.ssd_restores = hearth_prefix_cache_restores(e->pc);
        st.ssd_demotions = hearth_prefix_cache_demotions(e->pc);
    }
    const int64_t *f = (const int64_t *)&st;
    for (int i = 0; i < N_STATS; i++) atomic_store_explicit(&e->stats[i], f[i], memory_order_relaxed);
}

/* Idle cached blocks to the disk tier (engine thread, between steps). */
static void demote_idle(hearth_engine *e) {
    if (e->tier && e->demote_ms > 0) hearth_prefix_cache_demote(e->pc, hearth_now_mono_ms(), e->demote_ms, false);
}

static void *engine_main(void *arg) {
    hearth_engine *e = arg;
    pthread_setname_np(pthread_self(), "hearth-engine"); /* by name in top -H and /proc */
    for (;;) {
        pthread_mutex_lock(&e->mu);
        /* idle with blocks that demotion may take: wake every second to look */
        bool tick = e->tier && e->demote_ms > 0 && hearth_prefix_cache_n_evictable(e->pc) > 0;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        while (!e->head && !e->stop && !e->cancel_all && e->flush_asked == e->flush_done &&
               hearth_sched_idle(e->sched)) {
            if (!tick) pthread_cond_wait(&e->cv, &e->mu);
            else if (pthread_cond_timedwait(&e->cv, &e->mu, &until) == ETIMEDOUT) break;
        }
        hearth_request *r = e->head;
        e->head = e->tail = NULL;
        bool stop = e->stop, cancel = e->cancel_all;
        e->cancel_all = false;
        uint64_t flush = e->flush_asked;
        pthread_mutex_unlock(&e->mu);
        for (hearth_request *n; r; r = n) {
            n = r->next;
            r->next = NULL;
            hearth_sched_add(e->sched, r); /* the engine's reference */
        }
        if (stop || cancel) hearth_sched_cancel_all(e->sched);
        if (flush != e->flush_done) { /* between steps no block is being written */
            /* a flush drops the RAM copies without writing them to the disk tier */
            if (e->pc) hearth_prefix_cache_set_tier(e->pc, NULL);
            int32_t freed = e->pc ? hearth_prefix_cache_evict(e->pc, e->n_blocks) : 0;
            if (e->pc && e->tier) hearth_prefix_cache_set_tier(e->pc, e->tier);
            publish(e);
            pthread_mutex_lock(&e->mu);
            e->flush_freed = freed;
            e->flush_done = flush;
            pthread_cond_broadcast(&e->cv);
            pthread_mutex_unlock(&e->mu);
        }
        demote_idle(e);
        hearth_sched_step(e->sched);
        hearth_fwd_lora_sweep(e->fwd); /* a device's copies of adapters nobody holds any more */
        publish(e);
        if (stop && hearth_sched_idle(e->sched)) break;
    }
    return NULL;
}

static void engine_free(hearth_engine *e) {
    hearth_sched_destroy(e->sched);
    hearth_drafter_destroy(e->draft);
    /* the RAM cache's blocks go to the disk tier, for the next start */
    if (e->tier && e->pc) hearth_prefix_cache_demote(e->pc, hearth_now_mono_ms(), 0, true);
    hearth_prefix_cache_destroy(e->pc);
    hearth_ssd_tier_close(e->tier); /* writes what is queued */
    hearth_kv_pool_destroy(e->pool);
    hearth_fwd_destroy(e->fwd);
    hearth_backend_destroy(e->be);
    if (e->wired) hearth_model_wire(e->m, false, NULL);
    free(e->layer_kv);
    free(e);
}

#define MB(n) ((double)(n) / 1e6)

/* Bytes the engine allocates besides weights and KV: the forward's activations and the
 * backend's scratch for the largest step, the logits of a full batch, attention scores, and a
 * fixed allowance for the runtime (threads, tokenizer, allocator), as `hearth fit` counts it. */
static int64_t transient_bytes(const hearth_engine *e, const hearth_hparams *hp, int64_t width) {
    int64_t T = e->p.max_step, q = (int64_t)hp->n_head * hp->head_dim, kv = (int64_t)hp->n_head_kv * hp->head_dim;
    int64_t act = T * (2 * (int64_t)hp->n_embd + q + 2 * kv + q + 2 * (int64_t)hp->n_ff) * 4;
    int64_t mm = T * width * 4;                                  /* quantized activations, at most f32 */
    int64_t logits = (int64_t)e->p.batch * hp->n_vocab * 4;
    int64_t scores = (int64_t)e->p.n_ctx * 4 * 64;               /* per compute thread */
    int64_t n_lin = 0; /* a hybrid model's linear-attention states, one per slot and such layer */
    for (int32_t il = 0; il < hp->n_layer; il++) n_lin += hearth_hparams_is_linear(hp, il);
    int64_t states = n_lin * e->p.batch * hearth_hparams_lin_state_floats(hp) * 4;
    int64_t lin = hp->lin_n_v > 0 ? T * (2 * (2 * (int64_t)hp->lin_n_k * hp->lin_k_dim + 2 * (int64_t)hp->lin_n_v *
                                                 hp->lin_v_dim) + 2 * (int64_t)hp->lin_n_v) * 4 : 0;
    return act + mm + logits + scores + states + lin + (32 << 20) + 64 * (int64_t)hp->n_vocab;
}

/* The draft model's cache scheme: the target's, or f16 when that is a quantized one (a small
 * draft's cache costs little, and its rounding changes only which drafts are proposed). */
static hearth_kv_scheme draft_kv(hearth_kv_scheme kv) {
    bool plain = (kv.k == HEARTH_KV_F16 || kv.k == HEARTH_KV_F32) && (kv.v == HEARTH_KV_F16 || kv.v == HEARTH_KV_F32);
    return plain ? kv : HEARTH_KV_SCHEME_F16;
}

static const hearth_model *draft_model_of(const hearth_engine *e) {
    return e->p.spec.kind == HEARTH_DRAFT_MODEL || e->p.spec.kind == HEARTH_DRAFT_ASSISTANT ? e->p.spec.draft_model
                                                                                            : NULL;
}

/* Positions a window group of the target's pool keeps for the draft source (kv_pool.h's
 * window_keep; 0: the model's window). */
static int32_t window_keep(const hearth_engine *e) {
    return e->p.spec.kind == HEARTH_DRAFT_ASSISTANT && e->p.spec.draft_model
               ? hearth_draft_assistant_window(e->p.spec.draft_model)
               : 0;
}

static hearth_draft_model_params draft_params(const hearth_engine *e, hearth_kv_scheme kv) {
    return (hearth_draft_model_params){.batch = e->p.batch, .n_ctx = e->p.n_ctx, .max_step = e->p.max_step,
                                       .block_size = e->p.block_size, .kv = draft_kv(kv)};
}

/* What a two-model draft source adds to the memory (0 without one): the draft's weights, its
 * pool at its largest (batch full contexts: the cap of the target pool's bytes is applied
 * later) and its activations and logits. */
static int64_t draft_bytes(const hearth_engine *e, hearth_kv_scheme kv) {
    const hearth_model *dm = draft_model_of(e);
    if (!dm) return 0;
    const hearth_hparams *hp = hearth_model_hparams(dm);
    hearth_draft_model_params dp = draft_params(e, kv);
    if (e->p.spec.kind == HEARTH_DRAFT_ASSISTANT) { /* no pool: weights, activations of batch rows, logits */
        int64_t B = e->p.batch, q = (int64_t)hp->n_head * hp->head_dim;
        int64_t act = B * (2 * (int64_t)hp->n_embd + 2 * q + 2 * (int64_t)hp->n_ff + 3 * (int64_t)hp->n_embd_backbone +
                           hp->n_centroids) * 4;
        return (int64_t)hearth_model_weight_bytes(dm) + act + 2 * B * hp->n_vocab * 4 +
               (int64_t)e->p.max_step * hp->n_embd_backbone * 4;
    }
    int64_t T = e->p.max_step, q = (int64_t)hp->n_head * hp->head_dim, kvw = (int64_t)hp->n_head_kv * hp->head_dim;
    int64_t act = T * (2 * (int64_t)hp->n_embd + q + 2 * kvw + q + 2 * (int64_t)hp->n_ff) * 4;
    int64_t logits = (int64_t)e->p.batch * hp->n_vocab * 4;
    return (int64_t)hearth_model_weight_bytes(dm) + hearth_draft_model_pool_bytes(dm, &dp) + act + logits;
}

/* The pool's bytes (see hearth_engine_params): explicit, from the memory budget, or one full
 * context. Refuses a budget that cannot serve one request of the full context. */
static hearth_status size_pool(hearth_engine *e, const hearth_model *m, hearth_kv_scheme kv, int64_t width, size_t *out,
                               hearth_err *err) {
    const hearth_hparams *hp = hearth_model_hparams(m);
    /* one full context in blocks: a sliding window's layers hold only the window's blocks */
    hearth_kv_layout lay = hearth_kv_layout_of(m, e->p.kv_swa_full);
    if (lay.n_win > 0 && window_keep(e) > lay.n_swa) lay.n_swa = window_keep(e); /* as the pool will */
    int64_t block = (int64_t)hearth_kv_block_bytes_layers(m, e->p.kv_swa_full, kv, e->layer_kv, e->p.block_size);
    int64_t ctx_blocks = hearth_kv_layout_blocks(&lay, e->p.block_size, e->p.n_ctx, e->p.max_step);
    int64_t weights = (int64_t)hearth_model_weight_bytes(m), trans = transient_bytes(e, hp, width);
    e->info.weight_bytes = weights;
    e->info.transient_bytes = trans;
    int64_t draft = draft_bytes(e, kv); /* a draft model's weights, pool and activations */
    char dnote[64] = "";
    if (draft > 0) snprintf(dnote, sizeof dnote, " and the draft model (%.0f MB)", MB(draft));
    trans += draft;
    e->info.memory_budget = e->p.memory_budget > 0 ? e->p.memory_budget : 0;
    if (e->p.kv_budget > 0) {
        if (e->p.memory_budget > 0 && weights + trans + e->p.kv_budget > e->p.memory_budget)
            return hearth_err_set(err, HEARTH_E_LIMIT, -1,
                                  "the KV budget (%.0f MB) with the weights (%.0f MB) and transients (%.0f MB)%s "
                                  "exceeds the memory budget (%.0f MB): lower --kv-budget or raise --memory-budget",
                                  MB(e->p.kv_budget), MB(weights), MB(trans - draft), dnote, MB(e->p.memory_budget));
        *out = (size_t)e->p.kv_budget;
        return HEARTH_OK;
    }
    if (e->p.memory_budget <= 0) { /* one full context, the memory `hearth fit` plans for */
        *out = (size_t)(block * ctx_blocks);
        return HEARTH_OK;
    }
    int64_t left = e->p.memory_budget - weights - trans;
    if (left < block * ctx_blocks)
        return hearth_err_set(err, HEARTH_E_LIMIT, -1,
                              "the memory budget (%.0f MB) minus the weights (%.0f MB) and transients (%.0f MB)%s "
                              "leaves %.0f MB for the KV cache; one request of the %d-token context needs %.0f MB: "
                              "raise --memory-budget or lower --ctx",
                              MB(e->p.memory_budget), MB(weights), MB(trans - draft), dnote, MB(left > 0 ? left : 0),
                              e->p.n_ctx,
                              MB(block * ctx_blocks));
    /* no more than the batch's full contexts plus the prompt cache can use, and the cache at
     * most 7 batches of full contexts more (a tiny model would otherwise get millions of
     * blocks of bookkeeping for nothing) */
    int64_t live = block * ctx_blocks * e->p.batch, useful = live;
    if (e->p.prompt_cache != 0) useful += e->p.prompt_cache > 0 && e->p.prompt_cache < 7 * live
                                              ? e->p.prompt_cache : 7 * live;
    *out = (size_t)(left < useful ? left : useful);
    return HEARTH_OK;
}

/* Hybrid models with the prompt cache: the state snapshots the pool keeps (kv_pool.h; sched.c
 * takes at most log2(blocks of a context) + 3 per sequence). Unless state_snaps asks for a
 * number: enough for the batch's sequences and as many cached ones, 2 * batch * (log2(blocks) +
 * 3), but never more bytes than the KV blocks (half the pool). With a budget (--kv-budget, --memory-budget) they come out of it
 * (*budget shrinks), leaving the blocks one full context at least; without one (the pool is one
 * full context) they are added to it. */
static int32_t snap_count(hearth_engine *e, const hearth_model *m, hearth_kv_scheme kv, size_t *budget) {
    const hearth_hparams *hp = hearth_model_hparams(m);
    int64_t n_lin = 0;
    for (int32_t il = 0; il < hp->n_layer; il++) n_lin += hearth_hparams_is_linear(hp, il);
    int64_t one = n_lin * hearth_hparams_lin_state_floats(hp) * (int64_t)sizeof(float);
    if (one <= 0 || e->p.prompt_cache == 0) return 0;
    int64_t max_blocks = (e->p.n_ctx + e->p.block_size - 1) / e->p.block_size, lg = 0;
    while ((1ll << lg) < max_blocks) lg++;
    int64_t n = 2 * (int64_t)e->p.batch * (lg + 3), b = (int64_t)*budget;
    bool explicit = e->p.kv_budget > 0 || e->p.memory_budget > 0;
    if (e->p.state_snaps >= 0) n = e->p.state_snaps; /* asked for: only a full context's blocks limit it */
    else if (n > (explicit ? b / 2 : b) / one) n = (explicit ? b / 2 : b) / one;
    if (explicit) {
        hearth_kv_layout lay = hearth_kv_layout_of(m, e->p.kv_swa_full);
        int64_t ctx = (int64_t)hearth_kv_block_bytes_layers(m, e->p.kv_swa_full, kv, e->layer_kv, e->p.block_size) *
                      hearth_kv_layout_blocks(&lay, e->p.block_size, e->p.n_ctx, e->p.max_step);
        if (n > (b - ctx) / one) n = b > ctx ? (b - ctx) / one : 0;
        *budget = (size_t)(b - n * one);
    }
    if (n > INT32_MAX / 4) n = INT32_MAX / 4;
    e->info.snap_bytes = one;
    e->info.n_snaps = (int32_t)n;
    if (n == 0)
        hearth_log(HEARTH_LOG_WARN, "prompt cache: no room for the linear-attention state snapshots of %s (%.1f MB "
                   "each): it reuses no prefix", hearth_arch_info_of(hp->arch)->hf_type, MB(one));
    else
        hearth_log(HEARTH_LOG_INFO, "prompt cache: %lld state snapshots of %.2f MB (%.0f MB) for prefix hits",
                   (long long)n, MB(one), MB(n * one));
    return (int32_t)n;
}

/* --kv-quant config: the per-layer scheme of the model's kv_config.json (kv_config.h) into
 * e->layer_kv, or off when the model ships none. A scheme that is the same in every layer is
 * that uniform scheme (layer_kv stays NULL): the same pool, numerics and disk-tier key as
 * --kv-quant 8 or 4. *out is layer 0's types (the view's fallback). */
static hearth_status resolve_kv_off(hearth_engine *e, hearth_kv_scheme *out) {
    const hearth_numerics *nx = &e->p.numerics;
    bool f16 = e->p.kv_f16 < 0 ? nx->tier != HEARTH_NUMERICS_REF : e->p.kv_f16 != 0;
    *out = hearth_kv_scheme_of(f16 ? HEARTH_KV_F16 : HEARTH_KV_F32, f16 ? HEARTH_KV_F16 : HEARTH_KV_F32);
    return HEARTH_OK;
}

static hearth_status resolve_kv_config(hearth_engine *e, const hearth_model *m, hearth_kv_scheme *out,
                                       hearth_err *err) {
    const hearth_hparams *hp = hearth_model_hparams(m);
    char path[4096];
    if (!hearth_kv_config_find(e->p_in.model_path, path, sizeof path)) {
        hearth_log(HEARTH_LOG_INFO, "kv cache: --kv-quant config, but the model ships no kv_config.json: off");
        e->p.kv_quant.mode = HEARTH_KVQ_OFF;
        return resolve_kv_off(e, out);
    }
    hearth_kv_scheme *lk = malloc((size_t)hp->n_layer * sizeof *lk);
    if (!lk) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    hearth_status st = hearth_kv_config_load(path, hp->n_layer, lk, err);
    if (st) {
        free(lk);
        return st;
    }
    int32_t n_of[HEARTH_KV_TYPE_COUNT] = {0};
    bool uniform = true;
    for (int32_t il = 0; il < hp->n_layer; il++) {
        int32_t src = hearth_hparams_kv_layer(hp, il);
        if (src != il) lk[il] = lk[src]; /* a KV-shared layer reads its source's cache */
        if (hearth_kv_type_quantized(lk[il].k) && hearth_hparams_head_dim(hp, il) % HEARTH_KV_QBLOCK) {
            st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1,
                                "%s: layer %d is %s, but its heads of %d elements are not whole %d-element blocks",
                                path, il, hearth_kv_type_name(lk[il].k), hearth_hparams_head_dim(hp, il),
                                HEARTH_KV_QBLOCK);
            free(lk);
            return st;
        }
        uniform = uniform && lk[il].k == lk[0].k && lk[il].v == lk[0].v;
        n_of[lk[il].k]++;
    }
    hearth_log(HEARTH_LOG_INFO, "kv cache: %s: %d layers q8_0, %d q4_0, %d f16", path, n_of[HEARTH_KV_Q8_0],
               n_of[HEARTH_KV_Q4_0], n_of[HEARTH_KV_F16]);
    if (!uniform) { /* the pool's types: on a sliding-window model a place pays for its widest layer */
        hearth_kv_scheme *asked = malloc((size_t)hp->n_layer * sizeof *asked);
        if (!asked) {
            free(lk);
            return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        }
        memcpy(asked, lk, (size_t)hp->n_layer * sizeof *lk);
        int32_t n_wide = hearth_kv_layers_widen(m, e->p.kv_swa_full, lk);
        if (n_wide < 0) {
            free(asked);
            free(lk);
            return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        }
        char list[512] = "";
        size_t used = 0;
        for (int32_t il = 0; il < hp->n_layer && n_wide > 0; il++) {
            if (lk[il].k == asked[il].k && lk[il].v == asked[il].v) continue;
            int n = snprintf(list + used, sizeof list - used, "%s%d %s->%s", used ? ", " : "", il,
                             hearth_kv_type_name(asked[il].k), hearth_kv_type_name(lk[il].k));
            if (n < 0 || (size_t)n >= sizeof list - used) break;
            used += (size_t)n;
        }
        free(asked);
        if (n_wide > 0)
            hearth_log(HEARTH_LOG_INFO,
                       "kv cache: %d layers widened to the widest type of their place in the pool (a block pays "
                       "for it anyway on this sliding-window model): %s",
                       n_wide, list);
        uniform = true;
        for (int32_t il = 1; il < hp->n_layer; il++) uniform = uniform && lk[il].k == lk[0].k && lk[il].v == lk[0].v;
    }
    *out = lk[0];
    if (uniform) free(lk);
    else e->layer_kv = lk;
    return HEARTH_OK;
}

/* The cache's element types from the scheme asked for and the numerics: l2 is the 8-bit cache
 * in llama.cpp's arithmetic, off is f16 (f32 under the ref numerics unless kv_f16 says). */
static hearth_status resolve_kv(hearth_engine *e, const hearth_model *m, hearth_kv_scheme *out, hearth_err *err) {
    const hearth_numerics *nx = &e->p.numerics;
    hearth_kv_quant *q = &e->p.kv_quant;
    char name[32];
    hearth_kv_quant_name(q, name, sizeof name);
    if (nx->tier == HEARTH_NUMERICS_L2) {
        if (q->mode != HEARTH_KVQ_OFF && q->mode != HEARTH_KVQ_8)
            return hearth_err_set(err, HEARTH_E_INVALID, -1,
                                  "--l2 is llama.cpp's arithmetic with the 8-bit KV cache; it cannot run with "
                                  "--kv-quant %s",
                                  name);
        q->mode = HEARTH_KVQ_8;
    }
    if (q->mode == HEARTH_KVQ_CONFIG) return resolve_kv_config(e, m, out, err);
    if (q->mode != HEARTH_KVQ_OFF && hearth_model_hparams(m)->attn_sinks)
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1,
                              "--kv-quant %s: attention sinks (gpt-oss) run on an f16 or f32 KV cache only", name);
    switch (q->mode) {
    case HEARTH_KVQ_OFF: return resolve_kv_off(e, out);
    case HEARTH_KVQ_8:
    case HEARTH_KVQ_4: {
        /* every layer's heads are whole 32-element blocks (the pool checks the model's head size,
         * the backends' kernels assume it of each layer's) */
        const hearth_hparams *hp = hearth_model_hparams(m);
        for (int32_t il = 0; il < hp->n_layer; il++)
            if (hearth_hparams_head_dim(hp, il) % HEARTH_KV_QBLOCK)
                return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1,
                                      "--kv-quant %s: a quantized KV cache needs heads of a multiple of %d "
                                      "elements (layer %d's are %d)",
                                      name, HEARTH_KV_QBLOCK, il, hearth_hparams_head_dim(hp, il));
        const hearth_kv_type t = q->mode == HEARTH_KVQ_8 ? HEARTH_KV_Q8_0 : HEARTH_KV_Q4_0;
        *out = hearth_kv_scheme_of(t, t);
        return HEARTH_OK;
    }
    case HEARTH_KVQ_TURBO: {
        /* every layer's heads are whole 64-element rotations (kv_type.h), at most the kernels' */
        const hearth_hparams *hp = hearth_model_hparams(m);
        for (int32_t il = 0; il < hp->n_layer; il++) {
            const int32_t d = hearth_hparams_head_dim(hp, il);
            if (d % HEARTH_KV_TURBO_ROT || d > 512)
                return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1,
                                      "--kv-quant %s: turbo needs heads of a multiple of %d elements, at most 512 "
                                      "(layer %d's are %d)",
                                      name, HEARTH_KV_TURBO_ROT, il, d);
        }
        const hearth_kv_type k = hearth_kv_turbo_type(q->k_bits), v = hearth_kv_turbo_type(q->v_bits);
        if (k == HEARTH_KV_TYPE_COUNT || v == HEARTH_KV_TYPE_COUNT)
            return hearth_err_set(err, HEARTH_E_INVALID, -1, "--kv-quant %s: no turbo type of these bits", name);
        *out = hearth_kv_scheme_of(k, v);
        return HEARTH_OK;
    }
    default:
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "--kv-quant %s: this scheme is not available yet", name);
    }
}

/* The draft source of speculative decoding, with its defaults (engine.h); none when off. */
static hearth_status open_drafter(hearth_engine *e, const hearth_model *m, hearth_err *err) {
    hearth_spec_params *sp = &e->p.spec;
    int32_t n_vocab = hearth_model_hparams(m)->n_vocab;
    if (sp->kind == HEARTH_DRAFT_NONE) return HEARTH_OK;
    /* a linear-attention state absorbs every token fed, rejected drafts too, and keeps no
     * snapshot to go back to */
    const hearth_model *dm = sp->kind == HEARTH_DRAFT_MODEL ? sp->draft_model : NULL;
    if (hearth_model_hparams(m)->lin_n_v > 0 || (dm && hearth_model_hparams(dm)->lin_n_v > 0))
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "speculative decoding does not run %s models (their "
                              "linear-attention state cannot take back rejected drafts): leave --draft-kind off",
                              hearth_arch_info_of(hearth_model_hparams(dm && hearth_model_hparams(dm)->lin_n_v > 0
                                                                           ? dm : m)->arch)->hf_type);
    if (sp->n_draft <= 0) sp->n_draft = sp->kind == HEARTH_DRAFT_NGRAM ? 10 : 3;
    if (sp->n_draft > 64) return hearth_err_set(err, HEARTH_E_INVALID, -1, "--num-draft-tokens is at most 64");
    if (sp->n_draft >= e->p.max_step) sp->n_draft = e->p.max_step - 1;
    if (sp->ngram_min <= 0) sp->ngram_min = 1;
    if (sp->ngram_max <= 0) sp->ngram_max = sp->ngram_min > 3 ? sp->ngram_min : 3;
    if (sp->ngram_min > sp->ngram_max)
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "--ngram-min (%d) is larger than --ngram-max (%d)",
                              sp->ngram_min, sp->ngram_max);
    if (sp->n_draft <= 0) { /* a step of one token has no room for drafts */
        sp->kind = HEARTH_DRAFT_NONE;
        return HEARTH_OK;
    }
    switch (sp->kind) {
    case HEARTH_DRAFT_NGRAM:
        e->draft = hearth_drafter_ngram(n_vocab, sp->ngram_min, sp->ngram_max);
        break;
    case HEARTH_DRAFT_MODEL: {
        if (!sp->draft_model)
            return hearth_err_set(err, HEARTH_E_INVALID, -1, "the two-model draft source needs a draft model");
        hearth_status st = hearth_draft_vocab_check(m, sp->draft_model, err);
        if (st) return st;
        hearth_draft_model_params dp = draft_params(e, e->info.kv);
        dp.max_pool_bytes = e->info.pool_bytes; /* never more KV than the target's own pool */
        if ((st = hearth_drafter_model(m, sp->draft_model, e->be, &dp, &e->draft, err))) return st;
        e->info.draft_weight_bytes = (int64_t)hearth_model_weight_bytes(sp->draft_model);
        e->info.draft_pool_bytes = hearth_draft_model_pool_bytes(sp->draft_model, &dp);
        break;
    }
    case HEARTH_DRAFT_ASSISTANT: {
        if (!sp->draft_model)
            return hearth_err_set(err, HEARTH_E_INVALID, -1, "the assistant draft source needs its checkpoint");
        hearth_status st = hearth_drafter_assistant(m, sp->draft_model, e->be, e->fwd, e->pool, e->p.batch,
                                                    e->p.max_step, &e->draft, err);
        if (st) return st;
        e->info.draft_weight_bytes = (int64_t)hearth_model_weight_bytes(sp->draft_model);
        break;
    }
    default:
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "this kind of draft source is not available");
    }
    if (!e->draft) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory creating the draft source");
    e->info.spec = *sp;
    e->info.spec.draft_model = NULL;
    snprintf(e->info.spec_kind, sizeof e->info.spec_kind, "%s", e->draft->kind);
    return HEARTH_OK;
}

/* The disk tier of the prefix cache, when asked for: the model's identity (given, or a digest
 * of its file), the KV scheme, the pool's geometry. A directory another process holds fails the
 * create; one that cannot be written gives a read-only tier (ssd_tier.h). */
static hearth_status open_tier(hearth_engine *e, const hearth_model *m, hearth_kv_scheme kv, hearth_err *err) {
    e->p.ssd_model_id = e->p.ssd_model_path = NULL; /* borrowed strings: not kept */
    const char *dir = e->p.ssd_cache_dir;
    e->p.ssd_cache_dir = NULL;
    if (!dir || !*dir) return HEARTH_OK;
    char id[HEARTH_SSD_MODEL_ID_MAX];
    const hearth_engine_params *p = &e->p_in;
    if (p->ssd_model_id && *p->ssd_model_id) {
        if (strlen(p->ssd_model_id) >= sizeof id)
            return hearth_err_set(err, HEARTH_E_INVALID, -1, "the model id of the SSD cache is too long");
        snprintf(id, sizeof id, "%s", p->ssd_model_id);
    } else if (p->ssd_model_path && *p->ssd_model_path) {
        double ms = 0;
        hearth_status st = hearth_ssd_model_id(p->ssd_model_path, id, &ms, err);
        if (st) return st;
        hearth_log(HEARTH_LOG_INFO, "ssd cache: model identity %s (%.0f ms)", id, ms);
    } else {
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "the SSD cache needs the model's identity or its path");
    }
    /* what a block's bytes mean beyond model and scheme: the layout of its layer groups, and the
     * cache's content format, SSD_KV_FORMAT (bumped when the engine writes other bytes for the
     * same tokens: 2 since quantized caches hold Hadamard-rotated keys and values) */
    enum { SSD_KV_FORMAT = 2 };
    const hearth_kv_layout *lay = hearth_kv_pool_layout(e->pool);
    uint64_t geo[7] = {(uint64_t)lay->per_group, (uint64_t)lay->n_full, (uint64_t)lay->n_win, (uint64_t)lay->n_swa,
                       (uint64_t)e->p.kv_swa_full, (uint64_t)hearth_model_hparams(m)->n_layer, SSD_KV_FORMAT};
    char scheme[HEARTH_SSD_SCHEME_MAX]; /* "f16", "q8_0", "K/V" when they differ, "cfg<hash>" per layer */
    if (e->layer_kv) { /* every layer's K and V types, in order */
        int32_t n_layer = hearth_model_hparams(m)->n_layer;
        XXH64_hash_t h = 2; /* 2: the pool's places dealt widest first (kv_pool.c plan_layers) */
        for (int32_t il = 0; il < n_layer; il++) {
            uint8_t kv2[2] = {(uint8_t)e->layer_kv[il].k, (uint8_t)e->layer_kv[il].v};
            h = XXH3_64bits_withSeed(kv2, sizeof kv2, h);
        }
        snprintf(scheme, sizeof scheme, "cfg%012llx", (unsigned long long)(h & 0xffffffffffffull));
    } else if (kv.k == kv.v) snprintf(scheme, sizeof scheme, "%s", hearth_kv_type_name(kv.k));
    else snprintf(scheme, sizeof scheme, "%s/%s", hearth_kv_type_name(kv.k), hearth_kv_type_name(kv.v));
    hearth_ssd_tier_params tp = {.dir = dir, .max_bytes = e->p.ssd_cache_max, .model_id = id,
                                 .scheme = scheme, .block_tokens = e->p.block_size,
                                 .block_bytes = hearth_kv_pool_block_bytes(e->pool),
                                 .geometry = XXH3_64bits(geo, sizeof geo), .verify = e->p.ssd_cache_verify};
    hearth_status st = hearth_ssd_tier_open(&tp, &e->tier, err);
    if (st) return st;
    hearth_prefix_cache_set_tier(e->pc, e->tier);
    e->demote_ms = e->p.ssd_demote_idle < 0 ? 300e3 : (double)e->p.ssd_demote_idle * 1e3;
    e->info.ssd_max_bytes = e->p.ssd_cache_max > 0 ? e->p.ssd_cache_max : (int64_t)32e9;
    e->info.ssd_demote_idle = (int32_t)(e->demote_ms / 1e3);
    e->info.ssd_verify = e->p.ssd_cache_verify;
    hearth_ssd_tier_stats ts;
    hearth_ssd_tier_stats_get(e->tier, &ts);
    hearth_log(HEARTH_LOG_INFO, "ssd cache: %s, %lld blocks (%.0f MB) on disk, at most %.0f MB%s", tp.dir,
               (long long)ts.blocks, (double)ts.bytes / 1e6,
               (double)(e->p.ssd_cache_max > 0 ? e->p.ssd_cache_max : (int64_t)32e9) / 1e6,
               ts.state == HEARTH_SSD_ON ? "" : " (read-only)");
    return HEARTH_OK;
}

hearth_status hearth_engine_create(const hearth_model *m, const hearth_engine_params *p, hearth_engine **out,
                                   hearth_err *err) {
    *out = NULL;
    const hearth_hparams *hp = hearth_model_hparams(m);
    hearth_engine *e = calloc(1, sizeof *e);
    if (!e) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    e->m = m;
    e->p = *p;
    e->p_in = *p;
    if (e->p.max_step <= 0) e->p.max_step = 512;
    if (e->p.n_ctx <= 0) e->p.n_ctx = hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096;
    if (e->p.max_step > e->p.n_ctx) e->p.max_step = e->p.n_ctx;
    if (e->p.batch <= 0) e->p.batch = 8;
    if (e->p.block_size <= 0) e->p.block_size = 16;
    e->p.numerics = hearth_numerics_resolve(e->p.numerics);
    const hearth_numerics *nx = &e->p.numerics;
    hearth_status st;
    hearth_kv_scheme kv;
    if ((st = resolve_kv(e, m, &kv, err))) goto fail;
    if (hp->lin_n_v > 0 && e->p.prompt_cache != 0 && e->p.ssd_cache_dir && *e->p.ssd_cache_dir) {
        /* the disk tier stores blocks, not the state snapshots a hybrid model's prefix hit resumes from */
        hearth_log(HEARTH_LOG_WARN, "ssd cache: off for %s (the tier does not keep the linear-attention state "
                   "snapshots its prefix hits need; the prompt cache stays in RAM)",
                   hearth_arch_info_of(hp->arch)->hf_type);
        e->p.ssd_cache_dir = NULL;
    }
    if (e->p.force_wire) {
        if ((st = hearth_model_wire(m, true, err))) goto fail;
        e->wired = true;
    }
    /* the backend first: the KV pool lives in its memory */
    if (e->p.device == HEARTH_DEVICE_CUDA || (e->p.device == HEARTH_DEVICE_AUTO && hearth_cuda_device_count() > 0)) {
        hearth_err cerr = {0};
        e->be = hearth_backend_cuda_create(0, e->p.max_step, nx, &cerr);
        if (!e->be && e->p.device == HEARTH_DEVICE_CUDA) {
            st = hearth_err_set(err, cerr.code ? cerr.code : HEARTH_E_UNSUPPORTED, -1, "--device cuda: %s", cerr.msg);
            goto fail;
        }
        char why[160];
        /* the assistant drafter shares the target's backend: both must run on it */
        const hearth_model *asst = e->p.spec.kind == HEARTH_DRAFT_ASSISTANT ? e->p.spec.draft_model : NULL;
        bool ok = !e->be || hearth_fwd_supported(m, e->be, why, sizeof why);
        char awhy[128];
        if (ok && e->be && asst && !hearth_fwd_supported(asst, e->be, awhy, sizeof awhy)) {
            snprintf(why, sizeof why, "the assistant: %s", awhy);
            ok = false;
        }
        if (!ok) {
            hearth_backend_destroy(e->be);
            e->be = NULL;
            if (e->p.device == HEARTH_DEVICE_CUDA) {
                st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "--device cuda: %s", why);
                goto fail;
            }
            snprintf(cerr.msg, sizeof cerr.msg, "%s", why);
        }
        if (!e->be) hearth_log(HEARTH_LOG_WARN, "engine: not on the GPU (%s); computing on the CPU", cerr.msg);
    }
    int64_t width = hp->n_embd;
    const hearth_hparams *dh = draft_model_of(e) ? hearth_model_hparams(draft_model_of(e)) : hp;
    int64_t cands[] = {hp->n_ff, (int64_t)hp->n_head * hp->head_dim_v, /* the draft model's rows too */
                       dh->n_embd, dh->n_ff, (int64_t)dh->n_head * dh->head_dim_v};
    for (int i = 0; i < 5; i++) if (cands[i] > width) width = cands[i];
    if (!e->be) e->be = hearth_backend_cpu_create(p->n_threads, e->p.max_step, width, e->p.n_ctx, nx);
    if (!e->be) {
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory creating the backend");
        goto fail;
    }
    if (!hearth_backend_host_memory(e->be) && e->p.memory_budget > 0) { /* the KV pool lives in the GPU's memory */
        hearth_backend_info bi;
        hearth_backend_get_info(e->be, &bi);
        int64_t gpu = (int64_t)(bi.mem_free / 10 * 9);
        if (gpu < e->p.memory_budget) e->p.memory_budget = gpu;
    }
    if (nx->batch_invariant && !hearth_backend_host_memory(e->be)) {
        st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1,
                            "--batch-invariant runs on the CPU only; use --device cpu");
        goto fail;
    }
    hearth_kv_pool_params pp = {.block_size = e->p.block_size, .n_seqs = e->p.batch, .max_seq_len = e->p.n_ctx,
                                .kv = kv, .layer_kv = e->layer_kv, .swa_full = e->p.kv_swa_full,
                                .window_keep = window_keep(e), .be = hearth_backend_host_memory(e->be) ? NULL : e->be};
    if ((st = size_pool(e, m, kv, width, &pp.budget_bytes, err))) goto fail;
    pp.n_snaps = snap_count(e, m, kv, &pp.budget_bytes);
    if ((st = hearth_kv_pool_create(m, &pp, &e->pool, err))) goto fail;
    e->n_blocks = hearth_kv_pool_n_blocks(e->pool);
    e->info.n_ctx = e->p.n_ctx;
    e->info.batch = e->p.batch;
    e->info.block_size = e->p.block_size;
    e->info.n_blocks = e->n_blocks;
    e->info.max_step = e->p.max_step;
    e->info.block_bytes = (int64_t)hearth_kv_pool_block_bytes(e->pool);
    e->info.pool_bytes = (int64_t)hearth_kv_pool_bytes(e->pool);
    e->info.kv_bytes_per_token = (int64_t)hearth_kv_bytes_per_token_layers(m, kv, e->layer_kv);
    e->info.kv_layers = e->layer_kv;
    e->info.n_kv_layers = e->layer_kv ? hp->n_layer : 0;
    e->info.kv = kv;
    e->info.kv_quant = e->p.kv_quant;
    e->info.numerics = *nx;
    e->info.force_wire = e->wired;
    {
        /* the longest sequence whose KV (all but its last token) the pool holds */
        int64_t cap = 1;
        while (cap < e->p.n_ctx && hearth_kv_layout_blocks(hearth_kv_pool_layout(e->pool), e->p.block_size,
                                                           cap, e->p.max_step) <= e->n_blocks)
            cap++;
        e->info.max_request_tokens = (int32_t)cap;
        int64_t pc = e->p.prompt_cache < 0 || e->p.prompt_cache > e->info.pool_bytes ? e->info.pool_bytes
                                                                                      : e->p.prompt_cache;
        e->info.prompt_cache_bytes = pc;
    }
    e->fwd = hearth_fwd_create(m, e->be, e->p.max_step, nx);
    if (e->p.prompt_cache != 0)
        e->pc = hearth_prefix_cache_create(e->pool, e->p.prompt_cache < 0 ? SIZE_MAX : (size_t)e->p.prompt_cache);
    if (e->pc && (st = open_tier(e, m, kv, err))) goto fail;
    if (!e->pc && e->p.ssd_cache_dir && *e->p.ssd_cache_dir)
        hearth_log(HEARTH_LOG_WARN, "ssd cache: off, it needs the prompt cache (--prompt-cache 0 turns that off)");
    e->p.ssd_cache_dir = e->p.ssd_model_id = e->p.ssd_model_path = NULL;
    if ((st = open_drafter(e, m, err))) goto fail;
    hearth_sched_params sp = {.batch = e->p.batch, .max_step = e->p.max_step, .n_ctx = e->p.n_ctx,
                              .draft = e->draft, .n_draft = e->p.spec.n_draft, .draft_fixed = e->p.spec.fixed,
                              .draft_costed = !e->p.spec.fixed, .topm = e->p.topm};
    const char *topm_env = getenv("HEARTH_TOPM");
    if (topm_env && !strcmp(topm_env, "0")) sp.topm = -1;
    e->sched = e->fwd ? hearth_sched_create(m, e->fwd, e->pool, e->pc, &sp) : NULL;
    if (!e->fwd || !e->sched || (e->p.prompt_cache != 0 && !e->pc)) {
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory creating the engine");
        goto fail;
    }
    publish(e);
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    if (pthread_create(&e->thread, NULL, engine_main, e) != 0) {
        pthread_mutex_destroy(&e->mu);
        pthread_cond_destroy(&e->cv);
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "cannot start the engine thread");
        goto fail;
    }
    hearth_backend_info bi;
    hearth_backend_get_info(e->be, &bi);
    char where[160];
    if (hearth_backend_host_memory(e->be))
        snprintf(where, sizeof where, "%d threads, kernels %s", hearth_backend_cpu_threads(e->be),
                 hearth_kernels_name());
    else snprintf(where, sizeof where, "cuda on %s (%zu MiB)", bi.device, bi.mem_total >> 20);
    char nxs[128];
    hearth_numerics_describe(nx, nxs, sizeof nxs);
    hearth_log(HEARTH_LOG_INFO,
               "engine: %s, context %d, batch %d, KV %s/%s%s %zu MiB in %d blocks of %d tokens; numerics %s%s", where,
               e->p.n_ctx, e->p.batch, hearth_kv_type_name(kv.k), hearth_kv_type_name(kv.v),
               e->layer_kv ? " (layer 0; a type per layer)" : "",
               hearth_kv_pool_bytes(e->pool) >> 20,
               hearth_kv_pool_n_blocks(e->pool), e->p.block_size, nxs, e->wired ? "; weights wired" : "");
    *out = e;
    return HEARTH_OK;
fail:
    engine_free(e);
    return st;
}

/* Mark every request the engine holds (and each choice forked from one) cancelled; e->mu held. */
static void cancel_queued_and_running(hearth_engine *e) {
    for (hearth_request *r = e->head; r; r = r->next)
        for (hearth_request *c = r; c; c = c->fork_next) atomic_store(&c->cancelled, true);
}

void hearth_engine_destroy(hearth_engine *e) {
    if (!e) return;
    pthread_mutex_lock(&e->mu);
    e->stop = true;
    cancel_queued_and_running(e);
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->thread, NULL);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    engine_free(e);
}

void hearth_engine_stats_get(const hearth_engine *e, hearth_engine_stats *out) {
    int64_t *f = (int64_t *)out;
    for (int i = 0; i < N_STATS; i++) f[i] = atomic_load_explicit(&e->stats[i], memory_order_relaxed);
    if (e->tier) { /* its writer works while the engine thread sleeps */
        hearth_ssd_tier_stats ts;
        hearth_ssd_tier_stats_get(e->tier, &ts);
        out->ssd_state = ts.state;
        out->ssd_bytes = ts.bytes;
        out->ssd_blocks = ts.blocks;
        out->ssd_hits = ts.hits;
        out->ssd_misses = ts.misses;
        out->ssd_verify_failures = ts.verify_failures;
        out->ssd_writes = ts.writes;
        out->ssd_write_errors = ts.write_errors;
        out->ssd_write_skipped = ts.write_skipped;
        out->ssd_evictions = ts.evictions;
    }
}

int32_t hearth_engine_n_ctx(const hearth_engine *e) { return e->p.n_ctx; }

void hearth_engine_info_get(const hearth_engine *e, hearth_engine_info *out) { *out = e->info; }

void hearth_engine_device(const hearth_engine *e, hearth_engine_device_info *out) {
    memset(out, 0, sizeof *out);
    hearth_backend_info bi;
    hearth_backend_get_info(e->be, &bi);
    snprintf(out->backend, sizeof out->backend, "%s", hearth_backend_name(e->be));
    snprintf(out->device, sizeof out->device, "%s", bi.device);
    out->mem_total = (int64_t)bi.mem_total;
    out->mem_free = (int64_t)bi.mem_free;
    out->kv_bytes = (int64_t)hearth_kv_pool_bytes(e->pool);
}

bool hearth_engine_lora_supported(const hearth_engine *e, char *why, size_t cap) {
    return hearth_fwd_lora_supported(e->fwd, why, cap);
}

/* The checks of submit, before anything is queued. */
static hearth_status admit(hearth_engine *e, const hearth_request_params *p, hearth_err *err) {
    int32_t n_vocab = hearth_model_hparams(e->m)->n_vocab;
    if (p->n_prompt == 0) return hearth_err_set(err, HEARTH_E_INVALID, -1, "the prompt is empty");
    if (p->max_tokens <= 0) return hearth_err_set(err, HEARTH_E_INVALID, -1, "max_tokens must be positive");
    if (p->min_tokens < 0) return hearth_err_set(err, HEARTH_E_INVALID, -1, "min_tokens must not be negative");
    if (p->score_from < 0 || (p->score_from > 0 && (size_t)p->score_from >= p->n_prompt))
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "score_from must be 0 (off) or in [1, %zu) (got %d)",
                              p->n_prompt, p->score_from);
    /* admission: a request that fits the context but could never fit the pool is refused now
     * (one over the context ends with DONE/error, as documented in engine.h); the last token
     * generated is never fed back, so it needs no KV */
    int64_t need = (int64_t)p->n_prompt + p->max_tokens - 1;
    if ((int64_t)p->n_prompt + p->max_tokens <= e->p.n_ctx && need > e->info.max_request_tokens - 1)
        return hearth_err_set(err, HEARTH_E_LIMIT, -1,
                              "prompt (%zu tokens) + max_tokens (%d) needs %lld tokens of KV cache; the pool holds "
                              "%lld (%d blocks of %d tokens)",
                              p->n_prompt, p->max_tokens, (long long)need,
                              (long long)e->info.max_request_tokens - 1, e->n_blocks, e->p.block_size);
    if (p->lora) {
        char why[160];
        if (!hearth_fwd_lora_supported(e->fwd, why, sizeof why))
            return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "%s", why);
        if (p->lora->n_layer != hearth_model_hparams(e->m)->n_layer || p->lora_id == 0)
            return hearth_err_set(err, HEARTH_E_INVALID, -1, p->lora_id == 0 ? "a request with an adapter needs a "
                                  "nonzero lora_id" : "the adapter was not loaded for this model");
    }
    if (p->n_images < 0 || (p->n_images > 0 && !p->images))
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "n_images without images");
    if (p->n_images > 0 && (hearth_model_hparams(e->m)->arch != HEARTH_ARCH_GEMMA3 ||
                            !hearth_backend_host_memory(hearth_fwd_backend(e->fwd))))
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1,
                              "images need a Gemma 3 model on the CPU (this engine: %s on %s)",
                              hearth_arch_info_of(hearth_model_hparams(e->m)->arch)->hf_type,
                              hearth_backend_name(hearth_fwd_backend(e->fwd)));
    for (int32_t i = 0, end = 0; i < p->n_images; i++) {
        const hearth_image_input *im = &p->images[i];
        if (im->n <= 0 || im->pos < end || (int64_t)im->pos + im->n > (int64_t)p->n_prompt || !im->rows)
            return hearth_err_set(err, HEARTH_E_INVALID, -1,
                                  "image %d spans prompt positions [%d, %d): outside the prompt, empty, or overlapping "
                                  "the image before it", i, im->pos, im->pos + im->n);
        if (im->width != hearth_model_hparams(e->m)->n_embd)
            return hearth_err_set(err, HEARTH_E_INVALID, -1, "image %d has rows of %d floats; the model's are %d", i,
                                  im->width, hearth_model_hparams(e->m)->n_embd);
        if (im->n > e->p.max_step)
            return hearth_err_set(err, HEARTH_E_LIMIT, -1,
                                  "image %d has %d tokens; one prefill step takes at most %d (max_step)", i, im->n,
                                  e->p.max_step);
        end = im->pos + im->n;
    }
    for (size_t i = 0; i < p->n_prompt; i++)
        if (p->prompt[i] < 0 || p->prompt[i] >= n_vocab)
            return hearth_err_set(err, HEARTH_E_INVALID, (int64_t)i, "prompt token %d is outside the vocabulary",
                                  p->prompt[i]);
    return HEARTH_OK;
}

/* Queue r (with its fork_next chain) on the engine's FIFO; false when the engine is stopping. */
static bool enqueue(hearth_engine *e, hearth_request *r) {
    pthread_mutex_lock(&e->mu);
    if (e->stop) {
        pthread_mutex_unlock(&e->mu);
        return false;
    }
    if (e->tail) e->tail->next = r;
    else e->head = r;
    e->tail = r;
    pthread_cond_broadcast(&e->cv); /* flush waiters share cv */
    pthread_mutex_unlock(&e->mu);
    return true;
}

hearth_status hearth_engine_submit(hearth_engine *e, const hearth_request_params *p, hearth_request **out,
                                   hearth_err *err) {
    *out = NULL;
    hearth_status st = admit(e, p, err);
    hearth_request *r = st ? NULL : hearth_req_create(p); /* the request takes the constraint */
    if (!r) {
        hearth_cx_matcher_destroy(p->constraint);
        return st ? st : hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    }
    if (!enqueue(e, r)) {
        atomic_store(&r->refs, 1);
        hearth_req_unref(r);
        return hearth_err_set(err, HEARTH_E_CANCELLED, -1, "the engine is shutting down");
    }
    *out = r;
    return HEARTH_OK;
}

bool hearth_request_admitted(const hearth_request *req) {
    return atomic_load_explicit(&req->admitted, memory_order_relaxed);
}

void hearth_engine_cancel_all(hearth_engine *e) {
    pthread_mutex_lock(&e->mu);
    e->cancel_all = true;
    cancel_queued_and_running(e);
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

int32_t hearth_engine_cache_flush(hearth_engine *e) {
    pthread_mutex_lock(&e->mu);
    uint64_t ticket = ++e->flush_asked;
    pthread_cond_broadcast(&e->cv);
    while (e->flush_done < ticket && !e->stop) pthread_cond_wait(&e->cv, &e->mu);
    int32_t freed = e->flush_done >= ticket ? e->flush_freed : 0;
    pthread_mutex_unlock(&e->mu);
    return freed;
}

hearth_status hearth_engine_submit_n(hearth_engine *e, const hearth_request_params *p, int32_t n, hearth_request **out,
                                     hearth_err *err) {
    hearth_status st = HEARTH_OK;
    hearth_req_group *grp = NULL;
    int32_t made = 0;
    for (int32_t i = 0; i < n; i++) out[i] = NULL;
    if (n <= 0) st = hearth_err_set(err, HEARTH_E_INVALID, -1, "a group needs at least one request");
    for (int32_t i = 0; i < n && !st; i++) {
        st = admit(e, &p[i], err);
        if (!st && (p[i].n_prompt != p[0].n_prompt ||
                    memcmp(p[i].prompt, p[0].prompt, p[0].n_prompt * sizeof(int32_t))))
            st = hearth_err_set(err, HEARTH_E_INVALID, -1, "the requests of a group must have the same prompt");
    }
    if (!st && !(grp = hearth_req_group_create(n))) st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    for (; !st && made < n; made++) { /* each request takes its constraint */
        if (!(out[made] = hearth_req_create(&p[made]))) {
            st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
            break;
        }
        out[made]->grp = grp;
        if (made > 0) out[made - 1]->fork_next = out[made];
    }
    if (!st && !enqueue(e, out[0])) st = hearth_err_set(err, HEARTH_E_CANCELLED, -1, "the engine is shutting down");
    if (!st) return HEARTH_OK;
    for (int32_t i = 0; i < n; i++) { /* made ones own their constraint and a group reference */
        if (i < made) {
            atomic_store(&out[i]->refs, 1);
            hearth_req_unref(out[i]);
        } else {
            hearth_cx_matcher_destroy(p[i].constraint);
            if (grp) hearth_req_group_unref(grp);
        }
        out[i] = NULL;
    }
    return st;
}

void hearth_engine_cancel(hearth_engine *e, hearth_request *req) {
    (void)e;
    if (req) atomic_store_explicit(&req->cancelled, true, memory_order_relaxed);
}

hearth_status hearth_request_next(hearth_request *r, hearth_event *ev, int timeout_ms) {
    struct timespec deadline;
    if (timeout_ms >= 0) {
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += timeout_ms / 1000;
        deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&r->mu);
    while (r->head == r->n_events && !r->done) {
        if (timeout_ms < 0) pthread_cond_wait(&r->cv, &r->mu);
        else if (timeout_ms == 0 || pthread_cond_timedwait(&r->cv, &r->mu, &deadline) == ETIMEDOUT) {
            pthread_mutex_unlock(&r->mu);
            return HEARTH_E_TIMEOUT;
        }
    }
    if (r->head < r->n_events) *ev = r->events[r->head++];
    else *ev = r->done_ev;
    pthread_mutex_unlock(&r->mu);
    return HEARTH_OK;
}

/* The first unread event of r, without waiting. */
static bool try_next(hearth_request *r, hearth_event *ev) {
    pthread_mutex_lock(&r->mu);
    bool got = r->head < r->n_events || r->done;
    if (r->head < r->n_events) *ev = r->events[r->head++];
    else if (r->done) *ev = r->done_ev;
    pthread_mutex_unlock(&r->mu);
    return got;
}

hearth_status hearth_request_next_any(hearth_request *const *reqs, int32_t n, int32_t *which, hearth_event *ev,
                                      int timeout_ms) {
    hearth_req_group *grp = NULL;
    int32_t n_live = 0, only = -1;
    for (int32_t i = 0; i < n; i++) {
        if (!reqs[i]) continue;
        if (n_live++ && reqs[i]->grp != grp) return HEARTH_E_INVALID;
        grp = reqs[i]->grp;
        only = i;
    }
    if (n_live == 0) return HEARTH_E_INVALID;
    if (n_live == 1 || !grp) { /* one request: its own wait */
        if (n_live > 1) return HEARTH_E_INVALID;
        hearth_status st = hearth_request_next(reqs[only], ev, timeout_ms);
        if (!st) *which = only;
        return st;
    }
    struct timespec deadline;
    if (timeout_ms > 0) {
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += timeout_ms / 1000;
        deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
    }
    int32_t start = *which;
    for (;;) {
        pthread_mutex_lock(&grp->mu);
        uint64_t seen = grp->n_events; /* before looking: an event pushed after changes it */
        pthread_mutex_unlock(&grp->mu);
        for (int32_t k = 1; k <= n; k++) {
            int32_t i = (int32_t)(((int64_t)start + k) % n);
            if (i < 0) i += n;
            if (reqs[i] && try_next(reqs[i], ev)) {
                *which = i;
                return HEARTH_OK;
            }
        }
        if (timeout_ms == 0) return HEARTH_E_TIMEOUT;
        pthread_mutex_lock(&grp->mu);
        bool timed_out = false;
        while (grp->n_events == seen && !timed_out) {
            if (timeout_ms < 0) pthread_cond_wait(&grp->cv, &grp->mu);
            else timed_out = pthread_cond_timedwait(&grp->cv, &grp->mu, &deadline) == ETIMEDOUT;
        }
        pthread_mutex_unlock(&grp->mu);
        if (timed_out) return HEARTH_E_TIMEOUT;
    }
}

void hearth_request_release(hearth_request *req) {
    if (!req) return;
    atomic_store_explicit(&req->cancelled, true, memory_order_relaxed);
    hearth_req_unref(req);
}
