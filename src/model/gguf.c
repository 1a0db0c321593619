/*
 * gguf.c - GGUF v2/v3 reader; the contract is in gguf.h.
 *
 * On-disk layout (little-endian; v2 and v3 are identical on disk: v3 only allowed big-endian
 * files, which we recognise and refuse; v1 had 32-bit counts and is refused):
 *
 *   0   "GGUF" | u32 version | u64 n_tensors | u64 n_kv              (24-byte header)
 *   24  n_kv x      { str key | u32 value_type | value }
 *       n_tensors x { str name | u32 n_dims | u64 ne[n_dims] | u32 ggml_type | u64 offset }
 *       zero padding up to a multiple of general.alignment (default 32)
 *       data section: tensor bytes at `offset` (relative to the section, aligned)
 *
 *   str   = u64 len | len bytes (no NUL)
 *   value = scalar (1, 2, 4 or 8 bytes) | str | array { u32 elem_type | u64 n | n x elem }
 *
 * Design notes:
 *  - One forward pass with the sticky reader (base/rd.h). Every length and count is compared
 *    with the bytes left before anything is taken or allocated, so a 2^63 count fails at once.
 *    Header counts are bounded by the bytes after the header divided by the smallest possible
 *    record (14 bytes per key/value, 33 per tensor info).
 *  - Memory grows with records actually parsed, never with a claimed count: the kv and tensor
 *    tables double as records validate; a string array's offset table (one size_t per element,
 *    so tokenizer.ggml.tokens[j] is O(1)) is allocated only after the array was walked.
 *  - Lookup: a sorted (name, index) table per namespace, binary-searched (O(log n)). Sorting
 *    also finds duplicates as neighbours. Chosen over a hash so hostile names cannot build
 *    collision chains; with ~40 keys and ~300 tensors it is a handful of strcmp calls.
 *  - NOTE(gguf): tensor types. Opening succeeds for every GGML type whose block layout is
 *    known: the ids in tensor/dtype.h (supported or not, e.g. q2_K, i8) and, from a private
 *    table below, the GGML formats hearth does not implement (IQ*, TQ*, MXFP4). The tensor's
 *    `type` is the raw GGML id, so the loader refuses what it cannot run with a message naming
 *    the tensor (hearth_type_traits_of(type) is NULL or not ->supported). Ids with no known
 *    layout (retired 4/5, removed 31-33/36-38, anything new) fail with HEARTH_E_FORMAT, since
 *    their byte size, and so the file layout, cannot be checked.
 *  - Also refused, beyond gguf.h's list: empty keys/names, keys/names containing a NUL byte
 *    (they could never be looked up by a C string), keys/names over 64 KiB (HEARTH_E_LIMIT).
 *  - NOTE(gguf): the padding before the data section must be present even in a file with no
 *    tensors (llama.cpp seeks past the end and accepts one without; every writer pads). Found
 *    by fuzz/fuzz_gguf.c: without the check hearth_gguf_data_offset could exceed the file size.
 *  - Tensors may be laid out in any order with gaps; llama.cpp demands back-to-back order,
 *    we only demand alignment, bounds and no overlap.
 */
#include "model/gguf.h"

#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <errno.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/rd.h"
#include "base/size.h"

enum {
    HEADER_BYTES = 24,
    MIN_KV_BYTES = 8 + 1 + 4 + 1,             /* key len, 1-byte key, type, 1-byte value */
    MIN_TENSOR_BYTES = 8 + 1 + 4 + 8 + 4 + 8, /* name len, 1-byte name, n_dims, ne0, type, offset */
    MAX_NAME_BYTES = 64 << 10,                /* keys and tensor names */
    DEFAULT_ALIGNMENT = 32,
    MAX_DIMS = 4,
};
#define NAME_FMT "'%.96s'" /* names in messages are cut so the message fits hearth_err.msg */

typedef struct {
    const char      *key;       /* view into arena, NUL-terminated */
    size_t           pos;       /* byte offset of the record (its key length field) */
    hearth_gguf_type type;
    hearth_gguf_type elem_type; /* arrays: element type */
    uint64_t         n;         /* arrays: element count */
    union {
        int64_t  i;             /* signed integers and bool */
        uint64_t u;             /* unsigned integers */
        double   f;             /* float32 (exactly widened) and float64 */
    } v;
    hearth_span      str;       /* strings: borrowed from the input */
    const uint8_t   *arr;       /* arrays: first element, borrowed from the input */
    const size_t    *str_off;   /* string arrays: element j's length field is arr + str_off[j];
                                   view into arena */
} kv_rec;

typedef struct {
    const char *name; /* view into arena */
    int64_t     idx;
} name_ix;

struct hearth_gguf {
    const uint8_t      *base;        /* borrowed (open_mem) or owned mapping (open) */
    size_t              n_bytes;     /* file size */
    bool                mapped;      /* base is ours to munmap */
    uint32_t            version;
    size_t              alignment;   /* bytes, power of two */
    size_t              data_offset; /* bytes from the file start */
    size_t              kv_end;      /* bytes from the file start: where the tensor infos begin */
    hearth_arena        arena;       /* owned: names, indexes, string-array offset tables */
    kv_rec             *kv;          /* owned (malloc), n_kv entries, file order */
    int64_t             n_kv;
    hearth_gguf_tensor *t;           /* owned (malloc), n_t entries, file order */
    size_t             *t_pos;       /* owned (malloc): byte offset of each tensor info */
    int64_t             n_t;
    name_ix            *kv_ix;       /* view into arena: sorted by name */
    name_ix            *t_ix;        /* view into arena: sorted by name */
};

/* ---------------------------------------------------------------------------------------- */
/* type tables                                                                              */

static const char *const value_type_names[HEARTH_GGUF_TYPE_COUNT] = {
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
    "bool", "string", "array", "uint64", "int64", "float64",
};
/* bytes of a scalar of each value type; 0 for string and array */
static const uint8_t value_type_size[HEARTH_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

/* GGML types hearth does not implement (absent from tensor/dtype.h), with their block layout
 * so files using them still open. Ids and sizes as ggml defines them (gguf-py
 * GGML_QUANT_SIZES agrees; MXFP4 = 1 shared exponent byte + 16 bytes of nibbles). */
static const struct {
    int         id;
    const char *name;
    int64_t     blck_size;
    size_t      type_size;
} foreign_types[] = {
    {16, "iq2_xxs", 256, 66}, {17, "iq2_xs", 256, 74}, {18, "iq3_xxs", 256, 98},
    {19, "iq1_s", 256, 50},   {20, "iq4_nl", 32, 18},  {21, "iq3_s", 256, 110},
    {22, "iq2_s", 256, 82},   {23, "iq4_xs", 256, 136}, {29, "iq1_m", 256, 56},
    {34, "tq1_0", 256, 54},   {35, "tq2_0", 256, 66},  {39, "mxfp4", 32, 17},
};

/* Block layout of GGML type id t; false when unknown. */
static bool type_layout(uint32_t t, int64_t *blck, size_t *tsize, const char **name) {
    const hearth_type_traits *tr = t < (uint32_t)HEARTH_TYPE_COUNT ? hearth_type_traits_of((int)t) : NULL;
    if (tr && !tr->internal) {
        *blck = tr->blck_size;
        *tsize = tr->type_size;
        *name = tr->name;
        return true;
    }
    for (size_t k = 0; k < sizeof foreign_types / sizeof foreign_types[0]; k++) {
        if ((uint32_t)foreign_types[k].id == t) {
            *blck = foreign_types[k].blck_size;
            *tsize = foreign_types[k].type_size;
            *name = foreign_types[k].name;
            return true;
        }
    }
    return false;
}

const char *hearth_gguf_type_name(hearth_gguf_type t) {
    return (unsigned)t < HEARTH_GGUF_TYPE_COUNT ? value_type_names[t] : "unknown";
}

const char *hearth_gguf_tensor_type_name(int type) {
    int64_t blck;
    size_t tsize;
    const char *name;
    return type >= 0 && type_layout((uint32_t)type, &blck, &tsize, &name) ? name : "unknown";
}

/* ---------------------------------------------------------------------------------------- */
/* parser                                                                                   */

typedef struct {
    hearth_gguf *g;
    hearth_rd    r;
    hearth_err  *err;
    size_t       cap_kv, cap_t; /* allocated entries of g->kv and g->t / g->t_pos */
} parser;

static hearth_status fail(parser *p, hearth_status code, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static hearth_status fail(parser *p, hearth_status code, size_t pos, const char *fmt, ...) {
    char msg[sizeof p->err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return hearth_err_set(p->err, code, (int64_t)pos, "%s", msg);
}

/* The file ends inside the field at pos; fmt names the field and its key or tensor. */
static hearth_status truncated(parser *p, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static hearth_status truncated(parser *p, size_t pos, const char *fmt, ...) {
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return fail(p, HEARTH_E_FORMAT, pos, "unexpected end of file at offset %zu (size %zu) reading %s",
                pos, p->g->n_bytes, what);
}

/* Read a key or tensor name (`what`, record number i) into the arena. */
static hearth_status read_name(parser *p, const char *what, int64_t i, const char **out) {
    size_t pos = hearth_rd_pos(&p->r);
    uint64_t len = hearth_rd_u64(&p->r);
    if (p->r.failed) return truncated(p, pos, "the length of %s #%lld", what, (long long)i);
    size_t left = hearth_rd_left(&p->r);
    if (len > left)
        return fail(p, HEARTH_E_FORMAT, pos,
                    "%s #%lld at offset %zu: length %llu exceeds the %zu bytes left in the file", what,
                    (long long)i, pos, (unsigned long long)len, left);
    if (len == 0) return fail(p, HEARTH_E_FORMAT, pos, "%s #%lld at offset %zu is empty", what, (long long)i, pos);
    if (len > MAX_NAME_BYTES)
        return fail(p, HEARTH_E_LIMIT, pos, "%s #%lld at offset %zu: length %llu exceeds the limit of %d bytes",
                    what, (long long)i, pos, (unsigned long long)len, MAX_NAME_BYTES);
    const uint8_t *s = hearth_rd_take(&p->r, (size_t)len);
    if (memchr(s, 0, (size_t)len))
        return fail(p, HEARTH_E_FORMAT, pos, "%s #%lld at offset %zu contains a NUL byte", what, (long long)i, pos);
    char *copy = hearth_arena_strndup(&p->g->arena, (const char *)s, (size_t)len);
    if (!copy) return fail(p, HEARTH_E_NOMEM, pos, "out of memory copying %s #%lld", what, (long long)i);
    *out = copy;
    return HEARTH_OK;
}

/* Widen the scalar of type t at b into k->v; false for a bool that is not 0 or 1. */
static bool decode_scalar(hearth_gguf_type t, const uint8_t *b, kv_rec *k) {
    switch (t) {
    case HEARTH_GGUF_UINT8:  k->v.u = b[0]; break;
    case HEARTH_GGUF_INT8:   { int8_t x; memcpy(&x, b, 1); k->v.i = x; } break;
    case HEARTH_GGUF_UINT16: { uint16_t x; memcpy(&x, b, 2); k->v.u = x; } break;
    case HEARTH_GGUF_INT16:  { int16_t x; memcpy(&x, b, 2); k->v.i = x; } break;
    case HEARTH_GGUF_UINT32: { uint32_t x; memcpy(&x, b, 4); k->v.u = x; } break;
    case HEARTH_GGUF_INT32:  { int32_t x; memcpy(&x, b, 4); k->v.i = x; } break;
    case HEARTH_GGUF_FLOAT32: { float x; memcpy(&x, b, 4); k->v.f = x; } break;
    case HEARTH_GGUF_BOOL:   if (b[0] > 1) return false; k->v.i = b[0]; break;
    case HEARTH_GGUF_UINT64: memcpy(&k->v.u, b, 8); break;
    case HEARTH_GGUF_INT64:  memcpy(&k->v.i, b, 8); break;
    case HEARTH_GGUF_FLOAT64: memcpy(&k->v.f, b, 8); break;
    default: break; /* string, array: not scalars */
    }
    return true;
}

static hearth_status read_array(parser *p, kv_rec *k) {
    hearth_rd *r = &p->r;
    size_t pos = hearth_rd_pos(r);
    uint32_t et = hearth_rd_u32(r);
    uint64_t n = hearth_rd_u64(r);
    if (r->failed) return truncated(p, pos, "the array header of key " NAME_FMT, k->key);
    if (et == HEARTH_GGUF_ARRAY)
        return fail(p, HEARTH_E_UNSUPPORTED, pos,
                    "key " NAME_FMT ": nested array (array of arrays) at offset %zu is not supported", k->key, pos);
    if (et >= HEARTH_GGUF_TYPE_COUNT)
        return fail(p, HEARTH_E_FORMAT, pos, "key " NAME_FMT ": unknown array element type %u at offset %zu",
                    k->key, et, pos);
    k->elem_type = (hearth_gguf_type)et;
    k->n = n;
    size_t left = hearth_rd_left(r);
    size_t esz = et == HEARTH_GGUF_STRING ? 8 : value_type_size[et]; /* a string takes >= 8 bytes */
    if (n > left / esz)
        return fail(p, HEARTH_E_FORMAT, pos + 4,
                    "key " NAME_FMT ": array count %llu at offset %zu needs more than the %zu bytes left",
                    k->key, (unsigned long long)n, pos + 4, left);
    k->arr = r->p;
    if (et != HEARTH_GGUF_STRING) {
        const uint8_t *a = hearth_rd_take(r, (size_t)n * esz);
        if (et == HEARTH_GGUF_BOOL) {
            for (uint64_t j = 0; j < n; j++)
                if (a[j] > 1)
                    return fail(p, HEARTH_E_FORMAT, pos + 12 + (size_t)j,
                                "key " NAME_FMT ": bool element %llu is %u at offset %zu (must be 0 or 1)", k->key,
                                (unsigned long long)j, a[j], pos + 12 + (size_t)j);
        }
        return HEARTH_OK;
    }
    /* Strings: walk once to validate, then record each element's offset. */
    for (uint64_t j = 0; j < n; j++) {
        size_t epos = hearth_rd_pos(r);
        uint64_t len = hearth_rd_u64(r);
        if (r->failed) return truncated(p, epos, "string %llu of array " NAME_FMT, (unsigned long long)j, k->key);
        if (len > hearth_rd_left(r))
            return fail(p, HEARTH_E_FORMAT, epos,
                        "key " NAME_FMT ": string %llu at offset %zu has length %llu, more than the %zu bytes left",
                        k->key, (unsigned long long)j, epos, (unsigned long long)len, hearth_rd_left(r));
        hearth_rd_skip(r, (size_t)len);
    }
    if (n == 0) return HEARTH_OK;
    size_t *off = hearth_arena_alloc(&p->g->arena, (size_t)n * sizeof(size_t)); /* n*8 <= file size */
    if (!off) return fail(p, HEARTH_E_NOMEM, pos, "out of memory indexing array " NAME_FMT, k->key);
    size_t o = 0;
    for (uint64_t j = 0; j < n; j++) {
        uint64_t len;
        memcpy(&len, k->arr + o, 8);
        off[j] = o;
        o += 8 + (size_t)len;
    }
    k->str_off = off;
    return HEARTH_OK;
}

static hearth_status read_kv(parser *p, int64_t i) {
    hearth_gguf *g = p->g;
    if (!hearth_buf_grow(&g->kv, &p->cap_kv, (size_t)g->n_kv + 1, sizeof(kv_rec), 16))
        return fail(p, HEARTH_E_NOMEM, hearth_rd_pos(&p->r), "out of memory growing the key table");
    kv_rec *k = &g->kv[g->n_kv];
    memset(k, 0, sizeof *k);
    k->pos = hearth_rd_pos(&p->r);
    hearth_status st = read_name(p, "key", i, &k->key);
    if (st) return st;
    size_t tpos = hearth_rd_pos(&p->r);
    uint32_t t = hearth_rd_u32(&p->r);
    if (p->r.failed) return truncated(p, tpos, "the value type of key " NAME_FMT, k->key);
    if (t >= HEARTH_GGUF_TYPE_COUNT)
        return fail(p, HEARTH_E_FORMAT, tpos, "key " NAME_FMT ": unknown value type %u at offset %zu", k->key, t, tpos);
    k->type = (hearth_gguf_type)t;
    size_t vpos = hearth_rd_pos(&p->r);
    if (t == HEARTH_GGUF_ARRAY) {
        st = read_array(p, k);
        if (st) return st;
    } else if (t == HEARTH_GGUF_STRING) {
        uint64_t len = hearth_rd_u64(&p->r);
        if (p->r.failed) return truncated(p, vpos, "the string length of key " NAME_FMT, k->key);
        if (len > hearth_rd_left(&p->r))
            return fail(p, HEARTH_E_FORMAT, vpos,
                        "key " NAME_FMT ": string length %llu at offset %zu exceeds the %zu bytes left", k->key,
                        (unsigned long long)len, vpos, hearth_rd_left(&p->r));
        k->str.ptr = (const char *)hearth_rd_take(&p->r, (size_t)len);
        k->str.len = (size_t)len;
    } else {
        const uint8_t *b = hearth_rd_take(&p->r, value_type_size[t]);
        if (!b) return truncated(p, vpos, "the %s value of key " NAME_FMT, value_type_names[t], k->key);
        if (!decode_scalar(k->type, b, k))
            return fail(p, HEARTH_E_FORMAT, vpos, "key " NAME_FMT ": bool value %u at offset %zu (must be 0 or 1)",
                        k->key, b[0], vpos);
    }
    g->n_kv++;
    return HEARTH_OK;
}

static hearth_status read_tensor_info(parser *p, int64_t i) {
    hearth_gguf *g = p->g;
    size_t n = (size_t)g->n_t, cap_pos = p->cap_t;
    if (!hearth_buf_grow(&g->t, &p->cap_t, n + 1, sizeof(hearth_gguf_tensor), 16) ||
        !hearth_buf_grow(&g->t_pos, &cap_pos, n + 1, sizeof(size_t), 16))
        return fail(p, HEARTH_E_NOMEM, hearth_rd_pos(&p->r), "out of memory growing the tensor table");
    hearth_gguf_tensor *t = &g->t[n];
    memset(t, 0, sizeof *t);
    size_t pos = hearth_rd_pos(&p->r);
    g->t_pos[n] = pos;
    hearth_status st = read_name(p, "tensor name", i, &t->name);
    if (st) return st;
    hearth_rd *r = &p->r;
    size_t dpos = hearth_rd_pos(r);
    uint32_t n_dims = hearth_rd_u32(r);
    if (r->failed) return truncated(p, dpos, "n_dims of tensor " NAME_FMT, t->name);
    if (n_dims < 1 || n_dims > MAX_DIMS)
        return fail(p, HEARTH_E_FORMAT, dpos, "tensor " NAME_FMT ": n_dims %u at offset %zu is outside 1..%d",
                    t->name, n_dims, dpos, MAX_DIMS);
    t->n_dims = (int)n_dims;
    int64_t n_elem = 1;
    for (int d = 0; d < MAX_DIMS; d++) {
        t->ne[d] = 1;
        if (d >= t->n_dims) continue;
        size_t epos = hearth_rd_pos(r);
        uint64_t ne = hearth_rd_u64(r);
        if (r->failed) return truncated(p, epos, "dimension %d of tensor " NAME_FMT, d, t->name);
        if (ne == 0 || ne > (uint64_t)INT64_MAX)
            return fail(p, HEARTH_E_FORMAT, epos, "tensor " NAME_FMT ": dimension %d is %llu at offset %zu (must be 1..2^63-1)",
                        t->name, d, (unsigned long long)ne, epos);
        t->ne[d] = (int64_t)ne;
        if (!hearth_mul_i64(n_elem, t->ne[d], &n_elem))
            return fail(p, HEARTH_E_FORMAT, epos, "tensor " NAME_FMT ": element count overflows at dimension %d (offset %zu)",
                        t->name, d, epos);
    }
    size_t tpos = hearth_rd_pos(r);
    uint32_t type = hearth_rd_u32(r);
    uint64_t offset = hearth_rd_u64(r);
    if (r->failed) return truncated(p, tpos, "the type and offset of tensor " NAME_FMT, t->name);
    int64_t blck;
    size_t tsize, row, n_bytes;
    const char *tname;
    if (!type_layout(type, &blck, &tsize, &tname))
        return fail(p, HEARTH_E_FORMAT, tpos, "tensor " NAME_FMT ": unknown tensor type id %u at offset %zu",
                    t->name, type, tpos);
    if (t->ne[0] % blck)
        return fail(p, HEARTH_E_FORMAT, dpos + 4,
                    "tensor " NAME_FMT ": row of %lld elements is not a multiple of the %s block size %lld (offset %zu)",
                    t->name, (long long)t->ne[0], tname, (long long)blck, dpos + 4);
    if (!hearth_mul_size((size_t)(t->ne[0] / blck), tsize, &row) ||
        !hearth_mul_size(row, (size_t)(n_elem / t->ne[0]), &n_bytes))
        return fail(p, HEARTH_E_FORMAT, tpos, "tensor " NAME_FMT ": byte size overflows (offset %zu)", t->name, tpos);
    t->type = (hearth_type)type;
    t->offset = offset;
    t->n_bytes = n_bytes;
    g->n_t++;
    return HEARTH_OK;
}

static int cmp_name_ix(const void *a, const void *b) {
    const name_ix *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* Build a sorted index of n names (name_at(i)); *dup = index of a duplicate or -1. */
static name_ix *build_index(hearth_arena *a, int64_t n, const char *(*name_at)(const hearth_gguf *, int64_t),
                            const hearth_gguf *g, int64_t *dup) {
    *dup = -1;
    name_ix *ix = hearth_arena_calloc(a, n ? (size_t)n : 1, sizeof *ix);
    if (!ix) return NULL;
    for (int64_t i = 0; i < n; i++) ix[i] = (name_ix){name_at(g, i), i};
    qsort(ix, (size_t)n, sizeof *ix, cmp_name_ix);
    for (int64_t i = 1; i < n; i++)
        if (!strcmp(ix[i - 1].name, ix[i].name)) {
            *dup = ix[i].idx; /* the later of the first pair found */
            break;
        }
    return ix;
}

static const char *kv_name_at(const hearth_gguf *g, int64_t i) { return g->kv[i].key; }
static const char *t_name_at(const hearth_gguf *g, int64_t i) { return g->t[i].name; }

static int64_t find_ix(const name_ix *ix, int64_t n, const char *name) {
    if (!name) return -1;
    int64_t lo = 0, hi = n; /* first entry >= name */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (strcmp(ix[mid].name, name) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && !strcmp(ix[lo].name, name) ? ix[lo].idx : -1;
}

static hearth_status read_alignment(parser *p) {
    hearth_gguf *g = p->g;
    g->alignment = DEFAULT_ALIGNMENT;
    int64_t i = find_ix(g->kv_ix, g->n_kv, "general.alignment");
    if (i < 0) return HEARTH_OK;
    const kv_rec *k = &g->kv[i];
    uint64_t a;
    switch (k->type) {
    case HEARTH_GGUF_UINT8: case HEARTH_GGUF_UINT16: case HEARTH_GGUF_UINT32: case HEARTH_GGUF_UINT64:
        a = k->v.u;
        break;
    case HEARTH_GGUF_INT8: case HEARTH_GGUF_INT16: case HEARTH_GGUF_INT32: case HEARTH_GGUF_INT64:
        a = k->v.i < 0 ? 0 : (uint64_t)k->v.i;
        break;
    default:
        return fail(p, HEARTH_E_FORMAT, k->pos, "general.alignment at offset %zu has type %s, expected uint32", k->pos,
                    hearth_gguf_type_name(k->type));
    }
    bool neg = k->type != HEARTH_GGUF_UINT8 && k->type != HEARTH_GGUF_UINT16 && k->type != HEARTH_GGUF_UINT32 &&
               k->type != HEARTH_GGUF_UINT64 && k->v.i < 0;
    if (neg)
        return fail(p, HEARTH_E_FORMAT, k->pos, "general.alignment %lld at offset %zu is not a power of two",
                    (long long)k->v.i, k->pos);
    if (a == 0 || (a & (a - 1)) || a > SIZE_MAX / 2)
        return fail(p, HEARTH_E_FORMAT, k->pos, "general.alignment %llu at offset %zu is not a power of two",
                    (unsigned long long)a, k->pos);
    g->alignment = (size_t)a;
    return HEARTH_OK;
}

static int cmp_by_offset(const void *a, const void *b) {
    const hearth_gguf_tensor *x = *(const hearth_gguf_tensor *const *)a, *y = *(const hearth_gguf_tensor *const *)b;
    return (x->offset > y->offset) - (x->offset < y->offset);
}

/* Offsets aligned, bytes inside the file, no two tensors overlapping; sets data pointers. */
static hearth_status check_tensor_data(parser *p) {
    hearth_gguf *g = p->g;
    for (int64_t i = 0; i < g->n_t; i++) {
        hearth_gguf_tensor *t = &g->t[i];
        size_t ipos = g->t_pos[i], start, end;
        if (t->offset % g->alignment)
            return fail(p, HEARTH_E_FORMAT, ipos,
                        "tensor " NAME_FMT " (info at offset %zu): data offset %llu is not a multiple of the alignment %zu",
                        t->name, ipos, (unsigned long long)t->offset, g->alignment);
        if (t->offset > SIZE_MAX || !hearth_add_size(g->data_offset, (size_t)t->offset, &start))
            return fail(p, HEARTH_E_FORMAT, ipos, "tensor " NAME_FMT ": data offset %llu + %zu overflows", t->name,
                        (unsigned long long)t->offset, g->data_offset);
        bool ovf = !hearth_add_size(start, t->n_bytes, &end);
        if (ovf)
            return fail(p, HEARTH_E_FORMAT, ipos,
                        "tensor " NAME_FMT ": data [%zu, %zu + %zu) extends past end of file (size %zu)", t->name,
                        start, start, t->n_bytes, g->n_bytes);
        if (end > g->n_bytes)
            return fail(p, HEARTH_E_FORMAT, ipos,
                        "tensor " NAME_FMT ": data [%zu, %zu) extends past end of file (size %zu)", t->name, start,
                        end, g->n_bytes);
        t->data = g->base + start;
    }
    if (g->n_t < 2) return HEARTH_OK;
    const hearth_gguf_tensor **by_off = malloc((size_t)g->n_t * sizeof *by_off);
    if (!by_off) return fail(p, HEARTH_E_NOMEM, 0, "out of memory checking tensor overlap");
    for (int64_t i = 0; i < g->n_t; i++) by_off[i] = &g->t[i];
    qsort(by_off, (size_t)g->n_t, sizeof *by_off, cmp_by_offset);
    hearth_status st = HEARTH_OK;
    for (int64_t i = 1; i < g->n_t; i++) {
        const hearth_gguf_tensor *a = by_off[i - 1], *b = by_off[i];
        if (a->offset + a->n_bytes > b->offset) { /* no overflow: both lie inside the file */
            size_t d = g->data_offset;
            st = fail(p, HEARTH_E_FORMAT, d + (size_t)b->offset,
                      "tensors " NAME_FMT " [%zu, %zu) and " NAME_FMT " [%zu, %zu) overlap", a->name,
                      d + (size_t)a->offset, d + (size_t)a->offset + a->n_bytes, b->name, d + (size_t)b->offset,
                      d + (size_t)b->offset + b->n_bytes);
            break;
        }
    }
    free(by_off);
    return st;
}

static hearth_status parse(parser *p) {
    hearth_gguf *g = p->g;
    hearth_rd *r = &p->r;
    if (g->n_bytes < 4)
        return fail(p, HEARTH_E_FORMAT, 0, "file is %zu bytes, too short for the GGUF magic", g->n_bytes);
    uint8_t magic[4];
    hearth_rd_bytes(r, magic, 4);
    if (memcmp(magic, "GGUF", 4))
        return fail(p, HEARTH_E_FORMAT, 0, "bad magic %02x %02x %02x %02x at offset 0 (expected \"GGUF\")", magic[0],
                    magic[1], magic[2], magic[3]);
    g->version = hearth_rd_u32(r);
    if (r->failed) return truncated(p, 4, "the version");
    uint32_t v = g->version, swapped = __builtin_bswap32(v);
    if (v != 2 && v != 3) {
        if (swapped == 2 || swapped == 3)
            return fail(p, HEARTH_E_UNSUPPORTED, 4, "big-endian GGUF (version %u byte-swapped) is not supported", swapped);
        return fail(p, HEARTH_E_UNSUPPORTED, 4, "GGUF version %u at offset 4 is not supported (only versions 2 and 3)%s",
                    v, v == 1 ? "; v1 files must be converted" : "");
    }
    uint64_t n_tensors = hearth_rd_u64(r), n_kv = hearth_rd_u64(r);
    if (r->failed) return truncated(p, 8, "the header counts");
    size_t left = hearth_rd_left(r);
    if (n_kv > left / MIN_KV_BYTES)
        return fail(p, HEARTH_E_FORMAT, 16, "n_kv %llu at offset 16 is more than the %zu bytes after the header can hold",
                    (unsigned long long)n_kv, left);
    if (n_tensors > left / MIN_TENSOR_BYTES)
        return fail(p, HEARTH_E_FORMAT, 8,
                    "n_tensors %llu at offset 8 is more than the %zu bytes after the header can hold",
                    (unsigned long long)n_tensors, left);
    if (n_kv * MIN_KV_BYTES + n_tensors * MIN_TENSOR_BYTES > left) /* each term <= left: no overflow */
        return fail(p, HEARTH_E_FORMAT, 8, "n_tensors %llu and n_kv %llu are more than the %zu bytes left can hold",
                    (unsigned long long)n_tensors, (unsigned long long)n_kv, left);

    hearth_status st;
    for (int64_t i = 0; i < (int64_t)n_kv; i++)
        if ((st = read_kv(p, i))) return st;
    int64_t dup;
    g->kv_ix = build_index(&g->arena, g->n_kv, kv_name_at, g, &dup);
    if (!g->kv_ix) return fail(p, HEARTH_E_NOMEM, 0, "out of memory indexing keys");
    if (dup >= 0)
        return fail(p, HEARTH_E_FORMAT, g->kv[dup].pos, "duplicate key " NAME_FMT " at offset %zu", g->kv[dup].key,
                    g->kv[dup].pos);
    g->kv_end = hearth_rd_pos(r);
    if ((st = read_alignment(p))) return st;

    for (int64_t i = 0; i < (int64_t)n_tensors; i++)
        if ((st = read_tensor_info(p, i))) return st;
    g->t_ix = build_index(&g->arena, g->n_t, t_name_at, g, &dup);
    if (!g->t_ix) return fail(p, HEARTH_E_NOMEM, 0, "out of memory indexing tensors");
    if (dup >= 0)
        return fail(p, HEARTH_E_FORMAT, g->t_pos[dup], "duplicate tensor name " NAME_FMT " at offset %zu",
                    g->t[dup].name, g->t_pos[dup]);

    size_t end_infos = hearth_rd_pos(r);
    /* The padding must be there even with no tensors (writers always pad), so data_offset <=
     * file size holds for every open file and file_bytes - data_offset never wraps. */
    if (!hearth_align_size(end_infos, g->alignment, &g->data_offset) || g->data_offset > g->n_bytes)
        return fail(p, HEARTH_E_FORMAT, end_infos,
                    "data section (tensor infos end at offset %zu, alignment %zu) starts past end of file (size %zu)",
                    end_infos, g->alignment, g->n_bytes);
    return check_tensor_data(p);
}

static hearth_status open_bytes(const void *data, size_t n_bytes, bool mapped, hearth_gguf **out, hearth_err *err) {
    *out = NULL;
    hearth_err_clear(err);
    hearth_gguf *g = calloc(1, sizeof *g);
    if (!g) {
        if (mapped) munmap((void *)data, n_bytes);
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory opening GGUF");
    }
    static const uint8_t empty[1];
    g->base = data ? data : empty;
    g->n_bytes = data ? n_bytes : 0;
    g->mapped = mapped;
    hearth_arena_init(&g->arena, 0);
    parser p = {g, hearth_rd_init(g->base, g->n_bytes), err, 0, 0};
    hearth_status st = parse(&p);
    if (st) {
        hearth_gguf_close(g);
        return st;
    }
    hearth_log(HEARTH_LOG_DEBUG, "gguf: v%u, %lld keys, %lld tensors, data at %zu, alignment %zu", g->version,
               (long long)g->n_kv, (long long)g->n_t, g->data_offset, g->alignment);
    *out = g;
    return HEARTH_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* open / close                                                                             */

hearth_status hearth_gguf_open_mem(const void *data, size_t n_bytes, hearth_gguf **out, hearth_err *err) {
    return open_bytes(data, n_bytes, false, out, err);
}

hearth_status hearth_gguf_open(const char *path, hearth_gguf **out, hearth_err *err) {
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return hearth_err_set(err, HEARTH_E_IO, -1, "cannot open '%.160s': %s", path, strerror(errno));
    struct stat st;
    int stat_rc = fstat(fd, &st);
    if (stat_rc < 0 || !S_ISREG(st.st_mode)) {
        int e = stat_rc < 0 ? errno : 0;
        close(fd);
        return hearth_err_set(err, HEARTH_E_IO, -1, "'%.160s' is not a readable regular file%s%s", path,
                              e ? ": " : "", e ? strerror(e) : "");
    }
    size_t n = (size_t)st.st_size;
    if (n == 0) {
        close(fd);
        return open_bytes(NULL, 0, false, out, err);
    }
    void *map = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (map == MAP_FAILED) return hearth_err_set(err, HEARTH_E_IO, -1, "cannot mmap '%.160s': %s", path, strerror(e));
    return open_bytes(map, n, true, out, err); /* owns the mapping from here, also on failure */
}

void hearth_gguf_close(hearth_gguf *g) {
    if (!g) return;
    if (g->mapped) munmap((void *)g->base, g->n_bytes);
    hearth_arena_fini(&g->arena);
    free(g->kv);
    free(g->t);
    free(g->t_pos);
    free(g);
}

/* ---------------------------------------------------------------------------------------- */
/* accessors (read-only: any thread)                                                        */

uint32_t hearth_gguf_version(const hearth_gguf *g) { return g->version; }
size_t   hearth_gguf_alignment(const hearth_gguf *g) { return g->alignment; }
size_t   hearth_gguf_data_offset(const hearth_gguf *g) { return g->data_offset; }
size_t   hearth_gguf_kv_end(const hearth_gguf *g) { return g->kv_end; }
const void *hearth_gguf_bytes(const hearth_gguf *g) { return g->base; }
size_t   hearth_gguf_file_bytes(const hearth_gguf *g) { return g->n_bytes; }
int64_t  hearth_gguf_n_kv(const hearth_gguf *g) { return g->n_kv; }
int64_t  hearth_gguf_n_tensors(const hearth_gguf *g) { return g->n_t; }

int64_t hearth_gguf_find_key(const hearth_gguf *g, const char *key) { return find_ix(g->kv_ix, g->n_kv, key); }

const char *hearth_gguf_key(const hearth_gguf *g, int64_t i) {
    return i >= 0 && i < g->n_kv ? g->kv[i].key : NULL;
}

hearth_gguf_type hearth_gguf_kv_type(const hearth_gguf *g, int64_t i) {
    return i >= 0 && i < g->n_kv ? g->kv[i].type : HEARTH_GGUF_TYPE_COUNT;
}

static const kv_rec *kv_find(const hearth_gguf *g, const char *key) {
    int64_t i = find_ix(g->kv_ix, g->n_kv, key);
    return i < 0 ? NULL : &g->kv[i];
}

/* The integer value of k, in *i for signed types or *u for unsigned ones (*is_signed says
 * which). False when k is not an integer type: bool, floats, strings and arrays are not. */
static bool int_of(const kv_rec *k, bool *is_signed, int64_t *i, uint64_t *u) {
    switch (k->type) {
    case HEARTH_GGUF_UINT8: case HEARTH_GGUF_UINT16: case HEARTH_GGUF_UINT32: case HEARTH_GGUF_UINT64:
        *is_signed = false;
        *u = k->v.u;
        return true;
    case HEARTH_GGUF_INT8: case HEARTH_GGUF_INT16: case HEARTH_GGUF_INT32: case HEARTH_GGUF_INT64:
        *is_signed = true;
        *i = k->v.i;
        return true;
    default:
        return false;
    }
}

/* Integer of key as a value in [lo, hi] (lo <= 0 <= hi); false when missing, not an integer,
 * or out of range. Signed results come back in *out_i, non-negative ones also in *out_u. */
static bool get_int(const hearth_gguf *g, const char *key, int64_t lo, uint64_t hi, int64_t *out_i, uint64_t *out_u) {
    const kv_rec *k = kv_find(g, key);
    bool is_signed;
    int64_t i = 0;
    uint64_t u = 0;
    if (!k || !int_of(k, &is_signed, &i, &u)) return false;
    if (is_signed) {
        if (i < lo || (i >= 0 && (uint64_t)i > hi)) return false;
        *out_i = i;
        *out_u = i >= 0 ? (uint64_t)i : 0;
    } else {
        if (u > hi) return false;
        *out_u = u;
        *out_i = u <= (uint64_t)INT64_MAX ? (int64_t)u : 0;
    }
    return true;
}

bool hearth_gguf_get_u32(const hearth_gguf *g, const char *key, uint32_t *out) {
    int64_t i;
    uint64_t u;
    if (!get_int(g, key, 0, UINT32_MAX, &i, &u)) return false;
    *out = (uint32_t)u;
    return true;
}

bool hearth_gguf_get_i32(const hearth_gguf *g, const char *key, int32_t *out) {
    int64_t i;
    uint64_t u;
    if (!get_int(g, key, INT32_MIN, INT32_MAX, &i, &u)) return false;
    *out = (int32_t)i;
    return true;
}

bool hearth_gguf_get_u64(const hearth_gguf *g, const char *key, uint64_t *out) {
    int64_t i;
    uint64_t u;
    if (!get_int(g, key, 0, UINT64_MAX, &i, &u)) return false;
    *out = u;
    return true;
}

bool hearth_gguf_get_i64(const hearth_gguf *g, const char *key, int64_t *out) {
    int64_t i;
    uint64_t u;
    if (!get_int(g, key, INT64_MIN, INT64_MAX, &i, &u)) return false;
    *out = i;
    return true;
}

bool hearth_gguf_get_f64(const hearth_gguf *g, const char *key, double *out) {
    const kv_rec *k = kv_find(g, key);
    if (!k) return false;
    bool is_signed;
    int64_t i;
    uint64_t u;
    if (k->type == HEARTH_GGUF_FLOAT32 || k->type == HEARTH_GGUF_FLOAT64) *out = k->v.f;
    else if (int_of(k, &is_signed, &i, &u)) *out = is_signed ? (double)i : (double)u;
    else return false;
    return true;
}

bool hearth_gguf_get_f32(const hearth_gguf *g, const char *key, float *out) {
    double d;
    if (!hearth_gguf_get_f64(g, key, &d)) return false;
    if (isfinite(d) && fabs(d) > FLT_MAX) return false; /* would become inf */
    *out = (float)d;
    return true;
}

bool hearth_gguf_get_bool(const hearth_gguf *g, const char *key, bool *out) {
    const kv_rec *k = kv_find(g, key);
    if (!k || k->type != HEARTH_GGUF_BOOL) return false;
    *out = k->v.i != 0;
    return true;
}

bool hearth_gguf_get_str(const hearth_gguf *g, const char *key, hearth_span *out) {
    const kv_rec *k = kv_find(g, key);
    if (!k || k->type != HEARTH_GGUF_STRING) return false;
    *out = k->str;
    return true;
}

bool hearth_gguf_get_arr(const hearth_gguf *g, const char *key, hearth_gguf_type *elem_type, uint64_t *n) {
    const kv_rec *k = kv_find(g, key);
    if (!k || k->type != HEARTH_GGUF_ARRAY) return false;
    if (elem_type) *elem_type = k->elem_type;
    if (n) *n = k->n;
    return true;
}

const void *hearth_gguf_arr_data(const hearth_gguf *g, const char *key) {
    const kv_rec *k = kv_find(g, key);
    if (!k || k->type != HEARTH_GGUF_ARRAY || k->elem_type == HEARTH_GGUF_STRING) return NULL;
    return k->arr;
}

bool hearth_gguf_arr_str(const hearth_gguf *g, const char *key, uint64_t j, hearth_span *out) {
    const kv_rec *k = kv_find(g, key);
    if (!k || k->type != HEARTH_GGUF_ARRAY || k->elem_type != HEARTH_GGUF_STRING || j >= k->n) return false;
    const uint8_t *e = k->arr + k->str_off[j];
    uint64_t len;
    memcpy(&len, e, 8);
    out->ptr = (const char *)e + 8;
    out->len = (size_t)len;
    return true;
}

bool hearth_gguf_kv_value(const hearth_gguf *g, int64_t i, hearth_gguf_value *out) {
    if (i < 0 || i >= g->n_kv) return false;
    const kv_rec *k = &g->kv[i];
    memset(out, 0, sizeof *out);
    switch (k->type) {
    case HEARTH_GGUF_UINT8: case HEARTH_GGUF_UINT16: case HEARTH_GGUF_UINT32: case HEARTH_GGUF_UINT64:
        out->u = k->v.u;
        break;
    case HEARTH_GGUF_INT8: case HEARTH_GGUF_INT16: case HEARTH_GGUF_INT32: case HEARTH_GGUF_INT64:
    case HEARTH_GGUF_BOOL:
        out->i = k->v.i;
        break;
    case HEARTH_GGUF_FLOAT32: case HEARTH_GGUF_FLOAT64:
        out->f = k->v.f;
        break;
    case HEARTH_GGUF_STRING:
        out->str = k->str;
        break;
    case HEARTH_GGUF_ARRAY:
        out->elem_type = k->elem_type;
        out->n = k->n;
        break;
    default:
        return false;
    }
    return true;
}

const hearth_gguf_tensor *hearth_gguf_tensor_at(const hearth_gguf *g, int64_t i) {
    return i >= 0 && i < g->n_t ? &g->t[i] : NULL;
}

const hearth_gguf_tensor *hearth_gguf_find_tensor(const hearth_gguf *g, const char *name) {
    int64_t i = find_ix(g->t_ix, g->n_t, name);
    return i < 0 ? NULL : &g->t[i];
}
