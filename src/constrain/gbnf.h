/*
 * gbnf.h - a GBNF grammar (llama.cpp's grammar notation; llama-server's `grammar`, vLLM's
 * guided_grammar) as a grammar rule.
 *
 *   name ::= alternatives         a rule (names: letters, digits, - and _); the output must
 *                                 match the rule named root
 *   "text"                        a literal (escapes \n \t \r \\ \" \xHH \uHHHH \UHHHHHHHH)
 *   [a-z0-9_] [^"\\]              a character class (ranges, escapes, ^ negates over Unicode)
 *   .                             any character
 *   ( ... )                       grouping
 *   a | b                         alternation
 *   x? x* x+ x{m} x{m,} x{,n} x{m,n}   repetition
 *   # ...                         a comment to the end of the line
 *
 * A rule ends at the end of its line unless a group is open or the line ends in `|`.
 * Recursion is limited to what a finite automaton with a stack of return positions runs in
 * bounded depth: a rule may refer to itself as the last item of one of its own alternatives
 * (`list ::= item ("," item)*` or `digits ::= [0-9] digits | [0-9]`); any other recursion (a
 * rule reached again through a group or another rule, e.g. nested brackets) is refused with
 * HEARTH_E_UNSUPPORTED. Malformed text, an undefined rule, a rule defined twice or a missing
 * root are HEARTH_E_INVALID; every message names the line and column.
 *
 * Thread rule: as the builder's (one thread).
 */
#pragma once
#include <stddef.h>

#include "constrain/grammar.h"

/* The root rule of the grammar text g[0..n), or -1 with the builder failed. */
int hearth_cx_gbnf(hearth_cx_builder *b, const char *g, size_t n);
