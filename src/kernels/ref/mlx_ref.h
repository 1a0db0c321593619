/*
 * mlx_ref.h - reference kernels of the MLX affine types (layout in tensor/quant.h):
 * mlx4_g32, mlx4_g64, mlx8_g32, mlx8_g64.
 *
 *   hearth_<t>_to_float_ref      y = scale * q + bias per element, in float
 *   hearth_<t>_from_float_ref    affine round-to-nearest over each group as mlx.core.quantize
 *                                defines it (scale = (max - min) / (2^bits - 1), bias = min,
 *                                q = round((x - bias) / scale)); for test data
 *   hearth_vec_dot_<t>_f32_ref   the ref set: dequantized weight . f32, summed in double in
 *                                element order (equals hearth_vec_dot_f32_ref on the
 *                                dequantized row, bit for bit)
 *   hearth_vec_dot_<t>_ref       the scalar set, the specification of the SIMD dots: weights
 *                                dotted with f32 activations as they are (no activation
 *                                quantization): per group sum(q * x) and sum(x) in float, then
 *                                scale * sum(q * x) + bias * sum(x) added up in float
 * Pure functions; any thread.
 */
#pragma once
#include <stdint.h>

#define HEARTH_MLX_DECL(t)                                                              \
    void hearth_##t##_to_float_ref(const void *x, float *y, int64_t n);                \
    void hearth_##t##_from_float_ref(const float *x, void *y, int64_t n);              \
    void hearth_vec_dot_##t##_f32_ref(int64_t n, float *s, const void *x, const void *y); \
    void hearth_vec_dot_##t##_ref(int64_t n, float *s, const void *x, const void *y);
HEARTH_MLX_DECL(mlx4_g32)
HEARTH_MLX_DECL(mlx4_g64)
HEARTH_MLX_DECL(mlx8_g32)
HEARTH_MLX_DECL(mlx8_g64)
#undef HEARTH_MLX_DECL

/* One element's integer of an MLX block's packed bytes. */
static inline int hearth_mlx_q(const uint8_t *q, int bits, int64_t e) {
    return bits == 4 ? (q[e >> 1] >> ((e & 1) * 4)) & 15 : q[e];
}
