/*
 * downloads.c - background `hearth get` jobs for the server; see downloads.h.
 *
 * The jobs live in an array ordered oldest first, under one mutex that also guards every
 * job's progress fields: a job's thread takes it for each progress event (a few per second),
 * readers take it to copy the list out as JSON. A job's thread takes the mutex for the last
 * time when it writes its final state, so joining a finished job under the mutex never waits
 * on the mutex itself.
 */
#include "server/downloads.h"

#include "base/log.h"
#include "store/get.h"
#include "store/hub.h"
#include "store/registry.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef enum { JOB_RUNNING = 0, JOB_DONE, JOB_FAILED, JOB_CANCELLED } job_state;

static const char *const state_names[] = {"running", "done", "failed", "cancelled"};

typedef struct {
    struct hearth_downloads *owner;
    char         id[24];
    char         repo[128], glob[256], revision[128];
    job_state    state;
    volatile int cancel;
    pthread_t    thread;
    int64_t      started_at, finished_at; /* unix ms; finished 0 while running */
    /* progress */
    int64_t      bytes_done, bytes_total;
    double       bytes_per_s, eta_s;
    size_t       n_files, n_files_done;
    char         commit[48];
    char         error[320];
} job;

struct hearth_downloads {
    pthread_mutex_t mu;
    job           **jobs; /* [n], oldest first */
    int             n, max_active, max_kept;
    uint64_t        next_id;
    char           *hub_dir, *registry_path; /* owned or NULL */
};

static int64_t unix_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_progress(const hearth_dl_progress *p, void *user) {
    job *j = user;
    pthread_mutex_lock(&j->owner->mu);
    j->bytes_done = p->done_bytes;
    j->bytes_total = p->total_bytes;
    j->bytes_per_s = p->bytes_per_s;
    j->eta_s = p->eta_s;
    j->n_files = p->n_items;
    j->n_files_done = p->n_done;
    pthread_mutex_unlock(&j->owner->mu);
}

static void *run_job(void *arg) {
    job *j = arg;
    hearth_downloads *d = j->owner;
    hearth_get_params gp = hearth_get_params_default();
    gp.repo_id = j->repo;
    gp.glob = j->glob[0] ? j->glob : NULL;
    gp.revision = j->revision[0] ? j->revision : NULL;
    gp.hub_dir = d->hub_dir;
    gp.on_progress = on_progress;
    gp.user = j;
    gp.cancel = &j->cancel;
    hearth_get_result res;
    memset(&res, 0, sizeof res);
    hearth_err err = {0};
    hearth_log(HEARTH_LOG_INFO, "download %s: %s%s%s started", j->id, j->repo, j->glob[0] ? ":" : "", j->glob);
    hearth_status st = hearth_get(&gp, &res, &err);
    if (st == HEARTH_OK) {
        /* the model must be in the registry before the job says done */
        hearth_registry *reg = NULL;
        hearth_err serr = {0};
        if (hearth_registry_open(d->registry_path, &reg, &serr) ||
            hearth_registry_scan(reg, d->hub_dir, j->repo, NULL, &serr))
            hearth_log(HEARTH_LOG_WARN, "download %s: registry rescan failed: %s", j->id, serr.msg);
        hearth_registry_close(reg);
        hearth_log(HEARTH_LOG_INFO, "download %s: %s@%.12s done (%zu files)", j->id, j->repo, res.commit, res.n_files);
    } else {
        hearth_log(HEARTH_LOG_WARN, "download %s: %s: %s", j->id, j->repo, err.msg);
    }
    pthread_mutex_lock(&d->mu);
    if (st == HEARTH_OK) {
        j->state = JOB_DONE;
        snprintf(j->commit, sizeof j->commit, "%s", res.commit);
        j->bytes_total = res.bytes_total;
        j->bytes_done = res.bytes_total;
        j->n_files = j->n_files_done = res.n_files;
        j->eta_s = 0;
    } else {
        j->state = st == HEARTH_E_CANCELLED ? JOB_CANCELLED : JOB_FAILED;
        snprintf(j->error, sizeof j->error, "%s", err.msg[0] ? err.msg : hearth_status_str(st));
    }
    j->bytes_per_s = 0;
    j->finished_at = unix_ms();
    pthread_mutex_unlock(&d->mu); /* the last touch of d->mu: see the top comment */
    return NULL;
}

static char *dup_opt(const char *s, bool *ok) {
    if (!s) return NULL;
    char *c = strdup(s);
    if (!c) *ok = false;
    return c;
}

hearth_status hearth_downloads_create(const hearth_downloads_params *p, hearth_downloads **out, hearth_err *err) {
    *out = NULL;
    hearth_downloads *d = calloc(1, sizeof *d);
    if (!d) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    d->max_active = p && p->max_active > 0 ? p->max_active : 2;
    d->max_kept = p && p->max_kept > d->max_active ? p->max_kept : 32;
    if (d->max_kept <= d->max_active) d->max_kept = d->max_active + 1;
    bool ok = true;
    d->hub_dir = dup_opt(p ? p->hub_dir : NULL, &ok);
    d->registry_path = dup_opt(p ? p->registry_path : NULL, &ok);
    d->jobs = calloc((size_t)d->max_kept, sizeof *d->jobs);
    if (!ok || !d->jobs || pthread_mutex_init(&d->mu, NULL) != 0) {
        free(d->jobs);
        free(d->hub_dir);
        free(d->registry_path);
        free(d);
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    }
    *out = d;
    return HEARTH_OK;
}

void hearth_downloads_destroy(hearth_downloads *d) {
    if (!d) return;
    pthread_mutex_lock(&d->mu);
    for (int i = 0; i < d->n; i++) d->jobs[i]->cancel = 1;
    pthread_mutex_unlock(&d->mu);
    /* no new job can start: the server's connections are gone before this runs */
    for (int i = 0; i < d->n; i++) {
        pthread_join(d->jobs[i]->thread, NULL);
        free(d->jobs[i]);
    }
    pthread_mutex_destroy(&d->mu);
    free(d->jobs);
    free(d->hub_dir);
    free(d->registry_path);
    free(d);
}

/* A glob or revision: printable ASCII without control bytes, within cap. */
static bool plain_arg(const char *s, size_t cap) {
    size_t n = strlen(s);
    if (n >= cap) return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f) return false;
    return true;
}

/* Is j the download of (repo, revision, files)? An unset revision is "main". */
static bool same_job(const job *j, const char *repo_id, const char *glob, const char *revision) {
    const char *jr = j->revision[0] ? j->revision : "main", *r = revision ? revision : "main";
    return !strcmp(j->repo, repo_id) && !strcmp(j->glob, glob ? glob : "") && !strcmp(jr, r);
}

hearth_status hearth_downloads_start(hearth_downloads *d, const char *repo_id, const char *glob,
                                     const char *revision, char *id, size_t id_cap, bool *existing,
                                     hearth_err *err) {
    if (existing) *existing = false;
    if (id_cap) id[0] = 0;
    if (glob && !*glob) glob = NULL;
    if (revision && !*revision) revision = NULL;
    if (!repo_id || !strchr(repo_id, '/') || !hearth_hub_valid_repo_id(repo_id) || strlen(repo_id) >= 128)
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "'%s' is not a repo id (ORG/NAME)", repo_id ? repo_id : "");
    if (glob && !plain_arg(glob, 256))
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "the file pattern must be printable ASCII under 256 bytes");
    if (revision && (!plain_arg(revision, 128) || strchr(revision, '/') == revision || strstr(revision, "..")))
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "'%s' is not a revision", revision);

    pthread_mutex_lock(&d->mu);
    hearth_status st = HEARTH_OK;
    int running = 0;
    for (int i = 0; i < d->n; i++) {
        if (d->jobs[i]->state != JOB_RUNNING) continue;
        running++;
        if (same_job(d->jobs[i], repo_id, glob, revision)) {
            snprintf(id, id_cap, "%s", d->jobs[i]->id);
            if (existing) *existing = true;
            goto out;
        }
    }
    if (running >= d->max_active) {
        st = hearth_err_set(err, HEARTH_E_BUSY, -1, "%d downloads are already running; try again when one ends",
                            running);
        goto out;
    }
    if (d->n == d->max_kept) { /* forget the oldest finished job (one exists: max_kept > max_active) */
        int k = 0;
        while (k < d->n && d->jobs[k]->state == JOB_RUNNING) k++;
        pthread_join(d->jobs[k]->thread, NULL);
        free(d->jobs[k]);
        memmove(&d->jobs[k], &d->jobs[k + 1], (size_t)(d->n - k - 1) * sizeof *d->jobs);
        d->n--;
    }
    job *j = calloc(1, sizeof *j);
    if (!j) {
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        goto out;
    }
    j->owner = d;
    snprintf(j->id, sizeof j->id, "dl-%llu", (unsigned long long)++d->next_id);
    snprintf(j->repo, sizeof j->repo, "%s", repo_id);
    snprintf(j->glob, sizeof j->glob, "%s", glob ? glob : "");
    snprintf(j->revision, sizeof j->revision, "%s", revision ? revision : "");
    j->started_at = unix_ms();
    j->eta_s = -1;
    if (pthread_create(&j->thread, NULL, run_job, j) != 0) {
        free(j);
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "cannot start a download thread");
        goto out;
    }
    d->jobs[d->n++] = j;
    snprintf(id, id_cap, "%s", j->id);
out:
    pthread_mutex_unlock(&d->mu);
    return st;
}

static void job_json(const job *j, hearth_jw *w) {
    hearth_jw_obj(w);
    hearth_jw_key(w, "id");
    hearth_jw_cstr(w, j->id);
    hearth_jw_key(w, "state");
    hearth_jw_cstr(w, state_names[j->state]);
    hearth_jw_key(w, "repo");
    hearth_jw_cstr(w, j->repo);
    hearth_jw_key(w, "file");
    hearth_jw_cstr(w, j->glob[0] ? j->glob : NULL);
    hearth_jw_key(w, "revision");
    hearth_jw_cstr(w, j->revision[0] ? j->revision : "main");
    hearth_jw_key(w, "commit");
    hearth_jw_cstr(w, j->commit[0] ? j->commit : NULL);
    hearth_jw_key(w, "bytes_done");
    hearth_jw_int(w, j->bytes_done);
    hearth_jw_key(w, "bytes_total");
    hearth_jw_int(w, j->bytes_total);
    hearth_jw_key(w, "bytes_per_s");
    hearth_jw_num(w, j->bytes_per_s);
    hearth_jw_key(w, "eta_s");
    if (j->state == JOB_RUNNING && j->eta_s >= 0) hearth_jw_num(w, j->eta_s);
    else hearth_jw_null(w);
    hearth_jw_key(w, "files_total");
    hearth_jw_int(w, (int64_t)j->n_files);
    hearth_jw_key(w, "files_done");
    hearth_jw_int(w, (int64_t)j->n_files_done);
    hearth_jw_key(w, "started_at");
    hearth_jw_num(w, (double)j->started_at / 1e3);
    hearth_jw_key(w, "finished_at");
    if (j->finished_at) hearth_jw_num(w, (double)j->finished_at / 1e3);
    else hearth_jw_null(w);
    hearth_jw_key(w, "error");
    hearth_jw_cstr(w, j->error[0] ? j->error : NULL);
    hearth_jw_obj_end(w);
}

void hearth_downloads_json(hearth_downloads *d, hearth_jw *w) {
    pthread_mutex_lock(&d->mu);
    hearth_jw_obj(w);
    hearth_jw_key(w, "downloads");
    hearth_jw_arr(w);
    for (int i = d->n; i-- > 0;) job_json(d->jobs[i], w);
    hearth_jw_arr_end(w);
    hearth_jw_key(w, "max_active");
    hearth_jw_int(w, d->max_active);
    hearth_jw_key(w, "max_kept");
    hearth_jw_int(w, d->max_kept);
    hearth_jw_obj_end(w);
    pthread_mutex_unlock(&d->mu);
}
