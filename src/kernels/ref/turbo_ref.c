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

/* Lloyd-Max levels of a unit Gaussian, ascending (symmetric around 0) */
static const float lv2[4] = {-1.5104f, -0.4528f, 0.4528f, 1.5104f};
static const float lv3[8] = {-2.1520f, -1.3439f, -0.7560f, -0.2451f, 0.2451f, 0.7560f, 1.3439f, 2.1520f};
static const float lv4[16] = {-2.7326f, -2.0690f, -1.6181f, -1.2562f, -0.9424f, -0.6568f, -0.3881f, -0.1284f,
                              0.1284f,  0.3881f,  0.6568f,  0.9424f,  1.2562f,  1.6181f,  2.0690f,  2.7326f};

const float *hearth_turbo_codebook(int bits) { return bits == 2 ? lv2 : bits == 3 ? lv3 : bits == 4 ? lv4 : NULL; }

float hearth_turbo_level(int bits, int q) {
    const float *lev = hearth_turbo_codebook(bits);
    return lev ? lev[q] : (float)(2 * q + 1 - (1 << bits));
}

/* the code of x under scale s: the nearest level (the lower one on a tie) */
static int code_of(float x, float s, int bits, const float *lev) {
    const int levels = 1 << bits;
    if (!lev) { /* uniform: levels (2q + 1 - L) s, cells of width 2s */
        float t = floorf(x / (2.0f * s)) + (float)(levels / 2);
        if (!(t >= 0.0f)) t = 0.0f; /* NaN too */
        if (t > (float)(levels - 1)) t = (float)(levels - 1);
        return (int)t;
    }
    int best = 0;
    float bd = INFINITY;
    for (int q = 0; q < levels; q++) {
        const float d = fabsf(x - lev[q] * s);
        if (d < bd) bd = d, best = q;
    }
    return best;
}

static void quantize_block(const float *x, uint8_t *y, int bits) {
    const int levels = 1 << bits;
    const float *lev = hearth_turbo_codebook(bits);
    const float top = hearth_turbo_level(bits, levels - 1);
    float amax = 0.0f;
    for (int i = 0; i < HEARTH_KV_QBLOCK; i++) amax = fmaxf(amax, fabsf(x[i]));
    uint16_t best = 0;
    float best_err = INFINITY;
    for (int k = 0; k <= 10 && amax > 0.0f; k++) {
        const uint16_t hs = hearth_fp32_to_fp16(amax / top * (1.0f - 0.05f * (float)k));
        const float s = hearth_fp16_to_fp32(hs);
        if (!(s > 0.0f) || isinf(s)) continue;
        float err = 0.0f;
        for (int i = 0; i < HEARTH_KV_QBLOCK; i++) {
            const float d = x[i] - hearth_turbo_level(bits, code_of(x[i], s, bits, lev)) * s;
            err += d * d;
        }
        if (err < best_err) {
            best_err = err;
            best = hs;
        }
    }
    const float s = hearth_fp16_to_fp32(best);
    memcpy(y, &best, 2);
    uint8_t *q = y + 2;
    for (int g = 0; g < HEARTH_KV_QBLOCK / 8; g++) {
        uint64_t w = 0;
        for (int k = 0; k < 8; k++) {
            const int c = s > 0.0f ? code_of(x[g * 8 + k], s, bits, lev) : levels / 2;
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
    const uint64_t mask = ((uint64_t)1 << bits) - 1;
    for (int64_t o = 0; o < n; o += HEARTH_KV_QBLOCK, p += 2 + 4 * bits) {
        uint16_t hs;
        memcpy(&hs, p, 2);
        const float s = hearth_fp16_to_fp32(hs);
        for (int g = 0; g < HEARTH_KV_QBLOCK / 8; g++) {
            uint64_t w = 0;
            for (int b = 0; b < bits; b++) w |= (uint64_t)p[2 + g * bits + b] << (8 * b);
            for (int k = 0; k < 8; k++) y[o + g * 8 + k] = hearth_turbo_level(bits, (int)((w >> (k * bits)) & mask)) * s;
        }
    }
}
