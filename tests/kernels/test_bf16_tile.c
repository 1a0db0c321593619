/*
 * test_bf16_tile.c - the bf16 dot in the vdpbf16ps order (kernels/ref/bf16_dp_ref.h) and its
 * tiles (kernels/cpu/x86/bf16_x86.h):
 *
 *   - the twin against the plain double-sum bf16 dot (dot_ref.h), within float rounding, for
 *     lengths that are and are not multiples of the 32-value chunk;
 *   - the twin on hand-made rows whose result depends on the order (the odd value of a pair
 *     before the even one, lanes summed by halves), on subnormal inputs (read as zero) and on
 *     subnormal lanes (flushed), against values worked out here;
 *   - every tile this CPU runs (AVX2 FMA, AVX-512 FMA, AVX512-BF16 vdpbf16ps) against the twin
 *     bit for bit: 4 and 8 rows x 1..HEARTH_TILE_NT tokens, lengths 1 to 2065 (odd, partial
 *     chunks), rows and tokens with gaps between them; outputs outside the tile untouched; the
 *     vdpbf16ps tile also on the subnormal rows above;
 *   - hearth_matmul with each kernel set (scalar, avx2 and avx512 as the CPU allows: the
 *     dispatch forced down), 1 and 2 threads: from HEARTH_BF16_DP_MIN_TOK tokens every element
 *     equals the twin (rows in whole 4s through the tile, the odd rows through the twin), below
 *     it and with per_row the set's one-row dot; and the dispatch picks vdpbf16ps exactly when
 *     CPUID reports AVX512-BF16 and HEARTH_BF16_DPBF16=1 asks for it (the tile itself is
 *     tested above either way).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/thread.h"
#include "kernels/kernels.h"
#include "kernels/ref/bf16_dp_ref.h"
#include "kernels/ref/dot_ref.h"
#include "tensor/dtype.h"
#include "test.h"
#if defined(__x86_64__)
#include "kernels/cpu/x86/bf16_x86.h"
#endif

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint32_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}
static float rnd_unit(void) { return (float)((double)rnd() / 4294967296.0 * 2.0 - 1.0); }
static bool same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }
static void fill(uint16_t *v, int64_t n, float scale) {
    for (int64_t i = 0; i < n; i++) v[i] = hearth_fp32_to_bf16(rnd_unit() * scale);
}

TEST(twin_near_double_dot) {
    enum { MAXN = 4099 };
    static uint16_t x[MAXN], y[MAXN];
    static const int64_t ns[] = {1, 2, 3, 31, 32, 33, 64, 95, 256, 1000, 2048, 4099};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        int64_t n = ns[i];
        fill(x, n, 1.0f);
        fill(y, n, 3.0f);
        float got, want;
        double mag = 0;
        hearth_vec_dot_bf16_dp_ref(n, &got, x, y);
        hearth_vec_dot_bf16_ref(n, &want, x, y);
        for (int64_t k = 0; k < n; k++) mag += fabs((double)hearth_bf16_to_fp32(x[k]) * hearth_bf16_to_fp32(y[k]));
        /* n products rounded into 16 lanes, then a 4-level tree: |error| <= (n/16 + 4) eps sum|p| */
        CHECK_NEAR(got, want, ((double)n / 16 + 4) * 1.2e-7 * mag + 1e-30);
    }
}

/* Rows of n values, zero but for the given (index, x, y) triples. */
typedef struct { int i; float x, y; } term;
static float twin_of(int64_t n, const term *t, int nt, uint16_t *x, uint16_t *y) {
    memset(x, 0, (size_t)n * 2);
    memset(y, 0, (size_t)n * 2);
    for (int k = 0; k < nt; k++) {
        x[t[k].i] = hearth_fp32_to_bf16(t[k].x);
        y[t[k].i] = hearth_fp32_to_bf16(t[k].y);
    }
    float s;
    hearth_vec_dot_bf16_dp_ref(n, &s, x, y);
    return s;
}

TEST(twin_worked_examples) {
    uint16_t x[64], y[64];
    const float big = 16777216.0f; /* 2^24: adding 1 to it is lost */
    /* lane 0: odd 2^24, even 1 (lost), next chunk odd -2^24 (-> 0), even 1: 1. Even first
     * would give ((1 + 2^24) + 1) - 2^24 = 0. */
    term order[] = {{1, big, 1}, {0, 1, 1}, {33, -big, 1}, {32, 1, 1}};
    CHECK_EQ(twin_of(64, order, 4, x, y), 1.0f);
    /* lanes summed by halves: lane 0 = 2^24, lane 8 = 1, lane 1 = -2^24, lane 9 = 1:
     * h8_0 = 2^24 + 1 = 2^24, h8_1 = -2^24 + 1 = -2^24 + 1 (exact), sum 1; in lane order
     * ((2^24 - 2^24) + 1 + 1) it would be 2. */
    term tree[] = {{0, big, 1}, {16, 1, 1}, {2, -big, 1}, {18, 1, 1}};
    CHECK_EQ(twin_of(32, tree, 4, x, y), 1.0f);
    /* a subnormal input is zero (2^-130 x 2^100 would be 2^-30) */
    term daz[] = {{5, 0x1p-130f, 0x1p100f}, {6, 0.5f, 0.5f}};
    CHECK_EQ(twin_of(7, daz, 2, x, y), 0.25f);
    /* a subnormal lane is flushed (2^-70 x 2^-70 = 2^-140) */
    term ftz[] = {{3, 0x1p-70f, 0x1p-70f}};
    float f = twin_of(4, ftz, 1, x, y);
    CHECK(f == 0.0f);
}

#if defined(__x86_64__)
typedef struct {
    const char *name;
    hearth_vec_dot_tile_fn fn;
    bool ok;
} tile_impl;

static int tiles_here(tile_impl *t) {
    int n = 0;
    t[n++] = (tile_impl){"avx2", hearth_tile_bf16_dp_avx2, hearth_isa_available(HEARTH_ISA_AVX2)};
    t[n++] = (tile_impl){"avx512", hearth_tile_bf16_dp_avx512, hearth_isa_available(HEARTH_ISA_AVX512)};
    t[n++] = (tile_impl){"avx512bf16", hearth_tile_bf16_dp_avx512bf16,
                         hearth_isa_available(HEARTH_ISA_AVX512) && __builtin_cpu_supports("avx512bf16")};
    return n;
}

TEST(tiles_equal_twin) {
    enum { MAXN = 2065, GAP = 24, NT = HEARTH_TILE_NT, R = 8, BS = R + 3 };
    static uint16_t wt[R * (MAXN + GAP)], act[NT * (MAXN + GAP)];
    static const int64_t ns[] = {1, 2, 7, 31, 32, 33, 63, 64, 100, 255, 256, 1000, 2048, 2065};
    tile_impl impl[3];
    int n_impl = tiles_here(impl), compared = 0;
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
        const int64_t n = ns[ni];
        const size_t bx = (size_t)(n + GAP) * 2, by = (size_t)(n + GAP / 2) * 2;
        for (int rep = 0; rep < 3; rep++) {
            for (int r = 0; r < R; r++) fill((uint16_t *)((uint8_t *)wt + r * bx), n, rep == 1 ? 40.0f : 0.05f);
            for (int t = 0; t < NT; t++) fill((uint16_t *)((uint8_t *)act + t * by), n, rep == 2 ? 1e-3f : 9.0f);
            float want[NT][R];
            for (int t = 0; t < NT; t++)
                for (int r = 0; r < R; r++)
                    hearth_vec_dot_bf16_dp_ref(n, &want[t][r], (uint8_t *)wt + r * bx, (uint8_t *)act + t * by);
            for (int k = 0; k < n_impl; k++) {
                if (!impl[k].ok) continue;
                for (int nr = 4; nr <= R; nr += 4)
                    for (int nt = 1; nt <= NT; nt++) {
                        float got[NT][BS];
                        for (int t = 0; t < NT; t++)
                            for (int r = 0; r < BS; r++) got[t][r] = -1.0f;
                        impl[k].fn(n, &got[0][0], BS, wt, bx, nr, act, by, nt);
                        for (int t = 0; t < NT; t++)
                            for (int r = 0; r < BS; r++) {
                                bool in = t < nt && r < nr;
                                bool ok = in ? same_bits(got[t][r], want[t][r]) : got[t][r] == -1.0f;
                                if (!ok)
                                    fprintf(stderr, "  %s n %lld nr %d nt %d row %d tok %d: %.9g vs %.9g\n",
                                            impl[k].name, (long long)n, nr, nt, r, t, got[t][r],
                                            in ? want[t][r] : -1.0f);
                                CHECK(ok);
                            }
                        compared++;
                    }
            }
        }
    }
    if (compared == 0) TEST_SKIP("no x86 SIMD set on this CPU");
}

/* vdpbf16ps reads subnormal inputs as zero and flushes subnormal lanes, as the twin does. */
TEST(vdpbf16ps_tile_flushes_as_twin) {
    tile_impl impl[3];
    tiles_here(impl);
    if (!impl[2].ok) TEST_SKIP("no AVX512-BF16 on this CPU");
    enum { N = 40 };
    static uint16_t w[4][N], a[1][N];
    float want[4], got[4];
    for (int r = 0; r < 4; r++) {
        fill(w[r], N, 1.0f);
        fill(a[0], N, 1.0f);
    }
    w[0][3] = 0x0001;               /* subnormal weight */
    a[0][3] = hearth_fp32_to_bf16(0x1p100f);
    w[1][5] = hearth_fp32_to_bf16(0x1p-70f); /* lane underflows */
    a[0][5] = hearth_fp32_to_bf16(0x1p-70f);
    for (int k = 0; k < N; k++) w[2][k] = w[3][k] = 0;
    w[2][7] = hearth_fp32_to_bf16(0x1p-70f);
    a[0][6] = 0x8001; /* negative subnormal activation */
    w[3][6] = hearth_fp32_to_bf16(0x1p120f);
    for (int r = 0; r < 4; r++) hearth_vec_dot_bf16_dp_ref(N, &want[r], w[r], a[0]);
    impl[2].fn(N, got, 4, w, sizeof w[0], 4, a, sizeof a[0], 1);
    for (int r = 0; r < 4; r++) {
        if (!same_bits(got[r], want[r])) fprintf(stderr, "  row %d: %a vs %a\n", r, got[r], want[r]);
        CHECK(same_bits(got[r], want[r]));
    }
}
#endif

/* Each set (the dispatch forced to it): hearth_matmul of bf16 weights against the twin from
 * HEARTH_BF16_DP_MIN_TOK tokens on, against the set's vec_dot below it and with per_row. */
TEST(matmul_each_set) {
    enum { NIN = 161, NOUT = 23, NTOK = 13 };
    static uint16_t w[NOUT * NIN];
    static float x[NTOK * NIN], y[NTOK * NOUT];
    static uint16_t xb[NTOK * NIN];
    hearth_pool *pools[2] = {hearth_pool_create(1), hearth_pool_create(2)};
    CHECK(pools[0] && pools[1]);
    fill(w, NOUT * NIN, 0.5f);
    for (int i = 0; i < NTOK * NIN; i++) x[i] = rnd_unit() * 4.0f;
    hearth_isa saved = hearth_kernels_isa();
    int sets = 0;
    for (int isa = HEARTH_ISA_SCALAR; isa < HEARTH_ISA_COUNT; isa++) {
        if (!hearth_kernels_select((hearth_isa)isa)) continue;
        const hearth_kernel_traits *tr = hearth_kernels_traits(HEARTH_TYPE_BF16);
        CHECK(tr && tr->vec_dot_batch == hearth_vec_dot_bf16_dp_ref);
        CHECK(tr && tr->vec_dot_batch_min == HEARTH_BF16_DP_MIN_TOK);
#if defined(__x86_64__)
        if (isa == HEARTH_ISA_AVX512)
            CHECK(tr->vec_dot_batch_tile == (__builtin_cpu_supports("avx512bf16") && getenv("HEARTH_BF16_DPBF16") &&
                                                         !strcmp(getenv("HEARTH_BF16_DPBF16"), "1")
                                                     ? hearth_tile_bf16_dp_avx512bf16
                                                     : hearth_tile_bf16_dp_avx512));
        if (isa == HEARTH_ISA_AVX2) CHECK(tr->vec_dot_batch_tile == hearth_tile_bf16_dp_avx2);
#endif
        size_t scratch_n = hearth_matmul_scratch_bytes(HEARTH_TYPE_BF16, NIN, NTOK, 2);
        void *scratch = aligned_alloc(64, (scratch_n + 63) & ~(size_t)63);
        CHECK(scratch != NULL);
        tr->from_float(x, xb, (int64_t)NTOK * NIN); /* the activations as the matmul rounds them */
        for (int p = 0; p < 2; p++)
            for (int per_row = 0; per_row < 2; per_row++)
                for (int ntok = 1; ntok <= NTOK; ntok += 3) {
                    for (int i = 0; i < NTOK * NOUT; i++) y[i] = NAN;
                    hearth_matmul_part part = {HEARTH_TYPE_BF16, w, NIN * 2, NOUT, y, NOUT, per_row != 0};
                    hearth_matmul_n(pools[p], &part, 1, NIN, x, ntok, scratch);
                    bool dp = !per_row && ntok >= HEARTH_BF16_DP_MIN_TOK;
                    for (int t = 0; t < ntok; t++)
                        for (int r = 0; r < NOUT; r++) {
                            float want;
                            (dp ? tr->vec_dot_batch : tr->vec_dot)(NIN, &want, w + r * NIN, xb + t * NIN);
                            if (!same_bits(y[t * NOUT + r], want))
                                fprintf(stderr, "  %s ntok %d per_row %d row %d tok %d: %.9g vs %.9g\n",
                                        hearth_isa_name((hearth_isa)isa), ntok, per_row, r, t, y[t * NOUT + r], want);
                            CHECK(same_bits(y[t * NOUT + r], want));
                        }
                }
        free(scratch);
        sets++;
    }
    CHECK(hearth_kernels_select(saved));
    CHECK(sets >= 1);
    for (int p = 0; p < 2; p++) hearth_pool_destroy(pools[p]);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
