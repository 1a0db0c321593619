/*
 * parse_internal.h - what the two halves of the parser share: the parser state, token
 * helpers and the expression entry points. parse_expr.c parses expressions, parser.c
 * statements and the template as a whole (see its top comment for the grammar's source).
 */
#pragma once
#include "template/tmpl_internal.h"

#include <setjmp.h>
#include <stdbool.h>
#include <string.h>

#define PARSE_MAX_DEPTH 200 /* nesting of expressions and blocks, counted conservatively */

typedef struct {
    hearth_tmpl  *t;
    const token  *tk;
    size_t        n, i;
    int           depth;
    int           loop_depth; /* for break/continue */
    hearth_err   *err;
    hearth_status code;
    jmp_buf       jb;
} parser;

/* Raise a parse error at byte offset pos (longjmp to tmpl_parse_tokens). */
_Noreturn void px_fail(parser *p, size_t pos, hearth_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
_Noreturn void px_unexpected(parser *p, const char *wanted);
void          *px_alloc(parser *p, size_t n); /* zeroed, in the template's arena */
/* Grow an arena array of n elements to hold need (hearth_arena_grow); raises when it cannot. */
void           px_grow(parser *p, void *pp, size_t *cap, size_t n, size_t need, size_t elem_bytes);
node          *px_node(parser *p, nkind kind, size_t pos);
void           px_push(parser *p, nlist *l, node *e);
void           px_enter(parser *p, size_t pos); /* depth++ with the bound */
void           px_expect_op(parser *p, top op, const char *what);
const tstr    *px_expect_name(parser *p);

static inline const token *px_cur(const parser *p) { return &p->tk[p->i]; }
static inline const token *px_look(const parser *p) { return &p->tk[p->i + 1 < p->n ? p->i + 1 : p->i]; }
static inline void px_advance(parser *p) {
    if (p->i + 1 < p->n) p->i++;
}
static inline bool px_name(const token *t, const char *name) {
    return t->type == T_NAME && t->s->len == strlen(name) && memcmp(t->s->p, name, t->s->len) == 0;
}
static inline bool px_op(const token *t, top op) { return t->type == T_OP && t->op == op; }

/* Expressions (parse_expr.c), named after jinja2's Parser methods. */
node *px_expression(parser *p, bool with_condexpr);
/* jinja2's parse_tuple: simplified parses names and literals only (assignment targets),
 * with_namespace also `ns.attr` there. */
node *px_tuple(parser *p, bool simplified, bool with_condexpr, bool with_namespace, bool explicit_paren);
node *px_filter(parser *p, node *e, bool start_inline);
