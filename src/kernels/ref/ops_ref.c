/* ops_ref.c - reference f32 ops; see ops_ref.h for the formulas. */
#include "kernels/ref/ops_ref.h"
#include "base/assert.h"
#include "tensor/dtype.h"

#include <math.h>
#include <pthread.h>

void hearth_rmsnorm_ref(const float *x, const float *w, float *y, int64_t n, float eps) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; i++) ss += (double)(x[i] * x[i]);
    float scale = 1.0f / sqrtf((float)(ss / (double)n) + eps);
    for (int64_t i = 0; i < n; i++) y[i] = w ? x[i] * scale * w[i] : x[i] * scale;
}

void hearth_rope_inv_freq(float *inv_freq, int64_t n_rot, float base, float scale) {
    for (int64_t i = 0; i < n_rot / 2; i++)
        inv_freq[i] = 1.0f / powf(base, (float)(2 * i) / (float)n_rot) / scale;
}

void hearth_rope_cs_ref(int64_t n_rot, int32_t pos, const hearth_rope_params *rp, float *c, float *s) {
    int64_t half = n_rot / 2;
    float theta_it = (float)pos; /* llama.cpp recipe */
    for (int64_t i = 0; i < half; i++) {
        float theta;
        if (rp->inv_freq) {
            theta = (float)pos * rp->inv_freq[i];
        } else {
            theta = rp->freq_scale * theta_it;
            theta_it *= rp->theta_scale;
        }
        c[i] = cosf(theta);
        s[i] = sinf(theta);
        if (rp->mscale != 0 && rp->mscale != 1) {
            c[i] *= rp->mscale;
            s[i] *= rp->mscale;
        }
    }
}

void hearth_rope_apply_ref(float *x, int64_t n_rot, const float *c, const float *s, const hearth_rope_params *rp) {
    int64_t half = n_rot / 2;
    for (int64_t i = 0; i < half; i++) {
        int64_t a = rp->neox ? i : 2 * i, b = rp->neox ? i + half : 2 * i + 1;
        float x0 = x[a], x1 = x[b];
        if (rp->inv_freq) {
            x[a] = x0 * c[i] - x1 * s[i];
            x[b] = x0 * s[i] + x1 * c[i];
        } else { /* llama.cpp's x86 build contracts each rotation into one FMA */
            x[a] = fmaf(x0, c[i], -(x1 * s[i]));
            x[b] = fmaf(x0, s[i], x1 * c[i]);
        }
    }
}

void hearth_rope_ref(float *x, int64_t n_rot, int32_t pos, const hearth_rope_params *rp) {
    float c[HEARTH_ROPE_MAX_HALF], s[HEARTH_ROPE_MAX_HALF];
    HEARTH_ASSERT(n_rot / 2 <= HEARTH_ROPE_MAX_HALF);
    hearth_rope_cs_ref(n_rot, pos, rp, c, s);
    hearth_rope_apply_ref(x, n_rot, c, s, rp);
}

void hearth_softmax_ref(float *x, int64_t n) {
    float max = -INFINITY;
    for (int64_t i = 0; i < n; i++) if (x[i] > max) max = x[i];
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    float inv = (float)(1.0 / sum);
    for (int64_t i = 0; i < n; i++) x[i] *= inv;
}

void hearth_swiglu_ref(float *g, const float *u, int64_t n) {
    for (int64_t i = 0; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

void hearth_sigmoid_gate_ref(float *g, const float *u, int64_t n) {
    for (int64_t i = 0; i < n; i++) g[i] = u[i] * (1.0f / (1.0f + expf(-g[i])));
}

void hearth_swiglu_oai_ref(float *g, const float *u, int64_t n) {
    const float alpha = 1.702f, limit = 7.0f;
    for (int64_t i = 0; i < n; i++) {
        float x = g[i] > limit ? limit : g[i];
        float up = u[i] < -limit ? -limit : u[i] > limit ? limit : u[i];
        float glu = x * (1.0f / (1.0f + expf(-(x * alpha))));
        g[i] = (up + 1.0f) * glu;
    }
}

void hearth_geglu_ref(float *g, const float *u, int64_t n) {
    const float c = 0.7978845608028654f; /* sqrt(2/pi) */
    for (int64_t i = 0; i < n; i++) {
        float x = g[i];
        g[i] = 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x))) * u[i];
    }
}

/* tanh GELU as llama.cpp's x86 build fills its table: 1 + 0.044715 x x is one fused multiply-add */
static float gelu_tanh(float x) {
    const float c = 0.7978845608028654f; /* sqrt(2/pi) */
    return 0.5f * x * (1.0f + tanhf(c * x * fmaf(x, 0.044715f * x, 1.0f)));
}

/* gelu_tanh over every f16 bit pattern, rounded to f16: an immutable table filled once. */
static uint16_t       gelu_f16_table[(1 << 16) + 2]; /* + 2: a 4-byte read at the last entry stays inside */
static pthread_once_t gelu_f16_once = PTHREAD_ONCE_INIT;

static void gelu_f16_fill(void) {
    for (uint32_t h = 0; h < (1u << 16); h++)
        gelu_f16_table[h] = hearth_fp32_to_fp16(gelu_tanh(hearth_fp16_to_fp32((uint16_t)h)));
}

const uint16_t *hearth_gelu_f16_table(void) {
    pthread_once(&gelu_f16_once, gelu_f16_fill);
    return gelu_f16_table;
}

void hearth_geglu_f16_ref(float *g, const float *u, int64_t n) {
    pthread_once(&gelu_f16_once, gelu_f16_fill);
    for (int64_t i = 0; i < n; i++) {
        float x = g[i];
        if (x <= -10.0f) g[i] = 0.0f;
        else if (x >= 10.0f) g[i] = x * u[i];
        else g[i] = hearth_fp16_to_fp32(gelu_f16_table[hearth_fp32_to_fp16(x)]) * u[i];
    }
}

static float kv_at(const void *base, int64_t idx, bool f16) {
    return f16 ? hearth_fp16_to_fp32(((const uint16_t *)base)[idx]) : ((const float *)base)[idx];
}

void hearth_attn_head_ref(const float *q, const void *k, const void *v, int64_t kv_stride,
                          bool kv_f16, int64_t head_dim, int64_t j0, int64_t j1, float scale,
                          float softcap, float *scores, float *out) {
    float qr[HEARTH_ATTN_MAX_HEAD_DIM]; /* the query as the dot sees it */
    for (int64_t d = 0; d < head_dim; d++)
        qr[d] = kv_f16 ? hearth_fp16_to_fp32(hearth_fp32_to_fp16(q[d])) : q[d];
    float max = -INFINITY;
    for (int64_t j = j0; j < j1; j++) {
        float s = 0.0f;
        for (int64_t d = 0; d < head_dim; d++) s += qr[d] * kv_at(k, j * kv_stride + d, kv_f16);
        s *= scale;
        if (softcap > 0.0f) s = softcap * tanhf(s / softcap);
        scores[j] = s;
        if (s > max) max = s;
    }
    double sum = 0.0;
    for (int64_t j = j0; j < j1; j++) {
        scores[j] = expf(scores[j] - max);
        sum += scores[j];
    }
    float inv = (float)(1.0 / sum);
    for (int64_t d = 0; d < head_dim; d++) out[d] = 0.0f;
    for (int64_t j = j0; j < j1; j++) {
        float p = scores[j] * inv;
        if (kv_f16) p = hearth_fp16_to_fp32(hearth_fp32_to_fp16(p));
        for (int64_t d = 0; d < head_dim; d++) out[d] += p * kv_at(v, j * kv_stride + d, kv_f16);
    }
}

void hearth_hadamard_ref(float *x, int64_t n_rows, int64_t n) {
    const float scale = 1.0f / sqrtf((float)n);
    for (int64_t r = 0; r < n_rows; r++) {
        float *y = x + r * n;
        for (int64_t i = 0; i < n; i++) y[i] *= scale;
        for (int64_t len = 1; len < n; len <<= 1)
            for (int64_t i = 0; i < n; i += 2 * len)
                for (int64_t j = i; j < i + len; j++) {
                    const float u = y[j], v = y[j + len];
                    y[j] = u + v;
                    y[j + len] = u - v;
                }
    }
}
