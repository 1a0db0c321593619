/*
 * reqjson.h - reading API request bodies: the checks every dialect applies before parsing
 * (non-empty, UTF-8, nesting depth, one JSON object and nothing after it) and typed optional
 * fields that answer a 400 naming the field when the type or range is wrong.
 *
 * JSON null reads as absent everywhere (OpenAI and Anthropic treat `"top_p": null` as unset).
 * Error messages are the API's own wording style: "'max_tokens' must be an integer".
 *
 * Thread rule: pure functions; any thread.
 */
#pragma once
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/server_internal.h"

#define HEARTH_REQ_MAX_DEPTH 64 /* nesting levels of a request body */

/* The body of r as a JSON object, or NULL with e filled (400 invalid_json / invalid_encoding).
 * The caller frees the tree with cJSON_Delete. */
cJSON *hearth_req_parse(hearth_http_req *r, hearth_api_err *e);

/* Member k of obj, NULL when absent or JSON null. */
const cJSON *hearth_req_field(const cJSON *obj, const char *k);

/* Optional typed fields: 1 read into *out, 0 absent, -1 wrong type or out of [lo, hi] (e
 * filled, param = k). */
int hearth_req_num(const cJSON *obj, const char *k, double lo, double hi, double *out, hearth_api_err *e);
int hearth_req_int(const cJSON *obj, const char *k, double lo, double hi, int64_t *out, hearth_api_err *e);
int hearth_req_bool(const cJSON *obj, const char *k, bool *out, hearth_api_err *e);
/* A string field: 1 with *out borrowed from obj, 0 absent, -1 not a string. */
int hearth_req_str(const cJSON *obj, const char *k, const char **out, hearth_api_err *e);

/* Fields that would change the output and that hearth does not honour: false with a 400
 * naming the first one present at other than its neutral value (typical_p 1, mirostat 0,
 * min_tokens 0, an empty stop_token_ids...). extras: also the sampling and decoding fields of
 * vLLM and llama-server (the OpenAI dialect, where clients send them); otherwise only those
 * that no dialect honours (lora, hlg). */
bool hearth_req_refuse_unhonoured(const cJSON *root, bool extras, hearth_api_err *e);
