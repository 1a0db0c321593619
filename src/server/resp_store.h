/*
 * resp_store.h - the Responses API's in-memory store: what `previous_response_id` resumes
 * and `GET /v1/responses/{id}` returns.
 *
 * Each entry holds a response's id, the conversation up to and including its answer (a JSON
 * array of chat messages, ready to be continued), and the response object as served. Entries
 * live for ttl_s seconds and the whole store stays under max_bytes: putting an entry first
 * drops expired ones, then the least recently used until the new one fits; an entry larger
 * than max_bytes on its own is not kept (a later lookup answers 404, as after expiry).
 * Lookups refresh an entry's place in the LRU order, not its expiry. The defaults are
 * mlx-bun's: one hour, 32 MiB.
 *
 * With a folder (params.dir) the entries are files there instead (resp_disk.h), shared by
 * every process given the same folder: the engine children of `serve --isolate`.
 *
 * Thread rule: any thread (one mutex; entries are copied in and out).
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct hearth_resp_store hearth_resp_store;

typedef struct {
    size_t max_bytes; /* 0: 32 MiB */
    double ttl_s;     /* <= 0: 3600 */
    double (*now_s)(void); /* clock (tests); NULL: CLOCK_MONOTONIC, with dir CLOCK_REALTIME */
    const char *dir;  /* NULL: in memory; else the shared folder of entry files (copied) */
} hearth_resp_store_params;

hearth_resp_store *hearth_resp_store_create(hearth_resp_store_params p); /* NULL when out of memory */
void               hearth_resp_store_destroy(hearth_resp_store *st);   /* accepts NULL */

/* Keep copies of conv and resp under id (replacing an entry with the same id). HEARTH_E_LIMIT
 * when the entry alone is over max_bytes (nothing kept), HEARTH_E_NOMEM. */
hearth_status hearth_resp_store_put(hearth_resp_store *st, const char *id, const char *conv, const char *resp);
/* Malloc'ed copies of the entry's strings (either out pointer may be NULL); false when there
 * is no live entry. */
bool          hearth_resp_store_get(hearth_resp_store *st, const char *id, char **conv, char **resp);
/* Drop an entry; false when there was none. */
bool          hearth_resp_store_del(hearth_resp_store *st, const char *id);
/* Live entries and their bytes (ids and strings). */
void          hearth_resp_store_usage(hearth_resp_store *st, int64_t *n_entries, int64_t *n_bytes);
