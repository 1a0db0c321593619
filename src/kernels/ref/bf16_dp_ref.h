/*
 * bf16_dp_ref.h - the bf16 dot in the order of AVX512-BF16's vdpbf16ps: the specification of
 * the bf16 tiles (kernels/cpu/x86/bf16_tile_x86.h), which the kernel sets use for matmuls of
 * HEARTH_BF16_DP_MIN_TOK activation rows or more (kernels.h's vec_dot_batch).
 *
 * The order, for a row pair x (weights) and y (activations) of n bf16 values:
 *
 *   16 f32 lanes, zero. The elements are taken 32 at a time (a chunk; the last chunk padded
 *   with zeros), lane j of a chunk holding its elements 2j and 2j+1:
 *       lane_j = fma(x[2j+1], y[2j+1], lane_j)      (the odd element first, as vdpbf16ps does)
 *       lane_j = fma(x[2j],   y[2j],   lane_j)
 *   every input that is subnormal read as zero of its sign (DAZ) and every lane result that is
 *   subnormal written as zero of its sign (FTZ), rounding to nearest even. A product of two
 *   bf16 values is exact in f32, so each step rounds once.
 *   Then the lanes are summed by halves: h8_l = lane_l + lane_{l+8}, h4_l = h8_l + h8_{l+4},
 *   h2_l = h4_l + h4_{l+2}, s = h2_0 + h2_1.
 *
 * Why this order: one vdpbf16ps is 32 products into 16 lanes, so the tile reads each weight
 * vector once for several tokens without widening it. Without AVX512-BF16 the tiles compute
 * the same lanes with f32 FMAs on the odd and even halves of each 32-bit pair (a mask and a
 * shift), equal to this twin except where an input or a lane is subnormal (they do not flush).
 *
 * Pure functions; any thread.
 */
#pragma once
#include <stdint.h>

/* Matmuls of at least this many activation rows take the dp order (kernels.h vec_dot_batch);
 * fewer (decode) take the set's one-row bf16 dot. */
#ifndef HEARTH_BF16_DP_MIN_TOK
#define HEARTH_BF16_DP_MIN_TOK 4
#endif

/* s[0] = dot(x, y) in the order above; x and y are n bf16 values (any n >= 1). */
void hearth_vec_dot_bf16_dp_ref(int64_t n, float *s, const void *x, const void *y);
