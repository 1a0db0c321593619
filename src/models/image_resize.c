/*
 * image_resize.c - PIL's bilinear resample of an 8-bit RGB image, bit for bit (see vision.h).
 *
 * Vision processors (transformers' *ImageProcessorPil) resize with Pillow, and a model was
 * trained on what Pillow gives, so this is Pillow's algorithm (libImaging/Resample.c) written
 * out: for each output column x the input columns within `support` of its centre
 * c = (x + 0.5) * scale get weights tri((i - c + 0.5) / fs), tri(d) = max(0, 1 - |d|), where
 * scale = in / out, fs = max(scale, 1) (shrinking widens the filter to average every input
 * pixel) and support = fs; the weights are normalized to sum 1, then turned into 22-bit
 * fixed-point integers (rounded half away from zero). A pass sums pixel * weight in 32-bit
 * integers from a rounding bias of 2^21 and keeps the top bits, clamped to 0..255. The
 * horizontal pass runs first (only over the rows the vertical pass reads) and the vertical one
 * reads its 8-bit result; a side whose size is unchanged is not resampled at all.
 */
#include "models/vision.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { PRECISION_BITS = 32 - 8 - 2 };

typedef struct {
    int32_t  ksize;   /* weights per output pixel (the longest window) */
    int32_t *bounds;  /* [out][2]: the first input pixel, the number of them */
    int32_t *kk;      /* [out][ksize] fixed-point weights */
} coeffs;

static double tri(double x) {
    if (x < 0.0) x = -x;
    return x < 1.0 ? 1.0 - x : 0.0;
}

/* Pillow's precompute_coeffs + normalize_coeffs_8bpc for in_size -> out_size. */
static bool coeffs_make(int32_t in_size, int32_t out_size, coeffs *c) {
    double scale = (double)in_size / out_size, fs = scale < 1.0 ? 1.0 : scale, support = 1.0 * fs;
    c->ksize = (int32_t)ceil(support) * 2 + 1;
    c->bounds = malloc((size_t)out_size * 2 * sizeof *c->bounds);
    c->kk = malloc((size_t)out_size * (size_t)c->ksize * sizeof *c->kk);
    double *k = malloc((size_t)c->ksize * sizeof *k);
    if (!c->bounds || !c->kk || !k) {
        free(k);
        return false;
    }
    for (int32_t xx = 0; xx < out_size; xx++) {
        double center = (xx + 0.5) * scale, ww = 0.0, ss = 1.0 / fs;
        int32_t xmin = (int32_t)(center - support + 0.5), xmax = (int32_t)(center + support + 0.5);
        if (xmin < 0) xmin = 0;
        if (xmax > in_size) xmax = in_size;
        xmax -= xmin;
        int32_t x = 0;
        for (; x < xmax; x++) {
            k[x] = tri((x + xmin - center + 0.5) * ss);
            ww += k[x];
        }
        for (x = 0; x < xmax; x++)
            if (ww != 0.0) k[x] /= ww;
        for (; x < c->ksize; x++) k[x] = 0.0;
        for (x = 0; x < c->ksize; x++)
            c->kk[(int64_t)xx * c->ksize + x] =
                (int32_t)(k[x] < 0 ? -0.5 + k[x] * (1 << PRECISION_BITS) : 0.5 + k[x] * (1 << PRECISION_BITS));
        c->bounds[2 * xx] = xmin;
        c->bounds[2 * xx + 1] = xmax;
    }
    free(k);
    return true;
}

static void coeffs_free(coeffs *c) {
    free(c->bounds);
    free(c->kk);
}

static uint8_t clip8(int32_t ss) {
    int32_t v = ss >> PRECISION_BITS; /* arithmetic shift, as Pillow's (its table covers negatives) */
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* dst [n_rows][dw][3] from src rows row0.. of width sw. */
static void pass_h(const uint8_t *src, int32_t sw, int32_t row0, int32_t n_rows, uint8_t *dst, int32_t dw,
                   const coeffs *c) {
    for (int32_t y = 0; y < n_rows; y++) {
        const uint8_t *in = src + (int64_t)(y + row0) * sw * 3;
        for (int32_t xx = 0; xx < dw; xx++) {
            int32_t xmin = c->bounds[2 * xx], xmax = c->bounds[2 * xx + 1];
            const int32_t *k = c->kk + (int64_t)xx * c->ksize;
            for (int ch = 0; ch < 3; ch++) {
                int32_t ss = 1 << (PRECISION_BITS - 1);
                for (int32_t x = 0; x < xmax; x++) ss += in[(x + xmin) * 3 + ch] * k[x];
                dst[((int64_t)y * dw + xx) * 3 + ch] = clip8(ss);
            }
        }
    }
}

/* dst [dh][w][3] from src [..][w][3], whose row 0 is input row `shift` of the bounds. */
static void pass_v(const uint8_t *src, int32_t w, int32_t shift, uint8_t *dst, int32_t dh, const coeffs *c) {
    for (int32_t yy = 0; yy < dh; yy++) {
        int32_t ymin = c->bounds[2 * yy] - shift, ymax = c->bounds[2 * yy + 1];
        const int32_t *k = c->kk + (int64_t)yy * c->ksize;
        for (int32_t x = 0; x < w * 3; x++) {
            int32_t ss = 1 << (PRECISION_BITS - 1);
            for (int32_t y = 0; y < ymax; y++) ss += src[(int64_t)(y + ymin) * w * 3 + x] * k[y];
            dst[(int64_t)yy * w * 3 + x] = clip8(ss);
        }
    }
}

hearth_status hearth_image_resize_bilinear(const uint8_t *src, int32_t sw, int32_t sh, uint8_t *dst, int32_t dw,
                                           int32_t dh) {
    if (sw < 1 || sh < 1 || dw < 1 || dh < 1) return HEARTH_E_INVALID;
    bool need_h = sw != dw, need_v = sh != dh;
    if (!need_h && !need_v) {
        memcpy(dst, src, (size_t)sw * (size_t)sh * 3);
        return HEARTH_OK;
    }
    coeffs ch = {0}, cv = {0};
    uint8_t *tmp = NULL;
    hearth_status st = HEARTH_E_NOMEM;
    if ((need_h && !coeffs_make(sw, dw, &ch)) || !coeffs_make(sh, dh, &cv)) goto out;
    /* the rows the vertical pass reads (all of them when it does not run) */
    int32_t first = need_v ? cv.bounds[0] : 0;
    int32_t last = need_v ? cv.bounds[2 * dh - 2] + cv.bounds[2 * dh - 1] : sh;
    if (need_h && !need_v) {
        pass_h(src, sw, 0, sh, dst, dw, &ch);
    } else if (need_h) {
        tmp = malloc((size_t)(last - first) * (size_t)dw * 3);
        if (!tmp) goto out;
        pass_h(src, sw, first, last - first, tmp, dw, &ch);
        pass_v(tmp, dw, first, dst, dh, &cv);
    } else {
        pass_v(src, sw, 0, dst, dh, &cv);
    }
    st = HEARTH_OK;
out:
    free(tmp);
    coeffs_free(&ch);
    coeffs_free(&cv);
    return st;
}
