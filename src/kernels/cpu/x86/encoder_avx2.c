/*
 * encoder_avx2.c - AVX2 twins of the encoder's kernels (kernels/ref/encoder_ref.h): the exact
 * GELU and bidirectional attention, 8 floats at a time.
 *
 * exp: x = n ln2 + r with n = round(x / ln2) and |r| <= ln2 / 2 (ln2 split in a high and a low
 * part so r is exact to float precision), e^r by its Taylor series to degree 7 (the remainder
 * r^8 / 8! is below 3e-9 there), times 2^n put into the exponent bits; inputs below -87 give 0.
 * erf: erf(z) = 1 - erfc(z) for z >= 0 and odd symmetry, with erfc(z) = t exp(-z^2 + P(t)), t =
 * 1 / (1 + z / 2), P the classic degree-9 Chebyshev fit (fractional error below 1.2e-7 over
 * all z >= 0). The GELU 0.5 x (1 + erf(x / sqrt 2)) so differs from libm's by about 1e-7 |x|
 * (tests/kernels/test_encoder_ops.c holds both against the double formula).
 * Attention: each query's scores are 8-wide dot products (head_dim a multiple of 8; other sizes
 * take the reference), the softmax's exponentials the exp above, the weighted sum of values
 * 8 lanes at a time.
 */
#include <immintrin.h>
#include <math.h>

#include "kernels/cpu/x86/encoder_x86.h"
#include "kernels/ref/encoder_ref.h"

static inline __m256 exp8(__m256 x) {
    const __m256 lo_cut = _mm256_set1_ps(-87.0f);
    const __m256 under = _mm256_cmp_ps(x, lo_cut, _CMP_LT_OQ);
    x = _mm256_max_ps(x, lo_cut);
    x = _mm256_min_ps(x, _mm256_set1_ps(88.0f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);   /* ln2 high part: exact product */
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);       /* ln2 low part */
    __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    const __m256 res = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    return _mm256_andnot_ps(under, res);
}

/* erf(z) for z >= 0 (z clamped at 9, where erf is 1 in float). */
static inline __m256 erf_pos8(__m256 z) {
    z = _mm256_min_ps(z, _mm256_set1_ps(9.0f));
    const __m256 t = _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(z, _mm256_set1_ps(0.5f), _mm256_set1_ps(1.0f)));
    __m256 p = _mm256_set1_ps(0.17087277f);
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.82215223f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.48851587f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.13520398f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.27886807f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.18628806f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.09678418f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.37409196f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.00002368f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.26551223f));
    const __m256 arg = _mm256_fnmadd_ps(z, z, p); /* -z^2 + P(t) */
    const __m256 erfc = _mm256_mul_ps(t, exp8(arg));
    return _mm256_sub_ps(_mm256_set1_ps(1.0f), erfc);
}

void hearth_gelu_erf_avx2(float *x, int64_t n) {
    const __m256 sign = _mm256_set1_ps(-0.0f), half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
    const __m256 rsqrt2 = _mm256_set1_ps(0.70710678118654752f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        const __m256 z = _mm256_mul_ps(v, rsqrt2);
        const __m256 e = erf_pos8(_mm256_andnot_ps(sign, z));
        const __m256 erf = _mm256_or_ps(e, _mm256_and_ps(sign, z)); /* erf(-z) = -erf(z) */
        _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_mul_ps(half, v), _mm256_add_ps(one, erf)));
    }
    if (i < n) hearth_gelu_erf_ref(x + i, n - i);
}

static inline float hsum8(__m256 v) {
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

void hearth_attn_full_avx2(const float *q, const float *k, const float *v, int64_t ld, float *out, int64_t ldo,
                           int64_t n_tok, int32_t n_head, int32_t head_dim, float scale, float *scores) {
    if (head_dim % 8 || head_dim > 256) {
        hearth_attn_full_ref(q, k, v, ld, out, ldo, n_tok, n_head, head_dim, scale, scores);
        return;
    }
    const int nv = head_dim / 8;
    for (int32_t h = 0; h < n_head; h++) {
        const int64_t off = (int64_t)h * head_dim;
        for (int64_t t = 0; t < n_tok; t++) {
            const float *qt = q + t * ld + off;
            __m256 qv[32];
            for (int c = 0; c < nv; c++) qv[c] = _mm256_loadu_ps(qt + 8 * c);
            float mx = -INFINITY;
            for (int64_t j = 0; j < n_tok; j++) {
                const float *kj = k + j * ld + off;
                __m256 acc = _mm256_mul_ps(qv[0], _mm256_loadu_ps(kj));
                for (int c = 1; c < nv; c++) acc = _mm256_fmadd_ps(qv[c], _mm256_loadu_ps(kj + 8 * c), acc);
                const float s = hsum8(acc) * scale;
                scores[j] = s;
                if (s > mx) mx = s;
            }
            const __m256 mxv = _mm256_set1_ps(mx);
            __m256 sumv = _mm256_setzero_ps();
            int64_t j = 0;
            for (; j + 8 <= n_tok; j += 8) {
                const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(scores + j), mxv));
                _mm256_storeu_ps(scores + j, e);
                sumv = _mm256_add_ps(sumv, e);
            }
            float sum = hsum8(sumv);
            for (; j < n_tok; j++) {
                scores[j] = expf(scores[j] - mx);
                sum += scores[j];
            }
            const float inv = 1.0f / sum;
            __m256 o[32];
            for (int c = 0; c < nv; c++) o[c] = _mm256_setzero_ps();
            for (j = 0; j < n_tok; j++) {
                const __m256 p = _mm256_set1_ps(scores[j] * inv);
                const float *vj = v + j * ld + off;
                for (int c = 0; c < nv; c++) o[c] = _mm256_fmadd_ps(p, _mm256_loadu_ps(vj + 8 * c), o[c]);
            }
            float *ot = out + t * ldo + off;
            for (int c = 0; c < nv; c++) _mm256_storeu_ps(ot + 8 * c, o[c]);
        }
    }
}
