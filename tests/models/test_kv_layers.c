/*
 * test_kv_layers.c - a KV cache scheme per layer (`--kv-quant config`, engine/kv_config.h) on
 * the tiny llama with 64-wide heads (tests/golden/tiny/tiny-llama64.gguf, 2 layers):
 *
 *   each layer attends as its own scheme: a prompt runs through the forward over a pool whose
 *     layers hold different types (q8_0 / q4_0 / f16 in every order); for every layer the
 *     trace's query, key and value (after RoPE) are attended again here, outside the pool, by
 *     the backend's own ops with that layer's scheme alone (rotate as llama.cpp does around a
 *     quantized cache, store into a contiguous cache of the type, attend, rotate back): the
 *     output must equal the forward's bit for bit. A layer reading another layer's type, or
 *     rows at another layer's stride, changes it.
 *   the engine with a kv_config.json beside the model: a mixed file gives those per-layer
 *     types (in /stats' engine info), its bytes per token, and greedy tokens and logprobs equal
 *     to a direct forward over the same per-layer pool; a file naming 8 bits everywhere is
 *     --kv-quant 8 exactly (same types, tokens and logprob bits); no file is off exactly.
 *   refusals: bits 3, a layer past the model, and a quantized layer whose heads are not whole
 *     32-element blocks (tiny-qwen2's heads of 16) fail the create, naming the layer.
 */
#include "engine/engine.h"
#include "engine/kv_config.h"
#include "engine/kv_pool.h"
#include "models/forward.h"
#include "support/kv.h"
#include "test.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TINY "tests/golden/tiny/tiny-llama64.gguf"
enum { T = 24, NGEN = 8, MAXL = 32 };

static hearth_model *load(const char *path) {
    hearth_model *m = NULL;
    hearth_err err;
    CHECK_EQ(hearth_model_load(path, &m, &err), HEARTH_OK);
    return m;
}

/* --- each layer's attention against its uniform scheme ------------------------------------ */

typedef struct {
    int64_t q_w, k_w, v_w, o_w;
    float  *q[MAXL], *k[MAXL], *v[MAXL], *o[MAXL]; /* [T][width] per layer, from the trace */
} traces;

static void keep(float **dst, const float *x, int64_t n_rows, int64_t width) {
    free(*dst);
    *dst = malloc((size_t)(n_rows * width) * sizeof(float));
    if (*dst) memcpy(*dst, x, (size_t)(n_rows * width) * sizeof(float));
}

static void on_trace(void *user, const char *name, int32_t il, const char *op, const float *x, int64_t n_rows,
                     int64_t width) {
    traces *tr = user;
    if (il < 0 || il >= MAXL || n_rows != T) return;
    if (!strcmp(name, "Qcur") && !strcmp(op, "ROPE")) keep(&tr->q[il], x, n_rows, width);
    if (!strcmp(name, "Kcur") && !strcmp(op, "ROPE")) keep(&tr->k[il], x, n_rows, width);
    if (!strcmp(name, "Vcur")) keep(&tr->v[il], x, n_rows, width);
    if (!strcmp(name, "kqv_out")) keep(&tr->o[il], x, n_rows, width);
}

/* llama.cpp's rotation around a quantized cache (attn_rot_k / attn_rot_v, as models/blocks.c
 * applies it): keys and queries by the largest power of two >= 64 dividing the head, values by
 * 64; f16 caches are not rotated. */
static int32_t rot(hearth_kv_type t, int32_t hd, bool key) {
    if ((t != HEARTH_KV_Q8_0 && t != HEARTH_KV_Q4_0) || hd % 64) return 0;
    int32_t n = 64;
    while (key && hd % (2 * n) == 0) n *= 2;
    return n;
}

static const int32_t prompt[T] = {17, 923, 44, 3001, 5, 612, 77, 1800, 9, 250, 3333, 101,
                                  64, 2047, 12, 999, 400, 8, 1234, 56, 2900, 31, 700, 4000};

/* Layer il's attention recomputed with scheme s alone; true when it equals the forward's. */
static bool layer_matches(hearth_backend *be, const hearth_model *m, const traces *tr, int32_t il,
                          hearth_kv_scheme s) {
    const hearth_hparams *hp = hearth_model_hparams(m);
    hearth_kv *c = NULL;
    hearth_err err;
    if (hearth_kv_create_scheme(NULL, m, 1, T, s, &c, &err) != HEARTH_OK) return false;
    const hearth_kv_view *cv = hearth_kv_view_of(c);
    int32_t pos[T], seq[T];
    for (int t = 0; t < T; t++) pos[t] = t, seq[t] = 0;
    float *q = malloc(sizeof(float) * (size_t)(T * tr->q_w)), *k = malloc(sizeof(float) * (size_t)(T * tr->k_w)),
          *v = malloc(sizeof(float) * (size_t)(T * tr->v_w)), *o = calloc((size_t)(T * tr->o_w), sizeof(float));
    bool ok = q && k && v && o && tr->q[il] && tr->k[il] && tr->v[il] && tr->o[il];
    if (ok) {
        memcpy(q, tr->q[il], sizeof(float) * (size_t)(T * tr->q_w));
        memcpy(k, tr->k[il], sizeof(float) * (size_t)(T * tr->k_w));
        memcpy(v, tr->v[il], sizeof(float) * (size_t)(T * tr->v_w));
        int32_t rk = rot(s.k, hp->head_dim, true), rv = rot(s.v, hp->head_dim_v, false);
        if (rk) {
            hearth_op_hadamard(be, q, T * tr->q_w / rk, rk);
            hearth_op_hadamard(be, k, T * tr->k_w / rk, rk);
        }
        if (rv) hearth_op_hadamard(be, v, T * tr->v_w / rv, rv);
        hearth_op_kv_store(be, k, T, tr->k_w, seq, pos, cv->k[il], &cv->blocks, s.k);
        hearth_op_kv_store(be, v, T, tr->v_w, seq, pos, cv->v[il], &cv->blocks, s.v);
        hearth_attn_args a = {
            .n_tok = T, .n_head = hp->n_head, .n_head_kv = hp->n_head_kv, .head_dim = hp->head_dim,
            .head_dim_v = hp->head_dim_v, .q = q, .out = o, .pos = pos, .seq = seq, .k = cv->k[il], .v = cv->v[il],
            .blocks = cv->blocks, .k_type = s.k, .v_type = s.v, .scale = hp->attn_scale,
            .softcap = hp->attn_softcap, .max_len = T, .min_run = T,
        };
        hearth_op_attention(be, &a);
        if (rv) hearth_op_hadamard(be, o, T * tr->o_w / rv, rv);
        ok = !memcmp(o, tr->o[il], sizeof(float) * (size_t)(T * tr->o_w));
    }
    free(q);
    free(k);
    free(v);
    free(o);
    hearth_kv_destroy(c);
    return ok;
}

/* A pool of the per-layer scheme lk (NULL: uniform u) on the CPU. */
static hearth_kv_pool *pool_of(const hearth_model *m, const hearth_kv_scheme *lk, hearth_kv_scheme u) {
    hearth_kv_pool_params pp = {.block_size = 16, .n_seqs = 1, .max_seq_len = 64, .kv = u, .layer_kv = lk};
    pp.budget_bytes = hearth_kv_block_bytes_layers(m, false, u, lk, 16) * 8;
    hearth_kv_pool *pool = NULL;
    hearth_err err;
    CHECK_EQ(hearth_kv_pool_create(m, &pp, &pool, &err), HEARTH_OK);
    if (pool) CHECK(hearth_kv_pool_seq_reserve(pool, 0, 64));
    return pool;
}

static void check_layers(hearth_kv_type t0, hearth_kv_type t1) {
    hearth_model *m = load(TINY);
    if (!m) return;
    const hearth_hparams *hp = hearth_model_hparams(m);
    CHECK_EQ(hp->n_layer, 2);
    hearth_kv_scheme lk[2] = {hearth_kv_scheme_of(t0, t0), hearth_kv_scheme_of(t1, t1)};
    hearth_backend *be = hearth_backend_cpu_create(2, 64, 1024, 64, NULL);
    hearth_fwd *f = hearth_fwd_create(m, be, 64, NULL);
    hearth_kv_pool *pool = pool_of(m, lk, lk[0]);
    traces tr = {.q_w = (int64_t)hp->n_head * hp->head_dim, .k_w = (int64_t)hp->n_head_kv * hp->head_dim,
                 .v_w = (int64_t)hp->n_head_kv * hp->head_dim_v, .o_w = (int64_t)hp->n_head * hp->head_dim_v};
    float *logits = malloc(sizeof(float) * (size_t)hp->n_vocab);
    CHECK(be && f && pool && logits);
    if (be && f && pool && logits) {
        CHECK_EQ(hearth_kv_pool_view(pool)->layer_k_type[0], t0);
        CHECK_EQ(hearth_kv_pool_view(pool)->layer_v_type[1], t1);
        hearth_fwd_set_trace(f, on_trace, &tr);
        int32_t pos[T], seq[T];
        for (int t = 0; t < T; t++) pos[t] = t, seq[t] = 0;
        hearth_batch b = {.n_tokens = T, .token = prompt, .pos = pos, .seq = seq};
        CHECK_EQ(hearth_forward(f, &b, hearth_kv_pool_view(pool), logits), HEARTH_OK);
        for (int32_t il = 0; il < 2; il++) {
            bool same = layer_matches(be, m, &tr, il, lk[il]);
            if (!same) fprintf(stderr, "  layer %d (%s) differs from its scheme alone\n", il, hearth_kv_type_name(lk[il].k));
            CHECK(same);
            /* and not as the other layer's type: the check can tell the schemes apart */
            if (lk[il].k != lk[1 - il].k) CHECK(!layer_matches(be, m, &tr, il, lk[1 - il]));
        }
    }
    for (int i = 0; i < MAXL; i++) free(tr.q[i]), free(tr.k[i]), free(tr.v[i]), free(tr.o[i]);
    free(logits);
    hearth_kv_pool_destroy(pool);
    hearth_fwd_destroy(f);
    hearth_backend_destroy(be);
    hearth_model_destroy(m);
}

TEST(layers_q8_q4_attend_as_their_schemes) { check_layers(HEARTH_KV_Q8_0, HEARTH_KV_Q4_0); }
TEST(layers_q4_f16_attend_as_their_schemes) { check_layers(HEARTH_KV_Q4_0, HEARTH_KV_F16); }
TEST(layers_f16_q8_attend_as_their_schemes) { check_layers(HEARTH_KV_F16, HEARTH_KV_Q8_0); }

/* --- the engine with a kv_config.json ------------------------------------------------------ */

static char dir[64], model_link[128], cfg_path[160];

/* A folder with a link to the model and, when json is not NULL, its kv_config.json. */
static void set_up(const char *model, const char *json) {
    snprintf(dir, sizeof dir, "/tmp/hearth-kvlayers-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    char abs[PATH_MAX];
    CHECK(realpath(model, abs) != NULL);
    snprintf(model_link, sizeof model_link, "%s/model.gguf", dir);
    CHECK_EQ(symlink(abs, model_link), 0);
    snprintf(cfg_path, sizeof cfg_path, "%s/model.gguf.kv_config.json", dir);
    if (json) {
        FILE *fp = fopen(cfg_path, "w");
        CHECK(fp != NULL);
        if (fp) {
            fputs(json, fp);
            fclose(fp);
        }
    }
}

static void tear_down(void) {
    unlink(cfg_path);
    unlink(model_link);
    rmdir(dir);
}

static hearth_status make_engine(const hearth_model *m, hearth_kv_quant q, const char *path, hearth_engine **e,
                                 hearth_err *err) {
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_threads = 2;
    ep.n_ctx = 64;
    ep.batch = 1;
    ep.max_step = 64;
    ep.prompt_cache = 0;
    ep.kv_quant = q;
    ep.model_path = path;
    return hearth_engine_create(m, &ep, e, err);
}

/* Greedy tokens and their logprobs for the prompt. */
static void engine_run(hearth_engine *e, int32_t *toks, float *lps) {
    hearth_request_params rp = {.prompt = prompt, .n_prompt = T, .max_tokens = NGEN,
                                .sampling = hearth_sampler_params_default(), .ignore_eog = true};
    rp.sampling.temperature = 0;
    rp.logprobs = true;
    hearth_request *r = NULL;
    hearth_err err;
    CHECK_EQ(hearth_engine_submit(e, &rp, &r, &err), HEARTH_OK);
    if (!r) return;
    for (int n = 0;;) {
        hearth_event ev;
        if (hearth_request_next(r, &ev, 120000) != HEARTH_OK) {
            CHECK(!"timed out waiting for a token");
            break;
        }
        if (ev.kind == HEARTH_EV_DONE) break;
        if (n < NGEN) {
            toks[n] = ev.token;
            lps[n] = ev.has_logprobs ? ev.lp.logprob : NAN;
        }
        n++;
    }
    hearth_request_release(r);
}

static hearth_kv_scheme got_layers[MAXL]; /* the engine's per-layer types, copied while it lives */

static void run_scheme(const hearth_model *m, hearth_kv_quant q, const char *path, int32_t *toks, float *lps,
                       hearth_engine_info *in) {
    hearth_engine *e = NULL;
    hearth_err err;
    CHECK_EQ(make_engine(m, q, path, &e, &err), HEARTH_OK);
    if (!e) return;
    if (in) {
        hearth_engine_info_get(e, in);
        CHECK(in->n_kv_layers <= MAXL);
        for (int32_t il = 0; in->kv_layers && il < in->n_kv_layers && il < MAXL; il++) got_layers[il] = in->kv_layers[il];
        in->kv_layers = in->kv_layers ? got_layers : NULL; /* the engine's own goes with it */
    }
    engine_run(e, toks, lps);
    hearth_engine_destroy(e);
}

TEST(config_without_file_is_off) {
    hearth_model *m = load(TINY);
    if (!m) return;
    set_up(TINY, NULL);
    int32_t a[NGEN] = {0}, b[NGEN] = {1};
    float la[NGEN], lb[NGEN];
    hearth_engine_info in;
    run_scheme(m, (hearth_kv_quant){.mode = HEARTH_KVQ_CONFIG}, model_link, a, la, &in);
    CHECK_EQ(in.kv_quant.mode, HEARTH_KVQ_OFF);
    CHECK_EQ(in.kv.k, HEARTH_KV_F16);
    CHECK(in.kv_layers == NULL);
    run_scheme(m, (hearth_kv_quant){.mode = HEARTH_KVQ_OFF}, model_link, b, lb, NULL);
    CHECK(!memcmp(a, b, sizeof a));
    CHECK(!memcmp(la, lb, sizeof la));
    tear_down();
    hearth_model_destroy(m);
}

TEST(config_of_8_everywhere_is_kv8) {
    hearth_model *m = load(TINY);
    if (!m) return;
    set_up(TINY, "{\"bits\": 8, \"group_size\": 64}");
    int32_t a[NGEN] = {0}, b[NGEN] = {1};
    float la[NGEN], lb[NGEN];
    hearth_engine_info in;
    run_scheme(m, (hearth_kv_quant){.mode = HEARTH_KVQ_CONFIG}, model_link, a, la, &in);
    CHECK_EQ(in.kv_quant.mode, HEARTH_KVQ_CONFIG);
    CHECK_EQ(in.kv.k, HEARTH_KV_Q8_0);
    CHECK_EQ(in.kv.v, HEARTH_KV_Q8_0);
    CHECK(in.kv_layers == NULL); /* uniform: the plain scheme */
    run_scheme(m, (hearth_kv_quant){.mode = HEARTH_KVQ_8}, model_link, b, lb, NULL);
    CHECK(!memcmp(a, b, sizeof a));
    CHECK(!memcmp(la, lb, sizeof la));
    tear_down();
    hearth_model_destroy(m);
}

/* Greedy decoding through the forward over a per-layer pool: tokens and their logprobs. */
static void direct_run(const hearth_model *m, const hearth_kv_scheme *lk, int32_t *toks, float *lps) {
    const hearth_hparams *hp = hearth_model_hparams(m);
    hearth_backend *be = hearth_backend_cpu_create(2, 64, 1024, 64, NULL);
    hearth_fwd *f = hearth_fwd_create(m, be, 64, NULL);
    hearth_kv_pool *pool = pool_of(m, lk, lk[0]);
    float *logits = malloc(sizeof(float) * (size_t)hp->n_vocab);
    CHECK(be && f && pool && logits);
    int32_t pos[T], seq[T], tok[T];
    for (int t = 0; t < T; t++) pos[t] = t, seq[t] = 0, tok[t] = prompt[t];
    hearth_batch b = {.n_tokens = T, .token = tok, .pos = pos, .seq = seq};
    for (int n = 0; be && f && pool && logits && n < NGEN; n++) {
        CHECK_EQ(hearth_forward(f, &b, hearth_kv_pool_view(pool), logits), HEARTH_OK);
        int32_t best = 0;
        double mx = logits[0], sum = 0;
        for (int32_t i = 1; i < hp->n_vocab; i++)
            if (logits[i] > logits[best]) best = i, mx = logits[i];
        for (int32_t i = 0; i < hp->n_vocab; i++) sum += exp((double)logits[i] - mx);
        toks[n] = best;
        lps[n] = (float)-log(sum);
        pos[0] = T + n;
        tok[0] = best;
        b.n_tokens = 1;
    }
    free(logits);
    hearth_kv_pool_destroy(pool);
    hearth_fwd_destroy(f);
    hearth_backend_destroy(be);
}

TEST(mixed_config_runs_per_layer) {
    hearth_model *m = load(TINY);
    if (!m) return;
    set_up(TINY, "[{\"layer_idx\": 0, \"bits\": 8, \"group_size\": 64}, {\"layer_idx\": 1, \"bits\": 4, "
                 "\"group_size\": 64}]");
    int32_t a[NGEN] = {0}, b[NGEN] = {1};
    float la[NGEN], lb[NGEN];
    hearth_engine_info in;
    run_scheme(m, (hearth_kv_quant){.mode = HEARTH_KVQ_CONFIG}, model_link, a, la, &in);
    CHECK_EQ(in.kv_quant.mode, HEARTH_KVQ_CONFIG);
    CHECK_EQ(in.n_kv_layers, 2);
    hearth_kv_scheme lk[2] = {hearth_kv_scheme_of(HEARTH_KV_Q8_0, HEARTH_KV_Q8_0),
                              hearth_kv_scheme_of(HEARTH_KV_Q4_0, HEARTH_KV_Q4_0)};
    CHECK(in.kv_layers != NULL);
    for (int il = 0; in.kv_layers && il < 2; il++) {
        CHECK_EQ(in.kv_layers[il].k, lk[il].k);
        CHECK_EQ(in.kv_layers[il].v, lk[il].v);
    }
    CHECK_EQ(in.kv_bytes_per_token, (int64_t)hearth_kv_bytes_per_token_layers(m, lk[0], lk));
    CHECK(in.kv_bytes_per_token < (int64_t)hearth_kv_bytes_per_token(m, lk[0]));
    direct_run(m, lk, b, lb);
    for (int i = 0; i < NGEN; i++) {
        if (a[i] != b[i] || la[i] != lb[i])
            fprintf(stderr, "  step %d: engine %d (%.7g), forward %d (%.7g)\n", i, a[i], la[i], b[i], lb[i]);
        CHECK_EQ(a[i], b[i]);
        CHECK(la[i] == lb[i]);
    }
    tear_down();
    hearth_model_destroy(m);
}

static void expect_refused(const char *model, const char *json, const char *needle) {
    hearth_model *m = load(model);
    if (!m) return;
    set_up(model, json);
    hearth_engine *e = NULL;
    hearth_err err = {0};
    CHECK(make_engine(m, (hearth_kv_quant){.mode = HEARTH_KVQ_CONFIG}, model_link, &e, &err) != HEARTH_OK);
    CHECK(e == NULL);
    if (!strstr(err.msg, needle)) fprintf(stderr, "  message \"%s\" lacks \"%s\"\n", err.msg, needle);
    CHECK(strstr(err.msg, needle) != NULL);
    CHECK(strstr(err.msg, "kv_config.json") != NULL); /* names the file */
    hearth_engine_destroy(e);
    tear_down();
    hearth_model_destroy(m);
}

TEST(config_refusals_name_the_layer) {
    expect_refused(TINY, "[{\"layer_idx\": 1, \"bits\": 3}]", "layer 1: bits 3 is not supported");
    expect_refused(TINY, "{\"layers\": {\"2\": 8}}", "layer 2 does not exist (the model has 2 layers)");
    expect_refused("tests/golden/tiny/tiny-qwen2.gguf", "{\"layers\": {\"1\": 8}}",
                   "layer 1 is q8_0, but its heads of 16 elements");
}

/* The bits list of a kv_config.json for the types of lk [n] (q8_0 8, q4_0 4, f16 16). */
static void bits_json(const hearth_kv_scheme *lk, int32_t n, char *out, size_t cap) {
    size_t used = 0;
    for (int32_t il = 0; il < n && used < cap; il++) {
        int b = lk[il].k == HEARTH_KV_Q8_0 ? 8 : lk[il].k == HEARTH_KV_Q4_0 ? 4 : 16;
        used += (size_t)snprintf(out + used, cap - used, "%s%d%s", il ? ", " : "[", b, il == n - 1 ? "]" : "");
    }
}

/* Gemma 3 (1 full and 5 sliding groups of 3 layers): full layers q8_0, the sliding ones five f16,
 * five q8_0, five q4_0 (in layer order). The pool widens what its places force (the q4_0 layers
 * to q8_0, one full layer to f16: hearth_kv_layers_widen), the engine reports those types, its
 * block costs less than f16's, and it decodes exactly as the engine given the widened types in
 * the file. */
TEST(gemma3_mixed_config_widens_to_its_places) {
    const char *path = getenv("HEARTH_GEMMA3_GGUF");
    if (!path) TEST_SKIP("HEARTH_GEMMA3_GGUF not set");
    if (getenv("HEARTH_TEST_SANITIZED")) TEST_SKIP("real models run in the normal build");
    hearth_model *m = load(path);
    CHECK(m != NULL);
    if (!m) return;
    const hearth_hparams *hp = hearth_model_hparams(m);
    CHECK(hp->n_layer <= MAXL);
    hearth_kv_scheme asked[MAXL], wide[MAXL];
    for (int32_t il = 0, k = 0; il < hp->n_layer && il < MAXL; il++) {
        hearth_kv_type t = HEARTH_KV_Q8_0;
        if (hearth_hparams_is_swa(hp, il)) t = k < 5 ? HEARTH_KV_F16 : k < 10 ? HEARTH_KV_Q8_0 : HEARTH_KV_Q4_0, k++;
        asked[il] = wide[il] = hearth_kv_scheme_of(t, t);
    }
    CHECK_EQ(hearth_kv_layers_widen(m, false, wide), 6);
    char json[512];
    bits_json(asked, hp->n_layer, json, sizeof json);
    set_up(path, json);
    int32_t a[NGEN] = {0}, b[NGEN] = {1}, c[NGEN] = {2};
    float la[NGEN], lb[NGEN], lc[NGEN];
    hearth_engine_info in_a, in_b, in_f16;
    run_scheme(m, (hearth_kv_quant){.mode = HEARTH_KVQ_CONFIG}, model_link, a, la, &in_a);
    CHECK_EQ(in_a.n_kv_layers, hp->n_layer);
    for (int32_t il = 0; in_a.kv_layers && il < hp->n_layer; il++) {
        CHECK_EQ(in_a.kv_layers[il].k, wide[il].k);
        CHECK_EQ(in_a.kv_layers[il].v, wide[il].v);
    }
    tear_down();
    bits_json(wide, hp->n_layer, json, sizeof json);
    set_up(path, json);
    run_scheme(m, (hearth_kv_quant){.mode = HEARTH_KVQ_CONFIG}, model_link, b, lb, &in_b);
    run_scheme(m, (hearth_kv_quant){.mode = HEARTH_KVQ_OFF}, model_link, c, lc, &in_f16);
    tear_down();
    CHECK(!memcmp(a, b, sizeof a));
    CHECK(!memcmp(la, lb, sizeof la));
    CHECK_EQ(in_a.block_bytes, in_b.block_bytes);
    CHECK(in_a.block_bytes < in_f16.block_bytes);
    CHECK_EQ(in_a.block_bytes, (int64_t)hearth_kv_block_bytes_layers(m, false, wide[0], wide, in_a.block_size));
    hearth_model_destroy(m);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
