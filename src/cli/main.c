/*
 * main.c - the hearth command line: verb dispatch. The only place that calls exit() (via the
 * return of main); verbs return an exit status.
 */
#include "cli/cli.h"
#include "cli/serve_isolate.h"
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("hearth: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

bool cli_parse_int(const char *flag, const char *s, long long lo, long long hi, long long *out) {
    char *end = NULL;
    if (!s || !*s) goto bad;
    long long v = strtoll(s, &end, 10);
    if (*end || v < lo || v > hi) goto bad;
    *out = v;
    return true;
bad:
    cli_error("%s expects an integer in [%lld, %lld] (got \"%s\")", flag, lo, hi, s ? s : "");
    return false;
}

bool cli_parse_float(const char *flag, const char *s, double lo, double hi, double *out) {
    char *end = NULL;
    if (!s || !*s) goto bad;
    double v = strtod(s, &end);
    if (*end || !(v >= lo && v <= hi)) goto bad;
    *out = v;
    return true;
bad:
    cli_error("%s expects a number in [%g, %g] (got \"%s\")", flag, lo, hi, s ? s : "");
    return false;
}

int cli_run_flag(int argc, char **argv, int *i, long long *threads, hearth_device *device, long long *ctx) {
    const char *a = argv[*i], *val = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!FLAG("--threads") && !FLAG("--device") && !(ctx && FLAG("--ctx"))) return 0;
    if (!val) {
        cli_error("%s needs a value", a);
        return -1;
    }
    ++*i;
    if (FLAG("--threads")) return cli_parse_int(a, val, 1, 1024, threads) ? 1 : -1;
    if (FLAG("--ctx")) return cli_parse_int(a, val, 16, 1 << 20, ctx) ? 1 : -1;
    if (hearth_device_parse(val, device)) return 1;
    cli_error("--device expects auto, cpu or cuda (got \"%s\")", val);
    return -1;
}

int main(int argc, char **argv) {
    const char *lvl = getenv("HEARTH_LOG");
    if (lvl) {
        if (!strcmp(lvl, "debug")) hearth_log_set_level(HEARTH_LOG_DEBUG);
        else if (!strcmp(lvl, "info")) hearth_log_set_level(HEARTH_LOG_INFO);
        else if (!strcmp(lvl, "error")) hearth_log_set_level(HEARTH_LOG_ERROR);
    }
    if (argc < 2) return cli_serve(argc, argv); /* bare `hearth` serves the starter model */
    const char *verb = argv[1];
    if (!strcmp(verb, "--version") || !strcmp(verb, "-V") || !strcmp(verb, "-v") || !strcmp(verb, "version")) {
        printf("hearth %s\n", HEARTH_VERSION);
        return 0;
    }
    if (!strcmp(verb, "help") || !strcmp(verb, "--help") || !strcmp(verb, "-h")) return cli_help(argc - 1, argv + 1);
    /* `hearth VERB ... --help`: the verb's usage, as `hearth help VERB` prints it */
    for (int i = 2; i < argc && verb[0] != '-'; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            if (!cli_help_text(verb)) break; /* not a verb: the error below says so */
            char *args[] = {"help", argv[1], NULL};
            return cli_help(2, args);
        }
    if (!strcmp(verb, "serve")) return cli_serve(argc - 1, argv + 1);
    if (!strcmp(verb, "_engine")) return cli_engine_child(argc - 1, argv + 1); /* serve --isolate's */
    if (verb[0] == '-' && verb[1] == '-') return cli_serve(argc, argv); /* `hearth --port N` */
    if (!strcmp(verb, "generate") || !strcmp(verb, "gen")) return cli_generate(argc - 1, argv + 1);
    if (!strcmp(verb, "fuse")) return cli_fuse(argc - 1, argv + 1);
    if (!strcmp(verb, "scan")) return cli_scan(argc - 1, argv + 1);
    if (!strcmp(verb, "ls")) return cli_ls(argc - 1, argv + 1);
    if (!strcmp(verb, "get")) return cli_get(argc - 1, argv + 1);
    if (!strcmp(verb, "gc")) return cli_gc(argc - 1, argv + 1);
    if (!strcmp(verb, "fit")) return cli_fit(argc - 1, argv + 1);
    if (!strcmp(verb, "benchmark") || !strcmp(verb, "bench")) return cli_benchmark(argc - 1, argv + 1);
    if (!strcmp(verb, "evals")) return cli_evals(argc - 1, argv + 1);
    if (!strcmp(verb, "template")) return cli_template(argc - 1, argv + 1);
    if (!strcmp(verb, "perplexity") || !strcmp(verb, "ppl")) return cli_perplexity(argc - 1, argv + 1);
    if (!strcmp(verb, "embed")) return cli_embed(argc - 1, argv + 1);
    if (!strcmp(verb, "fetch-media")) return cli_fetch_media(argc - 1, argv + 1);
    cli_error("unknown verb '%s' (try 'hearth help')", verb);
    return 2;
}
