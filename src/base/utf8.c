/*
 * utf8.c - the UTF-8 codec (see utf8.h).
 *
 * Decoding is table-free: the lead byte gives the length and the allowed range of the second
 * byte (the one place where overlongs, surrogates and values past U+10FFFF show), the rest must
 * be continuation bytes. The WTF-8 variant only widens the second-byte range after 0xED.
 */
#include "base/utf8.h"

/* Expected length of lead byte b and the allowed range [*lo, *hi] of the byte after it;
 * 0 when b cannot start a sequence. */
static size_t lead_info(uint8_t b, bool surrogates, uint8_t *lo, uint8_t *hi) {
    *lo = 0x80;
    *hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) return 2;
    if (b >= 0xE0 && b <= 0xEF) {
        if (b == 0xE0) *lo = 0xA0;                 /* no overlongs */
        if (b == 0xED && !surrogates) *hi = 0x9F;  /* no surrogates */
        return 3;
    }
    if (b >= 0xF0 && b <= 0xF4) {
        if (b == 0xF0) *lo = 0x90; /* no overlongs */
        if (b == 0xF4) *hi = 0x8F; /* <= U+10FFFF */
        return 4;
    }
    return 0;
}

static size_t decode(const uint8_t *s, size_t n, bool surrogates, uint32_t *cp) {
    if (n == 0) return 0;
    uint8_t b = s[0];
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    uint8_t lo, hi;
    size_t len = lead_info(b, surrogates, &lo, &hi);
    if (len == 0 || n < len || s[1] < lo || s[1] > hi) return 0;
    uint32_t c = b & (0xFFu >> (len + 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        c = (c << 6) | (s[i] & 0x3Fu);
    }
    *cp = c;
    return len;
}

size_t hearth_utf8_decode(const void *s, size_t n, uint32_t *cp) {
    return decode(s, n, false, cp);
}

size_t hearth_utf8_decode_wtf8(const void *s, size_t n, uint32_t *cp) {
    return decode(s, n, true, cp);
}

size_t hearth_utf8_encode(uint32_t cp, char out[4]) {
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
    out[0] = (char)(0xF0 | ((cp >> 18) & 0x07));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

bool hearth_utf8_valid(const char *s, size_t n, size_t *bad_at) {
    const uint8_t *p = (const uint8_t *)s;
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        size_t k = decode(p + i, n - i, false, &cp);
        if (!k) {
            if (bad_at) *bad_at = i;
            return false;
        }
        i += k;
    }
    return true;
}

size_t hearth_utf8_count(const char *s, size_t n, bool *ascii) {
    const uint8_t *p = (const uint8_t *)s;
    size_t count = 0;
    bool all = true;
    uint32_t cp;
    for (size_t i = 0; i < n; count++) {
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        size_t k = decode(p + i, n - i, true, &cp);
        i += k ? k : 1;
        all = false;
    }
    if (ascii) *ascii = all;
    return count;
}

size_t hearth_utf8_len_lead(uint8_t b) {
    static const uint8_t len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return len[b >> 4];
}

size_t hearth_utf8_incomplete_tail(const void *str, size_t n) {
    const uint8_t *s = str;
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        uint8_t b = s[n - k];
        if ((b & 0xC0) == 0x80) continue; /* a continuation byte: look further back */
        uint8_t lo, hi;
        size_t need = lead_info(b, false, &lo, &hi);
        if (need <= k) return 0; /* complete, or not a lead byte at all */
        if (k >= 2 && (s[n - k + 1] < lo || s[n - k + 1] > hi)) return 0; /* can never complete */
        return k;
    }
    return 0;
}
