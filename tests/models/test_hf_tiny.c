/*
 * test_hf_tiny.c - Hugging Face checkpoints (safetensors + config.json) of every family hearth
 * loads, against transformers (goldens by tools/make_hf_tiny.py; transformers is not needed
 * here, only the committed files in tests/golden/hf/).
 *
 * For each family there are three checkpoints: f32, bf16 (qwen2's sharded with an index) and
 * MLX affine quantized, and llama has an f16 one too (4-bit group 64 with 8-bit group 32, 8-bit group 64 and 4-bit group 32
 * overrides). The goldens are
 * transformers' f32 forward on the exact weights hearth computes with (bf16 widened, MLX
 * dequantized), so on the ref kernel set (f32 everywhere, f32 KV cache) every checkpoint must
 * give the same logits:
 *   - |dlogit| <= 1e-3 at every position of every prompt, the argmax equal at every position,
 *     the 32-token greedy continuation (decoded one token at a time on the cache) identical.
 * On the default kernel set (AVX2 / AVX-512) with an f16 KV cache, as `hearth generate` runs:
 *   - f32 and MLX weights multiply f32 activations (f32 dots; MLX weights dequantized in
 *     registers), so the differences come from the f16 cache, the f16-rounded query and
 *     attention weights (relative error 2^-11 each) and summation order;
 *   - bf16 weights multiply activations rounded to bf16 (8 significant bits: relative error
 *     up to 2^-9 per product, in every matmul of both layers); f16 weights (llama-f16)
 *     activations rounded to f16 (2^-11).
 *   Bound, with the reasoning: these logits are sums of ~64 products of magnitude up to ~3
 *   (init range 0.25, inputs of unit RMS), so a relative rounding of 2^-9 in the activations
 *   moves a logit by up to 64 * 3 * 2^-9 * (error growth through two layers, ~2) ~= 0.75 when
 *   every rounding goes the same way, and by its square-root share (~0.1) typically: we
 *   require 0.5 for bf16 (measured up to 0.19) and, for the f16 cache paths (2^-11 relative,
 *   applied to the attention only), 0.05 (measured up to 0.03); f16 weights, whose activation
 *   rounding adds 2^-11 in every matmul, 0.1. Every set this CPU runs is
 *   checked (scalar, avx2, avx512). Greedy continuations are compared on the ref set only: a
 *   rounding-level difference may legitimately flip a near-tie on the others.
 */
#include "hf_golden.h"
#include "model/model_internal.h"
#include "store/facts.h"
#include "store/hub.h"
#include "store_cache.h"
#include "test.h"

#include <math.h>
#include <stddef.h>

#define GOLD HF_GOLD

static void check_family(const char *family, bool with_f16) {
    static const char *const variants[] = {"", "-bf16", "-mlx", "-f16"};
    for (int iv = 0; iv < (with_f16 ? 4 : 3); iv++) {
        char name[96];
        snprintf(name, sizeof name, "%s%s", family, variants[iv]);
        hf_golden_check(name, name, iv == 1 ? 0.5 : iv == 3 ? 0.1 : 0.05);
    }
}

TEST(llama) { check_family("llama", true); }
TEST(mistral) { check_family("mistral", false); }
TEST(qwen2) { check_family("qwen2", false); }
TEST(qwen3) { check_family("qwen3", false); }
TEST(gemma2) { check_family("gemma2", false); }
TEST(gemma3) { check_family("gemma3_text", false); }
/* A multimodal Gemma 3 layout (config text_config, language_model.model.* tensors, as
 * mlx-community repos have it): the same weights as gemma3_text-bf16 give its logits. */
TEST(gemma3_multimodal_layout) {
    hf_golden_check("gemma3-mm", "gemma3_text-bf16", 0);
    hearth_model_facts f;
    hearth_err err = {0};
    CHECK_EQ(hearth_facts_safetensors(GOLD "gemma3-mm", &f, &err), HEARTH_OK);
    CHECK(f.caps & HEARTH_CAP_SUPPORTED);
    /* a vision_config but only the language model's weights (a text-only conversion of a
     * multimodal checkpoint): no tower, so no vision (store/modality.h) */
    CHECK(!(f.caps & HEARTH_CAP_VISION));
    CHECK_EQ(f.n_layer_swa, 1);
    CHECK_EQ(hearth_facts_safetensors(GOLD "gemma3_text-bf16", &f, &err), HEARTH_OK);
    CHECK(!(f.caps & HEARTH_CAP_VISION));
}

/* Gemma 4: per-layer inputs, KV sharing, sliding / full layers of different head sizes and kv
 * heads (keys as values on the full ones), proportional RoPE, double-wide MLPs, layer scalars;
 * then the same bf16 weights in the multimodal layout (model_type gemma4 with a text_config,
 * model.language_model.* tensors) against the bf16 golden. */
TEST(gemma4) {
    check_family("gemma4_text", false);
    hf_golden_check("gemma4-mm", "gemma4_text-bf16", 0);
}

/* A backend whose attention runs only 16-dim heads refuses Gemma 4's 32-dim full layers. */
static bool attn_16_only(hearth_backend *be, int32_t head_dim, int32_t group) {
    (void)be, (void)group;
    return head_dim <= 16;
}

static bool no_mlx4_g32(hearth_backend *be, hearth_type type) {
    (void)be;
    return type != HEARTH_TYPE_MLX4_G32;
}

/* Gemma 4 with a mixture of experts beside each layer's MLP (26B-A4B's layout: 4 experts, 2 per
 * token, experts stored as 3-D tensors; the MLX variant quantizes the router, not the experts).
 * Then mlx-lm's layout: gemma4_moe-mlxlm (the multimodal wrapper's names, experts as
 * switch_glu gate / up / down, each a quantized [expert, out, in] triple: 4-bit group 64, the
 * down projections group 32 at 4 and 8 bits, one up projection 8-bit group 32, the router
 * 8-bit) against its own golden, and gemma4_moe-mlxlm-bf16 (gemma4_moe-bf16's weights with
 * float switch_glu experts) against gemma4_moe-bf16's. */
TEST(gemma4_moe) {
    check_family("gemma4_moe", false);
    hf_golden_check("gemma4_moe-mlxlm", "gemma4_moe-mlxlm", 0.05);
    hf_golden_check("gemma4_moe-mlxlm-bf16", "gemma4_moe-bf16", 0.5);
    hearth_model *m = NULL;
    hearth_err err = {0};
    /* transformers' gate_up_proj: gate and up are views of one matrix, 2I rows per expert */
    CHECK_EQ(hearth_model_load(GOLD "gemma4_moe", &m, &err), HEARTH_OK);
    if (!m) return;
    const hearth_layer *l = &m->layers[0];
    CHECK_EQ(l->exp_stride, 2 * 32);
    CHECK(l->exp_up.data == (const uint8_t *)l->exp_gate.data + 32 * l->exp_gate.row_bytes);
    CHECK_EQ(l->exp_gate.type, HEARTH_TYPE_F32);
    hearth_model_destroy(m);
    CHECK_EQ(hearth_model_load(GOLD "gemma4_moe-mlxlm", &m, &err), HEARTH_OK);
    if (!m) return;
    static const struct {
        int         il;
        size_t      off; /* of the weight in hearth_layer */
        hearth_type type;
        int64_t     rows;
    } want[] = {
        {0, offsetof(hearth_layer, exp_gate), HEARTH_TYPE_MLX4_G64, 4 * 32},
        {0, offsetof(hearth_layer, exp_up), HEARTH_TYPE_MLX4_G64, 4 * 32},
        {0, offsetof(hearth_layer, exp_down), HEARTH_TYPE_MLX4_G32, 4 * 64},
        {1, offsetof(hearth_layer, exp_up), HEARTH_TYPE_MLX8_G32, 4 * 32},
        {1, offsetof(hearth_layer, exp_down), HEARTH_TYPE_MLX8_G32, 4 * 64},
        {1, offsetof(hearth_layer, router), HEARTH_TYPE_MLX8_G64, 4},
        {0, offsetof(hearth_layer, w_down), HEARTH_TYPE_MLX8_G32, 64},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const hearth_weight *w = (const hearth_weight *)((const char *)&m->layers[want[i].il] + want[i].off);
        CHECK_EQ(w->type, want[i].type);
        CHECK_EQ(w->ne1, want[i].rows);
    }
    CHECK_EQ(m->layers[1].exp_stride, 32);
    /* a backend without a kernel for the experts' type (only layer 0's down_proj experts are
     * mlx4_g32) refuses the model up front */
    hearth_backend *cpu = hearth_backend_cpu_create(1, 8, 256, 64, NULL);
    if (cpu) {
        struct hearth_backend_i iface = *cpu->iface;
        hearth_backend limited = {&iface, cpu->ctx, cpu->nx};
        char why[256] = "";
        CHECK(hearth_fwd_supported(m, cpu, why, sizeof why));
        iface.supports = no_mlx4_g32;
        CHECK(!hearth_fwd_supported(m, &limited, why, sizeof why));
        CHECK(strstr(why, "no kernel for mlx4_g32 weights") != NULL);
    }
    hearth_backend_destroy(cpu);
    hearth_model_destroy(m);
}

/* A copy of checkpoint src in a fresh temp dir (out) whose model.safetensors header has the
 * first `from` after `at` replaced by `to` of the same length, so the data stay in place. */
static void mutated_copy(const char *src, char *out, size_t cap, const char *at, const char *from, const char *to) {
    static const char *const files[] = {"config.json", "tokenizer.json", "tokenizer_config.json",
                                        "generation_config.json", "model.safetensors"};
    sc_tmpdir(out, cap, "bad-moe");
    for (int i = 0; i < 5; i++) {
        char path[1024];
        size_t n = 0;
        snprintf(path, sizeof path, "%s/%s", src, files[i]);
        char *bytes = golden_slurp(path, &n);
        CHECK(bytes != NULL);
        if (!bytes) continue;
        if (i == 4) { /* the header is [8, 8 + its length): JSON without NULs, so strstr stays in it */
            size_t hlen = 0;
            for (int k = 0; k < 8; k++) hlen |= (size_t)(uint8_t)bytes[k] << (8 * k);
            char *hdr = hlen + 8 <= n ? strndup(bytes + 8, hlen) : NULL;
            char *p = hdr ? strstr(hdr, at) : NULL;
            char *q = p ? strstr(p, from) : NULL;
            CHECK(q != NULL && strlen(from) == strlen(to));
            if (q) memcpy(bytes + 8 + (q - hdr), to, strlen(to));
            free(hdr);
        }
        snprintf(path, sizeof path, "%s/%s", out, files[i]);
        sc_write(path, bytes, n);
        free(bytes);
    }
}

/* Misshapen or mistyped expert tensors of either mlx-lm layout are refused with an error that
 * names the tensor. */
TEST(gemma4_moe_bad_experts) {
#define SW "model.layers.0.experts.switch_glu."
    static const struct {
        const char *ckpt, *at, *from, *to, *msg;
    } cases[] = {
        {"gemma4_moe-mlxlm", SW "gate_proj.weight\"", "\"U32\"", "\"F32\"",
         SW "gate_proj.weight' is F32 in 3 dims, expected packed U32 [4, 32, ..]"},
        {"gemma4_moe-mlxlm", SW "gate_proj.weight\"", "[4,32,8]", "[2,64,8]",
         SW "gate_proj.weight' is U32 in 3 dims, expected packed U32 [4, 32, ..]"},
        {"gemma4_moe-mlxlm", SW "down_proj.scales\"", "[4,64,1]", "[8,32,1]",
         SW "down_proj.scales' / '"},
        {"gemma4_moe-mlxlm", SW "up_proj.biases\"", "\"BF16\"", "\"F16\"\x20", SW "up_proj.biases' do not match"},
        {"gemma4_moe-mlxlm", SW "up_proj.scales\"", "scales", "scalez", "missing tensor 'language_model." SW
         "up_proj.scales'"},
        {"gemma4_moe-mlxlm-bf16", SW "down_proj.weight\"", "[4,64,32]", "[4,32,64]",
         SW "down_proj.weight' is not [4, 64, 32]"},
        {"gemma4_moe-mlxlm-bf16", SW "up_proj.weight\"", "up_proj", "up_pro_", "missing tensor '" SW
         "up_proj.weight'"},
    };
#undef SW
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char src[256], dir[512];
        snprintf(src, sizeof src, GOLD "%s", cases[i].ckpt);
        mutated_copy(src, dir, sizeof dir, cases[i].at, cases[i].from, cases[i].to);
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

TEST(gemma4_attention_shapes_checked) {
    hearth_model *m = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_model_load(GOLD "gemma4_text", &m, &err), HEARTH_OK);
    hearth_backend *cpu = hearth_backend_cpu_create(1, 8, 256, 64, NULL);
    if (!m || !cpu) goto out;
    struct hearth_backend_i iface = *cpu->iface;
    hearth_backend limited = {&iface, cpu->ctx, cpu->nx};
    char why[256] = "";
    CHECK(hearth_fwd_supported(m, cpu, why, sizeof why));
    iface.attn_supports = attn_16_only;
    CHECK(!hearth_fwd_supported(m, &limited, why, sizeof why));
    CHECK(strstr(why, "heads of 32 dims with 4 query heads per kv head (layer 1)") != NULL);
out:
    hearth_backend_destroy(cpu);
    hearth_model_destroy(m);
}

TEST(phi3) { check_family("phi3", false); }
TEST(smollm3) { check_family("smollm3", false); }

/* What the loader read from config.json, generation_config.json and the tokenizer files. */
TEST(configs_and_generation_defaults) {
    hearth_err err = {0};
    hearth_model *m = NULL;
    CHECK_EQ(hearth_model_load(GOLD "llama", &m, &err), HEARTH_OK);
    if (!m) return;
    const hearth_hparams *hp = hearth_model_hparams(m);
    CHECK_EQ(hp->rope_kind, HEARTH_ROPE_LLAMA3);
    CHECK_EQ(hp->rope_orig_ctx, 32);
    CHECK(m->layers[0].bo != NULL); /* attention_bias */
    CHECK(m->output.data != m->tok_embd.data);
    const hearth_gen_defaults *g = hearth_model_gen_defaults(m);
    CHECK(g->has_temperature && fabsf(g->temperature - 0.7f) < 1e-6f);
    CHECK(g->has_top_p && g->has_top_k && g->top_k == 20 && g->has_do_sample && g->do_sample);
    /* eos: generation_config [2, 0], config 2, tokenizer_config <|im_end|> (id 2): {2, 0} */
    CHECK_EQ(g->n_eos, 2);
    const hearth_tok *tok = hearth_model_tok(m);
    CHECK_EQ(hearth_tok_find(tok, "<|im_end|>", 10), 2);
    CHECK_EQ(hearth_tok_eos(tok), 2);
    CHECK(hearth_tok_is_eog(tok, 0) && hearth_tok_is_eog(tok, 2));
    CHECK(hearth_model_chat_template(m) != NULL);
    hearth_model_destroy(m);

    CHECK_EQ(hearth_model_load(GOLD "qwen3-mlx", &m, &err), HEARTH_OK);
    if (!m) return;
    CHECK_EQ(m->layers[0].wq.type, HEARTH_TYPE_MLX4_G64);
    CHECK_EQ(m->layers[0].w_down.type, HEARTH_TYPE_MLX8_G32);
    CHECK_EQ(m->layers[0].w_up.type, HEARTH_TYPE_MLX4_G32);
    CHECK_EQ(m->layers[1].wo.type, HEARTH_TYPE_MLX8_G64);
    CHECK_EQ(m->tok_embd.type, HEARTH_TYPE_MLX4_G64);
    CHECK(m->output.data == m->tok_embd.data); /* tied */
    hearth_model_destroy(m);

    CHECK_EQ(hearth_model_load(GOLD "mistral-mlx", &m, &err), HEARTH_OK);
    if (!m) return;
    CHECK_EQ(m->output.type, HEARTH_TYPE_BF16); /* "lm_head": false */
    CHECK_EQ(m->hp.swa_pattern, 3);             /* every layer slides */
    CHECK_EQ(m->hp.n_swa, 8);
    hearth_model_destroy(m);

    CHECK_EQ(hearth_model_load(GOLD "smollm3-bf16", &m, &err), HEARTH_OK);
    if (!m) return;
    CHECK(hearth_hparams_has_rope(&m->hp, 0) && !hearth_hparams_has_rope(&m->hp, 1));
    hearth_model_destroy(m);
}

/* Registry facts from the headers and config only (store/facts.h), against the counts
 * transformers gave and the layer pattern the loader uses. */
TEST(registry_facts) {
    static const char *const fams[] = {"llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3_text", "phi3", "smollm3"};
    for (int i = 0; i < 8; i++) {
        char path[256];
        snprintf(path, sizeof path, GOLD "%s.json", fams[i]);
        char *json = golden_slurp(path, NULL);
        int n = 0;
        int32_t *np = json ? golden_int_array(json, "n_params", 0, &n) : NULL;
        CHECK(np && n == 1);
        hearth_model_facts f;
        hearth_err err = {0};
        snprintf(path, sizeof path, GOLD "%s", fams[i]);
        CHECK_EQ(hearth_facts_safetensors(path, &f, &err), HEARTH_OK);
        CHECK(f.caps & HEARTH_CAP_SUPPORTED);
        CHECK(f.caps & HEARTH_CAP_CHAT);
        if (np) CHECK_EQ(f.n_params, np[0]);
        CHECK_STR(f.quant, "f32");
        CHECK_EQ(f.n_layer, 2);
        CHECK_EQ(f.kv_bytes_per_token, 2 * 2 * (16 + 16) * 2); /* layers x kv heads x (k + v dims) x f16 */
        bool swa = !strcmp(fams[i], "mistral") || !strncmp(fams[i], "gemma", 5);
        CHECK_EQ(f.n_swa, swa ? 8 : 0);
        CHECK_EQ(f.n_layer_swa, !strcmp(fams[i], "mistral") ? 2 : swa ? 1 : 0);
        CHECK_EQ(f.n_ctx_train, 256);
        /* the MLX twin: packed weights counted unpacked at their own bits, scales and biases not */
        snprintf(path, sizeof path, GOLD "%s-mlx", fams[i]);
        hearth_model_facts fq;
        CHECK_EQ(hearth_facts_safetensors(path, &fq, &err), HEARTH_OK);
        if (np) CHECK_EQ(fq.n_params, np[0]);
        free(np);
        free(json);
    }
    hearth_model_facts f;
    hearth_err err = {0};
    /* Gemma 4: layers 0 (sliding: 2 kv heads x 16) and 1 (full: 1 kv head x 32) keep k and v
     * in f16; layers 2 and 3 reuse their caches and store nothing */
    static const char *const g4[] = {"gemma4_text", "gemma4_text-mlx", "gemma4-mm"};
    for (int i = 0; i < 3; i++) {
        char *json = golden_slurp(GOLD "gemma4_text.json", NULL);
        int n = 0;
        int32_t *np = json ? golden_int_array(json, "n_params", 0, &n) : NULL;
        char path[256];
        snprintf(path, sizeof path, GOLD "%s", g4[i]);
        CHECK_EQ(hearth_facts_safetensors(path, &f, &err), HEARTH_OK);
        CHECK(f.caps & HEARTH_CAP_SUPPORTED);
        CHECK(np && n == 1 && f.n_params == np[0]);
        CHECK_EQ(f.n_layer, 4);
        CHECK_EQ(f.kv_bytes_per_token, (2 * 16 + 1 * 32) * 2 * 2);
        CHECK_EQ(f.kv_swa_bytes_per_token, 2 * 16 * 2 * 2);
        CHECK_EQ(f.n_layer_swa, 2);
        CHECK_EQ(f.n_swa, 8);
        free(np);
        free(json);
    }
    /* the 3-D expert tensors counted whole, in either layout; mlx-lm's quantized triples
     * unpacked at their own module's bits (8-bit overrides on layer 1), scales and biases not
     * counted; the bytes are the tensors' own (the loader's sum of them) */
    static const char *const moe[] = {"gemma4_moe", "gemma4_moe-mlx", "gemma4_moe-mlxlm", "gemma4_moe-mlxlm-bf16"};
    for (int i = 0; i < 4; i++) {
        char *json = golden_slurp(GOLD "gemma4_moe.json", NULL);
        int n = 0;
        int32_t *np = json ? golden_int_array(json, "n_params", 0, &n) : NULL;
        char path[256];
        snprintf(path, sizeof path, GOLD "%s", moe[i]);
        CHECK_EQ(hearth_facts_safetensors(path, &f, &err), HEARTH_OK);
        if (!np || n != 1 || f.n_params != np[0])
            fprintf(stderr, "  %s: %lld parameters, transformers %d\n", moe[i], (long long)f.n_params, np ? np[0] : -1);
        CHECK(np && n == 1 && f.n_params == np[0]);
        CHECK(f.caps & HEARTH_CAP_SUPPORTED);
        hearth_model *m = NULL;
        CHECK_EQ(hearth_model_load(path, &m, &err), HEARTH_OK);
        CHECK(m && f.weight_bytes == (int64_t)m->weight_bytes);
        hearth_model_destroy(m);
        free(np);
        free(json);
    }
    CHECK_EQ(hearth_facts_safetensors(GOLD "gemma4_moe-mlxlm", &f, &err), HEARTH_OK);
    CHECK_STR(f.quant, "4-bit g64");
    CHECK_EQ(hearth_facts_safetensors(GOLD "qwen3-mlx", &f, &err), HEARTH_OK);
    CHECK_STR(f.quant, "4-bit g64");
    CHECK(f.caps & HEARTH_CAP_SUPPORTED);
    CHECK_EQ(hearth_facts_safetensors(GOLD "qwen3-bf16", &f, &err), HEARTH_OK);
    CHECK_STR(f.quant, "bf16");
    /* the sharded one: three files and an index, the same parameters as its f32 twin */
    hearth_model_facts f32;
    CHECK_EQ(hearth_facts_safetensors(GOLD "qwen2", &f32, &err), HEARTH_OK);
    CHECK_EQ(hearth_facts_safetensors(GOLD "qwen2-bf16", &f, &err), HEARTH_OK);
    CHECK_EQ(f.n_params, f32.n_params);
    CHECK_EQ(f.weight_bytes * 2, f32.weight_bytes);
    hearth_model *m = NULL;
    CHECK_EQ(hearth_model_load(GOLD "qwen2-bf16", &m, &err), HEARTH_OK);
    CHECK(m && hearth_st_n_shards(m->st) == 3);
    hearth_model_destroy(m);
}

/* config.json cases the checkpoints above do not cover: refusals name the key, a long MLX
 * override list, v4 key layouts. */
TEST(config_parse_cases) {
    static const char *base = "\"hidden_size\":64,\"num_hidden_layers\":4,\"intermediate_size\":128,"
                              "\"num_attention_heads\":4,\"vocab_size\":100";
    static const struct {
        const char   *extra;
        hearth_status st;
        const char   *in_msg;
    } cases[] = {
        {"\"model_type\":\"gpt_neox\"", HEARTH_E_UNSUPPORTED, "model_type 'gpt_neox'"},
        {"\"model_type\":\"phi3\",\"rope_scaling\":{\"type\":\"longrope\",\"factor\":4}", HEARTH_E_FORMAT,
         "without original_max_position_embeddings"},
        {"\"model_type\":\"phi3\",\"rope_scaling\":{\"type\":\"longrope\",\"original_max_position_embeddings\":32,"
         "\"short_factor\":[1,1],\"long_factor\":[1,1]}", HEARTH_E_FORMAT, "lists of 8 positive numbers"},
        {"\"model_type\":\"gemma4_text\",\"enable_moe_block\":true", HEARTH_E_FORMAT, "no num_experts"},
        {"\"model_type\":\"gemma4_text\",\"use_bidirectional_attention\":\"all\"", HEARTH_E_UNSUPPORTED, "'all'"},
        {"\"model_type\":\"gemma4_text\",\"sliding_window\":8,\"head_dim\":16,\"layer_types\":[\"sliding_attention\","
         "\"full_attention\",\"sliding_attention\",\"full_attention\"],\"per_layer_config\":{\"1\":{\"head_dim\":32},"
         "\"3\":{\"head_dim\":64}}", HEARTH_E_UNSUPPORTED, "full-attention layers of different shapes"},
        {"\"model_type\":\"gemma4_text\",\"sliding_window\":8,\"head_dim\":16,\"num_kv_shared_layers\":3,"
         "\"layer_types\":[\"sliding_attention\",\"full_attention\",\"sliding_attention\",\"full_attention\"]",
         HEARTH_E_FORMAT, "no earlier layer of its kind"},
        {"\"model_type\":\"llama\",\"mlp_bias\":true", HEARTH_E_UNSUPPORTED, "mlp_bias"},
        {"\"model_type\":\"llama\",\"hidden_act\":\"relu\"", HEARTH_E_UNSUPPORTED, "activation 'relu'"},
        {"\"model_type\":\"gemma2\",\"sliding_window\":16,\"layer_types\":[\"sliding_attention\","
         "\"full_attention\",\"full_attention\",\"sliding_attention\"]", HEARTH_E_UNSUPPORTED, "layer_types"},
        {"\"model_type\":\"gemma2\",\"layer_types\":[\"full_attention\"]", HEARTH_E_FORMAT, "layer_types has 1"},
        {"\"model_type\":\"llama\",\"quantization\":{\"bits\":3,\"group_size\":64}", HEARTH_E_UNSUPPORTED,
         "3-bit group 64"},
        {"\"model_type\":\"llama\",\"quantization\":{\"bits\":4,\"group_size\":32,\"mode\":\"mxfp4\"}",
         HEARTH_E_UNSUPPORTED, "mxfp4"},
        {"\"model_type\":\"llama\",\"num_key_value_heads\":3", HEARTH_E_FORMAT, "kv heads"},
        {"\"model_type\":\"smollm3\",\"no_rope_layers\":[1,0,1,1]", HEARTH_E_UNSUPPORTED, "no_rope_layers"},
        {"\"model_type\":\"llama\",\"rope_scaling\":{\"rope_type\":\"su\"}", HEARTH_E_UNSUPPORTED, "'su'"},
    };
    char json[8192];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(json, sizeof json, "{%s,%s}", base, cases[i].extra);
        hearth_hf_config cfg;
        hearth_err err = {0};
        hearth_status st = hearth_hf_config_parse(json, strlen(json), &cfg, &err);
        if (st != cases[i].st || !strstr(err.msg, cases[i].in_msg))
            fprintf(stderr, "  case %zu: status %d, '%s'\n", i, st, err.msg);
        CHECK_EQ(st, cases[i].st);
        CHECK(strstr(err.msg, cases[i].in_msg) != NULL);
        hearth_hf_config_fini(&cfg);
    }
    /* v4 layout: rope_theta + rope_scaling (yarn) + rope_local_base_freq; gemma3 in text_config;
     * 300 per-module MLX overrides (a mixed-precision recipe) */
    size_t off = (size_t)snprintf(json, sizeof json,
                                  "{\"model_type\":\"gemma3\",\"quantization\":{\"bits\":4,\"group_size\":64");
    for (int i = 0; i < 300 && off < sizeof json - 100; i++)
        off += (size_t)snprintf(json + off, sizeof json - off, ",\"m.%d\":{\"bits\":8}", i);
    snprintf(json + off, sizeof json - off, "},\"text_config\":{%s,\"rope_theta\":1000000,\"rope_local_base_freq\":"
             "10000,\"sliding_window_pattern\":2,\"sliding_window\":512,\"head_dim\":32,\"rope_scaling\":"
             "{\"rope_type\":\"yarn\",\"factor\":4,\"original_max_position_embeddings\":8192}}}", base);
    hearth_hf_config cfg;
    hearth_err err = {0};
    CHECK_EQ(hearth_hf_config_parse(json, strlen(json), &cfg, &err), HEARTH_OK);
    CHECK(cfg.text_config && cfg.ai && cfg.ai->arch == HEARTH_ARCH_GEMMA3);
    CHECK_NEAR(cfg.hp.rope_base, 1e6, 0);
    CHECK_NEAR(cfg.hp.rope_base_swa, 1e4, 0);
    CHECK_EQ(cfg.hp.rope_kind, HEARTH_ROPE_YARN);
    CHECK_NEAR(cfg.hp.rope_mscale, 0.1 * log(4.0) + 1.0, 1e-6);
    CHECK_EQ(cfg.hp.swa_pattern, 2);
    CHECK_EQ(hearth_hf_config_quant_of(&cfg, "m.299").bits, 8);
    CHECK_EQ(hearth_hf_config_quant_of(&cfg, "m.300").bits, 4);
    CHECK_NEAR(cfg.hp.attn_scale, 1.0 / sqrt(32.0), 1e-7);
    hearth_hf_config_fini(&cfg);
}

/* A checkpoint in the hub cache is found by its repo id (an exact id wins over fragments that
 * also match other repos), and by a fragment when it is the only match. */
TEST(hub_resolve_checkpoint) {
    char hub[512];
    sc_tmpdir(hub, sizeof hub, "hub");
    static const char *const files[] = {"config.json", "model.safetensors", "tokenizer.json"};
    const char *repos[] = {"tiny/qwen3", "tiny/qwen3-mlx"};
    const char *srcs[] = {GOLD "qwen3", GOLD "qwen3-mlx"};
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 3; i++) {
            char src[256], blob[64];
            snprintf(src, sizeof src, "%s/%s", srcs[r], files[i]);
            size_t n = 0;
            char *bytes = golden_slurp(src, &n);
            CHECK(bytes != NULL);
            snprintf(blob, sizeof blob, "b%d%d", r, i);
            sc_blob(hub, repos[r], blob, bytes ? bytes : "", bytes ? n : 0);
            sc_link(hub, repos[r], "rev1", files[i], blob);
            free(bytes);
        }
    sc_ref(hub, "tiny/qwen3", "main", "rev1");
    sc_ref(hub, "tiny/qwen3-mlx", "main", "rev1");
    setenv("HF_HUB_CACHE", hub, 1);
    hearth_err err = {0};
    char *path = NULL;
    CHECK_EQ(hearth_hub_resolve("tiny/qwen3", &path, &err), HEARTH_OK);
    CHECK(path && strstr(path, "models--tiny--qwen3/snapshots/rev1") != NULL);
    hearth_model *m = NULL;
    CHECK(path && hearth_model_load(path, &m, &err) == HEARTH_OK);
    CHECK(m && !strcmp(hearth_model_name(m), "tiny/qwen3"));
    CHECK(m && m->tok_embd.type == HEARTH_TYPE_F32);
    hearth_model_destroy(m);
    free(path);
    path = NULL;
    CHECK_EQ(hearth_hub_resolve("QWEN3-mlx", &path, &err), HEARTH_OK);
    CHECK(path && strstr(path, "models--tiny--qwen3-mlx/") != NULL);
    free(path);
    path = NULL;
    CHECK_EQ(hearth_hub_resolve("qwen", &path, &err), HEARTH_E_AMBIGUOUS);
    unsetenv("HF_HUB_CACHE");
    sc_rmrf(hub);
}

int main(int argc, char **argv) {
    hearth_kernels_init();
    return test_main(argc, argv);
}
