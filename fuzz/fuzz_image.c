/*
 * fuzz_image.c - libFuzzer entry point for the image decoders (server/image_decode.h: PNG via
 * libpng, JPEG via libjpeg-turbo, WebP via libwebp).
 *
 * Each input goes to hearth_image_decode with a 1-megapixel cap (so the fuzzer spends its time
 * in headers and entropy decoding, not in memset). Promises checked: success gives a buffer of
 * exactly w x h x 3 bytes within the cap (every byte is read, so ASan sees a short one);
 * failure gives no buffer and a message.
 *
 * Built by CMake (fuzz/fuzz.cmake) like the other targets: with a replay main() in every build
 * (the test fuzz_image_replay runs fuzz/corpus/image), with libFuzzer in build-fuzz/ by `make
 * fuzz`. fuzz/corpus/image: ok_* are copies of tests/golden/media's pictures
 * (tools/media_golden.py, Pillow), bad_* are cut or altered copies and must be refused.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "server/image_decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PROMISE(c)                                                                             \
    do {                                                                                       \
        if (!(c)) {                                                                            \
            fprintf(stderr, "fuzz_image: %s:%d: broken promise: %s\n", __FILE__, __LINE__, #c); \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

static volatile unsigned sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hearth_image  im;
    hearth_err    err = {0};
    hearth_status st = hearth_image_decode(data, size, 1u << 20, &im, &err);
    if (st == HEARTH_OK) {
        PROMISE(im.rgb && im.w > 0 && im.h > 0 && (uint64_t)im.w * (uint64_t)im.h <= (1u << 20));
        unsigned s = 0;
        for (size_t i = 0, n = (size_t)im.w * (size_t)im.h * 3; i < n; i++) s += im.rgb[i];
        sink = s;
    } else {
        PROMISE(im.rgb == NULL && err.code == st && err.msg[0]);
    }
    hearth_image_fini(&im);
    return 0;
}
