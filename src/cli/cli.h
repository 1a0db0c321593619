/*
 * cli.h - shared pieces of the command line: flag parsing helpers, verb entry points.
 * The CLI is the only layer that prints for humans and the only one that exits (main.c).
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>

/* A verb returns the process exit status: 0 ok, 1 failure, 2 usage error. */
int cli_generate(int argc, char **argv);
/* `hearth serve` and bare `hearth` (cmd_serve.c, which also defines its usage text). */
int cli_serve(int argc, char **argv);
extern const char cli_usage_serve[];
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

/* Print "hearth: <msg>" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Flag values: parse strictly; false (with an error printed) on a malformed number. */
bool cli_parse_int(const char *flag, const char *s, long long lo, long long hi, long long *out);
bool cli_parse_float(const char *flag, const char *s, double lo, double hi, double *out);

/* The help text of a verb, or NULL. */
const char *cli_help_text(const char *verb);
