/*
 * kv_pool.h - the paged KV block pool (ARCHITECTURE 4; vLLM's block pool).
 *
 * All KV lives in one allocation made at create: for every layer, n_blocks blocks of
 * block_size rows of keys and of values. A block is free (on the free list, 0 references) or
 * held by one or more owners: the block tables of sequences and the prefix cache each hold
 * one reference per use. Each sequence slot has a block-table row mapping its positions to
 * blocks (position p -> row[p / block_size]); the forward reads and writes the cache through
 * hearth_kv_pool_view, whose table is these rows.
 *
 * The pool does no policy: which sequence gets blocks, and what to evict or preempt when none
 * are free, is the scheduler's (sched.c) and the prefix cache's (prefix_cache.c).
 * Thread rule: engine thread only.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "model/model.h"
#include "models/forward.h"

typedef struct hearth_kv_pool hearth_kv_pool;

typedef struct {
    size_t  budget_bytes; /* K+V bytes of the whole pool: it holds budget / block bytes blocks */
    int32_t block_size;   /* tokens per block; <= 0: 16 */
    int32_t n_seqs;       /* sequence slots (block-table rows) */
    int32_t max_seq_len;  /* positions per sequence */
    bool    f16;          /* f16 elements, else f32 */
    hearth_backend *be;   /* where the blocks live (borrowed, must outlive the pool); NULL: host */
} hearth_kv_pool_params;

/* Fails with HEARTH_E_LIMIT when the budget holds no block, HEARTH_E_NOMEM when it cannot be
 * allocated. */
hearth_status hearth_kv_pool_create(const hearth_model *m, const hearth_kv_pool_params *p, hearth_kv_pool **out,
                                    hearth_err *err);
void          hearth_kv_pool_destroy(hearth_kv_pool *pool); /* accepts NULL */

const hearth_kv_view *hearth_kv_pool_view(const hearth_kv_pool *pool);
int32_t hearth_kv_pool_n_blocks(const hearth_kv_pool *pool);
int32_t hearth_kv_pool_n_free(const hearth_kv_pool *pool);
int32_t hearth_kv_pool_block_size(const hearth_kv_pool *pool);
size_t  hearth_kv_pool_block_bytes(const hearth_kv_pool *pool); /* K+V of one block, all layers */
size_t  hearth_kv_pool_bytes(const hearth_kv_pool *pool);

/* Take a free block with one reference; -1 when none is free. */
int32_t hearth_kv_pool_alloc(hearth_kv_pool *pool);
void    hearth_kv_pool_ref(hearth_kv_pool *pool, int32_t blk);
/* Drop one reference; at zero the block goes back to the free list (returns true). */
bool    hearth_kv_pool_unref(hearth_kv_pool *pool, int32_t blk);
int32_t hearth_kv_pool_refs(const hearth_kv_pool *pool, int32_t blk);

/* Block-table row of a slot: the first hearth_kv_pool_seq_blocks() entries are its blocks. */
const int32_t *hearth_kv_pool_row(const hearth_kv_pool *pool, int32_t slot);
int32_t hearth_kv_pool_seq_blocks(const hearth_kv_pool *pool, int32_t slot);
/* Append blk to the slot's row, taking over the caller's reference. False when the row is full. */
bool    hearth_kv_pool_seq_push(hearth_kv_pool *pool, int32_t slot, int32_t blk);
/* Detach the slot's last block and return it (the caller now holds that reference); -1 if empty. */
int32_t hearth_kv_pool_seq_pop(hearth_kv_pool *pool, int32_t slot);
/* Append fresh blocks until the slot covers n_tokens positions; all or nothing: false (and
 * nothing taken) when too few blocks are free or n_tokens exceeds max_seq_len. */
bool    hearth_kv_pool_seq_reserve(hearth_kv_pool *pool, int32_t slot, int32_t n_tokens);
/* Blocks the slot still needs to cover n_tokens positions. */
int32_t hearth_kv_pool_seq_need(const hearth_kv_pool *pool, int32_t slot, int32_t n_tokens);

/* Consistency: the free list holds exactly the blocks with 0 references, each once. */
bool    hearth_kv_pool_check(const hearth_kv_pool *pool);
