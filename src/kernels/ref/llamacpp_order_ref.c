/* llamacpp_order_ref.c - llama.cpp's x86 operation order in plain C; see llamacpp_order_ref.h. */
#include "kernels/ref/llamacpp_order_ref.h"
#include "tensor/dtype.h"
#include "tensor/quant.h"

#include <math.h>
#include <string.h>

/* One block of 32: q[i] = round_half_even(x[i] * (127 / amax)); returns d = amax / 127. */
static float q8_block_x86(const float *x, int8_t *q, int *sum) {
    float amax = 0.0f;
    for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[i]));
    float d = amax / 127.0f, id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int s = 0;
    for (int i = 0; i < 32; i++) {
        int v = (int)nearbyintf(x[i] * id); /* default rounding mode: half to even */
        q[i] = (int8_t)v;
        s += v;
    }
    if (sum) *sum = s;
    return d;
}

void hearth_q8_0_from_float_x86_ref(const float *x, void *vy, int64_t n) {
    hearth_block_q8_0 *y = vy;
    for (int64_t b = 0; b < n / HEARTH_QK8_0; b++)
        y[b].d = hearth_fp32_to_fp16(q8_block_x86(x + b * HEARTH_QK8_0, y[b].qs, NULL));
}

void hearth_q8_1_from_float_x86_ref(const float *x, void *vy, int64_t n) {
    hearth_block_q8_1 *y = vy;
    for (int64_t b = 0; b < n / HEARTH_QK8_1; b++) {
        int sum;
        float d = q8_block_x86(x + b * HEARTH_QK8_1, y[b].qs, &sum);
        y[b].d = hearth_fp32_to_fp16(d);
        y[b].s = hearth_fp32_to_fp16(d * (float)sum);
    }
}

float hearth_hsum8_x86_ref(const float a[8]) {
    float r0 = a[4] + a[0], r1 = a[5] + a[1], r2 = a[6] + a[2], r3 = a[7] + a[3];
    r0 = r0 + r2;
    r1 = r1 + r3;
    return r0 + r1;
}

/* acc[l] = fma(d, sum of w[4l..4l+3] * a[4l..4l+3], acc[l]) for one block of 32 */
static void block_fma(float acc[8], float d, const int8_t w[32], const int8_t a[32]) {
    for (int l = 0; l < 8; l++) {
        int p = 0;
        for (int k = 4 * l; k < 4 * l + 4; k++) p += w[k] * a[k];
        acc[l] = fmaf(d, (float)p, acc[l]);
    }
}

/* Element e of a 4-bit block: low nibbles are elements 0..15, high nibbles 16..31. */
static void nibbles(const uint8_t qs[16], int8_t w[32], int offset) {
    for (int j = 0; j < 16; j++) {
        w[j] = (int8_t)((qs[j] & 15) - offset);
        w[j + 16] = (int8_t)((qs[j] >> 4) - offset);
    }
}

void hearth_vec_dot_q4_0_q8_0_x86_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q4_0 *x = vx;
    const hearth_block_q8_0 *y = vy;
    float acc[8] = {0};
    int8_t w[32];
    for (int64_t b = 0; b < n / HEARTH_QK4_0; b++) {
        nibbles(x[b].qs, w, 8);
        block_fma(acc, hearth_fp16_to_fp32(x[b].d) * hearth_fp16_to_fp32(y[b].d), w, y[b].qs);
    }
    *s = hearth_hsum8_x86_ref(acc);
}

void hearth_vec_dot_q4_1_q8_1_x86_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q4_1 *x = vx;
    const hearth_block_q8_1 *y = vy;
    float acc[8] = {0}, summs = 0.0f;
    int8_t w[32];
    for (int64_t b = 0; b < n / HEARTH_QK4_1; b++) {
        summs = fmaf(hearth_fp16_to_fp32(x[b].m), hearth_fp16_to_fp32(y[b].s), summs);
        nibbles(x[b].qs, w, 0);
        block_fma(acc, hearth_fp16_to_fp32(x[b].d) * hearth_fp16_to_fp32(y[b].d), w, y[b].qs);
    }
    *s = hearth_hsum8_x86_ref(acc) + summs;
}

void hearth_vec_dot_q5_0_q8_0_x86_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q5_0 *x = vx;
    const hearth_block_q8_0 *y = vy;
    float acc[8] = {0};
    int8_t w[32];
    for (int64_t b = 0; b < n / HEARTH_QK5_0; b++) {
        uint32_t qh;
        memcpy(&qh, x[b].qh, 4);
        nibbles(x[b].qs, w, 0);
        for (int e = 0; e < 32; e++) w[e] = (int8_t)((w[e] | (int)((qh >> e & 1) << 4)) - 16);
        block_fma(acc, hearth_fp16_to_fp32(x[b].d) * hearth_fp16_to_fp32(y[b].d), w, y[b].qs);
    }
    *s = hearth_hsum8_x86_ref(acc);
}

void hearth_vec_dot_q8_0_q8_0_x86_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q8_0 *x = vx;
    const hearth_block_q8_0 *y = vy;
    float acc[8] = {0};
    for (int64_t b = 0; b < n / HEARTH_QK8_0; b++)
        block_fma(acc, hearth_fp16_to_fp32(x[b].d) * hearth_fp16_to_fp32(y[b].d), x[b].qs, y[b].qs);
    *s = hearth_hsum8_x86_ref(acc);
}

float hearth_expf_x86_ref(float x) {
    const float r = 0x1.8p23f;
    float z = fmaf(x, 0x1.715476p+0f, r);
    float n = z - r; /* round(x / ln 2) */
    float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
    float u = b * b;
    float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
                   fmaf(0x1.ffffecp-1f, b, 1.0f));
    if (fabsf(n) > 192.0f) return n <= 0.0f ? 0.0f : INFINITY;
    return ldexpf(j, (int)n);
}

void hearth_swiglu_x86_ref(float *g, const float *u, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float x = g[i];
        g[i] = x / (1.0f + hearth_expf_x86_ref(0.0f - x)) * u[i];
    }
}

void hearth_vec_dot_q4_K_q8_K_x86_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q4_K *x = vx;
    const hearth_block_q8_K *y = vy;
    float a = 0.0f, m = 0.0f;
    for (int64_t b = 0; b < n / HEARTH_QK_K; b++) {
        int sumq = 0, summ = 0;
        for (int i = 0; i < 8; i++) {
            uint8_t sc, mn;
            hearth_k_scale_min(x[b].scales, i, &sc, &mn);
            const uint8_t *qs = x[b].qs + 32 * (i / 2);
            int shift = 4 * (i % 2), dot = 0;
            for (int l = 0; l < 32; l++) dot += (qs[l] >> shift & 15) * y[b].qs[32 * i + l];
            sumq += sc * dot;
            summ += mn * (y[b].bsums[2 * i] + y[b].bsums[2 * i + 1]);
        }
        a = fmaf((float)sumq, hearth_fp16_to_fp32(x[b].d) * y[b].d, a);
        m = fmaf((float)summ, hearth_fp16_to_fp32(x[b].dmin) * y[b].d, m);
    }
    *s = a - m;
}

void hearth_vec_dot_q4_K_q8_K_x86_gemm_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q4_K *x = vx;
    const hearth_block_q8_K *y = vy;
    float a = 0.0f, m = 0.0f;
    for (int64_t b = 0; b < n / HEARTH_QK_K; b++) {
        float da = hearth_fp16_to_fp32(x[b].d) * y[b].d, dm = hearth_fp16_to_fp32(x[b].dmin) * y[b].d;
        for (int p = 0; p < 4; p++) {
            int sumq = 0, summ = 0;
            for (int i = 2 * p; i < 2 * p + 2; i++) {
                uint8_t sc, mn;
                hearth_k_scale_min(x[b].scales, i, &sc, &mn);
                const uint8_t *qs = x[b].qs + 32 * (i / 2);
                int shift = 4 * (i % 2), dot = 0;
                for (int l = 0; l < 32; l++) dot += (qs[l] >> shift & 15) * y[b].qs[32 * i + l];
                sumq += sc * dot;
                summ += mn * (y[b].bsums[2 * i] + y[b].bsums[2 * i + 1]);
            }
            a = fmaf((float)sumq, da, a);
            m = fmaf((float)summ, dm, m);
        }
    }
    *s = a - m;
}

void hearth_vec_dot_q6_K_q8_K_x86_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q6_K *x = vx;
    const hearth_block_q8_K *y = vy;
    float acc[8] = {0};
    for (int64_t b = 0; b < n / HEARTH_QK_K; b++) {
        int lane[8] = {0};
        for (int e = 0; e < HEARTH_QK_K; e++) {
            int half = e / 128, k = (e % 128) / 32, l = e % 32;
            int lo = x[b].ql[64 * half + 32 * (k & 1) + l] >> (4 * (k >> 1)) & 15;
            int hi = x[b].qh[32 * half + l] >> (2 * k) & 3;
            lane[(e % 32) / 4] += x[b].scales[e / 16] * (lo | hi << 4) * y[b].qs[e];
        }
        /* the -32 offset, lane l taking sub-blocks 2l and 2l + 1 through their activation sums */
        for (int l = 0; l < 8; l++)
            lane[l] -= 32 * (x[b].scales[2 * l] * y[b].bsums[2 * l] + x[b].scales[2 * l + 1] * y[b].bsums[2 * l + 1]);
        float d = y[b].d * hearth_fp16_to_fp32(x[b].d);
        for (int l = 0; l < 8; l++) acc[l] = fmaf(d, (float)lane[l], acc[l]);
    }
    *s = hearth_hsum8_x86_ref(acc);
}

void hearth_vec_dot_q6_K_q8_K_x86_tiled_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q6_K *x = vx;
    const hearth_block_q8_K *y = vy;
    float acc = 0.0f;
    for (int64_t b = 0; b < n / HEARTH_QK_K; b++) {
        int sum = 0;
        for (int g = 0; g < HEARTH_QK_K / 16; g++) {
            int raw = 0;
            for (int e = 16 * g; e < 16 * g + 16; e++) {
                int half = e / 128, k = (e % 128) / 32, l = e % 32;
                int lo = x[b].ql[64 * half + 32 * (k & 1) + l] >> (4 * (k >> 1)) & 15;
                int hi = x[b].qh[32 * half + l] >> (2 * k) & 3;
                raw += (lo | hi << 4) * y[b].qs[e];
            }
            sum += x[b].scales[g] * (raw - 32 * y[b].bsums[g]);
        }
        acc = fmaf((float)sum * hearth_fp16_to_fp32(x[b].d), y[b].d, acc);
    }
    *s = acc;
}
