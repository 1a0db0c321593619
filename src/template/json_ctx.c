/*
 * json_ctx.c - JSON in and out of the value model: the render context (json.loads) and the
 * `tojson` filter (transformers' json.dumps with ensure_ascii=False by default).
 *
 * NOTE: the reader is our own rather than cJSON because Python keeps the difference between 1
 * and 1.0 (json.loads gives int and float) and `tojson` prints it back: a tool schema's
 * "minimum": 1 must render as 1, not 1.0, to be byte-identical with transformers. It reads what
 * json.loads reads: NaN/Infinity/-Infinity, surrogate-pair escapes (a lone surrogate is kept),
 * duplicate keys (the last value wins at the first key's place); it refuses control characters
 * in strings and invalid UTF-8, like the strict decoder. Integers beyond 64 bits are refused.
 * Nesting is bounded by the render's recursion limit.
 */
#include "template/tmpl_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    rt         *r;
    const char *s;
    size_t      n, i;
} jreader;

_Noreturn static void jfail(jreader *j, const char *what) {
    rt_fail(j->r, NULL, HEARTH_E_FORMAT, "context JSON: %s at byte %zu", what, j->i);
}

static void jws(jreader *j) {
    while (j->i < j->n && (j->s[j->i] == ' ' || j->s[j->i] == '\t' || j->s[j->i] == '\n' || j->s[j->i] == '\r'))
        j->i++;
}

static bool jlit(jreader *j, const char *lit) {
    size_t k = strlen(lit);
    if (j->n - j->i >= k && memcmp(j->s + j->i, lit, k) == 0) {
        j->i += k;
        return true;
    }
    return false;
}

/* Strict UTF-8 (no surrogates, no overlongs), as Python's decoder. */
static bool utf8_strict(const char *p, size_t n) { return hearth_utf8_valid(p, n, NULL); }

static int hex4(jreader *j) {
    if (j->n - j->i < 4) jfail(j, "truncated \\u escape");
    int v = 0;
    for (int k = 0; k < 4; k++) {
        char c = j->s[j->i + (size_t)k];
        int d = c >= '0' && c <= '9' ? c - '0' : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10 : -1;
        if (d < 0) jfail(j, "invalid \\u escape");
        v = v * 16 + d;
    }
    j->i += 4;
    return v;
}

static const tstr *jstring(jreader *j) {
    j->i++; /* opening quote */
    size_t start = j->i;
    /* fast path: no escapes */
    while (j->i < j->n && j->s[j->i] != '"' && j->s[j->i] != '\\') {
        if ((unsigned char)j->s[j->i] < 0x20) jfail(j, "invalid control character in a string");
        j->i++;
    }
    if (j->i < j->n && j->s[j->i] == '"') {
        j->i++;
        return rt_str(j->r, j->s + start, j->i - 1 - start);
    }
    tbuf b = {0};
    buf_put(j->r, &b, j->s + start, j->i - start);
    for (;;) {
        if (j->i >= j->n) jfail(j, "unterminated string");
        char c = j->s[j->i];
        if (c == '"') {
            j->i++;
            break;
        }
        if ((unsigned char)c < 0x20) jfail(j, "invalid control character in a string");
        if (c != '\\') {
            buf_putc(j->r, &b, c);
            j->i++;
            continue;
        }
        if (++j->i >= j->n) jfail(j, "unterminated string");
        char e = j->s[j->i++];
        switch (e) {
        case '"': buf_putc(j->r, &b, '"'); break;
        case '\\': buf_putc(j->r, &b, '\\'); break;
        case '/': buf_putc(j->r, &b, '/'); break;
        case 'b': buf_putc(j->r, &b, '\b'); break;
        case 'f': buf_putc(j->r, &b, '\f'); break;
        case 'n': buf_putc(j->r, &b, '\n'); break;
        case 'r': buf_putc(j->r, &b, '\r'); break;
        case 't': buf_putc(j->r, &b, '\t'); break;
        case 'u': {
            uint32_t cp = (uint32_t)hex4(j);
            if (cp >= 0xD800 && cp <= 0xDBFF && j->n - j->i >= 6 && j->s[j->i] == '\\' && j->s[j->i + 1] == 'u') {
                size_t save = j->i;
                j->i += 2;
                uint32_t lo = (uint32_t)hex4(j);
                if (lo >= 0xDC00 && lo <= 0xDFFF) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                else j->i = save;
            }
            char enc[4];
            buf_put(j->r, &b, enc, utf8_enc(cp, enc));
            break;
        }
        default: jfail(j, "invalid escape");
        }
    }
    return rt_str(j->r, b.p ? b.p : "", b.len);
}

static tv jnumber(jreader *j) {
    size_t a = j->i;
    if (j->s[j->i] == '-') j->i++;
    if (j->i >= j->n || j->s[j->i] < '0' || j->s[j->i] > '9') jfail(j, "expecting a value");
    if (j->s[j->i] == '0') j->i++;
    else
        while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9') j->i++;
    bool is_float = false;
    if (j->i + 1 < j->n && j->s[j->i] == '.' && j->s[j->i + 1] >= '0' && j->s[j->i + 1] <= '9') {
        is_float = true;
        j->i++;
        while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9') j->i++;
    }
    if (j->i < j->n && (j->s[j->i] | 32) == 'e') {
        size_t k = j->i + 1;
        if (k < j->n && (j->s[k] == '+' || j->s[k] == '-')) k++;
        if (k < j->n && j->s[k] >= '0' && j->s[k] <= '9') {
            is_float = true;
            j->i = k;
            while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9') j->i++;
        }
    }
    char tmp[64];
    size_t len = j->i - a;
    if (len >= sizeof tmp) {
        if (!is_float) rt_fail(j->r, NULL, HEARTH_E_UNSUPPORTED, "context JSON: integer out of 64-bit range");
        char *big = rt_alloc(j->r, len + 1);
        memcpy(big, j->s + a, len);
        return tv_float(strtod(big, NULL));
    }
    memcpy(tmp, j->s + a, len);
    tmp[len] = 0;
    if (is_float) return tv_float(strtod(tmp, NULL));
    errno = 0;
    long long v = strtoll(tmp, NULL, 10);
    if (errno) rt_fail(j->r, NULL, HEARTH_E_UNSUPPORTED, "context JSON: integer out of 64-bit range");
    return tv_int(v);
}

static tv jvalue(jreader *j) {
    jws(j);
    if (j->i >= j->n) jfail(j, "expecting a value");
    char c = j->s[j->i];
    if (c == '"') return tv_strv(jstring(j));
    if (c == '{' || c == '[') {
        rt_enter(j->r, NULL);
        j->i++;
        tv out;
        if (c == '{') {
            tdict *d = rt_dict(j->r, 0);
            jws(j);
            if (j->i < j->n && j->s[j->i] == '}') {
                j->i++;
            } else {
                for (;;) {
                    jws(j);
                    if (j->i >= j->n || j->s[j->i] != '"') jfail(j, "expecting a property name in double quotes");
                    tv k = tv_strv(jstring(j));
                    jws(j);
                    if (j->i >= j->n || j->s[j->i] != ':') jfail(j, "expecting ':'");
                    j->i++;
                    dict_set(j->r, d, k, jvalue(j));
                    jws(j);
                    if (j->i < j->n && j->s[j->i] == ',') {
                        j->i++;
                        continue;
                    }
                    if (j->i < j->n && j->s[j->i] == '}') {
                        j->i++;
                        break;
                    }
                    jfail(j, "expecting ',' or '}'");
                }
            }
            out = tv_dictv(d);
        } else {
            tlist *l = rt_list(j->r, 0);
            jws(j);
            if (j->i < j->n && j->s[j->i] == ']') {
                j->i++;
            } else {
                for (;;) {
                    list_push(j->r, l, jvalue(j));
                    jws(j);
                    if (j->i < j->n && j->s[j->i] == ',') {
                        j->i++;
                        continue;
                    }
                    if (j->i < j->n && j->s[j->i] == ']') {
                        j->i++;
                        break;
                    }
                    jfail(j, "expecting ',' or ']'");
                }
            }
            out = tv_listv(l);
        }
        rt_leave(j->r);
        return out;
    }
    if (jlit(j, "null")) return tv_none();
    if (jlit(j, "true")) return tv_bool(true);
    if (jlit(j, "false")) return tv_bool(false);
    if (jlit(j, "NaN")) return tv_float(NAN);
    if (jlit(j, "Infinity")) return tv_float(INFINITY);
    if (jlit(j, "-Infinity")) return tv_float(-INFINITY);
    return jnumber(j);
}

hearth_status json_to_tv(rt *r, const char *s, size_t n, tv *out) {
    if (!utf8_strict(s, n)) rt_fail(r, NULL, HEARTH_E_FORMAT, "context JSON is not valid UTF-8");
    jreader j = {r, s, n, 0};
    *out = jvalue(&j);
    jws(&j);
    if (j.i != j.n) jfail(&j, "extra data");
    return HEARTH_OK;
}

/* ---- json.dumps ------------------------------------------------------------------------------ */

typedef struct {
    rt         *r;
    const node *at;
    tbuf       *b;
    bool        ascii;
    const char *indent; /* NULL: compact lines */
    const char *item_sep, *key_sep;
    bool        sort_keys;
} jdump;

static void dump_str(jdump *d, const tstr *s) {
    rt *r = d->r;
    buf_putc(r, d->b, '"');
    for (size_t i = 0; i < s->len;) {
        size_t len;
        uint32_t cp = utf8_dec(s->p + i, s->len - i, &len);
        char tmp[16];
        switch (cp) {
        case '"': buf_puts(r, d->b, "\\\""); break;
        case '\\': buf_puts(r, d->b, "\\\\"); break;
        case '\n': buf_puts(r, d->b, "\\n"); break;
        case '\r': buf_puts(r, d->b, "\\r"); break;
        case '\t': buf_puts(r, d->b, "\\t"); break;
        case '\b': buf_puts(r, d->b, "\\b"); break;
        case '\f': buf_puts(r, d->b, "\\f"); break;
        default:
            if (cp < 0x20 || (d->ascii && cp >= 0x7F)) {
                if (cp >= 0x10000) {
                    uint32_t v = cp - 0x10000;
                    snprintf(tmp, sizeof tmp, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
                } else {
                    snprintf(tmp, sizeof tmp, "\\u%04x", cp);
                }
                buf_puts(r, d->b, tmp);
            } else {
                buf_put(r, d->b, s->p + i, len);
            }
        }
        i += len;
    }
    buf_putc(r, d->b, '"');
}

static void dump_float(jdump *d, double f) {
    char tmp[32];
    if (isnan(f)) strcpy(tmp, "NaN");
    else if (isinf(f)) strcpy(tmp, f < 0 ? "-Infinity" : "Infinity");
    else py_float_repr(f, tmp);
    buf_puts(d->r, d->b, tmp);
}

static void newline(jdump *d, int level) {
    buf_putc(d->r, d->b, '\n');
    for (int i = 0; i < level; i++) buf_puts(d->r, d->b, d->indent);
}

static void dump(jdump *d, tv v, int level);

static void dump_key(jdump *d, tv k) {
    char tmp[32];
    switch ((tv_kind)k.kind) {
    case TV_STR: dump_str(d, k.u.s); return;
    case TV_INT: snprintf(tmp, sizeof tmp, "\"%lld\"", (long long)k.u.i); break;
    case TV_BOOL: strcpy(tmp, k.u.b ? "\"true\"" : "\"false\""); break;
    case TV_NONE: strcpy(tmp, "\"null\""); break;
    case TV_FLOAT:
        buf_putc(d->r, d->b, '"');
        dump_float(d, k.u.f);
        buf_putc(d->r, d->b, '"');
        return;
    default:
        rt_fail(d->r, d->at, HEARTH_E_INVALID, "tojson: keys must be str, int, float, bool or None, not %s",
                tv_type_name(k));
    }
    buf_puts(d->r, d->b, tmp);
}

static void dump_dict(jdump *d, const tdict *m, int level) {
    if (m->n == 0) {
        buf_puts(d->r, d->b, "{}");
        return;
    }
    size_t *order = rt_alloc(d->r, m->n * sizeof *order);
    for (size_t i = 0; i < m->n; i++) order[i] = i;
    if (d->sort_keys) /* insertion sort: stable, and key lists are short */
        for (size_t i = 1; i < m->n; i++)
            for (size_t k = i; k > 0 && tv_cmp(d->r, d->at, m->k[order[k - 1]], m->k[order[k]]) > 0; k--) {
                size_t t = order[k];
                order[k] = order[k - 1];
                order[k - 1] = t;
            }
    buf_putc(d->r, d->b, '{');
    for (size_t i = 0; i < m->n; i++) {
        if (i) buf_puts(d->r, d->b, d->item_sep);
        if (d->indent) newline(d, level + 1);
        dump_key(d, m->k[order[i]]);
        buf_puts(d->r, d->b, d->key_sep);
        dump(d, m->v[order[i]], level + 1);
    }
    if (d->indent) newline(d, level);
    buf_putc(d->r, d->b, '}');
}

static void dump(jdump *d, tv v, int level) {
    char tmp[32];
    switch ((tv_kind)v.kind) {
    case TV_NONE: buf_puts(d->r, d->b, "null"); return;
    case TV_BOOL: buf_puts(d->r, d->b, v.u.b ? "true" : "false"); return;
    case TV_INT:
        snprintf(tmp, sizeof tmp, "%lld", (long long)v.u.i);
        buf_puts(d->r, d->b, tmp);
        return;
    case TV_FLOAT: dump_float(d, v.u.f); return;
    case TV_STR: dump_str(d, v.u.s); return;
    case TV_LIST:
        if (v.u.l->gen || v.u.l->is_range)
            rt_fail(d->r, d->at, HEARTH_E_INVALID, "tojson: object of type %s is not JSON serializable",
                    tv_type_name(v));
        if (v.u.l->n == 0) {
            buf_puts(d->r, d->b, "[]");
            return;
        }
        rt_enter(d->r, d->at);
        buf_putc(d->r, d->b, '[');
        for (size_t i = 0; i < v.u.l->n; i++) {
            if (i) buf_puts(d->r, d->b, d->item_sep);
            if (d->indent) newline(d, level + 1);
            dump(d, v.u.l->v[i], level + 1);
        }
        if (d->indent) newline(d, level);
        buf_putc(d->r, d->b, ']');
        rt_leave(d->r);
        return;
    case TV_DICT:
        rt_enter(d->r, d->at);
        dump_dict(d, v.u.d, level);
        rt_leave(d->r);
        return;
    default:
        rt_fail(d->r, d->at, HEARTH_E_INVALID, "tojson: object of type %s is not JSON serializable",
                tv_type_name(v));
    }
}

void json_dump(rt *r, const node *at, tbuf *b, tv v, bool ensure_ascii, const char *indent,
               const char *item_sep, const char *key_sep, bool sort_keys) {
    jdump d = {r, at, b, ensure_ascii, indent, item_sep, key_sep, sort_keys};
    if (!d.item_sep) d.item_sep = indent ? "," : ", ";
    if (!d.key_sep) d.key_sep = ": ";
    dump(&d, v, 0);
}
