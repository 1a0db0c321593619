/*
 * gc.c - plan and execute hub cache gc; see gc.h.
 *
 * A repo is read into memory first (refs, and for each snapshot its files: relative path,
 * the blob a link points to, or the size of a regular file), then judged; nothing is deleted
 * while planning.
 */
#include "store/gc.h"

#include "store/get.h"
#include "store/hub.h"
#include "store/lock.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"

typedef struct {
    char   *rel;      /* owned: path below the snapshot */
    char   *blob;     /* owned: blob name a link points to, or NULL */
    int64_t bytes;    /* size of a regular file (not a link) */
} entry;

typedef struct {
    char    name[256];
    entry  *e;        /* owned */
    size_t  n, cap;
    bool    keep, skip;
    int64_t own_bytes; /* regular files */
} snapshot;

typedef struct {
    snapshot *s;
    size_t    n, cap;
    char    **refs;   /* commits named by refs/ (owned strings) */
    size_t    n_refs, cap_refs;
} repo_state;

static void repo_free(repo_state *r) {
    for (size_t i = 0; i < r->n; i++) {
        for (size_t k = 0; k < r->s[i].n; k++) {
            free(r->s[i].e[k].rel);
            free(r->s[i].e[k].blob);
        }
        free(r->s[i].e);
    }
    free(r->s);
    for (size_t i = 0; i < r->n_refs; i++) free(r->refs[i]);
    free(r->refs);
    memset(r, 0, sizeof *r);
}

/* Every file under refs/ (refs/main, refs/pr/1): its first line is a commit. */
static bool read_refs(repo_state *r, const char *dir, int depth) {
    DIR *d = opendir(dir);
    if (!d) return true;
    struct dirent *de;
    bool ok = true;
    while (ok && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char p[4352];
        struct stat st;
        if (snprintf(p, sizeof p, "%s/%s", dir, de->d_name) >= (int)sizeof p || lstat(p, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            if (depth < 4) ok = read_refs(r, p, depth + 1);
            continue;
        }
        FILE *f = fopen(p, "r");
        char rev[128] = "";
        if (!f) continue;
        if (fgets(rev, sizeof rev, f)) rev[strcspn(rev, "\r\n \t")] = 0;
        fclose(f);
        if (!rev[0]) continue;
        if (!hearth_buf_grow(&r->refs, &r->cap_refs, r->n_refs + 1, sizeof *r->refs, 8) || !(r->refs[r->n_refs] = strdup(rev)))
            ok = false;
        else r->n_refs++;
    }
    closedir(d);
    return ok;
}

static bool add_entry(snapshot *s, const char *rel, const char *blob, int64_t bytes) {
    if (!hearth_buf_grow(&s->e, &s->cap, s->n + 1, sizeof *s->e, 8)) return false;
    entry *e = &s->e[s->n];
    e->rel = strdup(rel);
    e->blob = blob ? strdup(blob) : NULL;
    e->bytes = bytes;
    if (!e->rel || (blob && !e->blob)) {
        free(e->rel);
        free(e->blob);
        return false;
    }
    s->n++;
    s->own_bytes += bytes;
    return true;
}

/* The files of a snapshot, recursively; links into ../blobs/ record their blob name. */
static bool read_snapshot(snapshot *s, const char *dir, const char *rel, int depth) {
    DIR *d = opendir(dir);
    if (!d) return true;
    struct dirent *de;
    bool ok = true;
    while (ok && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        char p[4352], r[1024], target[1024];
        struct stat st;
        if (snprintf(p, sizeof p, "%s/%s", dir, de->d_name) >= (int)sizeof p ||
            snprintf(r, sizeof r, "%s%s%s", rel, rel[0] ? "/" : "", de->d_name) >= (int)sizeof r || lstat(p, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (depth < 16) ok = read_snapshot(s, p, r, depth + 1);
        } else if (S_ISLNK(st.st_mode)) {
            ssize_t n = readlink(p, target, sizeof target - 1);
            const char *blob = NULL;
            if (n > 0) {
                target[n] = 0;
                const char *b = strstr(target, "blobs/");
                if (b && !strchr(b + 6, '/')) blob = b + 6;
            }
            ok = add_entry(s, r, blob, 0);
        } else if (S_ISREG(st.st_mode)) {
            ok = add_entry(s, r, NULL, (int64_t)st.st_size);
        }
    }
    closedir(d);
    return ok;
}

static bool has_rel(const snapshot *s, const char *rel) {
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->e[i].rel, rel)) return true;
    return false;
}

static bool blob_linked(const repo_state *r, const char *blob) {
    for (size_t i = 0; i < r->n; i++) {
        const snapshot *s = &r->s[i];
        if (!s->keep && !s->skip) continue;
        for (size_t k = 0; k < s->n; k++)
            if (s->e[k].blob && !strcmp(s->e[k].blob, blob)) return true;
    }
    return false;
}

static bool ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

typedef struct {
    hearth_gc_plan *plan;
    size_t          cap_repos, cap_actions;
} builder;

static bool add_action(builder *b, hearth_gc_kind kind, const char *path, int64_t bytes) {
    hearth_gc_plan *p = b->plan;
    if (!hearth_buf_grow(&p->actions, &b->cap_actions, p->n_actions + 1, sizeof *p->actions, 8)) return false;
    hearth_gc_action *a = &p->actions[p->n_actions++];
    a->kind = kind;
    a->repo = p->n_repos - 1;
    snprintf(a->path, sizeof a->path, "%s", path);
    a->bytes = bytes;
    hearth_gc_repo *gr = &p->repos[a->repo];
    gr->reclaim_bytes += bytes;
    p->reclaim_bytes += bytes;
    return true;
}

/* Plan one repo folder; appends a hearth_gc_repo row and its actions. */
static hearth_status plan_repo(builder *b, const char *hub, const char *folder, bool force, bool locked,
                               hearth_err *err) {
    hearth_gc_plan *p = b->plan;
    if (!hearth_buf_grow(&p->repos, &b->cap_repos, p->n_repos + 1, sizeof *p->repos, 8))
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    hearth_gc_repo *gr = &p->repos[p->n_repos++];
    memset(gr, 0, sizeof *gr);
    hearth_hub_repo_id_of(folder, gr->repo_id, sizeof gr->repo_id);
    char dir[4352], path[4608], lock[4608];
    snprintf(dir, sizeof dir, "%s/%s", hub, folder);
    repo_state r = {0};
    hearth_status st = HEARTH_OK;
    snprintf(path, sizeof path, "%s/refs", dir);
    if (!read_refs(&r, path, 0)) goto nomem;
    snprintf(path, sizeof path, "%s/snapshots", dir);
    DIR *d = opendir(path);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char sp[4864];
        struct stat sst;
        if (snprintf(sp, sizeof sp, "%s/%s", path, de->d_name) >= (int)sizeof sp || lstat(sp, &sst) != 0 ||
            !S_ISDIR(sst.st_mode))
            continue;
        if (!hearth_buf_grow(&r.s, &r.cap, r.n + 1, sizeof *r.s, 8)) {
            closedir(d);
            goto nomem;
        }
        snapshot *s = &r.s[r.n++];
        memset(s, 0, sizeof *s);
        snprintf(s->name, sizeof s->name, "%s", de->d_name);
        for (size_t i = 0; i < r.n_refs; i++)
            if (!strcmp(r.refs[i], s->name)) s->keep = true;
        if (!read_snapshot(s, sp, "", 0)) {
            closedir(d);
            goto nomem;
        }
    }
    if (d) closedir(d);
    int n_keep = 0;
    for (size_t i = 0; i < r.n; i++) n_keep += r.s[i].keep;
    if (n_keep == 0) {
        gr->skipped = true;
        snprintf(gr->note, sizeof gr->note, "%s", r.n ? "no ref names a cached snapshot" : "no snapshots");
        goto done;
    }
    if (!locked && hearth_get_repo_lock_path(hub, gr->repo_id, lock, sizeof lock) && hearth_lock_is_held(lock, NULL)) {
        gr->skipped = true;
        snprintf(gr->note, sizeof gr->note, "a download is in progress");
        goto done;
    }
    /* superseded snapshots: the tripwire first */
    for (size_t i = 0; i < r.n; i++) {
        snapshot *s = &r.s[i];
        if (s->keep) {
            gr->n_keep++;
            continue;
        }
        const char *lost = NULL;
        for (size_t k = 0; k < s->n && !lost; k++) {
            bool kept = false;
            for (size_t j = 0; j < r.n && !kept; j++) kept = r.s[j].keep && has_rel(&r.s[j], s->e[k].rel);
            if (!kept) lost = s->e[k].rel;
        }
        if (lost && !force) {
            s->skip = true;
            gr->n_skip++;
            size_t off = strlen(gr->note);
            snprintf(gr->note + off, sizeof gr->note - off, "%s%.12s holds %s, which no kept snapshot has",
                     off ? "; " : "", s->name, lost);
            continue;
        }
        gr->n_prune++;
        char sp[4864];
        snprintf(sp, sizeof sp, "%s/%s", path, s->name);
        if (!add_action(b, HEARTH_GC_SNAPSHOT, sp, s->own_bytes)) goto nomem;
    }
    /* blobs nothing kept links to */
    snprintf(path, sizeof path, "%s/blobs", dir);
    d = opendir(path);
    while (d && (de = readdir(d))) {
        const char *nm = de->d_name;
        if (nm[0] == '.' || ends_with(nm, ".incomplete") || ends_with(nm, ".lock") || strstr(nm, ".tmp")) continue;
        char bp[4864], bl[4864];
        struct stat bst;
        if (snprintf(bp, sizeof bp, "%s/%s", path, nm) >= (int)sizeof bp || lstat(bp, &bst) != 0 ||
            !S_ISREG(bst.st_mode) || blob_linked(&r, nm))
            continue;
        if (snprintf(bl, sizeof bl, "%s/.locks/%s/%s.lock", hub, folder, nm) < (int)sizeof bl &&
            hearth_lock_is_held(bl, NULL))
            continue;
        gr->n_blobs++;
        if (!add_action(b, HEARTH_GC_BLOB, bp, (int64_t)bst.st_size)) {
            closedir(d);
            goto nomem;
        }
    }
    if (d) closedir(d);
    goto done;
nomem:
    st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
done:
    repo_free(&r);
    return st;
}

void hearth_gc_plan_free(hearth_gc_plan *p) {
    free(p->repos);
    free(p->actions);
    memset(p, 0, sizeof *p);
}

/* Plan every repo, or repo_id; locked: the caller holds that repo's lock (execute). */
static hearth_status plan_all(const char *hub_dir, const char *repo_id, bool force, bool locked, hearth_gc_plan *out,
                              hearth_err *err) {
    memset(out, 0, sizeof *out);
    char hub[4096], only[256] = "";
    if (hub_dir) snprintf(hub, sizeof hub, "%s", hub_dir);
    else if (!hearth_hub_cache_dir(hub, sizeof hub))
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "hub cache path is too long");
    if (repo_id && !hearth_hub_repo_folder(repo_id, only, sizeof only))
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "'%s' is not a repo id", repo_id);
    DIR *d = opendir(hub);
    if (!d) return HEARTH_OK; /* no cache: nothing to collect */
    /* sorted, so plans and tables come out in a stable order */
    struct dirent **names = NULL;
    int n = scandir(hub, &names, NULL, alphasort);
    closedir(d);
    builder b = {.plan = out};
    hearth_status st = HEARTH_OK;
    for (int i = 0; i < n; i++) {
        const char *nm = names[i]->d_name;
        if (st == HEARTH_OK && !strncmp(nm, "models--", 8) && (!only[0] || !strcmp(nm, only)))
            st = plan_repo(&b, hub, nm, force, locked, err);
        free(names[i]);
    }
    free(names);
    if (st) hearth_gc_plan_free(out);
    return st;
}

hearth_status hearth_gc_plan_make(const char *hub_dir, const char *repo_id, bool force, hearth_gc_plan *out,
                                  hearth_err *err) {
    return plan_all(hub_dir, repo_id, force, false, out, err);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

hearth_status hearth_gc_execute(const char *hub_dir, const hearth_gc_plan *plan, bool force, hearth_gc_result *result,
                                hearth_err *err) {
    hearth_gc_result local;
    if (!result) result = &local;
    memset(result, 0, sizeof *result);
    char hub[4096];
    if (hub_dir) snprintf(hub, sizeof hub, "%s", hub_dir);
    else if (!hearth_hub_cache_dir(hub, sizeof hub))
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "hub cache path is too long");
    hearth_status st = HEARTH_OK;
    for (size_t ir = 0; ir < plan->n_repos && st == HEARTH_OK; ir++) {
        const hearth_gc_repo *gr = &plan->repos[ir];
        if (gr->skipped || gr->n_prune + gr->n_blobs == 0) continue;
        char lock_path[4400];
        hearth_lock lock;
        if (!hearth_get_repo_lock_path(hub, gr->repo_id, lock_path, sizeof lock_path)) continue;
        hearth_lock_result lr = hearth_lock_acquire(lock_path, false, 0, &lock, NULL, err);
        if (lr == HEARTH_LOCK_BUSY) {
            result->n_repos_busy++;
            continue;
        }
        if (lr == HEARTH_LOCK_ERROR) return HEARTH_E_IO;
        hearth_gc_plan fresh;
        st = plan_all(hub, gr->repo_id, force, true, &fresh, err);
        for (size_t ia = 0; st == HEARTH_OK && ia < fresh.n_actions; ia++) {
            const hearth_gc_action *a = &fresh.actions[ia];
            bool agreed = false;
            for (size_t k = 0; k < plan->n_actions && !agreed; k++)
                agreed = plan->actions[k].repo == ir && plan->actions[k].kind == a->kind &&
                         !strcmp(plan->actions[k].path, a->path);
            if (!agreed) continue;
            if (a->kind == HEARTH_GC_SNAPSHOT) {
                if (nftw(a->path, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0) {
                    st = hearth_err_set(err, HEARTH_E_IO, -1, "cannot remove %s: %s", a->path, strerror(errno));
                    break;
                }
                result->n_snapshots++;
            } else {
                if (unlink(a->path) != 0 && errno != ENOENT) {
                    st = hearth_err_set(err, HEARTH_E_IO, -1, "cannot remove %s: %s", a->path, strerror(errno));
                    break;
                }
                result->n_blobs++;
            }
            result->bytes += a->bytes;
        }
        hearth_gc_plan_free(&fresh);
        hearth_lock_release(&lock);
    }
    return st;
}
