/*
 * test_ref_transformers.c - hearth's reference path against transformers in f32.
 *
 * With HEARTH_KERNELS=ref every weight is dequantized to f32 and multiplied with f32
 * activations, and the KV cache is f32: the same arithmetic transformers does on the same
 * dequantized weights (goldens by tools/golden_transformers.py and tools/make_tiny_models.py).
 * Required: the last position's logits within 1e-3 everywhere in the vocabulary, the argmax at
 * every prompt position equal, and the 32-token greedy continuation identical.
 */
#include "golden_json.h"
#include "model_harness.h"
#include "test.h"

#include <math.h>

#define MAX_ABS_DLOGIT 1e-3

static void check_model(const char *gguf, const char *golden_base) {
    char path[512];
    snprintf(path, sizeof path, "%s.json", golden_base);
    char *json = golden_slurp(path, NULL);
    CHECK(json != NULL);
    snprintf(path, sizeof path, "%s.logits.bin", golden_base);
    size_t n_bin = 0;
    char *bin = golden_slurp(path, &n_bin);
    CHECK(bin != NULL);
    harness *h = json && bin ? harness_open(gguf, 64, 160, false, 2) : NULL;
    CHECK(h != NULL);
    if (!h) goto out;
    int n_prompts = golden_count(json, "ids");
    CHECK(n_prompts > 0);
    CHECK_EQ(n_bin, (size_t)n_prompts * (size_t)h->n_vocab * sizeof(float));
    float *logits = malloc((size_t)64 * (size_t)h->n_vocab * sizeof(float));
    double worst = 0;
    for (int ip = 0; ip < n_prompts && n_bin == (size_t)n_prompts * (size_t)h->n_vocab * sizeof(float); ip++) {
        int n_ids = 0, n_am = 0, n_greedy = 0;
        int32_t *ids = golden_int_array(json, "ids", ip, &n_ids);
        int32_t *am = golden_int_array(json, "argmax", ip, &n_am);
        int32_t *greedy = golden_int_array(json, "greedy32", ip, &n_greedy);
        CHECK(ids && am && greedy && n_am == n_ids && n_greedy == 32 && n_ids <= 64);
        if (!ids || !am || !greedy || n_ids > 64) continue;
        CHECK_EQ(harness_run(h, ids, n_ids, 0, true, logits), HEARTH_OK);
        int am_diff = 0;
        for (int t = 0; t < n_ids; t++) am_diff += argmax_f(logits + (size_t)t * h->n_vocab, h->n_vocab) != am[t];
        CHECK_EQ(am_diff, 0);
        const float *ref = (const float *)bin + (size_t)ip * h->n_vocab;
        const float *last = logits + (size_t)(n_ids - 1) * h->n_vocab;
        double md = 0;
        for (int32_t v = 0; v < h->n_vocab; v++) md = fmax(md, fabs((double)last[v] - ref[v]));
        if (md > worst) worst = md;
        CHECK(md <= MAX_ABS_DLOGIT);
        /* greedy continuation on the cache */
        int32_t next = argmax_f(last, h->n_vocab), mism = -1;
        for (int s = 0; s < 32; s++) {
            if (next != greedy[s] && mism < 0) mism = s;
            if (s == 31) break;
            CHECK_EQ(harness_run(h, &next, 1, n_ids + s, false, logits), HEARTH_OK);
            next = argmax_f(logits, h->n_vocab);
        }
        if (mism >= 0) fprintf(stderr, "  prompt %d: greedy differs from step %d\n", ip, mism);
        CHECK_EQ(mism, -1);
        free(ids);
        free(am);
        free(greedy);
    }
    fprintf(stderr, "  %s: %d prompts, max |dlogit| %.3g (bound %.0e)\n", golden_base, n_prompts, worst,
            MAX_ABS_DLOGIT);
    free(logits);
out:
    harness_close(h);
    free(json);
    free(bin);
}

/* The real models take minutes under a sanitizer; the tiny ones cover the same code there. */
#define SKIP_IF_SANITIZED() \
    do { if (getenv("HEARTH_TEST_SANITIZED")) TEST_SKIP("real models run in the normal build"); } while (0)

TEST(smollm2_matches_transformers) {
    SKIP_IF_SANITIZED();
    const char *p = getenv("HEARTH_SMOLLM2_GGUF");
    if (!p) TEST_SKIP("HEARTH_SMOLLM2_GGUF not set");
    check_model(p, "tests/golden/transformers/smollm2");
}

TEST(gemma3_matches_transformers) {
    SKIP_IF_SANITIZED();
    const char *p = getenv("HEARTH_GEMMA3_GGUF");
    if (!p) TEST_SKIP("HEARTH_GEMMA3_GGUF not set");
    check_model(p, "tests/golden/transformers/gemma3");
}

TEST(tiny_qwen2_matches_transformers) {
    check_model("tests/golden/tiny/tiny-qwen2.gguf", "tests/golden/tiny/tiny-qwen2");
}

TEST(tiny_qwen3_matches_transformers) {
    check_model("tests/golden/tiny/tiny-qwen3.gguf", "tests/golden/tiny/tiny-qwen3");
}

int main(int argc, char **argv) {
    setenv("HEARTH_KERNELS", "ref", 1); /* before the kernel table is chosen */
    return test_main(argc, argv);
}
