/*
 * attn_order_avx512.c - one attention head in llama.cpp's x86 order (kernels/ref/
 * attn_llamacpp_order.h, the twin) with AVX-512: attn_order_body.inc over v16 = one __m512.
 * Bit-identical to hearth_attn_head_x86_ref (tests/kernels/test_llamacpp_order.c).
 *
 * The vector expf is ggml's AVX-512 one and the twin's: the same FMAs, then j * 2^n by
 * vscalefps, which rounds once as ldexpf does (subnormal results included); |n| > 192 gives
 * 0 or infinity as in the twin.
 */
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernels/cpu/x86/attn_x86.h"
#include "kernels/kernels.h"
#include "kernels/ref/attn_llamacpp_order.h"

typedef __m512 v16;

static inline v16 v16_zero(void) { return _mm512_setzero_ps(); }
static inline v16 v16_set1(float f) { return _mm512_set1_ps(f); }
static inline v16 v16_load(const float *p) { return _mm512_loadu_ps(p); }
static inline void v16_store(float *p, v16 v) { _mm512_storeu_ps(p, v); }
static inline v16 v16_load_f16(const uint16_t *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }
static inline v16 v16_round_f16(v16 v) { return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)); }
static inline v16 v16_add(v16 a, v16 b) { return _mm512_add_ps(a, b); }
static inline v16 v16_sub(v16 a, v16 b) { return _mm512_sub_ps(a, b); }
static inline v16 v16_mul(v16 a, v16 b) { return _mm512_mul_ps(a, b); }
static inline v16 v16_fma(v16 a, v16 b, v16 c) { return _mm512_fmadd_ps(a, b, c); }
static inline v16 v16_max(v16 a, v16 b) { return _mm512_max_ps(a, b); }

/* halves, quarters, then (x0 + x2) + (x1 + x3) */
static inline float v16_reduce(v16 a) {
    __m256 h8 = _mm256_add_ps(_mm512_extractf32x8_ps(a, 1), _mm512_castps512_ps256(a));
    __m128 h4 = _mm_add_ps(_mm256_extractf128_ps(h8, 1), _mm256_castps256_ps128(h8));
    __m128 t = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

static inline v16 v16_keep(v16 v, int64_t c, int64_t j0, int64_t j1) {
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    int64_t lo = j0 - c, hi = j1 - c; /* lanes [lo, hi) */
    if (lo <= 0 && hi >= 16) return v;
    __m512i ix = iota;
    __mmask16 m = _mm512_cmpge_epi32_mask(ix, _mm512_set1_epi32((int32_t)(lo < 0 ? 0 : lo > 16 ? 16 : lo))) &
                  _mm512_cmplt_epi32_mask(ix, _mm512_set1_epi32((int32_t)(hi < 0 ? 0 : hi > 16 ? 16 : hi)));
    return _mm512_maskz_mov_ps(m, v);
}

static inline v16 v16_expf(v16 x) {
    const __m512 r = _mm512_set1_ps(0x1.8p23f);
    const __m512 z = _mm512_fmadd_ps(x, _mm512_set1_ps(0x1.715476p+0f), r);
    const __m512 n = _mm512_sub_ps(z, r);
    const __m512 b = _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.7f7d1cp-20f),
                                      _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e4p-1f), x));
    const __m512 u = _mm512_mul_ps(b, b);
    const __m512 j = _mm512_fmadd_ps(
        _mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_set1_ps(0x1.0e4020p-7f), b, _mm512_set1_ps(0x1.573e2ep-5f)), u,
                        _mm512_fmadd_ps(_mm512_set1_ps(0x1.555e66p-3f), b, _mm512_set1_ps(0x1.fffdb6p-2f))),
        u, _mm512_fmadd_ps(_mm512_set1_ps(0x1.ffffecp-1f), b, _mm512_set1_ps(1.0f)));
    const __m512 res = _mm512_scalef_ps(j, n);
    const __mmask16 big = _mm512_cmp_ps_mask(_mm512_abs_ps(n), _mm512_set1_ps(192.0f), _CMP_GT_OQ);
    if (!big) return res;
    const __m512 alt = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(n, _mm512_setzero_ps(), _CMP_LE_OQ),
                                            _mm512_set1_ps(INFINITY), _mm512_setzero_ps());
    return _mm512_mask_blend_ps(big, res, alt);
}

/* s[x] = v16_reduce(a[x]) for 16 vectors at once: each level of the tree is one add of two
 * shuffled vectors, which pair lanes exactly as v16_reduce does for every input:
 *   halves    [a_2i low 256 | a_2i+1 low 256] + [their high 256]       -> 8 x (2 dots)
 *   quarters  the low and high 128 of each dot's 8 sums                 -> 4 x (4 dots)
 *   (x0 + x2), (x1 + x3) within each 128-bit lane (vshufps)             -> 2 x (8 dots)
 *   their sum, then one permute into a's order. */
static inline void v16_reduce_block(const v16 *a, float *s) {
    __m512 h8[8], h4[4], h2[2];
    for (int i = 0; i < 8; i++)
        h8[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)),
                              _mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)));
    for (int i = 0; i < 4; i++) /* 128-bit lane m: dot 4i + m */
        h4[i] = _mm512_add_ps(_mm512_shuffle_f32x4(h8[2 * i], h8[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)),
                              _mm512_shuffle_f32x4(h8[2 * i], h8[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)));
    for (int i = 0; i < 2; i++) /* lane m: [x0 + x2, x1 + x3] of dots 8i + m, then 8i + 4 + m */
        h2[i] = _mm512_add_ps(_mm512_shuffle_ps(h4[2 * i], h4[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                              _mm512_shuffle_ps(h4[2 * i], h4[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    /* lane m of the 128-bit lanes: dots m, 4 + m, 8 + m, 12 + m */
    __m512 r = _mm512_add_ps(_mm512_shuffle_ps(h2[0], h2[1], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_ps(h2[0], h2[1], _MM_SHUFFLE(3, 1, 3, 1)));
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    _mm512_storeu_ps(s, _mm512_permutexvar_ps(order, r));
}

enum { QB = 4, KB = 4 };
#define SQ     4  /* queries per key in the single-order group's KQ (16 accumulators) */
#define SV_ACC 24 /* lane-row accumulators in registers in its KQV (of 32 zmm) */
#define HEARTH_ATTN_ORDER_FN hearth_attn_head_x86_avx512
#define HEARTH_ATTN_GROUP_FN hearth_attn_group_x86_avx512
#define HEARTH_ATTN_SGROUP_FN hearth_attn_sgroup_x86_avx512
#include "kernels/cpu/x86/attn_order_body.inc"
