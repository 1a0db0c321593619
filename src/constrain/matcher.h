/*
 * matcher.h - runs a grammar (grammar.h) over a model's output, byte by byte and token by
 * token: which tokens may come next, and advancing by the chosen one.
 *
 * The matcher is a pushdown automaton with a set of live stacks (a configuration set): the
 * grammar may be ambiguous (anyOf, optional properties, whitespace), so every path that still
 * fits the bytes so far is kept, deduplicated. Advancing by a byte moves each stack whose top
 * byte set holds it and expands rule references until every top is a byte set again (or the
 * stack is empty: the grammar is complete there, an accepting configuration).
 *
 * The vocabulary (hearth_cx_vocab) holds each token's bytes, sorted, with the length of the
 * prefix each shares with the one before; it is built once per model. Checking one token feeds
 * its bytes; masking the whole vocabulary walks the sorted list as a trie: the configuration
 * sets of a shared prefix are computed once, and every token under a prefix that died is
 * rejected without feeding it. End-of-generation tokens are allowed only where the grammar
 * is complete; tokens with no bytes (control tokens the caller left out) never are.
 *
 * Thread rule: a vocab is immutable after create (any thread); a matcher belongs to one
 * request, used by one thread at a time.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/span.h"
#include "base/status.h"
#include "constrain/grammar.h"

typedef struct hearth_cx_vocab hearth_cx_vocab;
typedef struct hearth_cx_matcher hearth_cx_matcher;

/* A vocabulary of n_vocab tokens: pieces[i] are token i's bytes (copied; empty: the token is
 * never allowed), eog[i] marks end-of-generation tokens (may be NULL). NULL on OOM. It is
 * reference-counted (the creator holds one; each matcher takes one), so it outlives every
 * matcher made from it. */
hearth_cx_vocab *hearth_cx_vocab_create(int32_t n_vocab, const hearth_span *pieces, const bool *eog);
hearth_cx_vocab *hearth_cx_vocab_ref(const hearth_cx_vocab *v); /* one more reference; returns v */
void             hearth_cx_vocab_destroy(hearth_cx_vocab *v); /* drops a reference; accepts NULL */
int32_t          hearth_cx_vocab_n(const hearth_cx_vocab *v);

/* A matcher at the start of grammar g (taken over: freed with the matcher, also on failure)
 * over vocab v (the matcher takes a reference; may be NULL for byte-only use). NULL on OOM. */
hearth_cx_matcher *hearth_cx_matcher_create(hearth_cx_grammar *g, const hearth_cx_vocab *v);
void               hearth_cx_matcher_destroy(hearth_cx_matcher *m); /* accepts NULL */

/* Bytes: would s[0..n) fit next? / advance by it (false, nothing changed, when it does not). */
bool hearth_cx_matcher_fits(hearth_cx_matcher *m, const char *s, size_t n);
bool hearth_cx_matcher_feed(hearth_cx_matcher *m, const char *s, size_t n);
/* The grammar is complete here (end of generation allowed). */
bool hearth_cx_matcher_can_end(const hearth_cx_matcher *m);
/* The grammar is complete and nothing may follow. */
bool hearth_cx_matcher_done(const hearth_cx_matcher *m);

/* Tokens (vocab required): is token t allowed next? / advance by it (an end-of-generation
 * token leaves the state as is; false when not allowed). */
bool hearth_cx_matcher_allows(hearth_cx_matcher *m, int32_t t);
bool hearth_cx_matcher_accept(hearth_cx_matcher *m, int32_t t);
/* allowed[t] = is token t allowed next, for every token; returns how many are. */
int32_t hearth_cx_matcher_allowed(hearth_cx_matcher *m, bool *allowed);
/* Set every disallowed token's logit to -INFINITY; returns how many tokens stay allowed. */
int32_t hearth_cx_matcher_mask(hearth_cx_matcher *m, float *logits);
/* Configurations dropped because a set overflowed its bound (0 for sane grammars; tests). */
int64_t hearth_cx_matcher_n_dropped(const hearth_cx_matcher *m);
