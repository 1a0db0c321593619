/*
 * eval.c - the tree-walking evaluator: expressions, statements, scopes and macro calls.
 *
 * Scopes follow jinja2's observable rules (checked against jinja2 3.1):
 *   - every for-loop iteration runs in a fresh scope under the enclosing one, so a `set` in a
 *     loop body is gone at the next iteration and after the loop (hence namespace());
 *   - `if` opens no scope; `with`, macro bodies, call-block bodies, {% generation %} and a
 *     for loop's else block do;
 *   - a macro closes over the scope it was defined in and reads names there when called (late
 *     binding: a `set` after the definition is visible to a later call);
 *   - name lookup: scopes from the inside out, then the render context, then the globals.
 * Operators follow Python: `and`/`or` return an operand, `/` is true division, `//` and `%`
 * floor, `**` on ints stays an int, `+` joins strings and lists, `*` repeats them, `~`
 * converts both sides with str(). Arithmetic on an undefined value raises, as jinja2's
 * Undefined does; printing, iterating and testing it do not.
 */
#include "template/tmpl_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/size.h"

/* ---- the render state's basics ------------------------------------------------------------- */

_Noreturn void rt_fail(rt *r, const node *at, hearth_status code, const char *fmt, ...) {
    r->status = code;
    if (r->err) {
        char msg[sizeof r->err->msg];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        if (!at) at = r->cur;
        hearth_err_set(r->err, code, at ? (int64_t)at->pos : -1, "%s", msg);
        if (at) tmpl_linecol(r->t->src, r->t->len, at->pos, &r->err->line, &r->err->col);
    }
    longjmp(r->jb, 1);
}

void rt_step(rt *r, const node *at, size_t n) {
    if (n > r->lim.max_steps || r->steps > r->lim.max_steps - n)
        rt_fail(r, at, HEARTH_E_LIMIT, "the template ran more than %zu steps", r->lim.max_steps);
    r->steps += n;
}

void rt_enter(rt *r, const node *at) {
    if (++r->nest > RT_MAX_NEST) rt_fail(r, at, HEARTH_E_LIMIT, "the template nests too deeply");
}

void buf_put(rt *r, tbuf *b, const char *s, size_t n) {
    if (n == 0) return;
    size_t need;
    if (!hearth_add_size(b->len, n, &need) || need > r->lim.max_output_bytes)
        rt_fail(r, NULL, HEARTH_E_LIMIT, "the output exceeds %zu bytes", r->lim.max_output_bytes);
    rt_grow(r, &b->p, &b->cap, b->len, need + 1, 1, 256);
    memcpy(b->p + b->len, s, n);
    b->len = need;
    b->p[need] = 0;
}

void buf_puts(rt *r, tbuf *b, const char *s) { buf_put(r, b, s, strlen(s)); }

/* ---- scopes ---------------------------------------------------------------------------------- */

static scope *scope_new(rt *r, scope *parent) {
    scope *s = rt_alloc(r, sizeof *s);
    s->parent = parent;
    return s;
}

static bool same_name(const tstr *a, const tstr *b) {
    return a == b || (a->len == b->len && memcmp(a->p, b->p, a->len) == 0);
}

static void scope_set(rt *r, scope *s, const tstr *name, tv v) {
    for (int i = 0; i < s->n; i++)
        if (same_name(s->names[i], name)) {
            s->vals[i] = v;
            return;
        }
    size_t n = (size_t)s->n, cap_names = s->cap; /* names and values share one capacity */
    rt_grow(r, &s->names, &cap_names, n, n + 1, sizeof *s->names, 4);
    rt_grow(r, &s->vals, &s->cap, n, n + 1, sizeof *s->vals, 4);
    s->names[s->n] = name;
    s->vals[s->n++] = v;
}

static const tstr name_loop = {"loop", 4, 4, NULL}, name_caller = {"caller", 6, 6, NULL},
                  name_varargs = {"varargs", 7, 7, NULL}, name_kwargs = {"kwargs", 6, 6, NULL};

static tv lookup(rt *r, scope *s, const tstr *name) {
    for (; s; s = s->parent)
        for (int i = s->n - 1; i >= 0; i--)
            if (same_name(s->names[i], name)) return s->vals[i];
    tv v;
    if (dict_get(r->globals, tv_strv(name), &v)) return v;
    v = builtin_global(r, name);
    if (v.kind != TV_UNDEF) return v;
    return tv_undef_named(name);
}

/* ---- operators ------------------------------------------------------------------------------- */

_Noreturn static void undefined_error(rt *r, const node *at, tv v) {
    if (v.flags & TVF_UNSAFE)
        rt_fail(r, at, HEARTH_E_INVALID, "access to attribute '%s' is unsafe in the sandbox", v.u.s ? v.u.s->p : "?");
    if (v.u.s) rt_fail(r, at, HEARTH_E_INVALID, "'%.*s' is undefined", (int)v.u.s->len, v.u.s->p);
    rt_fail(r, at, HEARTH_E_INVALID, "an undefined value was used");
}

static bool is_int(tv v) { return v.kind == TV_INT || v.kind == TV_BOOL; }
static bool is_num(tv v) { return is_int(v) || v.kind == TV_FLOAT; }
static int64_t ival(tv v) { return v.kind == TV_BOOL ? (int64_t)v.u.b : v.u.i; }
static double fval(tv v) { return v.kind == TV_FLOAT ? v.u.f : (double)ival(v); }

_Noreturn static void bad_operands(rt *r, const node *at, const char *op, tv a, tv b) {
    rt_fail(r, at, HEARTH_E_INVALID, "unsupported operand type(s) for %s: '%s' and '%s'", op, tv_type_name(a),
            tv_type_name(b));
}

static tv repeat(rt *r, const node *at, tv seq, int64_t n) {
    if (n < 0) n = 0;
    if (seq.kind == TV_STR) {
        size_t total;
        if (!hearth_mul_size(seq.u.s->len, (size_t)n, &total) || total > r->lim.max_output_bytes)
            rt_fail(r, at, HEARTH_E_LIMIT, "string repetition exceeds the output limit");
        char *buf = rt_alloc(r, total + 1);
        for (int64_t i = 0; i < n; i++) memcpy(buf + (size_t)i * seq.u.s->len, seq.u.s->p, seq.u.s->len);
        tv v = rt_strv(r, buf, total);
        v.flags = seq.flags & TVF_MARKUP;
        return v;
    }
    size_t total;
    if (!hearth_mul_size(seq.u.l->n, (size_t)n, &total)) rt_fail(r, at, HEARTH_E_LIMIT, "list too long");
    rt_step(r, at, total);
    tlist *l = rt_list(r, total);
    for (int64_t i = 0; i < n; i++)
        for (size_t k = 0; k < seq.u.l->n; k++) l->v[l->n++] = seq.u.l->v[k];
    tv v = tv_listv(l);
    v.flags = seq.flags & TVF_TUPLE;
    return v;
}

/* Python's float divmod: floor quotient and modulo with the sign of the divisor. */
static void float_divmod(double x, double y, double *div, double *mod) {
    double m = fmod(x, y), d = (x - m) / y;
    if (m != 0) {
        if ((y < 0) != (m < 0)) {
            m += y;
            d -= 1.0;
        }
    } else {
        m = copysign(0.0, y);
    }
    double fd;
    if (d != 0) {
        fd = floor(d);
        if (d - fd > 0.5) fd += 1.0;
    } else {
        fd = copysign(0.0, x / y);
    }
    *div = fd;
    *mod = m;
}

tv tv_binop(rt *r, const node *at, int op, tv a, tv b) {
    if (a.kind == TV_UNDEF) undefined_error(r, at, a);
    if (b.kind == TV_UNDEF) undefined_error(r, at, b);
    if (is_num(a) && is_num(b)) {
        bool ints = is_int(a) && is_int(b);
        int64_t x = ints ? ival(a) : 0, y = ints ? ival(b) : 0, z = 0;
        double fx = fval(a), fy = fval(b);
        switch (op) {
        case OP_ADD:
            if (!ints) return tv_float(fx + fy);
            if (__builtin_add_overflow(x, y, &z)) goto overflow;
            return tv_int(z);
        case OP_SUB:
            if (!ints) return tv_float(fx - fy);
            if (__builtin_sub_overflow(x, y, &z)) goto overflow;
            return tv_int(z);
        case OP_MUL:
            if (!ints) return tv_float(fx * fy);
            if (__builtin_mul_overflow(x, y, &z)) goto overflow;
            return tv_int(z);
        case OP_DIV:
            if (fy == 0) rt_fail(r, at, HEARTH_E_INVALID, "division by zero");
            return tv_float(fx / fy);
        case OP_FDIV:
        case OP_MOD:
            if (ints) {
                if (y == 0) rt_fail(r, at, HEARTH_E_INVALID, "integer division or modulo by zero");
                if (x == INT64_MIN && y == -1) goto overflow;
                int64_t q = x / y, m = x % y;
                if (m != 0 && ((m < 0) != (y < 0))) {
                    q -= 1;
                    m += y;
                }
                return tv_int(op == OP_FDIV ? q : m);
            } else {
                if (fy == 0) rt_fail(r, at, HEARTH_E_INVALID, "float division by zero");
                double d, m;
                float_divmod(fx, fy, &d, &m);
                return tv_float(op == OP_FDIV ? d : m);
            }
        case OP_POW:
            if (ints && y >= 0) {
                int64_t acc = 1, base = x;
                for (int64_t e = y; e > 0; e >>= 1) {
                    if (e & 1 && __builtin_mul_overflow(acc, base, &acc)) goto overflow;
                    if (e > 1 && __builtin_mul_overflow(base, base, &base)) goto overflow;
                }
                return tv_int(acc);
            }
            if (fx == 0 && fy < 0) rt_fail(r, at, HEARTH_E_INVALID, "0.0 cannot be raised to a negative power");
            if (fx < 0 && fy != floor(fy))
                rt_fail(r, at, HEARTH_E_UNSUPPORTED, "a negative number raised to a fractional power is complex");
            double pw = pow(fx, fy);
            if (isinf(pw) && isfinite(fx) && isfinite(fy)) /* Python raises where C says HUGE_VAL */
                rt_fail(r, at, HEARTH_E_INVALID, "numerical result out of range");
            return tv_float(pw);
        }
    }
    static const char *const names[] = {[OP_ADD] = "+", [OP_SUB] = "-", [OP_MUL] = "*", [OP_DIV] = "/",
                                        [OP_FDIV] = "//", [OP_MOD] = "%", [OP_POW] = "**"};
    if (op == OP_ADD) {
        if (a.kind == TV_STR && b.kind == TV_STR) {
            bool ma = a.flags & TVF_MARKUP, mb = b.flags & TVF_MARKUP;
            if (ma && !mb) b = str_escape(r, b);
            if (mb && !ma) a = str_escape(r, a);
            return str_concat(r, at, a.u.s, b.u.s, ma || mb);
        }
        if (a.kind == TV_LIST && b.kind == TV_LIST && !a.u.l->gen && !b.u.l->gen && !a.u.l->is_range &&
            !b.u.l->is_range &&
            (a.flags & TVF_TUPLE) == (b.flags & TVF_TUPLE)) {
            size_t n;
            if (!hearth_add_size(a.u.l->n, b.u.l->n, &n)) rt_fail(r, at, HEARTH_E_LIMIT, "list too long");
            rt_step(r, at, n);
            tlist *l = rt_list(r, n);
            if (a.u.l->n) memcpy(l->v, a.u.l->v, a.u.l->n * sizeof(tv));
            if (b.u.l->n) memcpy(l->v + a.u.l->n, b.u.l->v, b.u.l->n * sizeof(tv));
            l->n = n;
            tv v = tv_listv(l);
            v.flags = a.flags & TVF_TUPLE;
            return v;
        }
    }
    if (op == OP_MUL) {
        bool sa = a.kind == TV_STR || (a.kind == TV_LIST && !a.u.l->gen && !a.u.l->is_range);
        bool sb = b.kind == TV_STR || (b.kind == TV_LIST && !b.u.l->gen && !b.u.l->is_range);
        if (sa && is_int(b)) return repeat(r, at, a, ival(b));
        if (sb && is_int(a)) return repeat(r, at, b, ival(a));
    }
    if (op == OP_MOD && a.kind == TV_STR) return py_percent_format(r, at, a, b);
    bad_operands(r, at, names[op], a, b);
overflow:
    rt_fail(r, at, HEARTH_E_UNSUPPORTED, "integer overflow (hearth's integers are 64-bit)");
}

static bool contains(rt *r, const node *at, tv hay, tv needle) {
    switch ((tv_kind)hay.kind) {
    case TV_UNDEF: return false;
    case TV_STR:
        if (needle.kind != TV_STR)
            rt_fail(r, at, HEARTH_E_INVALID, "'in <string>' requires string as left operand, not %s",
                    tv_type_name(needle));
        if (needle.u.s->len == 0) return true;
        return memmem(hay.u.s->p, hay.u.s->len, needle.u.s->p, needle.u.s->len) != NULL;
    case TV_LIST: {
        tlist *l = tv_iter(r, at, hay);
        for (size_t i = 0; i < l->n; i++)
            if (tv_eq(r, l->v[i], needle)) return true;
        return false;
    }
    case TV_DICT: {
        if ((needle.kind == TV_LIST && !(needle.flags & TVF_TUPLE) && !needle.u.l->gen) || needle.kind == TV_DICT)
            rt_fail(r, at, HEARTH_E_INVALID, "unhashable type: '%s'", tv_type_name(needle));
        tv dummy;
        return dict_get(hay.u.d, needle, &dummy);
    }
    default:
        rt_fail(r, at, HEARTH_E_INVALID, "argument of type '%s' is not iterable", tv_type_name(hay));
    }
}

static bool compare(rt *r, const node *at, int op, tv a, tv b) {
    switch (op) {
    case OP_EQ: return tv_eq(r, a, b);
    case OP_NE: return !tv_eq(r, a, b);
    case OP_LT: return tv_cmp(r, at, a, b) < 0;
    case OP_LE: return tv_cmp(r, at, a, b) <= 0;
    case OP_GT: return tv_cmp(r, at, a, b) > 0;
    case OP_GE: return tv_cmp(r, at, a, b) >= 0;
    case OP_IN: return contains(r, at, b, a);
    case OP_NOTIN: return !contains(r, at, b, a);
    }
    return false;
}

/* ---- calls ------------------------------------------------------------------------------------ */

static void eval_args(rt *r, scope *sc, const nargs *na, targs *out) {
    tlist *pos = rt_list(r, (size_t)na->pos.n);
    for (int i = 0; i < na->pos.n; i++) list_push(r, pos, eval_expr(r, sc, na->pos.v[i]));
    if (na->star) {
        tlist *more = tv_iter(r, na->star, eval_expr(r, sc, na->star));
        for (size_t i = 0; i < more->n; i++) list_push(r, pos, more->v[i]);
    }
    int n_kw = na->n_kw;
    tdict *extra = NULL;
    if (na->dstar) {
        tv d = eval_expr(r, sc, na->dstar);
        if (d.kind != TV_DICT) rt_fail(r, na->dstar, HEARTH_E_INVALID, "argument after ** must be a mapping");
        extra = d.u.d;
        n_kw += (int)extra->n;
    }
    out->n_pos = (int)pos->n;
    out->pos = pos->v;
    out->n_kw = n_kw;
    out->kw_names = rt_alloc(r, sizeof *out->kw_names * (size_t)(n_kw + 1));
    out->kw_vals = rt_alloc(r, sizeof *out->kw_vals * (size_t)(n_kw + 1));
    for (int i = 0; i < na->n_kw; i++) {
        out->kw_names[i] = na->kw_names[i];
        out->kw_vals[i] = eval_expr(r, sc, na->kw_vals[i]);
    }
    for (size_t i = 0; extra && i < extra->n; i++) {
        if (extra->k[i].kind != TV_STR) rt_fail(r, na->dstar, HEARTH_E_INVALID, "keywords must be strings");
        out->kw_names[na->n_kw + (int)i] = extra->k[i].u.s;
        out->kw_vals[na->n_kw + (int)i] = extra->v[i];
    }
}

static void exec_capture(rt *r, scope *sc, const nlist *body, tbuf *into);

static tv call_macro(rt *r, const node *at, const tmacro *m, const targs *a) {
    rt_step(r, at, 1);
    if (++r->depth > r->lim.max_depth)
        rt_fail(r, at, HEARTH_E_LIMIT, "macro calls nest deeper than %d", r->lim.max_depth);
    const nparams *ps = m->def->params;
    const char *mname = m->name ? m->name->p : "caller";
    scope *sc = scope_new(r, m->closure);
    bool *used = rt_alloc(r, (size_t)a->n_kw + 1);
    for (int i = 0; i < ps->n; i++) {
        tv v = tv_undef_named(ps->names[i]);
        bool set = false;
        if (i < a->n_pos) {
            v = a->pos[i];
            set = true;
        } else {
            for (int k = 0; k < a->n_kw; k++)
                if (!used[k] && same_name(a->kw_names[k], ps->names[i])) {
                    v = a->kw_vals[k];
                    used[k] = true;
                    set = true;
                }
        }
        if (!set && ps->defaults[i]) v = eval_expr(r, sc, ps->defaults[i]);
        scope_set(r, sc, ps->names[i], v);
    }
    if (ps->uses_caller) {
        tv caller = tv_undef_named(&name_caller);
        for (int k = 0; k < a->n_kw; k++)
            if (!used[k] && same_name(a->kw_names[k], &name_caller)) {
                caller = a->kw_vals[k];
                used[k] = true;
            }
        scope_set(r, sc, &name_caller, caller);
    }
    if (ps->uses_kwargs) {
        tdict *kw = rt_dict(r, 0);
        for (int k = 0; k < a->n_kw; k++)
            if (!used[k]) dict_set(r, kw, tv_strv(a->kw_names[k]), a->kw_vals[k]);
        scope_set(r, sc, &name_kwargs, tv_dictv(kw));
    } else {
        for (int k = 0; k < a->n_kw; k++)
            if (!used[k])
                rt_fail(r, at, HEARTH_E_INVALID, "macro '%s' takes no keyword argument '%.*s'", mname,
                        (int)a->kw_names[k]->len, a->kw_names[k]->p);
    }
    if (ps->uses_varargs) {
        tlist *rest = rt_list(r, 0);
        for (int i = ps->n; i < a->n_pos; i++) list_push(r, rest, a->pos[i]);
        tv t = tv_listv(rest);
        t.flags = TVF_TUPLE;
        scope_set(r, sc, &name_varargs, t);
    } else if (a->n_pos > ps->n) {
        rt_fail(r, at, HEARTH_E_INVALID, "macro '%s' takes not more than %d argument(s)", mname, ps->n);
    }
    tbuf out = {0};
    exec_capture(r, sc, &m->def->l1, &out);
    r->depth--;
    return rt_strv(r, out.p ? out.p : "", out.len);
}

tv call_value(rt *r, scope *sc, const node *at, tv callee, const targs *a) {
    switch ((tv_kind)callee.kind) {
    case TV_MACRO: return call_macro(r, at, callee.u.m, a);
    case TV_FUNC: return builtin_call(r, sc, at, callee.u.fn, a);
    case TV_UNDEF: undefined_error(r, at, callee);
    case TV_LOOP: rt_fail(r, at, HEARTH_E_UNSUPPORTED, "recursive loops are not supported");
    default: rt_fail(r, at, HEARTH_E_INVALID, "'%s' object is not callable", tv_type_name(callee));
    }
}

/* ---- expressions ------------------------------------------------------------------------------ */

/* A filter chain of a {% filter %} block or block set: the innermost filter's operand is the
 * rendered body (a == NULL). */
static tv apply_filters(rt *r, scope *sc, const node *f, tv input) {
    tv v = f->a ? apply_filters(r, sc, f->a, input) : input;
    targs a;
    eval_args(r, sc, &f->args, &a);
    return filter_apply(r, sc, f, f->id, v, &a);
}

static tv eval_slice(rt *r, scope *sc, const node *e) {
    /* A slice among several subscripts (`x[1, 2:]`) is a Python slice object inside a tuple
     * key: nothing is indexed by such a tuple, and jinja2's getitem turns the TypeError into
     * undefined. Stand for it with undefined (the tuple then finds nothing either). */
    if (!e->a) return tv_undef();
    tv obj = eval_expr(r, sc, e->a);
    tv parts[3];
    const node *pn[3] = {e->b, e->c, e->d};
    for (int i = 0; i < 3; i++) parts[i] = pn[i] ? eval_expr(r, sc, pn[i]) : tv_none();
    /* jinja2 compiles a slice to a plain Python subscript (not environment.getitem), so every
     * error here raises instead of becoming undefined */
    if (obj.kind == TV_UNDEF) undefined_error(r, e, obj);
    if (obj.kind != TV_STR && !(obj.kind == TV_LIST && !obj.u.l->gen))
        rt_fail(r, e, HEARTH_E_INVALID, "'%s' object cannot be sliced", tv_type_name(obj));
    for (int i = 0; i < 3; i++)
        if (parts[i].kind != TV_NONE && !is_int(parts[i]))
            rt_fail(r, e, HEARTH_E_INVALID, "slice indices must be integers or None");
    int64_t step = parts[2].kind == TV_NONE ? 1 : ival(parts[2]);
    if (step == 0) rt_fail(r, e, HEARTH_E_INVALID, "slice step cannot be zero");
    if (step == INT64_MIN) step = -INT64_MAX;
    int64_t len = obj.kind == TV_STR ? (int64_t)obj.u.s->ncp : (int64_t)obj.u.l->n;
    int64_t start = parts[0].kind == TV_NONE ? (step < 0 ? INT64_MAX : 0) : ival(parts[0]);
    int64_t stop = parts[1].kind == TV_NONE ? (step < 0 ? INT64_MIN : INT64_MAX) : ival(parts[1]);
    /* PySlice_AdjustIndices */
    if (start < 0) {
        start += len;
        if (start < 0) start = step < 0 ? -1 : 0;
    } else if (start >= len) {
        start = step < 0 ? len - 1 : len;
    }
    if (stop < 0) {
        stop = stop == INT64_MIN ? -1 : stop + len;
        if (stop < 0) stop = step < 0 ? -1 : 0;
    } else if (stop >= len) {
        stop = step < 0 ? len - 1 : len;
    }
    int64_t count = 0;
    if (step < 0) {
        if (stop < start) count = (start - stop - 1) / (-step) + 1;
    } else if (start < stop) {
        count = (stop - start - 1) / step + 1;
    }
    rt_step(r, e, (size_t)count);
    if (obj.kind == TV_LIST) {
        tlist *l = rt_list(r, (size_t)count);
        for (int64_t i = 0, k = start; i < count; i++, k += step) l->v[l->n++] = obj.u.l->v[k];
        if (obj.u.l->is_range) { /* range(a, b, s)[i:j:k] is range(a + i*s, a + j*s, s*k) */
            const tlist *o = obj.u.l;
            l->is_range = true;
            l->r_start = o->r_start + start * o->r_step;
            l->r_stop = o->r_start + stop * o->r_step;
            l->r_step = o->r_step * step;
        }
        tv v = tv_listv(l);
        v.flags = obj.flags & TVF_TUPLE;
        return v;
    }
    const tstr *s = obj.u.s;
    tbuf b = {0};
    if (s->ncp == s->len) {
        for (int64_t i = 0, k = start; i < count; i++, k += step) buf_putc(r, &b, s->p[k]);
    } else { /* code point offsets, then pick */
        size_t *off = rt_alloc(r, (s->ncp + 1) * sizeof *off);
        size_t o = 0;
        for (size_t i = 0; i < s->ncp; i++) {
            off[i] = o;
            size_t l;
            utf8_dec(s->p + o, s->len - o, &l);
            o += l;
        }
        off[s->ncp] = o;
        for (int64_t i = 0, k = start; i < count; i++, k += step)
            buf_put(r, &b, s->p + off[k], off[k + 1] - off[k]);
    }
    tv v = rt_strv(r, b.p ? b.p : "", b.len);
    v.flags = obj.flags & TVF_MARKUP;
    return v;
}

static tv eval_inner(rt *r, scope *sc, const node *e) {
    switch ((nkind)e->kind) {
    case X_LIT: return e->lit;
    case X_NAME: return lookup(r, sc, e->name);
    case X_LIST:
    case X_TUPLE: {
        tlist *l = rt_list(r, (size_t)e->l1.n);
        for (int i = 0; i < e->l1.n; i++) l->v[l->n++] = eval_expr(r, sc, e->l1.v[i]);
        tv v = tv_listv(l);
        if (e->kind == X_TUPLE) v.flags = TVF_TUPLE;
        return v;
    }
    case X_DICT: {
        tdict *d = rt_dict(r, (size_t)e->l1.n);
        for (int i = 0; i < e->l1.n; i++) {
            tv k = eval_expr(r, sc, e->l1.v[i]);
            dict_set(r, d, k, eval_expr(r, sc, e->l2.v[i]));
        }
        return tv_dictv(d);
    }
    case X_ATTR: return tv_getattr(r, e, eval_expr(r, sc, e->a), e->name);
    case X_ITEM: {
        tv obj = eval_expr(r, sc, e->a);
        return tv_getitem(r, e, obj, eval_expr(r, sc, e->b));
    }
    case X_SLICE: return eval_slice(r, sc, e);
    case X_CALL: {
        tv callee = eval_expr(r, sc, e->a);
        targs a;
        eval_args(r, sc, &e->args, &a);
        return call_value(r, sc, e, callee, &a);
    }
    case X_FILTER: {
        tv v = eval_expr(r, sc, e->a);
        targs a;
        eval_args(r, sc, &e->args, &a);
        return filter_apply(r, sc, e, e->id, v, &a);
    }
    case X_TEST: {
        tv v = eval_expr(r, sc, e->a);
        targs a;
        eval_args(r, sc, &e->args, &a);
        bool ok = test_apply(r, sc, e, e->id, v, &a);
        return tv_bool(e->op ? !ok : ok);
    }
    case X_NOT: return tv_bool(!tv_truthy(eval_expr(r, sc, e->a)));
    case X_NEG:
    case X_POS: {
        tv v = eval_expr(r, sc, e->a);
        if (v.kind == TV_UNDEF) undefined_error(r, e, v);
        if (!is_num(v)) rt_fail(r, e, HEARTH_E_INVALID, "bad operand type for unary %c: '%s'",
                                e->kind == X_NEG ? '-' : '+', tv_type_name(v));
        if (e->kind == X_POS) return v.kind == TV_BOOL ? tv_int(v.u.b) : v;
        if (v.kind == TV_FLOAT) return tv_float(-v.u.f);
        if (ival(v) == INT64_MIN) rt_fail(r, e, HEARTH_E_UNSUPPORTED, "integer overflow");
        return tv_int(-ival(v));
    }
    case X_AND: {
        tv a = eval_expr(r, sc, e->a);
        return tv_truthy(a) ? eval_expr(r, sc, e->b) : a;
    }
    case X_OR: {
        tv a = eval_expr(r, sc, e->a);
        return tv_truthy(a) ? a : eval_expr(r, sc, e->b);
    }
    case X_BIN: {
        tv a = eval_expr(r, sc, e->a);
        return tv_binop(r, e, e->op, a, eval_expr(r, sc, e->b));
    }
    case X_CONCAT: {
        tv acc = {0};
        for (int i = 0; i < e->l1.n; i++) {
            tv s = tv_to_strv(r, eval_expr(r, sc, e->l1.v[i]));
            acc = i == 0 ? s : str_concat(r, e, acc.u.s, s.u.s, false);
        }
        acc.flags = 0;
        return acc;
    }
    case X_CMP: {
        tv left = eval_expr(r, sc, e->a);
        for (int i = 0; i < e->l1.n; i++) {
            tv right = eval_expr(r, sc, e->l1.v[i]);
            if (!compare(r, e, e->ops[i], left, right)) return tv_bool(false);
            left = right;
        }
        return tv_bool(true);
    }
    case X_COND:
        if (tv_truthy(eval_expr(r, sc, e->b))) return eval_expr(r, sc, e->a);
        return e->c ? eval_expr(r, sc, e->c) : tv_undef();
    default: rt_fail(r, e, HEARTH_E_INVALID, "this expression cannot be evaluated here");
    }
}

tv eval_expr(rt *r, scope *sc, const node *e) {
    rt_enter(r, e);
    const node *saved = r->cur;
    r->cur = e;
    tv v = eval_inner(r, sc, e);
    r->cur = saved;
    rt_leave(r);
    return v;
}

/* ---- statements -------------------------------------------------------------------------------- */

typedef enum { EX_OK, EX_BREAK, EX_CONTINUE } exres;

static exres exec_body(rt *r, scope *sc, const nlist *body);

static void assign(rt *r, scope *sc, const node *target, tv v) {
    if (target->kind == X_NAME) {
        scope_set(r, sc, target->name, v);
    } else if (target->kind == X_NSREF) {
        tv ns = lookup(r, sc, target->name);
        if (ns.kind != TV_NS) rt_fail(r, target, HEARTH_E_INVALID, "cannot assign attribute on non-namespace object");
        dict_set(r, ns.u.d, tv_strv(target->name2), v);
    } else {
        if (v.kind == TV_UNDEF) undefined_error(r, target, v);
        tlist *items = tv_iter(r, target, v);
        if (items->n != (size_t)target->l1.n)
            rt_fail(r, target, HEARTH_E_INVALID, "%s values to unpack (expected %d, got %zu)",
                    items->n > (size_t)target->l1.n ? "too many" : "not enough", target->l1.n, items->n);
        for (int i = 0; i < target->l1.n; i++) assign(r, sc, target->l1.v[i], items->v[i]);
    }
}

static void exec_capture(rt *r, scope *sc, const nlist *body, tbuf *into) {
    tbuf *saved = r->out;
    r->out = into;
    exec_body(r, sc, body);
    r->out = saved;
}

static exres exec_for(rt *r, scope *sc, const node *s) {
    tlist *items = tv_iter(r, s->b, eval_expr(r, sc, s->b));
    if (s->c) { /* `for x in y if cond`: the condition sees the target, not `loop` */
        tlist *kept = rt_list(r, 0);
        scope *it = scope_new(r, sc);
        for (size_t i = 0; i < items->n; i++) {
            rt_step(r, s, 1);
            it->n = 0;
            assign(r, it, s->a, items->v[i]);
            if (tv_truthy(eval_expr(r, it, s->c))) list_push(r, kept, items->v[i]);
        }
        items = kept;
    }
    if (items->n == 0) {
        exec_body(r, scope_new(r, sc), &s->l2);
        return EX_OK;
    }
    tloop *lp = rt_alloc(r, sizeof *lp);
    lp->items = items;
    tv loopv = {0};
    loopv.kind = TV_LOOP;
    loopv.u.loop = lp;
    /* Each iteration starts from an empty scope (jinja2: a `set` does not survive to the next
     * one). The scope's storage is reused unless a macro defined in the body may keep it. */
    scope *it = NULL;
    for (size_t i = 0; i < items->n; i++) {
        rt_step(r, s, 1);
        lp->i = i;
        if (!it || (s->op & 2)) it = scope_new(r, sc);
        it->n = 0;
        assign(r, it, s->a, items->v[i]);
        scope_set(r, it, &name_loop, loopv);
        if (exec_body(r, it, &s->l1) == EX_BREAK) break;
    }
    return EX_OK;
}

static exres exec_stmt(rt *r, scope *sc, const node *s) {
    r->cur = s;
    switch ((nkind)s->kind) {
    case S_TEXT: buf_put(r, r->out, s->lit.u.s->p, s->lit.u.s->len); return EX_OK;
    case S_PRINT: tv_str(r, r->out, eval_expr(r, sc, s->a)); return EX_OK;
    case S_IF:
        return exec_body(r, sc, tv_truthy(eval_expr(r, sc, s->a)) ? &s->l1 : &s->l2);
    case S_FOR: return exec_for(r, sc, s);
    case S_SET: assign(r, sc, s->a, eval_expr(r, sc, s->b)); return EX_OK;
    case S_SETBLOCK: {
        tbuf b = {0};
        exec_capture(r, sc, &s->l1, &b);
        tv v = rt_strv(r, b.p ? b.p : "", b.len);
        if (s->c) v = apply_filters(r, sc, s->c, v);
        assign(r, sc, s->a, v);
        return EX_OK;
    }
    case S_MACRO: {
        tmacro *m = rt_alloc(r, sizeof *m);
        m->def = s;
        m->closure = sc;
        m->name = s->name;
        tv v = {0};
        v.kind = TV_MACRO;
        v.u.m = m;
        scope_set(r, sc, s->name, v);
        return EX_OK;
    }
    case S_CALLBLOCK: {
        tmacro *m = rt_alloc(r, sizeof *m);
        m->def = s;
        m->closure = sc;
        tv caller = {0};
        caller.kind = TV_MACRO;
        caller.u.m = m;
        const node *call = s->a;
        tv callee = eval_expr(r, sc, call->a);
        targs a;
        eval_args(r, sc, &call->args, &a);
        a.kw_names[a.n_kw] = &name_caller; /* eval_args leaves room for one more */
        a.kw_vals[a.n_kw] = caller;
        a.n_kw++;
        tv_str(r, r->out, call_value(r, sc, call, callee, &a));
        return EX_OK;
    }
    case S_FILTERBLOCK: {
        tbuf b = {0};
        exec_capture(r, sc, &s->l1, &b);
        tv_str(r, r->out, apply_filters(r, sc, s->a, rt_strv(r, b.p ? b.p : "", b.len)));
        return EX_OK;
    }
    case S_WITH: {
        scope *inner = scope_new(r, sc);
        tv *vals = rt_alloc(r, sizeof *vals * (size_t)(s->params->n + 1));
        for (int i = 0; i < s->params->n; i++) vals[i] = eval_expr(r, sc, s->params->defaults[i]);
        for (int i = 0; i < s->params->n; i++) scope_set(r, inner, s->params->names[i], vals[i]);
        return exec_body(r, inner, &s->l1);
    }
    case S_BLOCK: return exec_body(r, scope_new(r, sc), &s->l1);
    case S_BREAK: return EX_BREAK;
    case S_CONTINUE: return EX_CONTINUE;
    default: rt_fail(r, s, HEARTH_E_INVALID, "this statement cannot run here");
    }
}

static exres exec_body(rt *r, scope *sc, const nlist *body) {
    rt_enter(r, NULL);
    for (int i = 0; i < body->n; i++) {
        exres x = exec_stmt(r, sc, body->v[i]);
        if (x != EX_OK) {
            rt_leave(r);
            return x;
        }
    }
    rt_leave(r);
    return EX_OK;
}

void tmpl_exec(rt *r) {
    scope *root = scope_new(r, NULL);
    exec_body(r, root, &r->t->body);
}
