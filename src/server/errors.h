/*
 * errors.h - API errors: one table from hearth_status to the HTTP status and the OpenAI error
 * type, and the error body every dialect endpoint answers with:
 *
 *   {"error":{"message":"...","type":"invalid_request_error","param":"messages","code":null}}
 *
 * and, for the Anthropic Messages API (paths under /v1/messages), Anthropic's shape:
 *
 *   {"type":"error","error":{"type":"invalid_request_error","message":"..."}}
 *
 * A request handler fills a hearth_api_err where it finds the problem (with the parameter it
 * concerns and, where OpenAI has one, a code such as "context_length_exceeded") and the HTTP
 * layer writes it. Plain data; any thread.
 */
#pragma once
#include "base/status.h"
#include "server/json_out.h"

typedef struct {
    int         http;      /* HTTP status, 4xx or 5xx; 0 = no error */
    const char *type;      /* static: "invalid_request_error", "server_error", ... */
    const char *code;      /* static or NULL */
    char        param[64]; /* the request field concerned, "" = null */
    char        msg[320];
} hearth_api_err;

/* Fill e with an explicit HTTP status; the type follows from it (4xx invalid_request_error,
 * 5xx server_error). param and code may be NULL. Returns false, so a validator can write
 * `return api_fail(...)`. */
bool hearth_api_err_set(hearth_api_err *e, int http, const char *code, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Fill e from a status of a lower layer through the table; msg is the layer's message. */
bool hearth_api_err_from_status(hearth_api_err *e, hearth_status st, const char *param, const char *msg);
/* The HTTP status of a hearth_status, per the table. */
int  hearth_api_http_status(hearth_status st);
/* Write the error body as one JSON value: OpenAI's shape / Anthropic's. */
void hearth_api_err_json(hearth_jw *w, const hearth_api_err *e);
void hearth_api_err_json_anthropic(hearth_jw *w, const hearth_api_err *e);
/* Is path part of the Anthropic API, whose errors take Anthropic's shape? */
bool hearth_api_path_anthropic(const char *path);
/* The reason phrase of an HTTP status ("Bad Request"), for messages. */
const char *hearth_http_reason(int http);
