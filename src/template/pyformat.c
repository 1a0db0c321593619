/*
 * pyformat.c - Python's printf-style string formatting: `"%s: %d" % (name, n)` in a template
 * and the |format filter, which is the same operator.
 *
 * Conversions: %s %r %a (str/repr), %d %i %u (integers; a float is truncated), %o %x %X
 * (integers only, with Python's "0o" for %#o and a sign instead of two's complement), %e %E
 * %f %F %g %G (through the C library, which agrees with Python for finite values), %c and %%.
 * Flags "-+ 0#", width and precision (a number or *), and %(key)s against a mapping.
 * Python's errors are kept: too few or too many arguments, a non-number for %d.
 */
#include "template/tmpl_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    rt         *r;
    const node *at;
    const tv   *args; /* positional arguments */
    size_t      n_args, next;
    const tdict *map;  /* %(key)s source, or NULL */
    bool        mapping_like; /* the argument has __getitem__: no "not all converted" check */
    bool        markup; /* a Markup format escapes what %s and %r insert */
} fmt_state;

static tv next_arg(fmt_state *f) {
    if (f->next >= f->n_args) rt_fail(f->r, f->at, HEARTH_E_INVALID, "not enough arguments for format string");
    return f->args[f->next++];
}

static int64_t star_value(fmt_state *f) {
    tv v = next_arg(f);
    if (v.kind != TV_INT && v.kind != TV_BOOL) rt_fail(f->r, f->at, HEARTH_E_INVALID, "* wants int");
    return v.kind == TV_BOOL ? v.u.b : v.u.i;
}

/* Pad text (n bytes, cps code points) to width: left-justified with '-', else right. */
static void put_padded(rt *r, tbuf *b, const char *text, size_t n, size_t cps, int64_t width, bool left) {
    int64_t pad = width > (int64_t)cps ? width - (int64_t)cps : 0;
    if (pad > (int64_t)r->lim.max_output_bytes) rt_fail(r, NULL, HEARTH_E_LIMIT, "format width too large");
    if (!left)
        for (int64_t i = 0; i < pad; i++) buf_putc(r, b, ' ');
    buf_put(r, b, text, n);
    if (left)
        for (int64_t i = 0; i < pad; i++) buf_putc(r, b, ' ');
}

static void put_int(fmt_state *f, tbuf *b, tv v, char conv, const char *flags, int64_t width, int64_t prec) {
    rt *r = f->r;
    int64_t x;
    if (v.kind == TV_INT) x = v.u.i;
    else if (v.kind == TV_BOOL) x = v.u.b;
    else if (v.kind == TV_FLOAT && (conv == 'd' || conv == 'i' || conv == 'u')) {
        if (!isfinite(v.u.f) || fabs(v.u.f) >= 9.2e18) rt_fail(r, f->at, HEARTH_E_UNSUPPORTED, "integer overflow");
        x = (int64_t)v.u.f;
    } else {
        rt_fail(r, f->at, HEARTH_E_INVALID, "%%%c format: a real number is required, not %s", conv, tv_type_name(v));
    }
    unsigned base = conv == 'o' ? 8 : (conv == 'x' || conv == 'X') ? 16 : 10;
    uint64_t mag = x < 0 ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;
    char digits[72];
    int nd = 0;
    do {
        unsigned d = (unsigned)(mag % base);
        digits[nd++] = (char)(d < 10 ? '0' + d : (conv == 'X' ? 'A' : 'a') + d - 10);
        mag /= base;
    } while (mag);
    char body[160];
    int n = 0;
    const char *sign = x < 0 ? "-" : strchr(flags, '+') ? "+" : strchr(flags, ' ') ? " " : "";
    const char *prefix = !strchr(flags, '#') ? "" : conv == 'o' ? "0o" : conv == 'x' ? "0x" : conv == 'X' ? "0X" : "";
    n += snprintf(body + n, sizeof body - (size_t)n, "%s%s", sign, prefix);
    int64_t zeros = prec > nd ? prec - nd : 0;
    bool zero_pad = strchr(flags, '0') && !strchr(flags, '-');
    if (zero_pad && width > n + nd + zeros) zeros = width - n - nd;
    if (zeros > 64) rt_fail(r, f->at, HEARTH_E_LIMIT, "format precision too large");
    for (int64_t i = 0; i < zeros; i++) body[n++] = '0';
    while (nd > 0) body[n++] = digits[--nd];
    put_padded(r, b, body, (size_t)n, (size_t)n, width, strchr(flags, '-') != NULL);
}

static void put_float(fmt_state *f, tbuf *b, tv v, char conv, const char *flags, int64_t width, int64_t prec) {
    double d;
    if (v.kind == TV_FLOAT) d = v.u.f;
    else if (v.kind == TV_INT) d = (double)v.u.i;
    else if (v.kind == TV_BOOL) d = v.u.b;
    else rt_fail(f->r, f->at, HEARTH_E_INVALID, "must be real number, not %s", tv_type_name(v));
    if (prec < 0) prec = 6;
    if (prec > 100 || width > 1000) rt_fail(f->r, f->at, HEARTH_E_LIMIT, "format width or precision too large");
    char spec[16], out[1200];
    int k = 0;
    spec[k++] = '%';
    for (const char *p = flags; *p && k < 8; p++) spec[k++] = *p;
    spec[k++] = '*';
    spec[k++] = '.';
    spec[k++] = '*';
    spec[k++] = conv;
    spec[k] = 0;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    int n = snprintf(out, sizeof out, spec, (int)width, (int)prec, d);
#pragma GCC diagnostic pop
    if (n < 0 || (size_t)n >= sizeof out) rt_fail(f->r, f->at, HEARTH_E_LIMIT, "formatted number too long");
    buf_put(f->r, b, out, (size_t)n);
}

static void put_text(fmt_state *f, tbuf *b, tv v, bool repr, const char *flags, int64_t width, int64_t prec) {
    tbuf t = {0};
    if (repr) tv_repr(f->r, &t, v);
    else tv_str(f->r, &t, v);
    if (f->markup && !(v.kind == TV_STR && (v.flags & TVF_MARKUP) && !repr)) { /* Markup % escapes */
        tv esc = str_escape(f->r, rt_strv(f->r, t.p ? t.p : "", t.len));
        t.p = (char *)esc.u.s->p;
        t.len = esc.u.s->len;
    }
    const char *p = t.p ? t.p : "";
    size_t n = t.len;
    size_t cps = utf8_count(p, n, NULL);
    if (prec >= 0 && (size_t)prec < cps) { /* precision truncates to that many characters */
        size_t off = 0;
        for (int64_t i = 0; i < prec; i++) {
            size_t len;
            utf8_dec(p + off, n - off, &len);
            off += len;
        }
        n = off;
        cps = (size_t)prec;
    }
    put_padded(f->r, b, p, n, cps, width, strchr(flags, '-') != NULL);
}

tv py_percent_format(rt *r, const node *at, tv fmt, tv args) {
    fmt_state f = {r, at, NULL, 0, 0, NULL, false, (fmt.flags & TVF_MARKUP) != 0};
    if (args.kind == TV_LIST && (args.flags & TVF_TUPLE)) {
        f.args = args.u.l->v;
        f.n_args = args.u.l->n;
    } else {
        f.args = &args;
        f.n_args = 1;
        if (args.kind == TV_DICT) f.map = args.u.d;
        /* Python skips the "not all arguments converted" check for any argument with
         * __getitem__ other than a tuple or str: dicts, lists, ranges */
        if (args.kind == TV_DICT || (args.kind == TV_LIST && !args.u.l->gen)) f.mapping_like = true;
    }
    const tstr *s = fmt.u.s;
    tbuf b = {0};
    bool used_map = false;
    for (size_t i = 0; i < s->len; i++) {
        char c = s->p[i];
        if (c != '%') {
            buf_putc(r, &b, c);
            continue;
        }
        if (++i >= s->len) rt_fail(r, at, HEARTH_E_INVALID, "incomplete format");
        tv v = tv_undef();
        bool have = false;
        if (s->p[i] == '(') {
            size_t e = i + 1;
            int depth = 1;
            while (e < s->len && depth) {
                if (s->p[e] == '(') depth++;
                else if (s->p[e] == ')') depth--;
                if (depth) e++;
            }
            if (e >= s->len) rt_fail(r, at, HEARTH_E_INVALID, "incomplete format key");
            if (!f.map) rt_fail(r, at, HEARTH_E_INVALID, "format requires a mapping");
            if (!dict_gets(f.map, s->p + i + 1, e - i - 1, &v))
                rt_fail(r, at, HEARTH_E_INVALID, "format key '%.*s' not found", (int)(e - i - 1), s->p + i + 1);
            have = used_map = true;
            i = e + 1;
        }
        char flags[8] = {0};
        int nf = 0;
        while (i < s->len && strchr("-+ #0", s->p[i])) {
            if (nf < 7 && !strchr(flags, s->p[i])) flags[nf++] = s->p[i];
            i++;
        }
        int64_t width = 0, prec = -1;
        if (i < s->len && s->p[i] == '*') {
            width = star_value(&f);
            if (width < 0) {
                width = -width;
                if (nf < 7 && !strchr(flags, '-')) flags[nf++] = '-';
            }
            i++;
        } else {
            while (i < s->len && s->p[i] >= '0' && s->p[i] <= '9' && width < 100000) width = width * 10 + (s->p[i++] - '0');
        }
        if (i < s->len && s->p[i] == '.') {
            i++;
            prec = 0;
            if (i < s->len && s->p[i] == '*') {
                prec = star_value(&f);
                i++;
            } else {
                while (i < s->len && s->p[i] >= '0' && s->p[i] <= '9' && prec < 100000) prec = prec * 10 + (s->p[i++] - '0');
            }
        }
        while (i < s->len && strchr("hlL", s->p[i])) i++;
        if (i >= s->len) rt_fail(r, at, HEARTH_E_INVALID, "incomplete format");
        char conv = s->p[i];
        if (conv == '%') {
            buf_putc(r, &b, '%');
            continue;
        }
        if (!have) v = next_arg(&f);
        switch (conv) {
        case 's': put_text(&f, &b, v, false, flags, width, prec); break;
        case 'r':
        case 'a': put_text(&f, &b, v, true, flags, width, prec); break;
        case 'd':
        case 'i':
        case 'u':
        case 'o':
        case 'x':
        case 'X': put_int(&f, &b, v, conv, flags, width, prec); break;
        case 'e':
        case 'E':
        case 'f':
        case 'F':
        case 'g':
        case 'G': put_float(&f, &b, v, conv, flags, width, prec); break;
        case 'c': {
            char enc[4];
            size_t n;
            if (v.kind == TV_STR && v.u.s->ncp == 1) {
                put_padded(r, &b, v.u.s->p, v.u.s->len, 1, width, strchr(flags, '-') != NULL);
            } else if (v.kind == TV_INT && v.u.i >= 0 && v.u.i <= 0x10FFFF) {
                n = utf8_enc((uint32_t)v.u.i, enc);
                put_padded(r, &b, enc, n, 1, width, strchr(flags, '-') != NULL);
            } else {
                rt_fail(r, at, HEARTH_E_INVALID, "%%c requires an int or a unicode character");
            }
            break;
        }
        default:
            rt_fail(r, at, HEARTH_E_INVALID, "unsupported format character '%c' at index %zu", conv, i);
        }
    }
    if (!f.mapping_like && f.next < f.n_args)
        rt_fail(r, at, HEARTH_E_INVALID, "not all arguments converted during string formatting");
    (void)used_map;
    tv out = rt_strv(r, b.p ? b.p : "", b.len);
    if (f.markup) out.flags = TVF_MARKUP;
    return out;
}
