/*
 * cpu_backend.c - the CPU implementation of the op table.
 *
 * matmul goes to kernels/ (quantized dots, SIMD chosen at start); the other ops call the
 * reference kernels in kernels/ref/ops_ref.c, split over the pool by rows (or by
 * (token, head) pairs for attention; the KV cache is read and written through block tables,
 * attn_paged_ref.c). Scratch is allocated once at create, sized for the
 * largest step, so no op allocates.
 */
#include "backend/backend.h"
#include "base/assert.h"
#include "kernels/kernels.h"
#include "kernels/ref/attn_paged_ref.h"
#include "kernels/ref/ops_ref.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    hearth_pool *pool;       /* owned */
    int          nth;
    void        *mm_scratch; /* owned: 64-aligned, mm_bytes */
    size_t       mm_bytes;
    int64_t      max_tok, max_width;
    float       *attn_scores; /* owned: [nth][attn_cap] */
    int64_t      attn_cap;    /* floats per thread: the longest context */
} cpu_ctx;

static cpu_ctx *ctx_of(hearth_backend *be) { return be->ctx; }

/* ---- matmul ---- */

static void cpu_matmul(hearth_backend *be, const hearth_weight *w, const float *x, int64_t n_tok, float *y,
                       int64_t ldy) {
    cpu_ctx *c = ctx_of(be);
    HEARTH_ASSERT(n_tok <= c->max_tok && w->ne0 <= c->max_width);
    HEARTH_ASSERT(hearth_matmul_scratch_bytes(w->type, w->ne0, n_tok, c->nth) <= c->mm_bytes);
    hearth_matmul(c->pool, w->type, w->data, w->row_bytes, w->ne1, w->ne0, x, n_tok, y, ldy, c->mm_scratch);
}

/* ---- row-parallel helpers ---- */

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
    hearth_pool_run(ctx_of(be)->pool, get_rows_fn, &j);
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

static void cpu_rope(hearth_backend *be, float *x, int64_t n_tok, int32_t n_head, int32_t head_dim, int32_t n_rot,
                     const int32_t *pos, const hearth_rope_params *rp) {
    (void)be;
    for (int64_t t = 0; t < n_tok; t++)
        for (int32_t h = 0; h < n_head; h++)
            hearth_rope_ref(x + (t * n_head + h) * head_dim, n_rot, pos[t], rp);
}

static void cpu_kv_store(hearth_backend *be, const float *x, int64_t n_tok, int64_t width, const int32_t *seq,
                         const int32_t *pos, void *cache, const hearth_kv_blocks *bl, bool f16) {
    (void)be;
    for (int64_t t = 0; t < n_tok; t++) {
        int32_t blk = bl->table[(int64_t)seq[t] * bl->max_blocks + pos[t] / bl->block_size];
        int64_t base = ((int64_t)blk * bl->block_size + pos[t] % bl->block_size) * width;
        const float *src = x + t * width;
        if (f16) {
            uint16_t *dst = (uint16_t *)cache + base;
            for (int64_t i = 0; i < width; i++) dst[i] = hearth_fp32_to_fp16(src[i]);
        } else {
            memcpy((float *)cache + base, src, (size_t)width * sizeof(float));
        }
    }
}

typedef struct {
    const hearth_attn_args *a;
    cpu_ctx *c;
    _Atomic int64_t next;
} attn_job;

static void attn_fn(void *arg, int ith, int nth) {
    (void)nth;
    attn_job *j = arg;
    const hearth_attn_args *a = j->a;
    float *scores = j->c->attn_scores + (int64_t)ith * j->c->attn_cap;
    int64_t total = a->n_tok * a->n_head, group = a->n_head / a->n_head_kv;
    size_t esz = a->kv_f16 ? 2 : 4;
    for (;;) {
        int64_t idx = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (idx >= total) break;
        int64_t t = idx / a->n_head, h = idx % a->n_head, hkv = h / group;
        int64_t p = a->pos[t];
        int64_t j0 = a->n_swa > 0 && p - a->n_swa + 1 > 0 ? p - a->n_swa + 1 : 0;
        HEARTH_ASSERT(p + 1 <= j->c->attn_cap);
        const char *kb = (const char *)a->k + (size_t)(hkv * a->head_dim) * esz;
        const char *vb = (const char *)a->v + (size_t)(hkv * a->head_dim_v) * esz;
        const int32_t *row = a->blocks.table + (int64_t)a->seq[t] * a->blocks.max_blocks;
        hearth_attn_head_paged_ref(a->q + (t * a->n_head + h) * a->head_dim, kb, vb,
                                   (int64_t)a->n_head_kv * a->head_dim, row, a->blocks.block_size, a->kv_f16,
                                   a->head_dim, j0, p + 1, a->scale, a->softcap, scores,
                                   a->out + (t * a->n_head + h) * a->head_dim_v);
    }
}

static void cpu_attention(hearth_backend *be, const hearth_attn_args *a) {
    HEARTH_ASSERT(a->head_dim == a->head_dim_v); /* one kv row stride for k and v */
    attn_job j = {a, ctx_of(be), 0};
    hearth_pool_run(ctx_of(be)->pool, attn_fn, &j);
}

static void cpu_glu(hearth_backend *be, float *g, const float *u, int64_t n, hearth_glu_kind kind) {
    (void)be;
    switch (kind) {
    case HEARTH_GLU_SWIGLU: hearth_swiglu_ref(g, u, n); break;
    case HEARTH_GLU_GEGLU: hearth_geglu_ref(g, u, n); break;
    case HEARTH_GLU_GEGLU_F16: hearth_geglu_f16_ref(g, u, n); break;
    }
}

static void cpu_add_rows(hearth_backend *be, float *x, const float *b, int64_t n_rows, int64_t dim) {
    (void)be;
    for (int64_t r = 0; r < n_rows; r++)
        for (int64_t i = 0; i < dim; i++) x[r * dim + i] += b[i];
}

static void cpu_add(hearth_backend *be, float *x, const float *y, int64_t n) {
    (void)be;
    for (int64_t i = 0; i < n; i++) x[i] += y[i];
}

static void cpu_softcap(hearth_backend *be, float *x, int64_t n, float cap) {
    (void)be;
    for (int64_t i = 0; i < n; i++) x[i] = cap * tanhf(x[i] / cap);
}

static void cpu_destroy(hearth_backend *be) {
    cpu_ctx *c = ctx_of(be);
    if (c) {
        hearth_pool_destroy(c->pool);
        free(c->mm_scratch);
        free(c->attn_scores);
        free(c);
    }
    free(be);
}

static const struct hearth_backend_i cpu_iface = {
    .name = "cpu",
    .matmul = cpu_matmul,
    .get_rows = cpu_get_rows,
    .rmsnorm = cpu_rmsnorm,
    .rope = cpu_rope,
    .kv_store = cpu_kv_store,
    .attention = cpu_attention,
    .glu = cpu_glu,
    .add_rows = cpu_add_rows,
    .add = cpu_add,
    .softcap = cpu_softcap,
    .destroy = cpu_destroy,
};

hearth_backend *hearth_backend_cpu_create(int n_threads, int64_t max_tok, int64_t max_width, int64_t max_ctx) {
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
    c->attn_cap = max_ctx;
    c->attn_scores = malloc((size_t)max_ctx * (size_t)c->nth * sizeof(float));
    if (!c->attn_scores) goto fail;
    return be;
fail:
    cpu_destroy(be);
    return NULL;
}

void hearth_backend_destroy(hearth_backend *be) {
    if (be) be->iface->destroy(be);
}

int hearth_backend_cpu_threads(const hearth_backend *be) { return ((const cpu_ctx *)be->ctx)->nth; }
