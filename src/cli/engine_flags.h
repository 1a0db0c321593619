/*
 * engine_flags.h - the engine's levers on the command line, shared by `hearth serve` and
 * `hearth generate` (docs/engine.md):
 *
 *   --batch N (--decode-concurrency N)   sequences per step (default 8; 1 = strictly serial)
 *   --prompt-cache GB                    unreferenced cached KV kept (default 8; 0 disables)
 *   --kv-budget GB                       the KV pool's size (default: from the memory budget)
 *   --memory-budget GB                   weights + KV + transients (default 0.75 x RAM)
 *   --paged-kv-block-size N              tokens per KV block (default 16)
 *
 * A size is a number of GB (10^9 bytes, fractions allowed) or a number with a unit ("512MB",
 * "1.5GiB"). Parsing only; the engine decides what the values mean.
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "engine/engine.h"

typedef struct {
    long long batch, block_size;                      /* 0: the default */
    int64_t   prompt_cache, kv_budget, memory_budget; /* bytes; -1: the default */
} cli_engine_flags;

void cli_engine_flags_init(cli_engine_flags *f);
/* argv[*i] is an engine flag: consume it (and its value, advancing *i). Returns 1 when it was
 * one, 0 when it is not an engine flag, -1 after printing an error. */
int  cli_engine_flag(int argc, char **argv, int *i, cli_engine_flags *f);
/* Fill the engine params from the flags (the memory budget defaults to 0.75 x RAM). */
void cli_engine_flags_apply(const cli_engine_flags *f, hearth_engine_params *ep);
/* The levers line of a ready card ("batch 8, KV pool 1.2 GB (...)"), into buf. */
void cli_engine_levers(const hearth_engine *e, char *buf, size_t cap);

/* The usage lines of these flags, for the verbs' help texts. */
#define CLI_ENGINE_FLAGS_USAGE                                                                            \
    "  --batch N             sequences decoded together (default 8; 1 = strictly serial);\n"            \
    "                        --decode-concurrency N is the same\n"                                        \
    "  --prompt-cache GB     KV of finished requests kept for prefix reuse (default 8; 0 disables)\n"    \
    "  --kv-budget GB        size of the KV block pool (default: what the memory budget leaves)\n"      \
    "  --memory-budget GB    weights + KV + transients (default 0.75 x RAM); a model that cannot\n"    \
    "                        serve one request of the full context refuses to load\n"                   \
    "  --paged-kv-block-size N   tokens per KV block (default 16)\n"
