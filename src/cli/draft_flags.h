/*
 * draft_flags.h - speculative decoding on the command line (docs/engine.md "Speculative
 * decoding", docs/cli.md), shared by `hearth serve`, `hearth generate` and `hearth benchmark`:
 *
 *   --draft-model MODEL        a second model (path or hub-cache query, resolved as the main
 *                              model is) that drafts for the main one: kind two-model
 *   --draft-kind KIND          two-model | ngram (prompt lookup, no draft model) | assistant
 *                              (a Gemma 4 assistant drafter for a Gemma 4 model) | dspark |
 *                              deepspec (the last two are refused: not in hearth); without it:
 *                              assistant when --draft-model is a gemma4_assistant checkpoint,
 *                              two-model for any other --draft-model, else off
 *   --num-draft-tokens N       drafts per verify round, at most (default 3; ngram 10)
 *   --ngram-min N, --ngram-max N   ngram: the shortest and longest match (defaults 1 and 3)
 *   --fixed-draft              always ask for N drafts (default: adaptive per sequence)
 *
 * --draft-kind two-model with an assistant checkpoint is refused. The ngram and drafts flags
 * without a kind, and the ngram flags with another kind, print a warning and are ignored;
 * --draft-model with --draft-kind ngram too.
 *
 * Parsing and loading only; the engine checks the rest (a draft model's vocabulary).
 */
#pragma once
#include <stdbool.h>

#include "engine/engine.h"
#include "model/model.h"

typedef struct {
    const char *model;               /* --draft-model, or NULL */
    int         kind;                /* -1: auto; else a hearth_draft_kind */
    long long   n_draft, ngram_min, ngram_max; /* 0: the default */
    bool        fixed;
    const char *ngram_flag;          /* the last --ngram-* flag given (for the warning) */
    const char *n_draft_flag;        /* --num-draft-tokens given (for the warning) */
} cli_draft_flags;

void cli_draft_flags_init(cli_draft_flags *d);
/* argv[*i] is a draft flag: consume it (and its value, advancing *i). Returns 1 when it was one,
 * 0 when it is not a draft flag, -1 after printing an error. */
int  cli_draft_flag(int argc, char **argv, int *i, cli_draft_flags *d);
/* After every flag was read: the checks across flags (--ngram-min <= --ngram-max; a model
 * kind without --draft-model); false after printing an error (a usage error). */
bool cli_draft_flags_check(const cli_draft_flags *d);
/* Fill ep->spec from the flags (warnings for flags that do nothing); for two-model and
 * assistant, resolve and load the draft model into *draft (the caller frees it after the
 * engine), the kind detected from it when not given. Returns 0, or 1 after printing why not. */
int  cli_draft_apply(const cli_draft_flags *d, hearth_engine_params *ep, hearth_model **draft);
/* "ngram (10 drafts, n-grams 1..3)" / "two-model (3 drafts)" / "off" of a running engine. */
void cli_draft_describe(const hearth_engine *e, char *buf, size_t cap);

#define CLI_DRAFT_FLAGS_USAGE                                                                              \
    "  --draft-model MODEL   speculative decoding: this smaller model (same vocabulary; path or\n"       \
    "                        hub-cache query) drafts tokens the model verifies in one step; the\n"      \
    "                        output is the same as without it, faster when drafts are accepted\n"       \
    "  --draft-kind KIND     two-model (the default with --draft-model), assistant (a Gemma 4\n"       \
    "                        assistant drafter, gemma4_assistant, for a Gemma 4 model: detected\n"     \
    "                        from --draft-model; it reads the model's own state; CPU only) or\n"       \
    "                        ngram (drafts copied from earlier in the sequence: no draft model,\n"     \
    "                        good for edits of code or text in the prompt); dspark and deepspec\n"    \
    "                        are not implemented in hearth\n"                                            \
    "  --num-draft-tokens N  drafts per step, at most (default 3; ngram 10; 64 at most)\n"              \
    "  --ngram-min N, --ngram-max N   ngram: the shortest and longest run of tokens matched\n"       \
    "                        (defaults 1 and 3)\n"                                                       \
    "  --fixed-draft         always draft --num-draft-tokens (default: adaptive, fewer after a\n"      \
    "                        rejection, more while drafts are accepted)\n"
