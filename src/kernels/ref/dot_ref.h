/*
 * dot_ref.h - reference dot products, the specification of every SIMD vec_dot.
 *
 * Signature (hearth_vec_dot_fn): s[0] = dot(x, y) over n elements, x a row of the weight type,
 * y a row of the activation type named second; n a multiple of both block sizes.
 *
 *   hearth_vec_dot_<w>_<a>_ref   quantized weight . quantized activation (the "scalar" set):
 *                                integer sums per block, then scaled in float.
 *   hearth_vec_dot_<w>_f32_ref   dequantized weight . f32 activation (the "ref" set): the weight
 *                                is dequantized block by block and the products summed in
 *                                double in element order, so the result equals
 *                                hearth_vec_dot_f32_ref on the dequantized row, bit for bit.
 *   hearth_vec_dot_f32/f16/bf16_ref  plain dots, summed in double in element order.
 *
 * Pure functions; any thread.
 */
#pragma once
#include <stdint.h>

void hearth_vec_dot_f32_ref(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_f16_ref(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_bf16_ref(int64_t n, float *s, const void *x, const void *y);

void hearth_vec_dot_q4_0_q8_0_ref(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q4_1_q8_1_ref(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q5_0_q8_0_ref(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q5_1_q8_1_ref(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q8_0_q8_0_ref(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q4_K_q8_K_ref(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q5_K_q8_K_ref(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q6_K_q8_K_ref(int64_t n, float *s, const void *x, const void *y);

void hearth_vec_dot_f16_f32_ref(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_bf16_f32_ref(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q4_0_f32_ref(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q4_1_f32_ref(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q5_0_f32_ref(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q5_1_f32_ref(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q8_0_f32_ref(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q4_K_f32_ref(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q5_K_f32_ref(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q6_K_f32_ref(int64_t n, float *s, const void *x, const void *y);
