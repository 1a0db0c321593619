/*
 * bf16_x86.h - bf16 tiles in the vdpbf16ps order (kernels/ref/bf16_dp_ref.h): nr weight rows
 * (a multiple of 4) x nt tokens (1..HEARTH_TILE_NT) in one call, for the many-token matmuls of
 * bf16 weights (prefill; kernels.h's vec_dot_batch_tile).
 *
 * The one-row bf16 dot widens both operands (a shift each) before every FMA, so a prefill
 * reads and widens each weight vector once per token. A tile loads each 32-value weight vector
 * of 4 rows once and dots it with up to 4 tokens' vectors before moving on: 16 (row, token)
 * accumulators of 16 lanes, one vdpbf16ps per pair and chunk of 32 values (AVX512-BF16), or two
 * FMAs on the pair's odd and even halves (the weights split once for the 4 tokens). A token
 * tile of 8 runs as two groups of 4; the last chunk of a row is read with zero-filling masked
 * loads. Each result equals hearth_vec_dot_bf16_dp_ref bit for bit (the FMA tiles: when no
 * input or lane is subnormal, which they do not flush).
 *
 *   hearth_tile_bf16_dp_avx512bf16  vdpbf16ps; only where CPUID reports AVX512-BF16, and only
 *                                   when HEARTH_BF16_DPBF16=1 asks (dispatch.c): on Sapphire
 *                                   Rapids it ran 1.2x slower than the FMA tile (one thread, 64
 *                                   tokens, the 1B bf16 shape's matmuls: 1.53 s against 1.28 s)
 *   hearth_tile_bf16_dp_avx512      AVX-512F FMAs: the avx512 set's bf16 tile
 *   hearth_tile_bf16_dp_avx2        AVX2 FMAs, the 16 lanes as two 8-float halves, 2 rows x 2
 *                                   tokens at a time (16 registers)
 *
 * Call them through the kernel tables (dispatch.c picks by CPU features); any thread.
 */
#pragma once
#include <stddef.h>
#include <stdint.h>

void hearth_tile_bf16_dp_avx512bf16(int64_t n, float *s, int64_t bs, const void *x, size_t bx, int nr, const void *y,
                                    size_t by, int nt);
void hearth_tile_bf16_dp_avx512(int64_t n, float *s, int64_t bs, const void *x, size_t bx, int nr, const void *y,
                                size_t by, int nt);
void hearth_tile_bf16_dp_avx2(int64_t n, float *s, int64_t bs, const void *x, size_t bx, int nr, const void *y,
                              size_t by, int nt);
