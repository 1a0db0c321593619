/*
 * test_attn_turbo.c - the turbo KV cache (backend/kv_type.h, kernels/ref/turbo_ref.h,
 * kernels/cpu/attn_turbo_body.inc):
 *
 *   the rotation is the randomized Hadamard transform it says: every rotated unit vector is
 *     +-1/8 everywhere with the seed's sign in element 0, the columns orthonormal, the inverse
 *     undoes it, dots are kept
 *   the block format: rows whose rotated values sit on the levels quantize to exactly the bytes
 *     a bit writer here packs (LSB first, 8 codes in B bytes), and dequantize back
 *   the codec's error falls with the bits, within a bound per width (near-Gaussian rows with a
 *     heavy channel, which the rotation spreads)
 *   the attention kernel of every x86 set this CPU runs equals the scalar twin bit for bit
 *     (paged rows, a kv head's slice, windows, softcap, 1..16 heads in a group, every bit pair)
 *   the CPU backend's kv_store writes hearth_turbo_quantize_row's bytes at the rows the block
 *     table names, and its attention op equals the twin called per (token, head)
 *   the twin is near an f32 attention over the unquantized keys and values, closer with more
 *     bits (rms error: k8v8 within 1.2% of the output's rms, k4v3 25%; a query left unrotated
 *     is off by more than 50%)
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/kv_type.h"
#include "kernels/kernels.h"
#include "kernels/ref/turbo_ref.h"
#include "tensor/dtype.h"
#include "test.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}
static float uni(void) { return (float)(rnd() & 0xffffff) / 16777216.0f; }
static float gauss(void) {
    float u = uni() + 1e-7f, v = uni();
    return sqrtf(-2.0f * logf(u)) * cosf(6.2831853f * v);
}

TEST(rotation_is_a_randomized_hadamard) {
    enum { R = HEARTH_KV_TURBO_ROT };
    static float y[R][R];
    int neg = 0;
    for (int i = 0; i < R; i++) {
        memset(y[i], 0, sizeof y[i]);
        y[i][i] = 1.0f;
        hearth_turbo_rotate(y[i], R);
        int bad = 0;
        for (int j = 0; j < R; j++) bad += fabsf(y[i][j]) != 0.125f;
        CHECK_EQ(bad, 0);
        CHECK(y[i][0] == 0.125f * hearth_turbo_sign(i)); /* H's first row is all ones */
        neg += hearth_turbo_sign(i) < 0;
    }
    CHECK(neg > 16 && neg < 48); /* the signs are not one value */
    int bad = 0;
    for (int i = 0; i < R; i++)
        for (int k = 0; k < R; k++) {
            float d = 0.0f;
            for (int j = 0; j < R; j++) d += y[i][j] * y[k][j];
            bad += d != (i == k ? 1.0f : 0.0f);
        }
    CHECK_EQ(bad, 0);
    /* inverse and kept dots over a 256-element head (four rotations) */
    static float a[256], b[256], ra[256], rb[256];
    for (int i = 0; i < 256; i++) {
        a[i] = gauss() * (i == 7 ? 20.0f : 1.0f);
        b[i] = gauss();
    }
    memcpy(ra, a, sizeof a);
    memcpy(rb, b, sizeof b);
    hearth_turbo_rotate(ra, 256);
    hearth_turbo_rotate(rb, 256);
    double d0 = 0, d1 = 0, na = 0;
    for (int i = 0; i < 256; i++) d0 += (double)a[i] * b[i], d1 += (double)ra[i] * rb[i], na += (double)a[i] * a[i];
    CHECK_NEAR(d1, d0, 1e-5 * sqrt(na) * 16);
    hearth_turbo_unrotate(ra, 256);
    double e = 0;
    for (int i = 0; i < 256; i++) e = fmax(e, fabs((double)ra[i] - a[i]));
    CHECK(e < 1e-5 * 20);
    CHECK(memcmp(ra, a, sizeof a) != 0 || e == 0); /* compared values, not a copy */
}

/* codes c of one 32-element block packed as the format says, by a bit writer */
static void pack_block(const int *c, int bits, uint16_t h, uint8_t *out) {
    memcpy(out, &h, 2);
    memset(out + 2, 0, (size_t)(4 * bits));
    for (int i = 0; i < 32; i++)
        for (int b = 0; b < bits; b++)
            if (c[i] >> b & 1) out[2 + (i * bits + b) / 8] |= (uint8_t)(1u << ((i * bits + b) % 8));
}

TEST(block_format_packs_codes_lsb_first) {
    static const int bits_of[] = {2, 3, 4, 5, 8};
    enum { W = 128 };
    for (int bi = 0; bi < 5; bi++) {
        const int bits = bits_of[bi], L = 1 << bits;
        const hearth_kv_type t = hearth_kv_turbo_type(bits);
        CHECK_EQ(hearth_kv_turbo_bits(t), bits);
        CHECK_EQ(hearth_kv_row_bytes(t, W), (W / 32) * (2 + 4 * bits));
        int c[W];
        float r[W], x[W];
        uint8_t want[W / 32 * 34], got[W / 32 * 34 + 1];
        const uint16_t hh = hearth_fp32_to_fp16(0.25f);
        for (int i = 0; i < W; i++) {
            c[i] = i % 32 == 0 ? L - 1 : (int)(rnd() % (unsigned)L); /* amax on a level: f = 1 is exact */
            r[i] = hearth_turbo_level(bits, c[i]) * 0.25f;
        }
        for (int b = 0; b < W / 32; b++) pack_block(c + 32 * b, bits, hh, want + b * (2 + 4 * bits));
        memcpy(x, r, sizeof r);
        hearth_turbo_unrotate(x, W);
        memset(got, 0xab, sizeof got);
        hearth_turbo_quantize_row(x, got, W, bits);
        const size_t n = hearth_kv_row_bytes(t, W);
        CHECK(memcmp(got, want, n) == 0);
        CHECK_EQ(got[n], 0xab); /* nothing past the row */
        float back[W];
        hearth_turbo_dequant_ref(want, back, W, bits);
        int bad = 0;
        for (int i = 0; i < W; i++) bad += back[i] != r[i];
        CHECK_EQ(bad, 0);
    }
    CHECK_STR(hearth_kv_type_name(HEARTH_KV_T3), "turbo3");
    CHECK_EQ(hearth_kv_turbo_type(6), HEARTH_KV_TYPE_COUNT);
    CHECK_EQ(hearth_kv_turbo_bits(HEARTH_KV_Q8_0), 0);
}

/* relative RMS error of rows through quantize -> dequantize -> unrotate */
static double codec_error(int bits, int heavy) {
    enum { W = 256, N = 64 };
    static float x[W], y[W];
    static uint8_t q[W / 32 * 34];
    double e = 0, s = 0;
    for (int n = 0; n < N; n++) {
        for (int i = 0; i < W; i++) x[i] = gauss() * (heavy && i % 64 == 5 ? 12.0f : 1.0f);
        hearth_turbo_quantize_row(x, q, W, bits);
        hearth_turbo_dequant_ref(q, y, W, bits);
        hearth_turbo_unrotate(y, W);
        for (int i = 0; i < W; i++) e += ((double)y[i] - x[i]) * ((double)y[i] - x[i]), s += (double)x[i] * x[i];
    }
    return sqrt(e / s);
}

TEST(codec_error_falls_with_bits) {
    static const int bits_of[] = {2, 3, 4, 5, 8};
    /* about the MSE-optimal uniform quantizer's on a Gaussian (0.34, 0.19, 0.11, 0.06, 0.008),
     * with room for the f16 step and the block's own amax */
    static const double bound[] = {0.36, 0.19, 0.095, 0.048, 0.006};
    for (int heavy = 0; heavy < 2; heavy++) {
        double prev = 1.0;
        for (int bi = 0; bi < 5; bi++) {
            double e = codec_error(bits_of[bi], heavy);
            fprintf(stderr, "  %s bits %d: relative rms error %.4f\n", heavy ? "heavy" : "plain", bits_of[bi], e);
            CHECK(e < bound[bi]);
            CHECK(e < prev * 0.75);
            prev = e;
        }
    }
}

/* A paged two-head cache of n positions: rows of both kv heads, the kernel reads head 1. */
typedef struct {
    int64_t  d, n;
    int      kb, vb;
    float   *k, *v; /* [n][d] the unquantized head-1 keys and values */
    uint8_t *kc, *vc;
    size_t   k_row, v_row;
    int32_t  table[64];
} cache;

enum { BS = 16 };

static void cache_make(cache *c, int64_t d, int64_t n, int kb, int vb) {
    c->d = d, c->n = n, c->kb = kb, c->vb = vb;
    const int64_t nblk = (n + BS - 1) / BS;
    c->k = malloc((size_t)(n * d) * sizeof(float));
    c->v = malloc((size_t)(n * d) * sizeof(float));
    c->k_row = hearth_kv_row_bytes(hearth_kv_turbo_type(kb), 2 * d);
    c->v_row = hearth_kv_row_bytes(hearth_kv_turbo_type(vb), 2 * d);
    c->kc = calloc((size_t)(nblk * BS), c->k_row);
    c->vc = calloc((size_t)(nblk * BS), c->v_row);
    for (int64_t b = 0; b < nblk; b++) c->table[b] = (int32_t)(nblk - 1 - b); /* blocks reversed */
    float *row = malloc((size_t)(2 * d) * sizeof(float));
    for (int64_t p = 0; p < n; p++) {
        const int64_t r = (int64_t)c->table[p / BS] * BS + p % BS;
        for (int64_t i = 0; i < 2 * d; i++) row[i] = gauss() * (i % d == 3 ? 8.0f : 1.0f);
        memcpy(c->k + p * d, row + d, (size_t)d * sizeof(float));
        hearth_turbo_quantize_row(row, c->kc + r * c->k_row, 2 * d, kb);
        for (int64_t i = 0; i < 2 * d; i++) row[i] = gauss();
        memcpy(c->v + p * d, row + d, (size_t)d * sizeof(float));
        hearth_turbo_quantize_row(row, c->vc + r * c->v_row, 2 * d, vb);
    }
    free(row);
}

static void cache_free(cache *c) {
    free(c->k), free(c->v), free(c->kc), free(c->vc);
}

static hearth_attn_turbo_args args_of(const cache *c, int64_t j0, int64_t j1, float softcap) {
    return (hearth_attn_turbo_args){
        .k = (const char *)c->kc + hearth_kv_row_bytes(hearth_kv_turbo_type(c->kb), c->d),
        .v = (const char *)c->vc + hearth_kv_row_bytes(hearth_kv_turbo_type(c->vb), c->d),
        .k_row = c->k_row, .v_row = c->v_row, .k_bits = c->kb, .v_bits = c->vb,
        .table_row = c->table, .block_size = BS, .head_dim = c->d, .head_dim_v = c->d,
        .j0 = j0, .j1 = j1, .scale = 1.0f / sqrtf((float)c->d), .softcap = softcap,
    };
}

TEST(x86_sets_equal_the_twin_bit_for_bit) {
    static const int kbits[] = {2, 4, 5, 8}, vbits[] = {2, 3, 4, 5, 8};
    static const int64_t dims[] = {64, 128, 256};
    int compared = 0;
    for (int isa = HEARTH_ISA_AVX2; isa < HEARTH_ISA_COUNT; isa++) {
        hearth_attn_turbo_fn fn = hearth_kernels_attn_turbo_isa((hearth_isa)isa);
        if (!fn) continue;
        for (int ki = 0; ki < 4; ki++)
            for (int vi = 0; vi < 5; vi++) {
                const int64_t d = dims[(ki + vi) % 3], n = 37 + 11 * vi;
                cache c;
                cache_make(&c, d, n, kbits[ki], vbits[vi]);
                const int nq = 1 + (ki * 5 + vi) % HEARTH_ATTN_QUANT_NQ_MAX;
                float *qs = malloc((size_t)(nq * d) * sizeof(float)), *o1 = malloc((size_t)(nq * d) * sizeof(float)),
                      *o2 = malloc((size_t)(nq * d) * sizeof(float));
                const float *q[HEARTH_ATTN_QUANT_NQ_MAX];
                float *out1[HEARTH_ATTN_QUANT_NQ_MAX], *out2[HEARTH_ATTN_QUANT_NQ_MAX];
                for (int i = 0; i < nq; i++) q[i] = qs + i * d, out1[i] = o1 + i * d, out2[i] = o2 + i * d;
                for (int64_t i = 0; i < nq * d; i++) qs[i] = gauss() * 2.0f;
                for (int variant = 0; variant < 3; variant++) {
                    const int64_t j0 = variant == 1 ? n / 3 : 0;
                    hearth_attn_turbo_args a = args_of(&c, j0, variant == 2 ? n / 2 : n, variant == 2 ? 30.0f : 0.0f);
                    hearth_attn_turbo_ref(nq, q, out1, &a);
                    memset(o2, 0xab, (size_t)(nq * d) * sizeof(float));
                    fn(nq, q, out2, &a);
                    const int same = memcmp(o1, o2, (size_t)(nq * d) * sizeof(float)) == 0;
                    if (!same)
                        fprintf(stderr, "  %s k%dv%d d %lld nq %d variant %d differs\n",
                                hearth_isa_name((hearth_isa)isa), c.kb, c.vb, (long long)d, nq, variant);
                    CHECK(same);
                    compared++;
                }
                free(qs), free(o1), free(o2);
                cache_free(&c);
            }
    }
    if (!compared) TEST_SKIP("this CPU runs no x86 set");
}

/* rms of out - exact over the query heads, relative to the exact outputs' rms */
static double vs_exact(int kb, int vb, int64_t d, int unrotated_query) {
    const int64_t n = 200;
    const int nq = 4;
    cache c;
    cache_make(&c, d, n, kb, vb);
    float qs[4][256], o[4][256];
    const float *q[4];
    float *out[4];
    for (int i = 0; i < nq; i++) {
        for (int64_t t = 0; t < d; t++) qs[i][t] = gauss() * (t == 3 ? 0.5f : 1.0f);
        q[i] = qs[i];
        out[i] = o[i];
    }
    hearth_attn_turbo_args a = args_of(&c, 0, n, 0.0f);
    hearth_attn_turbo_ref(nq, q, out, &a);
    if (unrotated_query) { /* what a kernel that forgot the query's rotation would give */
        for (int i = 0; i < nq; i++) hearth_turbo_unrotate(qs[i], d);
        hearth_attn_turbo_ref(nq, q, out, &a);
        for (int i = 0; i < nq; i++) hearth_turbo_rotate(qs[i], d);
    }
    double ee = 0, ss = 0;
    for (int i = 0; i < nq; i++) {
        double s[200], m = -1e30, z = 0, ex[256] = {0};
        for (int64_t j = 0; j < n; j++) {
            double dot = 0;
            for (int64_t t = 0; t < d; t++) dot += (double)qs[i][t] * c.k[j * d + t];
            s[j] = dot / sqrt((double)d);
            m = fmax(m, s[j]);
        }
        for (int64_t j = 0; j < n; j++) z += exp(s[j] - m);
        for (int64_t j = 0; j < n; j++)
            for (int64_t t = 0; t < d; t++) ex[t] += exp(s[j] - m) / z * c.v[j * d + t];
        for (int64_t t = 0; t < d; t++) ee += (o[i][t] - ex[t]) * (o[i][t] - ex[t]), ss += ex[t] * ex[t];
    }
    cache_free(&c);
    return sqrt(ee / ss);
}

TEST(twin_is_near_exact_attention) {
    static const struct { int kb, vb; double tol; } cases[] = {
        {8, 8, 0.012}, {8, 5, 0.06}, {8, 3, 0.23}, {5, 5, 0.09}, {4, 4, 0.19}, {4, 3, 0.25}, {2, 2, 0.7},
    };
    for (int64_t d = 64; d <= 256; d *= 4)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            double e = vs_exact(cases[i].kb, cases[i].vb, d, 0);
            fprintf(stderr, "  d %lld k%dv%d: rms error %.4f of the output's\n", (long long)d, cases[i].kb,
                    cases[i].vb, e);
            CHECK(e < cases[i].tol);
        }
    double e = vs_exact(8, 8, 64, 1);
    fprintf(stderr, "  query left unrotated, k8v8: %.4f\n", e);
    CHECK(e > 0.5);
}

TEST(backend_store_and_attention) {
    enum { HD = 128, NKV = 2, G = 3, NH = NKV * G, T = 40, BSZ = 8, NBLK = T / BSZ };
    const int64_t w = NKV * HD;
    const hearth_kv_type kt = HEARTH_KV_T4, vt = HEARTH_KV_T3;
    hearth_backend *be = hearth_backend_cpu_create(2, T, 512, 64, NULL);
    CHECK(be != NULL);
    if (!be) return;
    const size_t k_row = hearth_kv_row_bytes(kt, w), v_row = hearth_kv_row_bytes(vt, w);
    static float kf[T * NKV * HD], vf[T * NKV * HD], qs[T * NH * HD], out[T * NH * HD];
    for (int i = 0; i < T * NKV * HD; i++) kf[i] = gauss(), vf[i] = gauss();
    for (int i = 0; i < T * NH * HD; i++) qs[i] = gauss();
    uint8_t *k = calloc((size_t)NBLK * BSZ, k_row), *v = calloc((size_t)NBLK * BSZ, v_row);
    uint8_t *want_k = calloc((size_t)NBLK * BSZ, k_row), *want_v = calloc((size_t)NBLK * BSZ, v_row);
    int32_t pos[T], seq[T], table[NBLK];
    for (int b = 0; b < NBLK; b++) table[b] = (b * 3 + 1) % NBLK; /* shuffled blocks */
    for (int t = 0; t < T; t++) {
        pos[t] = t;
        seq[t] = 0;
        const int64_t r = (int64_t)table[t / BSZ] * BSZ + t % BSZ;
        hearth_turbo_quantize_row(kf + (size_t)t * w, want_k + r * k_row, w, 4);
        hearth_turbo_quantize_row(vf + (size_t)t * w, want_v + r * v_row, w, 3);
    }
    hearth_kv_blocks bl = {.table = table, .max_blocks = NBLK, .block_size = BSZ};
    hearth_op_kv_store(be, kf, T, w, seq, pos, k, &bl, kt);
    hearth_op_kv_store(be, vf, T, w, seq, pos, v, &bl, vt);
    CHECK(memcmp(k, want_k, (size_t)NBLK * BSZ * k_row) == 0);
    CHECK(memcmp(v, want_v, (size_t)NBLK * BSZ * v_row) == 0);
    hearth_attn_args a = {.n_tok = T, .n_head = NH, .n_head_kv = NKV, .head_dim = HD, .head_dim_v = HD,
                          .q = qs, .out = out, .pos = pos, .seq = seq, .k = k, .v = v, .blocks = bl,
                          .k_type = kt, .v_type = vt, .scale = 0.088f};
    hearth_op_attention(be, &a);
    int bad = 0;
    for (int t = 0; t < T; t++)
        for (int h = 0; h < NH; h++) {
            float ref[HD];
            const float *qp[1] = {qs + ((size_t)t * NH + h) * HD};
            float *op[1] = {ref};
            const int hkv = h / G;
            hearth_attn_turbo_args ta = {
                .k = (const char *)k + hearth_kv_row_bytes(kt, (int64_t)hkv * HD),
                .v = (const char *)v + hearth_kv_row_bytes(vt, (int64_t)hkv * HD),
                .k_row = k_row, .v_row = v_row, .k_bits = 4, .v_bits = 3, .table_row = table,
                .block_size = BSZ, .head_dim = HD, .head_dim_v = HD, .j0 = 0, .j1 = t + 1, .scale = 0.088f,
            };
            hearth_attn_turbo_ref(1, qp, op, &ta);
            bad += memcmp(ref, out + ((size_t)t * NH + h) * HD, sizeof ref) != 0;
        }
    CHECK_EQ(bad, 0);
    free(k), free(v), free(want_k), free(want_v);
    hearth_backend_destroy(be);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
