/* test_server_json.c - the response JSON writer (escaping, commas, U+FFFD for bad bytes,
 * buffer reuse), the strict UTF-8 check applied to request bodies, and the request-body
 * checks of reqjson.h that cJSON alone would let through (control bytes, \u0000). */
#include "server/json_out.h"
#include "server/reqjson.h"
#include "test.h"

#include <math.h>

TEST(jw_shapes_and_commas) {
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_jw_obj(&w);
    hearth_jw_key(&w, "a");
    hearth_jw_int(&w, -3);
    hearth_jw_key(&w, "b");
    hearth_jw_arr(&w);
    hearth_jw_bool(&w, true);
    hearth_jw_null(&w);
    hearth_jw_num(&w, 0.5);
    hearth_jw_num(&w, NAN);
    hearth_jw_obj(&w);
    hearth_jw_obj_end(&w);
    hearth_jw_arr(&w);
    hearth_jw_arr_end(&w);
    hearth_jw_arr_end(&w);
    hearth_jw_key(&w, "c");
    hearth_jw_cstr(&w, NULL);
    hearth_jw_key(&w, "d");
    hearth_jw_json(&w, "{\"x\":1}", 7);
    hearth_jw_obj_end(&w);
    CHECK_STR(w.b.p, "{\"a\":-3,\"b\":[true,null,0.5,null,{},[]],\"c\":null,\"d\":{\"x\":1}}");
    CHECK(!w.b.oom);
    /* two top-level values in a row (SSE frames) get no comma */
    hearth_jw_reset(&w);
    hearth_jw_raw(&w, "data: ", 6);
    hearth_jw_obj(&w);
    hearth_jw_obj_end(&w);
    hearth_jw_raw(&w, "\n\ndata: ", 8);
    hearth_jw_obj(&w);
    hearth_jw_obj_end(&w);
    CHECK_STR(w.b.p, "data: {}\n\ndata: {}");
    hearth_jw_fini(&w);
}

TEST(jw_escapes) {
    hearth_jw w;
    hearth_jw_init(&w);
    const char s[] = "q\"b\\n\nr\rt\t\x01\x1f\x7f caf\xc3\xa9 \xf0\x9f\x94\xa5";
    hearth_jw_str(&w, s, sizeof s - 1);
    CHECK_STR(w.b.p, "\"q\\\"b\\\\n\\nr\\rt\\t\\u0001\\u001f\x7f caf\xc3\xa9 \xf0\x9f\x94\xa5\"");
    hearth_jw_reset(&w);
    /* bad bytes: a lone continuation, a truncated sequence, an overlong form, a surrogate */
    const char bad[] = "a\x80" "b\xe2\x82" "c\xc0\xaf" "d\xed\xa0\x80";
    hearth_jw_str(&w, bad, sizeof bad - 1);
    CHECK(hearth_utf8_valid(w.b.p, w.b.len, NULL));
    CHECK_STR(w.b.p, "\"a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd" "c\xef\xbf\xbd\xef\xbf\xbd"
                     "d\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
    hearth_jw_fini(&w);
}

TEST(jw_reuses_its_buffer) {
    hearth_jw w;
    hearth_jw_init(&w);
    for (int i = 0; i < 100; i++) hearth_jw_str(&w, "0123456789", 10);
    char *buf = w.b.p;
    size_t cap = w.b.cap;
    for (int frame = 0; frame < 1000; frame++) {
        hearth_jw_reset(&w);
        hearth_jw_obj(&w);
        hearth_jw_key(&w, "content");
        hearth_jw_str(&w, "token", 5);
        hearth_jw_obj_end(&w);
    }
    CHECK(w.b.p == buf && w.b.cap == cap);
    CHECK_STR(w.b.p, "{\"content\":\"token\"}");
    hearth_jw_fini(&w);
}

TEST(utf8_valid) {
    struct { const char *s; bool ok; size_t bad; } cases[] = {
        {"plain", true, 0},
        {"\xc3\xa9\xe2\x82\xac\xf0\x9f\x94\xa5\xf4\x8f\xbf\xbf", true, 0},
        {"ab\xc3", false, 2},
        {"\xc0\x80", false, 0},          /* overlong NUL */
        {"x\xe0\x80\xaf", false, 1},     /* overlong 3-byte */
        {"\xed\xa0\x80", false, 0},      /* UTF-16 surrogate */
        {"\xf4\x90\x80\x80", false, 0},  /* past U+10FFFF */
        {"\xf5\x80\x80\x80", false, 0},
        {"ok\xff", false, 2},
        {"\xe2\x28\xa1", false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t bad = 99;
        bool ok = hearth_utf8_valid(cases[i].s, strlen(cases[i].s), &bad);
        CHECK_EQ(ok, cases[i].ok);
        if (!cases[i].ok) CHECK_EQ(bad, cases[i].bad);
    }
}

/* hearth_req_parse over body[0..n): the error's message, or "" when it parsed. */
static const char *parse_msg(const char *body, size_t n, hearth_api_err *e) {
    hearth_http_req r = {.body = (char *)body, .n_body = n};
    cJSON *root = hearth_req_parse(&r, e);
    if (root) {
        cJSON_Delete(root);
        return "";
    }
    return e->msg;
}

#define B(lit) lit, sizeof lit - 1 /* a literal and its length (it may hold a NUL) */

TEST(req_parse_refuses_control_bytes_and_nul) {
    hearth_api_err e;
    static const char ok[] = "{\"a\": \"x\\ny\\t\\u0001\\\\u0000\",\r\n\t\"b\": [1, 2]}";
    CHECK_STR(parse_msg(ok, sizeof ok - 1, &e), ""); /* escapes, and an escaped backslash before u0000 */
    static const struct {
        const char *body;
        size_t      n;
        const char *what;
    } bad[] = {
        {B("{\"a\": \"x\0y\"}"), "0x00"},         /* a raw NUL inside a string */
        {B("{\"a\": \"x\x01y\"}"), "0x01"},
        {B("{\"a\": \"x\ty\"}"), "0x09"},          /* a raw tab inside a string */
        {B("{\"a\": \"x\ny\"}"), "0x0a"},
        {B("{\"a\":\x01 1}"), "0x01"},               /* between tokens cJSON skips it */
        {B("{\"a\": \"x\\u0000y\"}"), "u0000"},     /* cJSON would cut the string at x */
        {B("{\"a\\u0000b\": 1}"), "u0000"},          /* in a key too */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *m = parse_msg(bad[i].body, bad[i].n, &e);
        CHECK(strstr(m, bad[i].what) != NULL);
        CHECK_EQ(hearth_api_err_http(&e), 400);
    }
}

int main(int argc, char **argv) { return test_main(argc, argv); }
