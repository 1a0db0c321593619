/*
 * encoder_x86.h - AVX2 twins of kernels/ref/encoder_ref.h (encoder_avx2.c); reach them through
 * hearth_kernels_gelu_erf / hearth_kernels_attn_full (kernels/encoder_ops.h).
 */
#pragma once
#include <stdint.h>

void hearth_gelu_erf_avx2(float *x, int64_t n);
void hearth_attn_full_avx2(const float *q, const float *k, const float *v, int64_t ld, float *out, int64_t ldo,
                           int64_t n_tok, int32_t n_head, int32_t head_dim, float scale, float *scores);
