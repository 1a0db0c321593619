/*
 * test_lora.c - LoRA adapters (lora/lora.h) through the forward pass, against peft.
 *
 * The goldens (tests/golden/lora/, tools/make_lora_tiny.py) are peft's f32 logits at every
 * position of the base goldens' prompts with a random rank-8 adapter on the tiny checkpoints
 * of tests/golden/hf/: unmerged (peft's LoRA layers) and merged (merge_and_unload). Checked:
 *   - llama (all seven projections), qwen3 (rsLoRA on q, v, down), gemma3_text (all seven, GeGLU),
 *     phi3 (fused qkv_proj / gate_up_proj cut into hearth's row views): every logit within 1e-4
 *     of both, on the reference kernels and an f32 cache, and every argmax equal;
 *   - the same llama adapter written in mlx-lm's layout (lora_a / lora_b transposed, scale
 *     given) against llama's peft goldens;
 *   - through the engine: requests with two adapters and none run together, each equal to its
 *     forward alone; the prefix cache serves an adapter its own blocks only;
 *   - a mixed step: three sequences (adapter A, no adapter, adapter B) prefilled and decoded
 *     together equal each run alone in its own forward (1e-5: the base matmul sees other rows);
 *   - hearth fuse (lora_fuse.c): the merged llama and phi3 checkpoints against peft's merged
 *     logits (1e-4), their greedy picks equal the unmerged adapter's at every step;
 *   - refusals, each naming the first mismatch: an adapter for another shape of model, a fused
 *     module on a model without it, a target module hearth does not adapt, a folder with no
 *     adapter, DoRA.
 */
#include "engine/engine.h"
#include "golden_json.h"
#include "kernels/kernels.h"
#include "lora/lora.h"
#include "model_harness.h"
#include "test.h"

#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LORA_GOLD "tests/golden/lora/"
#define HF_DIR "tests/golden/hf/"

enum { MAX_TOK = 80, N_CTX = 128 };

/* Prefill ids in slot `slot` of h with adapter a (NULL = none); logits at every position. */
static hearth_status run_lora(harness *h, const hearth_lora *a, const int32_t *ids, int32_t n, int32_t pos0,
                              float *out) {
    const hearth_lora *ls[MAX_TOK];
    for (int32_t i = 0; i < n; i++) {
        h->tok[i] = ids[i];
        h->pos[i] = pos0 + i;
        h->seq[i] = 0;
        h->want[i] = 1;
        ls[i] = a;
    }
    hearth_batch b = {.n_tokens = n, .token = h->tok, .pos = h->pos, .seq = h->seq, .want_logits = h->want, .lora = ls};
    return hearth_forward(h->fwd, &b, hearth_kv_view_of(h->kv), out);
}

/* max |hearth - golden| over every position of every prompt, with the adapter at `adapter`
 * on base `base`; argmax differences against the golden's in *am_diff. */
static double parity(const char *base, const char *adapter, const char *golden, const char *which, int *am_diff) {
    char path[512];
    snprintf(path, sizeof path, LORA_GOLD "%s.json", golden);
    char *json = golden_slurp(path, NULL);
    snprintf(path, sizeof path, LORA_GOLD "%s.%s.logits.bin", golden, which);
    size_t n_bin = 0;
    char *bin = golden_slurp(path, &n_bin);
    CHECK(json && bin);
    if (strchr(base, '/')) snprintf(path, sizeof path, "%s", base); /* a path of its own (fused) */
    else snprintf(path, sizeof path, HF_DIR "%s", base);
    harness *h = json && bin ? harness_open(path, MAX_TOK, N_CTX, false, 2) : NULL;
    CHECK(h != NULL);
    hearth_lora *a = NULL;
    hearth_err err = {0};
    if (h && adapter) {
        hearth_status st = hearth_lora_load(adapter, h->m, &a, &err);
        if (st) fprintf(stderr, "  %s: %s\n", adapter, err.msg);
        CHECK_EQ(st, HEARTH_OK);
    }
    double worst = INFINITY;
    if (h && (a || !adapter)) {
        worst = 0;
        int n_prompts = golden_count(json, "ids"), n_am = 0;
        int32_t *am = golden_int_array(json, "argmax", 0, &n_am);
        float *logits = malloc((size_t)MAX_TOK * (size_t)h->n_vocab * sizeof(float));
        size_t row = 0;
        *am_diff = 0;
        for (int ip = 0; ip < n_prompts; ip++) {
            int n_ids = 0;
            int32_t *ids = golden_int_array(json, "ids", ip, &n_ids);
            CHECK(ids && (row + (size_t)n_ids) * (size_t)h->n_vocab * sizeof(float) <= n_bin && n_ids <= MAX_TOK);
            CHECK_EQ(run_lora(h, a, ids, n_ids, 0, logits), HEARTH_OK);
            for (int t = 0; t < n_ids; t++) {
                const float *ref = (const float *)bin + (row + (size_t)t) * (size_t)h->n_vocab;
                const float *got = logits + (size_t)t * (size_t)h->n_vocab;
                for (int32_t v = 0; v < h->n_vocab; v++) worst = fmax(worst, fabs((double)got[v] - ref[v]));
                if (am && (int)(row + (size_t)t) < n_am) *am_diff += argmax_f(got, h->n_vocab) != am[row + (size_t)t];
            }
            row += (size_t)n_ids;
            free(ids);
        }
        CHECK_EQ(row * (size_t)h->n_vocab * sizeof(float), n_bin);
        CHECK(am != NULL && (size_t)n_am == row);
        free(am);
        free(logits);
    }
    hearth_lora_release(a);
    harness_close(h);
    free(json), free(bin);
    return worst;
}

static void check_family(const char *base, const char *adapter) {
    hearth_isa was = hearth_kernels_isa();
    CHECK(hearth_kernels_select(HEARTH_ISA_REF));
    char dir[256];
    snprintf(dir, sizeof dir, LORA_GOLD "%s", adapter);
    for (int w = 0; w < 2; w++) {
        int am = -1;
        double d = parity(base, dir, base, w ? "merged" : "unmerged", &am);
        fprintf(stderr, "  %-12s %-12s vs peft %-8s: max |dlogit| %.2e, argmax diffs %d\n", base, adapter,
                w ? "merged" : "unmerged", d, am);
        CHECK(d <= 1e-4);
        if (!w) CHECK_EQ(am, 0);
    }
    hearth_kernels_select(was);
}

TEST(peft_llama) { check_family("llama", "llama-peft"); }
TEST(peft_qwen3_rslora) { check_family("qwen3", "qwen3-peft"); }
TEST(peft_gemma3) { check_family("gemma3_text", "gemma3_text-peft"); }
TEST(peft_phi3_fused) { check_family("phi3", "phi3-peft"); }

TEST(mlx_llama) {
    hearth_isa was = hearth_kernels_isa();
    CHECK(hearth_kernels_select(HEARTH_ISA_REF));
    int am = -1;
    double d = parity("llama", LORA_GOLD "llama-mlx", "llama", "unmerged", &am);
    fprintf(stderr, "  llama mlx-lm layout vs peft: max |dlogit| %.2e, argmax diffs %d\n", d, am);
    CHECK(d <= 1e-4);
    CHECK_EQ(am, 0);
    hearth_kernels_select(was);
}

/* Three sequences in one step (llama-peft, none, qwen3's adapter, which fits llama's shapes),
 * then four decode steps of all three together, against each alone in a fresh cache. */
TEST(mixed_batch_equals_alone) {
    hearth_err err = {0};
    harness *h = harness_open(HF_DIR "llama", MAX_TOK, N_CTX, false, 2);
    CHECK(h != NULL);
    if (!h) return;
    hearth_kv *kv3 = NULL;
    CHECK_EQ(hearth_kv_create(h->m, 3, N_CTX, false, &kv3, &err), HEARTH_OK);
    hearth_lora *la = NULL, *lb = NULL;
    CHECK_EQ(hearth_lora_load(LORA_GOLD "llama-peft", h->m, &la, &err), HEARTH_OK);
    CHECK_EQ(hearth_lora_load(LORA_GOLD "qwen3-peft", h->m, &lb, &err), HEARTH_OK);
    if (!kv3 || !la || !lb) goto done;
    {
        const hearth_lora *which[3] = {la, NULL, lb};
        const int32_t prompts[3][6] = {{5, 77, 120, 33, 250, 9}, {12, 270, 3, 88}, {61, 200, 14, 180, 99}};
        const int32_t lens[3] = {6, 4, 5};
        enum { STEPS = 4 };
        int32_t V = h->n_vocab;
        float *together = calloc((size_t)3 * (STEPS + 1) * (size_t)V, sizeof(float));
        float *logits = malloc((size_t)MAX_TOK * (size_t)V * sizeof(float));
        int32_t tok[MAX_TOK], pos[MAX_TOK], seq[MAX_TOK], next[3];
        int8_t want[MAX_TOK];
        const hearth_lora *ls[MAX_TOK];
        int32_t n = 0;
        for (int s = 0; s < 3; s++)
            for (int i = 0; i < lens[s]; i++, n++) {
                tok[n] = prompts[s][i], pos[n] = i, seq[n] = s, ls[n] = which[s];
                want[n] = i == lens[s] - 1;
            }
        hearth_batch b = {.n_tokens = n, .token = tok, .pos = pos, .seq = seq, .want_logits = want, .lora = ls};
        CHECK_EQ(hearth_forward(h->fwd, &b, hearth_kv_view_of(kv3), logits), HEARTH_OK);
        for (int step = 0;; step++) {
            for (int s = 0; s < 3; s++) {
                memcpy(together + ((size_t)s * (STEPS + 1) + (size_t)step) * (size_t)V, logits + (size_t)s * V,
                       (size_t)V * sizeof(float));
                next[s] = argmax_f(logits + (size_t)s * V, V);
            }
            if (step == STEPS) break;
            for (int s = 0; s < 3; s++) {
                tok[s] = next[s], pos[s] = lens[s] + step, seq[s] = s, want[s] = 1, ls[s] = which[s];
            }
            b.n_tokens = 3;
            CHECK_EQ(hearth_forward(h->fwd, &b, hearth_kv_view_of(kv3), logits), HEARTH_OK);
        }
        /* alone: one sequence per forward, in slot 0 of the harness's cache */
        double worst = 0, spread = 0;
        for (int s = 0; s < 3; s++) {
            int32_t cur[8];
            memcpy(cur, prompts[s], sizeof(int32_t) * (size_t)lens[s]);
            CHECK_EQ(run_lora(h, which[s], cur, lens[s], 0, logits), HEARTH_OK);
            const float *last = logits + (size_t)(lens[s] - 1) * V;
            for (int step = 0;; step++) {
                const float *tg = together + ((size_t)s * (STEPS + 1) + (size_t)step) * (size_t)V;
                for (int32_t v = 0; v < V; v++) worst = fmax(worst, fabs((double)tg[v] - last[v]));
                if (s == 1) /* the adapters change the logits of the same prompt: the check can fail */
                    for (int32_t v = 0; v < V; v++) spread = fmax(spread, fabs((double)tg[v] - together[v]));
                if (step == STEPS) break;
                int32_t nx = argmax_f(last, V);
                CHECK_EQ(run_lora(h, which[s], &nx, 1, lens[s] + step, logits), HEARTH_OK);
                last = logits;
            }
        }
        fprintf(stderr, "  mixed step vs alone: max |dlogit| %.2e\n", worst);
        CHECK(worst <= 1e-5);
        CHECK(spread > 1e-2);
        free(together);
        free(logits);
    }
done:
    hearth_lora_release(la);
    hearth_lora_release(lb);
    hearth_kv_destroy(kv3);
    harness_close(h);
}

/* Greedy tokens of prompt through the forward alone (a fresh cache), with adapter a. */
static void greedy_alone(const hearth_lora *a, const int32_t *prompt, int32_t n, int32_t *out, int steps) {
    harness *h = harness_open(HF_DIR "llama", MAX_TOK, N_CTX, false, 2);
    CHECK(h != NULL);
    if (!h) return;
    float *logits = malloc((size_t)MAX_TOK * (size_t)h->n_vocab * sizeof(float));
    CHECK_EQ(run_lora(h, a, prompt, n, 0, logits), HEARTH_OK);
    int32_t next = argmax_f(logits + (size_t)(n - 1) * (size_t)h->n_vocab, h->n_vocab);
    for (int s = 0; s < steps; s++) {
        out[s] = next;
        CHECK_EQ(run_lora(h, a, &next, 1, n + s, logits), HEARTH_OK);
        next = argmax_f(logits, h->n_vocab);
    }
    free(logits);
    harness_close(h);
}

static int collect(hearth_request *r, int32_t *toks, int cap, hearth_event *done) {
    int n = 0;
    for (;;) {
        hearth_event ev;
        CHECK_EQ(hearth_request_next(r, &ev, 20000), HEARTH_OK);
        if (ev.kind == HEARTH_EV_DONE) {
            *done = ev;
            return n;
        }
        if (n < cap) toks[n] = ev.token;
        n++;
    }
}

/* Through the engine: three requests of one 40-token prompt (adapter A, none, adapter B) run
 * together, each equal to its forward run alone; then the same prompt again with A hits the
 * cache, and with a fresh id for A (a remount) does not: adapters never share KV blocks. The
 * adapters are dropped right after submit: the requests hold their own references. */
TEST(engine_adapters_per_request_and_cache_keys) {
    enum { N = 40, GEN = 8 };
    hearth_err err = {0};
    hearth_model *m = NULL;
    CHECK_EQ(hearth_model_load(HF_DIR "llama", &m, &err), HEARTH_OK);
    if (!m) return;
    hearth_lora *la = NULL, *lb = NULL;
    CHECK_EQ(hearth_lora_load(LORA_GOLD "llama-peft", m, &la, &err), HEARTH_OK);
    CHECK_EQ(hearth_lora_load(LORA_GOLD "qwen3-peft", m, &lb, &err), HEARTH_OK);
    int32_t prompt[N];
    for (int i = 0; i < N; i++) prompt[i] = (i * 37 + 11) % 280 + 5;
    const hearth_lora *which[3] = {la, NULL, lb};
    int32_t want[3][GEN];
    for (int k = 0; k < 3; k++) greedy_alone(which[k], prompt, N, want[k], GEN);
    CHECK(memcmp(want[0], want[1], sizeof want[0]) || memcmp(want[2], want[1], sizeof want[0]));
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_threads = 2;
    ep.n_ctx = 128;
    ep.kv_f16 = 0;
    hearth_engine *e = NULL;
    CHECK_EQ(hearth_engine_create(m, &ep, &e, &err), HEARTH_OK);
    if (!e || !la || !lb) goto done;
    {
        hearth_request *r[3] = {0};
        const uint64_t ids[3] = {1, 0, 2};
        for (int k = 0; k < 3; k++) {
            hearth_request_params rp = {.prompt = prompt, .n_prompt = N, .max_tokens = GEN, .ignore_eog = true,
                                        .sampling = hearth_sampler_params_default(), .lora = which[k],
                                        .lora_id = ids[k]};
            CHECK_EQ(hearth_engine_submit(e, &rp, &r[k], &err), HEARTH_OK);
        }
        hearth_lora_release(lb); /* unmounted while in use: the requests keep it */
        lb = NULL;
        for (int k = 0; k < 3; k++) {
            int32_t got[GEN] = {0};
            hearth_event done;
            CHECK_EQ(collect(r[k], got, GEN, &done), GEN);
            CHECK(!memcmp(got, want[k], sizeof got));
            hearth_request_release(r[k]);
        }
        hearth_engine_stats st0, st1, st2;
        hearth_engine_stats_get(e, &st0);
        hearth_request_params rp = {.prompt = prompt, .n_prompt = N, .max_tokens = GEN, .ignore_eog = true,
                                    .sampling = hearth_sampler_params_default(), .lora = la, .lora_id = 1};
        hearth_request *q = NULL;
        int32_t got[GEN];
        hearth_event done;
        CHECK_EQ(hearth_engine_submit(e, &rp, &q, &err), HEARTH_OK);
        CHECK_EQ(collect(q, got, GEN, &done), GEN);
        CHECK(done.n_cached >= 32 && !memcmp(got, want[0], sizeof got)); /* its own blocks */
        hearth_request_release(q);
        hearth_engine_stats_get(e, &st1);
        rp.lora_id = 7; /* the same weights under another mount: no block of id 1 is taken */
        CHECK_EQ(hearth_engine_submit(e, &rp, &q, &err), HEARTH_OK);
        CHECK_EQ(collect(q, got, GEN, &done), GEN);
        CHECK_EQ(done.n_cached, 0);
        hearth_request_release(q);
        hearth_engine_stats_get(e, &st2);
        CHECK(st1.cache_hit_tokens > st0.cache_hit_tokens);
        CHECK_EQ(st2.cache_hit_tokens, st1.cache_hit_tokens);
    }
done:
    hearth_engine_destroy(e);
    hearth_lora_release(la);
    hearth_lora_release(lb);
    hearth_model_destroy(m);
}

/* hearth fuse: the merged checkpoint of base + its peft adapter against peft's merged logits
 * (1e-4), and its greedy continuations against the adapter run unmerged. */
static void check_fuse(const char *base, const char *golden) {
    hearth_isa was = hearth_kernels_isa();
    CHECK(hearth_kernels_select(HEARTH_ISA_REF));
    char tmp[] = "/tmp/hearth_fuse_XXXXXX", src[256], ad[256], out[600];
    CHECK(mkdtemp(tmp) != NULL);
    snprintf(src, sizeof src, HF_DIR "%s", base);
    snprintf(ad, sizeof ad, LORA_GOLD "%s-peft", base);
    snprintf(out, sizeof out, "%s/fused", tmp);
    hearth_model *m = NULL;
    hearth_lora *a = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_model_load(src, &m, &err), HEARTH_OK);
    if (m) CHECK_EQ(hearth_lora_load(ad, m, &a, &err), HEARTH_OK);
    if (m && a) {
        hearth_status st = hearth_lora_fuse(m, a, src, out, &err);
        if (st) fprintf(stderr, "  fuse: %s\n", err.msg);
        CHECK_EQ(st, HEARTH_OK);
        int am = -1;
        double d = parity(out, NULL, golden, "merged", &am);
        fprintf(stderr, "  %-12s fused vs peft merged: max |dlogit| %.2e, argmax diffs %d\n", base, d, am);
        CHECK(d <= 1e-4);
        CHECK_EQ(am, 0);
        /* greedy: fused against unmerged, 32 tokens of each golden prompt */
        harness *hf = harness_open(out, MAX_TOK, N_CTX, false, 2), *hu = harness_open(src, MAX_TOK, N_CTX, false, 2);
        CHECK(hf && hu);
        char gpath[256];
        snprintf(gpath, sizeof gpath, LORA_GOLD "%s.json", golden);
        char *json = golden_slurp(gpath, NULL);
        int agree = 0, total = 0;
        float *lf = malloc((size_t)MAX_TOK * 512 * sizeof(float)), *lu = malloc((size_t)MAX_TOK * 512 * sizeof(float));
        for (int ip = 0; hf && hu && json && ip < golden_count(json, "ids"); ip++) {
            int n = 0;
            int32_t *ids = golden_int_array(json, "ids", ip, &n);
            int32_t tf = -1, tu = -1;
            for (int s = 0; ids && s < 32 && n + s < N_CTX; s++) {
                if (s == 0) {
                    CHECK_EQ(harness_run(hf, ids, n, 0, false, lf), HEARTH_OK);
                    CHECK_EQ(run_lora(hu, a, ids, n, 0, lu), HEARTH_OK);
                    tf = argmax_f(lf, hf->n_vocab);
                    tu = argmax_f(lu + (size_t)(n - 1) * (size_t)hu->n_vocab, hu->n_vocab);
                } else {
                    int32_t prev = tu; /* both continue from the unmerged pick (teacher-forced) */
                    CHECK_EQ(harness_run(hf, &prev, 1, n + s - 1, false, lf), HEARTH_OK);
                    CHECK_EQ(run_lora(hu, a, &prev, 1, n + s - 1, lu), HEARTH_OK);
                    tf = argmax_f(lf, hf->n_vocab);
                    tu = argmax_f(lu, hu->n_vocab);
                }
                agree += tf == tu;
                total++;
            }
            free(ids);
        }
        fprintf(stderr, "  %-12s fused vs unmerged: top-1 agrees at %d of %d greedy steps\n", base, agree, total);
        CHECK(total == 64 && agree == total);
        free(lf), free(lu), free(json);
        harness_close(hf);
        harness_close(hu);
    }
    hearth_lora_release(a);
    hearth_model_destroy(m);
    char p[700];
    const char *files[] = {"model.safetensors", "config.json", "generation_config.json", "tokenizer.json",
                           "tokenizer_config.json", "chat_template.jinja"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", out, files[i]);
        unlink(p);
    }
    rmdir(out);
    rmdir(tmp);
    hearth_kernels_select(was);
}

TEST(fuse_llama) { check_fuse("llama", "llama"); }
TEST(fuse_phi3_fused_rows) { check_fuse("phi3", "phi3"); }

TEST(fuse_refuses_a_gguf_base) {
    hearth_model *m = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_model_load("tests/golden/tiny/tiny-qwen3.gguf", &m, &err), HEARTH_OK);
    if (!m) return;
    hearth_lora none = {.n_layer = 0}; /* the base is refused before the adapter is read */
    CHECK_EQ(hearth_lora_fuse(m, &none, "tests/golden/tiny", "/tmp/hearth-never-written", &err), HEARTH_E_UNSUPPORTED);
    CHECK(strstr(err.msg, "GGUF") != NULL);
    struct stat sb;
    CHECK(stat("/tmp/hearth-never-written", &sb) != 0);
    hearth_model_destroy(m);
}

/* Load adapter on base; expect code and a message containing want. */
static void refuse(const char *base, const char *adapter, hearth_status code, const char *want) {
    hearth_model *m = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_model_load(base, &m, &err), HEARTH_OK);
    if (!m) return;
    hearth_lora *a = (hearth_lora *)1;
    hearth_status st = hearth_lora_load(adapter, m, &a, &err);
    fprintf(stderr, "  %s on %s: %s\n", adapter, base, err.msg);
    CHECK_EQ(st, code);
    CHECK(a == NULL);
    CHECK(strstr(err.msg, want) != NULL);
    hearth_model_destroy(m);
}

/* A copy of a PEFT adapter folder with its config's text edited (from -> to). */
static void edited_copy(const char *src, const char *dst, const char *from, const char *to) {
    char path[1024];
    mkdir(dst, 0755);
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", src);
    size_t n = 0;
    char *bytes = golden_slurp(path, &n);
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", dst);
    FILE *f = fopen(path, "wb");
    CHECK(bytes && f && fwrite(bytes, 1, n, f) == n);
    if (f) fclose(f);
    free(bytes);
    snprintf(path, sizeof path, "%s/adapter_config.json", src);
    char *cfg = golden_slurp(path, NULL);
    CHECK(cfg && strstr(cfg, from));
    snprintf(path, sizeof path, "%s/adapter_config.json", dst);
    f = fopen(path, "wb");
    if (cfg && f) {
        char *at = strstr(cfg, from);
        if (at) {
            fwrite(cfg, 1, (size_t)(at - cfg), f);
            fputs(to, f);
            fputs(at + strlen(from), f);
        }
    }
    if (f) fclose(f);
    free(cfg);
}

static void rm_copy(const char *dst) {
    char path[1024];
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", dst);
    unlink(path);
    snprintf(path, sizeof path, "%s/adapter_config.json", dst);
    unlink(path);
    rmdir(dst);
}

TEST(refusals_name_the_mismatch) {
    /* gemma4_text's layer 1 is a full-attention layer with 32-wide heads: o_proj maps 128 -> 64 */
    refuse(HF_DIR "gemma4_text", LORA_GOLD "llama-peft", HEARTH_E_INVALID, "layer 1's o_proj of the base model maps 128 to 64");
    refuse(HF_DIR "llama", LORA_GOLD "phi3-peft", HEARTH_E_INVALID, "fused gate_up_proj");
    refuse(HF_DIR "llama", "tests/golden/hf", HEARTH_E_NOTFOUND, "no adapter there");
    char tmp[] = "/tmp/hearth_lora_XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    char dst[600];
    snprintf(dst, sizeof dst, "%s/a", tmp);
    edited_copy(LORA_GOLD "qwen3-peft", dst, "\"q_proj\"", "\"embed_tokens\"");
    refuse(HF_DIR "qwen3", dst, HEARTH_E_UNSUPPORTED, "target module 'embed_tokens'");
    rm_copy(dst);
    edited_copy(LORA_GOLD "qwen3-peft", dst, "\"use_dora\": false", "\"use_dora\": true");
    refuse(HF_DIR "qwen3", dst, HEARTH_E_UNSUPPORTED, "use_dora");
    rm_copy(dst);
    edited_copy(LORA_GOLD "qwen3-peft", dst, "\"r\": 8", "\"r\": 4");
    refuse(HF_DIR "qwen3", dst, HEARTH_E_FORMAT, "the config says 4");
    rm_copy(dst);
    rmdir(tmp);
}

int main(int argc, char **argv) {
    hearth_kernels_init();
    return test_main(argc, argv);
}
