/*
 * kv_pool.c - the paged KV block pool; see kv_pool.h.
 *
 * Layout per layer: K [n_blocks][block_size][n_head_kv * head_dim], then V likewise; the
 * free list is a stack of block ids (the most recently freed block is reused first, while it
 * may still be in cache).
 */
#include "engine/kv_pool.h"
#include "base/size.h"
#include "engine/kv.h"

#include <stdlib.h>
#include <string.h>

struct hearth_kv_pool {
    hearth_kv_view view;
    int32_t        n_blocks, block_size, max_blocks, n_seqs, max_seq_len;
    size_t         block_bytes, bytes;
    void          *mem;      /* owned: every layer's K and V blocks (a buffer of be, or host memory) */
    hearth_backend *be;      /* borrowed, NULL = host memory */
    void         **ptrs;     /* owned: [2][n_layer] */
    int32_t       *table;    /* owned: [n_seqs][max_blocks], -1 = none */
    int32_t       *n_in_row; /* owned: [n_seqs] */
    int32_t       *refs;     /* owned: [n_blocks] */
    int32_t       *free_ids; /* owned: stack [n_blocks] */
    int32_t        n_free;
};

hearth_status hearth_kv_pool_create(const hearth_model *m, const hearth_kv_pool_params *p, hearth_kv_pool **out,
                                    hearth_err *err) {
    *out = NULL;
    const hearth_hparams *hp = hearth_model_hparams(m);
    int32_t bs = p->block_size > 0 ? p->block_size : 16;
    if (p->n_seqs <= 0 || p->max_seq_len <= 0) return hearth_err_set(err, HEARTH_E_INVALID, -1, "empty KV pool");
    size_t esz = p->f16 ? 2 : 4, kw = (size_t)hp->n_head_kv * (size_t)hp->head_dim,
           vw = (size_t)hp->n_head_kv * (size_t)hp->head_dim_v;
    size_t block_bytes = hearth_kv_bytes_per_token(m, p->f16) * (size_t)bs;
    size_t n_blocks = block_bytes ? p->budget_bytes / block_bytes : 0;
    if (n_blocks == 0)
        return hearth_err_set(err, HEARTH_E_LIMIT, -1, "a KV budget of %zu bytes holds no block of %zu bytes",
                              p->budget_bytes, block_bytes);
    if (n_blocks > INT32_MAX / 2) n_blocks = INT32_MAX / 2;
    size_t per_k = kw * esz * (size_t)bs * n_blocks, per_v = vw * esz * (size_t)bs * n_blocks, total;
    if (!hearth_mul_size(per_k + per_v, (size_t)hp->n_layer, &total))
        return hearth_err_set(err, HEARTH_E_LIMIT, -1, "KV pool size overflows");
    int32_t max_blocks = (p->max_seq_len + bs - 1) / bs;
    hearth_kv_pool *pool = calloc(1, sizeof *pool);
    if (!pool) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    pool->n_blocks = (int32_t)n_blocks;
    pool->block_size = bs;
    pool->max_blocks = max_blocks;
    pool->n_seqs = p->n_seqs;
    pool->max_seq_len = p->max_seq_len;
    pool->block_bytes = block_bytes;
    pool->bytes = total;
    pool->ptrs = calloc(2 * (size_t)hp->n_layer, sizeof *pool->ptrs);
    pool->table = malloc((size_t)p->n_seqs * (size_t)max_blocks * sizeof(int32_t));
    pool->n_in_row = calloc((size_t)p->n_seqs, sizeof(int32_t));
    pool->refs = calloc(n_blocks, sizeof(int32_t));
    pool->free_ids = malloc(n_blocks * sizeof(int32_t));
    pool->be = p->be;
    pool->mem = p->be ? hearth_buf_alloc(p->be, total) : aligned_alloc(64, (total + 63) & ~(size_t)63);
    if (!pool->ptrs || !pool->table || !pool->n_in_row || !pool->refs || !pool->free_ids || !pool->mem) {
        hearth_kv_pool_destroy(pool);
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "cannot allocate %zu MiB of KV blocks", total >> 20);
    }
    char *q = pool->mem;
    for (int32_t il = 0; il < hp->n_layer; il++) {
        pool->ptrs[il] = q;
        q += per_k;
        pool->ptrs[hp->n_layer + il] = q;
        q += per_v;
    }
    for (size_t i = 0; i < (size_t)p->n_seqs * (size_t)max_blocks; i++) pool->table[i] = -1;
    /* stack top is the last entry: hand out block 0 first */
    for (int32_t i = 0; i < pool->n_blocks; i++) pool->free_ids[i] = pool->n_blocks - 1 - i;
    pool->n_free = pool->n_blocks;
    pool->view = (hearth_kv_view){
        .n_slots = p->n_seqs, .n_ctx = p->max_seq_len, .n_blocks = pool->n_blocks,
        .blocks = {.table = pool->table, .max_blocks = max_blocks, .block_size = bs},
        .f16 = p->f16, .k = pool->ptrs, .v = pool->ptrs + hp->n_layer,
    };
    *out = pool;
    return HEARTH_OK;
}

void hearth_kv_pool_destroy(hearth_kv_pool *pool) {
    if (!pool) return;
    if (pool->be) hearth_buf_free(pool->be, pool->mem);
    else free(pool->mem);
    free(pool->ptrs);
    free(pool->table);
    free(pool->n_in_row);
    free(pool->refs);
    free(pool->free_ids);
    free(pool);
}

const hearth_kv_view *hearth_kv_pool_view(const hearth_kv_pool *pool) { return &pool->view; }
int32_t hearth_kv_pool_n_blocks(const hearth_kv_pool *pool) { return pool->n_blocks; }
int32_t hearth_kv_pool_n_free(const hearth_kv_pool *pool) { return pool->n_free; }
int32_t hearth_kv_pool_block_size(const hearth_kv_pool *pool) { return pool->block_size; }
size_t  hearth_kv_pool_block_bytes(const hearth_kv_pool *pool) { return pool->block_bytes; }
size_t  hearth_kv_pool_bytes(const hearth_kv_pool *pool) { return pool->bytes; }

int32_t hearth_kv_pool_alloc(hearth_kv_pool *pool) {
    if (pool->n_free == 0) return -1;
    int32_t b = pool->free_ids[--pool->n_free];
    pool->refs[b] = 1;
    return b;
}

void hearth_kv_pool_ref(hearth_kv_pool *pool, int32_t blk) { pool->refs[blk]++; }

bool hearth_kv_pool_unref(hearth_kv_pool *pool, int32_t blk) {
    if (--pool->refs[blk] > 0) return false;
    pool->free_ids[pool->n_free++] = blk;
    return true;
}

int32_t hearth_kv_pool_refs(const hearth_kv_pool *pool, int32_t blk) { return pool->refs[blk]; }

const int32_t *hearth_kv_pool_row(const hearth_kv_pool *pool, int32_t slot) {
    return pool->table + (size_t)slot * (size_t)pool->max_blocks;
}

int32_t hearth_kv_pool_seq_blocks(const hearth_kv_pool *pool, int32_t slot) { return pool->n_in_row[slot]; }

bool hearth_kv_pool_seq_push(hearth_kv_pool *pool, int32_t slot, int32_t blk) {
    if (pool->n_in_row[slot] == pool->max_blocks) return false;
    pool->table[(size_t)slot * (size_t)pool->max_blocks + (size_t)pool->n_in_row[slot]++] = blk;
    return true;
}

int32_t hearth_kv_pool_seq_pop(hearth_kv_pool *pool, int32_t slot) {
    if (pool->n_in_row[slot] == 0) return -1;
    int32_t *e = pool->table + (size_t)slot * (size_t)pool->max_blocks + (size_t)--pool->n_in_row[slot];
    int32_t b = *e;
    *e = -1;
    return b;
}

int32_t hearth_kv_pool_seq_need(const hearth_kv_pool *pool, int32_t slot, int32_t n_tokens) {
    int32_t want = (n_tokens + pool->block_size - 1) / pool->block_size;
    return want > pool->n_in_row[slot] ? want - pool->n_in_row[slot] : 0;
}

bool hearth_kv_pool_seq_reserve(hearth_kv_pool *pool, int32_t slot, int32_t n_tokens) {
    if (n_tokens > pool->max_seq_len) return false;
    int32_t need = hearth_kv_pool_seq_need(pool, slot, n_tokens);
    if (need > pool->n_free) return false;
    for (int32_t i = 0; i < need; i++) hearth_kv_pool_seq_push(pool, slot, hearth_kv_pool_alloc(pool));
    return true;
}

bool hearth_kv_pool_check(const hearth_kv_pool *pool) {
    if (pool->n_free < 0 || pool->n_free > pool->n_blocks) return false;
    char *seen = calloc((size_t)pool->n_blocks, 1);
    if (!seen) return false;
    bool ok = true;
    for (int32_t i = 0; i < pool->n_free && ok; i++) {
        int32_t b = pool->free_ids[i];
        ok = b >= 0 && b < pool->n_blocks && !seen[b] && pool->refs[b] == 0;
        if (ok) seen[b] = 1;
    }
    for (int32_t b = 0; b < pool->n_blocks && ok; b++) ok = pool->refs[b] >= 0 && (pool->refs[b] == 0) == seen[b];
    free(seen);
    return ok;
}
