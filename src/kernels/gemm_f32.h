/*
 * gemm_f32.h - y = x W^T in f32 over a packed weight, for the encoder (models/bert.c), where
 * every forward multiplies hundreds of token rows by each weight.
 *
 * Packing (once, at load): W [n_out][n_in] becomes panels of HEARTH_GEMM_NR output rows, each
 * panel k-major: packed[p][k][j] = W[p * NR + j][k] (rows past n_out are zero). A micro-kernel
 * then keeps a block of MR tokens x NR outputs in registers and runs k from 0 to n_in: per k one
 * load of the panel's NR weights, MR broadcasts of x, MR * NR / 8 FMAs (AVX2: 6 x 16 in 12
 * registers), instead of one dot product per (output, token) pair.
 *
 * The arithmetic is the reference's (kernels/ref/gemm_f32_ref.c): every output is one fused
 * multiply-add chain in float over k = 0 .. n_in - 1, y = fma(x[k], w[k], y) from y = 0, so
 * the AVX2 kernel equals it bit for bit (each lane is one such chain) whatever the blocking,
 * the thread count or the batch: a row's result never depends on the other rows.
 *
 * Sets: the AVX2 micro-kernel (6 x 16) on the avx2 set, the AVX-512 one (12 x 32: two panels
 * side by side) on avx512, the reference loop on the ref and scalar sets. Any thread; pool may
 * be NULL.
 */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "base/thread.h"

#define HEARTH_GEMM_NR 16 /* outputs per panel */

/* Floats of the packed form of an [n_out][n_in] weight. */
size_t hearth_gemm_f32_packed_floats(int64_t n_out, int64_t n_in);
/* Pack row-major w [n_out][n_in] (row stride ldw floats) into packed
 * (hearth_gemm_f32_packed_floats floats, caller-owned). */
void hearth_gemm_f32_pack(const float *w, int64_t ldw, int64_t n_out, int64_t n_in, float *packed);
/* y[t][o] = sum_k x[t][k] w[o][k] for t < n_tok, o < n_out: x [n_tok][n_in] (row stride ldx),
 * y row stride ldy >= n_out; packed from hearth_gemm_f32_pack. On pool's threads (NULL: this
 * one) with the active set's kernel. */
void hearth_gemm_f32(hearth_pool *pool, const float *packed, int64_t n_out, int64_t n_in, const float *x, int64_t ldx,
                     int64_t n_tok, float *y, int64_t ldy);
/* The reference: the same results, plain loops, one thread. */
void hearth_gemm_f32_ref(const float *packed, int64_t n_out, int64_t n_in, const float *x, int64_t ldx, int64_t n_tok,
                         float *y, int64_t ldy);
