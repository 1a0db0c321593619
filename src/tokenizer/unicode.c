/*
 * unicode.c - UTF-8 helpers and the GPT-2 byte-level alphabet.
 *
 * Two notions of "a character" live here on purpose:
 *   - tok_utf8_len_lead is the lenient count llama.cpp uses to cut text into symbols before
 *     merging (by the lead byte's high nibble alone, no validation). SPM symbols must be cut
 *     exactly that way for invalid input to give the same <0xXX> fallback ids.
 *   - tok_utf8_decode is strict RFC 3629 decoding (what PCRE2 requires of its subject and
 *     what the streaming decoder needs to know whether bytes may still complete).
 *
 * Byte-level BPE (GPT-2's bytes_to_unicode): the 188 printable bytes 0x21..0x7E, 0xA1..0xAC,
 * 0xAE..0xFF stand for themselves; the other 68 (0x00..0x20, 0x7F..0xA0, 0xAD) map in order
 * to U+0100..U+0143. Both directions are closed forms, so there is no table to build.
 */
#include "tokenizer/tok_internal.h"

size_t tok_utf8_len_lead(uint8_t b) {
    static const uint8_t len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return len[b >> 4];
}

/* Expected length of a strict lead byte and the allowed range of the byte after it. */
static size_t lead_info(uint8_t b, uint8_t *lo, uint8_t *hi) {
    *lo = 0x80;
    *hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) return 2;
    if (b >= 0xE0 && b <= 0xEF) {
        if (b == 0xE0) *lo = 0xA0; /* no overlongs */
        if (b == 0xED) *hi = 0x9F; /* no surrogates */
        return 3;
    }
    if (b >= 0xF0 && b <= 0xF4) {
        if (b == 0xF0) *lo = 0x90; /* no overlongs */
        if (b == 0xF4) *hi = 0x8F; /* <= U+10FFFF */
        return 4;
    }
    return 0;
}

size_t tok_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp) {
    if (n == 0) return 0;
    uint8_t b = s[0];
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    uint8_t lo, hi;
    size_t len = lead_info(b, &lo, &hi);
    if (len == 0 || n < len || s[1] < lo || s[1] > hi) return 0;
    uint32_t c = b & (0xFFu >> (len + 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        c = (c << 6) | (s[i] & 0x3Fu);
    }
    *cp = c;
    return len;
}

size_t tok_utf8_encode(uint32_t cp, char out[4]) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

size_t tok_utf8_incomplete_tail(const uint8_t *s, size_t n) {
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        uint8_t b = s[n - k];
        if ((b & 0xC0) == 0x80) continue; /* a continuation byte: look further back */
        uint8_t lo, hi;
        size_t need = lead_info(b, &lo, &hi);
        if (need <= k) return 0;          /* complete, or not a lead byte at all */
        if (k >= 2 && (s[n - k + 1] < lo || s[n - k + 1] > hi)) return 0; /* can never complete */
        return k;
    }
    return 0;
}

uint32_t tok_byte_to_cp(uint8_t b) {
    if (b <= 0x20) return 0x100u + b;                  /* 0x00..0x20 -> U+0100..U+0120 */
    if (b >= 0x7F && b <= 0xA0) return 0x121u + (b - 0x7Fu); /* -> U+0121..U+0142 */
    if (b == 0xAD) return 0x143;
    return b;
}

int tok_cp_to_byte(uint32_t cp) {
    if ((cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0xFF))
        return (int)cp;
    if (cp >= 0x100 && cp <= 0x120) return (int)(cp - 0x100);
    if (cp >= 0x121 && cp <= 0x142) return (int)(0x7F + cp - 0x121);
    if (cp == 0x143) return 0xAD;
    return -1;
}
