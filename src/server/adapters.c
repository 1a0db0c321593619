/*
 * adapters.c - the mounted adapter table (adapters.h).
 */
#include "server/adapters.h"

#include "store/hub.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
    char              *id;    /* owned */
    const hearth_lora *lora;  /* the table's reference */
    uint64_t           uid;
} entry;

struct hearth_adapters {
    const hearth_model *m;        /* borrowed */
    pthread_mutex_t     mu;       /* guards everything below */
    entry               e[HEARTH_ADAPTERS_MAX];
    int                 n;
    int                 def;      /* index of the default, -1: none */
    uint64_t            next_uid;
};

hearth_adapters *hearth_adapters_create(const hearth_model *m) {
    hearth_adapters *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->m = m;
    t->def = -1;
    t->next_uid = 1;
    pthread_mutex_init(&t->mu, NULL);
    return t;
}

void hearth_adapters_destroy(hearth_adapters *t) {
    if (!t) return;
    for (int i = 0; i < t->n; i++) {
        hearth_lora_release(t->e[i].lora);
        free(t->e[i].id);
    }
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

static int find(const hearth_adapters *t, const char *id) {
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->e[i].id, id)) return i;
    return -1;
}

/* The id a path gets by default: a hub snapshot's repo id, else the last path component
 * (without .gguf). */
static void default_id(const char *path, char *out, size_t cap) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    size_t n = strlen(buf);
    while (n > 1 && buf[n - 1] == '/') buf[--n] = 0;
    const char *snap = strstr(buf, "/snapshots/");
    if (snap) {
        char folder[512];
        const char *start = snap;
        while (start > buf && start[-1] != '/') start--;
        snprintf(folder, sizeof folder, "%.*s", (int)(snap - start), start);
        if (hearth_hub_repo_id_of(folder, out, cap)) return;
    }
    const char *base = strrchr(buf, '/');
    base = base ? base + 1 : buf;
    snprintf(out, cap, "%s", base);
    n = strlen(out);
    if (n > 5 && !strcmp(out + n - 5, ".gguf")) out[n - 5] = 0;
}

static bool valid_id(const char *id) {
    size_t n = strlen(id);
    if (n == 0 || n >= HEARTH_ADAPTER_ID_MAX || !strcmp(id, "none")) return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)id[i] < 0x20 || id[i] == 0x7f || id[i] == '"' || id[i] == '\\') return false;
    return true;
}

hearth_status hearth_adapters_mount(hearth_adapters *t, const char *path, const char *id, bool make_default,
                                    char *id_out, size_t cap, hearth_err *err) {
    char where[4096];
    snprintf(where, sizeof where, "%s", path);
    if (!exists(path) && hearth_hub_valid_repo_id(path)) { /* a repo id: its snapshot in the hub cache */
        char hub[2048], folder[512], repo[3000];
        if (hearth_hub_cache_dir(hub, sizeof hub) && hearth_hub_repo_folder(path, folder, sizeof folder)) {
            snprintf(repo, sizeof repo, "%s/%s", hub, folder);
            if (!is_dir(repo) || !hearth_hub_snapshot_dir(repo, where, sizeof where))
                return hearth_err_set(err, HEARTH_E_NOTFOUND, -1, "no adapter '%s': not a path, and no repo of that "
                                      "id in the hub cache (hearth get %s)", path, path);
        }
    }
    char own[HEARTH_ADAPTER_ID_MAX + 64];
    if (id && *id) snprintf(own, sizeof own, "%s", id);
    else default_id(hearth_hub_valid_repo_id(path) && !exists(path) ? where : path, own, sizeof own);
    if (!valid_id(own))
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "'%.200s' is not a usable adapter id (1..%d printable "
                              "characters, not \"none\")", own, HEARTH_ADAPTER_ID_MAX - 1);
    hearth_lora *a = NULL;
    hearth_status st = hearth_lora_load(where, t->m, &a, err);
    if (st) return st;
    pthread_mutex_lock(&t->mu);
    if (find(t, own) >= 0) st = hearth_err_set(err, HEARTH_E_INVALID, -1, "an adapter with id '%s' is already "
                                               "mounted (unmount it first, or give another \"id\")", own);
    else if (t->n == HEARTH_ADAPTERS_MAX)
        st = hearth_err_set(err, HEARTH_E_LIMIT, -1, "%d adapters are mounted, the most hearth keeps",
                            HEARTH_ADAPTERS_MAX);
    else if (!(t->e[t->n].id = strdup(own))) st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    if (!st) {
        t->e[t->n].lora = a;
        t->e[t->n].uid = t->next_uid++;
        if (make_default) t->def = t->n;
        t->n++;
        a = NULL;
        if (id_out) snprintf(id_out, cap, "%s", own);
    }
    pthread_mutex_unlock(&t->mu);
    hearth_lora_release(a);
    return st;
}

hearth_status hearth_adapters_unmount(hearth_adapters *t, const char *id) {
    pthread_mutex_lock(&t->mu);
    int i = find(t, id);
    const hearth_lora *a = NULL;
    char *name = NULL;
    if (i >= 0) {
        a = t->e[i].lora;
        name = t->e[i].id;
        if (t->def == i) t->def = -1;
        else if (t->def > i) t->def--;
        memmove(&t->e[i], &t->e[i + 1], (size_t)(t->n - i - 1) * sizeof t->e[0]);
        t->n--;
    }
    pthread_mutex_unlock(&t->mu);
    hearth_lora_release(a); /* requests still using it hold their own references */
    free(name);
    return i >= 0 ? HEARTH_OK : HEARTH_E_NOTFOUND;
}

const hearth_lora *hearth_adapters_get(hearth_adapters *t, const char *id, uint64_t *uid) {
    pthread_mutex_lock(&t->mu);
    int i = id ? find(t, id) : t->def;
    const hearth_lora *a = i >= 0 ? hearth_lora_retain(t->e[i].lora) : NULL;
    if (uid) *uid = i >= 0 ? t->e[i].uid : 0;
    pthread_mutex_unlock(&t->mu);
    return a;
}

int hearth_adapters_count(hearth_adapters *t) {
    pthread_mutex_lock(&t->mu);
    int n = t->n;
    pthread_mutex_unlock(&t->mu);
    return n;
}

bool hearth_adapters_id_at(hearth_adapters *t, int i, char *buf, size_t cap) {
    pthread_mutex_lock(&t->mu);
    bool ok = i >= 0 && i < t->n;
    if (ok) snprintf(buf, cap, "%s", t->e[i].id);
    pthread_mutex_unlock(&t->mu);
    return ok;
}

/* Under the lock. */
static void entry_json(const hearth_adapters *t, int i, hearth_jw *w) {
    const hearth_lora *a = t->e[i].lora;
    hearth_jw_obj(w);
    hearth_jw_key(w, "id");
    hearth_jw_cstr(w, t->e[i].id);
    hearth_jw_key(w, "object");
    hearth_jw_cstr(w, "adapter");
    hearth_jw_key(w, "path");
    hearth_jw_cstr(w, a->path);
    hearth_jw_key(w, "format");
    hearth_jw_cstr(w, a->format);
    hearth_jw_key(w, "rank");
    hearth_jw_int(w, a->max_rank);
    hearth_jw_key(w, "modules");
    hearth_jw_int(w, a->n_mats);
    hearth_jw_key(w, "bytes");
    hearth_jw_int(w, (int64_t)a->bytes);
    hearth_jw_key(w, "default");
    hearth_jw_bool(w, t->def == i);
    hearth_jw_key(w, "in_use"); /* references beyond the table's: requests and their sequences */
    hearth_jw_int(w, atomic_load_explicit(&((hearth_lora *)a)->refs, memory_order_relaxed) - 1);
    hearth_jw_obj_end(w);
}

bool hearth_adapters_json_one(hearth_adapters *t, const char *id, hearth_jw *w) {
    pthread_mutex_lock(&t->mu);
    int i = find(t, id);
    if (i >= 0) entry_json(t, i, w);
    pthread_mutex_unlock(&t->mu);
    return i >= 0;
}

void hearth_adapters_json(hearth_adapters *t, hearth_jw *w) {
    hearth_jw_obj(w);
    hearth_jw_key(w, "object");
    hearth_jw_cstr(w, "list");
    hearth_jw_key(w, "data");
    hearth_jw_arr(w);
    pthread_mutex_lock(&t->mu);
    for (int i = 0; i < t->n; i++) entry_json(t, i, w);
    pthread_mutex_unlock(&t->mu);
    hearth_jw_arr_end(w);
    hearth_jw_obj_end(w);
}

void hearth_adapters_available_json(hearth_adapters *t, hearth_jw *w) {
    hearth_jw_obj(w);
    hearth_jw_key(w, "object");
    hearth_jw_cstr(w, "list");
    hearth_jw_key(w, "data");
    hearth_jw_arr(w);
    char hub[2048];
    DIR *d = hearth_hub_cache_dir(hub, sizeof hub) ? opendir(hub) : NULL;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        char repo[256], dir[4096], snap[4096], cfg[4200];
        if (!hearth_hub_repo_id_of(de->d_name, repo, sizeof repo)) continue;
        snprintf(dir, sizeof dir, "%s/%s", hub, de->d_name);
        if (!hearth_hub_snapshot_dir(dir, snap, sizeof snap)) continue;
        snprintf(cfg, sizeof cfg, "%s/adapter_config.json", snap);
        if (!exists(cfg)) continue;
        hearth_jw_obj(w);
        hearth_jw_key(w, "id");
        hearth_jw_cstr(w, repo);
        hearth_jw_key(w, "object");
        hearth_jw_cstr(w, "adapter");
        hearth_jw_key(w, "path");
        hearth_jw_cstr(w, snap);
        pthread_mutex_lock(&t->mu);
        bool mounted = false;
        for (int i = 0; i < t->n && !mounted; i++) mounted = !strcmp(t->e[i].lora->path, snap) || !strcmp(t->e[i].id, repo);
        pthread_mutex_unlock(&t->mu);
        hearth_jw_key(w, "mounted");
        hearth_jw_bool(w, mounted);
        hearth_jw_obj_end(w);
    }
    if (d) closedir(d);
    hearth_jw_arr_end(w);
    hearth_jw_obj_end(w);
}
