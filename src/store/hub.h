/*
 * hub.h - find models in the Hugging Face hub cache (ARCHITECTURE 6), shared with
 * huggingface_hub, mlx-lm and mlx-bun:
 *   $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub
 *   models--ORG--NAME/{blobs/, snapshots/<rev>/<files>, refs/main}
 *
 * hearth_hub_resolve turns what a user typed into one GGUF file or one safetensors checkpoint
 * folder (config.json with model.safetensors or model.safetensors.index.json): an existing
 * path is used as it is; otherwise the query is matched case-insensitively as a substring of
 * "org/name" (a checkpoint snapshot) and of "org/name/file.gguf" (the GGUF files), in the
 * repo's snapshot named by refs/main, or the newest snapshot. A query equal to a checkpoint's
 * repo id picks it; otherwise no match, or more than one, is an error listing what was found.
 *
 * The helpers below name the other places of the layout, shared by the registry, downloads
 * and gc: hearth's own state directory, repo folders, the canonical snapshot.
 *
 * Reads the file system only (hearth_hub_mkdirs creates directories); any thread.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

/* Write the hub cache directory into buf. Returns false when it does not fit. */
int hearth_hub_cache_dir(char *buf, size_t n);

/* Resolve query to a malloc'ed path of a .gguf file or a checkpoint folder (caller frees). */
hearth_status hearth_hub_resolve(const char *query, char **path, hearth_err *err);

/* hearth's own state directory, ${XDG_CACHE_HOME:-~/.cache}/hearth, into buf (not created).
 * Returns false when it does not fit. */
bool hearth_hub_state_dir(char *buf, size_t n);

/* Is repo_id a hub repo id: "name" or "org/name", each part 1..96 of [A-Za-z0-9._-], not
 * starting or ending with '-' or '.', and without "--" or ".." (which the folder names and
 * paths could not round-trip)? */
bool hearth_hub_valid_repo_id(const char *repo_id);
/* "org/name" -> "models--org--name" into buf; false for an invalid id or a short buf. */
bool hearth_hub_repo_folder(const char *repo_id, char *buf, size_t n);
/* "models--org--name" -> "org/name" into buf; false when folder is not a model folder. */
bool hearth_hub_repo_id_of(const char *folder, char *buf, size_t n);

/* The canonical snapshot directory of a repo folder (full path): the one refs/main names
 * when it exists, else the most recently modified snapshot. False when there is none. */
bool hearth_hub_snapshot_dir(const char *repo_dir, char *out, size_t n);

/* Case-insensitive substring test, the matching rule of every model query ("" matches all). */
bool hearth_hub_match(const char *label, const char *query);

/* mkdir -p with mode 0755; existing directories are fine. */
hearth_status hearth_hub_mkdirs(const char *path, hearth_err *err);
