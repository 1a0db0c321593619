/*
 * skinny.cuh - the tensor-core product of skinny.cu for steps of a few dozen tokens (16-bit
 * weights, activations already rounded to the weights' type), used by matmul.cu in place of
 * cuBLAS where hc_skinny_ok. Included by .cu files only.
 */
#pragma once
#include "backend/cuda/cuda_ops.h"

/* up to this many weights (of one type and width, sharing their input) in one launch */
#define HC_SKINNY_MAX_W 4

bool   hc_skinny_ok(int type, const void *const *w, int n, size_t row_bytes, const int64_t *n_out, int64_t n_in,
                    int64_t n_tok);
/* bytes of scratch hc_skinny needs for these weights (0: it writes y directly) */
size_t hc_skinny_scratch(const int64_t *n_out, int n, int64_t n_in, int64_t n_tok);
/* y[i][n][o] (rows ldy[i] apart) = sum_k w[i][o][k] x16[n][k] for each of the n weights, x16 the
 * n_tok x n_in activations in the 16-bit type the weights meet (bf16 for BF16, else f16) */
void   hc_skinny(int type, const void *const *w, int n, size_t row_bytes, const int64_t *n_out, int64_t n_in,
                 const void *x16, int64_t n_tok, float *const *y, const int64_t *ldy, float *scratch, void *stream);
