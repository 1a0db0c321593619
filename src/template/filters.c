/*
 * filters.c - jinja2's builtin filters as transformers' environment has them (tojson replaced
 * by transformers' own: json.dumps with ensure_ascii=False, indent, separators, sort_keys).
 *
 * Each filter follows jinja2/filters.py (3.1) with autoescape off: soft_str keeps Markup,
 * replace/join return plain strings, first/last/min/max of an empty sequence are undefined, and
 * the filters that are generators in jinja2 (map, select, reject, selectattr, rejectattr,
 * unique, items, batch, and reverse of a list) return a one-pass generator value: always
 * truthy, no length, empty on a second iteration - templates can tell the difference, so we
 * keep it. Filters jinja2 has but hearth does not implement fail, saying so, when they run.
 */
#include "template/tmpl_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

typedef enum {
    F_ABS, F_ATTR, F_BATCH, F_CAPITALIZE, F_CENTER, F_DEFAULT, F_DICTSORT, F_ESCAPE, F_FIRST, F_FLOAT, F_FORMAT,
    F_FORCEESCAPE, F_INDENT, F_INT, F_ITEMS, F_JOIN, F_LAST, F_LENGTH, F_LIST, F_LOWER, F_MAP, F_MAX,
    F_MIN, F_REJECT, F_REJECTATTR, F_REPLACE, F_REVERSE, F_ROUND, F_SAFE, F_SELECT, F_SELECTATTR,
    F_SORT, F_STRING, F_SUM, F_TITLE, F_TOJSON, F_TRIM, F_UNIQUE, F_UPPER, F_WORDCOUNT,
} filter_id;

static const struct {
    const char *name;
    int         id;
} filters[] = {
    {"abs", F_ABS}, {"attr", F_ATTR}, {"batch", F_BATCH}, {"capitalize", F_CAPITALIZE}, {"center", F_CENTER},
    {"count", F_LENGTH}, {"d", F_DEFAULT}, {"default", F_DEFAULT}, {"dictsort", F_DICTSORT}, {"e", F_ESCAPE},
    {"escape", F_ESCAPE}, {"first", F_FIRST}, {"float", F_FLOAT}, {"forceescape", F_FORCEESCAPE}, {"format", F_FORMAT},
    {"indent", F_INDENT}, {"int", F_INT}, {"items", F_ITEMS}, {"join", F_JOIN}, {"last", F_LAST},
    {"length", F_LENGTH}, {"list", F_LIST}, {"lower", F_LOWER}, {"map", F_MAP}, {"max", F_MAX},
    {"min", F_MIN}, {"reject", F_REJECT}, {"rejectattr", F_REJECTATTR}, {"replace", F_REPLACE},
    {"reverse", F_REVERSE}, {"round", F_ROUND}, {"safe", F_SAFE}, {"select", F_SELECT},
    {"selectattr", F_SELECTATTR}, {"sort", F_SORT}, {"string", F_STRING}, {"sum", F_SUM},
    {"title", F_TITLE}, {"tojson", F_TOJSON}, {"trim", F_TRIM}, {"unique", F_UNIQUE}, {"upper", F_UPPER},
    {"wordcount", F_WORDCOUNT},
    /* jinja2 builtins hearth does not implement */
    {"filesizeformat", -2}, {"groupby", -2}, {"pprint", -2}, {"random", -2},
    {"slice", -2}, {"striptags", -2}, {"truncate", -2}, {"urlencode", -2}, {"urlize", -2},
    {"wordwrap", -2}, {"xmlattr", -2},
};

int tmpl_filter_id(const char *name, size_t len) {
    for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++)
        if (strlen(filters[i].name) == len && !memcmp(filters[i].name, name, len)) return filters[i].id;
    return -1;
}

void args_bind(rt *r, const node *at, const char *what, const targs *a, int n, const char *const *names,
               tv *out, bool *out_set) {
    for (int i = 0; i < n; i++) {
        out[i] = tv_undef();
        out_set[i] = false;
    }
    if (a->n_pos > n) rt_fail(r, at, HEARTH_E_INVALID, "%s takes at most %d argument(s), %d given", what, n, a->n_pos);
    for (int i = 0; i < a->n_pos; i++) {
        out[i] = a->pos[i];
        out_set[i] = true;
    }
    for (int k = 0; k < a->n_kw; k++) {
        int i = 0;
        while (i < n && !(strlen(names[i]) == a->kw_names[k]->len && !memcmp(names[i], a->kw_names[k]->p, a->kw_names[k]->len)))
            i++;
        if (i == n)
            rt_fail(r, at, HEARTH_E_INVALID, "%s got an unexpected keyword argument '%.*s'", what,
                    (int)a->kw_names[k]->len, a->kw_names[k]->p);
        if (out_set[i]) rt_fail(r, at, HEARTH_E_INVALID, "%s got multiple values for argument '%s'", what, names[i]);
        out[i] = a->kw_vals[k];
        out_set[i] = true;
    }
}

/* An unknown filter reaches here only from a branch jinja2 checks when it runs (parser.c). */
static _Noreturn void no_filter(rt *r, const node *at, int id, const char *name, size_t len) {
    if (id == -2) rt_fail(r, at, HEARTH_E_UNSUPPORTED, "filter '%.*s' is not supported", (int)len, name);
    rt_fail(r, at, HEARTH_E_INVALID, "no filter named '%.*s'", (int)len, name);
}

/* ---- helpers ------------------------------------------------------------------------------------ */

static tv gen_of(tlist *l) {
    l->gen = 1;
    return tv_listv(l);
}

/* soft_str: strings (Markup included) as they are, anything else through str(). */
static tv soft_str(rt *r, tv v) { return v.kind == TV_STR ? v : tv_to_strv(r, v); }

static tv plain_str(rt *r, tv v) {
    v = soft_str(r, v);
    v.flags = 0;
    return v;
}

static tv lower_if_str(rt *r, tv v) { return v.kind == TV_STR ? str_case(r, v, CASE_LOWER) : v; }

/* make_attrgetter: a dotted attribute path for a string, an item lookup for any other key, the
 * item itself for None (the parameter's default); default replaces an undefined result;
 * optional lower-casing. */
static tv get_attr(rt *r, const node *at, tv item, tv attr, tv def, bool lower) {
    if (attr.kind == TV_STR) item = tv_attr_path(r, at, item, attr.u.s);
    else if (attr.kind != TV_NONE) item = tv_getitem(r, at, item, attr);
    if (def.kind != TV_UNDEF && def.kind != TV_NONE && item.kind == TV_UNDEF) item = def;
    return lower ? lower_if_str(r, item) : item;
}


/* Stable merge sort of items by keys (Python's sorted(key=..., reverse=...)). */
static void merge_sort(rt *r, const node *at, tv *items, tv *keys, size_t n, bool reverse, tv *tmp_i, tv *tmp_k) {
    if (n < 2) return;
    size_t h = n / 2;
    merge_sort(r, at, items, keys, h, reverse, tmp_i, tmp_k);
    merge_sort(r, at, items + h, keys + h, n - h, reverse, tmp_i, tmp_k);
    size_t i = 0, j = h, o = 0;
    while (i < h && j < n) {
        int c = tv_cmp(r, at, keys[j], keys[i]);
        bool take_right = reverse ? c > 0 : c < 0;
        if (take_right) {
            tmp_i[o] = items[j];
            tmp_k[o++] = keys[j++];
        } else {
            tmp_i[o] = items[i];
            tmp_k[o++] = keys[i++];
        }
    }
    while (i < h) {
        tmp_i[o] = items[i];
        tmp_k[o++] = keys[i++];
    }
    while (j < n) {
        tmp_i[o] = items[j];
        tmp_k[o++] = keys[j++];
    }
    memcpy(items, tmp_i, n * sizeof(tv));
    memcpy(keys, tmp_k, n * sizeof(tv));
}

/* sorted()'s reverse= must be an int or bool ('x' is a TypeError in Python). */
static bool reverse_flag(rt *r, const node *at, const tv *v, bool set) {
    if (!set) return false;
    if (v->kind == TV_BOOL) return v->u.b;
    if (v->kind == TV_INT) return v->u.i != 0;
    rt_fail(r, at, HEARTH_E_INVALID, "'%s' object cannot be interpreted as an integer", tv_type_name(*v));
}

static tlist *sorted_by(rt *r, const node *at, tlist *src, tv *keys, bool reverse) {
    size_t n = src->n;
    rt_step(r, at, n);
    tlist *l = rt_list(r, n);
    if (n) memcpy(l->v, src->v, n * sizeof(tv));
    l->n = n;
    tv *ti = rt_alloc(r, (n + 1) * sizeof(tv)), *tk = rt_alloc(r, (n + 1) * sizeof(tv));
    merge_sort(r, at, l->v, keys, n, reverse, ti, tk);
    return l;
}

static int64_t as_int(rt *r, const node *at, tv v, const char *what) {
    if (v.kind == TV_BOOL) return v.u.b;
    if (v.kind != TV_INT) rt_fail(r, at, HEARTH_E_INVALID, "%s must be an integer, not %s", what, tv_type_name(v));
    return v.u.i;
}

static size_t py_len(rt *r, const node *at, tv v) {
    switch ((tv_kind)v.kind) {
    case TV_UNDEF: return 0;
    case TV_STR: return v.u.s->ncp;
    case TV_LIST:
        if (v.u.l->gen) rt_fail(r, at, HEARTH_E_INVALID, "object of type 'generator' has no len()");
        return v.u.l->n;
    case TV_DICT: return v.u.d->n;
    default: rt_fail(r, at, HEARTH_E_INVALID, "object of type '%s' has no len()", tv_type_name(v));
    }
}

/* ---- numbers from strings, as Python's int() and float() read them ----------------------------- */

/* Python's int(s, base): 1 with *out, 0 when s is not an integer, 2 when it is one beyond
 * 64 bits (Python would make a big integer). */
static int parse_py_int(const tstr *s, int base, int64_t *out) {
    size_t a = 0, b = s->len;
    while (a < b && py_isspace((unsigned char)s->p[a])) a++;
    while (b > a && py_isspace((unsigned char)s->p[b - 1])) b--;
    bool neg = false;
    if (a < b && (s->p[a] == '+' || s->p[a] == '-')) neg = s->p[a++] == '-';
    if ((base == 16 || base == 8 || base == 2 || base == 0) && b - a > 2 && s->p[a] == '0') {
        char c = (char)(s->p[a + 1] | 32);
        int pb = c == 'x' ? 16 : c == 'o' ? 8 : c == 'b' ? 2 : 0;
        if (pb && (base == 0 || base == pb)) {
            base = pb;
            a += 2;
            if (a < b && s->p[a] == '_') a++;
        }
    }
    if (base == 0) base = 10;
    if (a >= b) return 0;
    uint64_t v = 0;
    bool prev_us = true, overflow = false;
    for (size_t i = a; i < b; i++) {
        char c = s->p[i];
        if (c == '_') {
            if (prev_us) return 0;
            prev_us = true;
            continue;
        }
        int d = c >= '0' && c <= '9' ? c - '0' : (c | 32) >= 'a' && (c | 32) <= 'z' ? (c | 32) - 'a' + 10 : 99;
        if (d >= base) return 0;
        if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) overflow = true;
        if (!overflow) v = v * (uint64_t)base + (uint64_t)d;
        prev_us = false;
    }
    if (prev_us) return 0;
    if (overflow || v > (uint64_t)INT64_MAX + neg) return 2;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 1;
}

static bool parse_py_float(rt *r, const tstr *s, double *out) {
    size_t a = 0, b = s->len;
    while (a < b && py_isspace((unsigned char)s->p[a])) a++;
    while (b > a && py_isspace((unsigned char)s->p[b - 1])) b--;
    if (a >= b) return false;
    char *tmp = rt_alloc(r, b - a + 1);
    size_t n = 0;
    for (size_t i = a; i < b; i++) {
        char c = s->p[i];
        if (c == '_') {
            if (i == a || i + 1 == b || !(s->p[i - 1] >= '0' && s->p[i - 1] <= '9') ||
                !(s->p[i + 1] >= '0' && s->p[i + 1] <= '9'))
                return false;
            continue;
        }
        if (!(c >= '0' && c <= '9') && (c == 0 || !strchr("+-.eEinfatyINFATY", c))) return false;
        tmp[n++] = c;
    }
    tmp[n] = 0;
    char *end;
    double d = strtod(tmp, &end);
    if (*end || end == tmp) return false;
    /* strtod also takes hex floats and "infinity"/"nan" spellings Python accepts too */
    *out = d;
    return true;
}

static tv do_round(rt *r, const node *at, tv v, int64_t prec, const tstr *method) {
    bool common = !method || (method->len == 6 && !memcmp(method->p, "common", 6));
    bool fl = method && method->len == 5 && !memcmp(method->p, "floor", 5);
    bool ce = method && method->len == 4 && !memcmp(method->p, "ceil", 4);
    if (!common && !fl && !ce) rt_fail(r, at, HEARTH_E_INVALID, "method must be common, ceil or floor");
    if (v.kind != TV_INT && v.kind != TV_BOOL && v.kind != TV_FLOAT)
        rt_fail(r, at, HEARTH_E_INVALID, "round: '%s' is not a number", tv_type_name(v));
    if (common) {
        if (v.kind != TV_FLOAT) {
            if (prec >= 0) return tv_int(v.kind == TV_BOOL ? v.u.b : v.u.i);
            double m = pow(10.0, (double)-prec);
            return tv_int((int64_t)(nearbyint((double)v.u.i / m) * m));
        }
        if (!isfinite(v.u.f)) return v;
        if (prec > 300) return v;
        if (prec >= 0) {
            char buf[400];
            snprintf(buf, sizeof buf, "%.*f", (int)prec, v.u.f);
            return tv_float(strtod(buf, NULL));
        }
        double m = pow(10.0, (double)-prec);
        return tv_float(nearbyint(v.u.f / m) * m);
    }
    double x = v.kind == TV_FLOAT ? v.u.f : (double)(v.kind == TV_BOOL ? v.u.b : v.u.i);
    double m = pow(10.0, (double)prec);
    return tv_float((fl ? floor(x * m) : ceil(x * m)) / m);
}

static tv do_indent(rt *r, tv s, tv width, bool first, bool blank) {
    tstr spaces = {0};
    const tstr *ind;
    if (width.kind == TV_STR) {
        ind = width.u.s;
    } else {
        int64_t w = width.kind == TV_BOOL ? width.u.b : width.u.i;
        if (w < 0) w = 0;
        if (w > 4096) w = 4096;
        char *sp = rt_alloc(r, (size_t)w + 1);
        memset(sp, ' ', (size_t)w);
        spaces.p = sp;
        spaces.len = spaces.ncp = (size_t)w;
        ind = &spaces;
    }
    tstr nl = {"\n", 1, 1, NULL};
    tv text = str_concat(r, NULL, s.u.s, &nl, false); /* s += newline: the splitlines quirk */
    tlist *lines = str_splitlines(r, text.u.s, false);
    tbuf b = {0};
    if (first) buf_put(r, &b, ind->p, ind->len);
    for (size_t i = 0; i < lines->n; i++) {
        const tstr *ln = lines->v[i].u.s;
        if (i) {
            buf_putc(r, &b, '\n');
            if (blank || ln->len) buf_put(r, &b, ind->p, ind->len);
        }
        buf_put(r, &b, ln->p, ln->len);
    }
    tv out = rt_strv(r, b.p ? b.p : "", b.len);
    out.flags = s.flags & TVF_MARKUP;
    return out;
}

static tv do_tojson(rt *r, const node *at, tv v, const targs *a) {
    static const char *const names[] = {"ensure_ascii", "indent", "separators", "sort_keys"};
    tv p[4];
    bool set[4];
    args_bind(r, at, "tojson", a, 4, names, p, set);
    const char *indent = NULL, *item_sep = NULL, *key_sep = NULL;
    if (set[1] && p[1].kind != TV_NONE) {
        if (p[1].kind == TV_STR) {
            indent = rt_str(r, p[1].u.s->p, p[1].u.s->len)->p;
        } else {
            int64_t w = as_int(r, at, p[1], "tojson indent");
            if (w < 0) w = 0;
            if (w > 4096) rt_fail(r, at, HEARTH_E_LIMIT, "tojson indent too large");
            char *sp = rt_alloc(r, (size_t)w + 1);
            memset(sp, ' ', (size_t)w);
            indent = sp;
        }
    }
    if (set[2] && p[2].kind != TV_NONE) {
        tlist *sep = tv_iter(r, at, p[2]);
        if (sep->n != 2 || sep->v[0].kind != TV_STR || sep->v[1].kind != TV_STR)
            rt_fail(r, at, HEARTH_E_INVALID, "tojson separators must be a pair of strings");
        item_sep = rt_str(r, sep->v[0].u.s->p, sep->v[0].u.s->len)->p;
        key_sep = rt_str(r, sep->v[1].u.s->p, sep->v[1].u.s->len)->p;
    }
    tbuf b = {0};
    json_dump(r, at, &b, v, set[0] && tv_truthy(p[0]), indent, item_sep, key_sep, set[3] && tv_truthy(p[3]));
    return rt_strv(r, b.p ? b.p : "", b.len);
}

/* select/reject/selectattr/rejectattr: keep items whose test (or truthiness) equals `keep`. */
static tv select_items(rt *r, scope *sc, const node *at, tv in, const targs *a, bool by_attr, bool keep) {
    tlist *out = rt_list(r, 0);
    if (!tv_truthy(in)) return gen_of(out); /* jinja2 looks at the arguments only for a true value */
    int off = 0;
    tv attr = tv_undef();
    if (by_attr) {
        if (a->n_pos < 1) rt_fail(r, at, HEARTH_E_INVALID, "missing parameter for attribute name");
        attr = a->pos[0];
        off = 1;
    }
    int test = -1;
    targs rest = {0};
    if (a->n_pos > off) {
        tv name = a->pos[off];
        if (name.kind != TV_STR) rt_fail(r, at, HEARTH_E_INVALID, "the test name must be a string");
        test = tmpl_test_id(name.u.s->p, name.u.s->len);
        if (test < 0) rt_fail(r, at, HEARTH_E_INVALID, "no test named '%.*s'", (int)name.u.s->len, name.u.s->p);
        rest.n_pos = a->n_pos - off - 1;
        rest.pos = a->pos + off + 1;
        rest.n_kw = a->n_kw;
        rest.kw_names = a->kw_names;
        rest.kw_vals = a->kw_vals;
    }
    tlist *items = tv_iter(r, at, in);
    rt_step(r, at, items->n);
    for (size_t i = 0; i < items->n; i++) {
        tv x = by_attr ? get_attr(r, at, items->v[i], attr, tv_undef(), false) : items->v[i];
        bool ok = test >= 0 ? test_apply(r, sc, at, test, x, &rest) : tv_truthy(x);
        if (ok == keep) list_push(r, out, items->v[i]);
    }
    return gen_of(out);
}

static tv do_map(rt *r, scope *sc, const node *at, tv in, const targs *a) {
    tlist *out = rt_list(r, 0);
    if (!tv_truthy(in)) return gen_of(out);
    bool by_attr = a->n_pos == 0;
    tv attr = tv_undef(), def = tv_undef();
    int fid = -1;
    targs rest = {0};
    if (by_attr) {
        for (int k = 0; k < a->n_kw; k++) {
            const tstr *n = a->kw_names[k];
            if (n->len == 9 && !memcmp(n->p, "attribute", 9)) attr = a->kw_vals[k];
            else if (n->len == 7 && !memcmp(n->p, "default", 7)) def = a->kw_vals[k];
            else rt_fail(r, at, HEARTH_E_INVALID, "map: unexpected keyword argument '%.*s'", (int)n->len, n->p);
        }
        if (attr.kind == TV_UNDEF) rt_fail(r, at, HEARTH_E_INVALID, "map requires a filter argument");
    } else {
        tv name = a->pos[0];
        if (name.kind != TV_STR) rt_fail(r, at, HEARTH_E_INVALID, "map: the filter name must be a string");
        fid = tmpl_filter_id(name.u.s->p, name.u.s->len);
        if (fid < 0) no_filter(r, at, fid, name.u.s->p, name.u.s->len);
        rest = *a;
        rest.n_pos--;
        rest.pos++;
    }
    tlist *items = tv_iter(r, at, in);
    rt_step(r, at, items->n);
    for (size_t i = 0; i < items->n; i++)
        list_push(r, out, by_attr ? get_attr(r, at, items->v[i], attr, def, false)
                                  : filter_apply(r, sc, at, fid, items->v[i], &rest));
    return gen_of(out);
}

/* min/max/sum/unique/sort/dictsort: keyword parameters bound by name. */
#define BIND(what, ...)                                                   \
    static const char *const names[] = {__VA_ARGS__};                      \
    enum { N = sizeof names / sizeof names[0] };                           \
    tv p[N];                                                               \
    bool set[N];                                                           \
    args_bind(r, at, what, a, N, names, p, set)

/* ---- the generator filters ------------------------------------------------------------------ */

/* jinja2's map, select, reject, selectattr, rejectattr, unique, items and batch are generator
 * functions: calling one only records the call, and the work (argument checks included) runs
 * when the result is first iterated - so a generator that is printed or dropped never raises.
 * A generator value is a tlist with gen = 1 and this thunk until tv_iter runs it. */
struct gen_thunk {
    int         id;
    tv          in;
    targs       args;
    const node *at;
};

static tv gen_batch(rt *r, const node *at, tv in, const targs *a) {
    BIND("batch", "linecount", "fill_with");
    int64_t n = as_int(r, at, p[0], "batch linecount");
    if (n <= 0) rt_fail(r, at, HEARTH_E_INVALID, "batch linecount must be positive");
    tlist *out = rt_list(r, 0), *cur = NULL;
    tlist *items = tv_iter(r, at, in);
    for (size_t i = 0; i < items->n; i++) {
        if (!cur || (int64_t)cur->n == n) {
            cur = rt_list(r, 0);
            list_push(r, out, tv_listv(cur));
        }
        list_push(r, cur, items->v[i]);
    }
    if (cur && set[1] && p[1].kind != TV_NONE)
        while ((int64_t)cur->n < n) list_push(r, cur, p[1]);
    return gen_of(out);
}

static tv gen_items(rt *r, const node *at, tv in) {
    tlist *out = rt_list(r, 0);
    if (in.kind == TV_UNDEF) return gen_of(out);
    if (in.kind != TV_DICT) rt_fail(r, at, HEARTH_E_INVALID, "can only get item pairs from a mapping");
    for (size_t i = 0; i < in.u.d->n; i++) {
        tlist *t = rt_list(r, 2);
        t->v[0] = in.u.d->k[i];
        t->v[1] = in.u.d->v[i];
        t->n = 2;
        tv tup = tv_listv(t);
        tup.flags = TVF_TUPLE;
        list_push(r, out, tup);
    }
    return gen_of(out);
}

static tv gen_unique(rt *r, const node *at, tv in, const targs *a) {
    BIND("unique", "case_sensitive", "attribute");
    bool cs = set[0] && tv_truthy(p[0]);
    tlist *items = tv_iter(r, at, in), *out = rt_list(r, 0);
    tdict *seen = rt_dict(r, 0);
    for (size_t i = 0; i < items->n; i++) {
        tv k = get_attr(r, at, items->v[i], set[1] ? p[1] : tv_none(), tv_undef(), !cs), dummy;
        if (dict_get(seen, k, &dummy)) continue;
        dict_set(r, seen, k, tv_none());
        list_push(r, out, items->v[i]);
    }
    return gen_of(out);
}

tlist *gen_run(rt *r, const gen_thunk *g) {
    tv out;
    switch ((filter_id)g->id) {
    case F_MAP: out = do_map(r, NULL, g->at, g->in, &g->args); break;
    case F_REJECT: out = select_items(r, NULL, g->at, g->in, &g->args, false, false); break;
    case F_SELECT: out = select_items(r, NULL, g->at, g->in, &g->args, false, true); break;
    case F_REJECTATTR: out = select_items(r, NULL, g->at, g->in, &g->args, true, false); break;
    case F_SELECTATTR: out = select_items(r, NULL, g->at, g->in, &g->args, true, true); break;
    case F_UNIQUE: out = gen_unique(r, g->at, g->in, &g->args); break;
    case F_ITEMS: out = gen_items(r, g->at, g->in); break;
    case F_BATCH: out = gen_batch(r, g->at, g->in, &g->args); break;
    default: rt_fail(r, g->at, HEARTH_E_INVALID, "not a generator filter");
    }
    return out.u.l;
}

static tv lazy(rt *r, const node *at, int id, tv in, const targs *a) {
    /* Python binds a generator function's parameters at the call; only the body waits */
    tv p[2];
    bool set[2];
    static const char *const batch[] = {"linecount", "fill_with"}, *const unique[] = {"case_sensitive", "attribute"};
    if (id == F_BATCH) {
        args_bind(r, at, "batch", a, 2, batch, p, set);
        if (!set[0]) rt_fail(r, at, HEARTH_E_INVALID, "batch: missing the required argument 'linecount'");
    } else if (id == F_UNIQUE) {
        args_bind(r, at, "unique", a, 2, unique, p, set);
    } else if (id == F_ITEMS && (a->n_pos || a->n_kw)) {
        rt_fail(r, at, HEARTH_E_INVALID, "items takes no arguments");
    }
    gen_thunk *g = rt_alloc(r, sizeof *g);
    g->id = id;
    g->in = in;
    g->args = *a; /* the argument arrays are this call's own (eval_args makes them fresh) */
    g->at = at;
    tlist *l = rt_list(r, 0);
    l->gen = 1;
    l->thunk = g;
    return tv_listv(l);
}

static tv filter_inner(rt *r, scope *sc, const node *at, int id, tv in, const targs *a) {
    (void)sc; /* filters need no scope today; map and select reach tests through gen_run */
    switch ((filter_id)id) {
    case F_ABS:
        if (a->n_pos || a->n_kw) rt_fail(r, at, HEARTH_E_INVALID, "abs takes no arguments");
        if (in.kind == TV_INT) {
            if (in.u.i == INT64_MIN) rt_fail(r, at, HEARTH_E_UNSUPPORTED, "integer overflow");
            return tv_int(in.u.i < 0 ? -in.u.i : in.u.i);
        }
        if (in.kind == TV_BOOL) return tv_int(in.u.b);
        if (in.kind == TV_FLOAT) return tv_float(fabs(in.u.f));
        rt_fail(r, at, HEARTH_E_INVALID, "bad operand type for abs(): '%s'", tv_type_name(in));
    case F_ATTR: {
        BIND("attr", "name");
        if (!set[0]) rt_fail(r, at, HEARTH_E_INVALID, "attr needs the attribute name");
        tv name = tv_to_strv(r, p[0]);
        if (in.kind == TV_UNDEF) /* getattr on jinja2's Undefined raises */
            rt_fail(r, at, HEARTH_E_INVALID, "an undefined value has no attribute '%.*s'", (int)name.u.s->len, name.u.s->p);
        if (name.u.s->len && name.u.s->p[0] == '_') {
            tv u = tv_undef_named(name.u.s);
            u.flags = TVF_UNSAFE;
            return u;
        }
        tv out;
        if (in.kind == TV_NS && dict_get(in.u.d, name, &out)) return out;
        if (builtin_attr(r, at, in, name.u.s, &out)) return out;
        return tv_undef_named(name.u.s);
    }
    case F_CAPITALIZE: return str_case(r, soft_str(r, in), CASE_CAPITALIZE);
    case F_CENTER: {
        BIND("center", "width");
        tstr space = {" ", 1, 1, NULL};
        return str_pad(r, soft_str(r, in), set[0] ? as_int(r, at, p[0], "width") : 80, &space, 1);
    }
    case F_DEFAULT: {
        BIND("default", "default_value", "boolean");
        bool use = in.kind == TV_UNDEF || (set[1] && tv_truthy(p[1]) && !tv_truthy(in));
        if (!use) return in;
        return set[0] ? p[0] : rt_strv(r, "", 0);
    }
    case F_DICTSORT: {
        BIND("dictsort", "case_sensitive", "by", "reverse");
        if (in.kind != TV_DICT) rt_fail(r, at, HEARTH_E_INVALID, "dictsort needs a mapping, not %s", tv_type_name(in));
        int pos = 0;
        if (set[1]) {
            const tstr *by = p[1].kind == TV_STR ? p[1].u.s : NULL;
            if (by && by->len == 5 && !memcmp(by->p, "value", 5)) pos = 1;
            else if (!by || by->len != 3 || memcmp(by->p, "key", 3))
                rt_fail(r, at, HEARTH_E_INVALID, "you can only sort by either \"key\" or \"value\"");
        }
        const tdict *d = in.u.d;
        tlist *pairs = rt_list(r, d->n);
        tv *keys = rt_alloc(r, (d->n + 1) * sizeof(tv));
        bool cs = set[0] && tv_truthy(p[0]);
        for (size_t i = 0; i < d->n; i++) {
            tlist *t = rt_list(r, 2);
            t->v[0] = d->k[i];
            t->v[1] = d->v[i];
            t->n = 2;
            tv tup = tv_listv(t);
            tup.flags = TVF_TUPLE;
            pairs->v[pairs->n++] = tup;
            keys[i] = cs ? t->v[pos] : lower_if_str(r, t->v[pos]);
        }
        return tv_listv(sorted_by(r, at, pairs, keys, reverse_flag(r, at, &p[2], set[2])));
    }
    case F_ESCAPE: return str_escape(r, in);
    case F_FORCEESCAPE: return str_escape(r, plain_str(r, in));
    case F_FIRST:
    case F_LAST: {
        if (id == F_LAST && in.kind == TV_LIST && in.u.l->gen)
            rt_fail(r, at, HEARTH_E_INVALID, "'generator' object is not reversible");
        tlist *items = tv_iter(r, at, in);
        if (items->n == 0) return tv_undef();
        return items->v[id == F_FIRST ? 0 : items->n - 1];
    }
    case F_FLOAT: {
        BIND("float", "default");
        tv def = set[0] ? p[0] : tv_float(0.0);
        if (in.kind == TV_UNDEF) rt_fail(r, at, HEARTH_E_INVALID, "an undefined value is not a number");
        if (in.kind == TV_FLOAT) return in;
        if (in.kind == TV_INT) return tv_float((double)in.u.i);
        if (in.kind == TV_BOOL) return tv_float(in.u.b);
        double d;
        if (in.kind == TV_STR && parse_py_float(r, in.u.s, &d)) return tv_float(d);
        return def;
    }
    case F_FORMAT: { /* soft_str(value) % (kwargs or args) */
        if (a->n_pos && a->n_kw) rt_fail(r, at, HEARTH_E_INVALID, "format can't handle positional and keyword arguments at the same time");
        tv args;
        if (a->n_kw) {
            tdict *d = rt_dict(r, (size_t)a->n_kw);
            for (int i = 0; i < a->n_kw; i++) dict_set(r, d, tv_strv(a->kw_names[i]), a->kw_vals[i]);
            args = tv_dictv(d);
        } else {
            tlist *l = rt_list(r, (size_t)a->n_pos);
            for (int i = 0; i < a->n_pos; i++) l->v[l->n++] = a->pos[i];
            args = tv_listv(l);
            args.flags = TVF_TUPLE;
        }
        return py_percent_format(r, at, soft_str(r, in), args);
    }
    case F_INDENT: {
        BIND("indent", "width", "first", "blank");
        if (in.kind != TV_STR) rt_fail(r, at, HEARTH_E_INVALID, "indent needs a string, not %s", tv_type_name(in));
        tv w = set[0] ? p[0] : tv_int(4);
        if (w.kind != TV_STR && w.kind != TV_INT && w.kind != TV_BOOL)
            rt_fail(r, at, HEARTH_E_INVALID, "indent width must be an integer or a string");
        return do_indent(r, in, w, set[1] && tv_truthy(p[1]), set[2] && tv_truthy(p[2]));
    }
    case F_INT: {
        BIND("int", "default", "base");
        tv def = set[0] ? p[0] : tv_int(0);
        /* int(value, base) with a base that is no integer is a TypeError: on to int(float(value)) */
        bool base_ok = !set[1] || p[1].kind == TV_INT || p[1].kind == TV_BOOL;
        int64_t base = !set[1] ? 10 : !base_ok ? -1 : p[1].kind == TV_BOOL ? p[1].u.b : p[1].u.i;
        int64_t iv;
        double d;
        if (in.kind == TV_UNDEF) rt_fail(r, at, HEARTH_E_INVALID, "an undefined value is not a number");
        if (in.kind == TV_INT) return in;
        if (in.kind == TV_BOOL) return tv_int(in.u.b);
        if (in.kind == TV_FLOAT) { /* int(x): nan is a ValueError (-> default), inf raises */
            if (isnan(in.u.f)) return def;
            if (isinf(in.u.f)) rt_fail(r, at, HEARTH_E_INVALID, "cannot convert float infinity to integer");
            if (fabs(in.u.f) >= 9.2e18) rt_fail(r, at, HEARTH_E_UNSUPPORTED, "integer out of 64-bit range");
            return tv_int((int64_t)in.u.f);
        }
        if (in.kind != TV_STR) return def;
        int ok = base_ok && (base == 0 || (base >= 2 && base <= 36)) ? parse_py_int(in.u.s, (int)base, &iv) : 0;
        if (ok == 1) return tv_int(iv);
        if (ok == 2) rt_fail(r, at, HEARTH_E_UNSUPPORTED, "integer out of 64-bit range");
        if (parse_py_float(r, in.u.s, &d) && isfinite(d)) { /* int(float(s)); nan and inf -> default */
            if (fabs(d) >= 9.2e18) rt_fail(r, at, HEARTH_E_UNSUPPORTED, "integer out of 64-bit range");
            return tv_int((int64_t)d);
        }
        return def;
    }
    case F_JOIN: {
        BIND("join", "d", "attribute");
        tv sep = set[0] ? plain_str(r, p[0]) : rt_strv(r, "", 0);
        tlist *items = tv_iter(r, at, in);
        rt_step(r, at, items->n);
        tbuf b = {0};
        for (size_t i = 0; i < items->n; i++) {
            if (i) buf_put(r, &b, sep.u.s->p, sep.u.s->len);
            tv x = set[1] ? get_attr(r, at, items->v[i], p[1], tv_undef(), false) : items->v[i];
            tv_str(r, &b, x);
        }
        return rt_strv(r, b.p ? b.p : "", b.len);
    }
    case F_LENGTH: return tv_int((int64_t)py_len(r, at, in));
    case F_LIST: {
        tlist *items = tv_iter(r, at, in);
        tlist *l = rt_list(r, items->n);
        if (items->n) memcpy(l->v, items->v, items->n * sizeof(tv));
        l->n = items->n;
        return tv_listv(l);
    }
    case F_LOWER: return str_case(r, soft_str(r, in), CASE_LOWER);
    case F_UPPER: return str_case(r, soft_str(r, in), CASE_UPPER);
    case F_TITLE: return str_case(r, soft_str(r, in), CASE_JINJA_TITLE);
    case F_MAP:
    case F_REJECT:
    case F_SELECT:
    case F_REJECTATTR:
    case F_SELECTATTR:
    case F_UNIQUE:
    case F_ITEMS:
    case F_BATCH: return lazy(r, at, id, in, a);
    case F_MIN:
    case F_MAX: {
        BIND("min", "case_sensitive", "attribute");
        tlist *items = tv_iter(r, at, in);
        if (items->n == 0) return tv_undef();
        bool cs = set[0] && tv_truthy(p[0]);
        tv attr = set[1] ? p[1] : tv_none();
        size_t best = 0;
        tv bk = get_attr(r, at, items->v[0], attr, tv_undef(), !cs);
        for (size_t i = 1; i < items->n; i++) {
            tv k = get_attr(r, at, items->v[i], attr, tv_undef(), !cs);
            int c = tv_cmp(r, at, k, bk);
            if (id == F_MIN ? c < 0 : c > 0) {
                best = i;
                bk = k;
            }
        }
        return items->v[best];
    }
    case F_REPLACE: {
        BIND("replace", "old", "new", "count");
        if (!set[0] || !set[1]) rt_fail(r, at, HEARTH_E_INVALID, "replace needs old and new");
        int64_t count = set[2] && p[2].kind != TV_NONE ? as_int(r, at, p[2], "count") : -1;
        return str_replace(r, plain_str(r, in).u.s, plain_str(r, p[0]).u.s, plain_str(r, p[1]).u.s, count);
    }
    case F_REVERSE: {
        if (in.kind == TV_STR) {
            const tstr *s = in.u.s;
            char *buf = rt_alloc(r, s->len + 1);
            size_t o = s->len;
            for (size_t i = 0; i < s->len;) {
                size_t len;
                utf8_dec(s->p + i, s->len - i, &len);
                o -= len;
                memcpy(buf + o, s->p + i, len);
                i += len;
            }
            tv v = rt_strv(r, buf, s->len);
            v.flags = in.flags & TVF_MARKUP;
            return v;
        }
        bool was_gen = in.kind == TV_LIST && in.u.l->gen;
        tlist *items = tv_iter(r, at, in);
        tlist *l = rt_list(r, items->n);
        for (size_t i = items->n; i-- > 0;) l->v[l->n++] = items->v[i];
        return was_gen ? tv_listv(l) : gen_of(l); /* reversed() is an iterator; list() of a generator is not */
    }
    case F_ROUND: {
        BIND("round", "precision", "method");
        int64_t prec = set[0] ? as_int(r, at, p[0], "precision") : 0;
        const tstr *method = set[1] ? tv_to_strv(r, p[1]).u.s : NULL;
        return do_round(r, at, in, prec, method);
    }
    case F_SAFE: {
        tv v = plain_str(r, in);
        v.flags = TVF_MARKUP;
        return v;
    }
    case F_SORT: {
        BIND("sort", "reverse", "case_sensitive", "attribute");
        tlist *items = tv_iter(r, at, in);
        bool cs = set[1] && tv_truthy(p[1]);
        tv *keys = rt_alloc(r, (items->n + 1) * sizeof(tv));
        if (set[2] && p[2].kind == TV_STR && memchr(p[2].u.s->p, ',', p[2].u.s->len)) {
            tlist *attrs = str_split(r, at, p[2].u.s, &(tstr){",", 1, 1, NULL}, -1);
            for (size_t i = 0; i < items->n; i++) {
                tlist *k = rt_list(r, attrs->n);
                for (size_t j = 0; j < attrs->n; j++)
                    k->v[k->n++] = get_attr(r, at, items->v[i], attrs->v[j], tv_undef(), !cs);
                keys[i] = tv_listv(k);
            }
        } else {
            for (size_t i = 0; i < items->n; i++)
                keys[i] = get_attr(r, at, items->v[i], set[2] ? p[2] : tv_none(), tv_undef(), !cs);
        }
        return tv_listv(sorted_by(r, at, items, keys, reverse_flag(r, at, &p[0], set[0])));
    }
    case F_STRING: return soft_str(r, in);
    case F_SUM: {
        BIND("sum", "attribute", "start");
        tv acc = set[1] ? p[1] : tv_int(0);
        tlist *items = tv_iter(r, at, in);
        rt_step(r, at, items->n);
        for (size_t i = 0; i < items->n; i++) {
            tv x = set[0] ? get_attr(r, at, items->v[i], p[0], tv_undef(), false) : items->v[i];
            if (acc.kind == TV_STR) rt_fail(r, at, HEARTH_E_INVALID, "sum() can't sum strings");
            acc = tv_binop(r, at, OP_ADD, acc, x);
        }
        return acc;
    }
    case F_TOJSON: return do_tojson(r, at, in, a);
    case F_TRIM: {
        BIND("trim", "chars");
        if (set[0] && p[0].kind != TV_NONE && p[0].kind != TV_STR)
            rt_fail(r, at, HEARTH_E_INVALID, "strip arg must be None or str");
        const tstr *chars = set[0] && p[0].kind == TV_STR ? p[0].u.s : NULL;
        return str_strip(r, soft_str(r, in), chars, true, true);
    }
    case F_WORDCOUNT: {
        const tstr *s = soft_str(r, in).u.s;
        int64_t n = 0;
        bool in_word = false;
        for (size_t i = 0; i < s->len;) {
            size_t len;
            uint32_t cp = utf8_dec(s->p + i, s->len - i, &len);
            i += len;
            utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
            bool w = cp == '_' || (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO) ||
                     (c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO);
            if (w && !in_word) n++;
            in_word = w;
        }
        return tv_int(n);
    }
    }
    rt_fail(r, at, HEARTH_E_UNSUPPORTED, "filter not supported");
}

/* Filters whose only parameter is the value (jinja2 raises a TypeError for more). */
static bool takes_no_arguments(filter_id id) {
    switch (id) {
    case F_ABS: case F_CAPITALIZE: case F_ESCAPE: case F_FIRST: case F_FORCEESCAPE: case F_LAST:
    case F_LENGTH: case F_LIST: case F_LOWER: case F_REVERSE: case F_SAFE: case F_STRING: case F_TITLE:
    case F_UPPER: case F_WORDCOUNT: return true;
    default: return false;
    }
}

tv filter_apply(rt *r, scope *sc, const node *at, int id, tv in, const targs *a) {
    if (id < 0) no_filter(r, at, id, at->name->p, at->name->len);
    rt_step(r, at, 1);
    if (takes_no_arguments((filter_id)id) && (a->n_pos || a->n_kw))
        rt_fail(r, at, HEARTH_E_INVALID, "this filter takes no arguments");
    return filter_inner(r, sc, at, id, in, a);
}
