/*
 * prefix_cache.h - automatic prefix caching over the KV block pool (ARCHITECTURE 4; vLLM's
 * automatic prefix caching).
 *
 * A full block of a sequence is content-addressed by h = XXH3(its tokens, seed = the hash of
 * the block before it; for the first 0, or the root of its adapter: match_root), so equal hashes mean equal prefixes up to and
 * including that block (the tokens and the parent hash are also compared, so a hash collision
 * cannot hand out wrong KV). The cache holds one pool reference on every block it indexes.
 * A block that only the cache references is "evictable": such blocks sit in LRU order and are
 * evicted (their reference dropped, the block freed) when their bytes exceed the cap or when
 * the scheduler needs free blocks. A new sequence takes its longest cached prefix by reference.
 *
 * Blocks are only shared when full and never written again: a sequence appends to its own
 * last block, and the scheduler never reuses the block holding a prompt's last token.
 *
 * Layer groups (kv_pool.h): each logical block of a sequence is one block per group, indexed
 * under the same hash with its group. A match at a cut of n blocks needs every full group's
 * blocks 0..n-1 and each window group's blocks from the first one a query at the cut reads
 * (the window's earlier blocks may be gone: their KV is never read again); the longest cut
 * that all groups can serve is taken.
 * With a disk tier (ssd_tier.h): an evicted block is written to it (copied to host memory and
 * queued for the tier's writer; dropped when its queue is full), and a block that a match does
 * not find in RAM is looked up there and restored into a free pool block (evicting the least
 * recently used one when none is free), after which it is an ordinary cached block. The blocks
 * of a match are pinned while it restores, so restoring block i never evicts blocks 0..i-1.
 * Demotion writes evictable blocks that nobody used for a while to the tier and frees them.
 *
 * Hybrid models (a pool with linear-attention states, kv_pool.h): a prefix hit must also give
 * the recurrent state as it stood at the cut, so a cached group-0 block may keep a state
 * snapshot (a pool snapshot id) taken after its last token. A match then ends at the longest
 * chain whose last block has one (the blocks past it may still be cached: they are computed
 * again, and hearth_prefix_cache_chain says how far the chain went, so the scheduler can take a
 * snapshot there); no snapshot, no hit. A snapshot lives and dies with its block (evicting the
 * block frees it). When the pool has no free snapshot, a new one takes the snapshot of the least
 * recently used evictable block (which stays cached, it can no longer end a match). The disk
 * tier keeps no snapshots (the engine runs hybrid models without it).
 * Thread rule: engine thread only.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/kv_pool.h"
#include "engine/ssd_tier.h"

typedef struct hearth_prefix_cache hearth_prefix_cache;

/* cap_bytes: most bytes of evictable blocks kept. pool is borrowed. NULL on OOM. */
hearth_prefix_cache *hearth_prefix_cache_create(hearth_kv_pool *pool, size_t cap_bytes);
/* Drops every reference the cache holds. Accepts NULL. */
void     hearth_prefix_cache_destroy(hearth_prefix_cache *pc);

/* The hash of a block of block_size tokens after a block hashed parent (0 for the first). */
uint64_t hearth_prefix_hash(uint64_t parent, const int32_t *tokens, int32_t block_size);

/* Push the longest cached prefix of the first max_blocks full blocks of tokens onto the slot's
 * (empty) rows, one reference each (a window group's blocks before its window as holes);
 * hashes[i] receives block i's hash. Returns the blocks of the prefix (the cut / block_size). */
int32_t  hearth_prefix_cache_match(hearth_prefix_cache *pc, const int32_t *tokens, int32_t max_blocks, int32_t slot,
                                   uint64_t *hashes);
/* The same, with the chain rooted at root instead of 0: block 0's parent hash. Sequences whose
 * KV differs for the same tokens (a LoRA adapter) pass a root of their own, so their blocks
 * never match another root's (the parent is compared too). */
int32_t  hearth_prefix_cache_match_root(hearth_prefix_cache *pc, uint64_t root, const int32_t *tokens,
                                        int32_t max_blocks, int32_t slot, uint64_t *hashes);
/* Index block blk of group g (full, its KV computed) under hash h after parent: the cache takes
 * a reference. Nothing happens when an equal block of the group is already indexed. */
void     hearth_prefix_cache_insert(hearth_prefix_cache *pc, int32_t g, uint64_t h, uint64_t parent,
                                    const int32_t *tokens, int32_t blk);
/* Drop a sequence's reference on blk (use this instead of hearth_kv_pool_unref). */
void     hearth_prefix_cache_release(hearth_prefix_cache *pc, int32_t blk);
/* Evict least recently used evictable blocks until the pool has want_free free blocks or none
 * is left. Returns the number evicted. */
int32_t  hearth_prefix_cache_evict(hearth_prefix_cache *pc, int32_t want_free);
/* Attach the disk tier (borrowed; must outlive the cache, or be detached with NULL). */
void     hearth_prefix_cache_set_tier(hearth_prefix_cache *pc, hearth_ssd_tier *tier);
/* Write evictable blocks released at least idle_ms before now_ms (hearth_now_mono_ms) to the
 * tier and free them, least recently used first. wait: block on the tier's queue (shutdown),
 * else stop when its queue is full. Nothing when the tier is absent or read-only. Returns the
 * blocks demoted. */
int32_t  hearth_prefix_cache_demote(hearth_prefix_cache *pc, double now_ms, double idle_ms, bool wait);
int64_t  hearth_prefix_cache_restores(const hearth_prefix_cache *pc);  /* blocks restored from the tier */
int64_t  hearth_prefix_cache_demotions(const hearth_prefix_cache *pc);
int32_t  hearth_prefix_cache_n_evictable(const hearth_prefix_cache *pc);
int32_t  hearth_prefix_cache_n_cached(const hearth_prefix_cache *pc); /* indexed blocks */
bool     hearth_prefix_cache_holds(const hearth_prefix_cache *pc, int32_t blk);
int64_t  hearth_prefix_cache_evictions(const hearth_prefix_cache *pc);

/* Hybrid models (head comment). The snapshot kept with block blk, or -1. */
int32_t  hearth_prefix_cache_snap_of(const hearth_prefix_cache *pc, int32_t blk);
/* Blocks of the chain the last match found before cutting it to the last snapshot. */
int32_t  hearth_prefix_cache_chain(const hearth_prefix_cache *pc);
/* A snapshot id for the states after n_pos positions: a free one, else one taken from the least
 * recently used evictable block that has one; -1 when neither. */
int32_t  hearth_prefix_cache_snap_alloc(hearth_prefix_cache *pc, int32_t n_pos);
/* Keep snapshot snap (filled: the states after the block's last token) with the cached group-0
 * block (h after parent, tokens). False when no such block is cached or it has one already: the
 * caller still owns snap then. */
bool     hearth_prefix_cache_attach_snap(hearth_prefix_cache *pc, uint64_t h, uint64_t parent, const int32_t *tokens,
                                         int32_t snap);
int32_t  hearth_prefix_cache_n_snaps(const hearth_prefix_cache *pc); /* blocks that keep a snapshot */
int64_t  hearth_prefix_cache_snap_steals(const hearth_prefix_cache *pc);
