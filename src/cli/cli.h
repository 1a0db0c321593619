/*
 * cli.h - shared pieces of the command line: flag parsing helpers, verb entry points.
 * The CLI is the only layer that prints for humans and the only one that exits (main.c).
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "store/download.h"

/* A verb returns the process exit status: 0 ok, 1 failure, 2 usage error. */
int cli_generate(int argc, char **argv);
int cli_fuse(int argc, char **argv);
/* `hearth serve` and bare `hearth` (cmd_serve.c, which also defines its usage text). */
int cli_serve(int argc, char **argv);
extern const char cli_usage_serve[];
/* serve as an engine child of `serve --isolate` (serve_isolate.h): quiet, on --unix only. */
int cli_serve_child(int argc, char **argv);
int cli_help(int argc, char **argv);
/* The model store verbs (cmd_scan.c, cmd_ls.c, ...); each file also defines its usage text. */
int cli_scan(int argc, char **argv);
int cli_ls(int argc, char **argv);
int cli_get(int argc, char **argv);
int cli_gc(int argc, char **argv);
int cli_fit(int argc, char **argv);
extern const char cli_usage_scan[], cli_usage_ls[], cli_usage_get[], cli_usage_gc[], cli_usage_fit[];
/* `hearth template` (cmd_template.c): render a chat template, print the prompt or its ids. */
int cli_template(int argc, char **argv);
extern const char cli_usage_template[];

/* `hearth benchmark` and `hearth evals` (cmd_benchmark.c): speed runs and their records. */
int cli_benchmark(int argc, char **argv);
int cli_evals(int argc, char **argv);
extern const char cli_usage_benchmark[], cli_usage_evals[];

/* `hearth perplexity` (cmd_perplexity.c): a model's perplexity on a text, as llama.cpp measures it. */
int cli_perplexity(int argc, char **argv);
extern const char cli_usage_perplexity[];

/* `hearth embed` (cmd_embed.c): sentence embeddings from an encoder checkpoint, no server. */
int cli_embed(int argc, char **argv);
/* `hearth fetch-media URL`: the server's guarded media fetch, once (a diagnostic). */
int cli_fetch_media(int argc, char **argv);
extern const char cli_usage_fetch_media[];
extern const char cli_usage_embed[];

/* Print "hearth: <msg>" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The flag loop of every verb: inside `for (int i = 1; i < argc; i++)` with the argument in
 * `a` and the next one (or NULL) in `val`, FLAG(name) tests the argument and NEEDVAL() takes
 * the next one as its value, or prints an error and returns 2 from the parser. */
#define FLAG(name) (!strcmp(a, (name)))
#define NEEDVAL()                                                                          \
    do {                                                                                   \
        if (!val) {                                                                        \
            cli_error("%s needs a value", a);                                              \
            return 2;                                                                      \
        }                                                                                  \
        i++;                                                                               \
    } while (0)

/* --threads N, --device auto|cpu|cuda and --ctx N (ctx NULL: the verb has no --ctx): where and
 * how large a model runs, for generate, serve and benchmark. argv[*i] is consumed with its
 * value (*i advanced) and 1 returned when it is one of them, 0 when not, -1 after an error. */
int cli_run_flag(int argc, char **argv, int *i, long long *threads, hearth_device *device, long long *ctx);

/* Flag values: parse strictly; false (with an error printed) on a malformed number. */
bool cli_parse_int(const char *flag, const char *s, long long lo, long long hi, long long *out);
bool cli_parse_float(const char *flag, const char *s, double lo, double hi, double *out);

/* Download progress on stderr (cmd_get.c): a bar on a terminal, a line every 5 s otherwise,
 * and one line per file. Pass as hearth_get_params.on_progress with a cli_dl_view as user;
 * cli_dl_clear wipes the bar before anything else is printed. */
typedef struct {
    bool   tty;
    double last_line; /* seconds: the last plain progress line */
    int    drawn;     /* columns of the bar on screen */
} cli_dl_view;
void cli_dl_progress(const hearth_dl_progress *p, void *user);
void cli_dl_clear(cli_dl_view *v);

/* Bare `hearth` with no starter model in the hub cache (firstrun.c): pick one by fit for this
 * machine, download it with progress and return its path (malloc'ed) in *path. The exit
 * status: 0, 1 failure (printed), 130 interrupted. */
int cli_first_run(char **path);

/* The help text of a verb, or NULL. */
const char *cli_help_text(const char *verb);
