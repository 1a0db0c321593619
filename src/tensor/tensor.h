/*
 * tensor.h - the 2-D weight view every matmul takes: ne1 rows of ne0 elements of one type,
 * each row a whole number of blocks (tensor/dtype.h), rows row_bytes apart. Plain data; the
 * bytes are borrowed (a model's read-only mapping, or a backend buffer).
 */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "tensor/dtype.h"

typedef struct {
    hearth_type type;
    int64_t     ne0;       /* elements per row (input width) */
    int64_t     ne1;       /* rows (output width) */
    size_t      row_bytes;
    const void *data;      /* borrowed; NULL when the tensor is absent */
} hearth_weight;
