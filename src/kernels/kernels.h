/*
 * kernels.h - the CPU kernel table: dequantize, quantize and dot per tensor type, chosen once
 * at start from CPUID (STYLE 2.8, ggml's type_traits_cpu).
 *
 * Quantized weights multiply quantized activations, as llama.cpp does, so both stacks round
 * the same way: a weight row of type T is dotted with an activation row of
 * traits(T)->vec_dot_type, made by traits(vec_dot_type)->from_float from f32:
 *   Q4_0, Q5_0, Q8_0 -> Q8_0;  Q4_1, Q5_1 -> Q8_1;  Q4_K, Q5_K, Q6_K -> Q8_K;
 *   F16 -> F16;  BF16 -> BF16;  F32 -> F32;  MLX affine (mlx4_g32 ...) -> F32, read directly
 *   (f32_direct: MLX computes with unquantized activations, and so does hearth).
 *
 * Kernel sets (HEARTH_KERNELS environment variable; default auto = best the CPU has):
 *   ref     the reference path: every weight is dequantized to f32 and multiplied with f32
 *           activations in plain C (vec_dot_type is F32 for every type). It is the numerical
 *           specification the model is compared with transformers on.
 *   scalar  quantized activations, plain C (kernels/ref/): the specification of the SIMD sets.
 *   avx2    AVX2 + FMA + F16C versions (kernels/cpu/x86, files named ..._avx2.c).
 *   avx512  AVX-512 F/BW/VL/DQ (+VNNI, BF16) versions (kernels/cpu/x86, files named ..._avx512.c).
 * A set lacking a kernel for some type falls back to the scalar one.
 *
 * Thread rule: hearth_kernels_init is idempotent and thread-safe; the tables are immutable after.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/thread.h"
#include "tensor/dtype.h"

/* s[0] = dot(x, y) over n elements; x is a row of the weight type, y a row of its vec_dot_type.
 * n is a multiple of both block sizes. */
typedef void (*hearth_vec_dot_fn)(int64_t n, float *s, const void *x, const void *y);
/* Quantize n f32 values into a row of the type. */
typedef void (*hearth_from_float_fn)(const float *x, void *y, int64_t n);
/* Dequantize a row of the type into n f32 values. */
typedef void (*hearth_to_float_fn)(const void *x, float *y, int64_t n);

/* s[t * bs + r] = dot(x_r, y_t) for the nr weight rows x_r = x + r * bx (nr a positive multiple
 * of 4) and the nt activation rows y_t = y + t * by (bytes), 1 <= nt <= HEARTH_TILE_NT: nr * nt
 * vec_dot calls in one, each result equal to its vec_dot bit for bit
 * (kernels/cpu/x86/tile_x86.h says how it is faster). */
#define HEARTH_TILE_NT 8
typedef void (*hearth_vec_dot_tile_fn)(int64_t n, float *s, int64_t bs, const void *x, size_t bx, int nr,
                                       const void *y, size_t by, int nt);

typedef struct {
    hearth_to_float_fn   to_float;     /* NULL when the type cannot be dequantized */
    hearth_from_float_fn from_float;   /* NULL when nothing quantizes into the type */
    hearth_vec_dot_fn    vec_dot;      /* NULL when the type is not a weight type */
    hearth_type          vec_dot_type; /* activation type for vec_dot */
    bool                 f32_direct;   /* vec_dot reads f32 activations as they are (MLX types off
                                        * the ref set); otherwise a non-f32 weight with
                                        * vec_dot_type F32 is dequantized row by row (ref set) */
    hearth_vec_dot_tile_fn vec_dot_tile; /* optional (NULL: vec_dot calls) */
    /* NULL, or the dot llama.cpp's x86 build uses for the activation rows of full groups of
     * four in a matmul of more than three rows (repacked q4_K's gemm); hearth_matmul picks it
     * by row, so a row's result depends on its place in the step as it does in llama.cpp */
    hearth_vec_dot_fn    vec_dot_gemm;
    hearth_vec_dot_tile_fn vec_dot_gemm_tile; /* optional: vec_dot_gemm's tile (NULL: a type with a
                                               * vec_dot_gemm then runs no tiles) */
    /* NULL, or the dot of every activation row in a matmul of at least vec_dot_batch_min rows
     * (llama.cpp's tiled K-quant matmul for q6_K) */
    hearth_vec_dot_fn    vec_dot_batch;
    int                  vec_dot_batch_min;
    hearth_vec_dot_tile_fn vec_dot_batch_tile; /* optional: vec_dot_batch's tile (NULL: vec_dot_batch
                                                * calls) */
} hearth_kernel_traits;

typedef enum {
    HEARTH_ISA_REF = 0,
    HEARTH_ISA_SCALAR,
    HEARTH_ISA_AVX2,
    HEARTH_ISA_AVX512,
    HEARTH_ISA_COUNT,
} hearth_isa;

/* Detect the CPU and pick the set (HEARTH_KERNELS overrides; an unknown or unavailable value
 * logs a warning and falls back to auto). Idempotent. */
void        hearth_kernels_init(void);
hearth_isa  hearth_kernels_isa(void);         /* the active set */
const char *hearth_isa_name(hearth_isa isa);  /* "ref", "scalar", "avx2", "avx512" */
bool        hearth_isa_available(hearth_isa isa); /* does this CPU run it */
/* The active set's name (hearth_isa_name), for logs and reports. */
const char *hearth_kernels_name(void);
/* The active set is the reference one: weights dequantized and dotted with f32 activations.
 * Code outside kernels/ asks this (numerics defaults), never for the set itself. */
bool        hearth_kernels_f32(void);
/* Make isa the active set (the CLI's --kernels switch, tests). Returns false, changing
 * nothing, when this CPU cannot run it. Call it while no kernel runs: the set is read once at
 * the start of each hearth_matmul. */
bool        hearth_kernels_select(hearth_isa isa);

/* Traits of type t in the active set / in a given set (NULL for unsupported types, or when
 * the set is not available on this CPU). */
const hearth_kernel_traits *hearth_kernels_traits(hearth_type t);
const hearth_kernel_traits *hearth_kernels_traits_isa(hearth_type t, hearth_isa isa);

/* g[i] = silu(g[i]) * u[i] over n, as the active set computes it: the ref set with libm's
 * expf (ops_ref.h), the others as llama.cpp's AVX-512 build (llamacpp_order_ref.h). */
typedef void (*hearth_swiglu_fn)(float *g, const float *u, int64_t n);
hearth_swiglu_fn hearth_kernels_swiglu(void);
/* g[i] = GeGLU with llama.cpp's f16 table (hearth_geglu_f16_ref), vectorized where the set can. */
hearth_swiglu_fn hearth_kernels_geglu_f16(void);

/* The f16-cache attention head of the active set in llama.cpp's order (llamacpp_order_ref.h), or
 * NULL for the ref set (which attends as kernels/ref/attn_paged_ref.c). */
#include "kernels/ref/llamacpp_order_ref.h"
hearth_attn_head_x86_fn hearth_kernels_attn_head(void);

/* Several queries of one kv head and one sequence in the batch order (the step holds several
 * tokens of the sequence), reading each tile of keys and values once for all of them: query i
 * attends keys [j0[i], j1[i]) and out[i] is what hearth_kernels_attn_head gives it with
 * single = false, bit for bit. q[i]: [head_dim] f32; k, v as for the head; scores: [nq][ld]
 * scratch with ld >= round_up(max j1, 16); head_dim a multiple of 16, nq <=
 * HEARTH_ATTN_X86_GROUP_MAX and nq * head_dim <= HEARTH_ATTN_X86_GROUP_FLOATS. NULL for the
 * ref and scalar sets (their callers run the head per query). Any thread. */
#define HEARTH_ATTN_X86_GROUP_MAX    32
#define HEARTH_ATTN_X86_GROUP_FLOATS 8192
typedef void (*hearth_attn_group_x86_fn)(int nq, const float *const *q, float *const *out, const int64_t *j0,
                                         const int64_t *j1, const uint16_t *k, const uint16_t *v, int64_t kv_stride,
                                         const int32_t *table_row, int32_t block_size, int64_t head_dim, float scale,
                                         float softcap, float *scores, int64_t ld);
hearth_attn_group_x86_fn hearth_kernels_attn_group(void);

/* The query heads of one decoding sequence (one token: the single order) that share one kv
 * head, in one pass over its keys and values: every query attends keys [j0, j1) and out[i] is
 * what hearth_kernels_attn_head gives q[i] with single = true, bit for bit. scores: [nq][ld]
 * scratch with ld >= round_up(j1, 64); head_dim a multiple of 16 up to the head's limit, nq <=
 * HEARTH_ATTN_X86_SGROUP_MAX. NULL for the ref and scalar sets. Any thread. */
#define HEARTH_ATTN_X86_SGROUP_MAX 8
typedef void (*hearth_attn_sgroup_x86_fn)(int nq, const float *const *q, float *const *out, int64_t j0, int64_t j1,
                                          const uint16_t *k, const uint16_t *v, int64_t kv_stride,
                                          const int32_t *table_row, int32_t block_size, int64_t head_dim, float scale,
                                          float softcap, float *scores, int64_t ld);
hearth_attn_sgroup_x86_fn hearth_kernels_attn_sgroup(void);
hearth_attn_sgroup_x86_fn hearth_kernels_attn_sgroup_isa(hearth_isa isa); /* NULL: none, or unavailable */

/* Attention over a quantized KV cache (backend/kv_type.h: q8_0 or q4_0 keys and values) in
 * llama.cpp's flash-attention order (kernels/cpu/attn_quant_body.inc says which): nq query
 * heads that share one kv head attend keys [j0, j1) of one sequence. k and v point at the kv
 * head's slice of cache row 0 (the layer's cache plus the head's byte offset in a row); cache
 * row r's slice is r * k_row (v_row) bytes further; position p is row table_row[p /
 * block_size] * block_size + p % block_size. head_dim and head_dim_v are multiples of 32 up
 * to HEARTH_ATTN_QUANT_DIM_MAX, nq <= HEARTH_ATTN_QUANT_NQ_MAX. Any thread. */
#define HEARTH_ATTN_QUANT_NQ_MAX     16
#define HEARTH_ATTN_QUANT_DIM_MAX    512
#define HEARTH_ATTN_QUANT_QBYTES_MAX (HEARTH_ATTN_QUANT_DIM_MAX / 32 * 36)
typedef struct {
    const char    *k, *v;
    size_t         k_row, v_row;
    hearth_type    k_type, v_type;   /* HEARTH_TYPE_Q8_0 or HEARTH_TYPE_Q4_0 */
    const int32_t *table_row;
    int32_t        block_size;
    int64_t        head_dim, head_dim_v;
    int64_t        j0, j1;
    float          scale, softcap;   /* softcap 0: none */
} hearth_attn_quant_args;
typedef void (*hearth_attn_quant_fn)(int nq, const float *const *q, float *const *out, const hearth_attn_quant_args *a);
/* The active set's kernel; the ref and scalar sets get the scalar twin (the quantized cache is
 * always attended in llama.cpp's order). */
hearth_attn_quant_fn hearth_kernels_attn_quant(void);
hearth_attn_quant_fn hearth_kernels_attn_quant_isa(hearth_isa isa); /* NULL: unavailable */
/* The quantizer of a quantized cache's rows (kv_store) for type t (q8_0, q4_0): the active
 * set's from_float, the scalar set's under the ref set (as the attention above). */
hearth_from_float_fn hearth_kernels_kv_quantizer(hearth_type t);
void hearth_attn_quant_ref(int nq, const float *const *q, float *const *out, const hearth_attn_quant_args *a);

/* Attention over a turbo KV cache (backend/kv_type.h, kernels/ref/turbo_ref.h): nq query heads
 * that share one kv head attend keys [j0, j1) of one sequence, as hearth_attn_quant_fn does
 * (the same addressing: k and v at the kv head's slice of cache row 0, rows k_row / v_row bytes
 * apart, the block table), with keys of k_bits and values of v_bits bits. head_dim and
 * head_dim_v are multiples of 64 up to HEARTH_ATTN_QUANT_DIM_MAX, nq <= HEARTH_ATTN_QUANT_NQ_MAX.
 * The order is kernels/cpu/attn_turbo_body.inc's; every set's kernel equals the scalar twin
 * bit for bit (tests/kernels/test_attn_turbo.c). Any thread. */
typedef struct {
    const char    *k, *v;
    size_t         k_row, v_row;
    int            k_bits, v_bits;
    const int32_t *table_row;
    int32_t        block_size;
    int64_t        head_dim, head_dim_v;
    int64_t        j0, j1;
    float          scale, softcap; /* softcap 0: none */
} hearth_attn_turbo_args;
typedef void (*hearth_attn_turbo_fn)(int nq, const float *const *q, float *const *out, const hearth_attn_turbo_args *a);
hearth_attn_turbo_fn hearth_kernels_attn_turbo(void);                /* the active set's (ref: the twin) */
hearth_attn_turbo_fn hearth_kernels_attn_turbo_isa(hearth_isa isa); /* NULL: unavailable */
void hearth_attn_turbo_ref(int nq, const float *const *q, float *const *out, const hearth_attn_turbo_args *a);

/* y[i] = hearth_fp32_to_fp16(x[i]) for n values (the KV cache store), bit for bit: the
 * active set's F16C / AVX-512 conversion, or the scalar loop (ref and scalar sets). */
typedef void (*hearth_f16_row_fn)(const float *x, uint16_t *y, int64_t n);
hearth_f16_row_fn hearth_kernels_f16_row(void);
hearth_f16_row_fn hearth_kernels_f16_row_isa(hearth_isa isa); /* NULL: unavailable */
hearth_attn_group_x86_fn hearth_kernels_attn_group_isa(hearth_isa isa); /* NULL: none, or unavailable */

/*
 * y = x W^T, multithreaded on pool (may be NULL), with the active set:
 *   w      [n_out rows][n_in] of type wtype, row stride w_row_bytes (borrowed, read-only)
 *   x      [n_tok][n_in] f32, row stride n_in
 *   y      [n_tok][n_out] f32, row stride ldy (>= n_out)
 *   scratch  at least hearth_matmul_scratch_bytes(...) bytes, 64-byte aligned (caller-owned)
 * Every thread of the pool takes part; results do not depend on the thread count.
 * hearth_matmul_scratch_bytes covers every set this CPU runs (so hearth_kernels_select may
 * switch sets between sizing and use) and a pool of at most n_threads threads.
 */
size_t hearth_matmul_scratch_bytes(hearth_type wtype, int64_t n_in, int64_t n_tok, int n_threads);
void   hearth_matmul(hearth_pool *pool, hearth_type wtype, const void *w, size_t w_row_bytes,
                     int64_t n_out, int64_t n_in, const float *x, int64_t n_tok, float *y,
                     int64_t ldy, void *scratch);

/* Several matrices over the same activations x: [n_tok][n_in], as one pool job (matmul.c): the
 * activations are quantized once and the rows of every part are shared out together. Results
 * equal separate hearth_matmul calls; parts whose weights want different activation types are
 * run one by one. scratch: the largest hearth_matmul_scratch_bytes of the parts. */
#define HEARTH_MATMUL_MAX_PARTS 4
typedef struct {
    hearth_type wtype;
    const void *w;           /* borrowed: [n_out rows][n_in] of wtype, row stride w_row_bytes */
    size_t      w_row_bytes;
    int64_t     n_out;
    float      *y;           /* borrowed: [n_tok][ldy] */
    int64_t     ldy;
    bool        per_row;     /* every activation row in the one-row order (vec_dot, or its tile),
                              * whatever n_tok: no gemm or batch order (batch invariance) */
} hearth_matmul_part;
void hearth_matmul_n(hearth_pool *pool, const hearth_matmul_part *parts, int n_parts, int64_t n_in, const float *x,
                     int64_t n_tok, void *scratch);

/* The first index of the largest of x[0..n) (kernels/ref/argmax_ref.h: ties keep the earliest,
 * NaNs are never chosen), with the active set: greedy sampling over the vocabulary. */
int64_t hearth_kernels_argmax(const float *x, int64_t n);
