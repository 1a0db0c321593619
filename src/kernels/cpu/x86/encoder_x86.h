/*
 * encoder_x86.h - AVX2 (encoder_avx2.c) and AVX-512 (encoder_avx512.c) twins of
 * kernels/ref/encoder_ref.h; reach them through hearth_kernels_gelu_erf /
 * hearth_kernels_attn_full / hearth_kernels_layernorm (kernels/encoder_ops.h).
 */
#pragma once
#include <stdint.h>

void hearth_gelu_erf_avx2(float *x, int64_t n);
void hearth_attn_full_avx2(const float *q, const float *k, const float *v, int64_t ld, float *out, int64_t ldo,
                           int64_t n_tok, int32_t n_head, int32_t head_dim, float scale, float *scores);
void hearth_gelu_erf_avx512(float *x, int64_t n);
void hearth_layernorm_avx512(const float *x, const float *w, const float *b, float *y, int64_t n_rows, int64_t dim,
                             float eps);
void hearth_attn_full_avx512(const float *q, const float *k, const float *v, int64_t ld, float *out, int64_t ldo,
                             int64_t n_tok, int32_t n_head, int32_t head_dim, float scale, float *scores);
