/*
 * attn_x86.h - the x86 SIMD attention kernels of the llama.cpp order (kernels/ref/attn_llamacpp_order.h).
 *
 * hearth_attn_head_x86_{avx2,avx512} are the vector forms of the llama.cpp-order head
 * (kernels/ref/attn_llamacpp_order.h; attn_order_body.inc), bit-identical to hearth_attn_head_x86_ref,
 * for head sizes that are multiples of 16 (hearth_kernels_attn_head hands them out).
 * hearth_attn_group_x86_{avx2,avx512} run several queries of one kv head in the batch order
 * (kernels.h hearth_attn_group_x86_fn; hearth_kernels_attn_group), and
 * hearth_attn_sgroup_x86_{avx2,avx512} the query heads of one decoding sequence that share a kv
 * head in the single-token order (hearth_attn_sgroup_x86_fn; hearth_kernels_attn_sgroup).
 * hearth_f16_row_{avx2,avx512} (f16_*.c) convert the rows the KV cache stores
 * (kernels.h hearth_kernels_f16_row).
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>

void hearth_attn_head_x86_avx2(const float *q, const uint16_t *k, const uint16_t *v, int64_t kv_stride,
                               const int32_t *table_row, int32_t block_size, int64_t head_dim, int64_t j0, int64_t j1,
                               float scale, float softcap, bool single, float *scores, float *out);
void hearth_attn_head_x86_avx512(const float *q, const uint16_t *k, const uint16_t *v, int64_t kv_stride,
                                 const int32_t *table_row, int32_t block_size, int64_t head_dim, int64_t j0,
                                 int64_t j1, float scale, float softcap, bool single, float *scores, float *out);
void hearth_attn_group_x86_avx2(int nq, const float *const *q, float *const *out, const int64_t *j0, const int64_t *j1,
                                const uint16_t *k, const uint16_t *v, int64_t kv_stride, const int32_t *table_row,
                                int32_t block_size, int64_t head_dim, float scale, float softcap, float *scores,
                                int64_t ld);
void hearth_attn_group_x86_avx512(int nq, const float *const *q, float *const *out, const int64_t *j0,
                                  const int64_t *j1, const uint16_t *k, const uint16_t *v, int64_t kv_stride,
                                  const int32_t *table_row, int32_t block_size, int64_t head_dim, float scale,
                                  float softcap, float *scores, int64_t ld);
void hearth_attn_sgroup_x86_avx2(int nq, const float *const *q, float *const *out, int64_t j0, int64_t j1,
                                 const uint16_t *k, const uint16_t *v, int64_t kv_stride, const int32_t *table_row,
                                 int32_t block_size, int64_t head_dim, float scale, float softcap, float *scores,
                                 int64_t ld);
void hearth_attn_sgroup_x86_avx512(int nq, const float *const *q, float *const *out, int64_t j0, int64_t j1,
                                   const uint16_t *k, const uint16_t *v, int64_t kv_stride, const int32_t *table_row,
                                   int32_t block_size, int64_t head_dim, float scale, float softcap, float *scores,
                                   int64_t ld);
void hearth_f16_row_avx2(const float *x, uint16_t *y, int64_t n);
void hearth_f16_row_avx512(const float *x, uint16_t *y, int64_t n);
/* attn_quant_*.c: hearth_attn_quant_fn (kernels.h) of the two sets */
#include "kernels/kernels.h"
void hearth_attn_quant_avx2(int nq, const float *const *q, float *const *out, const hearth_attn_quant_args *a);
void hearth_attn_quant_avx512(int nq, const float *const *q, float *const *out, const hearth_attn_quant_args *a);
/* attn_turbo_*.c: hearth_attn_turbo_fn (kernels.h) of the two sets */
void hearth_attn_turbo_avx2(int nq, const float *const *q, float *const *out, const hearth_attn_turbo_args *a);
void hearth_attn_turbo_avx512(int nq, const float *const *q, float *const *out, const hearth_attn_turbo_args *a);
