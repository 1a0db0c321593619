/*
 * regex.c - the regex subset of regex.h, compiled by recursive descent straight into builder
 * rules:
 *
 *   alternation := sequence ('|' sequence)*      -> a rule with one alternative per branch
 *   sequence    := (atom quantifier?)*           -> a rule referencing each piece in order
 *   atom        := literal | class | '.' | escape | '(' alternation ')'
 *
 * Repetition is hearth_cx_rule_repeat's (tail recursion), so a pattern never needs more stack
 * than its group nesting, which is bounded (MAX_NEST) as are repetition counts (MAX_COUNT).
 */
#include "constrain/regex.h"
#include "constrain/charset.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/utf8.h"

#define MAX_NEST  48
#define MAX_COUNT 10000

typedef struct {
    hearth_cx_builder *b;
    const char        *s;
    size_t             n, i;
    int                depth;
} rx;

static int bad(rx *p, size_t at, const char *what) {
    return hearth_cx_fail(p->b, HEARTH_E_INVALID, "at position %zu: %s", at, what);
}
static int unsup(rx *p, size_t at, const char *what) {
    return hearth_cx_fail(p->b, HEARTH_E_UNSUPPORTED, "at position %zu: %s are not supported", at, what);
}
static int oom(rx *p) { return hearth_cx_fail(p->b, HEARTH_E_NOMEM, "out of memory building a grammar"); }

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* k hex digits at s[i..] into *cp; false when they are not there. */
static bool hex_digits(rx *p, size_t i, int k, uint32_t *cp) {
    uint32_t v = 0;
    for (int j = 0; j < k; j++) {
        if (i + (size_t)j >= p->n || hexval(p->s[i + j]) < 0) return false;
        v = v * 16 + (uint32_t)hexval(p->s[i + j]);
    }
    *cp = v;
    return true;
}

/* The shorthand classes' ASCII ranges into s (negated: their complement); false on OOM. */
static bool shorthand(char c, hearth_cx_cpset *s) {
    hearth_cx_cpset t = {0};
    bool ok = true;
    switch (c | 0x20) {
    case 'd': ok = hearth_cx_cpset_add(&t, '0', '9'); break;
    case 'w':
        ok = hearth_cx_cpset_add(&t, '0', '9') && hearth_cx_cpset_add(&t, 'A', 'Z') &&
             hearth_cx_cpset_add(&t, 'a', 'z') && hearth_cx_cpset_add(&t, '_', '_');
        break;
    default: ok = hearth_cx_cpset_add(&t, ' ', ' ') && hearth_cx_cpset_add(&t, '\t', '\r'); break; /* \t\n\v\f\r */
    }
    if (ok && c >= 'A' && c <= 'Z') ok = hearth_cx_cpset_negate(&t);
    for (int32_t k = 0; ok && k < t.n; k++) ok = hearth_cx_cpset_add(s, t.r[k][0], t.r[k][1]);
    hearth_cx_cpset_free(&t);
    return ok;
}

enum { ESC_CHAR, ESC_CLASS, ESC_FAIL };

/* The escape at s[i] == '\\': one character (*cp) or a shorthand class (*cls, its letter),
 * p->i moved past it; ESC_FAIL with the builder failed. */
static int escape(rx *p, uint32_t *cp, char *cls) {
    size_t at = p->i;
    if (p->i + 1 >= p->n) return bad(p, at, "a trailing backslash"), ESC_FAIL;
    char c = p->s[p->i + 1];
    p->i += 2;
    switch (c) {
    case 'd': case 'D': case 'w': case 'W': case 's': case 'S': *cls = c; return ESC_CLASS;
    case 'n': *cp = '\n'; return ESC_CHAR;
    case 't': *cp = '\t'; return ESC_CHAR;
    case 'r': *cp = '\r'; return ESC_CHAR;
    case 'f': *cp = '\f'; return ESC_CHAR;
    case 'v': *cp = '\v'; return ESC_CHAR;
    case 'a': *cp = '\a'; return ESC_CHAR;
    case '0': *cp = 0; return ESC_CHAR;
    case 'x': case 'u': case 'U': {
        int k = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        if (!hex_digits(p, p->i, k, cp) || *cp > HEARTH_CX_CP_MAX) return bad(p, at, "a bad \\x, \\u or \\U escape"), ESC_FAIL;
        p->i += (size_t)k;
        return ESC_CHAR;
    }
    case 'b': case 'B': case 'A': case 'Z': case 'z': case 'G':
        return unsup(p, at, "anchors and word boundaries inside the pattern"), ESC_FAIL;
    case 'p': case 'P': return unsup(p, at, "Unicode property classes"), ESC_FAIL;
    case 'k': return unsup(p, at, "backreferences"), ESC_FAIL;
    default:
        if (c >= '1' && c <= '9') return unsup(p, at, "backreferences"), ESC_FAIL;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (unsigned char)c >= 0x80)
            return bad(p, at, "an unknown escape"), ESC_FAIL;
        *cp = (uint8_t)c; /* an escaped punctuation character stands for itself */
        return ESC_CHAR;
    }
}

/* One literal character at p->i (UTF-8) into *cp. */
static bool literal(rx *p, uint32_t *cp) {
    int len = (int)hearth_utf8_decode(p->s + p->i, p->n - p->i, cp);
    if (!len) return bad(p, p->i, "the pattern is not valid UTF-8"), false;
    p->i += (size_t)len;
    return true;
}

/* A class member character at p->i: an escape or a literal. 1 a character, 2 a shorthand
 * (added to s), 0 failed. */
static int class_char(rx *p, hearth_cx_cpset *s, uint32_t *cp) {
    if (p->s[p->i] != '\\') return literal(p, cp) ? 1 : 0;
    char cls = 0;
    int k = escape(p, cp, &cls);
    if (k == ESC_FAIL) return 0;
    if (k == ESC_CLASS) return shorthand(cls, s) ? 2 : (oom(p), 0);
    return 1;
}

static int char_class(rx *p) {
    size_t at = p->i++;
    bool neg = p->i < p->n && p->s[p->i] == '^';
    if (neg) p->i++;
    hearth_cx_cpset s = {0};
    bool first = true;
    int r = -1;
    for (;;) {
        if (p->i >= p->n) {
            bad(p, at, "an unterminated character class");
            goto out;
        }
        if (p->s[p->i] == ']' && !first) break;
        first = false;
        if (p->s[p->i] == '[' && p->i + 1 < p->n && p->s[p->i + 1] == ':') {
            unsup(p, p->i, "POSIX classes ([:name:])");
            goto out;
        }
        uint32_t lo = 0, hi = 0;
        int k = class_char(p, &s, &lo);
        if (!k) goto out;
        if (k == 2) continue;
        hi = lo;
        if (p->i + 1 < p->n && p->s[p->i] == '-' && p->s[p->i + 1] != ']') {
            size_t dash = p->i++;
            int k2 = class_char(p, &s, &hi);
            if (!k2) goto out;
            if (k2 == 2 || hi < lo) {
                bad(p, dash, "a bad range in a character class");
                goto out;
            }
        }
        if (!hearth_cx_cpset_add(&s, lo, hi)) {
            oom(p);
            goto out;
        }
    }
    p->i++; /* ] */
    if (neg && !hearth_cx_cpset_negate(&s)) {
        oom(p);
        goto out;
    }
    r = hearth_cx_rule_cpset(p->b, &s);
out:
    hearth_cx_cpset_free(&s);
    return r;
}

static int one_char(rx *p, uint32_t cp) {
    hearth_cx_cpset s = {0};
    int r = hearth_cx_cpset_add(&s, cp, cp) ? hearth_cx_rule_cpset(p->b, &s) : oom(p);
    hearth_cx_cpset_free(&s);
    return r;
}

static int alternation(rx *p);

static int atom(rx *p) {
    size_t at = p->i;
    char c = p->s[p->i];
    switch (c) {
    case '(': {
        p->i++;
        if (p->i < p->n && p->s[p->i] == '?') {
            const char *q = p->s + p->i, *end = p->s + p->n;
            if (end - q >= 2 && q[1] == ':') p->i += 2;
            else if (end - q >= 3 && (q[1] == 'P' || q[1] == '<') && (q[1] == 'P' ? q[2] == '<' : q[2] != '=' && q[2] != '!')) {
                const char *gt = memchr(q, '>', (size_t)(end - q));
                if (!gt) return bad(p, at, "an unterminated group name");
                p->i = (size_t)(gt + 1 - p->s);
            } else if (end - q >= 2 && (q[1] == '=' || q[1] == '!' || q[1] == '<'))
                return unsup(p, at, "lookahead and lookbehind");
            else if (end - q >= 2 && q[1] == 'P')
                return unsup(p, at, "backreferences");
            else
                return unsup(p, at, "inline flags and other (? groups");
        }
        if (++p->depth > MAX_NEST) return hearth_cx_fail(p->b, HEARTH_E_LIMIT, "the pattern nests more than %d groups", MAX_NEST);
        int r = alternation(p);
        p->depth--;
        if (r < 0) return -1;
        if (p->i >= p->n || p->s[p->i] != ')') return bad(p, at, "an unclosed parenthesis");
        p->i++;
        return r;
    }
    case '[': return char_class(p);
    case '.': {
        p->i++;
        hearth_cx_cpset s = {0};
        int r = hearth_cx_cpset_add(&s, '\n', '\n') && hearth_cx_cpset_negate(&s) ? hearth_cx_rule_cpset(p->b, &s) : oom(p);
        hearth_cx_cpset_free(&s);
        return r;
    }
    case '*': case '+': case '?': return bad(p, at, "nothing to repeat");
    case '^': case '$': return unsup(p, at, "anchors inside the pattern");
    case '\\': {
        uint32_t cp = 0;
        char cls = 0;
        int k = escape(p, &cp, &cls);
        if (k == ESC_FAIL) return -1;
        if (k == ESC_CHAR) return one_char(p, cp);
        hearth_cx_cpset s = {0};
        int r = shorthand(cls, &s) ? hearth_cx_rule_cpset(p->b, &s) : oom(p);
        hearth_cx_cpset_free(&s);
        return r;
    }
    default: {
        uint32_t cp = 0;
        return literal(p, &cp) ? one_char(p, cp) : -1;
    }
    }
}

/* A decimal count at p->i (may be absent: *v = -1); false when it is too large. */
static bool count(rx *p, int32_t *v) {
    *v = -1;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
        int64_t x = (*v < 0 ? 0 : *v) * 10 + (p->s[p->i++] - '0');
        if (x > MAX_COUNT) return false;
        *v = (int32_t)x;
    }
    return true;
}

/* {m} {m,} {,n} {m,n} at p->i == '{': 1 read (p->i past it), 0 not a quantifier (a literal
 * brace, as Python reads it), -1 failed. */
static int braces(rx *p, int32_t *min, int32_t *max) {
    size_t at = p->i, save = p->i;
    p->i++;
    int32_t m = -1, n = -1;
    if (!count(p, &m)) return hearth_cx_fail(p->b, HEARTH_E_LIMIT, "at position %zu: a repetition count over %d", at, MAX_COUNT);
    bool comma = p->i < p->n && p->s[p->i] == ',';
    if (comma) {
        p->i++;
        if (!count(p, &n)) return hearth_cx_fail(p->b, HEARTH_E_LIMIT, "at position %zu: a repetition count over %d", at, MAX_COUNT);
    }
    if (p->i >= p->n || p->s[p->i] != '}' || (m < 0 && n < 0)) {
        p->i = save;
        return 0;
    }
    p->i++;
    *min = m < 0 ? 0 : m;
    *max = comma ? n : m; /* {m,}: no bound */
    if (*max >= 0 && *max < *min) return bad(p, at, "a repetition {m,n} with m > n");
    return 1;
}

static int piece(rx *p) {
    int a = atom(p);
    if (a < 0 || p->i >= p->n) return a;
    int32_t min = 0, max = -1;
    size_t at = p->i;
    switch (p->s[p->i]) {
    case '?': min = 0, max = 1, p->i++; break;
    case '*': min = 0, max = -1, p->i++; break;
    case '+': min = 1, max = -1, p->i++; break;
    case '{': {
        int k = braces(p, &min, &max);
        if (k < 0) return -1;
        if (k == 0) return a;
        break;
    }
    default: return a;
    }
    if (p->i < p->n && p->s[p->i] == '?') p->i++; /* lazy: the same language */
    else if (p->i < p->n && p->s[p->i] == '+') return unsup(p, p->i, "possessive repetitions");
    if (p->i < p->n && (p->s[p->i] == '*' || p->s[p->i] == '+' || p->s[p->i] == '?'))
        return bad(p, at, "a repetition of a repetition");
    return hearth_cx_rule_repeat(p->b, a, -1, min, max);
}

static int sequence(rx *p) {
    int r = hearth_cx_rule(p->b);
    if (r < 0 || hearth_cx_alt(p->b, r)) return -1;
    while (p->i < p->n && p->s[p->i] != '|' && p->s[p->i] != ')') {
        int x = piece(p);
        if (x < 0 || hearth_cx_ref(p->b, r, x)) return -1;
    }
    return r;
}

static int alternation(rx *p) {
    int *all = NULL, n = 0, r = -1;
    size_t cap = 0;
    for (;;) {
        int x = sequence(p);
        if (x < 0) goto out;
        if (!hearth_buf_grow(&all, &cap, (size_t)n + 1, sizeof *all, 64)) {
            oom(p);
            goto out;
        }
        all[n++] = x;
        if (p->i < p->n && p->s[p->i] == '|') p->i++;
        else break;
    }
    r = hearth_cx_rule_any(p->b, all, n);
out:
    free(all);
    return r;
}

int hearth_cx_regex(hearth_cx_builder *b, const char *re, size_t n) {
    rx p = {.b = b, .s = re, .n = n};
    if (p.n && re[0] == '^') p.i++;
    /* a final unescaped $ (an even run of backslashes before it) */
    if (p.n > p.i && re[p.n - 1] == '$') {
        size_t k = 0;
        while (k + 1 < p.n && re[p.n - 2 - k] == '\\') k++;
        if (k % 2 == 0) p.n--;
    }
    int r = alternation(&p);
    if (r >= 0 && p.i < p.n) return bad(&p, p.i, "an unbalanced parenthesis");
    return r;
}
