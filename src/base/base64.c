/*
 * base64.c - strict base64 decoding (see base64.h). Four characters make three bytes; a final
 * group of two or three characters (padded with '=' or not) makes one or two bytes. A group
 * of one character cannot encode a byte and is an error.
 */
#include "base/base64.h"

static int val(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

size_t hearth_base64_max_decoded(size_t n) { return n / 4 * 3 + 3; }

bool hearth_base64_decode(const char *src, size_t n, uint8_t *out, size_t *n_out, size_t *bad_at) {
    size_t len = n, o = 0, i;
    /* at most two '=' of padding, and only to complete a group of four */
    if (len && src[len - 1] == '=') len--;
    if (len && src[len - 1] == '=') len--;
    if (len < n && n % 4) {
        if (bad_at) *bad_at = len;
        return false;
    }
    uint32_t acc = 0;
    for (i = 0; i < len; i++) {
        int v = val((unsigned char)src[i]);
        if (v < 0) {
            if (bad_at) *bad_at = i;
            return false;
        }
        acc = acc << 6 | (uint32_t)v;
        if (i % 4 == 3) {
            out[o++] = (uint8_t)(acc >> 16);
            out[o++] = (uint8_t)(acc >> 8);
            out[o++] = (uint8_t)acc;
            acc = 0;
        }
    }
    switch (len % 4) {
    case 1:
        if (bad_at) *bad_at = n;
        return false;
    case 2: out[o++] = (uint8_t)(acc >> 4); break;
    case 3:
        out[o++] = (uint8_t)(acc >> 10);
        out[o++] = (uint8_t)(acc >> 2);
        break;
    default: break;
    }
    *n_out = o;
    return true;
}
