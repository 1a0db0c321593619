/*
 * builtins.c - what a template can call besides filters and macros: the globals of the
 * environment transformers builds (range, dict, namespace from jinja2's defaults;
 * raise_exception and strftime_now from transformers), the str / dict / list methods Python
 * gives those types, and the attributes of `loop`.
 *
 * Sandbox rules as ImmutableSandboxedEnvironment applies them: range() refuses more than
 * 100000 items, mutating methods (list.append, dict.update, ...) are unsafe (an undefined that
 * raises when called). A Python method hearth does not implement is still an attribute (so `is
 * defined` agrees with jinja2) but calling it is an "unsupported" error, never a wrong answer.
 */
#include "template/tmpl_internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

typedef enum {
    FN_UNSUPPORTED = 0,
    FN_RANGE, FN_DICT, FN_NAMESPACE, FN_RAISE, FN_STRFTIME,
    FN_S_UPPER, FN_S_LOWER, FN_S_SWAPCASE, FN_S_CAPITALIZE, FN_S_TITLE, FN_S_CASEFOLD,
    FN_S_STRIP, FN_S_LSTRIP, FN_S_RSTRIP, FN_S_SPLIT, FN_S_RSPLIT, FN_S_SPLITLINES,
    FN_S_STARTSWITH, FN_S_ENDSWITH, FN_S_REPLACE, FN_S_FIND, FN_S_RFIND, FN_S_INDEX, FN_S_RINDEX,
    FN_S_COUNT, FN_S_JOIN, FN_S_FORMAT, FN_S_REMOVEPREFIX, FN_S_REMOVESUFFIX, FN_S_PARTITION,
    FN_S_RPARTITION, FN_S_CENTER, FN_S_LJUST, FN_S_RJUST, FN_S_ZFILL,
    FN_S_ISDIGIT, FN_S_ISDECIMAL, FN_S_ISNUMERIC, FN_S_ISALPHA, FN_S_ISALNUM, FN_S_ISSPACE,
    FN_S_ISLOWER, FN_S_ISUPPER, FN_S_ISASCII,
    FN_D_ITEMS, FN_D_KEYS, FN_D_VALUES, FN_D_GET, FN_D_COPY,
    FN_L_INDEX, FN_L_COUNT, FN_L_COPY,
    FN_LOOP_CYCLE, FN_LOOP_CHANGED,
} fn_id;

typedef struct {
    const char *name;
    fn_id       id;
} fn_entry;

static const fn_entry str_methods[] = {
    {"upper", FN_S_UPPER}, {"lower", FN_S_LOWER}, {"swapcase", FN_S_SWAPCASE},
    {"capitalize", FN_S_CAPITALIZE}, {"title", FN_S_TITLE}, {"casefold", FN_S_CASEFOLD},
    {"strip", FN_S_STRIP}, {"lstrip", FN_S_LSTRIP}, {"rstrip", FN_S_RSTRIP}, {"split", FN_S_SPLIT},
    {"rsplit", FN_S_RSPLIT}, {"splitlines", FN_S_SPLITLINES}, {"startswith", FN_S_STARTSWITH},
    {"endswith", FN_S_ENDSWITH}, {"replace", FN_S_REPLACE}, {"find", FN_S_FIND}, {"rfind", FN_S_RFIND},
    {"index", FN_S_INDEX}, {"rindex", FN_S_RINDEX}, {"count", FN_S_COUNT}, {"join", FN_S_JOIN},
    {"format", FN_S_FORMAT}, {"removeprefix", FN_S_REMOVEPREFIX}, {"removesuffix", FN_S_REMOVESUFFIX},
    {"partition", FN_S_PARTITION}, {"rpartition", FN_S_RPARTITION}, {"center", FN_S_CENTER},
    {"ljust", FN_S_LJUST}, {"rjust", FN_S_RJUST}, {"zfill", FN_S_ZFILL}, {"isdigit", FN_S_ISDIGIT},
    {"isdecimal", FN_S_ISDECIMAL}, {"isnumeric", FN_S_ISNUMERIC}, {"isalpha", FN_S_ISALPHA},
    {"isalnum", FN_S_ISALNUM}, {"isspace", FN_S_ISSPACE}, {"islower", FN_S_ISLOWER},
    {"isupper", FN_S_ISUPPER}, {"isascii", FN_S_ISASCII},
    /* Python has these too; calling one is "unsupported" */
    {"encode", FN_UNSUPPORTED}, {"expandtabs", FN_UNSUPPORTED}, {"format_map", FN_UNSUPPORTED},
    {"isidentifier", FN_UNSUPPORTED}, {"isprintable", FN_UNSUPPORTED}, {"istitle", FN_UNSUPPORTED},
    {"maketrans", FN_UNSUPPORTED}, {"translate", FN_UNSUPPORTED},
    {NULL, FN_UNSUPPORTED},
};
static const fn_entry dict_methods[] = {
    {"items", FN_D_ITEMS}, {"keys", FN_D_KEYS}, {"values", FN_D_VALUES}, {"get", FN_D_GET},
    {"copy", FN_D_COPY}, {"fromkeys", FN_UNSUPPORTED}, {NULL, FN_UNSUPPORTED},
};
static const fn_entry list_methods[] = {
    {"index", FN_L_INDEX}, {"count", FN_L_COUNT}, {"copy", FN_L_COPY}, {NULL, FN_UNSUPPORTED},
};
static const char *const dict_unsafe[] = {"clear", "pop", "popitem", "setdefault", "update", NULL};
static const char *const list_unsafe[] = {"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort", NULL};

static bool name_eq(const tstr *s, const char *lit) { return s->len == strlen(lit) && !memcmp(s->p, lit, s->len); }

static const fn_entry *find_fn(const fn_entry *t, const tstr *name) {
    for (; t->name; t++)
        if (name_eq(name, t->name)) return t;
    return NULL;
}

static bool in_names(const char *const *names, const tstr *name) {
    for (; *names; names++)
        if (name_eq(name, *names)) return true;
    return false;
}

static tv bound(rt *r, tv self, const fn_entry *e) {
    tfunc *f = rt_alloc(r, sizeof *f);
    f->id = (int)e->id;
    f->self = self;
    f->name = e->name;
    tv v = {0};
    v.kind = TV_FUNC;
    v.u.fn = f;
    return v;
}

static const tfunc g_range = {FN_RANGE, {0}, "range"}, g_dict = {FN_DICT, {0}, "dict"},
                   g_namespace = {FN_NAMESPACE, {0}, "namespace"}, g_raise = {FN_RAISE, {0}, "raise_exception"},
                   g_strftime = {FN_STRFTIME, {0}, "strftime_now"}, g_lipsum = {FN_UNSUPPORTED, {0}, "lipsum"},
                   g_cycler = {FN_UNSUPPORTED, {0}, "cycler"}, g_joiner = {FN_UNSUPPORTED, {0}, "joiner"};

tv builtin_global(rt *r, const tstr *name) {
    (void)r;
    static const tfunc *const all[] = {&g_range, &g_dict, &g_namespace, &g_raise, &g_strftime,
                                       &g_lipsum, &g_cycler, &g_joiner};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (name_eq(name, all[i]->name)) {
            tv v = {0};
            v.kind = TV_FUNC;
            v.u.fn = all[i];
            return v;
        }
    return tv_undef();
}

static bool loop_attr(rt *r, tloop *lp, const tstr *name, tv *out) {
    int64_t i = (int64_t)lp->i, n = (int64_t)lp->items->n;
    if (name_eq(name, "index")) *out = tv_int(i + 1);
    else if (name_eq(name, "index0")) *out = tv_int(i);
    else if (name_eq(name, "revindex")) *out = tv_int(n - i);
    else if (name_eq(name, "revindex0")) *out = tv_int(n - i - 1);
    else if (name_eq(name, "first")) *out = tv_bool(i == 0);
    else if (name_eq(name, "last")) *out = tv_bool(i == n - 1);
    else if (name_eq(name, "length")) *out = tv_int(n);
    else if (name_eq(name, "previtem")) *out = i > 0 ? lp->items->v[i - 1] : tv_undef_named(name);
    else if (name_eq(name, "nextitem")) *out = i + 1 < n ? lp->items->v[i + 1] : tv_undef_named(name);
    else if (name_eq(name, "depth")) *out = tv_int(lp->depth0 + 1);
    else if (name_eq(name, "depth0")) *out = tv_int(lp->depth0);
    else {
        static const fn_entry cycle = {"cycle", FN_LOOP_CYCLE}, changed = {"changed", FN_LOOP_CHANGED};
        tv self = {0};
        self.kind = TV_LOOP;
        self.u.loop = lp;
        if (name_eq(name, "cycle")) *out = bound(r, self, &cycle);
        else if (name_eq(name, "changed")) *out = bound(r, self, &changed);
        else return false;
    }
    return true;
}

bool builtin_attr(rt *r, const node *at, tv obj, const tstr *name, tv *out) {
    (void)at;
    const fn_entry *e = NULL;
    switch ((tv_kind)obj.kind) {
    case TV_STR: e = find_fn(str_methods, name); break;
    case TV_DICT:
        if (in_names(dict_unsafe, name)) {
            *out = tv_undef_named(name);
            out->flags = TVF_UNSAFE;
            return true;
        }
        e = find_fn(dict_methods, name);
        break;
    case TV_LIST:
        if (obj.u.l->gen) return false;
        if (in_names(list_unsafe, name)) {
            *out = tv_undef_named(name);
            out->flags = TVF_UNSAFE;
            return true;
        }
        e = find_fn(list_methods, name);
        break;
    case TV_LOOP: return loop_attr(r, obj.u.loop, name, out);
    default: return false;
    }
    if (!e) return false;
    *out = bound(r, obj, e);
    return true;
}

/* ---- argument helpers -------------------------------------------------------------------------- */

static const tstr *opt_str(rt *r, const node *at, tv v, bool set, const char *what) {
    if (!set || v.kind == TV_NONE) return NULL;
    if (v.kind != TV_STR) rt_fail(r, at, HEARTH_E_INVALID, "%s must be a string or None, not %s", what, tv_type_name(v));
    return v.u.s;
}

static const tstr *req_str(rt *r, const node *at, tv v, const char *what) {
    if (v.kind != TV_STR) rt_fail(r, at, HEARTH_E_INVALID, "%s must be a string, not %s", what, tv_type_name(v));
    return v.u.s;
}

static int64_t req_int(rt *r, const node *at, tv v, const char *what) {
    if (v.kind == TV_BOOL) return v.u.b;
    if (v.kind != TV_INT) rt_fail(r, at, HEARTH_E_INVALID, "%s must be an integer, not %s", what, tv_type_name(v));
    return v.u.i;
}

static tv tuple_of(rt *r, tv a, tv b, tv c, int n) {
    tlist *l = rt_list(r, (size_t)n);
    l->v[l->n++] = a;
    l->v[l->n++] = b;
    if (n == 3) l->v[l->n++] = c;
    tv v = tv_listv(l);
    v.flags = TVF_TUPLE;
    return v;
}

static tv fill_dict(rt *r, const node *at, tdict *d, const targs *a, const char *what) {
    if (a->n_pos > 1) rt_fail(r, at, HEARTH_E_INVALID, "%s expected at most 1 positional argument", what);
    if (a->n_pos == 1) {
        tv src = a->pos[0];
        if (src.kind == TV_UNDEF) /* dict() asks the undefined value for .keys, which raises */
            rt_fail(r, at, HEARTH_E_INVALID, "%s: an undefined value is not a mapping", what);
        if (src.kind == TV_DICT || src.kind == TV_NS) {
            for (size_t i = 0; i < src.u.d->n; i++) dict_set(r, d, src.u.d->k[i], src.u.d->v[i]);
        } else {
            tlist *items = tv_iter(r, at, src);
            for (size_t i = 0; i < items->n; i++) {
                tlist *pair = tv_iter(r, at, items->v[i]);
                if (pair->n != 2) rt_fail(r, at, HEARTH_E_INVALID, "%s: a sequence element is not a pair", what);
                dict_set(r, d, pair->v[0], pair->v[1]);
            }
        }
    }
    for (int i = 0; i < a->n_kw; i++) dict_set(r, d, tv_strv(a->kw_names[i]), a->kw_vals[i]);
    return tv_dictv(d);
}

static tv do_range(rt *r, const node *at, const targs *a) {
    if (a->n_kw) rt_fail(r, at, HEARTH_E_INVALID, "range() takes no keyword arguments");
    if (a->n_pos < 1 || a->n_pos > 3) rt_fail(r, at, HEARTH_E_INVALID, "range expected 1 to 3 arguments");
    int64_t start = 0, stop, step = 1;
    if (a->n_pos == 1) {
        stop = req_int(r, at, a->pos[0], "range()");
    } else {
        start = req_int(r, at, a->pos[0], "range()");
        stop = req_int(r, at, a->pos[1], "range()");
        if (a->n_pos == 3) step = req_int(r, at, a->pos[2], "range()");
    }
    if (step == 0) rt_fail(r, at, HEARTH_E_INVALID, "range() arg 3 must not be zero");
    double count = step > 0 ? (stop > start ? ((double)stop - (double)start - 1) / (double)step + 1 : 0)
                            : (stop < start ? ((double)start - (double)stop - 1) / (double)-step + 1 : 0);
    if (count > 100000) rt_fail(r, at, HEARTH_E_LIMIT, "range too big: the sandbox blocks ranges larger than 100000");
    size_t n = (size_t)count;
    rt_step(r, at, n);
    tlist *l = rt_list(r, n);
    for (size_t i = 0; i < n; i++) l->v[l->n++] = tv_int(start + (int64_t)i * step);
    l->is_range = true;
    l->r_start = start;
    l->r_stop = stop;
    l->r_step = step;
    return tv_listv(l);
}

static tv do_strftime(rt *r, const node *at, const targs *a) {
    tv fmtv;
    bool set;
    static const char *const names[] = {"format"};
    args_bind(r, at, "strftime_now()", a, 1, names, &fmtv, &set);
    if (!set) rt_fail(r, at, HEARTH_E_INVALID, "strftime_now() needs a format");
    const tstr *fmt = req_str(r, at, fmtv, "strftime_now() format");
    char *f = rt_alloc(r, fmt->len + 1);
    memcpy(f, fmt->p, fmt->len);
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    for (size_t cap = 256; cap <= 65536; cap *= 4) {
        char *out = rt_alloc(r, cap);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        size_t n = strftime(out, cap, f, &tm); /* the template's format, as Python passes it on */
#pragma GCC diagnostic pop
        if (n > 0 || fmt->len == 0) return rt_strv(r, out, n);
    }
    return rt_strv(r, "", 0);
}

/* str.format with automatic or numbered fields and names; no format specs. */
static tv do_format(rt *r, const node *at, tv self, const targs *a) {
    const tstr *s = self.u.s;
    tbuf b = {0};
    int auto_idx = 0;
    for (size_t i = 0; i < s->len; i++) {
        char c = s->p[i];
        if (c == '}' ) {
            if (i + 1 < s->len && s->p[i + 1] == '}') i++;
            else rt_fail(r, at, HEARTH_E_INVALID, "single '}' encountered in format string");
            buf_putc(r, &b, '}');
            continue;
        }
        if (c != '{') {
            buf_putc(r, &b, c);
            continue;
        }
        if (i + 1 < s->len && s->p[i + 1] == '{') {
            buf_putc(r, &b, '{');
            i++;
            continue;
        }
        size_t e = i + 1;
        while (e < s->len && s->p[e] != '}') e++;
        if (e >= s->len) rt_fail(r, at, HEARTH_E_INVALID, "single '{' encountered in format string");
        const char *f = s->p + i + 1;
        size_t fl = e - i - 1;
        bool repr = false;
        if (fl >= 2 && f[fl - 2] == '!' && (f[fl - 1] == 'r' || f[fl - 1] == 's')) {
            repr = f[fl - 1] == 'r';
            fl -= 2;
        }
        if (memchr(f, ':', fl) || memchr(f, '.', fl) || memchr(f, '[', fl))
            rt_fail(r, at, HEARTH_E_UNSUPPORTED, "str.format: only plain fields are supported");
        tv v = tv_undef();
        bool found = false;
        if (fl == 0 || (f[0] >= '0' && f[0] <= '9')) {
            int idx = 0;
            if (fl == 0) idx = auto_idx++;
            else
                for (size_t k = 0; k < fl && idx < 100000; k++) idx = idx * 10 + (f[k] - '0');
            if (idx < a->n_pos) {
                v = a->pos[idx];
                found = true;
            }
        } else {
            for (int k = 0; k < a->n_kw; k++)
                if (a->kw_names[k]->len == fl && !memcmp(a->kw_names[k]->p, f, fl)) {
                    v = a->kw_vals[k];
                    found = true;
                }
        }
        if (!found) rt_fail(r, at, HEARTH_E_INVALID, "str.format: no argument for field '%.*s'", (int)fl, f);
        if (repr) tv_repr(r, &b, v);
        else tv_str(r, &b, v);
        i = e;
    }
    return rt_strv(r, b.p ? b.p : "", b.len);
}

static tv str_method(rt *r, const node *at, int id, tv self, const targs *a) {
    const tstr *s = self.u.s;
    tv p[3] = {{0}, {0}, {0}};
    bool set[3] = {false, false, false};
    size_t lo, hi;
    /* Python's str methods take positional arguments only, except split, rsplit, splitlines
     * and format; the case mappings and is*() take none at all */
    if (a->n_kw && id != FN_S_SPLIT && id != FN_S_RSPLIT && id != FN_S_SPLITLINES && id != FN_S_FORMAT)
        rt_fail(r, at, HEARTH_E_INVALID, "str method takes no keyword arguments");
    if (((id >= FN_S_UPPER && id <= FN_S_CASEFOLD) || (id >= FN_S_ISDIGIT && id <= FN_S_ISASCII)) && a->n_pos)
        rt_fail(r, at, HEARTH_E_INVALID, "str method takes no arguments");
    switch ((fn_id)id) {
    case FN_S_UPPER: return str_case(r, self, CASE_UPPER);
    case FN_S_LOWER:
    case FN_S_CASEFOLD: return str_case(r, self, CASE_LOWER);
    case FN_S_SWAPCASE: return str_case(r, self, CASE_SWAP);
    case FN_S_CAPITALIZE: return str_case(r, self, CASE_CAPITALIZE);
    case FN_S_TITLE: return str_case(r, self, CASE_TITLE);
    case FN_S_STRIP:
    case FN_S_LSTRIP:
    case FN_S_RSTRIP: {
        static const char *const names[] = {"chars"};
        args_bind(r, at, "strip()", a, 1, names, p, set);
        const tstr *chars = opt_str(r, at, p[0], set[0], "strip arg");
        return str_strip(r, self, chars, id != FN_S_RSTRIP, id != FN_S_LSTRIP);
    }
    case FN_S_SPLIT:
    case FN_S_RSPLIT: {
        static const char *const names[] = {"sep", "maxsplit"};
        args_bind(r, at, "split()", a, 2, names, p, set);
        const tstr *sep = opt_str(r, at, p[0], set[0], "split separator");
        int64_t maxsplit = set[1] ? req_int(r, at, p[1], "maxsplit") : -1;
        tlist *l = id == FN_S_SPLIT ? str_split(r, at, s, sep, maxsplit) : str_rsplit(r, at, s, sep, maxsplit);
        return tv_listv(l);
    }
    case FN_S_SPLITLINES: {
        static const char *const names[] = {"keepends"};
        args_bind(r, at, "splitlines()", a, 1, names, p, set);
        return tv_listv(str_splitlines(r, s, set[0] && req_int(r, at, p[0], "keepends") != 0));
    }
    case FN_S_STARTSWITH:
    case FN_S_ENDSWITH: {
        static const char *const names[] = {"prefix", "start", "end"};
        args_bind(r, at, "startswith()", a, 3, names, p, set);
        if (!set[0]) rt_fail(r, at, HEARTH_E_INVALID, "startswith/endswith needs an argument");
        if (!str_bounds(s, set[1] ? &p[1] : NULL, set[2] ? &p[2] : NULL, &lo, &hi)) return tv_bool(false);
        tlist *cands;
        if (p[0].kind == TV_LIST && (p[0].flags & TVF_TUPLE)) {
            cands = p[0].u.l;
        } else {
            cands = rt_list(r, 1);
            list_push(r, cands, p[0]);
        }
        for (size_t i = 0; i < cands->n; i++) {
            const tstr *x = req_str(r, at, cands->v[i], "startswith/endswith argument");
            if (x->len > hi - lo) continue;
            const char *where = id == FN_S_STARTSWITH ? s->p + lo : s->p + hi - x->len;
            if (memcmp(where, x->p, x->len) == 0) return tv_bool(true);
        }
        return tv_bool(false);
    }
    case FN_S_REPLACE: {
        static const char *const names[] = {"old", "new", "count"};
        args_bind(r, at, "replace()", a, 3, names, p, set);
        if (!set[0] || !set[1]) rt_fail(r, at, HEARTH_E_INVALID, "replace() needs two arguments");
        tv v = str_replace(r, s, req_str(r, at, p[0], "replace()"), req_str(r, at, p[1], "replace()"),
                           set[2] ? req_int(r, at, p[2], "count") : -1);
        return v;
    }
    case FN_S_FIND:
    case FN_S_RFIND:
    case FN_S_INDEX:
    case FN_S_RINDEX:
    case FN_S_COUNT: {
        static const char *const names[] = {"sub", "start", "end"};
        args_bind(r, at, "find()", a, 3, names, p, set);
        if (!set[0]) rt_fail(r, at, HEARTH_E_INVALID, "find/index/count needs an argument");
        const tstr *sub = req_str(r, at, p[0], "substring");
        bool ok = str_bounds(s, set[1] ? &p[1] : NULL, set[2] ? &p[2] : NULL, &lo, &hi);
        if (id == FN_S_COUNT) return tv_int(ok ? str_count(s, sub, lo, hi) : 0);
        int64_t k = ok ? str_find(s, sub, lo, hi, id == FN_S_RFIND || id == FN_S_RINDEX) : -1;
        if (k >= 0) k += (int64_t)utf8_count(s->p, lo, NULL);
        if (k < 0 && (id == FN_S_INDEX || id == FN_S_RINDEX)) rt_fail(r, at, HEARTH_E_INVALID, "substring not found");
        return tv_int(k);
    }
    case FN_S_JOIN: {
        static const char *const names[] = {"iterable"};
        args_bind(r, at, "join()", a, 1, names, p, set);
        tlist *items = tv_iter(r, at, p[0]);
        tbuf b = {0};
        for (size_t i = 0; i < items->n; i++) {
            if (items->v[i].kind != TV_STR)
                rt_fail(r, at, HEARTH_E_INVALID, "sequence item %zu: expected str instance, %s found", i,
                        tv_type_name(items->v[i]));
            if (i) buf_put(r, &b, s->p, s->len);
            buf_put(r, &b, items->v[i].u.s->p, items->v[i].u.s->len);
        }
        return rt_strv(r, b.p ? b.p : "", b.len);
    }
    case FN_S_FORMAT: return do_format(r, at, self, a);
    case FN_S_REMOVEPREFIX:
    case FN_S_REMOVESUFFIX: {
        static const char *const names[] = {"affix"};
        args_bind(r, at, "removeprefix()", a, 1, names, p, set);
        const tstr *x = req_str(r, at, p[0], "removeprefix() argument");
        if (x->len > s->len) return self;
        if (id == FN_S_REMOVEPREFIX && !memcmp(s->p, x->p, x->len)) return rt_strv(r, s->p + x->len, s->len - x->len);
        if (id == FN_S_REMOVESUFFIX && x->len && !memcmp(s->p + s->len - x->len, x->p, x->len))
            return rt_strv(r, s->p, s->len - x->len);
        return self;
    }
    case FN_S_PARTITION:
    case FN_S_RPARTITION: {
        static const char *const names[] = {"sep"};
        args_bind(r, at, "partition()", a, 1, names, p, set);
        const tstr *sep = req_str(r, at, p[0], "separator");
        if (sep->len == 0) rt_fail(r, at, HEARTH_E_INVALID, "empty separator");
        int64_t k = str_find(s, sep, 0, s->len, id == FN_S_RPARTITION);
        tv empty = rt_strv(r, "", 0);
        if (k < 0) return id == FN_S_PARTITION ? tuple_of(r, self, empty, empty, 3) : tuple_of(r, empty, empty, self, 3);
        size_t off = tstr_off(s, (size_t)k);
        return tuple_of(r, rt_strv(r, s->p, off), tv_strv(sep), rt_strv(r, s->p + off + sep->len, s->len - off - sep->len), 3);
    }
    case FN_S_CENTER:
    case FN_S_LJUST:
    case FN_S_RJUST:
    case FN_S_ZFILL: {
        static const char *const names[] = {"width", "fillchar"};
        args_bind(r, at, "center()", a, id == FN_S_ZFILL ? 1 : 2, names, p, set);
        int64_t w = req_int(r, at, p[0], "width");
        if (id == FN_S_ZFILL) {
            if (w <= (int64_t)s->ncp) return self;
            bool sign = s->len && (s->p[0] == '+' || s->p[0] == '-');
            tstr zero = {"0", 1, 1, NULL};
            tv rest = sign ? rt_strv(r, s->p + 1, s->len - 1) : self;
            tv padded = str_pad(r, rest, w - (sign ? 1 : 0), &zero, 2);
            if (!sign) return padded;
            tstr sg = {s->p, 1, 1, NULL};
            return str_concat(r, at, &sg, padded.u.s, false);
        }
        tstr space = {" ", 1, 1, NULL};
        const tstr *fill = set[1] ? req_str(r, at, p[1], "fillchar") : &space;
        if (fill->ncp != 1) rt_fail(r, at, HEARTH_E_INVALID, "the fill character must be exactly one character long");
        return str_pad(r, self, w, fill, id == FN_S_CENTER ? 1 : id == FN_S_LJUST ? 0 : 2);
    }
    case FN_S_ISDIGIT: return tv_bool(str_is(s, 0));
    case FN_S_ISDECIMAL: return tv_bool(str_is(s, 1));
    case FN_S_ISNUMERIC: return tv_bool(str_is(s, 2));
    case FN_S_ISALPHA: return tv_bool(str_is(s, 3));
    case FN_S_ISALNUM: return tv_bool(str_is(s, 4));
    case FN_S_ISSPACE: return tv_bool(str_is(s, 5));
    case FN_S_ISLOWER: return tv_bool(str_is(s, 6));
    case FN_S_ISUPPER: return tv_bool(str_is(s, 7));
    case FN_S_ISASCII: return tv_bool(str_is(s, 8));
    default: rt_fail(r, at, HEARTH_E_UNSUPPORTED, "str method not supported");
    }
}

tv builtin_call(rt *r, scope *sc, const node *at, const tfunc *fn, const targs *a) {
    (void)sc;
    rt_step(r, at, 1);
    tv self = fn->self, p[2] = {{0}, {0}};
    bool set[2] = {false, false};
    switch ((fn_id)fn->id) {
    case FN_UNSUPPORTED: rt_fail(r, at, HEARTH_E_UNSUPPORTED, "'%s' is not supported", fn->name);
    case FN_RANGE: return do_range(r, at, a);
    case FN_DICT: return fill_dict(r, at, rt_dict(r, 0), a, "dict()");
    case FN_NAMESPACE: {
        tv d = fill_dict(r, at, rt_dict(r, 0), a, "namespace()");
        d.kind = TV_NS;
        return d;
    }
    case FN_RAISE: { /* transformers: def raise_exception(message): raise TemplateError(message) */
        static const char *const names[] = {"message"};
        args_bind(r, at, "raise_exception()", a, 1, names, p, set);
        if (!set[0]) rt_fail(r, at, HEARTH_E_INVALID, "raise_exception() missing 1 required positional argument: 'message'");
        tbuf b = {0};
        tv_str(r, &b, p[0]);
        rt_fail(r, at, HEARTH_E_INVALID, "%s", b.len ? b.p : "raise_exception() with an empty message");
    }
    case FN_STRFTIME: return do_strftime(r, at, a);
    case FN_D_ITEMS:
    case FN_D_KEYS:
    case FN_D_VALUES: {
        if (a->n_pos || a->n_kw) rt_fail(r, at, HEARTH_E_INVALID, "%s() takes no arguments", fn->name);
        const tdict *d = self.u.d;
        tlist *l = rt_list(r, d->n);
        for (size_t i = 0; i < d->n; i++)
            l->v[l->n++] = fn->id == FN_D_ITEMS ? tuple_of(r, d->k[i], d->v[i], tv_undef(), 2)
                           : fn->id == FN_D_KEYS ? d->k[i] : d->v[i];
        return tv_listv(l);
    }
    case FN_D_GET: {
        if (a->n_kw) rt_fail(r, at, HEARTH_E_INVALID, "get() takes no keyword arguments");
        static const char *const names[] = {"key", "default"};
        args_bind(r, at, "get()", a, 2, names, p, set);
        if (!set[0]) rt_fail(r, at, HEARTH_E_INVALID, "get expected at least 1 argument");
        if ((p[0].kind == TV_LIST && !(p[0].flags & TVF_TUPLE) && !p[0].u.l->gen) || p[0].kind == TV_DICT)
            rt_fail(r, at, HEARTH_E_INVALID, "unhashable type: '%s'", tv_type_name(p[0]));
        tv out;
        if (dict_get(self.u.d, p[0], &out)) return out;
        return set[1] ? p[1] : tv_none();
    }
    case FN_D_COPY: {
        tdict *d = rt_dict(r, self.u.d->n);
        for (size_t i = 0; i < self.u.d->n; i++) dict_set(r, d, self.u.d->k[i], self.u.d->v[i]);
        return tv_dictv(d);
    }
    case FN_L_INDEX:
    case FN_L_COUNT: {
        if (a->n_kw) rt_fail(r, at, HEARTH_E_INVALID, "%s() takes no keyword arguments", fn->name);
        static const char *const names[] = {"value"};
        args_bind(r, at, "index()", a, 1, names, p, set);
        int64_t count = 0;
        for (size_t i = 0; i < self.u.l->n; i++)
            if (tv_eq(r, self.u.l->v[i], p[0])) {
                if (fn->id == FN_L_INDEX) return tv_int((int64_t)i);
                count++;
            }
        if (fn->id == FN_L_INDEX) rt_fail(r, at, HEARTH_E_INVALID, "value is not in list");
        return tv_int(count);
    }
    case FN_L_COPY: {
        tlist *l = rt_list(r, self.u.l->n);
        if (self.u.l->n) memcpy(l->v, self.u.l->v, self.u.l->n * sizeof(tv));
        l->n = self.u.l->n;
        return tv_listv(l);
    }
    case FN_LOOP_CYCLE:
        if (a->n_pos == 0) rt_fail(r, at, HEARTH_E_INVALID, "no items for cycling given");
        return a->pos[self.u.loop->i % (size_t)a->n_pos];
    case FN_LOOP_CHANGED: {
        tlist *l = rt_list(r, (size_t)a->n_pos);
        for (int i = 0; i < a->n_pos; i++) l->v[l->n++] = a->pos[i];
        tv now = tv_listv(l);
        now.flags = TVF_TUPLE;
        tloop *lp = self.u.loop;
        if (lp->has_changed && tv_eq(r, lp->last_changed, now)) return tv_bool(false);
        lp->last_changed = now;
        lp->has_changed = true;
        return tv_bool(true);
    }
    default:
        if (self.kind == TV_STR) return str_method(r, at, fn->id, self, a);
        rt_fail(r, at, HEARTH_E_UNSUPPORTED, "'%s' is not supported", fn->name);
    }
}
