/*
 * structured.h - structured outputs: the grammars that force a reply's shape (a tool call when
 * tool_choice requires one, JSON for response_format / text.format), compiled from the
 * request's JSON Schemas by src/constrain/, and the model's vocabulary the engine matches
 * tokens against.
 *
 *   forced tool call   the model family's own markup (toolcall.h) around {"name": one of the
 *                      offered tools, "arguments": that tool's parameters}:
 *                      hermes   <tool_call>\n{"name": .., "arguments": {..}}\n</tool_call>
 *                      llama3   {"name": .., "parameters": {..}}
 *                      mistral  [TOOL_CALLS][{"name": .., "arguments": {..}}]
 *                      gemma    ```tool_code\nname(k=v, ...)\n```
 *                      "required" allows several calls in a row, a named function one call.
 *   response_format    {"type": "json_object"}: any JSON object; {"type": "json_schema",
 *                      "json_schema": {"schema": ..}} (chat) or {"type": "json_schema",
 *                      "schema": ..} (Responses' text.format): JSON valid for the schema;
 *                      {"type": "text"}: no constraint.
 *
 * A schema the compiler refuses (too deep, too big, recursive, ...) is a 400 naming the field.
 *
 * Thread rule: any thread; the vocabulary is built once, on first use, under a lock.
 */
#pragma once
#include <cjson/cJSON.h>

#include "constrain/grammar.h"
#include "constrain/matcher.h"
#include "server/server_internal.h"
#include "server/toolcall.h"

/* A forced tool call in format f over tools (an array of {"type": "function", "function":
 * {"name", "parameters"}}, checked by the caller): of the function named only (NULL: any of
 * them); one call, or with several one or more. On failure e (400 with param "tools", or 503). */
bool hearth_structured_tools(hearth_tc_format f, const cJSON *tools, const char *only, bool several,
                             const char *prefix, hearth_cx_grammar **out, hearth_api_err *e);
/* A response format object (rf; param names it in errors). *out NULL for "text". */
bool hearth_structured_format(const cJSON *rf, const char *param, const char *prefix, hearth_cx_grammar **out,
                              hearth_api_err *e);
/* The output constraint a chat or completion request asks for, by any of its spellings:
 * response_format (above), guided_json / json_schema (a JSON Schema, vLLM's and
 * llama-server's), guided_choice (a list of strings: the output is one of them), guided_regex
 * (regex.h's subset), guided_grammar / grammar (GBNF, gbnf.h), structured_outputs (vLLM's
 * object: one of json, json_object, regex, choice, grammar). At most one may be given (two:
 * a 400 naming the second). *out NULL when there is none; a field the compilers refuse is a
 * 400 naming it, with the compiler's message (positions included). */
bool hearth_structured_request(const cJSON *root, const char *prefix, hearth_cx_grammar **out, hearth_api_err *e);
/* The first field of root that asks for a constraint (NULL: none). */
const char *hearth_structured_requested(const cJSON *root);
/* What a forced shape must start with (the prefix argument above; NULL: nothing): the text
 * that closes a reasoning block the prompt left open (hearth_rs_format rs; open: the prompt
 * ends inside it), so that the call or the JSON is content, not reasoning. */
const char *hearth_structured_prefix(int rs, bool open);
/* A matcher of g (taken over) on the served model's vocabulary; NULL on OOM. */
hearth_cx_matcher *hearth_structured_matcher(hearth_server *s, hearth_cx_grammar *g);
