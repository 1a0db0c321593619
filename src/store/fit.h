/*
 * fit.h - the memory contract: will a model run here, at what context, how fast?
 *
 *   weights    the tensor bytes of the file (mapped read-only; all of it is resident once a
 *              forward pass has run)
 *   kv         kv_bytes_per_token x ctx, where sliding-window layers hold at most n_swa
 *              positions: (kv - kv_swa) x ctx + kv_swa x min(ctx, n_swa)   (f16 K and V)
 *   transient  the forward scratch of one prefill chunk (min(ctx, 512) tokens of f32
 *              activations, store/facts.h act_bytes_per_token) + one row of f32 logits, plus a
 *              fixed runtime allowance (tokenizer, threads, allocator): 32 MiB + 64 B per vocab
 *              entry
 *   total      weights + kv + transient, against a budget of 0.75 x RAM (the smaller of
 *              MemTotal and the cgroup's memory.max) unless one is given.
 *
 * The largest safe context is the largest ctx <= the training context whose total fits.
 * Decode speed is bounded by memory bandwidth: every token reads the weights once (not the
 * embedding table when the output matrix is separate) and the KV cache up to its position;
 *   tok/s = 0.82 x bandwidth / (weight_read_bytes + kv(ctx / 2))
 * i.e. at the middle of a context of ctx tokens; 0.82 is the share of the measured read
 * bandwidth a decode step achieves (mlx-bun's figure; see the report in hearth fit).
 *
 * Bandwidth is measured once with a STREAM-style read (store/membw.c) and cached.
 * Pure arithmetic; any thread.
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "store/facts.h"

#define HEARTH_FIT_BUDGET_SHARE 0.75
#define HEARTH_FIT_DECODE_EFFICIENCY 0.82
#define HEARTH_FIT_PREFILL_CHUNK 512

typedef struct {
    int32_t ctx;            /* tokens; <= 0: min(training context, 4096), the engine's default */
    int64_t budget_bytes;   /* <= 0: HEARTH_FIT_BUDGET_SHARE x hearth_fit_ram_bytes() */
    double  bw_bytes_per_s; /* measured read bandwidth; <= 0: no speed prediction */
} hearth_fit_params;

typedef struct {
    int32_t ctx;             /* the context judged */
    int64_t weights_bytes, kv_bytes, transient_bytes, total_bytes, budget_bytes;
    bool    fits;
    int32_t max_ctx;         /* largest context that fits (<= training context); 0: none */
    int64_t read_bytes_per_token; /* decode: weights read + KV at ctx / 2 */
    double  decode_tok_s;    /* predicted; 0 without a bandwidth */
} hearth_fit;

/* KV bytes for ctx tokens, sliding-window layers capped at their window. */
int64_t hearth_fit_kv_bytes(const hearth_model_facts *f, int64_t ctx);
/* Scratch and runtime allowance for a context of ctx tokens. */
int64_t hearth_fit_transient_bytes(const hearth_model_facts *f, int64_t ctx);
/* Judge f under p. */
hearth_fit hearth_fit_compute(const hearth_model_facts *f, const hearth_fit_params *p);

/* Physical memory: min(MemTotal, cgroup memory.max); 0 when unknown. */
int64_t hearth_fit_ram_bytes(void);

/* ---- memory bandwidth (membw.c) ----
 * Measured by reading a 256 MiB buffer (8x a large L3) with every CPU, summing 64-bit words
 * (four independent accumulators per thread): the best of 5 passes after a warm-up pass that
 * also faults the pages in. Cached in ${XDG_CACHE_HOME:-~/.cache}/hearth/membw as key=value
 * lines with the date; re-measured when the file is missing or malformed, older than 30 days,
 * or written for another CPU count. */
typedef struct {
    double  bytes_per_s;
    int     n_threads;
    int64_t buffer_bytes;
    char    date[16];   /* YYYY-MM-DD of the measurement */
    bool    from_cache;
    char    path[4096]; /* the cache file */
} hearth_membw;

/* The cached figure, or a fresh measurement (also when remeasure). Takes about a second when
 * it measures. */
hearth_status hearth_membw_get(bool remeasure, hearth_membw *out, hearth_err *err);
/* The cached figure only, never measuring (for callers that must not stall, such as the
 * server's /library): false when there is no valid cache file. */
bool          hearth_membw_cached(hearth_membw *out);
/* One measurement: n_threads (<= 0: all CPUs) reading buffer_bytes; bytes/s, 0 on failure. */
double        hearth_membw_measure(int n_threads, int64_t buffer_bytes);
