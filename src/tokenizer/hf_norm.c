/*
 * hf_norm.c - tokenizers' normalizers: string -> string, applied in chain order.
 *
 *   NFC NFD NFKC NFKD   utf8proc (stable composition / decomposition, compatibility forms)
 *   Lowercase           Rust char::to_lowercase, per character (table of hf_unicode_data.c:
 *                       'İ' becomes "i̇", no final-sigma context, as tokenizers does it)
 *   Prepend             the text before a non-empty string
 *   Replace             every non-overlapping match of the pattern by the content
 *   Strip               leading / trailing whitespace (char::is_whitespace)
 *   StripAccents        drop the characters tokenizers counts as combining marks
 *   BertNormalizer      clean_text (drop controls and U+FFFD, whitespace -> ' '), pad CJK
 *                       ideographs with spaces, strip accents (NFD, then drop marks; default:
 *                       when lowercasing), lowercase - in that order
 *
 * Besides the text, tokenizers keeps each output character's origin, and one consequence
 * reaches the ids: Metaspace's prepend_scheme "first" adds the replacement only to a piece
 * whose origin is offset 0 of the input. A normalizer that deletes the first characters
 * (Strip, clean_text, StripAccents, Replace with "") moves that origin, so we track exactly
 * that one bit (lead_cut) instead of full alignments.
 */
#include "tokenizer/hf_unicode.h"
#include "tokenizer/tok_pipe.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

static bool nf(const char *s, size_t n, int opts, hearth_buf *dst) {
    if (n == 0) return true;
    utf8proc_uint8_t *o = NULL;
    utf8proc_ssize_t k = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &o,
                                      (utf8proc_option_t)(UTF8PROC_STABLE | opts));
    if (k < 0) return false;
    bool ok = hearth_buf_put(dst, o, (size_t)k);
    free(o);
    return ok;
}

static bool lowercase(const char *s, size_t n, hearth_buf *dst) {
    if (!hearth_buf_reserve(dst, n)) return false;
    for (size_t i = 0; i < n;) {
        uint32_t cp, lo[3];
        size_t k = hf_utf8_next(s + i, n - i, &cp);
        if (cp < 0x80) {
            char c = (char)(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
            if (!hearth_buf_put(dst, &c, 1)) return false;
        } else {
            int m = hf_uni_lower_of(cp, lo);
            for (int j = 0; j < m; j++)
                if (!hearth_buf_put_cp(dst, lo[j])) return false;
        }
        i += k;
    }
    return true;
}

/* Drop characters with any of flags; *cut when the first character goes. */
static bool filter(const char *s, size_t n, uint16_t flags, hearth_buf *dst, bool *cut) {
    bool kept = false;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = hf_utf8_next(s + i, n - i, &cp);
        if (hf_uni_flags(cp) & flags) {
            if (!kept) *cut = true;
        } else {
            if (!hearth_buf_put(dst, s + i, k)) return false;
            kept = true;
        }
        i += k;
    }
    return true;
}

static bool strip(const tok_norm *nm, const char *s, size_t n, hearth_buf *dst, bool *cut) {
    size_t a = 0, b = n;
    if (nm->left) {
        while (a < n) {
            uint32_t cp;
            size_t k = hf_utf8_next(s + a, n - a, &cp);
            if (!(hf_uni_flags(cp) & HFU_WS)) break;
            a += k;
        }
        if (a > 0) *cut = true;
    }
    if (nm->right) {
        while (b > a) {
            size_t i = hf_utf8_prev(s, b);
            uint32_t cp;
            hf_utf8_next(s + i, b - i, &cp);
            if (!(hf_uni_flags(cp) & HFU_WS)) break;
            b = i;
        }
    }
    return hearth_buf_put(dst, s + a, b - a);
}

/* BertNormalizer's clean_text and handle_chinese_chars in one pass. */
static bool bert_clean(const tok_norm *nm, const char *s, size_t n, hearth_buf *dst, bool *cut) {
    bool kept = false;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = hf_utf8_next(s + i, n - i, &cp);
        uint16_t f = hf_uni_flags(cp);
        bool ok = true;
        if (nm->clean_text && (f & HFU_BDROP)) {
            if (!kept) *cut = true;
            i += k;
            continue;
        }
        kept = true;
        if (nm->clean_text && (f & HFU_BWS)) ok = hearth_buf_put(dst, " ", 1);
        else if (nm->chinese && (f & HFU_CJK))
            ok = hearth_buf_put(dst, " ", 1) && hearth_buf_put(dst, s + i, k) && hearth_buf_put(dst, " ", 1);
        else ok = hearth_buf_put(dst, s + i, k);
        if (!ok) return false;
        i += k;
    }
    return true;
}

/* One normalizer from s[0..n) into dst (empty on entry); tmp is scratch. */
static bool norm_one(const tok_norm *nm, const char *s, size_t n, hearth_buf *dst, hearth_buf *tmp,
                     void *md, bool *cut) {
    switch (nm->kind) {
    case NORM_NFC:  return nf(s, n, UTF8PROC_COMPOSE, dst);
    case NORM_NFD:  return nf(s, n, UTF8PROC_DECOMPOSE, dst);
    case NORM_NFKC: return nf(s, n, UTF8PROC_COMPOSE | UTF8PROC_COMPAT, dst);
    case NORM_NFKD: return nf(s, n, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, dst);
    case NORM_LOWERCASE: return lowercase(s, n, dst);
    case NORM_PREPEND:
        return n == 0 || (hearth_buf_put(dst, nm->str, nm->str_n) && hearth_buf_put(dst, s, n));
    case NORM_REPLACE: return tok_regex_replace(nm->re, s, n, nm->str, nm->str_n, md, dst, cut);
    case NORM_STRIP: return strip(nm, s, n, dst, cut);
    case NORM_STRIP_ACCENTS: return filter(s, n, HFU_MN, dst, cut);
    case NORM_BERT: {
        /* steps alternate between dst and tmp; the last one lands in dst */
        hearth_buf *a = dst, *b = tmp;
        const char *cur = s;
        size_t cur_n = n;
        int steps = 1 + (nm->accents ? 2 : 0) + (nm->lower ? 1 : 0);
        if (steps % 2 == 0) {
            a = tmp;
            b = dst;
        }
        a->len = 0;
        if (!bert_clean(nm, cur, cur_n, a, cut)) return false;
        if (nm->accents) {
            b->len = 0;
            if (!nf(a->p, a->len, UTF8PROC_DECOMPOSE, b)) return false;
            a->len = 0;
            if (!filter(b->p, b->len, HFU_BMN, a, cut)) return false;
        }
        if (nm->lower) {
            b->len = 0;
            if (!lowercase(a->p, a->len, b)) return false;
        }
        return true;
    }
    }
    return false;
}

bool tok_norm_apply(const tok_norm *norms, int n, const char *in, size_t len, hearth_buf *out,
                    hearth_buf *tmp, hearth_buf *mid, void *md, bool *lead_cut) {
    *lead_cut = false;
    out->len = 0;
    if (n == 0) return hearth_buf_put(out, in, len);
    hearth_buf *bufs[2] = {out, mid};
    /* normalizer i writes bufs[(n - 1 - i) % 2] so that the last one writes out */
    const char *cur = in;
    size_t cur_n = len;
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        hearth_buf *dst = bufs[(n - 1 - i) % 2];
        dst->len = 0;
        tmp->len = 0;
        ok = norm_one(&norms[i], cur, cur_n, dst, tmp, md, lead_cut);
        cur = dst->p;
        cur_n = dst->len;
    }
    return ok;
}
