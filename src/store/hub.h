/*
 * hub.h - find models in the Hugging Face hub cache (ARCHITECTURE 6), shared with
 * huggingface_hub, mlx-lm and mlx-bun:
 *   $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub
 *   models--ORG--NAME/{blobs/, snapshots/<rev>/<files>, refs/main}
 *
 * hearth_hub_resolve turns what a user typed into one GGUF file: an existing path is used as
 * it is; otherwise the query is matched case-insensitively as a substring of "org/name" (and of
 * the GGUF file names in the repo's snapshot named by refs/main, or the newest snapshot). No
 * match, or more than one, is an error whose message lists what was found.
 *
 * Reads the file system only; any thread.
 */
#pragma once
#include <stddef.h>

#include "base/status.h"

/* Write the hub cache directory into buf. Returns false when it does not fit. */
int hearth_hub_cache_dir(char *buf, size_t n);

/* Resolve query to a malloc'ed path of a .gguf file (caller frees). */
hearth_status hearth_hub_resolve(const char *query, char **path, hearth_err *err);
