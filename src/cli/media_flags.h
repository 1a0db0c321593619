/*
 * media_flags.h - the media fetcher's flags (server/media_fetch.h), shared by `hearth serve`
 * and the diagnostic `hearth fetch-media`:
 *
 *   --allow-private-media      image and audio URLs may point at private, loopback and
 *                              link-local addresses (default: refused)
 *   --media-max-bytes N        test-only: the cap on one image or audio item (default 64 MB)
 *   --media-timeout-ms N       test-only: the time limit of one fetch (default 10000)
 *   --media-test-allow-addr A  test-only: allow this one literal address (e.g. 127.0.0.1)
 *                              although its class is blocked, so a test's loopback server
 *                              can play a public host whose redirects are then checked
 *
 * The test-only flags are left out of --help: they exist so the guard can be tested against
 * a loopback server with small caps and short limits.
 */
#pragma once
#include "server/media_fetch.h"

/* argv[*i] is a media flag: consume it (and its value). 1: it was one, 0: not one, -1: an
 * error was printed. */
int cli_media_flag(int argc, char **argv, int *i, hearth_media_fetch_opts *o);

#define CLI_MEDIA_FLAGS_USAGE                                                                          \
    "  --allow-private-media image and audio URLs in requests may point at private, loopback\n"     \
    "                        and link-local addresses (refused by default: a request must not\n"   \
    "                        steer the server at its own network or a cloud metadata service)\n"
