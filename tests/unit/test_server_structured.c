/*
 * test_server_structured.c - forced tool calls agree with the tool-call parser, for every
 * family's syntax: random walks through the grammar of hearth_structured_tools (bytes drawn
 * among those the matcher allows until it is complete) are fed to hearth_tc, which must find
 * exactly the calls the grammar allows (one, or several when asked), with arguments that
 * parse as a JSON object holding the required parameters with the right JSON types. Also the
 * 400s of bad response formats and schemas.
 */
#include "server/structured.h"
#include "cx_walk.h"
#include "test.h"

#include <cjson/cJSON.h>

static const char TOOLS[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": {\"type\": \"object\","
    " \"properties\": {\"city\": {\"type\": \"string\", \"maxLength\": 6}, \"days\": {\"type\": \"integer\"},"
    " \"unit\": {\"enum\": [\"c\", \"f\"]}, \"flag\": {\"type\": \"boolean\"}, \"note\": {\"type\": \"string\"}},"
    " \"required\": [\"city\", \"days\"]}}},"
    " {\"type\": \"function\", \"function\": {\"name\": \"noop\"}}]";

static void check_args(const char *name, const char *args) {
    cJSON *a = cJSON_Parse(args);
    CHECK(cJSON_IsObject(a));
    if (!strcmp(name, "get_weather")) {
        CHECK(cJSON_IsString(cJSON_GetObjectItem(a, "city")));
        CHECK(cJSON_IsNumber(cJSON_GetObjectItem(a, "days")));
        const cJSON *u = cJSON_GetObjectItem(a, "unit"), *f = cJSON_GetObjectItem(a, "flag");
        CHECK(!u || (cJSON_IsString(u) && (!strcmp(u->valuestring, "c") || !strcmp(u->valuestring, "f"))));
        CHECK(!f || cJSON_IsBool(f));
        for (const cJSON *k = a ? a->child : NULL; k; k = k->next)
            CHECK(!strcmp(k->string, "city") || !strcmp(k->string, "days") || !strcmp(k->string, "unit") ||
                  !strcmp(k->string, "flag") || !strcmp(k->string, "note"));
    }
    cJSON_Delete(a);
}

TEST(forced_calls_parse_in_every_format) {
    cJSON *tools = cJSON_Parse(TOOLS);
    for (int f = HEARTH_TC_HERMES; f < HEARTH_TC_COUNT; f++) {
        if (f == HEARTH_TC_HARMONY) { /* not forced yet: refused with a message naming tool_choice */
            hearth_cx_grammar *g = NULL;
            hearth_api_err e;
            CHECK(!hearth_structured_tools((hearth_tc_format)f, tools, NULL, false, NULL, &g, &e));
            CHECK(g == NULL);
            continue;
        }
        for (int mode = 0; mode < 3; mode++) { /* any one, several, the named one */
            const char *only = mode == 2 ? "get_weather" : NULL;
            int walks = 0;
            for (int rep = 0; rep < 60; rep++) {
                hearth_cx_grammar *g = NULL;
                hearth_api_err e;
                CHECK(hearth_structured_tools((hearth_tc_format)f, tools, only, mode == 1, NULL, &g, &e));
                hearth_cx_matcher *m = hearth_cx_matcher_create(g, NULL);
                char text[4096];
                size_t n = m ? cx_walk(m, text, sizeof text, "\"})]<`", 3) : 0;
                hearth_cx_matcher_destroy(m);
                if (!n) continue;
                walks++;
                hearth_tc *p = hearth_tc_create((hearth_tc_format)f, 1);
                hearth_tc_out o;
                /* in pieces of 1..7 bytes, as a stream decodes */
                size_t at = 0, content = 0;
                while (at < n) {
                    size_t k = 1 + cx_walk_rnd() % 7;
                    if (k > n - at) k = n - at;
                    hearth_tc_push(p, text + at, k, &o);
                    content += o.content.len;
                    at += k;
                }
                hearth_tc_finish(p, &o);
                content += o.content.len;
                int n_calls;
                const hearth_tool_call *calls = hearth_tc_calls(p, &n_calls);
                bool ok = n_calls >= 1 && (mode == 1 || n_calls == 1);
                for (int i = 0; i < n_calls; i++) {
                    ok = ok && (!strcmp(calls[i].name, "get_weather") || (!only && !strcmp(calls[i].name, "noop")));
                    check_args(calls[i].name, calls[i].arguments);
                }
                if (!ok || (mode != 1 && content)) {
                    fprintf(stderr, "  format %s mode %d: %d calls, %zu content bytes from:\n%s\n",
                            hearth_tc_format_name((hearth_tc_format)f), mode, n_calls, content, text);
                    CHECK(0);
                }
                hearth_tc_destroy(p);
            }
            CHECK(walks > 30);
        }
    }
    cJSON_Delete(tools);
}

/* Strings inside a call cannot close its markup early (the parser ends a block at its first
 * closing marker), nor may Python-call syntax hold JSON's keywords. */
TEST(strings_cannot_close_the_markup) {
    cJSON *tools = cJSON_Parse(TOOLS);
    struct { hearth_tc_format f; const char *prefix, *bad, *good; } cases[] = {
        {HEARTH_TC_HERMES, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"a\", \"days\": 1, "
                           "\"note\": \"a<", "/", "b"},
        {HEARTH_TC_GEMMA, "```tool_code\nget_weather(city=\"a\", days=1, note=\"`", "`", "x"},
        {HEARTH_TC_HERMES, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"", "<", "a"},
        {HEARTH_TC_GEMMA, "```tool_code\nget_weather(city=\"x\", days=1, flag=", "t", "T"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hearth_cx_grammar *g = NULL;
        hearth_api_err e;
        CHECK(hearth_structured_tools(cases[i].f, tools, NULL, false, NULL, &g, &e));
        hearth_cx_matcher *m = hearth_cx_matcher_create(g, NULL);
        CHECK(hearth_cx_matcher_feed(m, cases[i].prefix, strlen(cases[i].prefix)));
        CHECK(!hearth_cx_matcher_fits(m, cases[i].bad, 1));
        CHECK(hearth_cx_matcher_fits(m, cases[i].good, 1));
        hearth_cx_matcher_destroy(m);
    }
    cJSON_Delete(tools);
}

TEST(bad_formats_and_schemas_are_400) {
    struct { const char *rf, *fragment; } bad[] = {
        {"{\"type\": \"json_schema\", \"json_schema\": {\"name\": \"x\"}}", "schema"},
        {"{\"type\": \"yaml\"}", "json_object"},
        {"{\"json_schema\": {}}", "type"},
        {"{\"type\": \"json_schema\", \"json_schema\": {\"schema\": {\"type\": \"object\", \"properties\": {\"a\": "
         "{\"$ref\": \"#/$defs/none\"}}}}}", "points at nothing"},
        {"{\"type\": \"json_schema\", \"schema\": {\"allOf\": [{}, {}]}}", "allOf"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *rf = cJSON_Parse(bad[i].rf);
        hearth_cx_grammar *g = NULL;
        hearth_api_err e = {0};
        CHECK(!hearth_structured_format(rf, "response_format", NULL, &g, &e));
        CHECK(g == NULL);
        CHECK_EQ(hearth_api_err_http(&e), 400);
        CHECK_STR(e.param, "response_format");
        if (!strstr(e.msg, bad[i].fragment)) {
            fprintf(stderr, "  %s: %s\n", bad[i].rf, e.msg);
            CHECK(0);
        }
        cJSON_Delete(rf);
    }
    cJSON *text = cJSON_Parse("{\"type\": \"text\"}");
    hearth_cx_grammar *g = (hearth_cx_grammar *)1;
    hearth_api_err e = {0};
    CHECK(hearth_structured_format(text, "response_format", NULL, &g, &e));
    CHECK(g == NULL);
    cJSON_Delete(text);
    /* a Python-call syntax cannot carry a parameter that is not an identifier */
    cJSON *tools = cJSON_Parse("[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": "
                               "\"object\", \"properties\": {\"not-an-identifier\": {\"type\": \"string\"}}}}}]");
    CHECK(!hearth_structured_tools(HEARTH_TC_GEMMA, tools, NULL, false, NULL, &g, &e));
    CHECK_EQ(hearth_api_err_http(&e), 400);
    CHECK_STR(e.param, "tools");
    CHECK(hearth_structured_tools(HEARTH_TC_HERMES, tools, NULL, false, NULL, &g, &e));
    hearth_cx_grammar_destroy(g);
    cJSON_Delete(tools);
}

/* Does the grammar of request body req accept text (whole)? */
static bool request_accepts(const char *req, const char *text) {
    cJSON *root = cJSON_Parse(req);
    hearth_cx_grammar *g = NULL;
    hearth_api_err e = {0};
    bool ok = hearth_structured_request(root, NULL, &g, &e);
    if (!ok) fprintf(stderr, "  %s: %s\n", req, e.msg);
    CHECK(ok && g);
    hearth_cx_matcher *m = hearth_cx_matcher_create(g, NULL);
    bool yes = m && hearth_cx_matcher_feed(m, text, strlen(text)) && hearth_cx_matcher_can_end(m);
    hearth_cx_matcher_destroy(m);
    cJSON_Delete(root);
    return yes;
}

TEST(every_constraint_field_compiles_its_language) {
    CHECK(request_accepts("{\"guided_choice\": [\"yes\", \"no\"]}", "no"));
    CHECK(!request_accepts("{\"guided_choice\": [\"yes\", \"no\"]}", "maybe"));
    CHECK(request_accepts("{\"guided_regex\": \"[0-9]{2}x\"}", "42x"));
    CHECK(!request_accepts("{\"guided_regex\": \"[0-9]{2}x\"}", "4x"));
    CHECK(request_accepts("{\"grammar\": \"root ::= \\\"a\\\" [b-c]+\"}", "abcb"));
    CHECK(!request_accepts("{\"guided_grammar\": \"root ::= \\\"a\\\" [b-c]+\"}", "a"));
    CHECK(request_accepts("{\"guided_json\": {\"type\": \"integer\"}}", "12"));
    CHECK(request_accepts("{\"guided_json\": \"{\\\"type\\\": \\\"boolean\\\"}\"}", "true"));
    CHECK(!request_accepts("{\"json_schema\": {\"type\": \"integer\"}}", "true"));
    CHECK(request_accepts("{\"structured_outputs\": {\"choice\": [\"x\"]}}", "x"));
    CHECK(request_accepts("{\"structured_outputs\": {\"regex\": \"a+\", \"backend\": \"auto\"}}", "aaa"));
    CHECK(request_accepts("{\"structured_outputs\": {\"json_object\": true}}", "{}"));
    CHECK(request_accepts("{\"structured_outputs\": {\"grammar\": \"root ::= \\\"q\\\"\"}}", "q"));
    CHECK(request_accepts("{\"response_format\": {\"type\": \"text\"}, \"guided_regex\": \"z\"}", "z"));
}

TEST(constraint_fields_refused_name_themselves) {
    struct { const char *req, *param, *fragment; } bad[] = {
        {"{\"guided_choice\": [\"a\"], \"guided_regex\": \"a\"}", "guided_regex", "only one"},
        {"{\"response_format\": {\"type\": \"json_object\"}, \"grammar\": \"root ::= \\\"a\\\"\"}", "grammar", "only one"},
        {"{\"guided_regex\": \"(a)\\\\1\"}", "guided_regex", "backreferences"},
        {"{\"guided_grammar\": \"root ::= (\"}", "guided_grammar", "line 1, column 10"},
        {"{\"guided_choice\": []}", "guided_choice", "non-empty"},
        {"{\"guided_json\": 5}", "guided_json", "JSON Schema"},
        {"{\"structured_outputs\": {\"choice\": [\"a\"], \"regex\": \"a\"}}", "structured_outputs", "only one"},
        {"{\"structured_outputs\": {\"whitespace_pattern\": \" \"}}", "structured_outputs", "whitespace_pattern"},
        {"{\"structured_outputs\": {}}", "structured_outputs", "needs one"},
        {"{\"structured_outputs\": {\"regex\": \"(?=a)\"}}", "structured_outputs.regex", "lookahead"},
        {"{\"guided_whitespace_pattern\": \" \"}", "guided_whitespace_pattern", "not supported"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *root = cJSON_Parse(bad[i].req);
        hearth_cx_grammar *g = NULL;
        hearth_api_err e = {0};
        CHECK(!hearth_structured_request(root, NULL, &g, &e));
        CHECK(g == NULL);
        CHECK_EQ(hearth_api_err_http(&e), 400);
        if (strcmp(e.param, bad[i].param) || !strstr(e.msg, bad[i].fragment)) {
            fprintf(stderr, "  %s: param '%s', '%s'\n", bad[i].req, e.param, e.msg);
            CHECK(0);
        }
        cJSON_Delete(root);
    }
    cJSON *none = cJSON_Parse("{\"response_format\": {\"type\": \"text\"}, \"user\": \"x\"}");
    hearth_cx_grammar *g = (hearth_cx_grammar *)1;
    hearth_api_err e = {0};
    CHECK(hearth_structured_request(none, NULL, &g, &e));
    CHECK(g == NULL);
    CHECK(hearth_structured_requested(none) == NULL);
    cJSON_Delete(none);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
