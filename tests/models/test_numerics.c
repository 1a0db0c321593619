/*
 * test_numerics.c - the numerics value (backend/numerics.h) and its A/B switches.
 *
 * The names parse and print; the value reaches the backend and the forward as given and the
 * engine reports it; l2 is refused with its reason; the ref tier keeps an f32 KV cache. The
 * switches select slower paths of the same bits: a model run with every switch on and with
 * each (and all) off gives identical logits, bit for bit, over a mixed step (a prompt of one
 * sequence next to a decode of another: the CPU's multi-query attention kernels both) and
 * decode steps (on CUDA: captured and replayed step graphs, and gate/up fused with the GLU in
 * the persistent layout). Runs on the CPU always, on CUDA when a GPU is there. Models: the
 * committed tiny qwen2 and, when HEARTH_SMOLLM2_GGUF names it, the starter model; over q8_0
 * and q4_0 caches (and on the CPU turbo k8v3 and k4v3) the committed tiny llama with 64-wide
 * heads.
 */
#include "test.h"

#include "backend/backend.h"
#include "backend/numerics.h"
#include "engine/engine.h"
#include "support/kv.h"
#include "model/model.h"
#include "models/forward.h"

#include <stdint.h>

#define TINY "tests/golden/tiny/tiny-qwen2.gguf"

TEST(names_parse_and_print) {
    hearth_numerics_tier t = HEARTH_NUMERICS_AUTO;
    CHECK(hearth_numerics_tier_parse("l1", &t) && t == HEARTH_NUMERICS_L1);
    CHECK(hearth_numerics_tier_parse("L2", &t) && t == HEARTH_NUMERICS_L2);
    CHECK(hearth_numerics_tier_parse("ref", &t) && t == HEARTH_NUMERICS_REF);
    CHECK(!hearth_numerics_tier_parse("l3", &t));
    CHECK(!hearth_numerics_tier_parse("", &t));
    CHECK_STR(hearth_numerics_tier_name(HEARTH_NUMERICS_L2), "l2");
    bool on = false;
    CHECK(hearth_switch_parse("on", &on) && on);
    CHECK(hearth_switch_parse("off", &on) && !on);
    CHECK(hearth_switch_parse("true", &on) && on);
    CHECK(hearth_switch_parse("0", &on) && !on);
    CHECK(!hearth_switch_parse("maybe", &on));
    CHECK(!hearth_switch_parse("ON ", &on));
    hearth_numerics nx = {.tier = HEARTH_NUMERICS_L1, .no_fused_sdpa = true};
    char buf[128];
    hearth_numerics_describe(&nx, buf, sizeof buf);
    CHECK_STR(buf, "l1, compiled-decode on, fused-sdpa off, compiled-activations on");
    /* AUTO resolves to a tier; an explicit one stays */
    CHECK(hearth_numerics_resolve((hearth_numerics){0}).tier != HEARTH_NUMERICS_AUTO);
    CHECK(hearth_numerics_resolve(nx).tier == HEARTH_NUMERICS_L1 && hearth_numerics_resolve(nx).no_fused_sdpa);
}

typedef struct {
    hearth_backend *be;
    hearth_fwd     *fwd;
    hearth_kv      *kv;
} side;

enum { MAXT = 24, CTX = 64, NSEQ = 2, PROMPT = 19, DECODE = 6 };

/* the cache of the runs: f16, or a quantized scheme (switches_same_bits_*_kv_quant) */
static hearth_kv_scheme run_kv = {HEARTH_KV_F16, HEARTH_KV_F16};

static bool side_open(side *s, const hearth_model *m, bool cuda, const hearth_numerics *nx) {
    hearth_err err = {0};
    const hearth_hparams *hp = hearth_model_hparams(m);
    int64_t width = hp->n_ff > hp->n_embd ? hp->n_ff : hp->n_embd;
    if ((int64_t)hp->n_head * hp->head_dim_v > width) width = (int64_t)hp->n_head * hp->head_dim_v;
    *s = (side){0};
    s->be = cuda ? hearth_backend_cuda_create(0, MAXT, nx, &err) : hearth_backend_cpu_create(2, MAXT, width, CTX, nx);
    if (!s->be) return false;
    s->fwd = hearth_fwd_create(m, s->be, MAXT, nx);
    hearth_kv_create_scheme(cuda ? s->be : NULL, m, NSEQ, CTX, run_kv, &s->kv, &err);
    return s->fwd && s->kv;
}

static void side_close(side *s) {
    hearth_kv_destroy(s->kv);
    hearth_fwd_destroy(s->fwd);
    hearth_backend_destroy(s->be);
}

/* The logits of a fixed script: one mixed step (sequence 0's prompt and sequence 1's first
 * token, logits everywhere), DECODE steps of both sequences, then DECODE steps of sequence 0
 * alone (the same shape again and again: a device backend captures and replays it). The ids
 * are fixed, not sampled, so every run sees the same inputs. Returns the number of floats. */
static int64_t run_script(side *s, int32_t V, float *out) {
    int32_t tok[MAXT], pos[MAXT], seq[MAXT];
    int8_t want[MAXT];
    int64_t n_out = 0;
    uint32_t st = 77;
    int32_t next_pos[NSEQ] = {0};
    for (int step = 0; step < 1 + 2 * DECODE; step++) {
        int32_t n = 0;
        int32_t per[NSEQ] = {step == 0 ? PROMPT : 1, step <= DECODE ? 1 : 0};
        for (int32_t q = 0; q < NSEQ; q++)
            for (int32_t i = 0; i < per[q]; i++) {
                st = st * 1664525u + 1013904223u;
                tok[n] = (int32_t)((st >> 8) % (uint32_t)V);
                pos[n] = next_pos[q]++;
                seq[n] = q;
                want[n++] = 1;
            }
        hearth_batch b = {.n_tokens = n, .token = tok, .pos = pos, .seq = seq, .want_logits = want};
        if (hearth_forward(s->fwd, &b, hearth_kv_view_of(s->kv), out + n_out * V) != HEARTH_OK) return -1;
        n_out += n;
    }
    return n_out * V;
}

static int64_t differing(const float *a, const float *b, int64_t n) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return bad;
}

/* every switch on, then each off, then all off: the same bits */
static void check_switches(const char *path, bool cuda, bool ref_differs) {
    hearth_model *m = NULL;
    hearth_err err = {0};
    if (hearth_model_load(path, &m, &err)) {
        fprintf(stderr, "  cannot load %s: %s\n", path, err.msg);
        CHECK(false);
        return;
    }
    int32_t V = hearth_model_hparams(m)->n_vocab;
    size_t cap = (size_t)(PROMPT + 3 * DECODE + 2) * (size_t)V;
    float *want = malloc(cap * sizeof(float)), *got = malloc(cap * sizeof(float));
    const hearth_numerics cases[] = {
        {.tier = HEARTH_NUMERICS_L1},
        {.tier = HEARTH_NUMERICS_L1, .no_compiled_decode = true},
        {.tier = HEARTH_NUMERICS_L1, .no_fused_sdpa = true},
        {.tier = HEARTH_NUMERICS_L1, .no_compiled_activations = true},
        {.tier = HEARTH_NUMERICS_L1, .no_compiled_decode = true, .no_fused_sdpa = true, .no_compiled_activations = true},
    };
    int64_t n_want = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        side s;
        if (!side_open(&s, m, cuda, &cases[c])) {
            side_close(&s);
            CHECK(!cuda && false); /* the CPU always opens; a GPU that opened once opens again */
            break;
        }
        /* the value reached the backend and the forward as given */
        hearth_numerics bn = hearth_backend_numerics(s.be), fn = hearth_fwd_numerics(s.fwd);
        CHECK(bn.tier == cases[c].tier && fn.tier == cases[c].tier);
        CHECK(bn.no_compiled_decode == cases[c].no_compiled_decode && bn.no_fused_sdpa == cases[c].no_fused_sdpa &&
              bn.no_compiled_activations == cases[c].no_compiled_activations);
        int64_t n = run_script(&s, V, c == 0 ? want : got);
        side_close(&s);
        CHECK(n > 0);
        if (c == 0) {
            n_want = n;
            continue;
        }
        CHECK_EQ(n, n_want);
        int64_t bad = n == n_want ? differing(want, got, n) : -1;
        if (bad) fprintf(stderr, "  %s on %s, case %zu: %lld of %lld logits differ\n", path, cuda ? "cuda" : "cpu", c,
                         (long long)bad, (long long)n);
        CHECK_EQ(bad, 0);
    }
    /* the comparison can fail: another tier (another RoPE recipe; the tiny model's angles come
     * out the same both ways) gives other bits */
    const hearth_numerics ref = {.tier = HEARTH_NUMERICS_REF};
    side s = {0};
    if (ref_differs && n_want > 0 && side_open(&s, m, cuda, &ref)) {
        int64_t n = run_script(&s, V, got);
        CHECK(n == n_want && differing(want, got, n) > 0);
    }
    side_close(&s);
    free(want);
    free(got);
    hearth_model_destroy(m);
}

TEST(switches_same_bits_cpu_tiny) { check_switches(TINY, false, false); }

TEST(switches_same_bits_cpu_smollm2) {
    const char *p = getenv("HEARTH_SMOLLM2_GGUF");
    if (!p || !*p) TEST_SKIP("HEARTH_SMOLLM2_GGUF not set");
    check_switches(p, false, true);
}

static bool have_gpu(void) { return hearth_cuda_device_count() > 0; }

TEST(switches_same_bits_cuda) {
    if (!have_gpu()) TEST_SKIP("no CUDA device");
    setenv("HEARTH_CUDA_MV", "persist", 1); /* the layout the fused gate/up/GLU runs in */
    check_switches(TINY, true, false);
    const char *p = getenv("HEARTH_SMOLLM2_GGUF");
    if (p && *p) check_switches(p, true, true);
    unsetenv("HEARTH_CUDA_MV");
}

/* the same over q8_0 and q4_0 caches (the tiny llama's heads of 64 are whole blocks): on CUDA
 * the quantized store and attention kernels under captured and replayed step graphs, and one
 * query head per block against the group */
#define TINY64 "tests/golden/tiny/tiny-llama64.gguf"
static void check_switches_kv_quant(bool cuda) {
    const hearth_kv_type types[2] = {HEARTH_KV_Q8_0, HEARTH_KV_Q4_0};
    for (int i = 0; i < 2; i++) {
        run_kv = hearth_kv_scheme_of(types[i], types[i]);
        check_switches(TINY64, cuda, false);
    }
    /* turbo: keys and values of other widths (on CUDA too: the rotation in the attention kernel
     * and the store's are per (token, head), so graphs and one head per block keep the bits) */
    for (int i = 0; i < 2; i++) {
        run_kv = i ? hearth_kv_scheme_of(HEARTH_KV_T4, HEARTH_KV_T3) : hearth_kv_scheme_of(HEARTH_KV_T8, HEARTH_KV_T3);
        check_switches(TINY64, cuda, false);
    }
    run_kv = HEARTH_KV_SCHEME_F16;
}
TEST(switches_same_bits_cpu_kv_quant) { check_switches_kv_quant(false); }
TEST(switches_same_bits_cuda_kv_quant) {
    if (!have_gpu()) TEST_SKIP("no CUDA device");
    check_switches_kv_quant(true);
}

TEST(engine_takes_and_reports_numerics) {
    hearth_model *m = NULL;
    hearth_err err = {0};
    CHECK(hearth_model_load(TINY, &m, &err) == HEARTH_OK);
    if (!m) return;
    hearth_engine_params p = hearth_engine_params_default();
    p.n_ctx = 64;
    p.n_threads = 1;
    /* l2: the 8-bit cache, which needs heads of whole 32-element blocks (the tiny model's are
     * 16: refused, saying why); with another scheme refused too */
    p.numerics.tier = HEARTH_NUMERICS_L2;
    hearth_engine *e = NULL;
    CHECK(hearth_engine_create(m, &p, &e, &err) == HEARTH_E_UNSUPPORTED);
    CHECK(e == NULL);
    CHECK(strstr(err.msg, "multiple of 32") != NULL);
    const char *smol = getenv("HEARTH_SMOLLM2_GGUF");
    hearth_model *m2 = NULL;
    if (smol && *smol && hearth_model_load(smol, &m2, &err) == HEARTH_OK) {
        CHECK(hearth_engine_create(m2, &p, &e, &err) == HEARTH_OK);
        if (e) {
            hearth_engine_info in;
            hearth_engine_info_get(e, &in);
            CHECK(in.numerics.tier == HEARTH_NUMERICS_L2);
            CHECK(in.kv.k == HEARTH_KV_Q8_0 && in.kv.v == HEARTH_KV_Q8_0 && in.kv_quant.mode == HEARTH_KVQ_8);
            hearth_engine_destroy(e);
        }
        hearth_model_destroy(m2);
    }
    p.kv_quant.mode = HEARTH_KVQ_4;
    CHECK(hearth_engine_create(m, &p, &e, &err) == HEARTH_E_INVALID);
    CHECK(e == NULL);
    CHECK(strstr(err.msg, "--kv-quant 4") != NULL);
    p.kv_quant.mode = HEARTH_KVQ_OFF;
    /* turbo: the tiny model's heads of 16 are not whole 64-element rotations; the tiny llama's
     * 64 are, and the engine reports the types */
    p.numerics = (hearth_numerics){.tier = HEARTH_NUMERICS_L1};
    p.kv_quant = (hearth_kv_quant){.mode = HEARTH_KVQ_TURBO, .k_bits = 4, .v_bits = 3};
    CHECK(hearth_engine_create(m, &p, &e, &err) == HEARTH_E_UNSUPPORTED);
    CHECK(e == NULL);
    CHECK(strstr(err.msg, "multiple of 64") != NULL);
    hearth_model *m64 = NULL;
    CHECK(hearth_model_load(TINY64, &m64, &err) == HEARTH_OK);
    if (m64) {
        p.device = HEARTH_DEVICE_CPU;
        CHECK(hearth_engine_create(m64, &p, &e, &err) == HEARTH_OK);
        if (e) {
            hearth_engine_info in;
            hearth_engine_info_get(e, &in);
            CHECK(in.kv.k == HEARTH_KV_T4 && in.kv.v == HEARTH_KV_T3 && in.kv_quant.mode == HEARTH_KVQ_TURBO);
            CHECK_STR(hearth_kv_type_name(in.kv.k), "turbo4");
            hearth_engine_destroy(e);
        }
        p.device = HEARTH_DEVICE_AUTO;
        hearth_model_destroy(m64);
    }
    p.kv_quant = (hearth_kv_quant){.mode = HEARTH_KVQ_OFF};
    /* l1 with switches off: reported as given, an f16 cache */
    p.numerics = (hearth_numerics){.tier = HEARTH_NUMERICS_L1, .no_compiled_decode = true, .no_fused_sdpa = true};
    CHECK(hearth_engine_create(m, &p, &e, &err) == HEARTH_OK);
    if (e) {
        hearth_engine_info in;
        hearth_engine_info_get(e, &in);
        CHECK(in.numerics.tier == HEARTH_NUMERICS_L1);
        CHECK(in.numerics.no_compiled_decode && in.numerics.no_fused_sdpa && !in.numerics.no_compiled_activations);
        CHECK(in.kv.k == HEARTH_KV_F16);
        CHECK(!in.force_wire);
        hearth_engine_destroy(e);
    }
    /* ref: an f32 cache */
    p.numerics = (hearth_numerics){.tier = HEARTH_NUMERICS_REF};
    CHECK(hearth_engine_create(m, &p, &e, &err) == HEARTH_OK);
    if (e) {
        hearth_engine_info in;
        hearth_engine_info_get(e, &in);
        CHECK(in.numerics.tier == HEARTH_NUMERICS_REF);
        CHECK(in.kv.k == HEARTH_KV_F32);
        hearth_engine_destroy(e);
    }
    /* force_wire: the weights locked, or a failure that names the limit */
    p.numerics = (hearth_numerics){0};
    p.force_wire = true;
    hearth_status st = hearth_engine_create(m, &p, &e, &err);
    if (st == HEARTH_OK) {
        hearth_engine_info in;
        hearth_engine_info_get(e, &in);
        CHECK(in.force_wire);
        CHECK(in.numerics.tier != HEARTH_NUMERICS_AUTO);
        hearth_engine_destroy(e);
    } else {
        CHECK(st == HEARTH_E_LIMIT);
        CHECK(strstr(err.msg, "RLIMIT_MEMLOCK") != NULL);
    }
    hearth_model_destroy(m);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
