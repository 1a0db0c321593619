/*
 * downloads.h - the server's background downloads: POST /downloads starts a `hearth get`
 * (store/get.h) on a thread of its own, GET /downloads shows the recent ones.
 *
 * Each download is a job with an id ("dl-1", "dl-2", ...), a state (running, done, failed,
 * cancelled) and the progress its get reports: bytes done / total, rate, ETA, files. When a
 * get succeeds, the job rescans the registry for the repo (store/registry.h) before it says
 * "done", so the model is in /library by the time a client sees that state.
 *
 * Bounded: at most max_active jobs run at once (another start is refused with
 * HEARTH_E_BUSY), one per (repo, revision, files) (starting one that is downloading returns the
 * running job instead of a second one, which would only trip over the first one's blob locks;
 * another revision or file pattern of the same repo is a job of its own), and at
 * most max_kept jobs are remembered: starting one past that forgets the oldest finished job.
 *
 * Shutdown cancels every running get (partial blobs stay for a resume) and joins its thread.
 *
 * Thread rule: every function may be called from any thread, except create/destroy (one
 * thread, the server's owner); the jobs run on their own threads.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"
#include "server/json_out.h"

typedef struct hearth_downloads hearth_downloads;

typedef struct {
    int         max_active;    /* <= 0: 2 */
    int         max_kept;      /* <= max_active: 32 */
    const char *hub_dir;       /* NULL: hub.h's cache directory (copied) */
    const char *registry_path; /* NULL: the registry's default path (copied) */
} hearth_downloads_params;

hearth_status hearth_downloads_create(const hearth_downloads_params *p, hearth_downloads **out, hearth_err *err);
/* Cancel and join every job, free. Accepts NULL. */
void          hearth_downloads_destroy(hearth_downloads *d);

/* Start fetching repo_id (glob and revision may be NULL) and write the job's id into id.
 * When the same repo, glob and revision (unset = "main") is already downloading, id is that
 * job's and *existing (may be NULL) true.
 * HEARTH_E_BUSY when max_active jobs are running; HEARTH_E_INVALID for a bad repo id, glob or
 * revision. */
hearth_status hearth_downloads_start(hearth_downloads *d, const char *repo_id, const char *glob,
                                     const char *revision, char *id, size_t id_cap, bool *existing,
                                     hearth_err *err);

/* {"downloads":[job, ...newest first], "max_active":N, "max_kept":N} */
void hearth_downloads_json(hearth_downloads *d, hearth_jw *w);
