/*
 * lora_x86.h - the x86 row kernel of the segmented LoRA update (lora_avx2.c), equal bit for bit
 * to hearth_lora_row_ref; kernels/cpu/lora.c picks it for the AVX2 and AVX-512 sets.
 */
#pragma once
#include "kernels/ref/lora_ref.h"

void hearth_lora_row_avx2(const void *a, const void *b, bool half, int32_t r, float scale, const float *x,
                          int64_t n_in, float *y, int64_t n_out);
