/* test_server_media.c - the pieces of media input that need no network: the address classes
 * of the fetch guard (server/media_fetch.h: every blocked IPv4 and IPv6 class, the IPv6 forms
 * that wrap an IPv4 address, public addresses on both sides of each blocked range), strict
 * base64 (RFC 4648 section 10's vectors, and what must be refused), content sniffing, the
 * parsing of each dialect's parts into media items (media.h) with the capability check, and the
 * timed host lookup (with stand-in resolvers: one that answers, one that answers too late). */
#include "base/base64.h"
#include "server/media.h"
#include "server/media_fetch.h"
#include "test.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <time.h>
#include <unistd.h>
#include <cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static hearth_addr_class cls(const char *text) {
    uint8_t a[16];
    if (inet_pton(AF_INET, text, a) == 1) return hearth_media_addr_class(AF_INET, a);
    if (inet_pton(AF_INET6, text, a) == 1) return hearth_media_addr_class(AF_INET6, a);
    return (hearth_addr_class)-1;
}

TEST(addr_classes_ipv4) {
    static const struct {
        const char       *addr;
        hearth_addr_class want;
    } t[] = {
        {"10.0.0.1", HEARTH_ADDR_PRIVATE},        {"10.255.255.255", HEARTH_ADDR_PRIVATE},
        {"172.16.0.1", HEARTH_ADDR_PRIVATE},      {"172.31.255.255", HEARTH_ADDR_PRIVATE},
        {"192.168.1.1", HEARTH_ADDR_PRIVATE},     {"100.64.0.1", HEARTH_ADDR_PRIVATE},
        {"100.127.255.255", HEARTH_ADDR_PRIVATE}, {"127.0.0.1", HEARTH_ADDR_LOOPBACK},
        {"127.255.255.254", HEARTH_ADDR_LOOPBACK}, {"169.254.169.254", HEARTH_ADDR_LINK_LOCAL},
        {"169.254.0.1", HEARTH_ADDR_LINK_LOCAL},  {"0.0.0.0", HEARTH_ADDR_UNSPECIFIED},
        {"0.1.2.3", HEARTH_ADDR_UNSPECIFIED},     {"224.0.0.1", HEARTH_ADDR_MULTICAST},
        {"239.255.255.250", HEARTH_ADDR_MULTICAST}, {"255.255.255.255", HEARTH_ADDR_BROADCAST},
        {"240.0.0.1", HEARTH_ADDR_RESERVED},      {"192.0.0.8", HEARTH_ADDR_RESERVED},
        {"192.0.2.1", HEARTH_ADDR_RESERVED},      {"198.18.0.1", HEARTH_ADDR_RESERVED},
        {"198.51.100.7", HEARTH_ADDR_RESERVED},   {"203.0.113.9", HEARTH_ADDR_RESERVED},
        /* public, including the neighbours of each blocked range */
        {"8.8.8.8", HEARTH_ADDR_PUBLIC},          {"1.1.1.1", HEARTH_ADDR_PUBLIC},
        {"9.255.255.255", HEARTH_ADDR_PUBLIC},    {"11.0.0.0", HEARTH_ADDR_PUBLIC},
        {"172.15.255.255", HEARTH_ADDR_PUBLIC},   {"172.32.0.0", HEARTH_ADDR_PUBLIC},
        {"192.167.255.255", HEARTH_ADDR_PUBLIC},  {"192.169.0.0", HEARTH_ADDR_PUBLIC},
        {"100.63.255.255", HEARTH_ADDR_PUBLIC},   {"100.128.0.0", HEARTH_ADDR_PUBLIC},
        {"126.255.255.255", HEARTH_ADDR_PUBLIC},  {"128.0.0.0", HEARTH_ADDR_PUBLIC},
        {"169.253.255.255", HEARTH_ADDR_PUBLIC},  {"169.255.0.0", HEARTH_ADDR_PUBLIC},
        {"223.255.255.255", HEARTH_ADDR_PUBLIC},  {"198.20.0.0", HEARTH_ADDR_PUBLIC},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        if (cls(t[i].addr) != t[i].want) fprintf(stderr, "  %s\n", t[i].addr);
        CHECK_EQ(cls(t[i].addr), t[i].want);
    }
}

TEST(addr_classes_ipv6) {
    static const struct {
        const char       *addr;
        hearth_addr_class want;
    } t[] = {
        {"::1", HEARTH_ADDR_LOOPBACK},            {"::", HEARTH_ADDR_UNSPECIFIED},
        {"fe80::1", HEARTH_ADDR_LINK_LOCAL},      {"febf::1", HEARTH_ADDR_LINK_LOCAL},
        {"fc00::1", HEARTH_ADDR_PRIVATE},         {"fd12:3456::1", HEARTH_ADDR_PRIVATE},
        {"ff02::1", HEARTH_ADDR_MULTICAST},       {"fec0::1", HEARTH_ADDR_RESERVED},
        {"2001:db8::1", HEARTH_ADDR_RESERVED},    {"100::1", HEARTH_ADDR_RESERVED},
        /* IPv4-mapped: the class of the IPv4 address inside */
        {"::ffff:127.0.0.1", HEARTH_ADDR_LOOPBACK}, {"::ffff:169.254.169.254", HEARTH_ADDR_LINK_LOCAL},
        {"::ffff:10.1.2.3", HEARTH_ADDR_PRIVATE}, {"::ffff:0.0.0.0", HEARTH_ADDR_UNSPECIFIED},
        {"::ffff:8.8.8.8", HEARTH_ADDR_PUBLIC},
        /* IPv4-compatible (deprecated) */
        {"::127.0.0.1", HEARTH_ADDR_LOOPBACK},    {"::192.168.0.1", HEARTH_ADDR_PRIVATE},
        {"::8.8.8.8", HEARTH_ADDR_PUBLIC},
        /* NAT64 well-known prefix, and the local-use one */
        {"64:ff9b::7f00:1", HEARTH_ADDR_LOOPBACK}, {"64:ff9b::a9fe:a9fe", HEARTH_ADDR_LINK_LOCAL},
        {"64:ff9b::808:808", HEARTH_ADDR_PUBLIC}, {"64:ff9b:1::1", HEARTH_ADDR_RESERVED},
        /* 6to4 */
        {"2002:7f00:1::1", HEARTH_ADDR_LOOPBACK}, {"2002:c0a8:101::1", HEARTH_ADDR_PRIVATE},
        {"2002:808:808::1", HEARTH_ADDR_PUBLIC},
        /* public */
        {"2606:4700:4700::1111", HEARTH_ADDR_PUBLIC}, {"2001:4860:4860::8888", HEARTH_ADDR_PUBLIC},
        {"fbff::1", HEARTH_ADDR_PUBLIC},          {"fe00::1", HEARTH_ADDR_PUBLIC},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        if (cls(t[i].addr) != t[i].want) fprintf(stderr, "  %s\n", t[i].addr);
        CHECK_EQ(cls(t[i].addr), t[i].want);
    }
    CHECK_STR(hearth_media_addr_class_name(HEARTH_ADDR_LINK_LOCAL), "link-local");
}

static bool b64(const char *in, char *out, size_t *n) {
    return hearth_base64_decode(in, strlen(in), (uint8_t *)out, n, NULL);
}

TEST(base64_rfc4648_vectors) {
    static const char *const enc[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    static const char *const dec[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    char   out[16];
    size_t n;
    for (size_t i = 0; i < 7; i++) {
        CHECK(b64(enc[i], out, &n));
        CHECK_EQ(n, strlen(dec[i]));
        CHECK(!memcmp(out, dec[i], n));
    }
    CHECK(b64("Zm9vYg", out, &n) && n == 4); /* unpadded */
    size_t bad = 99;
    CHECK(!hearth_base64_decode("Zm9v YmFy", 9, (uint8_t *)out, &n, &bad));
    CHECK_EQ(bad, 4u);
    CHECK(!b64("Z", out, &n));        /* a lone character encodes no byte */
    CHECK(!b64("Zg=", out, &n));      /* padding that does not complete a group */
    CHECK(!b64("Zg===", out, &n));
    CHECK(!b64("Z=g=", out, &n));     /* '=' inside */
    CHECK(!b64("Zm-_", out, &n));     /* the URL-safe alphabet is not base64 */
}

TEST(sniff) {
    hearth_media_kind k;
    CHECK_STR(hearth_media_sniff((const uint8_t *)"\x89PNG\r\n\x1a\n....", 12, &k), "image/png");
    CHECK_EQ(k, HEARTH_MEDIA_IMAGE);
    CHECK_STR(hearth_media_sniff((const uint8_t *)"\xff\xd8\xff\xe0", 4, &k), "image/jpeg");
    CHECK_STR(hearth_media_sniff((const uint8_t *)"RIFF\0\0\0\0WEBPVP8 ", 16, &k), "image/webp");
    CHECK_STR(hearth_media_sniff((const uint8_t *)"GIF89a", 6, &k), "image/gif");
    CHECK_STR(hearth_media_sniff((const uint8_t *)"RIFF\0\0\0\0WAVEfmt ", 16, &k), "audio/wav");
    CHECK_EQ(k, HEARTH_MEDIA_AUDIO);
    CHECK_STR(hearth_media_sniff((const uint8_t *)"fLaC", 4, &k), "audio/flac");
    CHECK_STR(hearth_media_sniff((const uint8_t *)"OggS", 4, &k), "audio/ogg");
    CHECK_STR(hearth_media_sniff((const uint8_t *)"ID3\x04", 4, &k), "audio/mpeg");
    CHECK(hearth_media_sniff((const uint8_t *)"<html>", 6, &k) == NULL);
    CHECK(hearth_media_sniff((const uint8_t *)"\x89PN", 3, &k) == NULL); /* truncated magic */
    CHECK(hearth_media_sniff(NULL, 0, &k) == NULL);
}

static bool parse(const char *json, hearth_media_list *l, hearth_api_err *e) {
    cJSON *p = cJSON_Parse(json);
    bool   ok = hearth_media_parse(p, 1, "messages[1].content[0]", 1 << 20, l, e);
    cJSON_Delete(p);
    return ok;
}

TEST(parts_of_each_dialect) {
    hearth_media_list l = {0};
    hearth_api_err    e;
    CHECK(parse("{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,Zm9v\",\"detail\":\"low\"}}",
                &l, &e));
    CHECK(parse("{\"type\":\"input_audio\",\"input_audio\":{\"data\":\"Zm9vYmFy\",\"format\":\"wav\"}}", &l, &e));
    CHECK(parse("{\"type\":\"image\",\"source\":{\"type\":\"url\",\"url\":\"https://example.com/a.png\"}}", &l, &e));
    CHECK(parse("{\"type\":\"input_image\",\"image_url\":\"HTTP://example.com/b\",\"detail\":\"high\"}", &l, &e));
    CHECK(parse("{\"type\":\"input_file\",\"file_data\":\"Zm9v\"}", &l, &e));
    CHECK_EQ(l.n, 5u);
    CHECK(l.v[0].kind == HEARTH_MEDIA_IMAGE && l.v[0].detail == HEARTH_MEDIA_DETAIL_LOW && l.v[0].n_bytes == 3 &&
          !memcmp(l.v[0].bytes, "foo", 3) && !strcmp(l.v[0].format, "image/png") && !l.v[0].url);
    CHECK(l.v[1].kind == HEARTH_MEDIA_AUDIO && l.v[1].n_bytes == 6 && !strcmp(l.v[1].format, "wav"));
    CHECK(l.v[2].kind == HEARTH_MEDIA_IMAGE && !strcmp(l.v[2].url, "https://example.com/a.png") && !l.v[2].bytes);
    CHECK(l.v[3].detail == HEARTH_MEDIA_DETAIL_HIGH && l.v[3].url);
    CHECK(l.v[4].kind == HEARTH_MEDIA_FILE && l.v[4].n_bytes == 3);
    CHECK(l.v[0].i_msg == 1 && !strcmp(l.v[0].param, "messages[1].content[0]"));
    /* text-only model: the first part is named, with the model */
    CHECK(!hearth_media_admit(&l, "smol", 0, &e));
    CHECK_STR(e.param, "messages[1].content[0]");
    CHECK(strstr(e.msg, "smol") && strstr(e.msg, "image"));
    CHECK_EQ(hearth_api_err_http(&e), 400);
    /* a model that sees but does not hear: the audio part is refused */
    CHECK(!hearth_media_admit(&l, "seer", HEARTH_MEDIA_CAP_IMAGE, &e));
    CHECK(strstr(e.msg, "audio") != NULL);
    /* a model with both towers, whose engine runs neither: the first image is refused naming
     * the tower's evidence; runs the vision tower only: the audio part is; runs both: the file
     * part (no tower reads documents) is not this check's to refuse */
    CHECK(!hearth_media_admit(&l, "both", HEARTH_MEDIA_CAP_IMAGE | HEARTH_MEDIA_CAP_AUDIO, &e)); /* the file */
    CHECK(strstr(e.msg, "file") != NULL);
    CHECK(!hearth_media_admit_runs(&l, "both", 0, "projector mmproj-x.gguf", &e));
    CHECK_STR(e.param, "messages[1].content[0]");
    CHECK(strstr(e.msg, "both") && strstr(e.msg, "a vision tower") && strstr(e.msg, "mmproj-x.gguf") &&
          strstr(e.msg, "cannot run yet"));
    CHECK_EQ(hearth_api_err_http(&e), 400);
    CHECK(!hearth_media_admit_runs(&l, "both", HEARTH_MEDIA_CAP_IMAGE, "src", &e));
    CHECK(strstr(e.msg, "an audio tower") != NULL);
    CHECK(hearth_media_admit_runs(&l, "both", HEARTH_MEDIA_CAP_IMAGE | HEARTH_MEDIA_CAP_AUDIO, "src", &e));
    hearth_media_list_fini(&l);
    CHECK(hearth_media_admit(&l, "smol", 0, &e)); /* nothing to refuse */
}

TEST(malformed_parts) {
    static const struct {
        const char *json, *param;
    } t[] = {
        {"{\"type\":\"image_url\"}", "messages[1].content[0].image_url"},
        {"{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,Zm9v!\"}}",
         "messages[1].content[0].image_url.url"},
        {"{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:,abc\"}}", "messages[1].content[0].image_url.url"},
        {"{\"type\":\"image_url\",\"image_url\":{\"url\":\"javascript:alert(1)\"}}",
         "messages[1].content[0].image_url.url"},
        {"{\"type\":\"input_audio\",\"input_audio\":{\"data\":\"Zm9v\",\"format\":\"\"}}",
         "messages[1].content[0].input_audio.format"},
        {"{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\"}}",
         "messages[1].content[0].source.data"},
        {"{\"type\":\"input_file\",\"file_id\":\"f\"}", "messages[1].content[0].file_id"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        hearth_media_list l = {0};
        hearth_api_err    e;
        CHECK(!parse(t[i].json, &l, &e));
        CHECK_STR(e.param, t[i].param);
        CHECK_EQ(hearth_api_err_http(&e), 400);
        hearth_media_list_fini(&l);
    }
    /* over the cap: refused from the encoded length, nothing decoded */
    hearth_media_list l = {0};
    hearth_api_err    e;
    cJSON *p = cJSON_Parse("{\"type\":\"input_audio\",\"input_audio\":{\"data\":\"Zm9vYmFyZm9vYmFy\",\"format\":\"wav\"}}");
    CHECK(!hearth_media_parse(p, 0, "m", 8, &l, &e));
    CHECK(strstr(e.msg, "8 bytes") != NULL);
    CHECK(hearth_media_parse(p, 0, "m", 12, &l, &e));
    cJSON_Delete(p);
    hearth_media_list_fini(&l);
}

int main(int argc, char **argv) { return test_main(argc, argv); }

/* ---- the timed lookup ---- */

static int numeric(const char *host, struct addrinfo **res) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST};
    return getaddrinfo(host, NULL, &hints, res);
}

static int numeric_after_1500_ms(const char *host, struct addrinfo **res) {
    usleep(1500 * 1000);
    return numeric(host, res);
}

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

TEST(lookup_answers_within_its_limit) {
    struct addrinfo *res = NULL;
    bool late = true;
    CHECK_EQ(hearth_media_lookup("192.0.2.7", 5000, numeric, &res, &late), 0);
    CHECK(!late);
    CHECK(res != NULL);
    if (res) {
        char text[INET6_ADDRSTRLEN] = "";
        inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)res->ai_addr)->sin_addr, text, sizeof text);
        CHECK(!strcmp(text, "192.0.2.7"));
        freeaddrinfo(res);
    }
    /* the resolver's own failure comes back as its code */
    CHECK(hearth_media_lookup("not-an-address", 5000, numeric, &res, &late) != 0);
    CHECK(!late);
    CHECK(res == NULL);
}

/* A resolver that answers after 1.5 s meets a 100 ms limit: the caller is back long before the
 * answer (the bound, 1 s, is 10x the limit and well short of the answer), with no result, and
 * the abandoned thread frees the late answer itself (run under AddressSanitizer: a leak or a
 * double free fails there; the sleep at the end lets the thread finish before the process). */
TEST(lookup_gives_up_at_its_limit) {
    struct addrinfo *res = (struct addrinfo *)1;
    bool late = false;
    double t0 = mono_s();
    CHECK_EQ(hearth_media_lookup("192.0.2.8", 100, numeric_after_1500_ms, &res, &late), 0);
    double took = mono_s() - t0;
    CHECK(late);
    CHECK(res == NULL);
    CHECK(took < 1.0);
    usleep(2000 * 1000);
}
