/*
 * test_cuda_encoder.c - the CUDA backend's encoder ops (backend.h: layernorm, gelu_erf,
 * attn_enc, pool_rows, l2norm; src/backend/cuda/encoder.cu) against the CPU references
 * (kernels/ref/encoder_ref.h, and hearth_embed_normalize for the L2 norm) on random inputs:
 * widths that are and are not multiples of the block (384, 97, 1), rows with large offsets (the
 * variance of a row far from 0), a padded batch of sequences of unequal lengths (1 to L, keys past
 * each sequence's length must not count: the padding rows hold large values that would show),
 * head sizes 32, 64 and 17, all three poolings. Tolerances are cuda_test.h's table. Without a GPU
 * (or in a build without CUDA) every test skips.
 */
#include "cuda_test.h"

#include "kernels/ref/encoder_ref.h"
#include "models/bert.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

TEST(layernorm_matches_the_reference) {
    NEED_GPU();
    const int64_t dims[] = {384, 97, 1, 1024};
    for (size_t k = 0; k < sizeof dims / sizeof dims[0]; k++) {
        const int64_t n = 37, d = dims[k];
        float *x = malloc(sizeof(float) * (size_t)(n * d)), *w = malloc(sizeof(float) * (size_t)d),
              *bias = malloc(sizeof(float) * (size_t)d), *ref = malloc(sizeof(float) * (size_t)(n * d)),
              *got = malloc(sizeof(float) * (size_t)(n * d));
        fill(x, n * d, 3.0f);
        for (int64_t r = 0; r < n; r++) /* some rows far from 0 */
            for (int64_t i = 0; i < d; i++) x[r * d + i] += (float)(r % 5) * 40.0f;
        fill(w, d, 1.0f);
        fill(bias, d, 0.5f);
        for (int with = 0; with < 2; with++) { /* with weight and bias, and without */
            hearth_layernorm_ref(x, with ? w : NULL, with ? bias : NULL, ref, n, d, 1e-12f);
            float *dx = up(x, sizeof(float) * (size_t)(n * d)), *dy = hearth_buf_alloc(gpu(), sizeof(float) * (size_t)(n * d));
            hearth_op_layernorm(gpu(), dx, with ? w : NULL, with ? bias : NULL, dy, n, d, 1e-12f);
            down(got, dy, sizeof(float) * (size_t)(n * d));
            fprintf(stderr, "  layernorm %lld x %lld%s\n", (long long)n, (long long)d, with ? " with w, b" : "");
            CHECK_REL(got, ref, n * d, "layernorm");
            hearth_op_layernorm(gpu(), dx, with ? w : NULL, with ? bias : NULL, dx, n, d, 1e-12f); /* in place */
            down(got, dx, sizeof(float) * (size_t)(n * d));
            CHECK_REL(got, ref, n * d, "layernorm");
            dfree(dx);
            dfree(dy);
        }
        /* w and bias stay allocated: the backend keeps copies keyed by their addresses */
        free(x), free(ref), free(got);
    }
}

TEST(gelu_erf_matches_the_reference) {
    NEED_GPU();
    const int64_t n = 100003;
    float *x = malloc(sizeof(float) * n), *ref = malloc(sizeof(float) * n), *got = malloc(sizeof(float) * n);
    fill(x, n, 8.0f);
    memcpy(ref, x, sizeof(float) * n);
    hearth_gelu_erf_ref(ref, n);
    float *dx = up(x, sizeof(float) * n);
    hearth_op_gelu_erf(gpu(), dx, n);
    down(got, dx, sizeof(float) * n);
    CHECK_REL(got, ref, n, "gelu_erf");
    dfree(dx);
    free(x), free(ref), free(got);
}

/* A padded batch: sequence s has len[s] real rows of L; q, k, v interleaved in rows of 3 d as
 * the encoder's qkv buffer holds them, the padding rows filled with large values. */
static void attn_case(int32_t n_head, int32_t hd, int32_t L, const int32_t *lens, int64_t n_seq) {
    const int64_t d = (int64_t)n_head * hd, ld = 3 * d, R = n_seq * L;
    float *qkv = malloc(sizeof(float) * (size_t)(R * ld)), *ref = calloc((size_t)(R * d), sizeof(float)),
          *got = malloc(sizeof(float) * (size_t)(R * d)), *sc = malloc(sizeof(float) * (size_t)L);
    fill(qkv, R * ld, 2.0f);
    for (int64_t s = 0; s < n_seq; s++) {
        for (int64_t i = lens[s]; i < L; i++)
            for (int64_t c = 0; c < ld; c++) qkv[(s * L + i) * ld + c] = 50.0f;
        const float *q = qkv + s * L * ld;
        hearth_attn_full_ref(q, q + d, q + 2 * d, ld, ref + s * L * d, d, lens[s], n_head, hd,
                             1.0f / sqrtf((float)hd), sc);
    }
    float *dq = up(qkv, sizeof(float) * (size_t)(R * ld)), *dout = hearth_buf_alloc(gpu(), sizeof(float) * (size_t)(R * d));
    int32_t *dlen = up(lens, sizeof(int32_t) * (size_t)n_seq);
    CHECK(hearth_backend_attn_enc_ok(gpu(), L, hd));
    hearth_op_attn_enc(gpu(), dq, dq + d, dq + 2 * d, ld, dout, d, n_seq, L, dlen, n_head, hd, 1.0f / sqrtf((float)hd));
    down(got, dout, sizeof(float) * (size_t)(R * d));
    fprintf(stderr, "  attn_enc %d heads of %d, %lld sequences padded to %d\n", n_head, hd, (long long)n_seq, L);
    CHECK_REL(got, ref, R * d, "attention_enc");
    dfree(dq);
    dfree(dout);
    dfree(dlen);
    free(qkv), free(ref), free(got), free(sc);
}

TEST(attn_enc_masks_the_padding) {
    NEED_GPU();
    const int32_t lens_a[] = {13, 1, 40, 7, 40}, lens_b[] = {256, 3, 129}, lens_c[] = {5};
    attn_case(12, 32, 40, lens_a, 5);  /* MiniLM's heads */
    attn_case(4, 64, 256, lens_b, 3);  /* more keys than threads */
    attn_case(3, 17, 5, lens_c, 1);    /* an odd head size, no padding */
}

TEST(pool_rows_and_l2norm_match_the_reference) {
    NEED_GPU();
    const int32_t L = 19, lens[] = {19, 1, 8, 12};
    const int64_t n_seq = 4, d = 384, R = n_seq * L;
    float *x = malloc(sizeof(float) * (size_t)(R * d)), *ref = malloc(sizeof(float) * (size_t)(n_seq * d)),
          *got = malloc(sizeof(float) * (size_t)(n_seq * d));
    fill(x, R * d, 4.0f);
    for (int64_t s = 0; s < n_seq; s++) /* padding rows that would move any pooling that read them */
        for (int64_t i = lens[s]; i < L; i++)
            for (int64_t c = 0; c < d; c++) x[(s * L + i) * d + c] = 1000.0f;
    float *dx = up(x, sizeof(float) * (size_t)(R * d)), *dout = hearth_buf_alloc(gpu(), sizeof(float) * (size_t)(n_seq * d));
    int32_t *dlen = up(lens, sizeof lens);
    const char *names[] = {"mean", "cls", "last"};
    for (int kind = 0; kind < 3; kind++) {
        for (int64_t s = 0; s < n_seq; s++) hearth_pool_ref(x + s * L * d, lens[s], d, kind, ref + s * d);
        hearth_op_pool_rows(gpu(), dx, n_seq, L, d, dlen, kind, dout);
        down(got, dout, sizeof(float) * (size_t)(n_seq * d));
        fprintf(stderr, "  pool %s\n", names[kind]);
        CHECK_REL(got, ref, n_seq * d, "pool");
        for (int64_t s = 0; s < n_seq; s++) hearth_embed_normalize(ref + s * d, d);
        hearth_op_l2norm(gpu(), dout, n_seq, d);
        down(got, dout, sizeof(float) * (size_t)(n_seq * d));
        CHECK_REL(got, ref, n_seq * d, "l2norm");
    }
    float zero[8] = {0}; /* an all-zero row stays zero (the 1e-12 floor of the norm) */
    float *dz = up(zero, sizeof zero);
    hearth_op_l2norm(gpu(), dz, 1, 8);
    down(zero, dz, sizeof zero);
    for (int i = 0; i < 8; i++) CHECK(zero[i] == 0.0f);
    dfree(dz);
    dfree(dx);
    dfree(dout);
    dfree(dlen);
    free(x), free(ref), free(got);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
