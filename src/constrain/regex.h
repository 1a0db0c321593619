/*
 * regex.h - a regular expression as a grammar rule (guided_regex, structured_outputs.regex).
 *
 * The whole output must match (the pattern is anchored at both ends; a leading ^ and a
 * trailing $ are accepted and mean nothing more). The supported subset, Python re syntax:
 *
 *   literals (UTF-8), escaped metacharacters, \n \t \r \f \v \a \0, \xHH, \uHHHH, \UHHHHHHHH
 *   .                      any character but a newline
 *   [...] [^...]           classes with ranges (a-z) and escapes; negation is over all of
 *                          Unicode
 *   \d \w \s \D \W \S      ASCII meanings: [0-9], [A-Za-z0-9_], [ \t\n\r\f\v], and their
 *                          complements; also inside classes
 *   (...) (?:...) (?P<n>...) (?<n>...)   groups (captures mean nothing here)
 *   a|b                    alternation
 *   ? * + {m} {m,} {,n} {m,n}   repetition, greedy or lazy (a trailing ?: the same language)
 *
 * Refused with HEARTH_E_UNSUPPORTED (a message with the byte position): backreferences,
 * lookaround, anchors other than the outer ^ $, \b \B \A \Z, inline flags, possessive
 * repetition, \p classes. Malformed patterns (unbalanced parentheses, nothing to repeat, a bad
 * escape, an unterminated class, m > n) are HEARTH_E_INVALID.
 *
 * Thread rule: as the builder's (one thread).
 */
#pragma once
#include <stddef.h>

#include "constrain/grammar.h"

/* The rule for re[0..n), or -1 with the builder failed (hearth_cx_builder_status). */
int hearth_cx_regex(hearth_cx_builder *b, const char *re, size_t n);
