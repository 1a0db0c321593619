/*
 * encoder_avx512.c - AVX-512 twins of the encoder's kernels (kernels/ref/encoder_ref.h): the
 * exact GELU 16 floats at a time, LayerNorm, and bidirectional attention laid out for the short
 * sequences sentence embeddings are made of.
 *
 * GELU: encoder_avx2.c's exp (Taylor series to degree 7 after the ln2 reduction) and erf (the
 * degree-9 Chebyshev fit of erfc) in 16 lanes: the same polynomials, so the same error bound
 * against the double formula (about 1e-7 |x|).
 * LayerNorm: the mean and the variance summed in double as the reference does (8 doubles per
 * vector, so in another order: the sums differ from the reference's in their last bits at most
 * and round to the same float almost always), then the reference's float steps in its order,
 * (x - mean) * inv, times w, plus b, without contraction.
 * Attention of one (sequence, head) with n_tok <= 64 and head_dim 16, 32, 64 or 128 (else the
 * AVX2 kernel), compiled for each number of key vectors and head size so nothing leaves the
 * registers: the keys are first copied transposed, kt[c][j] (j padded to a multiple of
 * 16), so each query's scores come 16 keys at a time as head_dim broadcast FMAs, with no
 * horizontal sums; the softmax runs on those vectors (the exp above, padded lanes masked out);
 * the output is the weighted sum of the value rows, head_dim / 16 accumulators.
 *
 *     kt (head_dim x 16 m):  kt[c][j] = k[j][c]       scores[j0..j0+15] += q[c] * kt[c][j0..]
 */
#include <immintrin.h>
#include <math.h>

#include "kernels/cpu/x86/encoder_x86.h"
#include "kernels/ref/encoder_ref.h"

enum { ATTN_MAX_TOK = 64, ATTN_MAX_HD = 128 };

static inline __m512 exp16(__m512 x) {
    const __mmask16 under = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_LT_OQ);
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
    x = _mm512_min_ps(x, _mm512_set1_ps(88.0f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x); /* ln2 high part: exact product */
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);     /* ln2 low part */
    __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_maskz_mul_ps((__mmask16)~under, p, _mm512_castsi512_ps(e));
}

/* erf(z) for z >= 0 (z clamped at 9, where erf is 1 in float). */
static inline __m512 erf_pos16(__m512 z) {
    z = _mm512_min_ps(z, _mm512_set1_ps(9.0f));
    const __m512 t =
        _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(z, _mm512_set1_ps(0.5f), _mm512_set1_ps(1.0f)));
    __m512 p = _mm512_set1_ps(0.17087277f);
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.82215223f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.48851587f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.13520398f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.27886807f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.18628806f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.09678418f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.37409196f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.00002368f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.26551223f));
    const __m512 arg = _mm512_fnmadd_ps(z, z, p); /* -z^2 + P(t) */
    return _mm512_sub_ps(_mm512_set1_ps(1.0f), _mm512_mul_ps(t, exp16(arg)));
}

void hearth_gelu_erf_avx512(float *x, int64_t n) {
    const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f);
    const __m512 rsqrt2 = _mm512_set1_ps(0.70710678118654752f);
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 v = _mm512_loadu_ps(x + i);
        const __m512 z = _mm512_mul_ps(v, rsqrt2);
        const __m512i zi = _mm512_castps_si512(z);
        const __m512 e = erf_pos16(_mm512_castsi512_ps(_mm512_andnot_si512(sign, zi)));
        const __m512 erf = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(e), _mm512_and_si512(sign, zi)));
        _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_mul_ps(half, v), _mm512_add_ps(one, erf)));
    }
    if (i < n) hearth_gelu_erf_avx2(x + i, n - i);
}

void hearth_layernorm_avx512(const float *x, const float *w, const float *b, float *y, int64_t n_rows, int64_t dim,
                             float eps) {
    for (int64_t r = 0; r < n_rows; r++) {
        const float *xr = x + r * dim;
        float       *yr = y + r * dim;
        __m512d s0 = _mm512_setzero_pd(), s1 = s0;
        int64_t i = 0;
        for (; i + 16 <= dim; i += 16) {
            const __m512 v = _mm512_loadu_ps(xr + i);
            s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
            s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
        }
        double sum = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
        for (; i < dim; i++) sum += xr[i];
        const double mean = sum / (double)dim;
        const __m512d mv = _mm512_set1_pd(mean);
        s0 = _mm512_setzero_pd(), s1 = s0;
        for (i = 0; i + 16 <= dim; i += 16) {
            const __m512 v = _mm512_loadu_ps(xr + i);
            const __m512d d0 = _mm512_sub_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)), mv);
            const __m512d d1 =
                _mm512_sub_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))), mv);
            s0 = _mm512_fmadd_pd(d0, d0, s0);
            s1 = _mm512_fmadd_pd(d1, d1, s1);
        }
        double var = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
        for (; i < dim; i++) {
            const double d = (double)xr[i] - mean;
            var += d * d;
        }
        var /= (double)dim;
        const float inv = (float)(1.0 / sqrt(var + (double)eps));
        const float m = (float)mean;
        const __m512 invv = _mm512_set1_ps(inv), mf = _mm512_set1_ps(m);
        for (i = 0; i + 16 <= dim; i += 16) {
            __m512 v = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(xr + i), mf), invv);
            if (w) v = _mm512_mul_ps(v, _mm512_loadu_ps(w + i));
            if (b) v = _mm512_add_ps(v, _mm512_loadu_ps(b + i));
            _mm512_storeu_ps(yr + i, v);
        }
        for (; i < dim; i++) {
            float v = (xr[i] - m) * inv;
            if (w) v *= w[i];
            if (b) v += b[i];
            yr[i] = v;
        }
    }
}

/* One head of one sequence: NV = ceil(n / 16) key vectors, ND = head_dim / 16, both constants
 * where it is inlined, so that the scores and the outputs stay in registers. */
static inline __attribute__((always_inline)) void attn_head(const float *q, const float *k, const float *v,
                                                            int64_t ld, float *out, int64_t ldo, int64_t n,
                                                            const int NV, const int ND, float scale) {
    float kt[ATTN_MAX_HD * ATTN_MAX_TOK] __attribute__((aligned(64)));
    const int hd = 16 * ND, m = 16 * NV; /* kt[c][j]: rows of m keys, padded with zeros */
    for (int c = 0; c < hd; c++) {
        for (int64_t j = 0; j < n; j++) kt[c * m + j] = k[j * ld + c];
        for (int64_t j = n; j < m; j++) kt[c * m + j] = 0.0f;
    }
    const __mmask16 last = (__mmask16)(n % 16 ? (1u << (n % 16)) - 1u : 0xffffu);
    const __m512 sc = _mm512_set1_ps(scale);
    for (int64_t t = 0; t < n; t++) {
        const float *qt = q + t * ld;
        __m512 s[ATTN_MAX_TOK / 16];
#pragma GCC unroll 4
        for (int g = 0; g < NV; g++) s[g] = _mm512_setzero_ps();
        for (int c = 0; c < hd; c++) {
            const __m512 qc = _mm512_set1_ps(qt[c]);
#pragma GCC unroll 4
            for (int g = 0; g < NV; g++) s[g] = _mm512_fmadd_ps(qc, _mm512_load_ps(kt + c * m + g * 16), s[g]);
        }
        __m512 mx = _mm512_set1_ps(-INFINITY);
#pragma GCC unroll 4
        for (int g = 0; g < NV; g++) {
            s[g] = _mm512_mul_ps(s[g], sc);
            mx = _mm512_mask_max_ps(mx, g == NV - 1 ? last : 0xffff, mx, s[g]);
        }
        const __m512 mxv = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
        __m512 sum = _mm512_setzero_ps();
#pragma GCC unroll 4
        for (int g = 0; g < NV; g++) {
            s[g] = _mm512_maskz_mov_ps(g == NV - 1 ? last : 0xffff, exp16(_mm512_sub_ps(s[g], mxv)));
            sum = _mm512_add_ps(sum, s[g]);
        }
        const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
        float p[ATTN_MAX_TOK] __attribute__((aligned(64)));
#pragma GCC unroll 4
        for (int g = 0; g < NV; g++) _mm512_store_ps(p + g * 16, _mm512_mul_ps(s[g], inv));
        __m512 o[ATTN_MAX_HD / 16];
#pragma GCC unroll 8
        for (int d = 0; d < ND; d++) o[d] = _mm512_setzero_ps();
        for (int64_t j = 0; j < n; j++) {
            const __m512 pj = _mm512_set1_ps(p[j]);
#pragma GCC unroll 8
            for (int d = 0; d < ND; d++) o[d] = _mm512_fmadd_ps(pj, _mm512_loadu_ps(v + j * ld + 16 * d), o[d]);
        }
#pragma GCC unroll 8
        for (int d = 0; d < ND; d++) _mm512_storeu_ps(out + t * ldo + 16 * d, o[d]);
    }
}

#define HEAD(nv, nd) attn_head(q + off, k + off, v + off, ld, out + off, ldo, n_tok, nv, nd, scale)
#define HEADS(nd)                                                                                       \
    do {                                                                                                \
        if (nv == 1) HEAD(1, nd);                                                                       \
        else if (nv == 2) HEAD(2, nd);                                                                  \
        else if (nv == 3) HEAD(3, nd);                                                                  \
        else HEAD(4, nd);                                                                               \
    } while (0)

void hearth_attn_full_avx512(const float *q, const float *k, const float *v, int64_t ld, float *out, int64_t ldo,
                             int64_t n_tok, int32_t n_head, int32_t head_dim, float scale, float *scores) {
    if (n_tok > ATTN_MAX_TOK || (head_dim != 16 && head_dim != 32 && head_dim != 64 && head_dim != 128)) {
        hearth_attn_full_avx2(q, k, v, ld, out, ldo, n_tok, n_head, head_dim, scale, scores);
        return;
    }
    const int64_t nv = (n_tok + 15) / 16;
    for (int32_t h = 0; h < n_head; h++) {
        const int64_t off = (int64_t)h * head_dim;
        switch (head_dim) {
        case 16: HEADS(1); break;
        case 32: HEADS(2); break;
        case 64: HEADS(4); break;
        default: HEADS(8); break;
        }
    }
}
