/* deltanet.c - the delta rule row by row; see kernels/deltanet.h. */
#include "kernels/deltanet.h"

#include <math.h>
#include <string.h>

static float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

void hearth_deltanet_heads(const hearth_deltanet_args *a, int64_t h0, int64_t h1) {
    int64_t dk = a->k_dim, dv = a->v_dim, K = (int64_t)a->n_k * dk, V = (int64_t)a->n_v * dv;
    if (dv > HEARTH_DELTANET_MAX_DV) {
        hearth_deltanet_heads_ref(a, h0, h1);
        return;
    }
    int64_t C = 2 * K + V, conv_floats = C * (a->conv - 1);
    float qscale = 1.0f / sqrtf((float)dk);
    float mem[HEARTH_DELTANET_MAX_DV], y[HEARTH_DELTANET_MAX_DV]; /* per column: S^T k, then S^T q */
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
            for (int64_t j = 0; j < dv; j++) mem[j] = 0.0f, y[j] = 0.0f;
            for (int64_t i = 0; i < dk; i++) { /* decay, and S^T k */
                float *row = S + i * dv, ki = k[i] * kn;
                for (int64_t j = 0; j < dv; j++) {
                    row[j] *= decay;
                    mem[j] += row[j] * ki;
                }
            }
            for (int64_t j = 0; j < dv; j++) mem[j] = (v[j] - mem[j]) * beta; /* now delta */
            for (int64_t i = 0; i < dk; i++) { /* the update, and S^T q */
                float *row = S + i * dv, ki = k[i] * kn, qi = q[i] * qn * qscale;
                for (int64_t j = 0; j < dv; j++) {
                    row[j] += ki * mem[j];
                    y[j] += row[j] * qi;
                }
            }
            memcpy(a->out + t * V + h * dv, y, (size_t)dv * sizeof(float));
        }
    }
}
