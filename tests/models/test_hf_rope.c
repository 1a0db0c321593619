/*
 * test_hf_rope.c - RoPE that changes with the sequence length, against transformers past the
 * lengths where it changes (goldens by tools/make_hf_rope.py):
 *   - rope-dynamic (llama, dynamic NTK, max_position_embeddings 32): past 32 tokens the base
 *     grows with the length of each forward call;
 *   - rope-longrope (phi3, longrope, original context 32): short factors up to 32 tokens, long
 *     ones past it, the attention factor on cos and sin throughout.
 * Each has a 20-token and a 40-token prompt (one on each side of 32): the logits of one prefill
 * at every position, then 32 greedy tokens decoded one at a time on the cache (crossing 32 for
 * the short prompt), as transformers' forward with its cache computes them. Bounds as in
 * test_hf_tiny.c: on the ref set |dlogit| <= 1e-3 everywhere, argmax and greedy identical; on
 * the default sets (f16 cache) 0.05.
 */
#include "hf_golden.h"
#include "model/model_internal.h"
#include "test.h"

#include <math.h>

#define GOLD HF_GOLD

TEST(dynamic_ntk) {
    hf_golden_check("rope-dynamic", "rope-dynamic", 0.05);
    hearth_model *m = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_model_load(GOLD "rope-dynamic", &m, &err), HEARTH_OK);
    if (!m) return;
    const hearth_hparams *hp = hearth_model_hparams(m);
    CHECK_EQ(hp->rope_kind, HEARTH_ROPE_DYNAMIC);
    /* within the context the base frequencies; past it the base grows, so they fall */
    float base[8], at40[8], at200[8];
    hearth_hparams_inv_freq(hp, false, base);
    hearth_hparams_inv_freq_at(hp, false, 32, at40);
    for (int i = 0; i < 8; i++) CHECK(at40[i] == base[i]);
    hearth_hparams_inv_freq_at(hp, false, 40, at40);
    hearth_hparams_inv_freq_at(hp, false, 200, at200);
    CHECK(at40[0] == base[0]);
    for (int i = 1; i < 8; i++) CHECK(at40[i] < base[i] && at200[i] < at40[i]);
    hearth_model_destroy(m);
}

TEST(longrope) {
    hf_golden_check("rope-longrope", "rope-longrope", 0.05);
    hearth_model *m = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_model_load(GOLD "rope-longrope", &m, &err), HEARTH_OK);
    if (!m) return;
    const hearth_hparams *hp = hearth_model_hparams(m);
    CHECK_EQ(hp->rope_kind, HEARTH_ROPE_LONGROPE);
    CHECK_EQ(hp->rope_orig_ctx, 32);
    /* factor = 64 / 32 from the context lengths; attention factor sqrt(1 + ln 2 / ln 32) */
    CHECK_NEAR(hp->rope_mscale, sqrt(1 + log(2.0) / log(32.0)), 1e-6);
    CHECK_NEAR(hp->longrope_long[7], 19.0, 0);
    hearth_model_destroy(m);
}

int main(int argc, char **argv) {
    hearth_kernels_init();
    return test_main(argc, argv);
}
