/*
 * tmpl_internal.h - what the files of template/ share: tokens, the AST, the value model and the
 * render state. Not a public header: callers use template.h.
 *
 * Pipeline: template.c normalizes the source as jinja2 does (\r\n and \r become \n, one
 * trailing newline is dropped, the text must be UTF-8), lexer.c cuts it into tokens
 * (trim_blocks / lstrip_blocks / whitespace control happen there, exactly where jinja2's lexer
 * does them), parser.c builds the AST in the template's arena, and eval.c walks it.
 *
 * Memory: the AST lives in the template's arena and is never written after parse (so renders
 * on several threads share it). Everything a render makes (values, scopes, buffers) lives in
 * that render's own arena, capped at max_memory_bytes, and dies with it. Errors during parse
 * and render unwind with longjmp to the entry point (tmpl_parse, hearth_tmpl_render): nothing
 * is malloc'ed outside the arenas in between, so nothing leaks, and the hundreds of checks a
 * Jinja evaluator needs stay one call each (the way Lua reports errors).
 *
 * Strings are UTF-8 (a lone surrogate from a \ud800 escape is kept in its 3-byte form); Python
 * indexes strings by code point, so a string records whether it is pure ASCII and its code
 * point count.
 */
#pragma once
#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/status.h"
#include "base/utf8.h"
#include "template/template.h"

/* ---- values ------------------------------------------------------------------------------ */

typedef enum {
    TV_UNDEF = 0, /* jinja2's default Undefined: prints empty, iterates empty, is falsy */
    TV_NONE,
    TV_BOOL,
    TV_INT,
    TV_FLOAT,
    TV_STR,
    TV_LIST,  /* list, or tuple with TVF_TUPLE */
    TV_DICT,  /* insertion-ordered */
    TV_NS,    /* namespace(): the one mutable object */
    TV_MACRO,
    TV_FUNC,  /* a builtin: global function or bound method */
    TV_LOOP,  /* the `loop` object of a for loop */
} tv_kind;

enum {
    TVF_MARKUP = 1, /* TV_STR: markupsafe.Markup (from |safe, |escape): `+` escapes the other side */
    TVF_TUPLE = 2,  /* TV_LIST: a tuple (prints with parentheses) */
    TVF_UNSAFE = 4, /* TV_UNDEF: a sandbox refusal (list.append); calling it raises */
};

typedef struct tstr tstr;
typedef struct tlist tlist;
typedef struct tdict tdict;
typedef struct tmacro tmacro;
typedef struct tfunc tfunc;
typedef struct tloop tloop;

typedef struct {
    uint8_t kind;  /* tv_kind */
    uint8_t flags; /* TVF_* */
    union {
        bool          b;
        int64_t       i;
        double        f;
        const tstr   *s;    /* TV_STR; TV_UNDEF: the missing name, or NULL */
        tlist        *l;
        tdict        *d;    /* TV_DICT, TV_NS */
        const tmacro *m;
        const tfunc  *fn;
        tloop        *loop;
    } u;
} tv;

/* A string's bytes. owner, when set, is a growable buffer whose first `used` bytes are this
 * string's prefix: s + t may then append t in place (amortized O(1) for `ns.s = ns.s ~ x`
 * loops) without changing s, whose len stays put. AST literals have no owner. */
typedef struct strbuf {
    char  *data;
    size_t cap, used; /* bytes */
} strbuf;

struct tstr {
    const char *p;     /* UTF-8; p[len] is NUL only for strings without an owner */
    size_t      len;   /* bytes */
    size_t      ncp;   /* code points (== len when ascii) */
    strbuf     *owner; /* may be NULL */
};

typedef struct gen_thunk gen_thunk;

struct tlist {
    size_t  n, cap;
    tv     *v;
    uint8_t gen; /* 0: a list; 1: a generator (what map/select/... return in jinja2: always
                    truthy, no len(), one pass); 2: a generator already consumed */
    const gen_thunk *thunk; /* a generator's pending work (filters.c), NULL once it ran */
    bool    is_range;        /* a Python range object: prints as range(start, stop[, step]),
                                is no list to + or tojson; the items are materialized */
    int64_t r_start, r_stop, r_step;
};

struct tdict {
    size_t    n, cap;
    tv       *k, *v;
    uint32_t *idx;     /* open-addressing index of k (slot = entry + 1), built past 8 entries */
    size_t    idx_cap; /* power of two, or 0 */
};

typedef struct node node;
typedef struct scope scope;

struct tmacro {
    const node  *def;     /* S_MACRO or S_CALLBLOCK (the `caller` of a call block) */
    scope       *closure; /* where the macro was defined; names resolve there at call time */
    const tstr  *name;
};

struct tfunc {
    int         id;   /* FN_* of builtins.c */
    tv          self; /* bound receiver, TV_UNDEF for globals */
    const char *name;
};

struct tloop {
    tlist  *items;    /* the (filtered) sequence */
    size_t  i;        /* index0 of the current item */
    int     depth0;
    tv      last_changed; /* loop.changed() memory */
    bool    has_changed;
};

/* ---- tokens ------------------------------------------------------------------------------ */

typedef enum {
    T_EOF = 0, T_TEXT, T_VAR_BEGIN, T_VAR_END, T_BLOCK_BEGIN, T_BLOCK_END,
    T_NAME, T_STRING, T_INT, T_FLOAT, T_OP,
} ttype;

typedef enum {
    OP_NONE = 0,
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FDIV, OP_MOD, OP_POW, OP_TILDE,
    OP_LBRACKET, OP_RBRACKET, OP_LPAREN, OP_RPAREN, OP_LBRACE, OP_RBRACE,
    OP_EQ, OP_NE, OP_GT, OP_GE, OP_LT, OP_LE,
    OP_ASSIGN, OP_DOT, OP_COLON, OP_PIPE, OP_COMMA, OP_SEMI,
    /* comparison operators that are names, used in X_CMP only */
    OP_IN, OP_NOTIN,
} top;

typedef struct {
    uint8_t     type; /* ttype */
    uint8_t     op;   /* top, for T_OP */
    uint32_t    pos;  /* byte offset in the normalized source */
    const tstr *s;    /* T_TEXT, T_NAME, T_STRING */
    int64_t     i;    /* T_INT */
    double      f;    /* T_FLOAT */
} token;

/* ---- AST --------------------------------------------------------------------------------- */

typedef enum {
    /* expressions */
    X_LIT, X_NAME, X_LIST, X_TUPLE, X_DICT, X_ATTR, X_ITEM, X_SLICE, X_CALL, X_FILTER, X_TEST,
    X_NOT, X_NEG, X_POS, X_AND, X_OR, X_BIN, X_CONCAT, X_CMP, X_COND, X_NSREF,
    /* statements */
    S_TEXT, S_PRINT, S_FOR, S_IF, S_SET, S_SETBLOCK, S_MACRO, S_CALLBLOCK, S_FILTERBLOCK,
    S_WITH, S_BREAK, S_CONTINUE, S_BLOCK,
} nkind;

typedef struct {
    node **v;
    int    n;
} nlist;

typedef struct {
    nlist        pos;       /* positional arguments */
    int          n_kw;
    const tstr **kw_names;  /* [n_kw] */
    node       **kw_vals;   /* [n_kw] */
    node        *star;      /* *args, or NULL */
    node        *dstar;     /* **kwargs, or NULL */
} nargs;

typedef struct {
    int          n;
    const tstr **names;    /* [n] */
    node       **defaults; /* [n], NULL where the parameter has none */
    bool         uses_caller, uses_varargs, uses_kwargs; /* the body reads these names */
} nparams;

/*
 * One node type for all kinds; what each field means per kind:
 *   X_LIT      lit
 *   X_NAME     name
 *   X_LIST/X_TUPLE  l1 items;  X_DICT  l1 keys, l2 values
 *   X_ATTR     a.name;   X_ITEM  a[b];   X_SLICE  a[b:c:d] (b, c, d may be NULL)
 *   X_CALL     a(args)
 *   X_FILTER   a | name(args), id = filter id; a == NULL in a filter block / block set
 *   X_TEST     a is [not] name(args), id = test id, op = 1 when negated
 *   X_NOT/X_NEG/X_POS  a;   X_AND/X_OR  a, b;   X_BIN  a op b;   X_CONCAT  l1 ~ ...
 *   X_CMP      a then l1 operands with ops[i]
 *   X_COND     a if b else c (c may be NULL)
 *   X_NSREF    name.name2 (assignment target only)
 *   S_TEXT     lit;   S_PRINT  a
 *   S_FOR      for a in b [if c] : l1 [else l2];  op bit 1: recursive, bit 2: the body
 *              defines a macro (so each iteration needs a scope of its own)
 *   S_IF       if a : l1 else l2 (an elif is an S_IF alone in l2)
 *   S_SET      a = b;   S_SETBLOCK  a = render(l1) | c (c may be NULL)
 *   S_MACRO    name(params) : l1;   S_CALLBLOCK  call a with caller(params) : l1
 *   S_FILTERBLOCK  render(l1) | a;   S_WITH  params (names = values) : l1
 *   S_BLOCK    l1 (the {% generation %} tag of transformers: renders its body)
 */
struct node {
    uint8_t      kind; /* nkind */
    uint8_t      op;   /* top for X_BIN; flags per kind above */
    uint32_t     pos;  /* byte offset in the normalized source */
    int          id;
    const tstr  *name, *name2;
    node        *a, *b, *c, *d;
    nlist        l1, l2;
    uint8_t     *ops;  /* X_CMP: top per operand */
    nargs        args;
    nparams     *params;
    tv           lit;
};

struct hearth_tmpl {
    hearth_arena arena; /* owns everything below */
    const char  *src;   /* normalized source */
    size_t       len;
    nlist        body;
};

/* byte offset -> 1-based line and column (in code points). */
void tmpl_linecol(const char *src, size_t len, size_t pos, int32_t *line, int32_t *col);

/* ---- lexer / parser ------------------------------------------------------------------------ */

/* Tokens of t->src into t's arena. On error fills err (with line/col) and returns non-zero. */
hearth_status tmpl_lex(hearth_tmpl *t, token **out, size_t *n_out, hearth_err *err);
/* Parse the tokens into t->body. */
hearth_status tmpl_parse_tokens(hearth_tmpl *t, const token *toks, size_t n, hearth_err *err);

/* Names of the filters and tests the interpreter knows: id >= 0, or -1. A name jinja2 has but
 * hearth does not gives -2 (the parser then says "not supported" instead of "no such"). */
int tmpl_filter_id(const char *name, size_t len);
int tmpl_test_id(const char *name, size_t len);

/* ---- render state ---------------------------------------------------------------------------- */

typedef struct {
    char  *p;
    size_t len, cap;
} tbuf;

struct scope {
    scope       *parent;
    int          n;
    size_t       cap;
    const tstr **names;
    tv          *vals;
};

typedef struct rt {
    hearth_arena        arena;    /* everything of this render */
    size_t              mem_cap;  /* bytes the arena may hand out */
    const hearth_tmpl  *t;
    hearth_tmpl_limits  lim;
    size_t              steps;
    int                 depth;    /* macro / caller nesting */
    int                 nest;     /* C recursion of eval/exec, bounded by RT_MAX_NEST */
    hearth_err         *err;
    hearth_status       status;
    jmp_buf             jb;
    tdict              *globals;  /* the JSON context */
    tbuf               *out;      /* where output goes now */
    const node         *cur;      /* the node being evaluated: the position of errors raised
                                     without one (limits, value.c) */
} rt;

#define RT_MAX_NEST 1000 /* C stack frames of eval/exec/repr/tojson recursion */

/* Raise: fill err (node may be NULL; its position gives line/col) and longjmp to the entry. */
_Noreturn void rt_fail(rt *r, const node *at, hearth_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void  *rt_alloc(rt *r, size_t n);               /* zeroed, within mem_cap */
/* Grow an array of this render to hold need elements (hearth_arena_grow within mem_cap; n are
 * in use and copied); raises on the limit or out of memory. */
void   rt_grow(rt *r, void *pp, size_t *cap, size_t n, size_t need, size_t elem_bytes, size_t first);
void   rt_step(rt *r, const node *at, size_t n); /* count steps against max_steps */
void   rt_enter(rt *r, const node *at);          /* nest++ with the limit */
static inline void rt_leave(rt *r) { r->nest--; }

void buf_put(rt *r, tbuf *b, const char *s, size_t n);
static inline void buf_putc(rt *r, tbuf *b, char c) { buf_put(r, b, &c, 1); }
void buf_puts(rt *r, tbuf *b, const char *s);

/* ---- values (value.c) ------------------------------------------------------------------------ */

static inline tv tv_undef(void) { tv v = {0}; return v; }
static inline tv tv_none(void) { tv v = {0}; v.kind = TV_NONE; return v; }
static inline tv tv_bool(bool b) { tv v = {0}; v.kind = TV_BOOL; v.u.b = b; return v; }
static inline tv tv_int(int64_t i) { tv v = {0}; v.kind = TV_INT; v.u.i = i; return v; }
static inline tv tv_float(double f) { tv v = {0}; v.kind = TV_FLOAT; v.u.f = f; return v; }
static inline tv tv_strv(const tstr *s) { tv v = {0}; v.kind = TV_STR; v.u.s = s; return v; }
static inline tv tv_listv(tlist *l) { tv v = {0}; v.kind = TV_LIST; v.u.l = l; return v; }
static inline tv tv_dictv(tdict *d) { tv v = {0}; v.kind = TV_DICT; v.u.d = d; return v; }
static inline tv tv_undef_named(const tstr *name) { tv v = {0}; v.u.s = name; return v; }

tstr *tstr_new(hearth_arena *a, const char *p, size_t n);  /* copies; NULL on no memory */
const tstr *rt_str(rt *r, const char *p, size_t n);        /* copies, in the render arena */
tv    rt_strv(rt *r, const char *p, size_t n);
tv    rt_cstrv(rt *r, const char *s);
/* UTF-8 is base/utf8.h; strings may hold WTF-8 surrogates (a lone "\ud800" from JSON), which
 * count as one character. */
static inline size_t utf8_count(const char *p, size_t n, bool *ascii) {
    return hearth_utf8_count(p, n, ascii);
}
/* Decode one code point at p[0..n) (n > 0); *len gets its byte length. Lenient: a byte that
 * does not start a sequence decodes as itself. */
static inline uint32_t utf8_dec(const char *p, size_t n, size_t *len) {
    uint32_t cp;
    size_t k = hearth_utf8_decode_wtf8(p, n, &cp);
    *len = k ? k : 1;
    return k ? cp : (unsigned char)p[0];
}
static inline size_t utf8_enc(uint32_t cp, char out[4]) { return hearth_utf8_encode(cp, out); }
bool     py_isspace(uint32_t cp);
/* Byte offset of code point index i in s (i <= s->ncp). */
size_t   tstr_off(const tstr *s, size_t i);

tlist *rt_list(rt *r, size_t cap);
void   list_push(rt *r, tlist *l, tv v);
tdict *rt_dict(rt *r, size_t cap);
void   dict_set(rt *r, tdict *d, tv k, tv v);      /* insert or replace */
bool   dict_get(const tdict *d, tv k, tv *out);
bool   dict_gets(const tdict *d, const char *k, size_t n, tv *out); /* string key */

bool   tv_truthy(tv v);
bool   tv_eq(rt *r, tv a, tv b);
/* Python's ordering: <0, 0, >0; raises TypeError-like on unorderable values. */
int    tv_cmp(rt *r, const node *at, tv a, tv b);
const char *tv_type_name(tv v);
/* str(v) and repr(v) appended to b. */
void   tv_str(rt *r, tbuf *b, tv v);
void   tv_repr(rt *r, tbuf *b, tv v);
tv     tv_to_strv(rt *r, tv v);                     /* str(v) as a string value */
void   py_float_repr(double f, char out[32]);
/* Concatenate two strings (the result is Markup when markup is set). */
tv     str_concat(rt *r, const node *at, const tstr *a, const tstr *b, bool markup);
/* markupsafe.escape of a string value's text. */
tv     str_escape(rt *r, tv s);

/* ---- str methods (strings.c) -------------------------------------------------------------------- */

typedef enum { CASE_UPPER, CASE_LOWER, CASE_SWAP, CASE_CAPITALIZE, CASE_TITLE, CASE_JINJA_TITLE } case_mode;
/* Case mapping of a string value: upper, lower, swapcase, capitalize, Python's title(), and
 * jinja2's |title (upper after "-", whitespace and opening brackets). Markup stays Markup. */
tv      str_case(rt *r, tv s, case_mode mode);
/* strip/lstrip/rstrip; chars NULL: whitespace. */
tv      str_strip(rt *r, tv s, const tstr *chars, bool left, bool right);
/* str.split / str.rsplit (sep NULL: runs of whitespace; maxsplit < 0: no limit). */
tlist  *str_split(rt *r, const node *at, const tstr *s, const tstr *sep, int64_t maxsplit);
tlist  *str_rsplit(rt *r, const node *at, const tstr *s, const tstr *sep, int64_t maxsplit);
tlist  *str_splitlines(rt *r, const tstr *s, bool keepends);
/* Python slice-style start/end (code points, may be NULL) -> byte range; false if empty. */
bool    str_bounds(const tstr *s, const tv *start, const tv *end, size_t *a, size_t *b);
int64_t str_find(const tstr *s, const tstr *sub, size_t a, size_t b, bool rev); /* code points, -1 */
int64_t str_count(const tstr *s, const tstr *sub, size_t a, size_t b);
tv      str_replace(rt *r, const tstr *s, const tstr *old, const tstr *new, int64_t count);
tv      str_pad(rt *r, tv s, int64_t width, const tstr *fill, int align); /* 0 ljust, 1 center, 2 rjust */
/* digit, decimal, numeric, alpha, alnum, space, lower, upper, ascii (kinds 0..8). */
bool    str_is(const tstr *s, int kind);

/* Python's printf-style `fmt % args` (pyformat.c): args a tuple, a mapping for %(key)s, or one
 * value. */
tv      py_percent_format(rt *r, const node *at, tv fmt, tv args);

/* ---- JSON (json_ctx.c) ------------------------------------------------------------------------ */

/* Parse JSON text the way Python's json.loads does (ints stay ints, NaN/Infinity accepted,
 * duplicate keys: last value wins at the first key's place). */
hearth_status json_to_tv(rt *r, const char *s, size_t n, tv *out);
/* transformers' tojson: json.dumps(v, ensure_ascii, indent, separators, sort_keys). indent is
 * NULL for none; item_sep/key_sep NULL for the defaults. */
void json_dump(rt *r, const node *at, tbuf *b, tv v, bool ensure_ascii, const char *indent,
               const char *item_sep, const char *key_sep, bool sort_keys);

/* ---- evaluation (eval.c) and builtins (filters.c, builtins.c) -------------------------------- */

typedef struct {
    int          n_pos;
    tv          *pos;
    int          n_kw;
    const tstr **kw_names;
    tv          *kw_vals;
} targs;

void tmpl_exec(rt *r); /* render r->t's body into r->out */
tv   eval_expr(rt *r, scope *sc, const node *e);
/* a op b for the arithmetic operators (OP_ADD .. OP_POW), with Python's rules. */
tv   tv_binop(rt *r, const node *at, int op, tv a, tv b);
tv   call_value(rt *r, scope *sc, const node *at, tv callee, const targs *a);
tv   tv_getattr(rt *r, const node *at, tv obj, const tstr *name);
tv   tv_getitem(rt *r, const node *at, tv obj, tv key);
/* Iterate: a list of the items of v (dict keys, string characters); raises when v is not
 * iterable. Undefined iterates empty. */
tlist *tv_iter(rt *r, const node *at, tv v);
/* Dotted attribute path as map()/selectattr()/sort(attribute=) read it ("a.b", "0"). */
tv   tv_attr_path(rt *r, const node *at, tv obj, const tstr *path);

/* Run a generator filter's pending work: its items (filters.c; tv_iter calls it). */
tlist *gen_run(rt *r, const gen_thunk *g);

/* Filters and tests by id; `in` is the filtered value. */
tv   filter_apply(rt *r, scope *sc, const node *at, int id, tv in, const targs *a);
bool test_apply(rt *r, scope *sc, const node *at, int id, tv in, const targs *a);
/* Globals (range, namespace, ...) by name, TV_UNDEF when none. */
tv   builtin_global(rt *r, const tstr *name);
/* Attribute of a builtin type (str/list/dict methods, loop.*): found -> true. */
bool builtin_attr(rt *r, const node *at, tv obj, const tstr *name, tv *out);
tv   builtin_call(rt *r, scope *sc, const node *at, const tfunc *fn, const targs *a);

/* Bind call arguments to parameter names (Python's rules for a simple signature). out[i] is
 * TV_UNDEF with out_set[i] false for a parameter not given. Raises on unknown or extra ones. */
void args_bind(rt *r, const node *at, const char *what, const targs *a, int n, const char *const *names,
               tv *out, bool *out_set);
