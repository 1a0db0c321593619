/*
 * prefix_cache.c - content-addressed full blocks with LRU eviction; see prefix_cache.h.
 *
 * Everything is indexed by block id (the pool's size, allocated once): the hash table is a
 * power-of-two array of chain heads with a `next` link per block, and the evictable blocks
 * form a doubly linked list from least (lru_head) to most (lru_tail) recently released.
 * With a disk tier, a match first makes its chain present in RAM block by block (restoring
 * from the tier what RAM lacks), pinning each block with a reference until the match is done.
 */
#include "engine/prefix_cache.h"
#include "engine/request.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

struct hearth_prefix_cache {
    hearth_kv_pool *pool;      /* borrowed */
    int32_t         n_blocks, bs;
    size_t          cap_blocks; /* evictable blocks kept at most */
    uint32_t        mask;      /* buckets - 1 */
    int32_t        *bucket;    /* owned [mask + 1]: first block of the chain, -1 */
    int32_t        *next;      /* owned [n_blocks]: chain link */
    uint64_t       *hash, *parent; /* owned [n_blocks] */
    int32_t        *group;     /* owned [n_blocks]: the layer group of an indexed block */
    int32_t        *tokens;    /* owned [n_blocks][bs] */
    bool           *cached;    /* owned [n_blocks] */
    int32_t        *prev_l, *next_l; /* owned [n_blocks]: LRU links, -2 = not on the list */
    int32_t         lru_head, lru_tail, n_lru, n_cached;
    int64_t         evictions;
    double         *t_rel;     /* owned [n_blocks]: when the block went on the LRU list (ms) */
    hearth_ssd_tier *tier;     /* borrowed, may be NULL */
    void           *scratch;   /* owned [block bytes] with a tier: a block read from it */
    int32_t        *pins;      /* owned [n_blocks]: blocks a match holds while it restores */
    bool           *pinned;    /* owned [n_blocks] */
    int32_t         n_pins;
    int64_t         restores, demotions;
    /* hybrid models (prefix_cache.h): the state snapshot kept with a group-0 block, or -1 */
    int32_t        *snap;      /* owned [n_blocks] */
    bool            need_snap; /* the pool has linear-attention states: a match ends at a snapshot */
    int32_t         chain;     /* blocks of the last match's chain before it was cut to a snapshot */
    int64_t         snap_steals; /* snapshots taken from evictable blocks for newer ones */
};

uint64_t hearth_prefix_hash(uint64_t parent, const int32_t *tokens, int32_t block_size) {
    return XXH3_64bits_withSeed(tokens, (size_t)block_size * sizeof(int32_t), parent);
}

hearth_prefix_cache *hearth_prefix_cache_create(hearth_kv_pool *pool, size_t cap_bytes) {
    hearth_prefix_cache *pc = calloc(1, sizeof *pc);
    if (!pc) return NULL;
    pc->pool = pool;
    pc->n_blocks = hearth_kv_pool_n_blocks(pool);
    pc->bs = hearth_kv_pool_block_size(pool);
    pc->cap_blocks = cap_bytes / hearth_kv_pool_block_bytes(pool);
    uint32_t nb = 16;
    while (nb < 2u * (uint32_t)pc->n_blocks && nb < (1u << 30)) nb <<= 1;
    pc->mask = nb - 1;
    size_t n = (size_t)pc->n_blocks;
    pc->bucket = malloc(nb * sizeof(int32_t));
    pc->next = malloc(n * sizeof(int32_t));
    pc->hash = malloc(n * sizeof(uint64_t));
    pc->parent = malloc(n * sizeof(uint64_t));
    pc->group = malloc(n * sizeof(int32_t));
    pc->tokens = malloc(n * (size_t)pc->bs * sizeof(int32_t));
    pc->cached = calloc(n, sizeof(bool));
    pc->prev_l = malloc(n * sizeof(int32_t));
    pc->next_l = malloc(n * sizeof(int32_t));
    pc->t_rel = calloc(n, sizeof(double));
    pc->snap = malloc(n * sizeof(int32_t));
    pc->need_snap = hearth_kv_pool_state_bytes(pool) > 0;
    if (!pc->snap || !pc->bucket || !pc->next || !pc->hash || !pc->parent || !pc->group || !pc->tokens || !pc->cached || !pc->prev_l ||
        !pc->next_l || !pc->t_rel) {
        hearth_prefix_cache_destroy(pc);
        return NULL;
    }
    for (uint32_t i = 0; i < nb; i++) pc->bucket[i] = -1;
    for (size_t i = 0; i < n; i++) pc->prev_l[i] = pc->next_l[i] = -2, pc->snap[i] = -1;
    pc->lru_head = pc->lru_tail = -1;
    return pc;
}

static void lru_remove(hearth_prefix_cache *pc, int32_t b) {
    int32_t p = pc->prev_l[b], q = pc->next_l[b];
    if (p >= 0) pc->next_l[p] = q;
    else pc->lru_head = q;
    if (q >= 0) pc->prev_l[q] = p;
    else pc->lru_tail = p;
    pc->prev_l[b] = pc->next_l[b] = -2;
    pc->n_lru--;
}

static void lru_push(hearth_prefix_cache *pc, int32_t b) {
    pc->prev_l[b] = pc->lru_tail;
    pc->next_l[b] = -1;
    if (pc->lru_tail >= 0) pc->next_l[pc->lru_tail] = b;
    else pc->lru_head = b;
    pc->lru_tail = b;
    pc->n_lru++;
    pc->t_rel[b] = hearth_now_mono_ms();
}

static void unindex(hearth_prefix_cache *pc, int32_t b) {
    int32_t *link = &pc->bucket[pc->hash[b] & pc->mask];
    while (*link != b) link = &pc->next[*link];
    *link = pc->next[b];
    pc->cached[b] = false;
    pc->n_cached--;
    if (pc->snap[b] >= 0) hearth_kv_pool_snap_free(pc->pool, pc->snap[b]); /* evicted with its block */
    pc->snap[b] = -1;
}

/* Write cached block b to the tier unless it is there already (wait: for room in its queue).
 * False when it was not written. */
static bool spill(hearth_prefix_cache *pc, int32_t b, bool wait) {
    if (hearth_ssd_tier_has(pc->tier, pc->hash[b], pc->group[b])) return true;
    if (!wait && !hearth_ssd_tier_writable(pc->tier)) return false;
    void *buf = malloc(hearth_kv_pool_block_bytes(pc->pool));
    if (!buf) return false;
    hearth_kv_pool_block_to_host(pc->pool, b, buf);
    return hearth_ssd_tier_put(pc->tier, pc->hash[b], pc->parent[b], pc->group[b],
                               pc->tokens + (size_t)b * (size_t)pc->bs, buf, wait);
}

/* Evict the least recently used evictable block (to the tier when there is one). */
static void evict_one(hearth_prefix_cache *pc, bool wait) {
    int32_t b = pc->lru_head;
    if (pc->tier) spill(pc, b, wait);
    lru_remove(pc, b);
    unindex(pc, b);
    pc->evictions++;
    hearth_kv_pool_unref(pc->pool, b);
}

void hearth_prefix_cache_destroy(hearth_prefix_cache *pc) {
    if (!pc) return;
    if (pc->cached)
        for (int32_t b = 0; b < pc->n_blocks; b++) {
            if (pc->cached[b]) hearth_kv_pool_unref(pc->pool, b);
            if (pc->snap && pc->snap[b] >= 0) hearth_kv_pool_snap_free(pc->pool, pc->snap[b]);
        }
    free(pc->bucket);
    free(pc->next);
    free(pc->hash);
    free(pc->parent);
    free(pc->group);
    free(pc->tokens);
    free(pc->cached);
    free(pc->prev_l);
    free(pc->next_l);
    free(pc->t_rel);
    free(pc->scratch);
    free(pc->pins);
    free(pc->pinned);
    free(pc->snap);
    free(pc);
}

static int32_t match_ram(hearth_prefix_cache *pc, uint64_t root, const int32_t *tokens, int32_t max_blocks,
                         int32_t slot, uint64_t *hashes);

static int32_t lookup(const hearth_prefix_cache *pc, int32_t g, uint64_t h, uint64_t parent, const int32_t *tokens) {
    for (int32_t b = pc->bucket[h & pc->mask]; b >= 0; b = pc->next[b])
        if (pc->hash[b] == h && pc->parent[b] == parent && pc->group[b] == g &&
            memcmp(pc->tokens + (size_t)b * (size_t)pc->bs, tokens, (size_t)pc->bs * sizeof(int32_t)) == 0)
            return b;
    return -1;
}

/* Block i (hash h after parent) of group g, taken by reference onto the slot's row; false if
 * it is not cached or the row is full. */
static bool take(hearth_prefix_cache *pc, int32_t g, int32_t slot, uint64_t h, uint64_t parent, const int32_t *t) {
    int32_t b = lookup(pc, g, h, parent, t);
    if (b < 0) return false;
    if (pc->prev_l[b] != -2) lru_remove(pc, b); /* referenced again: not evictable */
    hearth_kv_pool_ref(pc->pool, b);
    if (hearth_kv_pool_seq_push(pc->pool, g, slot, b)) return true;
    hearth_prefix_cache_release(pc, b);
    return false;
}

/* Block blk of group g, restored from the tier into a pool block that this call holds one
 * reference on (and the cache one more); -1 when the tier lacks it or no block can be freed. */
static int32_t restore(hearth_prefix_cache *pc, int32_t g, uint64_t h, uint64_t parent, const int32_t *t) {
    if (!hearth_ssd_tier_get(pc->tier, h, parent, g, t, pc->scratch)) return -1;
    if (hearth_kv_pool_n_free(pc->pool) == 0 && pc->n_lru > 0) evict_one(pc, false);
    int32_t b = hearth_kv_pool_alloc(pc->pool);
    if (b < 0) return -1;
    hearth_kv_pool_block_from_host(pc->pool, b, pc->scratch);
    hearth_prefix_cache_insert(pc, g, h, parent, t, b);
    pc->restores++;
    return b;
}

/* Make block (g, h after parent, tokens t) present in RAM, from the tier if need be, and pin
 * it (one reference, off the LRU list) for the rest of the match. */
static bool ensure(hearth_prefix_cache *pc, int32_t g, uint64_t h, uint64_t parent, const int32_t *t) {
    int32_t b = lookup(pc, g, h, parent, t);
    if (b >= 0 && pc->pinned[b]) return true;
    if (b >= 0) {
        if (pc->prev_l[b] != -2) lru_remove(pc, b);
        hearth_kv_pool_ref(pc->pool, b);
    } else if ((b = restore(pc, g, h, parent, t)) < 0) {
        return false;
    }
    pc->pinned[b] = true;
    pc->pins[pc->n_pins++] = b;
    return true;
}

/* Bring the longest chain of the first max_blocks blocks that RAM and the tier hold together
 * into RAM (pinned), as match then looks for it. */
static void restore_chain(hearth_prefix_cache *pc, uint64_t root, const int32_t *tokens, int32_t max_blocks) {
    const hearth_kv_layout *lay = hearth_kv_pool_layout(pc->pool);
    int32_t n_groups = hearth_kv_pool_n_groups(pc->pool), n = 0;
    uint64_t *hashes = malloc(((size_t)max_blocks + 1) * sizeof(uint64_t));
    if (!hashes) return;
    for (uint64_t parent = root; n < max_blocks; n++) {
        const int32_t *t = tokens + (size_t)n * (size_t)pc->bs;
        uint64_t h = hearth_prefix_hash(parent, t, pc->bs);
        bool all = true;
        for (int32_t g = 0; g < lay->n_full && all; g++) all = ensure(pc, g, h, parent, t);
        if (!all) break;
        hashes[n] = h;
        parent = h;
    }
    for (; n > 0 && lay->n_win > 0; n--) {
        bool all = true;
        for (int32_t g = lay->n_full; g < n_groups && all; g++)
            for (int32_t i = hearth_kv_pool_first_needed(pc->pool, g, n * pc->bs); i < n && all; i++)
                all = ensure(pc, g, hashes[i], i > 0 ? hashes[i - 1] : root, tokens + (size_t)i * (size_t)pc->bs);
        if (all) break;
    }
    free(hashes);
}

int32_t hearth_prefix_cache_match(hearth_prefix_cache *pc, const int32_t *tokens, int32_t max_blocks, int32_t slot,
                                  uint64_t *hashes) {
    return hearth_prefix_cache_match_root(pc, 0, tokens, max_blocks, slot, hashes);
}

int32_t hearth_prefix_cache_match_root(hearth_prefix_cache *pc, uint64_t root, const int32_t *tokens,
                                       int32_t max_blocks, int32_t slot, uint64_t *hashes) {
    if (!pc->tier || max_blocks <= 0) return match_ram(pc, root, tokens, max_blocks, slot, hashes);
    restore_chain(pc, root, tokens, max_blocks);
    int32_t n = match_ram(pc, root, tokens, max_blocks, slot, hashes);
    /* the match's own references stay; the pins go last block first (a chain's tail is evicted
     * before its head, as release_blocks in sched.c hands blocks back) */
    for (int32_t i = pc->n_pins - 1; i >= 0; i--) {
        pc->pinned[pc->pins[i]] = false;
        hearth_prefix_cache_release(pc, pc->pins[i]);
    }
    pc->n_pins = 0;
    return n;
}

void hearth_prefix_cache_set_tier(hearth_prefix_cache *pc, hearth_ssd_tier *tier) {
    pc->tier = NULL;
    if (!tier) return;
    size_t n = (size_t)pc->n_blocks;
    if (!pc->scratch) pc->scratch = malloc(hearth_kv_pool_block_bytes(pc->pool));
    if (!pc->pins) pc->pins = malloc(n * sizeof(int32_t));
    if (!pc->pinned) pc->pinned = calloc(n, sizeof(bool));
    if (pc->scratch && pc->pins && pc->pinned) pc->tier = tier;
}

int32_t hearth_prefix_cache_demote(hearth_prefix_cache *pc, double now_ms, double idle_ms, bool wait) {
    if (!pc->tier || !hearth_ssd_tier_on(pc->tier)) return 0;
    int32_t n = 0;
    while (pc->n_lru > 0) {
        int32_t b = pc->lru_head;
        if (now_ms - pc->t_rel[b] < idle_ms) break;
        if (!spill(pc, b, wait)) break; /* the queue is full (or the tier went read-only): later */
        evict_one(pc, false);            /* written (or queued): evicting it writes nothing more */
        n++;
    }
    pc->demotions += n;
    return n;
}

int64_t hearth_prefix_cache_restores(const hearth_prefix_cache *pc) { return pc->restores; }
int64_t hearth_prefix_cache_demotions(const hearth_prefix_cache *pc) { return pc->demotions; }

static int32_t match_ram(hearth_prefix_cache *pc, uint64_t root, const int32_t *tokens, int32_t max_blocks,
                         int32_t slot, uint64_t *hashes) {
    const hearth_kv_layout *lay = hearth_kv_pool_layout(pc->pool);
    int32_t n_groups = hearth_kv_pool_n_groups(pc->pool);
    /* the hashes, and the longest run every full group holds */
    int32_t n = 0;
    for (uint64_t parent = root; n < max_blocks; n++) {
        const int32_t *t = tokens + (size_t)n * (size_t)pc->bs;
        uint64_t h = hearth_prefix_hash(parent, t, pc->bs);
        bool all = true;
        for (int32_t g = 0; g < lay->n_full && all; g++) all = lookup(pc, g, h, parent, t) >= 0;
        if (!all) break;
        hashes[n] = h;
        parent = h;
    }
    /* a hybrid model resumes from the state snapshot at the cut: the longest chain that ends
     * with one (block n - 1 of group 0 holds it) */
    pc->chain = n;
    while (pc->need_snap && n > 0 &&
           pc->snap[lookup(pc, 0, hashes[n - 1], n > 1 ? hashes[n - 2] : root, tokens + (size_t)(n - 1) * (size_t)pc->bs)] < 0)
        n--;
    /* the longest cut whose windows every window group holds */
    for (; n > 0; n--) {
        bool all = true;
        for (int32_t g = lay->n_full; g < n_groups && all; g++)
            for (int32_t i = hearth_kv_pool_first_needed(pc->pool, g, n * pc->bs); i < n && all; i++)
                all = lookup(pc, g, hashes[i], i > 0 ? hashes[i - 1] : root, tokens + (size_t)i * (size_t)pc->bs) >= 0;
        if (all) break;
    }
    for (int32_t g = 0; g < n_groups; g++) {
        int32_t first = hearth_kv_pool_first_needed(pc->pool, g, n * pc->bs), i = 0;
        for (; i < first; i++) hearth_kv_pool_seq_push(pc->pool, g, slot, -1);
        for (; i < n; i++)
            if (!take(pc, g, slot, hashes[i], i > 0 ? hashes[i - 1] : root, tokens + (size_t)i * (size_t)pc->bs)) break;
        if (i < n) { /* a full row (cannot happen below max_seq_len): give everything back */
            for (int32_t k = 0; k <= g; k++) {
                int32_t b;
                while ((b = hearth_kv_pool_seq_pop(pc->pool, k, slot)) >= 0) hearth_prefix_cache_release(pc, b);
            }
            return 0;
        }
    }
    return n;
}

void hearth_prefix_cache_insert(hearth_prefix_cache *pc, int32_t g, uint64_t h, uint64_t parent,
                                const int32_t *tokens, int32_t blk) {
    if (pc->cached[blk] || lookup(pc, g, h, parent, tokens) >= 0) return;
    pc->cached[blk] = true;
    pc->hash[blk] = h;
    pc->parent[blk] = parent;
    pc->group[blk] = g;
    memcpy(pc->tokens + (size_t)blk * (size_t)pc->bs, tokens, (size_t)pc->bs * sizeof(int32_t));
    uint32_t i = (uint32_t)(h & pc->mask);
    pc->next[blk] = pc->bucket[i];
    pc->bucket[i] = blk;
    pc->n_cached++;
    hearth_kv_pool_ref(pc->pool, blk);
}

void hearth_prefix_cache_release(hearth_prefix_cache *pc, int32_t blk) {
    hearth_kv_pool_unref(pc->pool, blk);
    if (!pc->cached[blk] || hearth_kv_pool_refs(pc->pool, blk) != 1) return;
    lru_push(pc, blk);
    while ((size_t)pc->n_lru > pc->cap_blocks) evict_one(pc, false);
}

int32_t hearth_prefix_cache_evict(hearth_prefix_cache *pc, int32_t want_free) {
    int32_t n = 0;
    while (hearth_kv_pool_n_free(pc->pool) < want_free && pc->n_lru > 0) {
        evict_one(pc, false);
        n++;
    }
    return n;
}

int32_t hearth_prefix_cache_n_evictable(const hearth_prefix_cache *pc) { return pc->n_lru; }
int32_t hearth_prefix_cache_n_cached(const hearth_prefix_cache *pc) { return pc->n_cached; }
bool    hearth_prefix_cache_holds(const hearth_prefix_cache *pc, int32_t blk) { return pc->cached[blk]; }
int64_t hearth_prefix_cache_evictions(const hearth_prefix_cache *pc) { return pc->evictions; }

int32_t hearth_prefix_cache_snap_of(const hearth_prefix_cache *pc, int32_t blk) { return pc->snap[blk]; }
int32_t hearth_prefix_cache_chain(const hearth_prefix_cache *pc) { return pc->chain; }

int32_t hearth_prefix_cache_snap_alloc(hearth_prefix_cache *pc, int32_t n_pos) {
    int32_t id = hearth_kv_pool_snap_alloc(pc->pool, n_pos);
    if (id >= 0) return id;
    /* none free: the snapshot of the least recently used evictable block that has one */
    for (int32_t b = pc->lru_head; b >= 0; b = pc->next_l[b])
        if (pc->snap[b] >= 0) {
            hearth_kv_pool_snap_free(pc->pool, pc->snap[b]);
            pc->snap[b] = -1;
            pc->snap_steals++;
            return hearth_kv_pool_snap_alloc(pc->pool, n_pos);
        }
    return -1;
}

bool hearth_prefix_cache_attach_snap(hearth_prefix_cache *pc, uint64_t h, uint64_t parent, const int32_t *tokens,
                                     int32_t snap) {
    int32_t b = lookup(pc, 0, h, parent, tokens);
    if (b < 0 || pc->snap[b] >= 0) return false;
    pc->snap[b] = snap;
    return true;
}

int32_t hearth_prefix_cache_n_snaps(const hearth_prefix_cache *pc) {
    int32_t n = 0;
    for (int32_t b = 0; b < pc->n_blocks; b++) n += pc->snap[b] >= 0;
    return n;
}

int64_t hearth_prefix_cache_snap_steals(const hearth_prefix_cache *pc) { return pc->snap_steals; }
