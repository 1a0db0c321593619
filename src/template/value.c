/*
 * value.c - the value model of the interpreter: strings, lists, dicts and Python's rules for
 * them (truthiness, ==, ordering, str() and repr(), float repr, Markup concatenation).
 *
 * Values are 16-byte tagged unions passed by value; strings, lists and dicts point into the
 * render arena (or, for literals, the template's arena) and are immutable once built, except a
 * namespace's attribute dict. Python's printing rules matter because templates print whatever
 * they hold: `{{ none }}` is "None", `{{ [1, 'a'] }}` is "[1, 'a']", 1e16 is "1e+16".
 */
#include "template/tmpl_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "base/size.h"

/* Python's str.isspace(): the characters with the White_Space property plus \x1c-\x1f. */
bool py_isspace(uint32_t c) {
    if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

size_t tstr_off(const tstr *s, size_t i) {
    if (s->ncp == s->len) return i;
    size_t off = 0;
    while (i-- > 0 && off < s->len) {
        size_t len;
        utf8_dec(s->p + off, s->len - off, &len);
        off += len;
    }
    return off;
}

/* ---- allocation ---------------------------------------------------------------------------- */

tstr *tstr_new(hearth_arena *a, const char *p, size_t n) {
    size_t total;
    if (!hearth_add_size(sizeof(tstr) + 1, n, &total)) return NULL;
    tstr *s = hearth_arena_alloc(a, total);
    if (!s) return NULL;
    char *d = (char *)(s + 1);
    if (n) memcpy(d, p, n);
    d[n] = 0;
    s->p = d;
    s->len = n;
    s->ncp = utf8_count(d, n, NULL);
    s->owner = NULL;
    return s;
}

static _Noreturn void rt_too_big(rt *r) {
    rt_fail(r, NULL, HEARTH_E_LIMIT, "the template needs more than %zu bytes of memory", r->mem_cap);
}

static _Noreturn void rt_nomem(rt *r) { rt_fail(r, NULL, HEARTH_E_NOMEM, "out of memory rendering the template"); }

static bool rt_fits(const rt *r, size_t n) { return n <= r->mem_cap && r->arena.used_bytes <= r->mem_cap - n; }

void *rt_alloc(rt *r, size_t n) {
    if (!rt_fits(r, n)) rt_too_big(r);
    void *p = hearth_arena_calloc(&r->arena, 1, n ? n : 1);
    if (!p) rt_nomem(r);
    return p;
}

void rt_grow(rt *r, void *pp, size_t *cap, size_t n, size_t need, size_t elem_bytes, size_t first) {
    if (need <= *cap) return;
    size_t c;
    if (!hearth_grow_cap(*cap, need, elem_bytes, first, &c) || !rt_fits(r, c * elem_bytes)) rt_too_big(r);
    if (!hearth_arena_grow(&r->arena, pp, cap, n, need, elem_bytes, first)) rt_nomem(r);
}

static void check_str_len(rt *r, const node *at, size_t n) {
    if (n > r->lim.max_output_bytes)
        rt_fail(r, at, HEARTH_E_LIMIT, "a string of %zu bytes exceeds the output limit (%zu bytes)", n,
                r->lim.max_output_bytes);
}

const tstr *rt_str(rt *r, const char *p, size_t n) {
    check_str_len(r, NULL, n);
    if (!rt_fits(r, sizeof(tstr) + n + 1)) rt_too_big(r); /* n is bounded by the output limit */
    tstr *s = tstr_new(&r->arena, p, n);
    if (!s) rt_nomem(r);
    return s;
}

tv rt_strv(rt *r, const char *p, size_t n) { return tv_strv(rt_str(r, p, n)); }
tv rt_cstrv(rt *r, const char *s) { return rt_strv(r, s, strlen(s)); }

tv str_concat(rt *r, const node *at, const tstr *a, const tstr *b, bool markup) {
    size_t total;
    if (!hearth_add_size(a->len, b->len, &total)) rt_fail(r, at, HEARTH_E_LIMIT, "string too long");
    check_str_len(r, at, total);
    tstr *s = rt_alloc(r, sizeof *s);
    strbuf *o = a->owner;
    if (o && o->data == a->p && o->used == a->len && o->cap - o->used > b->len) {
        memcpy(o->data + o->used, b->p, b->len); /* a keeps its length: it does not see the tail */
        o->used = total;
        o->data[total] = 0;
    } else {
        o = rt_alloc(r, sizeof *o);
        rt_grow(r, &o->data, &o->cap, 0, total + 1, 1, 16);
        memcpy(o->data, a->p, a->len);
        memcpy(o->data + a->len, b->p, b->len);
        o->used = total;
    }
    s->p = o->data;
    s->len = total;
    s->ncp = a->ncp + b->ncp;
    s->owner = o;
    tv v = tv_strv(s);
    if (markup) v.flags = TVF_MARKUP;
    return v;
}

tv str_escape(rt *r, tv v) {
    if (v.kind == TV_STR && (v.flags & TVF_MARKUP)) return v;
    tbuf b = {0};
    if (v.kind != TV_STR) v = tv_to_strv(r, v);
    {
        for (size_t i = 0; i < v.u.s->len; i++) {
            char c = v.u.s->p[i];
            switch (c) {
            case '&': buf_puts(r, &b, "&amp;"); break;
            case '<': buf_puts(r, &b, "&lt;"); break;
            case '>': buf_puts(r, &b, "&gt;"); break;
            case '"': buf_puts(r, &b, "&#34;"); break;
            case '\'': buf_puts(r, &b, "&#39;"); break;
            default: buf_putc(r, &b, c);
            }
        }
    }
    tv out = rt_strv(r, b.p ? b.p : "", b.len);
    out.flags = TVF_MARKUP;
    return out;
}

/* ---- lists and dicts ------------------------------------------------------------------------ */

tlist *rt_list(rt *r, size_t cap) {
    tlist *l = rt_alloc(r, sizeof *l);
    if (cap) {
        size_t bytes;
        if (!hearth_mul_size(cap, sizeof(tv), &bytes)) rt_fail(r, NULL, HEARTH_E_LIMIT, "list too long");
        l->v = rt_alloc(r, bytes);
        l->cap = cap;
    }
    return l;
}

void list_push(rt *r, tlist *l, tv v) {
    rt_grow(r, &l->v, &l->cap, l->n, l->n + 1, sizeof(tv), 4);
    l->v[l->n++] = v;
}

tdict *rt_dict(rt *r, size_t cap) {
    tdict *d = rt_alloc(r, sizeof *d);
    size_t bytes;
    if (cap) {
        if (!hearth_mul_size(cap, sizeof(tv), &bytes)) rt_too_big(r);
        d->k = rt_alloc(r, bytes);
        d->v = rt_alloc(r, bytes);
        d->cap = cap;
    }
    return d;
}

static uint64_t hash_bytes(const char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

/* Python makes 1, 1.0 and True one key: equal numbers hash alike here too. */
static uint64_t tv_hash(tv k) {
    switch ((tv_kind)k.kind) {
    case TV_STR: return hash_bytes(k.u.s->p, k.u.s->len);
    case TV_BOOL: return (uint64_t)k.u.b * 0x9E3779B97F4A7C15ull;
    case TV_INT: return (uint64_t)k.u.i * 0x9E3779B97F4A7C15ull;
    case TV_FLOAT:
        if (k.u.f == floor(k.u.f) && fabs(k.u.f) < 9.2e18) return (uint64_t)(int64_t)k.u.f * 0x9E3779B97F4A7C15ull;
        return hash_bytes((const char *)&k.u.f, sizeof k.u.f);
    case TV_NONE: return 0x51ED270B27ull;
    case TV_UNDEF: return 0x0DEF1E7ull; /* jinja2: every Undefined hashes alike and is equal */
    case TV_LIST: {
        if (k.u.l->gen) return (uint64_t)(uintptr_t)k.u.l * 0x9E3779B97F4A7C15ull; /* identity */
        uint64_t h = 0x345678;
        for (size_t i = 0; i < k.u.l->n; i++) h = (h ^ tv_hash(k.u.l->v[i])) * 1000003ull;
        return h;
    }
    case TV_NS: return (uint64_t)(uintptr_t)k.u.d;
    default: return 7;
    }
}

/* Equality for keys: like tv_eq, without recursion limits (keys come from JSON or literals). */
static bool key_eq(tv a, tv b) {
    if (a.kind == TV_STR && b.kind == TV_STR)
        return a.u.s->len == b.u.s->len && memcmp(a.u.s->p, b.u.s->p, a.u.s->len) == 0;
    bool an = a.kind == TV_INT || a.kind == TV_BOOL || a.kind == TV_FLOAT;
    bool bn = b.kind == TV_INT || b.kind == TV_BOOL || b.kind == TV_FLOAT;
    if (an && bn) {
        if (a.kind != TV_FLOAT && b.kind != TV_FLOAT)
            return (a.kind == TV_BOOL ? a.u.b : a.u.i) == (b.kind == TV_BOOL ? b.u.b : b.u.i);
        double x = a.kind == TV_FLOAT ? a.u.f : a.kind == TV_BOOL ? a.u.b : (double)a.u.i;
        double y = b.kind == TV_FLOAT ? b.u.f : b.kind == TV_BOOL ? b.u.b : (double)b.u.i;
        return x == y;
    }
    if (a.kind != b.kind) return false;
    if (a.kind == TV_NONE || a.kind == TV_UNDEF) return true;
    if (a.kind == TV_LIST) {
        if (a.u.l->gen || b.u.l->gen) return a.u.l == b.u.l;
        if (a.u.l->n != b.u.l->n || (a.flags & TVF_TUPLE) != (b.flags & TVF_TUPLE)) return false;
        for (size_t i = 0; i < a.u.l->n; i++)
            if (!key_eq(a.u.l->v[i], b.u.l->v[i])) return false;
        return true;
    }
    /* namespaces, macros, functions, loops: Python objects hashed by identity */
    return a.kind == TV_NS ? a.u.d == b.u.d : a.kind == TV_MACRO ? a.u.m == b.u.m
         : a.kind == TV_FUNC ? a.u.fn == b.u.fn : a.kind == TV_LOOP && a.u.loop == b.u.loop;
}

static void dict_reindex(rt *r, tdict *d, size_t cap) {
    d->idx = rt_alloc(r, cap * sizeof *d->idx);
    d->idx_cap = cap;
    for (size_t e = 0; e < d->n; e++) {
        size_t s = (size_t)tv_hash(d->k[e]) & (cap - 1);
        while (d->idx[s]) s = (s + 1) & (cap - 1);
        d->idx[s] = (uint32_t)(e + 1);
    }
}

static long dict_find(const tdict *d, tv k) {
    if (d->idx_cap) {
        size_t s = (size_t)tv_hash(k) & (d->idx_cap - 1);
        while (d->idx[s]) {
            size_t e = d->idx[s] - 1;
            if (key_eq(d->k[e], k)) return (long)e;
            s = (s + 1) & (d->idx_cap - 1);
        }
        return -1;
    }
    for (size_t e = 0; e < d->n; e++)
        if (key_eq(d->k[e], k)) return (long)e;
    return -1;
}

void dict_set(rt *r, tdict *d, tv k, tv v) {
    if (k.kind == TV_LIST && !(k.flags & TVF_TUPLE) && !k.u.l->gen)
        rt_fail(r, NULL, HEARTH_E_INVALID, "unhashable type: 'list'");
    if (k.kind == TV_DICT) rt_fail(r, NULL, HEARTH_E_INVALID, "unhashable type: 'dict'");
    long e = dict_find(d, k);
    if (e >= 0) {
        d->v[e] = v;
        return;
    }
    if (d->n >= UINT32_MAX - 1) rt_fail(r, NULL, HEARTH_E_LIMIT, "dict too large");
    size_t cap_k = d->cap; /* keys and values share one capacity */
    rt_grow(r, &d->k, &cap_k, d->n, d->n + 1, sizeof(tv), 4);
    rt_grow(r, &d->v, &d->cap, d->n, d->n + 1, sizeof(tv), 4);
    d->k[d->n] = k;
    d->v[d->n] = v;
    d->n++;
    size_t idx_cap;
    if (d->n > 8 && d->n * 2 > d->idx_cap) {
        if (!hearth_grow_cap(d->idx_cap, d->n * 2 + 1, sizeof *d->idx, 32, &idx_cap)) rt_too_big(r);
        dict_reindex(r, d, idx_cap);
    } else if (d->idx_cap) {
        size_t s = (size_t)tv_hash(k) & (d->idx_cap - 1);
        while (d->idx[s]) s = (s + 1) & (d->idx_cap - 1);
        d->idx[s] = (uint32_t)d->n;
    }
}

bool dict_get(const tdict *d, tv k, tv *out) {
    long e = dict_find(d, k);
    if (e < 0) return false;
    *out = d->v[e];
    return true;
}

bool dict_gets(const tdict *d, const char *k, size_t n, tv *out) {
    tstr s = {k, n, n, NULL};
    return dict_get(d, tv_strv(&s), out);
}

/* ---- truth, equality, order ------------------------------------------------------------------ */

bool tv_truthy(tv v) {
    switch ((tv_kind)v.kind) {
    case TV_UNDEF:
    case TV_NONE: return false;
    case TV_BOOL: return v.u.b;
    case TV_INT: return v.u.i != 0;
    case TV_FLOAT: return v.u.f != 0;
    case TV_STR: return v.u.s->len > 0;
    case TV_LIST: return v.u.l->gen || v.u.l->n > 0; /* a generator object is always true */
    case TV_DICT: return v.u.d->n > 0;
    default: return true;
    }
}

static bool is_num(tv v) { return v.kind == TV_INT || v.kind == TV_BOOL || v.kind == TV_FLOAT; }
static double num_f(tv v) { return v.kind == TV_FLOAT ? v.u.f : v.kind == TV_BOOL ? (double)v.u.b : (double)v.u.i; }
static int64_t num_i(tv v) { return v.kind == TV_BOOL ? (int64_t)v.u.b : v.u.i; }

bool tv_eq(rt *r, tv a, tv b) {
    if (is_num(a) && is_num(b)) {
        if (a.kind != TV_FLOAT && b.kind != TV_FLOAT) return num_i(a) == num_i(b);
        return num_f(a) == num_f(b);
    }
    if (a.kind != b.kind) return false;
    switch ((tv_kind)a.kind) {
    case TV_UNDEF:
    case TV_NONE: return true;
    case TV_STR: return a.u.s->len == b.u.s->len && memcmp(a.u.s->p, b.u.s->p, a.u.s->len) == 0;
    case TV_LIST:
        if (a.u.l == b.u.l) return true;
        if (a.u.l->gen || b.u.l->gen) return false; /* a generator equals only itself */
        if (a.u.l->is_range != b.u.l->is_range) return false; /* range(2) != [0, 1] */
        if ((a.flags & TVF_TUPLE) != (b.flags & TVF_TUPLE) || a.u.l->n != b.u.l->n) return false;
        rt_enter(r, NULL);
        for (size_t i = 0; i < a.u.l->n; i++)
            if (!tv_eq(r, a.u.l->v[i], b.u.l->v[i])) {
                rt_leave(r);
                return false;
            }
        rt_leave(r);
        return true;
    case TV_DICT:
        if (a.u.d->n != b.u.d->n) return false;
        if (a.u.d == b.u.d) return true;
        rt_enter(r, NULL);
        for (size_t i = 0; i < a.u.d->n; i++) {
            tv other;
            if (!dict_get(b.u.d, a.u.d->k[i], &other) || !tv_eq(r, a.u.d->v[i], other)) {
                rt_leave(r);
                return false;
            }
        }
        rt_leave(r);
        return true;
    case TV_NS: return a.u.d == b.u.d;
    case TV_MACRO: return a.u.m == b.u.m;
    case TV_FUNC: return a.u.fn == b.u.fn;
    case TV_LOOP: return a.u.loop == b.u.loop;
    default: return false;
    }
}

const char *tv_type_name(tv v) {
    switch ((tv_kind)v.kind) {
    case TV_UNDEF: return "Undefined";
    case TV_NONE: return "NoneType";
    case TV_BOOL: return "bool";
    case TV_INT: return "int";
    case TV_FLOAT: return "float";
    case TV_STR: return v.flags & TVF_MARKUP ? "Markup" : "str";
    case TV_LIST: return v.u.l->gen ? "generator" : v.u.l->is_range ? "range" : v.flags & TVF_TUPLE ? "tuple" : "list";
    case TV_DICT: return "dict";
    case TV_NS: return "Namespace";
    case TV_MACRO: return "Macro";
    case TV_FUNC: return "builtin_function_or_method";
    case TV_LOOP: return "LoopContext";
    }
    return "object";
}

int tv_cmp(rt *r, const node *at, tv a, tv b) {
    if (is_num(a) && is_num(b)) {
        if (a.kind != TV_FLOAT && b.kind != TV_FLOAT) return num_i(a) < num_i(b) ? -1 : num_i(a) > num_i(b);
        double x = num_f(a), y = num_f(b);
        return x < y ? -1 : x > y;
    }
    if (a.kind == TV_STR && b.kind == TV_STR) {
        size_t n = a.u.s->len < b.u.s->len ? a.u.s->len : b.u.s->len;
        int c = n ? memcmp(a.u.s->p, b.u.s->p, n) : 0;
        if (c) return c < 0 ? -1 : 1;
        return a.u.s->len < b.u.s->len ? -1 : a.u.s->len > b.u.s->len;
    }
    if (a.kind == TV_LIST && b.kind == TV_LIST && (a.flags & TVF_TUPLE) == (b.flags & TVF_TUPLE) && !a.u.l->gen &&
        !b.u.l->gen && a.u.l->is_range == b.u.l->is_range && !a.u.l->is_range) {
        rt_enter(r, at);
        for (size_t i = 0; i < a.u.l->n && i < b.u.l->n; i++) {
            if (tv_eq(r, a.u.l->v[i], b.u.l->v[i])) continue;
            int c = tv_cmp(r, at, a.u.l->v[i], b.u.l->v[i]);
            rt_leave(r);
            return c;
        }
        rt_leave(r);
        return a.u.l->n < b.u.l->n ? -1 : a.u.l->n > b.u.l->n;
    }
    if (a.kind == TV_UNDEF || b.kind == TV_UNDEF)
        rt_fail(r, at, HEARTH_E_INVALID, "an undefined value cannot be compared");
    rt_fail(r, at, HEARTH_E_INVALID, "'<' not supported between instances of '%s' and '%s'", tv_type_name(a),
            tv_type_name(b));
}

/* ---- str() and repr() -------------------------------------------------------------------------- */

void py_float_repr(double f, char out[32]) {
    if (isnan(f)) {
        strcpy(out, "nan");
        return;
    }
    if (isinf(f)) {
        strcpy(out, f < 0 ? "-inf" : "inf");
        return;
    }
    if (f == 0) {
        strcpy(out, signbit(f) ? "-0.0" : "0.0");
        return;
    }
    char buf[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec - 1, f);
        if (strtod(buf, NULL) == f) break;
    }
    /* buf is [-]d[.ddd]e[+-]XX */
    char digits[24] = {0};
    int nd = 0;
    const char *p = buf;
    bool neg = *p == '-';
    if (neg) p++;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[nd++] = *p;
    int exp = atoi(p + 1);
    char *o = out;
    if (neg) *o++ = '-';
    if (exp >= -4 && exp < 16) {
        int decpt = exp + 1;
        if (decpt <= 0) {
            *o++ = '0';
            *o++ = '.';
            for (int i = 0; i < -decpt; i++) *o++ = '0';
            for (int i = 0; i < nd; i++) *o++ = digits[i];
        } else if (decpt >= nd) {
            for (int i = 0; i < nd; i++) *o++ = digits[i];
            for (int i = nd; i < decpt; i++) *o++ = '0';
            *o++ = '.';
            *o++ = '0';
        } else {
            for (int i = 0; i < nd; i++) {
                if (i == decpt) *o++ = '.';
                *o++ = digits[i];
            }
        }
        *o = 0;
    } else {
        *o++ = digits[0];
        if (nd > 1) {
            *o++ = '.';
            for (int i = 1; i < nd; i++) *o++ = digits[i];
        }
        int ae = exp < 0 ? -exp : exp;
        *o++ = 'e';
        *o++ = exp < 0 ? '-' : '+';
        if (ae >= 100) *o++ = (char)('0' + ae / 100);
        *o++ = (char)('0' + ae / 10 % 10);
        *o++ = (char)('0' + ae % 10);
        *o = 0;
    }
}

static bool py_isprintable(uint32_t cp) {
    if (cp < 0x80) return cp >= 0x20 && cp < 0x7F;
    if (cp >= 0xD800 && cp <= 0xDFFF) return false;
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS: return false;
    default: return true;
    }
}

static void repr_str(rt *r, tbuf *b, const tstr *s) {
    bool sq = memchr(s->p, '\'', s->len) != NULL, dq = memchr(s->p, '"', s->len) != NULL;
    char q = sq && !dq ? '"' : '\'';
    buf_putc(r, b, q);
    for (size_t i = 0; i < s->len;) {
        size_t len;
        uint32_t cp = utf8_dec(s->p + i, s->len - i, &len);
        char tmp[16];
        if (cp == (uint32_t)q || cp == '\\') {
            buf_putc(r, b, '\\');
            buf_putc(r, b, (char)cp);
        } else if (cp == '\t') {
            buf_puts(r, b, "\\t");
        } else if (cp == '\n') {
            buf_puts(r, b, "\\n");
        } else if (cp == '\r') {
            buf_puts(r, b, "\\r");
        } else if (py_isprintable(cp)) {
            buf_put(r, b, s->p + i, len);
        } else {
            if (cp <= 0xFF) snprintf(tmp, sizeof tmp, "\\x%02x", cp);
            else if (cp <= 0xFFFF) snprintf(tmp, sizeof tmp, "\\u%04x", cp);
            else snprintf(tmp, sizeof tmp, "\\U%08x", cp);
            buf_puts(r, b, tmp);
        }
        i += len;
    }
    buf_putc(r, b, q);
}

static void put_repr(rt *r, tbuf *b, tv v, bool as_str);

static void repr_dict(rt *r, tbuf *b, const tdict *d) {
    buf_putc(r, b, '{');
    for (size_t i = 0; i < d->n; i++) {
        if (i) buf_puts(r, b, ", ");
        put_repr(r, b, d->k[i], false);
        buf_puts(r, b, ": ");
        put_repr(r, b, d->v[i], false);
    }
    buf_putc(r, b, '}');
}

static void put_repr(rt *r, tbuf *b, tv v, bool as_str) {
    char tmp[96];
    switch ((tv_kind)v.kind) {
    case TV_UNDEF:
        if (!as_str) buf_puts(r, b, "Undefined");
        return;
    case TV_NONE: buf_puts(r, b, "None"); return;
    case TV_BOOL: buf_puts(r, b, v.u.b ? "True" : "False"); return;
    case TV_INT:
        snprintf(tmp, sizeof tmp, "%lld", (long long)v.u.i);
        buf_puts(r, b, tmp);
        return;
    case TV_FLOAT:
        py_float_repr(v.u.f, tmp);
        buf_puts(r, b, tmp);
        return;
    case TV_STR:
        if (as_str) {
            buf_put(r, b, v.u.s->p, v.u.s->len);
        } else if (v.flags & TVF_MARKUP) {
            buf_puts(r, b, "Markup(");
            repr_str(r, b, v.u.s);
            buf_putc(r, b, ')');
        } else {
            repr_str(r, b, v.u.s);
        }
        return;
    case TV_LIST: {
        bool tuple = v.flags & TVF_TUPLE;
        if (v.u.l->gen) { /* Python prints the object's address; there is nothing to match */
            buf_puts(r, b, "<generator object>");
            return;
        }
        if (v.u.l->is_range) {
            if (v.u.l->r_step == 1)
                snprintf(tmp, sizeof tmp, "range(%lld, %lld)", (long long)v.u.l->r_start, (long long)v.u.l->r_stop);
            else
                snprintf(tmp, sizeof tmp, "range(%lld, %lld, %lld)", (long long)v.u.l->r_start,
                         (long long)v.u.l->r_stop, (long long)v.u.l->r_step);
            buf_puts(r, b, tmp);
            return;
        }
        rt_enter(r, NULL);
        buf_putc(r, b, tuple ? '(' : '[');
        for (size_t i = 0; i < v.u.l->n; i++) {
            if (i) buf_puts(r, b, ", ");
            put_repr(r, b, v.u.l->v[i], false);
        }
        if (tuple && v.u.l->n == 1) buf_putc(r, b, ',');
        buf_putc(r, b, tuple ? ')' : ']');
        rt_leave(r);
        return;
    }
    case TV_DICT:
        rt_enter(r, NULL);
        repr_dict(r, b, v.u.d);
        rt_leave(r);
        return;
    case TV_NS:
        rt_enter(r, NULL);
        buf_puts(r, b, "<Namespace ");
        repr_dict(r, b, v.u.d);
        buf_putc(r, b, '>');
        rt_leave(r);
        return;
    case TV_MACRO:
        buf_puts(r, b, "<Macro ");
        if (v.u.m->name) repr_str(r, b, v.u.m->name);
        else buf_puts(r, b, "anonymous"); /* a call block's caller */
        buf_putc(r, b, '>');
        return;
    case TV_FUNC:
        snprintf(tmp, sizeof tmp, "<built-in method %s>", v.u.fn->name);
        buf_puts(r, b, tmp);
        return;
    case TV_LOOP:
        snprintf(tmp, sizeof tmp, "<LoopContext %zu/%zu>", v.u.loop->i + 1, v.u.loop->items->n);
        buf_puts(r, b, tmp);
        return;
    }
}

void tv_str(rt *r, tbuf *b, tv v) { put_repr(r, b, v, true); }
void tv_repr(rt *r, tbuf *b, tv v) { put_repr(r, b, v, false); }

tv tv_to_strv(rt *r, tv v) {
    if (v.kind == TV_STR) return v;
    tbuf b = {0};
    tv_str(r, &b, v);
    return rt_strv(r, b.p ? b.p : "", b.len);
}
