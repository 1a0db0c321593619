/*
 * test_deltanet_gguf.c - the hybrid families from GGUF (llama.cpp's qwen35, qwen35moe,
 * qwen3next), as llama.cpp's own convert_hf_to_gguf.py writes them (files and goldens by
 * tools/make_deltanet_gguf.py in tests/golden/hf/).
 *
 * - The same checkpoint from both formats: qwen35_gguf.gguf (the converter's f32 output) and
 *   qwen35_gguf/ (the transformers save it was converted from) give logits within 1e-4 of each
 *   other at every position of both of make_hf_tiny.py's prompts on the ref kernel set (f32
 *   KV), and the same 32-token greedy continuation. This checks every transform the converter
 *   made (norms + 1, A = -exp(A_log), the squeezed conv, the value heads' tiled order) against
 *   the safetensors path, which test_deltanet.c holds to transformers.
 * - llama.cpp on the same files: each GGUF (qwen35 f32 and Q8_0, qwen35moe and qwen3next Q8_0)
 *   against llama-cpp-python's logits at every position of an 8-token prompt and its 32-token
 *   greedy continuation, on every fast kernel set this CPU has with the f16 KV cache llama.cpp
 *   used: the argmax everywhere and every greedy token equal, |dlogit| <= LLAMACPP_BOUND (the
 *   default path repeats llama.cpp's operations, test_llamacpp.c; measured: 0 on the Q8_0 files,
 *   about 5e-6 on the f32 one, where llama.cpp's chunked DeltaNet sums in another order). The
 *   ref set (f32 activations, transformers' RoPE angles) is held to the f32 file only, with
 *   REF_BOUND (measured 1.1e-3): on a Q8_0 file llama.cpp rounds the activations to 8 bits and
 *   the ref set does not, which moves these logits by up to 0.2 (measured) and flips a greedy
 *   step.
 * - A truncated file, a renamed DeltaNet tensor and an inconsistent ssm.* key are load errors
 *   naming what is wrong.
 */
#include "golden_json.h"
#include "hf_golden.h"
#include "model/model_internal.h"
#include "store_cache.h"
#include "test.h"

#include <string.h>

#define LLAMACPP_BOUND 1e-3
#define REF_BOUND 0.05

static const int32_t prompt0[] = {5, 77, 120, 33, 250, 9, 61, 200, 14, 180, 99, 42};
static const int32_t prompt1[] = {12, 270, 3, 88, 150, 6, 230, 47, 19, 111, 64, 205,
                                  31, 140, 72, 260, 8, 95, 177, 55, 128, 36, 190, 66};

TEST(qwen35_gguf_equals_safetensors) {
    enum { MAX_TOK = 64, N_GREEDY = 32 };
    hearth_isa was = hearth_kernels_isa();
    CHECK(hearth_kernels_select(HEARTH_ISA_REF));
    harness *g = harness_open(HF_GOLD "qwen35_gguf.gguf", MAX_TOK, 128, false, 2);
    harness *s = harness_open(HF_GOLD "qwen35_gguf", MAX_TOK, 128, false, 2);
    CHECK(g != NULL && s != NULL);
    if (g && s) {
        CHECK_EQ(g->n_vocab, s->n_vocab);
        CHECK(hearth_model_hparams(g->m)->lin_v_tiled);
        CHECK(!hearth_model_hparams(s->m)->lin_v_tiled);
        const int32_t *prompts[2] = {prompt0, prompt1};
        const int32_t lens[2] = {12, 24};
        float *lg = malloc((size_t)MAX_TOK * (size_t)g->n_vocab * sizeof(float));
        float *ls = malloc((size_t)MAX_TOK * (size_t)g->n_vocab * sizeof(float));
        double max_d = 0;
        int greedy_diff = 0;
        for (int p = 0; p < 2; p++) {
            CHECK_EQ(harness_run(g, prompts[p], lens[p], 0, true, lg), HEARTH_OK);
            CHECK_EQ(harness_run(s, prompts[p], lens[p], 0, true, ls), HEARTH_OK);
            for (int64_t i = 0; i < (int64_t)lens[p] * g->n_vocab; i++) max_d = fmax(max_d, fabs((double)lg[i] - ls[i]));
            int32_t tg = argmax_f(lg + (size_t)(lens[p] - 1) * (size_t)g->n_vocab, g->n_vocab);
            int32_t ts = argmax_f(ls + (size_t)(lens[p] - 1) * (size_t)g->n_vocab, g->n_vocab);
            for (int k = 0; k < N_GREEDY; k++) {
                greedy_diff += tg != ts;
                CHECK_EQ(harness_run(g, &tg, 1, lens[p] + k, false, lg), HEARTH_OK);
                CHECK_EQ(harness_run(s, &ts, 1, lens[p] + k, false, ls), HEARTH_OK);
                for (int32_t v = 0; v < g->n_vocab; v++) max_d = fmax(max_d, fabs((double)lg[v] - ls[v]));
                tg = argmax_f(lg, g->n_vocab);
                ts = argmax_f(ls, s->n_vocab);
            }
        }
        fprintf(stderr, "  qwen35_gguf f32 vs safetensors (ref): max |dlogit| %.2e, greedy differences %d\n", max_d,
                greedy_diff);
        CHECK(max_d <= 1e-4);
        CHECK_EQ(greedy_diff, 0);
        free(lg), free(ls);
    }
    harness_close(g);
    harness_close(s);
    hearth_kernels_select(was);
}

/* One GGUF against llama.cpp's golden on every fast set this CPU runs (f16 KV), and with_ref on
 * the ref set too. */
static void check_llamacpp(const char *name, bool with_ref) {
    char file[128], golden[128];
    snprintf(file, sizeof file, "%s.gguf", name);
    snprintf(golden, sizeof golden, "%s.llamacpp", name);
    hearth_isa was = hearth_kernels_isa();
    for (int isa = with_ref ? HEARTH_ISA_REF : HEARTH_ISA_SCALAR; isa < HEARTH_ISA_COUNT; isa++) {
        if (!hearth_isa_available((hearth_isa)isa)) continue;
        double bound = isa == HEARTH_ISA_REF ? REF_BOUND : LLAMACPP_BOUND;
        hf_result r = hf_golden_run(file, golden, (hearth_isa)isa, isa != HEARTH_ISA_REF, true);
        fprintf(stderr, "  %-22s %-7s vs llama.cpp: max |dlogit| %.2e (bound %.0e), argmax diffs %d, greedy "
                "mismatches %d\n", name, hearth_isa_name((hearth_isa)isa), r.max_d, bound, r.am_diff,
                r.greedy_mismatch);
        CHECK_EQ(r.n_prompts, 1);
        CHECK(r.max_d <= bound);
        CHECK_EQ(r.am_diff, 0);
        CHECK_EQ(r.greedy_mismatch, 0);
    }
    hearth_kernels_select(was);
}

TEST(qwen35_gguf_f32_llamacpp) { check_llamacpp("qwen35_gguf", true); }
TEST(qwen35_gguf_q8_0_llamacpp) { check_llamacpp("qwen35_gguf-q8_0", false); }
TEST(qwen35moe_gguf_q8_0_llamacpp) { check_llamacpp("qwen35moe_gguf-q8_0", false); }
TEST(qwen3next_gguf_q8_0_llamacpp) { check_llamacpp("qwen3next_gguf-q8_0", false); }

/* What the loader made of each file: the arch, the linear layers, the experts and shared expert,
 * the value-head order. */
TEST(hybrid_gguf_layout) {
    static const struct {
        const char *file;
        hearth_arch arch;
        bool moe, tiled;
    } cases[] = {
        {"qwen35_gguf.gguf", HEARTH_ARCH_QWEN3_5, false, true},
        {"qwen35moe_gguf-q8_0.gguf", HEARTH_ARCH_QWEN3_5MOE, true, true},
        {"qwen3next_gguf-q8_0.gguf", HEARTH_ARCH_QWEN3NEXT, true, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, HF_GOLD "%s", cases[i].file);
        hearth_model *m = NULL;
        hearth_err err = {0};
        CHECK_EQ(hearth_model_load(path, &m, &err), HEARTH_OK);
        if (!m) continue;
        const hearth_hparams *hp = &m->hp;
        CHECK_EQ(hp->arch, cases[i].arch);
        CHECK_EQ(hp->n_layer, 2);
        CHECK(hearth_hparams_is_linear(hp, 0) && !hearth_hparams_is_linear(hp, 1));
        CHECK_EQ(hp->lin_n_k, 2);
        CHECK_EQ(hp->lin_n_v, 4);
        CHECK_EQ(hp->lin_k_dim, 8);
        CHECK_EQ(hp->lin_v_dim, 8);
        CHECK_EQ(hp->lin_conv, 4);
        CHECK_EQ(hp->n_rot, 4);
        CHECK(hp->attn_out_gate);
        CHECK_EQ(hp->lin_v_tiled, cases[i].tiled);
        CHECK_EQ(m->layers[1].wq.ne1, 2 * 2 * 16); /* each head's query, then its gate */
        for (int il = 0; il < 2; il++) {
            const hearth_layer *l = &m->layers[il];
            CHECK_EQ(l->router.data != NULL, cases[i].moe);
            CHECK_EQ(l->sh_gate_inp.data != NULL, cases[i].moe);
            CHECK_EQ(l->w_down.data != NULL, !cases[i].moe);
        }
        const hearth_layer *l0 = &m->layers[0];
        CHECK_EQ(l0->lin_qkv.ne1, 2 * 16 + 32);
        CHECK_EQ(l0->lin_b.ne1, 4);
        for (int h = 0; h < 4; h++) CHECK(l0->lin_a_neg[h] < 0 && l0->lin_a_neg[h] > -1);
        if (cases[i].moe) {
            CHECK_EQ(hp->n_expert, 4);
            CHECK_EQ(hp->n_expert_used, 2);
            CHECK_EQ(hp->n_ff_exp, 16);
            CHECK_EQ(hp->n_ff_shexp, 16);
            CHECK(hp->moe_norm_topk);
            CHECK_EQ(l0->exp_gate.type, HEARTH_TYPE_Q8_0);
            CHECK_EQ(l0->exp_down.type, HEARTH_TYPE_F16); /* 16 inputs: not whole Q8_0 blocks */
        }
        hearth_model_destroy(m);
    }
}

/* Patch the first `from` in bytes into `to` (the same length). */
static bool patch(char *bytes, size_t n, const char *from, const void *to, size_t len) {
    for (size_t i = 0; i + len <= n; i++)
        if (!memcmp(bytes + i, from, len)) {
            memcpy(bytes + i, to, len);
            return true;
        }
    return false;
}

/* A broken file of this arch is a load error that says what is wrong, and leaves no model. */
TEST(hybrid_gguf_bad_files) {
    size_t n = 0;
    char *orig = golden_slurp(HF_GOLD "qwen35_gguf.gguf", &n);
    CHECK(orig != NULL && n > 4096);
    if (!orig) return;
    enum { TRUNC, RENAME, INNER, A_POS, N_CASES };
    const char *want[N_CASES] = {"", "missing tensor 'blk.0.ssm_a'", "inner size 41 (whole value heads)",
                                 "expected -exp(A_log) < 0"};
    for (int c = 0; c < N_CASES; c++) {
        char *bytes = malloc(n);
        memcpy(bytes, orig, n);
        size_t len = n;
        bool ok = true;
        if (c == TRUNC) len = n - 1000; /* the data section ends short of the last tensors */
        if (c == RENAME) ok = patch(bytes, n, "blk.0.ssm_a", "blk.0.ssm_q", 11);
        if (c == INNER) { /* qwen35.ssm.inner_size: the key, its u32 type, then the value */
            const char *key = "qwen35.ssm.inner_size";
            char *at = memmem(bytes, n, key, strlen(key));
            uint32_t v = 41;
            ok = at != NULL;
            if (at) memcpy(at + strlen(key) + 4, &v, 4);
        }
        if (c == A_POS) { /* ssm_a's first value made positive, found by its float bits */
            hearth_model *m = NULL;
            hearth_err err = {0};
            CHECK_EQ(hearth_model_load(HF_GOLD "qwen35_gguf.gguf", &m, &err), HEARTH_OK);
            const hearth_gguf_tensor *t = m ? hearth_gguf_find_tensor(m->gguf, "blk.0.ssm_a") : NULL;
            ok = t != NULL;
            if (t) {
                size_t off = (size_t)((const char *)t->data - (const char *)hearth_gguf_bytes(m->gguf));
                float f;
                memcpy(&f, bytes + off, 4);
                f = -f;
                memcpy(bytes + off, &f, 4);
            }
            hearth_model_destroy(m);
        }
        CHECK(ok);
        char dir[512], path[640];
        sc_tmpdir(dir, sizeof dir, "hybrid-gguf-bad");
        snprintf(path, sizeof path, "%s/bad.gguf", dir);
        sc_write(path, bytes, len);
        hearth_model *m = NULL;
        hearth_err err = {0};
        hearth_status st = hearth_model_load(path, &m, &err);
        fprintf(stderr, "  case %d: status %d, '%s'\n", c, st, err.msg);
        CHECK(st != HEARTH_OK);
        CHECK(m == NULL);
        CHECK(err.msg[0] != 0);
        CHECK(strstr(err.msg, want[c]) != NULL);
        hearth_model_destroy(m);
        sc_rmrf(dir);
        free(bytes);
    }
    free(orig);
}

int main(int argc, char **argv) {
    hearth_kernels_init();
    return test_main(argc, argv);
}
