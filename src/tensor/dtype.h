/*
 * dtype.h - element types and their traits.
 *
 * Values equal GGML's type ids because they are read straight from GGUF tensor infos: the enum
 * reaches disk, so it is append-only (retired ids stay as comments). A quantized type stores
 * blck_size elements in type_size bytes; a row of ne0 elements (ne0 a multiple of blck_size)
 * takes ne0 / blck_size * type_size bytes. Block layouts are drawn in tensor/quant.h.
 * Immutable tables; any thread.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    HEARTH_TYPE_F32  = 0,
    HEARTH_TYPE_F16  = 1,
    HEARTH_TYPE_Q4_0 = 2,
    HEARTH_TYPE_Q4_1 = 3,
    /* 4, 5: retired (Q4_2, Q4_3) */
    HEARTH_TYPE_Q5_0 = 6,
    HEARTH_TYPE_Q5_1 = 7,
    HEARTH_TYPE_Q8_0 = 8,
    HEARTH_TYPE_Q8_1 = 9,   /* activations only */
    HEARTH_TYPE_Q2_K = 10,  /* not supported yet */
    HEARTH_TYPE_Q3_K = 11,  /* not supported yet */
    HEARTH_TYPE_Q4_K = 12,
    HEARTH_TYPE_Q5_K = 13,
    HEARTH_TYPE_Q6_K = 14,
    HEARTH_TYPE_Q8_K = 15,  /* activations only */
    /* 16..23: IQ formats, not supported */
    HEARTH_TYPE_I8   = 24,
    HEARTH_TYPE_I16  = 25,
    HEARTH_TYPE_I32  = 26,
    HEARTH_TYPE_I64  = 27,
    HEARTH_TYPE_F64  = 28,
    /* 29: IQ1_M, not supported */
    HEARTH_TYPE_BF16 = 30,
    /* 31..63: GGML ids (retired or foreign, see model/gguf.c) */
    /* 64..67: hearth's in-memory layouts of MLX affine quantization (tensor/quant.h), built at
     * load from a safetensors weight/scales/biases triple; never valid in a GGUF file */
    HEARTH_TYPE_MLX4_G32 = 64,
    HEARTH_TYPE_MLX4_G64 = 65,
    HEARTH_TYPE_MLX8_G32 = 66,
    HEARTH_TYPE_MLX8_G64 = 67,
    HEARTH_TYPE_COUNT = 68,
} hearth_type;

typedef struct {
    const char *name;         /* "q4_K" etc., as GGML spells it */
    int64_t     blck_size;    /* elements per block (1 for plain types) */
    size_t      type_size;    /* bytes per block */
    bool        is_quantized;
    bool        supported;    /* hearth can dequantize and multiply it */
    bool        internal;     /* an in-memory layout only, not a file type id */
} hearth_type_traits;

/* Traits of t, or NULL when t is not a known type id (t comes from files: check it). */
const hearth_type_traits *hearth_type_traits_of(int t);
/* Name of t or "unknown". */
const char *hearth_type_name(int t);
/* The MLX affine type of bits (4, 8) and group size (32, 64), or -1. */
int hearth_type_mlx(int bits, int group_size);
/* Bytes of a row of ne0 elements; 0 when ne0 is not a multiple of the block size or t unknown. */
size_t hearth_row_size(hearth_type t, int64_t ne0);

/* IEEE half and bfloat16 conversions (round to nearest even; NaN stays NaN). */
float    hearth_fp16_to_fp32(uint16_t h);
uint16_t hearth_fp32_to_fp16(float f);
float    hearth_bf16_to_fp32(uint16_t h);
uint16_t hearth_fp32_to_bf16(float f);
