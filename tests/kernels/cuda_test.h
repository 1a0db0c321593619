/*
 * cuda_test.h - what the CUDA op tests share (test_cuda_ops.c, test_cuda_matmul.c,
 * test_cuda_lora.c): the one tolerance table, random inputs, the GPU backend and its buffers,
 * weights of every type made with the reference quantizers, and the matmul reference.
 *
 * Each comparison is scored as max |cuda - ref| / max |ref| over the output and held to the
 * op's line of the tolerance table below (one table, per op and type). Without a GPU (or in a
 * build without CUDA) every test skips.
 */
#pragma once
#include "test.h"

#include "backend/backend.h"
#include "kernels/kernels.h"
#include "kernels/ref/attn_paged_ref.h"
#include "kernels/ref/dot_ref.h"
#include "kernels/ref/ops_ref.h"
#include "kernels/ref/quant_ref.h"
#include "tensor/dtype.h"

#include <stdint.h>

#ifdef HEARTH_HAVE_CUDA
#include "backend/cuda/cuda_ops.h"
#else /* never called: every test skips without a GPU */
enum { HC_MV_AUTO = 0, HC_MV_PERSIST = 1, HC_MV_WAVES = 2 };
static inline void hc_mv_configure(int mode, int max_blocks, int force_p) { (void)mode, (void)max_blocks, (void)force_p; }
static inline void hc_q8_fuse_configure(bool on) { (void)on; }
static inline void hc_mv_rows_configure(int rows) { (void)rows; }
static inline void hc_glu_fuse_configure(bool on) { (void)on; }
static inline long hc_q8_fused_count(void) { return 0; }
#endif

/* ---- the tolerance table: relative to the largest reference magnitude ---- */
static const struct {
    const char *op;
    double      tol;
} TOL[] = {
    {"get_rows", 1e-6},        /* the same dequantization formulas */
    {"rmsnorm", 2e-6},         /* f32 sum of squares vs double */
    {"rope", 1e-3},            /* powf angles vs the running product, positions < 1000 */
    {"rope_inv_freq", 2e-6},
    {"kv_store", 0},           /* a copy (rounded to f16 the same way) */
    {"attention_f32", 2e-5},
    {"attention_f16", 4e-3},   /* the reference rounds the normalized weights to f16 */
    {"attention_quant", 2e-5}, /* q8_0 / q4_0 cache: both dequantize the same blocks exactly and
                                  meet the same q8_0 query; only the f32 order of the sums (and
                                  the split's combine) differs, as attention_f32 */
    {"attention_quant_tc", 4e-3}, /* prefill on tensor cores: the dequantized cache and the query
                                     rounded to f16, the weights too (as attention_f16) */
    {"attention_turbo", 3e-5}, /* turbo cache: the same rotated query and dequantized blocks; the
                                  f32 order of the sums differs (as attention_f32), and the output
                                  is rotated back after the division by the sum, not before */
    {"glu", 2e-6},
    {"glu_f16", 2e-3},         /* one f16 ulp where tanhf rounds differently */
    {"matmul_glu", 1e-4},      /* the products' error (matmul_gemv) through the activation */
    {"elementwise", 1e-6},
    {"matmul_gemv", 2e-5},     /* f32 products, summed in a different order */
    {"matmul_gemv_q8", 1e-4},  /* 8-bit activations: the same integers, scaled in another order */
    {"matmul_gemm_f32", 2e-5},
    {"matmul_gemm_f16", 3e-3}, /* activations rounded to f16 for cuBLAS */
    {"matmul_gemm_bf16", 1e-2}, /* activations rounded to bf16 */
    {"layernorm", 1e-6},       /* mean and variance in double on both sides, summed in another order */
    {"gelu_erf", 1e-6},        /* the device's erff against the host's: an ulp or two */
    {"attention_enc", 2e-5},   /* as attention_f32: f32 sums of the same products, a tree order */
    {"pool", 1e-6},            /* the mean summed in double on both sides; CLS and last are copies */
    {"l2norm", 1e-6},          /* the norm in double on both sides */
    {"lora", 2e-5},            /* the segmented LoRA update: f32 sums of the same products in
                                  another order (both sides widen f16 matrices exactly) */
};

static inline double tol_of(const char *op) {
    for (size_t i = 0; i < sizeof TOL / sizeof TOL[0]; i++)
        if (!strcmp(TOL[i].op, op)) return TOL[i].tol;
    abort();
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static inline float frand(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) & 0xffffff) / (float)(1 << 23) - 1.0f;
}
static inline void fill(float *x, int64_t n, float scale) {
    for (int64_t i = 0; i < n; i++) x[i] = frand() * scale;
}

static inline hearth_backend *gpu(void) {
    static hearth_backend *be;
    static bool tried;
    if (!tried) {
        tried = true;
        hearth_err err = {0};
        hearth_kernels_init();
        be = hearth_backend_cuda_create(0, 64, NULL, &err);
        if (!be) fprintf(stderr, "  (no CUDA backend: %s)\n", err.msg);
    }
    return be;
}
#define NEED_GPU() do { if (!gpu()) TEST_SKIP("no CUDA device"); } while (0)

/* device copy of host data */
static inline void *up(const void *h, size_t bytes) {
    void *d = hearth_buf_alloc(gpu(), bytes);
    if (!d) abort();
    hearth_buf_upload(gpu(), d, h, bytes);
    return d;
}
static inline void down(void *h, const void *d, size_t bytes) { hearth_buf_download(gpu(), h, d, bytes); }
static inline void dfree(void *d) { hearth_buf_free(gpu(), d); }

/* max |a - b| / max |b| */
static inline double rel_err(const float *a, const float *b, int64_t n) {
    double m = 0, ref = 1e-30;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= m)) m = d; /* NaN wins */
        if (fabs((double)b[i]) > ref) ref = fabs((double)b[i]);
    }
    return m / ref;
}

#define CHECK_REL(a, b, n, op) do { double e_ = rel_err(a, b, n);                            \
    if (!(e_ <= tol_of(op))) { test_cur_failed++; fprintf(stderr,                               \
    "  %s:%d: %s: relative error %.3g > %.3g\n", __FILE__, __LINE__, op, e_, tol_of(op)); } } while (0)

/* ---- weights of every type, made from random floats with the reference quantizers ---- */

typedef void (*from_fn)(const float *, void *, int64_t);
typedef void (*to_fn)(const void *, float *, int64_t);
static const struct {
    hearth_type t;
    from_fn     from;
    to_fn       to;
} TYPES[] = {
    {HEARTH_TYPE_F32, hearth_f32_from_float_ref, hearth_f32_to_float_ref},
    {HEARTH_TYPE_F16, hearth_f16_from_float_ref, hearth_f16_to_float_ref},
    {HEARTH_TYPE_BF16, hearth_bf16_from_float_ref, hearth_bf16_to_float_ref},
    {HEARTH_TYPE_Q4_0, hearth_q4_0_from_float_ref, hearth_q4_0_to_float_ref},
    {HEARTH_TYPE_Q4_1, hearth_q4_1_from_float_ref, hearth_q4_1_to_float_ref},
    {HEARTH_TYPE_Q5_0, hearth_q5_0_from_float_ref, hearth_q5_0_to_float_ref},
    {HEARTH_TYPE_Q5_1, hearth_q5_1_from_float_ref, hearth_q5_1_to_float_ref},
    {HEARTH_TYPE_Q8_0, hearth_q8_0_from_float_ref, hearth_q8_0_to_float_ref},
    {HEARTH_TYPE_Q4_K, hearth_q4_K_from_float_ref, hearth_q4_K_to_float_ref},
    {HEARTH_TYPE_Q5_K, hearth_q5_K_from_float_ref, hearth_q5_K_to_float_ref},
    {HEARTH_TYPE_Q6_K, hearth_q6_K_from_float_ref, hearth_q6_K_to_float_ref},
};
enum { N_TYPES = sizeof TYPES / sizeof TYPES[0] };

typedef struct {
    hearth_weight w;
    float        *deq; /* [ne1][ne0] the weight as the reference sees it */
} tweight;

static inline tweight make_weight(int ti, int64_t ne1, int64_t ne0) {
    tweight tw = {0};
    size_t rb = hearth_row_size(TYPES[ti].t, ne0);
    char *data = malloc(rb * (size_t)ne1);
    float *src = malloc(sizeof(float) * (size_t)ne0);
    tw.deq = malloc(sizeof(float) * (size_t)(ne0 * ne1));
    for (int64_t r = 0; r < ne1; r++) {
        fill(src, ne0, 1.0f);
        TYPES[ti].from(src, data + (size_t)r * rb, ne0);
        TYPES[ti].to(data + (size_t)r * rb, tw.deq + r * ne0, ne0);
    }
    free(src);
    tw.w = (hearth_weight){.type = TYPES[ti].t, .ne0 = ne0, .ne1 = ne1, .row_bytes = rb, .data = data};
    return tw;
}

/* The backend keeps a device copy of each weight keyed by its host address for its lifetime
 * (backend.h), so a test weight is never freed while the backend lives: a later malloc at the
 * same address would be served the old copy. Weights are made once per (set, type, shape); set 1
 * holds a second weight of a shape (an up projection beside set 0's gate). */
static inline tweight *weight_set(int set, int ti, int64_t ne1, int64_t ne0) {
    static struct { int set, ti; int64_t ne1, ne0; tweight tw; } made[192];
    static int n_made;
    for (int i = 0; i < n_made; i++)
        if (made[i].set == set && made[i].ti == ti && made[i].ne1 == ne1 && made[i].ne0 == ne0) return &made[i].tw;
    if (n_made == 192) abort();
    made[n_made].set = set;
    made[n_made].ti = ti;
    made[n_made].ne1 = ne1;
    made[n_made].ne0 = ne0;
    made[n_made].tw = make_weight(ti, ne1, ne0);
    return &made[n_made++].tw;
}
static inline tweight *weight_of(int ti, int64_t ne1, int64_t ne0) { return weight_set(0, ti, ne1, ne0); }
static inline tweight *up_weight_of(int ti, int64_t ne1, int64_t ne0) { return weight_set(1, ti, ne1, ne0); }

/* The reference of y = x W^T (row stride ldy) and the tolerance line it is held to. Q4_0, Q4_1
 * and Q8_0 at decode sizes multiply 8-bit activations: the reference is then the scalar set's
 * quantized dot (kernels/ref/dot_ref.c). */
static inline const char *matmul_ref(int ti, const tweight *tw, const float *x, int64_t T, float *ref, int64_t ldy) {
    hearth_type wt = TYPES[ti].t;
    int64_t ne0 = tw->w.ne0;
    bool q8 = hearth_backend_numerics(gpu()).tier != HEARTH_NUMERICS_REF && T <= 8 &&
              (wt == HEARTH_TYPE_Q4_0 || wt == HEARTH_TYPE_Q4_1 || wt == HEARTH_TYPE_Q8_0);
    char *xq = malloc((size_t)(ne0 / 32 * 36));
    for (int64_t t = 0; t < T; t++) {
        if (q8 && wt == HEARTH_TYPE_Q4_1) hearth_q8_1_from_float_ref(x + t * ne0, xq, ne0);
        else if (q8) hearth_q8_0_from_float_ref(x + t * ne0, xq, ne0);
        for (int64_t o = 0; o < tw->w.ne1; o++) {
            const char *wr = (const char *)tw->w.data + (size_t)o * tw->w.row_bytes;
            float sq = 0;
            double s = 0;
            if (wt == HEARTH_TYPE_Q4_1 && q8) hearth_vec_dot_q4_1_q8_1_ref(ne0, &sq, wr, xq);
            else if (wt == HEARTH_TYPE_Q4_0 && q8) hearth_vec_dot_q4_0_q8_0_ref(ne0, &sq, wr, xq);
            else if (q8) hearth_vec_dot_q8_0_q8_0_ref(ne0, &sq, wr, xq);
            else
                for (int64_t i = 0; i < ne0; i++) s += (double)tw->deq[o * ne0 + i] * x[t * ne0 + i];
            ref[t * ldy + o] = q8 ? sq : (float)s;
        }
    }
    free(xq);
    return q8 ? "matmul_gemv_q8" : T <= 8 ? "matmul_gemv"
           : wt == HEARTH_TYPE_F32 ? "matmul_gemm_f32"
           : wt == HEARTH_TYPE_BF16 ? "matmul_gemm_bf16" : "matmul_gemm_f16";
}
