/*
 * access.c - attribute and item access, iteration: jinja2's sandboxed getattr/getitem.
 *
 *   x.name    Python getattr first (so `d.items` is the dict method even when d has an "items"
 *             key), then x["name"]; missing -> undefined.
 *   x[key]    x[key] first (dict key, list index, string index), then getattr for string keys
 *             (so `d['get']` finds the method when there is no "get" key); missing or a
 *             TypeError -> undefined.
 *   Either on an undefined value raises (jinja2's Undefined refuses attributes), names that
 *   start with "_" are refused by the sandbox, and the mutating methods of lists and dicts
 *   (append, update, pop, ...) are "unsafe": they look up as an undefined that raises when
 *   called, as ImmutableSandboxedEnvironment does.
 */
#include "template/tmpl_internal.h"

#include <string.h>

_Noreturn static void undefined_access(rt *r, const node *at, tv v, const tstr *what) {
    if (v.u.s)
        rt_fail(r, at, HEARTH_E_INVALID, "'%.*s' is undefined (reading '%.*s' from it)", (int)v.u.s->len,
                v.u.s->p, (int)what->len, what->p);
    rt_fail(r, at, HEARTH_E_INVALID, "an undefined value has no attribute '%.*s'", (int)what->len, what->p);
}

static tv unsafe(const tstr *name) {
    tv v = tv_undef_named(name);
    v.flags = TVF_UNSAFE;
    return v;
}

tv tv_getattr(rt *r, const node *at, tv obj, const tstr *name) {
    if (obj.kind == TV_UNDEF) undefined_access(r, at, obj, name);
    if (name->len && name->p[0] == '_') return unsafe(name);
    tv out;
    switch ((tv_kind)obj.kind) {
    case TV_DICT:
        if (builtin_attr(r, at, obj, name, &out)) return out;
        if (dict_get(obj.u.d, tv_strv(name), &out)) return out;
        break;
    case TV_NS:
        if (dict_get(obj.u.d, tv_strv(name), &out)) return out;
        break;
    case TV_STR:
    case TV_LIST:
    case TV_LOOP:
        if (builtin_attr(r, at, obj, name, &out)) return out;
        break;
    default: break;
    }
    return tv_undef_named(name);
}

tv tv_getitem(rt *r, const node *at, tv obj, tv key) {
    tv out;
    if (obj.kind == TV_UNDEF) {
        if (key.kind == TV_STR) undefined_access(r, at, obj, key.u.s);
        tstr what = {"[...]", 5, 5, NULL};
        undefined_access(r, at, obj, &what);
    }
    bool int_key = key.kind == TV_INT || key.kind == TV_BOOL;
    int64_t k = key.kind == TV_BOOL ? (int64_t)key.u.b : key.u.i;
    switch ((tv_kind)obj.kind) {
    case TV_DICT:
        if ((key.kind == TV_LIST && !(key.flags & TVF_TUPLE) && !key.u.l->gen) || key.kind == TV_DICT)
            return tv_undef();
        if (dict_get(obj.u.d, key, &out)) return out;
        break;
    case TV_LIST:
        if (int_key && !obj.u.l->gen) {
            int64_t n = (int64_t)obj.u.l->n;
            if (k < 0) k += n;
            if (k >= 0 && k < n) return obj.u.l->v[k];
            return tv_undef();
        }
        break;
    case TV_STR:
        if (int_key) {
            const tstr *s = obj.u.s;
            int64_t n = (int64_t)s->ncp;
            if (k < 0) k += n;
            if (k < 0 || k >= n) return tv_undef();
            size_t off = tstr_off(s, (size_t)k), len;
            utf8_dec(s->p + off, s->len - off, &len);
            tv v = rt_strv(r, s->p + off, len);
            v.flags = obj.flags & TVF_MARKUP;
            return v;
        }
        break;
    default: break;
    }
    if (key.kind == TV_STR) return tv_getattr(r, at, obj, key.u.s);
    return tv_undef();
}

tlist *tv_iter(rt *r, const node *at, tv v) {
    switch ((tv_kind)v.kind) {
    case TV_UNDEF: return rt_list(r, 0);
    case TV_LIST: {
        tlist *l = v.u.l;
        if (l->gen == 2) return rt_list(r, 0); /* a generator runs once */
        if (l->gen == 1) {
            l->gen = 2;
            if (l->thunk) {
                const gen_thunk *g = l->thunk;
                l->thunk = NULL;
                return gen_run(r, g);
            }
        }
        return l;
    }
    case TV_DICT: {
        tlist *l = rt_list(r, v.u.d->n);
        for (size_t i = 0; i < v.u.d->n; i++) l->v[l->n++] = v.u.d->k[i];
        return l;
    }
    case TV_STR: {
        const tstr *s = v.u.s;
        rt_step(r, at, s->ncp);
        tlist *l = rt_list(r, s->ncp);
        for (size_t off = 0; off < s->len;) {
            size_t len;
            utf8_dec(s->p + off, s->len - off, &len);
            l->v[l->n++] = rt_strv(r, s->p + off, len); /* str.__iter__: plain str, even of a Markup */
            off += len;
        }
        return l;
    }
    default: rt_fail(r, at, HEARTH_E_INVALID, "'%s' object is not iterable", tv_type_name(v));
    }
}

tv tv_attr_path(rt *r, const node *at, tv obj, const tstr *path) {
    size_t a = 0;
    for (;;) {
        size_t b = a;
        while (b < path->len && path->p[b] != '.') b++;
        bool digits = b > a;
        int64_t idx = 0;
        for (size_t i = a; i < b; i++) {
            if (path->p[i] < '0' || path->p[i] > '9' || idx > 100000000) {
                digits = false;
                break;
            }
            idx = idx * 10 + (path->p[i] - '0');
        }
        tv key = digits ? tv_int(idx) : rt_strv(r, path->p + a, b - a);
        obj = tv_getitem(r, at, obj, key);
        if (b >= path->len) return obj;
        a = b + 1;
    }
}
