/*
 * dot_ref.c - reference dot products (see dot_ref.h), written like llama2.c: one plain loop
 * per block, the formula above each function. Weight . activation dots follow ggml's scalar
 * vec_dot_*_q8_* (ggml-cpu/quants.c): exact integer sums per block, then one float
 * multiply-add per block with the product of the two scales, accumulated in float.
 */
#include "kernels/ref/dot_ref.h"

#include <string.h>

#include "kernels/ref/quant_ref.h"
#include "tensor/dtype.h"
#include "tensor/quant.h"

/* ---- plain dots: s = sum_i x[i] * y[i], in double ------------------------------------ */

/* Four partial sums (element i goes to sum[i % 4], added in order at the end): the same result
 * on every machine, and four independent chains instead of one long dependent one, which is
 * what keeps the whole-model reference path (HEARTH_KERNELS=ref) usable in tests. */
void hearth_vec_dot_f32_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const float *x = vx, *y = vy;
    double sum[4] = {0.0, 0.0, 0.0, 0.0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; k++) sum[k] += (double)x[i + k] * (double)y[i + k];
    for (; i < n; i++) sum[i % 4] += (double)x[i] * (double)y[i];
    *s = (float)(((sum[0] + sum[1]) + sum[2]) + sum[3]);
}

void hearth_vec_dot_f16_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)hearth_fp16_to_fp32(x[i]) * (double)hearth_fp16_to_fp32(y[i]);
    *s = (float)sum;
}

void hearth_vec_dot_bf16_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)hearth_bf16_to_fp32(x[i]) * (double)hearth_bf16_to_fp32(y[i]);
    *s = (float)sum;
}

/* ---- 32-element blocks ---------------------------------------------------------------- */

/* s = sum_b dx_b * dy_b * sum_j (qx_bj - 8) * qy_bj */
void hearth_vec_dot_q4_0_q8_0_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q4_0 *x = vx;
    const hearth_block_q8_0 *y = vy;
    float sumf = 0.0f;
    for (int64_t b = 0; b < n / HEARTH_QK4_0; b++) {
        int sumi = 0;
        for (int j = 0; j < 16; j++) {
            sumi += ((x[b].qs[j] & 15) - 8) * y[b].qs[j];
            sumi += ((x[b].qs[j] >> 4) - 8) * y[b].qs[j + 16];
        }
        sumf += (float)sumi * (hearth_fp16_to_fp32(x[b].d) * hearth_fp16_to_fp32(y[b].d));
    }
    *s = sumf;
}

/* s = sum_b (dx_b * dy_b * sum_j qx_bj * qy_bj + mx_b * sy_b), sy = dy * sum_j qy_j */
void hearth_vec_dot_q4_1_q8_1_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q4_1 *x = vx;
    const hearth_block_q8_1 *y = vy;
    float sumf = 0.0f;
    for (int64_t b = 0; b < n / HEARTH_QK4_1; b++) {
        int sumi = 0;
        for (int j = 0; j < 16; j++) {
            sumi += (x[b].qs[j] & 15) * y[b].qs[j];
            sumi += (x[b].qs[j] >> 4) * y[b].qs[j + 16];
        }
        sumf += (float)sumi * (hearth_fp16_to_fp32(x[b].d) * hearth_fp16_to_fp32(y[b].d)) +
                hearth_fp16_to_fp32(x[b].m) * hearth_fp16_to_fp32(y[b].s);
    }
    *s = sumf;
}

/* The 5-bit value of element e of a Q5_0/Q5_1 block (quant.h). */
static int q5_value(const uint8_t *qs, const uint8_t *qh4, int e) {
    uint32_t qh;
    memcpy(&qh, qh4, 4);
    int nib = e < 16 ? (qs[e] & 15) : (qs[e - 16] >> 4);
    return nib | (int)((qh >> e) & 1) << 4;
}

/* s = sum_b dx_b * dy_b * sum_j (qx_bj - 16) * qy_bj */
void hearth_vec_dot_q5_0_q8_0_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q5_0 *x = vx;
    const hearth_block_q8_0 *y = vy;
    float sumf = 0.0f;
    for (int64_t b = 0; b < n / HEARTH_QK5_0; b++) {
        int sumi = 0;
        for (int e = 0; e < 32; e++) sumi += (q5_value(x[b].qs, x[b].qh, e) - 16) * y[b].qs[e];
        sumf += (float)sumi * (hearth_fp16_to_fp32(x[b].d) * hearth_fp16_to_fp32(y[b].d));
    }
    *s = sumf;
}

/* s = sum_b (dx_b * dy_b * sum_j qx_bj * qy_bj + mx_b * sy_b) */
void hearth_vec_dot_q5_1_q8_1_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q5_1 *x = vx;
    const hearth_block_q8_1 *y = vy;
    float sumf = 0.0f;
    for (int64_t b = 0; b < n / HEARTH_QK5_1; b++) {
        int sumi = 0;
        for (int e = 0; e < 32; e++) sumi += q5_value(x[b].qs, x[b].qh, e) * y[b].qs[e];
        sumf += (float)sumi * (hearth_fp16_to_fp32(x[b].d) * hearth_fp16_to_fp32(y[b].d)) +
                hearth_fp16_to_fp32(x[b].m) * hearth_fp16_to_fp32(y[b].s);
    }
    *s = sumf;
}

/* s = sum_b dx_b * dy_b * sum_j qx_bj * qy_bj */
void hearth_vec_dot_q8_0_q8_0_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q8_0 *x = vx;
    const hearth_block_q8_0 *y = vy;
    float sumf = 0.0f;
    for (int64_t b = 0; b < n / HEARTH_QK8_0; b++) {
        int sumi = 0;
        for (int j = 0; j < 32; j++) sumi += x[b].qs[j] * y[b].qs[j];
        sumf += (float)sumi * (hearth_fp16_to_fp32(x[b].d) * hearth_fp16_to_fp32(y[b].d));
    }
    *s = sumf;
}

/* ---- K-quants (256-element super-blocks against Q8_K) --------------------------------- */

/*
 * s = sum_b dy_b * (d_b * sum_i sc_i * sum_{e in sub-block i} q_e * qy_e
 *                   - dmin_b * sum_i mn_i * (bsums_{2i} + bsums_{2i+1}))
 * (the minimum term uses Q8_K's per-16 sums: the 32 elements of sub-block i are bsums 2i, 2i+1)
 */
void hearth_vec_dot_q4_K_q8_K_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q4_K *x = vx;
    const hearth_block_q8_K *y = vy;
    float sumf = 0.0f;
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
        sumf += y[b].d * hearth_fp16_to_fp32(x[b].d) * (float)sumq -
                y[b].d * hearth_fp16_to_fp32(x[b].dmin) * (float)summ;
    }
    *s = sumf;
}

/* As Q4_K, with q_e = nibble | fifth bit << 4. */
void hearth_vec_dot_q5_K_q8_K_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q5_K *x = vx;
    const hearth_block_q8_K *y = vy;
    float sumf = 0.0f;
    for (int64_t b = 0; b < n / HEARTH_QK_K; b++) {
        int sumq = 0, summ = 0;
        for (int i = 0; i < 8; i++) {
            uint8_t sc, mn;
            hearth_k_scale_min(x[b].scales, i, &sc, &mn);
            const uint8_t *qs = x[b].qs + 32 * (i / 2);
            int shift = 4 * (i % 2), dot = 0;
            for (int l = 0; l < 32; l++) {
                int q = (qs[l] >> shift & 15) | (x[b].qh[l] >> i & 1) << 4;
                dot += q * y[b].qs[32 * i + l];
            }
            sumq += sc * dot;
            summ += mn * (y[b].bsums[2 * i] + y[b].bsums[2 * i + 1]);
        }
        sumf += y[b].d * hearth_fp16_to_fp32(x[b].d) * (float)sumq -
                y[b].d * hearth_fp16_to_fp32(x[b].dmin) * (float)summ;
    }
    *s = sumf;
}

/* s = sum_b d_b * dy_b * sum_g scales_g * sum_{e in sub-block g of 16} (q_e - 32) * qy_e */
void hearth_vec_dot_q6_K_q8_K_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const hearth_block_q6_K *x = vx;
    const hearth_block_q8_K *y = vy;
    float sumf = 0.0f;
    for (int64_t b = 0; b < n / HEARTH_QK_K; b++) {
        int sumi = 0;
        for (int g = 0; g < 16; g++) {
            int dot = 0;
            for (int j = 0; j < 16; j++) {
                int e = 16 * g + j, half = e / 128, k = (e % 128) / 32, l = e % 32;
                int lo = x[b].ql[64 * half + 32 * (k & 1) + l] >> (4 * (k >> 1)) & 15;
                int hi = x[b].qh[32 * half + l] >> (2 * k) & 3;
                dot += ((lo | hi << 4) - 32) * y[b].qs[e];
            }
            sumi += x[b].scales[g] * dot;
        }
        sumf += hearth_fp16_to_fp32(x[b].d) * y[b].d * (float)sumi;
    }
    *s = sumf;
}

/* ---- the "ref" set: dequantized weight . f32 activation --------------------------------- */

typedef void (*to_float_fn)(const void *x, float *y, int64_t n);

/* s = sum_i deq(x)_i * y_i in double, element order; blocks of blck elements, type_size bytes. */
static void deq_dot(to_float_fn to_float, int64_t blck, size_t type_size, int64_t n, float *s,
                    const void *vx, const float *y) {
    const uint8_t *x = vx;
    float buf[HEARTH_QK_K];
    double sum = 0.0;
    for (int64_t i = 0; i < n;) {
        int64_t m = blck > 1 ? blck : (n - i < HEARTH_QK_K ? n - i : HEARTH_QK_K);
        to_float(x + (size_t)(i / blck) * type_size, buf, m);
        for (int64_t j = 0; j < m; j++) sum += (double)buf[j] * (double)y[i + j];
        i += m;
    }
    *s = (float)sum;
}

#define DEQ_DOT(t, blck, size)                                                              \
    void hearth_vec_dot_##t##_f32_ref(int64_t n, float *s, const void *x, const void *y) {  \
        deq_dot(hearth_##t##_to_float_ref, blck, size, n, s, x, y);                         \
    }
DEQ_DOT(f16, 1, 2)
DEQ_DOT(bf16, 1, 2)
DEQ_DOT(q4_0, HEARTH_QK4_0, sizeof(hearth_block_q4_0))
DEQ_DOT(q4_1, HEARTH_QK4_1, sizeof(hearth_block_q4_1))
DEQ_DOT(q5_0, HEARTH_QK5_0, sizeof(hearth_block_q5_0))
DEQ_DOT(q5_1, HEARTH_QK5_1, sizeof(hearth_block_q5_1))
DEQ_DOT(q8_0, HEARTH_QK8_0, sizeof(hearth_block_q8_0))
DEQ_DOT(q4_K, HEARTH_QK_K, sizeof(hearth_block_q4_K))
DEQ_DOT(q5_K, HEARTH_QK_K, sizeof(hearth_block_q5_K))
DEQ_DOT(q6_K, HEARTH_QK_K, sizeof(hearth_block_q6_K))
