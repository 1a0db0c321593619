/*
 * image_decode.c - PNG / JPEG / WebP to RGB8 (see image_decode.h).
 *
 *   bytes --sniff--> PNG:  libpng's simplified API (png_image_*) from memory, read as RGBA
 *                          (every colour type and bit depth converted by libpng), alpha dropped
 *                    JPEG: libjpeg-turbo, out_color_space JCS_RGB (grey and YCbCr converted);
 *                          errors longjmp back out of the library (its error_exit may not return)
 *                    WebP: WebPGetFeatures, then WebPDecodeRGBInto our buffer
 *
 * Each path reads the dimensions first and calls check_size, which refuses images over the
 * pixel cap before the output buffer is allocated.
 */
#include "server/image_decode.h"

#include <stdio.h> /* before jpeglib.h, which uses FILE */

#include <jpeglib.h>
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <webp/decode.h>

void hearth_image_fini(hearth_image *im) {
    if (!im) return;
    free(im->rgb);
    *im = (hearth_image){0};
}

static hearth_status check_size(uint64_t w, uint64_t h, uint64_t max, hearth_err *err) {
    if (w == 0 || h == 0) return hearth_err_set(err, HEARTH_E_FORMAT, 0, "the image is empty (%llu x %llu)",
                                                (unsigned long long)w, (unsigned long long)h);
    if (w > INT32_MAX || h > INT32_MAX || w * h > max)
        return hearth_err_set(err, HEARTH_E_LIMIT, 0, "the image is %llu x %llu pixels, over the %llu-pixel cap",
                              (unsigned long long)w, (unsigned long long)h, (unsigned long long)max);
    return HEARTH_OK;
}

static hearth_status alloc_rgb(hearth_image *out, uint32_t w, uint32_t h) {
    out->rgb = malloc((size_t)w * h * 3);
    if (!out->rgb) return HEARTH_E_NOMEM;
    out->w = (int32_t)w;
    out->h = (int32_t)h;
    return HEARTH_OK;
}

static hearth_status decode_png(const uint8_t *b, size_t n, uint64_t max, hearth_image *out, hearth_err *err) {
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&im, b, n))
        return hearth_err_set(err, HEARTH_E_FORMAT, 0, "a corrupt PNG: %s", im.message);
    hearth_status st = check_size(im.width, im.height, max, err);
    if (st) {
        png_image_free(&im);
        return st;
    }
    im.format = PNG_FORMAT_RGBA;
    size_t   stride = (size_t)im.width * 4;
    uint8_t *rgba = malloc(stride * im.height);
    if (!rgba || alloc_rgb(out, im.width, im.height)) {
        free(rgba);
        png_image_free(&im);
        hearth_image_fini(out);
        return hearth_err_set(err, HEARTH_E_NOMEM, 0, "out of memory for a %u x %u image", im.width, im.height);
    }
    if (!png_image_finish_read(&im, NULL, rgba, (png_int_32)stride, NULL)) {
        st = hearth_err_set(err, HEARTH_E_FORMAT, 0, "a corrupt PNG: %s", im.message);
        free(rgba);
        png_image_free(&im);
        hearth_image_fini(out);
        return st;
    }
    for (size_t i = 0, np = (size_t)im.width * im.height; i < np; i++) memcpy(out->rgb + i * 3, rgba + i * 4, 3);
    free(rgba);
    png_image_free(&im);
    return HEARTH_OK;
}

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf               jb;
    char                  msg[JMSG_LENGTH_MAX];
} jpeg_err;

static void jpeg_fail(j_common_ptr c) {
    jpeg_err *e = (jpeg_err *)c->err;
    c->err->format_message(c, e->msg);
    longjmp(e->jb, 1);
}

static void jpeg_quiet(j_common_ptr c, int level) { (void)c, (void)level; } /* warnings: not printed */

static hearth_status decode_jpeg(const uint8_t *b, size_t n, uint64_t max, hearth_image *out, hearth_err *err) {
    struct jpeg_decompress_struct c;
    jpeg_err                      je;
    hearth_status volatile        st = HEARTH_OK;
    memset(&c, 0, sizeof c);
    c.err = jpeg_std_error(&je.pub);
    je.pub.error_exit = jpeg_fail;
    je.pub.emit_message = jpeg_quiet;
    je.msg[0] = 0;
    if (setjmp(je.jb)) {
        jpeg_destroy_decompress(&c);
        hearth_image_fini(out);
        return st ? st : hearth_err_set(err, HEARTH_E_FORMAT, 0, "a corrupt JPEG: %s", je.msg);
    }
    jpeg_create_decompress(&c);
    jpeg_mem_src(&c, b, (unsigned long)n);
    jpeg_read_header(&c, TRUE);
    if (c.jpeg_color_space == JCS_CMYK || c.jpeg_color_space == JCS_YCCK) {
        jpeg_destroy_decompress(&c);
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, 0, "CMYK JPEG images are not decoded (RGB and grey are)");
    }
    if ((st = check_size(c.image_width, c.image_height, max, err)) != HEARTH_OK) {
        jpeg_destroy_decompress(&c);
        return st;
    }
    c.out_color_space = JCS_RGB;
    jpeg_start_decompress(&c);
    if (c.output_components != 3 || alloc_rgb(out, c.output_width, c.output_height)) {
        st = c.output_components != 3
                 ? hearth_err_set(err, HEARTH_E_UNSUPPORTED, 0, "a JPEG with %d components", c.output_components)
                 : hearth_err_set(err, HEARTH_E_NOMEM, 0, "out of memory for a JPEG image");
        jpeg_destroy_decompress(&c);
        return st;
    }
    while (c.output_scanline < c.output_height) {
        JSAMPROW row = out->rgb + (size_t)c.output_scanline * c.output_width * 3;
        jpeg_read_scanlines(&c, &row, 1);
    }
    jpeg_finish_decompress(&c);
    jpeg_destroy_decompress(&c);
    return HEARTH_OK;
}

static hearth_status decode_webp(const uint8_t *b, size_t n, uint64_t max, hearth_image *out, hearth_err *err) {
    WebPBitstreamFeatures f;
    if (WebPGetFeatures(b, n, &f) != VP8_STATUS_OK) return hearth_err_set(err, HEARTH_E_FORMAT, 0, "a corrupt WebP");
    if (f.has_animation)
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, 0, "animated WebP images are not decoded");
    hearth_status st = check_size((uint64_t)f.width, (uint64_t)f.height, max, err);
    if (st) return st;
    if (alloc_rgb(out, (uint32_t)f.width, (uint32_t)f.height))
        return hearth_err_set(err, HEARTH_E_NOMEM, 0, "out of memory for a WebP image");
    size_t sz = (size_t)f.width * (size_t)f.height * 3;
    if (!WebPDecodeRGBInto(b, n, out->rgb, sz, f.width * 3)) {
        hearth_image_fini(out);
        return hearth_err_set(err, HEARTH_E_FORMAT, 0, "a corrupt WebP");
    }
    return HEARTH_OK;
}

hearth_status hearth_image_decode(const uint8_t *b, size_t n, uint64_t max_pixels, hearth_image *out,
                                  hearth_err *err) {
    *out = (hearth_image){0};
    if (!max_pixels) max_pixels = HEARTH_IMAGE_MAX_PIXELS;
    if (n >= 8 && !memcmp(b, "\x89PNG\r\n\x1a\n", 8)) return decode_png(b, n, max_pixels, out, err);
    if (n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return decode_jpeg(b, n, max_pixels, out, err);
    if (n >= 12 && !memcmp(b, "RIFF", 4) && !memcmp(b + 8, "WEBP", 4)) return decode_webp(b, n, max_pixels, out, err);
    if (n >= 6 && (!memcmp(b, "GIF87a", 6) || !memcmp(b, "GIF89a", 6)))
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, 0, "GIF images are not decoded (PNG, JPEG and WebP are)");
    return hearth_err_set(err, HEARTH_E_FORMAT, 0, "not a PNG, JPEG or WebP image");
}
