/*
 * deltanet.h - the gated DeltaNet's delta rule on the CPU (kernels/ref/deltanet_ref.h is its
 * formula and its specification).
 *
 * The reference walks the state S [k_dim][v_dim] column by column (each column's update is
 * independent of the others), a stride of v_dim floats per step. This twin walks it row by row,
 * keeping each column's running sums in a small array, so the inner loops run along contiguous
 * rows and vectorize; every element sees the same operations in the same order (the column's
 * sums still add rows 0, 1, 2, ..), so the results equal the reference's bit for bit
 * (tests/kernels/test_deltanet_kernel.c). Heads wider than HEARTH_DELTANET_MAX_DV values take the
 * reference. Pure function of its arguments; any thread (disjoint head ranges may run at once).
 */
#pragma once
#include <stdint.h>

#include "kernels/ref/deltanet_ref.h"

enum { HEARTH_DELTANET_MAX_DV = 512 };

/* hearth_deltanet_heads_ref(a, h0, h1), the same bits. */
void hearth_deltanet_heads(const hearth_deltanet_args *a, int64_t h0, int64_t h1);
