/*
 * cmd_ls.c - `hearth ls [query] [--max-size SIZE] [--vision] [--all-revisions]`: the models of the hub
 * cache as a table, from the registry (scanned first: unchanged files cost a stat each).
 */
#include "cli/cli.h"
#include "store/hub.h"
#include "store/registry.h"
#include "store/units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cli_usage_ls[] =
    "usage: hearth ls [query] [--max-size SIZE] [--vision] [--all-revisions]\n"
    "\n"
    "List the models of the hub cache: one row per model file of each repo's canonical snapshot\n"
    "(the one refs/main names, else the newest).\n"
    "\n"
    "  query               keep models whose \"org/name/file\" contains it (case-insensitive)\n"
    "  --max-size SIZE     keep models of at most SIZE bytes on disk (10GB, 500MB, 2GiB)\n"
    "  --vision            keep models with a vision tower: a config.json vision_config with the\n"
    "                      tower's weights, or a projector GGUF (llama.cpp's mmproj) beside the\n"
    "                      model; hearth runs none of the towers yet\n"
    "  --all-revisions     one row per cached snapshot; * marks the canonical one\n"
    "\n"
    "CAPS: supported (hearth runs the architecture), chat (a chat template), tools, thinking,\n"
    "vision (a vision tower, as --vision finds them), embed.\n";

enum { N_COLS = 10 };

int cli_ls(int argc, char **argv) {
    hearth_registry_filter f = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--all-revisions")) f.all_revisions = true;
        else if (!strcmp(a, "--vision")) f.caps |= HEARTH_CAP_VISION;
        else if (!strcmp(a, "--max-size")) {
            if (i + 1 >= argc) {
                cli_error("--max-size needs a value");
                return 2;
            }
            if (!hearth_parse_bytes(argv[++i], &f.max_bytes) || f.max_bytes <= 0) {
                cli_error("--max-size expects a size like 10GB or 500MB (got \"%s\")", argv[i]);
                return 2;
            }
        } else if (a[0] == '-') {
            cli_error("unknown flag '%s' for ls (try 'hearth help ls')", a);
            return 2;
        } else if (!f.query) f.query = a;
        else {
            cli_error("ls takes one query (got '%s' and '%s')", f.query, a);
            return 2;
        }
    }
    hearth_err err = {0};
    hearth_registry *reg = NULL;
    hearth_registry_row *rows = NULL;
    size_t n = 0;
    int rc = 1;
    if (hearth_registry_open(NULL, &reg, &err) || hearth_registry_scan(reg, NULL, NULL, NULL, &err) ||
        hearth_registry_list(reg, &f, &rows, &n, &err)) {
        cli_error("%s", err.msg);
        goto done;
    }
    if (n == 0) {
        char hub[4096];
        hearth_hub_cache_dir(hub, sizeof hub);
        if (f.query || f.max_bytes || f.caps) printf("no model in %s matches\n", hub);
        else printf("no models in %s yet (hearth get ORG/NAME downloads one)\n", hub);
        rc = 0;
        goto done;
    }
    /* cells[row][col], sized per column */
    static const char *head[N_COLS] = {"MODEL", "FILE", "REV", "SIZE", "PARAMS", "QUANT", "CTX", "ARCH", "LICENSE", "CAPS"};
    char(*cells)[N_COLS][264] = calloc(n, sizeof *cells);
    if (!cells) {
        cli_error("out of memory");
        goto done;
    }
    size_t w[N_COLS];
    for (int c = 0; c < N_COLS; c++) w[c] = strlen(head[c]);
    for (size_t i = 0; i < n; i++) {
        const hearth_registry_row *r = &rows[i];
        char(*c)[264] = cells[i];
        snprintf(c[0], 264, "%s", r->repo_id);
        snprintf(c[1], 264, "%s", r->file[0] ? r->file : "(safetensors)");
        snprintf(c[2], 264, "%.8s%s", r->revision, r->canonical ? "*" : "");
        hearth_fmt_bytes(r->f.file_bytes, c[3], 264);
        if (r->f.n_params) hearth_fmt_count(r->f.n_params, c[4], 264);
        else snprintf(c[4], 264, "-");
        snprintf(c[5], 264, "%s", r->f.quant[0] ? r->f.quant : "-");
        snprintf(c[6], 264, "%d", r->f.n_ctx_train);
        snprintf(c[7], 264, "%s", r->f.arch);
        snprintf(c[8], 264, "%s", r->f.license[0] ? r->f.license : "-");
        if (r->error[0]) snprintf(c[9], 264, "unreadable");
        else hearth_facts_caps_str(r->f.caps, c[9], 264);
        for (int k = 0; k < N_COLS; k++)
            if (strlen(c[k]) > w[k]) w[k] = strlen(c[k]);
    }
    for (size_t i = 0; i <= n; i++)
        for (int k = 0; k < N_COLS; k++) {
            const char *cell = i == 0 ? head[k] : cells[i - 1][k];
            if (k == 2 && !f.all_revisions) continue;
            if (k == N_COLS - 1) printf("%s\n", cell);
            else printf("%-*s  ", (int)w[k], cell);
        }
    free(cells);
    rc = 0;
done:
    free(rows);
    hearth_registry_close(reg);
    return rc;
}
