/*
 * media_addr.c - which addresses a fetched URL may connect to (see media_fetch.h).
 *
 * IPv4 ranges from RFC 6890's special-purpose registry; the ones a server-side fetch must
 * never reach by default are private networks, loopback, link-local (cloud metadata at
 * 169.254.169.254), "this network" 0/8, multicast, broadcast and the reserved blocks. IPv6:
 * ::1, ::, fe80::/10, fc00::/7, ff00::/8, plus every form that embeds an IPv4 address - an
 * attacker who cannot write 127.0.0.1 writes ::ffff:127.0.0.1 or 64:ff9b::7f00:1 - which are
 * classified by the IPv4 address they carry.
 */
#include "server/media_fetch.h"

#include <string.h>
#include <sys/socket.h>

static hearth_addr_class v4(const uint8_t *a) {
    uint8_t b0 = a[0], b1 = a[1], b2 = a[2];
    if (b0 == 0) return HEARTH_ADDR_UNSPECIFIED;                          /* 0/8 */
    if (b0 == 127) return HEARTH_ADDR_LOOPBACK;                           /* 127/8 */
    if (b0 == 10) return HEARTH_ADDR_PRIVATE;                             /* 10/8 */
    if (b0 == 172 && (b1 & 0xF0) == 16) return HEARTH_ADDR_PRIVATE;       /* 172.16/12 */
    if (b0 == 192 && b1 == 168) return HEARTH_ADDR_PRIVATE;               /* 192.168/16 */
    if (b0 == 100 && (b1 & 0xC0) == 64) return HEARTH_ADDR_PRIVATE;       /* 100.64/10 CGNAT */
    if (b0 == 169 && b1 == 254) return HEARTH_ADDR_LINK_LOCAL;            /* 169.254/16 */
    if (a[0] == 255 && a[1] == 255 && a[2] == 255 && a[3] == 255) return HEARTH_ADDR_BROADCAST;
    if ((b0 & 0xF0) == 224) return HEARTH_ADDR_MULTICAST;                 /* 224/4 */
    if ((b0 & 0xF0) == 240) return HEARTH_ADDR_RESERVED;                  /* 240/4 */
    if (b0 == 192 && b1 == 0 && (b2 == 0 || b2 == 2)) return HEARTH_ADDR_RESERVED; /* 192.0.0/24, TEST-NET-1 */
    if (b0 == 198 && (b1 & 0xFE) == 18) return HEARTH_ADDR_RESERVED;      /* 198.18/15 benchmarking */
    if (b0 == 198 && b1 == 51 && b2 == 100) return HEARTH_ADDR_RESERVED;  /* TEST-NET-2 */
    if (b0 == 203 && b1 == 0 && b2 == 113) return HEARTH_ADDR_RESERVED;   /* TEST-NET-3 */
    if (b0 == 192 && b1 == 88 && b2 == 99) return HEARTH_ADDR_RESERVED;   /* 6to4 relay anycast */
    return HEARTH_ADDR_PUBLIC;
}

static bool zero(const uint8_t *a, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (a[i]) return false;
    return true;
}

static hearth_addr_class v6(const uint8_t *a) {
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
    static const uint8_t nat64[12] = {0, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0};
    if (zero(a, 15) && a[15] == 1) return HEARTH_ADDR_LOOPBACK;  /* ::1 */
    if (zero(a, 16)) return HEARTH_ADDR_UNSPECIFIED;             /* :: */
    if (!memcmp(a, mapped, 12)) return v4(a + 12);               /* ::ffff:a.b.c.d */
    if (zero(a, 12)) return v4(a + 12);                          /* ::a.b.c.d (deprecated compatible) */
    if (!memcmp(a, nat64, 12)) return v4(a + 12);                /* 64:ff9b::/96 well-known NAT64 */
    if (a[0] == 0 && a[1] == 0x64 && a[2] == 0xFF && a[3] == 0x9B && a[4] == 0 && a[5] == 1)
        return HEARTH_ADDR_RESERVED;                             /* 64:ff9b:1::/48 local-use NAT64 */
    if (a[0] == 0x20 && a[1] == 0x02) return v4(a + 2);          /* 2002:V4ADDR::/48 6to4 */
    if ((a[0] & 0xFE) == 0xFC) return HEARTH_ADDR_PRIVATE;       /* fc00::/7 unique local */
    if (a[0] == 0xFE && (a[1] & 0xC0) == 0x80) return HEARTH_ADDR_LINK_LOCAL; /* fe80::/10 */
    if (a[0] == 0xFE && (a[1] & 0xC0) == 0xC0) return HEARTH_ADDR_RESERVED;   /* fec0::/10 site-local */
    if (a[0] == 0xFF) return HEARTH_ADDR_MULTICAST;              /* ff00::/8 */
    if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0D && a[3] == 0xB8) return HEARTH_ADDR_RESERVED; /* doc */
    if (a[0] == 0x01 && zero(a + 1, 7)) return HEARTH_ADDR_RESERVED; /* 100::/64 discard */
    return HEARTH_ADDR_PUBLIC;
}

hearth_addr_class hearth_media_addr_class(int family, const uint8_t *addr) {
    if (family == AF_INET) return v4(addr);
    if (family == AF_INET6) return v6(addr);
    return HEARTH_ADDR_RESERVED;
}

const char *hearth_media_addr_class_name(hearth_addr_class c) {
    switch (c) {
    case HEARTH_ADDR_PUBLIC: return "public";
    case HEARTH_ADDR_PRIVATE: return "private";
    case HEARTH_ADDR_LOOPBACK: return "loopback";
    case HEARTH_ADDR_LINK_LOCAL: return "link-local";
    case HEARTH_ADDR_UNSPECIFIED: return "unspecified";
    case HEARTH_ADDR_MULTICAST: return "multicast";
    case HEARTH_ADDR_BROADCAST: return "broadcast";
    case HEARTH_ADDR_RESERVED: return "reserved";
    }
    return "reserved";
}
