/*
 * grammar.c - the grammar builder and its flattening (see grammar.h).
 *
 * While building, every alternative is its own growable item array; hearth_cx_build copies
 * the rules reachable from the root into one symbol array (grammar_internal.h), deduplicates
 * the byte sets, and computes the deepest stack a path can need: a reference that is not the
 * last item of its alternative pushes a return position, a last-item reference is a tail call
 * and pushes nothing. Recursion is only allowed as a rule's tail reference to itself, so that
 * depth is finite and known before any byte is matched.
 */
#include "constrain/grammar_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

typedef struct {
    uint8_t kind;
    int32_t arg; /* SET: builder set index; REF: builder rule */
} item;

typedef struct {
    item   *items; /* owned */
    int32_t n;
    size_t  cap;
} alt;

typedef struct {
    int32_t *alts; /* owned: indices into b->alts */
    int32_t  n;
    size_t   cap;
} rule;

struct hearth_cx_builder {
    hearth_cx_limits lim;
    rule            *rules; /* owned */
    int32_t          n_rules;
    size_t           cap_rules;
    alt             *alts;  /* owned */
    int32_t          n_alts;
    size_t           cap_alts;
    uint8_t        (*sets)[32];
    int32_t          n_sets;
    size_t           cap_sets;
    int64_t          n_items;
    hearth_status    st;
    char             msg[160];
};

hearth_cx_limits hearth_cx_limits_default(void) {
    return (hearth_cx_limits){.max_rules = 20000, .max_items = 400000, .max_stack = 96};
}

hearth_cx_builder *hearth_cx_builder_create(hearth_cx_limits lim) {
    hearth_cx_builder *b = calloc(1, sizeof *b);
    if (b) b->lim = lim;
    return b;
}

void hearth_cx_builder_destroy(hearth_cx_builder *b) {
    if (!b) return;
    for (int32_t i = 0; i < b->n_rules; i++) free(b->rules[i].alts);
    for (int32_t i = 0; i < b->n_alts; i++) free(b->alts[i].items);
    free(b->rules);
    free(b->alts);
    free(b->sets);
    free(b);
}

hearth_status hearth_cx_builder_status(const hearth_cx_builder *b, const char **msg) {
    if (msg) *msg = b->msg;
    return b->st;
}

int hearth_cx_fail(hearth_cx_builder *b, hearth_status code, const char *fmt, ...) {
    if (b->st) return -1;
    b->st = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->msg, sizeof b->msg, fmt, ap);
    va_end(ap);
    return -1;
}

static int oom(hearth_cx_builder *b) { return hearth_cx_fail(b, HEARTH_E_NOMEM, "out of memory building a grammar"); }

/* Make room for one more element after n (hearth_buf_grow). */
#define GROW(arr, cap, n) hearth_buf_grow(&(arr), &(cap), (size_t)(n) + 1, sizeof *(arr), 8)

int hearth_cx_rule(hearth_cx_builder *b) {
    if (b->st) return -1;
    if (b->n_rules >= b->lim.max_rules)
        return hearth_cx_fail(b, HEARTH_E_LIMIT, "the constraint needs more than %d grammar rules", b->lim.max_rules);
    if (!GROW(b->rules, b->cap_rules, b->n_rules)) return oom(b);
    b->rules[b->n_rules] = (rule){0};
    return b->n_rules++;
}

int hearth_cx_alt(hearth_cx_builder *b, int r) {
    if (b->st) return -1;
    if (r < 0 || r >= b->n_rules) return hearth_cx_fail(b, HEARTH_E_INVALID, "no rule %d", r);
    rule *ru = &b->rules[r];
    if (!GROW(b->alts, b->cap_alts, b->n_alts) || !GROW(ru->alts, ru->cap, ru->n))
        return oom(b);
    b->alts[b->n_alts] = (alt){0};
    ru->alts[ru->n++] = b->n_alts++;
    return 0;
}

static int add_item(hearth_cx_builder *b, int r, uint8_t kind, int32_t arg) {
    if (b->st) return -1;
    if (r < 0 || r >= b->n_rules || !b->rules[r].n)
        return hearth_cx_fail(b, HEARTH_E_INVALID, "rule %d has no open alternative", r);
    if (++b->n_items > b->lim.max_items)
        return hearth_cx_fail(b, HEARTH_E_LIMIT, "the constraint needs more than %d grammar states", b->lim.max_items);
    alt *a = &b->alts[b->rules[r].alts[b->rules[r].n - 1]];
    if (!GROW(a->items, a->cap, a->n)) return oom(b);
    a->items[a->n++] = (item){kind, arg};
    return 0;
}

int hearth_cx_set(hearth_cx_builder *b, int r, const uint8_t set[32]) {
    if (b->st) return -1;
    int32_t i = 0;
    while (i < b->n_sets && memcmp(b->sets[i], set, 32)) i++;
    if (i == b->n_sets) {
        if (!GROW(b->sets, b->cap_sets, b->n_sets)) return oom(b);
        memcpy(b->sets[b->n_sets++], set, 32);
    }
    return add_item(b, r, CX_SET, i);
}

int hearth_cx_range(hearth_cx_builder *b, int r, uint8_t lo, uint8_t hi) {
    uint8_t set[32] = {0};
    for (int c = lo; c <= hi; c++) set[c >> 3] |= (uint8_t)(1u << (c & 7));
    return hearth_cx_set(b, r, set);
}

int hearth_cx_lit(hearth_cx_builder *b, int r, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (hearth_cx_range(b, r, (uint8_t)s[i], (uint8_t)s[i])) return -1;
    return b->st ? -1 : 0;
}

int hearth_cx_ref(hearth_cx_builder *b, int r, int sub) {
    if (b->st) return -1;
    if (sub < 0 || sub >= b->n_rules) return hearth_cx_fail(b, HEARTH_E_INVALID, "no rule %d", sub);
    return add_item(b, r, CX_REF, sub);
}

int hearth_cx_rule_lit(hearth_cx_builder *b, const char *s, size_t n) {
    int r = hearth_cx_rule(b);
    if (r < 0 || hearth_cx_alt(b, r) || hearth_cx_lit(b, r, s, n)) return -1;
    return r;
}

int hearth_cx_rule_seq(hearth_cx_builder *b, const int *seq, int n) {
    int r = hearth_cx_rule(b);
    if (r < 0 || hearth_cx_alt(b, r)) return -1;
    for (int i = 0; i < n; i++)
        if (hearth_cx_ref(b, r, seq[i])) return -1;
    return r;
}

int hearth_cx_rule_any(hearth_cx_builder *b, const int *alts, int n) {
    if (n == 1) return b->st ? -1 : alts[0];
    int r = hearth_cx_rule(b);
    for (int i = 0; i < n && r >= 0; i++)
        if (hearth_cx_alt(b, r) || hearth_cx_ref(b, r, alts[i])) return -1;
    return r;
}

/* (sep item){0,left} as a chain of rules, or (sep item)* when left < 0. */
static int tail_repeat(hearth_cx_builder *b, int item_r, int sep, int32_t left) {
    if (left < 0) { /* star: r := sep item r | (empty) */
        int r = hearth_cx_rule(b);
        if (r < 0 || hearth_cx_alt(b, r) || (sep >= 0 && hearth_cx_ref(b, r, sep)) || hearth_cx_ref(b, r, item_r) ||
            hearth_cx_ref(b, r, r) || hearth_cx_alt(b, r))
            return -1;
        return r;
    }
    int next = -1; /* built from the end: r_k := (sep item r_{k+1})? */
    for (int32_t k = 0; k < left; k++) {
        int r = hearth_cx_rule(b);
        if (r < 0 || hearth_cx_alt(b, r) || (sep >= 0 && hearth_cx_ref(b, r, sep)) || hearth_cx_ref(b, r, item_r) ||
            (next >= 0 && hearth_cx_ref(b, r, next)) || hearth_cx_alt(b, r))
            return -1;
        next = r;
    }
    if (next < 0) { /* nothing more: the empty rule */
        next = hearth_cx_rule(b);
        if (next < 0 || hearth_cx_alt(b, next)) return -1;
    }
    return next;
}

int hearth_cx_rule_repeat(hearth_cx_builder *b, int item_r, int sep, int32_t min, int32_t max) {
    if (b->st) return -1;
    if (min < 0 || (max >= 0 && max < min)) return hearth_cx_fail(b, HEARTH_E_INVALID, "bad repetition %d..%d", min, max);
    if (max == 0) {
        int r = hearth_cx_rule(b);
        return r < 0 || hearth_cx_alt(b, r) ? -1 : r;
    }
    /* item (sep item){min-1} then (sep item){0, max-min} */
    int rest = tail_repeat(b, item_r, sep, max < 0 ? -1 : max - (min > 0 ? min : 1));
    int r = hearth_cx_rule(b);
    if (rest < 0 || r < 0 || hearth_cx_alt(b, r) || hearth_cx_ref(b, r, item_r)) return -1;
    for (int32_t k = 1; k < min; k++)
        if ((sep >= 0 && hearth_cx_ref(b, r, sep)) || hearth_cx_ref(b, r, item_r)) return -1;
    if (hearth_cx_ref(b, r, rest)) return -1;
    if (min == 0 && hearth_cx_alt(b, r)) return -1; /* or nothing at all */
    return r;
}

/* The trie of lits[lo..hi) (sorted, sharing their first `depth` bytes) as one rule. */
static int trie(hearth_cx_builder *b, const char *const *lits, const size_t *lens, const int *ord, int lo, int hi,
                size_t depth) {
    int r = hearth_cx_rule(b);
    if (r < 0) return -1;
    int i = lo;
    if (i < hi && lens[ord[i]] == depth) { /* a literal ends here */
        if (hearth_cx_alt(b, r)) return -1;
        while (i < hi && lens[ord[i]] == depth) i++; /* duplicates */
    }
    while (i < hi) {
        uint8_t c = (uint8_t)lits[ord[i]][depth];
        int j = i;
        while (j < hi && (uint8_t)lits[ord[j]][depth] == c) j++;
        int sub = trie(b, lits, lens, ord, i, j, depth + 1);
        if (sub < 0 || hearth_cx_alt(b, r) || hearth_cx_range(b, r, c, c) || hearth_cx_ref(b, r, sub)) return -1;
        i = j;
    }
    return r;
}

typedef struct {
    const char *const *lits;
    const size_t      *lens;
} lit_order;

static int cmp_lit(const void *x, const void *y, void *ctx) {
    const lit_order *o = ctx;
    int a = *(const int *)x, c = *(const int *)y;
    size_t na = o->lens[a], nc = o->lens[c];
    int d = memcmp(o->lits[a], o->lits[c], na < nc ? na : nc);
    if (d) return d;
    return na < nc ? -1 : na > nc;
}

int hearth_cx_rule_choice(hearth_cx_builder *b, const char *const *lits, const size_t *lens, int n) {
    if (b->st) return -1;
    if (n < 1) return hearth_cx_fail(b, HEARTH_E_INVALID, "an empty choice");
    int *ord = malloc((size_t)n * sizeof *ord);
    if (!ord) return oom(b);
    for (int i = 0; i < n; i++) ord[i] = i;
    lit_order lo = {lits, lens};
    qsort_r(ord, (size_t)n, sizeof *ord, cmp_lit, &lo); /* by bytes, so that shared prefixes are adjacent */
    int r = trie(b, lits, lens, ord, 0, n, 0);
    free(ord);
    return r;
}

/* ---- flattening ---- */

typedef struct {
    const hearth_cx_builder *b;
    int32_t *map;    /* builder rule -> grammar rule, -1 unseen */
    int32_t *order;  /* grammar rule -> builder rule */
    int32_t  n;
    int32_t *depth;  /* builder rule -> stack need, -1 unknown, -2 in progress */
    hearth_err *err;
    int32_t  max_stack;
} flat;

/* Stack depth rule r can need below its caller's frame. -1 on an illegal recursion or a depth
 * over the bound. Recursion here is bounded: every step down the call chain is a distinct rule
 * in progress, and there are at most max_rules of them. */
static int32_t need(flat *f, int32_t r, int32_t level) {
    if (f->depth[r] >= 0) return f->depth[r];
    if (level > f->max_stack) return -1;
    f->depth[r] = -2;
    const rule *ru = &f->b->rules[r];
    int32_t best = 1; /* the position inside r itself */
    for (int32_t k = 0; k < ru->n; k++) {
        const alt *a = &f->b->alts[ru->alts[k]];
        for (int32_t i = 0; i < a->n; i++) {
            if (a->items[i].kind != CX_REF) continue;
            int32_t sub = a->items[i].arg;
            bool tail = i == a->n - 1;
            if (sub == r && tail) continue; /* repetition: a tail call to itself */
            if (f->depth[sub] == -2) {
                hearth_err_set(f->err, HEARTH_E_INVALID, -1, "the grammar is recursive (rule %d)", sub);
                return -1;
            }
            int32_t d = need(f, sub, level + 1);
            if (d < 0) return -1;
            /* a tail call replaces r's frame; any other call keeps r's return position below */
            int32_t here = tail ? d : d + 1;
            if (here > best) best = here;
        }
    }
    f->depth[r] = best;
    return best;
}

static int32_t visit(flat *f, int32_t r) {
    if (f->map[r] >= 0) return f->map[r];
    f->map[r] = f->n;
    f->order[f->n++] = r;
    const rule *ru = &f->b->rules[r];
    for (int32_t k = 0; k < ru->n; k++) {
        const alt *a = &f->b->alts[ru->alts[k]];
        for (int32_t i = 0; i < a->n; i++)
            if (a->items[i].kind == CX_REF) visit(f, a->items[i].arg);
    }
    return f->map[r];
}

hearth_cx_grammar *hearth_cx_build(hearth_cx_builder *b, int root, hearth_err *err) {
    if (b->st) {
        hearth_err_set(err, b->st, -1, "%s", b->msg);
        return NULL;
    }
    if (root < 0 || root >= b->n_rules) {
        hearth_err_set(err, HEARTH_E_INVALID, -1, "no root rule");
        return NULL;
    }
    hearth_cx_grammar *g = calloc(1, sizeof *g);
    flat f = {.b = b, .err = err, .max_stack = b->lim.max_stack};
    f.map = malloc((size_t)b->n_rules * sizeof *f.map);
    f.order = malloc((size_t)b->n_rules * sizeof *f.order);
    f.depth = malloc((size_t)b->n_rules * sizeof *f.depth);
    if (!g || !f.map || !f.order || !f.depth) goto nomem;
    for (int32_t i = 0; i < b->n_rules; i++) f.map[i] = f.depth[i] = -1;
    /* depth first (it also rejects recursion, so visit's own recursion is bounded too) */
    int32_t d = need(&f, root, 0);
    if (d < 0 || d > b->lim.max_stack) {
        if (d >= 0 || !err || !err->code)
            hearth_err_set(err, HEARTH_E_LIMIT, -1, "the constraint nests too deeply (more than %d grammar levels)",
                           b->lim.max_stack);
        goto fail;
    }
    visit(&f, root);
    g->max_stack = d;
    g->n_rules = f.n;
    int64_t n_syms = 0, n_alts = 0;
    for (int32_t i = 0; i < f.n; i++) {
        const rule *ru = &b->rules[f.order[i]];
        n_alts += ru->n;
        for (int32_t k = 0; k < ru->n; k++) n_syms += b->alts[ru->alts[k]].n + 1;
    }
    g->syms = malloc((size_t)(n_syms ? n_syms : 1) * sizeof *g->syms);
    g->alt_start = malloc((size_t)(n_alts ? n_alts : 1) * sizeof *g->alt_start);
    g->rule_alt0 = malloc((size_t)f.n * sizeof *g->rule_alt0);
    g->rule_n_alt = malloc((size_t)f.n * sizeof *g->rule_n_alt);
    g->sets = malloc((size_t)(b->n_sets ? b->n_sets : 1) * sizeof *g->sets);
    if (!g->syms || !g->alt_start || !g->rule_alt0 || !g->rule_n_alt || !g->sets) goto nomem;
    if (b->n_sets) memcpy(g->sets, b->sets, (size_t)b->n_sets * sizeof *g->sets);
    g->n_sets = b->n_sets;
    int32_t ns = 0, na = 0;
    for (int32_t i = 0; i < f.n; i++) {
        const rule *ru = &b->rules[f.order[i]];
        g->rule_alt0[i] = na;
        g->rule_n_alt[i] = ru->n;
        for (int32_t k = 0; k < ru->n; k++) {
            const alt *a = &b->alts[ru->alts[k]];
            g->alt_start[na++] = ns;
            for (int32_t j = 0; j < a->n; j++) {
                uint32_t arg = a->items[j].kind == CX_REF ? (uint32_t)f.map[a->items[j].arg] : (uint32_t)a->items[j].arg;
                g->syms[ns++] = (cx_sym){.kind = a->items[j].kind, .arg = arg};
            }
            g->syms[ns++] = (cx_sym){.kind = CX_END, .arg = 0};
        }
    }
    g->n_syms = ns;
    g->n_alts = na;
    g->root = f.map[root];
    free(f.map);
    free(f.order);
    free(f.depth);
    return g;
nomem:
    hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory building a grammar");
fail:
    free(f.map);
    free(f.order);
    free(f.depth);
    hearth_cx_grammar_destroy(g);
    return NULL;
}

void hearth_cx_grammar_destroy(hearth_cx_grammar *g) {
    if (!g) return;
    free(g->syms);
    free(g->alt_start);
    free(g->rule_alt0);
    free(g->rule_n_alt);
    free(g->sets);
    free(g);
}

static void *dup_array(const void *p, int32_t n, size_t size) {
    void *q = malloc((size_t)(n > 0 ? n : 1) * size);
    if (q && n > 0) memcpy(q, p, (size_t)n * size);
    return q;
}

hearth_cx_grammar *hearth_cx_grammar_clone(const hearth_cx_grammar *g) {
    hearth_cx_grammar *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    *c = *g;
    c->syms = dup_array(g->syms, g->n_syms, sizeof *g->syms);
    c->alt_start = dup_array(g->alt_start, g->n_alts, sizeof *g->alt_start);
    c->rule_alt0 = dup_array(g->rule_alt0, g->n_rules, sizeof *g->rule_alt0);
    c->rule_n_alt = dup_array(g->rule_n_alt, g->n_rules, sizeof *g->rule_n_alt);
    c->sets = dup_array(g->sets, g->n_sets, sizeof *g->sets);
    if (!c->syms || !c->alt_start || !c->rule_alt0 || !c->rule_n_alt || !c->sets) {
        hearth_cx_grammar_destroy(c);
        return NULL;
    }
    return c;
}

int32_t hearth_cx_grammar_n_items(const hearth_cx_grammar *g) { return g->n_syms; }
int32_t hearth_cx_grammar_max_stack(const hearth_cx_grammar *g) { return g->max_stack; }
