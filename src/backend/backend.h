/*
 * backend.h - the op interface the forward functions call (ARCHITECTURE 5).
 *
 * A backend is {iface, ctx}: a table of ops over buffers it understands. Model code calls the
 * hearth_op_* wrappers and never branches on the device. The CPU backend (cpu_backend.c) runs
 * the ops on the fork-join pool with the kernel set chosen at start (kernels/kernels.h); the
 * CUDA backend (cuda/cuda_backend.c) implements the same table on one GPU.
 *
 * Memory: activations, index arrays and the KV cache are backend buffers (alloc/upload/
 * download; on the CPU plain host memory, iface->host). Weights are passed as the model holds
 * them, in host memory (hearth_weight, norm and bias vectors, RoPE tables): a device backend
 * copies each one to its memory the first time an op sees it and keeps it, keyed by its host
 * address, so the weights must not change while the backend lives. LoRA adapters come and go:
 * their matrices are kept the same way until hearth_backend_forget drops the copy (the forward
 * does, once no request and no mount holds the adapter), before the host memory is freed.
 *
 * Numerics (numerics.h) are a create parameter: the tier decides the arithmetic a device
 * backend computes (the CPU's comes from the kernel set), the switches which of two paths of
 * the same bits it takes.
 *
 * Steps: the forward stages its index arrays and logits through hearth_step_stage and runs a
 * step's ops through hearth_step_run, so that the copies to the device and the capture and
 * replay of step graphs are the backend's business; model code never asks which device it is on.
 *
 * Fused ops (add_rmsnorm, rope_store, ffn_glu) are ops of their own with the contract written
 * beside them: what each output holds afterwards, and which buffers are scratch. A backend
 * that has none of them runs the plain op sequence the wrapper spells out. No op leaves state
 * that a later op depends on: an op's results are its written outputs, and a matmul quantizes
 * its own activations on every call.
 *
 * Shapes are row-major: "[n][d]" is n rows of d floats, row stride d unless a stride is given.
 * Thread rule: a backend is driven by one thread (the engine thread).
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "base/thread.h"
#include "backend/kv_type.h"
#include "backend/numerics.h"
#include "kernels/ref/deltanet_ref.h"
#include "kernels/ref/lora_ref.h"
#include "kernels/ref/ops_ref.h"
#include "kernels/ref/topm_ref.h"
#include "tensor/tensor.h"

typedef struct hearth_backend hearth_backend;

typedef enum {
    HEARTH_GLU_SWIGLU = 0, /* silu(g) * u */
    HEARTH_GLU_GEGLU,      /* gelu_tanh(g) * u, in f32 */
    HEARTH_GLU_GEGLU_F16,  /* gelu_tanh from an f16 table, as llama.cpp computes it */
    HEARTH_GLU_SWIGLU_OAI, /* gpt-oss: g' = min(g, 7), u' = clamp(u, -7, 7), g' * sigmoid(1.702 g') * (u' + 1);
                            * the CPU backend only (gpt-oss is refused on device backends) */
    HEARTH_GLU_SIGMOID,    /* sigmoid(g) * u (Qwen3.5's attention output gate); the CPU backend only */
} hearth_glu_kind;

/* How a layer's cache is addressed (ARCHITECTURE 4): the cache is a pool of blocks of
 * block_size rows; position p of the sequence in slot s is row p % block_size of block
 * table[s * max_blocks + p / block_size]. A contiguous slot is one block of n_ctx rows. */
typedef struct {
    const int32_t *table;      /* [n_slots][max_blocks] block ids */
    int32_t        max_blocks; /* row length of table */
    int32_t        block_size; /* rows per block */
} hearth_kv_blocks;

/* One attention call: every query head of n_tok tokens against its sequence's cache. */
typedef struct {
    int64_t        n_tok;
    int32_t        n_head, n_head_kv;
    int32_t        head_dim, head_dim_v;
    const float   *q;        /* [n_tok][n_head*head_dim] */
    float         *out;      /* [n_tok][n_head*head_dim_v] */
    const int32_t *pos;      /* [n_tok] position of each query; it sees keys 0..pos */
    const int32_t *pos_end;  /* [n_tok] or NULL (= pos): the last key each query sees (>= pos;
                              * an image's tokens see each other both ways, forward.h). Host
                              * memory; only host backends take it (the forward refuses others) */
    const int32_t *seq;      /* [n_tok] cache slot of each query */
    const void    *k, *v;    /* cache of this layer: [block][block_size][n_head_kv*head_dim(_v)] */
    hearth_kv_blocks blocks; /* row seq[t] of the block table maps its positions to blocks */
    hearth_kv_type k_type, v_type; /* cache element types (kv_type.h) */
    int32_t        n_swa;    /* sliding window (keys pos-n_swa+1..pos), 0 = full */
    float          scale;
    float          softcap;  /* 0 = none */
    const float   *sinks;    /* [n_head] attention sinks (gpt-oss: a logit per head in every softmax's
                              * denominator, attn_paged_ref.h), or NULL. Host memory: the CPU backend
                              * runs them in the reference order, on an f16 or f32 cache only;
                              * device backends do not run them (hearth_fwd_supported refuses) */
    int32_t        max_len;  /* the longest key range of the call (a hint for how to split the
                              * work), 0 = unknown */
    int32_t        min_run;  /* the fewest consecutive tokens of one sequence in the call (a hint:
                              * long runs suit tiles of many queries), 0 = unknown */
    int32_t        max_run;  /* the most consecutive tokens of one sequence in the call (a hint:
                              * 1 = every query is its own sequence's, a batch of decodes), 0 =
                              * unknown */
} hearth_attn_args;

/* What a backend runs on (hearth_backend_info). */
typedef struct {
    char   device[96];       /* "cpu", or the GPU's name */
    size_t mem_total;        /* device memory in bytes; 0 on the CPU */
    size_t mem_free;
} hearth_backend_info;

typedef enum { HEARTH_DEVICE_AUTO = 0, HEARTH_DEVICE_CPU, HEARTH_DEVICE_CUDA } hearth_device;

/* Staging slots of a step (hearth_step_stage). */
enum { HEARTH_STAGE_INDEX = 0, HEARTH_STAGE_LOGITS, HEARTH_STAGE_COUNT };

struct hearth_backend_i {
    const char *name;
    bool        host;  /* buffers are host memory: upload and download are plain copies */
    /* a zero-filled buffer of bytes; NULL when out of memory */
    void *(*alloc)(hearth_backend *be, size_t bytes);
    void  (*free)(hearth_backend *be, void *p); /* accepts NULL */
    /* host -> buffer; the host memory may be reused as soon as it returns */
    void  (*upload)(hearth_backend *be, void *dst, const void *src, size_t bytes);
    /* buffer -> host, after every op queued before it has run */
    void  (*download)(hearth_backend *be, void *dst, const void *src, size_t bytes);
    void  (*info)(hearth_backend *be, hearth_backend_info *out);
    /* can matmul and get_rows take weights of this type */
    bool  (*supports)(hearth_backend *be, hearth_type type);
    /* (optional: NULL = any shape) can attention run heads of head_dim with group query heads
     * per kv head */
    bool  (*attn_supports)(hearth_backend *be, int32_t head_dim, int32_t group);
    /* (optional: NULL on a host backend, whose ops read host memory) where a step's ops find
     * the `bytes` at host: a device backend copies them (upload true) into its staging buffer
     * `slot` (HEARTH_STAGE_*; grown as needed, then kept) and returns that buffer; upload false
     * only reserves the room (an output, read back with download). NULL when out of memory. */
    void *(*stage)(hearth_backend *be, int slot, const void *host, size_t bytes, bool upload);
    /* (optional: NULL runs run(ctx) and nothing else) run one step: run(ctx) queues its ops. With
     * key != 0 a backend may capture the ops the first times it sees the key and replay them
     * afterwards (one launch per step), with the buffers' current contents: key must change
     * whenever an op argument of the step would (shapes, buffers other than the staging ones,
     * how the work is split), and run must queue the same ops for one key. key 0: never replay
     * (the step has per-step tables or host-side routing). */
    void  (*step)(hearth_backend *be, uint64_t key, int64_t n_tok, void (*run)(void *ctx), void *ctx);
    /* (optional: NULL = never) is a step of n_tok tokens with a key a replayable one: its work
     * splits must then fit every step of the key (attention sized for the context). The answer
     * must not depend on whether the backend captures graphs at the moment (compiled-decode):
     * the switch changes how the ops are launched, never their arguments, so never the bits */
    bool  (*step_replays)(hearth_backend *be, int64_t n_tok);
    /* y[t][o] = sum_i w[o][i] x[t][i];  x: [n_tok][w->ne0], y: [n_tok][ldy] */
    void (*matmul)(hearth_backend *be, const hearth_weight *w, const float *x, int64_t n_tok, float *y,
                   int64_t ldy);
    /* (optional: NULL runs matmul per weight) the same as n matmul calls that share x: y[i] =
     * x w[i]^T with row stride ldy[i], n <= 4; the weights have the same ne0 */
    void (*matmul_n)(hearth_backend *be, const hearth_weight *const *w, float *const *y, const int64_t *ldy, int n,
                     const float *x, int64_t n_tok);
    /* out[t] = row ids[t] of w as f32, times scale;  out: [n][w->ne0] */
    void (*get_rows)(hearth_backend *be, const hearth_weight *w, const int32_t *ids, int64_t n, float scale,
                     float *out);
    /* y[r] = rmsnorm(x[r]) * w;  x, y: [n_rows][dim] (may alias); w: [dim] or NULL */
    void (*rmsnorm)(hearth_backend *be, const float *x, const float *w, float *y, int64_t n_rows, int64_t dim,
                    float eps);
    /* (optional: NULL runs add, then rmsnorm) the residual add and the next norm in one:
     * x += r, then y = rmsnorm(x) * w;  x, r, y: [n_rows][dim] (y may alias r); w: [dim] */
    void (*add_rmsnorm)(hearth_backend *be, float *x, const float *r, const float *w, float *y, int64_t n_rows,
                        int64_t dim, float eps);
    /* RoPE in place on x: [n_tok][n_head][head_dim], rotating n_rot dims at pos[t] */
    void (*rope)(hearth_backend *be, float *x, int64_t n_tok, int32_t n_head, int32_t head_dim, int32_t n_rot,
                 const int32_t *pos, const hearth_rope_params *rp);
    /* copy rows x: [n_tok][width] f32 into the cache at (seq[t], pos[t]) through the block
     * table, converted to type t (kv_type.h: rounded to f16, or quantized block by block);
     * cache: [block][block_size] rows of hearth_kv_row_bytes(t, width) */
    void (*kv_store)(hearth_backend *be, const float *x, int64_t n_tok, int64_t width, const int32_t *seq,
                     const int32_t *pos, void *cache, const hearth_kv_blocks *blocks, hearth_kv_type t);
    /* (optional: NULL runs rope on q and k, then kv_store of k and v) a layer's RoPE and cache
     * store in one: q [n_tok][n_head][head_dim] and k [n_tok][n_head_kv][head_dim] rotated in
     * place as rope does, then k and v ([n_tok][v_width]) stored as kv_store does */
    void (*rope_store)(hearth_backend *be, float *q, float *k, const float *v, int64_t n_tok, int32_t n_head,
                       int32_t n_head_kv, int32_t head_dim, int32_t n_rot, int64_t v_width, const int32_t *pos,
                       const hearth_rope_params *rp, const int32_t *seq, void *k_cache, void *v_cache,
                       const hearth_kv_blocks *blocks, hearth_kv_type k_type, hearth_kv_type v_type);
    void (*attention)(hearth_backend *be, const hearth_attn_args *a);
    /* g = act(g) * u elementwise over n */
    void (*glu)(hearth_backend *be, float *g, const float *u, int64_t n, hearth_glu_kind kind);
    /* (optional: NULL runs matmul_n of gate and up into g and u, then glu) the gated
     * feed-forward's first half as one op: g = act(x gate^T) * (x up^T);  x: [n_tok][gate->ne0],
     * g, u: [n_tok][gate->ne1] (up has gate's shape). Contract: g is the only output; u is
     * scratch whose contents afterwards are unspecified (a fused kernel keeps the up product in
     * registers and never writes it). Code that needs the up product calls matmul_n and glu. */
    void (*ffn_glu)(hearth_backend *be, const hearth_weight *gate, const hearth_weight *up, const float *x,
                    int64_t n_tok, float *g, float *u, hearth_glu_kind kind);
    /* x[r] += b for each of n_rows rows of width dim */
    void (*add_rows)(hearth_backend *be, float *x, const float *b, int64_t n_rows, int64_t dim);
    /* x += y over n */
    void (*add)(hearth_backend *be, float *x, const float *y, int64_t n);
    /* x *= s over n */
    void (*scale)(hearth_backend *be, float *x, int64_t n, float s);
    /* rows x: [n_rows][n] rotated in place by the orthonormal Hadamard matrix of size n (a power
     * of two): hearth_hadamard_ref (kernels/ref/ops_ref.h), bit for bit */
    void (*hadamard)(hearth_backend *be, float *x, int64_t n_rows, int64_t n);
    /* x = cap * tanh(x / cap) over n */
    void (*softcap)(hearth_backend *be, float *x, int64_t n, float cap);
    /* y[i] = row rows[i] of x;  x: [..][dim], y: [n][dim] */
    void (*copy_rows)(hearth_backend *be, const float *x, int64_t dim, const int32_t *rows, int64_t n, float *y);
    /* (optional: NULL = this backend applies no LoRA adapters; the forward refuses them) the
     * segmented LoRA update (kernels/ref/lora_ref.h): for each segment, its rows of y:
     * [..][ldy] get scale * (x A^T) B^T added, x: [..][n_in]; segs is host memory, and each
     * segment's a and b host memory that stays put until forget is called on it (a device
     * backend keeps copies keyed by address, as it does weights) */
    void (*lora)(hearth_backend *be, const hearth_lora_seg *segs, int n_seg, const float *x, int64_t n_in, float *y,
                 int64_t ldy, int64_t n_out);
    /* (optional: NULL = the backend keeps no copies of host memory, a host backend) drop the
     * copy kept of the host memory at host (an adapter matrix or weight an op has read), after
     * the ops queued so far have run; nothing when there is none. Afterwards host may be freed,
     * and memory later allocated at the same address is copied afresh. */
    void (*forget)(hearth_backend *be, const void *host);
    /* (optional: NULL = this backend runs no gated DeltaNet; the forward refuses hybrid models)
     * the recurrent core of a linear-attention layer, hearth_deltanet_ref (kernels/ref/
     * deltanet_ref.h): a's qkv is convolved in place, out written, the state slots of the step's
     * sequences advanced (a token at position 0 first zeroes its slot) */
    void (*deltanet)(hearth_backend *be, const hearth_deltanet_args *a);
    /* ---- an encoder's ops (models/bert_device.c; optional: NULL on the CPU backend, whose
     * encoders run models/bert.c's own threaded path). The batch is padded: sequence s owns rows
     * s * L .. s * L + L - 1, the first len[s] real; len is [n_seq] int32 backend memory ---- */
    /* y[r] = (x[r] - mean) / sqrt(var + eps) * w + b, hearth_layernorm_ref (kernels/ref/
     * encoder_ref.h); x, y: [n_rows][dim] (may alias); w, b: [dim] host weights or NULL */
    void (*layernorm)(hearth_backend *be, const float *x, const float *w, const float *b, float *y, int64_t n_rows,
                      int64_t dim, float eps);
    /* x = gelu_erf(x) over n, hearth_gelu_erf_ref */
    void (*gelu_erf)(hearth_backend *be, float *x, int64_t n);
    /* bidirectional attention within each sequence, hearth_attn_full_ref over its len[s] real
     * rows: q, k, v row r of head h at [r * ld + h * head_dim]; out: [n_seq * L][..], row stride
     * ldo; padding queries get zeros. false from attn_enc_ok: a shape it does not run */
    void (*attn_enc)(hearth_backend *be, const float *q, const float *k, const float *v, int64_t ld, float *out,
                     int64_t ldo, int64_t n_seq, int32_t L, const int32_t *len, int32_t n_head, int32_t head_dim,
                     float scale);
    bool (*attn_enc_ok)(hearth_backend *be, int32_t L, int32_t head_dim);
    /* out[s] = the pooling of sequence s's real rows of x: [n_seq * L][dim]: kind 0 the mean
     * (summed in double), 1 the first row, 2 the last (hearth_pooling's values); out: [n_seq][dim] */
    void (*pool_rows)(hearth_backend *be, const float *x, int64_t n_seq, int32_t L, int64_t dim, const int32_t *len,
                      int kind, float *out);
    /* each row of x: [n_rows][dim] divided by max(its L2 norm, 1e-12), the norm summed in double
     * (hearth_embed_normalize) */
    void (*l2norm)(hearth_backend *be, float *x, int64_t n_rows, int64_t dim);
    /* out[r] (host memory) = the first index of the largest of x[r][0..n), r < n_rows: greedy
     * picks where only the ids leave the device */
    void (*argmax)(hearth_backend *be, const float *x, int64_t n_rows, int64_t n, int32_t *out);
    /* (optional: NULL = none) out[r] (host memory) = the summary of row r that the host sampler
     * finishes on, hearth_topm_row_ref (kernels/ref/topm_ref.h) for the request rq[r] (host
     * memory), after the row's edits (edits[rq[r].edit0 ..], host memory) are applied to x in
     * place: sampling where only a few KB per row leave the device */
    void (*topm)(hearth_backend *be, float *x, int64_t n_rows, int64_t n, const hearth_topm_req *rq,
                 const hearth_topm_edit *edits, int32_t n_edits, hearth_topm *out);
    void (*destroy)(hearth_backend *be);
};

struct hearth_backend {
    const struct hearth_backend_i *iface;
    void                          *ctx;
    hearth_numerics                nx;  /* as made with (hearth_backend_numerics) */
};

/* The CPU backend on a pool of n_threads (<= 0: all CPUs). max_tok and max_width size the
 * matmul scratch (activation rows quantized once per matmul), max_ctx the attention scores
 * (tokens of the longest sequence). nx: the numerics (NULL: the default, resolved); the CPU
 * reads its switches (its arithmetic is the kernel set's). NULL on failure. */
hearth_backend *hearth_backend_cpu_create(int n_threads, int64_t max_tok, int64_t max_width, int64_t max_ctx,
                                          const hearth_numerics *nx);
void            hearth_backend_destroy(hearth_backend *be); /* accepts NULL */
int             hearth_backend_cpu_threads(const hearth_backend *be);

/* The CUDA backend on GPU `device` (0 = the first), for steps of up to max_tok tokens, computing
 * with numerics nx (NULL: the default, resolved). NULL when hearth was built without CUDA
 * (HEARTH_CUDA), no GPU is usable, or it is out of memory; why is in err. */
hearth_backend *hearth_backend_cuda_create(int device, int64_t max_tok, const hearth_numerics *nx, hearth_err *err);
bool            hearth_cuda_built(void);     /* compiled with the CUDA backend */
int             hearth_cuda_device_count(void); /* usable GPUs (0 without CUDA or a driver) */

/* "auto", "cpu", "cuda" -> *out; false for anything else. */
bool            hearth_device_parse(const char *s, hearth_device *out);
const char     *hearth_device_name(hearth_device d);
void            hearth_backend_get_info(hearth_backend *be, hearth_backend_info *out);
/* The numerics the backend was made with (tier resolved). */
hearth_numerics hearth_backend_numerics(const hearth_backend *be);
const char     *hearth_backend_name(const hearth_backend *be); /* "cpu", "cuda" */
/* Are its buffers host memory (upload and download plain copies)? For callers that may read a
 * buffer directly (debug hooks) or keep host-side structures instead (the KV pool's host mode). */
static inline bool hearth_backend_host_memory(const hearth_backend *be) { return be->iface->host; }

/* Can matmul and get_rows take weights of this type; can attention run heads of head_dim with
 * group query heads per kv head. */
static inline bool hearth_backend_supports(hearth_backend *be, hearth_type type) {
    return be->iface->supports(be, type);
}
static inline bool hearth_backend_attn_supports(hearth_backend *be, int32_t head_dim, int32_t group) {
    return !be->iface->attn_supports || be->iface->attn_supports(be, head_dim, group);
}

/* Steps (see the op table's stage, step and step_replays). */
static inline void *hearth_step_stage(hearth_backend *be, int slot, const void *host, size_t bytes, bool upload) {
    return be->iface->stage ? be->iface->stage(be, slot, host, bytes, upload) : (void *)host;
}
static inline bool hearth_step_replays(hearth_backend *be, int64_t n_tok) {
    return be->iface->step_replays && be->iface->step_replays(be, n_tok);
}
static inline void hearth_step_run(hearth_backend *be, uint64_t key, int64_t n_tok, void (*run)(void *ctx),
                                   void *ctx) {
    if (be->iface->step) be->iface->step(be, key, n_tok, run, ctx);
    else run(ctx);
}

/* Buffers (see Memory above). */
static inline void *hearth_buf_alloc(hearth_backend *be, size_t bytes) { return be->iface->alloc(be, bytes); }
static inline void hearth_buf_free(hearth_backend *be, void *p) { be->iface->free(be, p); }
static inline void hearth_buf_upload(hearth_backend *be, void *dst, const void *src, size_t bytes) {
    be->iface->upload(be, dst, src, bytes);
}
static inline void hearth_buf_download(hearth_backend *be, void *dst, const void *src, size_t bytes) {
    be->iface->download(be, dst, src, bytes);
}

/* Thin wrappers so model code reads as a list of ops. */
static inline void hearth_op_matmul(hearth_backend *be, const hearth_weight *w, const float *x, int64_t n_tok,
                                    float *y, int64_t ldy) { be->iface->matmul(be, w, x, n_tok, y, ldy); }
static inline void hearth_op_matmul_n(hearth_backend *be, const hearth_weight *const *w, float *const *y,
                                      const int64_t *ldy, int n, const float *x, int64_t n_tok) {
    if (be->iface->matmul_n) be->iface->matmul_n(be, w, y, ldy, n, x, n_tok);
    else for (int i = 0; i < n; i++) be->iface->matmul(be, w[i], x, n_tok, y[i], ldy[i]);
}
static inline void hearth_op_get_rows(hearth_backend *be, const hearth_weight *w, const int32_t *ids, int64_t n,
                                      float scale, float *out) { be->iface->get_rows(be, w, ids, n, scale, out); }
static inline void hearth_op_rmsnorm(hearth_backend *be, const float *x, const float *w, float *y, int64_t n_rows,
                                     int64_t dim, float eps) { be->iface->rmsnorm(be, x, w, y, n_rows, dim, eps); }
static inline void hearth_op_add_rmsnorm(hearth_backend *be, float *x, const float *r, const float *w, float *y,
                                         int64_t n_rows, int64_t dim, float eps) {
    if (be->iface->add_rmsnorm) {
        be->iface->add_rmsnorm(be, x, r, w, y, n_rows, dim, eps);
        return;
    }
    be->iface->add(be, x, r, n_rows * dim);
    be->iface->rmsnorm(be, x, w, y, n_rows, dim, eps);
}
static inline void hearth_op_rope(hearth_backend *be, float *x, int64_t n_tok, int32_t n_head, int32_t head_dim,
                                  int32_t n_rot, const int32_t *pos, const hearth_rope_params *rp) {
    be->iface->rope(be, x, n_tok, n_head, head_dim, n_rot, pos, rp);
}
static inline void hearth_op_kv_store(hearth_backend *be, const float *x, int64_t n_tok, int64_t width,
                                      const int32_t *seq, const int32_t *pos, void *cache,
                                      const hearth_kv_blocks *blocks, hearth_kv_type t) {
    be->iface->kv_store(be, x, n_tok, width, seq, pos, cache, blocks, t);
}
static inline void hearth_op_rope_store(hearth_backend *be, float *q, float *k, const float *v, int64_t n_tok,
                                        int32_t n_head, int32_t n_head_kv, int32_t head_dim, int32_t n_rot,
                                        int64_t v_width, const int32_t *pos, const hearth_rope_params *rp,
                                        const int32_t *seq, void *k_cache, void *v_cache,
                                        const hearth_kv_blocks *blocks, hearth_kv_type k_type,
                                        hearth_kv_type v_type) {
    if (be->iface->rope_store) {
        be->iface->rope_store(be, q, k, v, n_tok, n_head, n_head_kv, head_dim, n_rot, v_width, pos, rp, seq, k_cache,
                              v_cache, blocks, k_type, v_type);
        return;
    }
    be->iface->rope(be, q, n_tok, n_head, head_dim, n_rot, pos, rp);
    be->iface->rope(be, k, n_tok, n_head_kv, head_dim, n_rot, pos, rp);
    be->iface->kv_store(be, k, n_tok, (int64_t)n_head_kv * head_dim, seq, pos, k_cache, blocks, k_type);
    be->iface->kv_store(be, v, n_tok, v_width, seq, pos, v_cache, blocks, v_type);
}
static inline void hearth_op_attention(hearth_backend *be, const hearth_attn_args *a) { be->iface->attention(be, a); }
static inline void hearth_op_glu(hearth_backend *be, float *g, const float *u, int64_t n, hearth_glu_kind kind) {
    be->iface->glu(be, g, u, n, kind);
}
static inline void hearth_op_ffn_glu(hearth_backend *be, const hearth_weight *gate, const hearth_weight *up,
                                     const float *x, int64_t n_tok, float *g, float *u, hearth_glu_kind kind) {
    if (be->iface->ffn_glu) {
        be->iface->ffn_glu(be, gate, up, x, n_tok, g, u, kind);
        return;
    }
    const hearth_weight *w[2] = {gate, up};
    float *const y[2] = {g, u};
    const int64_t ld[2] = {gate->ne1, gate->ne1};
    hearth_op_matmul_n(be, w, y, ld, 2, x, n_tok);
    be->iface->glu(be, g, u, n_tok * gate->ne1, kind);
}
static inline void hearth_op_add_rows(hearth_backend *be, float *x, const float *b, int64_t n_rows, int64_t dim) {
    be->iface->add_rows(be, x, b, n_rows, dim);
}
static inline void hearth_op_add(hearth_backend *be, float *x, const float *y, int64_t n) { be->iface->add(be, x, y, n); }
static inline void hearth_op_scale(hearth_backend *be, float *x, int64_t n, float s) { be->iface->scale(be, x, n, s); }
static inline void hearth_op_hadamard(hearth_backend *be, float *x, int64_t n_rows, int64_t n) {
    be->iface->hadamard(be, x, n_rows, n);
}
static inline void hearth_op_softcap(hearth_backend *be, float *x, int64_t n, float cap) {
    be->iface->softcap(be, x, n, cap);
}
static inline void hearth_op_copy_rows(hearth_backend *be, const float *x, int64_t dim, const int32_t *rows, int64_t n,
                                       float *y) { be->iface->copy_rows(be, x, dim, rows, n, y); }
static inline bool hearth_backend_has_lora(const hearth_backend *be) { return be->iface->lora != NULL; }
/* Does the backend keep copies of host memory that hearth_backend_forget must drop? */
static inline bool hearth_backend_keeps_copies(const hearth_backend *be) { return be->iface->forget != NULL; }
static inline void hearth_backend_forget(hearth_backend *be, const void *host) {
    if (be->iface->forget) be->iface->forget(be, host);
}
static inline void hearth_op_lora(hearth_backend *be, const hearth_lora_seg *segs, int n_seg, const float *x,
                                  int64_t n_in, float *y, int64_t ldy, int64_t n_out) {
    be->iface->lora(be, segs, n_seg, x, n_in, y, ldy, n_out);
}
static inline bool hearth_backend_has_deltanet(const hearth_backend *be) { return be->iface->deltanet != NULL; }
static inline void hearth_op_deltanet(hearth_backend *be, const hearth_deltanet_args *a) { be->iface->deltanet(be, a); }
/* Does the backend run an encoder (layernorm, gelu_erf, attn_enc, pool_rows, l2norm)? */
static inline bool hearth_backend_has_encoder(const hearth_backend *be) {
    return be->iface->layernorm && be->iface->gelu_erf && be->iface->attn_enc && be->iface->attn_enc_ok &&
           be->iface->pool_rows && be->iface->l2norm;
}
static inline void hearth_op_layernorm(hearth_backend *be, const float *x, const float *w, const float *b, float *y,
                                       int64_t n_rows, int64_t dim, float eps) {
    be->iface->layernorm(be, x, w, b, y, n_rows, dim, eps);
}
static inline void hearth_op_gelu_erf(hearth_backend *be, float *x, int64_t n) { be->iface->gelu_erf(be, x, n); }
static inline void hearth_op_attn_enc(hearth_backend *be, const float *q, const float *k, const float *v, int64_t ld,
                                      float *out, int64_t ldo, int64_t n_seq, int32_t L, const int32_t *len,
                                      int32_t n_head, int32_t head_dim, float scale) {
    be->iface->attn_enc(be, q, k, v, ld, out, ldo, n_seq, L, len, n_head, head_dim, scale);
}
static inline bool hearth_backend_attn_enc_ok(hearth_backend *be, int32_t L, int32_t head_dim) {
    return be->iface->attn_enc_ok && be->iface->attn_enc_ok(be, L, head_dim);
}
static inline void hearth_op_pool_rows(hearth_backend *be, const float *x, int64_t n_seq, int32_t L, int64_t dim,
                                       const int32_t *len, int kind, float *out) {
    be->iface->pool_rows(be, x, n_seq, L, dim, len, kind, out);
}
static inline void hearth_op_l2norm(hearth_backend *be, float *x, int64_t n_rows, int64_t dim) {
    be->iface->l2norm(be, x, n_rows, dim);
}
static inline void hearth_op_argmax(hearth_backend *be, const float *x, int64_t n_rows, int64_t n, int32_t *out) {
    be->iface->argmax(be, x, n_rows, n, out);
}
static inline bool hearth_backend_has_topm(const hearth_backend *be) { return be->iface->topm != NULL; }
static inline void hearth_op_topm(hearth_backend *be, float *x, int64_t n_rows, int64_t n, const hearth_topm_req *rq,
                                  const hearth_topm_edit *edits, int32_t n_edits, hearth_topm *out) {
    be->iface->topm(be, x, n_rows, n, rq, edits, n_edits, out);
}
