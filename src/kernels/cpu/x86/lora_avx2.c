/*
 * lora_avx2.c - one row of the segmented LoRA update with AVX2 and F16C, equal bit for bit to
 * hearth_lora_row_ref (kernels/ref/lora_ref.h has the lane order it keeps).
 *
 * Each dot product is one 8-wide accumulator: vcvtph2ps widens 8 halves exactly, a multiply and
 * a separate add (this file is compiled without contraction into FMA, so the product is
 * rounded before the add as in the reference), the tail loaded into zero-padded buffers (0 * 0
 * adds 0, as the reference's lanes past the end), and the 8 lanes summed in the reference's
 * tree. Halving the bytes per adapter only pays off once the arithmetic is vectorised: the
 * scalar loop is bound by its multiply-adds, not by memory.
 */
#include <immintrin.h>
#include <string.h>

#include "kernels/cpu/x86/lora_x86.h"

static inline float tree(__m256 acc) {
    float a[8];
    _mm256_storeu_ps(a, acc);
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

static float dot_f16(const uint16_t *w, const float *v, int64_t n) {
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 wv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + i)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(wv, _mm256_loadu_ps(v + i)));
    }
    if (i < n) {
        uint16_t wt[8] = {0};
        float vt[8] = {0};
        memcpy(wt, w + i, (size_t)(n - i) * sizeof *wt);
        memcpy(vt, v + i, (size_t)(n - i) * sizeof *vt);
        __m256 wv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)wt));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(wv, _mm256_loadu_ps(vt)));
    }
    return tree(acc);
}

static float dot_f32(const float *w, const float *v, int64_t n) {
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(v + i)));
    if (i < n) {
        float wt[8] = {0}, vt[8] = {0};
        memcpy(wt, w + i, (size_t)(n - i) * sizeof *wt);
        memcpy(vt, v + i, (size_t)(n - i) * sizeof *vt);
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(wt), _mm256_loadu_ps(vt)));
    }
    return tree(acc);
}

void hearth_lora_row_avx2(const void *a, const void *b, bool half, int32_t r, float scale, const float *x,
                          int64_t n_in, float *y, int64_t n_out) {
    float h[HEARTH_LORA_MAX_RANK];
    for (int32_t k = 0; k < r; k++) /* h = A x */
        h[k] = half ? dot_f16((const uint16_t *)a + (int64_t)k * n_in, x, n_in)
                    : dot_f32((const float *)a + (int64_t)k * n_in, x, n_in);
    for (int64_t o = 0; o < n_out; o++) /* y += scale * B h */
        y[o] += scale * (half ? dot_f16((const uint16_t *)b + o * r, h, r) : dot_f32((const float *)b + o * r, h, r));
}
