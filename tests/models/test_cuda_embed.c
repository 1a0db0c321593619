/*
 * test_cuda_embed.c - encoder embeddings on the CUDA backend (models/bert_device.c) against the
 * same sentence-transformers goldens as test_bert.c, with the same tolerance (every embedding's
 * cosine with the golden >= 0.99999, nearest neighbours as test_bert.c checks them):
 *   - tiny-bert (CLS pooling, normalized), tiny-roberta (positions from pad_token_id + 1, mean
 *     pooling, not normalized), tiny-xlmr (CLS, normalized): the committed checkpoints;
 *   - all-MiniLM-L6-v2 (HEARTH_MINILM; skipped when unset): mean pooling, normalized, every
 *     query's nearest neighbour;
 *   - padding: the whole golden set in one padded forward (sequences of 5 to 30 tokens side by
 *     side), one by one (no padding), and cut into smaller forwards (a cap of 40 padded rows,
 *     which the load raises to the model's limit: 64 for tiny-bert, 256 for MiniLM), each
 *     within 1e-6 cosine of the CPU's embeddings of the same texts (the padding must change
 *     nothing; cuBLAS may order a GEMM's sums by batch size, so bits are not asserted);
 *   - refusals: a ModernBERT with --device cuda fails at load naming it ("runs on the CPU
 *     only"); with --device auto it loads on the CPU.
 * Skips without a GPU.
 */
#include "embed_harness.h"

#include "backend/backend.h"
#include "models/bert.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

static hearth_bert *load_on(const char *dir, int device, int64_t max_batch_tokens, hearth_err *err) {
    hearth_bert_params p = hearth_bert_params_default();
    p.n_threads = 2;
    p.device = device;
    if (max_batch_tokens) p.max_batch_tokens = max_batch_tokens;
    hearth_bert *b = NULL;
    if (hearth_bert_load(dir, &p, &b, err)) fprintf(stderr, "  load %s: %s\n", dir, err->msg);
    return b;
}

#define NEED_GPU() do { if (hearth_cuda_device_count() <= 0) TEST_SKIP("no CUDA device"); } while (0)

static void parity_on_cuda(const char *dir, const char *golden_name, bool all_queries) {
    golden g;
    CHECK(golden_load(golden_name, &g));
    hearth_err err = {0};
    hearth_bert *b = load_on(dir, HEARTH_DEVICE_CUDA, 0, &err);
    CHECK(b != NULL);
    if (b) {
        fprintf(stderr, "  %s\n", hearth_bert_desc(b));
        CHECK(strstr(hearth_bert_desc(b), "on cuda") != NULL);
        check_parity(b, &g, all_queries);
    }
    hearth_bert_destroy(b);
    golden_free(&g);
}

TEST(tiny_bert_cuda_parity) {
    NEED_GPU();
    parity_on_cuda("tests/golden/embed/tiny-bert", "tiny-bert", false);
}

TEST(tiny_roberta_cuda_parity) {
    NEED_GPU();
    parity_on_cuda("tests/golden/embed/tiny-roberta", "tiny-roberta", false);
}

TEST(tiny_xlmr_cuda_parity) {
    NEED_GPU();
    parity_on_cuda("tests/golden/embed/tiny-xlmr", "tiny-xlmr", false);
}

TEST(minilm_cuda_parity) {
    NEED_GPU();
    const char *dir = getenv("HEARTH_MINILM");
    if (!dir || !*dir) TEST_SKIP("HEARTH_MINILM is not set (scripts/model-path.sh minilm)");
    parity_on_cuda(dir, "minilm", true);
}

/* The worst cosine between a and b row by row. */
static double worst_cos(const float *a, const float *b, int n, int d) {
    double w = 1;
    for (int i = 0; i < n; i++) {
        double c = cosine(a + (size_t)i * d, b + (size_t)i * d, d);
        if (!(c >= w)) w = c;
    }
    return w;
}

TEST(padding_changes_nothing) {
    NEED_GPU();
    const char *dir = getenv("HEARTH_MINILM");
    const char *path = dir && *dir ? dir : "tests/golden/embed/tiny-bert";
    golden g;
    CHECK(golden_load(dir && *dir ? "minilm" : "tiny-bert", &g));
    hearth_err err = {0};
    hearth_bert *cpu = load_on(path, HEARTH_DEVICE_CPU, 0, &err), *b = load_on(path, HEARTH_DEVICE_CUDA, 0, &err),
                *cut = load_on(path, HEARTH_DEVICE_CUDA, 40, &err);
    CHECK(cpu && b && cut);
    if (cpu && b && cut) {
        const int n = g.n_texts, d = g.dim;
        float *ref = malloc((size_t)n * d * sizeof *ref), *all = malloc((size_t)n * d * sizeof *all),
              *one = malloc((size_t)n * d * sizeof *one), *parts = malloc((size_t)n * d * sizeof *parts);
        const int32_t *const *ids = (const int32_t *const *)g.ids;
        CHECK_EQ(hearth_bert_embed(cpu, ids, g.n_ids, n, ref, &err), HEARTH_OK);
        CHECK_EQ(hearth_bert_embed(b, ids, g.n_ids, n, all, &err), HEARTH_OK);
        for (int i = 0; i < n; i++)
            CHECK_EQ(hearth_bert_embed(b, ids + i, g.n_ids + i, 1, one + (size_t)i * d, &err), HEARTH_OK);
        CHECK_EQ(hearth_bert_embed(cut, ids, g.n_ids, n, parts, &err), HEARTH_OK);
        const float *got[3] = {all, one, parts};
        const char *how[3] = {"one padded forward", "one by one", "forwards of 40 padded rows"};
        for (int k = 0; k < 3; k++) {
            double w = worst_cos(got[k], ref, n, d);
            fprintf(stderr, "  %s: worst cosine with the CPU 1 - %.3g\n", how[k], 1 - w);
            CHECK(w >= 1 - 1e-6);
        }
        free(ref), free(all), free(one), free(parts);
    }
    hearth_bert_destroy(cpu);
    hearth_bert_destroy(b);
    hearth_bert_destroy(cut);
    golden_free(&g);
}

TEST(encoders_the_gpu_does_not_run_are_refused_or_left_on_the_cpu) {
    NEED_GPU();
    const char *dir = "tests/golden/embed/tiny-modernbert";
    hearth_err err = {0};
    hearth_bert *b = load_on(dir, HEARTH_DEVICE_CUDA, 0, &err);
    CHECK(b == NULL);
    fprintf(stderr, "  %s\n", err.msg);
    CHECK(strstr(err.msg, "ModernBERT runs on the CPU only") != NULL);
    hearth_bert_destroy(b);
    b = load_on(dir, HEARTH_DEVICE_AUTO, 0, &err);
    CHECK(b != NULL);
    if (b) CHECK(strstr(hearth_bert_desc(b), "on cpu") != NULL);
    hearth_bert_destroy(b);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
