/*
 * test_cuda_lora_models.c - LoRA adapters on the CUDA backend (backend/cuda/lora.cu through the
 * forward's lora op) against the CPU backend with the same adapters, and mixed batches against
 * each sequence alone.
 *
 * The adapters are the committed tiny ones (tests/golden/lora, tools/make_lora_tiny.py: PEFT on
 * llama, qwen3, gemma3 and phi3's fused projections, mlx-lm on llama), on their tiny Hugging Face
 * bases. Both sides compute the ref numerics (f32 activations and KV), as test_cuda_models.c
 * does, so they differ in summation order and in the f16 rounding of cuBLAS's prefill inputs:
 * logits are held to TOL of each row's largest |logit|, the tolerance of the CUDA model tests.
 * Every comparison also checks that the adapter moves the logits by far more than TOL (else a
 * silently dropped adapter would pass).
 *
 *   forward   a 24-token prefill and 16 decode steps with the adapter on every token: CUDA vs CPU
 *   mixed     three sequences in one step (llama-peft, the base model, llama-mlx), prefill then
 *             8 decode steps of the three together (a decode step with three segments and a
 *             gap), against each sequence run alone on the same CUDA backend
 *   engine    a CUDA engine serving the three at once (one prompt) against a CPU engine: greedy
 *             tokens equal, or parted at a near-tie of the CPU's top two (as the KV tests of
 *             test_cuda_models.c); the CPU's adapted continuations differ from its base one
 *   refs      the forward holds a reference to an adapter while the device keeps its copy, and
 *             drops it (the copy forgotten) once it is the last one (hearth_fwd_lora_sweep)
 *
 * Skips without a GPU (or in a build without CUDA).
 */
#include "test.h"

#include "backend/backend.h"
#include "engine/engine.h"
#include "kernels/kernels.h"
#include "lora/lora.h"
#include "model/model.h"
#include "models/forward.h"
#include "support/kv.h"

#include <math.h>
#include <string.h>

#define TOL 1e-2        /* of each row's largest |logit| (test_cuda_models.c's TOL_TINY) */
#define MOVED (10 * TOL) /* the least an adapter must move some logit row, in the same units */

enum { N_PROMPT = 24, N_DEC = 16, MAX_TOK = 32, N_CTX = 128, N_SLOTS = 4 };

static const hearth_numerics REF_NX = {.tier = HEARTH_NUMERICS_REF};

typedef struct {
    hearth_backend *be;
    hearth_fwd     *fwd;
    hearth_kv      *kv;
} side;

static bool side_open(side *s, const hearth_model *m, bool cuda) {
    hearth_err err = {0};
    const hearth_hparams *hp = hearth_model_hparams(m);
    int64_t width = hp->n_ff > hp->n_embd ? hp->n_ff : hp->n_embd;
    if ((int64_t)hp->n_head * hp->head_dim_v > width) width = (int64_t)hp->n_head * hp->head_dim_v;
    s->be = cuda ? hearth_backend_cuda_create(0, MAX_TOK, &REF_NX, &err)
                 : hearth_backend_cpu_create(0, MAX_TOK, width, N_CTX, &REF_NX);
    if (!s->be) return false;
    s->fwd = hearth_fwd_create(m, s->be, MAX_TOK, NULL);
    hearth_kv_create_on(cuda ? s->be : NULL, m, N_SLOTS, N_CTX, false, &s->kv, &err);
    return s->fwd && s->kv;
}

static void side_close(side *s) {
    hearth_kv_destroy(s->kv);
    hearth_fwd_destroy(s->fwd);
    hearth_backend_destroy(s->be);
    memset(s, 0, sizeof *s);
}

/* max over rows of max |a - b| / max |b| per row */
static double row_err(const float *a, const float *b, int64_t rows, int64_t n) {
    double worst = 0;
    for (int64_t r = 0; r < rows; r++) {
        double m = 0, ref = 1e-30;
        for (int64_t i = 0; i < n; i++) {
            double d = fabs((double)a[r * n + i] - (double)b[r * n + i]);
            if (!(d <= m)) m = d;
            if (fabs((double)b[r * n + i]) > ref) ref = fabs((double)b[r * n + i]);
        }
        if (!(m / ref <= worst)) worst = m / ref;
    }
    return worst;
}

static int32_t argmax_f(const float *x, int32_t n) {
    int32_t b = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* A prompt of n tokens, different for each k. */
static void prompt_of(int k, int32_t n_vocab, int32_t *tok, int n) {
    for (int i = 0; i < n; i++) tok[i] = (int32_t)((i * 7919 + 13 + k * 104729) % (n_vocab > 3000 ? 3000 : n_vocab));
}

/* n tokens of sequence slot at positions p0.., each with adapter a, logits for all of them. */
static hearth_status run(side *s, const int32_t *tok, int n, int32_t p0, int32_t slot, const hearth_lora *a,
                         float *logits) {
    int32_t pos[MAX_TOK], seq[MAX_TOK];
    int8_t want[MAX_TOK];
    const hearth_lora *ls[MAX_TOK];
    for (int i = 0; i < n; i++) pos[i] = p0 + i, seq[i] = slot, want[i] = 1, ls[i] = a;
    hearth_batch b = {.n_tokens = n, .token = tok, .pos = pos, .seq = seq, .want_logits = want, .lora = ls};
    return hearth_forward(s->fwd, &b, hearth_kv_view_of(s->kv), logits);
}

static hearth_model *load_model(const char *dir) {
    hearth_err err = {0};
    hearth_model *m = NULL;
    if (hearth_model_load(dir, &m, &err)) fprintf(stderr, "  cannot load %s: %s\n", dir, err.msg);
    return m;
}

static hearth_lora *load_adapter(const char *dir, const hearth_model *m) {
    hearth_err err = {0};
    hearth_lora *a = NULL;
    if (hearth_lora_load(dir, m, &a, &err)) fprintf(stderr, "  cannot load %s: %s\n", dir, err.msg);
    return a;
}

/* CUDA vs CPU with adapter dir on base: the prefill's logits, then N_DEC decode steps fed the
 * CPU's greedy tokens on both sides; and the adapter moves the CUDA side's prefill logits. */
static void check_forward(const char *base, const char *dir) {
    if (hearth_cuda_device_count() <= 0) TEST_SKIP("no CUDA device");
    hearth_model *m = load_model(base);
    hearth_lora *a = m ? load_adapter(dir, m) : NULL;
    CHECK(m && a);
    if (!a) {
        hearth_model_destroy(m);
        return;
    }
    const int32_t V = hearth_model_hparams(m)->n_vocab;
    side gpu = {0}, cpu = {0};
    CHECK(side_open(&gpu, m, true));
    CHECK(hearth_kernels_select(HEARTH_ISA_REF));
    CHECK(side_open(&cpu, m, false));
    float *lg = malloc(sizeof(float) * (size_t)N_PROMPT * V), *lc = malloc(sizeof(float) * (size_t)N_PROMPT * V),
          *lb = malloc(sizeof(float) * (size_t)N_PROMPT * V);
    int32_t tok[N_PROMPT];
    prompt_of(0, V, tok, N_PROMPT);
    if (gpu.kv && cpu.kv) {
        CHECK_EQ(run(&gpu, tok, N_PROMPT, 0, 0, a, lg), HEARTH_OK);
        CHECK_EQ(run(&cpu, tok, N_PROMPT, 0, 0, a, lc), HEARTH_OK);
        CHECK_EQ(run(&gpu, tok, N_PROMPT, 0, 1, NULL, lb), HEARTH_OK); /* the base model, slot 1 */
        double e = row_err(lg, lc, N_PROMPT, V), moved = row_err(lb, lg, N_PROMPT, V), worst = 0;
        for (int i = 0; i < N_DEC; i++) {
            int32_t t = argmax_f(lc + (size_t)(i == 0 ? N_PROMPT - 1 : 0) * V, V);
            CHECK_EQ(run(&gpu, &t, 1, N_PROMPT + i, 0, a, lg), HEARTH_OK);
            CHECK_EQ(run(&cpu, &t, 1, N_PROMPT + i, 0, a, lc), HEARTH_OK);
            double ei = row_err(lg, lc, 1, V);
            if (ei > worst) worst = ei;
        }
        fprintf(stderr, "  %s: prefill logits error %.3g, decode %.3g; the adapter moves them by %.3g\n", dir, e, worst,
                moved);
        CHECK(e <= TOL);
        CHECK(worst <= TOL);
        CHECK(moved >= MOVED);
    }
    free(lg);
    free(lc);
    free(lb);
    side_close(&cpu);
    side_close(&gpu);
    hearth_lora_release(a);
    hearth_model_destroy(m);
}

TEST(llama_peft_cuda_matches_cpu) { check_forward("tests/golden/hf/llama", "tests/golden/lora/llama-peft"); }
TEST(llama_mlx_cuda_matches_cpu) { check_forward("tests/golden/hf/llama", "tests/golden/lora/llama-mlx"); }
TEST(qwen3_peft_cuda_matches_cpu) { check_forward("tests/golden/hf/qwen3", "tests/golden/lora/qwen3-peft"); }
TEST(gemma3_peft_cuda_matches_cpu) {
    check_forward("tests/golden/hf/gemma3_text", "tests/golden/lora/gemma3_text-peft");
}
/* phi3: one A shared by the fused q|k|v and gate|up, B cut at the weight's boundaries */
TEST(phi3_peft_cuda_matches_cpu) { check_forward("tests/golden/hf/phi3", "tests/golden/lora/phi3-peft"); }

enum { N_MIX = 3, P_MIX = 8, D_MIX = 8 };

/* Three sequences (llama-peft, none, llama-mlx) in one step on the CUDA backend, prefill then
 * decode together, against each alone on a fresh CUDA side. */
TEST(mixed_batch_equals_each_alone) {
    if (hearth_cuda_device_count() <= 0) TEST_SKIP("no CUDA device");
    hearth_model *m = load_model("tests/golden/hf/llama");
    hearth_lora *peft = m ? load_adapter("tests/golden/lora/llama-peft", m) : NULL;
    hearth_lora *mlx = m ? load_adapter("tests/golden/lora/llama-mlx", m) : NULL;
    CHECK(m && peft && mlx);
    if (!peft || !mlx) {
        hearth_lora_release(peft);
        hearth_lora_release(mlx);
        hearth_model_destroy(m);
        return;
    }
    const int32_t V = hearth_model_hparams(m)->n_vocab;
    const hearth_lora *ad[N_MIX] = {peft, NULL, mlx};
    int32_t prompt[N_MIX][P_MIX]; /* one prompt: the rows then differ by their adapters only */
    for (int k = 0; k < N_MIX; k++) prompt_of(1, V, prompt[k], P_MIX);
    /* alone: each sequence in slot 0 of its own side; greedy tokens chosen from these logits */
    float *alone = malloc(sizeof(float) * (size_t)N_MIX * (1 + D_MIX) * V);
#define ALONE(k, step) (alone + ((size_t)(k) * (1 + D_MIX) + (size_t)(step)) * (size_t)V)
    int32_t next[N_MIX][D_MIX];
    float *l = malloc(sizeof(float) * (size_t)MAX_TOK * V);
    for (int k = 0; k < N_MIX; k++) {
        side s = {0};
        CHECK(side_open(&s, m, true));
        if (!s.kv) {
            side_close(&s);
            continue;
        }
        CHECK_EQ(run(&s, prompt[k], P_MIX, 0, 0, ad[k], l), HEARTH_OK);
        memcpy(ALONE(k, 0), l + (size_t)(P_MIX - 1) * V, sizeof(float) * (size_t)V);
        for (int i = 0; i < D_MIX; i++) {
            next[k][i] = argmax_f(ALONE(k, i), V);
            CHECK_EQ(run(&s, &next[k][i], 1, P_MIX + i, 0, ad[k], l), HEARTH_OK);
            memcpy(ALONE(k, i + 1), l, sizeof(float) * (size_t)V);
        }
        side_close(&s);
    }
    /* together: the three prompts in one step (slots 0, 2, 3: a gap), then each decode step the three
     * next tokens in one step */
    side s = {0};
    CHECK(side_open(&s, m, true));
    const int32_t slot[N_MIX] = {0, 2, 3};
    double worst = 0, moved = 1e30;
    if (s.kv) {
        int32_t tok[MAX_TOK], pos[MAX_TOK], seq[MAX_TOK];
        int8_t want[MAX_TOK];
        const hearth_lora *ls[MAX_TOK];
        for (int k = 0; k < N_MIX; k++)
            for (int i = 0; i < P_MIX; i++) {
                int t = k * P_MIX + i;
                tok[t] = prompt[k][i], pos[t] = i, seq[t] = slot[k], want[t] = i == P_MIX - 1, ls[t] = ad[k];
            }
        hearth_batch b = {.n_tokens = N_MIX * P_MIX, .token = tok, .pos = pos, .seq = seq, .want_logits = want,
                          .lora = ls};
        for (int step = 0; step <= D_MIX; step++) {
            if (step > 0) {
                for (int k = 0; k < N_MIX; k++)
                    tok[k] = next[k][step - 1], pos[k] = P_MIX + step - 1, seq[k] = slot[k], want[k] = 1, ls[k] = ad[k];
                b.n_tokens = N_MIX;
            }
            CHECK_EQ(hearth_forward(s.fwd, &b, hearth_kv_view_of(s.kv), l), HEARTH_OK);
            for (int k = 0; k < N_MIX; k++) {
                double e = row_err(l + (size_t)k * V, ALONE(k, step), 1, V);
                if (e > worst) worst = e;
            }
            if (step == 0) /* the same prompt: each adapter's row against the base model's */
                for (int k = 0; k < N_MIX; k += 2) {
                    double mv = row_err(l + (size_t)k * V, l + (size_t)V, 1, V);
                    if (mv < moved) moved = mv;
                }
        }
    }
#undef ALONE
    fprintf(stderr, "  mixed batch vs alone: logits error %.3g over %d steps; the adapters move them by %.3g\n", worst,
            1 + D_MIX, moved);
    CHECK(worst <= TOL);
    CHECK(moved >= MOVED);
    side_close(&s);
    free(l);
    free(alone);
    hearth_lora_release(peft);
    hearth_lora_release(mlx);
    hearth_model_destroy(m);
}

/* The forward keeps one reference per adapter the device holds a copy of, and drops it once it is
 * the last: after a step with the adapter, two references (the test's and the forward's); a sweep
 * leaves them while the test holds its own; destroying the forward drops its own. */
TEST(forward_holds_adapter_while_device_keeps_it) {
    if (hearth_cuda_device_count() <= 0) TEST_SKIP("no CUDA device");
    hearth_model *m = load_model("tests/golden/hf/llama");
    hearth_lora *a = m ? load_adapter("tests/golden/lora/llama-peft", m) : NULL;
    CHECK(m && a);
    side s = {0};
    if (a && side_open(&s, m, true)) {
        const int32_t V = hearth_model_hparams(m)->n_vocab;
        float *l = malloc(sizeof(float) * (size_t)4 * V);
        int32_t tok[4];
        prompt_of(5, V, tok, 4);
        CHECK(hearth_lora_sole_ref(a));
        CHECK_EQ(run(&s, tok, 4, 0, 0, a, l), HEARTH_OK);
        CHECK(!hearth_lora_sole_ref(a));
        hearth_fwd_lora_sweep(s.fwd);
        CHECK(!hearth_lora_sole_ref(a));
        CHECK_EQ(run(&s, tok, 4, 0, 1, NULL, l), HEARTH_OK); /* a step without it keeps it too */
        CHECK(!hearth_lora_sole_ref(a));
        hearth_fwd_destroy(s.fwd);
        s.fwd = NULL;
        CHECK(hearth_lora_sole_ref(a));
        free(l);
    }
    side_close(&s);
    hearth_lora_release(a);
    hearth_model_destroy(m);
}

enum { N_GEN_E = 12 };

typedef struct {
    int32_t tok[N_MIX][N_GEN_E], second[N_MIX][N_GEN_E];
    float   margin[N_MIX][N_GEN_E];
} e_run;

/* The three requests (peft, none, mlx) at once on an engine of device dev, greedy, with the top
 * two log-probabilities of each token. */
static void engine_run(hearth_model *m, hearth_device dev, const hearth_lora *const *ad, e_run *out) {
    hearth_engine_params ep = hearth_engine_params_default();
    ep.device = dev;
    ep.n_threads = 2;
    ep.n_ctx = N_CTX;
    ep.batch = N_MIX;
    ep.max_step = MAX_TOK;
    ep.numerics = REF_NX;
    ep.debug_checks = true;
    hearth_engine *e = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_engine_create(m, &ep, &e, &err), HEARTH_OK);
    if (!e) {
        fprintf(stderr, "  engine: %s\n", err.msg);
        return;
    }
    const int32_t V = hearth_model_hparams(m)->n_vocab;
    int32_t prompt[N_MIX][P_MIX];
    hearth_request *r[N_MIX] = {0};
    for (int k = 0; k < N_MIX; k++) { /* one prompt: the continuations differ by their adapters only */
        prompt_of(7, V, prompt[k], P_MIX);
        hearth_request_params rp = {.prompt = prompt[k], .n_prompt = P_MIX, .max_tokens = N_GEN_E,
                                    .sampling = hearth_sampler_params_default(), .ignore_eog = true,
                                    .logprobs = true, .top_logprobs = 2, .lora = ad[k], .lora_id = ad[k] ? 1 + k : 0};
        rp.sampling.temperature = 0;
        CHECK_EQ(hearth_engine_submit(e, &rp, &r[k], &err), HEARTH_OK);
    }
    for (int k = 0; k < N_MIX; k++) {
        int got = 0;
        hearth_event ev;
        while (r[k] && hearth_request_next(r[k], &ev, 120000) == HEARTH_OK && ev.kind == HEARTH_EV_TOKEN) {
            if (got < N_GEN_E && ev.has_logprobs && ev.lp.n_top >= 2) {
                out->tok[k][got] = ev.token;
                out->margin[k][got] = ev.lp.top_logprob[0] - ev.lp.top_logprob[1];
                out->second[k][got] = ev.lp.top_id[1];
            }
            got++;
        }
        CHECK_EQ(got, N_GEN_E);
        if (r[k]) hearth_request_release(r[k]);
    }
    hearth_engine_destroy(e);
}

TEST(cuda_engine_serves_adapters_as_cpu) {
    if (hearth_cuda_device_count() <= 0) TEST_SKIP("no CUDA device");
    hearth_model *m = load_model("tests/golden/hf/llama");
    hearth_lora *peft = m ? load_adapter("tests/golden/lora/llama-peft", m) : NULL;
    hearth_lora *mlx = m ? load_adapter("tests/golden/lora/llama-mlx", m) : NULL;
    CHECK(m && peft && mlx);
    static e_run ref, got;
    memset(&ref, 0, sizeof ref);
    memset(&got, 0, sizeof got);
    const hearth_lora *ad[N_MIX] = {peft, NULL, mlx};
    if (peft && mlx) {
        CHECK(hearth_kernels_select(HEARTH_ISA_REF));
        engine_run(m, HEARTH_DEVICE_CPU, ad, &ref);
        engine_run(m, HEARTH_DEVICE_CUDA, ad, &got);
    }
    int differing = 0;
    for (int k = 0; k < N_MIX; k++)
        for (int t = 0; t < N_GEN_E; t++) {
            if (got.tok[k][t] == ref.tok[k][t]) continue;
            const bool tie = ref.margin[k][t] < 0.5f && got.tok[k][t] == ref.second[k][t];
            fprintf(stderr, "  request %d step %d: token %d, CPU %d (margin %.4f nats)%s\n", k, t, got.tok[k][t],
                    ref.tok[k][t], (double)ref.margin[k][t], tie ? ": near tie, accepted" : "");
            differing += !tie;
            break;
        }
    CHECK_EQ(differing, 0);
    /* the same prompt: each adapter's continuation differs from the base model's */
    CHECK(memcmp(ref.tok[0], ref.tok[1], sizeof ref.tok[0]) != 0);
    CHECK(memcmp(ref.tok[2], ref.tok[1], sizeof ref.tok[0]) != 0);
    hearth_lora_release(peft);
    hearth_lora_release(mlx);
    hearth_model_destroy(m);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
