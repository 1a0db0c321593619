/*
 * hf_golden.h - one Hugging Face checkpoint under tests/golden/hf/ against its transformers
 * golden (NAME.json: per prompt the ids, the argmax at every position and the 32-token greedy
 * continuation; NAME.logits.bin: f32 logits of every position of every prompt, in order), for
 * test_hf_tiny.c and test_hf_rope.c. Header-only test code on model_harness.h.
 *
 * hf_golden_run() loads the checkpoint with the given kernel set, prefills each prompt (up to
 * 64 tokens) with logits at every position, and with `greedy` decodes 32 tokens one at a time on
 * the cache; hf_golden_check() runs the ref set (f32 KV) with the strict bounds every parity
 * test shares and every other set this CPU has (f16 KV) against a caller's bound.
 */
#pragma once
#include "golden_json.h"
#include "kernels/kernels.h"
#include "model_harness.h"
#include "test.h"

#include <math.h>

#define HF_GOLD "tests/golden/hf/"

typedef struct {
    double max_d;           /* over every position of every prompt */
    int    am_diff;         /* positions whose argmax differs */
    int    greedy_mismatch; /* prompts whose greedy continuation differs */
    int    n_prompts;
} hf_result;

/* Checkpoint dir `name` against the golden `golden` (the same name unless they share weights). */
static inline hf_result hf_golden_run(const char *name, const char *golden, hearth_isa isa, bool kv_f16,
                                      bool greedy) {
    enum { MAX_TOK = 64 };
    hf_result r = {0, 0, 0, 0};
    char path[512];
    CHECK(hearth_kernels_select(isa));
    snprintf(path, sizeof path, HF_GOLD "%s.json", golden);
    char *json = golden_slurp(path, NULL);
    snprintf(path, sizeof path, HF_GOLD "%s.logits.bin", golden);
    size_t n_bin = 0;
    char *bin = golden_slurp(path, &n_bin);
    CHECK(json != NULL && bin != NULL);
    snprintf(path, sizeof path, HF_GOLD "%s", name);
    harness *h = json && bin ? harness_open(path, MAX_TOK, 128, kv_f16, 2) : NULL;
    CHECK(h != NULL);
    if (!h) {
        free(json), free(bin);
        r.max_d = INFINITY;
        return r;
    }
    r.n_prompts = golden_count(json, "ids");
    CHECK(r.n_prompts > 0);
    float *logits = malloc((size_t)MAX_TOK * (size_t)h->n_vocab * sizeof(float));
    size_t row = 0;
    for (int ip = 0; ip < r.n_prompts; ip++) {
        int n_ids = 0, n_am = 0, n_gr = 0;
        int32_t *ids = golden_int_array(json, "ids", ip, &n_ids);
        int32_t *am = golden_int_array(json, "argmax", ip, &n_am);
        int32_t *gr = golden_int_array(json, "greedy32", ip, &n_gr);
        bool ok = ids && am && gr && n_am == n_ids && n_gr == 32 && n_ids <= MAX_TOK &&
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
        if (greedy) {
            int32_t next = argmax_f(logits + (size_t)(n_ids - 1) * (size_t)h->n_vocab, h->n_vocab), mism = -1;
            for (int s = 0; s < 32; s++) {
                if (next != gr[s] && mism < 0) mism = s;
                if (s == 31) break;
                CHECK_EQ(harness_run(h, &next, 1, n_ids + s, false, logits), HEARTH_OK);
                next = argmax_f(logits, h->n_vocab);
            }
            if (mism >= 0) {
                fprintf(stderr, "  %s prompt %d: greedy differs from step %d\n", name, ip, mism);
                r.greedy_mismatch++;
            }
        }
        free(ids), free(am), free(gr);
    }
    CHECK_EQ(row * (size_t)h->n_vocab * sizeof(float), n_bin);
    free(logits);
    harness_close(h);
    free(json), free(bin);
    return r;
}

/* The ref set: |dlogit| <= 1e-3 everywhere, every argmax and the greedy continuations equal.
 * Every other set this CPU runs, with the f16 KV cache: |dlogit| <= bound. Leaves the kernel
 * set as it found it. */
static inline void hf_golden_check(const char *name, const char *golden, double bound) {
    hearth_isa was = hearth_kernels_isa();
    hf_result ref = hf_golden_run(name, golden, HEARTH_ISA_REF, false, true);
    fprintf(stderr, "  %-18s ref:     max |dlogit| %.2e, argmax diffs %d, greedy mismatches %d\n", name, ref.max_d,
            ref.am_diff, ref.greedy_mismatch);
    CHECK(ref.max_d <= 1e-3);
    CHECK_EQ(ref.am_diff, 0);
    CHECK_EQ(ref.greedy_mismatch, 0);
    for (int isa = HEARTH_ISA_SCALAR; bound > 0 && isa < HEARTH_ISA_COUNT; isa++) {
        if (!hearth_isa_available((hearth_isa)isa)) continue;
        hf_result def = hf_golden_run(name, golden, (hearth_isa)isa, true, false);
        fprintf(stderr, "  %-18s %-7s: max |dlogit| %.2e (bound %.2f), argmax diffs %d\n", name,
                hearth_isa_name((hearth_isa)isa), def.max_d, bound, def.am_diff);
        CHECK(def.max_d <= bound);
    }
    hearth_kernels_select(was);
}
