/*
 * tile_x86.h - block-dot tiles: nr weight rows (4 at a time) against up to HEARTH_TILE_NT
 * activation rows in one call (tile_avx2.c, tile_avx512.c), for hearth_matmul's decode (one
 * token) and prefill.
 *
 * A tile computes s[t * bs + r] = dot(x + r * bx, y + t * by) for r < nr and t < nt
 * (1..HEARTH_TILE_NT), and each of those nr * nt results equals the type's one-row dot of the
 * same set (llama.cpp's x86 order, llamacpp_order_ref.h) bit for bit: every (row, token) pair keeps
 * its own 8 float lanes (or its own scalar chains), its own FMA chain block after block and
 * its own hsum8, in registers or vector lanes of its own. The speed comes from the pairs being
 * independent (the FMA latency of one chain no longer bounds the loop), from unpacking each
 * weight block once for nt tokens and loading each activation block once for 4 rows, from
 * doing the scale products of 4 rows in one vector multiply, and (AVX-512 q8_0 / q4_0 / q5_0)
 * from preparing the activations once for all the call's 4-row groups.
 *
 * Lane layouts: a block's 16 nibble bytes give its low-nibble elements 0..15 and its
 * high-nibble elements 16..31; the reference's lane l < 4 sums elements 4l..4l+3 (low part)
 * and lane l + 4 elements 16+4l..16+4l+3 (high part). A row's 8 lanes are either consecutive
 * (q8_0, and q4_0 / q5_0 on AVX-512: the nibbles rearranged into element order) or split into
 * a "lo" and a "hi" accumulator of 4 lanes (q4_1, and AVX2's nibble tiles), where the hsum8
 * tree starts with lo_l + hi_l, its own first level.
 * The K-quant tiles (q4_K in both its orders, q6_K) work a row at a time inside a
 * super-block: its values and scales are unpacked once and dotted with each of the nt tokens.
 * q6_K's pairs keep 8 lanes each; q4_K's two scalar chains per pair run as the lanes of one
 * 4-float vector per token (the 4 rows), its exact integer sums gathered into that lane order
 * by the reduction tree (AVX-512's gemm order: 4 tokens x 4 rows per 512-bit vector, the
 * nibbles and activations laid out by sub-block pair, tile_avx512.c), and so does q6_K's one
 * chain in llama.cpp's tiled order (the _tiled tiles, for matmuls of
 * HEARTH_Q6_K_TILED_MIN_TOK tokens or more).
 *
 * Call them only through the kernel tables (dispatch.c); any thread.
 */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

void hearth_tile_q4_0_q8_0_avx2(int64_t n, float *s, int64_t bs, const void *x, size_t bx, int nr, const void *y, size_t by,
                                int nt);
void hearth_tile_q4_1_q8_1_avx2(int64_t n, float *s, int64_t bs, const void *x, size_t bx, int nr, const void *y, size_t by,
                                int nt);
void hearth_tile_q5_0_q8_0_avx2(int64_t n, float *s, int64_t bs, const void *x, size_t bx, int nr, const void *y, size_t by,
                                int nt);
void hearth_tile_q8_0_q8_0_avx2(int64_t n, float *s, int64_t bs, const void *x, size_t bx, int nr, const void *y, size_t by,
                                int nt);
void hearth_tile_q4_0_q8_0_avx512(int64_t n, float *s, int64_t bs, const void *x, size_t bx, int nr, const void *y, size_t by,
                                  int nt);
void hearth_tile_q4_1_q8_1_avx512(int64_t n, float *s, int64_t bs, const void *x, size_t bx, int nr, const void *y, size_t by,
                                  int nt);
void hearth_tile_q5_0_q8_0_avx512(int64_t n, float *s, int64_t bs, const void *x, size_t bx, int nr, const void *y,
                                  size_t by, int nt);
void hearth_tile_q8_0_q8_0_avx512(int64_t n, float *s, int64_t bs, const void *x, size_t bx, int nr, const void *y, size_t by,
                                  int nt);
/* q4_K in its two orders (llamacpp_order_ref.h): the gemv one, and the gemm one of kernels.h's vec_dot_gemm */
void hearth_tile_q4_K_q8_K_avx2(int64_t n, float *s, int64_t bs, const void *x, size_t bx, int nr, const void *y, size_t by,
                                int nt);
void hearth_tile_q6_K_q8_K_avx2(int64_t n, float *s, int64_t bs, const void *x, size_t bx, int nr, const void *y, size_t by,
                                int nt);
void hearth_tile_q4_K_q8_K_gemm_avx2(int64_t n, float *s, int64_t bs, const void *x, size_t bx, int nr, const void *y,
                                     size_t by, int nt);
void hearth_tile_q4_K_q8_K_avx512(int64_t n, float *s, int64_t bs, const void *x, size_t bx, int nr, const void *y, size_t by,
                                  int nt);
void hearth_tile_q6_K_q8_K_avx512(int64_t n, float *s, int64_t bs, const void *x, size_t bx, int nr, const void *y, size_t by,
                                  int nt);
void hearth_tile_q4_K_q8_K_gemm_avx512(int64_t n, float *s, int64_t bs, const void *x, size_t bx, int nr, const void *y,
                                       size_t by, int nt);
/* q6_K in llama.cpp's tiled order (kernels.h's vec_dot_batch): hearth_vec_dot_q6_K_q8_K_x86_tiled_ref per pair */
void hearth_tile_q6_K_q8_K_tiled_avx2(int64_t n, float *s, int64_t bs, const void *x, size_t bx, int nr, const void *y,
                                      size_t by, int nt);
void hearth_tile_q6_K_q8_K_tiled_avx512(int64_t n, float *s, int64_t bs, const void *x, size_t bx, int nr,
                                        const void *y, size_t by, int nt);

/* Rows are short (a few hundred bytes), so 4 of them read side by side are 4 streams too short
 * for the hardware prefetchers to learn (without this, tiles ran slower than one row at a time
 * in decode, where the weights come from DRAM). A tile therefore prefetches the memory
 * HEARTH_TILE_PF_AHEAD bytes (rounded up to whole tiles) past its own 4 rows, which the next
 * calls read, a slice per block. Prefetches past the end of the matrix are harmless hints. */
#ifndef HEARTH_TILE_PF_AHEAD
#define HEARTH_TILE_PF_AHEAD 6144
#endif
#ifndef HEARTH_TILE_PF_LOC
#define HEARTH_TILE_PF_LOC 3
#endif
static inline void hearth_tile_prefetch(const uint8_t *x, size_t bx, int64_t b, int64_t nb) {
    size_t tile = 4 * bx, step = tile / (size_t)nb;
    /* an integer, not a pointer: GCC drops prefetches of pointers it can prove run past the object */
    uintptr_t p = (uintptr_t)x + tile * ((HEARTH_TILE_PF_AHEAD + tile - 1) / tile) + (size_t)b * step;
    for (size_t k = 0; k < step; k += 64) __builtin_prefetch((const void *)(p + k), 0, HEARTH_TILE_PF_LOC);
}

/* The first 4 bytes of a block in each of 4 rows (the f16 scale, and the f16 minimum or the next
 * bytes), as one 128-bit vector. */
static inline uint32_t hearth_tile_u32(const uint8_t *p) {
    uint32_t v;
    __builtin_memcpy(&v, p, 4);
    return v;
}
