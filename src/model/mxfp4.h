/*
 * mxfp4.h - the MXFP4 expert weights of gpt-oss checkpoints (OCP Microscaling FP4), read at
 * load into bf16, which holds every MXFP4 value exactly (hearth has no MXFP4 kernels).
 *
 * Layout as the released safetensors store a matrix of `rows` outputs over `n` inputs:
 *
 *   <name>_blocks  uint8 [..][rows][n / 32][16]   two e2m1 codes a byte: the low nibble is
 *                                                  element 2j of the block, the high one 2j + 1
 *   <name>_scales  uint8 [..][rows][n / 32]       e8m0: the block's factor is 2^(s - 127)
 *
 *   e2m1 code c: (c & 8 ? -1 : 1) * {0, 0.5, 1, 1.5, 2, 3, 4, 6}[c & 7]
 *
 * GGUF (GGML type 39, as llama.cpp writes it) packs the same values otherwise: blocks of 32
 * elements in 17 bytes, the e8m0 byte first, then 16 bytes whose low nibbles are elements
 * 0..15 and high nibbles elements 16..31 (codes of doubled values, 2^(s - 128): the same
 * numbers).
 *
 * Pure functions; any thread.
 */
#pragma once
#include <stdint.h>

/* One row of n inputs (n % 32 == 0): blocks [n / 32][16], scales [n / 32] -> out [n] bf16. */
void hearth_mxfp4_row_to_bf16(const uint8_t *blocks, const uint8_t *scales, int64_t n, uint16_t *out);
/* One GGUF MXFP4 row of n inputs (n % 32 == 0): n / 32 blocks of 17 bytes -> out [n] bf16. */
void hearth_mxfp4_ggml_row_to_bf16(const uint8_t *row, int64_t n, uint16_t *out);
