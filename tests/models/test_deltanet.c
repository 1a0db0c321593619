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
#include "store/facts.h"
#include "store_cache.h"
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
/* The routed layers: 4 experts, 2 per token, renormalized, and the shared expert weighed by its
 * sigmoid gate (Qwen3-Next with layer 1 dense; Qwen3.5 MoE on every layer). */
TEST(qwen3_next_moe_f32) {
    check_ref("qwen3_next-moe", "qwen3_next-moe");
    hf_golden_check("qwen3_next-moe", "qwen3_next-moe", 0.05);
}
TEST(qwen3_5_moe_f32) {
    check_ref("qwen3_5_moe_text", "qwen3_5_moe_text");
    hf_golden_check("qwen3_5_moe_text", "qwen3_5_moe_text", 0.05);
}

enum { NQ = 8, PLEN = 20, NGEN = 12, CTX = 64 };

static hearth_engine *hy_engine(hearth_model *m, int32_t batch, int32_t block, int32_t pool_tokens, int64_t cache,
                                hearth_err *err) {
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_threads = 2;
    ep.n_ctx = CTX;
    ep.batch = batch;
    ep.block_size = block;
    ep.max_step = 64;
    ep.prompt_cache = cache;
    ep.debug_checks = true;
    ep.numerics.batch_invariant = true;
    ep.kv_budget = (int64_t)hearth_kv_bytes_per_token(m, HEARTH_KV_SCHEME_F16) * pool_tokens;
    hearth_engine *e = NULL;
    CHECK_EQ(hearth_engine_create(m, &ep, &e, err), HEARTH_OK);
    return e;
}

/* Submit n prompts of PLEN tokens (n_choices <= 2 each), greedy, NGEN tokens each; out[i * n_choices + c]. */
static void hy_run(hearth_engine *e, int32_t p[][PLEN], int n, int n_choices, int32_t out[][NGEN]) {
    hearth_request *r[NQ * 2] = {0};
    hearth_err err = {0};
    for (int i = 0; i < n; i++) {
        hearth_request_params rp = {.prompt = p[i], .n_prompt = PLEN, .max_tokens = NGEN,
                                    .sampling = hearth_sampler_params_default(), .ignore_eog = true};
        rp.sampling.temperature = 0;
        hearth_request_params each[2] = {rp, rp};
        if (n_choices == 1) CHECK_EQ(hearth_engine_submit(e, &rp, &r[i], &err), HEARTH_OK);
        else CHECK_EQ(hearth_engine_submit_n(e, each, n_choices, &r[i * n_choices], &err), HEARTH_OK);
    }
    for (int i = 0; i < n * n_choices; i++) {
        if (!r[i]) continue;
        int k = 0;
        for (;;) {
            hearth_event ev;
            if (hearth_request_next(r[i], &ev, 120000) != HEARTH_OK) {
                CHECK(!"timed out waiting for a token");
                break;
            }
            if (ev.kind == HEARTH_EV_DONE) {
                CHECK_EQ(ev.status, HEARTH_OK);
                break;
            }
            if (k < NGEN) out[i][k] = ev.token;
            k++;
        }
        CHECK_EQ(k, NGEN);
        hearth_request_release(r[i]);
    }
}

static int hy_differing(int32_t a[][NGEN], int32_t b[][NGEN], int n) {
    int d = 0;
    for (int i = 0; i < n; i++) d += memcmp(a[i], b[i], sizeof a[i]) != 0;
    return d;
}

static hearth_engine_stats hy_idle(hearth_engine *e) {
    hearth_engine_stats st;
    for (int i = 0; i < 5000; i++) {
        hearth_engine_stats_get(e, &st);
        if (st.running == 0 && st.waiting == 0) break;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return st;
}

/* Batched equals alone: 8 prompts (pairs sharing a 16-token stem) decoded one at a time in an
 * engine of one slot are the reference (each admission starts its slot's states afresh); all 8
 * at once (each sequence its own state slot), again in the same engine (slots reused, the
 * prompt cache on: a prefix hit resumes from a state snapshot), in a pool small enough to force
 * preemption (a preempted sequence is recomputed from its start), and as 2 choices of each of
 * 4 prompts (the second forked off the first at the end of its prefill, the states copied)
 * must give the same tokens. */
static void check_engine(const char *path) {
    hearth_model *m = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_model_load(path, &m, &err), HEARTH_OK);
    if (!m) return;
    int32_t p[NQ][PLEN], alone[NQ][NGEN], got[NQ][NGEN];
    uint32_t s = 2323;
    for (int i = 0; i < NQ; i++)
        for (int j = 0; j < PLEN; j++) {
            s = s * 1103515245u + 12345u;
            p[i][j] = (i % 2 && j < 16) ? p[i - 1][j] : 3 + (int32_t)((s >> 8) % 280u);
        }
    hearth_engine *e = hy_engine(m, 1, 16, CTX, 0, &err);
    for (int i = 0; e && i < NQ; i++) hy_run(e, &p[i], 1, 1, &alone[i]);
    hearth_engine_destroy(e);
    int distinct = 0;
    for (int i = 1; i < NQ; i++) distinct += memcmp(alone[i], alone[0], sizeof alone[0]) != 0;
    CHECK(distinct > 0);
    e = hy_engine(m, NQ, 16, NQ * CTX, -1, &err);
    if (e) {
        hearth_engine_info info;
        hearth_engine_info_get(e, &info);
        CHECK(info.prompt_cache_bytes > 0 && info.n_snaps > 0); /* prefix hits resume from state snapshots */
        hy_run(e, p, NQ, 1, got);
        CHECK_EQ(hy_differing(got, alone, NQ), 0);
        memset(got, 0, sizeof got);
        hy_run(e, p, NQ, 1, got);
        CHECK_EQ(hy_differing(got, alone, NQ), 0);
        hearth_engine_stats st = hy_idle(e);
        CHECK_EQ(st.check_failures, 0);
        /* choices: prompts 0, 2, 4, 6 twice each */
        int32_t q4[NQ / 2][PLEN], two[NQ][NGEN];
        for (int i = 0; i < NQ / 2; i++) memcpy(q4[i], p[2 * i], sizeof q4[i]);
        hy_run(e, q4, NQ / 2, 2, two);
        for (int i = 0; i < NQ / 2; i++) {
            CHECK(memcmp(two[2 * i], alone[2 * i], sizeof alone[0]) == 0);
            CHECK(memcmp(two[2 * i + 1], alone[2 * i], sizeof alone[0]) == 0);
        }
    }
    hearth_engine_destroy(e);
    e = hy_engine(m, NQ, 4, 3 * (PLEN + NGEN), 0, &err); /* room for about three: preemption */
    if (e) {
        memset(got, 0, sizeof got);
        hy_run(e, p, NQ, 1, got);
        CHECK_EQ(hy_differing(got, alone, NQ), 0);
        hearth_engine_stats st = hy_idle(e);
        CHECK(st.preemptions > 0);
        CHECK_EQ(st.check_failures, 0);
    }
    hearth_engine_destroy(e);
    hearth_model_destroy(m);
}

TEST(qwen3_5_engine_batched_equals_alone) { check_engine(HF_GOLD "qwen3_5_text"); }
TEST(qwen3_next_engine_batched_equals_alone) { check_engine(HF_GOLD "qwen3_next"); }
TEST(qwen3_5_moe_engine_batched_equals_alone) { check_engine(HF_GOLD "qwen3_5_moe_text"); }
/* from GGUF (tools/make_deltanet_gguf.py; test_deltanet_gguf.c holds them to llama.cpp) */
TEST(qwen35_gguf_engine_batched_equals_alone) { check_engine(HF_GOLD "qwen35_gguf-q8_0.gguf"); }
TEST(qwen3next_gguf_engine_batched_equals_alone) { check_engine(HF_GOLD "qwen3next_gguf-q8_0.gguf"); }

/* What each form binds: layers 0 and 2 linear (the DeltaNet's projections, 2 x 16 key and 4 x 16
 * value dims: a conv of 128 channels of 4 taps), layer 1 gated attention (q_proj of 2 x 64 rows),
 * partial rotary over 4 of 16 dims; KV rows for layer 1 only. */
TEST(hybrid_layout) {
    static const char *const forms[] = {"qwen3_5_text", "qwen3_5_text-bf16", "qwen3_next"};
    static const hearth_arch arch[] = {HEARTH_ARCH_QWEN3_5, HEARTH_ARCH_QWEN3_5, HEARTH_ARCH_QWEN3NEXT};
    for (int i = 0; i < 3; i++) {
        char path[256];
        snprintf(path, sizeof path, HF_GOLD "%s", forms[i]);
        hearth_model *m = NULL;
        hearth_err err = {0};
        CHECK_EQ(hearth_model_load(path, &m, &err), HEARTH_OK);
        if (!m) continue;
        const hearth_hparams *hp = &m->hp;
        CHECK_EQ(hp->arch, arch[i]);
        CHECK(hp->attn_out_gate);
        CHECK_EQ(hp->n_rot, 4);
        CHECK_EQ(hp->lin_n_k, 2);
        CHECK_EQ(hp->lin_n_v, 4);
        CHECK_EQ(hp->lin_conv, 4);
        CHECK_EQ(hearth_hparams_lin_state_floats(hp), 128 * 3 + 4 * 16 * 16);
        /* only the full-attention layer has KV rows: f16 k and v of 2 heads of 16 per token */
        CHECK_EQ(hearth_kv_n_cache_layers(m), 1);
        CHECK_EQ(hearth_kv_bytes_per_token(m, HEARTH_KV_SCHEME_F16), 2 * 2 * 16 * 2);
        for (int il = 0; il < 3; il++) {
            const hearth_layer *l = &m->layers[il];
            CHECK_EQ(hearth_hparams_is_linear(hp, il), il != 1);
            CHECK_EQ(l->lin_qkv.data != NULL, il != 1);
            CHECK_EQ(l->wq.data != NULL, il == 1);
            if (il == 1) CHECK_EQ(l->wq.ne1, 128);
            if (il == 1) continue;
            CHECK_EQ(l->lin_qkv.ne1, 128);
            CHECK_EQ(l->lin_z.ne1, 64);
            CHECK_EQ(l->lin_b.ne1, 4);
            CHECK_EQ(l->lin_a.ne1, 4);
            CHECK_EQ(l->lin_out.ne0, 64);
            CHECK(l->lin_conv_w && l->lin_dt_bias && l->lin_norm);
            for (int h = 0; h < 4; h++) CHECK(l->lin_a_neg[h] < 0); /* -exp(A_log) */
        }
        hearth_model_destroy(m);
    }
}

/* Registry facts from the headers and config (store/facts.h): supported, the parameters
 * transformers counted, and KV bytes per token of the full-attention layer only. */
TEST(hybrid_registry_facts) {
    static const char *const ckpts[] = {"qwen3_5_text", "qwen3_5_text-bf16", "qwen3_next", "qwen3_next-moe",
                                        "qwen3_5_moe_text"};
    for (size_t i = 0; i < 5; i++) {
        char path[256];
        snprintf(path, sizeof path, HF_GOLD "%s.json", ckpts[i]);
        char *json = golden_slurp(path, NULL);
        int n = 0;
        int32_t *np = json ? golden_int_array(json, "n_params", 0, &n) : NULL;
        hearth_model_facts f;
        hearth_err err = {0};
        snprintf(path, sizeof path, HF_GOLD "%s", ckpts[i]);
        CHECK_EQ(hearth_facts_safetensors(path, &f, &err), HEARTH_OK);
        CHECK(f.caps & HEARTH_CAP_SUPPORTED);
        if (!np || n != 1 || f.n_params != np[0])
            fprintf(stderr, "  %s: %lld parameters, transformers %d\n", ckpts[i], (long long)f.n_params,
                    np ? np[0] : -1);
        CHECK(np && n == 1 && f.n_params == np[0]);
        CHECK_EQ(f.kv_bytes_per_token, 2 * 2 * 16 * 2);
        free(np);
        free(json);
    }
}

/* The mixtures: routed layers bind the router, the stacked experts and the shared expert with its
 * one-row gate; Qwen3-Next's layer 1 keeps its dense MLP. */
TEST(hybrid_moe_layout) {
    static const char *const forms[] = {"qwen3_next-moe", "qwen3_5_moe_text"};
    for (int i = 0; i < 2; i++) {
        char path[256];
        snprintf(path, sizeof path, HF_GOLD "%s", forms[i]);
        hearth_model *m = NULL;
        hearth_err err = {0};
        CHECK_EQ(hearth_model_load(path, &m, &err), HEARTH_OK);
        if (!m) continue;
        CHECK_EQ(m->hp.arch, i ? HEARTH_ARCH_QWEN3_5MOE : HEARTH_ARCH_QWEN3NEXT);
        CHECK_EQ(m->hp.n_expert, 4);
        CHECK_EQ(m->hp.n_expert_used, 2);
        CHECK_EQ(m->hp.n_ff_exp, 16);
        CHECK_EQ(m->hp.n_ff_shexp, 32);
        CHECK(m->hp.moe_norm_topk);
        for (int il = 0; il < 3; il++) {
            const hearth_layer *l = &m->layers[il];
            bool routed = i == 1 || il != 1;
            CHECK_EQ(l->router.data != NULL, routed);
            CHECK_EQ(l->sh_gate.data != NULL, routed);
            CHECK_EQ(l->w_gate.data != NULL, !routed);
            if (!routed) continue;
            CHECK_EQ(l->exp_down.ne1, 4 * 64);
            CHECK_EQ(l->sh_gate.ne1, 32);
            CHECK_EQ(l->sh_down.ne0, 32);
            CHECK_EQ(l->sh_gate_inp.ne1, 1);
        }
        hearth_model_destroy(m);
    }
}

/* config.json: the layer pattern from full_attention_interval when layer_types is absent, the
 * family's partial rotary default (0.25), a Qwen3.5 config whose text_config holds the text
 * model, and refusals that name the key. */
TEST(hybrid_config) {
    static const char *base = "\"hidden_size\":64,\"num_hidden_layers\":8,\"intermediate_size\":32,"
                              "\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,\"vocab_size\":100,"
                              "\"linear_num_key_heads\":2,\"linear_key_head_dim\":16,\"linear_value_head_dim\":16";
    char json[1024];
    hearth_hf_config cfg;
    hearth_err err = {0};
    snprintf(json, sizeof json, "{\"model_type\":\"qwen3_5\",\"text_config\":{\"model_type\":\"qwen3_5_text\",%s,"
             "\"linear_num_value_heads\":4}}", base);
    CHECK_EQ(hearth_hf_config_parse(json, strlen(json), &cfg, &err), HEARTH_OK);
    CHECK_EQ(cfg.hp.arch, HEARTH_ARCH_QWEN3_5);
    CHECK_EQ(cfg.hp.n_rot, 4);
    CHECK(cfg.norm_plus_one && cfg.hp.attn_out_gate);
    for (int il = 0; il < 8; il++) CHECK_EQ(hearth_hparams_is_linear(&cfg.hp, il), (il + 1) % 4 != 0);
    hearth_hf_config_fini(&cfg);
    static const struct {
        const char   *type, *extra;
        hearth_status st;
        const char   *in_msg;
    } cases[] = {
        {"qwen3_5_text", "\"linear_num_value_heads\":3", HEARTH_E_FORMAT, "a multiple of the key heads"},
        {"qwen3_5_text", "\"linear_num_value_heads\":4,\"linear_conv_kernel_dim\":1", HEARTH_E_FORMAT,
         "conv width 1 (>= 2)"},
        {"qwen3_next", "\"linear_num_value_heads\":4,\"num_experts\":8,\"num_experts_per_tok\":2,"
         "\"moe_intermediate_size\":16", HEARTH_E_FORMAT, "config.json has no shared_expert_intermediate_size"},
        {"qwen3_5_moe_text", "\"linear_num_value_heads\":4,\"num_experts\":8,\"moe_intermediate_size\":16,"
         "\"shared_expert_intermediate_size\":32", HEARTH_E_FORMAT, "config.json has no num_experts_per_tok"},
        {"qwen3", "\"layer_types\":[\"linear_attention\",\"full_attention\",\"full_attention\",\"full_attention\","
         "\"full_attention\",\"full_attention\",\"full_attention\",\"full_attention\"]", HEARTH_E_UNSUPPORTED,
         "layer_types: 'linear_attention' layers"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(json, sizeof json, "{\"model_type\":\"%s\",%s,%s}", cases[i].type, base, cases[i].extra);
        memset(&err, 0, sizeof err);
        hearth_status st = hearth_hf_config_parse(json, strlen(json), &cfg, &err);
        if (st != cases[i].st || !strstr(err.msg, cases[i].in_msg))
            fprintf(stderr, "  case %zu: status %d, '%s'\n", i, st, err.msg);
        CHECK_EQ(st, cases[i].st);
        CHECK(strstr(err.msg, cases[i].in_msg) != NULL);
        hearth_hf_config_fini(&cfg);
    }
}

/* A misshapen conv or a missing DeltaNet projection is a load error naming the tensor: the
 * checkpoint copied with one name or shape in its safetensors header changed in place. */
TEST(hybrid_bad_tensors) {
    static const struct {
        const char *ckpt, *at, *from, *to, *msg;
    } cases[] = {
        {"qwen3_5_text", "layers.2.linear_attn.conv1d", "[128,1,4]", "[128,4,1]",
         "tensor 'model.layers.2.linear_attn.conv1d.weight' is F32 in 3 dims, expected float [128, 1, 4]"},
        {"qwen3_5_text", "layers.0.linear_attn.in_proj_z", "in_proj_z", "in_proj_y",
         "missing tensor 'model.layers.0.linear_attn.in_proj_z.weight'"},
        {"qwen3_next", "layers.2.linear_attn.in_proj_ba", "in_proj_ba", "in_proj_bb",
         "missing tensor 'model.layers.2.linear_attn.in_proj_ba.weight'"},
        {"qwen3_5_text", "layers.0.linear_attn.A_log", "A_log", "A_lug", "missing tensor 'model.layers.0.linear_attn.A_log'"},
    };
    static const char *const files[] = {"config.json", "tokenizer.json", "tokenizer_config.json", "model.safetensors"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[512];
        sc_tmpdir(dir, sizeof dir, "hybrid-bad");
        for (int f = 0; f < 4; f++) {
            char path[1024];
            size_t n = 0;
            snprintf(path, sizeof path, HF_GOLD "%s/%s", cases[i].ckpt, files[f]);
            char *bytes = golden_slurp(path, &n);
            CHECK(bytes != NULL);
            if (!bytes) continue;
            if (f == 3) { /* the header is [8, 8 + its length): JSON without NULs */
                size_t hlen = 0;
                for (int k = 0; k < 8; k++) hlen |= (size_t)(uint8_t)bytes[k] << (8 * k);
                char *hdr = hlen + 8 <= n ? strndup(bytes + 8, hlen) : NULL;
                char *at = hdr ? strstr(hdr, cases[i].at) : NULL, *q = at ? strstr(at, cases[i].from) : NULL;
                CHECK(q != NULL && strlen(cases[i].from) == strlen(cases[i].to));
                if (q) memcpy(bytes + 8 + (q - hdr), cases[i].to, strlen(cases[i].to));
                free(hdr);
            }
            snprintf(path, sizeof path, "%s/%s", dir, files[f]);
            sc_write(path, bytes, n);
            free(bytes);
        }
        hearth_model *m = NULL;
        hearth_err err = {0};
        hearth_status st = hearth_model_load(dir, &m, &err);
        if (st != HEARTH_E_FORMAT || !strstr(err.msg, cases[i].msg))
            fprintf(stderr, "  case %zu: status %d, '%s'\n", i, st, err.msg);
        CHECK_EQ(st, HEARTH_E_FORMAT);
        CHECK(m == NULL);
        CHECK(strstr(err.msg, cases[i].msg) != NULL);
        hearth_model_destroy(m);
        sc_rmrf(dir);
    }
}

/* The forward's batch check: a sequence continues where its state stands (lin_len) or starts
 * again at 0; anything else is refused before computing, leaving the state as it was. */
TEST(hybrid_state_positions) {
    harness *h = harness_open(HF_GOLD "qwen3_5_text", 16, 64, false, 1);
    CHECK(h != NULL);
    if (!h) return;
    const int32_t ids[6] = {5, 77, 120, 33, 250, 9};
    float *lg = malloc((size_t)h->n_vocab * sizeof(float)), *first = malloc((size_t)h->n_vocab * sizeof(float));
    CHECK_EQ(harness_run(h, ids, 5, 0, false, first), HEARTH_OK);
    CHECK_EQ(hearth_kv_view_of(h->kv)->lin_len[0], 5);
    CHECK_EQ(harness_run(h, ids + 5, 1, 6, false, lg), HEARTH_E_INVALID); /* skips position 5 */
    CHECK_EQ(harness_run(h, ids + 5, 1, 4, false, lg), HEARTH_E_INVALID); /* goes back to 4 */
    CHECK_EQ(hearth_kv_view_of(h->kv)->lin_len[0], 5);
    CHECK_EQ(harness_run(h, ids + 5, 1, 5, false, lg), HEARTH_OK);
    CHECK_EQ(hearth_kv_view_of(h->kv)->lin_len[0], 6);
    CHECK_EQ(harness_run(h, ids, 5, 0, false, lg), HEARTH_OK); /* from the start: the same logits */
    CHECK(memcmp(lg, first, (size_t)h->n_vocab * sizeof(float)) == 0);
    /* a view without the states cannot run the model */
    hearth_kv_view bare = *hearth_kv_view_of(h->kv);
    bare.lin_state = NULL;
    hearth_batch b = {.n_tokens = 1, .token = ids, .pos = (const int32_t[]){0}, .seq = (const int32_t[]){0}};
    CHECK_EQ(hearth_forward(h->fwd, &b, &bare, lg), HEARTH_E_INVALID);
    free(lg);
    free(first);
    harness_close(h);
}

/* A backend without the DeltaNet op (the CUDA backend today) is refused with the reason, and so
 * is speculative decoding (a state cannot take back rejected drafts). */
TEST(hybrid_refusals) {
    hearth_model *m = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_model_load(HF_GOLD "qwen3_5_text", &m, &err), HEARTH_OK);
    if (!m) return;
    hearth_backend *cpu = hearth_backend_cpu_create(1, 8, 256, 64, NULL);
    char why[256] = "";
    CHECK(cpu && hearth_fwd_supported(m, cpu, why, sizeof why));
    if (cpu) { /* the CPU's table without the op stands for a device backend */
        struct hearth_backend_i no_op = *cpu->iface;
        no_op.deltanet = NULL;
        const struct hearth_backend_i *was = cpu->iface;
        cpu->iface = &no_op;
        CHECK(!hearth_fwd_supported(m, cpu, why, sizeof why));
        CHECK(strstr(why, "the cpu backend has no gated DeltaNet (the linear-attention layers of qwen3_5_text run "
                          "on the CPU backend)") != NULL);
        cpu->iface = was;
    }
    hearth_backend_destroy(cpu);
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_threads = 1;
    ep.n_ctx = 64;
    ep.spec.kind = HEARTH_DRAFT_NGRAM;
    hearth_engine *e = NULL;
    CHECK(hearth_engine_create(m, &ep, &e, &err) != HEARTH_OK);
    CHECK(e == NULL);
    CHECK(strstr(err.msg, "speculative decoding does not run qwen3_5_text models") != NULL);
    hearth_engine_destroy(e);
    hearth_model_destroy(m);
}

int main(int argc, char **argv) {
    hearth_kernels_init();
    return test_main(argc, argv);
}
