/*
 * attn_avx2.c - one attention head over a paged f16 KV cache with AVX2 + FMA + F16C: the
 * same arithmetic as kernels/ref/attn_paged_ref.c, bit for bit. attn_avx512.c explains the
 * layout (keys transposed once per step, keys in lanes for the scores, the head dimension in
 * lanes for the values) and why the fused multiply-adds round as the reference does; this is
 * the 8-lane version (chunks still start at multiples of 16, as the transposed copy's origin).
 */
#include <immintrin.h>
#include <math.h>

#include "kernels/cpu/x86/attn_x86.h"
#include "kernels/ref/attn_paged_ref.h"
#include "kernels/ref/ops_ref.h"

static int64_t row_of(const int32_t *table_row, int32_t bs, int64_t j, int64_t kv_stride) {
    return ((int64_t)table_row[j / bs] * bs + j % bs) * kv_stride;
}

/* 8 dwords -> their low (sel_lo) or high (sel_hi) 16-bit halves as 8 f16 in a 128-bit vector */
static inline __m128i halves(__m256i w, __m256i sel) {
    __m256i t = _mm256_shuffle_epi8(w, sel);                          /* each lane's 4 halves first */
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(t, 0x08)); /* qwords 0 and 2 */
}

void hearth_attn_keys_t_avx2(const void *k, int64_t kv_stride, const int32_t *table_row, int32_t block_size,
                             int64_t head_dim, int64_t j0, int64_t j1, float *kt, int64_t ld) {
    const uint16_t *kh = k;
    const __m256i sel_lo = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 4, 5, 8,
                                            9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256i sel_hi = _mm256_setr_epi8(2, 3, 6, 7, 10, 11, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1, 2, 3, 6, 7,
                                            10, 11, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1);
    const int64_t jb = j0 & ~(int64_t)15;
    for (int64_t j = jb; j < j1; j += 8) {
        int32_t off[8] = {0}, live[8] = {0};
        int64_t base = row_of(table_row, block_size, j < j0 ? j0 : j, kv_stride);
        int fits = 1, any = 0;
        for (int i = 0; i < 8; i++) {
            if (j + i < j0 || j + i >= j1) continue;
            int64_t o = (row_of(table_row, block_size, j + i, kv_stride) - base) * 2; /* bytes */
            if (o > INT32_MAX - 2 * head_dim || o < INT32_MIN) fits = 0;
            else off[i] = (int32_t)o;
            live[i] = -1;
            any = 1;
        }
        float *dst = kt + (j - jb);
        if (!fits || !any) {
            for (int64_t d = 0; d < head_dim; d++)
                for (int i = 0; i < 8; i++)
                    dst[d * ld + i] = live[i] ? _cvtsh_ss(kh[row_of(table_row, block_size, j + i, kv_stride) + d]) : 0.0f;
            continue;
        }
        const __m256i idx = _mm256_loadu_si256((const __m256i *)off);
        const __m256i mask = _mm256_loadu_si256((const __m256i *)live);
        const char *b = (const char *)(kh + base);
        for (int64_t d = 0; d < head_dim; d += 2) {
            __m256i w = _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), (const int *)(const void *)(b + 2 * d),
                                                    idx, mask, 1);
            _mm256_storeu_ps(dst + d * ld, _mm256_cvtph_ps(halves(w, sel_lo)));
            _mm256_storeu_ps(dst + (d + 1) * ld, _mm256_cvtph_ps(halves(w, sel_hi)));
        }
    }
}

void hearth_attn_head_kt_avx2(const float *q, const float *kt, int64_t ld, int64_t kt_j0, const void *v,
                              int64_t kv_stride, const int32_t *table_row, int32_t block_size, int64_t head_dim,
                              int64_t j0, int64_t j1, float scale, float softcap, float *scores, float *out) {
    const uint16_t *vh = v;
    float qr[HEARTH_ATTN_MAX_HEAD_DIM];
    for (int64_t d = 0; d < head_dim; d += 8)
        _mm256_storeu_ps(qr + d, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(q + d), _MM_FROUND_TO_NEAREST_INT)));

    const __m256 vscale = _mm256_set1_ps(scale);
    for (int64_t j = j0 & ~(int64_t)15; j < j1; j += 8) {
        const float *kc = kt + (j - kt_j0);
        __m256 a0 = _mm256_setzero_ps();
        for (int64_t d = 0; d < head_dim; d++) a0 = _mm256_fmadd_ps(_mm256_set1_ps(qr[d]), _mm256_loadu_ps(kc + d * ld), a0);
        _mm256_storeu_ps(scores + j, _mm256_mul_ps(a0, vscale));
    }
    float max = -INFINITY;
    for (int64_t j = j0; j < j1; j++) {
        if (softcap > 0.0f) scores[j] = softcap * tanhf(scores[j] / softcap);
        if (scores[j] > max) max = scores[j];
    }
    double sum = 0.0;
    for (int64_t j = j0; j < j1; j++) {
        scores[j] = expf(scores[j] - max);
        sum += scores[j];
    }
    const float inv = (float)(1.0 / sum);

    __m256 acc[HEARTH_ATTN_MAX_HEAD_DIM / 8];
    const int64_t nv = head_dim / 8;
    for (int64_t c = 0; c < nv; c++) acc[c] = _mm256_setzero_ps();
    for (int64_t j = j0; j < j1; j++) {
        float p = _cvtsh_ss(_cvtss_sh(scores[j] * inv, _MM_FROUND_TO_NEAREST_INT));
        const uint16_t *r = vh + row_of(table_row, block_size, j, kv_stride);
        __m256 vp = _mm256_set1_ps(p);
        for (int64_t c = 0; c < nv; c++)
            acc[c] = _mm256_fmadd_ps(vp, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(r + 8 * c))), acc[c]);
    }
    for (int64_t c = 0; c < nv; c++) _mm256_storeu_ps(out + 8 * c, acc[c]);
}
