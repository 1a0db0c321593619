/*
 * errors.h - API errors: one error value that every handler fills, one table from its
 * hearth_status to the HTTP status, and each dialect's error body.
 *
 * A handler never names an HTTP status: where it finds the problem it fills a hearth_api_err
 * with what went wrong (a hearth_status: HEARTH_E_INVALID for a bad field, HEARTH_E_NOTFOUND,
 * HEARTH_E_BUSY, ...), the request field it concerns, where OpenAI has one a code such as
 * "context_length_exceeded", and a message; the HTTP layer writes it. errors.c alone turns the
 * status into the HTTP status (hearth_api_http_status) and the body into a dialect's shape:
 *
 *   OpenAI (chat, completions, responses, models, the store's routes):
 *     {"error":{"message":"...","type":"invalid_request_error","param":"messages","code":null}}
 *   Anthropic (paths under /v1/messages, hearth_api_path_anthropic):
 *     {"type":"error","error":{"type":"invalid_request_error","message":"..."}}
 *   Responses, a failed response object's "error" member (responses_out.c writes the rest):
 *     {"code":"server_error","message":"..."}
 *
 * Streams carry the same bodies in their error events (openai_out.c, anthropic_out.c). Plain
 * data; any thread.
 */
#pragma once
#include "base/status.h"
#include "server/json_out.h"

typedef struct {
    hearth_status st;        /* what went wrong: the HTTP status follows from it; HEARTH_OK = none */
    const char   *type;      /* static or NULL: OpenAI's "type"; NULL follows from the HTTP status
                              * (4xx invalid_request_error, 5xx server_error) */
    const char   *code;      /* static or NULL */
    char          param[64]; /* the request field concerned, "" = null */
    char          msg[320];
} hearth_api_err;

/* Fill e: st (an error, not HEARTH_OK) says what went wrong; param and code may be NULL.
 * Returns false, so a validator can write `return hearth_api_fail(...)`. */
bool hearth_api_fail(hearth_api_err *e, hearth_status st, const char *code, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Fill e from a status of a lower layer, with the table's code for it; msg is the layer's
 * message (NULL or "": the status's name). Returns false. */
bool hearth_api_err_from_status(hearth_api_err *e, hearth_status st, const char *param, const char *msg);
/* Out of memory while answering: fill e (503, code "out_of_memory"). Returns false. */
bool hearth_api_oom(hearth_api_err *e);
/* The HTTP status of a hearth_status, per the table (500 for one it does not list). */
int  hearth_api_http_status(hearth_status st);
/* The HTTP status e is answered with. */
int  hearth_api_err_http(const hearth_api_err *e);
/* Write the error body as one JSON value: OpenAI's shape / Anthropic's / the Responses API's
 * "error" member of a failed response. */
void hearth_api_err_json(hearth_jw *w, const hearth_api_err *e);
void hearth_api_err_json_anthropic(hearth_jw *w, const hearth_api_err *e);
void hearth_api_err_json_response(hearth_jw *w, const hearth_api_err *e);
/* Is path part of the Anthropic API, whose errors take Anthropic's shape? */
bool hearth_api_path_anthropic(const char *path);
/* The answer when even a response body could not be written (out of memory): the HTTP status,
 * and a fixed OpenAI-shaped body in *body (static, *n bytes). */
int  hearth_api_fallback(const char **body, size_t *n);
/* The reason phrase of an HTTP status ("Bad Request"), for messages. */
const char *hearth_http_reason(int http);
