/*
 * test_lora_gguf.c - a GGUF LoRA adapter (lora/lora_gguf.c) on the SmolLM2 starter model against
 * llama.cpp (llama-cpp-python's lora_path): tests/golden/lora/smollm2-lora.{gguf,json}, made by
 * tools/make_lora_gguf.py (a random rank-4 adapter of attn_q, attn_v and ffn_down in two
 * layers, written with gguf-py as convert_lora_to_gguf.py writes them).
 *
 * With the default numerics (llama.cpp's order) and an f16 cache, for each prompt: the 16-token
 * greedy continuation equals llama.cpp's with the adapter, and without the adapter equals
 * llama.cpp's without it (the golden's two continuations differ, so the check can fail); after
 * the prompt the argmax is llama.cpp's and its top-8 tokens' logits are within 2e-2 (llama.cpp adds the
 * update as its own matmuls: (B (A x)) scale, with f32 sums in another order than hearth's).
 * Skips without HEARTH_SMOLLM2_GGUF (make setup), or without the golden (the tool writes the
 * adapter and the golden together). The refusals need no starter model: the
 * adapter on the tiny qwen2 GGUF (another architecture) and on a safetensors llama.
 */
#include "golden_json.h"
#include "kernels/kernels.h"
#include "lora/lora.h"
#include "model_harness.h"
#include "test.h"

#include <math.h>
#include <string.h>

#define ADAPTER "tests/golden/lora/smollm2-lora.gguf"
#define GOLDEN "tests/golden/lora/smollm2-lora.json"

enum { MAX_TOK = 64, N_GEN = 16, TOP = 8 };

static const float *f_array(const char *json, const char *key, int idx, int *n, float *buf, int cap) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": [", key);
    const char *p = json;
    for (int i = 0; p && i <= idx; i++) {
        p = strstr(p, pat);
        if (p && i < idx) p += strlen(pat);
    }
    *n = 0;
    if (!p) return NULL;
    p += strlen(pat);
    while (*n < cap) {
        while (*p == ' ' || *p == '\n' || *p == ',') p++;
        if (*p == ']' || !*p) break;
        char *end;
        buf[*n] = strtof(p, &end);
        if (end == p) break;
        (*n)++;
        p = end;
    }
    return buf;
}

/* Greedy continuation of ids with adapter a (NULL: none) in a fresh cache; the logits after
 * the prompt into first. */
static void greedy(harness *h, const hearth_lora *a, const int32_t *ids, int n, int32_t *out, float *first,
                   float *logits) {
    const hearth_lora *ls[MAX_TOK];
    for (int i = 0; i < n; i++) {
        h->tok[i] = ids[i], h->pos[i] = i, h->seq[i] = 0, h->want[i] = i == n - 1;
        ls[i] = a;
    }
    hearth_batch b = {.n_tokens = n, .token = h->tok, .pos = h->pos, .seq = h->seq, .want_logits = h->want, .lora = ls};
    CHECK_EQ(hearth_forward(h->fwd, &b, hearth_kv_view_of(h->kv), logits), HEARTH_OK);
    memcpy(first, logits, (size_t)h->n_vocab * sizeof(float));
    for (int s = 0; s < N_GEN; s++) {
        out[s] = argmax_f(logits, h->n_vocab);
        h->tok[0] = out[s], h->pos[0] = n + s, h->want[0] = 1;
        b.n_tokens = 1;
        CHECK_EQ(hearth_forward(h->fwd, &b, hearth_kv_view_of(h->kv), logits), HEARTH_OK);
    }
}

TEST(smollm2_gguf_lora_agrees_with_llamacpp) {
    const char *path = getenv("HEARTH_SMOLLM2_GGUF");
    if (!path) TEST_SKIP("HEARTH_SMOLLM2_GGUF is not set (make setup)");
    if (getenv("HEARTH_TEST_SANITIZED")) TEST_SKIP("real models run in the normal build");
    char *json = golden_slurp(GOLDEN, NULL);
    if (!json) TEST_SKIP(GOLDEN " is missing: run tools/make_lora_gguf.py (llama-cpp-python) and commit it");
    harness *h = json ? harness_open_scheme(path, MAX_TOK, 256, HEARTH_KV_SCHEME_F16, 2) : NULL;
    CHECK(h != NULL);
    hearth_lora *a = NULL;
    hearth_err err = {0};
    if (h) {
        hearth_status st = hearth_lora_load(ADAPTER, h->m, &a, &err);
        if (st) fprintf(stderr, "  %s\n", err.msg);
        CHECK_EQ(st, HEARTH_OK);
    }
    if (h && a) {
        CHECK_EQ(a->n_mats, 6);
        float *logits = malloc((size_t)h->n_vocab * sizeof(float)), *first = malloc((size_t)h->n_vocab * sizeof(float));
        int n_prompts = golden_count(json, "ids");
        CHECK(n_prompts == 3);
        double worst = 0;
        for (int ip = 0; ip < n_prompts; ip++) {
            int n = 0, ng = 0, nb = 0, nt = 0, nl = 0;
            int32_t *ids = golden_int_array(json, "ids", ip, &n);
            int32_t *want = golden_int_array(json, "greedy_lora", ip, &ng);
            int32_t *want_base = golden_int_array(json, "greedy_base", ip, &nb);
            int32_t *top = golden_int_array(json, "top_ids", ip, &nt);
            float top_l[TOP];
            f_array(json, "top_logits", ip, &nl, top_l, TOP);
            CHECK(ids && n > 0 && n <= MAX_TOK - N_GEN && ng == N_GEN && nb == N_GEN && nt == TOP && nl == TOP);
            if (!(ids && want && want_base && top && n <= MAX_TOK - N_GEN && ng == N_GEN && nb == N_GEN && nt == TOP)) {
                free(ids), free(want), free(want_base), free(top);
                continue;
            }
            CHECK(memcmp(want, want_base, sizeof(int32_t) * N_GEN) != 0);
            int32_t got[N_GEN];
            greedy(h, a, ids, n, got, first, logits);
            CHECK(!memcmp(got, want, sizeof got));
            CHECK_EQ(argmax_f(first, h->n_vocab), top[0]);
            for (int k = 0; k < TOP; k++) worst = fmax(worst, fabs((double)first[top[k]] - top_l[k]));
            greedy(h, NULL, ids, n, got, first, logits);
            CHECK(!memcmp(got, want_base, sizeof got));
            free(ids), free(want), free(want_base), free(top);
        }
        fprintf(stderr, "  smollm2 + GGUF LoRA vs llama.cpp: top-8 logits within %.2e\n", worst);
        CHECK(worst <= 2e-2);
        free(logits);
        free(first);
    }
    hearth_lora_release(a);
    harness_close(h);
    free(json);
}

TEST(gguf_lora_refuses_another_base) {
    hearth_model *m = NULL;
    hearth_lora *a = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_model_load("tests/golden/tiny/tiny-qwen2.gguf", &m, &err), HEARTH_OK);
    if (m) {
        CHECK_EQ(hearth_lora_load(ADAPTER, m, &a, &err), HEARTH_E_INVALID);
        fprintf(stderr, "  %s\n", err.msg);
        CHECK(strstr(err.msg, "architecture 'llama' but the base model is 'qwen2'") != NULL);
        CHECK(a == NULL);
        hearth_model_destroy(m);
    }
    m = NULL;
    CHECK_EQ(hearth_model_load("tests/golden/hf/llama", &m, &err), HEARTH_OK);
    if (m) {
        CHECK_EQ(hearth_lora_load(ADAPTER, m, &a, &err), HEARTH_E_INVALID);
        fprintf(stderr, "  %s\n", err.msg);
        CHECK(strstr(err.msg, "applies to a GGUF base") != NULL);
        hearth_model_destroy(m);
    }
}

int main(int argc, char **argv) {
    hearth_kernels_init();
    return test_main(argc, argv);
}
