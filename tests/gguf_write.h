/*
 * gguf_write.h - a small in-memory GGUF writer for tests (header-only, test code only).
 *
 * Builds GGUF v3 images (or any version/count the test asks for) so tests can make tiny
 * synthetic models and hostile files without fixtures on disk:
 *
 *   gw w;
 *   gw_init(&w);
 *   gw_str(&w, "general.architecture", "llama");
 *   gw_u32(&w, "llama.block_count", 2);
 *   gw_arr_str(&w, "tokenizer.ggml.tokens", toks, n_toks);
 *   gw_tensor(&w, "token_embd.weight", HEARTH_TYPE_F32, 2, (int64_t[]){8, 16}, floats);
 *   size_t n; uint8_t *file = gw_finish(&w, &n);    // malloc'ed image: hearth_gguf_open_mem
 *   ...; free(file); gw_free(&w);
 *
 * Layout: header, key/values in call order, tensor infos in call order, zero padding to the
 * layout alignment, then the data section. A tensor placed by the writer (offset -1) goes to
 * the next aligned offset after everything placed so far; the data section ends exactly at the
 * end of the last tensor's bytes (no trailing padding), so every truncation cuts real content.
 * Call gw_align before adding tensors. The record encoders are exposed raw (gw_kv_raw,
 * gw_tensor_ex, the *_override fields) so tests can write what a correct writer never would.
 * Out of memory aborts: this is test code. Not thread-safe; one writer per thread.
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gguf.h"
#include "tensor/dtype.h"

typedef struct {
    uint8_t *p;   /* owned */
    size_t   len; /* bytes used */
    size_t   cap; /* bytes allocated */
} gw_bytes;

typedef struct {
    uint32_t version;            /* written in the header; default 3 */
    int64_t  n_kv_override;      /* >= 0: written instead of the real count; default -1 */
    int64_t  n_tensors_override; /* >= 0: written instead of the real count; default -1 */
    size_t   align;              /* layout alignment of the data section and offsets; default 32 */
    uint64_t n_kv, n_tensors;    /* records added so far */
    gw_bytes kv;                 /* encoded key/value records */
    gw_bytes ti;                 /* encoded tensor infos */
    gw_bytes data;               /* the data section */
} gw;

/* A tensor info written as given (for hostile files); see gw_tensor for the common case. */
typedef struct {
    const char *name;
    uint32_t    type;    /* GGML type id, written as is */
    uint32_t    n_dims;  /* written as is (may be 0 or > 4) */
    uint64_t    ne[8];   /* the first min(n_dims, 8) are written, ne[0] fastest */
    int64_t     offset;  /* relative to the data section; -1: next aligned free offset */
    const void *data;    /* n_bytes to copy to offset; NULL: a deterministic byte pattern */
    size_t      n_bytes; /* 0: from hearth_row_size(type, ne[0]) * rows (0 if unknown type) */
} gw_tensor_desc;

/* Make room for n more bytes. */
static inline void gw_reserve(gw_bytes *b, size_t n) {
    if (b->len + n <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n) cap *= 2;
    uint8_t *q = realloc(b->p, cap);
    if (!q) abort();
    b->p = q;
    b->cap = cap;
}
static inline void gw_put(gw_bytes *b, const void *src, size_t n) {
    gw_reserve(b, n);
    if (n) memcpy(b->p + b->len, src, n);
    b->len += n;
}
static inline void gw_put_u32(gw_bytes *b, uint32_t v) { gw_put(b, &v, 4); }
static inline void gw_put_u64(gw_bytes *b, uint64_t v) { gw_put(b, &v, 8); }
static inline void gw_put_str(gw_bytes *b, const char *s, size_t n) {
    gw_put_u64(b, n);
    gw_put(b, s, n);
}
/* Grow b to at least n bytes, zero-filling. */
static inline void gw_extend(gw_bytes *b, size_t n) {
    if (n <= b->len) return;
    gw_reserve(b, n - b->len);
    memset(b->p + b->len, 0, n - b->len);
    b->len = n;
}

static inline void gw_init(gw *w) {
    memset(w, 0, sizeof *w);
    w->version = 3;
    w->n_kv_override = w->n_tensors_override = -1;
    w->align = 32;
}

static inline void gw_free(gw *w) {
    free(w->kv.p);
    free(w->ti.p);
    free(w->data.p);
    memset(w, 0, sizeof *w);
}

/* Bytes of one element of a scalar value type (0 for string/array/unknown). */
static inline size_t gw_type_size(uint32_t t) {
    static const uint8_t sz[HEARTH_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return t < HEARTH_GGUF_TYPE_COUNT ? sz[t] : 0;
}

/* A key/value record with any type id and payload bytes, exactly as given. */
static inline void gw_kv_raw(gw *w, const char *key, uint32_t type, const void *payload, size_t n) {
    gw_put_str(&w->kv, key, strlen(key));
    gw_put_u32(&w->kv, type);
    gw_put(&w->kv, payload, n);
    w->n_kv++;
}

#define GW_SCALAR(fn, ctype, tid) \
    static inline void fn(gw *w, const char *key, ctype v) { gw_kv_raw(w, key, tid, &v, sizeof v); }
GW_SCALAR(gw_u8, uint8_t, HEARTH_GGUF_UINT8)
GW_SCALAR(gw_i8, int8_t, HEARTH_GGUF_INT8)
GW_SCALAR(gw_u16, uint16_t, HEARTH_GGUF_UINT16)
GW_SCALAR(gw_i16, int16_t, HEARTH_GGUF_INT16)
GW_SCALAR(gw_u32, uint32_t, HEARTH_GGUF_UINT32)
GW_SCALAR(gw_i32, int32_t, HEARTH_GGUF_INT32)
GW_SCALAR(gw_f32, float, HEARTH_GGUF_FLOAT32)
GW_SCALAR(gw_u64, uint64_t, HEARTH_GGUF_UINT64)
GW_SCALAR(gw_i64, int64_t, HEARTH_GGUF_INT64)
GW_SCALAR(gw_f64, double, HEARTH_GGUF_FLOAT64)
#undef GW_SCALAR

static inline void gw_bool(gw *w, const char *key, bool v) {
    uint8_t b = v ? 1 : 0;
    gw_kv_raw(w, key, HEARTH_GGUF_BOOL, &b, 1);
}

/* String value of n bytes (may contain any byte). */
static inline void gw_strn(gw *w, const char *key, const char *s, size_t n) {
    gw_put_str(&w->kv, key, strlen(key));
    gw_put_u32(&w->kv, HEARTH_GGUF_STRING);
    gw_put_str(&w->kv, s, n);
    w->n_kv++;
}
static inline void gw_str(gw *w, const char *key, const char *s) { gw_strn(w, key, s, strlen(s)); }

/* Array of n scalars of element type et, packed little-endian in elems (gw_type_size(et) each). */
static inline void gw_arr(gw *w, const char *key, hearth_gguf_type et, const void *elems, uint64_t n) {
    gw_put_str(&w->kv, key, strlen(key));
    gw_put_u32(&w->kv, HEARTH_GGUF_ARRAY);
    gw_put_u32(&w->kv, (uint32_t)et);
    gw_put_u64(&w->kv, n);
    gw_put(&w->kv, elems, (size_t)n * gw_type_size((uint32_t)et));
    w->n_kv++;
}

/* Array of n NUL-terminated strings. */
static inline void gw_arr_str(gw *w, const char *key, const char *const *s, uint64_t n) {
    gw_put_str(&w->kv, key, strlen(key));
    gw_put_u32(&w->kv, HEARTH_GGUF_ARRAY);
    gw_put_u32(&w->kv, HEARTH_GGUF_STRING);
    gw_put_u64(&w->kv, n);
    for (uint64_t j = 0; j < n; j++) gw_put_str(&w->kv, s[j], strlen(s[j]));
    w->n_kv++;
}

/* Write general.alignment = a (uint32); a power of two also becomes the layout alignment. */
static inline void gw_align(gw *w, uint32_t a) {
    gw_u32(w, "general.alignment", a);
    if (a && !(a & (a - 1))) w->align = a;
}

/* Add a tensor info as described and place its bytes; returns the offset used. */
static inline uint64_t gw_tensor_ex(gw *w, const gw_tensor_desc *d) {
    size_t n_bytes = d->n_bytes;
    if (!n_bytes && d->n_dims >= 1) {
        size_t rows = 1;
        for (uint32_t i = 1; i < d->n_dims && i < 8; i++) rows *= (size_t)d->ne[i];
        n_bytes = hearth_row_size((hearth_type)d->type, (int64_t)d->ne[0]) * rows;
    }
    uint64_t off;
    if (d->offset >= 0) off = (uint64_t)d->offset;
    else off = (w->data.len + w->align - 1) / w->align * w->align;
    gw_put_str(&w->ti, d->name, strlen(d->name));
    gw_put_u32(&w->ti, d->n_dims);
    for (uint32_t i = 0; i < d->n_dims && i < 8; i++) gw_put_u64(&w->ti, d->ne[i]);
    gw_put_u32(&w->ti, d->type);
    gw_put_u64(&w->ti, off);
    w->n_tensors++;
    if (n_bytes && off < ((uint64_t)1 << 32)) { /* hostile offsets are not backed by data */
        gw_extend(&w->data, (size_t)off + n_bytes);
        uint8_t *dst = w->data.p + off;
        if (d->data) memcpy(dst, d->data, n_bytes);
        else for (size_t k = 0; k < n_bytes; k++) dst[k] = (uint8_t)((off + k) * 167u + 13u);
    }
    return off;
}

/* Add a tensor of type with n_dims dims ne (ne[0] fastest) and data (NULL: a pattern), placed
 * at the next aligned offset; its byte size comes from tensor/dtype.h. Returns the offset. */
static inline uint64_t gw_tensor(gw *w, const char *name, hearth_type type, int n_dims, const int64_t *ne,
                                 const void *data) {
    gw_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.type = (uint32_t)type;
    d.n_dims = (uint32_t)n_dims;
    for (int i = 0; i < n_dims && i < 8; i++) d.ne[i] = (uint64_t)ne[i];
    d.offset = -1;
    d.data = data;
    return gw_tensor_ex(w, &d);
}

/* The file image (malloc'ed, caller frees) and its size in *n_bytes. w stays usable. */
static inline uint8_t *gw_finish(gw *w, size_t *n_bytes) {
    gw_bytes f = {0};
    gw_put(&f, "GGUF", 4);
    gw_put_u32(&f, w->version);
    gw_put_u64(&f, w->n_tensors_override >= 0 ? (uint64_t)w->n_tensors_override : w->n_tensors);
    gw_put_u64(&f, w->n_kv_override >= 0 ? (uint64_t)w->n_kv_override : w->n_kv);
    gw_put(&f, w->kv.p, w->kv.len);
    gw_put(&f, w->ti.p, w->ti.len);
    gw_extend(&f, (f.len + w->align - 1) / w->align * w->align);
    gw_put(&f, w->data.p, w->data.len);
    *n_bytes = f.len;
    return f.p ? f.p : calloc(1, 1);
}

/* Write the image to path; false on I/O error. */
static inline bool gw_write_file(gw *w, const char *path) {
    size_t n;
    uint8_t *img = gw_finish(w, &n);
    FILE *fp = fopen(path, "wb");
    bool ok = fp && fwrite(img, 1, n, fp) == n;
    if (fp && fclose(fp)) ok = false;
    free(img);
    return ok;
}
