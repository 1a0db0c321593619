/*
 * kv_pool.h - the paged KV block pool (ARCHITECTURE 4; vLLM's block pool).
 *
 * All KV lives in one allocation made at create. The layers that store their own K and V are
 * split into groups of equal size by attention kind (vLLM's hybrid allocator): full-attention
 * layers, then layers with a sliding window of n_swa tokens. A KV-shared layer (Gemma 4) has no
 * place of its own: its view pointers and group are those of the layer whose cache it reads. A block is block_size rows of keys and values of the layers
 * of one group (every block has the same bytes, so the groups share one free list); a block
 * is free (on the free list, 0 references) or held by one or more owners: the block tables of
 * sequences and the prefix cache each hold one reference per use. Each (group, sequence slot)
 * has a block-table row mapping positions to blocks (position p -> row[p / block_size]); the
 * forward reads and writes the cache through hearth_kv_pool_view, whose tables are these rows.
 *
 * A window group's row may start with holes (-1): blocks that lie wholly before the window of
 * the sequence's next query are handed back (hearth_kv_pool_seq_take) and never read again, so
 * a long sequence holds about n_swa / block_size + 1 blocks of each window group. A model
 * without sliding layers (or a pool made with swa_full) has one group of every layer.
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

/* Layers that store their own K and V: all but the KV-shared ones (Gemma 4), which read the
 * cache of an earlier layer (hearth_hparams_kv_layer) and whose view pointers alias it, and the
 * linear-attention ones (Qwen3.5), which keep a state slot per sequence instead (NULL views). */
int32_t hearth_kv_n_cache_layers(const hearth_model *m);
/* Bytes of K+V one token takes in the cache: a row of the widest layer kind in every layer
 * that stores its own, for a model and cache scheme. */
size_t  hearth_kv_bytes_per_token(const hearth_model *m, hearth_kv_scheme kv);
/* The same with a scheme per layer (layer_kv: [n_layer], kv_config.json; NULL: kv everywhere). */
size_t  hearth_kv_bytes_per_token_layers(const hearth_model *m, hearth_kv_scheme kv, const hearth_kv_scheme *layer_kv);

typedef struct hearth_kv_pool hearth_kv_pool;

/* How a model's layers split into groups (kv_pool.h above): n_full full-attention groups come
 * first, then n_win groups whose layers slide over n_swa tokens; each has per_group layers. */
typedef struct {
    int32_t per_group, n_full, n_win, n_swa;
} hearth_kv_layout;

hearth_kv_layout hearth_kv_layout_of(const hearth_model *m, bool swa_full);
/* The most blocks one sequence of n_tokens positions holds at once when it advances by at most
 * chunk tokens a step (a window group holds the window before a chunk and the chunk). */
int64_t hearth_kv_layout_blocks(const hearth_kv_layout *l, int32_t block_size, int64_t n_tokens, int64_t chunk);
/* K+V bytes of one block (per_group layers of block_size rows). */
size_t  hearth_kv_layout_block_bytes(const hearth_kv_layout *l, const hearth_model *m, hearth_kv_scheme kv,
                                     int32_t block_size);
/* The bytes of one block of a pool with a scheme per layer (layer_kv [n_layer], NULL: kv
 * everywhere): the widest rows of each layer place (kv_pool.c), at most the block of the widest
 * scheme alone. 0 when out of memory. */
size_t  hearth_kv_block_bytes_layers(const hearth_model *m, bool swa_full, hearth_kv_scheme kv,
                                     const hearth_kv_scheme *layer_kv, int32_t block_size);

/* The types a pool gives the layers of a scheme per layer (layer_kv [n_layer], rewritten in
 * place): on a model of several groups a layer takes the widest K and V types of its place in
 * the pool (kv_pool.c's head comment), never narrower ones. Returns how many layers were
 * widened, -1 when out of memory. A pool created with layer_kv uses these types (its view's
 * hearth_kv_view_k_type), whether or not the caller widened them first. */
int32_t hearth_kv_layers_widen(const hearth_model *m, bool swa_full, hearth_kv_scheme *layer_kv);

typedef struct {
    size_t  budget_bytes; /* K+V bytes of the whole pool: it holds budget / block bytes blocks */
    int32_t block_size;   /* tokens per block; <= 0: 16 */
    int32_t n_seqs;       /* sequence slots (block-table rows) */
    int32_t max_seq_len;  /* positions per sequence */
    hearth_kv_scheme kv;  /* element types of keys and values ({0}: f32) */
    const hearth_kv_scheme *layer_kv; /* borrowed [n_layer], read at create: each layer's types
                                       * (kv_config.json; a KV-shared layer takes its source's;
                                       * widened as hearth_kv_layers_widen says); NULL: kv for
                                       * every layer */
    bool    swa_full;     /* sliding-window layers keep every block (one group of all layers) */
    int32_t window_keep;  /* a window group keeps at least this many positions up to a query's
                           * (the layout's n_swa becomes the larger): a reader of the cache that
                           * looks further back than the model's window (the Gemma 4 assistant
                           * drafter, spec.h); <= 0: the window */
    hearth_backend *be;   /* where the blocks live (borrowed, must outlive the pool); NULL: host */
    int32_t n_snaps;      /* hybrid models: state snapshots kept beside the slots' states (below;
                           * their bytes are not in budget_bytes: the engine sizes both) */
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
size_t  hearth_kv_pool_block_bytes(const hearth_kv_pool *pool); /* K+V of one block (its group's layers) */
size_t  hearth_kv_pool_bytes(const hearth_kv_pool *pool);
const hearth_kv_layout *hearth_kv_pool_layout(const hearth_kv_pool *pool);
int32_t hearth_kv_pool_n_groups(const hearth_kv_pool *pool);
/* The window of group g's layers (0: full attention). */
int32_t hearth_kv_pool_group_window(const hearth_kv_pool *pool, int32_t g);
/* The first block a query at position pos still reads in group g (0 for a full group). */
int32_t hearth_kv_pool_first_needed(const hearth_kv_pool *pool, int32_t g, int32_t pos);

/* Take a free block with one reference; -1 when none is free. */
int32_t hearth_kv_pool_alloc(hearth_kv_pool *pool);
void    hearth_kv_pool_ref(hearth_kv_pool *pool, int32_t blk);
/* Drop one reference; at zero the block goes back to the free list (returns true). */
bool    hearth_kv_pool_unref(hearth_kv_pool *pool, int32_t blk);
int32_t hearth_kv_pool_refs(const hearth_kv_pool *pool, int32_t blk);

/* Block-table row of (group g, slot): its first hearth_kv_pool_seq_blocks() entries cover its
 * positions, the first hearth_kv_pool_seq_dead() of them are holes (-1). */
const int32_t *hearth_kv_pool_row(const hearth_kv_pool *pool, int32_t g, int32_t slot);
int32_t hearth_kv_pool_seq_blocks(const hearth_kv_pool *pool, int32_t g, int32_t slot);
int32_t hearth_kv_pool_seq_dead(const hearth_kv_pool *pool, int32_t g, int32_t slot);
/* Append blk to the row (-1: a hole, only before any block), taking over the caller's
 * reference. False when the row is full. */
bool    hearth_kv_pool_seq_push(hearth_kv_pool *pool, int32_t g, int32_t slot, int32_t blk);
/* Detach the row's last block and return it (the caller now holds that reference); -1 when no
 * block is left (the holes go with the last block). */
int32_t hearth_kv_pool_seq_pop(hearth_kv_pool *pool, int32_t g, int32_t slot);
/* Detach the row's first live block, leaving a hole, and return it (the caller now holds that
 * reference); -1 when the row has no live block. */
int32_t hearth_kv_pool_seq_take(hearth_kv_pool *pool, int32_t g, int32_t slot);
/* Append fresh blocks to every group's row until the slot covers n_tokens positions; all or
 * nothing: false (and nothing taken) when too few blocks are free or n_tokens exceeds
 * max_seq_len. */
bool    hearth_kv_pool_seq_reserve(hearth_kv_pool *pool, int32_t slot, int32_t n_tokens);
/* Blocks the slot still needs (all groups) to cover n_tokens positions. */
int32_t hearth_kv_pool_seq_need(const hearth_kv_pool *pool, int32_t slot, int32_t n_tokens);
/* Blocks the slot may still need (all groups) to run to n_tokens positions in chunks of at
 * most chunk tokens: a window group counts at most the blocks its window spans. */
int32_t hearth_kv_pool_seq_need_peak(const hearth_kv_pool *pool, int32_t slot, int32_t n_tokens, int32_t chunk);

/* Copy the first n_rows rows (positions within a block) of block src's keys and values, in
 * every layer place, into block dst (in the pool's memory, wherever it lives: a device pool
 * goes through a host bounce buffer). For a sequence that forks off another: the two share
 * the full blocks and each writes its own copy of the last partial one. */
void    hearth_kv_pool_copy_block(hearth_kv_pool *pool, int32_t dst, int32_t src, int32_t n_rows);
/* Hybrid models: the bytes of the linear-attention states (every slot and snapshot; 0 without such layers),
 * and a copy of slot src's states (and the positions they hold) into slot dst, for a sequence
 * that forks off another where it stands. */
size_t  hearth_kv_pool_state_bytes(const hearth_kv_pool *pool);
void    hearth_kv_pool_copy_state(hearth_kv_pool *pool, int32_t dst, int32_t src);

/* State snapshots (hybrid models): n_snaps more rows of every linear layer's states, each a
 * copy of a sequence's states as they stood after some position (a block boundary: the prefix
 * cache keeps each with the block whose end it describes, prefix_cache.h). A snapshot is filled
 * by the forward (hearth_batch's snap_at / snap_to, to row hearth_kv_pool_snap_row) and copied
 * back into a slot on a prefix hit. Ids are 0 .. n_snaps - 1; n_snaps is 0 without linear
 * layers. */
int32_t hearth_kv_pool_n_snaps(const hearth_kv_pool *pool);
int32_t hearth_kv_pool_n_snap_free(const hearth_kv_pool *pool);
size_t  hearth_kv_pool_snap_bytes(const hearth_kv_pool *pool); /* one snapshot: every linear layer's state */
/* Take a free snapshot id that will hold the states after n_pos positions; -1 when none is free. */
int32_t hearth_kv_pool_snap_alloc(hearth_kv_pool *pool, int32_t n_pos);
void    hearth_kv_pool_snap_free(hearth_kv_pool *pool, int32_t id);
int32_t hearth_kv_pool_snap_row(const hearth_kv_pool *pool, int32_t id); /* its state row (>= n_seqs) */
int32_t hearth_kv_pool_snap_len(const hearth_kv_pool *pool, int32_t id); /* positions it holds; -1 free */
/* Copy snapshot id into slot's states (and its positions into the slot's lin_len). */
void    hearth_kv_pool_snap_restore(hearth_kv_pool *pool, int32_t slot, int32_t id);

/* Block blk's keys and values, every layer place of its group, to or from host memory (the
 * disk tier's form, hearth_kv_pool_block_bytes() bytes): for each place (one region each,
 * kv_pool.c), the block's K rows then its V rows. A device pool copies straight between its
 * memory and the host buffer. */
void    hearth_kv_pool_block_to_host(const hearth_kv_pool *pool, int32_t blk, void *dst);
void    hearth_kv_pool_block_from_host(hearth_kv_pool *pool, int32_t blk, const void *src);

/* Consistency: the free list holds exactly the blocks with 0 references, each once. */
bool    hearth_kv_pool_check(const hearth_kv_pool *pool);
