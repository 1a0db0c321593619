/*
 * reasoning.h - split a streamed reply into reasoning ("reasoning_content") and content, at the
 * family's markers:
 *
 *   THINK    <think> ... </think>                    Qwen3, QwQ, DeepSeek-R1, SmolLM3, MiniCPM
 *   HARMONY  <|channel|>analysis<|message|> ... <|end|>, then
 *            <|start|>assistant<|channel|>final<|message|> ...   gpt-oss (markers dropped)
 *   GEMMA4   <|channel>thought ... <channel|>             Gemma 4
 *
 * Text is fed in pieces split anywhere; a tail that may still become a marker is held back
 * (marks.h). Whitespace right after an opening or closing marker, and right before a closing
 * one, is dropped (the templates put newlines there). When the rendered prompt already ends inside an open block (DeepSeek-R1's
 * and Qwen3's templates can end with "<think>\n"), the splitter starts in reasoning:
 * hearth_rs_prompt_open says so. A closing marker met in content is dropped.
 *
 * Thread rule: one splitter per reply, one thread at a time.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "base/span.h"
#include "base/status.h"

typedef enum {
    HEARTH_RS_NONE = 0, /* no reasoning markup: everything is content */
    HEARTH_RS_THINK,
    HEARTH_RS_HARMONY,
    HEARTH_RS_GEMMA4,
    HEARTH_RS_COUNT
} hearth_rs_format;

/* The format a chat template's replies use (from its markers; NULL: none). */
hearth_rs_format hearth_rs_detect(const char *chat_template);
/* Does the rendered prompt text[0..n) end inside an open reasoning block? */
bool             hearth_rs_prompt_open(hearth_rs_format f, const char *text, size_t n);
/* Is text[0..n) a control token's text that is part of this format's markers (feed it in)? */
bool             hearth_rs_is_marker(hearth_rs_format f, const char *text, size_t n);

typedef struct {
    hearth_span content;   /* final content from this call (valid until the next call) */
    hearth_span reasoning; /* final reasoning from this call */
} hearth_rs_out;

typedef struct hearth_rs hearth_rs;

/* A splitter; in_reasoning: the reply starts inside a reasoning block. NULL on OOM. */
hearth_rs    *hearth_rs_create(hearth_rs_format f, bool in_reasoning);
void          hearth_rs_destroy(hearth_rs *s); /* accepts NULL */
/* Feed text[0..n). HEARTH_E_NOMEM leaves the splitter unusable. */
hearth_status hearth_rs_push(hearth_rs *s, const char *text, size_t n, hearth_rs_out *out);
/* The reply ended: release what is held (an unfinished marker is plain text). */
hearth_status hearth_rs_finish(hearth_rs *s, hearth_rs_out *out);
/* Is the splitter inside a reasoning block now? */
bool          hearth_rs_in_reasoning(const hearth_rs *s);
