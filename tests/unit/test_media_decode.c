/* test_media_decode.c - the image and audio decoders (server/image_decode.h,
 * server/audio_decode.h, server/resample.h) against tools/media_golden.py's goldens: Pillow's
 * convert("RGB") pixels of PNG / JPEG / WebP files, and soundfile + scipy.signal.resample_poly's
 * 16 kHz mono signal of WAV (PCM 16/24/32, float), FLAC and MP3 files, within each case's
 * tolerance (index.json). Also what must be refused: the pixel cap before allocation, truncated
 * and corrupt files, GIF, audio over the length cap, and bytes that are neither. */
#include "golden_json.h"
#include "server/audio_decode.h"
#include "server/image_decode.h"
#include "server/resample.h"
#include "test.h"

#include <cJSON.h>
#include <dirent.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN_DIR "tests/golden/media/"

static unsigned char *load(const char *name, size_t *n) {
    char path[256];
    snprintf(path, sizeof path, GOLDEN_DIR "%s", name);
    return (unsigned char *)golden_slurp(path, n);
}

static cJSON *index_json(void) {
    size_t n = 0;
    char  *t = (char *)load("index.json", &n);
    cJSON *j = t ? cJSON_ParseWithLength(t, n) : NULL;
    free(t);
    return j;
}

static const char *str(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k)->valuestring; }
static double      num(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k)->valuedouble; }

TEST(images_match_pillow) {
    cJSON *j = index_json();
    CHECK(j != NULL);
    if (!j) return;
    int n_cases = 0;
    for (const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "cases")->child; c; c = c->next) {
        if (strcmp(str(c, "kind"), "image")) continue;
        char rgb_name[96];
        snprintf(rgb_name, sizeof rgb_name, "%s.rgb", str(c, "name"));
        size_t         n = 0, n_ref = 0;
        unsigned char *b = load(str(c, "file"), &n), *ref = load(rgb_name, &n_ref);
        CHECK(b && ref);
        hearth_image im;
        hearth_err   err = {0};
        CHECK_EQ(hearth_image_decode(b, n, 0, &im, &err), HEARTH_OK);
        CHECK_EQ(im.w, (int32_t)num(c, "w"));
        CHECK_EQ(im.h, (int32_t)num(c, "h"));
        int max_diff = 0;
        if (im.rgb && n_ref == (size_t)im.w * im.h * 3)
            for (size_t i = 0; i < n_ref; i++) {
                int d = abs((int)im.rgb[i] - (int)ref[i]);
                if (d > max_diff) max_diff = d;
            }
        else max_diff = 999;
        if (max_diff > (int)num(c, "tol")) fprintf(stderr, "  %s: max diff %d\n", str(c, "name"), max_diff);
        CHECK(max_diff <= (int)num(c, "tol"));
        hearth_image_fini(&im);
        free(b);
        free(ref);
        n_cases++;
    }
    CHECK(n_cases >= 8);
    cJSON_Delete(j);
}

TEST(images_refused) {
    size_t         n = 0;
    unsigned char *png = load("png_rgb.png", &n);
    hearth_image   im;
    hearth_err     err = {0};
    CHECK(png != NULL);
    if (!png) return;
    /* 23 x 17 = 391 pixels: a cap of 390 refuses it from the header alone */
    CHECK_EQ(hearth_image_decode(png, n, 390, &im, &err), HEARTH_E_LIMIT);
    CHECK(strstr(err.msg, "23 x 17") != NULL);
    CHECK(im.rgb == NULL);
    CHECK_EQ(hearth_image_decode(png, n, 391, &im, &err), HEARTH_OK);
    hearth_image_fini(&im);
    /* a header claiming 100000 x 100000 (CRC fixed so libpng reads it): the cap, not a 30 GB malloc */
    unsigned char *big = malloc(n);
    memcpy(big, png, n);
    static const unsigned char dims[8] = {0, 1, 0x86, 0xA0, 0, 1, 0x86, 0xA0};
    memcpy(big + 16, dims, 8);
    uint32_t crc = 0xFFFFFFFFu; /* CRC-32 of "IHDR" + the 13 data bytes */
    for (size_t i = 12; i < 12 + 17; i++) {
        crc ^= big[i];
        for (int k = 0; k < 8; k++) crc = crc & 1 ? (crc >> 1) ^ 0xEDB88320u : crc >> 1;
    }
    crc ^= 0xFFFFFFFFu;
    big[29] = (unsigned char)(crc >> 24), big[30] = (unsigned char)(crc >> 16);
    big[31] = (unsigned char)(crc >> 8), big[32] = (unsigned char)crc;
    CHECK_EQ(hearth_image_decode(big, n, 0, &im, &err), HEARTH_E_LIMIT);
    CHECK(strstr(err.msg, "100000 x 100000") != NULL);
    free(big);
    /* truncated and corrupted files: format errors, no crash, nothing leaked */
    static const char *const files[] = {"png_rgb.png", "jpeg_rgb.jpg", "webp_lossy.webp", "webp_lossless.webp"};
    for (size_t f = 0; f < 4; f++) {
        size_t         m = 0;
        unsigned char *b = load(files[f], &m);
        CHECK(b != NULL);
        if (!b) continue;
        CHECK(hearth_image_decode(b, m / 2, 0, &im, &err) != HEARTH_OK);
        CHECK(im.rgb == NULL);
        for (size_t i = 40; i < m; i += 7) b[i] ^= 0x5A;
        hearth_status st = hearth_image_decode(b, m, 0, &im, &err);
        CHECK(st == HEARTH_E_FORMAT || st == HEARTH_OK); /* a JPEG may decode garbage: it must not crash */
        hearth_image_fini(&im);
        free(b);
    }
    CHECK_EQ(hearth_image_decode((const uint8_t *)"GIF89a\1\0\1\0", 10, 0, &im, &err), HEARTH_E_UNSUPPORTED);
    CHECK_EQ(hearth_image_decode((const uint8_t *)"<html>", 6, 0, &im, &err), HEARTH_E_FORMAT);
    CHECK_EQ(hearth_image_decode(NULL, 0, 0, &im, &err), HEARTH_E_FORMAT);
    free(png);
}

TEST(audio_matches_soundfile_and_scipy) {
    cJSON *j = index_json();
    CHECK(j != NULL);
    if (!j) return;
    int n_cases = 0;
    for (const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "cases")->child; c; c = c->next) {
        if (strcmp(str(c, "kind"), "audio")) continue;
        char ref_name[96];
        snprintf(ref_name, sizeof ref_name, "%s.f32", str(c, "name"));
        size_t         n = 0, n_ref = 0;
        unsigned char *b = load(str(c, "file"), &n), *ref = load(ref_name, &n_ref);
        CHECK(b && ref);
        hearth_audio a;
        hearth_err   err = {0};
        CHECK_EQ(hearth_audio_decode(b, n, 0, &a, &err), HEARTH_OK);
        if (err.msg[0]) fprintf(stderr, "  %s: %s\n", str(c, "name"), err.msg);
        CHECK_EQ(a.in_rate, (int)num(c, "rate"));
        CHECK_EQ(a.channels, (int)num(c, "channels"));
        CHECK_EQ(a.n, (size_t)num(c, "n"));
        double max_diff = 0;
        if (a.pcm && n_ref == a.n * 4)
            for (size_t i = 0; i < a.n; i++) {
                float r;
                memcpy(&r, ref + i * 4, 4);
                max_diff = fmax(max_diff, fabs((double)a.pcm[i] - r));
            }
        else max_diff = 1e9;
        if (max_diff > num(c, "tol")) fprintf(stderr, "  %s: max diff %g\n", str(c, "name"), max_diff);
        CHECK(max_diff <= num(c, "tol"));
        hearth_audio_fini(&a);
        free(b);
        free(ref);
        n_cases++;
    }
    CHECK(n_cases >= 6);
    cJSON_Delete(j);
}

TEST(audio_refused) {
    size_t         n = 0;
    unsigned char *b = load("wav_pcm16_stereo_44100.wav", &n);
    hearth_audio   a;
    hearth_err     err = {0};
    CHECK(b != NULL);
    if (!b) return;
    /* 0.06 s of audio; the smallest cap is 1 s, so build 2 s of silence at 8 kHz instead */
    free(b);
    size_t         frames = 16000, nb = 44 + frames * 2;
    unsigned char *w = calloc(1, nb);
    memcpy(w, "RIFF", 4);
    uint32_t v = (uint32_t)(nb - 8);
    memcpy(w + 4, &v, 4);
    memcpy(w + 8, "WAVEfmt ", 8);
    v = 16;
    memcpy(w + 16, &v, 4);
    uint16_t fmt[2] = {1, 1};
    memcpy(w + 20, fmt, 4);
    v = 8000;
    memcpy(w + 24, &v, 4);
    v = 16000;
    memcpy(w + 28, &v, 4);
    uint16_t al[2] = {2, 16};
    memcpy(w + 32, al, 4);
    memcpy(w + 36, "data", 4);
    v = (uint32_t)(frames * 2);
    memcpy(w + 40, &v, 4);
    CHECK_EQ(hearth_audio_decode(w, nb, 1, &a, &err), HEARTH_E_LIMIT);
    CHECK(a.pcm == NULL);
    CHECK_EQ(hearth_audio_decode(w, nb, 2, &a, &err), HEARTH_OK);
    CHECK_EQ(a.n, (size_t)32000);
    hearth_audio_fini(&a);
    CHECK_EQ(hearth_audio_decode(w, 30, 0, &a, &err), HEARTH_E_FORMAT); /* cut inside the header */
    free(w);
    CHECK_EQ(hearth_audio_decode("\x89PNG\r\n\x1a\n", 8, 0, &a, &err), HEARTH_E_FORMAT);
    CHECK(a.pcm == NULL);
}

TEST(resample_lengths) {
    CHECK_EQ(hearth_resample_len(44100, 44100, 16000), (size_t)16000);
    CHECK_EQ(hearth_resample_len(1, 44100, 16000), (size_t)1);
    CHECK_EQ(hearth_resample_len(3, 8000, 16000), (size_t)6);
    float x[3] = {1, 2, 3}, y[3];
    CHECK_EQ(hearth_resample(x, 3, 16000, 16000, y), HEARTH_OK);
    CHECK(y[0] == 1 && y[2] == 3);
    CHECK_EQ(hearth_resample(x, 3, 0, 16000, y), HEARTH_E_INVALID);
}

/* The fuzz seeds keep their promise: ok_* decode, bad_* are refused. */
TEST(fuzz_corpus_prefixes) {
    static const char *const dirs[] = {"fuzz/corpus/image", "fuzz/corpus/audio"};
    int n_seen = 0;
    for (int d = 0; d < 2; d++) {
        DIR *dir = opendir(dirs[d]);
        CHECK(dir != NULL);
        if (!dir) continue;
        for (struct dirent *ent; (ent = readdir(dir));) {
            bool ok = !strncmp(ent->d_name, "ok_", 3), bad = !strncmp(ent->d_name, "bad_", 4);
            if (!ok && !bad) continue;
            char path[512];
            size_t n = 0;
            snprintf(path, sizeof path, "%s/%s", dirs[d], ent->d_name);
            unsigned char *b = (unsigned char *)golden_slurp(path, &n);
            CHECK(b != NULL);
            hearth_err    err = {0};
            hearth_status st;
            if (d == 0) {
                hearth_image im;
                st = hearth_image_decode(b, n, 0, &im, &err);
                hearth_image_fini(&im);
            } else {
                hearth_audio a;
                st = hearth_audio_decode(b, n, 0, &a, &err);
                hearth_audio_fini(&a);
            }
            if ((st == HEARTH_OK) != ok) fprintf(stderr, "  %s: %s\n", path, err.msg);
            CHECK((st == HEARTH_OK) == ok);
            free(b);
            n_seen++;
        }
        closedir(dir);
    }
    CHECK(n_seen >= 15);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
