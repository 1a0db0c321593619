/*
 * parse_expr.c - expressions, following jinja2/parser.py's precedence climb (the grammar is in
 * parser.c's top comment): condexpr, or, and, not, compare, math1 (+ -), concat (~), math2
 * (* / // %), pow (**, left-associative as in jinja2), unary, then postfix (attribute, item,
 * slice, call) and the filter / test / call chain. Every level that can nest counts against
 * PARSE_MAX_DEPTH, so the evaluator's recursion over the tree is bounded too.
 */
#include "template/parse_internal.h"

#include <string.h>

static node *parse_unary(parser *p, bool with_filter);
static node *parse_primary(parser *p);
static node *parse_postfix(parser *p, node *e);

static node *parse_condexpr(parser *p) {
    int saved = p->depth;
    node *e = NULL;
    /* parse_or, inlined through px_expression(false) */
    e = px_expression(p, false);
    while (px_name(px_cur(p), "if")) {
        px_enter(p, px_cur(p)->pos);
        node *c = px_node(p, X_COND, px_cur(p)->pos);
        px_advance(p);
        c->a = e;
        c->b = px_expression(p, false);
        if (px_name(px_cur(p), "else")) {
            px_advance(p);
            c->c = parse_condexpr(p);
        }
        e = c;
    }
    p->depth = saved;
    return e;
}

static node *parse_compare(parser *p);

static node *parse_not(parser *p) {
    if (px_name(px_cur(p), "not")) {
        size_t pos = px_cur(p)->pos;
        px_enter(p, pos);
        px_advance(p);
        node *e = px_node(p, X_NOT, pos);
        e->a = parse_not(p);
        p->depth--;
        return e;
    }
    return parse_compare(p);
}

static node *parse_and(parser *p) {
    int saved = p->depth;
    node *e = parse_not(p);
    while (px_name(px_cur(p), "and")) {
        px_enter(p, px_cur(p)->pos);
        node *n = px_node(p, X_AND, px_cur(p)->pos);
        px_advance(p);
        n->a = e;
        n->b = parse_not(p);
        e = n;
    }
    p->depth = saved;
    return e;
}

static node *parse_or(parser *p) {
    int saved = p->depth;
    node *e = parse_and(p);
    while (px_name(px_cur(p), "or")) {
        px_enter(p, px_cur(p)->pos);
        node *n = px_node(p, X_OR, px_cur(p)->pos);
        px_advance(p);
        n->a = e;
        n->b = parse_and(p);
        e = n;
    }
    p->depth = saved;
    return e;
}

node *px_expression(parser *p, bool with_condexpr) {
    px_enter(p, px_cur(p)->pos);
    node *e = with_condexpr ? parse_condexpr(p) : parse_or(p);
    p->depth--;
    return e;
}

static node *parse_math1(parser *p);

static node *parse_compare(parser *p) {
    size_t pos = px_cur(p)->pos;
    node *e = parse_math1(p);
    node *c = NULL;
    size_t cap = 0;
    for (;;) {
        const token *t = px_cur(p);
        top op = OP_NONE;
        if (t->type == T_OP && (t->op == OP_EQ || t->op == OP_NE || t->op == OP_LT || t->op == OP_LE ||
                                t->op == OP_GT || t->op == OP_GE)) {
            op = (top)t->op;
            px_advance(p);
        } else if (px_name(t, "in")) {
            op = OP_IN;
            px_advance(p);
        } else if (px_name(t, "not") && px_name(px_look(p), "in")) {
            op = OP_NOTIN;
            px_advance(p);
            px_advance(p);
        } else {
            break;
        }
        if (!c) {
            c = px_node(p, X_CMP, pos);
            c->a = e;
        }
        px_grow(p, &c->ops, &cap, (size_t)c->l1.n, (size_t)c->l1.n + 1, sizeof *c->ops);
        c->ops[c->l1.n] = (uint8_t)op;
        px_push(p, &c->l1, parse_math1(p));
    }
    return c ? c : e;
}

static node *parse_pow(parser *p) {
    int saved = p->depth;
    node *e = parse_unary(p, true);
    while (px_op(px_cur(p), OP_POW)) {
        px_enter(p, px_cur(p)->pos);
        node *b = px_node(p, X_BIN, px_cur(p)->pos);
        b->op = OP_POW;
        px_advance(p);
        b->a = e;
        b->b = parse_unary(p, true);
        e = b;
    }
    p->depth = saved;
    return e;
}

static node *parse_math2(parser *p) {
    int saved = p->depth;
    node *e = parse_pow(p);
    while (px_cur(p)->type == T_OP && (px_cur(p)->op == OP_MUL || px_cur(p)->op == OP_DIV || px_cur(p)->op == OP_FDIV ||
                                    px_cur(p)->op == OP_MOD)) {
        px_enter(p, px_cur(p)->pos);
        node *b = px_node(p, X_BIN, px_cur(p)->pos);
        b->op = px_cur(p)->op;
        px_advance(p);
        b->a = e;
        b->b = parse_pow(p);
        e = b;
    }
    p->depth = saved;
    return e;
}

static node *parse_concat(parser *p) {
    size_t pos = px_cur(p)->pos;
    node *e = parse_math2(p);
    if (!px_op(px_cur(p), OP_TILDE)) return e;
    node *c = px_node(p, X_CONCAT, pos);
    px_push(p, &c->l1, e);
    while (px_op(px_cur(p), OP_TILDE)) {
        px_advance(p);
        px_push(p, &c->l1, parse_math2(p));
    }
    return c;
}

static node *parse_math1(parser *p) {
    int saved = p->depth;
    node *e = parse_concat(p);
    while (px_cur(p)->type == T_OP && (px_cur(p)->op == OP_ADD || px_cur(p)->op == OP_SUB)) {
        px_enter(p, px_cur(p)->pos);
        node *b = px_node(p, X_BIN, px_cur(p)->pos);
        b->op = px_cur(p)->op;
        px_advance(p);
        b->a = e;
        b->b = parse_concat(p);
        e = b;
    }
    p->depth = saved;
    return e;
}

/* (args): positional, name=value, *list, **dict; a trailing comma is fine. */
static void parse_call_args(parser *p, nargs *a) {
    size_t pos = px_cur(p)->pos;
    px_expect_op(p, OP_LPAREN, "'('");
    bool need_comma = false;
    nlist kwv = {0};
    const tstr **names = NULL;
    size_t cap = 0;
    while (!px_op(px_cur(p), OP_RPAREN)) {
        if (need_comma) {
            px_expect_op(p, OP_COMMA, "',' or ')'");
            if (px_op(px_cur(p), OP_RPAREN)) break;
        }
        if (px_op(px_cur(p), OP_MUL)) {
            if (a->star || a->dstar) px_fail(p, pos, HEARTH_E_FORMAT, "invalid syntax for function call expression");
            px_advance(p);
            a->star = px_expression(p, true);
        } else if (px_op(px_cur(p), OP_POW)) {
            if (a->dstar) px_fail(p, pos, HEARTH_E_FORMAT, "invalid syntax for function call expression");
            px_advance(p);
            a->dstar = px_expression(p, true);
        } else if (px_cur(p)->type == T_NAME && px_op(px_look(p), OP_ASSIGN)) {
            if (a->dstar) px_fail(p, pos, HEARTH_E_FORMAT, "invalid syntax for function call expression");
            px_grow(p, &names, &cap, (size_t)kwv.n, (size_t)kwv.n + 1, sizeof *names);
            names[kwv.n] = px_cur(p)->s;
            px_advance(p);
            px_advance(p);
            px_push(p, &kwv, px_expression(p, true));
        } else {
            if (a->star || a->dstar || kwv.n)
                px_fail(p, pos, HEARTH_E_FORMAT, "invalid syntax for function call expression");
            px_push(p, &a->pos, px_expression(p, true));
        }
        need_comma = true;
    }
    px_expect_op(p, OP_RPAREN, "')'");
    a->n_kw = kwv.n;
    a->kw_names = names;
    a->kw_vals = kwv.v;
}

static const tstr *dotted_name(parser *p) {
    const tstr *s = px_expect_name(p);
    while (px_op(px_cur(p), OP_DOT)) { /* jinja2 joins "a.b"; no such builtin exists, so it fails below */
        px_advance(p);
        const tstr *more = px_expect_name(p);
        size_t n = s->len + 1 + more->len;
        char *buf = px_alloc(p, n + 1);
        memcpy(buf, s->p, s->len);
        buf[s->len] = '.';
        memcpy(buf + s->len + 1, more->p, more->len);
        tstr *j = tstr_new(&p->t->arena, buf, n);
        if (!j) px_fail(p, px_cur(p)->pos, HEARTH_E_NOMEM, "out of memory");
        s = j;
    }
    return s;
}

/* x | name(args) | ...; x may be NULL (filter blocks), then the first '|' is implied. */
node *px_filter(parser *p, node *e, bool start_inline) {
    int saved = p->depth;
    while (px_op(px_cur(p), OP_PIPE) || start_inline) {
        if (!start_inline) px_advance(p);
        start_inline = false;
        size_t pos = px_cur(p)->pos;
        px_enter(p, pos);
        node *f = px_node(p, X_FILTER, pos);
        f->name = dotted_name(p);
        f->id = tmpl_filter_id(f->name->p, f->name->len); /* unknown: checked after parsing */
        if (px_op(px_cur(p), OP_LPAREN)) parse_call_args(p, &f->args);
        f->a = e;
        e = f;
    }
    p->depth = saved;
    return e;
}

static node *parse_test(parser *p, node *e) {
    size_t pos = px_cur(p)->pos;
    px_advance(p); /* is */
    node *t = px_node(p, X_TEST, pos);
    if (px_name(px_cur(p), "not")) {
        px_advance(p);
        t->op = 1;
    }
    t->name = dotted_name(p);
    t->id = tmpl_test_id(t->name->p, t->name->len); /* unknown: checked after parsing */
    const token *c = px_cur(p);
    if (px_op(c, OP_LPAREN)) {
        parse_call_args(p, &t->args);
    } else if ((c->type == T_NAME || c->type == T_STRING || c->type == T_INT || c->type == T_FLOAT ||
                px_op(c, OP_LBRACKET) || px_op(c, OP_LBRACE)) &&
               !px_name(c, "else") && !px_name(c, "or") && !px_name(c, "and")) {
        if (px_name(c, "is")) px_fail(p, c->pos, HEARTH_E_FORMAT, "you cannot chain multiple tests with is");
        node *arg = parse_postfix(p, parse_primary(p));
        px_push(p, &t->args.pos, arg);
    }
    t->a = e;
    return t;
}

static node *parse_filter_expr(parser *p, node *e) {
    int saved = p->depth;
    for (;;) {
        if (px_op(px_cur(p), OP_PIPE)) {
            e = px_filter(p, e, false);
        } else if (px_name(px_cur(p), "is")) {
            px_enter(p, px_cur(p)->pos);
            e = parse_test(p, e);
        } else if (px_op(px_cur(p), OP_LPAREN)) {
            px_enter(p, px_cur(p)->pos);
            node *c = px_node(p, X_CALL, px_cur(p)->pos);
            c->a = e;
            parse_call_args(p, &c->args);
            e = c;
        } else {
            break;
        }
    }
    p->depth = saved;
    return e;
}

static node *parse_unary(parser *p, bool with_filter) {
    const token *t = px_cur(p);
    node *e;
    px_enter(p, t->pos);
    if (px_op(t, OP_SUB) || px_op(t, OP_ADD)) {
        e = px_node(p, px_op(t, OP_SUB) ? X_NEG : X_POS, t->pos);
        px_advance(p);
        e->a = parse_unary(p, false);
    } else {
        e = parse_primary(p);
    }
    e = parse_postfix(p, e);
    if (with_filter) e = parse_filter_expr(p, e);
    p->depth--;
    return e;
}

/* x[a:b:c] pieces: an expression, or a slice node with a == NULL placeholder. */
static node *parse_subscribed(parser *p) {
    size_t pos = px_cur(p)->pos;
    node *parts[3] = {NULL, NULL, NULL};
    if (px_op(px_cur(p), OP_COLON)) {
        px_advance(p);
    } else {
        node *e = px_expression(p, true);
        if (!px_op(px_cur(p), OP_COLON)) return e;
        px_advance(p);
        parts[0] = e;
    }
    if (!px_op(px_cur(p), OP_COLON) && !px_op(px_cur(p), OP_RBRACKET) && !px_op(px_cur(p), OP_COMMA))
        parts[1] = px_expression(p, true);
    if (px_op(px_cur(p), OP_COLON)) {
        px_advance(p);
        if (!px_op(px_cur(p), OP_RBRACKET) && !px_op(px_cur(p), OP_COMMA)) parts[2] = px_expression(p, true);
    }
    node *s = px_node(p, X_SLICE, pos);
    s->b = parts[0];
    s->c = parts[1];
    s->d = parts[2];
    return s;
}

static node *parse_postfix(parser *p, node *e) {
    int saved = p->depth;
    for (;;) {
        const token *t = px_cur(p);
        if (px_op(t, OP_DOT)) {
            px_enter(p, t->pos);
            px_advance(p);
            const token *a = px_cur(p);
            if (a->type == T_NAME) {
                node *n = px_node(p, X_ATTR, t->pos);
                n->a = e;
                n->name = a->s;
                px_advance(p);
                e = n;
            } else if (a->type == T_INT) {
                node *n = px_node(p, X_ITEM, t->pos);
                n->a = e;
                n->b = px_node(p, X_LIT, a->pos);
                n->b->lit = tv_int(a->i);
                px_advance(p);
                e = n;
            } else {
                px_unexpected(p, "a name or number");
            }
        } else if (px_op(t, OP_LBRACKET)) {
            px_enter(p, t->pos);
            px_advance(p);
            nlist args = {0};
            while (!px_op(px_cur(p), OP_RBRACKET)) {
                if (args.n) px_expect_op(p, OP_COMMA, "',' or ']'");
                px_push(p, &args, parse_subscribed(p));
            }
            px_expect_op(p, OP_RBRACKET, "']'");
            node *key; /* x[] is x[()] in jinja2: an empty tuple key */
            if (args.n == 1) {
                key = args.v[0];
            } else {
                key = px_node(p, X_TUPLE, t->pos);
                key->l1 = args;
            }
            if (key->kind == X_SLICE) {
                key->a = e;
                key->pos = t->pos;
                e = key;
            } else {
                node *n = px_node(p, X_ITEM, t->pos);
                n->a = e;
                n->b = key;
                e = n;
            }
        } else if (px_op(t, OP_LPAREN)) {
            px_enter(p, t->pos);
            node *c = px_node(p, X_CALL, t->pos);
            c->a = e;
            parse_call_args(p, &c->args);
            e = c;
        } else {
            break;
        }
    }
    p->depth = saved;
    return e;
}

static node *parse_primary(parser *p) {
    const token *t = px_cur(p);
    node *e;
    switch ((ttype)t->type) {
    case T_NAME:
        e = px_node(p, X_LIT, t->pos);
        if (px_name(t, "true") || px_name(t, "True")) e->lit = tv_bool(true);
        else if (px_name(t, "false") || px_name(t, "False")) e->lit = tv_bool(false);
        else if (px_name(t, "none") || px_name(t, "None")) e->lit = tv_none();
        else {
            e->kind = X_NAME;
            e->name = t->s;
        }
        px_advance(p);
        return e;
    case T_STRING: {
        e = px_node(p, X_LIT, t->pos);
        const tstr *s = t->s;
        px_advance(p);
        while (px_cur(p)->type == T_STRING) {
            const tstr *more = px_cur(p)->s;
            char *buf = px_alloc(p, s->len + more->len + 1);
            memcpy(buf, s->p, s->len);
            memcpy(buf + s->len, more->p, more->len);
            s = tstr_new(&p->t->arena, buf, s->len + more->len);
            if (!s) px_fail(p, t->pos, HEARTH_E_NOMEM, "out of memory");
            px_advance(p);
        }
        e->lit = tv_strv(s);
        return e;
    }
    case T_INT:
    case T_FLOAT:
        e = px_node(p, X_LIT, t->pos);
        e->lit = t->type == T_INT ? tv_int(t->i) : tv_float(t->f);
        px_advance(p);
        return e;
    case T_OP:
        if (t->op == OP_LPAREN) {
            px_advance(p);
            e = px_tuple(p, false, true, false, true);
            px_expect_op(p, OP_RPAREN, "')'");
            return e;
        }
        if (t->op == OP_LBRACKET) {
            e = px_node(p, X_LIST, t->pos);
            px_advance(p);
            while (!px_op(px_cur(p), OP_RBRACKET)) {
                if (e->l1.n) px_expect_op(p, OP_COMMA, "',' or ']'");
                if (px_op(px_cur(p), OP_RBRACKET)) break;
                px_push(p, &e->l1, px_expression(p, true));
            }
            px_expect_op(p, OP_RBRACKET, "']'");
            return e;
        }
        if (t->op == OP_LBRACE) {
            e = px_node(p, X_DICT, t->pos);
            px_advance(p);
            while (!px_op(px_cur(p), OP_RBRACE)) {
                if (e->l1.n) px_expect_op(p, OP_COMMA, "',' or '}'");
                if (px_op(px_cur(p), OP_RBRACE)) break;
                px_push(p, &e->l1, px_expression(p, true));
                px_expect_op(p, OP_COLON, "':'");
                px_push(p, &e->l2, px_expression(p, true));
            }
            px_expect_op(p, OP_RBRACE, "'}'");
            return e;
        }
        break;
    default:
        break;
    }
    px_unexpected(p, "an expression");
}

/* NOTE: jinja2 3.1's is_tuple_end also takes "extra end rules" (`in` after a for target), but
 * hands them to Token.test_any as one tuple, so they never match: `{% for x, in y %}` is a
 * syntax error there. We keep that. */
static bool is_tuple_end(const parser *p) {
    const token *t = px_cur(p);
    return t->type == T_VAR_END || t->type == T_BLOCK_END || px_op(t, OP_RPAREN);
}

/* A primary of an assignment target: a name, a literal (refused later), or with_namespace
 * a namespace attribute `ns.attr` (jinja2's parse_primary(with_namespace=True)). */
static node *target_primary(parser *p, bool with_namespace) {
    const token *t = px_cur(p);
    if (with_namespace && t->type == T_NAME && px_op(px_look(p), OP_DOT) && !px_name(t, "true") &&
        !px_name(t, "false") && !px_name(t, "True") && !px_name(t, "False") && !px_name(t, "none") &&
        !px_name(t, "None")) {
        node *e = px_node(p, X_NSREF, t->pos);
        e->name = px_expect_name(p);
        px_advance(p);
        e->name2 = px_expect_name(p);
        return e;
    }
    return parse_primary(p);
}

node *px_tuple(parser *p, bool simplified, bool with_condexpr, bool with_namespace, bool explicit_paren) {
    size_t pos = px_cur(p)->pos;
    nlist items = {0};
    bool is_tuple = false;
    for (;;) {
        if (items.n) px_expect_op(p, OP_COMMA, "','");
        if (is_tuple_end(p)) break;
        node *e;
        if (simplified) {
            px_enter(p, px_cur(p)->pos);
            e = target_primary(p, with_namespace);
            p->depth--;
        } else {
            e = px_expression(p, with_condexpr);
        }
        px_push(p, &items, e);
        if (px_op(px_cur(p), OP_COMMA)) is_tuple = true;
        else break;
    }
    if (!is_tuple) {
        if (items.n) return items.v[0];
        if (!explicit_paren) px_unexpected(p, "an expression");
    }
    node *t = px_node(p, X_TUPLE, pos);
    t->l1 = items;
    return t;
}
