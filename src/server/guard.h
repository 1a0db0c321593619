/*
 * guard.h - the front door: checks on a request's head, made before its body is read.
 *
 * A server on loopback is reachable by every web page its user opens, so the head of each
 * request is judged before a handler runs:
 *
 *   framing  (400) exactly one Host on HTTP/1.1; Content-Length and Transfer-Encoding not
 *            together; "chunked" the only transfer coding, once; no two differing
 *            Content-Lengths; no %00 in the request target. A proxy in front and this server
 *            then cannot disagree on where a request ends (no smuggling).
 *   Host     (403) DNS rebinding: a page on attacker.example whose name resolves to 127.0.0.1
 *            is same-origin with the server. Only the names the user reaches it by are
 *            answered: the bind address, localhost, the loopback addresses, the machine's own
 *            addresses when bound to a wildcard, and --allowed-hosts (where "*" turns the
 *            check off). The port is not compared: the name is what an attacker controls.
 *   Origin   (403) on state-changing methods (all but GET, HEAD, OPTIONS): a browser sends
 *            Origin with them; a request from a page of this server (Origin equal to the
 *            Host) or from an origin --cors lists passes, any other site is refused, so a
 *            page elsewhere cannot make the server generate or download.
 *   JSON     (415) bodies of generation and download routes must be sent as
 *            application/json (the exact media type, parameters allowed): a browser sends
 *            text/plain cross-site without a preflight, application/json never.
 *
 * The checks are pure functions of the head's values (hearth_req_head), so unit tests feed
 * them directly; hearth_guard_collect fills a head from libmicrohttpd's connection. Each
 * failing check fills a hearth_api_err whose message names the flag that would allow it.
 *
 * Thread rule: pure functions (the Host check may list the machine's interfaces); any thread.
 */
#pragma once
#include <stdbool.h>

#include "server/errors.h"

struct MHD_Connection;

/* What the checks read of a request head. Strings are borrowed (NULL: absent). */
typedef struct {
    const char *version;           /* "HTTP/1.1", "HTTP/1.0" */
    const char *method;
    const char *host;              /* the first Host header */
    int         n_host;            /* how many Host headers came */
    const char *content_length;    /* the first Content-Length */
    int         n_content_length;
    bool        content_length_differ; /* two Content-Length headers with different values */
    const char *transfer_encoding; /* the first Transfer-Encoding */
    int         n_transfer_encoding;
    const char *origin;
    bool        nul_in_target;     /* the raw request target holds %00 */
} hearth_req_head;

/* What the server allows (borrowed strings). */
typedef struct {
    const char *bind_host;     /* --host: "127.0.0.1", "0.0.0.0", "::", a name... */
    const char *allowed_hosts; /* --allowed-hosts: comma-separated names, "*" = any; NULL = none */
    const char *cors;          /* --cors: comma-separated origins, "*" = any; NULL = none */
} hearth_guard_cfg;

/* Fill h from MHD's view of the request (version and method as MHD passed them). */
void hearth_guard_collect(struct MHD_Connection *c, const char *version, const char *method, hearth_req_head *h);

/* Does the raw request target (as sent, before unescaping) hold a %00? */
bool hearth_guard_target_has_nul(const char *raw_target);

/* Framing (400, HEARTH_E_FORMAT): false with e filled when the head is not strictly framed. */
bool hearth_guard_framing(const hearth_req_head *h, hearth_api_err *e);
/* Host (403, HEARTH_E_FORBIDDEN): false with e filled when host (a Host header value, or NULL
 * for an HTTP/1.0 request without one, which passes) is not a name of this server. */
bool hearth_guard_host(const hearth_guard_cfg *g, const char *host, hearth_api_err *e);
/* Origin (403, HEARTH_E_FORBIDDEN): false with e filled when a state-changing request carries
 * the Origin of another site that --cors does not list. */
bool hearth_guard_origin(const hearth_guard_cfg *g, const hearth_req_head *h, hearth_api_err *e);
/* Is ctype (a Content-Type value, NULL when absent) application/json, parameters allowed?
 * false with e filled (415, HEARTH_E_MEDIA_TYPE). */
bool hearth_guard_json_type(const char *ctype, hearth_api_err *e);
/* Is origin one of the comma-separated entries of list ("*" allows any)? */
bool hearth_guard_origin_listed(const char *list, const char *origin);
