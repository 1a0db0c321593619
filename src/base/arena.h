/*
 * arena.h - a bump allocator for objects that share one lifetime (a step, a request, a loaded
 * file's names). Memory comes in chunks from malloc; hearth_arena_reset keeps the first chunk
 * and frees the rest, so a per-step arena stops allocating once it has seen its peak.
 * Allocations are 64-byte aligned when asked (tensor data) and 16 otherwise. Not thread-safe:
 * an arena belongs to one thread at a time.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>

typedef struct hearth_arena_chunk hearth_arena_chunk;

typedef struct {
    hearth_arena_chunk *head;       /* owned: newest chunk first */
    size_t              chunk_size; /* bytes; default size of new chunks */
    size_t              used_bytes; /* total bytes handed out since the last reset */
} hearth_arena;

/* Initialize caller storage; chunk_size 0 means 64 KiB. Never fails (allocation is lazy). */
void hearth_arena_init(hearth_arena *a, size_t chunk_size);
/* Free every chunk. */
void hearth_arena_fini(hearth_arena *a);
/* Drop all allocations; keeps the largest chunk for reuse. */
void hearth_arena_reset(hearth_arena *a);

/* n bytes aligned to align (power of two, <= 4096); NULL on overflow or out of memory. */
void *hearth_arena_alloc_aligned(hearth_arena *a, size_t n, size_t align);
void *hearth_arena_alloc(hearth_arena *a, size_t n);  /* 16-byte aligned */
void *hearth_arena_calloc(hearth_arena *a, size_t count, size_t size); /* zeroed, overflow-checked */
/* Grow the arena array *pp (n elements in use, *cap allocated) to hold at least need elements
 * of elem_bytes: a new zeroed block of the capacity hearth_grow_cap gives (doubled from
 * max(*cap, first)), the n elements copied over; the old block stays in the arena until its
 * reset. On overflow or out of memory *pp and *cap are left as they were and false is returned.
 * Nothing is allocated when need <= *cap. */
bool hearth_arena_grow(hearth_arena *a, void *pp, size_t *cap, size_t n, size_t need, size_t elem_bytes,
                       size_t first);
/* Copy of s[0..n) with a NUL appended. */
char *hearth_arena_strndup(hearth_arena *a, const char *s, size_t n);
