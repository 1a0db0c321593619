/*
 * hf_unicode.h - the character classes Hugging Face tokenizers uses, as tables probed from the
 * library itself (tools/tokjson_unicode.py writes hf_unicode_data.c), plus the UTF-8 and
 * normalization helpers of the tokenizer.json pipeline.
 *
 * Why tables and not utf8proc categories: tokenizers mixes Unicode tables of several ages
 * (Rust std, the unicode_categories crate, Oniguruma, the regex crate), and a character
 * assigned after the oldest of them (many emoji) is, say, "other" for BertNormalizer's
 * clean_text (and removed) but a symbol for Rust. Asking the oracle per code point gives the
 * exact answer for every one of them. Immutable data; any thread.
 */
#pragma once
#include "base/utf8.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    HFU_WS    = 1 << 0,  /* Rust char::is_whitespace (WhitespaceSplit, Strip, Bert*) */
    HFU_NUM   = 1 << 1,  /* Rust char::is_numeric (Digits) */
    HFU_PUNC  = 1 << 2,  /* Punctuation pre-tokenizer */
    HFU_BPUNC = 1 << 3,  /* BertPreTokenizer punctuation */
    HFU_BDROP = 1 << 4,  /* BertNormalizer clean_text removes it */
    HFU_BWS   = 1 << 5,  /* BertNormalizer clean_text turns it into ' ' */
    HFU_MN    = 1 << 6,  /* StripAccents removes it */
    HFU_WORD  = 1 << 7,  /* regex \w (single_word added tokens) */
    HFU_CJK   = 1 << 8,  /* BertNormalizer handle_chinese_chars pads it */
    HFU_OL    = 1 << 9,  /* Oniguruma \p{L} */
    HFU_ON    = 1 << 10, /* Oniguruma \p{N} */
    HFU_OS    = 1 << 11, /* Oniguruma \s */
    HFU_OW    = 1 << 12, /* Oniguruma \w */
    HFU_BMN   = 1 << 13, /* BertNormalizer strip_accents removes it (after NFD) */
};

/* A regex class as Oniguruma has it, relative to PCRE2's own: the code points to add to and
 * to take from PCRE2's class (its tables are hf_uni_pcre2_unicode, which the C code checks). */
typedef struct {
    const char     *name;           /* "L", "Lu", ..., "s" for \s, "w" for \w; NULL ends */
    const uint32_t (*add)[2];       /* [first, last] ranges */
    int             n_add;
    const uint32_t (*sub)[2];
    int             n_sub;
} hf_uni_class;

extern const hf_uni_class hf_uni_classes[];
extern const char         hf_uni_pcre2_unicode[];

extern const uint16_t hf_uni_index[4352];
extern const uint16_t hf_uni_blocks[][256];
extern const uint32_t hf_uni_lower[][4];
extern const int      hf_uni_n_lower;

static inline uint16_t hf_uni_flags(uint32_t cp) {
    return cp < 0x110000 ? hf_uni_blocks[hf_uni_index[cp >> 8]][cp & 255] : 0;
}

/* Rust's char::to_lowercase as tokenizers' Lowercase applies it: writes 1..3 code points. */
int hf_uni_lower_of(uint32_t cp, uint32_t out[3]);

/* Decode the code point at s[0..n) (n > 0) of valid UTF-8 (the pipeline only holds valid
 * UTF-8; a byte that is not is taken as itself); returns its length. */
static inline size_t hf_utf8_next(const char *s, size_t n, uint32_t *cp) {
    const uint8_t *p = (const uint8_t *)s;
    if (p[0] < 0x80) {
        *cp = p[0];
        return 1;
    }
    size_t k = hearth_utf8_decode(p, n, cp);
    if (k) return k;
    *cp = p[0];
    return 1;
}

/* Start of the code point that ends at s[n) (n > 0). */
static inline size_t hf_utf8_prev(const char *s, size_t n) {
    size_t i = n - 1;
    while (i > 0 && ((uint8_t)s[i] & 0xC0) == 0x80) i--;
    return i;
}
