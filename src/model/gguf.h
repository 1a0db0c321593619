/*
 * gguf.h - GGUF v3 reader (also reads v2; v1 is refused).
 *
 * The file is mmap'ed read-only and parsed once with the bounds-checked reader (base/rd.h):
 * every count, length, offset, type id and dimension is checked before use, so a truncated,
 * corrupt or hostile file yields HEARTH_E_FORMAT (or HEARTH_E_LIMIT / HEARTH_E_UNSUPPORTED)
 * with a message naming the key or tensor and the byte offset, never a crash or an
 * out-of-bounds read. Keys and tensor names are copied NUL-terminated into the handle's arena;
 * string and numeric array payloads stay in the mapping and are returned as borrowed pointers
 * (numeric array data may be unaligned: read it with memcpy).
 *
 * Checked: magic, version, counts against the file size, string lengths, nesting (arrays of
 * arrays are refused), value type ids, duplicate keys and tensor names, n_dims <= 4, every
 * dimension > 0 and the element count without overflow, tensor type known and the row a whole
 * number of blocks, general.alignment a power of two, the padding before the data section
 * present (data offset <= file size, also with no tensors), each tensor's data offset aligned
 * and its bytes inside the data section, tensors not overlapping.
 *
 * Thread rule: immutable after open; any thread may read concurrently.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/span.h"
#include "base/status.h"
#include "tensor/dtype.h"

typedef struct hearth_gguf hearth_gguf;

typedef enum {
    HEARTH_GGUF_UINT8 = 0, HEARTH_GGUF_INT8 = 1, HEARTH_GGUF_UINT16 = 2, HEARTH_GGUF_INT16 = 3,
    HEARTH_GGUF_UINT32 = 4, HEARTH_GGUF_INT32 = 5, HEARTH_GGUF_FLOAT32 = 6, HEARTH_GGUF_BOOL = 7,
    HEARTH_GGUF_STRING = 8, HEARTH_GGUF_ARRAY = 9, HEARTH_GGUF_UINT64 = 10, HEARTH_GGUF_INT64 = 11,
    HEARTH_GGUF_FLOAT64 = 12, HEARTH_GGUF_TYPE_COUNT = 13,
} hearth_gguf_type;

typedef struct {
    const char *name;      /* owned by the handle, NUL-terminated */
    int         n_dims;    /* 1..4 */
    int64_t     ne[4];     /* elements per dimension, ne[0] fastest; unused dims are 1 */
    hearth_type type;
    uint64_t    offset;    /* bytes, relative to the data section */
    size_t      n_bytes;   /* bytes of data */
    const void *data;      /* borrowed: points into the mapping */
} hearth_gguf_tensor;

/* Open and validate path. On failure returns the status, fills err (may be NULL), *out = NULL. */
hearth_status hearth_gguf_open(const char *path, hearth_gguf **out, hearth_err *err);
/* Same over caller memory (borrowed; must outlive the handle). For tests and fuzzing. */
hearth_status hearth_gguf_open_mem(const void *data, size_t n_bytes, hearth_gguf **out, hearth_err *err);
/* Unmap and free. Accepts NULL. */
void hearth_gguf_close(hearth_gguf *g);

uint32_t hearth_gguf_version(const hearth_gguf *g);
size_t   hearth_gguf_alignment(const hearth_gguf *g);   /* general.alignment or 32 */
size_t   hearth_gguf_data_offset(const hearth_gguf *g); /* byte offset of the data section, <= file size */
size_t   hearth_gguf_file_bytes(const hearth_gguf *g);
/* The file's bytes (borrowed, hearth_gguf_file_bytes of them), and the offset where the tensor
 * infos begin: the header and the metadata are bytes [0, kv_end), as a writer that keeps the
 * metadata and changes tensors copies them (lora/lora_fuse_gguf.c). */
const void *hearth_gguf_bytes(const hearth_gguf *g);
size_t   hearth_gguf_kv_end(const hearth_gguf *g);

/* --- metadata: key/value pairs, in file order --- */
int64_t          hearth_gguf_n_kv(const hearth_gguf *g);
int64_t          hearth_gguf_find_key(const hearth_gguf *g, const char *key); /* index or -1 */
const char      *hearth_gguf_key(const hearth_gguf *g, int64_t i);
hearth_gguf_type hearth_gguf_kv_type(const hearth_gguf *g, int64_t i);

/* Typed getters by key. They return false (leaving *out untouched) when the key is missing or
 * its value cannot be represented: integer getters accept any integer type whose value fits
 * (and bool for get_bool); get_f32/get_f64 accept float32/float64 and integer types. */
bool hearth_gguf_get_u32(const hearth_gguf *g, const char *key, uint32_t *out);
bool hearth_gguf_get_i32(const hearth_gguf *g, const char *key, int32_t *out);
bool hearth_gguf_get_u64(const hearth_gguf *g, const char *key, uint64_t *out);
bool hearth_gguf_get_f32(const hearth_gguf *g, const char *key, float *out);
bool hearth_gguf_get_bool(const hearth_gguf *g, const char *key, bool *out);
bool hearth_gguf_get_str(const hearth_gguf *g, const char *key, hearth_span *out); /* borrowed */
/* Added with the reader: the same rules for int64 and float64. Bool is not an integer (only
 * get_bool reads it); get_f32 refuses a finite float64 beyond the float range; integers
 * convert to floats rounded to nearest. */
bool hearth_gguf_get_i64(const hearth_gguf *g, const char *key, int64_t *out);
bool hearth_gguf_get_f64(const hearth_gguf *g, const char *key, double *out);

/* Arrays: element type, count, raw element data (numeric types; borrowed, maybe unaligned),
 * and string elements. arr_* return 0/NULL/false when the key is missing or not an array. */
bool        hearth_gguf_get_arr(const hearth_gguf *g, const char *key, hearth_gguf_type *elem_type,
                                uint64_t *n);
const void *hearth_gguf_arr_data(const hearth_gguf *g, const char *key);
bool        hearth_gguf_arr_str(const hearth_gguf *g, const char *key, uint64_t j, hearth_span *out);

/* Value of kv i as generic views, for dumping every type: scalars are copied into *out_scalar
 * widened (int64 for signed/bool, uint64 for unsigned, double for floats); strings in *out_str. */
typedef struct {
    int64_t     i;   /* signed integers and bool */
    uint64_t    u;   /* unsigned integers */
    double      f;   /* floats */
    hearth_span str; /* strings (borrowed) */
    hearth_gguf_type elem_type; /* arrays: element type */
    uint64_t    n;   /* arrays: element count */
} hearth_gguf_value;
bool hearth_gguf_kv_value(const hearth_gguf *g, int64_t i, hearth_gguf_value *out);

/* Name of a value type as gguf-py spells it in lower case ("uint32", "string"), or "unknown". */
const char *hearth_gguf_type_name(hearth_gguf_type t);

/* --- tensors ---
 * Type policy: a tensor's `type` is the raw GGML type id from the file. Opening accepts every
 * id whose block layout is known: those in tensor/dtype.h, supported or not (q2_K, i8, ...),
 * and GGML formats hearth does not implement (IQ*, TQ*, MXFP4), for which
 * hearth_type_traits_of(type) is NULL. The loader refuses what it cannot run, naming the
 * tensor. Ids with no known layout fail the open with HEARTH_E_FORMAT. */
/* GGML name of a tensor type id ("q4_K", "iq2_xxs"), or "unknown". Any thread. */
const char *hearth_gguf_tensor_type_name(int type);
int64_t                   hearth_gguf_n_tensors(const hearth_gguf *g);
const hearth_gguf_tensor *hearth_gguf_tensor_at(const hearth_gguf *g, int64_t i);
const hearth_gguf_tensor *hearth_gguf_find_tensor(const hearth_gguf *g, const char *name); /* or NULL */
