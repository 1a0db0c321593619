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
    *f = (cli_engine_flags){.batch = 0, .block_size = 0, .state_snaps = -1, .prompt_cache = -1, .kv_budget = -1,
                            .memory_budget = -1, .ssd_max = -1, .ssd_demote = -1};
    cli_draft_flags_init(&f->draft);
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

static int set_tier(cli_engine_flags *f, hearth_numerics_tier t) {
    f->numerics.tier = t;
    return 1;
}

int cli_numerics_flag(int argc, char **argv, int *i, cli_engine_flags *f) {
    const char *a = argv[*i];
    if (!strcmp(a, "--l1")) return set_tier(f, HEARTH_NUMERICS_L1);
    if (!strcmp(a, "--l2")) return set_tier(f, HEARTH_NUMERICS_L2);
    if (!strcmp(a, "--l3")) {
        cli_error("--l3 is not a hearth tier: --l1 (llama.cpp's order, the default) or --l2 (with the 8-bit KV cache)");
        return -1;
    }
    if (!strcmp(a, "--force-wire")) {
        f->force_wire = true;
        return 1;
    }
    if (!strncmp(a, "--kv-quant", 10) && (a[10] == 0 || a[10] == '=')) {
        const char *val = a[10] == '=' ? a + 11 : NULL;
        if (!val) {
            if (*i + 1 >= argc) {
                cli_error("--kv-quant needs a value (off, 8, 4, turbo[:k<bits>v<bits>] or config)");
                return -1;
            }
            val = argv[++*i];
        }
        char why[160];
        if (!hearth_kv_quant_parse(val, &f->kv_quant, why, sizeof why)) {
            cli_error("%s", why);
            return -1;
        }
        return 1;
    }
    if (!strncmp(a, "--batch-invariant", 17) && (a[17] == 0 || a[17] == '=')) {
        const char *val = a[17] == '=' ? a + 18 : NULL;
        if (!val) {
            if (*i + 1 >= argc) {
                cli_error("--batch-invariant needs a value (on or off)");
                return -1;
            }
            val = argv[++*i];
        }
        if (!hearth_switch_parse(val, &f->numerics.batch_invariant)) {
            cli_error("--batch-invariant expects on or off (got \"%s\")", val);
            return -1;
        }
        return 1;
    }
    static const char *const names[] = {"--numerics", "--compiled-decode", "--fused-sdpa", "--compiled-activations"};
    bool *const off[] = {NULL, &f->numerics.no_compiled_decode, &f->numerics.no_fused_sdpa,
                         &f->numerics.no_compiled_activations};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        size_t n = strlen(names[k]);
        if (strncmp(a, names[k], n) != 0 || (a[n] != 0 && a[n] != '=')) continue;
        const char *val = a[n] == '=' ? a + n + 1 : NULL;
        if (!val) {
            if (*i + 1 >= argc) {
                cli_error("%s needs a value (%s)", a, off[k] ? "on or off" : "l1, l2 or ref");
                return -1;
            }
            val = argv[++*i];
        }
        if (!off[k]) {
            hearth_numerics_tier t;
            if (!hearth_numerics_tier_parse(val, &t)) {
                cli_error("--numerics expects l1, l2 or ref (got \"%s\")", val);
                return -1;
            }
            return set_tier(f, t);
        }
        bool on;
        if (!hearth_switch_parse(val, &on)) {
            cli_error("%s expects on or off (got \"%s\")", names[k], val);
            return -1;
        }
        *off[k] = !on;
        return 1;
    }
    return 0;
}

int cli_engine_flag(int argc, char **argv, int *i, cli_engine_flags *f) {
    int nf = cli_numerics_flag(argc, argv, i, f);
    if (!nf) nf = cli_draft_flag(argc, argv, i, &f->draft);
    if (nf) return nf;
    const char *a = argv[*i];
    if (!strcmp(a, "--ssd-cache-verify")) {
        f->ssd_verify = true;
        f->ssd_flag = a;
        return 1;
    }
    if (!strcmp(a, "--ssd-cache") || !strcmp(a, "--ssd-cache-max") || !strcmp(a, "--ssd-demote-idle")) {
        if (*i + 1 >= argc) {
            cli_error("%s needs a value", a);
            return -1;
        }
        const char *val = argv[++*i];
        if (!strcmp(a, "--ssd-cache")) {
            if (!*val) {
                cli_error("--ssd-cache needs a directory");
                return -1;
            }
            f->ssd_dir = val;
            return 1;
        }
        f->ssd_flag = a;
        if (!strcmp(a, "--ssd-demote-idle")) return cli_parse_int(a, val, 0, 100000000, &f->ssd_demote) ? 1 : -1;
        if (!parse_gb(a, val, &f->ssd_max)) return -1;
        if (f->ssd_max == 0) {
            cli_error("%s must be more than 0", a);
            return -1;
        }
        return 1;
    }
    if (!strcmp(a, "--paged-kv")) return 1; /* mlx-bun's opt-in: hearth's KV is always paged */
    if (!strcmp(a, "--state-snapshots")) {
        if (*i + 1 >= argc) {
            cli_error("%s needs a value", a);
            return -1;
        }
        return cli_parse_int(a, argv[++*i], 0, 1000000, &f->state_snaps) ? 1 : -1;
    }
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
    if (size != &f->prompt_cache && *size == 0) *size = -1; /* 0: off / the default, as mlx-bun reads it */
    return 1;
}

void cli_numerics_apply(const cli_engine_flags *f, hearth_engine_params *ep) {
    ep->numerics = f->numerics;
    ep->force_wire = f->force_wire;
    ep->kv_quant = f->kv_quant;
}

void cli_numerics_levers(const hearth_engine *e, char *buf, size_t cap) {
    hearth_engine_info in;
    hearth_engine_info_get(e, &in);
    const hearth_numerics *nx = &in.numerics;
    char kvq[32];
    hearth_kv_quant_name(&in.kv_quant, kvq, sizeof kvq);
    char spec[48] = "";
    if (in.spec_kind[0]) snprintf(spec, sizeof spec, " spec=%s:%d", in.spec_kind, in.spec.n_draft);
    snprintf(buf, cap,
             "numerics=%s compiled-decode=%s fused-sdpa=%s compiled-activations=%s force-wire=%s kv-quant=%s%s",
             hearth_numerics_tier_name(nx->tier), nx->no_compiled_decode ? "off" : "on",
             nx->no_fused_sdpa ? "off" : "on", nx->no_compiled_activations ? "off" : "on",
             in.force_wire ? "on" : "off", kvq, spec);
}

void cli_engine_flags_apply(const cli_engine_flags *f, hearth_engine_params *ep) {
    cli_numerics_apply(f, ep);
    if (f->batch > 0) ep->batch = (int32_t)f->batch;
    if (f->block_size > 0) ep->block_size = (int32_t)f->block_size;
    ep->state_snaps = f->state_snaps >= 0 ? (int32_t)f->state_snaps : -1;
    ep->prompt_cache = f->prompt_cache >= 0 ? f->prompt_cache : (int64_t)8e9;
    if (f->kv_budget > 0) ep->kv_budget = f->kv_budget;
    ep->memory_budget = f->memory_budget > 0 ? f->memory_budget
                                             : (int64_t)(HEARTH_FIT_BUDGET_SHARE * (double)hearth_fit_ram_bytes());
    if (!f->ssd_dir) {
        if (f->ssd_flag) fprintf(stderr, "hearth: warning: %s without --ssd-cache DIR is ignored\n", f->ssd_flag);
        return;
    }
    ep->ssd_cache_dir = f->ssd_dir;
    ep->ssd_cache_max = f->ssd_max > 0 ? f->ssd_max : 0;
    ep->ssd_demote_idle = f->ssd_demote >= 0 ? (int32_t)f->ssd_demote : -1;
    ep->ssd_cache_verify = f->ssd_verify;
}

void cli_engine_levers(const hearth_engine *e, char *buf, size_t cap) {
    hearth_engine_info in;
    hearth_engine_info_get(e, &in);
    char pool[32], pc[32], mem[32];
    hearth_fmt_bytes(in.pool_bytes, pool, sizeof pool);
    hearth_fmt_bytes(in.prompt_cache_bytes, pc, sizeof pc);
    if (in.memory_budget > 0) hearth_fmt_bytes(in.memory_budget, mem, sizeof mem);
    else snprintf(mem, sizeof mem, "none");
    char nx[128], ssd[64] = "", spec[96] = "";
    if (in.spec_kind[0]) {
        char d[80];
        cli_draft_describe(e, d, sizeof d);
        snprintf(spec, sizeof spec, ", speculative %s", d);
    }
    hearth_numerics_describe(&in.numerics, nx, sizeof nx);
    if (in.n_snaps > 0) { /* a hybrid model's prefix hits resume from these */
        char sb[32];
        hearth_fmt_bytes(in.snap_bytes * in.n_snaps, sb, sizeof sb);
        snprintf(ssd, sizeof ssd, " + %d state snapshots %s", in.n_snaps, sb);
    }
    if (in.ssd_max_bytes > 0) {
        char mx[32];
        hearth_fmt_bytes(in.ssd_max_bytes, mx, sizeof mx);
        snprintf(ssd, sizeof ssd, " + ssd %s", mx);
    }
    snprintf(buf, cap,
             "batch %d, KV pool %s (%d blocks of %d tokens, %s), prompt cache %s%s, memory budget %s, "
             "max request %d tokens, numerics %s%s%s",
             in.batch, pool, in.n_blocks, in.block_size, hearth_kv_type_name(in.kv.k),
             in.prompt_cache_bytes ? pc : "off", ssd, mem,
             in.max_request_tokens, nx, in.force_wire ? ", weights wired" : "", spec);
}
