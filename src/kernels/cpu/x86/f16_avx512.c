/*
 * f16_avx512.c - f32 rows to f16 with AVX-512 (the KV cache store): vcvtps2ph with round to
 * nearest even, 16 values per instruction, equal to hearth_fp32_to_fp16 (tensor/dtype.c) value
 * for value. A vector holding a NaN takes the scalar converter (the instruction keeps a NaN's
 * payload bits, the scalar one writes a fixed quiet NaN), as does the tail.
 */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/cpu/x86/attn_x86.h"
#include "tensor/dtype.h"

void hearth_f16_row_avx512(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        if (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q)) {
            for (int l = 0; l < 16; l++) y[i + l] = hearth_fp32_to_fp16(x[i + l]);
            continue;
        }
        _mm256_storeu_si256((__m256i *)(y + i), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
    for (; i < n; i++) y[i] = hearth_fp32_to_fp16(x[i]);
}
