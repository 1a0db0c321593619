/*
 * parser.c - tokens to AST, following jinja2/parser.py (3.1) rule for rule, so that precedence
 * and the odd corners agree with the reference:
 *
 *   expression := or ("if" or ["else" expression])*        (inline if; no else -> undefined)
 *   or := and ("or" and)*      and := not ("and" not)*      not := "not" not | compare
 *   compare := math1 (("=="|"!="|"<"|"<="|">"|">="|"in"|"not in") math1)*
 *   math1 := concat (("+"|"-") concat)*    concat := math2 ("~" math2)*
 *   math2 := pow (("*"|"/"|"//"|"%") pow)* pow := unary ("**" unary)*      (left-assoc!)
 *   unary := ("-"|"+") unary-without-filters | primary postfix*; then ("|" filter | "is" test
 *            | call)*  - so `-x|abs` filters the negation and `a + b is defined` tests b
 *   primary := name | string+ (adjacent literals join) | number | (tuple) | [list] | {dict}
 *
 * Statements: for (with target unpacking, an inline `if` filter, else), if/elif/else, set
 * (names, tuples, namespace attributes, block set with filters), macro, call, filter, with,
 * print, raw, break/continue (the loopcontrols extension transformers loads) and transformers'
 * {% generation %}. Unknown tags are errors at parse time, unknown filters and tests at parse
 * time or when they run, as in jinja2 3 (see first_unknown below); block/extends/include/import
 * are refused (a chat template has no loader).
 *
 * This file holds the statements and the shared helpers; parse_expr.c the expressions.
 *
 * Nesting is bounded (PARSE_MAX_DEPTH, parse_internal.h) so that hostile input cannot exhaust
 * the C stack here or in the evaluator, which recurses over the same tree.
 */
#include "template/parse_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

_Noreturn void px_fail(parser *p, size_t pos, hearth_status code, const char *fmt, ...) {
    p->code = code;
    if (p->err) {
        char msg[200];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        hearth_err_set(p->err, code, (int64_t)pos, "%s", msg);
        tmpl_linecol(p->t->src, p->t->len, pos, &p->err->line, &p->err->col);
    }
    longjmp(p->jb, 1);
}

static _Noreturn void px_nomem(parser *p) {
    p->code = HEARTH_E_NOMEM;
    if (p->err) hearth_err_set(p->err, HEARTH_E_NOMEM, -1, "out of memory parsing the template");
    longjmp(p->jb, 1);
}

void *px_alloc(parser *p, size_t n) {
    void *m = hearth_arena_calloc(&p->t->arena, 1, n ? n : 1);
    if (!m) px_nomem(p);
    return m;
}

void px_grow(parser *p, void *pp, size_t *cap, size_t n, size_t need, size_t elem_bytes) {
    if (!hearth_arena_grow(&p->t->arena, pp, cap, n, need, elem_bytes, 4)) px_nomem(p);
}

static const char *describe(const token *t) {
    switch ((ttype)t->type) {
    case T_EOF: return "end of template";
    case T_TEXT: return "template data";
    case T_VAR_BEGIN: return "begin of print statement";
    case T_VAR_END: return "end of print statement";
    case T_BLOCK_BEGIN: return "begin of statement block";
    case T_BLOCK_END: return "end of statement block";
    case T_NAME: return "name";
    case T_STRING: return "string";
    case T_INT: return "integer";
    case T_FLOAT: return "float";
    case T_OP: return "operator";
    }
    return "token";
}

_Noreturn void px_unexpected(parser *p, const char *wanted) {
    const token *t = px_cur(p);
    if (t->type == T_NAME) px_fail(p, t->pos, HEARTH_E_FORMAT, "expected %s, got '%s'", wanted, t->s->p);
    px_fail(p, t->pos, HEARTH_E_FORMAT, "expected %s, got %s", wanted, describe(t));
}

void px_expect_op(parser *p, top op, const char *what) {
    if (!px_op(px_cur(p), op)) px_unexpected(p, what);
    px_advance(p);
}

static void expect_type(parser *p, ttype type, const char *what) {
    if (px_cur(p)->type != type) px_unexpected(p, what);
    px_advance(p);
}

const tstr *px_expect_name(parser *p) {
    if (px_cur(p)->type != T_NAME) px_unexpected(p, "a name");
    const tstr *s = px_cur(p)->s;
    px_advance(p);
    return s;
}

void px_enter(parser *p, size_t pos) {
    if (++p->depth > PARSE_MAX_DEPTH) px_fail(p, pos, HEARTH_E_LIMIT, "template nested too deeply");
}

node *px_node(parser *p, nkind kind, size_t pos) {
    node *e = px_alloc(p, sizeof *e);
    e->kind = (uint8_t)kind;
    e->pos = (uint32_t)pos;
    return e;
}

/* A growable node list (arena-backed; the old array is left behind). Its capacity is not
 * stored: the array is full exactly when n is 0 or a power of two. */
void px_push(parser *p, nlist *l, node *e) {
    size_t n = (size_t)l->n, cap = n;
    if ((n & (n - 1)) == 0 && !hearth_arena_grow(&p->t->arena, &l->v, &cap, n, n + 1, sizeof *l->v, 1)) px_nomem(p);
    l->v[l->n++] = e;
}

/* ---- statements ---------------------------------------------------------------------------- */

static bool assignable(const node *e) {
    if (e->kind == X_NAME || e->kind == X_NSREF) return true;
    if (e->kind != X_TUPLE) return false;
    for (int i = 0; i < e->l1.n; i++)
        if (!assignable(e->l1.v[i])) return false;
    return true;
}

static node *parse_assign_target(parser *p, bool with_namespace) {
    size_t pos = px_cur(p)->pos;
    node *e = px_tuple(p, true, true, with_namespace, false);
    if (!assignable(e)) px_fail(p, pos, HEARTH_E_FORMAT, "can't assign to this expression");
    return e;
}

/* A NULL-terminated list of end tag names. */
static bool at_end_tag(const parser *p, const char *const *ends) {
    for (int i = 0; ends && ends[i]; i++)
        if (px_name(px_cur(p), ends[i])) return true;
    return false;
}

static node *parse_statement(parser *p);

/* Body until one of `ends` opens a tag; the cursor is then on that name. */
static nlist subparse(parser *p, const char *const *ends) {
    nlist body = {0};
    for (;;) {
        const token *t = px_cur(p);
        if (t->type == T_EOF) return body;
        if (t->type == T_TEXT) {
            node *e = px_node(p, S_TEXT, t->pos);
            e->lit = tv_strv(t->s);
            px_push(p, &body, e);
            px_advance(p);
        } else if (t->type == T_VAR_BEGIN) {
            px_advance(p);
            node *e = px_node(p, S_PRINT, t->pos);
            e->a = px_tuple(p, false, true, false, false);
            expect_type(p, T_VAR_END, "end of print statement");
            px_push(p, &body, e);
        } else if (t->type == T_BLOCK_BEGIN) {
            px_advance(p);
            if (at_end_tag(p, ends)) return body;
            px_push(p, &body, parse_statement(p));
            expect_type(p, T_BLOCK_END, "end of statement block");
        } else {
            px_unexpected(p, "template data or a tag");
        }
    }
}

static nlist parse_statements(parser *p, const char *const *ends, bool drop_needle) {
    if (px_op(px_cur(p), OP_COLON)) px_advance(p);
    expect_type(p, T_BLOCK_END, "end of statement block");
    size_t pos = px_cur(p)->pos;
    px_enter(p, pos);
    nlist body = subparse(p, ends);
    p->depth--;
    if (px_cur(p)->type == T_EOF) {
        char want[128] = "";
        for (int i = 0; ends[i]; i++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s'%s'", i ? " or " : "", ends[i]);
        px_fail(p, pos, HEARTH_E_FORMAT, "unexpected end of template, expected %s", want);
    }
    if (drop_needle) px_advance(p);
    return body;
}

static void parse_signature(parser *p, node *n) {
    nparams *ps = px_alloc(p, sizeof *ps);
    n->params = ps;
    px_expect_op(p, OP_LPAREN, "'('");
    size_t cap_names = 0, cap_defaults = 0;
    bool defaults = false;
    while (!px_op(px_cur(p), OP_RPAREN)) {
        if (ps->n) px_expect_op(p, OP_COMMA, "',' or ')'");
        size_t pos = px_cur(p)->pos;
        const tstr *name = px_expect_name(p);
        node *def = NULL;
        if (px_op(px_cur(p), OP_ASSIGN)) {
            px_advance(p);
            def = px_expression(p, true);
            defaults = true;
        } else if (defaults) {
            px_fail(p, pos, HEARTH_E_FORMAT, "non-default argument follows default argument");
        }
        size_t k = (size_t)ps->n;
        px_grow(p, &ps->names, &cap_names, k, k + 1, sizeof *ps->names);
        px_grow(p, &ps->defaults, &cap_defaults, k, k + 1, sizeof *ps->defaults);
        ps->names[ps->n] = name;
        ps->defaults[ps->n++] = def;
    }
    px_expect_op(p, OP_RPAREN, "')'");
}

static bool name_is(const tstr *s, const char *lit) { return s && s->len == strlen(lit) && !memcmp(s->p, lit, s->len); }

/* Does the tree read `name` (jinja2 decides caller/varargs/kwargs support this way)? */
static bool reads_name(const node *e, const char *name);
static bool reads_name_list(const nlist *l, const char *name) {
    for (int i = 0; i < l->n; i++)
        if (reads_name(l->v[i], name)) return true;
    return false;
}
static bool reads_name(const node *e, const char *name) {
    if (!e) return false;
    if (e->kind == X_NAME && name_is(e->name, name)) return true;
    if (reads_name(e->a, name) || reads_name(e->b, name) || reads_name(e->c, name) || reads_name(e->d, name))
        return true;
    if (reads_name_list(&e->l1, name) || reads_name_list(&e->l2, name) || reads_name_list(&e->args.pos, name))
        return true;
    for (int i = 0; i < e->args.n_kw; i++)
        if (reads_name(e->args.kw_vals[i], name)) return true;
    if (reads_name(e->args.star, name) || reads_name(e->args.dstar, name)) return true;
    if (e->params)
        for (int i = 0; i < e->params->n; i++)
            if (reads_name(e->params->defaults[i], name)) return true;
    return false;
}

static void scan_macro(node *m) {
    nparams *ps = m->params;
    bool declared[3] = {false, false, false};
    static const char *const special[3] = {"caller", "varargs", "kwargs"};
    for (int i = 0; i < ps->n; i++)
        for (int k = 0; k < 3; k++)
            if (name_is(ps->names[i], special[k])) declared[k] = true;
    ps->uses_caller = !declared[0] && reads_name_list(&m->l1, "caller");
    ps->uses_varargs = !declared[1] && reads_name_list(&m->l1, "varargs");
    ps->uses_kwargs = !declared[2] && reads_name_list(&m->l1, "kwargs");
}

/* Does a body define a macro or call block (which keep a pointer to the scope they are in)? */
static bool defines_macro(const nlist *l) {
    for (int i = 0; i < l->n; i++) {
        const node *s = l->v[i];
        if (s->kind == S_MACRO || s->kind == S_CALLBLOCK) return true;
        if (s->kind >= S_TEXT && (defines_macro(&s->l1) || defines_macro(&s->l2))) return true;
    }
    return false;
}

static node *parse_for(parser *p, size_t pos) {
    node *n = px_node(p, S_FOR, pos);
    n->a = parse_assign_target(p, false);
    if (!px_name(px_cur(p), "in")) px_unexpected(p, "'in'");
    px_advance(p);
    n->b = px_tuple(p, false, false, false, false);
    if (px_name(px_cur(p), "if")) {
        px_advance(p);
        n->c = px_expression(p, true);
    }
    if (px_name(px_cur(p), "recursive")) {
        px_advance(p);
        n->op |= 1;
    }
    static const char *const ends[] = {"endfor", "else", NULL};
    static const char *const ends2[] = {"endfor", NULL};
    p->loop_depth++;
    n->l1 = parse_statements(p, ends, false);
    p->loop_depth--;
    if (px_name(px_cur(p), "else")) {
        px_advance(p);
        n->l2 = parse_statements(p, ends2, true);
    } else {
        px_advance(p);
    }
    if (defines_macro(&n->l1)) n->op |= 2;
    return n;
}

static node *parse_if(parser *p, size_t pos) {
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    static const char *const ends2[] = {"endif", NULL};
    node *head = px_node(p, S_IF, pos), *n = head;
    for (;;) {
        n->a = px_tuple(p, false, false, false, false);
        n->l1 = parse_statements(p, ends, false);
        if (px_name(px_cur(p), "elif")) {
            node *e = px_node(p, S_IF, px_cur(p)->pos);
            px_advance(p);
            px_push(p, &n->l2, e);
            n = e;
            continue;
        }
        if (px_name(px_cur(p), "else")) {
            px_advance(p);
            n->l2 = parse_statements(p, ends2, true);
        } else {
            px_advance(p);
        }
        return head;
    }
}

static node *parse_statement(parser *p) {
    const token *t = px_cur(p);
    size_t pos = t->pos;
    if (t->type != T_NAME) px_fail(p, pos, HEARTH_E_FORMAT, "tag name expected");
    const tstr *tag = t->s;
    px_advance(p);
    px_enter(p, pos);
    node *n = NULL;
    if (name_is(tag, "for")) {
        n = parse_for(p, pos);
    } else if (name_is(tag, "if")) {
        n = parse_if(p, pos);
    } else if (name_is(tag, "set")) {
        node *target = parse_assign_target(p, true);
        if (px_op(px_cur(p), OP_ASSIGN)) {
            px_advance(p);
            n = px_node(p, S_SET, pos);
            n->a = target;
            n->b = px_tuple(p, false, true, false, false);
        } else {
            static const char *const ends[] = {"endset", NULL};
            n = px_node(p, S_SETBLOCK, pos);
            n->a = target;
            n->c = px_filter(p, NULL, false);
            n->l1 = parse_statements(p, ends, true);
        }
    } else if (name_is(tag, "macro") || name_is(tag, "call")) {
        bool is_macro = name_is(tag, "macro");
        static const char *const mends[] = {"endmacro", NULL};
        static const char *const cends[] = {"endcall", NULL};
        n = px_node(p, is_macro ? S_MACRO : S_CALLBLOCK, pos);
        if (is_macro) {
            n->name = px_expect_name(p);
            parse_signature(p, n);
        } else {
            if (px_op(px_cur(p), OP_LPAREN)) parse_signature(p, n);
            else n->params = px_alloc(p, sizeof *n->params);
            n->a = px_expression(p, true);
            if (n->a->kind != X_CALL) px_fail(p, pos, HEARTH_E_FORMAT, "expected call");
        }
        int saved_loops = p->loop_depth;
        p->loop_depth = 0;
        n->l1 = parse_statements(p, is_macro ? mends : cends, true);
        p->loop_depth = saved_loops;
        scan_macro(n);
    } else if (name_is(tag, "filter")) {
        static const char *const ends[] = {"endfilter", NULL};
        n = px_node(p, S_FILTERBLOCK, pos);
        n->a = px_filter(p, NULL, true);
        n->l1 = parse_statements(p, ends, true);
    } else if (name_is(tag, "with")) {
        static const char *const ends[] = {"endwith", NULL};
        n = px_node(p, S_WITH, pos);
        nparams *ps = px_alloc(p, sizeof *ps);
        n->params = ps;
        nlist names = {0}, vals = {0};
        while (px_cur(p)->type != T_BLOCK_END) {
            if (names.n) px_expect_op(p, OP_COMMA, "','");
            node *target = parse_assign_target(p, false);
            if (target->kind != X_NAME) px_fail(p, target->pos, HEARTH_E_UNSUPPORTED, "with: only plain names are supported");
            px_push(p, &names, target);
            px_expect_op(p, OP_ASSIGN, "'='");
            px_push(p, &vals, px_expression(p, true));
        }
        ps->n = names.n;
        ps->names = px_alloc(p, sizeof *ps->names * (size_t)(names.n ? names.n : 1));
        for (int i = 0; i < names.n; i++) ps->names[i] = names.v[i]->name;
        ps->defaults = vals.v;
        n->l1 = parse_statements(p, ends, true);
    } else if (name_is(tag, "print")) {
        n = px_node(p, S_PRINT, pos);
        n->a = px_tuple(p, false, true, false, false);
    } else if (name_is(tag, "break") || name_is(tag, "continue")) {
        if (p->loop_depth == 0) px_fail(p, pos, HEARTH_E_FORMAT, "'%s' outside a loop", tag->p);
        n = px_node(p, name_is(tag, "break") ? S_BREAK : S_CONTINUE, pos);
    } else if (name_is(tag, "generation")) {
        static const char *const ends[] = {"endgeneration", NULL};
        n = px_node(p, S_BLOCK, pos);
        n->l1 = parse_statements(p, ends, true);
        /* parse_statements already consumed the block end before the body; the closing
         * tag's block end is consumed by the caller. */
    } else if (name_is(tag, "block") || name_is(tag, "extends") || name_is(tag, "include") ||
               name_is(tag, "import") || name_is(tag, "from") || name_is(tag, "autoescape")) {
        px_fail(p, pos, HEARTH_E_UNSUPPORTED, "the '%s' tag is not supported in chat templates", tag->p);
    } else {
        px_fail(p, pos, HEARTH_E_FORMAT, "encountered unknown tag '%s'", tag->p);
    }
    p->depth--;
    return n;
}

/* ---- unknown filters and tests ---------------------------------------------------------------
 *
 * jinja2 3 refuses an unknown filter or test when it compiles the template, except inside an
 * {% if %} (its test and every branch) or an inline `a if b else c` (all three parts): there
 * the name is looked up when the node runs, so a branch that never runs may use a filter the
 * environment lacks (DeepSeek's templates do, with `from_json`). The exception ends where
 * jinja2 opens a new frame: a for loop's body, inline test and else (not its iterable), a macro
 * or call block's body and defaults (not the call), a filter block, a with block's body (not
 * its values), a block set and {% generation %}. jinja2 also folds `false and X` and
 * `true or X` away before the check. Filters jinja2 has and hearth does not implement (id -2)
 * compile in jinja2, so they fail only when they run too. */

static const node *first_unknown(const node *e, bool soft);

static const node *first_unknown_list(const nlist *l, bool soft) {
    for (int i = 0; i < l->n; i++) {
        const node *u = first_unknown(l->v[i], soft);
        if (u) return u;
    }
    return NULL;
}

static const node *first_unknown_args(const nargs *a, bool soft) {
    const node *u = first_unknown_list(&a->pos, soft);
    for (int i = 0; !u && i < a->n_kw; i++) u = first_unknown(a->kw_vals[i], soft);
    if (!u) u = first_unknown(a->star, soft);
    if (!u) u = first_unknown(a->dstar, soft);
    return u;
}

static const node *first_unknown_defaults(const nparams *ps, bool soft) {
    for (int i = 0; ps && i < ps->n; i++) {
        const node *u = first_unknown(ps->defaults[i], soft);
        if (u) return u;
    }
    return NULL;
}

static bool const_falsy(const node *e) { return e->kind == X_LIT && !tv_truthy(e->lit); }
static bool const_truthy(const node *e) { return e->kind == X_LIT && tv_truthy(e->lit); }

static const node *first_unknown(const node *e, bool soft) {
    if (!e) return NULL;
    const node *u = NULL;
    switch ((nkind)e->kind) {
    case S_IF:
    case X_COND: soft = true; break;
    case X_AND:
        if (const_falsy(e->a)) return NULL;
        break;
    case X_OR:
        if (const_truthy(e->a)) return NULL;
        break;
    case X_FILTER:
    case X_TEST:
        if (!soft && e->id == -1) return e;
        break;
    case S_FOR:
        if ((u = first_unknown(e->a, soft)) || (u = first_unknown(e->b, soft))) return u;
        if ((u = first_unknown(e->c, false)) || (u = first_unknown_list(&e->l1, false))) return u;
        return first_unknown_list(&e->l2, false);
    case S_SETBLOCK:
        if ((u = first_unknown(e->a, soft)) || (u = first_unknown_list(&e->l1, false))) return u;
        return first_unknown(e->c, false);
    case S_MACRO:
    case S_CALLBLOCK:
        if ((u = first_unknown(e->a, soft)) || (u = first_unknown_defaults(e->params, false))) return u;
        return first_unknown_list(&e->l1, false);
    case S_FILTERBLOCK:
    case S_BLOCK: soft = false; break;
    case S_WITH:
        if ((u = first_unknown_defaults(e->params, soft))) return u;
        return first_unknown_list(&e->l1, false);
    default: break;
    }
    if ((u = first_unknown(e->a, soft)) || (u = first_unknown(e->b, soft)) || (u = first_unknown(e->c, soft)) ||
        (u = first_unknown(e->d, soft)) || (u = first_unknown_list(&e->l1, soft)) ||
        (u = first_unknown_list(&e->l2, soft)) || (u = first_unknown_args(&e->args, soft)))
        return u;
    return first_unknown_defaults(e->params, soft);
}

hearth_status tmpl_parse_tokens(hearth_tmpl *t, const token *toks, size_t n, hearth_err *err) {
    parser *p = hearth_arena_calloc(&t->arena, 1, sizeof *p);
    if (!p) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory parsing the template");
    p->t = t;
    p->tk = toks;
    p->n = n;
    p->err = err;
    if (setjmp(p->jb)) return p->code;
    nlist body = subparse(p, NULL);
    if (px_cur(p)->type != T_EOF) px_unexpected(p, "end of template");
    const node *u = first_unknown_list(&body, false);
    if (u) px_fail(p, u->pos, HEARTH_E_FORMAT, "no %s named '%s'", u->kind == X_FILTER ? "filter" : "test", u->name->p);
    t->body = body;
    return HEARTH_OK;
}
