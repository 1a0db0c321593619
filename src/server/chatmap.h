/*
 * chatmap.h - building an OpenAI chat body from another dialect's request.
 *
 * The Anthropic Messages and Responses parsers do not render templates themselves: they map
 * their request onto the body that chat.c already turns into prompt tokens,
 *
 *   {"messages": [{"role", "content", "tool_calls"?, "tool_call_id"?}...],
 *    "tools": [{"type": "function", "function": {"name", "description", "parameters"}}]?,
 *    "chat_template_kwargs": {...}?}
 *
 * so every dialect gets the same template context, normalization and tokenization. Tool calls
 * carry their arguments as a JSON object (what chat templates iterate over), tool results are
 * `tool` messages with the call's id. Tool schemas and arguments are copied as the client
 * wrote them (cJSON raw items holding the request's text, jraw.h), so a template's `tojson`
 * prints 1.0 as 1.0, as transformers does with the same JSON.
 *
 * Functions return false with e filled (503 out of memory, or 400 naming param).
 * Thread rule: pure functions over caller-owned trees; any thread.
 */
#pragma once
#include <cjson/cJSON.h>

#include "base/span.h"
#include "server/errors.h"
#include "server/media.h"

/* A new empty body {"messages": []}; NULL when out of memory. */
cJSON *hearth_chatmap_new(void);
/* Append {"role": role, "content": text} to body.messages; NULL (e filled) on OOM. */
cJSON *hearth_chatmap_msg(cJSON *body, const char *role, const char *text, hearth_api_err *e);
/* Add a call to msg.tool_calls: {"id", "type": "function", "function": {"name", "arguments"}}.
 * args: an object or a string holding one (400 when it is not a JSON object). Its text goes
 * into the body verbatim (a raw item) - the string's, or raw_args, the object's text in the
 * request (empty: unknown, the object is copied) - so numbers keep their spelling. */
bool   hearth_chatmap_tool_call(cJSON *msg, const char *id, const char *name, const cJSON *args, hearth_span raw_args,
                                const char *param, hearth_api_err *e);
/* Append a function tool to body.tools (parameters may be NULL: an empty object schema);
 * raw_params: the parameters' text in the request, kept verbatim (empty: copied). */
bool   hearth_chatmap_tool(cJSON *body, const char *name, const char *description, const cJSON *parameters,
                           hearth_span raw_params, hearth_api_err *e);
/* The text of child c of container v, whose text is rv (both from the same bytes, so members
 * come in the same order); empty when rv is, or c is not v's. For one child: loops over many
 * children walk hearth_jraw_iter alongside. */
hearth_span hearth_chatmap_raw_child(hearth_span rv, const cJSON *v, const cJSON *c);
/* Set body.chat_template_kwargs[key] = value (taken over). */
bool   hearth_chatmap_kwarg(cJSON *body, const char *key, cJSON *value, hearth_api_err *e);

/* The text of content: a string, or an array of parts whose "type" is one of text_types
 * (NULL-terminated) with a string "text", joined by newlines. A part of another type is a
 * 400 ("not supported yet"); *out is malloc'ed (caller frees). */
bool   hearth_chatmap_text(const cJSON *content, const char *const *text_types, const char *param, char **out,
                           hearth_api_err *e);
/* hearth_chatmap_text that also takes media parts (media.h) when media is non-NULL: each is
 * parsed into media as part "param.content[k]" of message i_msg (inline payloads capped at
 * max_media bytes) and leaves no text. */
bool   hearth_chatmap_content(const cJSON *content, const char *const *text_types, const char *param, int i_msg,
                              size_t max_media, hearth_media_list *media, char **out, hearth_api_err *e);
