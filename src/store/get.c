/* get.c - a revision from the hub into the hub cache; see get.h. */
#include "store/get.h"

#include "base/log.h"
#include "store/hub.h"
#include "store/hubapi.h"
#include "store/lock.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

hearth_get_params hearth_get_params_default(void) {
    hearth_get_params p;
    memset(&p, 0, sizeof p);
    p.retries = -1;
    return p;
}

bool hearth_get_repo_lock_path(const char *hub_dir, const char *repo_id, char *buf, size_t n) {
    char folder[256];
    return hearth_hub_repo_folder(repo_id, folder, sizeof folder) &&
           snprintf(buf, n, "%s/.locks/%s/hearth-repo.lock", hub_dir, folder) < (int)n;
}

/* Write text to path atomically (temp file + rename). */
static bool write_atomic(const char *path, const char *text) {
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof tmp) return false;
    FILE *f = fopen(tmp, "w");
    if (!f) return false;
    bool ok = fputs(text, f) >= 0;
    ok = fflush(f) == 0 && fsync(fileno(f)) == 0 && ok;
    if (fclose(f) != 0) ok = false;
    if (ok && rename(tmp, path) == 0) return true;
    unlink(tmp);
    return false;
}

/* snapshots/<commit>/<file> -> ../../blobs/<oid>, with one more ../ per folder in file. */
static hearth_status link_file(const char *snap, const hearth_hub_file *f, hearth_err *err) {
    char path[4700], tmp[4800], target[2048] = "", dir[4700];
    if (snprintf(path, sizeof path, "%s/%s", snap, f->path) >= (int)sizeof path)
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "path too long: %s", f->path);
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = 0;
    hearth_status st = hearth_hub_mkdirs(dir, err);
    if (st) return st;
    for (const char *p = f->path; (p = strchr(p, '/')); p++) strcat(target, "../");
    strcat(target, "../../blobs/");
    strcat(target, f->oid);
    char cur[2048];
    ssize_t n = readlink(path, cur, sizeof cur - 1);
    if (n > 0 && (size_t)n == strlen(target) && !memcmp(cur, target, (size_t)n)) return HEARTH_OK;
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    unlink(tmp);
    if (symlink(target, tmp) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return hearth_err_set(err, HEARTH_E_IO, -1, "cannot link %s: %s", path, strerror(e));
    }
    return HEARTH_OK;
}

hearth_status hearth_get(const hearth_get_params *p, hearth_get_result *result, hearth_err *err) {
    hearth_get_result local;
    if (!result) result = &local;
    memset(result, 0, sizeof *result);
    const char *rev = p->revision ? p->revision : "main";
    if (!p->repo_id || !hearth_hub_valid_repo_id(p->repo_id))
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "'%s' is not a repo id (org/name)", p->repo_id ? p->repo_id : "");
    if (!hearth_hub_valid_revision(rev)) return hearth_err_set(err, HEARTH_E_INVALID, -1, "'%s' is not a revision", rev);
    char hub[4096], endpoint[1024], token[1024] = "", folder[256], repo_dir[4400];
    if (p->hub_dir) snprintf(hub, sizeof hub, "%s", p->hub_dir);
    else if (!hearth_hub_cache_dir(hub, sizeof hub))
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "hub cache path is too long");
    if (p->endpoint) snprintf(endpoint, sizeof endpoint, "%s", p->endpoint);
    else if (!hearth_hub_endpoint(endpoint, sizeof endpoint))
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "HF_ENDPOINT is too long");
    if (p->token) snprintf(token, sizeof token, "%s", p->token);
    else hearth_hub_token(token, sizeof token);
    hearth_hub_repo_folder(p->repo_id, folder, sizeof folder);
    snprintf(repo_dir, sizeof repo_dir, "%s/%s", hub, folder);

    hearth_hub_revision info;
    hearth_status st = hearth_hub_revision_fetch(endpoint, token, p->repo_id, rev, &info, err);
    if (st) return st;
    snprintf(result->commit, sizeof result->commit, "%s", info.commit);

    /* the files to fetch: matching the glob; one download per distinct blob */
    hearth_dl_item *items = calloc(info.n_files ? info.n_files : 1, sizeof *items);
    bool *want = calloc(info.n_files ? info.n_files : 1, sizeof *want);
    hearth_lock repo_lock = {-1};
    size_t n_items = 0;
    if (!items || !want) {
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < info.n_files; i++) {
        const hearth_hub_file *f = &info.files[i];
        if (p->glob && fnmatch(p->glob, f->path, 0) != 0) continue;
        want[i] = true;
        result->n_files++;
        result->bytes_total += f->size;
        bool dup = false;
        for (size_t k = 0; k < n_items && !dup; k++) dup = !strcmp(items[k].oid, f->oid);
        if (dup) continue;
        hearth_dl_item *it = &items[n_items++];
        snprintf(it->name, sizeof it->name, "%s", f->path);
        snprintf(it->oid, sizeof it->oid, "%s", f->oid);
        it->lfs = f->lfs;
        it->size = f->size;
        if (!hearth_hub_resolve_url(endpoint, p->repo_id, info.commit, f->path, it->url, sizeof it->url) ||
            snprintf(it->blob_path, sizeof it->blob_path, "%s/blobs/%s", repo_dir, f->oid) >= (int)sizeof it->blob_path ||
            snprintf(it->lock_path, sizeof it->lock_path, "%s/.locks/%s/%s.lock", hub, folder, f->oid) >=
                (int)sizeof it->lock_path) {
            st = hearth_err_set(err, HEARTH_E_INVALID, -1, "path too long for %s", f->path);
            goto done;
        }
    }
    if (result->n_files == 0) {
        char list[240] = "";
        size_t off = 0;
        for (size_t i = 0; i < info.n_files && off < sizeof list - 1; i++) {
            int w = snprintf(list + off, sizeof list - off, "%s%s", i ? ", " : "", info.files[i].path);
            if (w < 0) break;
            off += (size_t)w;
        }
        st = hearth_err_set(err, HEARTH_E_NOTFOUND, -1, "no file of %s@%s matches '%s' (it has: %s)", p->repo_id, rev,
                            p->glob ? p->glob : "*", list);
        goto done;
    }

    char lock_path[4400], blobs[4500];
    snprintf(blobs, sizeof blobs, "%s/blobs", repo_dir);
    if ((st = hearth_hub_mkdirs(blobs, err))) goto done;
    if (!hearth_get_repo_lock_path(hub, p->repo_id, lock_path, sizeof lock_path)) {
        st = hearth_err_set(err, HEARTH_E_INVALID, -1, "path too long");
        goto done;
    }
    int other = 0;
    hearth_lock_result lr = hearth_lock_acquire(lock_path, true, 30000, &repo_lock, &other, err);
    if (lr == HEARTH_LOCK_BUSY) {
        st = hearth_err_set(err, HEARTH_E_BUSY, -1, "%s is being cleaned by hearth gc (pid %d); try again", p->repo_id,
                            other);
        goto done;
    }
    if (lr == HEARTH_LOCK_ERROR) {
        st = HEARTH_E_IO;
        goto done;
    }

    hearth_dl_params dp = {.max_parallel = p->max_parallel, .retries = p->retries, .retry_delay_ms = p->retry_delay_ms,
                           .token = token, .commit = info.commit, .on_progress = p->on_progress, .user = p->user,
                           .cancel = p->cancel};
    st = hearth_dl_run(items, n_items, &dp, err);
    for (size_t k = 0; k < n_items; k++) {
        result->bytes_fetched += items[k].fetched_bytes;
        if (items[k].present) result->n_present++;
        else if (items[k].status == HEARTH_OK) result->n_downloaded++;
    }
    if (st) goto done; /* no snapshot links, no refs: nothing looks complete */

    /* every blob is verified: link the snapshot, then name it */
    if (snprintf(result->snapshot_dir, sizeof result->snapshot_dir, "%s/snapshots/%s", repo_dir, info.commit) >=
        (int)sizeof result->snapshot_dir) {
        st = hearth_err_set(err, HEARTH_E_INVALID, -1, "path too long");
        goto done;
    }
    for (size_t i = 0; i < info.n_files; i++)
        if (want[i] && (st = link_file(result->snapshot_dir, &info.files[i], err))) goto done;
    if (strcmp(rev, info.commit)) {
        char ref[4096], old[128] = "", text[64];
        if (snprintf(ref, sizeof ref, "%s/refs/%s", repo_dir, rev) >= (int)sizeof ref) {
            st = hearth_err_set(err, HEARTH_E_INVALID, -1, "path too long");
            goto done;
        }
        FILE *f = fopen(ref, "r");
        if (f) {
            if (fgets(old, sizeof old, f)) old[strcspn(old, "\r\n")] = 0;
            fclose(f);
        }
        if (old[0] && strcmp(old, info.commit)) snprintf(result->previous_commit, sizeof result->previous_commit, "%.40s", old);
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", ref);
        *strrchr(dir, '/') = 0;
        snprintf(text, sizeof text, "%s", info.commit); /* huggingface_hub writes no newline */
        if ((st = hearth_hub_mkdirs(dir, err))) goto done;
        if (!write_atomic(ref, text)) st = hearth_err_set(err, HEARTH_E_IO, -1, "cannot write %s", ref);
    }
done:
    hearth_lock_release(&repo_lock);
    free(items);
    free(want);
    hearth_hub_revision_free(&info);
    return st;
}
