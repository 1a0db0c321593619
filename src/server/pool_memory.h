/*
 * pool_memory.h - what a model of `serve --isolate --model-pool N` will hold in memory, for the
 * pool's admission by memory (engines.h): the estimate before its engine child starts.
 *
 * The figures are `hearth fit`'s (store/fit.h), read from the model's files without loading
 * it: the weights, the transients (one prefill chunk, logits, the runtime allowance) and the
 * KV pool. A pooled child's KV pool is bounded, so that the sum over the resident children
 * means something: the children's --kv-budget when one is given, else one full context at the
 * children's --ctx plus one step (512 tokens) of slack for the block layout; the child is then
 * started with that --kv-budget. An embedding model has no KV pool.
 *
 * Plain data and a pure function of the model's files; any thread.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/engines.h"

typedef struct {
    int32_t ctx;       /* the children's --ctx; <= 0: the engine's default, min(training context, 4096) */
    int64_t kv_budget; /* the children's --kv-budget in bytes; <= 0: none given */
} hearth_pool_memory;

/* hearth_engines_estimate_fn: cls is a hearth_pool_memory (borrowed, outlives the pool). The
 * model at path is a GGUF file or a safetensors folder. */
bool hearth_pool_estimate(void *cls, const char *path, hearth_engines_need *need, char *why, size_t why_cap);
