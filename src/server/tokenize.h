/*
 * tokenize.h - the tokenizer endpoints clients of llama-server and vLLM call, and /props.
 *
 *   POST /tokenize        llama-server's {content, add_special, parse_special, with_pieces}
 *                         -> {tokens}; vLLM's {prompt | messages, add_special_tokens,
 *                         return_token_strs, ...} -> {count, max_model_len, tokens, token_strs}
 *                         (the body's key says which: "content", else "prompt" / "messages")
 *   POST /detokenize      {tokens} -> {content (llama-server's key), prompt (vLLM's)}
 *   POST /apply-template  a chat body -> {prompt}: the text chat would tokenize
 *   GET  /props           llama-server's server properties (model, context, template, build)
 *
 * Thread rule: handlers run on the connection's thread.
 */
#pragma once
#include "server/server_internal.h"

void hearth_tokenize(hearth_http_req *r);
void hearth_detokenize(hearth_http_req *r);
void hearth_apply_template(hearth_http_req *r);
void hearth_props(hearth_http_req *r);
