/*
 * encoder_ref.c - the reference encoder kernels (encoder_ref.h says what each computes).
 */
#include "kernels/ref/encoder_ref.h"

#include <math.h>

void hearth_layernorm_ref(const float *x, const float *w, const float *b, float *y, int64_t n_rows, int64_t dim,
                          float eps) {
    for (int64_t r = 0; r < n_rows; r++) {
        const float *xr = x + r * dim;
        float       *yr = y + r * dim;
        double sum = 0;
        for (int64_t i = 0; i < dim; i++) sum += xr[i];
        const double mean = sum / (double)dim;
        double var = 0;
        for (int64_t i = 0; i < dim; i++) {
            const double d = (double)xr[i] - mean;
            var += d * d;
        }
        var /= (double)dim;
        const float inv = (float)(1.0 / sqrt(var + (double)eps));
        const float m = (float)mean;
        for (int64_t i = 0; i < dim; i++) {
            float v = (xr[i] - m) * inv;
            if (w) v *= w[i];
            if (b) v += b[i];
            yr[i] = v;
        }
    }
}

void hearth_gelu_erf_ref(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}

void hearth_attn_full_ref(const float *q, const float *k, const float *v, int64_t ld, float *out, int64_t ldo,
                          int64_t n_tok, int32_t n_head, int32_t head_dim, float scale, float *scores) {
    for (int32_t h = 0; h < n_head; h++) {
        const int64_t off = (int64_t)h * head_dim;
        for (int64_t t = 0; t < n_tok; t++) {
            const float *qt = q + t * ld + off;
            float mx = -INFINITY;
            for (int64_t j = 0; j < n_tok; j++) {
                const float *kj = k + j * ld + off;
                float s = 0;
                for (int32_t d = 0; d < head_dim; d++) s += qt[d] * kj[d];
                s *= scale;
                scores[j] = s;
                if (s > mx) mx = s;
            }
            float sum = 0;
            for (int64_t j = 0; j < n_tok; j++) {
                scores[j] = expf(scores[j] - mx);
                sum += scores[j];
            }
            const float inv = 1.0f / sum;
            float *ot = out + t * ldo + off;
            for (int32_t d = 0; d < head_dim; d++) ot[d] = 0;
            for (int64_t j = 0; j < n_tok; j++) {
                const float  p  = scores[j] * inv;
                const float *vj = v + j * ld + off;
                for (int32_t d = 0; d < head_dim; d++) ot[d] += p * vj[d];
            }
        }
    }
}

void hearth_pool_ref(const float *x, int64_t n, int64_t dim, int kind, float *out) {
    for (int64_t i = 0; i < dim; i++) {
        if (kind == 1) out[i] = x[i];
        else if (kind == 2) out[i] = x[(n - 1) * dim + i];
        else {
            double sum = 0;
            for (int64_t t = 0; t < n; t++) sum += x[t * dim + i];
            out[i] = (float)(sum / (double)n);
        }
    }
}
