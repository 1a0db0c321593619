/* test_server_errors.c - the server's one error path (server/errors.h): the hearth_status ->
 * HTTP table, each dialect's error body (OpenAI, Anthropic, a failed Responses object's
 * member), the parameter name, the out-of-memory fallback, and every status having a name. */
#include "server/errors.h"
#include "test.h"

#include <cJSON.h>
#include <string.h>

/* The body e writes in one shape, as a string the caller frees with the writer. */
static const char *body(hearth_jw *w, const hearth_api_err *e, int shape) {
    hearth_jw_reset(w);
    if (shape == 0) hearth_api_err_json(w, e);
    else if (shape == 1) hearth_api_err_json_anthropic(w, e);
    else hearth_api_err_json_response(w, e);
    return w->b.oom ? "" : w->b.p;
}

TEST(status_to_http) {
    static const struct {
        hearth_status st;
        int           http;
    } want[] = {
        {HEARTH_E_INVALID, 400},     {HEARTH_E_FORMAT, 400},       {HEARTH_E_LIMIT, 400},
        {HEARTH_E_UNSUPPORTED, 400}, {HEARTH_E_AMBIGUOUS, 400},    {HEARTH_E_DENIED, 401},
        {HEARTH_E_NOTFOUND, 404},    {HEARTH_E_NOT_ALLOWED, 405},  {HEARTH_E_TOO_LARGE, 413},
        {HEARTH_E_MEDIA_TYPE, 415},  {HEARTH_E_BUSY, 429},         {HEARTH_E_IO, 500},
        {HEARTH_E_DEVICE, 500},      {HEARTH_E_NOT_IMPLEMENTED, 501}, {HEARTH_E_CANCELLED, 503},
        {HEARTH_E_NOMEM, 503},       {HEARTH_E_TIMEOUT, 503},     {HEARTH_E_FORBIDDEN, 403},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        CHECK_EQ(hearth_api_http_status(want[i].st), want[i].http);
        hearth_api_err e;
        CHECK(!hearth_api_fail(&e, want[i].st, NULL, NULL, "x"));
        CHECK_EQ(hearth_api_err_http(&e), want[i].http);
    }
    /* a status the table does not know is the server's fault */
    CHECK_EQ(hearth_api_http_status((hearth_status)-9999), 500);
    CHECK_EQ(hearth_api_http_status(HEARTH_OK), 500);
}

TEST(every_status_has_a_name) {
    /* codes are dense from -1 down: a new one without a name (or a table row) shows here */
    int n = 0;
    for (int c = -1; c > -100; c--) {
        const char *s = hearth_status_str((hearth_status)c);
        if (!strcmp(s, "unknown error")) break;
        n++;
        for (int d = -1; d > c; d--) CHECK(strcmp(s, hearth_status_str((hearth_status)d)) != 0);
    }
    CHECK_EQ(n, 18);
    CHECK_STR(hearth_status_str(HEARTH_E_TIMEOUT), "timed out");
    CHECK_STR(hearth_status_str(HEARTH_E_BUSY), "busy");
}

TEST(openai_shape_and_param) {
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_api_err e;
    hearth_api_fail(&e, HEARTH_E_INVALID, "invalid_type", "max_tokens", "'%s' must be an integer", "max_tokens");
    CHECK_STR(body(&w, &e, 0), "{\"error\":{\"message\":\"'max_tokens' must be an integer\",\"type\":"
                               "\"invalid_request_error\",\"param\":\"max_tokens\",\"code\":\"invalid_type\"}}");
    /* no parameter and no code: both null; a 5xx is a server_error */
    hearth_api_err_from_status(&e, HEARTH_E_IO, NULL, "disk on fire");
    CHECK_EQ(hearth_api_err_http(&e), 500);
    CHECK_STR(body(&w, &e, 0),
              "{\"error\":{\"message\":\"disk on fire\",\"type\":\"server_error\",\"param\":null,\"code\":null}}");
    /* from_status: the table's code, and the status's name when the layer gave no message */
    hearth_api_err_from_status(&e, HEARTH_E_NOMEM, "messages", "");
    CHECK_STR(body(&w, &e, 0), "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\","
                               "\"param\":\"messages\",\"code\":\"out_of_memory\"}}");
    hearth_api_oom(&e);
    CHECK_EQ(hearth_api_err_http(&e), 503);
    CHECK_STR(body(&w, &e, 0), "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\","
                               "\"param\":null,\"code\":\"out_of_memory\"}}");
    /* a type set by the handler wins over the one the status gives */
    hearth_api_fail(&e, HEARTH_E_LIMIT, "context_over_budget", "max_tokens", "too big");
    e.type = "memory_admission";
    CHECK_EQ(hearth_api_err_http(&e), 400);
    CHECK_STR(body(&w, &e, 0), "{\"error\":{\"message\":\"too big\",\"type\":\"memory_admission\","
                               "\"param\":\"max_tokens\",\"code\":\"context_over_budget\"}}");
    /* a long parameter name is cut to the field, never overflows; the body stays valid JSON */
    char longp[200];
    memset(longp, 'p', sizeof longp - 1);
    longp[sizeof longp - 1] = 0;
    hearth_api_fail(&e, HEARTH_E_INVALID, NULL, longp, "m \"quoted\"");
    CHECK_EQ(strlen(e.param), sizeof e.param - 1);
    cJSON *j = cJSON_Parse(body(&w, &e, 0));
    CHECK(j != NULL);
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(j, "error");
    CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(err, "param")));
    CHECK_STR(cJSON_GetObjectItemCaseSensitive(err, "message")->valuestring, "m \"quoted\"");
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(err, "code")));
    cJSON_Delete(j);
    hearth_jw_fini(&w);
}

TEST(anthropic_shape) {
    static const struct {
        hearth_status st;
        const char   *type;
    } want[] = {
        {HEARTH_E_INVALID, "invalid_request_error"}, {HEARTH_E_UNSUPPORTED, "invalid_request_error"},
        {HEARTH_E_DENIED, "authentication_error"},   {HEARTH_E_NOTFOUND, "not_found_error"},
        {HEARTH_E_NOT_ALLOWED, "invalid_request_error"}, {HEARTH_E_TOO_LARGE, "request_too_large"},
        {HEARTH_E_BUSY, "rate_limit_error"},         {HEARTH_E_NOMEM, "overloaded_error"},
        {HEARTH_E_CANCELLED, "overloaded_error"},    {HEARTH_E_IO, "api_error"},
        {HEARTH_E_NOT_IMPLEMENTED, "api_error"},     {HEARTH_E_FORBIDDEN, "permission_error"},
    };
    hearth_jw w;
    hearth_jw_init(&w);
    char expect[256];
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        hearth_api_err e;
        hearth_api_fail(&e, want[i].st, "some_code", "messages", "why %d", (int)i);
        snprintf(expect, sizeof expect, "{\"type\":\"error\",\"error\":{\"type\":\"%s\",\"message\":\"why %d\"}}",
                 want[i].type, (int)i);
        CHECK_STR(body(&w, &e, 1), expect);
    }
    CHECK(hearth_api_path_anthropic("/v1/messages"));
    CHECK(hearth_api_path_anthropic("/v1/messages/count_tokens"));
    CHECK(!hearth_api_path_anthropic("/v1/messagesx"));
    CHECK(!hearth_api_path_anthropic("/v1/chat/completions"));
    CHECK(!hearth_api_path_anthropic(NULL));
    hearth_jw_fini(&w);
}

TEST(responses_member_shape) {
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_api_err e;
    hearth_api_fail(&e, HEARTH_E_CANCELLED, "cancelled", NULL, "the generation was cancelled");
    CHECK_STR(body(&w, &e, 2), "{\"code\":\"cancelled\",\"message\":\"the generation was cancelled\"}");
    hearth_api_fail(&e, HEARTH_E_DEVICE, NULL, NULL, "gpu fell off");
    CHECK_STR(body(&w, &e, 2), "{\"code\":\"server_error\",\"message\":\"gpu fell off\"}");
    hearth_jw_fini(&w);
}

TEST(fallback_body) {
    const char *b = NULL;
    size_t n = 0;
    CHECK_EQ(hearth_api_fallback(&b, &n), 500);
    CHECK(b != NULL && n == strlen(b));
    cJSON *j = cJSON_ParseWithLength(b, n);
    CHECK(j != NULL);
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(j, "error");
    CHECK_STR(cJSON_GetObjectItemCaseSensitive(err, "type")->valuestring, "server_error");
    cJSON_Delete(j);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
