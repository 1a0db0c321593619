/*
 * cuda_backend.c - the CUDA implementation of the backend op table (backend.h) on one GPU.
 *
 * Every op queues kernels (cuda_ops.h, one .cu per op) on the backend's one stream and returns;
 * download waits for the stream. Buffers are device memory. Weights arrive as host pointers
 * (the model's mapping and its f32 norm copies): the first op that sees one copies it to the
 * GPU and records host -> device in an open-addressing table, so the model code is the same
 * for every backend. A CUDA failure inside an op (a device fault, memory exhausted while copying a
 * weight) is not recoverable mid-step: it is logged and the process aborts. LoRA adapter
 * matrices go in the same table, until forget drops them (models/forward.c does once an adapter
 * is unmounted and its last request has ended); forget deletes with a backward shift, so the
 * table never fills with tombstones.
 *
 * LoRA (lora.cu): every segment of a call in one shrink and one expand launch, its x A^T rows in
 * a scratch buffer grown like the attention's. Steps with adapters are never captured as graphs
 * (models/forward.c gives them key 0: their segments change from step to step).
 *
 * The numerics (numerics.h) are fixed at create: the ref tier keeps f32 activations for every
 * matmul and the plain RMSNorm and GLU; l1 rounds activations to 8 bits per 32 values as
 * llama.cpp does. The switches: compiled-decode off never captures step graphs,
 * compiled-activations off runs ffn_glu as matmul_n then glu, fused-sdpa off runs the CUDA-core
 * attention one query head per block rather than one group (the same bits, keys read per head).
 *
 * The fused ops are those of the table (backend.h): add_rmsnorm, rope_store and ffn_glu (gate
 * and up of 16-bit or f32 weights with the GLU in one launch, the up product never written, as
 * its contract allows). No op leaves state for the next one: each reads only its arguments, and
 * the 8-bit activations a matmul makes are made again by every matmul.
 *
 * Steps: index arrays and logits are staged in two buffers the backend owns (stage); a step of
 * up to GRAPH_MAX_TOK tokens with a key is run plainly the first time, captured the second and
 * replayed after that (step).
 *
 * Thread rule: one thread drives a backend (the engine thread); the device is selected on
 * every entry, so that thread need not be the one that created it.
 */
#include "backend/backend.h"
#include "backend/cuda/cuda_ops.h"
#include "base/assert.h"
#include "base/log.h"
#include "base/size.h"
#include "tensor/dtype.h"

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert((int)HC_Q4_K == (int)HEARTH_TYPE_Q4_K && (int)HC_Q6_K == (int)HEARTH_TYPE_Q6_K &&
                   (int)HC_BF16 == (int)HEARTH_TYPE_BF16 && (int)HC_Q5_1 == (int)HEARTH_TYPE_Q5_1 &&
                   (int)HC_Q8_0 == (int)HEARTH_TYPE_Q8_0 && (int)HC_Q5_K == (int)HEARTH_TYPE_Q5_K,
               "hc type ids follow hearth_type");
_Static_assert(HC_LORA_MAX_RANK == HEARTH_LORA_MAX_RANK, "lora.cu's shared memory holds the largest rank");

typedef struct {
    const void *host; /* NULL = empty slot */
    void       *dev;
    size_t      bytes;
} weight_slot;

/* steps of up to this many tokens (decode) may be replayed as graphs */
enum { GRAPH_MAX_TOK = 8 };

typedef struct {
    int            device;
    bool           exact;    /* numerics tier ref: f32 activations */
    bool           fuse_glu; /* compiled-activations on (HEARTH_CUDA_FUSE_GLU=0 turns the fusion off for
                              * every backend of the process) */
    bool           per_head; /* fused-sdpa off: attention one query head per block */
    struct { void *p; size_t cap; } stage[HEARTH_STAGE_COUNT]; /* staging buffers of a step */
    cudaStream_t   stream;
    hc_matmul_ctx *mm;
    weight_slot   *map; /* open addressing, cap a power of two */
    size_t         map_cap, map_n, weight_bytes;
    float         *attn_scratch;
    size_t         attn_cap; /* floats */
    int32_t       *ids;      /* argmax output */
    size_t         ids_cap;
    hearth_topm_req *topm_rq; /* topm's requests, summaries and edits, device side */
    hearth_topm   *topm;
    size_t         topm_cap;
    hearth_topm_edit *topm_ed;
    size_t         topm_ed_cap;
    float         *lora_h;   /* the LoRA update's x A^T rows (lora.cu) */
    size_t         lora_cap; /* floats */
    char           name[96];
    /* step graphs: a key seen once is warm (its weights and scratch are in place), the second
     * time it is captured, then replayed */
    struct {
        uint64_t        key;
        int             state; /* 0 empty, 1 warm, 2 captured, 3 capture failed: never again */
        cudaGraphExec_t exec;
    } graphs[16];
    int            graph_next;
    bool           graphs_off; /* compiled-decode off, or HEARTH_CUDA_GRAPHS=0 */
} cuda_ctx;

static void check(cudaError_t e, const char *what) {
    if (e == cudaSuccess) return;
    hearth_log(HEARTH_LOG_ERROR, "cuda: %s: %s", what, cudaGetErrorString(e));
    hearth_abort(__FILE__, __LINE__, what);
}

static cuda_ctx *ctx_of(hearth_backend *be) {
    cuda_ctx *c = be->ctx;
    cudaSetDevice(c->device);
    return c;
}

/* Captured step graphs hold buffer addresses: forget them all when a buffer they may use moves. */
static void graphs_forget(cuda_ctx *c) {
    for (int i = 0; i < 16; i++) {
        if (c->graphs[i].state == 2) cudaGraphExecDestroy(c->graphs[i].exec);
        c->graphs[i].state = 0;
    }
}

/* ---- weights: copied on first sight ---- */

static size_t slot_of(const cuda_ctx *c, const void *host) {
    uint64_t h = (uint64_t)(uintptr_t)host * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 20) & (c->map_cap - 1);
}

/* Rehash into a table that holds need slots (a power of two: hearth_grow_cap doubles 1024). */
static void map_grow(cuda_ctx *c, size_t need) {
    size_t cap = 0;
    bool counted = hearth_grow_cap(c->map_cap, need, sizeof *c->map, 1024, &cap);
    HEARTH_ASSERT(counted); /* need counts weights of one model */
    weight_slot *old = c->map;
    size_t old_cap = c->map_cap;
    c->map = calloc(cap, sizeof *c->map);
    HEARTH_ASSERT(c->map);
    c->map_cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].host) continue;
        size_t j = slot_of(c, old[i].host);
        while (c->map[j].host) j = (j + 1) & (cap - 1);
        c->map[j] = old[i];
    }
    free(old);
}

static const void *weight_dev(cuda_ctx *c, const void *host, size_t bytes) {
    if (!host) return NULL;
    if ((c->map_n + 1) * 2 > c->map_cap) map_grow(c, (c->map_n + 1) * 2); /* kept at most half full */
    size_t j = slot_of(c, host);
    while (c->map[j].host && c->map[j].host != host) j = (j + 1) & (c->map_cap - 1);
    weight_slot *w = &c->map[j];
    if (w->host && w->bytes >= bytes) return w->dev;
    if (w->host) { /* seen before with a shorter length: copy it again, whole */
        check(cudaStreamSynchronize(c->stream), "synchronize");
        graphs_forget(c);
        cudaFree(w->dev);
        c->weight_bytes -= w->bytes;
    } else c->map_n++;
    w->host = host;
    w->bytes = bytes;
    check(cudaMalloc(&w->dev, bytes ? bytes : 1), "allocating a weight");
    check(cudaMemcpyAsync(w->dev, host, bytes, cudaMemcpyHostToDevice, c->stream), "copying a weight");
    c->weight_bytes += bytes;
    return w->dev;
}

/* Drop host's copy, if any (backend.h, forget): the slot is emptied and the rest of its run of
 * occupied slots put back where a lookup will find them (deletion by backward shift). */
static void cu_forget(hearth_backend *be, const void *host) {
    cuda_ctx *c = ctx_of(be);
    if (!host || c->map_cap == 0) return;
    const size_t mask = c->map_cap - 1;
    size_t j = slot_of(c, host);
    while (c->map[j].host && c->map[j].host != host) j = (j + 1) & mask;
    if (!c->map[j].host) return;
    check(cudaStreamSynchronize(c->stream), "synchronize");
    graphs_forget(c); /* a captured step may hold the address */
    cudaFree(c->map[j].dev);
    c->weight_bytes -= c->map[j].bytes;
    c->map_n--;
    c->map[j].host = NULL;
    for (size_t i = (j + 1) & mask; c->map[i].host; i = (i + 1) & mask) {
        weight_slot w = c->map[i];
        c->map[i].host = NULL;
        size_t k = slot_of(c, w.host);
        while (c->map[k].host) k = (k + 1) & mask;
        c->map[k] = w;
    }
}

/* A weight's bytes run from its first row to the end of its last row's ne0 elements: a view of
 * some columns (rows row_bytes apart but narrower, as the Gemma 4 assistant's pre-projection
 * halves) ends before the next row's start, so ne1 * row_bytes would read past the tensor. */
static const void *wdev(cuda_ctx *c, const hearth_weight *w) {
    size_t last = hearth_row_size(w->type, w->ne0);
    if (w->ne1 <= 0 || last == 0 || last > w->row_bytes) last = w->row_bytes;
    return weight_dev(c, w->data, w->ne1 > 0 ? (size_t)(w->ne1 - 1) * w->row_bytes + last : 0);
}

/* ---- ops ---- */

static void cu_matmul(hearth_backend *be, const hearth_weight *w, const float *x, int64_t n_tok, float *y,
                      int64_t ldy) {
    cuda_ctx *c = ctx_of(be);
    bool exact = c->exact;
    int e = hc_matmul(c->mm, (int)w->type, wdev(c, w), w->row_bytes, w->ne1, w->ne0, x, n_tok, y, ldy, exact);
    if (e) {
        hearth_log(HEARTH_LOG_ERROR, "cuda: matmul %s [%lld x %lld] x %lld tokens failed (%d)", hearth_type_name(w->type),
                   (long long)w->ne1, (long long)w->ne0, (long long)n_tok, e);
        hearth_abort(__FILE__, __LINE__, "matmul");
    }
}

/* q, k and v (or gate and up) together when they share type and width (one launch at decode
 * sizes; above them the activations rounded once for all, hc_matmul_n); else one each */
static void cu_matmul_n(hearth_backend *be, const hearth_weight *const *w, float *const *y, const int64_t *ldy, int n,
                        const float *x, int64_t n_tok) {
    cuda_ctx *c = ctx_of(be);
    bool same = hc_matmul_n_ok(n, 1) && n_tok >= 1;
    for (int i = 1; i < n && same; i++) same = w[i]->type == w[0]->type && w[i]->ne0 == w[0]->ne0 && w[i]->row_bytes == w[0]->row_bytes;
    if (!same) {
        for (int i = 0; i < n; i++) cu_matmul(be, w[i], x, n_tok, y[i], ldy[i]);
        return;
    }
    const void *dev[4];
    int64_t rows[4];
    for (int i = 0; i < n; i++) {
        dev[i] = wdev(c, w[i]);
        rows[i] = w[i]->ne1;
    }
    bool exact = c->exact;
    int e = hc_matmul_n(c->mm, (int)w[0]->type, dev, w[0]->row_bytes, rows, n, w[0]->ne0, x, n_tok, y, ldy, exact);
    if (e) {
        hearth_log(HEARTH_LOG_ERROR, "cuda: %d matmuls %s x %lld tokens failed (%d)", n, hearth_type_name(w[0]->type),
                   (long long)n_tok, e);
        hearth_abort(__FILE__, __LINE__, "matmul_n");
    }
}

static void cu_get_rows(hearth_backend *be, const hearth_weight *w, const int32_t *ids, int64_t n, float scale,
                        float *out) {
    cuda_ctx *c = ctx_of(be);
    hc_get_rows((int)w->type, wdev(c, w), w->row_bytes, w->ne0, ids, n, scale, out, c->stream);
}

static void cu_rmsnorm(hearth_backend *be, const float *x, const float *w, float *y, int64_t n_rows, int64_t dim,
                       float eps) {
    cuda_ctx *c = ctx_of(be);
    const float *wd = weight_dev(c, w, (size_t)dim * sizeof(float));
    hc_rmsnorm(x, wd, y, n_rows, dim, eps, c->stream);
}

static void cu_add_rmsnorm(hearth_backend *be, float *x, const float *r, const float *w, float *y, int64_t n_rows,
                           int64_t dim, float eps) {
    cuda_ctx *c = ctx_of(be);
    const float *wd = weight_dev(c, w, (size_t)dim * sizeof(float));
    hc_add_rmsnorm(x, r, wd, y, n_rows, dim, eps, c->stream);
}

static void cu_rope(hearth_backend *be, float *x, int64_t n_tok, int32_t n_head, int32_t head_dim, int32_t n_rot,
                    const int32_t *pos, const hearth_rope_params *rp) {
    cuda_ctx *c = ctx_of(be);
    const float *inv = weight_dev(c, rp->inv_freq, (size_t)(n_rot / 2) * sizeof(float));
    hc_rope(x, n_tok, n_head, head_dim, n_rot, pos, inv, rp->theta_scale, rp->freq_scale,
            rp->mscale > 0.0f ? rp->mscale : 1.0f, rp->neox, c->stream);
}

/* the kernels' id of a cache element type (cuda_ops.h) */
static int hc_kv_of(hearth_kv_type t) {
    switch (t) {
    case HEARTH_KV_F16: return HC_F16;
    case HEARTH_KV_Q8_0: return HC_Q8_0;
    case HEARTH_KV_Q4_0: return HC_Q4_0;
    case HEARTH_KV_T2:
    case HEARTH_KV_T3:
    case HEARTH_KV_T4:
    case HEARTH_KV_T5:
    case HEARTH_KV_T8: return HC_TURBO0 + hearth_kv_turbo_bits(t);
    default: return HC_F32;
    }
}

static void cu_rope_store(hearth_backend *be, float *q, float *k, const float *v, int64_t n_tok, int32_t n_head,
                          int32_t n_head_kv, int32_t head_dim, int32_t n_rot, int64_t v_width, const int32_t *pos,
                          const hearth_rope_params *rp, const int32_t *seq, void *k_cache, void *v_cache,
                          const hearth_kv_blocks *bl, hearth_kv_type k_type, hearth_kv_type v_type) {
    cuda_ctx *c = ctx_of(be);
    hc_rope_store_args a = {
        .q = q, .k = k, .v = v, .n_tok = n_tok, .v_width = v_width, .n_head = n_head, .n_head_kv = n_head_kv,
        .head_dim = head_dim, .n_rot = n_rot, .pos = pos, .seq = seq,
        .inv_freq = weight_dev(c, rp->inv_freq, (size_t)(n_rot / 2) * sizeof(float)),
        .theta_scale = rp->theta_scale, .freq_scale = rp->freq_scale, .mscale = rp->mscale > 0.0f ? rp->mscale : 1.0f,
        .neox = rp->neox, .k_type = hc_kv_of(k_type), .v_type = hc_kv_of(v_type), .k_cache = k_cache,
        .v_cache = v_cache, .table = bl->table,
        .max_blocks = bl->max_blocks, .block_size = bl->block_size};
    hc_rope_store(&a, c->stream);
}

static void cu_kv_store(hearth_backend *be, const float *x, int64_t n_tok, int64_t width, const int32_t *seq,
                        const int32_t *pos, void *cache, const hearth_kv_blocks *bl, hearth_kv_type type) {
    cuda_ctx *c = ctx_of(be);
    HEARTH_ASSERT(!hearth_kv_type_quantized(type) || width % HEARTH_KV_QBLOCK == 0);
    HEARTH_ASSERT(!hearth_kv_type_turbo(type) || width % HEARTH_KV_TURBO_ROT == 0);
    hc_kv_store(x, n_tok, width, seq, pos, cache, bl->table, bl->max_blocks, bl->block_size, hc_kv_of(type),
                c->stream);
}

static void cu_attention(hearth_backend *be, const hearth_attn_args *a) {
    cuda_ctx *c = ctx_of(be);
    HEARTH_ASSERT(a->head_dim == a->head_dim_v);
    HEARTH_ASSERT((!hearth_kv_type_quantized(a->k_type) && !hearth_kv_type_quantized(a->v_type)) ||
                  a->head_dim % HEARTH_KV_QBLOCK == 0); /* the pool refuses other heads (kv_pool.c) */
    /* turbo: keys and values both (the query is rotated for the keys, the output back for the
     * values), heads of whole 64-element pieces */
    HEARTH_ASSERT(hearth_kv_type_turbo(a->k_type) == hearth_kv_type_turbo(a->v_type));
    HEARTH_ASSERT(!hearth_kv_type_turbo(a->k_type) || a->head_dim % HEARTH_KV_TURBO_ROT == 0);
    HEARTH_ASSERT(hc_attention_supported(a->head_dim, a->n_head / a->n_head_kv));
    hc_attn h = {.n_tok = a->n_tok, .n_head = a->n_head, .n_head_kv = a->n_head_kv, .head_dim = a->head_dim,
                 .q = a->q, .out = a->out, .pos = a->pos, .seq = a->seq, .k = a->k, .v = a->v,
                 .table = a->blocks.table, .max_blocks = a->blocks.max_blocks, .block_size = a->blocks.block_size,
                 .k_type = hc_kv_of(a->k_type), .v_type = hc_kv_of(a->v_type), .n_swa = a->n_swa,
                 .scale = a->scale, .softcap = a->softcap,
                 .max_len = a->max_len, .min_run = a->min_run, .max_run = a->max_run, .per_head = c->per_head};
    size_t need = hc_attention_scratch(&h);
    if (need > c->attn_cap) {
        check(cudaStreamSynchronize(c->stream), "synchronize");
        graphs_forget(c);
        cudaFree(c->attn_scratch);
        c->attn_scratch = NULL;
        c->attn_cap = 0;
        check(cudaMalloc((void **)&c->attn_scratch, need * sizeof(float)), "allocating attention scratch");
        c->attn_cap = need;
    }
    hc_attention(&h, c->attn_scratch, c->stream);
}

static void cu_glu(hearth_backend *be, float *g, const float *u, int64_t n, hearth_glu_kind kind) {
    cuda_ctx *c = ctx_of(be);
    hc_glu(g, u, n, (int)kind, c->stream);
}

/* gate and up of 16-bit or f32 weights at decode sizes in one launch with the GLU (u is never
 * written: the contract of ffn_glu); every other case is matmul_n, then glu */
static void cu_ffn_glu(hearth_backend *be, const hearth_weight *gate, const hearth_weight *up, const float *x,
                       int64_t n_tok, float *g, float *u, hearth_glu_kind kind) {
    cuda_ctx *c = ctx_of(be);
    const hearth_type t = gate->type;
    if (c->fuse_glu && hc_matmul_glu_on() && n_tok <= HC_GEMV_MAX_TOK && up->type == t && up->ne1 == gate->ne1 &&
        up->ne0 == gate->ne0 && up->row_bytes == gate->row_bytes &&
        (t == HEARTH_TYPE_F32 || t == HEARTH_TYPE_F16 || t == HEARTH_TYPE_BF16) &&
        hc_matmul_glu(c->mm, (int)t, wdev(c, gate), wdev(c, up), gate->row_bytes, gate->ne1, gate->ne0, x, n_tok, g,
                      gate->ne1, (int)kind))
        return;
    const hearth_weight *w[2] = {gate, up};
    float *const y[2] = {g, u};
    const int64_t ld[2] = {gate->ne1, gate->ne1};
    cu_matmul_n(be, w, y, ld, 2, x, n_tok);
    cu_glu(be, g, u, n_tok * gate->ne1, kind);
}

/* ---- an encoder's ops (encoder.cu) ---- */

static void cu_layernorm(hearth_backend *be, const float *x, const float *w, const float *b, float *y, int64_t n_rows,
                         int64_t dim, float eps) {
    cuda_ctx *c = ctx_of(be);
    hc_layernorm(x, weight_dev(c, w, (size_t)dim * sizeof(float)), weight_dev(c, b, (size_t)dim * sizeof(float)), y,
                 n_rows, dim, eps, c->stream);
}

static void cu_gelu_erf(hearth_backend *be, float *x, int64_t n) { hc_gelu_erf(x, n, ctx_of(be)->stream); }

static void cu_attn_enc(hearth_backend *be, const float *q, const float *k, const float *v, int64_t ld, float *out,
                        int64_t ldo, int64_t n_seq, int32_t L, const int32_t *len, int32_t n_head, int32_t head_dim,
                        float scale) {
    hc_attn_enc(q, k, v, ld, out, ldo, n_seq, L, len, n_head, head_dim, scale, ctx_of(be)->stream);
}

static bool cu_attn_enc_ok(hearth_backend *be, int32_t L, int32_t head_dim) {
    (void)be;
    return hc_attn_enc_supported(L, head_dim);
}

static void cu_pool_rows(hearth_backend *be, const float *x, int64_t n_seq, int32_t L, int64_t dim, const int32_t *len,
                         int kind, float *out) {
    hc_pool(x, n_seq, L, dim, len, kind, out, ctx_of(be)->stream);
}

static void cu_l2norm(hearth_backend *be, float *x, int64_t n_rows, int64_t dim) {
    hc_l2norm(x, n_rows, dim, ctx_of(be)->stream);
}

static void cu_add_rows(hearth_backend *be, float *x, const float *b, int64_t n_rows, int64_t dim) {
    cuda_ctx *c = ctx_of(be);
    hc_add_rows(x, weight_dev(c, b, (size_t)dim * sizeof(float)), n_rows, dim, c->stream);
}

static void cu_add(hearth_backend *be, float *x, const float *y, int64_t n) {
    cuda_ctx *c = ctx_of(be);
    hc_add(x, y, n, c->stream);
}

static void cu_scale(hearth_backend *be, float *x, int64_t n, float sc) {
    cuda_ctx *c = ctx_of(be);
    hc_scale(x, n, sc, c->stream);
}

static void cu_hadamard(hearth_backend *be, float *x, int64_t n_rows, int64_t n) {
    cuda_ctx *c = ctx_of(be);
    hc_hadamard(x, n_rows, n, c->stream);
}

static void cu_softcap(hearth_backend *be, float *x, int64_t n, float cap) {
    cuda_ctx *c = ctx_of(be);
    hc_softcap(x, n, cap, c->stream);
}

static void cu_copy_rows(hearth_backend *be, const float *x, int64_t dim, const int32_t *rows, int64_t n, float *y) {
    cuda_ctx *c = ctx_of(be);
    hc_copy_rows(x, dim, rows, n, y, c->stream);
}

/* The segments' matrices to the device on first sight (keyed by host address, as weights),
 * then lora.cu, HC_LORA_MAX_SEG segments at a time. */
static void cu_lora(hearth_backend *be, const hearth_lora_seg *segs, int n_seg, const float *x, int64_t n_in, float *y,
                    int64_t ldy, int64_t n_out) {
    cuda_ctx *c = ctx_of(be);
    hc_lora_seg ds[HC_LORA_MAX_SEG];
    for (int s0 = 0; s0 < n_seg; s0 += HC_LORA_MAX_SEG) {
        int n = n_seg - s0 < HC_LORA_MAX_SEG ? n_seg - s0 : HC_LORA_MAX_SEG;
        for (int i = 0; i < n; i++) {
            const hearth_lora_seg *sg = &segs[s0 + i];
            HEARTH_ASSERT(sg->r > 0 && sg->r <= HEARTH_LORA_MAX_RANK && sg->n >= 0);
            size_t es = sg->half ? sizeof(uint16_t) : sizeof(float);
            ds[i] = (hc_lora_seg){.t0 = sg->t0, .n = sg->n, .r = sg->r, .scale = sg->scale, .half = sg->half,
                                  .a = weight_dev(c, sg->a, (size_t)sg->r * (size_t)n_in * es),
                                  .b = weight_dev(c, sg->b, (size_t)n_out * (size_t)sg->r * es)};
        }
        size_t need = hc_lora_scratch(ds, n);
        if (need > c->lora_cap) {
            check(cudaStreamSynchronize(c->stream), "synchronize");
            graphs_forget(c);
            cudaFree(c->lora_h);
            c->lora_h = NULL;
            c->lora_cap = 0;
            check(cudaMalloc((void **)&c->lora_h, need * sizeof(float)), "allocating LoRA scratch");
            c->lora_cap = need;
        }
        hc_lora(ds, n, x, n_in, y, ldy, n_out, c->lora_h, c->stream);
    }
}

static void cu_argmax(hearth_backend *be, const float *x, int64_t n_rows, int64_t n, int32_t *out) {
    cuda_ctx *c = ctx_of(be);
    if (n_rows <= 0) return;
    if ((size_t)n_rows > c->ids_cap) {
        check(cudaStreamSynchronize(c->stream), "synchronize");
        cudaFree(c->ids);
        check(cudaMalloc((void **)&c->ids, (size_t)n_rows * sizeof(int32_t)), "allocating ids");
        c->ids_cap = (size_t)n_rows;
    }
    hc_argmax(x, n_rows, n, c->ids, c->stream);
    check(cudaMemcpyAsync(out, c->ids, (size_t)n_rows * sizeof(int32_t), cudaMemcpyDeviceToHost, c->stream),
          "copying ids");
    check(cudaStreamSynchronize(c->stream), "argmax");
}

static void cu_topm(hearth_backend *be, float *x, int64_t n_rows, int64_t n, const hearth_topm_req *rq,
                    const hearth_topm_edit *edits, int32_t n_edits, hearth_topm *out) {
    cuda_ctx *c = ctx_of(be);
    if (n_rows <= 0) return;
    if ((size_t)n_rows > c->topm_cap) {
        check(cudaStreamSynchronize(c->stream), "synchronize");
        cudaFree(c->topm_rq);
        cudaFree(c->topm);
        check(cudaMalloc((void **)&c->topm_rq, (size_t)n_rows * sizeof *rq), "allocating topm requests");
        check(cudaMalloc((void **)&c->topm, (size_t)n_rows * sizeof *out), "allocating topm summaries");
        c->topm_cap = (size_t)n_rows;
    }
    if (n_edits > 0 && (size_t)n_edits > c->topm_ed_cap) {
        check(cudaStreamSynchronize(c->stream), "synchronize");
        cudaFree(c->topm_ed);
        size_t cap = (size_t)n_edits * 2;
        check(cudaMalloc((void **)&c->topm_ed, cap * sizeof *edits), "allocating topm edits");
        c->topm_ed_cap = cap;
    }
    check(cudaMemcpyAsync(c->topm_rq, rq, (size_t)n_rows * sizeof *rq, cudaMemcpyHostToDevice, c->stream),
          "copying topm requests");
    if (n_edits > 0) {
        check(cudaMemcpyAsync(c->topm_ed, edits, (size_t)n_edits * sizeof *edits, cudaMemcpyHostToDevice, c->stream),
              "copying topm edits");
        hc_topm_edit(x, n_rows, n, c->topm_rq, c->topm_ed, c->stream);
    }
    hc_topm(x, n_rows, n, c->topm_rq, c->topm, c->stream);
    check(cudaMemcpyAsync(out, c->topm, (size_t)n_rows * sizeof *out, cudaMemcpyDeviceToHost, c->stream),
          "copying topm summaries");
    check(cudaStreamSynchronize(c->stream), "topm");
}

static bool cu_supports(hearth_backend *be, hearth_type type) {
    (void)be;
    return hc_type_supported((int)type);
}

static bool cu_attn_supports(hearth_backend *be, int32_t head_dim, int32_t group) {
    (void)be;
    return hc_attention_supported(head_dim, group);
}

/* ---- step graphs ---- */

enum { GRAPH_NONE = 0, GRAPH_LAUNCHED, GRAPH_CAPTURING };

/* GRAPH_LAUNCHED (the step recorded under key ran again), GRAPH_CAPTURING (run the ops, then
 * graph_end), or GRAPH_NONE (run them plainly) */
static int graph_begin(hearth_backend *be, uint64_t key) {
    cuda_ctx *c = ctx_of(be);
    for (int i = 0; i < 16; i++) {
        if (c->graphs[i].state == 0 || c->graphs[i].key != key) continue;
        if (c->graphs[i].state == 2) {
            check(cudaGraphLaunch(c->graphs[i].exec, c->stream), "launching a step graph");
            return GRAPH_LAUNCHED;
        }
        if (c->graphs[i].state == 3) return GRAPH_NONE;
        if (cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
            cudaGetLastError();
            c->graphs[i].state = 3;
            return GRAPH_NONE;
        }
        return GRAPH_CAPTURING;
    }
    int i = c->graph_next;
    c->graph_next = (c->graph_next + 1) % 16;
    if (c->graphs[i].state == 2) cudaGraphExecDestroy(c->graphs[i].exec);
    c->graphs[i].key = key;
    c->graphs[i].state = 1;
    return GRAPH_NONE;
}

/* false: the capture failed and nothing ran */
static bool graph_end(hearth_backend *be, uint64_t key) {
    cuda_ctx *c = ctx_of(be);
    int i = 0;
    while (i < 16 && !(c->graphs[i].key == key && c->graphs[i].state == 1)) i++;
    cudaGraph_t g = NULL;
    cudaError_t e = cudaStreamEndCapture(c->stream, &g);
    if (e == cudaSuccess) e = cudaGraphInstantiate(&c->graphs[i < 16 ? i : 0].exec, g, 0);
    if (g) cudaGraphDestroy(g);
    if (e != cudaSuccess || i == 16) {
        hearth_log(HEARTH_LOG_WARN, "cuda: a step could not be captured as a graph (%s); it runs op by op",
                   cudaGetErrorString(e));
        cudaGetLastError();
        if (i < 16) c->graphs[i].state = 3;
        return false;
    }
    c->graphs[i].state = 2;
    check(cudaGraphLaunch(c->graphs[i].exec, c->stream), "launching a step graph");
    return true;
}

/* Decode-sized steps are replayable whether or not graphs are on: with compiled-decode off
 * their ops get the same arguments (the attention split sized for the context) and only the
 * capture is left out, so the bits are the same. */
static bool cu_step_replays(hearth_backend *be, int64_t n_tok) {
    (void)be;
    return n_tok <= GRAPH_MAX_TOK;
}

static void cu_step(hearth_backend *be, uint64_t key, int64_t n_tok, void (*run)(void *ctx), void *ctx) {
    const cuda_ctx *c = be->ctx;
    int g = key != 0 && !c->graphs_off && cu_step_replays(be, n_tok) ? graph_begin(be, key) : GRAPH_NONE;
    if (g == GRAPH_LAUNCHED) return;
    run(ctx);
    if (g == GRAPH_CAPTURING && !graph_end(be, key)) run(ctx); /* the capture failed: run the ops plainly */
}

/* ---- buffers ---- */

static void *cu_alloc(hearth_backend *be, size_t bytes) {
    cuda_ctx *c = ctx_of(be);
    void *p = NULL;
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky-free error state of a failed allocation */
        return NULL;
    }
    check(cudaMemsetAsync(p, 0, bytes, c->stream), "clearing a buffer");
    return p;
}

static void cu_free(hearth_backend *be, void *p) {
    if (!p) return;
    cuda_ctx *c = ctx_of(be);
    cudaStreamSynchronize(c->stream);
    cudaFree(p);
}

static void cu_upload(hearth_backend *be, void *dst, const void *src, size_t bytes) {
    cuda_ctx *c = ctx_of(be);
    if (bytes) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, c->stream), "upload");
}

static void cu_download(hearth_backend *be, void *dst, const void *src, size_t bytes) {
    cuda_ctx *c = ctx_of(be);
    if (bytes) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, c->stream), "download");
    check(cudaStreamSynchronize(c->stream), "download");
}

static void *cu_stage(hearth_backend *be, int slot, const void *host, size_t bytes, bool upload) {
    cuda_ctx *c = ctx_of(be);
    HEARTH_ASSERT(slot >= 0 && slot < HEARTH_STAGE_COUNT);
    if (!c->stage[slot].p || bytes > c->stage[slot].cap) { /* grown: captured steps hold the old address */
        check(cudaStreamSynchronize(c->stream), "synchronize");
        graphs_forget(c);
        cudaFree(c->stage[slot].p);
        c->stage[slot].p = NULL;
        c->stage[slot].cap = 0;
        if (cudaMalloc(&c->stage[slot].p, bytes ? bytes : 64) != cudaSuccess) {
            cudaGetLastError();
            c->stage[slot].p = NULL;
            return NULL;
        }
        c->stage[slot].cap = bytes;
    }
    if (upload && bytes) check(cudaMemcpyAsync(c->stage[slot].p, host, bytes, cudaMemcpyHostToDevice, c->stream), "upload");
    return c->stage[slot].p;
}

static void cu_info(hearth_backend *be, hearth_backend_info *out) {
    cuda_ctx *c = ctx_of(be);
    memset(out, 0, sizeof *out);
    snprintf(out->device, sizeof out->device, "%s", c->name);
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) == cudaSuccess) {
        out->mem_total = tot;
        out->mem_free = fr;
    }
}

static void cu_destroy(hearth_backend *be) {
    cuda_ctx *c = be->ctx;
    if (c) {
        cudaSetDevice(c->device);
        if (c->stream) cudaStreamSynchronize(c->stream);
        for (size_t i = 0; i < c->map_cap; i++)
            if (c->map[i].host) cudaFree(c->map[i].dev);
        free(c->map);
        for (int i = 0; i < 16; i++)
            if (c->graphs[i].state == 2) cudaGraphExecDestroy(c->graphs[i].exec);
        cudaFree(c->attn_scratch);
        cudaFree(c->ids);
        cudaFree(c->topm_rq);
        cudaFree(c->topm);
        cudaFree(c->topm_ed);
        cudaFree(c->lora_h);
        for (int i = 0; i < HEARTH_STAGE_COUNT; i++) cudaFree(c->stage[i].p);
        hc_matmul_destroy(c->mm);
        if (c->stream) cudaStreamDestroy(c->stream);
        free(c);
    }
    free(be);
}

static const struct hearth_backend_i cuda_iface = {
    .name = "cuda",
    .host = false,
    .alloc = cu_alloc,
    .free = cu_free,
    .upload = cu_upload,
    .download = cu_download,
    .info = cu_info,
    .supports = cu_supports,
    .attn_supports = cu_attn_supports,
    .stage = cu_stage,
    .step = cu_step,
    .step_replays = cu_step_replays,
    .matmul = cu_matmul,
    .matmul_n = cu_matmul_n,
    .get_rows = cu_get_rows,
    .rmsnorm = cu_rmsnorm,
    .add_rmsnorm = cu_add_rmsnorm,
    .rope = cu_rope,
    .kv_store = cu_kv_store,
    .rope_store = cu_rope_store,
    .attention = cu_attention,
    .glu = cu_glu,
    .ffn_glu = cu_ffn_glu,
    .add_rows = cu_add_rows,
    .layernorm = cu_layernorm,
    .gelu_erf = cu_gelu_erf,
    .attn_enc = cu_attn_enc,
    .attn_enc_ok = cu_attn_enc_ok,
    .pool_rows = cu_pool_rows,
    .l2norm = cu_l2norm,
    .add = cu_add,
    .scale = cu_scale,
    .hadamard = cu_hadamard,
    .softcap = cu_softcap,
    .copy_rows = cu_copy_rows,
    .lora = cu_lora,
    .forget = cu_forget,
    .argmax = cu_argmax,
    .topm = cu_topm,
    .destroy = cu_destroy,
};

bool hearth_cuda_built(void) { return true; }

int hearth_cuda_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

hearth_backend *hearth_backend_cuda_create(int device, int64_t max_tok, const hearth_numerics *nx, hearth_err *err) {
    (void)max_tok;
    int n = hearth_cuda_device_count();
    if (n <= 0) {
        hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "no CUDA device is available");
        return NULL;
    }
    if (device < 0 || device >= n) {
        hearth_err_set(err, HEARTH_E_INVALID, -1, "CUDA device %d does not exist (%d found)", device, n);
        return NULL;
    }
    hearth_backend *be = calloc(1, sizeof *be);
    cuda_ctx *c = calloc(1, sizeof *c);
    if (!be || !c) {
        free(be);
        free(c);
        hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        return NULL;
    }
    be->iface = &cuda_iface;
    be->ctx = c;
    be->nx = hearth_numerics_resolve(nx ? *nx : (hearth_numerics){0});
    c->device = device;
    c->exact = be->nx.tier == HEARTH_NUMERICS_REF;
    struct cudaDeviceProp prop;
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaGetDeviceProperties(&prop, device);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "CUDA device %d: %s", device, cudaGetErrorString(e));
        cu_destroy(be);
        return NULL;
    }
    snprintf(c->name, sizeof c->name, "%.95s", prop.name);
    const char *gr = getenv("HEARTH_CUDA_GRAPHS");
    c->graphs_off = be->nx.no_compiled_decode || (gr && !strcmp(gr, "0"));
    /* comparisons (docs/cuda.md): the matrix-vector layout and in-kernel 8-bit activations */
    const char *mv = getenv("HEARTH_CUDA_MV"), *fq = getenv("HEARTH_CUDA_FUSE_Q8");
    const int mode = mv && !strcmp(mv, "waves") ? HC_MV_WAVES : mv && !strcmp(mv, "persist") ? HC_MV_PERSIST : HC_MV_AUTO;
    hc_mv_configure(mode, 0, 0);
    const char *mr = getenv("HEARTH_CUDA_MV_ROWS");
    hc_mv_rows_configure(mr && !strcmp(mr, "1") ? 1 : 4);
    hc_q8_fuse_configure(fq && !strcmp(fq, "1"));
    const char *sk = getenv("HEARTH_CUDA_SKINNY"), *skb = getenv("HEARTH_CUDA_SKINNY_BLOCKS"),
               *sk16 = getenv("HEARTH_CUDA_SKINNY_16_MB");
    hc_skinny_configure(sk ? atoi(sk) : -1, skb ? atoi(skb) : 0, sk16 ? atol(sk16) : -1);
    const char *fg = getenv("HEARTH_CUDA_FUSE_GLU");
    hc_glu_fuse_configure(!(fg && !strcmp(fg, "0"))); /* the process's; the switch is this backend's */
    c->fuse_glu = !be->nx.no_compiled_activations;
    c->per_head = be->nx.no_fused_sdpa;
    c->mm = hc_matmul_create(c->stream);
    if (!c->mm) {
        hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "cannot start cuBLAS on CUDA device %d", device);
        cu_destroy(be);
        return NULL;
    }
    return be;
}
