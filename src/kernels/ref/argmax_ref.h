/*
 * argmax_ref.h - greedy sampling's argmax, the specification of its SIMD twins.
 *
 * The first index of the largest value: i moves the answer only when x[i] > x[answer], so ties
 * keep the earliest index, NaNs are never chosen (a NaN at 0 is kept, since nothing compares
 * greater than it), and n <= 0 gives 0. x: [n]. Any thread.
 */
#pragma once
#include <stdint.h>

int64_t hearth_argmax_ref(const float *x, int64_t n);
