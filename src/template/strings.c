/*
 * strings.c - Python's str methods over UTF-8 strings: case mapping, strip, split,
 * splitlines, find/count/replace, and the padding helpers. Indices are code points, as in
 * Python; whitespace is Python's (str.isspace), case mapping is Unicode's simple mapping from
 * utf8proc plus the few full mappings templates could meet (ß -> SS, İ -> i̇).
 *
 * Every result is a new string in the render arena; a Markup input gives a Markup result where
 * markupsafe's Markup overrides the method (case mapping, strip, padding), as jinja2 would see.
 */
#include "template/tmpl_internal.h"

#include <string.h>
#include <utf8proc.h>

static tv mk(rt *r, tbuf *b, tv like) {
    tv v = rt_strv(r, b->p ? b->p : "", b->len);
    v.flags = like.flags & TVF_MARKUP;
    return v;
}

static void put_cp(rt *r, tbuf *b, uint32_t cp) {
    char enc[4];
    buf_put(r, b, enc, utf8_enc(cp, enc));
}

static bool is_cased(uint32_t cp) {
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT;
}

static void put_upper(rt *r, tbuf *b, uint32_t cp) {
    if (cp == 0xDF) {
        buf_puts(r, b, "SS");
        return;
    }
    put_cp(r, b, cp < 0x80 ? (cp >= 'a' && cp <= 'z' ? cp - 32 : cp) : (uint32_t)utf8proc_toupper((utf8proc_int32_t)cp));
}

static void put_lower(rt *r, tbuf *b, uint32_t cp) {
    if (cp == 0x130) {
        buf_puts(r, b, "i\xcc\x87");
        return;
    }
    put_cp(r, b, cp < 0x80 ? (cp >= 'A' && cp <= 'Z' ? cp + 32 : cp) : (uint32_t)utf8proc_tolower((utf8proc_int32_t)cp));
}

static void put_title(rt *r, tbuf *b, uint32_t cp) {
    if (cp == 0xDF) {
        buf_puts(r, b, "Ss");
        return;
    }
    put_cp(r, b, cp < 0x80 ? (cp >= 'a' && cp <= 'z' ? cp - 32 : cp) : (uint32_t)utf8proc_totitle((utf8proc_int32_t)cp));
}


static bool jinja_title_sep(uint32_t cp) { return cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || py_isspace(cp); }

tv str_case(rt *r, tv s, case_mode mode) {
    const tstr *t = s.u.s;
    tbuf b = {0};
    bool prev_cased = false, first = true;
    uint32_t prev = 0;
    for (size_t i = 0; i < t->len;) {
        size_t len;
        uint32_t cp = utf8_dec(t->p + i, t->len - i, &len);
        switch (mode) {
        case CASE_UPPER: put_upper(r, &b, cp); break;
        case CASE_LOWER: put_lower(r, &b, cp); break;
        case CASE_SWAP: {
            utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
            if (c == UTF8PROC_CATEGORY_LU) put_lower(r, &b, cp);
            else if (c == UTF8PROC_CATEGORY_LL) put_upper(r, &b, cp);
            else put_cp(r, &b, cp);
            break;
        }
        case CASE_CAPITALIZE:
            if (first) put_title(r, &b, cp);
            else put_lower(r, &b, cp);
            break;
        case CASE_TITLE:
            if (prev_cased) put_lower(r, &b, cp);
            else put_title(r, &b, cp);
            prev_cased = is_cased(cp);
            break;
        case CASE_JINJA_TITLE: /* item[0].upper() + item[1:].lower() per word of r"([-\s({\[<]+)" */
            if (first || jinja_title_sep(prev)) put_upper(r, &b, cp);
            else put_lower(r, &b, cp);
            break;
        }
        first = false;
        prev = cp;
        i += len;
    }
    return mk(r, &b, s);
}

/* ---- strip ------------------------------------------------------------------------------------- */

static bool in_chars(const tstr *chars, uint32_t cp) {
    if (!chars) return py_isspace(cp);
    for (size_t i = 0; i < chars->len;) {
        size_t len;
        if (utf8_dec(chars->p + i, chars->len - i, &len) == cp) return true;
        i += len;
    }
    return false;
}

/* Code point start before byte offset b (b > 0). */
static size_t prev_cp(const char *p, size_t b) {
    size_t k = b - 1;
    while (k > 0 && ((unsigned char)p[k] & 0xC0) == 0x80 && b - k < 4) k--;
    size_t len;
    utf8_dec(p + k, b - k, &len);
    return k + len == b ? k : b - 1;
}

tv str_strip(rt *r, tv s, const tstr *chars, bool left, bool right) {
    const tstr *t = s.u.s;
    size_t a = 0, b = t->len, len;
    while (left && a < b && in_chars(chars, utf8_dec(t->p + a, b - a, &len))) a += len;
    while (right && b > a) {
        size_t k = prev_cp(t->p, b);
        if (!in_chars(chars, utf8_dec(t->p + k, b - k, &len))) break;
        b = k;
    }
    if (a == 0 && b == t->len) return s;
    tv v = rt_strv(r, t->p + a, b - a);
    v.flags = s.flags & TVF_MARKUP;
    return v;
}

/* ---- split ------------------------------------------------------------------------------------- */

static void push_piece(rt *r, tlist *l, const char *p, size_t n) {
    rt_step(r, NULL, 1);
    list_push(r, l, rt_strv(r, p, n));
}

tlist *str_split(rt *r, const node *at, const tstr *s, const tstr *sep, int64_t maxsplit) {
    tlist *l = rt_list(r, 0);
    const char *p = s->p;
    size_t n = s->len, i = 0, len;
    if (!sep) { /* runs of whitespace; leading/trailing ignored */
        for (;;) {
            while (i < n && py_isspace(utf8_dec(p + i, n - i, &len))) i += len;
            if (i >= n) break;
            if (maxsplit >= 0 && (int64_t)l->n >= maxsplit) { /* the rest, trailing spaces kept */
                push_piece(r, l, p + i, n - i);
                break;
            }
            size_t a = i;
            while (i < n && !py_isspace(utf8_dec(p + i, n - i, &len))) i += len;
            push_piece(r, l, p + a, i - a);
        }
        return l;
    }
    if (sep->len == 0) rt_fail(r, at, HEARTH_E_INVALID, "empty separator");
    for (;;) {
        const char *hit = maxsplit >= 0 && (int64_t)l->n >= maxsplit ? NULL : memmem(p + i, n - i, sep->p, sep->len);
        if (!hit) {
            push_piece(r, l, p + i, n - i);
            return l;
        }
        push_piece(r, l, p + i, (size_t)(hit - (p + i)));
        i = (size_t)(hit - p) + sep->len;
    }
}

/* Python's rsplit: the same pieces as split when maxsplit is unlimited. */
tlist *str_rsplit(rt *r, const node *at, const tstr *s, const tstr *sep, int64_t maxsplit) {
    if (maxsplit < 0) return str_split(r, at, s, sep, -1);
    tlist *rev = rt_list(r, 0);
    const char *p = s->p;
    size_t e = s->len, len;
    if (!sep) {
        for (;;) {
            while (e > 0) {
                size_t k = prev_cp(p, e);
                if (!py_isspace(utf8_dec(p + k, e - k, &len))) break;
                e = k;
            }
            if (e == 0) break;
            if ((int64_t)rev->n >= maxsplit) { /* the rest, leading spaces kept */
                push_piece(r, rev, p, e);
                break;
            }
            size_t a = e;
            while (a > 0) {
                size_t k = prev_cp(p, a);
                if (py_isspace(utf8_dec(p + k, a - k, &len))) break;
                a = k;
            }
            push_piece(r, rev, p + a, e - a);
            e = a;
        }
    } else {
        if (sep->len == 0) rt_fail(r, at, HEARTH_E_INVALID, "empty separator");
        for (;;) {
            const char *hit = NULL;
            if ((int64_t)rev->n < maxsplit)
                for (size_t k = e >= sep->len ? e - sep->len + 1 : 0; k-- > 0;)
                    if (memcmp(p + k, sep->p, sep->len) == 0) {
                        hit = p + k;
                        break;
                    }
            if (!hit) {
                push_piece(r, rev, p, e);
                break;
            }
            size_t k = (size_t)(hit - p);
            push_piece(r, rev, p + k + sep->len, e - k - sep->len);
            e = k;
        }
    }
    tlist *l = rt_list(r, rev->n);
    for (size_t i = rev->n; i-- > 0;) l->v[l->n++] = rev->v[i];
    return l;
}

static size_t line_break_at(const char *p, size_t n, size_t i) {
    unsigned char c = (unsigned char)p[i];
    if (c == '\r') return i + 1 < n && p[i + 1] == '\n' ? 2 : 1;
    if (c == '\n' || c == '\v' || c == '\f' || (c >= 0x1C && c <= 0x1E)) return 1;
    if (c >= 0x80) {
        size_t len;
        uint32_t cp = utf8_dec(p + i, n - i, &len);
        if (cp == 0x85 || cp == 0x2028 || cp == 0x2029) return len;
    }
    return 0;
}

tlist *str_splitlines(rt *r, const tstr *s, bool keepends) {
    tlist *l = rt_list(r, 0);
    size_t a = 0;
    for (size_t i = 0; i < s->len;) {
        size_t k = line_break_at(s->p, s->len, i);
        if (!k) {
            i++;
            continue;
        }
        push_piece(r, l, s->p + a, (keepends ? i + k : i) - a);
        i += k;
        a = i;
    }
    if (a < s->len) push_piece(r, l, s->p + a, s->len - a);
    return l;
}

/* ---- search -------------------------------------------------------------------------------------- */

/* Python's slice-style bounds (start/end as code point indices, may be negative or absent)
 * turned into byte offsets [*a, *b) of s. False when the range is empty past the end. */
bool str_bounds(const tstr *s, const tv *start, const tv *end, size_t *a, size_t *b) {
    int64_t n = (int64_t)s->ncp, lo = 0, hi = n;
    if (start && start->kind != TV_NONE && start->kind != TV_UNDEF) {
        lo = start->kind == TV_BOOL ? start->u.b : start->u.i;
        if (lo < 0) lo = lo + n < 0 ? 0 : lo + n;
    }
    if (end && end->kind != TV_NONE && end->kind != TV_UNDEF) {
        hi = end->kind == TV_BOOL ? end->u.b : end->u.i;
        if (hi < 0) hi = hi + n < 0 ? 0 : hi + n;
        if (hi > n) hi = n;
    }
    if (lo > n) return false;
    if (hi < lo) hi = lo;
    *a = tstr_off(s, (size_t)lo);
    *b = tstr_off(s, (size_t)hi);
    return true;
}

/* Index (code points) of sub in s[a..b), searching from the right when rev; -1 if absent. */
int64_t str_find(const tstr *s, const tstr *sub, size_t a, size_t b, bool rev) {
    if (sub->len > b - a) return -1;
    size_t hit = SIZE_MAX;
    if (!rev) {
        const char *h = sub->len ? memmem(s->p + a, b - a, sub->p, sub->len) : s->p + a;
        if (h) hit = (size_t)(h - s->p);
    } else {
        for (size_t k = b - sub->len + 1; k-- > a;)
            if (memcmp(s->p + k, sub->p, sub->len) == 0) {
                hit = k;
                break;
            }
    }
    if (hit == SIZE_MAX) return -1;
    return (int64_t)utf8_count(s->p, hit, NULL);
}

int64_t str_count(const tstr *s, const tstr *sub, size_t a, size_t b) {
    if (sub->len == 0) return (int64_t)utf8_count(s->p + a, b - a, NULL) + 1;
    int64_t n = 0;
    const char *p = s->p + a, *end = s->p + b, *h;
    while ((size_t)(end - p) >= sub->len && (h = memmem(p, (size_t)(end - p), sub->p, sub->len))) {
        n++;
        p = h + sub->len;
    }
    return n;
}

tv str_replace(rt *r, const tstr *s, const tstr *old, const tstr *new, int64_t count) {
    tbuf b = {0};
    if (count < 0) count = INT64_MAX;
    if (old->len == 0) { /* Python inserts `new` before every character and at the end */
        size_t i = 0, len;
        int64_t done = 0;
        while (i <= s->len) {
            if (done < count) {
                buf_put(r, &b, new->p, new->len);
                done++;
            }
            if (i == s->len) break;
            utf8_dec(s->p + i, s->len - i, &len);
            buf_put(r, &b, s->p + i, len);
            i += len;
        }
        return rt_strv(r, b.p ? b.p : "", b.len);
    }
    const char *p = s->p, *end = s->p + s->len, *h;
    while (count > 0 && (size_t)(end - p) >= old->len && (h = memmem(p, (size_t)(end - p), old->p, old->len))) {
        buf_put(r, &b, p, (size_t)(h - p));
        buf_put(r, &b, new->p, new->len);
        p = h + old->len;
        count--;
    }
    buf_put(r, &b, p, (size_t)(end - p));
    return rt_strv(r, b.p ? b.p : "", b.len);
}

/* center/ljust/rjust: align 0 left, 1 center, 2 right (Python's padding split for center). */
tv str_pad(rt *r, tv s, int64_t width, const tstr *fill, int align) {
    const tstr *t = s.u.s;
    if (width <= (int64_t)t->ncp) return s;
    if (width > (int64_t)r->lim.max_output_bytes) rt_fail(r, NULL, HEARTH_E_LIMIT, "padding width too large");
    size_t pad = (size_t)width - t->ncp, left = 0;
    if (align == 1) left = pad / 2 + (pad & (size_t)width & 1);
    else if (align == 2) left = pad;
    tbuf b = {0};
    for (size_t i = 0; i < left; i++) buf_put(r, &b, fill->p, fill->len);
    buf_put(r, &b, t->p, t->len);
    for (size_t i = left; i < pad; i++) buf_put(r, &b, fill->p, fill->len);
    return mk(r, &b, s);
}

/* str.isdigit() and friends: kind 0 digit, 1 decimal, 2 numeric, 3 alpha, 4 alnum, 5 space,
 * 6 lower, 7 upper, 8 ascii. */
bool str_is(const tstr *s, int kind) {
    if (kind == 8) {
        for (size_t i = 0; i < s->len; i++)
            if ((unsigned char)s->p[i] >= 0x80) return false;
        return true;
    }
    if (s->len == 0) return false;
    bool any_cased = false;
    for (size_t i = 0; i < s->len;) {
        size_t len;
        uint32_t cp = utf8_dec(s->p + i, s->len - i, &len);
        i += len;
        utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
        bool digit = c == UTF8PROC_CATEGORY_ND, numeric = digit || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
        bool alpha = c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT ||
                     c == UTF8PROC_CATEGORY_LM || c == UTF8PROC_CATEGORY_LO;
        switch (kind) {
        case 0: if (!digit && !(c == UTF8PROC_CATEGORY_NO && cp >= 0xB2 && cp <= 0xB9)) return false; break;
        case 1: if (!digit) return false; break;
        case 2: if (!numeric) return false; break;
        case 3: if (!alpha) return false; break;
        case 4: if (!alpha && !numeric) return false; break;
        case 5: if (!py_isspace(cp)) return false; break;
        case 6:
            if (c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LT) return false;
            if (c == UTF8PROC_CATEGORY_LL) any_cased = true;
            break;
        case 7:
            if (c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT) return false;
            if (c == UTF8PROC_CATEGORY_LU) any_cased = true;
            break;
        }
    }
    return kind == 6 || kind == 7 ? any_cased : true;
}
