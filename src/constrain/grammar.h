/*
 * grammar.h - byte-level context-free grammars for constrained decoding (the structured-output
 * machinery under response_format and forced tool calls).
 *
 * A grammar is a set of rules; a rule is a list of alternatives; an alternative is a sequence of
 * items, each a byte set (256-bit) or a reference to another rule. This is a recursive
 * transition network: run as a pushdown automaton (matcher.h), a stack of return positions
 * records where each referenced rule continues. Rules are built bottom-up through a builder
 * (every rule referenced must exist first, except a rule's reference to itself as the last item
 * of an alternative: the one form of recursion allowed, which expresses repetition; the matcher
 * runs it as a tail call, so the stack never grows with it). The builder refuses grammars
 * over its limits (rules, items, stack depth) with HEARTH_E_LIMIT, so a hostile schema costs
 * bounded memory and time.
 *
 * The flattened grammar (hearth_cx_grammar) is immutable and may be shared between threads.
 * A builder belongs to one thread.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct hearth_cx_builder hearth_cx_builder;
typedef struct hearth_cx_grammar hearth_cx_grammar;

/* Bounds on what one grammar may hold (hearth_cx_limits_default gives these). */
typedef struct {
    int32_t max_rules;   /* 20000 */
    int32_t max_items;   /* 400000: items of every alternative together (the automaton's states) */
    int32_t max_stack;   /* 96: return positions a path may hold (nesting) */
} hearth_cx_limits;

hearth_cx_limits hearth_cx_limits_default(void);

/* A builder. NULL on OOM. */
hearth_cx_builder *hearth_cx_builder_create(hearth_cx_limits lim);
void               hearth_cx_builder_destroy(hearth_cx_builder *b); /* accepts NULL */
/* The builder's first failure (sticky): HEARTH_OK while every call succeeded. Every call below
 * returns -1 once the builder failed, so a compiler can check once at the end. */
hearth_status      hearth_cx_builder_status(const hearth_cx_builder *b, const char **msg);
/* Fail the builder with a message (a compiler's own refusal); returns -1. */
int                hearth_cx_fail(hearth_cx_builder *b, hearth_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A new rule without alternatives; returns its id (>= 0) or -1. */
int  hearth_cx_rule(hearth_cx_builder *b);
/* Start a new alternative of rule r (items are appended to the rule's last alternative). */
int  hearth_cx_alt(hearth_cx_builder *b, int r);
/* Append to rule r's last alternative: the bytes lo..hi; one of the bytes of set[256/8]; the
 * literal s[0..n); a reference to rule sub. Return 0 or -1. */
int  hearth_cx_range(hearth_cx_builder *b, int r, uint8_t lo, uint8_t hi);
int  hearth_cx_set(hearth_cx_builder *b, int r, const uint8_t set[32]);
int  hearth_cx_lit(hearth_cx_builder *b, int r, const char *s, size_t n);
int  hearth_cx_ref(hearth_cx_builder *b, int r, int sub);

/* Helpers that make whole rules (ids or -1): */
/* the literal s (one alternative) */
int  hearth_cx_rule_lit(hearth_cx_builder *b, const char *s, size_t n);
/* seq[0] seq[1] ... (references) */
int  hearth_cx_rule_seq(hearth_cx_builder *b, const int *seq, int n);
/* one of alts[0..n) (n >= 1) */
int  hearth_cx_rule_any(hearth_cx_builder *b, const int *alts, int n);
/* item repeated min..max times (max < 0: no bound), sep (a rule, or -1) between repetitions */
int  hearth_cx_rule_repeat(hearth_cx_builder *b, int item, int sep, int32_t min, int32_t max);
/* one of the literals lits[0..n) (lens[i] bytes each), as a trie so it runs deterministically */
int  hearth_cx_rule_choice(hearth_cx_builder *b, const char *const *lits, const size_t *lens, int n);

/* Flatten the rules reachable from root into a grammar. NULL with err set when the builder
 * failed, a rule refers to itself other than in the tail position, or the stack bound is
 * exceeded. The builder may be destroyed afterwards. */
hearth_cx_grammar *hearth_cx_build(hearth_cx_builder *b, int root, hearth_err *err);
void               hearth_cx_grammar_destroy(hearth_cx_grammar *g); /* accepts NULL */
/* An independent copy of g (a matcher takes its grammar over: one per choice). NULL on OOM. */
hearth_cx_grammar *hearth_cx_grammar_clone(const hearth_cx_grammar *g);
/* Size figures (tests, logs). */
int32_t            hearth_cx_grammar_n_items(const hearth_cx_grammar *g);
int32_t            hearth_cx_grammar_max_stack(const hearth_cx_grammar *g);
