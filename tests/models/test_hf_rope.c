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
#include "golden_json.h"
#include "kernels/kernels.h"
#include "model/model_internal.h"
#include "model_harness.h"
#include "test.h"

#include <math.h>

#define GOLD "tests/golden/hf/"

typedef struct {
    double max_d;
    int    am_diff, greedy_mismatch;
} result;

static result run(const char *name, hearth_isa isa, bool kv_f16) {
    result r = {0, 0, 0};
    char path[256];
    CHECK(hearth_kernels_select(isa));
    snprintf(path, sizeof path, GOLD "%s.json", name);
    char *json = golden_slurp(path, NULL);
    snprintf(path, sizeof path, GOLD "%s.logits.bin", name);
    size_t n_bin = 0;
    char *bin = golden_slurp(path, &n_bin);
    snprintf(path, sizeof path, GOLD "%s", name);
    harness *h = json && bin ? harness_open(path, 64, 128, kv_f16, 2) : NULL;
    CHECK(h != NULL);
    if (!h) {
        free(json), free(bin);
        r.max_d = INFINITY;
        return r;
    }
    int n_prompts = golden_count(json, "ids");
    CHECK_EQ(n_prompts, 2);
    float *logits = malloc((size_t)64 * (size_t)h->n_vocab * sizeof(float));
    size_t row = 0;
    for (int ip = 0; ip < n_prompts; ip++) {
        int n_ids = 0, n_am = 0, n_gr = 0;
        int32_t *ids = golden_int_array(json, "ids", ip, &n_ids);
        int32_t *am = golden_int_array(json, "argmax", ip, &n_am);
        int32_t *gr = golden_int_array(json, "greedy32", ip, &n_gr);
        bool ok = ids && am && gr && n_am == n_ids && n_gr == 32 && n_ids <= 64 &&
                  (row + (size_t)n_ids) * (size_t)h->n_vocab * sizeof(float) <= n_bin;
        CHECK(ok);
        if (!ok) {
            r.max_d = INFINITY;
            free(ids), free(am), free(gr);
            break;
        }
        CHECK_EQ(harness_run(h, ids, n_ids, 0, true, logits), HEARTH_OK);
        for (int t = 0; t < n_ids; t++) {
            const float *ref = (const float *)bin + (row + (size_t)t) * (size_t)h->n_vocab;
            const float *got = logits + (size_t)t * (size_t)h->n_vocab;
            for (int32_t v = 0; v < h->n_vocab; v++) r.max_d = fmax(r.max_d, fabs((double)got[v] - ref[v]));
            r.am_diff += argmax_f(got, h->n_vocab) != am[t];
        }
        row += (size_t)n_ids;
        int32_t next = argmax_f(logits + (size_t)(n_ids - 1) * (size_t)h->n_vocab, h->n_vocab), mism = -1;
        for (int s = 0; s < 32; s++) {
            if (next != gr[s] && mism < 0) mism = s;
            if (s == 31) break;
            CHECK_EQ(harness_run(h, &next, 1, n_ids + s, false, logits), HEARTH_OK);
            next = argmax_f(logits, h->n_vocab);
        }
        if (mism >= 0) {
            if (isa == HEARTH_ISA_REF) fprintf(stderr, "  %s prompt %d: greedy differs from step %d\n", name, ip, mism);
            r.greedy_mismatch++;
        }
        free(ids), free(am), free(gr);
    }
    CHECK_EQ(row * (size_t)h->n_vocab * sizeof(float), n_bin);
    free(logits);
    harness_close(h);
    free(json), free(bin);
    return r;
}

static void check(const char *name) {
    hearth_isa auto_isa = hearth_kernels_isa();
    result ref = run(name, HEARTH_ISA_REF, false);
    fprintf(stderr, "  %-14s ref:     max |dlogit| %.2e, argmax diffs %d, greedy mismatches %d\n", name, ref.max_d,
            ref.am_diff, ref.greedy_mismatch);
    CHECK(ref.max_d <= 1e-3);
    CHECK_EQ(ref.am_diff, 0);
    CHECK_EQ(ref.greedy_mismatch, 0);
    for (int isa = HEARTH_ISA_SCALAR; isa < HEARTH_ISA_COUNT; isa++) {
        if (!hearth_isa_available((hearth_isa)isa)) continue;
        result def = run(name, (hearth_isa)isa, true);
        fprintf(stderr, "  %-14s %-7s: max |dlogit| %.2e (bound 0.05), argmax diffs %d\n", name,
                hearth_isa_name((hearth_isa)isa), def.max_d, def.am_diff);
        CHECK(def.max_d <= 0.05);
    }
    hearth_kernels_select(auto_isa);
}

TEST(dynamic_ntk) {
    check("rope-dynamic");
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
    check("rope-longrope");
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
