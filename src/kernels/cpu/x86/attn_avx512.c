/*
 * attn_avx512.c - one attention head over a paged f16 KV cache with AVX-512: the same
 * arithmetic as kernels/ref/attn_paged_ref.c, bit for bit.
 *
 * Why it can be bit-identical: the reference sums every dot in a fixed order, and with an f16
 * cache each product (an f16-rounded query or probability times an f16 cache element) is exact
 * in f32 (11 x 11 significand bits < 24), so fma(a, b, s) rounds exactly as s + a * b does.
 * The vector loops keep each sum's order and put independent sums in the lanes:
 *
 *   keys     hearth_attn_keys_t_avx512 copies a head's keys once per step, transposed and
 *            widened to f32 (kt[d][j]), with a gather: one dword per key holds dims d and d+1,
 *            which split into two f16 vectors (vpmovdw) and widen (vcvtph2ps). Every query of
 *            the step that reads this head (the heads of its group, every token of the
 *            sequence) then loads 16 keys' dim d with one plain load.
 *   scores   16 keys per vector; lane i sums q[d] * k_{j+i}[d] over d in order.
 *   softmax  max (exact in any order), then expf and the double sum in the reference's scalar
 *            loop (libm expf, so the values match); probabilities rounded to f16 16 at a time.
 *   values   lanes over the head dimension; each lane adds p_j * v_j[d] over j in order.
 *
 * Keys are handled 16 at a time from j0 rounded down to 16; lanes outside [j0, j1) are zeros in
 * kt and their scores are never read. The caller runs these only for an f16 cache and a head
 * size that is a multiple of 16 (kernels.h); anything else takes the reference.
 */
#include <immintrin.h>
#include <math.h>

#include "kernels/cpu/x86/attn_x86.h"
#include "kernels/ref/attn_paged_ref.h"
#include "kernels/ref/ops_ref.h"
#include "tensor/dtype.h"

static int64_t row_of(const int32_t *table_row, int32_t bs, int64_t j, int64_t kv_stride) {
    return ((int64_t)table_row[j / bs] * bs + j % bs) * kv_stride;
}

void hearth_attn_keys_t_avx512(const void *k, int64_t kv_stride, const int32_t *table_row, int32_t block_size,
                               int64_t head_dim, int64_t j0, int64_t j1, float *kt, int64_t ld) {
    const uint16_t *kh = k;
    const int64_t jb = j0 & ~(int64_t)15;
    for (int64_t j = jb; j < j1; j += 16) {
        /* lanes of keys outside [j0, j1) stay zero and are never gathered */
        int32_t off[16] = {0};
        __mmask16 live = 0;
        int64_t base = row_of(table_row, block_size, j < j0 ? j0 : j, kv_stride);
        int fits = 1;
        for (int i = 0; i < 16; i++) {
            if (j + i < j0 || j + i >= j1) continue;
            int64_t o = (row_of(table_row, block_size, j + i, kv_stride) - base) * 2; /* bytes */
            if (o > INT32_MAX - 2 * head_dim || o < INT32_MIN) fits = 0;
            else off[i] = (int32_t)o;
            live |= (__mmask16)(1u << i);
        }
        float *dst = kt + (j - jb);
        if (!fits) { /* a pool too large for 32-bit offsets: one element at a time */
            for (int64_t d = 0; d < head_dim; d++)
                for (int i = 0; i < 16; i++)
                    dst[d * ld + i] = live >> i & 1 ? _cvtsh_ss(kh[row_of(table_row, block_size, j + i, kv_stride) + d])
                                                    : 0.0f;
            continue;
        }
        const __m512i idx = _mm512_loadu_si512(off);
        const char *b = (const char *)(kh + base);
        for (int64_t d = 0; d < head_dim; d += 2) {
            /* one dword per key: dims d (low half) and d+1 (high half) */
            __m512i w = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, idx, b + 2 * d, 1);
            _mm512_storeu_ps(dst + d * ld, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(w)));
            _mm512_storeu_ps(dst + (d + 1) * ld, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(w, 16))));
        }
    }
}

void hearth_attn_head_kt_avx512(const float *q, const float *kt, int64_t ld, int64_t kt_j0, const void *v,
                                int64_t kv_stride, const int32_t *table_row, int32_t block_size, int64_t head_dim,
                                int64_t j0, int64_t j1, float scale, float softcap, float *scores, float *out) {
    const uint16_t *vh = v;
    float qr[HEARTH_ATTN_MAX_HEAD_DIM];
    for (int64_t d = 0; d < head_dim; d += 16)
        _mm512_storeu_ps(qr + d, _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_loadu_ps(q + d), _MM_FROUND_TO_NEAREST_INT)));

    /* scores: lane i of a vector is key j+i, summed over d in order; s = dot * scale */
    const __m512 vscale = _mm512_set1_ps(scale);
    for (int64_t j = j0 & ~(int64_t)15; j < j1; j += 16) {
        const float *kc = kt + (j - kt_j0);
        __m512 a0 = _mm512_setzero_ps();
        for (int64_t d = 0; d < head_dim; d++) a0 = _mm512_fmadd_ps(_mm512_set1_ps(qr[d]), _mm512_loadu_ps(kc + d * ld), a0);
        _mm512_storeu_ps(scores + j, _mm512_mul_ps(a0, vscale));
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

    /* values: out[d] = sum_j f16(p_j) v_j[d], lanes over d, j in order */
    __m512 acc[HEARTH_ATTN_MAX_HEAD_DIM / 16];
    const int64_t nv = head_dim / 16;
    for (int64_t c = 0; c < nv; c++) acc[c] = _mm512_setzero_ps();
    for (int64_t j = j0; j < j1; j++) {
        float p = _cvtsh_ss(_cvtss_sh(scores[j] * inv, _MM_FROUND_TO_NEAREST_INT));
        const uint16_t *r = vh + row_of(table_row, block_size, j, kv_stride);
        __m512 vp = _mm512_set1_ps(p);
        for (int64_t c = 0; c < nv; c++)
            acc[c] = _mm512_fmadd_ps(vp, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(r + 16 * c))), acc[c]);
    }
    for (int64_t c = 0; c < nv; c++) _mm512_storeu_ps(out + 16 * c, acc[c]);
}
