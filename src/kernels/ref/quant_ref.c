/*
 * quant_ref.c - reference dequantizers and quantizers for every supported type.
 *
 * Written to be read against the block drawings in tensor/quant.h: one loop per block, the
 * dequantization formula spelled out per element. These are the specification; the SIMD
 * from_float versions in kernels/cpu/x86/ are tested bit-exact against the q8 ones here.
 *
 * Activation quantizers, as ggml's reference (ggml-quants.c, quantize_row_q8_*_ref):
 *   q8_0:  amax = max |x|, d = amax / 127, id = d ? 1/d : 0, q = roundf(x * id) (ties away
 *          from zero), d stored as half.
 *   q8_1:  as q8_0, plus s = half(d * sum(q)).
 *   q8_K:  max = the x of largest magnitude (first one, with its sign), iscale = -127 / max,
 *          q = min(127, nearest_int(iscale * x)) (ties to even), d = 1 / iscale as float,
 *          bsums[i] = sum of q[16i..16i+15]. An all-zero block gets d = 0, q = 0, bsums = 0.
 * NOTE: llama.cpp's x86 build quantizes q8_0/q8_1 activations with its AVX path, which uses
 * id = 127 / amax and ties-to-even; it can differ from the reference in the last bit of rare
 * elements. hearth follows the reference on every ISA, so results do not depend on the ISA.
 */
#include "kernels/ref/quant_ref.h"

#include <math.h>
#include <string.h>

#include "tensor/dtype.h"
#include "tensor/quant.h"

int hearth_nearest_int(float v) { return (int)lrintf(v); }

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ---- plain types ---------------------------------------------------------------------- */

void hearth_f32_to_float_ref(const void *x, float *y, int64_t n) {
    memcpy(y, x, (size_t)n * sizeof(float));
}

void hearth_f16_to_float_ref(const void *x, float *y, int64_t n) {
    const uint16_t *h = x;
    for (int64_t i = 0; i < n; i++) y[i] = hearth_fp16_to_fp32(h[i]);
}

void hearth_bf16_to_float_ref(const void *x, float *y, int64_t n) {
    const uint16_t *h = x;
    for (int64_t i = 0; i < n; i++) y[i] = hearth_bf16_to_fp32(h[i]);
}

void hearth_f32_from_float_ref(const float *x, void *y, int64_t n) {
    memcpy(y, x, (size_t)n * sizeof(float));
}

void hearth_f16_from_float_ref(const float *x, void *y, int64_t n) {
    uint16_t *h = y;
    for (int64_t i = 0; i < n; i++) h[i] = hearth_fp32_to_fp16(x[i]);
}

void hearth_bf16_from_float_ref(const float *x, void *y, int64_t n) {
    uint16_t *h = y;
    for (int64_t i = 0; i < n; i++) h[i] = hearth_fp32_to_bf16(x[i]);
}

/* ---- 32-element blocks: dequantize ------------------------------------------------------ */

void hearth_q4_0_to_float_ref(const void *vx, float *y, int64_t n) {
    const hearth_block_q4_0 *x = vx;
    for (int64_t i = 0; i < n / HEARTH_QK4_0; i++, y += HEARTH_QK4_0) {
        float d = hearth_fp16_to_fp32(x[i].d);
        for (int j = 0; j < 16; j++) {
            y[j]      = d * (float)((x[i].qs[j] & 15) - 8);
            y[j + 16] = d * (float)((x[i].qs[j] >> 4) - 8);
        }
    }
}

void hearth_q4_1_to_float_ref(const void *vx, float *y, int64_t n) {
    const hearth_block_q4_1 *x = vx;
    for (int64_t i = 0; i < n / HEARTH_QK4_1; i++, y += HEARTH_QK4_1) {
        float d = hearth_fp16_to_fp32(x[i].d), m = hearth_fp16_to_fp32(x[i].m);
        for (int j = 0; j < 16; j++) {
            y[j]      = d * (float)(x[i].qs[j] & 15) + m;
            y[j + 16] = d * (float)(x[i].qs[j] >> 4) + m;
        }
    }
}

/* The 5-bit value of element e (0..31) of a Q5_0/Q5_1 block. */
static int q5_value(const uint8_t *qs, const uint8_t *qh4, int e) {
    uint32_t qh;
    memcpy(&qh, qh4, 4);
    int nib = e < 16 ? (qs[e] & 15) : (qs[e - 16] >> 4);
    return nib | (int)((qh >> e) & 1) << 4;
}

void hearth_q5_0_to_float_ref(const void *vx, float *y, int64_t n) {
    const hearth_block_q5_0 *x = vx;
    for (int64_t i = 0; i < n / HEARTH_QK5_0; i++, y += HEARTH_QK5_0) {
        float d = hearth_fp16_to_fp32(x[i].d);
        for (int e = 0; e < 32; e++) y[e] = d * (float)(q5_value(x[i].qs, x[i].qh, e) - 16);
    }
}

void hearth_q5_1_to_float_ref(const void *vx, float *y, int64_t n) {
    const hearth_block_q5_1 *x = vx;
    for (int64_t i = 0; i < n / HEARTH_QK5_1; i++, y += HEARTH_QK5_1) {
        float d = hearth_fp16_to_fp32(x[i].d), m = hearth_fp16_to_fp32(x[i].m);
        for (int e = 0; e < 32; e++) y[e] = d * (float)q5_value(x[i].qs, x[i].qh, e) + m;
    }
}

void hearth_q8_0_to_float_ref(const void *vx, float *y, int64_t n) {
    const hearth_block_q8_0 *x = vx;
    for (int64_t i = 0; i < n / HEARTH_QK8_0; i++, y += HEARTH_QK8_0) {
        float d = hearth_fp16_to_fp32(x[i].d);
        for (int j = 0; j < 32; j++) y[j] = d * (float)x[i].qs[j];
    }
}

void hearth_q8_1_to_float_ref(const void *vx, float *y, int64_t n) {
    const hearth_block_q8_1 *x = vx;
    for (int64_t i = 0; i < n / HEARTH_QK8_1; i++, y += HEARTH_QK8_1) {
        float d = hearth_fp16_to_fp32(x[i].d);
        for (int j = 0; j < 32; j++) y[j] = d * (float)x[i].qs[j];
    }
}

/* ---- K-quants: dequantize --------------------------------------------------------------- */

void hearth_q4_K_to_float_ref(const void *vx, float *y, int64_t n) {
    const hearth_block_q4_K *x = vx;
    for (int64_t i = 0; i < n / HEARTH_QK_K; i++, y += HEARTH_QK_K) {
        float d = hearth_fp16_to_fp32(x[i].d), dmin = hearth_fp16_to_fp32(x[i].dmin);
        for (int e = 0; e < 256; e++) {
            int g = e / 64, l = e % 64;
            int q = l < 32 ? (x[i].qs[32 * g + l] & 15) : (x[i].qs[32 * g + l - 32] >> 4);
            uint8_t sc, mn;
            hearth_k_scale_min(x[i].scales, e / 32, &sc, &mn);
            y[e] = d * (float)sc * (float)q - dmin * (float)mn;
        }
    }
}

void hearth_q5_K_to_float_ref(const void *vx, float *y, int64_t n) {
    const hearth_block_q5_K *x = vx;
    for (int64_t i = 0; i < n / HEARTH_QK_K; i++, y += HEARTH_QK_K) {
        float d = hearth_fp16_to_fp32(x[i].d), dmin = hearth_fp16_to_fp32(x[i].dmin);
        for (int e = 0; e < 256; e++) {
            int g = e / 64, h = (e % 64) / 32, l = e % 32;
            int nib = h == 0 ? (x[i].qs[32 * g + l] & 15) : (x[i].qs[32 * g + l] >> 4);
            int q = nib | ((x[i].qh[l] >> (2 * g + h)) & 1) << 4;
            uint8_t sc, mn;
            hearth_k_scale_min(x[i].scales, e / 32, &sc, &mn);
            y[e] = d * (float)sc * (float)q - dmin * (float)mn;
        }
    }
}

/* The 6-bit value (0..63) of element e of a Q6_K block (drawing in quant.h). */
static int q6_value(const hearth_block_q6_K *b, int e) {
    int half = e / 128, k = (e % 128) / 32, l = e % 32;
    int lo = b->ql[64 * half + 32 * (k & 1) + l] >> (4 * (k >> 1)) & 15;
    int hi = b->qh[32 * half + l] >> (2 * k) & 3;
    return lo | hi << 4;
}

void hearth_q6_K_to_float_ref(const void *vx, float *y, int64_t n) {
    const hearth_block_q6_K *x = vx;
    for (int64_t i = 0; i < n / HEARTH_QK_K; i++, y += HEARTH_QK_K) {
        float d = hearth_fp16_to_fp32(x[i].d);
        for (int e = 0; e < 256; e++)
            y[e] = d * (float)x[i].scales[e / 16] * (float)(q6_value(&x[i], e) - 32);
    }
}

void hearth_q8_K_to_float_ref(const void *vx, float *y, int64_t n) {
    const hearth_block_q8_K *x = vx;
    for (int64_t i = 0; i < n / HEARTH_QK_K; i++, y += HEARTH_QK_K)
        for (int j = 0; j < 256; j++) y[j] = x[i].d * (float)x[i].qs[j];
}

/* ---- activation quantizers (ggml reference rounding, see the top comment) ---------------- */

void hearth_q8_0_from_float_ref(const float *x, void *vy, int64_t n) {
    hearth_block_q8_0 *y = vy;
    for (int64_t i = 0; i < n / HEARTH_QK8_0; i++, x += HEARTH_QK8_0) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
        float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = hearth_fp32_to_fp16(d);
        for (int j = 0; j < 32; j++) y[i].qs[j] = (int8_t)roundf(x[j] * id);
    }
}

void hearth_q8_1_from_float_ref(const float *x, void *vy, int64_t n) {
    hearth_block_q8_1 *y = vy;
    for (int64_t i = 0; i < n / HEARTH_QK8_1; i++, x += HEARTH_QK8_1) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
        float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = hearth_fp32_to_fp16(d);
        int sum = 0;
        for (int j = 0; j < 32; j++) {
            y[i].qs[j] = (int8_t)roundf(x[j] * id);
            sum += y[i].qs[j];
        }
        y[i].s = hearth_fp32_to_fp16((float)sum * d);
    }
}

void hearth_q8_K_from_float_ref(const float *x, void *vy, int64_t n) {
    hearth_block_q8_K *y = vy;
    for (int64_t i = 0; i < n / HEARTH_QK_K; i++, x += HEARTH_QK_K) {
        float max = 0.0f, amax = 0.0f;
        for (int j = 0; j < 256; j++) {
            if (fabsf(x[j]) > amax) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        }
        if (amax == 0.0f) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        float iscale = -127.0f / max;
        for (int j = 0; j < 256; j++) {
            int v = hearth_nearest_int(iscale * x[j]);
            y[i].qs[j] = (int8_t)(v < 127 ? v : 127);
        }
        for (int g = 0; g < 16; g++) {
            int sum = 0;
            for (int j = 0; j < 16; j++) sum += y[i].qs[16 * g + j];
            y[i].bsums[g] = (int16_t)sum;
        }
        y[i].d = 1.0f / iscale;
    }
}

/* ---- weight quantizers for test data (round to nearest) ---------------------------------- */

/* Q4_0/Q5_0 as ggml's reference: d = max / -2^(bits-1) with max the signed extreme. */
void hearth_q4_0_from_float_ref(const float *x, void *vy, int64_t n) {
    hearth_block_q4_0 *y = vy;
    for (int64_t i = 0; i < n / HEARTH_QK4_0; i++, x += HEARTH_QK4_0) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < 32; j++)
            if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); max = x[j]; }
        float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = hearth_fp32_to_fp16(d);
        for (int j = 0; j < 16; j++) {
            int q0 = clampi((int)(x[j] * id + 8.5f), 0, 15);
            int q1 = clampi((int)(x[j + 16] * id + 8.5f), 0, 15);
            y[i].qs[j] = (uint8_t)(q0 | q1 << 4);
        }
    }
}

void hearth_q4_1_from_float_ref(const float *x, void *vy, int64_t n) {
    hearth_block_q4_1 *y = vy;
    for (int64_t i = 0; i < n / HEARTH_QK4_1; i++, x += HEARTH_QK4_1) {
        float min = x[0], max = x[0];
        for (int j = 1; j < 32; j++) { min = fminf(min, x[j]); max = fmaxf(max, x[j]); }
        float d = (max - min) / 15.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = hearth_fp32_to_fp16(d);
        y[i].m = hearth_fp32_to_fp16(min);
        for (int j = 0; j < 16; j++) {
            int q0 = clampi((int)((x[j] - min) * id + 0.5f), 0, 15);
            int q1 = clampi((int)((x[j + 16] - min) * id + 0.5f), 0, 15);
            y[i].qs[j] = (uint8_t)(q0 | q1 << 4);
        }
    }
}

/* Store the 5-bit values q[32] into a Q5_0/Q5_1 block's qs and qh. */
static void q5_pack(const int *q, uint8_t *qs, uint8_t *qh4) {
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
        qs[j] = (uint8_t)((q[j] & 15) | (q[j + 16] & 15) << 4);
        qh |= (uint32_t)(q[j] >> 4 & 1) << j;
        qh |= (uint32_t)(q[j + 16] >> 4 & 1) << (j + 16);
    }
    memcpy(qh4, &qh, 4);
}

void hearth_q5_0_from_float_ref(const float *x, void *vy, int64_t n) {
    hearth_block_q5_0 *y = vy;
    for (int64_t i = 0; i < n / HEARTH_QK5_0; i++, x += HEARTH_QK5_0) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < 32; j++)
            if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); max = x[j]; }
        float d = max / -16.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = hearth_fp32_to_fp16(d);
        int q[32];
        for (int j = 0; j < 32; j++) q[j] = clampi((int)(x[j] * id + 16.5f), 0, 31);
        q5_pack(q, y[i].qs, y[i].qh);
    }
}

void hearth_q5_1_from_float_ref(const float *x, void *vy, int64_t n) {
    hearth_block_q5_1 *y = vy;
    for (int64_t i = 0; i < n / HEARTH_QK5_1; i++, x += HEARTH_QK5_1) {
        float min = x[0], max = x[0];
        for (int j = 1; j < 32; j++) { min = fminf(min, x[j]); max = fmaxf(max, x[j]); }
        float d = (max - min) / 31.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = hearth_fp32_to_fp16(d);
        y[i].m = hearth_fp32_to_fp16(min);
        int q[32];
        for (int j = 0; j < 32; j++) q[j] = clampi((int)((x[j] - min) * id + 0.5f), 0, 31);
        q5_pack(q, y[i].qs, y[i].qh);
    }
}

/*
 * Q4_K/Q5_K: per sub-block of 32, scale = (max - min) / nmax and minimum = -min (min <= 0);
 * the 8 scales and 8 minimums are quantized to 6 bits against d = max scale / 63 and
 * dmin = max minimum / 63; then q = nearest((x + dmin*mn) / (d*sc)) clamped to [0, nmax].
 */
static void k_scales_quantize(const float *x, int nmax, uint16_t *d_out, uint16_t *dmin_out,
                              uint8_t *scales, uint8_t *q) {
    float scale[8], minv[8], max_scale = 0.0f, max_min = 0.0f;
    for (int s = 0; s < 8; s++) {
        float lo = 0.0f, hi = x[32 * s];
        for (int j = 0; j < 32; j++) {
            lo = fminf(lo, x[32 * s + j]);
            hi = fmaxf(hi, x[32 * s + j]);
        }
        scale[s] = (hi - lo) / (float)nmax;
        minv[s] = -lo;
        max_scale = fmaxf(max_scale, scale[s]);
        max_min = fmaxf(max_min, minv[s]);
    }
    *d_out = hearth_fp32_to_fp16(max_scale / 63.0f);
    *dmin_out = hearth_fp32_to_fp16(max_min / 63.0f);
    float d = hearth_fp16_to_fp32(*d_out), dmin = hearth_fp16_to_fp32(*dmin_out);
    uint8_t ls[8], lm[8];
    for (int s = 0; s < 8; s++) {
        ls[s] = (uint8_t)(d > 0.0f ? clampi(hearth_nearest_int(scale[s] / d), 0, 63) : 0);
        lm[s] = (uint8_t)(dmin > 0.0f ? clampi(hearth_nearest_int(minv[s] / dmin), 0, 63) : 0);
    }
    for (int s = 0; s < 4; s++) {
        scales[s] = (uint8_t)(ls[s] | (ls[s + 4] >> 4) << 6);
        scales[s + 4] = (uint8_t)(lm[s] | (lm[s + 4] >> 4) << 6);
        scales[s + 8] = (uint8_t)((ls[s + 4] & 15) | (lm[s + 4] & 15) << 4);
    }
    for (int e = 0; e < 256; e++) {
        float sd = d * (float)ls[e / 32], m = dmin * (float)lm[e / 32];
        q[e] = (uint8_t)(sd > 0.0f ? clampi(hearth_nearest_int((x[e] + m) / sd), 0, nmax) : 0);
    }
}

void hearth_q4_K_from_float_ref(const float *x, void *vy, int64_t n) {
    hearth_block_q4_K *y = vy;
    uint8_t q[256];
    for (int64_t i = 0; i < n / HEARTH_QK_K; i++, x += HEARTH_QK_K) {
        k_scales_quantize(x, 15, &y[i].d, &y[i].dmin, y[i].scales, q);
        for (int g = 0; g < 4; g++)
            for (int l = 0; l < 32; l++)
                y[i].qs[32 * g + l] = (uint8_t)(q[64 * g + l] | q[64 * g + 32 + l] << 4);
    }
}

void hearth_q5_K_from_float_ref(const float *x, void *vy, int64_t n) {
    hearth_block_q5_K *y = vy;
    uint8_t q[256];
    for (int64_t i = 0; i < n / HEARTH_QK_K; i++, x += HEARTH_QK_K) {
        k_scales_quantize(x, 31, &y[i].d, &y[i].dmin, y[i].scales, q);
        memset(y[i].qh, 0, sizeof y[i].qh);
        for (int e = 0; e < 256; e++) {
            int g = e / 64, h = (e % 64) / 32, l = e % 32;
            if (h == 0) y[i].qs[32 * g + l] = q[e] & 15;
            else y[i].qs[32 * g + l] |= (uint8_t)((q[e] & 15) << 4);
            y[i].qh[l] |= (uint8_t)((q[e] >> 4) << (2 * g + h));
        }
    }
}

/*
 * Q6_K: per sub-block of 16, scale = max / -32 with max the signed extreme (so it maps to
 * -32); the 16 scales are quantized to int8 against d = max scale / -128 the same way; then
 * q = nearest(x / (d*sc)) clamped to [-32, 31], stored + 32.
 */
void hearth_q6_K_from_float_ref(const float *x, void *vy, int64_t n) {
    hearth_block_q6_K *y = vy;
    for (int64_t i = 0; i < n / HEARTH_QK_K; i++, x += HEARTH_QK_K) {
        float scale[16], max_scale = 0.0f, amax_scale = 0.0f;
        for (int s = 0; s < 16; s++) {
            float amax = 0.0f, max = 0.0f;
            for (int j = 0; j < 16; j++) {
                float v = x[16 * s + j];
                if (fabsf(v) > amax) { amax = fabsf(v); max = v; }
            }
            scale[s] = max / -32.0f;
            if (fabsf(scale[s]) > amax_scale) {
                amax_scale = fabsf(scale[s]);
                max_scale = scale[s];
            }
        }
        float iscale = max_scale != 0.0f ? -128.0f / max_scale : 0.0f;
        y[i].d = hearth_fp32_to_fp16(iscale != 0.0f ? 1.0f / iscale : 0.0f);
        float d = hearth_fp16_to_fp32(y[i].d);
        for (int s = 0; s < 16; s++)
            y[i].scales[s] = (int8_t)clampi(hearth_nearest_int(iscale * scale[s]), -128, 127);
        memset(y[i].ql, 0, sizeof y[i].ql);
        memset(y[i].qh, 0, sizeof y[i].qh);
        for (int e = 0; e < 256; e++) {
            float sd = d * (float)y[i].scales[e / 16];
            int q = sd != 0.0f ? clampi(hearth_nearest_int(x[e] / sd), -32, 31) + 32 : 32;
            int half = e / 128, k = (e % 128) / 32, l = e % 32;
            y[i].ql[64 * half + 32 * (k & 1) + l] |= (uint8_t)((q & 15) << (4 * (k >> 1)));
            y[i].qh[32 * half + l] |= (uint8_t)((q >> 4) << (2 * k));
        }
    }
}
