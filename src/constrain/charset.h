/*
 * charset.h - sets of Unicode code points as grammar rules: the character classes of the
 * regex and GBNF compilers (regex.h, gbnf.h).
 *
 * A set is a list of code point ranges. Compiled, it is one rule matching exactly one UTF-8
 * encoded character of the set: the ranges are cut where the encoding's length or a
 * continuation byte's span changes, so that every piece is a sequence of byte ranges (one
 * alternative of the rule). Surrogates (U+D800..U+DFFF) are never matched: they are not
 * characters, and the model's output is valid UTF-8.
 *
 * Thread rule: a set belongs to one thread.
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "constrain/grammar.h"

#define HEARTH_CX_CP_MAX 0x10FFFFu

typedef struct {
    uint32_t (*r)[2]; /* owned [n] inclusive ranges, in any order, may overlap */
    int32_t    n;
    size_t     cap;
} hearth_cx_cpset;

void hearth_cx_cpset_free(hearth_cx_cpset *s);
/* Add lo..hi (lo <= hi <= HEARTH_CX_CP_MAX). False on OOM. */
bool hearth_cx_cpset_add(hearth_cx_cpset *s, uint32_t lo, uint32_t hi);
/* Replace s by its complement over all characters. False on OOM. */
bool hearth_cx_cpset_negate(hearth_cx_cpset *s);
/* One character of s, as a new rule (id, or -1 with the builder failed). An empty set is
 * refused (HEARTH_E_INVALID): it would match nothing. */
int  hearth_cx_rule_cpset(hearth_cx_builder *b, const hearth_cx_cpset *s);

