/*
 * media_fetch.h - fetching an image or audio URL from a request, without letting the request
 * steer the server at its own network.
 *
 * A URL in a request is attacker-controlled. The fetcher (libcurl, one easy handle per hop):
 *
 *   1. takes http and https only, with no userinfo ("user@host" hides the real host);
 *   2. resolves the host once (getaddrinfo) and checks every address it gets
 *      (hearth_media_addr_class): a private, loopback, link-local (cloud metadata at
 *      169.254.169.254), unspecified, multicast, broadcast or reserved address - or such an
 *      address wrapped in an IPv4-mapped, IPv4-compatible, NAT64 or 6to4 IPv6 form - refuses
 *      the URL unless allow_private is set;
 *   3. pins the connection to the first checked address with CURLOPT_RESOLVE, so libcurl does
 *      no lookup of its own and DNS rebinding cannot swap the address after the check;
 *   4. follows redirects itself (CURLOPT_FOLLOWLOCATION off): each Location is resolved
 *      against the current URL and goes through 1-3 again, at most max_redirects hops;
 *   5. caps the whole exchange at timeout_ms (all hops together) and the body at max_bytes,
 *      aborting in the write callback the moment the body passes the cap (a Content-Length
 *      over it is refused before the body is read);
 *   6. sniffs the body's type from its bytes (hearth_media_sniff), never from Content-Type: a
 *      body that is no image or audio type the caller wants is refused.
 *
 * Every refusal is HEARTH_E_INVALID / HEARTH_E_LIMIT (the request's fault: 400) with a message
 * that names what was refused and why.
 *
 * The host lookup counts against timeout_ms as well: it runs on a thread of its own and a
 * late one is abandoned (media_lookup.c).
 *
 * Thread rule: any thread; blocking (up to timeout_ms). curl_global_init must have run
 * (hearth_media_fetch_global_init, idempotent).
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "server/media.h"

typedef struct {
    bool        allow_private; /* --allow-private-media: no address is blocked */
    const char *allow_addr;    /* test-only (--media-test-allow-addr): this one literal address
                                * is allowed although its class is blocked; NULL: none */
    size_t      max_bytes;     /* body cap; 0: HEARTH_MEDIA_MAX_BYTES */
    long        timeout_ms;    /* the whole fetch, all hops; 0: 10000 */
    int         max_redirects; /* 0: 5; < 0: none followed */
} hearth_media_fetch_opts;

hearth_media_fetch_opts hearth_media_fetch_opts_default(void);

typedef struct {
    uint8_t          *bytes;   /* malloc'ed, caller frees */
    size_t            n_bytes;
    const char       *mime;    /* static: the sniffed type */
    hearth_media_kind kind;
    int               n_hops;  /* redirects followed */
} hearth_media_fetched;

void          hearth_media_fetch_global_init(void);
/* Fetch url, wanting a body of kind want (HEARTH_MEDIA_FILE: any image or audio type the
 * sniffer knows; nothing else is taken). On failure
 * msg (may be NULL) gets why. */
hearth_status hearth_media_fetch(const char *url, hearth_media_kind want, const hearth_media_fetch_opts *o,
                                 hearth_media_fetched *out, char *msg, size_t n_msg);

/* Classes of addresses (media_addr.c). */
typedef enum {
    HEARTH_ADDR_PUBLIC = 0,
    HEARTH_ADDR_PRIVATE,     /* 10/8, 172.16/12, 192.168/16, 100.64/10 (CGNAT), fc00::/7 */
    HEARTH_ADDR_LOOPBACK,    /* 127/8, ::1 */
    HEARTH_ADDR_LINK_LOCAL,  /* 169.254/16 (cloud metadata), fe80::/10 */
    HEARTH_ADDR_UNSPECIFIED, /* 0.0.0.0/8, :: */
    HEARTH_ADDR_MULTICAST,   /* 224/4, ff00::/8 */
    HEARTH_ADDR_BROADCAST,   /* 255.255.255.255 */
    HEARTH_ADDR_RESERVED,    /* 240/4, 192.0.0/24, 198.18/15, TEST-NETs, 2001:db8::/32,
                              * fec0::/10 (old site-local), 100::/64 (discard) */
} hearth_addr_class;

/* The class of an address: family AF_INET (addr: 4 bytes, network order) or AF_INET6 (16
 * bytes). IPv6 forms that carry an IPv4 address (::ffff:a.b.c.d mapped, ::a.b.c.d compatible,
 * 64:ff9b::/96 and 64:ff9b:1::/48 NAT64, 2002::/16 6to4) take the class of that address. */
hearth_addr_class hearth_media_addr_class(int family, const uint8_t *addr);
const char       *hearth_media_addr_class_name(hearth_addr_class c);

/* ---- the timed host lookup (media_lookup.c), exposed for its tests ---- */
struct addrinfo;
/* getaddrinfo of host for a stream socket, any family; 0 or an EAI_* code */
typedef int (*hearth_resolver_fn)(const char *host, struct addrinfo **res);
int hearth_media_resolve_system(const char *host, struct addrinfo **res);
/* resolve (NULL: hearth_media_resolve_system) host, waiting at most timeout_ms: its result, with
 * *res the caller's to freeaddrinfo; or, when the lookup is later than that, 0 with *res NULL
 * and *late set (the lookup's thread finishes and frees its answer on its own) */
int hearth_media_lookup(const char *host, long timeout_ms, hearth_resolver_fn resolve, struct addrinfo **res,
                        bool *late);
