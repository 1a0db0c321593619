/*
 * forward.h - one engine step through a model (ARCHITECTURE 3).
 *
 * A step is the flattened tokens of several sequences: token t has its own position pos[t]
 * and cache slot seq[t]. Within a step a sequence's tokens appear in position order and its
 * earlier positions are already in the cache (or earlier in this step): every layer stores
 * the step's keys and values first, then each query attends to its own slot's 0..pos[t].
 * Logits come out for the tokens marked in want_logits (all of them in order), or for the
 * last token when want_logits is NULL.
 *
 * The KV cache is owned by the caller (engine/); the forward only reads and writes through
 * a hearth_kv_view: a pool of blocks per layer and one block-table row per slot and layer
 * group (the engine's paged pool, engine/kv_pool.h). A contiguous cache (tests/support/kv.h) is the
 * case of one group and one block of n_ctx rows per slot.
 *
 * The KV view's k and v point at backend memory (engine/kv_pool.c allocates them through the
 * backend); everything else in the batch and the view, and logits, is host memory.
 *
 * Thread rule: a hearth_fwd belongs to the thread that drives its backend (the engine thread).
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "base/status.h"
#include "lora/lora.h"
#include "model/model.h"

typedef struct {
    int32_t        n_tokens;
    const int32_t *token;       /* [n_tokens] */
    const int32_t *pos;         /* [n_tokens] */
    const int32_t *seq;         /* [n_tokens] cache slot */
    const int8_t  *want_logits; /* [n_tokens] or NULL (= last token only) */
    /* [n_tokens] the LoRA adapter of each token (NULL = the base model), or NULL for none at
     * all. Borrowed (lora/lora.h; host memory); a sequence's tokens share one. Rows with
     * different adapters share the base matmuls; each run of equal adapters gets its own
     * low-rank update (the backend's lora op). */
    const struct hearth_lora *const *lora;
    /* State snapshots (hybrid models, engine/kv_pool.h): after token snap_at[i] (batch indices,
     * ascending) the linear-attention states of that token's slot are copied, in every linear
     * layer, to state row snap_to[i] (in [n_slots, kv->lin_rows): rows no sequence runs on).
     * n_snap 0: none. Host memory, borrowed. */
    int32_t        n_snap;
    const int32_t *snap_at, *snap_to;
    /* (optional) images (Gemma 3, models/vision.h), both NULL for none. embd: [n_tokens] a row
     * of n_embd floats (host memory, borrowed) that token t takes instead of its token's
     * embedding (as it is: not scaled by sqrt(n_embd)), or NULL. pos_end: [n_tokens] the last
     * position token t's query reads (>= pos[t]): an image's soft tokens see each other both
     * ways (transformers' token_type_ids mask; a sliding window still starts pos - window + 1),
     * so every position up to pos_end[t] of its sequence must be in this step. Gemma 3 on a
     * host backend only (HEARTH_E_UNSUPPORTED otherwise). */
    const float *const *embd;
    const int32_t      *pos_end;
} hearth_batch;

typedef struct {
    int32_t          n_slots;    /* rows of the block table (sequences) */
    int32_t          n_ctx;      /* positions per slot: <= blocks.max_blocks * blocks.block_size */
    int32_t          n_blocks;   /* blocks in each layer's pool */
    hearth_kv_blocks blocks;     /* borrowed table [n_slots][max_blocks]; the positions a step
                                  * touches must map to blocks in [0, n_blocks) */
    hearth_kv_type   k_type, v_type; /* element types of k and v (backend/kv_type.h) */
    const hearth_kv_type *layer_k_type, *layer_v_type; /* borrowed [n_layer]: each layer's own types
                                  * (a per-layer scheme, engine/kv_config.h); NULL: k_type / v_type */
    void           **k, **v;     /* borrowed: [n_layer] -> [n_blocks][block_size][n_head_kv * head_dim] */
    /* Layer groups (engine/kv_pool.h): group g's rows are blocks.table + g * n_slots * max_blocks.
     * n_groups <= 1 and layer_group NULL: one table for every layer. */
    int32_t          n_groups;
    const int32_t   *layer_group;  /* borrowed [n_layer]: the group whose table a layer reads, or NULL */
    const int32_t   *group_window; /* borrowed [n_groups]: the sliding window of the group's layers
                                    * (0 = full attention); its rows hold only the blocks a query's
                                    * window reads. NULL: every group is full */
    /* Linear-attention layers (hearth_hparams_is_linear: Qwen3.5, Qwen3-Next) keep a fixed-size
     * state per slot instead of KV rows; the step advances it. Both NULL for other models. */
    float          **lin_state;    /* borrowed [n_layer] -> [n_slots][hearth_hparams_lin_state_floats]
                                    * floats of backend memory (NULL for the other layers) */
    int32_t         *lin_len;      /* borrowed host [n_slots]: positions the slot's state holds. A
                                    * step may feed a slot position 0 (its state starts afresh) or
                                    * lin_len, and leaves lin_len at its last position + 1 */
    int32_t          lin_rows;     /* state rows of each linear layer: the n_slots slots, then rows
                                    * that only snapshots are copied to (hearth_batch's snap_to) */
} hearth_kv_view;

/* The block table layer il reads and writes. */
static inline hearth_kv_blocks hearth_kv_view_blocks(const hearth_kv_view *kv, int32_t il) {
    hearth_kv_blocks b = kv->blocks;
    if (kv->layer_group) b.table += (int64_t)kv->layer_group[il] * kv->n_slots * b.max_blocks;
    return b;
}

/* The element types of layer il's keys and values. */
static inline hearth_kv_type hearth_kv_view_k_type(const hearth_kv_view *kv, int32_t il) {
    return kv->layer_k_type ? kv->layer_k_type[il] : kv->k_type;
}
static inline hearth_kv_type hearth_kv_view_v_type(const hearth_kv_view *kv, int32_t il) {
    return kv->layer_v_type ? kv->layer_v_type[il] : kv->v_type;
}

typedef struct hearth_fwd hearth_fwd;

/* Scratch for steps of up to max_tok tokens on backend be (borrowed, as is m), computing with
 * numerics nx (backend/numerics.h; NULL: the default, resolved; pass the backend's own,
 * hearth_backend_numerics, unless comparing recipes). NULL on OOM. */
hearth_fwd   *hearth_fwd_create(const hearth_model *m, hearth_backend *be, int32_t max_tok, const hearth_numerics *nx);
/* The numerics the forward computes with (tier resolved). */
hearth_numerics hearth_fwd_numerics(const hearth_fwd *f);
void          hearth_fwd_destroy(hearth_fwd *f); /* accepts NULL */
int32_t       hearth_fwd_max_tokens(const hearth_fwd *f);

/* Tests: a forward with no weights and no backend, whose arithmetic is fn (the same batch
 * checks run first). It lets engine tests script tokens from what the KV view holds. */
typedef hearth_status (*hearth_fwd_script_fn)(void *ctx, const hearth_batch *b, const hearth_kv_view *kv,
                                              float *logits);
hearth_fwd   *hearth_fwd_create_scripted(const hearth_model *m, int32_t max_tok, hearth_fwd_script_fn fn, void *ctx);

/* Run one step; logits: [n_out][n_vocab] where n_out is the number of tokens asking for them.
 * Returns HEARTH_E_INVALID (and computes nothing) when the batch is inconsistent with the
 * view (slot or position out of range, a position without a block, too many tokens, a
 * linear-attention model's sequence resumed elsewhere than at 0 or where its state stands), and
 * HEARTH_E_UNSUPPORTED when it carries adapters and the backend applies none (hearth_fwd_lora_supported). */
hearth_status hearth_forward(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, float *logits);
/* The same step, but only the greedy pick of each logits row leaves the backend: ids[n_out]
 * gets the first index of each row's maximum. logits is scratch of the same size as for
 * hearth_forward (written on a host backend, untouched on a device one). */
hearth_status hearth_forward_argmax(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, float *logits,
                                    int32_t *ids);
/* The same step, but each logits row r leaves the backend as the summary out[r] that rq[r] asks
 * for (kernels/ref/topm_ref.h): the host sampler finishes on it (hearth_sampler_sample_topm).
 * The backend must have the op (hearth_fwd_has_topm). */
hearth_status hearth_forward_topm(hearth_fwd *f, const hearth_batch *b, const hearth_kv_view *kv, float *logits,
                                  const hearth_topm_req *rq, const hearth_topm_edit *edits, int32_t n_edits,
                                  hearth_topm *out);
/* After hearth_forward_topm: copy its logits row r (with its edits applied) to dst [n_vocab]
 * (host), for a row whose summary does not cover what its sampler needs. Valid until the next
 * step. */
void            hearth_forward_row(hearth_fwd *f, int32_t r, float *dst);
/* Also write each logits row's final-normed hidden state (what the output head multiplies) to
 * hidden [n_out][n_embd] (host memory, borrowed; NULL: off) in every later forward. The Gemma 4
 * assistant drafter reads the target's this way (engine/draft_assistant.c). */
void            hearth_fwd_set_hidden_out(hearth_fwd *f, float *hidden);

/* The Gemma 4 assistant drafter (a model whose hparams have n_embd_backbone > 0, transformers'
 * gemma4_assistant; models/gemma4_assistant.c), f made for it. Every token t of b drafts for
 * its sequence seq[t]: token[t] is the sequence's last token (embedded with target's table),
 * hidden [n_tokens][target n_embd] (host) the target's final-normed hidden state of the row that
 * produced it (or the previous draft step's hidden_out), and pos[t] the last position whose KV
 * target_kv holds: the token's own, pos[t] + 1, is where the queries turn. target_kv has one
 * layer entry per assistant layer: the target layer it reads (the last of its kind that stores
 * its own KV), and is only read. Every token must want logits (want_logits all set). Out: logits [n_tokens][n_vocab] (with
 * centroid-masked logits, every token outside the kept centroids gets the row's least kept
 * logit minus 1, as transformers does) and hidden_out [n_tokens][target n_embd] (host), the
 * post-projected state the next draft step takes. HEARTH_E_INVALID when target's hidden size
 * is not the assistant's backbone size or the batch does not fit the view. */
hearth_status   hearth_forward_assistant(hearth_fwd *f, const hearth_model *target, const hearth_batch *b,
                                         const hearth_kv_view *target_kv, const float *hidden, float *logits,
                                         float *hidden_out);
hearth_backend *hearth_fwd_backend(const hearth_fwd *f);
/* Can backend be run model m: every weight's type has its kernels. False with the reason in why. */
bool            hearth_fwd_supported(const hearth_model *m, hearth_backend *be, char *why, size_t cap);

/* Does the forward's backend apply LoRA adapters (the CPU and CUDA backends do). False with the
 * reason in why. */
bool            hearth_fwd_lora_supported(const hearth_fwd *f, char *why, size_t cap);
/* A device backend keeps its own copy of each adapter a step has used (the forward holds a
 * reference to the adapter meanwhile). Drop the copies, and that reference, of every adapter
 * nobody else holds any more (unmounted, its last request freed). Each step does this first;
 * the engine also after each step, so an unmounted adapter's device memory goes when its last
 * request ends. Cheap when there is nothing to drop; engine thread. */
void            hearth_fwd_lora_sweep(hearth_fwd *f);

/* Debugging: when set, every intermediate activation of a step is passed to fn after the op
 * that made it, named as llama.cpp names its graph nodes ("Qcur-3", "ffn_out-0", ...) with the
 * op ("MUL_MAT", "ROPE", ...), as n_rows rows of width floats (tools/hearth_trace.c writes
 * them out; tools/trace_compare.py lines them up with llama.cpp's). il is the layer, -1 outside
 * the layers. NULL (the default) turns it off; the cost is then one branch per op. A device
 * backend (CUDA) ignores it: its activations are not in host memory. */
typedef void (*hearth_fwd_trace_fn)(void *user, const char *name, int32_t il, const char *op, const float *x,
                                    int64_t n_rows, int64_t width);
void hearth_fwd_set_trace(hearth_fwd *f, hearth_fwd_trace_fn fn, void *user);
