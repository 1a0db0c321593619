/*
 * gemv.cuh - the matrix-vector kernels' launch interface, shared by gemv.cu (the kernels) and
 * matmul.cu (which picks them for steps of up to HC_GEMV_MAX_TOK tokens). Included by .cu
 * files only.
 *
 * One launch serves up to HC_MV_MAX weights that share their input (q, k and v; gate and up):
 * their rows are numbered one after another and every row lands in its own weight's output.
 */
#pragma once
#include "backend/cuda/common.cuh"

#define HC_MV_MAX 4

struct hc_mv {
    const uint8_t *w[HC_MV_MAX]; /* device rows, each weight row_bytes apart */
    float         *y[HC_MV_MAX]; /* y[i][t * ldy[i] + o] */
    int64_t        ldy[HC_MV_MAX];
    int64_t        end[HC_MV_MAX]; /* rows of weights 0..i together */
    int            n;              /* weights, 1..HC_MV_MAX */
    size_t         row_bytes;
    int64_t        n_in;
};

/* Can the fast kernels take weights of this type at this layout (else the caller falls back)?
 * q8: the Q4_0/Q4_1/Q8_0 kernels over 8-bit activations. */
bool hc_mv_fast_ok(int type, const hc_mv *m, bool q8);
/* 16-bit and f32 weights against f32 activations x [n_tok][n_in] */
void hc_mv_plain(int type, const hc_mv *m, const float *x, int n_tok, cudaStream_t s);
/* The same for two weights of equal rows (gate, up) with the gated activation applied as the rows
 * finish: y[0] = act(x gate^T) * (x up^T) (glu.cu's kinds); y[1] is not written. Only where
 * hc_mv_glu_ok (the persistent layout, 16-byte rows). */
bool hc_mv_glu_ok(int type, const hc_mv *m);
bool hc_mv_glu_layout(void); /* the layout that can: HC_MV_PERSIST */
void hc_mv_plain_glu(int type, const hc_mv *m, const float *x, int n_tok, int kind, cudaStream_t s);
/* Q4_0 / Q4_1 / Q8_0 weights against activations quantized by hc_mv_quantize (xq, xd), or, with
 * xf (f32 activations; only where hc_mv_q8_quantizes(n_tok)), quantized inside the kernel */
void hc_mv_q8(int type, const hc_mv *m, const int8_t *xq, const float *xd, const float *xf, int n_tok,
              cudaStream_t s);
bool hc_mv_q8_quantizes(int n_tok);
/* x [n_tok][n_in] -> 8-bit blocks of 32 (xq) with scale and f16(scale * sum) per block (xd) */
void hc_mv_quantize(const float *x, int64_t n_blocks, int8_t *xq, float *xd, cudaStream_t s);
