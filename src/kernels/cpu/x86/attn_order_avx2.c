/*
 * attn_order_avx2.c - one attention head in llama.cpp's x86 order (kernels/ref/
 * attn_llamacpp_order.h, the twin) with AVX2 + FMA + F16C: attn_order_body.inc over v16 = two
 * __m256 (lanes 0-7 and 8-15). Bit-identical to hearth_attn_head_x86_ref
 * (tests/kernels/test_llamacpp_order.c).
 *
 * The vector expf computes the twin's polynomial with the same FMAs and scales by 2^n built
 * in the exponent field, one rounding as ldexpf; a vector with some |n| > 126 (2^n not a
 * normal float) takes the twin's scalar expf lane by lane.
 */
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernels/cpu/x86/attn_x86.h"
#include "kernels/kernels.h"
#include "kernels/ref/attn_llamacpp_order.h"

typedef struct {
    __m256 lo, hi;
} v16;

static inline v16 v16_zero(void) { return (v16){_mm256_setzero_ps(), _mm256_setzero_ps()}; }
static inline v16 v16_set1(float f) { return (v16){_mm256_set1_ps(f), _mm256_set1_ps(f)}; }
static inline v16 v16_load(const float *p) { return (v16){_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
static inline void v16_store(float *p, v16 v) {
    _mm256_storeu_ps(p, v.lo);
    _mm256_storeu_ps(p + 8, v.hi);
}
static inline v16 v16_load_f16(const uint16_t *p) {
    return (v16){_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)),
                 _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 8)))};
}
static inline __m256 round8(__m256 v) { return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)); }
static inline v16 v16_round_f16(v16 v) { return (v16){round8(v.lo), round8(v.hi)}; }
static inline v16 v16_add(v16 a, v16 b) { return (v16){_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
static inline v16 v16_sub(v16 a, v16 b) { return (v16){_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)}; }
static inline v16 v16_mul(v16 a, v16 b) { return (v16){_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
static inline v16 v16_fma(v16 a, v16 b, v16 c) {
    return (v16){_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
}
static inline v16 v16_max(v16 a, v16 b) { return (v16){_mm256_max_ps(a.lo, b.lo), _mm256_max_ps(a.hi, b.hi)}; }

/* halves (lanes 8-15 + 0-7), quarters, then (x0 + x2) + (x1 + x3) */
static inline float v16_reduce(v16 a) {
    __m256 h8 = _mm256_add_ps(a.hi, a.lo);
    __m128 h4 = _mm_add_ps(_mm256_extractf128_ps(h8, 1), _mm256_castps256_ps128(h8));
    __m128 t = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

static inline v16 v16_keep(v16 v, int64_t c, int64_t j0, int64_t j1) {
    int64_t lo = j0 - c, hi = j1 - c; /* lanes [lo, hi) */
    if (lo <= 0 && hi >= 16) return v;
    const __m256i lo8 = _mm256_set1_epi32((int32_t)(lo < 0 ? 0 : lo > 16 ? 16 : lo));
    const __m256i hi8 = _mm256_set1_epi32((int32_t)(hi < 0 ? 0 : hi > 16 ? 16 : hi));
    const __m256i ia = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), ib = _mm256_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15);
    /* lane i kept when lo <= i < hi: !(lo > i) && (hi > i) */
    __m256i ma = _mm256_andnot_si256(_mm256_cmpgt_epi32(lo8, ia), _mm256_cmpgt_epi32(hi8, ia));
    __m256i mb = _mm256_andnot_si256(_mm256_cmpgt_epi32(lo8, ib), _mm256_cmpgt_epi32(hi8, ib));
    return (v16){_mm256_and_ps(v.lo, _mm256_castsi256_ps(ma)), _mm256_and_ps(v.hi, _mm256_castsi256_ps(mb))};
}

/* the twin's expf on 8 lanes; false when some lane needs 2^n outside the normal range */
static inline bool expf8(__m256 x, __m256 *out) {
    const __m256 r = _mm256_set1_ps(0x1.8p23f);
    const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
    const __m256 n = _mm256_sub_ps(z, r);
    const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f),
                                      _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
    const __m256 u = _mm256_mul_ps(b, b);
    const __m256 j = _mm256_fmadd_ps(
        _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                        _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
        u, _mm256_fmadd_ps(_mm256_set1_ps(0x1.ffffecp-1f), b, _mm256_set1_ps(1.0f)));
    /* -126 <= n <= 127, NaN-free */
    __m256 ok = _mm256_and_ps(_mm256_cmp_ps(n, _mm256_set1_ps(-126.0f), _CMP_GE_OQ),
                              _mm256_cmp_ps(n, _mm256_set1_ps(127.0f), _CMP_LE_OQ));
    if (_mm256_movemask_ps(ok) != 0xff) return false;
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    *out = _mm256_mul_ps(j, _mm256_castsi256_ps(e));
    return true;
}

static inline __m256 expf8_or_twin(__m256 x) {
    __m256 r;
    if (expf8(x, &r)) return r;
    float a[8];
    _mm256_storeu_ps(a, x);
    for (int i = 0; i < 8; i++) a[i] = hearth_expf_x86_ref(a[i]);
    return _mm256_loadu_ps(a);
}

static inline v16 v16_expf(v16 x) { return (v16){expf8_or_twin(x.lo), expf8_or_twin(x.hi)}; }

enum { QB = 2, KB = 2 }; /* 4 accumulators = 8 of the 16 ymm registers */
#define SQ     1 /* the single-order group: one query per key pass (4 accumulators = 8 ymm) */
#define SV_ACC 4 /* and 4 lane rows (8 ymm) in registers in its KQV */
static inline void v16_reduce_block(const v16 *a, float *s) {
    for (int x = 0; x < QB * KB; x++) s[x] = v16_reduce(a[x]);
}

#define HEARTH_ATTN_ORDER_FN hearth_attn_head_x86_avx2
#define HEARTH_ATTN_GROUP_FN hearth_attn_group_x86_avx2
#define HEARTH_ATTN_SGROUP_FN hearth_attn_sgroup_x86_avx2
#include "kernels/cpu/x86/attn_order_body.inc"
