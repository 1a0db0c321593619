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

/* The pool's resolver (engines.h hearth_engines_resolve_fn): a model of the registry by its
 * id, "id/file", or a unique part of it; never a filesystem path. cls is unused. */
bool hearth_pool_resolve(void *cls, const char *name, char *id, size_t id_cap, char *path, size_t path_cap);
