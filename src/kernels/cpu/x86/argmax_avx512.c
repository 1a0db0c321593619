/*
 * argmax_avx512.c - hearth_argmax_ref (kernels/ref/argmax_ref.h) with AVX-512: the same index.
 *
 * Two passes: the largest non-NaN value m (vmaxps returns its second operand when the first is
 * NaN, so NaNs drop out), then the first index holding m. That index is the reference's answer:
 * the reference's running best only moves to a strictly larger value, so it ends on the first
 * occurrence of the maximum, unless x[0] is NaN (then nothing compares greater and it stays 0).
 * Over a 262k vocabulary this is two streams through the logits instead of a compare-and-branch
 * per element.
 */
#include <immintrin.h>
#include <math.h>

#include "kernels/cpu/x86/quant_x86.h"
#include "kernels/ref/argmax_ref.h"

int64_t hearth_argmax_avx512(const float *x, int64_t n) {
    if (n <= 0 || isnan(x[0])) return 0;
    __m512 m0 = _mm512_set1_ps(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        m0 = _mm512_max_ps(_mm512_loadu_ps(x + i), m0);
        m1 = _mm512_max_ps(_mm512_loadu_ps(x + i + 16), m1);
        m2 = _mm512_max_ps(_mm512_loadu_ps(x + i + 32), m2);
        m3 = _mm512_max_ps(_mm512_loadu_ps(x + i + 48), m3);
    }
    for (; i + 16 <= n; i += 16) m0 = _mm512_max_ps(_mm512_loadu_ps(x + i), m0);
    float m = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3)));
    for (; i < n; i++)
        if (x[i] > m) m = x[i];
    const __m512 vm = _mm512_set1_ps(m);
    for (i = 0; i + 16 <= n; i += 16) {
        __mmask16 eq = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + i), vm, _CMP_EQ_OQ);
        if (eq) return i + __builtin_ctz((unsigned)eq);
    }
    for (; i < n; i++)
        if (x[i] == m) return i;
    return 0; /* every element after x[0] is NaN or -inf and x[0] is -inf: the reference's 0 */
}
