/*
 * anthropic.h - the Anthropic Messages dialect: POST /v1/messages and
 * /v1/messages/count_tokens, as the official SDKs and Claude Code call them.
 *
 * A request is mapped onto an OpenAI chat body (chatmap.h) and goes through the same chat
 * template, engine and stop matching as /v1/chat/completions (generate.h); only the shapes
 * differ: content blocks, stop_reason, usage with cache_read_input_tokens, the named SSE
 * events, and errors as {"type":"error","error":{...}} (errors.h picks that shape by path).
 * Any `anthropic-version` header is accepted; `x-api-key` is checked like a Bearer key.
 *
 * Thread rule: handlers run on the connection's thread.
 */
#pragma once
#include "server/generate.h"
#include "server/server_internal.h"

void hearth_anthropic_messages(hearth_http_req *r);
void hearth_anthropic_count_tokens(hearth_http_req *r);

/* The writer of Anthropic's message shapes (anthropic_out.c); its per-request context is a
 * hearth_anthropic_out. */
typedef struct {
    int  n_blocks;    /* content blocks started so far */
    char open;        /* the block still open: 0 none, 't' text, 'r' thinking, 'c' tool_use */
} hearth_anthropic_out;
extern const hearth_gen_dialect hearth_anthropic_writer;
