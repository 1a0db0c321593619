/*
 * encoder_ops.h - the encoder's non-matmul kernels as the active kernel set runs them: the
 * AVX2 twins (kernels/cpu/x86/encoder_avx2.c: GELU, attention) on the avx2 set, the AVX-512
 * ones (encoder_avx512.c: GELU, attention for short sequences, LayerNorm) on avx512, the
 * references (kernels/ref/encoder_ref.h) on ref and scalar and where a set has no twin. The
 * twins are not bit-equal to the references (their exp and erf are polynomials, not libm's;
 * sums run in other orders): tests/kernels/test_encoder_ops.c bounds all of them against
 * double-precision formulas. Any thread.
 */
#pragma once
#include <stdint.h>

typedef void (*hearth_gelu_fn)(float *x, int64_t n);
typedef void (*hearth_attn_full_fn)(const float *q, const float *k, const float *v, int64_t ld, float *out,
                                    int64_t ldo, int64_t n_tok, int32_t n_head, int32_t head_dim, float scale,
                                    float *scores);

typedef void (*hearth_layernorm_fn)(const float *x, const float *w, const float *b, float *y, int64_t n_rows,
                                    int64_t dim, float eps);

hearth_gelu_fn      hearth_kernels_gelu_erf(void);
hearth_layernorm_fn hearth_kernels_layernorm(void);
hearth_attn_full_fn hearth_kernels_attn_full(void);
/* The same for a given set (NULL when this CPU cannot run it). */
hearth_gelu_fn      hearth_kernels_gelu_erf_isa(int isa);
hearth_attn_full_fn hearth_kernels_attn_full_isa(int isa);
hearth_layernorm_fn hearth_kernels_layernorm_isa(int isa);
