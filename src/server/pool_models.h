/*
 * pool_models.h - GET /v1/models[/ID] of `serve --isolate --model-pool N`: every model of the
 * store (the registry's canonical rows, after a scan) with "loaded": whether its engine child
 * is resident now, the served default first. A request naming one of these ids (or what
 * hearth_registry_resolve accepts for it) starts or reuses that model's engine
 * (pool_models_resolve, the pool's resolver).
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "server/server_internal.h"

void hearth_pool_models(hearth_http_req *r);
void hearth_pool_model(hearth_http_req *r);

/* Without a pool: does name name a model of the store other than the served one (the file at
 * served_path, a real path; NULL: unknown)? Only an exact registry id or "id/file" counts
 * (case-insensitive, as the registry compares): a part of a name is not taken as naming a
 * model here, because clients send placeholder names ("x", "gpt-4") that a substring match
 * would turn into errors. A name without '/' is no registry id and is not looked up. The
 * other model's id into other. */
bool hearth_pool_names_other(const char *name, const char *served_path, char *other, size_t cap);

/* The pool's resolver (engines.h hearth_engines_resolve_fn): a model of the registry by its
 * id, "id/file", or a unique part of it; never a filesystem path. cls is unused. */
bool hearth_pool_resolve(void *cls, const char *name, char *id, size_t id_cap, char *path, size_t path_cap);
