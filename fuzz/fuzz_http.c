/*
 * fuzz_http.c - libFuzzer entry point for the server's front door: one HTTP request through
 * libmicrohttpd, the header and body checks, the router and whichever handler it picks (every
 * route: the APIs, /health, /stats, /metrics, the web app, the store, downloads), on the stub
 * engine (fuzz/http_harness.h says how the server is set up and what is checked).
 *
 * An input is a request written loosely, so that mutations keep it well framed:
 *
 *   METHOD TARGET [VERSION]\n        the request line (VERSION default HTTP/1.1)
 *   Name: value\n ...                header lines (a \r in them is dropped)
 *   \n
 *   body                             the rest, raw bytes
 *
 * The harness writes it with \r\n line ends and a Content-Length that matches the body, so the
 * request is complete and exactly one response must come back (fz_http_framed). When the head
 * brings its own Content-Length or Transfer-Encoding - framing is what is being tried - the
 * request is sent as written (\r\n line ends, its own framing, the body as it is) and the
 * connection only has to be closed by the server (fz_http_raw): a conflicting or unknown framing
 * may be refused, or the body may be the next request. An input without a blank line is all head;
 * one whose first line is not "METHOD TARGET", or whose head holds a NUL byte, is sent raw as
 * it is.
 *
 * Built by CMake (fuzz/fuzz.cmake) like the other targets: replayed over fuzz/corpus/http in
 * every build (fuzz_http_replay), fuzzed under libFuzzer in build-fuzz/ (`make fuzz`,
 * scripts/fuzz.sh build-fuzz 60 http), with fuzz/http.dict. Seeds, written by hand: ok_* are
 * requests the server should answer 2xx, bad_* ones it should refuse, raw_* framings to try (the
 * names say what is meant; the harness does not hold the server to them). Run from the repository
 * root (the server loads tests/golden/tiny/tiny-qwen2.gguf).
 */
#include "fuzz/http_harness.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_HEAD = 16384 };

static bool is_token(const char *p, size_t n) { /* a method: visible ASCII, no separators */
    if (!n) return false;
    for (size_t i = 0; i < n; i++)
        if (p[i] <= ' ' || p[i] >= 127) return false;
    return true;
}

/* Does the header line name a framing header (spaces around the name ignored, any case)? */
static bool names_framing(const char *line, size_t n) {
    static const char *const names[] = {"content-length", "transfer-encoding"};
    const char *colon = memchr(line, ':', n);
    if (!colon) return false;
    const char *a = line, *b = colon;
    while (a < b && (*a == ' ' || *a == '\t')) a++;
    while (b > a && (b[-1] == ' ' || b[-1] == '\t')) b--;
    for (size_t i = 0; i < 2; i++)
        if ((size_t)(b - a) == strlen(names[i]) && !strncasecmp(a, names[i], strlen(names[i]))) return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *p = (const char *)data, *end = p + size;
    const char *blank = size ? memmem(p, size, "\n\n", 2) : NULL;
    const char *head_end = blank ? blank : end;
    const uint8_t *body = blank ? (const uint8_t *)blank + 2 : (const uint8_t *)end;
    size_t n_body = (size_t)((const uint8_t *)end - body);
    if ((size_t)(head_end - p) > MAX_HEAD) {
        fz_http_raw(data, size);
        return 0;
    }
    /* the request line */
    const char *eol = memchr(p, '\n', (size_t)(head_end - p));
    if (!eol) eol = head_end;
    const char *sp1 = memchr(p, ' ', (size_t)(eol - p));
    if (!sp1 || !is_token(p, (size_t)(sp1 - p)) || sp1 + 1 >= eol || memchr(p, 0, (size_t)(eol - p))) {
        fz_http_raw(data, size);
        return 0;
    }
    const char *t = sp1 + 1, *sp2 = memchr(t, ' ', (size_t)(eol - t));
    char method[64], target[MAX_HEAD + 1], version[64];
    size_t nm = (size_t)(sp1 - p), nt = (size_t)((sp2 ? sp2 : eol) - t);
    if (nm >= sizeof method) nm = sizeof method - 1;
    memcpy(method, p, nm);
    method[nm] = 0;
    memcpy(target, t, nt);
    target[nt] = 0;
    bool has_version = false;
    if (sp2) {
        size_t nv = (size_t)(eol - sp2 - 1);
        if (nv >= sizeof version) nv = sizeof version - 1;
        memcpy(version, sp2 + 1, nv);
        version[nv] = 0;
        has_version = true;
    }
    for (char *c = target; *c; c++) /* a \r would end the line early: drop it */
        if (*c == '\r') *c = ' ';
    for (char *c = version; has_version && *c; c++)
        if (*c == '\r') *c = ' ';
    /* the header lines, \r dropped, each ended by \r\n */
    char *head = malloc((size_t)(head_end - p) * 2 + 3);
    if (!head) return 0;
    size_t nh = 0;
    bool raw = false;
    for (const char *line = eol < head_end ? eol + 1 : head_end; line < head_end;) {
        const char *le = memchr(line, '\n', (size_t)(head_end - line));
        if (!le) le = head_end;
        size_t start = nh;
        for (const char *c = line; c < le; c++)
            if (*c != '\r') head[nh++] = *c;
        if (names_framing(head + start, nh - start)) raw = true;
        if (nh > start) {
            head[nh++] = '\r';
            head[nh++] = '\n';
        }
        line = le + 1;
    }
    head[nh] = 0;
    bool nul = memchr(head, 0, nh) != NULL || strlen(target) != nt;
    if (raw || nul) { /* its own framing (or bytes a C string cannot hold): as written */
        size_t cap = nm + nt + nh + n_body + 96;
        char *req = malloc(cap);
        if (req) {
            size_t n = 0;
            memcpy(req + n, method, nm), n += nm;
            req[n++] = ' ';
            memcpy(req + n, t, nt), n += nt;
            req[n++] = ' ';
            const char *v = has_version ? version : "HTTP/1.1";
            memcpy(req + n, v, strlen(v)), n += strlen(v);
            memcpy(req + n, "\r\n", 2), n += 2;
            memcpy(req + n, head, nh), n += nh;
            memcpy(req + n, "\r\n", 2), n += 2;
            memcpy(req + n, body, n_body), n += n_body;
            fz_http_raw((const uint8_t *)req, n);
            free(req);
        }
        free(head);
        return 0;
    }
    fz_http_framed(method, target, has_version ? version : NULL, head, body, n_body);
    free(head);
    return 0;
}
