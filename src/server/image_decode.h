/*
 * image_decode.h - image bytes (PNG, JPEG, WebP) to 8-bit RGB pixels, through Debian's
 * maintained decoders (libpng, libjpeg-turbo, libwebp).
 *
 * The format is chosen by sniffing the bytes (media.h), never by a declared type. The size is
 * read from the header and checked against a pixel cap before any pixel memory is allocated,
 * so a small file that claims to be 100000 x 100000 is refused cheaply. Colour handling
 * follows what Pillow's convert("RGB") gives a vision preprocessor: grey is replicated, a
 * palette expanded, alpha dropped (not composited), 16-bit samples reduced to 8.
 * GIF (sniffed, but no decoder linked), animated WebP and CMYK JPEG are refused with
 * HEARTH_E_UNSUPPORTED.
 *
 * Thread rule: any thread; no global state.
 */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* The default pixel cap: 64 megapixels (an 8192 x 8192 image), 192 MB of RGB. */
#define HEARTH_IMAGE_MAX_PIXELS ((uint64_t)64 << 20)

typedef struct {
    uint8_t *rgb;    /* owned (malloc): [h][w][3], rows packed */
    int32_t  w, h;   /* pixels */
} hearth_image;

/* Decode b[0..n) into out. Errors: HEARTH_E_FORMAT (not an image, or corrupt: err says
 * where), HEARTH_E_LIMIT (more than max_pixels; 0: HEARTH_IMAGE_MAX_PIXELS),
 * HEARTH_E_UNSUPPORTED (a format or variant not decoded), HEARTH_E_NOMEM. */
hearth_status hearth_image_decode(const uint8_t *b, size_t n, uint64_t max_pixels, hearth_image *out,
                                  hearth_err *err);
void          hearth_image_fini(hearth_image *im);
