/*
 * test_llamacpp.c - hearth's default path (quantized activations, f16 KV, the best kernel set
 * of this CPU) against llama.cpp on the same GGUF files (goldens by tools/golden_llamacpp.py).
 *
 * Measures, per model: greedy (the 64 argmax tokens after each prompt, following llama.cpp's
 * tokens so every step is compared), and teacher-forced over the essay (>= 512 positions):
 * top-1 agreement and mean KL(llama.cpp || hearth).
 *
 * Bounds, the same for every model: greedy identical on >= 7 of 8 prompts (a divergence at a
 * llama.cpp near tie, top-2 margin < NEAR_TIE, counts as agreeing; the strict count is printed
 * too), top-1 >= 99%, mean KL <= 0.01, and no disagreement where llama.cpp's own top-2 margin
 * is 1.0 logit or more. SmolLM2 and Gemma 3 carry large outlier activations, so one flipped
 * rounding in an 8-bit activation or f16 value spreads (llama.cpp's own AVX2 build agrees
 * with its AVX-512 goldens on only 95.1% of positions and 2 of 8 greedy prompts,
 * tests/golden/llamacpp/crossbuild.json); they meet these bounds because the default path on
 * an x86 CPU with AVX2 repeats the reference build's operations one for one
 * (kernels/ref/llamacpp_order_ref.h) and gives its logits bit for bit. On another CPU family that
 * would not hold; the bounds are the ones the foundation issue sets.
 * The l2 tier (the 8-bit KV cache, llama.cpp's -ctk q8_0 -ctv q8_0 with flash attention,
 * kernels/cpu/attn_quant_body.inc) is held to bit identity: on the tiny llama with 64-wide heads
 * (tools/make_tiny_llama64.py; the quantized cache needs heads of whole 32-element blocks, and
 * the other tiny models' are 16) every greedy step and every kept teacher-forced logit must equal
 * llama.cpp's q8_0 golden exactly, and so must the f16 golden with the f16 cache (l1).
 * The golden keeps llama.cpp's top-64 logits and the log-sum-exp per position, so the KL is
 * computed over those 64 tokens plus one bucket holding the rest of the mass on each side (a
 * lower bound of the full KL that misses only what moves inside llama.cpp's last ~1e-4 of
 * probability mass).
 */
#include "golden_read.h"
#include "model_harness.h"
#include "test.h"

#include <math.h>

static double log_sum_exp(const float *x, int32_t n) {
    float m = x[0];
    for (int32_t i = 1; i < n; i++) if (x[i] > m) m = x[i];
    double s = 0;
    for (int32_t i = 0; i < n; i++) s += exp((double)x[i] - m);
    return m + log(s);
}

/* KL(P_ref || P_hearth) over the golden's top-k plus a rest bucket. */
static double kl_topk(const golden_logits *g, int k, const float *logits, int32_t n_vocab) {
    double lse_h = log_sum_exp(logits, n_vocab), kl = 0, pr_sum = 0, ph_sum = 0;
    for (int i = 0; i < k; i++) {
        double lp_r = g->logit[i] - (double)g->lse, lp_h = logits[g->id[i]] - lse_h;
        double pr = exp(lp_r);
        kl += pr * (lp_r - lp_h);
        pr_sum += pr;
        ph_sum += exp(lp_h);
    }
    double rr = 1 - pr_sum, rh = 1 - ph_sum;
    if (rr > 1e-12 && rh > 1e-12) kl += rr * log(rr / rh);
    return kl;
}

/* A llama.cpp top-2 margin below this is a near tie: rounding noise alone (a different
 * summation order) decides it, so a greedy divergence there still counts the prompt as agreeing
 * (the strict count is printed too). */
#define NEAR_TIE 0.05

typedef struct {
    int    min_greedy_exact;  /* of 8 prompts, near-tie divergences allowed */
    double min_top1;
    double max_kl;
    double max_margin;        /* largest llama.cpp top-2 margin where hearth may disagree */
    bool   bit_exact;         /* every kept logit equal to llama.cpp's, bit for bit */
} bounds;

static const bounds strict = {7, 0.99, 0.01, 1.0, false};
static const bounds identical = {8, 1.0, 1e-6, 0.0, true}; /* equal logits: the KL is only the log-sum-exp rounding */

static void check_model_kv(const char *gguf, const char *golden_path, const bounds *bd, hearth_kv_scheme kv) {
    if (!gguf) {
        fprintf(stderr, "  model path not set\n");
        test_cur_skipped = 1;
        return;
    }
    golden_file g;
    char err[256];
    CHECK_EQ(golden_open(&g, golden_path, err, sizeof err), 0);
    enum { CHUNK = 64 };
    harness *h = harness_open_scheme(gguf, CHUNK, 1024, kv, 2);
    CHECK(h != NULL);
    if (!h) {
        golden_close(&g);
        return;
    }
    CHECK_EQ(h->n_vocab, g.n_vocab);
    float *logits = malloc((size_t)CHUNK * (size_t)h->n_vocab * sizeof(float));

    /* greedy continuations */
    int exact = 0, exact_or_tie = 0;
    double worst_margin = 0;
    for (uint32_t ip = 0; ip < g.n_prompts; ip++) {
        const golden_prompt *p = &g.prompt[ip];
        int32_t first_diff = -1, next = -1;
        for (uint32_t done = 0; done < p->n_tokens; done += CHUNK) {
            int32_t n = (int32_t)(p->n_tokens - done < CHUNK ? p->n_tokens - done : CHUNK);
            CHECK_EQ(harness_run(h, p->tokens + done, n, (int32_t)done, false, logits), HEARTH_OK);
        }
        for (uint32_t s = 0; s < g.n_gen; s++) {
            next = argmax_f(logits, h->n_vocab);
            int32_t want = g.gen[ip * g.n_gen + s];
            if (next != want && first_diff < 0) first_diff = (int32_t)s;
            /* keep following llama.cpp's tokens so later steps stay comparable */
            if (s + 1 < g.n_gen)
                CHECK_EQ(harness_run(h, &want, 1, (int32_t)(p->n_tokens + s), false, logits), HEARTH_OK);
        }
        if (first_diff < 0) {
            exact++;
            exact_or_tie++;
        } else {
            const golden_logits *r = &g.step[ip * g.n_gen + (uint32_t)first_diff];
            double margin = r->logit[0] - r->logit[1];
            exact_or_tie += margin < NEAR_TIE;
            if (margin > worst_margin) worst_margin = margin;
            fprintf(stderr, "  prompt %u: first differs at step %d (llama.cpp top-2 margin there %.4f)\n", ip,
                    first_diff, margin);
        }
    }
    fprintf(stderr, "  greedy: %d of %u prompts identical for all %u steps (%d counting near-tie divergences)\n",
            exact, g.n_prompts, g.n_gen, exact_or_tie);
    CHECK(exact_or_tie >= bd->min_greedy_exact);

    /* teacher-forced */
    double kl_sum = 0, kl_max = 0;
    uint32_t top1 = 0, unequal = 0;
    for (uint32_t done = 0; done < g.n_text; done += CHUNK) {
        int32_t n = (int32_t)(g.n_text - done < CHUNK ? g.n_text - done : CHUNK);
        CHECK_EQ(harness_run(h, g.text_tokens + done, n, (int32_t)done, true, logits), HEARTH_OK);
        for (int32_t t = 0; t < n; t++) {
            const float *lt = logits + (size_t)t * h->n_vocab;
            const golden_logits *r = &g.text[done + (uint32_t)t];
            bool same = argmax_f(lt, h->n_vocab) == r->id[0];
            top1 += same;
            if (!same && r->logit[0] - r->logit[1] > worst_margin) worst_margin = r->logit[0] - r->logit[1];
            for (uint32_t k = 0; bd->bit_exact && k < g.top_k; k++)
                if (memcmp(&lt[r->id[k]], &r->logit[k], sizeof(float))) {
                    unequal++;
                    break;
                }
            double kl = kl_topk(r, (int)g.top_k, lt, h->n_vocab);
            kl_sum += kl;
            if (kl > kl_max) kl_max = kl;
        }
    }
    double agree = (double)top1 / g.n_text, mean_kl = kl_sum / g.n_text;
    fprintf(stderr, "  teacher-forced over %u positions: top-1 agreement %.4f, mean KL %.5f nats (max %.4f)\n",
            g.n_text, agree, mean_kl, kl_max);
    fprintf(stderr, "  largest llama.cpp top-2 margin where hearth disagrees: %.4f\n", worst_margin);
    if (bd->bit_exact) fprintf(stderr, "  positions whose kept logits are not bit-identical: %u\n", unequal);
    CHECK_EQ(unequal, 0);
    CHECK(g.n_text >= 512);
    CHECK(agree >= bd->min_top1);
    CHECK(mean_kl <= bd->max_kl);
    CHECK(bd->bit_exact ? worst_margin == 0 : worst_margin < bd->max_margin);
    free(logits);
    harness_close(h);
    golden_close(&g);
}

static void check_model(const char *gguf, const char *golden_path, const bounds *bd) {
    check_model_kv(gguf, golden_path, bd, HEARTH_KV_SCHEME_F16);
}

/* The real models take minutes under a sanitizer; the tiny ones cover the same code there. */
#define SKIP_IF_SANITIZED() \
    do { if (getenv("HEARTH_TEST_SANITIZED")) TEST_SKIP("real models run in the normal build"); } while (0)

TEST(smollm2_agrees_with_llamacpp) {
    SKIP_IF_SANITIZED();
    check_model(getenv("HEARTH_SMOLLM2_GGUF"), "tests/golden/llamacpp/smollm2.golden", &strict);
}
TEST(gemma3_agrees_with_llamacpp) {
    SKIP_IF_SANITIZED();
    check_model(getenv("HEARTH_GEMMA3_GGUF"), "tests/golden/llamacpp/gemma3.golden", &strict);
}
TEST(tiny_qwen2_agrees_with_llamacpp) {
    check_model("tests/golden/tiny/tiny-qwen2.gguf", "tests/golden/llamacpp/tiny-qwen2.golden", &strict);
}
TEST(tiny_qwen3_agrees_with_llamacpp) {
    check_model("tests/golden/tiny/tiny-qwen3.gguf", "tests/golden/llamacpp/tiny-qwen3.golden", &strict);
}

TEST(tiny_llama64_agrees_with_llamacpp_bit_for_bit) {
    check_model("tests/golden/tiny/tiny-llama64.gguf", "tests/golden/llamacpp/tiny-llama64.golden", &identical);
}
TEST(tiny_llama64_l2_q8_0_cache_agrees_with_llamacpp_bit_for_bit) {
    check_model_kv("tests/golden/tiny/tiny-llama64.gguf", "tests/golden/llamacpp/tiny-llama64.q8_0.golden", &identical,
                   hearth_kv_scheme_of(HEARTH_KV_Q8_0, HEARTH_KV_Q8_0));
}

/* --l2 on the starter models: the 8-bit cache in llama.cpp's flash-attention order against
 * llama.cpp run with type_k = type_v = q8_0 and flash_attn (tools/golden_llamacpp.py --kv q8_0),
 * held to the same bit identity as the tiny llama's */
TEST(smollm2_l2_q8_0_cache_agrees_with_llamacpp_bit_for_bit) {
    SKIP_IF_SANITIZED();
    check_model_kv(getenv("HEARTH_SMOLLM2_GGUF"), "tests/golden/llamacpp/smollm2.q8_0.golden", &identical,
                   hearth_kv_scheme_of(HEARTH_KV_Q8_0, HEARTH_KV_Q8_0));
}
TEST(gemma3_l2_q8_0_cache_agrees_with_llamacpp_bit_for_bit) {
    SKIP_IF_SANITIZED();
    check_model_kv(getenv("HEARTH_GEMMA3_GGUF"), "tests/golden/llamacpp/gemma3.q8_0.golden", &identical,
                   hearth_kv_scheme_of(HEARTH_KV_Q8_0, HEARTH_KV_Q8_0));
}

int main(int argc, char **argv) { return test_main(argc, argv); }
