/*
 * gbnf.c - GBNF text to builder rules (see gbnf.h), in two passes over the text.
 *
 * The first pass checks the syntax and finds every rule's name and where its body starts; it
 * compiles into a scratch builder that is thrown away (references resolve to a placeholder),
 * so the second pass may assume well-formed text. The second compiles on demand from the
 * root: a reference to a rule not yet built builds it first (the builder wants rules before
 * their users), which also finds recursion: a reference to a rule still being built is a
 * cycle, allowed only as that rule's own tail call at the top of one of its alternatives
 * (there the reference goes straight into the rule's alternative, which the builder runs as a
 * tail call).
 */
#include "constrain/gbnf.h"
#include "constrain/charset.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/size.h"
#include "base/utf8.h"

#define MAX_NEST  48   /* open parentheses in one rule */
#define MAX_CHAIN 80   /* rules being built at once (a reference chain) */
#define MAX_LEVELS 128 /* rules being built and groups open in them, together (the C stack) */
#define MAX_COUNT 10000

typedef struct {
    size_t name, len; /* the name in the text */
    size_t body;      /* where its alternatives start */
    int    id;        /* the builder rule (second pass) */
    int    state;     /* 0 not built, 1 being built, 2 built */
} def;

typedef struct {
    size_t at, len;
} ref;

typedef struct {
    hearth_cx_builder *b; /* the builder of this pass */
    const char        *s;
    size_t             n, i;
    bool               dry;  /* first pass */
    int                placeholder;
    def               *defs;
    int                n_defs;
    size_t             cap_defs;
    ref               *refs; /* first pass: every reference, checked against defs at the end */
    int                n_refs;
    size_t             cap_refs;
    int               *tab;   /* name table: def index or -1, tab_cap a power of two */
    size_t             tab_cap;
    int                cur;   /* the def being built (second pass) */
    int                nest, chain, levels;
} gp;

static int fail(gp *p, hearth_status code, size_t at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(gp *p, hearth_status code, size_t at, const char *fmt, ...) {
    int line = 1, col = 1;
    for (size_t k = 0; k < at && k < p->n; k++) {
        if (p->s[k] == '\n') line++, col = 1;
        else col++;
    }
    char msg[120];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return hearth_cx_fail(p->b, code, "at line %d, column %d: %s", line, col, msg);
}
static int oom(gp *p) { return hearth_cx_fail(p->b, HEARTH_E_NOMEM, "out of memory building a grammar"); }

static bool is_word(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Skip blanks and comments; newlines too when nl. */
static void ws(gp *p, bool nl) {
    while (p->i < p->n) {
        char c = p->s[p->i];
        if (c == ' ' || c == '\t' || (nl && (c == '\n' || c == '\r'))) p->i++;
        else if (c == '#') {
            while (p->i < p->n && p->s[p->i] != '\n' && p->s[p->i] != '\r') p->i++;
        } else break;
    }
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One character of a literal or class at p->i (an escape or UTF-8) into *cp. */
static bool one_char(gp *p, uint32_t *cp) {
    size_t at = p->i;
    if (p->s[p->i] != '\\') {
        int len = (int)hearth_utf8_decode(p->s + p->i, p->n - p->i, cp);
        if (!len) return fail(p, HEARTH_E_INVALID, at, "the grammar is not valid UTF-8"), false;
        p->i += (size_t)len;
        return true;
    }
    if (p->i + 1 >= p->n) return fail(p, HEARTH_E_INVALID, at, "a trailing backslash"), false;
    char c = p->s[p->i + 1];
    p->i += 2;
    int k = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
    if (k) {
        uint32_t v = 0;
        for (int j = 0; j < k; j++, p->i++) {
            if (p->i >= p->n || hexval(p->s[p->i]) < 0)
                return fail(p, HEARTH_E_INVALID, at, "a bad \\%c escape", c), false;
            v = v * 16 + (uint32_t)hexval(p->s[p->i]);
        }
        if (v > HEARTH_CX_CP_MAX) return fail(p, HEARTH_E_INVALID, at, "a code point over U+10FFFF"), false;
        *cp = v;
        return true;
    }
    switch (c) {
    case 'n': *cp = '\n'; return true;
    case 't': *cp = '\t'; return true;
    case 'r': *cp = '\r'; return true;
    case '0': *cp = 0; return true;
    default:
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || (unsigned char)c >= 0x80)
            return fail(p, HEARTH_E_INVALID, at, "an unknown escape \\%c", c), false;
        *cp = (uint8_t)c; /* \\ \" \[ \] \- and other punctuation stand for themselves */
        return true;
    }
}

static int literal(gp *p) {
    size_t at = p->i++;
    char *buf = malloc(p->n - p->i + 4); /* a literal's bytes never outnumber its text's */
    if (!buf) return oom(p);
    size_t len = 0;
    int r = -1;
    while (p->i < p->n && p->s[p->i] != '"') {
        uint32_t cp;
        if (!one_char(p, &cp)) goto out;
        len += hearth_utf8_encode(cp, buf + len);
    }
    if (p->i >= p->n) {
        fail(p, HEARTH_E_INVALID, at, "an unterminated literal");
        goto out;
    }
    p->i++;
    r = hearth_cx_rule_lit(p->b, buf, len);
out:
    free(buf);
    return r;
}

static int char_class(gp *p) {
    size_t at = p->i++;
    bool neg = p->i < p->n && p->s[p->i] == '^';
    if (neg) p->i++;
    hearth_cx_cpset s = {0};
    int r = -1;
    while (p->i < p->n && p->s[p->i] != ']') {
        uint32_t lo, hi;
        if (!one_char(p, &lo)) goto out;
        hi = lo;
        if (p->i + 1 < p->n && p->s[p->i] == '-' && p->s[p->i + 1] != ']') {
            size_t dash = p->i++;
            if (!one_char(p, &hi)) goto out;
            if (hi < lo) {
                fail(p, HEARTH_E_INVALID, dash, "a range whose end is before its start");
                goto out;
            }
        }
        if (!hearth_cx_cpset_add(&s, lo, hi)) {
            oom(p);
            goto out;
        }
    }
    if (p->i >= p->n) {
        fail(p, HEARTH_E_INVALID, at, "an unterminated character class");
        goto out;
    }
    p->i++;
    if (neg && !hearth_cx_cpset_negate(&s)) {
        oom(p);
        goto out;
    }
    if (!s.n) {
        fail(p, HEARTH_E_INVALID, at, "an empty character class");
        goto out;
    }
    r = hearth_cx_rule_cpset(p->b, &s);
out:
    hearth_cx_cpset_free(&s);
    return r;
}

static uint32_t name_hash(const char *s, size_t n) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t k = 0; k < n; k++) h = (h ^ (uint8_t)s[k]) * 16777619u;
    return h;
}

/* The def named s[at..at+len), or -1 (an open-addressed table of def indices). */
static int find_def(gp *p, size_t at, size_t len) {
    if (!p->tab_cap) return -1;
    for (uint32_t h = name_hash(p->s + at, len) & (uint32_t)(p->tab_cap - 1);; h = (h + 1) & (uint32_t)(p->tab_cap - 1)) {
        int k = p->tab[h];
        if (k < 0) return -1;
        if (p->defs[k].len == len && !memcmp(p->s + p->defs[k].name, p->s + at, len)) return k;
    }
}

/* Enter def k into the table (kept at most half full). */
static bool index_def(gp *p, int k) {
    size_t need = 2 * ((size_t)p->n_defs + 1), cap;
    if (need > p->tab_cap) {
        if (!hearth_grow_cap(p->tab_cap, need, sizeof *p->tab, 64, &cap)) return false;
        int *t = malloc(cap * sizeof *t);
        if (!t) return false;
        for (size_t i = 0; i < cap; i++) t[i] = -1;
        free(p->tab);
        p->tab = t;
        p->tab_cap = cap;
        for (int i = 0; i < p->n_defs; i++)
            if (i != k && !index_def(p, i)) return false;
    }
    uint32_t h = name_hash(p->s + p->defs[k].name, p->defs[k].len) & (uint32_t)(p->tab_cap - 1);
    while (p->tab[h] >= 0) h = (h + 1) & (uint32_t)(p->tab_cap - 1);
    p->tab[h] = k;
    return true;
}

static int alternates(gp *p, int r);

/* Build def d (second pass). */
static int build(gp *p, int d) {
    if (p->chain >= MAX_CHAIN || p->levels >= MAX_LEVELS)
        return hearth_cx_fail(p->b, HEARTH_E_LIMIT, "rules refer to rules too deeply (at most %d rules and groups open)",
                              MAX_LEVELS);
    size_t i = p->i;
    int cur = p->cur, nest = p->nest;
    int id = hearth_cx_rule(p->b);
    if (id < 0) return -1;
    p->defs[d].id = id;
    p->defs[d].state = 1;
    p->cur = d;
    p->nest = 0;
    p->chain++;
    p->levels++;
    p->i = p->defs[d].body;
    int ok = alternates(p, id);
    p->chain--;
    p->levels--;
    p->defs[d].state = 2;
    p->i = i;
    p->cur = cur;
    p->nest = nest;
    return ok < 0 ? -1 : id;
}

/* After a name at p->i: does the alternative end here (no repetition, nothing after it)? */
static bool ends_alternative(gp *p) {
    size_t i = p->i;
    ws(p, false);
    bool end = p->i >= p->n || p->s[p->i] == '|' || p->s[p->i] == '\n' || p->s[p->i] == '\r';
    p->i = i;
    return end;
}

/* A reference at p->i. *self: it is the current rule's tail call (to be appended as is). */
static int reference(gp *p, bool *self) {
    size_t at = p->i;
    while (p->i < p->n && is_word(p->s[p->i])) p->i++;
    size_t len = p->i - at;
    *self = false;
    if (p->dry) {
        if (!hearth_buf_grow(&p->refs, &p->cap_refs, (size_t)p->n_refs + 1, sizeof *p->refs, 16)) return oom(p);
        p->refs[p->n_refs++] = (ref){at, len};
        return p->placeholder;
    }
    int d = find_def(p, at, len); /* defined: the first pass checked */
    if (p->defs[d].state == 2) return p->defs[d].id;
    if (p->defs[d].state == 0) return build(p, d);
    if (d == p->cur && p->nest == 0 && ends_alternative(p)) {
        *self = true;
        return p->defs[d].id;
    }
    return fail(p, HEARTH_E_UNSUPPORTED, at,
                "rule '%.*s' is recursive: only a rule's reference to itself at the end of its own alternative "
                "is supported",
                (int)(len > 40 ? 40 : len), p->s + at);
}

/* A decimal count (absent: -1); false when too large. */
static bool count(gp *p, int32_t *v) {
    *v = -1;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
        int64_t x = (*v < 0 ? 0 : *v) * 10 + (p->s[p->i++] - '0');
        if (x > MAX_COUNT) return false;
        *v = (int32_t)x;
    }
    return true;
}

/* A repetition after an item (x: the item's rule): the repeated rule, x itself when there is
 * none, -1 on failure. */
static int repetition(gp *p, int x) {
    if (p->i >= p->n) return x;
    size_t at = p->i;
    int32_t min, max;
    switch (p->s[p->i]) {
    case '?': min = 0, max = 1; break;
    case '*': min = 0, max = -1; break;
    case '+': min = 1, max = -1; break;
    case '{': {
        p->i++;
        ws(p, false);
        int32_t m, n = -1;
        if (!count(p, &m)) return fail(p, HEARTH_E_LIMIT, at, "a repetition count over %d", MAX_COUNT);
        ws(p, false);
        bool comma = p->i < p->n && p->s[p->i] == ',';
        if (comma) {
            p->i++;
            ws(p, false);
            if (!count(p, &n)) return fail(p, HEARTH_E_LIMIT, at, "a repetition count over %d", MAX_COUNT);
            ws(p, false);
        }
        if (p->i >= p->n || p->s[p->i] != '}' || (m < 0 && !comma))
            return fail(p, HEARTH_E_INVALID, at, "a malformed repetition: expected {m}, {m,}, {,n} or {m,n}");
        min = m < 0 ? 0 : m;
        max = comma ? n : m;
        if (max >= 0 && max < min) return fail(p, HEARTH_E_INVALID, at, "a repetition {m,n} with m > n");
        break;
    }
    default: return x;
    }
    p->i++;
    return hearth_cx_rule_repeat(p->b, x, -1, min, max);
}

/* Items appended to rule r's open alternative, up to `|`, `)` or (outside groups) the line's end. */
static int sequence(gp *p, int r) {
    for (;;) {
        ws(p, p->nest > 0);
        if (p->i >= p->n) return 0;
        size_t at = p->i;
        char c = p->s[at];
        if (c == '|' || c == ')' || c == '\n' || c == '\r') return 0;
        int x;
        bool self = false;
        if (c == '"') x = literal(p);
        else if (c == '[') x = char_class(p);
        else if (c == '.') {
            p->i++;
            hearth_cx_cpset s = {0};
            x = hearth_cx_cpset_add(&s, 0, HEARTH_CX_CP_MAX) ? hearth_cx_rule_cpset(p->b, &s) : oom(p);
            hearth_cx_cpset_free(&s);
        } else if (c == '(') {
            if (p->nest >= MAX_NEST || p->levels >= MAX_LEVELS)
                return fail(p, HEARTH_E_LIMIT, at, "more than %d nested groups", MAX_NEST);
            p->i++;
            p->nest++;
            p->levels++;
            x = hearth_cx_rule(p->b);
            if (x < 0 || alternates(p, x) < 0) return -1;
            ws(p, true);
            if (p->i >= p->n || p->s[p->i] != ')') return fail(p, HEARTH_E_INVALID, at, "an unclosed parenthesis");
            p->i++;
            p->nest--;
            p->levels--;
        } else if (is_word(c)) {
            x = reference(p, &self);
        } else if (c == '<' || c == '!') {
            return fail(p, HEARTH_E_UNSUPPORTED, at, "token references (<...>) are not supported");
        } else {
            return fail(p, HEARTH_E_INVALID, at, "unexpected '%c'", c);
        }
        if (x < 0) return -1;
        if (!self && (x = repetition(p, x)) < 0) return -1;
        if (hearth_cx_ref(p->b, r, x)) return -1;
    }
}

/* Alternatives of rule r: sequence ('|' sequence)*. */
static int alternates(gp *p, int r) {
    for (;;) {
        if (hearth_cx_alt(p->b, r) || sequence(p, r) < 0) return -1;
        if (p->i < p->n && p->s[p->i] == '|') {
            p->i++;
            ws(p, true);
            continue;
        }
        return 0;
    }
}

/* The first pass: syntax, definitions, references. */
static int scan(gp *p) {
    ws(p, true);
    while (p->i < p->n) {
        size_t at = p->i;
        while (p->i < p->n && is_word(p->s[p->i])) p->i++;
        if (p->i == at) return fail(p, HEARTH_E_INVALID, at, "expected a rule name");
        size_t len = p->i - at;
        ws(p, false);
        if (p->n - p->i < 3 || memcmp(p->s + p->i, "::=", 3))
            return fail(p, HEARTH_E_INVALID, p->i, "expected '::=' after the rule name");
        p->i += 3;
        if (find_def(p, at, len) >= 0)
            return fail(p, HEARTH_E_INVALID, at, "rule '%.*s' is defined twice", (int)(len > 40 ? 40 : len), p->s + at);
        if (!hearth_buf_grow(&p->defs, &p->cap_defs, (size_t)p->n_defs + 1, sizeof *p->defs, 16)) return oom(p);
        ws(p, true);
        p->defs[p->n_defs] = (def){.name = at, .len = len, .body = p->i};
        if (!index_def(p, p->n_defs)) return oom(p);
        p->n_defs++;
        int r = hearth_cx_rule(p->b);
        if (r < 0 || alternates(p, r) < 0) return -1;
        if (p->i < p->n && p->s[p->i] == ')') return fail(p, HEARTH_E_INVALID, p->i, "an unbalanced ')'");
        ws(p, true);
    }
    for (int k = 0; k < p->n_refs; k++)
        if (find_def(p, p->refs[k].at, p->refs[k].len) < 0)
            return fail(p, HEARTH_E_INVALID, p->refs[k].at, "rule '%.*s' is not defined",
                        (int)(p->refs[k].len > 40 ? 40 : p->refs[k].len), p->s + p->refs[k].at);
    return 0;
}

int hearth_cx_gbnf(hearth_cx_builder *b, const char *g, size_t n) {
    if (hearth_cx_builder_status(b, NULL)) return -1;
    gp p = {.b = hearth_cx_builder_create(hearth_cx_limits_default()), .s = g, .n = n, .dry = true, .cur = -1};
    if (!p.b) return hearth_cx_fail(b, HEARTH_E_NOMEM, "out of memory building a grammar");
    p.placeholder = hearth_cx_rule(p.b);
    if (p.placeholder >= 0) hearth_cx_alt(p.b, p.placeholder);
    int r = -1;
    if (scan(&p) < 0) {
        const char *msg = "";
        hearth_status st = hearth_cx_builder_status(p.b, &msg);
        hearth_cx_fail(b, st ? st : HEARTH_E_INVALID, "%s", msg);
        goto out;
    }
    hearth_cx_builder_destroy(p.b);
    p.b = b;
    p.dry = false;
    int root = -1;
    for (int k = 0; k < p.n_defs && root < 0; k++)
        if (p.defs[k].len == 4 && !memcmp(g + p.defs[k].name, "root", 4)) root = k;
    if (root < 0) {
        hearth_cx_fail(b, HEARTH_E_INVALID, "the grammar has no 'root' rule");
        goto out;
    }
    p.i = 0;
    r = build(&p, root);
out:
    if (p.b != b) hearth_cx_builder_destroy(p.b);
    free(p.defs);
    free(p.refs);
    free(p.tab);
    return r;
}
