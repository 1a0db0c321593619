/*
 * adapters.h - the LoRA adapters a server has mounted (ARCHITECTURE 4, docs/server.md
 * "Adapters"): a small table of id -> loaded adapter, one of them optionally the default.
 *
 * Mounting loads the files (lora/lora.h: every tensor checked against the served model) outside
 * the table's lock, then inserts under it; unmounting removes the entry and drops the table's
 * reference. A request takes its own reference when it picks an adapter (and the engine one
 * per sequence), so unmounting never pulls an adapter from under a running request: it lives
 * until the last of them ends, while new requests no longer find it.
 *
 * Each mount gets a fresh uid (1, 2, ...), the adapter's name in the prefix cache (engine.h
 * lora_id): an adapter mounted again under the same id is a new uid, so no stale KV is reused.
 *
 * Thread rule: any thread (one mutex).
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "lora/lora.h"
#include "server/json_out.h"

typedef struct hearth_adapters hearth_adapters;

enum { HEARTH_ADAPTERS_MAX = 64, HEARTH_ADAPTER_ID_MAX = 128 };

/* A table for adapters of model m (borrowed; must outlive it). NULL on OOM. */
hearth_adapters *hearth_adapters_create(const hearth_model *m);
void             hearth_adapters_destroy(hearth_adapters *t); /* accepts NULL */

/* Load the adapter at path (a folder or a .gguf file; a hub repo id "org/name" whose snapshot
 * holds one is looked up in the hub cache) and mount it as id (NULL or "": the folder's repo id
 * or file name). make_default: requests that name no adapter use it. The id given to it goes
 * to id_out. Errors: the loader's (lora.h), HEARTH_E_INVALID for an id that is taken or
 * malformed ("none", empty, too long, control characters), HEARTH_E_LIMIT past
 * HEARTH_ADAPTERS_MAX; message in err. */
hearth_status hearth_adapters_mount(hearth_adapters *t, const char *path, const char *id, bool make_default,
                                    char *id_out, size_t cap, hearth_err *err);
/* Unmount id (HEARTH_E_NOTFOUND when unknown). Requests using it finish with it. */
hearth_status hearth_adapters_unmount(hearth_adapters *t, const char *id);
/* A reference to id's adapter (release it with hearth_lora_release) and its uid; NULL when no
 * adapter of that id is mounted. id NULL: the default (NULL when none). */
const hearth_lora *hearth_adapters_get(hearth_adapters *t, const char *id, uint64_t *uid);
/* How many are mounted. */
int hearth_adapters_count(hearth_adapters *t);
/* The i-th mounted adapter's id into buf (false past the end): for listings. */
bool hearth_adapters_id_at(hearth_adapters *t, int i, char *buf, size_t cap);
/* One adapter as a JSON object ({"id","object":"adapter","path","format","rank","modules",
 * "bytes","default","in_use"}); false when unknown. */
bool hearth_adapters_json_one(hearth_adapters *t, const char *id, hearth_jw *w);
/* {"object":"list","data":[adapter objects]}. */
void hearth_adapters_json(hearth_adapters *t, hearth_jw *w);
/* Adapters in the hub cache (snapshots holding adapter_config.json): {"object":"list","data":
 * [{"id": repo id, "path": snapshot, "mounted": bool}]}. */
void hearth_adapters_available_json(hearth_adapters *t, hearth_jw *w);
