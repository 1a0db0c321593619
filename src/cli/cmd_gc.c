/*
 * cmd_gc.c - `hearth gc [--yes] [--dry-run] [--force]`: show what gc would reclaim in the
 * hub cache (store/gc.h), per repo, and delete it only with --yes.
 */
#include "cli/cli.h"
#include "store/gc.h"
#include "store/hub.h"
#include "store/registry.h"
#include "store/units.h"

#include <stdio.h>
#include <string.h>

const char cli_usage_gc[] =
    "usage: hearth gc [--yes] [--dry-run] [--force]\n"
    "\n"
    "Reclaim space in the hub cache: snapshots that no ref (refs/main, tags, refs/pr/N) names\n"
    "any more, and blobs that no kept snapshot links to. Prints the plan; deletes nothing unless\n"
    "--yes is given.\n"
    "\n"
    "  --yes       delete what the plan lists\n"
    "  --dry-run   only print the plan, even with --yes\n"
    "  --force     also prune old snapshots that hold the only copy of a file (a quantization\n"
    "              the current revision no longer has); skipped with a note otherwise\n"
    "\n"
    "Never touched: partial downloads (*.incomplete), locked blobs, repos without refs, and repos\n"
    "with a download in progress.\n";

int cli_gc(int argc, char **argv) {
    bool yes = false, dry = false, force = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--yes") || !strcmp(argv[i], "-y")) yes = true;
        else if (!strcmp(argv[i], "--dry-run")) dry = true;
        else if (!strcmp(argv[i], "--force")) force = true;
        else {
            cli_error("unknown argument '%s' for gc (try 'hearth help gc')", argv[i]);
            return 2;
        }
    }
    hearth_gc_plan plan;
    hearth_err err = {0};
    if (hearth_gc_plan_make(NULL, NULL, force, &plan, &err)) {
        cli_error("%s", err.msg);
        return 1;
    }
    char hub[4096];
    hearth_hub_cache_dir(hub, sizeof hub);
    if (plan.n_repos == 0) {
        printf("no repos in %s\n", hub);
        hearth_gc_plan_free(&plan);
        return 0;
    }
    size_t w = strlen("REPO");
    for (size_t i = 0; i < plan.n_repos; i++)
        if (strlen(plan.repos[i].repo_id) > w) w = strlen(plan.repos[i].repo_id);
    printf("%-*s  KEEP  PRUNE  SKIP  BLOBS  RECLAIM   NOTE\n", (int)w, "REPO");
    int n_prune = 0, n_blobs = 0, n_skip = 0;
    for (size_t i = 0; i < plan.n_repos; i++) {
        const hearth_gc_repo *r = &plan.repos[i];
        char size[24];
        hearth_fmt_bytes(r->reclaim_bytes, size, sizeof size);
        if (r->skipped) printf("%-*s  %4s  %5s  %4s  %5s  %-8s  skipped: %s\n", (int)w, r->repo_id, "-", "-", "-", "-", "-",
                               r->note);
        else if (r->note[0]) printf("%-*s  %4d  %5d  %4d  %5d  %-8s  %s\n", (int)w, r->repo_id, r->n_keep, r->n_prune,
                                    r->n_skip, r->n_blobs, r->n_prune + r->n_blobs ? size : "-", r->note);
        else printf("%-*s  %4d  %5d  %4d  %5d  %s\n", (int)w, r->repo_id, r->n_keep, r->n_prune, r->n_skip, r->n_blobs,
                    r->n_prune + r->n_blobs ? size : "-");
        n_prune += r->n_prune;
        n_blobs += r->n_blobs;
        n_skip += r->n_skip;
    }
    char total[24];
    hearth_fmt_bytes(plan.reclaim_bytes, total, sizeof total);
    printf("reclaimable: %s (%d snapshot%s, %d blob%s)\n", total, n_prune, n_prune == 1 ? "" : "s", n_blobs,
           n_blobs == 1 ? "" : "s");
    if (n_skip && !force) printf("%d snapshot%s kept because they hold the only copy of a file; --force prunes them\n",
                                 n_skip, n_skip == 1 ? "" : "s");
    int rc = 0;
    if (plan.n_actions == 0) {
        printf("nothing to delete\n");
    } else if (!yes || dry) {
        printf("nothing deleted%s: run `hearth gc --yes%s` to delete\n", dry ? " (--dry-run)" : "", force ? " --force" : "");
    } else {
        hearth_gc_result res;
        if (hearth_gc_execute(NULL, &plan, force, &res, &err)) {
            cli_error("%s", err.msg);
            rc = 1;
        } else {
            char freed[24];
            hearth_fmt_bytes(res.bytes, freed, sizeof freed);
            printf("deleted %zu snapshot%s and %zu blob%s: %s freed\n", res.n_snapshots, res.n_snapshots == 1 ? "" : "s",
                   res.n_blobs, res.n_blobs == 1 ? "" : "s", freed);
            if (res.n_repos_busy)
                printf("%zu repo%s skipped: a download started meanwhile\n", res.n_repos_busy,
                       res.n_repos_busy == 1 ? "" : "s");
        }
        hearth_registry *reg = NULL;
        if (hearth_registry_open(NULL, &reg, &err) == HEARTH_OK) hearth_registry_scan(reg, NULL, NULL, NULL, &err);
        hearth_registry_close(reg);
    }
    hearth_gc_plan_free(&plan);
    return rc;
}
