/*
 * lora_ref.h - the segmented low-rank update of LoRA adapters (S-LoRA / Punica's "SGMV" shape),
 * the specification of every faster twin (kernels/cpu/lora.c, the CUDA backend).
 *
 * A step's rows are split into segments of consecutive rows that share one adapter matrix
 * pair; rows outside every segment are left alone. For each segment s and row t in it:
 *
 *   h[k]  = sum_i A_s[k][i] x[t][i]             k < r_s      (x A^T: the down projection)
 *   y[t][o] += scale_s * sum_k B_s[o][k] h[k]   o < n_out    (h B^T: the up projection)
 *
 * The base matmul has already written y; this adds each row's own adapter on top, so rows with
 * different adapters (and rows with none) share one base matmul. A segment's A and B are both
 * f32 or both IEEE halves (`half`: half the bytes a step reads, each value widened to float
 * exactly). Each of the two sums is a float dot product in 8 lanes, the order an 8-wide vector
 * kernel keeps (kernels/cpu/x86/lora_avx2.c), so that it can equal this bit for bit:
 *
 *   acc[l] += w[i + l] * v[i + l]   i = 0, 8, 16, ..; l < 8; a product rounded, then added
 *                                   (no fused multiply-add); lanes past the end add 0
 *   sum     = ((acc0 + acc1) + (acc2 + acc3)) + ((acc4 + acc5) + (acc6 + acc7))
 *
 * Pure functions; any thread.
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>

enum { HEARTH_LORA_MAX_RANK = 256 }; /* the largest rank any kernel takes (adapters above refused) */

typedef struct {
    int64_t      t0, n;  /* rows [t0, t0 + n) of x and y */
    int32_t      r;      /* rank, 1..HEARTH_LORA_MAX_RANK */
    float        scale;  /* alpha / r (PEFT), alpha / sqrt(r) (rsLoRA), mlx-lm's scale */
    bool         half;   /* a and b hold f16 (uint16_t) values, else f32 */
    const void  *a;      /* [r][n_in] */
    const void  *b;      /* [n_out][r] */
} hearth_lora_seg;

/* One row: y[o] += scale * (B (A x))[o];  x: [n_in], y: [n_out], a: [r][n_in], b: [n_out][r]
 * (f16 when half, else f32). */
void hearth_lora_row_ref(const void *a, const void *b, bool half, int32_t r, float scale, const float *x, int64_t n_in,
                         float *y, int64_t n_out);
typedef void (*hearth_lora_row_fn)(const void *a, const void *b, bool half, int32_t r, float scale, const float *x,
                                   int64_t n_in, float *y, int64_t n_out);
/* Every segment's rows: x: [..][n_in] (row stride n_in), y: [..][ldy] (the first n_out of each
 * row updated). */
void hearth_lora_ref(const hearth_lora_seg *segs, int n_seg, const float *x, int64_t n_in, float *y, int64_t ldy,
                     int64_t n_out);
