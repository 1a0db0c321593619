/*
 * test_llamacpp_order.c - the kernels that repeat llama.cpp's x86 operation order (kernels/ref/
 * llamacpp_order_ref.h, attn_llamacpp_order.h) against their plain-C twins, bit for bit:
 *
 *   - the q4_0 / q4_1 / q5_0 / q8_0 / q4_K / q6_K dots of every SIMD set (and q4_K's gemm
 *     order) equal the scalar set's (the twins) on random blocks of several lengths;
 *   - the tiles (4 or 8 rows x 1..HEARTH_TILE_NT tokens in one call) give every (row, token) pair the twin's dot,
 *     and so does hearth_matmul, which uses them, on 1 and 2 threads; q6_K's tiled-order tiles
 *     also on hand-built blocks at the extremes (all-63 values, scales -128 / 127, bsums of
 *     all -128 / all 127 activations);
 *   - the twins themselves on a worked example: lane sums, the hsum8 tree and the q4_1
 *     minimum chain give the value computed by hand here;
 *   - SwiGLU's AVX-512 kernel equals hearth_swiglu_x86_ref, including the huge-argument
 *     branches and tails; hearth_expf_x86_ref stays within 2 ulp of libm's expf; GeGLU's
 *     f16-table kernel equals hearth_geglu_f16_ref;
 *   - the attention heads (the FMA build of the twin, the AVX2 and AVX-512 kernels) equal the
 *     plain twin in both orders (single token and several): random heads of sizes 64, 80, 128
 *     and 256, odd lengths, sliding windows, soft-cap, paged caches of several block sizes,
 *     score ranges wide enough for subnormal and zero exponentials; the probabilities too;
 *     rows outside the attended keys hold NaN, so reading them fails; softmax sums to ~1.
 *   - the group kernels equal the twin run per query: several queries of one kv head in the
 *     batch order, and the G query heads of one decoding token in the single order;
 * That the whole default path then gives llama.cpp's logits bit for bit is test_llamacpp.c.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/thread.h"
#include "kernels/kernels.h"
#include "kernels/cpu/x86/attn_x86.h"
#include "kernels/cpu/x86/quant_x86.h"
#include "kernels/ref/ops_ref.h"
#include "kernels/ref/llamacpp_order_ref.h"
#include "tensor/dtype.h"
#include "tensor/quant.h"
#include "test.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}
static float rnd_unit(void) { return (float)((double)rnd() / 4294967296.0 * 2.0 - 1.0); }

static bool same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

TEST(block_dots_simd_equal_twins) {
    static const hearth_type types[] = {HEARTH_TYPE_Q4_0, HEARTH_TYPE_Q4_1, HEARTH_TYPE_Q5_0,
                                        HEARTH_TYPE_Q8_0, HEARTH_TYPE_Q4_K, HEARTH_TYPE_Q6_K};
    enum { MAXN = 40 * 32 };
    static float x[MAXN];
    static uint8_t w[MAXN * 2], a[MAXN * 2];
    int compared = 0;
    for (size_t it = 0; it < sizeof types / sizeof types[0]; it++) {
        hearth_type t = types[it];
        const hearth_kernel_traits *sc = hearth_kernels_traits_isa(t, HEARTH_ISA_SCALAR);
        hearth_type at = sc->vec_dot_type;
        int64_t blk = t == HEARTH_TYPE_Q4_K || t == HEARTH_TYPE_Q6_K ? 256 : 32;
        for (int64_t n = blk; n <= MAXN; n += 3 * blk) {
            for (int rep = 0; rep < 20; rep++) {
                /* realistic weights (quantized from floats) with a random activation row */
                for (int64_t i = 0; i < n; i++) x[i] = rnd_unit() * (rep % 3 == 0 ? 40.0f : 1.0f);
                sc->from_float(x, w, n);
                for (int64_t i = 0; i < n; i++) x[i] = rnd_unit() * (rep % 2 ? 7.0f : 0.01f);
                hearth_kernels_traits_isa(at, HEARTH_ISA_SCALAR)->from_float(x, a, n);
                for (int gemm = 0; gemm < 2; gemm++) {
                    hearth_vec_dot_fn ref = gemm ? sc->vec_dot_gemm : sc->vec_dot;
                    if (!ref) continue;
                    float want;
                    ref(n, &want, w, a);
                    for (int isa = HEARTH_ISA_AVX2; isa < HEARTH_ISA_COUNT; isa++) {
                        const hearth_kernel_traits *tr = hearth_kernels_traits_isa(t, (hearth_isa)isa);
                        if (!tr) continue;
                        CHECK(!gemm || tr->vec_dot_gemm != NULL);
                        if (gemm && !tr->vec_dot_gemm) continue;
                        float got;
                        (gemm ? tr->vec_dot_gemm : tr->vec_dot)(n, &got, w, a);
                        if (!same_bits(got, want))
                            fprintf(stderr, "  %s%s %s n %lld: %.9g vs twin %.9g\n", hearth_type_name((int)t),
                                    gemm ? " (gemm)" : "", hearth_isa_name((hearth_isa)isa), (long long)n, got,
                                    want);
                        CHECK(same_bits(got, want));
                        compared++;
                    }
                }
            }
        }
    }
    if (compared == 0) TEST_SKIP("no SIMD set on this CPU");
}

/* Every tile (nr rows x nt tokens) result equals the scalar twin's dot of its (row, token) pair
 * (q4_K: in both its orders; q6_K: in both, the tiled one being vec_dot_batch), for nr 4 and 8,
 * nt 1..HEARTH_TILE_NT, several lengths (one past what the AVX-512 tiles prepare activations
 * for), rows with a gap between them, and weights with extreme scales; outputs outside the
 * tile stay untouched. */
TEST(tiles_equal_twins) {
    const uint64_t keep = rng; /* the later tests draw the same numbers whatever this one draws */
    static const hearth_type types[] = {HEARTH_TYPE_Q4_0, HEARTH_TYPE_Q4_1, HEARTH_TYPE_Q5_0, HEARTH_TYPE_Q8_0,
                                        HEARTH_TYPE_Q4_K, HEARTH_TYPE_Q6_K};
    enum { MAXN = 24 * 32, BIGN = 17 * 256, GAP = 12, NT = HEARTH_TILE_NT, R = 8, BS = R + 2 };
    static float x[BIGN];
    static uint8_t w[R][BIGN * 2], a[NT][BIGN * 2];
    static uint8_t wt[R * (BIGN * 2 + GAP)];
    int compared = 0;
    for (size_t it = 0; it < sizeof types / sizeof types[0]; it++) {
        hearth_type t = types[it];
        const hearth_kernel_traits *sc = hearth_kernels_traits_isa(t, HEARTH_ISA_SCALAR);
        const hearth_kernel_traits *sa = hearth_kernels_traits_isa(sc->vec_dot_type, HEARTH_ISA_SCALAR);
        const int64_t blk = t == HEARTH_TYPE_Q4_K || t == HEARTH_TYPE_Q6_K ? 256 : 32;
        const int64_t step = blk == 32 ? 5 * 32 : 256;
        for (int64_t n = blk; n <= BIGN; n = n + step <= MAXN ? n + step : n < BIGN ? BIGN : BIGN + 1) {
            size_t rb = hearth_row_size(t, n), bx = rb + GAP, by = hearth_row_size(sc->vec_dot_type, n);
            for (int rep = 0; rep < 12; rep++) {
                for (int r = 0; r < R; r++) {
                    float scale = rep % 3 == 0 ? 40.0f * (float)(r % 4 + 1) : rep % 3 == 1 ? 1e-3f : 1.0f;
                    for (int64_t i = 0; i < n; i++) x[i] = rnd_unit() * scale;
                    sc->from_float(x, w[r], n);
                    memcpy(wt + (size_t)r * bx, w[r], rb);
                }
                static uint8_t act[NT * BIGN * 2];
                for (int tk = 0; tk < NT; tk++) {
                    float scale = tk % 3 == 2 ? 60.0f : rep % 2 ? 7.0f : 0.01f;
                    for (int64_t i = 0; i < n; i++) x[i] = rnd_unit() * scale;
                    sa->from_float(x, a[tk], n);
                    memcpy(act + (size_t)tk * by, a[tk], by);
                }
                for (int order = 0; order < 3; order++) { /* vec_dot, vec_dot_gemm, vec_dot_batch */
                    hearth_vec_dot_fn ref = order == 1   ? sc->vec_dot_gemm
                                            : order == 2 ? sc->vec_dot_batch
                                                         : sc->vec_dot;
                    if (!ref) continue;
                    float want[NT][R];
                    for (int tk = 0; tk < NT; tk++)
                        for (int r = 0; r < R; r++) ref(n, &want[tk][r], w[r], a[tk]);
                    for (int isa = HEARTH_ISA_AVX2; isa < HEARTH_ISA_COUNT; isa++) {
                        const hearth_kernel_traits *tr = hearth_kernels_traits_isa(t, (hearth_isa)isa);
                        if (!tr) continue;
                        hearth_vec_dot_tile_fn tile = order == 1   ? tr->vec_dot_gemm_tile
                                                      : order == 2 ? tr->vec_dot_batch_tile
                                                                   : tr->vec_dot_tile;
                        CHECK(tile != NULL); /* every SIMD set has tiles for these types and orders */
                        if (!tile) continue;
                        for (int nr = 4; nr <= R; nr += 4)
                            for (int nt = 1; nt <= NT; nt++) {
                                float got[NT][BS];
                                for (int tk = 0; tk < NT; tk++)
                                    for (int r = 0; r < BS; r++) got[tk][r] = -1.0f;
                                tile(n, &got[0][0], BS, wt, bx, nr, act, by, nt);
                                for (int tk = 0; tk < NT; tk++)
                                    for (int r = 0; r < BS; r++) {
                                        bool in = tk < nt && r < nr;
                                        bool ok = in ? same_bits(got[tk][r], want[tk][r]) : got[tk][r] == -1.0f;
                                        if (!ok)
                                            fprintf(stderr,
                                                    "  tile %s%s %s n %lld nr %d nt %d row %d tok %d: %.9g vs %.9g\n",
                                                    hearth_type_name((int)t),
                                                    order == 1 ? " (gemm)" : order == 2 ? " (tiled)" : "",
                                                    hearth_isa_name((hearth_isa)isa), (long long)n, nr, nt, r, tk,
                                                    got[tk][r], r < R ? want[tk][r] : 0.0f);
                                        CHECK(ok);
                                    }
                                compared++;
                            }
                    }
                }
            }
        }
    }
    rng = keep;
    if (compared == 0) TEST_SKIP("no SIMD set on this CPU");
}

/* q6_K's tiled-order tiles against the twin on blocks built byte by byte rather than quantized:
 * raw 6-bit values (all 63 in some rows), scales anywhere in -128..127 (all -128 or all 127 in
 * some blocks), activations anywhere in -128..127 (all -128 or all 127 in some blocks: the
 * extreme bsums) with their bsums, for nr 4 and 8, nt 1..HEARTH_TILE_NT and 1..9 blocks. The
 * integer block sums reach a few 10^8 here, so a lost carry or a wrong scale lane shows. */
TEST(q6_K_tiled_tiles_equal_twin_at_extremes) {
    const uint64_t keep = rng;
    enum { NB = 9, R = 8, NT = HEARTH_TILE_NT, BS = R + 1 };
    static hearth_block_q6_K w[R][NB];
    static hearth_block_q8_K a[NT][NB];
    const hearth_kernel_traits *sc = hearth_kernels_traits_isa(HEARTH_TYPE_Q6_K, HEARTH_ISA_SCALAR);
    CHECK(sc->vec_dot_batch == hearth_vec_dot_q6_K_q8_K_x86_tiled_ref);
    int compared = 0;
    for (int rep = 0; rep < 24; rep++) {
        for (int r = 0; r < R; r++)
            for (int b = 0; b < NB; b++) {
                hearth_block_q6_K *x = &w[r][b];
                int kind = (int)(rnd() % 5); /* 0: all 63; 1: scales -128; 2: scales 127; else random */
                for (int i = 0; i < 128; i++) x->ql[i] = kind == 0 ? 0xff : (uint8_t)rnd();
                for (int i = 0; i < 64; i++) x->qh[i] = kind == 0 ? 0xff : (uint8_t)rnd();
                for (int g = 0; g < 16; g++)
                    x->scales[g] = (int8_t)(kind == 1 ? -128 : kind == 2 ? 127 : (int)(rnd() % 256) - 128);
                if (kind == 0 && rep % 2) /* all 63 with extreme scales */
                    for (int g = 0; g < 16; g++) x->scales[g] = (int8_t)(g % 2 ? 127 : -128);
                x->d = hearth_fp32_to_fp16(rnd_unit() * (rep % 3 == 0 ? 1e-5f : rep % 3 == 1 ? 0.01f : 3.0f));
            }
        for (int tk = 0; tk < NT; tk++)
            for (int b = 0; b < NB; b++) {
                hearth_block_q8_K *y = &a[tk][b];
                int kind = (int)(rnd() % 4); /* 0: all -128; 1: all 127; else random */
                for (int e = 0; e < 256; e++)
                    y->qs[e] = (int8_t)(kind == 0 ? -128 : kind == 1 ? 127 : (int)(rnd() % 256) - 128);
                for (int g = 0; g < 16; g++) {
                    int sum = 0;
                    for (int e = 16 * g; e < 16 * g + 16; e++) sum += y->qs[e];
                    y->bsums[g] = (int16_t)sum;
                }
                y->d = rnd_unit() * (tk % 2 ? 1e-3f : 0.5f);
            }
        for (int nb = 1; nb <= NB; nb += rep % 2 ? 4 : 1) {
            const int64_t n = 256 * nb;
            float want[NT][R];
            for (int tk = 0; tk < NT; tk++)
                for (int r = 0; r < R; r++) sc->vec_dot_batch(n, &want[tk][r], w[r], a[tk]);
            for (int isa = HEARTH_ISA_AVX2; isa < HEARTH_ISA_COUNT; isa++) {
                const hearth_kernel_traits *tr = hearth_kernels_traits_isa(HEARTH_TYPE_Q6_K, (hearth_isa)isa);
                if (!tr) continue;
                CHECK(tr->vec_dot_batch == sc->vec_dot_batch && tr->vec_dot_batch_min == sc->vec_dot_batch_min);
                CHECK(tr->vec_dot_batch_tile != NULL);
                if (!tr->vec_dot_batch_tile) continue;
                for (int nr = 4; nr <= R; nr += 4)
                    for (int nt = 1; nt <= NT; nt++) {
                        float got[NT][BS];
                        for (int tk = 0; tk < NT; tk++)
                            for (int r = 0; r < BS; r++) got[tk][r] = -1.0f;
                        tr->vec_dot_batch_tile(n, &got[0][0], BS, w, sizeof w[0], nr, a, sizeof a[0], nt);
                        for (int tk = 0; tk < NT; tk++)
                            for (int r = 0; r < BS; r++) {
                                bool in = tk < nt && r < nr;
                                bool ok = in ? same_bits(got[tk][r], want[tk][r]) : got[tk][r] == -1.0f;
                                if (!ok)
                                    fprintf(stderr, "  q6_K tiled %s n %lld nr %d nt %d row %d tok %d: %.9g vs %.9g\n",
                                            hearth_isa_name((hearth_isa)isa), (long long)n, nr, nt, r, tk,
                                            got[tk][r], r < R ? want[tk][r] : 0.0f);
                                CHECK(ok);
                            }
                        compared++;
                    }
            }
        }
    }
    rng = keep;
    if (compared == 0) TEST_SKIP("no SIMD set on this CPU");
}

/* hearth_matmul with tiles (rows in 4s, a tail of single rows, token tiles of 1..8) gives every
 * output element the scalar twin's dot of its row and token (q4_K: the gemm order for the
 * tokens of full groups of four when there are more than three, so 13 tokens split a token
 * tile between the two orders; q6_K: the tiled order for every token from 8 tokens on), on 1
 * and 2 threads. */
TEST(matmul_with_tiles_equals_twins) {
    const uint64_t keep = rng;
    static const hearth_type types[] = {HEARTH_TYPE_Q4_0, HEARTH_TYPE_Q4_1, HEARTH_TYPE_Q5_0, HEARTH_TYPE_Q8_0,
                                        HEARTH_TYPE_Q4_K, HEARTH_TYPE_Q6_K};
    enum { OUT = 39, IN = 256, TOK = 13, LDY = OUT + 2 };
    static float x[TOK * IN], wf[IN], y[TOK * LDY];
    static uint8_t w[OUT * IN * 2], act[TOK * IN * 2];
    static uint8_t scratch[1 << 16] __attribute__((aligned(64)));
    hearth_pool *pool2 = hearth_pool_create(2);
    CHECK(pool2 != NULL);
    int compared = 0;
    hearth_isa was = hearth_kernels_isa();
    for (size_t it = 0; it < sizeof types / sizeof types[0]; it++) {
        hearth_type t = types[it];
        const hearth_kernel_traits *sc = hearth_kernels_traits_isa(t, HEARTH_ISA_SCALAR);
        const hearth_kernel_traits *sa = hearth_kernels_traits_isa(sc->vec_dot_type, HEARTH_ISA_SCALAR);
        size_t rb = hearth_row_size(t, IN), ab = hearth_row_size(sc->vec_dot_type, IN);
        for (int r = 0; r < OUT; r++) {
            for (int i = 0; i < IN; i++) wf[i] = rnd_unit() * (float)(r % 5 + 1);
            sc->from_float(wf, w + (size_t)r * rb, IN);
        }
        for (int i = 0; i < TOK * IN; i++) x[i] = rnd_unit() * 3.0f;
        for (int k = 0; k < TOK; k++) sa->from_float(x + k * IN, act + (size_t)k * ab, IN);
        for (int isa = HEARTH_ISA_AVX2; isa < HEARTH_ISA_COUNT; isa++) {
            if (!hearth_kernels_select((hearth_isa)isa)) continue;
            for (int n_tok = 1; n_tok <= TOK; n_tok += 2)
                for (int p = 0; p < 2; p++) {
                    CHECK(hearth_matmul_scratch_bytes(t, IN, n_tok, 2) <= sizeof scratch);
                    hearth_matmul(p ? pool2 : NULL, t, w, rb, OUT, IN, x, n_tok, y, LDY, scratch);
                    int gemm_rows = sc->vec_dot_gemm && n_tok > 3 ? n_tok - n_tok % 4 : 0;
                    hearth_vec_dot_fn dot =
                        sc->vec_dot_batch && n_tok >= sc->vec_dot_batch_min ? sc->vec_dot_batch : sc->vec_dot;
                    for (int k = 0; k < n_tok; k++)
                        for (int r = 0; r < OUT; r++) {
                            float want;
                            (k < gemm_rows ? sc->vec_dot_gemm : dot)(IN, &want, w + (size_t)r * rb,
                                                                     act + (size_t)k * ab);
                            CHECK(same_bits(y[k * LDY + r], want));
                        }
                    compared++;
                }
        }
    }
    hearth_kernels_select(was);
    hearth_pool_destroy(pool2);
    rng = keep;
    if (compared == 0) TEST_SKIP("no SIMD set on this CPU");
}

/* The two q4_K orders are the same sum: they agree to rounding, and differ somewhere. */
TEST(q4_K_orders_differ_only_by_rounding) {
    enum { N = 256 * 8 };
    static float x[N];
    static uint8_t w[N], a[N * 2];
    const hearth_kernel_traits *sc = hearth_kernels_traits_isa(HEARTH_TYPE_Q4_K, HEARTH_ISA_SCALAR);
    int differ = 0;
    for (int rep = 0; rep < 50; rep++) {
        for (int i = 0; i < N; i++) x[i] = rnd_unit();
        sc->from_float(x, w, N);
        for (int i = 0; i < N; i++) x[i] = rnd_unit() * 3.0f;
        hearth_kernels_traits_isa(HEARTH_TYPE_Q8_K, HEARTH_ISA_SCALAR)->from_float(x, a, N);
        float s1, s2;
        sc->vec_dot(N, &s1, w, a);
        sc->vec_dot_gemm(N, &s2, w, a);
        CHECK_NEAR(s1, s2, 1e-4 * (fabs(s1) + 1.0));
        differ += !same_bits(s1, s2);
    }
    CHECK(differ > 0);
}

/* The two q6_K orders (lanes, and llama.cpp's tiled matmul) are the same sum: they agree to
 * rounding and differ somewhere; the tiled one is the exact block integer scaled as documented. */
TEST(q6_K_orders_differ_only_by_rounding) {
    enum { N = 256 * 8 };
    static float x[N];
    static uint8_t w[N], a[N * 2];
    const hearth_kernel_traits *sc = hearth_kernels_traits_isa(HEARTH_TYPE_Q6_K, HEARTH_ISA_SCALAR);
    CHECK(sc->vec_dot_batch != NULL && sc->vec_dot_batch_min == 8);
    int differ = 0;
    for (int rep = 0; rep < 50; rep++) {
        for (int i = 0; i < N; i++) x[i] = rnd_unit();
        sc->from_float(x, w, N);
        for (int i = 0; i < N; i++) x[i] = rnd_unit() * 3.0f;
        hearth_kernels_traits_isa(HEARTH_TYPE_Q8_K, HEARTH_ISA_SCALAR)->from_float(x, a, N);
        float s1, s2;
        sc->vec_dot(N, &s1, w, a);
        sc->vec_dot_batch(N, &s2, w, a);
        CHECK_NEAR(s1, s2, 1e-4 * (fabs(s1) + 1.0));
        differ += !same_bits(s1, s2);
    }
    CHECK(differ > 0);
    /* one block, worked by hand: q = 33 everywhere, scales 1..16, qy = 1 everywhere (bsums 16):
     * S = sum_s s * (16 * 33 - 32 * 16) = 16 * 136 = 2176; d = 0.5, dy = 0.25 -> 272 */
    hearth_block_q6_K b;
    hearth_block_q8_K q;
    memset(&b, 0, sizeof b);
    memset(&q, 0, sizeof q);
    for (int e = 0; e < 128; e++) b.ql[e] = 0x11; /* low nibble 1 in all four quarters */
    for (int e = 0; e < 64; e++) b.qh[e] = 0xAA;       /* high bits 2 (-> 32) in all four */
    for (int g = 0; g < 16; g++) b.scales[g] = (int8_t)(g + 1);
    b.d = hearth_fp32_to_fp16(0.5f);
    q.d = 0.25f;
    for (int e = 0; e < 256; e++) q.qs[e] = 1;
    for (int g = 0; g < 16; g++) q.bsums[g] = 16;
    float s3;
    sc->vec_dot_batch(256, &s3, &b, &q);
    CHECK(same_bits(s3, 272.0f));
}

TEST(twin_worked_example) {
    /* one q4_1 block and one q8_1 block built by hand: d = 1, m = 0.5, nibbles j -> j % 16 */
    hearth_block_q4_1 w[2];
    hearth_block_q8_1 a[2];
    memset(w, 0, sizeof w);
    memset(a, 0, sizeof a);
    for (int b = 0; b < 2; b++) {
        w[b].d = hearth_fp32_to_fp16(1.0f);
        w[b].m = hearth_fp32_to_fp16(0.5f);
        a[b].d = hearth_fp32_to_fp16(b == 0 ? 0.25f : 1.0f / 1024);
        a[b].s = hearth_fp32_to_fp16(3.0f);
        for (int j = 0; j < 16; j++) w[b].qs[j] = (uint8_t)(j | (15 - j) << 4);
        for (int j = 0; j < 32; j++) a[b].qs[j] = (int8_t)(j - 16);
    }
    /* lane l of a block: sum over e in 4l..4l+3 of q(e) * (e - 16), q(e) = e for e < 16, else
     * 31 - e; scaled by dx * dy and accumulated by FMA; then hsum8, then + summs (= 3) */
    float acc[8] = {0};
    for (int b = 0; b < 2; b++) {
        float d = b == 0 ? 0.25f : 1.0f / 1024;
        for (int l = 0; l < 8; l++) {
            int p = 0;
            for (int e = 4 * l; e < 4 * l + 4; e++) p += (e < 16 ? e : 31 - e) * (e - 16);
            acc[l] = fmaf(d, (float)p, acc[l]);
        }
    }
    float want = (((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))) +
                 fmaf(0.5f, 3.0f, 0.5f * 3.0f);
    float got;
    hearth_vec_dot_q4_1_q8_1_x86_ref(64, &got, w, a);
    CHECK(same_bits(got, want));
    /* the quantizer: 127 / amax and half to even */
    float x[32] = {0};
    x[0] = 254.0f;
    x[1] = 1.0f;  /* 0.5 -> 0 */
    x[2] = 3.0f;  /* 1.5 -> 2 */
    x[3] = -5.0f; /* -2.5 -> -2 */
    hearth_block_q8_1 q;
    hearth_q8_1_from_float_x86_ref(x, &q, 32);
    CHECK_EQ(q.qs[0], 127);
    CHECK_EQ(q.qs[1], 0);
    CHECK_EQ(q.qs[2], 2);
    CHECK_EQ(q.qs[3], -2);
    CHECK_EQ(q.d, hearth_fp32_to_fp16(2.0f));
    CHECK_EQ(q.s, hearth_fp32_to_fp16(2.0f * 127.0f));
}

TEST(swiglu_simd_equals_twin) {
    if (!hearth_isa_available(HEARTH_ISA_AVX512)) TEST_SKIP("no avx512");
    enum { N = 4099 };
    static float g[N], u[N], g1[N], g2[N];
    for (int i = 0; i < N; i++) {
        g[i] = rnd_unit() * (i % 7 == 0 ? 200.0f : 12.0f); /* some past the +-88 exp limits */
        u[i] = rnd_unit();
    }
    g[5] = 0.0f;
    g[6] = -0.0f;
    memcpy(g1, g, sizeof g);
    memcpy(g2, g, sizeof g);
    hearth_swiglu_x86_ref(g1, u, N);
    hearth_swiglu_avx512(g2, u, N);
    int bad = 0;
    for (int i = 0; i < N; i++) bad += !same_bits(g1[i], g2[i]);
    CHECK_EQ(bad, 0);
    /* the approximation itself: close to libm's expf over the range SiLU uses */
    for (float v = -87.0f; v < 88.0f; v += 0.173f) {
        float e = hearth_expf_x86_ref(v), r = expf(v);
        int32_t ie, ir;
        memcpy(&ie, &e, 4);
        memcpy(&ir, &r, 4);
        CHECK(abs(ie - ir) <= 2);
    }
    CHECK_EQ(hearth_expf_x86_ref(-INFINITY), 0.0f);
}

/* GeGLU with the f16 table: the AVX-512 kernel equals the scalar one bit for bit, across the
 * +-10 cut-offs, values that round to f16 subnormals, zero or infinity, NaN in a vector, tails. */
TEST(geglu_f16_simd_equals_ref) {
    if (!hearth_isa_available(HEARTH_ISA_AVX512)) TEST_SKIP("no avx512");
    enum { N = 4099 };
    static float g[N], u[N], g1[N], g2[N];
    for (int i = 0; i < N; i++) {
        g[i] = rnd_unit() * (i % 5 == 0 ? 14.0f : i % 5 == 1 ? 1e-5f : 3.0f);
        u[i] = rnd_unit() * 2.0f;
    }
    const float edge[] = {-10.0f, 10.0f, nextafterf(-10.0f, 0.0f), nextafterf(10.0f, 0.0f), 0.0f, -0.0f, 1e-8f,
                          -1e-8f, 70000.0f, -70000.0f, INFINITY, -INFINITY, 9.998f, -9.998f, 65504.0f, 3e-7f};
    for (int i = 0; i < (int)(sizeof edge / sizeof edge[0]); i++) g[100 + i] = edge[i];
    g[200] = NAN;
    memcpy(g1, g, sizeof g);
    memcpy(g2, g, sizeof g);
    hearth_geglu_f16_ref(g1, u, N);
    hearth_geglu_f16_avx512(g2, u, N);
    int bad = 0, cut = 0;
    for (int i = 0; i < N; i++) {
        bad += !same_bits(g1[i], g2[i]);
        cut += g[i] <= -10.0f || g[i] >= 10.0f;
    }
    CHECK_EQ(bad, 0);
    CHECK(cut > 100); /* both branches past the table were exercised */
    CHECK(isnan(g2[200]));
}

/* One random head against the twin for every kernel of the order: the FMA build of the twin
 * and the vector kernels of each set this CPU runs. Returns the number of kernels compared. */
static int attn_case(int64_t hd, int32_t bs, int64_t ctx, int64_t j0, int64_t j1, bool single, float kscale,
                     float softcap) {
    /* ctx may pass MAXCTX by up to 63 and a block may be as large as ctx: two blocks of it */
    enum { MAXHD = 256, MAXCTX = 700, MAXROWS = 2 * (MAXCTX + 64) };
    const int64_t nkv = 2, stride = nkv * MAXHD;
    static uint16_t k[MAXROWS * 2 * MAXHD], v[MAXROWS * 2 * MAXHD];
    static float scores[MAXCTX + 64], sc2[MAXCTX + 64], q[MAXHD], o1[MAXHD], o2[MAXHD];
    static int32_t table[MAXROWS];
    const int64_t nblk = (ctx + bs - 1) / bs;
    CHECK(ctx <= MAXCTX + 64 && nblk * bs <= MAXROWS && hd <= MAXHD);
    if (ctx > MAXCTX + 64 || nblk * bs > MAXROWS || hd > MAXHD) return 0;
    for (int64_t i = 0; i < nblk; i++) table[i] = (int32_t)((i * 7 + 3) % nblk); /* a permutation when 7 !| nblk */
    if (nblk % 7 == 0)
        for (int64_t i = 0; i < nblk; i++) table[i] = (int32_t)(nblk - 1 - i);
    for (int64_t i = 0; i < nblk * bs * stride; i++) {
        k[i] = hearth_fp32_to_fp16(rnd_unit() * kscale);
        v[i] = hearth_fp32_to_fp16(rnd_unit());
    }
    /* rows outside the attended range hold NaN: a kernel that reads them shows it */
    for (int64_t j = 0; j < nblk * bs; j++) {
        if (j >= j0 && j < j1) continue;
        int64_t r = ((int64_t)table[j / bs] * bs + j % bs) * stride;
        for (int64_t d = 0; d < stride; d++) k[r + d] = v[r + d] = 0x7e00;
    }
    for (int64_t d = 0; d < hd; d++) q[d] = rnd_unit() * 2.0f;
    const uint16_t *kh = k + hd * (rnd() % 2), *vh = v + hd;
    const float scale = 1.0f / sqrtf((float)hd);
    for (int64_t i = 0; i < MAXCTX + 64; i++) scores[i] = sc2[i] = NAN;
    hearth_attn_head_x86_ref(q, kh, vh, stride, table, bs, hd, j0, j1, scale, softcap, single, scores, o1);
    double psum = 0;
    for (int64_t j = j0; j < j1; j++) psum += scores[j];
    CHECK_NEAR(psum, 1.0, 2e-3);
    static const hearth_attn_head_x86_fn fns[] = {hearth_attn_head_x86_fma, hearth_attn_head_x86_avx2,
                                                  hearth_attn_head_x86_avx512};
    static const hearth_isa needs[] = {HEARTH_ISA_AVX2, HEARTH_ISA_AVX2, HEARTH_ISA_AVX512};
    int compared = 0;
    for (int f = 0; f < 3; f++) {
        if (!hearth_isa_available(needs[f])) continue;
        memset(o2, 0xff, sizeof o2);
        fns[f](q, kh, vh, stride, table, bs, hd, j0, j1, scale, softcap, single, sc2, o2);
        int bad = 0;
        for (int64_t d = 0; d < hd; d++) bad += !same_bits(o1[d], o2[d]);
        for (int64_t j = 0; j < (j1 + 31) / 32 * 32; j++) bad += !same_bits(scores[j], sc2[j]);
        if (bad)
            fprintf(stderr, "  kernel %d hd %lld bs %d keys [%lld, %lld) single %d: %d values differ\n", f,
                    (long long)hd, bs, (long long)j0, (long long)j1, single, bad);
        CHECK_EQ(bad, 0);
        compared++;
    }
    return compared;
}

TEST(attention_simd_equals_twin) {
    static const int64_t hds[] = {64, 128, 256, 80};
    static const int32_t bss[] = {16, 7, 32, 700};
    int compared = 0;
    for (int rep = 0; rep < 96; rep++) {
        int64_t hd = hds[rep % 4];
        int32_t bs = bss[(rep / 4) % 4];
        int64_t j1 = 1 + (int64_t)(rnd() % 680);
        if (rep % 16 == 5) j1 = 64 * (1 + (int64_t)(rnd() % 8)); /* whole chunks of 64 */
        if (rep % 16 == 6) j1 = 65;
        int64_t j0 = rep % 3 == 0 && j1 > 40 ? j1 - 1 - (int64_t)(rnd() % 40) : 0; /* sliding windows */
        bool single = (rep / 2) % 2;
        /* wide score ranges put some exponentials far below 2^-126 (subnormal and zero) */
        float kscale = rep % 5 == 0 ? 60.0f : 3.0f;
        float softcap = rep % 7 == 3 ? 20.0f : 0.0f;
        compared += attn_case(hd, bs, j1 + (int64_t)(rnd() % 30), j0, j1, single, kscale, softcap);
    }
    if (compared == 0) TEST_SKIP("no avx2");
}

/* The vector expf of the softmax across the range its arguments take (x <= 0), through a
 * head whose scores are spread on purpose: one key per exponent range. */
TEST(attention_simd_expf_range) {
    int compared = 0;
    for (int rep = 0; rep < 8; rep++)
        compared += attn_case(64, 16, 256, 0, 200 + rep, rep % 2, 400.0f, 0.0f);
    if (compared == 0) TEST_SKIP("no avx2");
}

/* how many of the first hd values of rows 0..nq (row stride ld) differ in their bits */
static int rows_differ(const float *want, const float *got, int nq, int64_t hd, int64_t ld) {
    int bad = 0;
    for (int i = 0; i < nq; i++)
        for (int64_t d = 0; d < hd; d++) bad += !same_bits(want[i * ld + d], got[i * ld + d]);
    return bad;
}

/* a block table that scatters the blocks (reversed when 7 divides their count) */
static void block_table(int32_t *table, int64_t nblk) {
    for (int64_t i = 0; i < nblk; i++) table[i] = (int32_t)((i * 7 + 3) % nblk);
    if (nblk % 7 == 0)
        for (int64_t i = 0; i < nblk; i++) table[i] = (int32_t)(nblk - 1 - i);
}

/* random key and value rows for keys [lo, hi) of a paged cache of n keys, NaN elsewhere */
static void paged_fill(uint16_t *k, uint16_t *v, const int32_t *table, int64_t n, int32_t bs, int64_t stride,
                       int64_t lo, int64_t hi, float kscale) {
    for (int64_t j = 0; j < n; j++) {
        int64_t r = ((int64_t)table[j / bs] * bs + j % bs) * stride;
        for (int64_t d = 0; d < stride; d++) {
            bool in = j >= lo && j < hi;
            k[r + d] = in ? hearth_fp32_to_fp16(rnd_unit() * kscale) : 0x7e00;
            v[r + d] = in ? hearth_fp32_to_fp16(rnd_unit()) : 0x7e00;
        }
    }
}

/* The several-query kernels against the twin run per query (batch order): tiles of a prefill
 * (G heads x T consecutive tokens, causal, some with a window) and queries with unrelated
 * ranges; every value row outside the union of the ranges holds NaN, and in some tiles the
 * last key's value row is infinite: only the queries that attend it may see it. */
TEST(attention_group_equals_twin) {
    enum { MAXHD = 256, MAXCTX = 600, MAXROWS = MAXCTX + 64, NQ = HEARTH_ATTN_X86_GROUP_MAX };
    const int64_t stride = MAXHD;
    static uint16_t k[MAXROWS * MAXHD], v[MAXROWS * MAXHD];
    static float qs[NQ][MAXHD], want[NQ][MAXHD], got[NQ][MAXHD], sc[MAXCTX + 64], gsc[NQ * (MAXCTX + 64)];
    static int32_t table[MAXROWS];
    static const int64_t hds[] = {64, 256, 128, 80};
    static const int32_t bss[] = {16, 5, 64, 600};
    int compared = 0;
    for (int rep = 0; rep < 40; rep++) {
        const int64_t hd = hds[rep % 4];
        const int32_t bs = bss[(rep / 4) % 4];
        const int64_t nblk = (MAXCTX + bs - 1) / bs;
        block_table(table, nblk);
        int nq = 1 + (int)(rnd() % NQ);
        if (nq * hd > HEARTH_ATTN_X86_GROUP_FLOATS) nq = (int)(HEARTH_ATTN_X86_GROUP_FLOATS / hd);
        int64_t j0[NQ], j1[NQ], lo = MAXCTX, hi = 0;
        const int g = 1 + (int)(rnd() % 4), n_swa = rep % 3 == 0 ? 1 + (int)(rnd() % 50) : 0;
        const int64_t p0 = (int64_t)(rnd() % (MAXCTX - NQ));
        for (int i = 0; i < nq; i++) {
            if (rep % 5 == 4) { /* unrelated ranges */
                j1[i] = 1 + (int64_t)(rnd() % MAXCTX);
                j0[i] = (int64_t)(rnd() % (uint32_t)j1[i]);
            } else { /* token i / g of the tile at position p0 + i / g */
                int64_t p = p0 + i / g;
                j1[i] = p + 1;
                j0[i] = n_swa && p - n_swa + 1 > 0 ? p - n_swa + 1 : 0;
            }
            if (j0[i] < lo) lo = j0[i];
            if (j1[i] > hi) hi = j1[i];
            for (int64_t d = 0; d < hd; d++) qs[i][d] = rnd_unit() * 2.0f;
        }
        const float kscale = rep % 6 == 1 ? 60.0f : 3.0f, softcap = rep % 7 == 2 ? 15.0f : 0.0f;
        paged_fill(k, v, table, nblk * bs, bs, stride, lo, hi, kscale);
        if (rep % 5 != 4 && rep % 2) {
            int64_t r = ((int64_t)table[(hi - 1) / bs] * bs + (hi - 1) % bs) * stride;
            for (int64_t d = 0; d < stride; d++) v[r + d] = 0x7c00;
        }
        const float scale = 1.0f / sqrtf((float)hd);
        for (int i = 0; i < nq; i++)
            hearth_attn_head_x86_ref(qs[i], k, v, stride, table, bs, hd, j0[i], j1[i], scale, softcap, false, sc,
                                     want[i]);
        const float *qp[NQ];
        float *op[NQ];
        for (int i = 0; i < nq; i++) {
            qp[i] = qs[i];
            op[i] = got[i];
        }
        for (int isa = HEARTH_ISA_AVX2; isa < HEARTH_ISA_COUNT; isa++) {
            hearth_attn_group_x86_fn fn = hearth_kernels_attn_group_isa((hearth_isa)isa);
            if (!fn) continue;
            memset(got, 0xff, sizeof got);
            fn(nq, qp, op, j0, j1, k, v, stride, table, bs, hd, scale, softcap, gsc, MAXCTX + 64);
            const int bad = rows_differ(want[0], got[0], nq, hd, MAXHD);
            if (bad)
                fprintf(stderr, "  %s hd %lld bs %d nq %d: %d values differ\n", hearth_isa_name((hearth_isa)isa),
                        (long long)hd, bs, nq, bad);
            CHECK_EQ(bad, 0);
            compared++;
        }
    }
    CHECK(hearth_kernels_attn_group_isa(HEARTH_ISA_REF) == NULL);
    CHECK(hearth_kernels_attn_group_isa(HEARTH_ISA_SCALAR) == NULL);
    if (compared == 0) TEST_SKIP("no avx2");
}

/* The single-order group kernel (the G query heads of one decoding token) against the twin
 * run per query head with single = true: head sizes with and without a k % 64 tail, ranges
 * short of one 64-key chunk and past two tiles of 1024 keys, windows, soft-cap, G from 1
 * to HEARTH_ATTN_X86_SGROUP_MAX; value rows outside [j0, j1) hold NaN. */
TEST(attention_single_group_equals_twin) {
    /* MAXROWS: whole blocks of up to 700 keys */
    enum { MAXHD = 256, MAXCTX = 2200, MAXROWS = MAXCTX + 700, NQ = HEARTH_ATTN_X86_SGROUP_MAX, LD = MAXCTX + 64 };
    const int64_t stride = MAXHD;
    static uint16_t k[MAXROWS * MAXHD], v[MAXROWS * MAXHD];
    static float qs[NQ][MAXHD], want[NQ][MAXHD], got[NQ][MAXHD], sc[LD], gsc[NQ * LD];
    static int32_t table[MAXROWS];
    static const int64_t hds[] = {64, 80, 256, 112, 128};
    static const int32_t bss[] = {16, 7, 64, 700};
    int compared = 0;
    const float *qp[NQ];
    float *op[NQ];
    for (int i = 0; i < NQ; i++) {
        qp[i] = qs[i];
        op[i] = got[i];
    }
    for (int rep = 0; rep < 40; rep++) {
        const int64_t hd = hds[rep % 5];
        const int32_t bs = bss[(rep / 5) % 4];
        const int64_t nblk = (MAXCTX + bs - 1) / bs;
        block_table(table, nblk);
        const int nq = 1 + (int)(rnd() % NQ);
        const int64_t j1 = rep % 4 == 0 ? 1 + (int64_t)(rnd() % 70) : 1 + (int64_t)(rnd() % MAXCTX);
        const int64_t n_swa = rep % 3 == 0 ? 1 + (int64_t)(rnd() % 300) : 0;
        const int64_t j0 = n_swa && j1 - n_swa > 0 ? j1 - n_swa : 0;
        for (int i = 0; i < nq; i++)
            for (int64_t d = 0; d < hd; d++) qs[i][d] = rnd_unit() * 2.0f;
        const float kscale = rep % 6 == 1 ? 60.0f : 3.0f, softcap = rep % 7 == 2 ? 15.0f : 0.0f;
        paged_fill(k, v, table, nblk * bs, bs, stride, j0, j1, kscale);
        const float scale = 1.0f / sqrtf((float)hd);
        for (int i = 0; i < nq; i++)
            hearth_attn_head_x86_ref(qs[i], k, v, stride, table, bs, hd, j0, j1, scale, softcap, true, sc, want[i]);
        for (int isa = HEARTH_ISA_AVX2; isa < HEARTH_ISA_COUNT; isa++) {
            hearth_attn_sgroup_x86_fn fn = hearth_kernels_attn_sgroup_isa((hearth_isa)isa);
            if (!fn) continue;
            memset(got, 0xff, sizeof got);
            /* scratch as a caller leaves it: stale values, here NaN, wherever the kernel must clear */
            for (int64_t i = 0; i < NQ * LD; i++) gsc[i] = NAN;
            fn(nq, qp, op, j0, j1, k, v, stride, table, bs, hd, scale, softcap, gsc, LD);
            const int bad = rows_differ(want[0], got[0], nq, hd, MAXHD);
            if (bad)
                fprintf(stderr, "  %s hd %lld bs %d nq %d keys [%lld, %lld): %d values differ\n",
                        hearth_isa_name((hearth_isa)isa), (long long)hd, bs, nq, (long long)j0, (long long)j1, bad);
            CHECK_EQ(bad, 0);
            compared++;
        }
    }
    CHECK(hearth_kernels_attn_sgroup_isa(HEARTH_ISA_REF) == NULL);
    CHECK(hearth_kernels_attn_sgroup_isa(HEARTH_ISA_SCALAR) == NULL);
    if (compared == 0) TEST_SKIP("no avx2");
}

/* The CPU backend's attention op on a mixed step (two sequences decoding one token each, one
 * prefilling a chunk longer than a tile, one with two tokens; a sliding window on some runs),
 * 3 threads, against the twin per (token, head): the single-token order for the decoding
 * sequences and the batch order for the others, with each kernel set that has the order (the
 * 4 single-token kv heads do not divide among 3 threads: the last sequence's 2 go in halves).
 * Then the first decoding token alone: its 2 kv heads are fewer items than threads, so each
 * kv head's 3 query heads are cut into parts (1 + 2) for the single-order group kernel. */
TEST(backend_attention_equals_twin) {
    enum { NH = 6, NKV = 2, HD = 64, BS = 16, CTX = 160, NSEQ = 4, NTOK = 1 + 1 + 37 + 2 };
    const int64_t stride = NKV * HD, nblk = CTX / BS;
    static uint16_t k[NSEQ * CTX * NKV * HD], v[NSEQ * CTX * NKV * HD];
    static float q[NTOK * NH * HD], got[NTOK * NH * HD], want[HD], sc[CTX + 64];
    static int32_t table[NSEQ * (CTX / BS)];
    for (int64_t i = 0; i < NSEQ * nblk; i++) table[i] = (int32_t)((i * 5 + 1) % (NSEQ * nblk));
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        k[i] = hearth_fp32_to_fp16(rnd_unit() * 3.0f);
        v[i] = hearth_fp32_to_fp16(rnd_unit());
    }
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) q[i] = rnd_unit() * 2.0f;
    /* tokens interleaved across sequences, as a scheduler's mixed step may hold them */
    int32_t pos[NTOK], seq[NTOK];
    const int32_t len[NSEQ] = {1, 1, 37, 2}, start[NSEQ] = {90, 150, 100, 3};
    int32_t next[NSEQ] = {0};
    for (int t = 0, s = 0; t < NTOK; s = (s + 1) % NSEQ) {
        if (next[s] == len[s]) continue;
        seq[t] = s;
        pos[t++] = start[s] + next[s]++;
    }
    hearth_backend *be = hearth_backend_cpu_create(3, NTOK, 1024, CTX, NULL);
    CHECK(be != NULL);
    if (!be) return;
    const hearth_isa active = hearth_kernels_isa();
    int compared = 0;
    for (int isa = HEARTH_ISA_SCALAR; isa < HEARTH_ISA_COUNT; isa++) {
        if (!hearth_kernels_select((hearth_isa)isa)) continue;
        for (int run = 0; run < 4; run++) {
            const int swa = run % 2, nt = run < 2 ? NTOK : 1; /* token 0 is sequence 0's only one */
            hearth_attn_args a = {.n_tok = nt, .n_head = NH, .n_head_kv = NKV, .head_dim = HD, .head_dim_v = HD,
                                  .q = q, .out = got, .pos = pos, .seq = seq, .k = k, .v = v,
                                  .blocks = {.table = table, .max_blocks = (int32_t)nblk, .block_size = BS},
                                  .k_type = HEARTH_KV_F16, .v_type = HEARTH_KV_F16, .n_swa = swa ? 24 : 0, .scale = 0.125f};
            memset(got, 0xff, sizeof got);
            hearth_op_attention(be, &a);
            int bad = 0;
            for (int t = 0; t < nt; t++)
                for (int h = 0; h < NH; h++) {
                    int64_t p = pos[t], j0 = swa && p - 23 > 0 ? p - 23 : 0;
                    hearth_attn_head_x86_ref(q + (t * NH + h) * HD, k + (h / (NH / NKV)) * HD,
                                             v + (h / (NH / NKV)) * HD, stride, table + seq[t] * nblk, BS, HD, j0,
                                             p + 1, 0.125f, 0.0f, len[seq[t]] == 1, sc, want);
                    for (int d = 0; d < HD; d++) bad += !same_bits(want[d], got[(t * NH + h) * HD + d]);
                }
            if (bad)
                fprintf(stderr, "  %s window %d, %d tokens: %d values differ\n", hearth_isa_name((hearth_isa)isa), swa,
                        nt, bad);
            CHECK_EQ(bad, 0);
            compared++;
        }
    }
    hearth_kernels_select(active); /* leave the set as found */
    CHECK(compared >= 2);
    hearth_backend_destroy(be);
}

/* The CPU backend's RoPE op (one cosine/sine table per token, shared by its heads; rows split
 * over 3 threads when the step is large) against hearth_rope_ref per row, bit for bit: both
 * angle recipes, adjacent and half pairs, a partial rotation, an attention factor; one token
 * (inline) and 40 tokens (on the pool). */
TEST(backend_rope_equals_ref) {
    enum { T = 40, H = 8, D = 128 };
    static float x[T * H * D], got[T * H * D], want[T * H * D];
    int32_t pos[T];
    for (int t = 0; t < T; t++) pos[t] = 3 + t * 37;
    float inv_freq[D / 2];
    hearth_rope_inv_freq(inv_freq, D, 10000.0f, 1.0f);
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) x[i] = rnd_unit() * 4.0f;
    hearth_backend *be = hearth_backend_cpu_create(3, T, 1024, 64, NULL);
    CHECK(be != NULL);
    if (!be) return;
    for (int c = 0; c < 8; c++) {
        const int n_tok = c % 2 ? T : 1, n_rot = c % 4 < 2 ? D : D / 2;
        const hearth_rope_params rp = {.inv_freq = c < 4 ? NULL : inv_freq, .theta_scale = powf(1e4f, -2.0f / n_rot),
                                       .freq_scale = 0.5f, .neox = c % 3 == 0, .mscale = c % 4 == 3 ? 1.25f : 1.0f};
        memcpy(got, x, sizeof x);
        memcpy(want, x, sizeof x);
        hearth_op_rope(be, got, n_tok, H, D, n_rot, pos, &rp);
        for (int r = 0; r < n_tok * H; r++) hearth_rope_ref(want + r * D, n_rot, pos[r / H], &rp);
        int bad = 0;
        for (int i = 0; i < n_tok * H * D; i++) bad += !same_bits(want[i], got[i]);
        if (bad) fprintf(stderr, "  case %d (%d tokens): %d values differ\n", c, n_tok, bad);
        CHECK_EQ(bad, 0);
    }
    hearth_backend_destroy(be);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
