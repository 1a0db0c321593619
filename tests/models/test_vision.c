/*
 * test_vision.c - Gemma 3 vision (models/vision.h) against transformers: the tiny random
 * Gemma3ForConditionalGeneration in tests/golden/hf/gemma3-vision and its goldens from
 * tools/make_gemma3_vision_tiny.py (transformers is not needed here).
 *
 *   - resize: each test PNG (decoded by server/image_decode.c) resized to 64 x 64 equals, byte
 *     for byte, what Gemma3ImageProcessorPil (Pillow's bilinear) made of it; one image keeps
 *     its size (no pass runs), the other grows on both sides.
 *   - tower: preprocess + SigLIP + projector give get_image_features' rows within 1e-4 on the
 *     ref kernel set (f32 everywhere), and within 1e-3 on every other set this CPU runs (their
 *     GEMM, LayerNorm and attention sum in other orders; measured well under that).
 *   - logits: the text decoder with the image rows in place of the soft tokens and the
 *     image's tokens attending both ways, for a prompt with one image and one with two (the
 *     second resized), gives transformers' logits at every position within 1e-4 on the ref
 *     set (f32 KV cache), the same argmax everywhere, and its 16-token greedy continuation
 *     (decoded one token at a time on the cache); the prompt prefilled in two chunks (cut
 *     between the images) gives the same logits; a chunk that cuts an image is refused.
 *   - engine: the prompts through the engine (blocks of 8, prefill chunks of at most 24 tokens,
 *     so chunks are cut around the 16-token images and a cached prefix may end inside one)
 *     alone, then both at once in a batch of 2, then again from the prefix cache: every run
 *     gives the golden 16 greedy tokens; the repeat hits the cache past its images; the same
 *     token ids with another image's rows (and digest) hit nothing past the image's start.
 *   - probe / load: the text-only multimodal layout (gemma3-mm: a vision_config, no tower
 *     weights) is not a vision model; a text-only checkpoint is refused with a reason.
 */
#include "engine/engine.h"
#include "golden_json.h"
#include "kernels/kernels.h"
#include "model_harness.h"
#include "models/vision.h"
#include "server/image_decode.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define VDIR "tests/golden/hf/gemma3-vision"
#define VGOLD "tests/golden/hf/gemma3-vision"

static bool load_png(int i, hearth_image *im) {
    char path[256];
    snprintf(path, sizeof path, VDIR "/image%d.png", i);
    size_t n = 0;
    char *b = golden_slurp(path, &n);
    if (!b) return false;
    hearth_status st = hearth_image_decode((const uint8_t *)b, n, 0, im, NULL);
    free(b);
    return st == HEARTH_OK;
}

TEST(resize_matches_pillow) {
    size_t n = 0;
    char *want = golden_slurp(VGOLD ".resized.rgb", &n);
    CHECK(want != NULL && n == 2 * 64 * 64 * 3);
    if (!want || n != 2 * 64 * 64 * 3) {
        free(want);
        return;
    }
    uint8_t got[64 * 64 * 3];
    for (int i = 0; i < 2; i++) {
        hearth_image im = {0};
        CHECK(load_png(i, &im));
        CHECK_EQ(hearth_image_resize_bilinear(im.rgb, im.w, im.h, got, 64, 64), HEARTH_OK);
        int diff = 0;
        for (int k = 0; k < 64 * 64 * 3; k++) diff += got[k] != (uint8_t)want[i * 64 * 64 * 3 + k];
        CHECK_EQ(diff, 0);
        hearth_image_fini(&im);
    }
    CHECK_EQ(hearth_image_resize_bilinear(got, 0, 4, got, 2, 2), HEARTH_E_INVALID);
    free(want);
}

/* max |encode(image i) - golden| for both images on kernel set isa */
static double tower_diff(hearth_vision *v, hearth_isa isa) {
    CHECK(hearth_kernels_select(isa));
    const hearth_vision_info *in = hearth_vision_get_info(v);
    size_t n = 0, rows = (size_t)in->mm_tokens * (size_t)in->n_embd_out;
    char *want = golden_slurp(VGOLD ".embeds.bin", &n);
    CHECK(want != NULL && n == 2 * rows * sizeof(float));
    if (!want || n != 2 * rows * sizeof(float)) {
        free(want);
        return INFINITY;
    }
    float *px = malloc(3 * (size_t)in->image_size * in->image_size * sizeof(float));
    float *out = malloc(rows * sizeof(float));
    double d = 0;
    for (int i = 0; i < 2; i++) {
        hearth_image im = {0};
        CHECK(load_png(i, &im));
        CHECK_EQ(hearth_vision_preprocess(v, im.rgb, im.w, im.h, px), HEARTH_OK);
        CHECK_EQ(hearth_vision_encode(v, NULL, px, out), HEARTH_OK);
        for (size_t k = 0; k < rows; k++) d = fmax(d, fabs((double)out[k] - ((const float *)want)[i * rows + k]));
        hearth_image_fini(&im);
    }
    free(px), free(out), free(want);
    return d;
}

TEST(tower_matches_transformers) {
    hearth_vision *v = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_vision_load(VDIR, &v, &err), HEARTH_OK);
    if (!v) {
        fprintf(stderr, "  %s\n", err.msg);
        return;
    }
    const hearth_vision_info *in = hearth_vision_get_info(v);
    CHECK_EQ(in->mm_tokens, 16);
    CHECK_EQ(in->n_patches, 64);
    CHECK_EQ(in->n_embd_out, 32);
    hearth_isa was = hearth_kernels_isa();
    double d = tower_diff(v, HEARTH_ISA_REF);
    fprintf(stderr, "  ref: max |d| %.3g\n", d);
    CHECK(d <= 1e-4);
    for (int isa = HEARTH_ISA_SCALAR; isa < HEARTH_ISA_COUNT; isa++) {
        if (!hearth_isa_available((hearth_isa)isa)) continue;
        d = tower_diff(v, (hearth_isa)isa);
        fprintf(stderr, "  %s: max |d| %.3g\n", hearth_isa_name((hearth_isa)isa), d);
        CHECK(d <= 1e-3);
    }
    hearth_kernels_select(was);
    hearth_vision_free(v);
}

TEST(probe_and_refusals) {
    CHECK(hearth_vision_probe(VDIR));
    CHECK(!hearth_vision_probe("tests/golden/hf/gemma3-mm"));    /* a vision_config, no tower weights */
    CHECK(!hearth_vision_probe("tests/golden/hf/gemma3_text")); /* no vision_config */
    CHECK(!hearth_vision_probe("tests/golden/hf/no-such-dir"));
    hearth_vision *v = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_vision_load("tests/golden/hf/gemma3_text", &v, &err), HEARTH_E_UNSUPPORTED);
    CHECK(v == NULL);
    CHECK(strstr(err.msg, "vision_config") != NULL);
    memset(&err, 0, sizeof err);
    CHECK_EQ(hearth_vision_load("tests/golden/hf/gemma3-mm", &v, &err), HEARTH_E_FORMAT);
    CHECK(v == NULL);
    CHECK(err.msg[0] != 0); /* its vision_config's defaults do not fit: named in the message */
}

/* The rows of the images of prompt ip (json) in prompt order: embd[t] for every token t of
 * ids (NULL for text), pos_end[t]; rows owned by *store. */
static bool image_inputs(hearth_vision *v, const char *json, int ip, const int32_t *types, int n, const float **embd,
                         int32_t *pos_end, float **store) {
    const hearth_vision_info *in = hearth_vision_get_info(v);
    int n_img = 0;
    int32_t *which = golden_int_array(json, "images", ip, &n_img);
    size_t rows = (size_t)in->mm_tokens * (size_t)in->n_embd_out;
    *store = malloc((size_t)(n_img > 0 ? n_img : 1) * rows * sizeof(float));
    float *px = malloc(3 * (size_t)in->image_size * in->image_size * sizeof(float));
    bool ok = which && *store && px;
    for (int k = 0; ok && k < n_img; k++) {
        hearth_image im = {0};
        ok = load_png(which[k], &im) && hearth_vision_preprocess(v, im.rgb, im.w, im.h, px) == HEARTH_OK &&
             hearth_vision_encode(v, NULL, px, *store + (size_t)k * rows) == HEARTH_OK;
        hearth_image_fini(&im);
    }
    int k = -1, row = 0;
    for (int t = 0; ok && t < n; t++) {
        embd[t] = NULL;
        pos_end[t] = t;
        if (types[t] != 1) continue;
        if (t == 0 || types[t - 1] != 1) k++, row = 0;
        ok = k < n_img && row < in->mm_tokens;
        if (!ok) break;
        embd[t] = *store + (size_t)k * rows + (size_t)row++ * in->n_embd_out;
        int e = t;
        while (e + 1 < n && types[e + 1] == 1) e++;
        pos_end[t] = e;
    }
    free(which), free(px);
    return ok;
}

/* Prefill ids[from..to) of prompt (types, embd, pos_end) at their positions, logits of all. */
static hearth_status run_chunk(harness *h, const int32_t *ids, const float **embd, const int32_t *pos_end, int from,
                               int to, float *out) {
    for (int i = from; i < to; i++) {
        h->tok[i - from] = ids[i];
        h->pos[i - from] = i;
        h->seq[i - from] = 0;
        h->want[i - from] = 1;
    }
    hearth_batch b = {.n_tokens = to - from, .token = h->tok, .pos = h->pos, .seq = h->seq, .want_logits = h->want,
                      .embd = embd + from, .pos_end = pos_end + from};
    return hearth_forward(h->fwd, &b, hearth_kv_view_of(h->kv), out);
}

TEST(logits_match_transformers) {
    enum { MAX_TOK = 128 };
    char *json = golden_slurp(VGOLD ".json", NULL);
    size_t n_bin = 0;
    char *bin = golden_slurp(VGOLD ".logits.bin", &n_bin);
    hearth_vision *v = NULL;
    CHECK(json && bin);
    CHECK_EQ(hearth_vision_load(VDIR, &v, NULL), HEARTH_OK);
    hearth_isa was = hearth_kernels_isa();
    CHECK(hearth_kernels_select(HEARTH_ISA_REF));
    harness *h = json && bin && v ? harness_open(VDIR, MAX_TOK, 256, false, 2) : NULL;
    CHECK(h != NULL);
    int n_prompts = h ? golden_count(json, "token_type_ids") : 0;
    CHECK_EQ(n_prompts, 2);
    float *logits = h ? malloc((size_t)MAX_TOK * (size_t)h->n_vocab * sizeof(float)) : NULL;
    float *chunked = h ? malloc((size_t)MAX_TOK * (size_t)h->n_vocab * sizeof(float)) : NULL;
    size_t row = 0;
    for (int ip = 0; ip < n_prompts; ip++) {
        int n = 0, n_tt = 0, n_am = 0, n_gr = 0;
        int32_t *ids = golden_int_array(json, "ids", ip, &n);
        int32_t *tt = golden_int_array(json, "token_type_ids", ip, &n_tt);
        int32_t *am = golden_int_array(json, "argmax", ip, &n_am);
        int32_t *gr = golden_int_array(json, "greedy16", ip, &n_gr);
        const float *embd[MAX_TOK];
        int32_t pos_end[MAX_TOK];
        float *store = NULL;
        bool ok = ids && tt && am && gr && n == n_tt && n == n_am && n_gr == 16 && n + 16 <= MAX_TOK &&
                  (row + (size_t)n) * (size_t)h->n_vocab * sizeof(float) <= n_bin &&
                  image_inputs(v, json, ip, tt, n, embd, pos_end, &store);
        CHECK(ok);
        if (ok) {
            CHECK_EQ(run_chunk(h, ids, embd, pos_end, 0, n, logits), HEARTH_OK);
            double d = 0;
            int am_diff = 0;
            for (int t = 0; t < n; t++) {
                const float *ref = (const float *)bin + (row + (size_t)t) * (size_t)h->n_vocab;
                for (int32_t k = 0; k < h->n_vocab; k++)
                    d = fmax(d, fabs((double)logits[(size_t)t * h->n_vocab + k] - ref[k]));
                am_diff += argmax_f(logits + (size_t)t * h->n_vocab, h->n_vocab) != am[t];
            }
            fprintf(stderr, "  prompt %d (%d tokens): max |dlogit| %.3g, argmax differs at %d\n", ip, n, d, am_diff);
            CHECK(d <= 1e-4);
            CHECK_EQ(am_diff, 0);
            int32_t next = argmax_f(logits + (size_t)(n - 1) * h->n_vocab, h->n_vocab);
            for (int s = 0; s < 16; s++) {
                CHECK_EQ(next, gr[s]);
                if (next != gr[s] || s == 15) break;
                CHECK_EQ(harness_run(h, &next, 1, n + s, false, chunked), HEARTH_OK);
                next = argmax_f(chunked, h->n_vocab);
            }
            /* two chunks, cut just before the last image's <start_of_image> */
            int cut = n - 1;
            while (cut > 0 && tt[cut] != 1) cut--;
            while (cut > 0 && tt[cut - 1] == 1) cut--;
            cut -= 1;
            CHECK(cut > 0);
            CHECK_EQ(run_chunk(h, ids, embd, pos_end, 0, cut, chunked), HEARTH_OK);
            CHECK_EQ(run_chunk(h, ids, embd, pos_end, cut, n, chunked + (size_t)cut * h->n_vocab), HEARTH_OK);
            double dc = 0;
            for (size_t k = 0; k < (size_t)n * h->n_vocab; k++) dc = fmax(dc, fabs((double)chunked[k] - logits[k]));
            CHECK(dc <= 1e-5);
            /* a chunk that ends inside an image: its first tokens' keys are not all there */
            CHECK_EQ(run_chunk(h, ids, embd, pos_end, 0, cut + 4, chunked), HEARTH_E_INVALID);
        }
        row += (size_t)n;
        free(ids), free(tt), free(am), free(gr), free(store);
    }
    free(logits), free(chunked);
    harness_close(h);
    hearth_kernels_select(was);
    hearth_vision_free(v);
    free(json), free(bin);
}

typedef struct {
    int32_t           *ids, *gr;
    int                n;
    hearth_image_input im[2];
    int                n_im;
    float             *store;
} eng_prompt;

static bool eng_prompt_load(hearth_vision *v, const char *json, int ip, eng_prompt *ep) {
    enum { MAX_TOK = 128 };
    int n_tt = 0, n_gr = 0;
    memset(ep, 0, sizeof *ep);
    ep->ids = golden_int_array(json, "ids", ip, &ep->n);
    int32_t *tt = golden_int_array(json, "token_type_ids", ip, &n_tt);
    ep->gr = golden_int_array(json, "greedy16", ip, &n_gr);
    int n_which = 0;
    int32_t *which = golden_int_array(json, "images", ip, &n_which);
    const float *embd[MAX_TOK];
    int32_t pos_end[MAX_TOK];
    bool ok = ep->ids && tt && ep->gr && which && n_tt == ep->n && n_gr == 16 && ep->n <= MAX_TOK && n_which <= 2 &&
              image_inputs(v, json, ip, tt, ep->n, embd, pos_end, &ep->store);
    for (int t = 0; ok && t < ep->n; t++) {
        if (!embd[t] || (t > 0 && embd[t - 1])) continue;
        int k = ep->n_im++;
        ep->im[k] = (hearth_image_input){.pos = t, .n = pos_end[t] - t + 1, .width = 32, .rows = embd[t],
                                         .digest = 0x1000u + (uint64_t)which[k]};
    }
    free(tt), free(which);
    return ok && ep->n_im == n_which;
}

static void eng_prompt_free(eng_prompt *ep) { free(ep->ids), free(ep->gr), free(ep->store); }

static hearth_request *eng_submit(hearth_engine *e, const eng_prompt *ep) {
    hearth_request_params p = {.prompt = ep->ids, .n_prompt = (size_t)ep->n, .max_tokens = 16, .ignore_eog = true,
                               .images = ep->im, .n_images = ep->n_im};
    p.sampling = hearth_sampler_params_default();
    p.sampling.temperature = 0;
    hearth_request *r = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_engine_submit(e, &p, &r, &err), HEARTH_OK);
    if (!r) fprintf(stderr, "  submit: %s\n", err.msg);
    return r;
}

/* Read r to its end: the tokens (into toks[16]) and the prompt tokens it found cached. */
static int eng_collect(hearth_request *r, int32_t *toks, int32_t *n_cached) {
    int n = 0;
    for (;;) {
        hearth_event ev;
        if (!r || hearth_request_next(r, &ev, 120000) != HEARTH_OK) {
            CHECK(!"no event");
            break;
        }
        if (ev.kind == HEARTH_EV_TOKEN && n < 16) toks[n++] = ev.token;
        if (ev.kind == HEARTH_EV_DONE) {
            CHECK_EQ(ev.status, HEARTH_OK);
            if (ev.status) fprintf(stderr, "  %s\n", ev.msg);
            *n_cached = ev.n_cached;
            break;
        }
    }
    hearth_request_release(r);
    return n;
}

static void check_greedy(const eng_prompt *ep, const int32_t *toks, int n) {
    CHECK_EQ(n, 16);
    for (int i = 0; i < n && i < 16; i++) CHECK_EQ(toks[i], ep->gr[i]);
}

TEST(engine_images_batch_and_cache) {
    char *json = golden_slurp(VGOLD ".json", NULL);
    hearth_vision *v = NULL;
    hearth_model *m = NULL;
    hearth_isa was = hearth_kernels_isa();
    CHECK(hearth_kernels_select(HEARTH_ISA_REF));
    CHECK(json != NULL);
    CHECK_EQ(hearth_vision_load(VDIR, &v, NULL), HEARTH_OK);
    CHECK_EQ(hearth_model_load(VDIR, &m, NULL), HEARTH_OK);
    eng_prompt ep[2];
    bool ok = json && v && m && eng_prompt_load(v, json, 0, &ep[0]) && eng_prompt_load(v, json, 1, &ep[1]);
    CHECK(ok);
    hearth_engine_params pp = hearth_engine_params_default();
    pp.n_ctx = 128;
    pp.batch = 2;
    pp.max_step = 24;
    pp.block_size = 8;
    pp.memory_budget = (int64_t)1 << 30; /* a pool with room to keep finished prompts cached */
    pp.n_threads = 2;
    pp.debug_checks = true;
    hearth_engine *e = NULL;
    hearth_err err = {0};
    if (ok) CHECK_EQ(hearth_engine_create(m, &pp, &e, &err), HEARTH_OK);
    if (ok && e) {
        int32_t toks[2][16], cached[2];
        /* alone, one after the other (the second prompt's first block is the first's: a hit) */
        for (int i = 0; i < 2; i++) {
            int n = eng_collect(eng_submit(e, &ep[i]), toks[i], &cached[i]);
            check_greedy(&ep[i], toks[i], n);
        }
        CHECK_EQ(cached[0], 0);
        CHECK(cached[1] < ep[1].im[0].pos); /* text before the first image only */
        /* again, both at once: from the cache, past the images */
        hearth_request *r0 = eng_submit(e, &ep[0]), *r1 = eng_submit(e, &ep[1]);
        int n0 = eng_collect(r0, toks[0], &cached[0]), n1 = eng_collect(r1, toks[1], &cached[1]);
        check_greedy(&ep[0], toks[0], n0);
        check_greedy(&ep[1], toks[1], n1);
        fprintf(stderr, "  repeat: %d and %d prompt tokens from the cache\n", cached[0], cached[1]);
        CHECK(cached[0] >= ep[0].im[0].pos + ep[0].im[0].n);
        CHECK(cached[1] >= ep[1].im[1].pos + ep[1].im[1].n);
        /* the same ids with the other image: nothing cached from its start on */
        eng_prompt other = ep[0];
        other.im[0].digest = ep[1].im[0].digest;
        other.im[0].rows = ep[1].im[0].rows;
        int n = eng_collect(eng_submit(e, &other), toks[0], &cached[0]);
        CHECK_EQ(n, 16);
        CHECK(cached[0] <= other.im[0].pos);
        hearth_engine_destroy(e);
        /* cold, both at once on a fresh engine without a prefix cache */
        pp.prompt_cache = 0;
        e = NULL;
        CHECK_EQ(hearth_engine_create(m, &pp, &e, &err), HEARTH_OK);
        r0 = e ? eng_submit(e, &ep[0]) : NULL;
        r1 = e ? eng_submit(e, &ep[1]) : NULL;
        n0 = eng_collect(r0, toks[0], &cached[0]);
        n1 = eng_collect(r1, toks[1], &cached[1]);
        check_greedy(&ep[0], toks[0], n0);
        check_greedy(&ep[1], toks[1], n1);
        /* refusals: an image past the prompt, rows of the wrong width */
        eng_prompt bad = ep[0];
        bad.im[0].pos = ep[0].n - 4;
        hearth_request_params p = {.prompt = bad.ids, .n_prompt = (size_t)bad.n, .max_tokens = 4,
                                   .images = bad.im, .n_images = 1};
        p.sampling = hearth_sampler_params_default();
        hearth_request *r = NULL;
        CHECK_EQ(e ? hearth_engine_submit(e, &p, &r, &err) : HEARTH_E_INVALID, HEARTH_E_INVALID);
        bad.im[0] = ep[0].im[0];
        bad.im[0].width = 16;
        CHECK_EQ(e ? hearth_engine_submit(e, &p, &r, &err) : HEARTH_E_INVALID, HEARTH_E_INVALID);
        CHECK(strstr(err.msg, "floats") != NULL);
        hearth_engine_destroy(e);
    }
    if (ok) eng_prompt_free(&ep[0]), eng_prompt_free(&ep[1]);
    hearth_model_destroy(m);
    hearth_vision_free(v);
    hearth_kernels_select(was);
    free(json);
}

TEST(images_refused_off_gemma3) {
    /* a text model of another family takes no image rows */
    harness *h = harness_open("tests/golden/hf/llama", 8, 64, false, 1);
    CHECK(h != NULL);
    if (!h) return;
    float row[64] = {0}, *out = malloc((size_t)h->n_vocab * sizeof(float));
    const float *embd[2] = {row, NULL};
    int32_t ids[2] = {5, 6}, pe[2] = {1, 1};
    for (int i = 0; i < 2; i++) h->tok[i] = ids[i], h->pos[i] = i, h->seq[i] = 0;
    hearth_batch b = {.n_tokens = 2, .token = h->tok, .pos = h->pos, .seq = h->seq, .embd = embd, .pos_end = pe};
    CHECK_EQ(hearth_forward(h->fwd, &b, hearth_kv_view_of(h->kv), out), HEARTH_E_UNSUPPORTED);
    free(out);
    /* and its engine refuses a request with an image at submit, naming the family */
    hearth_engine_params pp = hearth_engine_params_default();
    pp.n_ctx = 64;
    pp.n_threads = 1;
    hearth_engine *e = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_engine_create(h->m, &pp, &e, &err), HEARTH_OK);
    hearth_image_input im = {.pos = 0, .n = 1, .width = (int32_t)hearth_model_hparams(h->m)->n_embd, .rows = row};
    hearth_request_params p = {.prompt = ids, .n_prompt = 2, .max_tokens = 2, .images = &im, .n_images = 1};
    p.sampling = hearth_sampler_params_default();
    hearth_request *r = NULL;
    CHECK_EQ(e ? hearth_engine_submit(e, &p, &r, &err) : HEARTH_OK, HEARTH_E_UNSUPPORTED);
    CHECK(strstr(err.msg, "Gemma 3") != NULL);
    hearth_engine_destroy(e);
    harness_close(h);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
