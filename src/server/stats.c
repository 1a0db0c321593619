/*
 * stats.c - counters and histograms behind /stats and /metrics (see stats.h).
 *
 * A histogram keeps per-bucket counts (not cumulative: one atomic add per observation) plus
 * the count and the sum in microseconds; the Prometheus writer accumulates the buckets into
 * the cumulative `le` series the format asks for. /stats reports means and bucket-estimated
 * p50/p95 (the upper bound of the bucket that holds the quantile).
 */
#include "server/stats.h"
#include "engine/engine.h"
#include "server/engines.h"
#include "server/conns.h"

#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N_BUCKETS 14

typedef struct {
    const double   *le;                  /* [N_BUCKETS - 1] upper bounds, seconds; last is +Inf */
    _Atomic int64_t n[N_BUCKETS];
    _Atomic int64_t count, sum_us;
} histo;

static const double ttft_le[N_BUCKETS - 1] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
static const double itl_le[N_BUCKETS - 1] = {0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08,
                                             0.16, 0.32, 0.64, 1.28, 2.5, 5};

/* Status classes per endpoint, enough to alert on: 2xx, 4xx, 5xx, and requests whose client
 * went away before its answer was complete (not the server's failure: a closed tab). */
enum { CLS_2XX, CLS_4XX, CLS_5XX, CLS_CANCELLED, CLS_COUNT };

struct hearth_stats {
    _Atomic int64_t requests[HEARTH_EP_COUNT][CLS_COUNT];
    _Atomic int64_t active;
    _Atomic int64_t gen[HEARTH_GEN_COUNT];
    _Atomic int64_t gen_active;
    _Atomic int64_t prompt_tokens, completion_tokens;
    histo           ttft, itl;
};

static const char *const ep_name[HEARTH_EP_COUNT] = {"chat_completions", "completions", "models", "index",
                                                     "health", "stats", "metrics", "messages", "responses",
                                                     "other"};
static const char *const cls_name[CLS_COUNT] = {"2xx", "4xx", "5xx", "cancelled"};
static const char *const gen_name[HEARTH_GEN_COUNT] = {"completed", "cancelled", "failed"};

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define ADD(x, v) atomic_fetch_add_explicit(&(x), (v), memory_order_relaxed)

hearth_stats *hearth_stats_create(void) {
    hearth_stats *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->ttft.le = ttft_le;
    s->itl.le = itl_le;
    return s;
}

void hearth_stats_destroy(hearth_stats *s) { free(s); }

void hearth_stats_request_begin(hearth_stats *s) { ADD(s->active, 1); }

void hearth_stats_request_end(hearth_stats *s, hearth_endpoint ep, int http) {
    ADD(s->active, -1);
    if ((unsigned)ep >= HEARTH_EP_COUNT) ep = HEARTH_EP_OTHER;
    int cls = http == HEARTH_HTTP_CANCELLED ? CLS_CANCELLED
            : http >= 500 || http <= 0  ? CLS_5XX
            : http >= 400               ? CLS_4XX
                                        : CLS_2XX;
    ADD(s->requests[ep][cls], 1);
}

void hearth_stats_generation_begin(hearth_stats *s) { ADD(s->gen_active, 1); }

void hearth_stats_generation(hearth_stats *s, hearth_gen_outcome how, int64_t n_prompt, int64_t n_completion) {
    ADD(s->gen_active, -1);
    ADD(s->gen[how], 1);
    ADD(s->prompt_tokens, n_prompt);
    ADD(s->completion_tokens, n_completion);
}

static void observe(histo *h, double ms) {
    double sec = ms / 1e3;
    int b = 0;
    while (b < N_BUCKETS - 1 && sec > h->le[b]) b++;
    ADD(h->n[b], 1);
    ADD(h->count, 1);
    ADD(h->sum_us, (int64_t)llround(ms * 1e3));
}

void hearth_stats_ttft(hearth_stats *s, double ms) { observe(&s->ttft, ms); }
void hearth_stats_itl(hearth_stats *s, double ms) { observe(&s->itl, ms); }

int64_t hearth_stats_n_active(const hearth_stats *s) { return LD(s->active); }

int64_t hearth_stats_n_cancelled(const hearth_stats *s) { return LD(s->gen[HEARTH_GEN_CANCELLED]); }

/* Upper bound (ms) of the bucket holding quantile q; the last finite bound for +Inf. */
static double quantile_ms(const histo *h, double q) {
    int64_t total = LD(h->count), acc = 0;
    if (total == 0) return 0;
    for (int b = 0; b < N_BUCKETS; b++) {
        acc += LD(h->n[b]);
        if ((double)acc >= q * (double)total) return h->le[b < N_BUCKETS - 1 ? b : N_BUCKETS - 2] * 1e3;
    }
    return h->le[N_BUCKETS - 2] * 1e3;
}

static void histo_json(hearth_jw *w, const char *key, const histo *h) {
    int64_t n = LD(h->count);
    hearth_jw_key(w, key);
    hearth_jw_obj(w);
    hearth_jw_key(w, "count");
    hearth_jw_int(w, n);
    hearth_jw_key(w, "mean");
    hearth_jw_num(w, n ? (double)LD(h->sum_us) / 1e3 / (double)n : 0);
    hearth_jw_key(w, "p50_le");
    hearth_jw_num(w, quantile_ms(h, 0.5));
    hearth_jw_key(w, "p95_le");
    hearth_jw_num(w, quantile_ms(h, 0.95));
    hearth_jw_obj_end(w);
}

static void kv(hearth_jw *w, const char *key, int64_t v) {
    hearth_jw_key(w, key);
    hearth_jw_int(w, v);
}

/* The engine's scheduler, prefix cache and pool, and how they were sized. */
static void engine_json(const hearth_engine *e, hearth_jw *w) {
    hearth_engine_stats st;
    hearth_engine_info in;
    hearth_engine_stats_get(e, &st);
    hearth_engine_info_get(e, &in);
    hearth_jw_key(w, "engine");
    hearth_jw_obj(w);
    kv(w, "running", st.running);
    kv(w, "waiting", st.waiting);
    kv(w, "preemptions", st.preemptions);
    kv(w, "batch", in.batch);
    kv(w, "steps", st.steps);
    kv(w, "step_tokens", st.step_tokens);
    hearth_jw_key(w, "tokens_per_step");
    hearth_jw_num(w, st.steps ? (double)st.step_tokens / (double)st.steps : 0);
    hearth_jw_obj_end(w);

    /* the arithmetic and its A/B switches (backend/numerics.h) */
    hearth_jw_key(w, "numerics");
    hearth_jw_obj(w);
    hearth_jw_key(w, "tier");
    hearth_jw_cstr(w, hearth_numerics_tier_name(in.numerics.tier));
    hearth_jw_key(w, "compiled_decode");
    hearth_jw_bool(w, !in.numerics.no_compiled_decode);
    hearth_jw_key(w, "fused_sdpa");
    hearth_jw_bool(w, !in.numerics.no_fused_sdpa);
    hearth_jw_key(w, "compiled_activations");
    hearth_jw_bool(w, !in.numerics.no_compiled_activations);
    hearth_jw_key(w, "force_wire");
    hearth_jw_bool(w, in.force_wire);
    hearth_jw_key(w, "kv_type");
    hearth_jw_cstr(w, hearth_kv_type_name(in.kv.k));
    hearth_jw_key(w, "kv_type_v");
    hearth_jw_cstr(w, hearth_kv_type_name(in.kv.v));
    hearth_jw_key(w, "kv_quant");
    char kvq[32];
    hearth_kv_quant_name(&in.kv_quant, kvq, sizeof kvq);
    hearth_jw_cstr(w, kvq);
    if (in.kv_layers) { /* a per-layer scheme: each layer's types, "K" or "K/V" */
        hearth_jw_key(w, "kv_layers");
        hearth_jw_arr(w);
        for (int32_t il = 0; il < in.n_kv_layers; il++) {
            char t[24];
            hearth_kv_scheme s = in.kv_layers[il];
            if (s.k == s.v) snprintf(t, sizeof t, "%s", hearth_kv_type_name(s.k));
            else snprintf(t, sizeof t, "%s/%s", hearth_kv_type_name(s.k), hearth_kv_type_name(s.v));
            hearth_jw_cstr(w, t);
        }
        hearth_jw_arr_end(w);
    }
    hearth_jw_obj_end(w);

    hearth_jw_key(w, "prompt_cache");
    hearth_jw_obj(w);
    hearth_jw_key(w, "enabled");
    hearth_jw_bool(w, in.prompt_cache_bytes > 0);
    kv(w, "hits", st.cache_hits);
    kv(w, "misses", st.cache_misses);
    hearth_jw_key(w, "hit_rate");
    hearth_jw_num(w, st.cache_hits + st.cache_misses
                         ? (double)st.cache_hits / (double)(st.cache_hits + st.cache_misses) : 0);
    kv(w, "hit_tokens", st.cache_hit_tokens);
    kv(w, "query_tokens", st.cache_query_tokens);
    kv(w, "cached_blocks", st.blocks_cached);
    kv(w, "cached_bytes", st.blocks_cached * in.block_bytes);
    kv(w, "evictable_blocks", st.blocks_evictable);
    kv(w, "evictions", st.cache_evictions);
    kv(w, "cap_bytes", in.prompt_cache_bytes);
    kv(w, "state_snapshots", in.n_snaps); /* hybrid models: what a prefix hit resumes from */
    kv(w, "state_snapshot_bytes", in.snap_bytes);
    hearth_jw_obj_end(w);

    /* the prompt cache's disk tier (docs/engine.md "SSD tier") */
    hearth_jw_key(w, "ssd_cache");
    hearth_jw_obj(w);
    hearth_jw_key(w, "enabled");
    hearth_jw_bool(w, in.ssd_max_bytes > 0);
    hearth_jw_key(w, "state");
    hearth_jw_cstr(w, st.ssd_state == 1 ? "on" : st.ssd_state == 2 ? "read_only" : "off");
    kv(w, "max_bytes", in.ssd_max_bytes);
    kv(w, "demote_idle_s", in.ssd_demote_idle);
    hearth_jw_key(w, "verify");
    hearth_jw_bool(w, in.ssd_verify);
    kv(w, "bytes", st.ssd_bytes);
    kv(w, "blocks", st.ssd_blocks);
    kv(w, "hits", st.ssd_hits);
    kv(w, "misses", st.ssd_misses);
    kv(w, "restores", st.ssd_restores);
    kv(w, "verify_failures", st.ssd_verify_failures);
    kv(w, "demotions", st.ssd_demotions);
    kv(w, "writes", st.ssd_writes);
    kv(w, "write_errors", st.ssd_write_errors);
    kv(w, "write_skipped", st.ssd_write_skipped);
    kv(w, "evictions", st.ssd_evictions);
    hearth_jw_obj_end(w);

    /* speculative decoding (docs/engine.md "Speculative decoding") */
    hearth_jw_key(w, "speculative");
    hearth_jw_obj(w);
    hearth_jw_key(w, "enabled");
    hearth_jw_bool(w, in.spec_kind[0] != 0);
    hearth_jw_key(w, "kind");
    if (in.spec_kind[0]) hearth_jw_cstr(w, in.spec_kind);
    else hearth_jw_null(w);
    kv(w, "num_draft_tokens", in.spec_kind[0] ? in.spec.n_draft : 0);
    kv(w, "rounds", st.spec_rounds);
    kv(w, "drafted", st.spec_drafted);
    kv(w, "accepted", st.spec_accepted);
    hearth_jw_key(w, "acceptance_rate");
    hearth_jw_num(w, st.spec_drafted ? (double)st.spec_accepted / (double)st.spec_drafted : 0);
    hearth_jw_key(w, "mean_accepted_length");
    hearth_jw_num(w, st.spec_rounds ? (double)st.spec_accepted / (double)st.spec_rounds : 0);
    hearth_jw_obj_end(w);

    /* sampling on the backend (docs/cuda.md "Sampling on the GPU") */
    hearth_jw_key(w, "sampling");
    hearth_jw_obj(w);
    kv(w, "on_backend_tokens", st.topm_rows);
    kv(w, "on_backend_fell_short", st.topm_short);
    hearth_jw_obj_end(w);

    hearth_jw_key(w, "kv_pool");
    hearth_jw_obj(w);
    kv(w, "blocks_total", st.blocks_total);
    kv(w, "blocks_free", st.blocks_free);
    kv(w, "blocks_used", st.blocks_total - st.blocks_free);
    kv(w, "block_tokens", in.block_size);
    kv(w, "block_bytes", in.block_bytes);
    kv(w, "bytes", in.pool_bytes);
    kv(w, "kv_bytes_per_token", in.kv_bytes_per_token);
    hearth_jw_obj_end(w);

    hearth_jw_key(w, "memory");
    hearth_jw_obj(w);
    kv(w, "budget_bytes", in.memory_budget);
    kv(w, "weights_bytes", in.weight_bytes);
    kv(w, "kv_bytes", in.pool_bytes);
    kv(w, "transient_bytes", in.transient_bytes);
    kv(w, "max_request_tokens", in.max_request_tokens);
    hearth_jw_obj_end(w);
}

void hearth_stats_json(const hearth_stats *s, const hearth_stats_info *info, hearth_jw *w) {
    hearth_jw_obj(w);
    hearth_jw_key(w, "server");
    hearth_jw_obj(w);
    hearth_jw_key(w, "owner");
    hearth_jw_cstr(w, "hearth");
    hearth_jw_key(w, "version");
    hearth_jw_cstr(w, info->version);
    hearth_jw_key(w, "model");
    hearth_jw_cstr(w, info->model);
    hearth_jw_key(w, "host");
    hearth_jw_cstr(w, info->host);
    hearth_jw_key(w, "port");
    hearth_jw_int(w, info->port);
    hearth_jw_key(w, "started_at");
    hearth_jw_int(w, info->started_at);
    hearth_jw_key(w, "uptime_s");
    hearth_jw_int(w, (int64_t)time(NULL) - info->started_at);
    hearth_jw_key(w, "n_ctx");
    hearth_jw_int(w, info->n_ctx);
    hearth_jw_obj_end(w);

    if (info->engine) { /* where the model runs: the CPU or a GPU, its memory, the KV pool in it */
        hearth_engine_device_info d;
        hearth_engine_device(info->engine, &d);
        hearth_jw_key(w, "device");
        hearth_jw_obj(w);
        hearth_jw_key(w, "backend");
        hearth_jw_cstr(w, d.backend);
        hearth_jw_key(w, "name");
        hearth_jw_cstr(w, d.device);
        hearth_jw_key(w, "memory_total_bytes");
        hearth_jw_int(w, d.mem_total);
        hearth_jw_key(w, "memory_free_bytes");
        hearth_jw_int(w, d.mem_free);
        hearth_jw_key(w, "kv_pool_bytes");
        hearth_jw_int(w, d.kv_bytes);
        hearth_jw_obj_end(w);
    }

    hearth_jw_key(w, "requests");
    hearth_jw_obj(w);
    hearth_jw_key(w, "active");
    hearth_jw_int(w, LD(s->active));
    int64_t total = 0;
    hearth_jw_key(w, "by_endpoint");
    hearth_jw_obj(w);
    for (int ep = 0; ep < HEARTH_EP_COUNT; ep++) {
        hearth_jw_key(w, ep_name[ep]);
        hearth_jw_obj(w);
        for (int c = 0; c < CLS_COUNT; c++) {
            int64_t v = LD(s->requests[ep][c]);
            total += v;
            hearth_jw_key(w, cls_name[c]);
            hearth_jw_int(w, v);
        }
        hearth_jw_obj_end(w);
    }
    hearth_jw_obj_end(w);
    hearth_jw_key(w, "total");
    hearth_jw_int(w, total);
    hearth_jw_obj_end(w);

    if (info->conns) { /* the connection guard (conns.h) */
        hearth_conns_counts cc;
        hearth_conns_get(info->conns, &cc);
        hearth_jw_key(w, "connections");
        hearth_jw_obj(w);
        hearth_jw_key(w, "open");
        hearth_jw_int(w, cc.open);
        hearth_jw_key(w, "timed_out");
        hearth_jw_int(w, cc.timed_out);
        hearth_jw_key(w, "evicted");
        hearth_jw_int(w, cc.evicted);
        hearth_jw_key(w, "refused");
        hearth_jw_int(w, cc.refused);
        hearth_jw_obj_end(w);
    }

    hearth_jw_key(w, "generations");
    hearth_jw_obj(w);
    hearth_jw_key(w, "active");
    hearth_jw_int(w, LD(s->gen_active));
    for (int g = 0; g < HEARTH_GEN_COUNT; g++) {
        hearth_jw_key(w, gen_name[g]);
        hearth_jw_int(w, LD(s->gen[g]));
    }
    hearth_jw_obj_end(w);

    hearth_jw_key(w, "tokens");
    hearth_jw_obj(w);
    hearth_jw_key(w, "prompt");
    hearth_jw_int(w, LD(s->prompt_tokens));
    hearth_jw_key(w, "completion");
    hearth_jw_int(w, LD(s->completion_tokens));
    hearth_jw_obj_end(w);

    hearth_jw_key(w, "latency_ms");
    hearth_jw_obj(w);
    histo_json(w, "ttft", &s->ttft);
    histo_json(w, "inter_token", &s->itl);
    hearth_jw_obj_end(w);

    if (info->engine) engine_json(info->engine, w);
    if (info->engines) hearth_engines_json(info->engines, w);
    hearth_jw_obj_end(w);
}

static void line(hearth_jw *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(hearth_jw *w, const char *fmt, ...) {
    char b[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    if (n > 0) hearth_jw_raw(w, b, (size_t)n < sizeof b ? (size_t)n : sizeof b - 1);
}

/* A label value: backslash, quote and newline escaped as the text format asks. */
static void label(hearth_jw *w, const char *v) {
    for (const char *p = v ? v : ""; *p; p++) {
        if (*p == '\\' || *p == '"') hearth_jw_raw(w, "\\", 1);
        if (*p == '\n') hearth_jw_raw(w, "\\n", 2);
        else hearth_jw_raw(w, p, 1);
    }
}

static void histo_prom(hearth_jw *w, const char *name, const char *help, const histo *h) {
    line(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    int64_t acc = 0;
    for (int b = 0; b < N_BUCKETS; b++) {
        acc += LD(h->n[b]);
        if (b < N_BUCKETS - 1) line(w, "%s_bucket{le=\"%g\"} %lld\n", name, h->le[b], (long long)acc);
        else line(w, "%s_bucket{le=\"+Inf\"} %lld\n", name, (long long)acc);
    }
    line(w, "%s_sum %.6f\n%s_count %lld\n", name, (double)LD(h->sum_us) / 1e6, name, (long long)LD(h->count));
}

static void metric(hearth_jw *w, const char *name, const char *type, const char *help, double v) {
    line(w, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type, name, v);
}

/* A counter with the speculative decoding's kind as its label. */
static void spec_counter(hearth_jw *w, const char *name, const char *help, const char *kind, int64_t v) {
    line(w, "# HELP %s %s\n# TYPE %s counter\n%s{kind=\"", name, help, name, name);
    label(w, kind);
    line(w, "\"} %lld\n", (long long)v);
}

static void engine_prom(const hearth_engine *e, hearth_jw *w) {
    hearth_engine_stats st;
    hearth_engine_info in;
    hearth_engine_stats_get(e, &st);
    hearth_engine_info_get(e, &in);
    metric(w, "hearth_engine_running", "gauge", "Sequences in the running batch.", (double)st.running);
    metric(w, "hearth_engine_waiting", "gauge", "Requests queued for admission.", (double)st.waiting);
    metric(w, "hearth_engine_preemptions_total", "counter", "Sequences preempted (recomputed later).",
           (double)st.preemptions);
    metric(w, "hearth_engine_steps_total", "counter", "Forward steps run.", (double)st.steps);
    metric(w, "hearth_engine_step_tokens_total", "counter", "Tokens carried by forward steps.",
           (double)st.step_tokens);
    metric(w, "hearth_prompt_cache_hits_total", "counter", "Admitted requests that reused a cached prefix.",
           (double)st.cache_hits);
    metric(w, "hearth_prompt_cache_misses_total", "counter", "Admitted requests with no cached prefix.",
           (double)st.cache_misses);
    metric(w, "hearth_prompt_cache_hit_tokens_total", "counter", "Prompt tokens served from the prefix cache.",
           (double)st.cache_hit_tokens);
    metric(w, "hearth_prompt_cache_bytes", "gauge", "KV bytes of blocks the prefix cache indexes.",
           (double)(st.blocks_cached * in.block_bytes));
    metric(w, "hearth_prompt_cache_evictions_total", "counter", "Cached blocks evicted.",
           (double)st.cache_evictions);
    if (in.ssd_max_bytes > 0) {
        metric(w, "hearth_ssd_cache_state", "gauge", "The SSD tier: 1 on, 2 read-only (RAM cache only).",
               (double)st.ssd_state);
        metric(w, "hearth_ssd_cache_bytes", "gauge", "Bytes of KV block files in the SSD tier.",
               (double)st.ssd_bytes);
        metric(w, "hearth_ssd_cache_blocks", "gauge", "KV block files in the SSD tier.", (double)st.ssd_blocks);
        metric(w, "hearth_ssd_cache_hits_total", "counter", "Prefix-cache RAM misses found in the SSD tier.",
               (double)st.ssd_hits);
        metric(w, "hearth_ssd_cache_misses_total", "counter", "Prefix-cache RAM misses not in the SSD tier.",
               (double)st.ssd_misses);
        metric(w, "hearth_ssd_cache_restores_total", "counter", "Blocks restored from the SSD tier.",
               (double)st.ssd_restores);
        metric(w, "hearth_ssd_cache_verify_failures_total", "counter",
               "Stored blocks dropped: checksum, truncation, model or scheme.", (double)st.ssd_verify_failures);
        metric(w, "hearth_ssd_cache_demotions_total", "counter", "Idle cached blocks moved to the SSD tier.",
               (double)st.ssd_demotions);
        metric(w, "hearth_ssd_cache_writes_total", "counter", "Blocks written to the SSD tier.",
               (double)st.ssd_writes);
        metric(w, "hearth_ssd_cache_write_errors_total", "counter", "Writes to the SSD tier that failed.",
               (double)st.ssd_write_errors);
        metric(w, "hearth_ssd_cache_write_skipped_total", "counter",
               "Evicted blocks not written (the write queue was full).", (double)st.ssd_write_skipped);
        metric(w, "hearth_ssd_cache_evictions_total", "counter", "Block files deleted past --ssd-cache-max.",
               (double)st.ssd_evictions);
    }
    if (in.spec_kind[0]) {
        spec_counter(w, "hearth_spec_drafted_tokens_total", "Draft tokens verified (speculative decoding).",
                     in.spec_kind, st.spec_drafted);
        spec_counter(w, "hearth_spec_accepted_tokens_total", "Draft tokens accepted.", in.spec_kind,
                     st.spec_accepted);
        spec_counter(w, "hearth_spec_rounds_total", "Steps of a sequence that verified drafts.", in.spec_kind,
                     st.spec_rounds);
    }
    metric(w, "hearth_sampled_on_backend_tokens_total", "counter",
           "Tokens sampled from a row summary made on the backend (the GPU), not from a copied logits row.",
           (double)st.topm_rows);
    metric(w, "hearth_sampled_on_backend_fell_short_total", "counter",
           "Row summaries that could not decide (their logits row was copied after all).", (double)st.topm_short);
    metric(w, "hearth_kv_blocks_used", "gauge", "KV pool blocks in use (sequences or cache).",
           (double)(st.blocks_total - st.blocks_free));
    metric(w, "hearth_kv_blocks_free", "gauge", "KV pool blocks free.", (double)st.blocks_free);
    metric(w, "hearth_kv_pool_bytes", "gauge", "Bytes of the KV block pool.", (double)in.pool_bytes);
    metric(w, "hearth_memory_budget_bytes", "gauge", "Memory budget for weights, KV and transients.",
           (double)in.memory_budget);
    metric(w, "hearth_max_request_tokens", "gauge", "Largest prompt + max_tokens one request may have.",
           (double)in.max_request_tokens);
}

void hearth_stats_prometheus(const hearth_stats *s, const hearth_stats_info *info, hearth_jw *w) {
    line(w, "# HELP hearth_info Build and model of this server.\n# TYPE hearth_info gauge\n");
    hearth_jw_raw(w, "hearth_info{version=\"", 21);
    label(w, info->version);
    hearth_jw_raw(w, "\",model=\"", 9);
    label(w, info->model);
    line(w, "\"} 1\n");
    line(w, "# HELP hearth_start_time_seconds Unix time the server started.\n"
            "# TYPE hearth_start_time_seconds gauge\nhearth_start_time_seconds %lld\n",
         (long long)info->started_at);
    line(w, "# HELP hearth_requests_total HTTP requests by endpoint and status class (cancelled: the client "
            "went away first).\n"
            "# TYPE hearth_requests_total counter\n");
    for (int ep = 0; ep < HEARTH_EP_COUNT; ep++)
        for (int c = 0; c < CLS_COUNT; c++)
            line(w, "hearth_requests_total{endpoint=\"%s\",code=\"%s\"} %lld\n", ep_name[ep], cls_name[c],
                 (long long)LD(s->requests[ep][c]));
    line(w, "# HELP hearth_requests_active HTTP requests being served.\n# TYPE hearth_requests_active gauge\n"
            "hearth_requests_active %lld\n", (long long)LD(s->active));
    if (info->conns) {
        hearth_conns_counts cc;
        hearth_conns_get(info->conns, &cc);
        metric(w, "hearth_connections_open", "gauge", "TCP connections open.", (double)cc.open);
        line(w, "# HELP hearth_connections_closed_total Connections the server closed, by reason.\n"
                "# TYPE hearth_connections_closed_total counter\n"
                "hearth_connections_closed_total{reason=\"timeout\"} %lld\n"
                "hearth_connections_closed_total{reason=\"evicted\"} %lld\n",
             (long long)cc.timed_out, (long long)cc.evicted);
        metric(w, "hearth_connections_refused_total", "counter", "Requests answered 503 at a connection cap.",
               (double)cc.refused);
    }
    line(w, "# HELP hearth_generations_total Generations by outcome.\n# TYPE hearth_generations_total counter\n");
    for (int g = 0; g < HEARTH_GEN_COUNT; g++)
        line(w, "hearth_generations_total{outcome=\"%s\"} %lld\n", gen_name[g], (long long)LD(s->gen[g]));
    line(w, "# HELP hearth_generations_active Generations queued or running.\n"
            "# TYPE hearth_generations_active gauge\nhearth_generations_active %lld\n",
         (long long)LD(s->gen_active));
    line(w, "# HELP hearth_prompt_tokens_total Prompt tokens of finished generations.\n"
            "# TYPE hearth_prompt_tokens_total counter\nhearth_prompt_tokens_total %lld\n",
         (long long)LD(s->prompt_tokens));
    line(w, "# HELP hearth_completion_tokens_total Generated tokens.\n"
            "# TYPE hearth_completion_tokens_total counter\nhearth_completion_tokens_total %lld\n",
         (long long)LD(s->completion_tokens));
    histo_prom(w, "hearth_time_to_first_token_seconds", "Time from a complete request to its first token.",
               &s->ttft);
    histo_prom(w, "hearth_inter_token_latency_seconds", "Time between consecutive tokens of a generation.",
               &s->itl);
    line(w, "# HELP hearth_context_tokens Context length of the served model.\n"
            "# TYPE hearth_context_tokens gauge\nhearth_context_tokens %d\n", info->n_ctx);
    if (info->engine) engine_prom(info->engine, w);
}
