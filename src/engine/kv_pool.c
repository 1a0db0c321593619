/*
 * kv_pool.c - the paged KV block pool; see kv_pool.h.
 *
 * Layout: for each of the per_group layer places j of a group, K [n_blocks][block_size]
 * [n_head_kv * head_dim], then V likewise; layer il reads place j(il) through its group's
 * table, so a block id means "these rows of the per_group layers of one group". The free list
 * is a stack of block ids (the most recently freed block is reused first, while it may still
 * be in cache). Tables: [n_groups][n_seqs][max_blocks], -1 = none (or a hole).
 *
 * Per-layer schemes (kv_config.json): each layer place j of a group is one region, K
 * [n_blocks][block_size][k_row] then V likewise, and block ids are shared by all groups, so
 * layer il of the group that holds block b finds it at b * block_size * row of its place's
 * region. The layers at one place (one of each group) must therefore have the same row bytes:
 * a layer whose scheme is narrower than the widest at its place is widened to it (a q4_0 layer
 * becomes q8_0 or f16), never narrowed. The memory a block costs is paid at the widest type of
 * each place either way, so widening costs nothing and is at least as precise as the file asks.
 * To keep the widened layers few, on a model of several groups each kind (full or sliding) whose
 * layers differ is dealt widest first, place by place (plan_layers): a place's layers are as
 * alike as the file allows. A block is then the sum over places of the widest rows there, which is at
 * most the widest scheme's block: a mixed file never costs more than its widest scheme alone.
 * A model of one group per kind (no sliding layers) widens nothing.
 *
 * A hybrid model's linear-attention layers (Qwen3.5) keep no rows: each sequence slot has a
 * fixed-size state per such layer ([layer][n_seqs][state floats], beside the blocks, outside the
 * budget), which the forward resets when a sequence starts at position 0 and advances step by
 * step; they take no places and no rows. Behind the slots' states each such layer has n_snaps
 * more rows of the same size: the snapshots (kv_pool.h), so that a snapshot is state row
 * n_seqs + id of every linear layer, and copying one in or out is copy_state between rows.
 */
#include "engine/kv_pool.h"
#include "base/size.h"

#include <stdlib.h>
#include <string.h>

struct hearth_kv_pool {
    hearth_kv_view   view;
    hearth_kv_layout lay;
    int32_t          n_groups, n_layer;
    int32_t          n_blocks, block_size, max_blocks, n_seqs, max_seq_len;
    size_t           block_bytes, bytes;
    int32_t          n_regions;
    struct kv_region {
        size_t         k_row, v_row;   /* bytes of one position's K (V) in one layer */
        size_t         off;            /* bytes from mem to the region's K rows; its V rows follow them */
        hearth_kv_type k_type, v_type; /* the types of those rows */
    } *regions;                /* owned [n_regions]: one per layer place (kv_pool.c's head comment) */
    void            *bounce;   /* owned: one region's K or V rows of a block (device pools' copies) */
    size_t           bounce_cap; /* its bytes */
    void            *mem;      /* owned: every layer place's K and V blocks (a buffer of be, or host memory) */
    hearth_backend  *be;       /* borrowed, NULL = host memory */
    void           **ptrs;     /* owned: [2][n_layer] */
    int32_t         *layer_group; /* owned [n_layer] */
    hearth_kv_type  *layer_type;  /* owned [2][n_layer]: each layer's K types, then its V types */
    int32_t         *window;   /* owned [n_groups] */
    int32_t         *table;    /* owned: [n_groups][n_seqs][max_blocks], -1 = none */
    int32_t         *n_in_row; /* owned: [n_groups][n_seqs] entries, holes included */
    int32_t         *n_dead;   /* owned: [n_groups][n_seqs] leading holes */
    int32_t         *refs;     /* owned: [n_blocks] */
    int32_t         *free_ids; /* owned: stack [n_blocks] */
    int32_t          n_free;
    /* linear-attention layers (hybrid models): a state slot per sequence slot, beside the blocks */
    void            *lin_mem;  /* owned: [linear layer][n_seqs][state floats] (a buffer of be, or host), or NULL */
    float          **lin_ptrs; /* owned [n_layer]: each linear layer's states, NULL for the others */
    int32_t         *lin_len;  /* owned [n_seqs + n_snaps]: positions each row's states hold (forward.h) */
    size_t           lin_bytes;
    size_t           lin_slot;  /* bytes of one slot's state in one layer */
    /* state snapshots: rows n_seqs .. n_seqs + n_snaps of every linear layer's states */
    int32_t          n_snaps, n_snap_free;
    int32_t         *snap_free; /* owned stack [n_snaps]: free snapshot ids */
};

static int32_t gcd(int32_t a, int32_t b) {
    while (b) {
        int32_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

int32_t hearth_kv_n_cache_layers(const hearth_model *m) {
    const hearth_hparams *hp = hearth_model_hparams(m);
    int32_t n = 0;
    for (int32_t il = 0; il < hp->n_layer; il++) n += hearth_hparams_stores_kv(hp, il);
    return n;
}

/* K+V bytes of one position in one layer */
static size_t layer_row_bytes(const hearth_hparams *hp, hearth_kv_scheme kv) {
    return hearth_kv_row_bytes(kv.k, (int64_t)hp->n_head_kv * hp->head_dim) +
           hearth_kv_row_bytes(kv.v, (int64_t)hp->n_head_kv * hp->head_dim_v);
}

size_t hearth_kv_bytes_per_token(const hearth_model *m, hearth_kv_scheme kv) {
    return (size_t)hearth_kv_n_cache_layers(m) * layer_row_bytes(hearth_model_hparams(m), kv);
}

size_t hearth_kv_bytes_per_token_layers(const hearth_model *m, hearth_kv_scheme kv, const hearth_kv_scheme *layer_kv) {
    if (!layer_kv) return hearth_kv_bytes_per_token(m, kv);
    const hearth_hparams *hp = hearth_model_hparams(m);
    size_t n = 0;
    for (int32_t il = 0; il < hp->n_layer; il++)
        if (hearth_hparams_stores_kv(hp, il)) n += layer_row_bytes(hp, layer_kv[il]);
    return n;
}

hearth_kv_layout hearth_kv_layout_of(const hearth_model *m, bool swa_full) {
    const hearth_hparams *hp = hearth_model_hparams(m);
    int32_t n_swa_layers = 0, n_full_layers = 0; /* of the layers that store their own K and V */
    for (int32_t il = 0; il < hp->n_layer; il++) {
        if (!hearth_hparams_stores_kv(hp, il)) continue;
        if (!swa_full && hearth_hparams_is_swa(hp, il)) n_swa_layers++;
        else n_full_layers++;
    }
    int32_t g = gcd(n_full_layers, n_swa_layers);
    if (g <= 0) g = 1;
    return (hearth_kv_layout){.per_group = g, .n_full = n_full_layers / g, .n_win = n_swa_layers / g,
                              .n_swa = n_swa_layers ? hp->n_swa : 0};
}

int64_t hearth_kv_layout_blocks(const hearth_kv_layout *l, int32_t block_size, int64_t n_tokens, int64_t chunk) {
    int64_t all = (n_tokens + block_size - 1) / block_size, win = all;
    if (l->n_win > 0) {
        int64_t span = (l->n_swa - 1 + (chunk > 0 ? chunk : 1) + block_size - 1) / block_size + 1;
        if (span < win) win = span;
    }
    return (int64_t)l->n_full * all + (int64_t)l->n_win * win;
}

size_t hearth_kv_layout_block_bytes(const hearth_kv_layout *l, const hearth_model *m, hearth_kv_scheme kv,
                                    int32_t block_size) {
    return layer_row_bytes(hearth_model_hparams(m), kv) * (size_t)l->per_group * (size_t)block_size;
}

/* K (kv = 0) or V (kv = 1) row bytes of one position in one layer of type t */
static size_t row_of(const hearth_hparams *hp, hearth_kv_type t, int kv) {
    return hearth_kv_row_bytes(t, (int64_t)hp->n_head_kv * (kv ? hp->head_dim_v : hp->head_dim));
}

/* A pool's plan (the head comment): each layer's group and place (-1 for a KV-shared layer, which
 * takes its source's), its types, widened to the widest of its place, and each place's K and V
 * row bytes and types (regs[0 .. per_group)). On a model of several groups, a kind whose
 * layers differ in row bytes is dealt widest first, place by place (the k-th widest layer to
 * place k / n_groups, group k % n_groups: the groups of one kind are interchangeable), so the
 * widest layers share places; otherwise (one scheme in the kind, or one group in the model) the
 * k-th layer of a kind goes to group k / per_group, place k % per_group, as it always has.
 * When each layer's K and V are of one width (kv_config.json's files) this is the cheapest
 * placement: the j-th widest place of any placement is at least as wide as the dealt one's,
 * and both kinds' places are matched widest to widest. Layers whose K and V widths differ are
 * ordered by their sum, which may not be the cheapest. Returns how many layers were widened,
 * -1 when out of memory. */
static int32_t plan_layers(const hearth_model *m, const hearth_kv_layout *lay, bool swa_full, hearth_kv_scheme kv,
                           const hearth_kv_scheme *layer_kv, int32_t *group, int32_t *place, hearth_kv_scheme *ty,
                           struct kv_region *regs) {
    const hearth_hparams *hp = hearth_model_hparams(m);
    int32_t n_layer = hp->n_layer, P = lay->per_group, widened = 0;
    int32_t *idx = malloc((size_t)n_layer * sizeof *idx);
    if (!idx) return -1;
    for (int32_t il = 0; il < n_layer; il++) {
        ty[il] = layer_kv ? layer_kv[il] : kv;
        group[il] = place[il] = -1;
    }
    for (int kind = 0; kind < 2; kind++) { /* full-attention layers, then sliding ones */
        int32_t n = 0, n_g = kind ? lay->n_win : lay->n_full, base = kind ? lay->n_full : 0;
        for (int32_t il = 0; il < n_layer; il++)
            if (hearth_hparams_stores_kv(hp, il) && (!swa_full && hearth_hparams_is_swa(hp, il)) == kind)
                idx[n++] = il;
        bool same = true;
        for (int32_t i = 1; i < n; i++)
            same = same && row_of(hp, ty[idx[i]].k, 0) == row_of(hp, ty[idx[0]].k, 0) &&
                   row_of(hp, ty[idx[i]].v, 1) == row_of(hp, ty[idx[0]].v, 1);
        bool deal = lay->n_full + lay->n_win > 1 && !same;
        for (int32_t i = 1; deal && i < n; i++) { /* stable insertion sort, widest first */
            int32_t il = idx[i], j = i;
            size_t w = row_of(hp, ty[il].k, 0) + row_of(hp, ty[il].v, 1);
            while (j > 0 && row_of(hp, ty[idx[j - 1]].k, 0) + row_of(hp, ty[idx[j - 1]].v, 1) < w) {
                idx[j] = idx[j - 1];
                j--;
            }
            idx[j] = il;
        }
        for (int32_t k = 0; k < n; k++) {
            group[idx[k]] = base + (deal ? k % n_g : k / P);
            place[idx[k]] = deal ? k / n_g : k % P;
        }
    }
    free(idx);
    for (int32_t j = 0; j < P; j++) regs[j] = (struct kv_region){0};
    for (int32_t il = 0; il < n_layer; il++) { /* each place's widest K and V */
        if (place[il] < 0) continue;
        struct kv_region *rg = &regs[place[il]];
        size_t k = row_of(hp, ty[il].k, 0), v = row_of(hp, ty[il].v, 1);
        if (k > rg->k_row) rg->k_row = k, rg->k_type = ty[il].k;
        if (v > rg->v_row) rg->v_row = v, rg->v_type = ty[il].v;
    }
    for (int32_t il = 0; il < n_layer; il++) {
        if (!hearth_hparams_stores_kv(hp, il)) continue;
        const struct kv_region *rg = &regs[place[il]];
        bool wk = row_of(hp, ty[il].k, 0) < rg->k_row, wv = row_of(hp, ty[il].v, 1) < rg->v_row;
        if (wk) ty[il].k = rg->k_type;
        if (wv) ty[il].v = rg->v_type;
        widened += wk || wv;
    }
    for (int32_t il = 0; il < n_layer; il++) { /* a KV-shared layer reads an earlier layer's cache */
        int32_t src = hearth_hparams_kv_layer(hp, il);
        if (src == il || hearth_hparams_is_linear(hp, il)) continue;
        ty[il] = ty[src];
        group[il] = group[src];
        place[il] = place[src];
    }
    return widened;
}

/* plan_layers into scratch of its own; regs (NULL: none) gets the places' rows. */
static int32_t plan_alloc(const hearth_model *m, bool swa_full, hearth_kv_scheme kv, const hearth_kv_scheme *layer_kv,
                          hearth_kv_scheme *ty, struct kv_region *regs) {
    const hearth_hparams *hp = hearth_model_hparams(m);
    hearth_kv_layout lay = hearth_kv_layout_of(m, swa_full);
    int32_t *gp = malloc((size_t)hp->n_layer * 2 * sizeof *gp);
    struct kv_region *r = regs ? regs : malloc((size_t)lay.per_group * sizeof *r);
    int32_t n = gp && r ? plan_layers(m, &lay, swa_full, kv, layer_kv, gp, gp + hp->n_layer, ty, r) : -1;
    free(gp);
    if (!regs) free(r);
    return n;
}

int32_t hearth_kv_layers_widen(const hearth_model *m, bool swa_full, hearth_kv_scheme *layer_kv) {
    int32_t n_layer = hearth_model_hparams(m)->n_layer;
    hearth_kv_scheme *ty = malloc((size_t)n_layer * sizeof *ty);
    int32_t n = ty ? plan_alloc(m, swa_full, layer_kv[0], layer_kv, ty, NULL) : -1;
    if (n >= 0) memcpy(layer_kv, ty, (size_t)n_layer * sizeof *ty);
    free(ty);
    return n;
}

size_t hearth_kv_block_bytes_layers(const hearth_model *m, bool swa_full, hearth_kv_scheme kv,
                                    const hearth_kv_scheme *layer_kv, int32_t block_size) {
    hearth_kv_layout lay = hearth_kv_layout_of(m, swa_full);
    if (!layer_kv) return hearth_kv_layout_block_bytes(&lay, m, kv, block_size);
    int32_t n_layer = hearth_model_hparams(m)->n_layer;
    hearth_kv_scheme *ty = malloc((size_t)n_layer * sizeof *ty);
    struct kv_region *regs = malloc((size_t)lay.per_group * sizeof *regs);
    size_t bytes = 0;
    if (ty && regs && plan_alloc(m, swa_full, kv, layer_kv, ty, regs) >= 0)
        for (int32_t j = 0; j < lay.per_group; j++) bytes += (regs[j].k_row + regs[j].v_row) * (size_t)block_size;
    free(ty);
    free(regs);
    return bytes;
}

hearth_status hearth_kv_pool_create(const hearth_model *m, const hearth_kv_pool_params *p, hearth_kv_pool **out,
                                    hearth_err *err) {
    *out = NULL;
    const hearth_hparams *hp = hearth_model_hparams(m);
    int32_t bs = p->block_size > 0 ? p->block_size : 16;
    if (p->n_seqs <= 0 || p->max_seq_len <= 0) return hearth_err_set(err, HEARTH_E_INVALID, -1, "empty KV pool");
    hearth_kv_layout lay = hearth_kv_layout_of(m, p->swa_full);
    if (lay.n_win > 0 && p->window_keep > lay.n_swa) lay.n_swa = p->window_keep; /* a reader further back */
    int32_t n_groups = lay.n_full + lay.n_win;
    hearth_kv_pool *pool = calloc(1, sizeof *pool);
    if (!pool) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    /* scratch: each layer's group and place, then its types */
    int32_t *gp = malloc((size_t)hp->n_layer * (2 * sizeof(int32_t) + sizeof(hearth_kv_scheme)));
    hearth_kv_scheme *ty = gp ? (hearth_kv_scheme *)(gp + 2 * hp->n_layer) : NULL;
    pool->regions = malloc((size_t)lay.per_group * sizeof *pool->regions);
    hearth_status st = HEARTH_OK;
    if (!gp || !pool->regions ||
        plan_layers(m, &lay, p->swa_full, p->kv, p->layer_kv, gp, gp + hp->n_layer, ty, pool->regions) < 0)
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    pool->n_regions = lay.per_group;
    for (int32_t il = 0; il < hp->n_layer && !st; il++) {
        if (!hearth_hparams_stores_kv(hp, il)) continue;
        hearth_kv_scheme s = ty[il];
        if (!hearth_kv_row_bytes(s.k, (int64_t)hp->n_head_kv * hp->head_dim) ||
            !hearth_kv_row_bytes(s.v, (int64_t)hp->n_head_kv * hp->head_dim_v))
            st = hearth_err_set(err, HEARTH_E_INVALID, -1, "unknown KV cache type (layer %d)", il);
        else if ((hearth_kv_type_quantized(s.k) && hp->head_dim % HEARTH_KV_QBLOCK) ||
                 (hearth_kv_type_quantized(s.v) && hp->head_dim_v % HEARTH_KV_QBLOCK))
            st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1,
                                "a quantized KV cache needs heads of a multiple of %d elements (this model's are %d)",
                                HEARTH_KV_QBLOCK, hp->head_dim);
        else if ((hearth_kv_type_turbo(s.k) || hearth_kv_type_turbo(s.v)) &&
                 (hp->head_dim % HEARTH_KV_TURBO_ROT || hp->head_dim_v % HEARTH_KV_TURBO_ROT || hp->head_dim > 512 ||
                  hp->head_dim_v > 512))
            st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1,
                                "--kv-quant turbo needs heads of a multiple of %d elements, at most 512 (this model's "
                                "are %d)",
                                HEARTH_KV_TURBO_ROT, hp->head_dim);
        else if (hp->attn_sinks && (hearth_kv_type_quantized(s.k) || hearth_kv_type_turbo(s.k) ||
                                    hearth_kv_type_quantized(s.v) || hearth_kv_type_turbo(s.v)))
            st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1,
                                "attention sinks (gpt-oss) run on an f16 or f32 KV cache only, not a quantized one");
    }
    size_t block_bytes = 0, max_row = 0;
    for (int32_t r = 0; r < pool->n_regions && !st; r++) {
        block_bytes += (pool->regions[r].k_row + pool->regions[r].v_row) * (size_t)bs;
        if (pool->regions[r].k_row > max_row) max_row = pool->regions[r].k_row;
        if (pool->regions[r].v_row > max_row) max_row = pool->regions[r].v_row;
    }
    size_t n_blocks = block_bytes ? p->budget_bytes / block_bytes : 0;
    if (!st && n_blocks == 0)
        st = hearth_err_set(err, HEARTH_E_LIMIT, -1, "a KV budget of %zu bytes holds no block of %zu bytes",
                            p->budget_bytes, block_bytes);
    if (n_blocks > INT32_MAX / 2) n_blocks = INT32_MAX / 2;
    size_t total = 0;
    for (int32_t r = 0; r < pool->n_regions && !st; r++) { /* K [n_blocks][bs][k_row], then V */
        size_t k, v;
        pool->regions[r].off = total;
        if (!hearth_mul_size(pool->regions[r].k_row * (size_t)bs, n_blocks, &k) ||
            !hearth_mul_size(pool->regions[r].v_row * (size_t)bs, n_blocks, &v) || !hearth_add_size(total, k, &total) ||
            !hearth_add_size(total, v, &total))
            st = hearth_err_set(err, HEARTH_E_LIMIT, -1, "KV pool size overflows");
    }
    if (st) goto fail;
    int32_t max_blocks = (p->max_seq_len + bs - 1) / bs;
    size_t rows = (size_t)n_groups * (size_t)p->n_seqs;
    pool->lay = lay;
    pool->n_groups = n_groups;
    pool->n_layer = hp->n_layer;
    pool->n_blocks = (int32_t)n_blocks;
    pool->block_size = bs;
    pool->max_blocks = max_blocks;
    pool->n_seqs = p->n_seqs;
    pool->max_seq_len = p->max_seq_len;
    pool->block_bytes = block_bytes;
    pool->bytes = total;
    pool->ptrs = calloc(2 * (size_t)hp->n_layer, sizeof *pool->ptrs);
    pool->layer_group = calloc((size_t)hp->n_layer, sizeof(int32_t));
    pool->layer_type = calloc(2 * (size_t)hp->n_layer, sizeof *pool->layer_type);
    pool->window = calloc((size_t)n_groups, sizeof(int32_t));
    pool->table = malloc(rows * (size_t)max_blocks * sizeof(int32_t));
    pool->n_in_row = calloc(rows, sizeof(int32_t));
    pool->n_dead = calloc(rows, sizeof(int32_t));
    pool->refs = calloc(n_blocks, sizeof(int32_t));
    pool->free_ids = malloc(n_blocks * sizeof(int32_t));
    pool->be = p->be;
    pool->bounce = p->be ? malloc(max_row * (size_t)bs) : NULL;
    pool->bounce_cap = p->be ? max_row * (size_t)bs : 0;
    pool->mem = p->be ? hearth_buf_alloc(p->be, total) : aligned_alloc(64, (total + 63) & ~(size_t)63);
    if (!pool->ptrs || !pool->layer_group || !pool->layer_type || !pool->window || !pool->table || !pool->n_in_row ||
        !pool->n_dead || !pool->refs || !pool->free_ids || !pool->mem || (p->be && !pool->bounce)) {
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "cannot allocate %zu MiB of KV blocks", total >> 20);
        goto fail;
    }
    /* each layer reads its group's table and its place's region (plan_layers; a KV-shared layer
     * its source's) */
    for (int32_t il = 0; il < hp->n_layer; il++) {
        if (hearth_hparams_is_linear(hp, il)) continue; /* a state slot instead (below): no rows, NULL views */
        const struct kv_region *rg = &pool->regions[gp[hp->n_layer + il]];
        pool->layer_group[il] = gp[il];
        pool->ptrs[il] = (char *)pool->mem + rg->off;
        pool->ptrs[hp->n_layer + il] = (char *)pool->mem + rg->off + rg->k_row * (size_t)bs * n_blocks;
        pool->layer_type[il] = ty[il].k;
        pool->layer_type[hp->n_layer + il] = ty[il].v;
    }
    free(gp);
    for (int32_t g = lay.n_full; g < n_groups; g++) pool->window[g] = lay.n_swa;
    for (size_t i = 0; i < rows * (size_t)max_blocks; i++) pool->table[i] = -1;
    /* stack top is the last entry: hand out block 0 first */
    for (int32_t i = 0; i < pool->n_blocks; i++) pool->free_ids[i] = pool->n_blocks - 1 - i;
    pool->n_free = pool->n_blocks;
    int64_t lf = hearth_hparams_lin_state_floats(hp), n_lin = 0;
    for (int32_t il = 0; il < hp->n_layer; il++) n_lin += hearth_hparams_is_linear(hp, il);
    if (lf > 0 && n_lin > 0) { /* the fixed-size states: one slot per sequence slot and linear layer */
        int32_t n_snaps = p->n_snaps > 0 ? p->n_snaps : 0, rows_lin = p->n_seqs + n_snaps;
        size_t per = (size_t)lf * (size_t)rows_lin * sizeof(float);
        pool->lin_bytes = per * (size_t)n_lin;
        pool->lin_slot = (size_t)lf * sizeof(float);
        pool->lin_mem = p->be ? hearth_buf_alloc(p->be, pool->lin_bytes)
                              : aligned_alloc(64, (pool->lin_bytes + 63) & ~(size_t)63);
        pool->lin_ptrs = calloc((size_t)hp->n_layer, sizeof *pool->lin_ptrs);
        pool->lin_len = calloc((size_t)rows_lin, sizeof *pool->lin_len);
        pool->snap_free = malloc(((size_t)n_snaps + 1) * sizeof *pool->snap_free);
        pool->n_snaps = pool->n_snap_free = n_snaps;
        for (int32_t i = 0; pool->snap_free && pool->lin_len && i < n_snaps; i++) {
            pool->snap_free[i] = n_snaps - 1 - i;
            pool->lin_len[p->n_seqs + i] = -1; /* free */
        }
        if (!pool->lin_mem || !pool->lin_ptrs || !pool->lin_len || !pool->snap_free) {
            size_t mib = pool->lin_bytes >> 20;
            hearth_kv_pool_destroy(pool);
            return hearth_err_set(err, HEARTH_E_NOMEM, -1, "cannot allocate %zu MiB of linear-attention states", mib);
        }
        char *q = pool->lin_mem;
        for (int32_t il = 0; il < hp->n_layer; il++)
            if (hearth_hparams_is_linear(hp, il)) pool->lin_ptrs[il] = (float *)q, q += per;
    }
    pool->view = (hearth_kv_view){
        .n_slots = p->n_seqs, .n_ctx = p->max_seq_len, .n_blocks = pool->n_blocks,
        .blocks = {.table = pool->table, .max_blocks = max_blocks, .block_size = bs},
        .k_type = p->kv.k, .v_type = p->kv.v, .k = pool->ptrs, .v = pool->ptrs + hp->n_layer,
        .layer_k_type = p->layer_kv ? pool->layer_type : NULL,
        .layer_v_type = p->layer_kv ? pool->layer_type + hp->n_layer : NULL,
        .n_groups = n_groups, .layer_group = pool->layer_group, .group_window = pool->window,
        .lin_state = pool->lin_ptrs, .lin_len = pool->lin_len,
        .lin_rows = pool->lin_mem ? p->n_seqs + pool->n_snaps : 0,
    };
    *out = pool;
    return HEARTH_OK;
fail:
    free(gp);
    hearth_kv_pool_destroy(pool);
    return st;
}

void hearth_kv_pool_destroy(hearth_kv_pool *pool) {
    if (!pool) return;
    if (pool->be) hearth_buf_free(pool->be, pool->mem), hearth_buf_free(pool->be, pool->lin_mem);
    else free(pool->mem), free(pool->lin_mem);
    free(pool->lin_ptrs);
    free(pool->lin_len);
    free(pool->snap_free);
    free(pool->ptrs);
    free(pool->layer_group);
    free(pool->layer_type);
    free(pool->regions);
    free(pool->window);
    free(pool->table);
    free(pool->n_in_row);
    free(pool->n_dead);
    free(pool->refs);
    free(pool->free_ids);
    free(pool->bounce);
    free(pool);
}

size_t hearth_kv_pool_state_bytes(const hearth_kv_pool *pool) { return pool->lin_bytes; }

void hearth_kv_pool_copy_state(hearth_kv_pool *pool, int32_t dst, int32_t src) {
    if (!pool->lin_mem || dst == src) return;
    size_t slot = pool->lin_slot;
    for (int32_t il = 0; il < pool->n_layer; il++) {
        if (!pool->lin_ptrs[il]) continue;
        char *base = (char *)pool->lin_ptrs[il];
        if (!pool->be) {
            memcpy(base + (size_t)dst * slot, base + (size_t)src * slot, slot);
            continue;
        }
        for (size_t off = 0; off < slot; ) { /* through the host bounce buffer, a block's rows at a time */
            size_t n = slot - off < pool->bounce_cap ? slot - off : pool->bounce_cap;
            hearth_buf_download(pool->be, pool->bounce, base + (size_t)src * slot + off, n);
            hearth_buf_upload(pool->be, base + (size_t)dst * slot + off, pool->bounce, n);
            off += n;
        }
    }
    pool->lin_len[dst] = pool->lin_len[src];
}

size_t hearth_kv_pool_snap_bytes(const hearth_kv_pool *pool) {
    return pool->lin_mem ? pool->lin_bytes / (size_t)(pool->n_seqs + pool->n_snaps) : 0;
}
int32_t hearth_kv_pool_n_snaps(const hearth_kv_pool *pool) { return pool->n_snaps; }
int32_t hearth_kv_pool_n_snap_free(const hearth_kv_pool *pool) { return pool->n_snap_free; }

int32_t hearth_kv_pool_snap_alloc(hearth_kv_pool *pool, int32_t n_pos) {
    if (pool->n_snap_free == 0) return -1;
    int32_t id = pool->snap_free[--pool->n_snap_free];
    pool->lin_len[pool->n_seqs + id] = n_pos;
    return id;
}

void hearth_kv_pool_snap_free(hearth_kv_pool *pool, int32_t id) {
    pool->lin_len[pool->n_seqs + id] = -1;
    pool->snap_free[pool->n_snap_free++] = id;
}

int32_t hearth_kv_pool_snap_row(const hearth_kv_pool *pool, int32_t id) { return pool->n_seqs + id; }
int32_t hearth_kv_pool_snap_len(const hearth_kv_pool *pool, int32_t id) { return pool->lin_len[pool->n_seqs + id]; }

void hearth_kv_pool_snap_restore(hearth_kv_pool *pool, int32_t slot, int32_t id) {
    hearth_kv_pool_copy_state(pool, slot, pool->n_seqs + id);
}

void hearth_kv_pool_copy_block(hearth_kv_pool *pool, int32_t dst, int32_t src, int32_t n_rows) {
    if (n_rows <= 0 || dst == src) return;
    size_t bs = (size_t)pool->block_size;
    for (int32_t r = 0; r < pool->n_regions; r++) {
        const struct kv_region *rg = &pool->regions[r];
        for (int kv = 0; kv < 2; kv++) { /* K rows, then V rows */
            size_t row = kv ? rg->v_row : rg->k_row;
            char *region = (char *)pool->mem + rg->off + (kv ? rg->k_row * bs * (size_t)pool->n_blocks : 0);
            char *to = region + (size_t)dst * bs * row;
            const char *from = region + (size_t)src * bs * row;
            size_t n = (size_t)n_rows * row;
            if (!pool->be) {
                memcpy(to, from, n);
                continue;
            }
            hearth_buf_download(pool->be, pool->bounce, from, n);
            hearth_buf_upload(pool->be, to, pool->bounce, n);
        }
    }
}

/* The (region, K or V) segments of block blk in pool order, to host (host) or from it (chost). */
static void block_segments(const hearth_kv_pool *pool, int32_t blk, char *host, const char *chost) {
    size_t bs = (size_t)pool->block_size, off = 0;
    for (int32_t r = 0; r < pool->n_regions; r++) {
        const struct kv_region *rg = &pool->regions[r];
        for (int kv = 0; kv < 2; kv++) {
            size_t row = kv ? rg->v_row : rg->k_row, n = bs * row;
            char *at = (char *)pool->mem + rg->off + (kv ? rg->k_row * bs * (size_t)pool->n_blocks : 0) +
                       (size_t)blk * n;
            if (host && pool->be) hearth_buf_download(pool->be, host + off, at, n);
            else if (host) memcpy(host + off, at, n);
            else if (pool->be) hearth_buf_upload(pool->be, at, chost + off, n);
            else memcpy(at, chost + off, n);
            off += n;
        }
    }
}

void hearth_kv_pool_block_to_host(const hearth_kv_pool *pool, int32_t blk, void *dst) {
    block_segments(pool, blk, dst, NULL);
}

void hearth_kv_pool_block_from_host(hearth_kv_pool *pool, int32_t blk, const void *src) {
    block_segments(pool, blk, NULL, src);
}

const hearth_kv_view *hearth_kv_pool_view(const hearth_kv_pool *pool) { return &pool->view; }
int32_t hearth_kv_pool_n_blocks(const hearth_kv_pool *pool) { return pool->n_blocks; }
int32_t hearth_kv_pool_n_free(const hearth_kv_pool *pool) { return pool->n_free; }
int32_t hearth_kv_pool_block_size(const hearth_kv_pool *pool) { return pool->block_size; }
size_t  hearth_kv_pool_block_bytes(const hearth_kv_pool *pool) { return pool->block_bytes; }
size_t  hearth_kv_pool_bytes(const hearth_kv_pool *pool) { return pool->bytes; }
const hearth_kv_layout *hearth_kv_pool_layout(const hearth_kv_pool *pool) { return &pool->lay; }
int32_t hearth_kv_pool_n_groups(const hearth_kv_pool *pool) { return pool->n_groups; }
int32_t hearth_kv_pool_group_window(const hearth_kv_pool *pool, int32_t g) { return pool->window[g]; }

int32_t hearth_kv_pool_first_needed(const hearth_kv_pool *pool, int32_t g, int32_t pos) {
    int32_t w = pool->window[g];
    return w > 0 && pos >= w ? (pos - w + 1) / pool->block_size : 0;
}

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

static size_t row_index(const hearth_kv_pool *pool, int32_t g, int32_t slot) {
    return (size_t)g * (size_t)pool->n_seqs + (size_t)slot;
}

const int32_t *hearth_kv_pool_row(const hearth_kv_pool *pool, int32_t g, int32_t slot) {
    return pool->table + row_index(pool, g, slot) * (size_t)pool->max_blocks;
}

int32_t hearth_kv_pool_seq_blocks(const hearth_kv_pool *pool, int32_t g, int32_t slot) {
    return pool->n_in_row[row_index(pool, g, slot)];
}

int32_t hearth_kv_pool_seq_dead(const hearth_kv_pool *pool, int32_t g, int32_t slot) {
    return pool->n_dead[row_index(pool, g, slot)];
}

bool hearth_kv_pool_seq_push(hearth_kv_pool *pool, int32_t g, int32_t slot, int32_t blk) {
    size_t r = row_index(pool, g, slot);
    if (pool->n_in_row[r] == pool->max_blocks) return false;
    if (blk < 0) {
        if (pool->n_dead[r] != pool->n_in_row[r]) return false; /* holes only lead */
        pool->n_dead[r]++;
    }
    pool->table[r * (size_t)pool->max_blocks + (size_t)pool->n_in_row[r]++] = blk;
    return true;
}

int32_t hearth_kv_pool_seq_pop(hearth_kv_pool *pool, int32_t g, int32_t slot) {
    size_t r = row_index(pool, g, slot);
    int32_t *row = pool->table + r * (size_t)pool->max_blocks;
    if (pool->n_in_row[r] == pool->n_dead[r]) { /* no block left: drop the holes */
        for (int32_t i = 0; i < pool->n_dead[r]; i++) row[i] = -1;
        pool->n_in_row[r] = pool->n_dead[r] = 0;
        return -1;
    }
    int32_t *e = row + --pool->n_in_row[r], b = *e;
    *e = -1;
    if (pool->n_in_row[r] == pool->n_dead[r]) pool->n_in_row[r] = pool->n_dead[r] = 0;
    return b;
}

int32_t hearth_kv_pool_seq_take(hearth_kv_pool *pool, int32_t g, int32_t slot) {
    size_t r = row_index(pool, g, slot);
    if (pool->n_dead[r] >= pool->n_in_row[r]) return -1;
    int32_t *e = pool->table + r * (size_t)pool->max_blocks + (size_t)pool->n_dead[r]++, b = *e;
    *e = -1;
    return b;
}

int32_t hearth_kv_pool_seq_need(const hearth_kv_pool *pool, int32_t slot, int32_t n_tokens) {
    int32_t want = (n_tokens + pool->block_size - 1) / pool->block_size, need = 0;
    for (int32_t g = 0; g < pool->n_groups; g++) {
        int32_t have = pool->n_in_row[row_index(pool, g, slot)];
        need += want > have ? want - have : 0;
    }
    return need;
}

int32_t hearth_kv_pool_seq_need_peak(const hearth_kv_pool *pool, int32_t slot, int32_t n_tokens, int32_t chunk) {
    int32_t want = (n_tokens + pool->block_size - 1) / pool->block_size, need = 0;
    hearth_kv_layout one = {.per_group = 1, .n_win = 1, .n_swa = pool->lay.n_swa};
    int32_t win = (int32_t)hearth_kv_layout_blocks(&one, pool->block_size, n_tokens, chunk); /* <= want */
    for (int32_t g = 0; g < pool->n_groups; g++) {
        size_t r = row_index(pool, g, slot);
        int32_t w = pool->window[g] > 0 ? win : want, have = pool->n_in_row[r] - pool->n_dead[r];
        need += w > have ? w - have : 0;
    }
    return need;
}

bool hearth_kv_pool_seq_reserve(hearth_kv_pool *pool, int32_t slot, int32_t n_tokens) {
    if (n_tokens > pool->max_seq_len) return false;
    int32_t need = hearth_kv_pool_seq_need(pool, slot, n_tokens);
    if (need > pool->n_free) return false;
    int32_t want = (n_tokens + pool->block_size - 1) / pool->block_size;
    for (int32_t g = 0; g < pool->n_groups; g++)
        while (hearth_kv_pool_seq_blocks(pool, g, slot) < want)
            hearth_kv_pool_seq_push(pool, g, slot, hearth_kv_pool_alloc(pool));
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
    /* rows: holes lead, live entries are blocks */
    for (size_t r = 0; r < (size_t)pool->n_groups * (size_t)pool->n_seqs && ok; r++) {
        const int32_t *row = pool->table + r * (size_t)pool->max_blocks;
        ok = pool->n_dead[r] >= 0 && pool->n_dead[r] <= pool->n_in_row[r] && pool->n_in_row[r] <= pool->max_blocks;
        for (int32_t i = 0; i < pool->max_blocks && ok; i++)
            ok = i < pool->n_dead[r] || i >= pool->n_in_row[r] ? row[i] == -1
                                                               : row[i] >= 0 && row[i] < pool->n_blocks;
    }
    free(seen);
    /* snapshots: the free stack holds distinct ids */
    ok = ok && pool->n_snap_free >= 0 && pool->n_snap_free <= pool->n_snaps;
    for (int32_t i = 0; i < pool->n_snap_free && ok; i++) {
        int32_t id = pool->snap_free[i];
        ok = id >= 0 && id < pool->n_snaps && pool->lin_len[pool->n_seqs + id] == -1;
    }
    return ok;
}
