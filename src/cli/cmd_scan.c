/*
 * cmd_scan.c - `hearth scan`: index the hub cache into the registry (store/registry.h) and
 * say what changed.
 */
#include "cli/cli.h"
#include "store/hub.h"
#include "store/registry.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

const char cli_usage_scan[] =
    "usage: hearth scan\n"
    "\n"
    "Index the Hugging Face hub cache ($HF_HUB_CACHE, else $HF_HOME/hub, else\n"
    "~/.cache/huggingface/hub) into the registry at ${XDG_CACHE_HOME:-~/.cache}/hearth/registry.sqlite:\n"
    "one row per model file of every snapshot (GGUF files; safetensors snapshots with a config.json).\n"
    "Unchanged files are not re-read; rows of files that are gone are removed. `hearth ls` scans\n"
    "by itself; run this after changing the cache with other tools.\n";

int cli_scan(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        cli_error("scan takes no arguments (got '%s')", argv[i]);
        return 2;
    }
    hearth_err err = {0};
    hearth_registry *reg = NULL;
    if (hearth_registry_open(NULL, &reg, &err)) {
        cli_error("%s", err.msg);
        return 1;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    hearth_scan_stats s;
    hearth_status st = hearth_registry_scan(reg, NULL, NULL, &s, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (st) {
        cli_error("%s", err.msg);
        hearth_registry_close(reg);
        return 1;
    }
    char hub[4096];
    hearth_hub_cache_dir(hub, sizeof hub);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    printf("scanned %s: %d model%s in %d repo%s (%d new, %d updated, %d removed", hub, s.n_models,
           s.n_models == 1 ? "" : "s", s.n_repos, s.n_repos == 1 ? "" : "s", s.n_added, s.n_updated, s.n_removed);
    if (s.n_errors) printf(", %d unreadable", s.n_errors);
    printf(") in %.0f ms\nregistry: %s\n", ms, hearth_registry_path(reg));
    hearth_registry_close(reg);
    return 0;
}
