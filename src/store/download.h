/*
 * download.h - verified, resumable blob downloads into the hub cache, several at a time
 * (libcurl multi). The orchestration around it (revision info, snapshot links, refs) is
 * get.h; this module only turns a list of (URL, expected size, expected checksum) into
 * published blobs.
 *
 * For each item:
 *   1. blobs/<oid> already there with the right size: nothing to do ("present").
 *   2. Take the blob's lock file (store/lock.h); a live holder fails the item, a dead one's
 *      lock is stolen.
 *   3. Open blobs/<oid>.incomplete. Bytes already in it are re-hashed and the request asks
 *      for the rest with Range; a 200 instead of 206 (the server ignored Range) truncates it
 *      and starts over; a 206 that starts elsewhere is refused.
 *   4. Stream: every byte goes to the file and the digest (sha256 for LFS, git blob sha1
 *      otherwise); a server that sends more than the expected size is cut off.
 *   5. At the end: size and checksum must match, else the partial is deleted. Then fsync and
 *      an atomic rename to blobs/<oid>. Only then is the blob visible.
 * Headers are checked too: X-Repo-Commit must be the expected commit, X-Linked-Etag (LFS) or
 * the hub's ETag (small files) the expected checksum, when the hub sends them.
 *
 * Transient failures (connection lost, timeouts, 5xx, 429) keep the partial and retry with
 * backoff up to `retries` times; a later run resumes what is left. Refusals (401/403/404, a
 * checksum or size mismatch, disagreeing headers) do not retry.
 *
 * Thread rule: hearth_dl_run blocks the calling thread; the progress callback runs on it.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct {
    /* in (filled by the caller) */
    char    url[2048];
    char    blob_path[4096]; /* blobs/<oid>; the partial is this + ".incomplete" */
    char    lock_path[4096];
    char    oid[72];         /* expected checksum, lower-case hex */
    bool    lfs;             /* sha256 (true) or git blob sha1 */
    int64_t size;            /* expected bytes */
    char    name[512];       /* the file's name in the repo, for messages */
    /* out */
    hearth_status status;    /* HEARTH_OK once published (or present) */
    char    msg[320];        /* why it failed */
    bool    present;         /* the blob was already in the cache */
    bool    resumed;         /* continued from a partial download */
    bool    restarted;       /* the server ignored Range: the partial was thrown away */
    int     stolen_from_pid; /* a dead process's lock was taken over, else 0 */
    int     attempts;        /* requests made */
    int64_t done_bytes;      /* bytes verified or in the partial so far */
    int64_t fetched_bytes;   /* bytes received by this run */
} hearth_dl_item;

typedef enum {
    HEARTH_DL_START = 0, /* an item's first request starts (or it was present) */
    HEARTH_DL_DONE,      /* an item is published (or was present) */
    HEARTH_DL_FAIL,      /* an item failed for good */
    HEARTH_DL_RETRY,     /* an item failed and will be retried (item->msg says why) */
    HEARTH_DL_TICK,      /* a periodic update (item is NULL) */
} hearth_dl_event;

typedef struct {
    hearth_dl_event       event;
    const hearth_dl_item *item;
    size_t  n_items, n_done, n_failed;
    int64_t total_bytes, done_bytes;
    double  bytes_per_s;  /* over the last few seconds; 0 before any byte */
    double  eta_s;        /* < 0 when unknown */
} hearth_dl_progress;

typedef struct {
    int         max_parallel;   /* transfers at once; <= 0: 4 */
    int         retries;        /* extra attempts per item after a transient failure; < 0: 3 */
    int         retry_delay_ms; /* first backoff, doubling; <= 0: 500 */
    long        stall_s;        /* abort a transfer that moves no byte for this long; <= 0: 60 */
    const char *token;          /* Bearer token for the hub, or NULL */
    const char *commit;         /* the expected X-Repo-Commit, or NULL */
    void      (*on_progress)(const hearth_dl_progress *p, void *user); /* optional */
    void       *user;
    const volatile int *cancel; /* optional: non-zero stops every transfer (partials kept) */
} hearth_dl_params;

/* Download every item. Returns HEARTH_OK when all are published; otherwise the first
 * failure's status (HEARTH_E_CANCELLED when cancelled) with err naming how many failed. */
hearth_status hearth_dl_run(hearth_dl_item *items, size_t n, const hearth_dl_params *p, hearth_err *err);
