/*
 * grammar_internal.h - the flattened grammar that grammar.c builds and matcher.c runs.
 *
 * syms holds every alternative of every rule back to back, each ended by an END symbol:
 *
 *   rule r: alt_start[rule_alt0[r] + k] -> [SET|REF ...] END     (k < rule_n_alt[r])
 *
 * A position is an index into syms. A matcher stack holds positions: the top is the item to
 * match next, the ones below are where referencing rules continue.
 */
#pragma once
#include "constrain/grammar.h"

enum { CX_SET = 0, CX_REF = 1, CX_END = 2 };

typedef struct {
    uint32_t kind : 2;
    uint32_t arg : 30; /* SET: index into sets; REF: rule */
} cx_sym;

struct hearth_cx_grammar {
    cx_sym  *syms;       /* owned [n_syms] */
    int32_t  n_syms;
    int32_t *alt_start;  /* owned [n_alts] */
    int32_t *rule_alt0;  /* owned [n_rules] */
    int32_t *rule_n_alt; /* owned [n_rules] */
    int32_t  n_rules, n_alts;
    uint8_t (*sets)[32]; /* owned [n_sets] bitmaps: bit b of byte b/8 */
    int32_t  n_sets;
    int32_t  root;
    int32_t  max_stack;  /* the deepest stack any path can need */
};

static inline bool cx_set_has(const uint8_t *set, uint8_t c) { return (set[c >> 3] >> (c & 7)) & 1; }
