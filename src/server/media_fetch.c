/*
 * media_fetch.c - the guarded fetch of a request's media URL (see media_fetch.h for the
 * rules).
 *
 * One hop:
 *
 *   URL --curl_url--> scheme http/https? no userinfo? host, port
 *       --getaddrinfo (within what is left of the time limit: media_lookup.c)--> every address
 *       classified; one blocked address refuses the hop
 *       --CURLOPT_RESOLVE "host:port:addr"--> libcurl connects to the checked address only
 *       --perform (no redirects, no proxy, timeout = what is left of the budget)-->
 *   2xx: the body (capped in the write callback) is the answer
 *   3xx: CURLINFO_REDIRECT_URL (the Location resolved against this URL) is the next hop
 *
 * Proxies are switched off (CURLOPT_PROXY ""), since a proxy from the environment would do
 * its own lookup of the host and undo the pinning.
 */
#include "server/media_fetch.h"
#include "base/buf.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

hearth_media_fetch_opts hearth_media_fetch_opts_default(void) {
    return (hearth_media_fetch_opts){
        .allow_private = false, .allow_addr = NULL, .max_bytes = HEARTH_MEDIA_MAX_BYTES, .timeout_ms = 10000,
        .max_redirects = 5,
    };
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void           global_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }
void                  hearth_media_fetch_global_init(void) { pthread_once(&once, global_init); }

static int64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

typedef struct {
    hearth_buf body;
    size_t     max;
    bool       over; /* the body passed max: the transfer was aborted */
} sink;

static size_t on_body(char *p, size_t size, size_t n, void *ud) {
    sink  *k = ud;
    size_t len = size * n;
    if (len > k->max - k->body.len) { /* body.len <= max always holds */
        k->over = true;
        return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
    }
    return hearth_buf_put(&k->body, p, len) ? len : 0;
}

typedef struct {
    char  scheme[8];
    char  host[256]; /* without the brackets of an IPv6 literal */
    long  port;
} target;

static hearth_status fail(char *msg, size_t n, hearth_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static hearth_status fail(char *msg, size_t n, hearth_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (msg && n) vsnprintf(msg, n, fmt, ap);
    va_end(ap);
    return st;
}

/* Split url into t; refuse what is not plain http(s). */
static hearth_status parse_url(const char *url, target *t, char *msg, size_t n_msg) {
    CURLU *u = curl_url();
    char  *scheme = NULL, *host = NULL, *port = NULL, *user = NULL;
    hearth_status st = HEARTH_E_INVALID;
    if (!u) return fail(msg, n_msg, HEARTH_E_NOMEM, "out of memory");
    if (curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK) {
        fail(msg, n_msg, st, "'%.200s' is not a valid URL", url);
        goto out;
    }
    if (strcasecmp(scheme, "http") && strcasecmp(scheme, "https")) {
        fail(msg, n_msg, st, "'%.200s': only http and https URLs are fetched (not %.20s)", url, scheme);
        goto out;
    }
    if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
        fail(msg, n_msg, st, "'%.200s' is not a valid URL", url);
        goto out;
    }
    if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK) {
        fail(msg, n_msg, st, "'%.200s': URLs with a user name are not fetched", url);
        goto out;
    }
    size_t hl = strlen(host);
    const char *h = host;
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') h++, hl -= 2;
    if (hl == 0 || hl >= sizeof t->host) {
        fail(msg, n_msg, st, "'%.200s': the host name is empty or too long", url);
        goto out;
    }
    memcpy(t->host, h, hl);
    t->host[hl] = 0;
    snprintf(t->scheme, sizeof t->scheme, "%s", scheme);
    for (char *c = t->scheme; *c; c++) *c = (char)(*c | 0x20);
    t->port = strtol(port, NULL, 10);
    st = HEARTH_OK;
out:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(user);
    curl_url_cleanup(u);
    return st;
}

/* Resolve t->host once and check every address; *pinned gets the first, as text. */
static hearth_status resolve_checked(const target *t, const hearth_media_fetch_opts *o, long left_ms, char *pinned,
                                     size_t n_pinned, char *msg, size_t n_msg) {
    struct addrinfo *res = NULL;
    bool late = false;
    int rc = hearth_media_lookup(t->host, left_ms, NULL, &res, &late);
    if (late)
        return fail(msg, n_msg, HEARTH_E_LIMIT, "the host '%.200s' did not resolve within the fetch's time limit",
                    t->host);
    if (rc) return fail(msg, n_msg, HEARTH_E_INVALID, "the host '%.200s' does not resolve (%s)", t->host,
                        gai_strerror(rc));
    hearth_status st = HEARTH_OK;
    pinned[0] = 0;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        const uint8_t *raw;
        if (a->ai_family == AF_INET) raw = (const uint8_t *)&((struct sockaddr_in *)(void *)a->ai_addr)->sin_addr;
        else if (a->ai_family == AF_INET6)
            raw = (const uint8_t *)&((struct sockaddr_in6 *)(void *)a->ai_addr)->sin6_addr;
        else continue;
        char text[INET6_ADDRSTRLEN];
        if (!inet_ntop(a->ai_family, raw, text, sizeof text)) continue;
        hearth_addr_class c = hearth_media_addr_class(a->ai_family, raw);
        bool ok = c == HEARTH_ADDR_PUBLIC || o->allow_private || (o->allow_addr && !strcmp(o->allow_addr, text));
        if (!ok) {
            char what[96];
            snprintf(what, sizeof what, "%s, a %s address", text, hearth_media_addr_class_name(c));
            st = fail(msg, n_msg, HEARTH_E_INVALID,
                      "the host '%.200s' resolves to %s: blocked (serve with --allow-private-media to allow "
                      "private addresses)", t->host, what);
            break;
        }
        if (!pinned[0]) snprintf(pinned, n_pinned, "%s", text);
    }
    freeaddrinfo(res);
    if (st == HEARTH_OK && !pinned[0])
        st = fail(msg, n_msg, HEARTH_E_INVALID, "the host '%.200s' has no IPv4 or IPv6 address", t->host);
    return st;
}

/* One hop: *status gets the HTTP status, *next (malloc'ed) the redirect target of a 3xx. */
static hearth_status hop(const char *url, const target *t, const char *addr, long left_ms, long total_ms, sink *k, long *status, char **next, char *msg, size_t n_msg) {
    CURL *c = curl_easy_init();
    if (!c) return fail(msg, n_msg, HEARTH_E_NOMEM, "out of memory");
    char pin[400];
    bool v6 = strchr(addr, ':') != NULL;
    snprintf(pin, sizeof pin, "%s:%ld:%s%s%s", t->host, t->port, v6 ? "[" : "", addr, v6 ? "]" : "");
    struct curl_slist *resolve = curl_slist_append(NULL, pin);
    hearth_status st = HEARTH_OK;
    if (!resolve) {
        curl_easy_cleanup(c);
        return fail(msg, n_msg, HEARTH_E_NOMEM, "out of memory");
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_RESOLVE, resolve);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_PROXY, "");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, left_ms);
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)k->max);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "hearth-media/" HEARTH_VERSION);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, k);
    CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_FILESIZE_EXCEEDED || (rc == CURLE_WRITE_ERROR && k->over)) {
        st = fail(msg, n_msg, HEARTH_E_LIMIT, "'%.200s': the body is larger than the %zu-byte cap", url, k->max);
    } else if (rc == CURLE_OPERATION_TIMEDOUT) {
        st = fail(msg, n_msg, HEARTH_E_LIMIT, "'%.200s': the fetch took longer than its %ld ms limit", url, total_ms);
    } else if (rc != CURLE_OK) {
        st = fail(msg, n_msg, HEARTH_E_INVALID, "'%.200s': the fetch failed: %s", url, curl_easy_strerror(rc));
    } else {
        char *loc = NULL;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
        if (*status >= 300 && *status < 400 && curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &loc) == CURLE_OK && loc &&
            !(*next = strdup(loc)))
            st = fail(msg, n_msg, HEARTH_E_NOMEM, "out of memory");
    }
    curl_slist_free_all(resolve);
    curl_easy_cleanup(c);
    return st;
}

hearth_status hearth_media_fetch(const char *url, hearth_media_kind want, const hearth_media_fetch_opts *o,
                                 hearth_media_fetched *out, char *msg, size_t n_msg) {
    hearth_media_fetch_opts d = hearth_media_fetch_opts_default();
    if (!o) o = &d;
    size_t  max = o->max_bytes ? o->max_bytes : HEARTH_MEDIA_MAX_BYTES;
    long    timeout = o->timeout_ms > 0 ? o->timeout_ms : 10000;
    int     max_hops = o->max_redirects == 0 ? 5 : o->max_redirects < 0 ? 0 : o->max_redirects;
    int64_t deadline = now_ms() + timeout;
    char   *cur = strdup(url);
    sink    k = {.max = max};
    hearth_status st = HEARTH_OK;
    *out = (hearth_media_fetched){0};
    hearth_media_fetch_global_init();
    if (!cur) return fail(msg, n_msg, HEARTH_E_NOMEM, "out of memory");
    for (int n_hops = 0;; n_hops++) {
        target t;
        char   addr[INET6_ADDRSTRLEN];
        long   status = 0;
        char  *next = NULL;
        if ((st = parse_url(cur, &t, msg, n_msg)) != HEARTH_OK) break;
        if ((st = resolve_checked(&t, o, (long)(deadline - now_ms()), addr, sizeof addr, msg, n_msg)) != HEARTH_OK)
            break;
        long left = (long)(deadline - now_ms());
        if (left <= 0) {
            st = fail(msg, n_msg, HEARTH_E_LIMIT, "'%.200s': the fetch took longer than its %ld ms limit", cur, timeout);
            break;
        }
        hearth_buf_reset(&k.body);
        if ((st = hop(cur, &t, addr, left, timeout, &k, &status, &next, msg, n_msg)) != HEARTH_OK) break;
        if (next) {
            free(cur);
            cur = next;
            if (n_hops + 1 > max_hops) {
                st = fail(msg, n_msg, HEARTH_E_INVALID, "'%.200s': more than %d redirects", url, max_hops);
                break;
            }
            out->n_hops = n_hops + 1;
            continue;
        }
        if (status < 200 || status > 299) {
            st = fail(msg, n_msg, HEARTH_E_INVALID, "'%.200s' answered HTTP %ld", cur, status);
            break;
        }
        if (k.body.oom) {
            st = fail(msg, n_msg, HEARTH_E_NOMEM, "out of memory");
            break;
        }
        hearth_media_kind kind;
        const char *mime = hearth_media_sniff((const uint8_t *)k.body.p, k.body.len, &kind);
        if (!mime || (want != HEARTH_MEDIA_FILE && kind != want)) {
            st = fail(msg, n_msg, HEARTH_E_INVALID, "'%.200s' is not %s data (its bytes match no supported format)",
                      cur, want == HEARTH_MEDIA_AUDIO ? "audio" : want == HEARTH_MEDIA_IMAGE ? "image" : "image or audio");
            break;
        }
        out->n_bytes = k.body.len;
        out->mime = mime;
        out->kind = kind;
        out->bytes = (uint8_t *)hearth_buf_take(&k.body);
        if (!out->bytes) st = fail(msg, n_msg, HEARTH_E_NOMEM, "out of memory");
        break;
    }
    free(cur);
    hearth_buf_fini(&k.body);
    return st;
}
