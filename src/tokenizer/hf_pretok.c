/*
 * hf_pretok.c - tokenizers' patterns and pre-tokenizers over the pieces of the pipeline.
 *
 * Patterns. tokenizers compiles {"Regex": r} with Oniguruma and {"String": s} as an escaped
 * regex; both are searched left to right for non-overlapping leftmost matches. We compile
 * regexes with PCRE2 (UTF + UCP, JIT) after translating the escapes whose meaning differs
 * between the two engines: \s \w \d and \p{..} of the general categories become PCRE2
 * classes corrected by the code points where the two disagree (Oniguruma's Unicode tables are
 * newer than PCRE2 10.42's Unicode 14, and its \w is its own), from hf_unicode_data.c;
 * \h is Oniguruma's hex digit. Literal strings are searched with memmem.
 *
 * Splitting (NormalizedString::split). A pattern cuts a piece into (range, is_match) parts
 * that cover it: regex matches and the gaps between them, or, for a character class, every
 * matching character on its own. The behaviour then decides what survives:
 *
 *   "a-b--c" cut on '-':  a | - | b | - | - | c
 *     Removed             a, b, c
 *     Isolated            a, -, b, -, -, c
 *     MergedWithPrevious  a-, b-, -, c
 *     MergedWithNext      a, -b, -, -c
 *     Contiguous          a, -, b, --, c
 *
 * and empty results are dropped (PreTokenizedString::split). invert swaps match and gap.
 *
 * Pre-tokenizers are then compositions of splits and transforms:
 *   ByteLevel        prefix " " (add_prefix_space, when the piece does not start with one),
 *                    split by GPT-2's regex (use_regex) Isolated; the byte -> alphabet map is
 *                    left to the model (tok_model.byte_level), which is why ByteLevel must be
 *                    the last pre-tokenizer (the loader checks it);
 *   Split            the pattern with its behaviour and invert;
 *   Metaspace        ' ' -> replacement, prepend the replacement (always / first piece of the
 *                    text / never) unless the piece starts with it, split on it MergedWithNext;
 *   Whitespace       keep the matches of \w+|[^\w\s]+ (Rust regex classes), drop the rest;
 *   WhitespaceSplit  drop each whitespace character (Rust char::is_whitespace);
 *   Digits           each numeric character Isolated (individual_digits) or Contiguous;
 *   Punctuation      each punctuation character, with its behaviour (default Isolated);
 *   BertPreTokenizer WhitespaceSplit, then each punctuation character Isolated.
 * Character classes come from hf_unicode.h (probed from tokenizers).
 */
#include "tokenizer/hf_unicode.h"
#include "tokenizer/tok_pipe.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

/* ------------------------------------------------------------------ patterns */

struct tok_regex {
    pcre2_code *re;   /* owned; NULL for a literal */
    bool        jit;
    char       *lit;  /* owned: the literal */
    size_t      lit_n;
};

/* One class in PCRE2 spelling, made to hold what Oniguruma's holds: PCRE2's class plus the
 * code points its older tables lack (cls->add) minus those Oniguruma lacks (cls->sub).
 * base: PCRE2's class items (no brackets). neg: the complement. in_class: inside [...],
 * where only additions can be expressed (a subtraction there is refused). */
static bool put_class(hearth_buf *b, const char *base, const hf_uni_class *cls, bool neg,
                      bool in_class, bool *refuse) {
    hearth_buf add = {0}, sub = {0};
    bool ok = true;
    for (int i = 0; cls && i < cls->n_add && ok; i++) {
        char r[40];
        snprintf(r, sizeof r, "\\x{%X}-\\x{%X}", (unsigned)cls->add[i][0], (unsigned)cls->add[i][1]);
        ok = hearth_buf_put(&add, r, strlen(r));
    }
    for (int i = 0; cls && i < cls->n_sub && ok; i++) {
        char r[40];
        snprintf(r, sizeof r, "\\x{%X}-\\x{%X}", (unsigned)cls->sub[i][0], (unsigned)cls->sub[i][1]);
        ok = hearth_buf_put(&sub, r, strlen(r));
    }
    if (ok && in_class) {
        if (sub.len || (neg && add.len)) *refuse = true;
        else if (neg && !strncmp(base, "\\p{", 3) && !strchr(base + 3, '\\'))
            ok = hearth_buf_put(b, "\\P", 2) && hearth_buf_put(b, base + 2, strlen(base + 2));
        else if (neg) *refuse = true;
        else ok = hearth_buf_put(b, base, strlen(base)) && hearth_buf_put(b, add.p, add.len);
    } else if (ok) {
        /* [base add] minus sub;  complement: [^base add] or sub */
        ok = hearth_buf_put(b, "(?:", 3);
        if (ok && sub.len && !neg) ok = hearth_buf_put(b, "(?![", 4) && hearth_buf_put(b, sub.p, sub.len) &&
                                      hearth_buf_put(b, "])", 2);
        ok = ok && hearth_buf_put(b, neg ? "[^" : "[", neg ? 2 : 1) &&
             hearth_buf_put(b, base, strlen(base)) && hearth_buf_put(b, add.p, add.len) &&
             hearth_buf_put(b, "]", 1);
        if (ok && sub.len && neg) ok = hearth_buf_put(b, "|[", 2) && hearth_buf_put(b, sub.p, sub.len) &&
                                     hearth_buf_put(b, "]", 1);
        ok = ok && hearth_buf_put(b, ")", 1);
    }
    hearth_buf_fini(&add);
    hearth_buf_fini(&sub);
    return ok;
}

/* Oniguruma's class of that name: its bracketed form ("[w]") inside a class, where \w means
 * less than outside one. */
static const hf_uni_class *find_class(const char *name, size_t n, bool in_class) {
    char key[48];
    if (n > 40) return NULL;
    snprintf(key, sizeof key, in_class ? "[%.*s]" : "%.*s", (int)n, name);
    for (const hf_uni_class *c = hf_uni_classes; c->name; c++)
        if (!strcmp(c->name, key)) return c;
    return NULL;
}

/* Translate the escape at pat[i] (after the backslash: pat[i] is the letter); *used: pattern
 * bytes consumed after the backslash. false: out of memory or *refuse. */
static bool translate_escape(const char *pat, size_t n, size_t i, bool in_class, hearth_buf *b,
                             size_t *used, bool *refuse) {
    char e = pat[i];
    char base[64];
    const hf_uni_class *cls = NULL;
    bool neg = false;
    *used = 1;
    switch (e) {
    case 's': case 'S':
        cls = find_class("s", 1, in_class), neg = e == 'S';
        return put_class(b, "\\p{White_Space}", cls, neg, in_class, refuse);
    case 'w': case 'W':
        cls = find_class("w", 1, in_class), neg = e == 'W';
        return put_class(b, "\\p{L}\\p{M}\\p{Nd}\\p{Pc}", cls, neg, in_class, refuse);
    case 'd': case 'D':
        cls = find_class("Nd", 2, in_class), neg = e == 'D';
        return put_class(b, "\\p{Nd}", cls, neg, in_class, refuse);
    case 'h':
        return hearth_buf_put(b, in_class ? "0-9a-fA-F" : "[0-9a-fA-F]", in_class ? 9 : 11);
    case 'H':
        if (in_class) *refuse = true;
        return in_class || hearth_buf_put(b, "[^0-9a-fA-F]", 12);
    case 'p': case 'P': {
        const char *close = i + 1 < n && pat[i + 1] == '{' ? memchr(pat + i + 2, '}', n - i - 2)
                                                           : NULL;
        if (!close) break;
        const char *name = pat + i + 2;
        size_t len = (size_t)(close - name);
        neg = e == 'P';
        if (len && name[0] == '^') name++, len--, neg = !neg;
        *used = (size_t)(close - (pat + i)) + 1;
        cls = find_class(name, len, in_class);
        if (!cls || len > 40) { /* a property we keep as PCRE2 has it */
            return hearth_buf_put(b, "\\", 1) && hearth_buf_put(b, neg ? "P{" : "p{", 2) &&
                   hearth_buf_put(b, name, len) && hearth_buf_put(b, "}", 1);
        }
        snprintf(base, sizeof base, "\\p{%.*s}", (int)len, name);
        return put_class(b, base, cls, neg, in_class, refuse);
    }
    default:
        break;
    }
    return hearth_buf_put(b, pat + i - 1, 2);
}

hearth_status tok_regex_compile(const char *pat, size_t n, bool literal, tok_regex **out,
                                hearth_err *err) {
    *out = NULL;
    tok_regex *r = calloc(1, sizeof *r);
    if (!r) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    if (literal) {
        if (n == 0) {
            free(r);
            return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "empty string pattern");
        }
        r->lit = malloc(n);
        if (!r->lit) {
            free(r);
            return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        }
        memcpy(r->lit, pat, n);
        r->lit_n = n;
        *out = r;
        return HEARTH_OK;
    }
    const char *uv = "";
    char ver[32] = "";
    if (pcre2_config(PCRE2_CONFIG_UNICODE_VERSION, ver) > 0) uv = ver;
    if (strcmp(uv, hf_uni_pcre2_unicode))
        hearth_log(HEARTH_LOG_WARN, "tokenizer: PCRE2 has Unicode %s, hearth's class tables were "
                   "made for %s: regex splits may differ from tokenizers on some characters", uv,
                   hf_uni_pcre2_unicode);
    hearth_buf b = {0};
    bool in_class = false, ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        char c = pat[i];
        if (c == '\\' && i + 1 < n) {
            size_t used;
            bool refuse = false;
            ok = translate_escape(pat, n, i + 1, in_class, &b, &used, &refuse);
            if (refuse) {
                hearth_buf_fini(&b);
                free(r);
                return hearth_err_set(err, HEARTH_E_UNSUPPORTED, (int64_t)i,
                                      "regex escape \\%c inside a class", pat[i + 1]);
            }
            i += used;
        } else if (c == '[' && !in_class) {
            in_class = true;
            ok = hearth_buf_put(&b, "[", 1);
            if (i + 1 < n && pat[i + 1] == '^') ok = ok && hearth_buf_put(&b, "^", 1), i++;
            if (i + 1 < n && pat[i + 1] == ']') ok = ok && hearth_buf_put(&b, "\\]", 2), i++;
        } else if (c == '[' && in_class) {
            hearth_buf_fini(&b);
            free(r);
            return hearth_err_set(err, HEARTH_E_UNSUPPORTED, (int64_t)i,
                                  "nested character class in regex");
        } else if (c == ']' && in_class) {
            in_class = false;
            ok = hearth_buf_put(&b, "]", 1);
        } else if (c == '&' && in_class && i + 1 < n && pat[i + 1] == '&') {
            hearth_buf_fini(&b);
            free(r);
            return hearth_err_set(err, HEARTH_E_UNSUPPORTED, (int64_t)i,
                                  "class intersection && in regex");
        } else {
            ok = hearth_buf_put(&b, &c, 1);
        }
    }
    if (!ok) {
        hearth_buf_fini(&b);
        free(r);
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    }
    int ecode;
    PCRE2_SIZE eoff;
    r->re = pcre2_compile((PCRE2_SPTR)(b.p ? b.p : ""), b.len, PCRE2_UTF | PCRE2_UCP, &ecode, &eoff,
                          NULL);
    hearth_buf_fini(&b);
    if (!r->re) {
        PCRE2_UCHAR msg[128];
        pcre2_get_error_message(ecode, msg, sizeof msg);
        free(r);
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, (int64_t)eoff,
                              "regex '%.*s' does not compile: %s", (int)(n > 80 ? 80 : n), pat,
                              (const char *)msg);
    }
    r->jit = pcre2_jit_compile(r->re, PCRE2_JIT_COMPLETE) == 0;
    *out = r;
    return HEARTH_OK;
}

void tok_regex_destroy(tok_regex *r) {
    if (!r) return;
    pcre2_code_free(r->re);
    free(r->lit);
    free(r);
}

void *tok_regex_md_create(void) { return pcre2_match_data_create(4, NULL); }
void  tok_regex_md_free(void *md) { pcre2_match_data_free(md); }

bool tok_regex_find(const tok_regex *r, const char *s, size_t n, size_t start, void *md,
                    size_t *ms, size_t *me) {
    if (start > n) return false;
    if (r->lit) {
        const char *p = memmem(s + start, n - start, r->lit, r->lit_n);
        if (!p) return false;
        *ms = (size_t)(p - s);
        *me = *ms + r->lit_n;
        return true;
    }
    int rc = PCRE2_ERROR_NOMATCH;
    if (r->jit) rc = pcre2_jit_match(r->re, (PCRE2_SPTR)s, n, start, 0, md, NULL);
    if (!r->jit || (rc < 0 && rc != PCRE2_ERROR_NOMATCH))
        rc = pcre2_match(r->re, (PCRE2_SPTR)s, n, start, PCRE2_NO_UTF_CHECK, md, NULL);
    if (rc < 0) return false;
    const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    *ms = ov[0];
    *me = ov[1];
    return true;
}

bool tok_regex_replace(const tok_regex *re, const char *s, size_t n, const char *rep,
                       size_t rep_n, void *md, hearth_buf *out, bool *lead_cut) {
    size_t prev = 0, pos = 0, ms, me;
    while (pos <= n && tok_regex_find(re, s, n, pos, md, &ms, &me)) {
        if (!hearth_buf_put(out, s + prev, ms - prev) || !hearth_buf_put(out, rep, rep_n))
            return false;
        if (lead_cut && ms == 0 && me > 0 && rep_n == 0) *lead_cut = true;
        prev = me;
        if (me > ms) {
            pos = me;
        } else {
            if (ms >= n) break;
            uint32_t cp;
            size_t k = hf_utf8_next(s + ms, n - ms, &cp);
            if (!hearth_buf_put(out, s + ms, k)) return false;
            pos = prev = ms + k;
        }
    }
    return hearth_buf_put(out, s + prev, n - prev);
}

/* ------------------------------------------------------------------ splitting */

/* One part of a cut piece: [s, e) of the piece, is a match or not. */
typedef struct {
    uint32_t s, e;
    bool     match;
} part;

typedef struct {
    part  *v;
    size_t n, cap;
} parts;

static bool parts_push(parts *p, size_t s, size_t e, bool match) {
    if (p->n == p->cap && !hearth_buf_grow(&p->v, &p->cap, p->n + 1, sizeof *p->v, 32))
        return false;
    p->v[p->n++] = (part){(uint32_t)s, (uint32_t)e, match};
    return true;
}

/* Cut by a pattern: matches and gaps (tokenizers' Pattern for a regex). */
static bool cut_regex(const tok_regex *re, const char *s, size_t n, void *md, parts *out) {
    size_t prev = 0, pos = 0, ms, me;
    while (pos <= n && tok_regex_find(re, s, n, pos, md, &ms, &me)) {
        if (prev != ms && !parts_push(out, prev, ms, false)) return false;
        if (!parts_push(out, ms, me, true)) return false;
        prev = me;
        if (me > ms) {
            pos = me;
        } else { /* empty match: step over one character */
            if (ms >= n) break;
            uint32_t cp;
            pos = ms + hf_utf8_next(s + ms, n - ms, &cp);
        }
    }
    if (prev != n && !parts_push(out, prev, n, false)) return false;
    return true;
}

/* Cut by a character predicate: each matching character is one match. flags: any of the
 * HFU_* bits; cp_eq: also match this code point (Metaspace's replacement), 0 = none. */
static bool cut_chars(const char *s, size_t n, uint16_t flags, uint32_t cp_eq, parts *out) {
    size_t last = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = hf_utf8_next(s + i, n - i, &cp);
        if ((flags && (hf_uni_flags(cp) & flags)) || (cp_eq && cp == cp_eq)) {
            if (last < i && !parts_push(out, last, i, false)) return false;
            if (!parts_push(out, i, i + k, true)) return false;
            last = i + k;
        }
        i += k;
    }
    if (last < n && !parts_push(out, last, n, false)) return false;
    return true;
}

/* Apply a behaviour to the parts of piece p; push the surviving non-empty pieces. */
static bool split_parts(parts *ps, tok_split_beh beh, bool invert, tok_piece p, tok_pieces *out) {
    if (invert)
        for (size_t i = 0; i < ps->n; i++) ps->v[i].match = !ps->v[i].match;
    size_t k = 0; /* parts kept, compacted in place: v[0..k) */
    bool prev_match = false;
    switch (beh) {
    case SPLIT_REMOVED:
        for (size_t i = 0; i < ps->n; i++)
            if (!ps->v[i].match) ps->v[k++] = ps->v[i];
        break;
    case SPLIT_ISOLATED:
        k = ps->n;
        break;
    case SPLIT_CONTIGUOUS:
        for (size_t i = 0; i < ps->n; i++) {
            if (k > 0 && ps->v[i].match == prev_match) ps->v[k - 1].e = ps->v[i].e;
            else ps->v[k++] = ps->v[i];
            prev_match = ps->v[i].match;
        }
        break;
    case SPLIT_MERGED_PREV:
        for (size_t i = 0; i < ps->n; i++) {
            if (ps->v[i].match && !prev_match && k > 0) ps->v[k - 1].e = ps->v[i].e;
            else ps->v[k++] = ps->v[i];
            prev_match = ps->v[i].match;
        }
        break;
    case SPLIT_MERGED_NEXT: {
        /* right to left: a match joins the part after it */
        size_t w = ps->n; /* kept parts are v[w..n) */
        for (size_t i = ps->n; i-- > 0;) {
            if (ps->v[i].match && !prev_match && w < ps->n) ps->v[w].s = ps->v[i].s;
            else ps->v[--w] = ps->v[i];
            prev_match = ps->v[i].match;
        }
        memmove(ps->v, ps->v + w, (ps->n - w) * sizeof *ps->v);
        k = ps->n - w;
        break;
    }
    }
    for (size_t i = 0; i < k; i++) {
        if (ps->v[i].e <= ps->v[i].s) continue;
        if (!tok_pieces_push(out, p.off + ps->v[i].s, ps->v[i].e - ps->v[i].s,
                             p.first && ps->v[i].s == 0))
            return false;
    }
    return true;
}

/* ------------------------------------------------------------------ pre-tokenizers */

static const uint8_t gpt2_space = ' ';

/* Metaspace's transform of piece p: ' ' -> replacement, maybe a prepended replacement. */
static bool metaspace_piece(const tok_pt *pt, hearth_buf *buf, tok_piece *p) {
    size_t need = 0;
    for (uint32_t i = 0; i < p->len; i++) need += buf->p[p->off + i] == ' ' ? pt->repl_n : 1;
    if (!hearth_buf_reserve(buf, need + pt->repl_n)) return false;
    size_t start = buf->len;
    const char *src = buf->p + p->off; /* stable: reserved above */
    bool starts_repl = p->len && (src[0] == ' ' || (p->len >= pt->repl_n &&
                                                     !memcmp(src, pt->repl, pt->repl_n)));
    bool pre = pt->prepend == PREPEND_ALWAYS || (pt->prepend == PREPEND_FIRST && p->first);
    if (pre && !starts_repl) hearth_buf_put(buf, pt->repl, pt->repl_n);
    for (uint32_t i = 0; i < p->len; i++) {
        if (src[i] == ' ') hearth_buf_put(buf, pt->repl, pt->repl_n);
        else hearth_buf_put(buf, src + i, 1);
    }
    p->off = (uint32_t)start;
    p->len = (uint32_t)(buf->len - start);
    return true;
}

static bool apply_one(const tok_pt *pt, hearth_buf *buf, tok_piece p, tok_pieces *out, parts *ps,
                      void *md) {
    ps->n = 0;
    const char *s = buf->p + p.off;
    switch (pt->kind) {
    case PT_BYTELEVEL:
        if (pt->add_prefix && buf->p[p.off] != ' ') {
            if (!hearth_buf_reserve(buf, (size_t)p.len + 1)) return false;
            size_t start = buf->len;
            hearth_buf_put(buf, &gpt2_space, 1);
            hearth_buf_put(buf, buf->p + p.off, p.len);
            p.off = (uint32_t)start;
            p.len++;
            s = buf->p + p.off;
        }
        if (!pt->re) return tok_pieces_push(out, p.off, p.len, p.first);
        return cut_regex(pt->re, s, p.len, md, ps) &&
               split_parts(ps, SPLIT_ISOLATED, false, p, out);
    case PT_SPLIT:
        return cut_regex(pt->re, s, p.len, md, ps) && split_parts(ps, pt->beh, pt->invert, p, out);
    case PT_METASPACE: {
        if (!metaspace_piece(pt, buf, &p)) return false;
        if (!pt->split) return tok_pieces_push(out, p.off, p.len, p.first);
        uint32_t cp;
        hf_utf8_next(pt->repl, pt->repl_n, &cp);
        return cut_chars(buf->p + p.off, p.len, 0, cp, ps) &&
               split_parts(ps, SPLIT_MERGED_NEXT, false, p, out);
    }
    case PT_WHITESPACE:
        /* \w+|[^\w\s]+ of the Rust regex crate (its \w has Join_Control): runs of word
         * characters and runs of other non-space characters; spaces go */
        for (uint32_t i = 0; i < p.len;) {
            uint32_t cp;
            size_t k = hf_utf8_next(s + i, p.len - i, &cp);
            uint16_t f = hf_uni_flags(cp);
            if (f & HFU_WS && !(f & HFU_WORD)) {
                i += (uint32_t)k;
                continue;
            }
            bool word = f & HFU_WORD;
            uint32_t e = i + (uint32_t)k;
            while (e < p.len) {
                size_t k2 = hf_utf8_next(s + e, p.len - e, &cp);
                uint16_t f2 = hf_uni_flags(cp);
                if (word ? !(f2 & HFU_WORD) : (f2 & (HFU_WORD | HFU_WS)) != 0) break;
                e += (uint32_t)k2;
            }
            if (!tok_pieces_push(out, p.off + i, e - i, p.first && i == 0)) return false;
            i = e;
        }
        return true;
    case PT_WHITESPACE_SPLIT:
        return cut_chars(s, p.len, HFU_WS, 0, ps) && split_parts(ps, SPLIT_REMOVED, false, p, out);
    case PT_DIGITS:
        return cut_chars(s, p.len, HFU_NUM, 0, ps) &&
               split_parts(ps, pt->individual ? SPLIT_ISOLATED : SPLIT_CONTIGUOUS, false, p, out);
    case PT_PUNCTUATION:
        return cut_chars(s, p.len, HFU_PUNC, 0, ps) && split_parts(ps, pt->beh, false, p, out);
    case PT_BERT:
        /* whitespace removed, then punctuation isolated: both cuts at once, as no character
         * is both (the tables say so) */
        if (!cut_chars(s, p.len, HFU_WS, 0, ps)) return false;
        {
            tok_pieces words = {0};
            bool ok = split_parts(ps, SPLIT_REMOVED, false, p, &words);
            for (size_t i = 0; ok && i < words.n; i++) {
                ps->n = 0;
                ok = cut_chars(buf->p + words.v[i].off, words.v[i].len, HFU_BPUNC, 0, ps) &&
                     split_parts(ps, SPLIT_ISOLATED, false, words.v[i], out);
            }
            free(words.v);
            return ok;
        }
    }
    return false;
}

bool tok_pt_apply(const tok_pt *pts, int n, hearth_buf *buf, tok_pieces *cur, tok_pieces *tmp,
                  void *md) {
    parts ps = {0};
    bool ok = true;
    for (int k = 0; k < n && ok; k++) {
        tmp->n = 0;
        for (size_t i = 0; i < cur->n && ok; i++) ok = apply_one(&pts[k], buf, cur->v[i], tmp, &ps, md);
        tok_pieces t = *cur;
        *cur = *tmp;
        *tmp = t;
    }
    free(ps.v);
    return ok;
}
