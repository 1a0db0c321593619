/*
 * turbo_x86.h - the turbo cache's dequantizer with AVX2 integer shifts (kernels/ref/turbo_ref.h
 * has the block format), for the attention kernels of the x86 sets (attn_turbo_*.c; include it
 * only from files compiled for AVX2 or more). A group of 8 codes is B bytes: loaded as one
 * little-endian word, shifted by 0, B, .. 7B per lane and masked; then the level (a lane
 * permute of the Lloyd-Max codebook for 2-4 bits, 2q + 1 - 2^B converted exactly for 5 and 8)
 * times the block's scale, the one rounding hearth_turbo_dequant_ref makes, so the values are
 * the reference's bit for bit.
 */
#pragma once
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/ref/turbo_ref.h"
#include "tensor/dtype.h"

/* The 8 codes of group g (0-3) of a block whose codes start at p (4 * bits bytes). bits is a
 * constant in every caller (turbo_x86_dequant's switch), so the shifts, masks and loads fold.
 * Each group is read with one whole-word load inside the block: for 2-4 bits the 4 bytes that
 * end with the group's last byte (the first group's reach back into the block's scale), shifted
 * down; for 5 bits the 8 bytes from the group's first, or for the last group the 8 that end
 * with its last byte. (A copy of just the group's bytes into a zeroed word, as before, stored
 * bytes and then loaded them as one word: a stalled store forward, most of the time of a
 * 3-bit row.) */
static inline __attribute__((always_inline)) __m256i turbo_x86_codes(const uint8_t *p, int g, const int bits) {
    p += g * bits;
    if (bits == 8) return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
    if (bits == 5) { /* 40 bits: shift 64-bit lanes, keep their low halves */
        uint64_t w;
        if (g < 3) {
            memcpy(&w, p, 8);
        } else {
            memcpy(&w, p + 5 - 8, 8);
            w >>= 24;
        }
        const __m256i w4 = _mm256_set1_epi64x((long long)w);
        const __m256i lo = _mm256_srlv_epi64(w4, _mm256_setr_epi64x(0, 5, 10, 15));
        const __m256i hi = _mm256_srlv_epi64(w4, _mm256_setr_epi64x(20, 25, 30, 35));
        const __m256i even = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
        const __m256i c = _mm256_blend_epi32(_mm256_permutevar8x32_epi32(lo, even),
                                             _mm256_permutevar8x32_epi32(hi, even), 0xF0);
        return _mm256_and_si256(c, _mm256_set1_epi32(31));
    }
    /* 2, 3, 4 bits: at most 32 bits, the low 8 * bits of the word ending at the group's end */
    uint32_t w;
    memcpy(&w, p + bits - 4, 4);
    w >>= 8 * (4 - bits);
    const __m256i sh = _mm256_setr_epi32(0, bits, 2 * bits, 3 * bits, 4 * bits, 5 * bits, 6 * bits, 7 * bits);
    return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)w), sh), _mm256_set1_epi32((1 << bits) - 1));
}

static inline __attribute__((always_inline)) void turbo_x86_dequant_b(const uint8_t *p, float *y, int64_t n,
                                                                       const int bits) {
    const float *cb = hearth_turbo_codebook(bits);
    /* codebook: 8 levels a register (2 bits: the 4 repeated), 4 bits pick lo or hi by bit 3 */
    const __m256 lo = bits > 4     ? _mm256_setzero_ps()
                      : bits == 2 ? _mm256_setr_ps(cb[0], cb[1], cb[2], cb[3], cb[0], cb[1], cb[2], cb[3])
                                  : _mm256_loadu_ps(cb);
    const __m256 hi = bits == 4 ? _mm256_loadu_ps(cb + 8) : lo;
    const __m256i off = _mm256_set1_epi32(1 - (1 << bits));
    for (int64_t o = 0; o < n; o += 32, p += 2 + 4 * bits) {
        uint16_t hs;
        memcpy(&hs, p, 2);
        const __m256 s = _mm256_set1_ps(_cvtsh_ss(hs)); /* exact, as hearth_fp16_to_fp32 */
        for (int g = 0; g < 4; g++) {
            const __m256i c = turbo_x86_codes(p + 2, g, bits);
            __m256 l;
            if (bits <= 4) {
                l = _mm256_permutevar8x32_ps(lo, c);
                if (bits == 4)
                    l = _mm256_blendv_ps(l, _mm256_permutevar8x32_ps(hi, c), _mm256_castsi256_ps(_mm256_slli_epi32(c, 28)));
            } else {
                l = _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_slli_epi32(c, 1), off));
            }
            _mm256_storeu_ps(y + o + g * 8, _mm256_mul_ps(l, s));
        }
    }
}

static inline void turbo_x86_dequant(const char *x, float *y, int64_t n, int bits) {
    const uint8_t *p = (const uint8_t *)x;
    switch (bits) {
    case 2: turbo_x86_dequant_b(p, y, n, 2); break;
    case 3: turbo_x86_dequant_b(p, y, n, 3); break;
    case 4: turbo_x86_dequant_b(p, y, n, 4); break;
    case 5: turbo_x86_dequant_b(p, y, n, 5); break;
    default: turbo_x86_dequant_b(p, y, n, 8); break;
    }
}
