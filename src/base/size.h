/*
 * size.h - overflow-checked size arithmetic (as ggml_new_object and SQLite do).
 *
 * Every size computed from untrusted input (file headers, request bodies) goes through these:
 * they return false on overflow and leave *out untouched, so a hostile count can never wrap
 * into a small allocation. hearth_grow_cap is the one growth rule of the program: every
 * growable array (heap or arena) and every rehashed table takes its next capacity from it.
 * Header-only, any thread.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline bool hearth_add_size(size_t a, size_t b, size_t *out) {
    size_t r;
    if (__builtin_add_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}

static inline bool hearth_mul_size(size_t a, size_t b, size_t *out) {
    size_t r;
    if (__builtin_mul_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}

static inline bool hearth_mul_i64(int64_t a, int64_t b, int64_t *out) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}

/* Round n up to a multiple of align (a power of two); false on overflow. */
static inline bool hearth_align_size(size_t n, size_t align, size_t *out) {
    size_t r;
    if (__builtin_add_overflow(n, align - 1, &r)) return false;
    *out = r & ~(align - 1);
    return true;
}

/* The capacity that holds need elements of elem_bytes each: doubled from max(cap, first), at
 * least 1 (a power of two stays one). False when the count or its size in bytes overflows. */
static inline bool hearth_grow_cap(size_t cap, size_t need, size_t elem_bytes, size_t first, size_t *out) {
    size_t n = cap > first ? cap : first, bytes;
    if (n == 0) n = 1;
    while (n < need)
        if (!hearth_mul_size(n, 2, &n)) return false;
    if (!hearth_mul_size(n, elem_bytes, &bytes)) return false;
    *out = n;
    return true;
}
