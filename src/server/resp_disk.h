/*
 * resp_disk.h - the Responses store (resp_store.h) kept as files in a folder that several
 * processes share: the engine children of `serve --isolate` (docs/isolation.md). A response
 * stored by one model's child is then found by every other child (GET /v1/responses/{id},
 * previous_response_id in a request for another model), and outlives its child: an eviction
 * from the pool, a crash and its respawn.
 *
 * One file per entry, DIR/<id>.resp, written whole to a temporary name and renamed, so a
 * reader in another process sees the old entry or the new one, never a part:
 *
 *   "HRS1 <expires_s> <bytes> <n_conv> <n_resp>\n" <conv: n_conv bytes> <resp: n_resp bytes>
 *
 * expires_s is on the store's clock (wall-clock seconds: shared by processes), bytes the
 * entry's cost as resp_store.h counts it. A file's mtime is the entry's last use (set to the
 * clock at put and at each lookup): the byte cap drops the least recently used files. A
 * DELETE removes the file, so no child finds the entry again. Ids are the server's own
 * ("resp_" and letters, digits, '-' or '_'); any other id is no entry (never a path).
 *
 * Thread rule: any thread; callers serialize within a process (resp_store.c's mutex), the
 * rename keeps processes apart.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* Keep the entry; drop expired files, then the least recently used until the total is within
 * max_bytes. HEARTH_E_LIMIT when the entry alone is over max_bytes (an older entry of the id
 * is dropped, nothing kept), HEARTH_E_INVALID for an id that is not a server id, HEARTH_E_IO. */
hearth_status hearth_resp_disk_put(const char *dir, size_t max_bytes, double now_s, double ttl_s, const char *id,
                                   const char *conv, const char *resp);
/* Malloc'ed copies of the live entry's strings (either out pointer may be NULL); refreshes
 * its use. False when there is none (an expired one is removed). */
bool          hearth_resp_disk_get(const char *dir, double now_s, const char *id, char **conv, char **resp);
/* Remove the entry; false when there was none. */
bool          hearth_resp_disk_del(const char *dir, const char *id);
/* Live entries and their cost in bytes. */
void          hearth_resp_disk_usage(const char *dir, double now_s, int64_t *n_entries, int64_t *n_bytes);
/* Remove every entry file (and stale temporary files) of dir; the folder stays. */
void          hearth_resp_disk_clear(const char *dir);
