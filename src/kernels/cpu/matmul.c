/*
 * matmul.c - y = x W^T on the fork-join pool, with the active kernel set (kernels.h).
 *
 * One pool job, two phases (ggml_compute_forward_mul_mat's shape):
 *
 *   1. quantize   the n_tok activation rows into the weight type's vec_dot_type, into scratch.
 *                 The rows are cut into units (one block, or 256 elements of a plain type) and
 *                 each thread converts a contiguous range of units; then a pool barrier.
 *   2. dot        output rows are cut into chunks of chunk_rows (a multiple of 4); threads take
 *                 chunks from an atomic counter (relaxed: the counter only hands out indices).
 *                 For a chunk, tokens are taken TOK_TILE at a time and each weight row of the
 *                 chunk is dotted with every token of the tile while it is in L1; where the set
 *                 has a tile kernel (kernels.h vec_dot_tile), the chunk's rows in whole 4s x
 *                 up to HEARTH_TILE_NT tokens per call:
 *
 *                         tokens ->   t0 .. t0+TOK_TILE
 *                   row r0   [ vec_dot  vec_dot ... ]
 *                   row r0+1 [ vec_dot  vec_dot ... ]     one chunk (chunk_rows rows)
 *                   ...
 *
 * Every output element is exactly one vec_dot of one weight row with one activation row (a tile
 * computes each of its elements as that vec_dot would, bit for bit), and
 * the quantization of a block does not depend on who does it, so results do not depend on the
 * thread count or the chunking.
 *
 * MLX affine weights off the ref set (f32_direct) dot f32 activations directly, no phase 1.
 * The ref set (vec_dot_type F32 for a non-f32 weight) skips phase 1 and instead dequantizes
 * each weight row once per call into the thread's slice of scratch, then dots it with every
 * token in f32 (the f32 reference dot, which equals the set's own vec_dot bit for bit).
 *
 * A decode step (a handful of tokens) has too little phase 1 to split: the caller quantizes
 * all of it before it publishes the job (pre_quantize), so the job has no barrier and the
 * workers only dot. The blocks come out the same whoever quantizes them.
 *
 * hearth_matmul_n runs up to HEARTH_MATMUL_MAX_PARTS matrices that read the same activations
 * (q, k, v; gate, up) as one job: phase 1 once, then the chunks of all of them from one counter,
 * so the step pays one quantization and one wake-up instead of one per matrix. Each output
 * element is still exactly one vec_dot, so the results equal separate calls.
 *
 * No allocation, locks or logging inside; scratch is the caller's.
 */
#include <stdatomic.h>
#include <stdint.h>

#include "base/assert.h"
#include "base/size.h"
#include "kernels/kernels.h"

/* Tokens per tile in phase 2: 8 activation rows of a 4096-wide q8_0 layer are 35 KB, which
 * stay in L1/L2 while the chunk's weight rows stream past. -DHEARTH_MM_TOK_TILE=N to measure. */
#ifndef HEARTH_MM_TOK_TILE
#define HEARTH_MM_TOK_TILE 8
#endif
/* A decode step (HEARTH_MM_DECODE_TOK below): chunks per thread and their most rows. One chunk a thread (each thread
 * reads one run of every matrix) measured best: 2 threads, 512 + 128 tokens, under chrt -f 10,
 * SmolLM2 Q4_1 step 3.38 -> 2.95 ms and Gemma 3 Q4_K_M 5.88 -> 5.11 ms against 4 chunks of up
 * to 1024 rows; 2 chunks fell between. */
#ifndef HEARTH_MM_DECODE_CPT
#define HEARTH_MM_DECODE_CPT 1
#endif
/* Steps of up to this many tokens (one decode token per running sequence) chunk as decode: a
 * batch of a few sequences still streams every weight once, and rows split into one run a
 * thread kept the prefetcher on it. Measured (`build/bench_engine SMOLLM2 2 64 3`, two
 * alternated runs each, aggregate tok/s at 4 / 8 / 16 streams): up to 3 tokens 666-578 /
 * 867-744 / 778-737, up to 16 tokens 847-810 / 938-957 / 893-812. */
#ifndef HEARTH_MM_DECODE_TOK
#define HEARTH_MM_DECODE_TOK 16
#endif
#ifndef HEARTH_MM_DECODE_CMAX
#define HEARTH_MM_DECODE_CMAX (1 << 30)
#endif
_Static_assert(HEARTH_MM_TOK_TILE % 4 == 0, "token tiles hold whole tiles of 4 (and gemm groups)");
enum {
    TOK_TILE = HEARTH_MM_TOK_TILE,
    PLAIN_UNIT = 256,        /* phase-1 unit of a plain activation type, elements */
    CHUNKS_PER_THREAD = 8,   /* target chunks per thread, for load balance ... */
    CHUNK_MIN = 4,           /* ... within these rows per chunk */
    CHUNK_MAX = 64,
    DECODE_CHUNKS_PER_THREAD = HEARTH_MM_DECODE_CPT, /* the same for a decode step */
    DECODE_CHUNK_MAX = HEARTH_MM_DECODE_CMAX,
    SERIAL_QUANT_MAX = 16384, /* activation elements the caller quantizes alone (decode) */
};

/* One weight matrix of a job (hearth_matmul_n runs several on the same activations). */
typedef struct {
    hearth_vec_dot_fn     vec_dot;
    hearth_vec_dot_tile_fn vec_dot_tile; /* optional: nr rows x nt tokens, bit-identical to vec_dot */
    hearth_vec_dot_tile_fn gemm_tile;    /* the same for vec_dot_gemm (set whenever tiles run) */
    hearth_vec_dot_fn     vec_dot_gemm; /* tokens t < gemm_rows use it (kernels.h); NULL: none */
    int64_t               gemm_rows;
    hearth_to_float_fn    dequant;    /* ref path: weight row -> f32; NULL otherwise */
    const uint8_t        *w;          /* borrowed: [n_out] rows of w_row_bytes */
    size_t                w_row_bytes;
    int64_t               n_out, ldy;
    float                *y;          /* borrowed: [n_tok][ldy] */
    int64_t               chunk_rows, chunk_end; /* chunks [previous part's end, chunk_end) */
} mm_part;

typedef struct {
    hearth_pool          *pool;       /* borrowed */
    mm_part               parts[HEARTH_MATMUL_MAX_PARTS];
    int                   n_parts;
    hearth_from_float_fn  quantize;   /* phase 1; NULL when x is used as is */
    int64_t               n_in, n_tok;
    const float          *x;          /* borrowed: [n_tok][n_in] */
    uint8_t              *act;        /* activations as vec_dot reads them: scratch or x */
    size_t                act_row_bytes;
    int64_t               act_blck;   /* block size of the activation type */
    size_t                act_type_size;
    int64_t               unit, units_per_row; /* phase-1 split, in elements */
    float                *deq;        /* view into scratch: [nth][deq_stride] floats (ref path) */
    size_t                deq_stride;
    int64_t               n_chunks;   /* over all parts */
    _Atomic int64_t       next_chunk;
} mm_job;

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

static void quantize_rows(mm_job *j, int ith, int nth) {
    int64_t total = j->n_tok * j->units_per_row;
    int64_t u = total * ith / nth, u_end = total * (ith + 1) / nth;
    while (u < u_end) {
        int64_t t = u / j->units_per_row, k = u % j->units_per_row;
        int64_t k_end = k + (u_end - u) < j->units_per_row ? k + (u_end - u) : j->units_per_row;
        int64_t e0 = k * j->unit, e1 = k_end * j->unit < j->n_in ? k_end * j->unit : j->n_in;
        uint8_t *dst = j->act + (size_t)t * j->act_row_bytes +
                       (size_t)(e0 / j->act_blck) * j->act_type_size;
        j->quantize(j->x + t * j->n_in + e0, dst, e1 - e0);
        u += k_end - k;
    }
}

/* Rows [r0, r1) of part p on the ref path: dequantize each row once, dot it with every token. */
static void rows_dequant(const mm_job *j, const mm_part *p, float *row, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
        p->dequant(p->w + (size_t)r * p->w_row_bytes, row, j->n_in);
        for (int64_t t = 0; t < j->n_tok; t++)
            p->vec_dot(j->n_in, &p->y[t * p->ldy + r], row, j->act + (size_t)t * j->act_row_bytes);
    }
}

/* Rows [r0, r1) of part p, tokens in tiles of TOK_TILE; the rows in 4s x up to HEARTH_TILE_NT tokens per call where
 * the set has a tile kernel, the remaining rows one vec_dot per (row, token). */
static void rows_tiled(const mm_job *j, const mm_part *p, int64_t r0, int64_t r1) {
    const size_t rb = p->w_row_bytes, ab = j->act_row_bytes;
    for (int64_t t0 = 0; t0 < j->n_tok; t0 += TOK_TILE) {
        int64_t t1 = t0 + TOK_TILE < j->n_tok ? t0 + TOK_TILE : j->n_tok;
        int64_t r = r0;
        if (p->vec_dot_tile && r1 - r0 >= 4) { /* the rows in whole 4s in one call per token run */
            const int64_t nr = (r1 - r0) & ~(int64_t)3;
            for (int64_t t = t0, te; t < t1; t = te) { /* one order per call: stop at gemm_rows */
                te = t < p->gemm_rows && p->gemm_rows < t1 ? p->gemm_rows : t1;
                te = te - t > HEARTH_TILE_NT ? t + HEARTH_TILE_NT : te;
                hearth_vec_dot_tile_fn tile = t < p->gemm_rows ? p->gemm_tile : p->vec_dot_tile;
                tile(j->n_in, &p->y[t * p->ldy + r0], p->ldy, p->w + (size_t)r0 * rb, rb, (int)nr,
                     j->act + (size_t)t * ab, ab, (int)(te - t));
            }
            r += nr;
        }
        for (; r < r1; r++) {
            const uint8_t *wr = p->w + (size_t)r * rb;
            for (int64_t t = t0; t < t1; t++) {
                const uint8_t *xt = j->act + (size_t)t * ab;
                (t < p->gemm_rows ? p->vec_dot_gemm : p->vec_dot)(j->n_in, &p->y[t * p->ldy + r], wr, xt);
            }
        }
    }
}

static void mm_worker(void *arg, int ith, int nth) {
    mm_job *j = arg;
    if (j->quantize) {
        quantize_rows(j, ith, nth);
        hearth_pool_barrier(j->pool);
    }
    float *row = j->deq ? j->deq + (size_t)ith * j->deq_stride : NULL;
    for (;;) {
        int64_t c = atomic_fetch_add_explicit(&j->next_chunk, 1, memory_order_relaxed);
        if (c >= j->n_chunks) break;
        int ip = 0;
        while (c >= j->parts[ip].chunk_end) ip++;
        const mm_part *p = &j->parts[ip];
        int64_t r0 = (c - (ip ? j->parts[ip - 1].chunk_end : 0)) * p->chunk_rows;
        int64_t r1 = r0 + p->chunk_rows < p->n_out ? r0 + p->chunk_rows : p->n_out;
        if (p->dequant) rows_dequant(j, p, row, r0, r1);
        else rows_tiled(j, p, r0, r1);
    }
}

/* Scratch one set needs: quantized activations, or per-thread dequantized rows (ref path). */
static size_t scratch_for(const hearth_kernel_traits *tr, hearth_type wtype, int64_t n_in,
                          int64_t n_tok, int n_threads) {
    size_t bytes = 0;
    if (tr->vec_dot_type != HEARTH_TYPE_F32) {
        size_t row = hearth_row_size(tr->vec_dot_type, n_in);
        if (!hearth_mul_size(row, (size_t)n_tok, &bytes)) return SIZE_MAX;
    } else if (wtype != HEARTH_TYPE_F32 && !tr->f32_direct) {
        if (!hearth_mul_size(align64((size_t)n_in * sizeof(float)), (size_t)n_threads, &bytes))
            return SIZE_MAX;
    }
    return bytes > SIZE_MAX - 64 ? SIZE_MAX : align64(bytes);
}

size_t hearth_matmul_scratch_bytes(hearth_type wtype, int64_t n_in, int64_t n_tok, int n_threads) {
    /* the largest over the sets this CPU runs, so hearth_kernels_select between sizing and
     * use cannot make the scratch too small */
    if (n_threads < 1) n_threads = 1;
    size_t need = 0;
    for (int isa = 0; isa < HEARTH_ISA_COUNT; isa++) {
        const hearth_kernel_traits *tr = hearth_kernels_traits_isa(wtype, (hearth_isa)isa);
        if (!tr || !tr->vec_dot) continue;
        size_t b = scratch_for(tr, wtype, n_in, n_tok, n_threads);
        if (b > need) need = b;
    }
    return need;
}

/* Fill j (activation side) and its parts from d[0..n); false when the parts' weights would
 * pair with different activation types (the caller then runs them one by one). */
static bool job_init(mm_job *j, hearth_pool *pool, const hearth_matmul_part *d, int n, int64_t n_in,
                     const float *x, int64_t n_tok, void *scratch) {
    const int nth = hearth_pool_size(pool);
    const hearth_kernel_traits *tr0 = hearth_kernels_traits(d[0].wtype);
    HEARTH_ASSERT(tr0 && tr0->vec_dot && n >= 1 && n <= HEARTH_MATMUL_MAX_PARTS);
    const hearth_type vdt = tr0->vec_dot_type;
    const hearth_type_traits *at = hearth_type_traits_of((int)vdt);
    const hearth_kernel_traits *atr = hearth_kernels_traits(vdt);
    HEARTH_ASSERT(at && atr && n_in % at->blck_size == 0);
    *j = (mm_job){
        .pool = pool, .n_parts = n, .n_in = n_in, .n_tok = n_tok, .x = x,
        .act_blck = at->blck_size, .act_type_size = at->type_size,
        .act_row_bytes = hearth_row_size(vdt, n_in),
    };
    if (vdt != HEARTH_TYPE_F32) {
        /* phase 1 quantizes x into scratch; vec_dot pairs the weight with it */
        HEARTH_ASSERT(scratch != NULL);
        j->quantize = atr->from_float;
        j->act = scratch;
        j->unit = at->is_quantized ? at->blck_size : PLAIN_UNIT;
        j->units_per_row = (n_in + j->unit - 1) / j->unit;
    } else {
        j->act = (uint8_t *)(uintptr_t)x; /* read only */
    }
    int64_t chunks = 0;
    for (int i = 0; i < n; i++) {
        const hearth_kernel_traits *tr = hearth_kernels_traits(d[i].wtype);
        HEARTH_ASSERT(tr && tr->vec_dot);
        HEARTH_ASSERT(d[i].n_out >= 0 && d[i].ldy >= d[i].n_out);
        HEARTH_ASSERT(hearth_row_size(d[i].wtype, n_in) != 0 && d[i].w_row_bytes >= hearth_row_size(d[i].wtype, n_in));
        if (tr->vec_dot_type != vdt || tr->f32_direct != tr0->f32_direct) return false;
        mm_part *p = &j->parts[i];
        *p = (mm_part){.w = d[i].w, .w_row_bytes = d[i].w_row_bytes, .n_out = d[i].n_out, .ldy = d[i].ldy,
                       .y = d[i].y};
        if (vdt != HEARTH_TYPE_F32 || d[i].wtype == HEARTH_TYPE_F32 || tr->f32_direct) {
            p->vec_dot = tr->vec_dot;
            p->vec_dot_tile = vdt != HEARTH_TYPE_F32 ? tr->vec_dot_tile : NULL;
            if (tr->vec_dot_batch && n_tok >= tr->vec_dot_batch_min && !d[i].per_row) { /* llama.cpp's tiled matmul */
                p->vec_dot = tr->vec_dot_batch;
                p->vec_dot_tile = vdt != HEARTH_TYPE_F32 ? tr->vec_dot_batch_tile : NULL;
            }
            if (tr->vec_dot_gemm && n_tok > 3 && !d[i].per_row) { /* llama.cpp's repacked gemm rows (kernels.h) */
                p->vec_dot_gemm = tr->vec_dot_gemm;
                p->gemm_rows = n_tok - n_tok % 4;
                p->gemm_tile = tr->vec_dot_gemm_tile;
                if (!p->gemm_tile) p->vec_dot_tile = NULL; /* tiles only where both orders have one */
            }
        } else {
            /* ref path: dequantized rows . f32 with the f32 dot of the same set */
            HEARTH_ASSERT(scratch != NULL);
            p->dequant = tr->to_float;
            p->vec_dot = atr->vec_dot;
            j->deq = scratch;
            j->deq_stride = align64((size_t)n_in * sizeof(float)) / sizeof(float);
        }
        /* a decode step streams each weight once: one chunk a thread keeps each thread's reads
         * one sequential run for the prefetcher (and in DRAM pages of its own) */
        bool decode = n_tok <= HEARTH_MM_DECODE_TOK;
        int64_t cmax = decode ? DECODE_CHUNK_MAX : CHUNK_MAX;
        int64_t per = d[i].n_out / ((int64_t)nth * (decode ? DECODE_CHUNKS_PER_THREAD : CHUNKS_PER_THREAD));
        p->chunk_rows = per < CHUNK_MIN ? CHUNK_MIN : per > cmax ? cmax : per;
        p->chunk_rows = (p->chunk_rows + 3) & ~(int64_t)3; /* whole tiles of 4 rows */
        chunks += (d[i].n_out + p->chunk_rows - 1) / p->chunk_rows;
        p->chunk_end = chunks;
    }
    j->n_chunks = chunks;
    atomic_init(&j->next_chunk, 0);
    return true;
}

/* Phase 1 on the caller alone when it is too small to pay for a barrier. */
static void pre_quantize(mm_job *j) {
    if (!j->quantize || j->n_tok * j->n_in > SERIAL_QUANT_MAX) return;
    quantize_rows(j, 0, 1);
    j->quantize = NULL;
}

void hearth_matmul_n(hearth_pool *pool, const hearth_matmul_part *parts, int n_parts, int64_t n_in, const float *x,
                     int64_t n_tok, void *scratch) {
    HEARTH_ASSERT(n_in > 0 && n_tok >= 0 && n_parts >= 1 && n_parts <= HEARTH_MATMUL_MAX_PARTS);
    if (n_tok == 0) return;
    mm_job j;
    if (job_init(&j, pool, parts, n_parts, n_in, x, n_tok, scratch)) {
        if (j.n_chunks == 0) return;
        pre_quantize(&j);
        hearth_pool_run(pool, mm_worker, &j);
        return;
    }
    for (int i = 0; i < n_parts; i++)
        hearth_matmul(pool, parts[i].wtype, parts[i].w, parts[i].w_row_bytes, parts[i].n_out, n_in, x, n_tok,
                      parts[i].y, parts[i].ldy, scratch);
}

void hearth_matmul(hearth_pool *pool, hearth_type wtype, const void *w, size_t w_row_bytes,
                   int64_t n_out, int64_t n_in, const float *x, int64_t n_tok, float *y,
                   int64_t ldy, void *scratch) {
    HEARTH_ASSERT(n_in > 0 && n_out >= 0 && n_tok >= 0 && ldy >= n_out);
    if (n_out == 0 || n_tok == 0) return;
    hearth_matmul_part d = {wtype, w, w_row_bytes, n_out, y, ldy, false};
    mm_job j;
    HEARTH_ASSERT(job_init(&j, pool, &d, 1, n_in, x, n_tok, scratch));
    pre_quantize(&j);
    hearth_pool_run(pool, mm_worker, &j);
}
