/*
 * test_attn_quant.c - attention over a quantized KV cache (kernels.h hearth_attn_quant_fn,
 * kernels/cpu/attn_quant_body.inc) and the CPU backend's quantized store:
 *
 *   - the AVX2 and AVX-512 kernels equal the plain twin (hearth_attn_quant_ref) bit for bit:
 *     q8_0 and q4_0 keys and values (also mixed), heads of 32..256, 1..8 query heads per kv
 *     head, paged tables with several block sizes and shuffled blocks, sliding windows,
 *     soft-cap, scores wide enough that exponentials underflow;
 *   - the twin computes attention: against a double-precision softmax over the dequantized
 *     keys and values with the query quantized the same way (what the order may change is
 *     rounding, ~1e-6 relative), and against attention over the unquantized f32 data within
 *     the quantization error (q8_0 tight, q4_0 loose) - a wrong block, row or head offset is
 *     off by whole units;
 *   - the Hadamard rotation that surrounds the quantized cache (hearth_hadamard_ref): equal to
 *     the product with Sylvester's matrix H (H[i][j] = (-1)^popcount(i & j) / sqrt(n)) up to
 *     rounding, its own inverse, norm-preserving; the CPU backend's op gives its bits;
 *   - the CPU backend's kv_store writes the set's quantizer's bytes at the right rows of a
 *     paged cache, and its attention op over that cache equals the kernel called directly.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "kernels/kernels.h"
#include "kernels/ref/ops_ref.h"
#include "tensor/dtype.h"
#include "test.h"

static uint32_t seed = 7;
static uint32_t rnd(void) {
    seed ^= seed << 13;
    seed ^= seed >> 17;
    seed ^= seed << 5;
    return seed;
}
static float rnd_unit(void) { return (float)((double)rnd() / 4294967296.0 * 2.0 - 1.0); }

enum { MAXP = 300 };

typedef struct {
    hearth_type kt, vt;
    int hd, nkv, g, bs, n, swa;
    float scale, softcap, amp;
} qcase;

/* A paged quantized cache of n positions, nkv heads of hd, blocks shuffled; f32 copies kept. */
typedef struct {
    char *k, *v;
    float *kf, *vf; /* [n][nkv*hd] the f32 rows quantized */
    int32_t table[MAXP];
    size_t k_row, v_row;
    int nblk;
} qcache;

static size_t type_row(hearth_type t, int64_t n) { return (size_t)(n / 32) * (t == HEARTH_TYPE_Q8_0 ? 34 : 18); }

static void cache_make(qcache *c, const qcase *q) {
    const int w = q->nkv * q->hd;
    c->nblk = (q->n + q->bs - 1) / q->bs;
    c->k_row = type_row(q->kt, w);
    c->v_row = type_row(q->vt, w);
    c->k = calloc((size_t)c->nblk * q->bs, c->k_row);
    c->v = calloc((size_t)c->nblk * q->bs, c->v_row);
    c->kf = malloc(sizeof(float) * (size_t)q->n * w);
    c->vf = malloc(sizeof(float) * (size_t)q->n * w);
    for (int i = 0; i < c->nblk; i++) c->table[i] = i;
    for (int i = c->nblk - 1; i > 0; i--) { /* a shuffled block table */
        int j = (int)(rnd() % (uint32_t)(i + 1)), t = c->table[i];
        c->table[i] = c->table[j];
        c->table[j] = t;
    }
    hearth_from_float_fn qk = hearth_kernels_traits_isa(q->kt, HEARTH_ISA_SCALAR)->from_float;
    hearth_from_float_fn qv = hearth_kernels_traits_isa(q->vt, HEARTH_ISA_SCALAR)->from_float;
    if (!qk) qk = hearth_kernels_kv_quantizer(q->kt);
    if (!qv) qv = hearth_kernels_kv_quantizer(q->vt);
    for (int p = 0; p < q->n; p++) {
        int64_t row = (int64_t)c->table[p / q->bs] * q->bs + p % q->bs;
        for (int e = 0; e < w; e++) {
            c->kf[(size_t)p * w + e] = q->amp * rnd_unit();
            c->vf[(size_t)p * w + e] = rnd_unit();
        }
        qk(c->kf + (size_t)p * w, c->k + row * c->k_row, w);
        qv(c->vf + (size_t)p * w, c->v + row * c->v_row, w);
    }
}

static void cache_free(qcache *c) {
    free(c->k);
    free(c->v);
    free(c->kf);
    free(c->vf);
}

static hearth_attn_quant_args args_for(const qcase *q, const qcache *c, int hkv, int64_t j0, int64_t j1) {
    return (hearth_attn_quant_args){
        .k = c->k + type_row(q->kt, (int64_t)hkv * q->hd), .v = c->v + type_row(q->vt, (int64_t)hkv * q->hd),
        .k_row = c->k_row, .v_row = c->v_row, .k_type = q->kt, .v_type = q->vt, .table_row = c->table,
        .block_size = q->bs, .head_dim = q->hd, .head_dim_v = q->hd, .j0 = j0, .j1 = j1, .scale = q->scale,
        .softcap = q->softcap};
}

static const qcase CASES[] = {
    {HEARTH_TYPE_Q8_0, HEARTH_TYPE_Q8_0, 64, 3, 3, 16, 77, 0, 0.125f, 0, 1},
    {HEARTH_TYPE_Q8_0, HEARTH_TYPE_Q8_0, 256, 1, 4, 16, 300, 64, 1.0f, 0, 0.1f},
    {HEARTH_TYPE_Q4_0, HEARTH_TYPE_Q4_0, 128, 2, 8, 7, 150, 0, 0.088f, 0, 2},
    {HEARTH_TYPE_Q8_0, HEARTH_TYPE_Q4_0, 32, 2, 1, 1, 40, 9, 0.177f, 30.0f, 3},
    {HEARTH_TYPE_Q4_0, HEARTH_TYPE_Q8_0, 96, 1, 2, 32, 100, 0, 0.1f, 0, 1},
    {HEARTH_TYPE_Q8_0, HEARTH_TYPE_Q8_0, 64, 1, 2, 16, 60, 0, 4.0f, 0, 8}, /* exps underflow to 0 */
};

TEST(simd_equals_twin) {
    const hearth_isa isas[] = {HEARTH_ISA_AVX2, HEARTH_ISA_AVX512};
    int ran = 0;
    for (size_t ci = 0; ci < sizeof CASES / sizeof CASES[0]; ci++) {
        const qcase *q = &CASES[ci];
        qcache c;
        cache_make(&c, q);
        float qs[8][256], ref[8][256], got[8][256];
        const float *qp[8];
        float *rp[8], *gp[8];
        for (int i = 0; i < q->g; i++) {
            for (int d = 0; d < q->hd; d++) qs[i][d] = rnd_unit();
            qp[i] = qs[i];
            rp[i] = ref[i];
            gp[i] = got[i];
        }
        for (int64_t p = 0; p < q->n; p += 1 + p / 7) {
            int64_t j0 = q->swa && p - q->swa + 1 > 0 ? p - q->swa + 1 : 0;
            for (int hkv = 0; hkv < q->nkv; hkv++) {
                hearth_attn_quant_args a = args_for(q, &c, hkv, j0, p + 1);
                hearth_attn_quant_ref(q->g, qp, rp, &a);
                for (size_t k = 0; k < 2; k++) {
                    hearth_attn_quant_fn fn = hearth_kernels_attn_quant_isa(isas[k]);
                    if (!fn || !hearth_isa_available(isas[k])) continue;
                    memset(got, 0xff, sizeof got);
                    fn(q->g, qp, gp, &a);
                    ran++;
                    for (int i = 0; i < q->g; i++)
                        if (memcmp(got[i], ref[i], sizeof(float) * (size_t)q->hd)) {
                            printf("  case %zu isa %s pos %lld head %d query %d differs\n", ci,
                                   hearth_isa_name(isas[k]), (long long)p, hkv, i);
                            CHECK(!"SIMD kernel differs from its twin");
                            cache_free(&c);
                            return;
                        }
                }
            }
        }
        cache_free(&c);
    }
    if (!ran) TEST_SKIP("no SIMD set on this CPU");
}

/* attention of q over rows [j0, j1) of k, v ([n][stride], head at off) in double */
static void attn_double(const float *q, const float *k, const float *v, int stride, int off, int hd, int64_t j0,
                        int64_t j1, float scale, float softcap, double *out) {
    double mx = -INFINITY, sum = 0, s[MAXP];
    for (int64_t j = j0; j < j1; j++) {
        double d = 0;
        for (int e = 0; e < hd; e++) d += (double)q[e] * k[j * stride + off + e];
        d *= scale;
        if (softcap) d = softcap * tanh(d / softcap);
        s[j] = d;
        if (d > mx) mx = d;
    }
    for (int e = 0; e < hd; e++) out[e] = 0;
    for (int64_t j = j0; j < j1; j++) {
        double p = exp(s[j] - mx);
        sum += p;
        for (int e = 0; e < hd; e++) out[e] += p * v[j * stride + off + e];
    }
    for (int e = 0; e < hd; e++) out[e] /= sum;
}

TEST(twin_computes_attention) {
    for (size_t ci = 0; ci < sizeof CASES / sizeof CASES[0]; ci++) {
        const qcase *q = &CASES[ci];
        qcache c;
        cache_make(&c, q);
        const int w = q->nkv * q->hd;
        /* the dequantized cache, and the query as the kernel sees it (quantized to q8_0) */
        float *kd = malloc(sizeof(float) * (size_t)q->n * w), *vd = malloc(sizeof(float) * (size_t)q->n * w);
        hearth_to_float_fn tk = hearth_kernels_traits_isa(q->kt, HEARTH_ISA_SCALAR)->to_float;
        hearth_to_float_fn tv = hearth_kernels_traits_isa(q->vt, HEARTH_ISA_SCALAR)->to_float;
        for (int p = 0; p < q->n; p++) {
            int64_t row = (int64_t)c.table[p / q->bs] * q->bs + p % q->bs;
            tk(c.k + row * c.k_row, kd + (size_t)p * w, w);
            tv(c.v + row * c.v_row, vd + (size_t)p * w, w);
        }
        const hearth_kernel_traits *q8 = hearth_kernels_traits_isa(HEARTH_TYPE_Q8_0, HEARTH_ISA_SCALAR);
        double worst_exact = 0, worst_f32 = 0;
        for (int trial = 0; trial < 6; trial++) {
            int64_t p = q->n - 1 - (int64_t)(rnd() % (uint32_t)q->n);
            int64_t j0 = q->swa && p - q->swa + 1 > 0 ? p - q->swa + 1 : 0;
            int hkv = (int)(rnd() % (uint32_t)q->nkv);
            float qv[256], qdq[256], out[256];
            uint8_t qq[256 / 32 * 34];
            for (int d = 0; d < q->hd; d++) qv[d] = rnd_unit();
            q8->from_float(qv, qq, q->hd);
            q8->to_float(qq, qdq, q->hd);
            const float *qp[1] = {qv};
            float *op[1] = {out};
            hearth_attn_quant_args a = args_for(q, &c, hkv, j0, p + 1);
            hearth_attn_quant_ref(1, qp, op, &a);
            double want[256], want_f32[256];
            attn_double(qdq, kd, vd, w, hkv * q->hd, q->hd, j0, p + 1, q->scale, q->softcap, want);
            attn_double(qv, c.kf, c.vf, w, hkv * q->hd, q->hd, j0, p + 1, q->scale, q->softcap, want_f32);
            for (int d = 0; d < q->hd; d++) {
                double e1 = fabs(out[d] - want[d]), e2 = fabs(out[d] - want_f32[d]);
                if (e1 > worst_exact) worst_exact = e1;
                if (e2 > worst_f32) worst_f32 = e2;
            }
        }
        /* values are in [-1, 1]: the same arithmetic up to rounding, and the quantization error
         * of 8 bits (1/127 of a block's range) or 4 bits (1/8) */
        CHECK(worst_exact < 2e-5);
        bool q4 = q->kt == HEARTH_TYPE_Q4_0 || q->vt == HEARTH_TYPE_Q4_0;
        CHECK(worst_f32 < (q4 ? 0.25 : 0.03));
        if (worst_exact >= 2e-5 || worst_f32 >= (q4 ? 0.25 : 0.03))
            printf("  case %zu: %.3g from exact, %.3g from f32\n", ci, worst_exact, worst_f32);
        free(kd);
        free(vd);
        cache_free(&c);
    }
}

TEST(backend_store_and_attention) {
    const qcase q = {HEARTH_TYPE_Q8_0, HEARTH_TYPE_Q4_0, 64, 2, 3, 8, 40, 0, 0.125f, 0, 1};
    const int w = q.nkv * q.hd, nh = q.nkv * q.g, T = q.n;
    hearth_backend *be = hearth_backend_cpu_create(2, T, 512, 64, NULL);
    CHECK(be != NULL);
    if (!be) return;
    qcache c;
    cache_make(&c, &q); /* the reference bytes, through the set's quantizers */
    char *k = calloc((size_t)c.nblk * q.bs, c.k_row), *v = calloc((size_t)c.nblk * q.bs, c.v_row);
    int32_t pos[MAXP], seq[MAXP];
    for (int t = 0; t < T; t++) {
        pos[t] = t;
        seq[t] = 0;
    }
    hearth_kv_blocks bl = {.table = c.table, .max_blocks = c.nblk, .block_size = q.bs};
    hearth_op_kv_store(be, c.kf, T, w, seq, pos, k, &bl, HEARTH_KV_Q8_0);
    hearth_op_kv_store(be, c.vf, T, w, seq, pos, v, &bl, HEARTH_KV_Q4_0);
    /* the quantizers the store uses are the active set's; the cache above used the scalar
     * set's, which every set must equal for the cache types */
    CHECK(memcmp(k, c.k, (size_t)c.nblk * q.bs * c.k_row) == 0);
    CHECK(memcmp(v, c.v, (size_t)c.nblk * q.bs * c.v_row) == 0);
    float *qs = malloc(sizeof(float) * (size_t)T * nh * q.hd), *out = malloc(sizeof(float) * (size_t)T * nh * q.hd);
    for (int i = 0; i < T * nh * q.hd; i++) qs[i] = rnd_unit();
    hearth_attn_args a = {.n_tok = T, .n_head = nh, .n_head_kv = q.nkv, .head_dim = q.hd, .head_dim_v = q.hd,
                          .q = qs, .out = out, .pos = pos, .seq = seq, .k = k, .v = v, .blocks = bl,
                          .k_type = HEARTH_KV_Q8_0, .v_type = HEARTH_KV_Q4_0, .scale = q.scale};
    hearth_op_attention(be, &a);
    for (int t = 0; t < T; t += 3)
        for (int h = 0; h < nh; h++) {
            float ref[64];
            const float *qp[1] = {qs + ((size_t)t * nh + h) * q.hd};
            float *op[1] = {ref};
            hearth_attn_quant_args qa = args_for(&q, &c, h / q.g, 0, t + 1);
            hearth_attn_quant_ref(1, qp, op, &qa);
            CHECK(memcmp(ref, out + ((size_t)t * nh + h) * q.hd, sizeof ref) == 0);
        }
    free(qs);
    free(out);
    free(k);
    free(v);
    cache_free(&c);
    hearth_backend_destroy(be);
}

TEST(hadamard_is_the_orthonormal_rotation) {
    hearth_backend *be = hearth_backend_cpu_create(2, 64, 512, 64, NULL);
    CHECK(be != NULL);
    for (int64_t n = 64; n <= 256; n *= 2) {
        enum { ROWS = 40 };
        float *x = malloc(sizeof(float) * ROWS * (size_t)n), *y = malloc(sizeof(float) * ROWS * (size_t)n),
              *z = malloc(sizeof(float) * ROWS * (size_t)n);
        for (int64_t i = 0; i < ROWS * n; i++) x[i] = 4 * rnd_unit();
        memcpy(y, x, sizeof(float) * ROWS * (size_t)n);
        hearth_hadamard_ref(y, ROWS, n);
        memcpy(z, x, sizeof(float) * ROWS * (size_t)n);
        if (be) hearth_op_hadamard(be, z, ROWS, n);
        CHECK(memcmp(y, z, sizeof(float) * ROWS * (size_t)n) == 0);
        double worst = 0, norm_err = 0;
        for (int r = 0; r < ROWS; r++) {
            const float *xr = x + r * n, *yr = y + r * n;
            double nx = 0, ny = 0;
            for (int64_t i = 0; i < n; i++) {
                double want = 0;
                for (int64_t j = 0; j < n; j++) want += (__builtin_popcountll((unsigned long long)(i & j)) & 1 ? -1 : 1) * (double)xr[j];
                want /= sqrt((double)n);
                if (fabs(want - yr[i]) > worst) worst = fabs(want - yr[i]);
                nx += (double)xr[i] * xr[i];
                ny += (double)yr[i] * yr[i];
            }
            if (fabs(nx - ny) / nx > norm_err) norm_err = fabs(nx - ny) / nx;
        }
        CHECK(worst < 1e-4);
        CHECK(norm_err < 1e-5);
        hearth_hadamard_ref(y, ROWS, n); /* H H = I */
        double back = 0;
        for (int64_t i = 0; i < ROWS * n; i++) if (fabs(y[i] - x[i]) > back) back = fabs(y[i] - x[i]);
        CHECK(back < 1e-5);
        free(x);
        free(y);
        free(z);
    }
    hearth_backend_destroy(be);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
