/*
 * store_cache.h - synthetic Hugging Face hub caches for the store tests (header-only, test
 * code only): a temp directory, blobs, snapshot links, refs, and rm -rf.
 *
 *   char hub[512]; sc_tmpdir(hub, sizeof hub, "hub");
 *   sc_blob(hub, "org/a", "b1", "bytes", 5);              // models--org--a/blobs/b1
 *   sc_link(hub, "org/a", "rev1", "model.gguf", "b1");    // snapshots/rev1/model.gguf -> ../../blobs/b1
 *   sc_ref(hub, "org/a", "main", "rev1");                 // refs/main
 *   sc_rmrf(hub);
 *
 * Out of room or I/O failures abort: this is test code.
 */
#pragma once
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static inline void sc_die(const char *what, const char *path) {
    fprintf(stderr, "store_cache: %s %s failed\n", what, path);
    abort();
}

static inline void sc_mkdirs(const char *path) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        mkdir(buf, 0755);
        *p = '/';
    }
    mkdir(buf, 0755);
}

/* A fresh directory under $TMPDIR (or /tmp) into out. */
static inline void sc_tmpdir(char *out, size_t n, const char *tag) {
    const char *t = getenv("TMPDIR");
    snprintf(out, n, "%s/hearth-%s-XXXXXX", t && *t ? t : "/tmp", tag);
    if (!mkdtemp(out)) sc_die("mkdtemp", out);
}

/* models--org--name of a repo id into out. */
static inline void sc_repo_dir(const char *hub, const char *repo, char *out, size_t n) {
    char folder[256];
    snprintf(folder, sizeof folder, "models--%s", repo);
    for (char *p = folder; *p; p++)
        if (*p == '/') {
            memmove(p + 2, p + 1, strlen(p + 1) + 1);
            p[0] = p[1] = '-';
        }
    snprintf(out, n, "%s/%s", hub, folder);
}

static inline void sc_write(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f)) sc_die("write", path);
}

/* A blob file blobs/<name> with the given bytes; returns its path in a static buffer. */
static inline const char *sc_blob(const char *hub, const char *repo, const char *name, const void *data, size_t n) {
    static char path[1024];
    char dir[900];
    sc_repo_dir(hub, repo, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/blobs", dir);
    sc_mkdirs(path);
    snprintf(path, sizeof path, "%s/blobs/%s", dir, name);
    sc_write(path, data, n);
    return path;
}

/* snapshots/<rev>/<file> -> ../../blobs/<blob> (more ../ for files in subfolders). */
static inline void sc_link(const char *hub, const char *repo, const char *rev, const char *file, const char *blob) {
    char dir[900], path[1024], target[1024] = "";
    sc_repo_dir(hub, repo, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/snapshots/%s/%s", dir, rev, file);
    char *slash = strrchr(path, '/');
    *slash = 0;
    sc_mkdirs(path);
    *slash = '/';
    for (const char *p = file; (p = strchr(p, '/')); p++) strcat(target, "../");
    strcat(target, "../../blobs/");
    strcat(target, blob);
    unlink(path);
    if (symlink(target, path)) sc_die("symlink", path);
}

/* refs/<ref> containing rev. */
static inline void sc_ref(const char *hub, const char *repo, const char *ref, const char *rev) {
    char dir[900], path[1024];
    sc_repo_dir(hub, repo, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/refs/%s", dir, ref);
    char *slash = strrchr(path, '/');
    *slash = 0;
    sc_mkdirs(path);
    *slash = '/';
    sc_write(path, rev, strlen(rev));
}

static inline void sc_rmrf(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *de;
        while (d && (de = readdir(d))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
            char p[1024];
            if (snprintf(p, sizeof p, "%s/%s", path, de->d_name) >= (int)sizeof p) sc_die("path", path);
            sc_rmrf(p);
        }
        if (d) closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static inline int sc_exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}
