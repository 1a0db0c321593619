/*
 * gc.h - reclaim space in the hub cache: snapshots no ref names any more, and blobs no kept
 * snapshot links to. Planning and deleting are separate steps; the CLI deletes only when
 * asked (`hearth gc --yes`).
 *
 * The plan, per repo (models--ORG--NAME):
 *   keep    every snapshot a file under refs/ names (refs/main, refs/pr/1, tags ...)
 *   prune   the other snapshots ("superseded")
 *   skip    a superseded snapshot holding a file that no kept snapshot has: deleting it would
 *           lose the only copy (say, an old quantization upstream removed). Pruned only with
 *           force.
 *   blobs   files in blobs/ that no kept or skipped snapshot links to
 * Never touched: *.incomplete partials, blobs whose lock is held, lock files, and repos that
 * have no usable ref (nothing to judge by) or whose repo lock a download holds.
 *
 * Executing takes each repo's lock exclusively (a `hearth get` holds it shared, so the two
 * never overlap), plans that repo again, and deletes only what both plans agree on. Snapshot
 * folders are removed without following links.
 *
 * Thread rule: any thread; the file system is the shared state (locks guard it).
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef enum { HEARTH_GC_SNAPSHOT = 0, HEARTH_GC_BLOB } hearth_gc_kind;

typedef struct {
    hearth_gc_kind kind;
    size_t         repo;       /* index into plan.repos */
    char           path[4096];
    int64_t        bytes;      /* what deleting it frees (a snapshot: its regular files) */
} hearth_gc_action;

typedef struct {
    char    repo_id[128];
    int     n_keep, n_prune, n_skip; /* snapshots */
    int     n_blobs;                 /* blobs to delete */
    int64_t reclaim_bytes;
    bool    skipped;                 /* the whole repo is left alone (note says why) */
    char    note[256];               /* why skipped, or which snapshots hold only copies */
} hearth_gc_repo;

typedef struct {
    hearth_gc_repo   *repos;   /* owned */
    size_t            n_repos;
    hearth_gc_action *actions; /* owned */
    size_t            n_actions;
    int64_t           reclaim_bytes;
} hearth_gc_plan;

typedef struct {
    size_t  n_snapshots, n_blobs; /* deleted */
    int64_t bytes;                /* freed */
    size_t  n_repos_busy;         /* skipped because a download started meanwhile */
} hearth_gc_result;

/* Plan gc for the hub at hub_dir (NULL: hub.h's default), for every repo or only repo_id.
 * force also prunes snapshots that hold the only copy of a file. */
hearth_status hearth_gc_plan_make(const char *hub_dir, const char *repo_id, bool force, hearth_gc_plan *out,
                                  hearth_err *err);
void          hearth_gc_plan_free(hearth_gc_plan *p);

/* Delete what plan lists and a fresh plan under the repo lock confirms. result may be NULL. */
hearth_status hearth_gc_execute(const char *hub_dir, const hearth_gc_plan *plan, bool force,
                                hearth_gc_result *result, hearth_err *err);
