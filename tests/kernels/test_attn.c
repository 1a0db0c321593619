/*
 * test_attn.c - the SIMD attention (keys transposed once, then each head against the copy:
 * kernels.h hearth_attn_kernels) against hearth_attn_head_paged_ref, bit for bit.
 *
 * Random queries and f16 caches (values spread over several binades, so the sums round), head
 * sizes 16..256, block sizes 1, 3, 16 and
 * 32 with a shuffled block table (keys of one vector come from different blocks), windows that
 * start at 0 and past it (sliding window), key counts that do and do not fill a vector, with and
 * without a soft cap. The keys are copied in pieces of 16..64 keys, as the CPU backend splits the
 * copy over threads. Every output float must equal the reference's exactly: the kernels keep the
 * reference's order of every sum (attn_avx512.c).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/ref/attn_paged_ref.h"
#include "tensor/dtype.h"
#include "test.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    float u = (float)(rng >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
    return u * (float)(1 << (rng >> 60 & 3)); /* magnitudes up to 8 */
}

enum { MAX_BLOCKS = 64 };

/* Runs every available SIMD set on one configuration; returns the number of mismatching floats. */
static int compare(int64_t head_dim, int32_t bs, int64_t n_head_kv, int64_t j0, int64_t j1, bool f16, float softcap) {
    int64_t stride = n_head_kv * head_dim, n_blocks = (j1 + bs - 1) / bs + 3;
    if (n_blocks > MAX_BLOCKS * 8) return -1;
    size_t esz = f16 ? 2 : 4, n_el = (size_t)(n_blocks * bs * stride);
    void *k = malloc(n_el * esz), *v = malloc(n_el * esz);
    float *q = malloc((size_t)head_dim * sizeof(float)), *scores = malloc((size_t)j1 * sizeof(float));
    float *want = malloc((size_t)head_dim * sizeof(float)), *got = malloc((size_t)head_dim * sizeof(float));
    int64_t jb = j0 & ~(int64_t)15, ld = (j1 - jb + 15) & ~(int64_t)15;
    float *kt = malloc((size_t)(head_dim * ld) * sizeof(float));
    scores = realloc(scores, (size_t)(j1 + 16) * sizeof(float));
    int32_t *table = malloc((size_t)n_blocks * sizeof(int32_t));
    for (size_t i = 0; i < n_el; i++) {
        if (f16) {
            ((uint16_t *)k)[i] = hearth_fp32_to_fp16(rnd());
            ((uint16_t *)v)[i] = hearth_fp32_to_fp16(rnd());
        } else {
            ((float *)k)[i] = rnd();
            ((float *)v)[i] = rnd();
        }
    }
    for (int64_t d = 0; d < head_dim; d++) q[d] = rnd();
    for (int64_t b = 0; b < n_blocks; b++) table[b] = (int32_t)b;
    for (int64_t b = n_blocks - 1; b > 0; b--) { /* shuffle: logical blocks land anywhere */
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        int64_t o = (int64_t)(rng % (uint64_t)(b + 1));
        int32_t t = table[b];
        table[b] = table[o];
        table[o] = t;
    }
    int bad = 0;
    /* the last kv head, so offsets inside a row are exercised */
    const char *kh = (const char *)k + (size_t)((n_head_kv - 1) * head_dim) * esz;
    const char *vh = (const char *)v + (size_t)((n_head_kv - 1) * head_dim) * esz;
    hearth_attn_head_paged_ref(q, kh, vh, stride, table, bs, f16, head_dim, j0, j1, 0.125f, softcap, scores, want);
    for (int isa = HEARTH_ISA_AVX2; isa < HEARTH_ISA_COUNT; isa++) {
        const hearth_attn_kernels *ak = hearth_kernels_attn_isa((hearth_isa)isa);
        if (!ak) continue;
        memset(got, 0xff, (size_t)head_dim * sizeof(float));
        memset(kt, 0xff, (size_t)(head_dim * ld) * sizeof(float));
        for (int64_t jc = jb; jc < j1;) { /* pieces of 16..64 keys, starting at multiples of 16 */
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            int64_t end = jc + 16 * (int64_t)(1 + rng % 4);
            int64_t lo = jc > j0 ? jc : j0, hi = end < j1 ? end : j1;
            ak->keys_t(kh, stride, table, bs, head_dim, lo, hi, kt + (jc - jb), ld);
            jc = end;
        }
        ak->head_kt(q, kt, ld, jb, vh, stride, table, bs, head_dim, j0, j1, 0.125f, softcap, scores, got);
        for (int64_t d = 0; d < head_dim; d++) {
            if (memcmp(&want[d], &got[d], sizeof(float)) != 0) {
                if (bad < 3)
                    fprintf(stderr, "  %s hd=%lld bs=%d j=[%lld,%lld) f16=%d cap=%g: out[%lld] %.9g != %.9g\n",
                            hearth_isa_name((hearth_isa)isa), (long long)head_dim, bs, (long long)j0,
                            (long long)j1, f16, (double)softcap, (long long)d, (double)got[d], (double)want[d]);
                bad++;
            }
        }
    }
    free(k), free(v), free(q), free(scores), free(want), free(got), free(table), free(kt);
    return bad;
}

TEST(simd_heads_equal_reference_bitwise) {
    static const int64_t dims[] = {16, 32, 64, 128, 256};
    static const int32_t bss[] = {1, 3, 16, 32};
    static const int64_t lens[] = {1, 7, 8, 15, 16, 17, 33, 100};
    int n = 0;
    for (size_t a = 0; a < sizeof dims / sizeof dims[0]; a++)
        for (size_t b = 0; b < sizeof bss / sizeof bss[0]; b++)
            for (size_t c = 0; c < sizeof lens / sizeof lens[0]; c++) {
                int64_t j1 = lens[c];
                CHECK_EQ(compare(dims[a], bss[b], 3, 0, j1, true, 0.0f), 0);
                if (j1 > 5) CHECK_EQ(compare(dims[a], bss[b], 2, j1 / 3, j1, true, 0.0f), 0); /* window */
                n += 2;
            }
    CHECK_EQ(compare(64, 16, 1, 0, 300, true, 50.0f), 0); /* soft cap */
    CHECK_EQ(compare(256, 16, 1, 37, 555, true, 0.0f), 0);
    CHECK(n > 0);
}

TEST(sets_with_simd_attention) {
    CHECK(hearth_kernels_attn_isa(HEARTH_ISA_REF) == NULL);
    CHECK(hearth_kernels_attn_isa(HEARTH_ISA_SCALAR) == NULL);
    if (hearth_isa_available(HEARTH_ISA_AVX2)) CHECK(hearth_kernels_attn_isa(HEARTH_ISA_AVX2) != NULL);
    if (!hearth_isa_available(HEARTH_ISA_AVX2) && !hearth_isa_available(HEARTH_ISA_AVX512))
        TEST_SKIP("no SIMD set on this CPU: the reference is all there is to compare");
}

int main(int argc, char **argv) { return test_main(argc, argv); }
