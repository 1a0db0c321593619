/*
 * lora.h - the segmented LoRA update on the CPU pool (kernels/ref/lora_ref.h is its formula and
 * its specification).
 *
 * The rows of all segments are numbered one after another and thread ith of nth takes rows
 * ith, ith + nth, ...: each row is one call of a row kernel equal to the reference row bit for
 * bit, so the result is the reference's whatever the thread count and kernel set. A row's cost is r (n_in + n_out) multiply-
 * adds, a few percent of its base matmul for the ranks adapters use (8..64), so rows are the
 * unit of work (a decode step has as many rows as sequences). Each row is the active kernel
 * set's row kernel (AVX2 and AVX-512: kernels/cpu/x86/lora_avx2.c; else the reference row).
 * Pure function of its arguments and (ith, nth); any thread.
 */
#pragma once
#include <stdint.h>

#include "kernels/ref/lora_ref.h"

/* Thread ith's share of hearth_lora_ref(segs, n_seg, x, n_in, y, ldy, n_out). */
void hearth_lora_rows(const hearth_lora_seg *segs, int n_seg, const float *x, int64_t n_in, float *y, int64_t ldy,
                      int64_t n_out, int ith, int nth);
