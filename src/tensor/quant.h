/*
 * quant.h - the quantized block formats, bit-exact with GGUF's on-disk layouts (ggml-common.h).
 *
 * A quantized row is an array of blocks; each block stores QK elements with one or two scales.
 * Multi-byte fields are little-endian (x86 and GGUF agree, so a block is read in place from
 * mmap'ed weights). "half" is an IEEE binary16 bit pattern, converted with hearth_fp16_to_fp32.
 * Every struct has only 1- and 2-byte members (Q8_K: 4-byte float first), so there is no
 * padding; the _Static_asserts below pin the sizes GGUF uses.
 *
 * Element numbering: element e of a block is the e-th value of the row segment the block
 * covers. The drawings show bytes left to right; "lo"/"hi" are the low/high nibble of a byte.
 * The formulas are the dequantization rule (kernels/ref/quant_ref.c implements them).
 *
 * Immutable definitions; any thread.
 */
#pragma once
#include <stdint.h>
#include <string.h>

#define HEARTH_QK4_0 32
#define HEARTH_QK4_1 32
#define HEARTH_QK5_0 32
#define HEARTH_QK5_1 32
#define HEARTH_QK8_0 32
#define HEARTH_QK8_1 32
#define HEARTH_QK_K  256  /* super-block of the K-quants */
#define HEARTH_K_SCALE_SIZE 12

/*
 * Q4_0: 32 elements in 18 bytes (4.5 bits per weight). Symmetric, offset 8.
 *   | d: half | qs[0] ... qs[15] |
 *     2 B       16 B: qs[j] lo = element j, qs[j] hi = element j + 16
 *   y[j] = d * ((qs[j] & 15) - 8),  y[j+16] = d * ((qs[j] >> 4) - 8)
 */
typedef struct {
    uint16_t d;                    /* half: scale */
    uint8_t  qs[HEARTH_QK4_0 / 2]; /* nibbles */
} hearth_block_q4_0;

/*
 * Q4_1: 32 elements in 20 bytes. Affine: scale and minimum.
 *   | d: half | m: half | qs[16] (as Q4_0) |
 *   y[j] = d * (qs[j] & 15) + m,  y[j+16] = d * (qs[j] >> 4) + m
 */
typedef struct {
    uint16_t d;                    /* half: scale */
    uint16_t m;                    /* half: minimum (added) */
    uint8_t  qs[HEARTH_QK4_1 / 2];
} hearth_block_q4_1;

/*
 * Q5_0: 32 elements in 22 bytes. The fifth bit of element e is bit e of qh (read as a
 * little-endian uint32).
 *   | d: half | qh[4] | qs[16] (as Q4_0) |
 *   q[e] = (nibble(e) | bit(qh, e) << 4),  y[e] = d * (q[e] - 16)
 */
typedef struct {
    uint16_t d;
    uint8_t  qh[4];                /* high bits, element e -> bit e */
    uint8_t  qs[HEARTH_QK5_0 / 2];
} hearth_block_q5_0;

/*
 * Q5_1: 32 elements in 24 bytes. Q5_0's bits with an affine minimum.
 *   | d: half | m: half | qh[4] | qs[16] |
 *   y[e] = d * q[e] + m
 */
typedef struct {
    uint16_t d;
    uint16_t m;
    uint8_t  qh[4];
    uint8_t  qs[HEARTH_QK5_1 / 2];
} hearth_block_q5_1;

/*
 * Q8_0: 32 elements in 34 bytes. Weights and the activations dotted with Q4_0/Q5_0/Q8_0.
 *   | d: half | qs[0] ... qs[31]: int8 |
 *   y[j] = d * qs[j]
 */
typedef struct {
    uint16_t d;
    int8_t   qs[HEARTH_QK8_0];
} hearth_block_q8_0;

/*
 * Q8_1: 32 elements in 36 bytes. Activations only (dotted with Q4_1/Q5_1): s carries the block
 * sum so the weights' minimum m costs one multiply per block.
 *   | d: half | s: half = d * sum(qs) | qs[32]: int8 |
 *   y[j] = d * qs[j]
 */
typedef struct {
    uint16_t d;
    uint16_t s;
    int8_t   qs[HEARTH_QK8_1];
} hearth_block_q8_1;

/*
 * Q4_K: 256 elements in 144 bytes. 8 sub-blocks of 32, each with a 6-bit scale sc[i] and a
 * 6-bit minimum mn[i], themselves scaled by the halves d and dmin.
 *   | d: half | dmin: half | scales[12] | qs[128] |
 *   scales (6-bit fields packed in 12 bytes), for i < 4:
 *     sc[i]   = scales[i] & 63             mn[i]   = scales[i+4] & 63
 *     sc[i+4] = (scales[i+8] & 15) | (scales[i] >> 6) << 4
 *     mn[i+4] = (scales[i+8] >> 4) | (scales[i+4] >> 6) << 4
 *   qs: four 32-byte groups; group g holds elements 64g..64g+31 in its low nibbles (sub-block
 *   2g) and 64g+32..64g+63 in its high nibbles (sub-block 2g+1).
 *   y[e] = d * sc[e/32] * q[e] - dmin * mn[e/32]
 */
typedef struct {
    uint16_t d;
    uint16_t dmin;
    uint8_t  scales[HEARTH_K_SCALE_SIZE];
    uint8_t  qs[HEARTH_QK_K / 2];
} hearth_block_q4_K;

/*
 * Q5_K: 256 elements in 176 bytes. Q4_K plus a fifth bit per element.
 *   | d: half | dmin: half | scales[12] (as Q4_K) | qh[32] | qs[128] (as Q4_K) |
 *   fifth bit of element e = 64g + 32h + l (h in {0,1}, l < 32): bit 2g+h of qh[l]
 *   y[e] = d * sc[e/32] * (q[e] | bit << 4) - dmin * mn[e/32]
 */
typedef struct {
    uint16_t d;
    uint16_t dmin;
    uint8_t  scales[HEARTH_K_SCALE_SIZE];
    uint8_t  qh[HEARTH_QK_K / 8];
    uint8_t  qs[HEARTH_QK_K / 2];
} hearth_block_q5_K;

/*
 * Q6_K: 256 elements in 210 bytes. 16 sub-blocks of 16 with int8 scales, 6-bit values.
 *   | ql[128]: low 4 bits | qh[64]: high 2 bits | scales[16]: int8 | d: half |
 *   Two halves of 128 elements; half n uses ql[64n..], qh[32n..]. Within a half, for l < 32:
 *     element  l      : ql[l]      lo | (qh[l] >> 0 & 3) << 4
 *     element  l + 32 : ql[l + 32] lo | (qh[l] >> 2 & 3) << 4
 *     element  l + 64 : ql[l]      hi | (qh[l] >> 4 & 3) << 4
 *     element  l + 96 : ql[l + 32] hi | (qh[l] >> 6 & 3) << 4
 *   y[e] = d * scales[e/16] * (q[e] - 32)
 */
typedef struct {
    uint8_t  ql[HEARTH_QK_K / 2];
    uint8_t  qh[HEARTH_QK_K / 4];
    int8_t   scales[HEARTH_QK_K / 16];
    uint16_t d;
} hearth_block_q6_K;

/*
 * Q8_K: 256 elements in 292 bytes. Activations only (dotted with the K-quants). The scale is
 * a float, and bsums[i] = sum of qs[16i..16i+15] lets the K-quant dots fold minimums and
 * offsets in per 16 elements.
 *   | d: float | qs[256]: int8 | bsums[16]: int16 |
 *   y[j] = d * qs[j]
 */
typedef struct {
    float   d;
    int8_t  qs[HEARTH_QK_K];
    int16_t bsums[HEARTH_QK_K / 16];
} hearth_block_q8_K;

/*
 * MLX affine (mlx.core.quantize, mode "affine"): a checkpoint stores, per linear layer, a packed
 * uint32 weight [out][in * bits / 32], scales and biases [out][in / G] (f16, bf16 or f32);
 * element e of a row sits at bits (e % (32 / bits)) * bits of word e / (32 / bits), so as
 * little-endian bytes a 4-bit row is byte j = element 2j (lo) | element 2j+1 (hi), an 8-bit row
 * byte j = element j. The loader repacks each row into blocks of G elements, scale and bias
 * widened to f32 (exact from every source dtype):
 *   | scale: f32 | bias: f32 | q[G * bits / 8] (the checkpoint's bytes, as above) |
 *   y[e] = scale * q[e] + bias,  q unsigned
 * Block sizes: mlx4_g32 24 B, mlx4_g64 40 B, mlx8_g32 40 B, mlx8_g64 72 B. Blocks are
 * byte-aligned only: read scale and bias with memcpy.
 */
#define HEARTH_MLX_BLOCK_HDR 8

_Static_assert(sizeof(hearth_block_q4_0) == 18, "q4_0 block size");
_Static_assert(sizeof(hearth_block_q4_1) == 20, "q4_1 block size");
_Static_assert(sizeof(hearth_block_q5_0) == 22, "q5_0 block size");
_Static_assert(sizeof(hearth_block_q5_1) == 24, "q5_1 block size");
_Static_assert(sizeof(hearth_block_q8_0) == 34, "q8_0 block size");
_Static_assert(sizeof(hearth_block_q8_1) == 36, "q8_1 block size");
_Static_assert(sizeof(hearth_block_q4_K) == 144, "q4_K block size");
_Static_assert(sizeof(hearth_block_q5_K) == 176, "q5_K block size");
_Static_assert(sizeof(hearth_block_q6_K) == 210, "q6_K block size");
_Static_assert(sizeof(hearth_block_q8_K) == 292, "q8_K block size");

/* The packed 6-bit scale and minimum of sub-block i (0..7) of a Q4_K/Q5_K block. */
static inline void hearth_k_scale_min(const uint8_t *scales, int i, uint8_t *sc, uint8_t *mn) {
    if (i < 4) {
        *sc = scales[i] & 63;
        *mn = scales[i + 4] & 63;
    } else {
        *sc = (uint8_t)((scales[i + 4] & 15) | (scales[i - 4] >> 6) << 4);
        *mn = (uint8_t)((scales[i + 4] >> 4) | (scales[i] >> 6) << 4);
    }
}

/* All 8 scales and minimums of a Q4_K/Q5_K block at once (same result as hearth_k_scale_min
 * for i = 0..7), four bytes per 32-bit operation: the SIMD kernels' per-block unpack. */
static inline void hearth_k_scales_unpack(const uint8_t *scales, uint8_t sc[8], uint8_t mn[8]) {
    uint32_t s0, s1, s2, w[4];
    memcpy(&s0, scales, 4);
    memcpy(&s1, scales + 4, 4);
    memcpy(&s2, scales + 8, 4);
    w[0] = s0 & 0x3f3f3f3fu;                                            /* sc[0..3] */
    w[1] = (s2 & 0x0f0f0f0fu) | ((s0 >> 6) & 0x03030303u) << 4;         /* sc[4..7] */
    w[2] = s1 & 0x3f3f3f3fu;                                            /* mn[0..3] */
    w[3] = ((s2 >> 4) & 0x0f0f0f0fu) | ((s1 >> 6) & 0x03030303u) << 4;  /* mn[4..7] */
    memcpy(sc, w, 8);
    memcpy(mn, w + 2, 8);
}
