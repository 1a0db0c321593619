/*
 * safetensors.h - reader for Hugging Face safetensors files, single or sharded.
 *
 * A file is: an 8-byte little-endian header length N, N bytes of JSON (an object of
 *   name -> {"dtype": "BF16", "shape": [rows, cols], "data_offsets": [begin, end]}
 * plus an optional "__metadata__" object of strings), then the data section; offsets are
 * bytes relative to the data section, shapes are row-major (last dimension fastest).
 *
 * Every file is mmap'ed read-only and validated before anything is returned: N at most 100 MiB
 * and inside the file, the header valid JSON (cJSON), each entry's dtype known, shape dims >= 0
 * (at most 8 dims), offsets two integers with begin <= end inside the data section, byte
 * length = elements x dtype size (no overflow), no duplicate names, no two tensors
 * overlapping. Errors (HEARTH_E_FORMAT / HEARTH_E_LIMIT / HEARTH_E_IO) name the file and the
 * tensor and say what is wrong. Tensor data is borrowed from the mapping; it is aligned only as
 * the writer aligned it (the official writer pads the header to 8 bytes).
 *
 * A sharded checkpoint is a directory with model.safetensors.index.json ({"weight_map":
 * {name: "model-00001-of-00002.safetensors", ...}}): every shard named there is opened (plain
 * file names only, no paths), and every tensor of the map must be in the shard it names; the
 * tensors of all shards form one table (a name in two shards is an error).
 *
 * Thread rule: immutable after open; any thread may read concurrently.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "tensor/dtype.h"

typedef struct hearth_st hearth_st;

/* Element types of the format ("dtype" strings). */
typedef enum {
    HEARTH_ST_BOOL = 0, HEARTH_ST_U8, HEARTH_ST_I8, HEARTH_ST_F8_E4M3, HEARTH_ST_F8_E5M2,
    HEARTH_ST_I16, HEARTH_ST_U16, HEARTH_ST_F16, HEARTH_ST_BF16,
    HEARTH_ST_I32, HEARTH_ST_U32, HEARTH_ST_F32, HEARTH_ST_I64, HEARTH_ST_U64, HEARTH_ST_F64,
    HEARTH_ST_DTYPE_COUNT,
} hearth_st_dtype;

enum { HEARTH_ST_MAX_DIMS = 8 };

typedef struct {
    const char     *name;      /* owned by the handle, NUL-terminated */
    hearth_st_dtype dtype;
    int             n_dims;    /* 0..HEARTH_ST_MAX_DIMS */
    int64_t         shape[HEARTH_ST_MAX_DIMS]; /* row-major: shape[n_dims - 1] is fastest */
    int64_t         n_elem;
    size_t          n_bytes;
    const void     *data;      /* borrowed: points into a mapping */
    int             shard;     /* index of the file it lives in */
} hearth_st_tensor;

/* Open a .safetensors file, or a directory holding model.safetensors.index.json (sharded) or
 * model.safetensors. On failure returns the status, fills err (may be NULL), *out = NULL. */
hearth_status hearth_st_open(const char *path, hearth_st **out, hearth_err *err);
/* One file's bytes from caller memory (borrowed; must outlive the handle). Tests, fuzzing. */
hearth_status hearth_st_open_mem(const void *data, size_t n_bytes, hearth_st **out, hearth_err *err);
void          hearth_st_close(hearth_st *s); /* accepts NULL */

int64_t                 hearth_st_n_tensors(const hearth_st *s);
const hearth_st_tensor *hearth_st_tensor_at(const hearth_st *s, int64_t i); /* sorted by name */
const hearth_st_tensor *hearth_st_find(const hearth_st *s, const char *name); /* or NULL */
/* A "__metadata__" string of the first file ("format" is "pt", "mlx", ...), or NULL. */
const char             *hearth_st_metadata(const hearth_st *s, const char *key);
int                     hearth_st_n_shards(const hearth_st *s);
/* Sum of the files' sizes in bytes. */
size_t                  hearth_st_file_bytes(const hearth_st *s);

/* "BF16", ... and bytes per element (0 for an unknown value). */
const char *hearth_st_dtype_name(hearth_st_dtype t);
size_t      hearth_st_dtype_size(hearth_st_dtype t);
/* The tensor type hearth computes with for a dtype (F32, F16, BF16), or -1. */
int         hearth_st_dtype_to_type(hearth_st_dtype t);
