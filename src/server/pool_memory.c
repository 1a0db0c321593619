/*
 * pool_memory.c - a pooled model's resident bytes estimated from its files (pool_memory.h).
 */
#include "server/pool_memory.h"
#include "store/facts.h"
#include "store/fit.h"

#include <stdio.h>
#include <sys/stat.h>

#define STEP_SLACK_TOKENS 512 /* the engine's largest step (max_step): a window's ring holds it too */

bool hearth_pool_estimate(void *cls, const char *path, hearth_engines_need *need, char *why, size_t why_cap) {
    const hearth_pool_memory *pm = cls;
    hearth_model_facts f;
    hearth_err err = {0};
    struct stat st;
    bool dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    if ((dir ? hearth_facts_safetensors(path, &f, &err) : hearth_facts_gguf(path, &f, &err)) != HEARTH_OK) {
        snprintf(why, why_cap, "%s", err.msg);
        return false;
    }
    hearth_fit_params fp = {.ctx = pm->ctx};
    hearth_fit fit = hearth_fit_compute(&f, &fp);
    need->weights = fit.weights_bytes;
    need->transient = fit.transient_bytes;
    need->kv = need->kv_arg = 0;
    if (f.caps & HEARTH_CAP_EMBED) return true; /* an encoder: no KV pool */
    if (pm->kv_budget > 0) need->kv = pm->kv_budget; /* the children have it already */
    else need->kv = need->kv_arg = fit.kv_bytes + f.kv_bytes_per_token * STEP_SLACK_TOKENS;
    return true;
}
