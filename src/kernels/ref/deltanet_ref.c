/* deltanet_ref.c - the gated DeltaNet core, plain loops; see deltanet_ref.h. */
#include "kernels/ref/deltanet_ref.h"

#include <math.h>
#include <string.h>

static float silu(float x) { return x / (1.0f + expf(-x)); }

/* torch.nn.functional.softplus (beta 1, threshold 20) */
static float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

void hearth_deltanet_conv_ref(const hearth_deltanet_args *a, int64_t c0, int64_t c1) {
    int64_t C = 2 * (int64_t)a->n_k * a->k_dim + (int64_t)a->n_v * a->v_dim, W = a->conv - 1;
    for (int64_t t = 0; t < a->n_tok; t++) {
        float *slot = a->state + (int64_t)a->seq[t] * a->state_floats;
        float *x = a->qkv + t * C;
        for (int64_t c = c0; c < c1; c++) {
            float *win = slot + c * W;
            if (a->pos[t] == 0) memset(win, 0, (size_t)W * sizeof(float));
            const float *w = a->conv_w + c * a->conv;
            float in = x[c], sum = 0.0f;
            for (int64_t j = 0; j < W; j++) sum += w[j] * win[j];
            sum += w[W] * in;
            for (int64_t j = 0; j + 1 < W; j++) win[j] = win[j + 1];
            win[W - 1] = in;
            x[c] = silu(sum);
        }
    }
}

void hearth_deltanet_heads_ref(const hearth_deltanet_args *a, int64_t h0, int64_t h1) {
    int64_t dk = a->k_dim, dv = a->v_dim, K = (int64_t)a->n_k * dk, V = (int64_t)a->n_v * dv;
    int64_t C = 2 * K + V, conv_floats = C * (a->conv - 1);
    float qscale = 1.0f / sqrtf((float)dk);
    for (int64_t t = 0; t < a->n_tok; t++) {
        const float *x = a->qkv + t * C;
        for (int64_t h = h0; h < h1; h++) {
            float *S = a->state + (int64_t)a->seq[t] * a->state_floats + conv_floats + h * dk * dv;
            if (a->pos[t] == 0) memset(S, 0, (size_t)(dk * dv) * sizeof(float));
            int64_t kh = hearth_deltanet_key_head(a, h);
            const float *q = x + kh * dk, *k = x + K + kh * dk, *v = x + 2 * K + h * dv;
            float qq = 0.0f, kk = 0.0f;
            for (int64_t i = 0; i < dk; i++) qq += q[i] * q[i], kk += k[i] * k[i];
            float qn = 1.0f / sqrtf(qq + 1e-6f), kn = 1.0f / sqrtf(kk + 1e-6f);
            float beta = 1.0f / (1.0f + expf(-a->b[t * a->n_v + h]));
            float decay = expf(a->a_neg[h] * softplus(a->a[t * a->n_v + h] + a->dt_bias[h]));
            float *o = a->out + t * V + h * dv;
            for (int64_t j = 0; j < dv; j++) {
                float mem = 0.0f;
                for (int64_t i = 0; i < dk; i++) {
                    S[i * dv + j] *= decay;
                    mem += S[i * dv + j] * (k[i] * kn);
                }
                float delta = (v[j] - mem) * beta, y = 0.0f;
                for (int64_t i = 0; i < dk; i++) {
                    S[i * dv + j] += (k[i] * kn) * delta;
                    y += S[i * dv + j] * (q[i] * qn * qscale);
                }
                o[j] = y;
            }
        }
    }
}

void hearth_deltanet_ref(const hearth_deltanet_args *a) {
    hearth_deltanet_conv_ref(a, 0, 2 * (int64_t)a->n_k * a->k_dim + (int64_t)a->n_v * a->v_dim);
    hearth_deltanet_heads_ref(a, 0, a->n_v);
}
