/*
 * starter.h - the first-run model: when hearth starts with no model named and none in the
 * cache, it fetches a starter chosen by fit (store/fit.h) for this machine.
 *
 * The candidates are small instruct models whose architecture hearth runs, one GGUF file each.
 * Their shapes are listed here so fit can judge them before anything is downloaded; their
 * sizes are approximate (the hub's metadata is what the download checks). The pick follows
 * mlx-bun's rule: the largest candidate that fits a 0.6 x budget "coexist" share (the machine
 * stays usable) and, when the memory bandwidth is known, is predicted to decode at least
 * 10 tokens/s; else the smallest that fits the budget at all; else none.
 *
 * For the server's bare `hearth`:
 *   char *path = hearth_starter_find_cached(NULL);           // any candidate already here?
 *   if (!path) {
 *       const hearth_starter *s = hearth_starter_pick(budget, bw);
 *       hearth_starter_fetch(s, &get_params, &path, &err);    // progress through get_params
 *   }
 * Immutable table; any thread.
 */
#pragma once
#include <stdint.h>

#include "base/status.h"
#include "store/facts.h"
#include "store/get.h"

typedef struct {
    const char *repo_id;
    const char *file;
    const char *revision;   /* a commit when known, else "main" */
    int64_t     file_bytes; /* approximate */
    /* shape, as in the GGUF metadata */
    int32_t n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_ctx_train, n_vocab;
    const char *arch;
} hearth_starter;

#define HEARTH_STARTER_COEXIST_SHARE 0.6
#define HEARTH_STARTER_MIN_TOK_S 10.0

/* The candidates, smallest first. */
const hearth_starter *hearth_starter_list(size_t *n);
/* fit's inputs for a candidate (weights = file bytes, f16 KV, activations per token). */
hearth_model_facts hearth_starter_facts(const hearth_starter *s);
/* The candidate for a memory budget (<= 0: fit's default) and read bandwidth (<= 0: unknown),
 * judged at min(training context, 4096) tokens; NULL when none fits. */
const hearth_starter *hearth_starter_pick(int64_t budget_bytes, double bw_bytes_per_s);
/* The largest candidate already in the hub cache (hub_dir NULL: the default), as a malloc'ed
 * path to its file in the canonical snapshot; NULL when there is none. */
char *hearth_starter_find_cached(const char *hub_dir);
/* Download s (repo, file and revision are set on a copy of base; base may be NULL) and return
 * the malloc'ed path of the file in its snapshot. */
hearth_status hearth_starter_fetch(const hearth_starter *s, const hearth_get_params *base, char **path,
                                   hearth_err *err);
