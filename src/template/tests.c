/*
 * tests.c - jinja2's builtin tests (`x is defined`, `n is divisibleby 3`, ...), with jinja2's
 * definitions: `number` is true for booleans (Python's bool is an int) while `integer` is not,
 * an undefined value is `iterable` and a `sequence`, `sameas` is identity.
 */
#include "template/tmpl_internal.h"

#include <math.h>
#include <string.h>

typedef enum {
    T_BOOLEAN, T_CALLABLE, T_DEFINED, T_DIVISIBLEBY, T_EQ, T_ESCAPED, T_EVEN, T_FALSE, T_FILTER,
    T_FLOAT_, T_GE, T_GT, T_IN, T_INTEGER, T_ITERABLE, T_LE, T_LOWER, T_LT, T_MAPPING, T_NE, T_NONE,
    T_NUMBER, T_ODD, T_SAMEAS, T_SEQUENCE, T_STRING_, T_TEST, T_TRUE, T_UNDEFINED, T_UPPER,
} test_id;

static const struct {
    const char *name;
    int         id;
} tests[] = {
    {"boolean", T_BOOLEAN}, {"callable", T_CALLABLE}, {"defined", T_DEFINED}, {"divisibleby", T_DIVISIBLEBY},
    {"eq", T_EQ}, {"equalto", T_EQ}, {"==", T_EQ}, {"escaped", T_ESCAPED}, {"even", T_EVEN},
    {"false", T_FALSE}, {"filter", T_FILTER}, {"float", T_FLOAT_}, {"ge", T_GE}, {">=", T_GE},
    {"gt", T_GT}, {"greaterthan", T_GT}, {">", T_GT}, {"in", T_IN}, {"integer", T_INTEGER},
    {"iterable", T_ITERABLE}, {"le", T_LE}, {"<=", T_LE}, {"lower", T_LOWER}, {"lt", T_LT},
    {"lessthan", T_LT}, {"<", T_LT}, {"mapping", T_MAPPING}, {"ne", T_NE}, {"!=", T_NE},
    {"none", T_NONE}, {"number", T_NUMBER}, {"odd", T_ODD}, {"sameas", T_SAMEAS},
    {"sequence", T_SEQUENCE}, {"string", T_STRING_}, {"test", T_TEST}, {"true", T_TRUE},
    {"undefined", T_UNDEFINED}, {"upper", T_UPPER},
};

int tmpl_test_id(const char *name, size_t len) {
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        if (strlen(tests[i].name) == len && !memcmp(tests[i].name, name, len)) return tests[i].id;
    return -1;
}

static tv one_arg(rt *r, const node *at, const char *name, const targs *a) {
    static const char *const names[] = {"other"};
    tv v;
    bool set;
    args_bind(r, at, name, a, 1, names, &v, &set);
    if (!set) rt_fail(r, at, HEARTH_E_INVALID, "the '%s' test needs an argument", name);
    return v;
}

static tv mod2(rt *r, const node *at, tv v) {
    if (v.kind == TV_UNDEF) rt_fail(r, at, HEARTH_E_INVALID, "an undefined value has no parity");
    return tv_binop(r, at, OP_MOD, v, tv_int(2));
}

static bool takes_argument(test_id id) {
    return id == T_DIVISIBLEBY || id == T_EQ || id == T_NE || id == T_GE || id == T_GT || id == T_LE ||
           id == T_LT || id == T_IN || id == T_SAMEAS;
}

bool test_apply(rt *r, scope *sc, const node *at, int id, tv v, const targs *a) {
    (void)sc;
    /* an unknown test reaches here only from a branch jinja2 checks when it runs (parser.c) */
    if (id < 0) rt_fail(r, at, HEARTH_E_INVALID, "no test named '%s'", at->name->p);
    rt_step(r, at, 1);
    if (!takes_argument((test_id)id) && (a->n_pos || a->n_kw))
        rt_fail(r, at, HEARTH_E_INVALID, "this test takes no arguments");
    switch ((test_id)id) {
    case T_BOOLEAN: return v.kind == TV_BOOL;
    case T_CALLABLE: return v.kind == TV_MACRO || v.kind == TV_FUNC || v.kind == TV_UNDEF;
    case T_DEFINED: return v.kind != TV_UNDEF;
    case T_UNDEFINED: return v.kind == TV_UNDEF;
    case T_DIVISIBLEBY: {
        tv n = one_arg(r, at, "divisibleby", a);
        if (v.kind == TV_UNDEF) rt_fail(r, at, HEARTH_E_INVALID, "an undefined value is not a number");
        return tv_eq(r, tv_binop(r, at, OP_MOD, v, n), tv_int(0));
    }
    case T_EQ: return tv_eq(r, v, one_arg(r, at, "eq", a));
    case T_NE: return !tv_eq(r, v, one_arg(r, at, "ne", a));
    case T_GE: return tv_cmp(r, at, v, one_arg(r, at, "ge", a)) >= 0;
    case T_GT: return tv_cmp(r, at, v, one_arg(r, at, "gt", a)) > 0;
    case T_LE: return tv_cmp(r, at, v, one_arg(r, at, "le", a)) <= 0;
    case T_LT: return tv_cmp(r, at, v, one_arg(r, at, "lt", a)) < 0;
    case T_ESCAPED: return v.kind == TV_STR && (v.flags & TVF_MARKUP);
    case T_EVEN: return tv_eq(r, mod2(r, at, v), tv_int(0));
    case T_ODD: return tv_eq(r, mod2(r, at, v), tv_int(1));
    case T_FALSE: return v.kind == TV_BOOL && !v.u.b;
    case T_TRUE: return v.kind == TV_BOOL && v.u.b;
    case T_FILTER: return v.kind == TV_STR && tmpl_filter_id(v.u.s->p, v.u.s->len) != -1; /* jinja2 has -2 */
    case T_TEST: return v.kind == TV_STR && tmpl_test_id(v.u.s->p, v.u.s->len) >= 0;
    case T_FLOAT_: return v.kind == TV_FLOAT;
    case T_INTEGER: return v.kind == TV_INT;
    case T_NUMBER: return v.kind == TV_INT || v.kind == TV_BOOL || v.kind == TV_FLOAT;
    case T_IN: {
        tv seq = one_arg(r, at, "in", a);
        if (seq.kind == TV_STR) {
            if (v.kind != TV_STR)
                rt_fail(r, at, HEARTH_E_INVALID, "'in <string>' requires string as left operand, not %s", tv_type_name(v));
            return v.u.s->len == 0 || memmem(seq.u.s->p, seq.u.s->len, v.u.s->p, v.u.s->len) != NULL;
        }
        if (seq.kind == TV_DICT) {
            tv dummy;
            return dict_get(seq.u.d, v, &dummy);
        }
        tlist *items = tv_iter(r, at, seq);
        for (size_t i = 0; i < items->n; i++)
            if (tv_eq(r, items->v[i], v)) return true;
        return false;
    }
    case T_ITERABLE:
        return v.kind == TV_UNDEF || v.kind == TV_STR || v.kind == TV_LIST || v.kind == TV_DICT || v.kind == TV_LOOP;
    case T_SEQUENCE:
        return v.kind == TV_UNDEF || v.kind == TV_STR || (v.kind == TV_LIST && !v.u.l->gen) || v.kind == TV_DICT;
    case T_MAPPING: return v.kind == TV_DICT;
    case T_NONE: return v.kind == TV_NONE;
    case T_STRING_: return v.kind == TV_STR;
    case T_LOWER:
    case T_UPPER: {
        tv s = tv_to_strv(r, v);
        return str_is(s.u.s, id == T_LOWER ? 6 : 7);
    }
    case T_SAMEAS: {
        tv o = one_arg(r, at, "sameas", a);
        if (v.kind != o.kind) return false;
        switch ((tv_kind)v.kind) {
        case TV_NONE:
        case TV_UNDEF: return v.kind == TV_NONE || v.u.s == o.u.s;
        case TV_BOOL: return v.u.b == o.u.b;
        case TV_INT: return v.u.i == o.u.i && v.u.i >= -5 && v.u.i <= 256; /* CPython's small ints */
        case TV_FLOAT: return false;
        case TV_STR: return v.u.s == o.u.s;
        case TV_LIST: return v.u.l == o.u.l;
        case TV_DICT:
        case TV_NS: return v.u.d == o.u.d;
        case TV_MACRO: return v.u.m == o.u.m;
        case TV_FUNC: return v.u.fn == o.u.fn;
        case TV_LOOP: return v.u.loop == o.u.loop;
        }
        return false;
    }
    }
    rt_fail(r, at, HEARTH_E_UNSUPPORTED, "test not supported");
}
