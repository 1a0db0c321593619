/*
 * resp_disk.c - the shared Responses store in files (resp_disk.h has the format).
 *
 * The cap is enforced by a scan of the folder at each put: a store of at most 32 MiB of
 * conversations is hundreds to a few thousand files, which is a readdir and a stat each,
 * small next to the generation that made the entry. A file another process removed between
 * the scan and its unlink is simply gone already.
 */
#include "server/resp_disk.h"
#include "base/file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_ID   128
#define SUFFIX   ".resp"
#define MAX_FILE ((size_t)1 << 31)

static bool id_ok(const char *id) {
    size_t n = strlen(id);
    if (!n || n > MAX_ID) return false;
    for (const char *p = id; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
              *p == '-'))
            return false;
    return true;
}

static void path_of(const char *dir, const char *id, char *out, size_t cap) {
    snprintf(out, cap, "%s/%s" SUFFIX, dir, id);
}

/* Set path's mtime to t (the entry's last use on the store's clock). */
static void touch(const char *path, double t) {
    struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_sec = (time_t)t, .tv_nsec = (long)((t - (double)(time_t)t) * 1e9)}};
    utimensat(AT_FDCWD, path, ts, 0);
}

/* The header of the file at path: its expiry and cost; false when it is not an entry. */
static bool head_of(const char *path, double *expires, long long *bytes) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char line[128];
    bool ok = fgets(line, sizeof line, f) && sscanf(line, "HRS1 %lf %lld", expires, bytes) == 2;
    fclose(f);
    return ok;
}

typedef struct {
    char      name[MAX_ID + sizeof SUFFIX + 1];
    double    used;
    long long bytes;
} file_info;

/* The live entries of dir (expired ones removed); *n of them in a malloc'ed array. */
static file_info *scan(const char *dir, double now, size_t *n, long long *total) {
    *n = 0;
    *total = 0;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    file_info *v = NULL;
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t k = strlen(de->d_name);
        if (de->d_name[0] == '.' || k <= strlen(SUFFIX) || k >= sizeof v->name ||
            strcmp(de->d_name + k - strlen(SUFFIX), SUFFIX))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        double expires;
        long long bytes;
        struct stat st;
        if (!head_of(path, &expires, &bytes) || stat(path, &st)) continue;
        if (expires <= now) {
            unlink(path);
            continue;
        }
        if (*n == cap) {
            size_t nc = cap ? 2 * cap : 64;
            file_info *nv = realloc(v, nc * sizeof *v);
            if (!nv) break;
            v = nv;
            cap = nc;
        }
        memcpy(v[*n].name, de->d_name, k + 1); /* k < sizeof name, checked above */
        v[*n].used = (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9;
        v[*n].bytes = bytes;
        *total += bytes;
        (*n)++;
    }
    closedir(d);
    return v;
}

static int by_use(const void *a, const void *b) {
    double x = ((const file_info *)a)->used, y = ((const file_info *)b)->used;
    return x < y ? -1 : x > y;
}

hearth_status hearth_resp_disk_put(const char *dir, size_t max_bytes, double now_s, double ttl_s, const char *id,
                                   const char *conv, const char *resp) {
    if (!id_ok(id)) return HEARTH_E_INVALID;
    size_t n_conv = strlen(conv), n_resp = strlen(resp), bytes = strlen(id) + n_conv + n_resp + 3;
    char path[4096], tmp[4160];
    path_of(dir, id, path, sizeof path);
    if (bytes > max_bytes) {
        unlink(path);
        return HEARTH_E_LIMIT;
    }
    /* unique: other processes differ in pid, and puts within one are serialized */
    snprintf(tmp, sizeof tmp, "%s/.%s.%d.tmp", dir, id, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return HEARTH_E_IO;
    bool ok = fprintf(f, "HRS1 %.17g %zu %zu %zu\n", now_s + ttl_s, bytes, n_conv, n_resp) > 0 &&
              fwrite(conv, 1, n_conv, f) == n_conv && fwrite(resp, 1, n_resp, f) == n_resp;
    ok = !fclose(f) && ok;
    if (!ok || rename(tmp, path)) {
        unlink(tmp);
        return HEARTH_E_IO;
    }
    touch(path, now_s);
    /* the cap: expired entries went in the scan; then the least recently used, never this one */
    size_t n = 0;
    long long total = 0;
    file_info *v = scan(dir, now_s, &n, &total);
    if (v && total > (long long)max_bytes) {
        qsort(v, n, sizeof *v, by_use);
        char mine[sizeof v->name];
        snprintf(mine, sizeof mine, "%s" SUFFIX, id);
        for (size_t i = 0; i < n && total > (long long)max_bytes; i++) {
            if (!strcmp(v[i].name, mine)) continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", dir, v[i].name);
            if (!unlink(p) || errno == ENOENT) total -= v[i].bytes;
        }
    }
    free(v);
    return HEARTH_OK;
}

bool hearth_resp_disk_get(const char *dir, double now_s, const char *id, char **conv, char **resp) {
    if (conv) *conv = NULL;
    if (resp) *resp = NULL;
    if (!id_ok(id)) return false;
    char path[4096];
    path_of(dir, id, path, sizeof path);
    size_t len = 0;
    char *raw = hearth_file_read(path, MAX_FILE, &len);
    if (!raw) return false;
    double expires = 0;
    unsigned long long bytes = 0, n_conv = 0, n_resp = 0;
    char *body = memchr(raw, '\n', len);
    bool ok = body && sscanf(raw, "HRS1 %lf %llu %llu %llu", &expires, &bytes, &n_conv, &n_resp) == 4 &&
              (size_t)(raw + len - (body + 1)) == n_conv + n_resp;
    if (ok && expires <= now_s) {
        unlink(path);
        ok = false;
    }
    if (ok) {
        body++;
        if (conv && !(*conv = strndup(body, (size_t)n_conv))) ok = false;
        if (ok && resp && !(*resp = strndup(body + n_conv, (size_t)n_resp))) ok = false;
        if (ok) touch(path, now_s);
    }
    free(raw);
    if (!ok) {
        if (conv) free(*conv), *conv = NULL;
        if (resp) free(*resp), *resp = NULL;
    }
    return ok;
}

bool hearth_resp_disk_del(const char *dir, const char *id) {
    if (!id_ok(id)) return false;
    char path[4096];
    path_of(dir, id, path, sizeof path);
    return unlink(path) == 0;
}

void hearth_resp_disk_usage(const char *dir, double now_s, int64_t *n_entries, int64_t *n_bytes) {
    size_t n = 0;
    long long total = 0;
    free(scan(dir, now_s, &n, &total));
    *n_entries = (int64_t)n;
    *n_bytes = total;
}

void hearth_resp_disk_clear(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t k = strlen(de->d_name);
        bool entry = k > strlen(SUFFIX) && !strcmp(de->d_name + k - strlen(SUFFIX), SUFFIX);
        bool tmp = de->d_name[0] == '.' && k > 4 && !strcmp(de->d_name + k - 4, ".tmp");
        if (!entry && !tmp) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        unlink(path);
    }
    closedir(d);
}
