/*
 * base64.h - strict RFC 4648 base64 decoding (the standard alphabet).
 *
 * Request bodies carry images and audio as base64 (OpenAI input_audio.data, Anthropic's
 * base64 image source, data: URLs). The decoder is strict so that a bad payload is refused
 * with the offset of the first bad character instead of being decoded into garbage: only
 * A-Z a-z 0-9 + /, '=' padding only at the end (optional: unpadded input is taken, as
 * browsers' atob does not but most encoders can emit it), and no whitespace.
 *
 * Thread rule: pure functions; any thread.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most bytes n base64 characters can decode to. */
size_t hearth_base64_max_decoded(size_t n);
/* Decode src[0..n) into out (room for hearth_base64_max_decoded(n) bytes); *n_out gets the
 * byte count. False when src is not valid base64; *bad_at (may be NULL) gets the offset of
 * the first character that makes it so (n for a truncated final group). */
bool   hearth_base64_decode(const char *src, size_t n, uint8_t *out, size_t *n_out, size_t *bad_at);
