/* mlx_ref.c - reference kernels of the MLX affine types; see mlx_ref.h and tensor/quant.h. */
#include "kernels/ref/mlx_ref.h"

#include <math.h>
#include <string.h>

#include "tensor/quant.h"

static void to_float(const uint8_t *x, float *y, int64_t n, int bits, int g) {
    size_t bsz = HEARTH_MLX_BLOCK_HDR + (size_t)(g * bits / 8);
    for (int64_t b = 0; b < n / g; b++, x += bsz) {
        float sc, bi;
        memcpy(&sc, x, 4);
        memcpy(&bi, x + 4, 4);
        for (int64_t e = 0; e < g; e++) y[b * g + e] = sc * (float)hearth_mlx_q(x + 8, bits, e) + bi;
    }
}

static void from_float(const float *x, uint8_t *y, int64_t n, int bits, int g) {
    size_t bsz = HEARTH_MLX_BLOCK_HDR + (size_t)(g * bits / 8);
    float n_bins = (float)((1 << bits) - 1);
    for (int64_t b = 0; b < n / g; b++, y += bsz, x += g) {
        float mn = x[0], mx = x[0];
        for (int e = 1; e < g; e++) {
            mn = fminf(mn, x[e]);
            mx = fmaxf(mx, x[e]);
        }
        float sc = (mx - mn) / n_bins, bi = mn;
        if (sc == 0) sc = 1e-8f;
        memcpy(y, &sc, 4);
        memcpy(y + 4, &bi, 4);
        memset(y + 8, 0, (size_t)(g * bits / 8));
        for (int e = 0; e < g; e++) {
            float qf = roundf((x[e] - bi) / sc);
            int q = qf < 0 ? 0 : qf > n_bins ? (int)n_bins : (int)qf;
            if (bits == 4) y[8 + e / 2] |= (uint8_t)(q << ((e & 1) * 4));
            else y[8 + e] = (uint8_t)q;
        }
    }
}

static void dot_f32(int64_t n, float *s, const uint8_t *x, const float *y, int bits, int g) {
    size_t bsz = HEARTH_MLX_BLOCK_HDR + (size_t)(g * bits / 8);
    double sum[4] = {0.0, 0.0, 0.0, 0.0};
    for (int64_t b = 0; b < n / g; b++, x += bsz) {
        float sc, bi;
        memcpy(&sc, x, 4);
        memcpy(&bi, x + 4, 4);
        for (int64_t e = 0; e < g; e++) {
            float w = sc * (float)hearth_mlx_q(x + 8, bits, e) + bi;
            sum[e % 4] += (double)w * (double)y[b * g + e];
        }
    }
    *s = (float)(((sum[0] + sum[1]) + sum[2]) + sum[3]);
}

static void dot(int64_t n, float *s, const uint8_t *x, const float *y, int bits, int g) {
    size_t bsz = HEARTH_MLX_BLOCK_HDR + (size_t)(g * bits / 8);
    float acc = 0;
    for (int64_t b = 0; b < n / g; b++, x += bsz, y += g) {
        float sc, bi, sqx = 0, sx = 0;
        memcpy(&sc, x, 4);
        memcpy(&bi, x + 4, 4);
        for (int64_t e = 0; e < g; e++) {
            sqx += (float)hearth_mlx_q(x + 8, bits, e) * y[e];
            sx += y[e];
        }
        acc += sc * sqx + bi * sx;
    }
    *s = acc;
}

#define HEARTH_MLX_DEF(t, bits, g)                                                              \
    void hearth_##t##_to_float_ref(const void *x, float *y, int64_t n) { to_float(x, y, n, bits, g); } \
    void hearth_##t##_from_float_ref(const float *x, void *y, int64_t n) { from_float(x, y, n, bits, g); } \
    void hearth_vec_dot_##t##_f32_ref(int64_t n, float *s, const void *x, const void *y) {      \
        dot_f32(n, s, x, y, bits, g);                                                           \
    }                                                                                           \
    void hearth_vec_dot_##t##_ref(int64_t n, float *s, const void *x, const void *y) { dot(n, s, x, y, bits, g); }
HEARTH_MLX_DEF(mlx4_g32, 4, 32)
HEARTH_MLX_DEF(mlx4_g64, 4, 64)
HEARTH_MLX_DEF(mlx8_g32, 8, 32)
HEARTH_MLX_DEF(mlx8_g64, 8, 64)
