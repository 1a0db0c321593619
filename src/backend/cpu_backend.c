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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    hearth_pool *pool;       /* owned */
    int          nth;
    void        *mm_scratch; /* owned: 64-aligned, mm_bytes */
    size_t       mm_bytes;
    int64_t      max_tok, max_width;
    float       *attn_scores; /* owned: [nth][attn_cap] */
    int64_t      attn_cap;    /* floats per thread: the longest context + 16 */
    /* the SIMD attention's scratch (see cpu_attention) */
    float       *kt;          /* owned: [kt_cap] one sequence's keys, transposed, every kv head */
    int64_t      kt_cap;      /* floats */
    int32_t     *attn_order;  /* owned: [max_tok] token indices grouped by sequence */
    int32_t     *grp_start;   /* owned: [max_tok + 1] */
    int64_t     *grp_range;   /* owned: [max_tok][2] keys [jb, j1) each group reads, jb % 16 == 0 */
    _Atomic int64_t *grp_next; /* owned: [max_tok] work counters */
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

static void cpu_matmul_n(hearth_backend *be, const hearth_weight *const *w, float *const *y, const int64_t *ldy,
                         int n, const float *x, int64_t n_tok) {
    cpu_ctx *c = ctx_of(be);
    HEARTH_ASSERT(n >= 1 && n <= HEARTH_MATMUL_MAX_PARTS && n_tok <= c->max_tok);
    hearth_matmul_part parts[HEARTH_MATMUL_MAX_PARTS];
    for (int i = 0; i < n; i++) {
        HEARTH_ASSERT(w[i]->ne0 == w[0]->ne0 && w[i]->ne0 <= c->max_width);
        HEARTH_ASSERT(hearth_matmul_scratch_bytes(w[i]->type, w[i]->ne0, n_tok, c->nth) <= c->mm_bytes);
        parts[i] = (hearth_matmul_part){w[i]->type, w[i]->data, w[i]->row_bytes, w[i]->ne1, y[i], ldy[i]};
    }
    hearth_matmul_n(c->pool, parts, n, w[0]->ne0, x, n_tok, c->mm_scratch);
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

/* The elementwise ops below split their rows (or elements) over the pool when there is enough
 * work to pay for waking it (a prefill chunk), else run inline (decode). Each element is computed
 * by the same code either way, so the split never changes a result. */
enum { PAR_MIN_ELEMS = 32768 };

typedef struct {
    float *x;
    int64_t n_tok;
    int32_t n_head, head_dim, n_rot;
    const int32_t *pos;
    const hearth_rope_params *rp;
} rope_job;

static void rope_fn(void *arg, int ith, int nth) {
    rope_job *j = arg;
    for (int64_t r = ith; r < j->n_tok * j->n_head; r += nth)
        hearth_rope_ref(j->x + r * j->head_dim, j->n_rot, j->pos[r / j->n_head], j->rp);
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
    bool f16;
} kv_store_job;

static void kv_store_fn(void *arg, int ith, int nth) {
    kv_store_job *j = arg;
    const hearth_kv_blocks *bl = j->bl;
    for (int64_t t = ith; t < j->n_tok; t += nth) {
        int32_t blk = bl->table[(int64_t)j->seq[t] * bl->max_blocks + j->pos[t] / bl->block_size];
        int64_t base = ((int64_t)blk * bl->block_size + j->pos[t] % bl->block_size) * j->width;
        const float *src = j->x + t * j->width;
        if (j->f16) {
            uint16_t *dst = (uint16_t *)j->cache + base;
            for (int64_t i = 0; i < j->width; i++) dst[i] = hearth_fp32_to_fp16(src[i]);
        } else {
            memcpy((float *)j->cache + base, src, (size_t)j->width * sizeof(float));
        }
    }
}

static void cpu_kv_store(hearth_backend *be, const float *x, int64_t n_tok, int64_t width, const int32_t *seq,
                         const int32_t *pos, void *cache, const hearth_kv_blocks *bl, bool f16) {
    kv_store_job j = {x, n_tok, width, seq, pos, cache, bl, f16};
    if (n_tok * width < PAR_MIN_ELEMS) kv_store_fn(&j, 0, 1);
    else hearth_pool_run(ctx_of(be)->pool, kv_store_fn, &j);
}

typedef struct {
    const hearth_attn_args *a;
    cpu_ctx *c;
    hearth_attn_head_x86_fn x86; /* NULL: the reference order */
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
        HEARTH_ASSERT((p + 32) / 32 * 32 <= j->c->attn_cap);
        const char *kb = (const char *)a->k + (size_t)(hkv * a->head_dim) * esz;
        const char *vb = (const char *)a->v + (size_t)(hkv * a->head_dim_v) * esz;
        const int32_t *row = a->blocks.table + (int64_t)a->seq[t] * a->blocks.max_blocks;
        if (j->x86 && a->kv_f16) {
            /* llama.cpp's order depends on whether the step holds other tokens of this sequence */
            bool single = true;
            for (int64_t u = 0; u < a->n_tok && single; u++) single = u == t || a->seq[u] != a->seq[t];
            j->x86(a->q + (t * a->n_head + h) * a->head_dim, (const uint16_t *)kb, (const uint16_t *)vb,
                   (int64_t)a->n_head_kv * a->head_dim, row, a->blocks.block_size, a->head_dim, j0, p + 1, a->scale,
                   a->softcap, single, scores, a->out + (t * a->n_head + h) * a->head_dim_v);
            continue;
        }
        hearth_attn_head_paged_ref(a->q + (t * a->n_head + h) * a->head_dim, kb, vb,
                                   (int64_t)a->n_head_kv * a->head_dim, row, a->blocks.block_size, a->kv_f16,
                                   a->head_dim, j0, p + 1, a->scale, a->softcap, scores,
                                   a->out + (t * a->n_head + h) * a->head_dim_v);
    }
}

/*
 * The SIMD attention (kernels.h hearth_attn_kernels): the step's tokens are grouped by sequence;
 * for each sequence, in one pool job with barriers between the phases,
 *   1. keys   every kv head's keys [jb, j1) that the group's queries read are copied once,
 *             transposed to f32, into kt (split over the threads by 64-key chunks);
 *   2. heads  each (token, query head) of the group runs against the copy (atomic counter).
 * The copy serves every query head of a kv group and every token of the sequence, so a prefill
 * chunk transposes each key once instead of once per query.
 */
typedef struct {
    const hearth_attn_args    *a;
    cpu_ctx                   *c;
    const hearth_attn_kernels *kern;
    int32_t                    n_groups;
} attn_simd_job;

enum { KT_CHUNK = 64 }; /* keys per phase-1 work item */

static void attn_simd_fn(void *arg, int ith, int nth) {
    attn_simd_job *j = arg;
    const hearth_attn_args *a = j->a;
    cpu_ctx *c = j->c;
    const int64_t hd = a->head_dim, stride = (int64_t)a->n_head_kv * hd, group = a->n_head / a->n_head_kv;
    float *scores = c->attn_scores + (int64_t)ith * c->attn_cap;
    for (int32_t g = 0; g < j->n_groups; g++) {
        const int64_t jb = c->grp_range[2 * g], j1 = c->grp_range[2 * g + 1], ld = (j1 - jb + 15) & ~(int64_t)15;
        const int32_t *order = c->attn_order + c->grp_start[g];
        const int64_t n_tok = c->grp_start[g + 1] - c->grp_start[g];
        const int32_t *row = a->blocks.table + (int64_t)a->seq[order[0]] * a->blocks.max_blocks;
        int64_t jmin = j1;
        for (int64_t i = 0; i < n_tok; i++) {
            int64_t p = a->pos[order[i]], w = a->n_swa > 0 && p - a->n_swa + 1 > 0 ? p - a->n_swa + 1 : 0;
            if (w < jmin) jmin = w;
        }
        const int64_t n_chunks = (ld + KT_CHUNK - 1) / KT_CHUNK;
        for (int64_t it = ith; it < a->n_head_kv * n_chunks; it += nth) {
            int64_t hkv = it / n_chunks, jc = jb + (it % n_chunks) * KT_CHUNK;
            int64_t lo = jc > jmin ? jc : jmin, hi = jc + KT_CHUNK < j1 ? jc + KT_CHUNK : j1;
            if (lo >= hi) continue;
            j->kern->keys_t((const uint16_t *)a->k + hkv * hd, stride, row, a->blocks.block_size, hd, lo, hi,
                            c->kt + hkv * hd * ld + (jc - jb), ld);
        }
        hearth_pool_barrier(c->pool);
        for (;;) {
            int64_t idx = atomic_fetch_add_explicit(&c->grp_next[g], 1, memory_order_relaxed);
            if (idx >= n_tok * a->n_head) break;
            int64_t t = order[idx / a->n_head], h = idx % a->n_head, hkv = h / group;
            int64_t p = a->pos[t], w = a->n_swa > 0 && p - a->n_swa + 1 > 0 ? p - a->n_swa + 1 : 0;
            j->kern->head_kt(a->q + (t * a->n_head + h) * hd, c->kt + hkv * hd * ld, ld, jb,
                             (const uint16_t *)a->v + hkv * hd, stride, row, a->blocks.block_size, hd, w, p + 1,
                             a->scale, a->softcap, scores, a->out + (t * a->n_head + h) * a->head_dim_v);
        }
        hearth_pool_barrier(c->pool); /* the next group overwrites kt */
    }
}

static void cpu_attention(hearth_backend *be, const hearth_attn_args *a) {
    HEARTH_ASSERT(a->head_dim == a->head_dim_v); /* one kv row stride for k and v */
    cpu_ctx *c = ctx_of(be);
    hearth_attn_head_x86_fn x86 = hearth_kernels_attn_head();
    const hearth_attn_kernels *kern = x86 ? NULL : hearth_kernels_attn();
    if (kern && a->kv_f16 && a->head_dim % 16 == 0 && a->n_tok <= c->max_tok) {
        /* group the tokens by sequence: order lists each group's tokens, in step order */
        int32_t ng = 0;
        int32_t *gseq = c->grp_start; /* reused below as offsets once counted */
        int64_t *cnt = c->grp_range;  /* [2g]: count, then fill cursor */
        for (int64_t t = 0; t < a->n_tok; t++) {
            int32_t g = 0;
            while (g < ng && gseq[g] != a->seq[t]) g++;
            if (g == ng) {
                gseq[ng] = a->seq[t];
                cnt[ng++] = 0;
            }
            cnt[g]++;
        }
        /* offsets, then fill */
        int64_t off = 0;
        for (int32_t g = 0; g < ng; g++) {
            int64_t n = cnt[g];
            cnt[g] = off;
            off += n;
        }
        for (int64_t t = 0; t < a->n_tok; t++) {
            int32_t g = 0;
            while (gseq[g] != a->seq[t]) g++;
            c->attn_order[cnt[g]++] = (int32_t)t;
        }
        /* cnt[g] is now the end of group g: starts and key ranges */
        for (int32_t g = ng - 1; g >= 0; g--) c->grp_start[g + 1] = (int32_t)cnt[g];
        c->grp_start[0] = 0;
        bool fits = true;
        for (int32_t g = 0; g < ng; g++) {
            int64_t jb = INT64_MAX, j1 = 0;
            for (int32_t i = c->grp_start[g]; i < c->grp_start[g + 1]; i++) {
                int64_t p = a->pos[c->attn_order[i]], w = a->n_swa > 0 && p - a->n_swa + 1 > 0 ? p - a->n_swa + 1 : 0;
                if (w < jb) jb = w;
                if (p + 1 > j1) j1 = p + 1;
            }
            jb &= ~(int64_t)15;
            c->grp_range[2 * g] = jb;
            c->grp_range[2 * g + 1] = j1;
            atomic_store_explicit(&c->grp_next[g], 0, memory_order_relaxed);
            int64_t ld = (j1 - jb + 15) & ~(int64_t)15;
            if ((int64_t)a->n_head_kv * a->head_dim * ld > c->kt_cap || ld + jb + 16 > c->attn_cap) fits = false;
        }
        if (fits) {
            attn_simd_job j = {a, c, kern, ng};
            hearth_pool_run(c->pool, attn_simd_fn, &j);
            return;
        }
    }
    attn_job j = {a, c, x86, 0};
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
    case HEARTH_GLU_GEGLU_F16: hearth_geglu_f16_ref(j->g + a, j->u + a, b - a); break;
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

static void cpu_softcap(hearth_backend *be, float *x, int64_t n, float cap) {
    (void)be;
    for (int64_t i = 0; i < n; i++) x[i] = cap * tanhf(x[i] / cap);
}

static void cpu_copy_rows(hearth_backend *be, const float *x, int64_t dim, const int32_t *rows, int64_t n, float *y) {
    (void)be;
    for (int64_t i = 0; i < n; i++) memcpy(y + i * dim, x + (int64_t)rows[i] * dim, (size_t)dim * sizeof(float));
}

static void cpu_argmax(hearth_backend *be, const float *x, int64_t n_rows, int64_t n, int32_t *out) {
    (void)be;
    for (int64_t r = 0; r < n_rows; r++) out[r] = (int32_t)hearth_kernels_argmax(x + r * n, n);
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
        free(c->kt);
        free(c->attn_order);
        free(c->grp_start);
        free(c->grp_range);
        free(c->grp_next);
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
    .softcap = cpu_softcap,
    .copy_rows = cpu_copy_rows,
    .argmax = cpu_argmax,
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
    /* the SIMD heads write whole vectors of 16 scores; the x86-order heads pad keys to 32 */
    c->attn_cap = (max_ctx + 31) / 32 * 32 + 16;
    c->attn_scores = malloc((size_t)c->attn_cap * (size_t)c->nth * sizeof(float));
    if (!c->attn_scores) goto fail;
    /* pages of kt are touched only as far as the longest sequence reaches */
    c->kt_cap = max_width * (max_ctx + 16);
    c->kt = malloc((size_t)c->kt_cap * sizeof(float));
    c->attn_order = malloc((size_t)max_tok * sizeof(int32_t));
    c->grp_start = malloc(((size_t)max_tok + 1) * sizeof(int32_t));
    c->grp_range = malloc(2 * (size_t)max_tok * sizeof(int64_t));
    c->grp_next = malloc((size_t)max_tok * sizeof *c->grp_next);
    if (!c->kt || !c->attn_order || !c->grp_start || !c->grp_range || !c->grp_next) goto fail;
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
