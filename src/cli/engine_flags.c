/*
 * engine_flags.c - parsing of the engine's levers for serve and generate; see engine_flags.h.
 */
#include "cli/engine_flags.h"
#include "cli/cli.h"
#include "store/fit.h"
#include "store/units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_engine_flags_init(cli_engine_flags *f) {
    *f = (cli_engine_flags){.batch = 0, .block_size = 0, .prompt_cache = -1, .kv_budget = -1,
                            .memory_budget = -1};
}

/* A size in GB, or with its own unit. */
static bool parse_gb(const char *flag, const char *s, int64_t *out) {
    char *end;
    double gb = strtod(s, &end);
    if (end != s && *end == 0) {
        if (!(gb >= 0 && gb < 9e6)) {
            cli_error("%s expects a size in GB of 0 or more (got \"%s\")", flag, s);
            return false;
        }
        *out = (int64_t)(gb * 1e9);
        return true;
    }
    if (!hearth_parse_bytes(s, out)) {
        cli_error("%s expects a size in GB, or with a unit such as 512MB (got \"%s\")", flag, s);
        return false;
    }
    return true;
}

int cli_engine_flag(int argc, char **argv, int *i, cli_engine_flags *f) {
    const char *a = argv[*i];
    bool batch = !strcmp(a, "--batch") || !strcmp(a, "--decode-concurrency");
    bool bsz = !strcmp(a, "--paged-kv-block-size");
    int64_t *size = !strcmp(a, "--prompt-cache")    ? &f->prompt_cache
                    : !strcmp(a, "--kv-budget")     ? &f->kv_budget
                    : !strcmp(a, "--memory-budget") ? &f->memory_budget
                                                    : NULL;
    if (!batch && !bsz && !size) return 0;
    if (*i + 1 >= argc) {
        cli_error("%s needs a value", a);
        return -1;
    }
    const char *val = argv[++*i];
    if (batch) return cli_parse_int(a, val, 1, 256, &f->batch) ? 1 : -1;
    if (bsz) return cli_parse_int(a, val, 1, 4096, &f->block_size) ? 1 : -1;
    if (!parse_gb(a, val, size)) return -1;
    if (size != &f->prompt_cache && *size == 0) {
        cli_error("%s must be more than 0", a);
        return -1;
    }
    return 1;
}

void cli_engine_flags_apply(const cli_engine_flags *f, hearth_engine_params *ep) {
    if (f->batch > 0) ep->batch = (int32_t)f->batch;
    if (f->block_size > 0) ep->block_size = (int32_t)f->block_size;
    ep->prompt_cache = f->prompt_cache >= 0 ? f->prompt_cache : (int64_t)8e9;
    if (f->kv_budget > 0) ep->kv_budget = f->kv_budget;
    ep->memory_budget = f->memory_budget > 0 ? f->memory_budget
                                             : (int64_t)(HEARTH_FIT_BUDGET_SHARE * (double)hearth_fit_ram_bytes());
}

void cli_engine_levers(const hearth_engine *e, char *buf, size_t cap) {
    hearth_engine_info in;
    hearth_engine_info_get(e, &in);
    char pool[32], pc[32], mem[32];
    hearth_fmt_bytes(in.pool_bytes, pool, sizeof pool);
    hearth_fmt_bytes(in.prompt_cache_bytes, pc, sizeof pc);
    if (in.memory_budget > 0) hearth_fmt_bytes(in.memory_budget, mem, sizeof mem);
    else snprintf(mem, sizeof mem, "none");
    snprintf(buf, cap,
             "batch %d, KV pool %s (%d blocks of %d tokens), prompt cache %s, memory budget %s, "
             "max request %d tokens",
             in.batch, pool, in.n_blocks, in.block_size, in.prompt_cache_bytes ? pc : "off", mem,
             in.max_request_tokens);
}
