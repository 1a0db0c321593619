/*
 * containers.c - the tokenizer's small containers: a growable int32 array, the string hash
 * table (string -> token id), and the bigram heap of the merge loops.
 *
 * The hash table is open addressing with linear probing over 64-bit slots that keep the high
 * half of the hash next to the id, so a probe compares bytes only on a likely hit. It is
 * sized to a load factor <= 1/2 at build time and never grows afterwards (the vocab is
 * immutable), which keeps a 262144-token vocab at 4 MiB of slots and its build in a few ms.
 */
#include "tokenizer/tok_internal.h"
#include "tokenizer/tok_pipe.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/size.h"

bool tok_vec_reserve(tok_vec *a, size_t n) {
    return hearth_buf_grow(&a->v, &a->cap, n, sizeof *a->v, 16);
}

bool tok_vec_push(tok_vec *a, int32_t x) {
    if (a->n == a->cap && !tok_vec_reserve(a, a->n + 1)) return false;
    a->v[a->n++] = x;
    return true;
}

void tok_vec_free(tok_vec *a) {
    free(a->v);
    a->v = NULL;
    a->n = a->cap = 0;
}

/* A multiply-xorshift hash over 8-byte words (murmur3/splitmix finalizer constants). */
uint64_t tok_hash(const void *p, size_t n) {
    const uint8_t *s = p;
    uint64_t h = 0x9e3779b97f4a7c15ull ^ ((uint64_t)n * 0xff51afd7ed558ccdull);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 31;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    if (n) memcpy(&w, s, n);
    h = (h ^ w) * 0x94d049bb133111ebull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return h;
}

bool tok_strmap_init(tok_strmap *m, size_t n_expected) {
    size_t cap, want; /* a power of two, at most half full, its mask a uint32_t */
    if (!hearth_mul_size(n_expected, 2, &want) || !hearth_grow_cap(0, want, sizeof *m->slots, 64, &cap) ||
        cap > (size_t)1 << 31)
        return false;
    size_t bits = cap * 4; /* >= 8 bits per expected entry */
    m->slots = calloc(cap, sizeof *m->slots);
    m->bloom = calloc(bits / 64, sizeof *m->bloom);
    m->mask = (uint32_t)(cap - 1);
    m->bloom_mask = (uint32_t)(bits - 1);
    return m->slots && m->bloom;
}

void tok_strmap_free(tok_strmap *m) {
    free(m->slots);
    free(m->bloom);
    memset(m, 0, sizeof *m);
}

/* Bloom bit of a hash: taken from bits the slot index does not use. */
static inline uint32_t bloom_bit(const tok_strmap *m, uint64_t h) {
    return (uint32_t)(h >> 29) & m->bloom_mask;
}

static inline bool str_eq(const char *blob, const tok_str *strs, int32_t id, const char *s,
                          size_t n) {
    const tok_str *t = &strs[id];
    return t->len == n && (n == 0 || memcmp(blob + t->off, s, n) == 0);
}

int32_t tok_strmap_find(const tok_strmap *m, const char *blob, const tok_str *strs, const char *s,
                        size_t n) {
    uint64_t h = tok_hash(s, n);
    uint32_t fp = (uint32_t)(h >> 32), b = bloom_bit(m, h);
    if (!(m->bloom[b >> 6] >> (b & 63) & 1)) return -1;
    for (uint32_t i = (uint32_t)h & m->mask;; i = (i + 1) & m->mask) {
        uint64_t slot = m->slots[i];
        if (!slot) return -1;
        if ((uint32_t)(slot >> 32) == fp) {
            int32_t id = (int32_t)(uint32_t)slot - 1;
            if (str_eq(blob, strs, id, s, n)) return id;
        }
    }
}

void tok_strmap_prefetch(const tok_strmap *m, uint64_t h) {
    __builtin_prefetch(&m->slots[(uint32_t)h & m->mask], 1);
}

int32_t tok_strmap_insert(tok_strmap *m, const char *blob, const tok_str *strs, const char *s,
                          size_t n, int32_t id) {
    return tok_strmap_insert_h(m, blob, strs, s, n, id, tok_hash(s, n));
}

int32_t tok_strmap_insert_h(tok_strmap *m, const char *blob, const tok_str *strs, const char *s,
                            size_t n, int32_t id, uint64_t h) {
    uint32_t fp = (uint32_t)(h >> 32), b = bloom_bit(m, h);
    for (uint32_t i = (uint32_t)h & m->mask;; i = (i + 1) & m->mask) {
        uint64_t slot = m->slots[i];
        if (!slot) {
            m->slots[i] = ((uint64_t)fp << 32) | (uint32_t)(id + 1);
            m->bloom[b >> 6] |= (uint64_t)1 << (b & 63);
            return -1;
        }
        if ((uint32_t)(slot >> 32) == fp) {
            int32_t old = (int32_t)(uint32_t)slot - 1;
            if (str_eq(blob, strs, old, s, n)) return old;
        }
    }
}

void tok_strmap_replace(tok_strmap *m, const char *blob, const tok_str *strs, const char *s,
                        size_t n, int32_t id, uint64_t h) {
    uint32_t fp = (uint32_t)(h >> 32);
    for (uint32_t i = (uint32_t)h & m->mask;; i = (i + 1) & m->mask) {
        uint64_t slot = m->slots[i];
        if (!slot) return;
        if ((uint32_t)(slot >> 32) == fp && str_eq(blob, strs, (int32_t)(uint32_t)slot - 1, s, n)) {
            m->slots[i] = ((uint64_t)fp << 32) | (uint32_t)(id + 1);
            return;
        }
    }
}

/* a pops before b */
static inline bool bigram_before(const tok_bigram *a, const tok_bigram *b) {
    return a->key > b->key || (a->key == b->key && a->left < b->left);
}

bool tok_heap_push(tok_heap *h, tok_bigram b) {
    if (h->n == h->cap && !hearth_buf_grow(&h->v, &h->cap, h->n + 1, sizeof *h->v, 64))
        return false;
    size_t i = h->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!bigram_before(&b, &h->v[parent])) break;
        h->v[i] = h->v[parent];
        i = parent;
    }
    h->v[i] = b;
    return true;
}

tok_bigram tok_heap_pop(tok_heap *h) {
    tok_bigram top = h->v[0];
    tok_bigram last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && bigram_before(&h->v[c + 1], &h->v[c])) c++;
        if (!bigram_before(&h->v[c], &last)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n) h->v[i] = last;
    return top;
}

void tok_heap_free(tok_heap *h) {
    free(h->v);
    h->v = NULL;
    h->n = h->cap = 0;
}

/* --- piece lists of the tokenizer.json pipeline (tok_pipe.h) --- */

bool tok_pieces_push(tok_pieces *p, uint32_t off, uint32_t len, bool first) {
    if (p->n == p->cap && !hearth_buf_grow(&p->v, &p->cap, p->n + 1, sizeof *p->v, 32))
        return false;
    p->v[p->n++] = (tok_piece){off, len, first};
    return true;
}
