/*
 * turbo_ref.c - the turbo KV cache codec (turbo_ref.h says what it computes and why).
 */
#include "kernels/ref/turbo_ref.h"

#include <math.h>
#include <string.h>

#include "backend/kv_type.h"
#include "tensor/dtype.h"

float hearth_turbo_sign(int i) {
    uint64_t z = HEARTH_TURBO_SEED + (uint64_t)(i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (z >> 63) ? -1.0f : 1.0f;
}

/* the unnormalized Walsh-Hadamard transform of 64 values: six rounds of butterflies */
static void fwht64(float *x) {
    for (int len = 1; len < HEARTH_KV_TURBO_ROT; len <<= 1)
        for (int i = 0; i < HEARTH_KV_TURBO_ROT; i += 2 * len)
            for (int j = i; j < i + len; j++) {
                const float a = x[j], b = x[j + len];
                x[j] = a + b;
                x[j + len] = a - b;
            }
}

void hearth_turbo_rotate(float *x, int64_t n) {
    for (int64_t o = 0; o < n; o += HEARTH_KV_TURBO_ROT) {
        float *p = x + o;
        for (int i = 0; i < HEARTH_KV_TURBO_ROT; i++) p[i] *= hearth_turbo_sign(i);
        fwht64(p);
        for (int i = 0; i < HEARTH_KV_TURBO_ROT; i++) p[i] *= 0.125f; /* 1 / sqrt(64), exact */
    }
}

void hearth_turbo_unrotate(float *x, int64_t n) {
    for (int64_t o = 0; o < n; o += HEARTH_KV_TURBO_ROT) {
        float *p = x + o;
        fwht64(p);
        for (int i = 0; i < HEARTH_KV_TURBO_ROT; i++) p[i] = p[i] * 0.125f * hearth_turbo_sign(i);
    }
}

/* the code of x under half-step h: the nearest of the levels (2q + 1 - L) h, q in [0, L) */
static int code_of(float x, float h, int levels) {
    float t = floorf(x / (2.0f * h)) + (float)(levels / 2);
    if (!(t >= 0.0f)) t = 0.0f; /* NaN too */
    if (t > (float)(levels - 1)) t = (float)(levels - 1);
    return (int)t;
}

static void quantize_block(const float *x, uint8_t *y, int bits) {
    const int levels = 1 << bits;
    float amax = 0.0f;
    for (int i = 0; i < HEARTH_KV_QBLOCK; i++) amax = fmaxf(amax, fabsf(x[i]));
    uint16_t best = 0;
    float best_err = INFINITY;
    for (int k = 0; k <= 10 && amax > 0.0f; k++) {
        const uint16_t hh = hearth_fp32_to_fp16(amax / (float)(levels - 1) * (1.0f - 0.05f * (float)k));
        const float h = hearth_fp16_to_fp32(hh);
        if (!(h > 0.0f) || isinf(h)) continue;
        float err = 0.0f;
        for (int i = 0; i < HEARTH_KV_QBLOCK; i++) {
            const float d = x[i] - (float)(2 * code_of(x[i], h, levels) + 1 - levels) * h;
            err += d * d;
        }
        if (err < best_err) {
            best_err = err;
            best = hh;
        }
    }
    const float h = hearth_fp16_to_fp32(best);
    memcpy(y, &best, 2);
    uint8_t *q = y + 2;
    for (int g = 0; g < HEARTH_KV_QBLOCK / 8; g++) {
        uint64_t w = 0;
        for (int k = 0; k < 8; k++) {
            const int c = h > 0.0f ? code_of(x[g * 8 + k], h, levels) : levels / 2;
            w |= (uint64_t)c << (k * bits);
        }
        for (int b = 0; b < bits; b++) q[g * bits + b] = (uint8_t)(w >> (8 * b));
    }
}

void hearth_turbo_quantize_row(const float *x, void *y, int64_t width, int bits) {
    float r[HEARTH_KV_TURBO_ROT];
    uint8_t *out = y;
    const size_t blk = (size_t)(2 + 4 * bits);
    for (int64_t o = 0; o < width; o += HEARTH_KV_TURBO_ROT) {
        memcpy(r, x + o, sizeof r);
        hearth_turbo_rotate(r, HEARTH_KV_TURBO_ROT);
        for (int b = 0; b < HEARTH_KV_TURBO_ROT / HEARTH_KV_QBLOCK; b++, out += blk)
            quantize_block(r + b * HEARTH_KV_QBLOCK, out, bits);
    }
}

void hearth_turbo_dequant_ref(const void *x, float *y, int64_t n, int bits) {
    const uint8_t *p = x;
    const int levels = 1 << bits;
    const uint64_t mask = (uint64_t)levels - 1;
    for (int64_t o = 0; o < n; o += HEARTH_KV_QBLOCK, p += 2 + 4 * bits) {
        uint16_t hh;
        memcpy(&hh, p, 2);
        const float h = hearth_fp16_to_fp32(hh);
        for (int g = 0; g < HEARTH_KV_QBLOCK / 8; g++) {
            uint64_t w = 0;
            for (int b = 0; b < bits; b++) w |= (uint64_t)p[2 + g * bits + b] << (8 * b);
            for (int k = 0; k < 8; k++) {
                const int c = (int)((w >> (k * bits)) & mask);
                y[o + g * 8 + k] = (float)(2 * c + 1 - levels) * h;
            }
        }
    }
}
