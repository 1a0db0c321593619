/*
 * errors.c - the status -> HTTP -> OpenAI error table and the error body (see errors.h).
 *
 * Types follow what api.openai.com returns: every client error is "invalid_request_error"
 * (401 too, with code "invalid_api_key"), server faults are "server_error".
 */
#include "server/errors.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct {
    hearth_status st;
    int           http;
    const char   *code;
} table[] = {
    {HEARTH_E_INVALID, 400, NULL},
    {HEARTH_E_FORMAT, 400, NULL},
    {HEARTH_E_LIMIT, 400, NULL},
    {HEARTH_E_UNSUPPORTED, 400, "unsupported"},
    {HEARTH_E_AMBIGUOUS, 400, NULL},
    {HEARTH_E_NOTFOUND, 404, "not_found"},
    {HEARTH_E_CANCELLED, 503, "cancelled"},
    {HEARTH_E_NOMEM, 503, "out_of_memory"},
    {HEARTH_E_IO, 500, NULL},
    {HEARTH_E_DEVICE, 500, NULL},
};

int hearth_api_http_status(hearth_status st) {
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].st == st) return table[i].http;
    return 500;
}

static const char *type_of(int http) { return http >= 500 ? "server_error" : "invalid_request_error"; }

bool hearth_api_err_set(hearth_api_err *e, int http, const char *code, const char *param, const char *fmt, ...) {
    e->http = http;
    e->type = type_of(http);
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
    return hearth_api_err_set(e, hearth_api_http_status(st), code, param, "%s",
                              msg && *msg ? msg : hearth_status_str(st));
}

void hearth_api_err_json(hearth_jw *w, const hearth_api_err *e) {
    hearth_jw_obj(w);
    hearth_jw_key(w, "error");
    hearth_jw_obj(w);
    hearth_jw_key(w, "message");
    hearth_jw_cstr(w, e->msg);
    hearth_jw_key(w, "type");
    hearth_jw_cstr(w, e->type ? e->type : type_of(e->http));
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
    hearth_jw_cstr(w, anthropic_type(e->http));
    hearth_jw_key(w, "message");
    hearth_jw_cstr(w, e->msg);
    hearth_jw_obj_end(w);
    hearth_jw_obj_end(w);
}

bool hearth_api_path_anthropic(const char *path) {
    static const char p[] = "/v1/messages";
    return path && !strncmp(path, p, sizeof p - 1) && (!path[sizeof p - 1] || path[sizeof p - 1] == '/');
}

const char *hearth_http_reason(int http) {
    switch (http) {
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Payload Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Error";
    }
}
