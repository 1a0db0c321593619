/*
 * test_encoder_ops.c - the encoder's reference kernels (kernels/ref/encoder_ref.h) against the
 * same formulas in double precision: LayerNorm over odd widths with and without weight and
 * bias (and in place), the exact GELU over a range that covers both tails, and bidirectional
 * attention over odd sequence lengths and head sizes, with a check that every key is seen (a
 * key moved far away changes every query's output). The same bounds hold for each set's twin
 * (kernels/encoder_ops.h: the AVX2 and AVX-512 ones, polynomial exp and erf, the short-sequence
 * attention of AVX-512 up to 64 tokens and its fallback past them) on every set this CPU runs.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/encoder_ops.h"
#include "kernels/kernels.h"
#include "kernels/ref/encoder_ref.h"
#include "test.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)(rng >> 40) / (float)(1 << 24) * 4.0f - 2.0f;
}

static void check_layernorm(hearth_layernorm_fn ln, const char *name) {
    const int64_t dims[] = {1, 3, 17, 32, 384, 1001};
    for (size_t k = 0; k < sizeof dims / sizeof dims[0]; k++) {
        const int64_t d = dims[k], rows = 3;
        float *x = malloc((size_t)(rows * d) * sizeof *x), *y = malloc((size_t)(rows * d) * sizeof *y);
        float *w = malloc((size_t)d * sizeof *w), *b = malloc((size_t)d * sizeof *b);
        for (int64_t i = 0; i < rows * d; i++) x[i] = rnd() * 3 + 5; /* an offset the mean must remove */
        for (int64_t i = 0; i < d; i++) w[i] = rnd(), b[i] = rnd();
        for (int with = 0; with < 2; with++) {
            ln(x, with ? w : NULL, with ? b : NULL, y, rows, d, 1e-12f);
            double worst = 0;
            for (int64_t r = 0; r < rows; r++) {
                double m = 0, v = 0;
                for (int64_t i = 0; i < d; i++) m += x[r * d + i];
                m /= (double)d;
                for (int64_t i = 0; i < d; i++) v += (x[r * d + i] - m) * (x[r * d + i] - m);
                v /= (double)d;
                for (int64_t i = 0; i < d; i++) {
                    double want = (x[r * d + i] - m) / sqrt(v + 1e-12);
                    if (with) want = want * w[i] + b[i];
                    double e = fabs(want - y[r * d + i]);
                    if (e > worst) worst = e;
                }
            }
            if (!(worst < 2e-5)) fprintf(stderr, "  %s: worst layernorm error %.3g (dim %lld)\n", name, worst,
                                         (long long)d);
            CHECK(worst < 2e-5);
        }
        /* in place gives the same bits */
        ln(x, w, b, y, rows, d, 1e-5f);
        ln(x, w, b, x, rows, d, 1e-5f);
        CHECK(memcmp(x, y, (size_t)(rows * d) * sizeof *x) == 0);
        free(x), free(y), free(w), free(b);
    }
}

TEST(layernorm_matches_double) {
    check_layernorm(hearth_layernorm_ref, "ref");
    for (int isa = 0; isa < HEARTH_ISA_COUNT; isa++) {
        hearth_layernorm_fn ln = hearth_kernels_layernorm_isa(isa);
        if (ln) check_layernorm(ln, hearth_isa_name((hearth_isa)isa));
    }
}

static void check_gelu(hearth_gelu_fn gelu, const char *name) {
    enum { N = 4003 };
    static float x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = -12.0f + 24.0f * (float)i / (N - 1);
    x[0] = -100.0f, x[1] = 100.0f, x[2] = 0.0f, x[3] = -1e-30f;
    memcpy(y, x, sizeof x);
    gelu(y, N); /* N is odd: the SIMD twins' scalar tail runs too */
    double worst = 0;
    for (int i = 0; i < N; i++) {
        double want = 0.5 * x[i] * (1.0 + erf(x[i] / sqrt(2.0)));
        double e = fabs(want - y[i]) / (1.0 + fabs(x[i]));
        if (!(e <= worst)) worst = e; /* NaN included */
    }
    if (!(worst < 3e-7)) fprintf(stderr, "  %s: worst gelu error %.3g\n", name, worst);
    CHECK(worst < 3e-7);
    CHECK(y[0] == 0.0f || fabs(y[0]) < 1e-20); /* the far left tail is 0, not NaN */
    CHECK_NEAR(y[1], 100.0, 1e-5);
    CHECK(y[2] == 0.0f);
    /* erf, not tanh: at x = -3 the two differ by about 4e-4 */
    float t[9] = {-3, -3, -3, -3, -3, -3, -3, -3, -3};
    gelu(t, 9);
    for (int i = 0; i < 9; i++) CHECK_NEAR(t[i], -0.00404969, 2e-7);
}

TEST(gelu_erf_matches_double) {
    check_gelu(hearth_gelu_erf_ref, "ref");
    for (int isa = 0; isa < HEARTH_ISA_COUNT; isa++) {
        hearth_gelu_fn g = hearth_kernels_gelu_erf_isa(isa);
        if (g) check_gelu(g, hearth_isa_name((hearth_isa)isa));
    }
}

static void attn_double(const float *q, const float *k, const float *v, int64_t ld, double *out, int64_t n, int nh,
                        int hd, double scale) {
    double *s = malloc((size_t)n * sizeof *s);
    for (int h = 0; h < nh; h++)
        for (int64_t t = 0; t < n; t++) {
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < n; j++) {
                double d = 0;
                for (int c = 0; c < hd; c++) d += (double)q[t * ld + h * hd + c] * k[j * ld + h * hd + c];
                s[j] = d * scale;
                if (s[j] > mx) mx = s[j];
            }
            for (int64_t j = 0; j < n; j++) sum += s[j] = exp(s[j] - mx);
            for (int c = 0; c < hd; c++) {
                double o = 0;
                for (int64_t j = 0; j < n; j++) o += s[j] / sum * v[j * ld + h * hd + c];
                out[t * nh * hd + h * hd + c] = o;
            }
        }
    free(s);
}

static void check_attn(hearth_attn_full_fn attn) {
    const int64_t lens[] = {1, 2, 7, 8, 9, 16, 17, 33, 64, 65, 130};
    const int heads[][2] = {{1, 8}, {3, 5}, {12, 32}, {2, 64}, {1, 128}, {2, 16}, {1, 48}, {1, 144}};
    for (size_t a = 0; a < sizeof lens / sizeof lens[0]; a++)
        for (size_t b = 0; b < sizeof heads / sizeof heads[0]; b++) {
            const int64_t n = lens[a];
            const int nh = heads[b][0], hd = heads[b][1], w = nh * hd;
            const int64_t ld = 3 * w + 5; /* q, k, v side by side, plus padding */
            float *qkv = malloc((size_t)(n * ld) * sizeof *qkv), *out = malloc((size_t)(n * w) * sizeof *out);
            double *want = malloc((size_t)(n * w) * sizeof *want);
            float *scores = malloc((size_t)n * sizeof *scores);
            for (int64_t i = 0; i < n * ld; i++) qkv[i] = rnd();
            const float scale = 1.0f / sqrtf((float)hd);
            attn(qkv, qkv + w, qkv + 2 * w, ld, out, w, n, nh, hd, scale, scores);
            attn_double(qkv, qkv + w, qkv + 2 * w, ld, want, n, nh, hd, scale);
            double worst = 0;
            for (int64_t i = 0; i < n * w; i++) {
                double e = fabs(want[i] - out[i]);
                if (e > worst) worst = e;
            }
            CHECK(worst < 1e-5);
            if (n > 1) {
                /* bidirectional: the last key's value reaches the first query */
                float before = out[0];
                for (int c = 0; c < hd; c++) qkv[(n - 1) * ld + 2 * w + c] += 100.0f;
                attn(qkv, qkv + w, qkv + 2 * w, ld, out, w, n, nh, hd, scale, scores);
                CHECK(out[0] != before);
            }
            free(qkv), free(out), free(want), free(scores);
        }
}

TEST(attn_full_matches_double) {
    check_attn(hearth_attn_full_ref);
    for (int isa = 0; isa < HEARTH_ISA_COUNT; isa++) {
        hearth_attn_full_fn a = hearth_kernels_attn_full_isa(isa);
        if (a) check_attn(a);
    }
}

int main(int argc, char **argv) { return test_main(argc, argv); }
