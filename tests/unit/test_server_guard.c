/* test_server_guard.c - the front door (server/guard.h): strict framing, the Host check
 * against DNS rebinding, the Origin of state-changing requests, the exact JSON media type,
 * and %00 in a raw request target. */
#include "server/guard.h"
#include "test.h"

#include <string.h>

static hearth_req_head head(const char *method, const char *host) {
    hearth_req_head h = {.version = "HTTP/1.1", .method = method, .host = host, .n_host = host ? 1 : 0};
    return h;
}

TEST(framing_accepts_plain_requests) {
    hearth_api_err e;
    hearth_req_head h = head("GET", "127.0.0.1:8080");
    CHECK(hearth_guard_framing(&h, &e));
    h = head("POST", "localhost");
    h.content_length = "12";
    h.n_content_length = 1;
    CHECK(hearth_guard_framing(&h, &e));
    h = head("POST", "localhost");
    h.transfer_encoding = " Chunked ";
    h.n_transfer_encoding = 1;
    CHECK(hearth_guard_framing(&h, &e));
    /* HTTP/1.0 may leave Host out */
    h = head("GET", NULL);
    h.version = "HTTP/1.0";
    CHECK(hearth_guard_framing(&h, &e));
    /* the same Content-Length twice is one length */
    h = head("POST", "localhost");
    h.content_length = "12";
    h.n_content_length = 2;
    CHECK(hearth_guard_framing(&h, &e));
}

TEST(framing_refuses_ambiguous_requests) {
    hearth_api_err e;
    hearth_req_head h = head("GET", NULL);
    CHECK(!hearth_guard_framing(&h, &e)); /* HTTP/1.1 without Host */
    CHECK_EQ(hearth_api_err_http(&e), 400);
    CHECK(strstr(e.msg, "Host") != NULL);
    h = head("GET", "a");
    h.n_host = 2;
    CHECK(!hearth_guard_framing(&h, &e));
    h = head("POST", "a");
    h.content_length = "5";
    h.n_content_length = 1;
    h.transfer_encoding = "chunked";
    h.n_transfer_encoding = 1;
    CHECK(!hearth_guard_framing(&h, &e)); /* CL + TE */
    CHECK_EQ(hearth_api_err_http(&e), 400);
    const char *codings[] = {"xchunked", "gzip, chunked", "chunked, chunked", "identity", "", "chunked;x=1"};
    for (size_t i = 0; i < sizeof codings / sizeof codings[0]; i++) {
        h = head("POST", "a");
        h.transfer_encoding = codings[i];
        h.n_transfer_encoding = 1;
        CHECK(!hearth_guard_framing(&h, &e));
        CHECK_EQ(hearth_api_err_http(&e), 400);
    }
    h = head("POST", "a");
    h.transfer_encoding = "chunked";
    h.n_transfer_encoding = 2; /* stacked over two headers */
    CHECK(!hearth_guard_framing(&h, &e));
    h = head("POST", "a");
    h.content_length = "5";
    h.n_content_length = 2;
    h.content_length_differ = true;
    CHECK(!hearth_guard_framing(&h, &e));
    h = head("GET", "a");
    h.nul_in_target = true;
    CHECK(!hearth_guard_framing(&h, &e));
    CHECK(strstr(e.msg, "%00") != NULL);
}

TEST(target_nul) {
    CHECK(hearth_guard_target_has_nul("/v1/models/abc%00def"));
    CHECK(hearth_guard_target_has_nul("/x?y=%00"));
    CHECK(!hearth_guard_target_has_nul("/v1/models/abc%200"));
    CHECK(!hearth_guard_target_has_nul("/v1/models/abc%0"));
    CHECK(!hearth_guard_target_has_nul("/v1/models"));
    CHECK(!hearth_guard_target_has_nul(NULL));
}

TEST(host_loopback_and_bind_address) {
    hearth_api_err e;
    hearth_guard_cfg g = {.bind_host = "127.0.0.1"};
    const char *ok[] = {"127.0.0.1", "127.0.0.1:8080", "localhost", "LOCALHOST:1", "localhost.", "[::1]",
                        "[::1]:8080", "127.0.0.2", "[0:0::1]:9"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        CHECK(hearth_guard_host(&g, ok[i], &e));
    }
    const char *bad[] = {"rebind.attacker.example:8080", "rebind.attacker.example", "localhost.attacker.example",
                         "", ":8080", "127.0.0.1:99999", "127.0.0.1:80x", "[::1", "a b", "evil@localhost",
                         "203.0.113.9"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(!hearth_guard_host(&g, bad[i], &e));
        CHECK_EQ(hearth_api_err_http(&e), 403);
        CHECK(strstr(e.msg, "--allowed-hosts") != NULL);
    }
    /* HTTP/1.0 without Host: nothing to check */
    CHECK(hearth_guard_host(&g, NULL, &e));
    /* the bind address by name, and an IPv6 bind */
    g.bind_host = "myhost.lan";
    CHECK(hearth_guard_host(&g, "MyHost.lan:8080", &e));
    CHECK(!hearth_guard_host(&g, "otherhost.lan", &e));
    g.bind_host = "fd00::5";
    CHECK(hearth_guard_host(&g, "[fd00::5]:8080", &e));
    CHECK(hearth_guard_host(&g, "[fd00:0::5]", &e));
    CHECK(!hearth_guard_host(&g, "[fd00::6]", &e));
}

TEST(host_allowed_list) {
    hearth_api_err e;
    hearth_guard_cfg g = {.bind_host = "127.0.0.1", .allowed_hosts = "box.lan, .example.org,192.0.2.7"};
    CHECK(hearth_guard_host(&g, "box.lan:8080", &e));
    CHECK(hearth_guard_host(&g, "example.org", &e));
    CHECK(hearth_guard_host(&g, "a.b.example.org:1", &e));
    CHECK(hearth_guard_host(&g, "192.0.2.7", &e));
    CHECK(!hearth_guard_host(&g, "badexample.org", &e));
    CHECK(!hearth_guard_host(&g, "box.lan.evil", &e));
    CHECK(!hearth_guard_host(&g, "192.0.2.8", &e));
    g.allowed_hosts = "*";
    CHECK(hearth_guard_host(&g, "anything.example", &e));
}

TEST(host_wildcard_bind_takes_own_addresses) {
    hearth_api_err e;
    hearth_guard_cfg g = {.bind_host = "0.0.0.0"};
    CHECK(hearth_guard_host(&g, "127.0.0.1:8080", &e));
    /* TEST-NET-3 is no interface's address */
    CHECK(!hearth_guard_host(&g, "203.0.113.9:8080", &e));
    CHECK(!hearth_guard_host(&g, "rebind.attacker.example", &e));
}

TEST(origin_of_state_changing_requests) {
    hearth_api_err e;
    hearth_guard_cfg g = {.bind_host = "127.0.0.1"};
    hearth_req_head h = head("POST", "127.0.0.1:8080");
    CHECK(hearth_guard_origin(&g, &h, &e)); /* no Origin: not a browser's cross-site request */
    h.origin = "http://127.0.0.1:8080";
    CHECK(hearth_guard_origin(&g, &h, &e)); /* the server's own page */
    h.origin = "http://evil.example";
    CHECK(!hearth_guard_origin(&g, &h, &e));
    CHECK_EQ(hearth_api_err_http(&e), 403);
    CHECK(strstr(e.msg, "--cors") != NULL);
    const char *foreign[] = {"null", "http://127.0.0.1:3000", "http://localhost:8080", "file://",
                             "http://127.0.0.1:8080.evil.example", "ftp://127.0.0.1:8080"};
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++) {
        h.origin = foreign[i];
        CHECK(!hearth_guard_origin(&g, &h, &e));
    }
    h.method = "DELETE";
    h.origin = "http://evil.example";
    CHECK(!hearth_guard_origin(&g, &h, &e));
    /* reads are not refused by Origin (CORS decides whether the page may see them) */
    h.method = "GET";
    CHECK(hearth_guard_origin(&g, &h, &e));
    h.method = "OPTIONS";
    CHECK(hearth_guard_origin(&g, &h, &e));
    /* --cors lets a site in */
    h.method = "POST";
    g.cors = "http://app.example, http://evil.example";
    CHECK(hearth_guard_origin(&g, &h, &e));
    g.cors = "*";
    h.origin = "null";
    CHECK(hearth_guard_origin(&g, &h, &e));
    /* default ports: a Host without a port (a proxy in front) compares names */
    g.cors = NULL;
    h = head("POST", "box.lan");
    h.origin = "https://box.lan";
    CHECK(hearth_guard_origin(&g, &h, &e));
    h = head("POST", "box.lan:80");
    h.origin = "http://box.lan";
    CHECK(hearth_guard_origin(&g, &h, &e));
    h.origin = "https://box.lan";
    CHECK(!hearth_guard_origin(&g, &h, &e));
}

TEST(json_media_type_exact) {
    hearth_api_err e;
    const char *ok[] = {"application/json", "Application/JSON", "application/json; charset=utf-8",
                        "application/json;charset=UTF-8", " application/json ", "application/json ; x=1"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) CHECK(hearth_guard_json_type(ok[i], &e));
    const char *bad[] = {"text/plain", "application/jsonfoo", "application/json-patch+json", "application/x-json",
                         "application/json, text/plain", "multipart/form-data", "application/x-www-form-urlencoded",
                         "", "application/"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(!hearth_guard_json_type(bad[i], &e));
        CHECK_EQ(hearth_api_err_http(&e), 415);
    }
    CHECK(!hearth_guard_json_type(NULL, &e));
    CHECK(strstr(e.msg, "application/json") != NULL);
}

TEST(origin_list) {
    CHECK(hearth_guard_origin_listed("http://a.example, http://b.example", "http://b.example"));
    CHECK(!hearth_guard_origin_listed("http://a.example", "http://a.example.evil"));
    CHECK(hearth_guard_origin_listed("*", "http://x"));
    CHECK(!hearth_guard_origin_listed("", "http://x"));
}

int main(int argc, char **argv) { return test_main(argc, argv); }
