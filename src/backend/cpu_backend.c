/*
 * cpu_backend.c - the CPU implementation of the op table.
 *
 * matmul goes to kernels/ (quantized dots, SIMD chosen at start); the other ops call the
 * reference kernels in kernels/ref/ops_ref.c, split over the pool by rows; attention runs the
 * active set's heads (by query head in decode, by kv head and tile of tokens in prefill; see
 * cpu_attention), reading the KV cache through block tables. Scratch is allocated once at
 * create, sized for the largest step, so no op allocates.
 */
#include "backend/backend.h"
#include "base/assert.h"
#include "kernels/kernels.h"
#include "kernels/deltanet.h"
#include "kernels/lora.h"
#include "kernels/ref/attn_paged_ref.h"
#include "kernels/ref/ops_ref.h"
#include "kernels/ref/turbo_ref.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    hearth_pool *pool;       /* owned */
    int          nth;
    void        *mm_scratch; /* owned: 64-aligned, mm_bytes */
    size_t       mm_bytes;
    int64_t      max_tok, max_width;
    float       *attn_scores; /* owned: [nth][HEARTH_ATTN_X86_GROUP_MAX][attn_cap], touched as used */
    int64_t      attn_cap;    /* floats per query: the longest context, padded */
    /* the attention's work list (see cpu_attention) */
    int32_t     *attn_order;  /* owned: [max_tok] token indices grouped by sequence */
    int32_t     *grp_start;   /* owned: [max_tok + 1] each group's first place in attn_order */
    int64_t     *grp_items;   /* owned: [max_tok + 1] each group's first work item */
    bool         fused_sdpa;  /* the multi-query attention kernels (numerics.h); off: per head */
    bool         batch_invariant; /* every row as alone (numerics.h): one-row matmul orders, the
                                   * one-token attention order for every query */
} cpu_ctx;

static cpu_ctx *ctx_of(hearth_backend *be) { return be->ctx; }

/* ---- matmul ---- */

static void cpu_matmul(hearth_backend *be, const hearth_weight *w, const float *x, int64_t n_tok, float *y,
                       int64_t ldy) {
    cpu_ctx *c = ctx_of(be);
    HEARTH_ASSERT(n_tok <= c->max_tok && w->ne0 <= c->max_width);
    HEARTH_ASSERT(hearth_matmul_scratch_bytes(w->type, w->ne0, n_tok, c->nth) <= c->mm_bytes);
    if (c->batch_invariant) {
        hearth_matmul_part part = {w->type, w->data, w->row_bytes, w->ne1, y, ldy, true};
        hearth_matmul_n(c->pool, &part, 1, w->ne0, x, n_tok, c->mm_scratch);
        return;
    }
    hearth_matmul(c->pool, w->type, w->data, w->row_bytes, w->ne1, w->ne0, x, n_tok, y, ldy, c->mm_scratch);
}

static void cpu_matmul_n(hearth_backend *be, const hearth_weight *const *w, float *const *y, const int64_t *ldy,
                         int n, const float *x, int64_t n_tok) {
    cpu_ctx *c = ctx_of(be);
    HEARTH_ASSERT(n >= 1 && n <= HEARTH_MATMUL_MAX_PARTS && n_tok <= c->max_tok);
    hearth_matmul_part parts[HEARTH_MATMUL_MAX_PARTS];
    for (int i = 0; i < n; i++) {
        HEARTH_ASSERT(w[i]->ne0 == w[0]->ne0 && w[i]->ne0 <= c->max_width);
        HEARTH_ASSERT(hearth_matmul_scratch_bytes(w[i]->type, w[i]->ne0, n_tok, c->nth) <= c->mm_bytes);
        parts[i] = (hearth_matmul_part){w[i]->type, w[i]->data, w[i]->row_bytes, w[i]->ne1, y[i], ldy[i],
                                        c->batch_invariant};
    }
    hearth_matmul_n(c->pool, parts, n, w[0]->ne0, x, n_tok, c->mm_scratch);
}

/* ---- row-parallel helpers ---- */

/* The row and elementwise ops below split their rows (or elements) over the pool when there is enough
 * work to pay for waking it (a prefill chunk), else run inline (decode). Each element is computed
 * by the same code either way, so the split never changes a result. */
enum { PAR_MIN_ELEMS = 32768 };

typedef struct {
    hearth_backend *be;
    const hearth_weight *w;
    const int32_t *ids;
    int64_t n;
    float scale;
    float *out;
} get_rows_job;

static void get_rows_fn(void *arg, int ith, int nth) {
    get_rows_job *j = arg;
    const hearth_kernel_traits *kt = hearth_kernels_traits_isa(j->w->type, HEARTH_ISA_SCALAR);
    for (int64_t t = ith; t < j->n; t += nth) {
        float *o = j->out + t * j->w->ne0;
        int32_t id = j->ids[t];
        HEARTH_ASSERT(id >= 0 && id < j->w->ne1);
        kt->to_float((const char *)j->w->data + (size_t)id * j->w->row_bytes, o, j->w->ne0);
        if (j->scale != 1.0f)
            for (int64_t i = 0; i < j->w->ne0; i++) o[i] *= j->scale;
    }
}

static void cpu_get_rows(hearth_backend *be, const hearth_weight *w, const int32_t *ids, int64_t n, float scale,
                         float *out) {
    get_rows_job j = {be, w, ids, n, scale, out};
    if (n * w->ne0 < PAR_MIN_ELEMS) get_rows_fn(&j, 0, 1);
    else hearth_pool_run(ctx_of(be)->pool, get_rows_fn, &j);
}

typedef struct {
    const float *x, *w;
    float *y;
    int64_t n_rows, dim;
    float eps;
} rmsnorm_job;

static void rmsnorm_fn(void *arg, int ith, int nth) {
    rmsnorm_job *j = arg;
    for (int64_t r = ith; r < j->n_rows; r += nth)
        hearth_rmsnorm_ref(j->x + r * j->dim, j->w, j->y + r * j->dim, j->dim, j->eps);
}

static void cpu_rmsnorm(hearth_backend *be, const float *x, const float *w, float *y, int64_t n_rows, int64_t dim,
                        float eps) {
    rmsnorm_job j = {x, w, y, n_rows, dim, eps};
    if (n_rows * dim < 8192) rmsnorm_fn(&j, 0, 1);
    else hearth_pool_run(ctx_of(be)->pool, rmsnorm_fn, &j);
}


typedef struct {
    float *x;
    int64_t n_tok;
    int32_t n_head, head_dim, n_rot;
    const int32_t *pos;
    const hearth_rope_params *rp;
} rope_job;

/* Rows r = token * n_head + head: one cosine/sine table per token for all its heads. */
static void rope_fn(void *arg, int ith, int nth) {
    rope_job *j = arg;
    float c[HEARTH_ROPE_MAX_HALF], s[HEARTH_ROPE_MAX_HALF];
    HEARTH_ASSERT(j->n_rot / 2 <= HEARTH_ROPE_MAX_HALF);
    int64_t t_cs = -1;
    for (int64_t r = ith; r < j->n_tok * j->n_head; r += nth) {
        if (r / j->n_head != t_cs) {
            t_cs = r / j->n_head;
            hearth_rope_cs_ref(j->n_rot, j->pos[t_cs], j->rp, c, s);
        }
        hearth_rope_apply_ref(j->x + r * j->head_dim, j->n_rot, c, s, j->rp);
    }
}

static void cpu_rope(hearth_backend *be, float *x, int64_t n_tok, int32_t n_head, int32_t head_dim, int32_t n_rot,
                     const int32_t *pos, const hearth_rope_params *rp) {
    rope_job j = {x, n_tok, n_head, head_dim, n_rot, pos, rp};
    if (n_tok * n_head * head_dim < PAR_MIN_ELEMS) rope_fn(&j, 0, 1);
    else hearth_pool_run(ctx_of(be)->pool, rope_fn, &j);
}

typedef struct {
    const float *x;
    int64_t n_tok, width;
    const int32_t *seq, *pos;
    void *cache;
    const hearth_kv_blocks *bl;
    hearth_kv_type type;
    size_t row_bytes;
    hearth_f16_row_fn to_f16;
    hearth_from_float_fn quantize; /* q8_0 / q4_0 rows */
} kv_store_job;

static void kv_store_fn(void *arg, int ith, int nth) {
    kv_store_job *j = arg;
    const hearth_kv_blocks *bl = j->bl;
    for (int64_t t = ith; t < j->n_tok; t += nth) {
        int32_t blk = bl->table[(int64_t)j->seq[t] * bl->max_blocks + j->pos[t] / bl->block_size];
        char *dst = (char *)j->cache + ((size_t)blk * bl->block_size + (size_t)(j->pos[t] % bl->block_size)) * j->row_bytes;
        const float *src = j->x + t * j->width;
        if (j->type == HEARTH_KV_F16) j->to_f16(src, (uint16_t *)dst, j->width);
        else if (j->type == HEARTH_KV_F32) memcpy(dst, src, (size_t)j->width * sizeof(float));
        else if (hearth_kv_type_turbo(j->type)) hearth_turbo_quantize_row(src, dst, j->width, hearth_kv_turbo_bits(j->type));
        else j->quantize(src, dst, j->width);
    }
}

static void cpu_kv_store(hearth_backend *be, const float *x, int64_t n_tok, int64_t width, const int32_t *seq,
                         const int32_t *pos, void *cache, const hearth_kv_blocks *bl, hearth_kv_type type) {
    kv_store_job j = {x, n_tok, width, seq, pos, cache, bl, type, hearth_kv_row_bytes(type, width),
                      hearth_kernels_f16_row(), NULL};
    if (hearth_kv_type_quantized(type))
        j.quantize = hearth_kernels_kv_quantizer(type == HEARTH_KV_Q8_0 ? HEARTH_TYPE_Q8_0 : HEARTH_TYPE_Q4_0);
    if (n_tok * width < PAR_MIN_ELEMS) kv_store_fn(&j, 0, 1);
    else hearth_pool_run(ctx_of(be)->pool, kv_store_fn, &j);
}

/*
 * Attention: one pool job, its work items taken from one counter (no barrier). The step's
 * tokens are grouped by sequence (attn_order, grp_start); group g owns the items
 * [grp_items[g], grp_items[g + 1]):
 *   one token of its sequence (decode)   one item per (kv head, part of its G query heads):
 *                                        the single-order group kernel runs the part in one
 *                                        pass over the head's keys and values; G is cut into
 *                                        `parts` only as far as the pool needs items, and
 *                                        whole heads that do not divide among the threads
 *                                        (3 on 2) have their last ones halved (one item per
 *                                        query head, the head kernel, without it);
 *   several tokens (prefill, or a chunk) one item per (kv head, tile of up to `tile`
 *                                        consecutive tokens): the group kernel runs the tile's
 *                                        G x tile queries in the batch order, reading each
 *                                        tile of keys and values once for all of them; the
 *                                        last tiles (the most keys) are taken first.
 * Without a group kernel (ref and scalar sets, f32 cache, or heads too large for a group) the
 * several-token items are (token, query head) pairs too, and so are the decode items without the
 * single-order one (also for G > HEARTH_ATTN_X86_SGROUP_MAX). Every query is computed as alone in
 * its order, so the split never changes a bit.
 */
typedef struct {
    const hearth_attn_args  *a;
    cpu_ctx                 *c;
    hearth_attn_head_x86_fn  x86;   /* NULL: the reference order (ref set, or an f32 cache) */
    hearth_attn_group_x86_fn group; /* NULL: several-token sequences go per query head too */
    hearth_attn_sgroup_x86_fn sgroup; /* NULL: one-token sequences go per query head */
    int64_t                  parts; /* one-token items per kv head (1..G) */
    int64_t                  split; /* ... but the last `split` kv heads of group split_group go in two halves */
    int32_t                  split_group;
    int64_t                  tile;  /* tokens per group item */
    int32_t                  n_groups;
    int64_t                  total;
    _Atomic int64_t          next;
} attn_job;

static int64_t window_start(const hearth_attn_args *a, int64_t p) {
    return a->n_swa > 0 && p - a->n_swa + 1 > 0 ? p - a->n_swa + 1 : 0;
}

/* One past the last key query t sees: pos + 1, or pos_end + 1 when the call has them. */
static int64_t key_end(const hearth_attn_args *a, int64_t t) { return (a->pos_end ? a->pos_end[t] : a->pos[t]) + 1; }

/* query head h of token t, alone */
static void attn_head(const attn_job *j, int64_t t, int64_t h, bool single, float *scores) {
    const hearth_attn_args *a = j->a;
    const int64_t hkv = h / (a->n_head / a->n_head_kv), p = a->pos[t], e = key_end(a, t);
    const size_t esz = a->k_type == HEARTH_KV_F16 ? 2 : 4;
    HEARTH_ASSERT((e - 1 + 32) / 32 * 32 <= j->c->attn_cap);
    const char *kb = (const char *)a->k + (size_t)(hkv * a->head_dim) * esz;
    const char *vb = (const char *)a->v + (size_t)(hkv * a->head_dim_v) * esz;
    const int32_t *row = a->blocks.table + (int64_t)a->seq[t] * a->blocks.max_blocks;
    const float *q = a->q + (t * a->n_head + h) * a->head_dim;
    float *out = a->out + (t * a->n_head + h) * a->head_dim_v;
    if (j->x86) {
        j->x86(q, (const uint16_t *)kb, (const uint16_t *)vb, (int64_t)a->n_head_kv * a->head_dim, row,
               a->blocks.block_size, a->head_dim, window_start(a, p), e, a->scale, a->softcap, single, scores,
               out);
        return;
    }
    hearth_attn_head_paged_sink_ref(q, kb, vb, (int64_t)a->n_head_kv * a->head_dim, row, a->blocks.block_size,
                                    a->k_type == HEARTH_KV_F16, a->head_dim, window_start(a, p), e, a->scale,
                                    a->softcap, a->sinks ? a->sinks[h] : -INFINITY, scores, out);
}

/* kv head hkv for the tokens order[0..n) of one sequence, through the group kernel */
static void attn_tile(const attn_job *j, const int32_t *order, int64_t n, int64_t hkv, float *scores) {
    const hearth_attn_args *a = j->a;
    const int64_t g = a->n_head / a->n_head_kv, hd = a->head_dim;
    const float *q[HEARTH_ATTN_X86_GROUP_MAX];
    float *out[HEARTH_ATTN_X86_GROUP_MAX];
    int64_t j0[HEARTH_ATTN_X86_GROUP_MAX], j1[HEARTH_ATTN_X86_GROUP_MAX];
    int nq = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t t = order[i], p = a->pos[t], e = key_end(a, t);
        HEARTH_ASSERT((e - 1 + 16) / 16 * 16 <= j->c->attn_cap);
        for (int64_t h = hkv * g; h < (hkv + 1) * g; h++, nq++) {
            q[nq] = a->q + (t * a->n_head + h) * hd;
            out[nq] = a->out + (t * a->n_head + h) * hd;
            j0[nq] = window_start(a, p);
            j1[nq] = e;
        }
    }
    const int32_t *row = a->blocks.table + (int64_t)a->seq[order[0]] * a->blocks.max_blocks;
    const int64_t stride = (int64_t)a->n_head_kv * hd;
    j->group(nq, q, out, j0, j1, (const uint16_t *)a->k + hkv * hd, (const uint16_t *)a->v + hkv * hd, stride, row,
             a->blocks.block_size, hd, a->scale, a->softcap, scores, j->c->attn_cap);
}

/* part `part` of `parts` of the G query heads of kv head hkv for token t, alone in its
 * sequence, in the single order */
static void attn_sgroup(const attn_job *j, int64_t t, int64_t hkv, int64_t part, int64_t parts, float *scores) {
    const hearth_attn_args *a = j->a;
    const int64_t g = a->n_head / a->n_head_kv, hd = a->head_dim, p = a->pos[t], e = key_end(a, t);
    const int64_t h0 = hkv * g + g * part / parts, h1 = hkv * g + g * (part + 1) / parts;
    HEARTH_ASSERT((e - 1 + 32) / 32 * 32 <= j->c->attn_cap);
    const float *q[HEARTH_ATTN_X86_SGROUP_MAX];
    float *out[HEARTH_ATTN_X86_SGROUP_MAX];
    for (int64_t h = h0; h < h1; h++) {
        q[h - h0] = a->q + (t * a->n_head + h) * hd;
        out[h - h0] = a->out + (t * a->n_head + h) * hd;
    }
    const int32_t *row = a->blocks.table + (int64_t)a->seq[t] * a->blocks.max_blocks;
    j->sgroup((int)(h1 - h0), q, out, window_start(a, p), e, (const uint16_t *)a->k + hkv * hd,
              (const uint16_t *)a->v + hkv * hd, (int64_t)a->n_head_kv * hd, row, a->blocks.block_size, hd, a->scale,
              a->softcap, scores, j->c->attn_cap);
}

static void attn_fn(void *arg, int ith, int nth) {
    (void)nth;
    attn_job *j = arg;
    const hearth_attn_args *a = j->a;
    cpu_ctx *c = j->c;
    float *scores = c->attn_scores + (int64_t)ith * HEARTH_ATTN_X86_GROUP_MAX * c->attn_cap;
    int32_t g = 0;
    for (;;) {
        const int64_t idx = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (idx >= j->total) break;
        while (c->grp_items[g + 1] <= idx) g++; /* idx only grows within a thread */
        const int64_t local = idx - c->grp_items[g], n = c->grp_start[g + 1] - c->grp_start[g];
        const int32_t *order = c->attn_order + c->grp_start[g];
        if (n > 1 && j->group) {
            const int64_t tiles = (n + j->tile - 1) / j->tile, it = tiles - 1 - local % tiles;
            const int64_t first = it * j->tile, cnt = n - first < j->tile ? n - first : j->tile;
            attn_tile(j, order + first, cnt, local / tiles, scores);
        } else if (n == 1 && j->sgroup) {
            const int64_t whole = a->n_head_kv - j->split; /* split > 0 only with parts == 1 */
            if (g == j->split_group && local >= whole)
                attn_sgroup(j, order[0], whole + (local - whole) / 2, (local - whole) % 2, 2, scores);
            else attn_sgroup(j, order[0], local / j->parts, local % j->parts, j->parts, scores);
        } else {
            attn_head(j, order[local / a->n_head], local % a->n_head, n == 1 || c->batch_invariant, scores);
        }
    }
}

/* A quantized cache (kv_type.h): one item per (token, kv head), its query heads together
 * through the set's flash-order kernel (kernels.h hearth_attn_quant_fn). */
typedef struct {
    const hearth_attn_args *a;
    hearth_attn_quant_fn    fn;
    int32_t                 parts; /* items per (token, kv head): groups of at most NQ_MAX heads */
    _Atomic int64_t         next;
} attn_quant_job;

static hearth_type kv_weight_type(hearth_kv_type t) { return t == HEARTH_KV_Q8_0 ? HEARTH_TYPE_Q8_0 : HEARTH_TYPE_Q4_0; }

static void attn_quant_fn(void *arg, int ith, int nth) {
    (void)ith, (void)nth;
    attn_quant_job *j = arg;
    const hearth_attn_args *a = j->a;
    const int64_t g = a->n_head / a->n_head_kv, total = a->n_tok * a->n_head_kv * j->parts;
    const size_t k_row = hearth_kv_row_bytes(a->k_type, (int64_t)a->n_head_kv * a->head_dim),
                 v_row = hearth_kv_row_bytes(a->v_type, (int64_t)a->n_head_kv * a->head_dim_v);
    for (;;) {
        const int64_t idx = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (idx >= total) break;
        const int64_t t = idx / (a->n_head_kv * j->parts), hkv = idx / j->parts % a->n_head_kv, part = idx % j->parts;
        const int64_t h0 = hkv * g + g * part / j->parts, h1 = hkv * g + g * (part + 1) / j->parts;
        const int64_t p = a->pos[t];
        hearth_attn_quant_args qa = {
            .k = (const char *)a->k + hearth_kv_row_bytes(a->k_type, hkv * a->head_dim),
            .v = (const char *)a->v + hearth_kv_row_bytes(a->v_type, hkv * a->head_dim_v),
            .k_row = k_row, .v_row = v_row,
            .k_type = kv_weight_type(a->k_type), .v_type = kv_weight_type(a->v_type),
            .table_row = a->blocks.table + (int64_t)a->seq[t] * a->blocks.max_blocks,
            .block_size = a->blocks.block_size, .head_dim = a->head_dim, .head_dim_v = a->head_dim_v,
            .j0 = window_start(a, p), .j1 = key_end(a, t), .scale = a->scale, .softcap = a->softcap,
        };
        const float *q[HEARTH_ATTN_QUANT_NQ_MAX];
        float *out[HEARTH_ATTN_QUANT_NQ_MAX];
        for (int64_t h = h0; h < h1; h++) {
            q[h - h0] = a->q + (t * a->n_head + h) * a->head_dim;
            out[h - h0] = a->out + (t * a->n_head + h) * a->head_dim_v;
        }
        j->fn((int)(h1 - h0), q, out, &qa);
    }
}

static void attn_quant(cpu_ctx *c, const hearth_attn_args *a) {
    HEARTH_ASSERT(hearth_kv_type_quantized(a->v_type));
    HEARTH_ASSERT(a->head_dim % 32 == 0 && a->head_dim_v % 32 == 0);
    HEARTH_ASSERT(a->head_dim <= HEARTH_ATTN_QUANT_DIM_MAX && a->head_dim_v <= HEARTH_ATTN_QUANT_DIM_MAX);
    const int64_t g = a->n_head / a->n_head_kv;
    attn_quant_job j = {.a = a, .fn = hearth_kernels_attn_quant(), .parts = 1};
    /* enough items for the pool (decode of one sequence), at most NQ_MAX heads an item */
    const int64_t nth = hearth_pool_size(c->pool);
    while ((j.parts < g && a->n_tok * a->n_head_kv * j.parts < nth) || (g + j.parts - 1) / j.parts > HEARTH_ATTN_QUANT_NQ_MAX)
        j.parts++;
    atomic_init(&j.next, 0);
    hearth_pool_run(c->pool, attn_quant_fn, &j);
}

/* A turbo cache (kv_type.h): the same items as attn_quant, through the set's turbo kernel
 * (kernels.h hearth_attn_turbo_fn). */
typedef struct {
    const hearth_attn_args *a;
    hearth_attn_turbo_fn    fn;
    int32_t                 parts;
    _Atomic int64_t         next;
} attn_turbo_job;

static void attn_turbo_fn(void *arg, int ith, int nth) {
    (void)ith, (void)nth;
    attn_turbo_job *j = arg;
    const hearth_attn_args *a = j->a;
    const int64_t g = a->n_head / a->n_head_kv, total = a->n_tok * a->n_head_kv * j->parts;
    const size_t k_row = hearth_kv_row_bytes(a->k_type, (int64_t)a->n_head_kv * a->head_dim),
                 v_row = hearth_kv_row_bytes(a->v_type, (int64_t)a->n_head_kv * a->head_dim_v);
    for (;;) {
        const int64_t idx = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (idx >= total) break;
        const int64_t t = idx / (a->n_head_kv * j->parts), hkv = idx / j->parts % a->n_head_kv, part = idx % j->parts;
        const int64_t h0 = hkv * g + g * part / j->parts, h1 = hkv * g + g * (part + 1) / j->parts;
        const int64_t p = a->pos[t];
        hearth_attn_turbo_args ta = {
            .k = (const char *)a->k + hearth_kv_row_bytes(a->k_type, hkv * a->head_dim),
            .v = (const char *)a->v + hearth_kv_row_bytes(a->v_type, hkv * a->head_dim_v),
            .k_row = k_row, .v_row = v_row,
            .k_bits = hearth_kv_turbo_bits(a->k_type), .v_bits = hearth_kv_turbo_bits(a->v_type),
            .table_row = a->blocks.table + (int64_t)a->seq[t] * a->blocks.max_blocks,
            .block_size = a->blocks.block_size, .head_dim = a->head_dim, .head_dim_v = a->head_dim_v,
            .j0 = window_start(a, p), .j1 = key_end(a, t), .scale = a->scale, .softcap = a->softcap,
        };
        const float *q[HEARTH_ATTN_QUANT_NQ_MAX];
        float *out[HEARTH_ATTN_QUANT_NQ_MAX];
        for (int64_t h = h0; h < h1; h++) {
            q[h - h0] = a->q + (t * a->n_head + h) * a->head_dim;
            out[h - h0] = a->out + (t * a->n_head + h) * a->head_dim_v;
        }
        j->fn((int)(h1 - h0), q, out, &ta);
    }
}

static void attn_turbo(cpu_ctx *c, const hearth_attn_args *a) {
    HEARTH_ASSERT(hearth_kv_type_turbo(a->v_type));
    HEARTH_ASSERT(a->head_dim % HEARTH_KV_TURBO_ROT == 0 && a->head_dim_v % HEARTH_KV_TURBO_ROT == 0);
    HEARTH_ASSERT(a->head_dim <= HEARTH_ATTN_QUANT_DIM_MAX && a->head_dim_v <= HEARTH_ATTN_QUANT_DIM_MAX);
    const int64_t g = a->n_head / a->n_head_kv;
    attn_turbo_job j = {.a = a, .fn = hearth_kernels_attn_turbo(), .parts = 1};
    const int64_t nth = hearth_pool_size(c->pool);
    while ((j.parts < g && a->n_tok * a->n_head_kv * j.parts < nth) || (g + j.parts - 1) / j.parts > HEARTH_ATTN_QUANT_NQ_MAX)
        j.parts++;
    atomic_init(&j.next, 0);
    hearth_pool_run(c->pool, attn_turbo_fn, &j);
}

static void cpu_attention(hearth_backend *be, const hearth_attn_args *a) {
    HEARTH_ASSERT(a->head_dim == a->head_dim_v); /* one kv row stride for k and v */
    HEARTH_ASSERT(a->n_tok <= ctx_of(be)->max_tok);
    cpu_ctx *c = ctx_of(be);
    HEARTH_ASSERT(!a->sinks || a->k_type == HEARTH_KV_F16 || a->k_type == HEARTH_KV_F32); /* kv_pool.c refuses */
    if (hearth_kv_type_quantized(a->k_type)) {
        attn_quant(c, a);
        return;
    }
    if (hearth_kv_type_turbo(a->k_type)) {
        attn_turbo(c, a);
        return;
    }
    /* sinks: every head alone in the reference order (no SIMD kernel has them) */
    attn_job j = {.a = a, .c = c, .x86 = a->k_type == HEARTH_KV_F16 && !a->sinks ? hearth_kernels_attn_head() : NULL};
    const int64_t g = a->n_head / a->n_head_kv;
    j.tile = g <= HEARTH_ATTN_X86_GROUP_MAX ? HEARTH_ATTN_X86_GROUP_MAX / g : 0;
    if (j.tile > 8) j.tile = 8;
    while (j.tile > 0 && j.tile * g * a->head_dim > HEARTH_ATTN_X86_GROUP_FLOATS) j.tile--;
    /* the group kernels compute each query head's result as the head kernel does, bit for bit;
     * fused-sdpa off runs every head alone (the A/B lever, numerics.h) */
    bool fused = c->fused_sdpa && a->head_dim % 16 == 0;
    /* batch invariance: a query of a several-token sequence goes alone in the one-token order */
    j.group = j.x86 && j.tile > 0 && fused && !c->batch_invariant ? hearth_kernels_attn_group() : NULL;
    j.sgroup = j.x86 && g <= HEARTH_ATTN_X86_SGROUP_MAX && fused ? hearth_kernels_attn_sgroup() : NULL;

    /* group the tokens by sequence: attn_order lists each group's tokens in step order */
    int32_t ng = 0;
    int32_t *gseq = c->grp_start; /* the groups' sequences, then their offsets */
    int64_t *cnt = c->grp_items;  /* per group: count, then fill cursor */
    for (int64_t t = 0; t < a->n_tok; t++) {
        int32_t k = 0;
        while (k < ng && gseq[k] != a->seq[t]) k++;
        if (k == ng) {
            gseq[ng] = a->seq[t];
            cnt[ng++] = 0;
        }
        cnt[k]++;
    }
    int64_t off = 0;
    for (int32_t k = 0; k < ng; k++) {
        int64_t n = cnt[k];
        cnt[k] = off;
        off += n;
    }
    for (int64_t t = 0; t < a->n_tok; t++) {
        int32_t k = 0;
        while (gseq[k] != a->seq[t]) k++;
        c->attn_order[cnt[k]++] = (int32_t)t;
    }
    /* cnt[k] is now the end of group k: starts, then each group's items */
    for (int32_t k = ng - 1; k >= 0; k--) c->grp_start[k + 1] = (int32_t)cnt[k];
    c->grp_start[0] = 0;
    /* one-token items: whole kv heads unless the pool would be left idle */
    int64_t n_single = 0;
    for (int32_t k = 0; k < ng; k++) n_single += c->grp_start[k + 1] - c->grp_start[k] == 1;
    const int64_t nth = hearth_pool_size(c->pool);
    j.parts = 1;
    while (j.sgroup && j.parts < g && n_single * a->n_head_kv * j.parts < nth) j.parts++;
    /* a few whole kv heads that do not divide among the threads (3 on 2): the last group's last
     * ones go in two halves, so that the items can be dealt out evenly */
    const int64_t units = n_single * a->n_head_kv * j.parts;
    j.split = j.sgroup && j.parts == 1 && g >= 2 && units % nth && units < 4 * nth ? nth - units % nth : 0;
    if (j.split > a->n_head_kv) j.split = a->n_head_kv;
    j.split_group = -1;
    for (int32_t k = 0; k < ng && j.split; k++)
        if (c->grp_start[k + 1] - c->grp_start[k] == 1) j.split_group = k;
    c->grp_items[0] = 0;
    for (int32_t k = 0; k < ng; k++) {
        int64_t n = c->grp_start[k + 1] - c->grp_start[k];
        int64_t items = n > 1 && j.group    ? (n + j.tile - 1) / j.tile * a->n_head_kv
                        : n == 1 && j.sgroup ? a->n_head_kv * j.parts + (k == j.split_group ? j.split : 0)
                                             : n * a->n_head;
        c->grp_items[k + 1] = c->grp_items[k] + items;
    }
    j.n_groups = ng;
    j.total = c->grp_items[ng];
    hearth_pool_run(c->pool, attn_fn, &j);
}

typedef struct {
    float *g;
    const float *u;
    int64_t n;
    hearth_glu_kind kind;
} glu_job;

static void glu_fn(void *arg, int ith, int nth) {
    glu_job *j = arg;
    int64_t a = j->n * ith / nth, b = j->n * (ith + 1) / nth;
    switch (j->kind) {
    case HEARTH_GLU_SWIGLU: hearth_kernels_swiglu()(j->g + a, j->u + a, b - a); break;
    case HEARTH_GLU_GEGLU: hearth_geglu_ref(j->g + a, j->u + a, b - a); break;
    case HEARTH_GLU_GEGLU_F16: hearth_kernels_geglu_f16()(j->g + a, j->u + a, b - a); break;
    case HEARTH_GLU_SWIGLU_OAI: hearth_swiglu_oai_ref(j->g + a, j->u + a, b - a); break;
    case HEARTH_GLU_SIGMOID: hearth_sigmoid_gate_ref(j->g + a, j->u + a, b - a); break;
    }
}

static void cpu_glu(hearth_backend *be, float *g, const float *u, int64_t n, hearth_glu_kind kind) {
    glu_job j = {g, u, n, kind};
    if (n < PAR_MIN_ELEMS) glu_fn(&j, 0, 1);
    else hearth_pool_run(ctx_of(be)->pool, glu_fn, &j);
}

static void cpu_add_rows(hearth_backend *be, float *x, const float *b, int64_t n_rows, int64_t dim) {
    (void)be;
    for (int64_t r = 0; r < n_rows; r++)
        for (int64_t i = 0; i < dim; i++) x[r * dim + i] += b[i];
}

typedef struct {
    float *x;
    const float *y;
    int64_t n;
} add_job;

static void add_fn(void *arg, int ith, int nth) {
    add_job *j = arg;
    for (int64_t i = j->n * ith / nth, e = j->n * (ith + 1) / nth; i < e; i++) j->x[i] += j->y[i];
}

static void cpu_add(hearth_backend *be, float *x, const float *y, int64_t n) {
    add_job j = {x, y, n};
    if (n < PAR_MIN_ELEMS) add_fn(&j, 0, 1);
    else hearth_pool_run(ctx_of(be)->pool, add_fn, &j);
}

static void cpu_scale(hearth_backend *be, float *x, int64_t n, float s) {
    (void)be;
    for (int64_t i = 0; i < n; i++) x[i] *= s;
}

typedef struct {
    float  *x;
    int64_t n_rows, n;
} hadamard_job;

static void hadamard_fn(void *arg, int ith, int nth) {
    hadamard_job *j = arg;
    int64_t r0 = j->n_rows * ith / nth, r1 = j->n_rows * (ith + 1) / nth;
    hearth_hadamard_ref(j->x + r0 * j->n, r1 - r0, j->n);
}

static void cpu_hadamard(hearth_backend *be, float *x, int64_t n_rows, int64_t n) {
    hadamard_job j = {x, n_rows, n};
    if (n_rows * n < PAR_MIN_ELEMS) hadamard_fn(&j, 0, 1);
    else hearth_pool_run(ctx_of(be)->pool, hadamard_fn, &j);
}

static void cpu_softcap(hearth_backend *be, float *x, int64_t n, float cap) {
    (void)be;
    for (int64_t i = 0; i < n; i++) x[i] = cap * tanhf(x[i] / cap);
}

static void cpu_copy_rows(hearth_backend *be, const float *x, int64_t dim, const int32_t *rows, int64_t n, float *y) {
    (void)be;
    for (int64_t i = 0; i < n; i++) memcpy(y + i * dim, x + (int64_t)rows[i] * dim, (size_t)dim * sizeof(float));
}

typedef struct {
    const hearth_lora_seg *segs;
    int                    n_seg;
    const float           *x;
    int64_t                n_in;
    float                 *y;
    int64_t                ldy, n_out;
} lora_job;

static void lora_fn(void *arg, int ith, int nth) {
    lora_job *j = arg;
    hearth_lora_rows(j->segs, j->n_seg, j->x, j->n_in, j->y, j->ldy, j->n_out, ith, nth);
}

static void cpu_lora(hearth_backend *be, const hearth_lora_seg *segs, int n_seg, const float *x, int64_t n_in,
                     float *y, int64_t ldy, int64_t n_out) {
    lora_job j = {segs, n_seg, x, n_in, y, ldy, n_out};
    int64_t rows = 0;
    for (int s = 0; s < n_seg; s++) rows += segs[s].n;
    if (rows < 2) lora_fn(&j, 0, 1);
    else hearth_pool_run(ctx_of(be)->pool, lora_fn, &j);
}

/* The gated DeltaNet: the conv split by channels, then (after the pool's join) the delta rule
 * split by value heads; each slice runs every token in order, as the reference does. */
typedef struct {
    const hearth_deltanet_args *a;
    bool heads;
} deltanet_job;

static void deltanet_fn(void *arg, int ith, int nth) {
    deltanet_job *j = arg;
    const hearth_deltanet_args *a = j->a;
    int64_t n = j->heads ? a->n_v : 2 * (int64_t)a->n_k * a->k_dim + (int64_t)a->n_v * a->v_dim;
    int64_t lo = n * ith / nth, hi = n * (ith + 1) / nth;
    if (j->heads) hearth_deltanet_heads(a, lo, hi); /* the reference's bits, row by row */
    else hearth_deltanet_conv_ref(a, lo, hi);
}

static void cpu_deltanet(hearth_backend *be, const hearth_deltanet_args *a) {
    deltanet_job conv = {a, false}, heads = {a, true};
    hearth_pool_run(ctx_of(be)->pool, deltanet_fn, &conv);
    hearth_pool_run(ctx_of(be)->pool, deltanet_fn, &heads);
}

static void cpu_argmax(hearth_backend *be, const float *x, int64_t n_rows, int64_t n, int32_t *out) {
    (void)be;
    for (int64_t r = 0; r < n_rows; r++) out[r] = (int32_t)hearth_kernels_argmax(x + r * n, n);
}

static void cpu_topm(hearth_backend *be, float *x, int64_t n_rows, int64_t n, const hearth_topm_req *rq,
                     const hearth_topm_edit *edits, int32_t n_edits, hearth_topm *out) {
    (void)be;
    (void)n_edits;
    for (int64_t r = 0; r < n_rows; r++) {
        hearth_topm_edit_ref(x + r * n, edits + rq[r].edit0, rq[r].n_edit);
        hearth_topm_row_ref(x + r * n, n, rq + r, out + r);
    }
}

/* ---- buffers: host memory ---- */

static void *cpu_alloc(hearth_backend *be, size_t bytes) {
    (void)be;
    void *p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (p) memset(p, 0, bytes);
    return p;
}

static void cpu_free(hearth_backend *be, void *p) {
    (void)be;
    free(p);
}

static void cpu_copy(hearth_backend *be, void *dst, const void *src, size_t bytes) {
    (void)be;
    if (dst != src && bytes) memcpy(dst, src, bytes);
}

static void cpu_info(hearth_backend *be, hearth_backend_info *out) {
    (void)be;
    memset(out, 0, sizeof *out);
    snprintf(out->device, sizeof out->device, "cpu");
}

static bool cpu_supports(hearth_backend *be, hearth_type type) {
    (void)be;
    return hearth_kernels_traits(type) != NULL;
}

static void cpu_destroy(hearth_backend *be) {
    cpu_ctx *c = ctx_of(be);
    if (c) {
        hearth_pool_destroy(c->pool);
        free(c->mm_scratch);
        free(c->attn_scores);
        free(c->attn_order);
        free(c->grp_start);
        free(c->grp_items);
        free(c);
    }
    free(be);
}

static const struct hearth_backend_i cpu_iface = {
    .name = "cpu",
    .host = true,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_copy,
    .download = cpu_copy,
    .info = cpu_info,
    .supports = cpu_supports,
    .matmul = cpu_matmul,
    .matmul_n = cpu_matmul_n,
    .get_rows = cpu_get_rows,
    .rmsnorm = cpu_rmsnorm,
    .rope = cpu_rope,
    .kv_store = cpu_kv_store,
    .attention = cpu_attention,
    .glu = cpu_glu,
    .add_rows = cpu_add_rows,
    .add = cpu_add,
    .scale = cpu_scale,
    .hadamard = cpu_hadamard,
    .softcap = cpu_softcap,
    .lora = cpu_lora,
    .deltanet = cpu_deltanet,
    .copy_rows = cpu_copy_rows,
    .argmax = cpu_argmax,
    .topm = cpu_topm,
    .destroy = cpu_destroy,
};

hearth_backend *hearth_backend_cpu_create(int n_threads, int64_t max_tok, int64_t max_width, int64_t max_ctx,
                                          const hearth_numerics *nx) {
    hearth_kernels_init();
    hearth_backend *be = calloc(1, sizeof *be);
    cpu_ctx *c = calloc(1, sizeof *c);
    if (!be || !c) {
        free(be);
        free(c);
        return NULL;
    }
    be->iface = &cpu_iface;
    be->ctx = c;
    be->nx = hearth_numerics_resolve(nx ? *nx : (hearth_numerics){0});
    c->fused_sdpa = !be->nx.no_fused_sdpa;
    c->batch_invariant = be->nx.batch_invariant;
    c->pool = hearth_pool_create(n_threads);
    if (!c->pool) goto fail;
    c->nth = hearth_pool_size(c->pool);
    c->max_tok = max_tok;
    c->max_width = max_width;
    /* the largest scratch over every activation type a weight may ask for */
    static const hearth_type wtypes[] = {HEARTH_TYPE_F32, HEARTH_TYPE_F16, HEARTH_TYPE_BF16, HEARTH_TYPE_Q8_0,
                                         HEARTH_TYPE_Q4_1, HEARTH_TYPE_Q4_K};
    for (size_t i = 0; i < sizeof wtypes / sizeof wtypes[0]; i++) {
        size_t b = hearth_matmul_scratch_bytes(wtypes[i], max_width, max_tok, c->nth);
        if (b > c->mm_bytes) c->mm_bytes = b;
    }
    c->mm_bytes = (c->mm_bytes + 63) & ~(size_t)63;
    c->mm_scratch = c->mm_bytes ? aligned_alloc(64, c->mm_bytes) : NULL;
    if (c->mm_bytes && !c->mm_scratch) goto fail;
    /* the llama.cpp-order heads clear scores to whole 64s of keys (the single order's lane
     * rows); a group kernel's rows hold whole vectors of 16. The pages are touched only as far as
     * the longest sequence reaches. */
    c->attn_cap = (max_ctx + 63) / 64 * 64 + 16;
    c->attn_scores = malloc((size_t)c->attn_cap * HEARTH_ATTN_X86_GROUP_MAX * (size_t)c->nth * sizeof(float));
    c->attn_order = malloc((size_t)max_tok * sizeof(int32_t));
    c->grp_start = malloc(((size_t)max_tok + 1) * sizeof(int32_t));
    c->grp_items = malloc(((size_t)max_tok + 1) * sizeof(int64_t));
    if (!c->attn_scores || !c->attn_order || !c->grp_start || !c->grp_items) goto fail;
    return be;
fail:
    cpu_destroy(be);
    return NULL;
}

void hearth_backend_destroy(hearth_backend *be) {
    if (be) be->iface->destroy(be);
}

int hearth_backend_cpu_threads(const hearth_backend *be) { return ((const cpu_ctx *)be->ctx)->nth; }

void hearth_backend_get_info(hearth_backend *be, hearth_backend_info *out) { be->iface->info(be, out); }

hearth_numerics hearth_backend_numerics(const hearth_backend *be) { return hearth_numerics_resolve(be->nx); }

const char *hearth_backend_name(const hearth_backend *be) { return be->iface->name; }

bool hearth_device_parse(const char *s, hearth_device *out) {
    static const char *names[] = {"auto", "cpu", "cuda"};
    for (int i = 0; i < 3; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (hearth_device)i;
            return true;
        }
    return false;
}

const char *hearth_device_name(hearth_device d) {
    return d == HEARTH_DEVICE_CPU ? "cpu" : d == HEARTH_DEVICE_CUDA ? "cuda" : "auto";
}
