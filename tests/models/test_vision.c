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
 *   - probe / load: the text-only multimodal layout (gemma3-mm: a vision_config, no tower
 *     weights) is not a vision model; a text-only checkpoint is refused with a reason.
 */
#include "golden_json.h"
#include "kernels/kernels.h"
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

int main(int argc, char **argv) { return test_main(argc, argv); }
