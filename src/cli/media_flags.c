/*
 * media_flags.c - the media fetcher's flags; see media_flags.h.
 */
#include "cli/media_flags.h"
#include "cli/cli.h"

#include <arpa/inet.h>
#include <string.h>

int cli_media_flag(int argc, char **argv, int *i, hearth_media_fetch_opts *o) {
    const char *a = argv[*i], *val = *i + 1 < argc ? argv[*i + 1] : NULL;
    long long   v;
    if (FLAG("--allow-private-media")) {
        o->allow_private = true;
        return 1;
    }
    if (!FLAG("--media-max-bytes") && !FLAG("--media-timeout-ms") && !FLAG("--media-test-allow-addr")) return 0;
    if (!val) {
        cli_error("%s needs a value", a);
        return -1;
    }
    ++*i;
    if (FLAG("--media-max-bytes")) {
        if (!cli_parse_int(a, val, 1, (long long)1 << 40, &v)) return -1;
        o->max_bytes = (size_t)v;
    } else if (FLAG("--media-timeout-ms")) {
        if (!cli_parse_int(a, val, 1, 600000, &v)) return -1;
        o->timeout_ms = (long)v;
    } else {
        unsigned char buf[16];
        if (inet_pton(AF_INET, val, buf) != 1 && inet_pton(AF_INET6, val, buf) != 1) {
            cli_error("%s expects a literal IPv4 or IPv6 address (got \"%s\")", a, val);
            return -1;
        }
        o->allow_addr = val;
    }
    return 1;
}
