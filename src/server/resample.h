/*
 * resample.h - rational-ratio resampling of a mono f32 signal by a polyphase FIR filter, the
 * same filter and alignment as scipy.signal.resample_poly (its default Kaiser window,
 * beta 5, and zero padding), so scipy is the reference the tests compare against.
 *
 *   ratio up/down (reduced by their gcd), M = max(up, down), half = 10 M
 *   h[i] = up * w[i] * sinc((i - half) / M) / M / sum   (i = 0 .. 2 half; w: Kaiser(5),
 *          symmetric; sum normalises the filter to unit gain at DC before the * up)
 *   y[m] = sum_k x[k] h[m down - k up + half]           (x is zero outside [0, n))
 *   n_out = ceil(n up / down)
 *
 * Thread rule: pure functions; any thread.
 */
#pragma once
#include <stddef.h>

#include "base/status.h"

/* The output length for n input samples at rate in_hz resampled to out_hz. */
size_t        hearth_resample_len(size_t n, int in_hz, int out_hz);
/* Resample x[0..n) from in_hz to out_hz into y (hearth_resample_len(n, ...) samples). Rates in
 * [1, 10^6]. HEARTH_E_NOMEM when the filter cannot be allocated, HEARTH_E_INVALID for rates out
 * of range. Equal rates copy. */
hearth_status hearth_resample(const float *x, size_t n, int in_hz, int out_hz, float *y);
