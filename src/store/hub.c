/* hub.c - model lookup in the hub cache; see hub.h. */
#include "store/hub.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

int hearth_hub_cache_dir(char *buf, size_t n) {
    const char *v = getenv("HF_HUB_CACHE");
    int w;
    if (v && *v) w = snprintf(buf, n, "%s", v);
    else if ((v = getenv("HF_HOME")) && *v) w = snprintf(buf, n, "%s/hub", v);
    else {
        const char *home = getenv("HOME");
        w = snprintf(buf, n, "%s/.cache/huggingface/hub", home && *home ? home : ".");
    }
    return w > 0 && (size_t)w < n;
}

bool hearth_hub_match(const char *hay, const char *needle) {
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++) {
        size_t i = 0;
        while (i < n && p[i] && tolower((unsigned char)p[i]) == tolower((unsigned char)needle[i])) i++;
        if (i == n) return true;
    }
    return n == 0;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* snprintf that reports truncation as failure */
static bool fmt_ok(int w, size_t n) { return w >= 0 && (size_t)w < n; }

bool hearth_hub_state_dir(char *buf, size_t n) {
    const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (x && *x) return fmt_ok(snprintf(buf, n, "%s/hearth", x), n);
    return fmt_ok(snprintf(buf, n, "%s/.cache/hearth", home && *home ? home : "."), n);
}

static bool valid_part(const char *s, size_t len) {
    if (len == 0 || len > 96 || s[0] == '-' || s[0] == '.' || s[len - 1] == '-' || s[len - 1] == '.')
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && c != '-' && c != '_' && c != '.') return false;
        if (i + 1 < len && ((c == '-' && s[i + 1] == '-') || (c == '.' && s[i + 1] == '.'))) return false;
    }
    return true;
}

bool hearth_hub_valid_repo_id(const char *id) {
    const char *slash = strchr(id, '/');
    if (!slash) return valid_part(id, strlen(id));
    return !strchr(slash + 1, '/') && valid_part(id, (size_t)(slash - id)) && valid_part(slash + 1, strlen(slash + 1));
}

bool hearth_hub_repo_folder(const char *repo_id, char *buf, size_t n) {
    if (!hearth_hub_valid_repo_id(repo_id)) return false;
    const char *slash = strchr(repo_id, '/');
    if (!slash) return fmt_ok(snprintf(buf, n, "models--%s", repo_id), n);
    return fmt_ok(snprintf(buf, n, "models--%.*s--%s", (int)(slash - repo_id), repo_id, slash + 1), n);
}

/* "models--org--name" -> "org/name" */
bool hearth_hub_repo_id_of(const char *folder, char *out, size_t n) {
    if (strncmp(folder, "models--", 8) || !folder[8] || n == 0) return false;
    const char *p = folder + 8;
    size_t j = 0;
    for (; *p; p++) {
        if (j + 1 >= n) return false;
        if (p[0] == '-' && p[1] == '-') {
            out[j++] = '/';
            p++;
        } else {
            out[j++] = *p;
        }
    }
    out[j] = 0;
    return true;
}

hearth_status hearth_hub_mkdirs(const char *path, hearth_err *err) {
    char buf[4096];
    if (!fmt_ok(snprintf(buf, sizeof buf, "%s", path), sizeof buf))
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "path is too long: %s", path);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p) continue;
        char c = *p;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return hearth_err_set(err, HEARTH_E_IO, -1, "cannot create %s: %s", buf, strerror(errno));
        *p = c;
        if (!c) break;
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return hearth_err_set(err, HEARTH_E_IO, -1, "%s is not a directory", path);
    return HEARTH_OK;
}

bool hearth_hub_snapshot_dir(const char *repo_dir, char *out, size_t n) {
    char path[4096];
    if (!fmt_ok(snprintf(path, sizeof path, "%s/refs/main", repo_dir), sizeof path)) return false;
    FILE *f = fopen(path, "r");
    if (f) {
        char rev[128] = {0};
        bool ok = fgets(rev, sizeof rev, f) != NULL;
        fclose(f);
        rev[strcspn(rev, "\r\n")] = 0;
        struct stat st;
        if (ok && rev[0] && rev[0] != '.' && !strchr(rev, '/') &&
            fmt_ok(snprintf(out, n, "%s/snapshots/%s", repo_dir, rev), n) && stat(out, &st) == 0 &&
            S_ISDIR(st.st_mode))
            return true;
    }
    if (!fmt_ok(snprintf(path, sizeof path, "%s/snapshots", repo_dir), sizeof path)) return false;
    DIR *d = opendir(path);
    if (!d) return false;
    struct dirent *de;
    time_t best = 0;
    bool found = false;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char p2[4352];
        struct stat st;
        if (!fmt_ok(snprintf(p2, sizeof p2, "%s/%s", path, de->d_name), sizeof p2)) continue;
        if (stat(p2, &st) == 0 && S_ISDIR(st.st_mode) && (!found || st.st_mtime > best) &&
            fmt_ok(snprintf(out, n, "%s", p2), n)) {
            best = st.st_mtime;
            found = true;
        }
    }
    closedir(d);
    return found;
}

typedef struct {
    char repo[1024];
    char path[4608];
} match;

/* A Hugging Face checkpoint folder: config.json and safetensors weights. */
static bool is_st_snapshot(const char *dir) {
    char p[4700];
    struct stat st;
    if (!fmt_ok(snprintf(p, sizeof p, "%s/config.json", dir), sizeof p) || stat(p, &st) != 0) return false;
    if (fmt_ok(snprintf(p, sizeof p, "%s/model.safetensors", dir), sizeof p) && stat(p, &st) == 0) return true;
    return fmt_ok(snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir), sizeof p) && stat(p, &st) == 0;
}

hearth_status hearth_hub_resolve(const char *query, char **path, hearth_err *err) {
    *path = NULL;
    struct stat st;
    if (stat(query, &st) == 0 && (S_ISREG(st.st_mode) || (S_ISDIR(st.st_mode) && is_st_snapshot(query)))) {
        *path = strdup(query);
        return *path ? HEARTH_OK : hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    }
    if (stat(query, &st) == 0 && S_ISDIR(st.st_mode))
        return hearth_err_set(err, HEARTH_E_NOTFOUND, -1, "%s has no config.json with safetensors weights", query);
    if (strchr(query, '/') && (ends_with(query, ".gguf") || query[0] == '/' || query[0] == '.'))
        return hearth_err_set(err, HEARTH_E_NOTFOUND, -1, "no such file: %s", query);
    char cache[4096];
    if (!hearth_hub_cache_dir(cache, sizeof cache))
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "hub cache path is too long");
    DIR *d = opendir(cache);
    if (!d) return hearth_err_set(err, HEARTH_E_NOTFOUND, -1, "no model matches '%s' (hub cache %s is empty)",
                                  query, cache);
    enum { MAX_MATCH = 16 };
    match *m = calloc(MAX_MATCH, sizeof *m);
    if (!m) {
        closedir(d);
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    }
    int n_match = 0, n_total = 0, exact = -1;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, "models--", 8)) continue;
        char repo[512], repo_dir[4608], snap[4608];
        if (!hearth_hub_repo_id_of(de->d_name, repo, sizeof repo) ||
            !fmt_ok(snprintf(repo_dir, sizeof repo_dir, "%s/%s", cache, de->d_name), sizeof repo_dir) ||
            !hearth_hub_snapshot_dir(repo_dir, snap, sizeof snap))
            continue;
        /* a safetensors checkpoint is one candidate, labelled by its repo id */
        if (is_st_snapshot(snap) && hearth_hub_match(repo, query)) {
            if (exact < 0 && !strcasecmp(repo, query)) exact = n_match < MAX_MATCH ? n_match : -1;
            n_total++;
            if (n_match < MAX_MATCH && fmt_ok(snprintf(m[n_match].repo, sizeof m[n_match].repo, "%s", repo),
                                              sizeof m[n_match].repo) &&
                fmt_ok(snprintf(m[n_match].path, sizeof m[n_match].path, "%s", snap), sizeof m[n_match].path))
                n_match++;
        }
        DIR *sd = opendir(snap);
        if (!sd) continue;
        struct dirent *fe;
        while ((fe = readdir(sd))) {
            if (!ends_with(fe->d_name, ".gguf")) continue;
            char label[1024];
            if (!fmt_ok(snprintf(label, sizeof label, "%s/%s", repo, fe->d_name), sizeof label) ||
                !hearth_hub_match(label, query))
                continue;
            n_total++;
            if (n_match < MAX_MATCH &&
                fmt_ok(snprintf(m[n_match].repo, sizeof m[n_match].repo, "%s", label), sizeof m[n_match].repo) &&
                fmt_ok(snprintf(m[n_match].path, sizeof m[n_match].path, "%s/%s", snap, fe->d_name),
                       sizeof m[n_match].path))
                n_match++;
        }
        closedir(sd);
    }
    closedir(d);
    hearth_status s;
    if (n_total == 1 || exact >= 0) {
        *path = strdup(m[exact >= 0 ? exact : 0].path);
        s = *path ? HEARTH_OK : hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    } else if (n_total == 0) {
        s = hearth_err_set(err, HEARTH_E_NOTFOUND, -1, "no model in %s matches '%s'", cache, query);
    } else {
        char list[200] = {0};
        size_t off = 0;
        for (int i = 0; i < n_match && off < sizeof list; i++) {
            int w = snprintf(list + off, sizeof list - off, "%s%s", i ? ", " : "", m[i].repo);
            if (w < 0) break;
            off += (size_t)w;
        }
        s = hearth_err_set(err, HEARTH_E_AMBIGUOUS, -1, "'%s' matches %d models: %s", query, n_total, list);
    }
    free(m);
    return s;
}
