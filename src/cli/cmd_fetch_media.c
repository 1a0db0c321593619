/*
 * cmd_fetch_media.c - `hearth fetch-media [flags] URL`: a diagnostic that runs the server's
 * guarded media fetch (server/media_fetch.h) once and says what it got, or what a request
 * naming that URL would be answered with and why.
 *
 * It exists so the guard can be checked end to end before any served model can see: the
 * server fetches only after a model has taken the part, which no text-only model does.
 * Output: "image/png 1234 bytes, 0 redirects" on stdout and exit 0; or on stderr the HTTP
 * status a request would get and the fetcher's message, exit 1.
 */
#include "cli/cli.h"
#include "cli/media_flags.h"
#include "server/errors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cli_usage_fetch_media[] =
    "usage: hearth fetch-media [--kind image|audio|any] [--allow-private-media] URL\n"
    "\n"
    "Fetch URL as the server fetches an image or audio URL of a request: http and https only,\n"
    "the host resolved once and every address checked (private, loopback, link-local and\n"
    "similar addresses refused unless --allow-private-media), redirects checked hop by hop (5\n"
    "at most), 10 s and 64 MB at most, the type sniffed from the bytes. Prints the type and\n"
    "size, or the HTTP status a request would get and why.\n"
    "\n"
    "  --kind K              the kind wanted: image (default), audio or any\n"
    CLI_MEDIA_FLAGS_USAGE;

int cli_fetch_media(int argc, char **argv) {
    hearth_media_fetch_opts o = hearth_media_fetch_opts_default();
    hearth_media_kind       want = HEARTH_MEDIA_IMAGE;
    const char             *url = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int         r = cli_media_flag(argc, argv, &i, &o);
        if (r < 0) return 2;
        if (r > 0) continue;
        if (FLAG("--help") || FLAG("-h")) {
            fputs(cli_usage_fetch_media, stdout);
            return 0;
        } else if (FLAG("--kind")) {
            NEEDVAL();
            if (!strcmp(val, "image")) want = HEARTH_MEDIA_IMAGE;
            else if (!strcmp(val, "audio")) want = HEARTH_MEDIA_AUDIO;
            else if (!strcmp(val, "any")) want = HEARTH_MEDIA_FILE;
            else {
                cli_error("--kind expects image, audio or any (got \"%s\")", val);
                return 2;
            }
        } else if (a[0] == '-' && a[1]) {
            cli_error("unknown flag '%s' (try 'hearth fetch-media --help')", a);
            return 2;
        } else if (!url) {
            url = a;
        } else {
            cli_error("unexpected argument '%s'", a);
            return 2;
        }
    }
    if (!url) {
        fputs(cli_usage_fetch_media, stderr);
        return 2;
    }
    hearth_media_fetched f;
    char                 msg[512] = "";
    hearth_status        st = hearth_media_fetch(url, want, &o, &f, msg, sizeof msg);
    if (st != HEARTH_OK) {
        cli_error("fetch-media: %d: %s", hearth_api_http_status(st), msg);
        return 1;
    }
    printf("%s %zu bytes, %d redirects\n", f.mime, f.n_bytes, f.n_hops);
    free(f.bytes);
    return 0;
}
