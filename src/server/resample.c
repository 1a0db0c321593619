/*
 * resample.c - polyphase FIR resampling matching scipy.signal.resample_poly (see resample.h).
 *
 * The filter is scipy.signal.firwin(2 half + 1, 1/M, window=("kaiser", 5.0)) times up: a
 * windowed sinc low-pass at the lower of the two Nyquist rates. Only the taps that meet a
 * nonzero input sample are summed: for output m, input k contributes when
 * 0 <= m down - k up + half <= 2 half. Sums run in double; the filter is built in double.
 */
#include "server/resample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static long gcd(long a, long b) {
    while (b) {
        long t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The modified Bessel function I0, by its power series (converges for every x; beta = 5 here). */
static double bessel_i0(double x) {
    double sum = 1, term = 1, q = x * x / 4;
    for (int k = 1; k < 200; k++) {
        term *= q / ((double)k * k);
        sum += term;
        if (term < sum * 1e-17) break;
    }
    return sum;
}

size_t hearth_resample_len(size_t n, int in_hz, int out_hz) {
    long g = gcd(in_hz, out_hz), up = out_hz / g, down = in_hz / g;
    return (n * (size_t)up + (size_t)down - 1) / (size_t)down;
}

hearth_status hearth_resample(const float *x, size_t n, int in_hz, int out_hz, float *y) {
    if (in_hz < 1 || out_hz < 1 || in_hz > 1000000 || out_hz > 1000000) return HEARTH_E_INVALID;
    long g = gcd(in_hz, out_hz), up = out_hz / g, down = in_hz / g;
    if (up == 1 && down == 1) {
        if (n) memcpy(y, x, n * sizeof *x);
        return HEARTH_OK;
    }
    long    mx = up > down ? up : down, half = 10 * mx, nt = 2 * half + 1;
    double *h = malloc((size_t)nt * sizeof *h);
    if (!h) return HEARTH_E_NOMEM;
    const double beta = 5.0, i0b = bessel_i0(beta), fc = 1.0 / (double)mx;
    double       sum = 0;
    for (long i = 0; i < nt; i++) {
        double m = (double)(i - half), t = fc * m;
        double s = t == 0 ? 1.0 : sin(M_PI * t) / (M_PI * t);
        double r = 2.0 * (double)i / (double)(nt - 1) - 1.0;
        double w = bessel_i0(beta * sqrt(fmax(0.0, 1.0 - r * r))) / i0b;
        h[i] = fc * s * w;
        sum += h[i];
    }
    for (long i = 0; i < nt; i++) h[i] = h[i] / sum * (double)up;
    size_t n_out = hearth_resample_len(n, in_hz, out_hz);
    for (size_t m = 0; m < n_out; m++) {
        long   t = (long)m * down; /* the output's position on the upsampled grid */
        long   k0 = t - half <= 0 ? 0 : (t - half + up - 1) / up, k1 = (t + half) / up;
        double acc = 0;
        if (k1 >= (long)n) k1 = (long)n - 1;
        for (long k = k0; k <= k1; k++) acc += (double)x[k] * h[t - k * up + half];
        y[m] = (float)acc;
    }
    free(h);
    return HEARTH_OK;
}
