/*
 * test_kv_pool.c - the paged KV block pool: accounting (alloc / ref / free list / block-table
 * rows), the paged attention kernel against the contiguous reference, and whole forwards
 * through scattered block tables against the contiguous cache, bit for bit (tiny qwen2 and
 * qwen3 committed; SmolLM2 and Gemma 3 through HEARTH_SMOLLM2_GGUF / HEARTH_GEMMA3_GGUF).
 */
#include "engine/kv_pool.h"
#include "kernels/ref/attn_paged_ref.h"
#include "kernels/ref/ops_ref.h"
#include "tensor/dtype.h"
#include "../models/model_harness.h"
#include "model/model_internal.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

static uint32_t lcg(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static hearth_model *load(const char *path) {
    hearth_model *m = NULL;
    hearth_err err;
    if (hearth_model_load(path, &m, &err)) return NULL;
    return m;
}

TEST(pool_accounting) {
    hearth_model *m = load("tests/golden/tiny/tiny-qwen2.gguf");
    CHECK(m != NULL);
    if (!m) return;
    hearth_kv_pool_params pp = {.block_size = 4, .n_seqs = 3, .max_seq_len = 20, .kv = HEARTH_KV_SCHEME_F16};
    pp.budget_bytes = hearth_kv_bytes_per_token(m, HEARTH_KV_SCHEME_F16) * 4 * 10 + 7; /* 10 blocks and change */
    hearth_kv_pool *pool = NULL;
    hearth_err err;
    CHECK_EQ(hearth_kv_pool_create(m, &pp, &pool, &err), HEARTH_OK);
    CHECK_EQ(hearth_kv_pool_n_blocks(pool), 10);
    CHECK_EQ(hearth_kv_pool_n_free(pool), 10);
    CHECK_EQ(hearth_kv_pool_block_bytes(pool), hearth_kv_bytes_per_token(m, HEARTH_KV_SCHEME_F16) * 4);
    /* a sequence of 9 tokens takes 3 blocks; growing to 12 takes none, to 13 one more */
    CHECK(hearth_kv_pool_seq_reserve(pool, 0, 9));
    CHECK_EQ(hearth_kv_pool_seq_blocks(pool, 0, 0), 3);
    CHECK_EQ(hearth_kv_pool_seq_need(pool, 0, 12), 0);
    CHECK_EQ(hearth_kv_pool_seq_need(pool, 0, 13), 1);
    CHECK_EQ(hearth_kv_pool_n_free(pool), 7);
    CHECK(!hearth_kv_pool_seq_reserve(pool, 1, 21)); /* over max_seq_len */
    CHECK(!hearth_kv_pool_seq_reserve(pool, 1, 4 * 8)); /* 8 blocks: too few free; nothing taken */
    CHECK_EQ(hearth_kv_pool_n_free(pool), 7);
    CHECK_EQ(hearth_kv_pool_seq_blocks(pool, 0, 1), 0);
    /* sharing: seq 1 takes seq 0's first block by reference */
    int32_t shared = hearth_kv_pool_row(pool, 0, 0)[0];
    hearth_kv_pool_ref(pool, shared);
    CHECK(hearth_kv_pool_seq_push(pool, 0, 1, shared));
    CHECK_EQ(hearth_kv_pool_refs(pool, shared), 2);
    CHECK(hearth_kv_pool_check(pool));
    /* release seq 0: its two own blocks return, the shared one stays */
    int32_t b;
    while ((b = hearth_kv_pool_seq_pop(pool, 0, 0)) >= 0) hearth_kv_pool_unref(pool, b);
    CHECK_EQ(hearth_kv_pool_n_free(pool), 9);
    CHECK_EQ(hearth_kv_pool_refs(pool, shared), 1);
    CHECK(hearth_kv_pool_row(pool, 0, 0)[0] == -1);
    CHECK(hearth_kv_pool_unref(pool, hearth_kv_pool_seq_pop(pool, 0, 1)));
    CHECK_EQ(hearth_kv_pool_n_free(pool), 10);
    CHECK(hearth_kv_pool_check(pool));
    /* alloc until empty, then -1 */
    int32_t got[10];
    for (int i = 0; i < 10; i++) got[i] = hearth_kv_pool_alloc(pool);
    CHECK_EQ(hearth_kv_pool_alloc(pool), -1);
    for (int i = 0; i < 10; i++) hearth_kv_pool_unref(pool, got[i]);
    CHECK(hearth_kv_pool_check(pool));
    hearth_kv_pool_destroy(pool);
    pp.budget_bytes = 100; /* less than one block */
    CHECK_EQ(hearth_kv_pool_create(m, &pp, &pool, &err), HEARTH_E_LIMIT);
    hearth_model_destroy(m);
}

/* A block to host memory and back (the disk tier's form): the same bytes, no other block
 * touched, and the layout is the one copy_block moves (a copied block reads back equal). */
TEST(block_host_round_trip) {
    hearth_model *m = load("tests/golden/tiny/tiny-qwen2.gguf");
    CHECK(m != NULL);
    if (!m) return;
    hearth_kv_pool_params pp = {.block_size = 4, .n_seqs = 1, .max_seq_len = 16, .kv = HEARTH_KV_SCHEME_F16};
    pp.budget_bytes = hearth_kv_bytes_per_token(m, HEARTH_KV_SCHEME_F16) * 4 * 6;
    hearth_kv_pool *pool = NULL;
    hearth_err err;
    CHECK_EQ(hearth_kv_pool_create(m, &pp, &pool, &err), HEARTH_OK);
    if (!pool) return;
    size_t n = hearth_kv_pool_block_bytes(pool);
    unsigned char *a = malloc(n), *b = malloc(n), *got = malloc(n);
    uint32_t seed = 7;
    for (size_t i = 0; i < n; i++) {
        a[i] = (unsigned char)lcg(&seed);
        b[i] = (unsigned char)lcg(&seed);
    }
    hearth_kv_pool_block_from_host(pool, 3, b);
    hearth_kv_pool_block_from_host(pool, 2, a);
    hearth_kv_pool_block_to_host(pool, 2, got);
    CHECK(memcmp(got, a, n) == 0);
    hearth_kv_pool_block_to_host(pool, 3, got);
    CHECK(memcmp(got, b, n) == 0);
    hearth_kv_pool_copy_block(pool, 5, 2, 4);
    hearth_kv_pool_block_to_host(pool, 5, got);
    CHECK(memcmp(got, a, n) == 0);
    free(a);
    free(b);
    free(got);
    hearth_kv_pool_destroy(pool);
    hearth_model_destroy(m);
}

/* The paged kernel with a scattered table equals the contiguous reference bit for bit. */
TEST(paged_attention_matches_contiguous) {
    enum { D = 64, STRIDE = 2 * D, N = 45, BS = 8, NB = 8 };
    uint32_t s = 7;
    for (int f16 = 0; f16 < 2; f16++) {
        static float kc[N * STRIDE], vc[N * STRIDE], kp[NB * BS * STRIDE], vp[NB * BS * STRIDE];
        static uint16_t kc16[N * STRIDE], vc16[N * STRIDE], kp16[NB * BS * STRIDE], vp16[NB * BS * STRIDE];
        int32_t table[NB] = {5, 2, 7, 0, 3, 6, 1, 4};
        float q[D], sc[N], sp[N], oc[D], op[D];
        for (int i = 0; i < D; i++) q[i] = (float)((int)(lcg(&s) % 2001) - 1000) / 700.0f;
        for (int j = 0; j < N; j++)
            for (int d = 0; d < STRIDE; d++) {
                float a = (float)((int)(lcg(&s) % 2001) - 1000) / 900.0f;
                float c = (float)((int)(lcg(&s) % 2001) - 1000) / 900.0f;
                size_t pj = ((size_t)table[j / BS] * BS + (size_t)(j % BS)) * STRIDE + (size_t)d;
                kc[j * STRIDE + d] = kp[pj] = a;
                vc[j * STRIDE + d] = vp[pj] = c;
                kc16[j * STRIDE + d] = kp16[pj] = hearth_fp32_to_fp16(a);
                vc16[j * STRIDE + d] = vp16[pj] = hearth_fp32_to_fp16(c);
            }
        const void *k1 = f16 ? (const void *)(kc16 + D) : (const void *)(kc + D); /* second head */
        const void *v1 = f16 ? (const void *)(vc16 + D) : (const void *)(vc + D);
        const void *k2 = f16 ? (const void *)(kp16 + D) : (const void *)(kp + D);
        const void *v2 = f16 ? (const void *)(vp16 + D) : (const void *)(vp + D);
        for (int64_t j0 = 0; j0 < 20; j0 += 13) {
            hearth_attn_head_ref(q, k1, v1, STRIDE, f16, D, j0, N, 0.125f, f16 ? 0.0f : 30.0f, sc, oc);
            hearth_attn_head_paged_ref(q, k2, v2, STRIDE, table, BS, f16, D, j0, N, 0.125f, f16 ? 0.0f : 30.0f, sp,
                                       op);
            CHECK(memcmp(oc, op, sizeof oc) == 0);
        }
    }
}

/* Two sequences through the paged pool (scattered blocks, chunked prefill, both in one step)
 * against each alone on the contiguous cache: every logit row identical. */
static void paged_forward_matches(const char *path, int32_t block_size) {
    enum { NA = 37, NB_ = 21, NDEC = 3, MAXT = 64 };
    harness *h = harness_open(path, MAXT, 128, true, 2);
    CHECK(h != NULL);
    if (!h) return;
    int32_t V = h->n_vocab, vlim = V < 2000 ? V : 2000;
    uint32_t s = 11;
    int32_t pa[NA + NDEC], pb[NB_ + NDEC];
    for (int i = 0; i < NA; i++) pa[i] = 1 + (int32_t)(lcg(&s) % (uint32_t)(vlim - 1));
    for (int i = 0; i < NB_; i++) pb[i] = 1 + (int32_t)(lcg(&s) % (uint32_t)(vlim - 1));
    /* contiguous: each alone; rows [prefill...][decode...] */
    float *ra = malloc((size_t)(NA + NDEC) * (size_t)V * sizeof(float));
    float *rb = malloc((size_t)(NB_ + NDEC) * (size_t)V * sizeof(float));
    float *got = malloc((size_t)MAXT * (size_t)V * sizeof(float));
    harness_run(h, pa, NA, 0, true, ra);
    for (int i = 0; i < NDEC; i++) {
        pa[NA + i] = argmax_f(ra + (size_t)(NA - 1 + i) * (size_t)V, V);
        harness_run(h, &pa[NA + i], 1, NA + i, false, ra + (size_t)(NA + i) * (size_t)V);
    }
    harness_run(h, pb, NB_, 0, true, rb);
    for (int i = 0; i < NDEC; i++) {
        pb[NB_ + i] = argmax_f(rb + (size_t)(NB_ - 1 + i) * (size_t)V, V);
        harness_run(h, &pb[NB_ + i], 1, NB_ + i, false, rb + (size_t)(NB_ + i) * (size_t)V);
    }
    /* paged: blocks handed out in a shuffled order */
    hearth_kv_pool_params pp = {.block_size = block_size, .n_seqs = 2, .max_seq_len = 128, .kv = HEARTH_KV_SCHEME_F16};
    pp.budget_bytes = hearth_kv_bytes_per_token(h->m, HEARTH_KV_SCHEME_F16) * 128 * 2;
    hearth_kv_pool *pool = NULL;
    hearth_err err;
    CHECK_EQ(hearth_kv_pool_create(h->m, &pp, &pool, &err), HEARTH_OK);
    int32_t nb = hearth_kv_pool_n_blocks(pool);
    int32_t *ids = malloc((size_t)nb * sizeof(int32_t));
    for (int32_t i = 0; i < nb; i++) ids[i] = hearth_kv_pool_alloc(pool);
    for (int32_t i = nb - 1; i > 0; i--) {
        int32_t j = (int32_t)(lcg(&s) % (uint32_t)(i + 1)), t = ids[i];
        ids[i] = ids[j];
        ids[j] = t;
    }
    int32_t need_a = (NA + NDEC + block_size - 1) / block_size, need_b = (NB_ + NDEC + block_size - 1) / block_size;
    int32_t n_groups = hearth_kv_pool_n_groups(pool), used = 0; /* every layer group's rows */
    for (int32_t g = 0; g < n_groups; g++)
        for (int32_t i = 0, ia = 0, ib = 0; i < need_a + need_b; i++) {
            if ((i % 2 == 0 && ia < need_a) || ib == need_b) hearth_kv_pool_seq_push(pool, g, 0, ids[used++]), ia++;
            else hearth_kv_pool_seq_push(pool, g, 1, ids[used++]), ib++;
        }
    for (int32_t i = used; i < nb; i++) hearth_kv_pool_unref(pool, ids[i]);
    free(ids);
    hearth_backend *be = hearth_backend_cpu_create(2, MAXT, 1 << 14, 128, NULL);
    hearth_fwd *fwd = hearth_fwd_create(h->m, be, MAXT, NULL);
    int32_t tok[MAXT], pos[MAXT], seq[MAXT];
    int8_t want[MAXT];
    int diff = 0;
    /* step 1: A 0..19 and all of B; step 2: A 20..36; then decode both in one step */
    int32_t n = 0;
    for (int i = 0; i < 20; i++) tok[n] = pa[i], pos[n] = i, seq[n] = 0, want[n++] = 1;
    for (int i = 0; i < NB_; i++) tok[n] = pb[i], pos[n] = i, seq[n] = 1, want[n++] = 1;
    hearth_batch b = {.n_tokens = n, .token = tok, .pos = pos, .seq = seq, .want_logits = want};
    CHECK_EQ(hearth_forward(fwd, &b, hearth_kv_pool_view(pool), got), HEARTH_OK);
    diff += memcmp(got, ra, (size_t)20 * (size_t)V * sizeof(float)) != 0;
    diff += memcmp(got + (size_t)20 * (size_t)V, rb, (size_t)NB_ * (size_t)V * sizeof(float)) != 0;
    n = 0;
    for (int i = 20; i < NA; i++) tok[n] = pa[i], pos[n] = i, seq[n] = 0, want[n++] = 1;
    b.n_tokens = n;
    CHECK_EQ(hearth_forward(fwd, &b, hearth_kv_pool_view(pool), got), HEARTH_OK);
    diff += memcmp(got, ra + (size_t)20 * (size_t)V, (size_t)(NA - 20) * (size_t)V * sizeof(float)) != 0;
    for (int d = 0; d < NDEC; d++) {
        tok[0] = pa[NA + d], pos[0] = NA + d, seq[0] = 0, want[0] = 1;
        tok[1] = pb[NB_ + d], pos[1] = NB_ + d, seq[1] = 1, want[1] = 1;
        b.n_tokens = 2;
        CHECK_EQ(hearth_forward(fwd, &b, hearth_kv_pool_view(pool), got), HEARTH_OK);
        diff += memcmp(got, ra + (size_t)(NA + d) * (size_t)V, (size_t)V * sizeof(float)) != 0;
        diff += memcmp(got + V, rb + (size_t)(NB_ + d) * (size_t)V, (size_t)V * sizeof(float)) != 0;
    }
    CHECK_EQ(diff, 0);
    /* a position without a block is refused */
    tok[0] = 1, pos[0] = 127, seq[0] = 0;
    b.n_tokens = 1;
    CHECK_EQ(hearth_forward(fwd, &b, hearth_kv_pool_view(pool), got), HEARTH_E_INVALID);
    hearth_fwd_destroy(fwd);
    hearth_backend_destroy(be);
    hearth_kv_pool_destroy(pool);
    free(ra);
    free(rb);
    free(got);
    harness_close(h);
}

TEST(paged_forward_tiny_qwen2) {
    paged_forward_matches("tests/golden/tiny/tiny-qwen2.gguf", 16);
    paged_forward_matches("tests/golden/tiny/tiny-qwen2.gguf", 5);
}

TEST(paged_forward_tiny_qwen3) { paged_forward_matches("tests/golden/tiny/tiny-qwen3.gguf", 16); }

TEST(paged_forward_smollm2) {
    const char *p = getenv("HEARTH_SMOLLM2_GGUF");
    if (!p) TEST_SKIP("HEARTH_SMOLLM2_GGUF not set");
    if (getenv("HEARTH_TEST_SANITIZED")) TEST_SKIP("real model: normal build only");
    paged_forward_matches(p, 16);
}

TEST(paged_forward_gemma3) {
    const char *p = getenv("HEARTH_GEMMA3_GGUF");
    if (!p) TEST_SKIP("HEARTH_GEMMA3_GGUF not set");
    if (getenv("HEARTH_TEST_SANITIZED")) TEST_SKIP("real model: normal build only");
    paged_forward_matches(p, 32);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
