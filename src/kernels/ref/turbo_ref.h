/*
 * turbo_ref.h - the turbo KV cache codec (backend/kv_type.h, the turbo types): the rotation and
 * the block quantizer, plain C, shared by every kernel set (the store runs this code whatever
 * the set; the attention kernels rotate their queries and outputs with it, so only their
 * dequantize-and-dot loops have SIMD twins).
 *
 * Rotation. Every HEARTH_KV_TURBO_ROT (64) consecutive elements of a head, x, become
 *   y = H (D x) / 8
 * with D = diag(s_0 .. s_63) the fixed signs s_i = hearth_turbo_sign(i) and H the 64 x 64
 * Sylvester-Hadamard matrix (entries +-1, applied as the fast Walsh-Hadamard transform, six
 * rounds of butterflies a + b, a - b in a fixed order). H / 8 is orthogonal and symmetric, so
 * the inverse is x = D (H y) / 8, and dot(rotate(q), rotate(k)) = dot(q, k) for the 64-element
 * pieces of a head (up to rounding): the keys need no inverse at all. The signs spread a
 * coordinate that stands out (a heavy channel) over the whole piece, so the rotated values of a
 * block are alike in size and a per-block scale fits them all. The signs come from a
 * splitmix64 stream of seed HEARTH_TURBO_SEED: s_i is the sign of bit 63 of splitmix64 output
 * i; the same signs for every layer and head.
 *
 * Quantizer. A block of 32 rotated values is B-bit codes q of 2^B levels times one scale s
 * (an f16): x = level_B(q) * s. For 2, 3 and 4 bits the levels are the Lloyd-Max quantizer of a
 * unit Gaussian (the values a rotation makes are near-Gaussian; MSE-optimal levels crowd
 * toward 0), for 5 and 8 bits they are uniform, level(q) = 2q + 1 - 2^B (s is the half-step).
 * Both are symmetric around 0. On Gaussian blocks the Lloyd-Max levels cut the relative RMS
 * error against uniform ones of the same size by 1% (2 bits), 7% (3 bits) and 10% (4 bits);
 * an asymmetric (offset) block would cost 2 more bytes for less than the next bit gives. The
 * scale is the one (rounded to f16) of s_f = amax / level(2^B - 1) * f, f = 1, 0.95, ... 0.5
 * with the least squared error over the block (the first minimum): f = 1 clips nothing, smaller
 * f trade a clipped outlier for finer levels. Each value takes the nearest level (the lower
 * one on a tie).
 *
 * Pure functions; any thread.
 */
#pragma once
#include <stdint.h>

#define HEARTH_TURBO_SEED 0x7475726230ull /* "turb0" */

/* +1.0f or -1.0f: the sign of element i (0 <= i < 64) of every rotation. */
float hearth_turbo_sign(int i);
/* x[0..n) rotated in place, each 64 elements on their own (n a multiple of 64). */
void hearth_turbo_rotate(float *x, int64_t n);
/* The inverse of hearth_turbo_rotate. */
void hearth_turbo_unrotate(float *x, int64_t n);
/* One row of width elements (a multiple of 64): rotated, then quantized to B-bit blocks
 * (bits 2, 3, 4, 5 or 8) into y (hearth_kv_row_bytes of the turbo type of B bits). */
void hearth_turbo_quantize_row(const float *x, void *y, int64_t width, int bits);
/* Level q of the B-bit codebook (the value of code q at scale 1). */
float hearth_turbo_level(int bits, int q);
/* The 2^B levels of a Lloyd-Max codebook (bits 2, 3, 4) ascending; NULL for the uniform ones. */
const float *hearth_turbo_codebook(int bits);
/* n elements (a multiple of 32) of B-bit blocks back to f32, still rotated. */
void hearth_turbo_dequant_ref(const void *x, float *y, int64_t n, int bits);
