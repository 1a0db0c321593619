/*
 * chat_plain.h - `--no-special-in-content`: user and tool text whose special-token text stays
 * plain text in the prompt.
 *
 * By default the rendered prompt is tokenized as a whole with special tokens parsed, as
 * transformers' apply_chat_template(tokenize=True) does: a user who types "<|im_end|>" gets
 * the control token, and can end their turn and start a forged one. With the flag, the text of
 * user and tool messages is wrapped in marks before the template runs (each mark a private-use
 * character, a per-request nonce and another private-use character, so no request can spell
 * one), the marks are found and cut out of the rendered prompt, and the byte ranges they
 * enclosed are tokenized with special tokens as plain text (hearth_tok_encode_plain).
 * Whitespace at either end of a message stays outside its marks, so a template's `| trim`
 * still trims it. A template that cuts or reorders the marks (nests them, drops one of a
 * pair) gets a 400 rather than a prompt with unprotected text; a template that drops a
 * message's text altogether drops its marks with it.
 *
 * Thread rule: pure functions over the caller's data; any thread.
 */
#pragma once
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "server/errors.h"

typedef struct {
    char   open[48], close[48];
    size_t n_open, n_close;
} hearth_plain_marks;

/* Marks around nonce (any text without a private-use character, up to 32 bytes). */
void hearth_plain_marks_init(hearth_plain_marks *m, const char *nonce);
/* Wrap the string content of every user and tool message of ctx ({"messages": [...]}) in the
 * marks. false (e filled: out of memory) on failure. */
bool hearth_plain_mark(const hearth_plain_marks *m, cJSON *ctx, hearth_api_err *e);
/* Cut the marks out of text[0..*n) in place (NUL-terminated after); *ranges (malloc'ed, caller
 * frees; NULL when none) gets *n_ranges pairs [start, end) of the marked text in the result.
 * false (e filled, 400) when the marks are not in well-formed pairs. */
bool hearth_plain_strip(const hearth_plain_marks *m, char *text, size_t *n, size_t **ranges, size_t *n_ranges,
                        hearth_api_err *e);
/* Drop the parts of ranges past n (the prompt was cut there). */
void hearth_plain_clip(size_t *ranges, size_t *n_ranges, size_t n);
