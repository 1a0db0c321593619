/*
 * lock.h - lock files in the hub cache that survive a crash.
 *
 * A lock is a file held with flock(2): the kernel drops the hold when its process dies, so a
 * crash can never wedge a download. The holder writes its pid into the file and truncates it
 * again on release; the file itself stays (as huggingface_hub's filelock leaves its .lock
 * files), so there is no unlink race between a releaser and a new taker. A lock file that is
 * free but still names a pid was left by a process that died holding it: taking it is a
 * "steal", reported with the dead pid.
 *
 * Paths follow huggingface_hub: <hub>/.locks/models--ORG--NAME/<blob>.lock for a blob, so a
 * hearth download and a huggingface_hub one of the same blob exclude each other.
 * Exclusive locks guard one blob's .incomplete file; shared/exclusive pairs guard a repo
 * (downloads take it shared, gc exclusive).
 *
 * Thread rule: a hearth_lock belongs to one thread; flock holds are per open file, so two
 * acquisitions in one process exclude each other too.
 */
#pragma once
#include <stdbool.h>

#include "base/status.h"

typedef struct {
    int fd; /* owned; -1 when not held */
} hearth_lock;

typedef enum {
    HEARTH_LOCK_TAKEN = 0, /* the lock is ours */
    HEARTH_LOCK_STOLEN,    /* ours, taken over from a process that died holding it */
    HEARTH_LOCK_BUSY,      /* another live holder; nothing taken */
    HEARTH_LOCK_ERROR,     /* the file could not be created or opened (err says why) */
} hearth_lock_result;

/* Take the lock at path (creating the file and its directory), exclusive or shared, waiting
 * up to wait_ms for a holder to let go (0: do not wait). *other_pid (may be NULL) is the
 * holder's pid on BUSY, the dead holder's on STOLEN, else 0. */
hearth_lock_result hearth_lock_acquire(const char *path, bool shared, int wait_ms, hearth_lock *out,
                                       int *other_pid, hearth_err *err);
/* Release (truncating the pid away) and close. Harmless on a lock not held. */
void hearth_lock_release(hearth_lock *l);
/* Is the lock at path held by anyone right now (this process's other holds count)? A missing
 * file is not held. *pid (may be NULL) gets the recorded holder, 0 if none. */
bool hearth_lock_is_held(const char *path, int *pid);
