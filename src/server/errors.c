/*
 * errors.c - the status -> HTTP -> OpenAI error table and the error bodies (see errors.h).
 *
 * Types follow what api.openai.com returns: every client error is "invalid_request_error"
 * (401 too, with code "invalid_api_key"), server faults are "server_error". The table is the
 * only place in the server where an error's HTTP status is chosen; a status it does not list
 * is a server fault (500).
 */
#include "server/errors.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct {
    hearth_status st;
    int           http;
    const char   *code; /* for hearth_api_err_from_status */
} table[] = {
    {HEARTH_E_INVALID, 400, NULL},
    {HEARTH_E_FORMAT, 400, NULL},
    {HEARTH_E_LIMIT, 400, NULL},
    {HEARTH_E_UNSUPPORTED, 400, "unsupported"},
    {HEARTH_E_AMBIGUOUS, 400, NULL},
    {HEARTH_E_DENIED, 401, "invalid_api_key"},
    {HEARTH_E_FORBIDDEN, 403, "forbidden"},
    {HEARTH_E_NOTFOUND, 404, "not_found"},
    {HEARTH_E_NOT_ALLOWED, 405, "method_not_allowed"},
    {HEARTH_E_TOO_LARGE, 413, "request_too_large"},
    {HEARTH_E_MEDIA_TYPE, 415, "unsupported_media_type"},
    {HEARTH_E_BUSY, 429, "busy"},
    {HEARTH_E_IO, 500, NULL},
    {HEARTH_E_DEVICE, 500, NULL},
    {HEARTH_E_NOT_IMPLEMENTED, 501, "not_implemented"},
    {HEARTH_E_CANCELLED, 503, "cancelled"},
    {HEARTH_E_NOMEM, 503, "out_of_memory"},
    {HEARTH_E_TIMEOUT, 503, "timeout"},
};

int hearth_api_http_status(hearth_status st) {
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].st == st) return table[i].http;
    return 500;
}

int hearth_api_err_http(const hearth_api_err *e) { return hearth_api_http_status(e->st); }

static const char *type_of(int http) { return http >= 500 ? "server_error" : "invalid_request_error"; }

bool hearth_api_fail(hearth_api_err *e, hearth_status st, const char *code, const char *param, const char *fmt, ...) {
    e->st = st;
    e->type = NULL;
    e->code = code;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return false;
}

bool hearth_api_err_from_status(hearth_api_err *e, hearth_status st, const char *param, const char *msg) {
    const char *code = NULL;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].st == st) code = table[i].code;
    return hearth_api_fail(e, st, code, param, "%s", msg && *msg ? msg : hearth_status_str(st));
}

bool hearth_api_oom(hearth_api_err *e) {
    return hearth_api_fail(e, HEARTH_E_NOMEM, "out_of_memory", NULL, "out of memory");
}

void hearth_api_err_json(hearth_jw *w, const hearth_api_err *e) {
    hearth_jw_obj(w);
    hearth_jw_key(w, "error");
    hearth_jw_obj(w);
    hearth_jw_key(w, "message");
    hearth_jw_cstr(w, e->msg);
    hearth_jw_key(w, "type");
    hearth_jw_cstr(w, e->type ? e->type : type_of(hearth_api_err_http(e)));
    hearth_jw_key(w, "param");
    hearth_jw_cstr(w, e->param[0] ? e->param : NULL);
    hearth_jw_key(w, "code");
    hearth_jw_cstr(w, e->code);
    hearth_jw_obj_end(w);
    hearth_jw_obj_end(w);
}

/* Anthropic's error types by HTTP status (its API reference, "Errors"). */
static const char *anthropic_type(int http) {
    switch (http) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503:
    case 529: return "overloaded_error";
    default: return http >= 500 ? "api_error" : "invalid_request_error";
    }
}

void hearth_api_err_json_anthropic(hearth_jw *w, const hearth_api_err *e) {
    hearth_jw_obj(w);
    hearth_jw_key(w, "type");
    hearth_jw_cstr(w, "error");
    hearth_jw_key(w, "error");
    hearth_jw_obj(w);
    hearth_jw_key(w, "type");
    hearth_jw_cstr(w, anthropic_type(hearth_api_err_http(e)));
    hearth_jw_key(w, "message");
    hearth_jw_cstr(w, e->msg);
    hearth_jw_obj_end(w);
    hearth_jw_obj_end(w);
}

void hearth_api_err_json_response(hearth_jw *w, const hearth_api_err *e) {
    hearth_jw_obj(w);
    hearth_jw_key(w, "code");
    hearth_jw_cstr(w, e->code ? e->code : "server_error");
    hearth_jw_key(w, "message");
    hearth_jw_cstr(w, e->msg);
    hearth_jw_obj_end(w);
}

bool hearth_api_path_anthropic(const char *path) {
    static const char p[] = "/v1/messages";
    return path && !strncmp(path, p, sizeof p - 1) && (!path[sizeof p - 1] || path[sizeof p - 1] == '/');
}

int hearth_api_fallback(const char **body, size_t *n) {
    static const char oom[] = "{\"error\":{\"message\":\"out of memory writing the response\","
                              "\"type\":\"server_error\",\"param\":null,\"code\":null}}";
    *body = oom;
    *n = sizeof oom - 1;
    return 500;
}

const char *hearth_http_reason(int http) {
    switch (http) {
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Error";
    }
}
