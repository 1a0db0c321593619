/*
 * test_deltanet.c - the hybrid families (gated DeltaNet layers beside gated full attention:
 * Qwen3.5 text, Qwen3-Next) against transformers (goldens and checkpoints by
 * tools/make_deltanet_tiny.py in tests/golden/hf/).
 *
 * Each checkpoint has 3 layers: linear, full, linear (so layer 2's state carries across a full
 * layer). On the ref kernel set (f32 arithmetic, f32 KV cache) the f32 checkpoints must give
 * transformers' logits within 1e-4 at every position of both prompts (12 and 24 tokens, one
 * prefill step each), the same argmax everywhere and the same 32-token greedy continuation,
 * decoded one token at a time on the states and the cache (transformers recomputes the whole
 * sequence with its chunked delta rule at each step, so the recurrent state is checked against
 * a computation that keeps none). The bf16 checkpoint is held to the same on its own golden
 * (the bf16 values widened). The other kernel sets, with the f16 KV cache, to test_hf_tiny.c's
 * bound for f32 weights (0.05) and to QWEN3_5_BF16_BOUND for bf16 ones (below).
 */
#include "engine/engine.h"
#include "hf_golden.h"
#include "model/model_internal.h"
#include "test.h"

#include <string.h>
#include <time.h>

static void check_ref(const char *name, const char *golden) {
    hearth_isa was = hearth_kernels_isa();
    hf_result r = hf_golden_run(name, golden, HEARTH_ISA_REF, false, true);
    fprintf(stderr, "  %-18s ref: max |dlogit| %.2e, argmax diffs %d, greedy mismatches %d\n", name, r.max_d,
            r.am_diff, r.greedy_mismatch);
    CHECK(r.max_d <= 1e-4);
    CHECK_EQ(r.am_diff, 0);
    CHECK_EQ(r.greedy_mismatch, 0);
    hearth_kernels_select(was);
}

/* The bf16 checkpoint on the fast kernel sets: bf16 weights multiply activations rounded to bf16.
 * This model is more sensitive to that than test_hf_tiny.c's (whose 0.5 rests on a measured
 * 0.19): transformers itself, with every Linear's input rounded to bf16, moves its logits by up
 * to 0.43 (recorded by tools/make_deltanet_tiny.py as the golden's bf16_activations_max_dlogit;
 * the q and k of each DeltaNet head are L2-normalized after the rounding and the delta rule
 * feeds each token's error into every later output). hearth measures 0.52 with the f16 cache
 * added. We require 0.75, test_hf_tiny.c's worst case of aligned roundings. */
#define QWEN3_5_BF16_BOUND 0.75

TEST(qwen3_5_f32) {
    check_ref("qwen3_5_text", "qwen3_5_text");
    hf_golden_check("qwen3_5_text", "qwen3_5_text", 0.05);
}
TEST(qwen3_5_bf16) {
    check_ref("qwen3_5_text-bf16", "qwen3_5_text-bf16");
    hf_golden_check("qwen3_5_text-bf16", "qwen3_5_text-bf16", QWEN3_5_BF16_BOUND);
}
TEST(qwen3_next_f32) {
    check_ref("qwen3_next", "qwen3_next");
    hf_golden_check("qwen3_next", "qwen3_next", 0.05);
}

int main(int argc, char **argv) {
    hearth_kernels_init();
    return test_main(argc, argv);
}
