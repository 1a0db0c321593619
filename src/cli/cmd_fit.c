/*
 * cmd_fit.c - `hearth fit <model> [--ctx N] [--budget GB] [--measure]`: the memory contract
 * of store/fit.h for one model on this machine: FITS / DOES NOT FIT, the largest safe context
 * and the predicted decode speed from the measured (and cached) memory bandwidth.
 */
#include "cli/cli.h"
#include "store/facts.h"
#include "store/fit.h"
#include "store/hub.h"
#include "store/registry.h"
#include "store/units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char cli_usage_fit[] =
    "usage: hearth fit MODEL [--ctx N] [--budget GB] [--measure]\n"
    "\n"
    "Will MODEL (a .gguf path, or a query as for `hearth ls`) run on this machine?\n"
    "\n"
    "  --ctx N         context to judge (default: min(training context, 4096), as the engine)\n"
    "  --budget GB     memory to fit in (default: 0.75 x RAM, or of the cgroup limit)\n"
    "  --measure       measure the memory bandwidth again instead of using the cached figure\n"
    "\n"
    "Memory = weights (the file's tensor bytes) + KV cache (f16 K and V per token and layer;\n"
    "sliding-window layers hold at most their window) + transient (one 512-token prefill chunk of\n"
    "activations, logits, a 32 MiB runtime allowance). Decode speed = 0.82 x memory bandwidth /\n"
    "bytes read per token (the weights, and the KV cache at half the context). The bandwidth is\n"
    "measured once by reading a 256 MiB buffer with every CPU (best of 5) and cached with its\n"
    "date in ${XDG_CACHE_HOME:-~/.cache}/hearth/membw for 30 days.\n";

static void line(const char *what, int64_t bytes, const char *note) {
    char b[24];
    hearth_fmt_bytes(bytes, b, sizeof b);
    printf("  %-10s %10s%s%s\n", what, b, note[0] ? "  " : "", note);
}

int cli_fit(int argc, char **argv) {
    const char *query = NULL;
    hearth_fit_params fp = {0};
    bool measure = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long long v;
        double d;
        if (!strcmp(a, "--measure")) measure = true;
        else if (!strcmp(a, "--ctx") || !strcmp(a, "--budget")) {
            if (i + 1 >= argc) {
                cli_error("%s needs a value", a);
                return 2;
            }
            if (!strcmp(a, "--ctx")) {
                if (!cli_parse_int(a, argv[++i], 1, 1 << 30, &v)) return 2;
                fp.ctx = (int32_t)v;
            } else {
                if (!cli_parse_float(a, argv[++i], 0.001, 1e6, &d)) return 2;
                fp.budget_bytes = (int64_t)(d * 1e9);
            }
        } else if (a[0] == '-') {
            cli_error("unknown flag '%s' for fit (try 'hearth help fit')", a);
            return 2;
        } else if (!query) query = a;
        else {
            cli_error("fit takes one model (got '%s' and '%s')", query, a);
            return 2;
        }
    }
    if (!query) {
        cli_error("fit needs a model: hearth fit MODEL");
        return 2;
    }
    /* a path or a GGUF in the hub cache (hub.h), else any registry row (safetensors too) */
    hearth_err err = {0};
    hearth_model_facts f;
    char label[1200];
    char *path = NULL;
    struct stat st;
    hearth_status s = hearth_hub_resolve(query, &path, &err);
    if (s == HEARTH_OK) {
        snprintf(label, sizeof label, "%s", path);
        s = hearth_facts_gguf(path, &f, &err);
        free(path);
    } else if (s == HEARTH_E_NOTFOUND && !(stat(query, &st) == 0)) {
        hearth_registry *reg = NULL;
        hearth_registry_row row;
        if (!(s = hearth_registry_open(NULL, &reg, &err)) && !(s = hearth_registry_scan(reg, NULL, NULL, NULL, &err)) &&
            !(s = hearth_registry_resolve(reg, query, &row, &err))) {
            snprintf(label, sizeof label, "%s%s%s", row.repo_id, row.file[0] ? "/" : "", row.file);
            s = !strcmp(row.f.format, "gguf") ? hearth_facts_gguf(row.path, &f, &err)
                                              : hearth_facts_safetensors(row.path, &f, &err);
        }
        hearth_registry_close(reg);
    }
    if (s) {
        cli_error("%s", err.msg);
        return 1;
    }
    hearth_membw bw;
    bool have_bw = hearth_membw_get(measure, &bw, &err) == HEARTH_OK;
    if (have_bw) fp.bw_bytes_per_s = bw.bytes_per_s;
    hearth_fit r = hearth_fit_compute(&f, &fp);

    char params[24], note[256], budget[24], ram[24];
    hearth_fmt_count(f.n_params, params, sizeof params);
    printf("%s\n  %s, %s parameters, %s, trained for %d tokens\n", label, f.arch, params, f.quant, f.n_ctx_train);
    line("weights", r.weights_bytes, "");
    char kvt[24];
    hearth_fmt_bytes(f.kv_bytes_per_token, kvt, sizeof kvt);
    if (f.n_layer_swa)
        snprintf(note, sizeof note, "%d tokens x %s/token, f16; %d of %d layers slide over %d tokens", r.ctx, kvt,
                 f.n_layer_swa, f.n_layer, f.n_swa);
    else snprintf(note, sizeof note, "%d tokens x %s/token, f16", r.ctx, kvt);
    line("kv cache", r.kv_bytes, note);
    line("transient", r.transient_bytes, "prefill chunk, logits, runtime");
    hearth_fmt_bytes(r.budget_bytes, budget, sizeof budget);
    hearth_fmt_bytes(hearth_fit_ram_bytes(), ram, sizeof ram);
    if (fp.budget_bytes > 0) snprintf(note, sizeof note, "of a %s budget (--budget)", budget);
    else snprintf(note, sizeof note, "of a %s budget (0.75 x %s RAM)", budget, ram);
    line("total", r.total_bytes, note);
    printf("%s at %d tokens of context\n", r.fits ? "FITS" : "DOES NOT FIT", r.ctx);
    if (r.max_ctx == 0) printf("largest safe context: none (the weights and the runtime allowance alone exceed the budget)\n");
    else printf("largest safe context: %d tokens%s\n", r.max_ctx,
                r.max_ctx == f.n_ctx_train ? " (the training context)" : "");
    if (fp.ctx > f.n_ctx_train && f.n_ctx_train > 0)
        printf("note: %d tokens is beyond the %d the model was trained for\n", fp.ctx, f.n_ctx_train);
    if (have_bw && r.decode_tok_s > 0) {
        char rb[24];
        hearth_fmt_bytes(r.read_bytes_per_token, rb, sizeof rb);
        printf("decode: about %.0f tokens/s (%.1f GB/s read bandwidth x %.2f / %s per token at %d tokens of context)\n",
               r.decode_tok_s, bw.bytes_per_s / 1e9, HEARTH_FIT_DECODE_EFFICIENCY, rb, r.ctx / 2);
        printf("bandwidth: %s on %d threads, %s %s\n", bw.date, bw.n_threads, bw.from_cache ? "cached in" : "measured now, saved to",
               bw.path);
    } else {
        printf("decode: no prediction (%s)\n", err.msg);
    }
    return 0;
}
