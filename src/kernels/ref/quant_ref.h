/*
 * quant_ref.h - reference (plain C) conversions between f32 and every supported type.
 *
 * to_float dequantizes a row: y[n] f32 from x, a row of n elements of the type (n a multiple of
 * the block size). from_float quantizes n f32 values into a row of the type.
 *
 * The activation quantizers (q8_0, q8_1, q8_K) round exactly as ggml's reference quantizers
 * (quantize_row_q8_0_ref, _q8_1_ref, _q8_K_ref), so hearth and llama.cpp's reference path see
 * the same integers; every SIMD version is bit-identical to these. The weight quantizers are
 * simple round-to-nearest ones for making test data: q4_0..q5_1 follow ggml's reference RTN,
 * the K-quant ones produce valid blocks without ggml's scale search.
 *
 * Pure functions; any thread.
 */
#pragma once
#include <stdint.h>

void hearth_f32_to_float_ref(const void *x, float *y, int64_t n);
void hearth_f16_to_float_ref(const void *x, float *y, int64_t n);
void hearth_bf16_to_float_ref(const void *x, float *y, int64_t n);
void hearth_q4_0_to_float_ref(const void *x, float *y, int64_t n);
void hearth_q4_1_to_float_ref(const void *x, float *y, int64_t n);
void hearth_q5_0_to_float_ref(const void *x, float *y, int64_t n);
void hearth_q5_1_to_float_ref(const void *x, float *y, int64_t n);
void hearth_q8_0_to_float_ref(const void *x, float *y, int64_t n);
void hearth_q8_1_to_float_ref(const void *x, float *y, int64_t n);
void hearth_q4_K_to_float_ref(const void *x, float *y, int64_t n);
void hearth_q5_K_to_float_ref(const void *x, float *y, int64_t n);
void hearth_q6_K_to_float_ref(const void *x, float *y, int64_t n);
void hearth_q8_K_to_float_ref(const void *x, float *y, int64_t n);

void hearth_f32_from_float_ref(const float *x, void *y, int64_t n);
void hearth_f16_from_float_ref(const float *x, void *y, int64_t n);
void hearth_bf16_from_float_ref(const float *x, void *y, int64_t n);
void hearth_q4_0_from_float_ref(const float *x, void *y, int64_t n);
void hearth_q4_1_from_float_ref(const float *x, void *y, int64_t n);
void hearth_q5_0_from_float_ref(const float *x, void *y, int64_t n);
void hearth_q5_1_from_float_ref(const float *x, void *y, int64_t n);
void hearth_q8_0_from_float_ref(const float *x, void *y, int64_t n);
void hearth_q8_1_from_float_ref(const float *x, void *y, int64_t n);
void hearth_q4_K_from_float_ref(const float *x, void *y, int64_t n);
void hearth_q5_K_from_float_ref(const float *x, void *y, int64_t n);
void hearth_q6_K_from_float_ref(const float *x, void *y, int64_t n);
void hearth_q8_K_from_float_ref(const float *x, void *y, int64_t n);

/* ggml's nearest_int: round to nearest, ties to even (valid for |v| < 2^22). */
int hearth_nearest_int(float v);
