/*
 * guard.c - the front door's checks on a request head (see guard.h for what and why).
 *
 * Host values are split by hand ("name", "name:port", "[v6]", "[v6]:port"); an IP literal is
 * compared as an address (inet_pton), so 127.000.000.001 or [0:0::1] are not a way around the
 * list, and anything that is neither a plain DNS name nor an address is refused. The machine's
 * own addresses (for a wildcard bind) are read with getifaddrs at the time of the request,
 * so an address that DHCP handed out after start is known too; only IP-literal Hosts pay
 * for that call.
 */
#include "server/guard.h"
#include "server/server_internal.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <ifaddrs.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static enum MHD_Result collect_one(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    (void)kind;
    hearth_req_head *h = cls;
    if (!key) return MHD_YES;
    if (!strcasecmp(key, "Host")) {
        if (!h->n_host++) h->host = value ? value : "";
    } else if (!strcasecmp(key, "Content-Length")) {
        if (!h->n_content_length++) h->content_length = value ? value : "";
        else if (strcmp(h->content_length, value ? value : "")) h->content_length_differ = true;
    } else if (!strcasecmp(key, "Transfer-Encoding")) {
        if (!h->n_transfer_encoding++) h->transfer_encoding = value ? value : "";
    } else if (!strcasecmp(key, "Origin")) {
        if (!h->origin) h->origin = value ? value : "";
    }
    return MHD_YES;
}

void hearth_guard_collect(struct MHD_Connection *c, const char *version, const char *method, hearth_req_head *h) {
    bool nul = h->nul_in_target;
    memset(h, 0, sizeof *h);
    h->nul_in_target = nul;
    h->version = version;
    h->method = method;
    MHD_get_connection_values(c, MHD_HEADER_KIND, collect_one, h);
}

bool hearth_guard_target_has_nul(const char *raw) {
    for (const char *p = raw ? strchr(raw, '%') : NULL; p; p = strchr(p + 1, '%'))
        if (p[1] == '0' && p[2] == '0') return true;
    return false;
}

/* s without leading and trailing spaces and tabs: [*b, *e). */
static void trim(const char *s, const char **b, const char **e) {
    *b = s;
    *e = s + strlen(s);
    while (*b < *e && (**b == ' ' || **b == '\t')) (*b)++;
    while (*e > *b && ((*e)[-1] == ' ' || (*e)[-1] == '\t')) (*e)--;
}

bool hearth_guard_framing(const hearth_req_head *h, hearth_api_err *e) {
    if (h->nul_in_target)
        return hearth_api_fail(e, HEARTH_E_FORMAT, "invalid_request", NULL,
                               "the request path holds %%00 (a NUL byte), which no route takes");
    if (h->n_host > 1)
        return hearth_api_fail(e, HEARTH_E_FORMAT, "invalid_request", NULL, "the request has %d Host headers", h->n_host);
    if (!h->n_host && h->version && !strcmp(h->version, "HTTP/1.1"))
        return hearth_api_fail(e, HEARTH_E_FORMAT, "invalid_request", NULL, "an HTTP/1.1 request needs a Host header");
    if (h->n_transfer_encoding && h->n_content_length)
        return hearth_api_fail(e, HEARTH_E_FORMAT, "invalid_request", NULL,
                               "the request has both Content-Length and Transfer-Encoding: send one");
    if (h->n_transfer_encoding) {
        const char *b, *end;
        trim(h->transfer_encoding, &b, &end);
        if (h->n_transfer_encoding > 1 || end - b != 7 || strncasecmp(b, "chunked", 7))
            return hearth_api_fail(e, HEARTH_E_FORMAT, "invalid_request", NULL,
                                   "Transfer-Encoding '%.64s' is not supported: send the body with Content-Length "
                                   "or as 'Transfer-Encoding: chunked' alone",
                                   h->transfer_encoding);
    }
    if (h->content_length_differ)
        return hearth_api_fail(e, HEARTH_E_FORMAT, "invalid_request", NULL,
                               "the request has Content-Length headers that differ");
    return true;
}

/* A Host value split: the name (brackets off, lower case, one trailing dot off) and the port
 * (-1 when none). false when it is not "name[:port]" or "[v6][:port]". */
static bool split_host(const char *v, size_t n, char *name, size_t cap, int *port) {
    const char *p = v, *end = v + n, *stop;
    size_t k;
    *port = -1;
    if (p < end && *p == '[') {
        stop = memchr(p, ']', (size_t)(end - p));
        if (!stop) return false;
        p++;
        k = (size_t)(stop - p);
        stop++;
    } else {
        stop = memchr(p, ':', (size_t)(end - p));
        if (!stop || memchr(stop + 1, ':', (size_t)(end - stop - 1))) stop = end; /* bare IPv6: no port */
        k = (size_t)(stop - p);
    }
    if (stop < end) {
        if (*stop != ':' || stop + 1 == end || end - stop > 6) return false;
        int pt = 0;
        for (const char *q = stop + 1; q < end; q++) {
            if (!isdigit((unsigned char)*q)) return false;
            pt = pt * 10 + (*q - '0');
        }
        if (pt > 65535) return false;
        *port = pt;
    }
    if (k && p[k - 1] == '.') k--;
    if (!k || k >= cap) return false;
    for (size_t i = 0; i < k; i++) {
        unsigned char c = (unsigned char)p[i];
        if (!isalnum(c) && c != '.' && c != '-' && c != '_' && c != ':') return false;
        name[i] = (char)tolower(c);
    }
    name[k] = 0;
    return true;
}

typedef struct {
    int           family; /* 0: not an address */
    unsigned char a[16];
} addr;

static addr parse_addr(const char *name) {
    addr r = {0};
    if (inet_pton(AF_INET, name, r.a) == 1) r.family = AF_INET;
    else if (inet_pton(AF_INET6, name, r.a) == 1) r.family = AF_INET6;
    return r;
}

static bool is_loopback(const addr *x) {
    static const unsigned char v6_lo[16] = {[15] = 1};
    static const unsigned char v4_mapped[12] = {[10] = 0xff, [11] = 0xff};
    if (x->family == AF_INET) return x->a[0] == 127;
    if (x->family != AF_INET6) return false;
    return !memcmp(x->a, v6_lo, 16) || (!memcmp(x->a, v4_mapped, 12) && x->a[12] == 127);
}

/* Is x an address of one of this machine's interfaces? */
static bool is_own(const addr *x) {
    struct ifaddrs *list = NULL;
    if (getifaddrs(&list) != 0) return false;
    bool hit = false;
    for (struct ifaddrs *i = list; i && !hit; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != x->family) continue;
        if (x->family == AF_INET)
            hit = !memcmp(&((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, x->a, 4);
        else
            hit = !memcmp(&((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr, x->a, 16);
    }
    freeifaddrs(list);
    return hit;
}

/* Is the entry [b, e) of a host list the name (or its address)? ".example.org" matches the
 * name and every name under it. */
static bool entry_matches(const char *b, const char *e, const char *name, const addr *a) {
    char ent[256];
    int port;
    if (e - b == 1 && *b == '*') return true;
    bool sub = b < e && *b == '.';
    if (sub) b++;
    if (!split_host(b, (size_t)(e - b), ent, sizeof ent, &port)) return false;
    if (!strcmp(ent, name)) return true;
    if (sub) {
        size_t n = strlen(name), m = strlen(ent);
        return n > m && name[n - m - 1] == '.' && !strcmp(name + n - m, ent);
    }
    addr ea = parse_addr(ent);
    return a->family && ea.family == a->family && !memcmp(ea.a, a->a, 16);
}

static bool list_has(const char *list, const char *name, const addr *a) {
    for (const char *p = list; p && *p;) {
        while (*p == ' ' || *p == ',') p++;
        const char *q = p;
        while (*q && *q != ',') q++;
        const char *e = q;
        while (e > p && e[-1] == ' ') e--;
        if (e > p && entry_matches(p, e, name, a)) return true;
        p = q;
    }
    return false;
}

static bool wildcard(const char *bind) {
    return !bind || !*bind || !strcmp(bind, "0.0.0.0") || !strcmp(bind, "::") || !strcmp(bind, "[::]");
}

bool hearth_guard_host(const hearth_guard_cfg *g, const char *host, hearth_api_err *e) {
    if (!host) return true; /* HTTP/1.0 without Host: framing has judged it */
    if (g->allowed_hosts && list_has(g->allowed_hosts, "*", &(addr){0})) return true;
    char name[256];
    int port;
    size_t n = strlen(host);
    if (split_host(host, n, name, sizeof name, &port)) {
        addr a = parse_addr(name);
        if (!strcmp(name, "localhost") || is_loopback(&a)) return true;
        if (g->bind_host && !wildcard(g->bind_host) && list_has(g->bind_host, name, &a)) return true;
        if (a.family && wildcard(g->bind_host) && is_own(&a)) return true;
        if (g->allowed_hosts && list_has(g->allowed_hosts, name, &a)) return true;
    }
    return hearth_api_fail(e, HEARTH_E_FORBIDDEN, "host_not_allowed", NULL,
                           "the Host '%.100s' is not a name of this server (a page on another site may be "
                           "reaching it through DNS rebinding); to serve it under this name, start it with "
                           "--allowed-hosts NAME (or --allowed-hosts '*' to answer any)",
                           host);
}

/* Does origin ("scheme://host[:port]") name the same host and port as the Host value? */
static bool same_origin(const char *origin, const char *host) {
    const char *sep = strstr(origin, "://");
    if (!sep || !host) return false;
    size_t ns = (size_t)(sep - origin);
    int dflt;
    if (ns == 4 && !strncasecmp(origin, "http", 4)) dflt = 80;
    else if (ns == 5 && !strncasecmp(origin, "https", 5)) dflt = 443;
    else return false;
    const char *hp = sep + 3;
    char on[256], hn[256];
    int op, hport;
    if (!split_host(hp, strlen(hp), on, sizeof on, &op) || !split_host(host, strlen(host), hn, sizeof hn, &hport))
        return false;
    if (op < 0) op = dflt;
    /* without a port in Host (a proxy in front, default port) the name decides */
    return !strcmp(on, hn) && (hport < 0 || hport == op);
}

bool hearth_guard_origin(const hearth_guard_cfg *g, const hearth_req_head *h, hearth_api_err *e) {
    if (!h->origin || !h->method) return true;
    if (!strcmp(h->method, "GET") || !strcmp(h->method, "HEAD") || !strcmp(h->method, "OPTIONS")) return true;
    if (same_origin(h->origin, h->host)) return true;
    if (g->cors && hearth_guard_origin_listed(g->cors, h->origin)) return true;
    return hearth_api_fail(e, HEARTH_E_FORBIDDEN, "origin_not_allowed", NULL,
                           "requests from the web page origin '%.100s' are not allowed; to let pages of that "
                           "site use this server, start it with --cors '%.100s'",
                           h->origin, h->origin);
}

bool hearth_guard_json_type(const char *ctype, hearth_api_err *e) {
    static const char want[] = "application/json";
    if (ctype) {
        const char *p = ctype;
        while (*p == ' ' || *p == '\t') p++;
        size_t n = sizeof want - 1;
        if (!strncasecmp(p, want, n)) {
            p += n;
            while (*p == ' ' || *p == '\t') p++;
            if (!*p || *p == ';') return true;
        }
    }
    return hearth_api_fail(e, HEARTH_E_MEDIA_TYPE, "unsupported_media_type", NULL,
                           "send the request body as 'Content-Type: application/json' (got %s%.80s%s)",
                           ctype ? "'" : "", ctype ? ctype : "none", ctype ? "'" : "");
}

bool hearth_guard_origin_listed(const char *list, const char *origin) {
    size_t n = strlen(origin);
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == ',') p++;
        const char *q = p;
        while (*q && *q != ',') q++;
        const char *e = q;
        while (e > p && e[-1] == ' ') e--;
        if ((size_t)(e - p) == 1 && *p == '*') return true;
        if ((size_t)(e - p) == n && n && !memcmp(p, origin, n)) return true;
        p = q;
    }
    return false;
}

bool hearth_guard_request(hearth_http_req *r, const char *version, hearth_api_err *e) {
    hearth_req_head h = {.nul_in_target = r->nul_in_target};
    hearth_guard_collect(r->conn, version, r->method, &h);
    hearth_guard_cfg g = {.bind_host = r->srv->host, .allowed_hosts = r->srv->allowed_hosts, .cors = r->srv->cors};
    return hearth_guard_framing(&h, e) && hearth_guard_host(&g, h.host, e) && hearth_guard_origin(&g, &h, e);
}
