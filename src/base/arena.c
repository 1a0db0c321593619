/* arena.c - chunked bump allocator; see arena.h. */
#include "base/arena.h"
#include "base/size.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct hearth_arena_chunk {
    hearth_arena_chunk *next; /* owned: older chunk */
    size_t              cap;  /* bytes of data[] */
    size_t              off;  /* bytes used */
    _Alignas(64) unsigned char data[];
};

void hearth_arena_init(hearth_arena *a, size_t chunk_size) {
    a->head = NULL;
    a->chunk_size = chunk_size ? chunk_size : (size_t)64 << 10;
    a->used_bytes = 0;
}

void hearth_arena_fini(hearth_arena *a) {
    hearth_arena_chunk *c = a->head;
    while (c) {
        hearth_arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->used_bytes = 0;
}

void hearth_arena_reset(hearth_arena *a) {
    hearth_arena_chunk *keep = NULL, *c = a->head;
    while (c) {
        hearth_arena_chunk *next = c->next;
        if (!keep || c->cap > keep->cap) {
            free(keep);
            keep = c;
        } else {
            free(c);
        }
        c = next;
    }
    if (keep) {
        keep->next = NULL;
        keep->off = 0;
    }
    a->head = keep;
    a->used_bytes = 0;
}

void *hearth_arena_alloc_aligned(hearth_arena *a, size_t n, size_t align) {
    if (align < 16) align = 16;
    if (align > 4096 || (align & (align - 1))) return NULL;
    hearth_arena_chunk *c = a->head;
    if (c) {
        size_t off;
        if (hearth_align_size(c->off, align, &off) && off <= c->cap && n <= c->cap - off) {
            c->off = off + n;
            a->used_bytes += n;
            return c->data + off;
        }
    }
    size_t cap = a->chunk_size, need;
    if (!hearth_add_size(n, align, &need)) return NULL;
    if (need > cap) cap = need;
    size_t total;
    if (!hearth_add_size(sizeof(hearth_arena_chunk), cap, &total)) return NULL;
    c = aligned_alloc(64, (total + 63) & ~(size_t)63);
    if (!c) return NULL;
    c->cap = cap;
    c->next = a->head;
    a->head = c;
    size_t off = 0; /* data is 64-aligned; align > 64 rounds inside */
    uintptr_t base = (uintptr_t)c->data;
    off = (size_t)(((base + align - 1) & ~(uintptr_t)(align - 1)) - base);
    c->off = off + n;
    a->used_bytes += n;
    return c->data + off;
}

void *hearth_arena_alloc(hearth_arena *a, size_t n) { return hearth_arena_alloc_aligned(a, n, 16); }

void *hearth_arena_calloc(hearth_arena *a, size_t count, size_t size) {
    size_t n;
    if (!hearth_mul_size(count, size, &n)) return NULL;
    void *p = hearth_arena_alloc(a, n);
    if (p) memset(p, 0, n);
    return p;
}

bool hearth_arena_grow(hearth_arena *a, void *pp, size_t *cap, size_t n, size_t need, size_t elem_bytes,
                       size_t first) {
    if (need <= *cap) return true;
    size_t c;
    if (!hearth_grow_cap(*cap, need, elem_bytes, first, &c)) return false;
    void *p = hearth_arena_calloc(a, c, elem_bytes), *old;
    if (!p) return false;
    memcpy(&old, pp, sizeof old);
    if (n) memcpy(p, old, n * elem_bytes);
    memcpy(pp, &p, sizeof p);
    *cap = c;
    return true;
}

char *hearth_arena_strndup(hearth_arena *a, const char *s, size_t n) {
    size_t total;
    if (!hearth_add_size(n, 1, &total)) return NULL;
    char *p = hearth_arena_alloc(a, total);
    if (!p) return NULL;
    if (n) memcpy(p, s, n);
    p[n] = 0;
    return p;
}
