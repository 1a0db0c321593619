/*
 * llamacpp_order_ref.h - plain-C twins of the arithmetic llama.cpp's x86 CPU build performs, so
 * hearth's default kernel set can round exactly as llama.cpp does on the same machine.
 *
 * With 8-bit activations re-quantized before every matmul, a one-ulp difference anywhere can
 * flip a later rounding, so "the same maths" is not enough: the default path repeats the
 * reference build's operations one for one. These functions are the specification of the
 * SIMD kernels that do so (kernels/cpu/x86/quant_avx2.c and quant_avx512.c), equal to them bit for bit
 * (tests/kernels/test_llamacpp_order.c):
 *
 *   q8_0 / q8_1 activation quantizers  d = amax / 127 (rounded to f16 for storage), the
 *        multiplier 127 / amax (not 1 / d), round half to even; q8_1's s = f16(d * sum(q)).
 *   block dots (q4_0, q4_1, q5_0, q8_0 weights)  one 8-lane float accumulator: lane l holds
 *        elements 4l..4l+3 of every block, their integer product sum p_l (exact) is added as
 *        acc_l = fma(dx * dy, p_l, acc_l), block after block; then the 8 lanes are reduced as
 *        ((a0+a4) + (a2+a6)) + ((a1+a5) + (a3+a7)) (hsum8). q4_1 keeps the minimum terms in
 *        a separate scalar chain summs = fma(m, s, summs), added last.
 * llamafile's tinyBLAS, which llama.cpp runs for batches of two or more tokens on these
 * types, accumulates the same way, so one twin covers both.
 *
 * Pure functions; any thread.
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>

void hearth_q8_0_from_float_x86_ref(const float *x, void *y, int64_t n);
void hearth_q8_1_from_float_x86_ref(const float *x, void *y, int64_t n);

void hearth_vec_dot_q4_0_q8_0_x86_ref(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q4_1_q8_1_x86_ref(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q5_0_q8_0_x86_ref(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q8_0_q8_0_x86_ref(int64_t n, float *s, const void *x, const void *y);

/* The 8-lane reduction the x86 kernels end with: ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)). */
float hearth_hsum8_x86_ref(const float a[8]);

/* exp(x) as llama.cpp's AVX-512 build computes it in its vector SiLU and softmax
 * (ggml_v_expf: a degree-5 polynomial of the reduced argument, FMAs, scaled by 2^n). */
float hearth_expf_x86_ref(float x);
/* SwiGLU as llama.cpp's AVX-512 build computes it: g[i] = (g[i] / (1 + expf_x86(0 - g[i]))) * u[i]. */
void hearth_swiglu_x86_ref(float *g, const float *u, int64_t n);

/* One attention head of one query over an f16 paged cache in llama.cpp's order
 * (attn_llamacpp_order.h says how): single = the step holds only this token of its sequence.
 * scores: at least round_up(j1, 32) floats. */
typedef void (*hearth_attn_head_x86_fn)(const float *q, const uint16_t *k, const uint16_t *v, int64_t kv_stride,
                                        const int32_t *table_row, int32_t block_size, int64_t head_dim, int64_t j0,
                                        int64_t j1, float scale, float softcap, bool single, float *scores, float *out);
void hearth_attn_head_x86_ref(const float *q, const uint16_t *k, const uint16_t *v, int64_t kv_stride,
                              const int32_t *table_row, int32_t block_size, int64_t head_dim, int64_t j0, int64_t j1,
                              float scale, float softcap, bool single, float *scores, float *out);

/* K-quant dots as llama.cpp's x86 build (AVX2 or better) runs them:
 *   q4_K  weights repacked 8 rows at a time (ggml's q4_K_8x8 gemv/gemm): per super-block the
 *         exact integer sums S = sum_g sc_g dot_g and M = sum_g mn_g bsum_g, accumulated as
 *         A = fma(S, d * dy, A) and B = fma(M, dmin * dy, B); the result is A - B;
 *   q6_K  one 8-lane accumulator: lane l holds the exact integer
 *             sum over e with (e % 32) / 4 == l of sc(e) * q(e) * qy(e)   (q unsigned, 0..63)
 *           - 32 * (sc_2l * bsum_2l + sc_2l+1 * bsum_2l+1)               (elements 32l..32l+31)
 *         (the offset leaves each lane by Q8_K's per-16 sums, not by its own elements), then
 *         acc_l = fma(dy * d, lane, acc_l), and hsum8 at the end. */
void hearth_vec_dot_q4_K_q8_K_x86_ref(int64_t n, float *s, const void *x, const void *y);
/* q4_K as the repacked gemm computes the activation rows of full groups of four in a matmul
 * of more than three rows: the two chains take one FMA per pair of sub-blocks (64 elements)
 * instead of one per super-block. */
void hearth_vec_dot_q4_K_q8_K_x86_gemm_ref(int64_t n, float *s, const void *x, const void *y);
void hearth_vec_dot_q6_K_q8_K_x86_ref(int64_t n, float *s, const void *x, const void *y);
/* q6_K as llama.cpp's tiled K-quant matmul computes it, which takes every matmul of at least
 * HEARTH_Q6_K_TILED_MIN_TOK activation rows: per super-block the exact integer
 *     S = sum_s sc_s * (sum_{e in s} q(e) qy(e) - 32 bsum_s)   (16 sub-blocks of 16, q unsigned),
 * then acc = fma((float)S * d, dy, acc) block after block (no lanes). */
#define HEARTH_Q6_K_TILED_MIN_TOK 8
void hearth_vec_dot_q6_K_q8_K_x86_tiled_ref(int64_t n, float *s, const void *x, const void *y);
