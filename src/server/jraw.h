/*
 * jraw.h - JSON read in place: the byte span of a value, an object's members, an array's
 * elements, without building a tree.
 *
 * Why: a parsed tree (cJSON) keeps numbers as doubles, so 1.0 comes back as 1 and a 20-digit
 * id as 1e19. The chat-template context must carry a request's tool schemas and kwargs with
 * their numbers spelled as the client sent them (`tojson` prints them back, as Python keeps 1
 * and 1.0 apart), and a model's tool-call arguments are returned to the client as the model
 * wrote them. These helpers hand out spans of the original text to splice verbatim.
 *
 * The scanner checks structure (brackets, strings and escapes, literals, number characters)
 * and nests at most HEARTH_JRAW_MAX_DEPTH levels; it is not a full validator of number syntax:
 * callers that need that parse the span with cJSON too. Object keys are compared byte for byte
 * with their raw text, so a key written with escapes does not match its plain spelling.
 *
 * Thread rule: pure functions over caller-owned bytes; any thread.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "base/span.h"

#define HEARTH_JRAW_MAX_DEPTH 128

/* Bytes of the JSON value that starts at s[0..n) after optional whitespace (the whitespace
 * counted), or 0 when no complete value is there (truncated, malformed, too deep). A number
 * that runs to the end of the input counts as incomplete: streamed text may extend it. */
size_t hearth_jraw_skip(const char *s, size_t n);

/* s[0..n) without leading and trailing JSON whitespace. */
hearth_span hearth_jraw_trim(const char *s, size_t n);

/* An iterator over an object's members or an array's elements. */
typedef struct {
    const char *p, *end; /* borrowed: the unread rest of the container */
    bool        obj;     /* iterating an object */
    bool        err;     /* the container is malformed: iteration stopped */
} hearth_jraw_it;

/* Start iterating the container value v (leading whitespace allowed). False when v is not an
 * object or array. */
bool hearth_jraw_iter(hearth_span v, hearth_jraw_it *it);
/* The next member (key: the key's text inside its quotes, raw; NULL for arrays) and value
 * span (trimmed). False at the end or on malformed input (it->err). */
bool hearth_jraw_next(hearth_jraw_it *it, hearth_span *key, hearth_span *val);
/* The value of the first member of object obj whose raw key is key; false when absent. */
bool hearth_jraw_get(hearth_span obj, const char *key, hearth_span *val);
/* The value's kind: '{', '[', '"', 'n' (number), 't', 'f', 'N' (null), or 0 (empty). */
char hearth_jraw_kind(hearth_span v);
