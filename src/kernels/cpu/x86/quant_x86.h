/*
 * quant_x86.h - the x86 SIMD kernels that dispatch.c puts in the avx2 and avx512 tables.
 *
 * Same signatures and results as their reference twins in kernels/ref/ (dot_ref.h,
 * quant_ref.h): integer block sums are exact, so a SIMD dot differs from the reference only by
 * float summation order; the q8 from_float functions are bit-identical to the reference.
 * The *_avx2 functions need AVX2+FMA+F16C+BMI2, the *_avx512 ones AVX-512 F/BW/VL/DQ+VNNI as
 * well; call them only through the tables (dispatch.c checks CPUID). Any thread.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* avx2 */
void hearth_vec_dot_f32_avx2(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_f16_avx2(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_bf16_avx2(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q4_0_q8_0_avx2(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q4_1_q8_1_avx2(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q5_0_q8_0_avx2(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q5_1_q8_1_avx2(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q8_0_q8_0_avx2(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q4_K_q8_K_avx2(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q4_K_q8_K_gemm_avx2(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q5_K_q8_K_avx2(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q6_K_q8_K_avx2(int64_t n, float *s, const void *x, const void *y);
void hearth_q8_0_from_float_avx2(const float *x, void *y, int64_t n);
void hearth_q8_1_from_float_avx2(const float *x, void *y, int64_t n);
void hearth_q8_K_from_float_avx2(const float *x, void *y, int64_t n);

/* avx512 */
void hearth_vec_dot_f32_avx512(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_f16_avx512(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_bf16_avx512(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q4_0_q8_0_avx512(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q4_1_q8_1_avx512(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q5_0_q8_0_avx512(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q5_1_q8_1_avx512(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q8_0_q8_0_avx512(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q4_K_q8_K_avx512(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q4_K_q8_K_gemm_avx512(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q5_K_q8_K_avx512(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q6_K_q8_K_avx512(int64_t n, float *s, const void *x, const void *y);
void hearth_q8_0_from_float_avx512(const float *x, void *y, int64_t n);
void hearth_q8_1_from_float_avx512(const float *x, void *y, int64_t n);
void hearth_q8_K_from_float_avx512(const float *x, void *y, int64_t n);

/* MLX affine weights . f32 activations (mlx_avx2.c, mlx_avx512.c) */
void hearth_vec_dot_mlx4_g32_avx2(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_mlx4_g64_avx2(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_mlx8_g32_avx2(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_mlx8_g64_avx2(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_mlx4_g32_avx512(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_mlx4_g64_avx512(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_mlx8_g32_avx512(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_mlx8_g64_avx512(int64_t n, float *s, const void *x, const void *y);


/* argmax_avx512.c: hearth_argmax_ref's answer, vectorized */
int64_t hearth_argmax_avx512(const float *x, int64_t n);

void hearth_swiglu_avx512(float *g, const float *u, int64_t n);    /* act_avx512.c */
void hearth_geglu_f16_avx512(float *g, const float *u, int64_t n); /* act_avx512.c: = hearth_geglu_f16_ref */

/* attn_fma_avx2.c: hearth_attn_head_x86_ref compiled with FMA (avx2 and avx512 sets) */
void hearth_attn_head_x86_fma(const float *q, const uint16_t *k, const uint16_t *v, int64_t kv_stride,
                              const int32_t *table_row, int32_t block_size, int64_t head_dim, int64_t j0, int64_t j1,
                              float scale, float softcap, bool single, float *scores, float *out);
