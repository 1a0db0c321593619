/*
 * registry.h - the model registry: a SQLite index of the hub cache (ARCHITECTURE 6), at
 * ${XDG_CACHE_HOME:-~/.cache}/hearth/registry.sqlite by default.
 *
 * One row per model in a snapshot: a GGUF file (for the usual one-file snapshot, one row per
 * snapshot; a repo that ships several quantizations in one snapshot gets a row for each), or
 * the snapshot itself for safetensors. Each row holds the repo id, revision, path, format,
 * architecture, parameters, bytes, quantization, context, KV bytes per token, capabilities,
 * license and the time it was scanned, plus the memory-contract inputs of fit.h.
 *
 * It is a derived cache, never a source of truth: a schema version (PRAGMA user_version)
 * different from this build's drops and rebuilds the table; a scan stats every model file
 * and re-reads only those whose size or mtime changed; rows whose files are gone are reaped.
 * GGUF shards (-00002-of-00003.gguf) fold into their first shard's row; vision projectors
 * (llama.cpp's mmproj GGUFs) are not models but mark the models beside them as vision-capable,
 * and a safetensors snapshot is vision-capable when it has a vision tower: both by
 * store/modality.h.
 *
 * The canonical row of a repo is the one in the snapshot refs/main names (else the newest
 * snapshot), as hub.h chooses; ls shows canonical rows unless asked for all revisions.
 *
 * Thread rule: a handle belongs to one thread at a time; several processes may share the
 * file (SQLite locking, 5 s busy timeout).
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "store/facts.h"

typedef struct hearth_registry hearth_registry;

typedef struct {
    char    repo_id[128];
    char    revision[96];  /* the snapshot folder name (a commit hash) */
    char    file[256];     /* the model file relative to the snapshot; "" for safetensors */
    char    path[1024];    /* the model file, or the snapshot directory for safetensors */
    bool    canonical;     /* in the repo's canonical snapshot */
    int64_t scanned_at;    /* unix seconds */
    char    error[160];    /* why the file could not be read, else "" */
    hearth_model_facts f;
} hearth_registry_row;

typedef struct {
    int n_repos, n_models;          /* seen by the scan */
    int n_added, n_updated, n_removed;
    int n_errors;                   /* model files that could not be read */
} hearth_scan_stats;

/* Open (creating the file and its directory) the registry at db_path; NULL: the default path.
 * A schema from another build is dropped and recreated. */
hearth_status hearth_registry_open(const char *db_path, hearth_registry **out, hearth_err *err);
void          hearth_registry_close(hearth_registry *r); /* accepts NULL */

/* Index the hub cache at hub_dir (NULL: hub.h's default). repo_id non-NULL limits the scan
 * (and the reaping) to that repo. stats may be NULL. */
hearth_status hearth_registry_scan(hearth_registry *r, const char *hub_dir, const char *repo_id,
                                   hearth_scan_stats *stats, hearth_err *err);

typedef struct {
    const char *query;         /* case-insensitive substring of "repo_id/file"; NULL: all */
    int64_t     max_bytes;     /* > 0: only models of at most this many bytes */
    uint32_t    caps;          /* only models with all of these HEARTH_CAP_* bits; 0: any */
    bool        all_revisions; /* false: canonical rows only */
} hearth_registry_filter;

/* The rows that pass filter (NULL: canonical rows), sorted by repo id, file, revision.
 * *rows is malloc'ed (free it with free()), NULL when *n is 0. */
hearth_status hearth_registry_list(hearth_registry *r, const hearth_registry_filter *filter,
                                   hearth_registry_row **rows, size_t *n, hearth_err *err);

/* Resolve a query among canonical rows: an exact repo id or "repo_id/file" wins, else the
 * unique substring match. HEARTH_E_NOTFOUND when nothing matches, HEARTH_E_AMBIGUOUS (the
 * message lists the candidates) when several do. */
hearth_status hearth_registry_resolve(hearth_registry *r, const char *query, hearth_registry_row *out,
                                      hearth_err *err);

/* The registry's file path (owned by r). */
const char *hearth_registry_path(const hearth_registry *r);

/* The schema version this build writes: bump it with any change to the table or to what
 * store/facts.h extracts, so old rows are rebuilt rather than trusted. */
#define HEARTH_REGISTRY_SCHEMA 3 /* 2: safetensors vision_config sets the vision cap; 3: vision
                                  * by store/modality.h (tower weights, projector headers) */
