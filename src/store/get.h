/*
 * get.h - `hearth get`: fetch a repo revision (or the files matching a glob) from the hub into
 * the hub cache, in the layout huggingface_hub writes, so the other tools see it too:
 *
 *   1. GET the revision info (hubapi.h): the commit and every file's size and checksum.
 *   2. Keep the files whose name matches the glob (fnmatch; '*' crosses '/').
 *   3. Download the blobs (download.h), all by the commit's resolve URLs.
 *   4. Only when every blob is verified: snapshots/<commit>/<file> -> ../../blobs/<oid>
 *      (relative links, made under a temp name and renamed), then refs/<revision> last.
 * So a failed or interrupted get leaves verified blobs and partials for a re-run, and never a
 * snapshot that looks complete. The repo's lock (hub/.locks/<repo>/hearth-repo.lock) is held
 * shared during the get, so gc (which takes it exclusively) waits or skips the repo.
 *
 * Thread rule: blocks the calling thread; progress callbacks run on it.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "store/download.h"

typedef struct {
    const char *repo_id;      /* "org/name" */
    const char *revision;     /* branch, tag or commit; NULL: "main" */
    const char *glob;         /* file name pattern; NULL: every file */
    const char *hub_dir;      /* NULL: hub.h's cache directory */
    const char *endpoint;     /* NULL: $HF_ENDPOINT, else the public hub */
    const char *token;        /* NULL: $HF_TOKEN or the token file (hubapi.h); "" for none */
    int         max_parallel; /* <= 0: 4 */
    int         retries;      /* < 0: 3 */
    int         retry_delay_ms;
    void      (*on_progress)(const hearth_dl_progress *p, void *user);
    void       *user;
    const volatile int *cancel;
} hearth_get_params;

typedef struct {
    char    commit[48];
    char    snapshot_dir[4096];
    char    previous_commit[48]; /* what refs/<revision> named before, "" if nothing or the same */
    size_t  n_files, n_present, n_downloaded;
    int64_t bytes_total, bytes_fetched;
} hearth_get_result;

hearth_get_params hearth_get_params_default(void);

/* Fetch. result may be NULL. On failure err says which files failed and why. */
hearth_status hearth_get(const hearth_get_params *p, hearth_get_result *result, hearth_err *err);

/* The lock path a repo's downloads (shared) and gc (exclusive) take, into buf. */
bool hearth_get_repo_lock_path(const char *hub_dir, const char *repo_id, char *buf, size_t n);
