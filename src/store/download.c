/*
 * download.c - the blob download engine: a libcurl multi loop over per-item transfers; see
 * download.h for the protocol. Each transfer is a small state machine:
 *
 *   QUEUED --open()--> READY --attempt()--> ACTIVE --finish()--> DONE | FAILED
 *                        ^                                |
 *                        +------ backoff (transient) -----+
 *
 * open() takes the lock and the partial file once; attempts reuse them. The write callback
 * decides on the first body byte of the final response whether the bytes continue the
 * partial (206 at our offset), replace it (200), or are refused.
 */
#include "store/download.h"

#include "base/log.h"
#include "store/digest.h"
#include "store/hubapi.h"
#include "store/lock.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef enum { X_QUEUED = 0, X_READY, X_ACTIVE, X_DONE, X_FAILED } xstate;

typedef struct {
    hearth_dl_item *it;      /* borrowed */
    const hearth_dl_params *p; /* borrowed */
    xstate          state;
    CURL           *easy;    /* owned while ACTIVE */
    struct curl_slist *hdr;  /* owned while ACTIVE: the auth header */
    int             fd;      /* the partial file, -1 when closed */
    hearth_lock     lock;
    hearth_digest  *dg;      /* owned */
    int64_t         offset;  /* bytes in the partial, all hashed */
    double          ready_at;
    /* the current attempt */
    long            code;    /* status of the latest response */
    int             n_resp;
    int64_t         range_start; /* Content-Range start of the latest response, -1 if none */
    char            commit[64], linked_etag[80], hub_etag[80];
    bool            checked;     /* the final response was accepted */
    bool            fatal, corrupt; /* set by callbacks: no retry / delete the partial */
    char            why[320];
} xfer;

typedef struct {
    const hearth_dl_params *p;
    xfer   *x;
    size_t  n, n_done, n_failed;
    int64_t total_bytes;
    double  t_start, last_tick;
    double  rate_t[32];
    int64_t rate_b[32];
    int     rate_n;
} run;

/* snprintf for messages, which may be cut short */
static void say(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *buf, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);
    va_end(ap);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- progress ------------------------------------------------------------------------------ */

static int64_t fetched_total(const run *r) {
    int64_t b = 0;
    for (size_t i = 0; i < r->n; i++) b += r->x[i].it->fetched_bytes;
    return b;
}

static void emit(run *r, hearth_dl_event ev, const hearth_dl_item *it) {
    if (!r->p->on_progress) return;
    hearth_dl_progress pr = {.event = ev, .item = it, .n_items = r->n, .n_done = r->n_done,
                             .n_failed = r->n_failed, .total_bytes = r->total_bytes, .eta_s = -1};
    for (size_t i = 0; i < r->n; i++) pr.done_bytes += r->x[i].it->done_bytes;
    if (r->rate_n >= 2) {
        int a = r->rate_n > 32 ? (r->rate_n - 32) % 32 : 0, b = (r->rate_n - 1) % 32;
        double dt = r->rate_t[b] - r->rate_t[a];
        if (dt > 0.2) pr.bytes_per_s = (double)(r->rate_b[b] - r->rate_b[a]) / dt;
    }
    if (pr.bytes_per_s > 0) pr.eta_s = (double)(pr.total_bytes - pr.done_bytes) / pr.bytes_per_s;
    r->p->on_progress(&pr, r->p->user);
}

static void tick(run *r) {
    double t = now_s();
    if (t - r->last_tick < 0.25) return;
    r->last_tick = t;
    int k = r->rate_n++ % 32; /* the last 32 samples: about 8 s */
    r->rate_t[k] = t;
    r->rate_b[k] = fetched_total(r);
    emit(r, HEARTH_DL_TICK, NULL);
}

/* ---- the partial file ---------------------------------------------------------------------- */

static void part_path(const xfer *x, char *buf, size_t n) { snprintf(buf, n, "%s.incomplete", x->it->blob_path); }

static void close_item(xfer *x) {
    if (x->fd >= 0) close(x->fd);
    x->fd = -1;
    hearth_digest_destroy(x->dg);
    x->dg = NULL;
    hearth_lock_release(&x->lock);
}

static void fail_item(run *r, xfer *x, hearth_status st, const char *why, bool delete_partial) {
    hearth_dl_item *it = x->it;
    it->status = st;
    say(it->msg, sizeof it->msg, "%s", why);
    if (delete_partial && x->fd >= 0) {
        char pp[4200];
        part_path(x, pp, sizeof pp);
        unlink(pp);
        it->done_bytes = 0;
    }
    close_item(x);
    x->state = X_FAILED;
    r->n_failed++;
    emit(r, HEARTH_DL_FAIL, it);
}

static bool truncate_part(xfer *x) {
    x->offset = 0;
    x->it->done_bytes = 0;
    return ftruncate(x->fd, 0) == 0 && hearth_digest_reset(x->dg);
}

static void blob_present(run *r, xfer *x) {
    x->it->present = true;
    x->it->done_bytes = x->it->size;
    x->it->status = HEARTH_OK;
    x->state = X_DONE;
    r->n_done++;
    emit(r, HEARTH_DL_START, x->it);
    emit(r, HEARTH_DL_DONE, x->it);
}

static bool blob_ok(const hearth_dl_item *it) {
    struct stat st;
    return stat(it->blob_path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == it->size;
}

/* Verify the complete partial and publish it. */
static void publish(run *r, xfer *x) {
    hearth_dl_item *it = x->it;
    char hex[80], pp[4200], why[320];
    part_path(x, pp, sizeof pp);
    if (x->offset != it->size) {
        say(why, sizeof why, "%s: got %lld bytes, the hub says %lld: the partial download was deleted", it->name,
                 (long long)x->offset, (long long)it->size);
        fail_item(r, x, HEARTH_E_FORMAT, why, true);
        return;
    }
    if (!hearth_digest_final_hex(x->dg, hex, sizeof hex) || strcmp(hex, it->oid)) {
        say(why, sizeof why, "%s: checksum mismatch (got %.16s..., expected %.16s...): the partial download was deleted",
                 it->name, hex, it->oid);
        fail_item(r, x, HEARTH_E_FORMAT, why, true);
        return;
    }
    if (fsync(x->fd) != 0 || rename(pp, it->blob_path) != 0) {
        say(why, sizeof why, "%s: cannot publish %s: %s", it->name, it->blob_path, strerror(errno));
        fail_item(r, x, HEARTH_E_IO, why, false);
        return;
    }
    it->status = HEARTH_OK;
    it->done_bytes = it->size;
    close_item(x);
    x->state = X_DONE;
    r->n_done++;
    emit(r, HEARTH_DL_DONE, it);
}

/* Take the lock and the partial. Returns false when the item is already finished. */
static bool open_item(run *r, xfer *x) {
    hearth_dl_item *it = x->it;
    char why[320], pp[4200];
    if (blob_ok(it)) {
        blob_present(r, x);
        return false;
    }
    hearth_err e = {0};
    int other = 0;
    /* wait a little: gc probes locks for an instant */
    hearth_lock_result lr = hearth_lock_acquire(it->lock_path, false, 500, &x->lock, &other, &e);
    if (lr == HEARTH_LOCK_ERROR || lr == HEARTH_LOCK_BUSY) {
        if (lr == HEARTH_LOCK_BUSY)
            say(why, sizeof why, "%s: another process (pid %d) is downloading it; run again when it is done",
                     it->name, other);
        else say(why, sizeof why, "%s: %s", it->name, e.msg);
        fail_item(r, x, lr == HEARTH_LOCK_BUSY ? HEARTH_E_BUSY : HEARTH_E_IO, why, false);
        return false;
    }
    if (lr == HEARTH_LOCK_STOLEN) {
        it->stolen_from_pid = other;
        hearth_log(HEARTH_LOG_INFO, "%s: took over the lock left by pid %d, which is gone", it->name, other);
    }
    if (blob_ok(it)) { /* finished by the previous holder */
        hearth_lock_release(&x->lock);
        blob_present(r, x);
        return false;
    }
    part_path(x, pp, sizeof pp);
    x->fd = open(pp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    x->dg = hearth_digest_create(it->lfs ? HEARTH_DIGEST_SHA256 : HEARTH_DIGEST_GIT_SHA1, it->size);
    struct stat st;
    if (x->fd < 0 || !x->dg || fstat(x->fd, &st) != 0) {
        say(why, sizeof why, "%s: cannot open %s: %s", it->name, pp, strerror(errno));
        fail_item(r, x, HEARTH_E_IO, why, false);
        return false;
    }
    x->offset = (int64_t)st.st_size;
    if (x->offset > it->size && !truncate_part(x)) {
        say(why, sizeof why, "%s: cannot truncate %s", it->name, pp);
        fail_item(r, x, HEARTH_E_IO, why, false);
        return false;
    }
    if (x->offset > 0) {
        if (hearth_digest_update_fd(x->dg, x->fd, x->offset, &e)) {
            say(why, sizeof why, "%s: %s", it->name, e.msg);
            fail_item(r, x, HEARTH_E_IO, why, false);
            return false;
        }
        it->resumed = true;
    }
    it->done_bytes = x->offset;
    emit(r, HEARTH_DL_START, it);
    if (x->offset == it->size) { /* complete but unpublished (a crash between write and rename) */
        publish(r, x);
        return false;
    }
    x->state = X_READY;
    return true;
}

/* ---- libcurl callbacks --------------------------------------------------------------------- */

static void strip_etag(const char *v, char *out, size_t n) {
    if (!strncmp(v, "W/", 2)) v += 2;
    if (*v == '"') v++;
    size_t len = strcspn(v, "\"");
    if (len >= n) len = n - 1;
    memcpy(out, v, len);
    out[len] = 0;
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *user) {
    xfer *x = user;
    size_t n = size * nitems;
    char line[512];
    size_t len = n < sizeof line - 1 ? n : sizeof line - 1;
    memcpy(line, buf, len);
    line[len] = 0;
    line[strcspn(line, "\r\n")] = 0;
    if (!strncmp(line, "HTTP/", 5)) { /* a new response (the redirect's, then the target's) */
        const char *sp = strchr(line, ' ');
        x->code = sp ? strtol(sp + 1, NULL, 10) : 0;
        x->n_resp++;
        x->range_start = -1;
        return n;
    }
    char *colon = strchr(line, ':');
    if (!colon) return n;
    *colon = 0;
    char *v = colon + 1;
    while (*v == ' ' || *v == '\t') v++;
    if (!strcasecmp(line, "x-repo-commit") && !x->commit[0]) snprintf(x->commit, sizeof x->commit, "%s", v);
    else if (!strcasecmp(line, "x-linked-etag") && !x->linked_etag[0]) strip_etag(v, x->linked_etag, sizeof x->linked_etag);
    else if (!strcasecmp(line, "etag") && x->n_resp == 1) strip_etag(v, x->hub_etag, sizeof x->hub_etag);
    else if (!strcasecmp(line, "content-range") && !strncmp(v, "bytes ", 6)) {
        char *end;
        long long s = strtoll(v + 6, &end, 10);
        if (end != v + 6 && *end == '-') x->range_start = s;
    }
    return n;
}

/* Decide about the final response before its first byte (or at the end of an empty one). */
static bool check_response(xfer *x, const hearth_dl_params *p) {
    hearth_dl_item *it = x->it;
    if (x->checked) return true;
    if (x->code != 200 && x->code != 206) {
        if (x->code == 401 || x->code == 403)
            say(x->why, sizeof x->why, "%s: HTTP %ld: the repo is gated or private; accept its terms on the hub "
                     "and set HF_TOKEN", it->name, x->code);
        else say(x->why, sizeof x->why, "%s: HTTP %ld", it->name, x->code);
        x->fatal = !(x->code >= 500 || x->code == 429 || x->code == 408 || x->code == 416);
        if (x->code == 416) { /* the server has no bytes past our partial: not the file we expect */
            say(x->why, sizeof x->why, "%s: the server has fewer than the %lld bytes the hub lists (HTTP 416): "
                     "the partial download was deleted", it->name, (long long)it->size);
            x->fatal = x->corrupt = true;
        }
        return false;
    }
    if (p->commit && x->commit[0] && strcmp(x->commit, p->commit)) {
        say(x->why, sizeof x->why, "%s: the hub served commit %.12s, expected %.12s", it->name, x->commit, p->commit);
        x->fatal = true;
        return false;
    }
    const char *etag = it->lfs ? x->linked_etag : x->hub_etag;
    if (etag[0] && strcmp(etag, it->oid)) {
        say(x->why, sizeof x->why, "%s: the hub's %s %.16s disagrees with its file list (%.16s)", it->name,
                 it->lfs ? "X-Linked-Etag" : "ETag", etag, it->oid);
        x->fatal = true;
        return false;
    }
    if (x->code == 200 && x->offset > 0) { /* Range ignored: start over */
        hearth_log(HEARTH_LOG_INFO, "%s: the server ignored Range; starting over", it->name);
        it->restarted = true;
        it->resumed = false;
        if (!truncate_part(x)) {
            say(x->why, sizeof x->why, "%s: cannot truncate the partial download", it->name);
            x->fatal = true;
            return false;
        }
    } else if (x->code == 206 && x->range_start != x->offset) {
        say(x->why, sizeof x->why, "%s: asked for bytes from %lld, the server sent from %lld", it->name,
                 (long long)x->offset, (long long)x->range_start);
        x->corrupt = true; /* start over on the next attempt */
        return false;
    }
    x->checked = true;
    return true;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *user) {
    xfer *x = user;
    size_t n = size * nmemb;
    if (!check_response(x, x->p)) return 0;
    if (x->offset + (int64_t)n > x->it->size) {
        say(x->why, sizeof x->why, "%s: the server sent more than the %lld bytes the hub lists: the partial "
                 "download was deleted", x->it->name, (long long)x->it->size);
        x->fatal = x->corrupt = true;
        return 0;
    }
    for (size_t done = 0; done < n;) {
        ssize_t w = pwrite(x->fd, data + done, n - done, (off_t)(x->offset + (int64_t)done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            say(x->why, sizeof x->why, "%s: cannot write the partial download: %s", x->it->name, strerror(errno));
            x->fatal = true;
            return 0;
        }
        done += (size_t)w;
    }
    hearth_digest_update(x->dg, data, n);
    x->offset += (int64_t)n;
    x->it->done_bytes = x->offset;
    x->it->fetched_bytes += (int64_t)n;
    return n;
}

/* ---- attempts ------------------------------------------------------------------------------ */

static bool attempt(run *r, xfer *x, CURLM *m) {
    const hearth_dl_params *p = r->p;
    x->code = 0;
    x->n_resp = 0;
    x->range_start = -1;
    x->commit[0] = x->linked_etag[0] = x->hub_etag[0] = 0;
    x->checked = x->fatal = x->corrupt = false;
    x->why[0] = 0;
    CURL *e = curl_easy_init();
    if (!e) return false;
    char range[48], auth[1200];
    curl_easy_setopt(e, CURLOPT_URL, x->it->url);
    curl_easy_setopt(e, CURLOPT_USERAGENT, HEARTH_HUB_USER_AGENT);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(e, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, p->stall_s > 0 ? p->stall_s : 60L);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(e, CURLOPT_PRIVATE, x);
    if (x->offset > 0) {
        snprintf(range, sizeof range, "%lld-", (long long)x->offset);
        curl_easy_setopt(e, CURLOPT_RANGE, range);
    }
    x->hdr = NULL;
    if (p->token && *p->token) {
        /* a custom header: libcurl does not send it on to another host after a redirect */
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", p->token);
        x->hdr = curl_slist_append(NULL, auth);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->hdr);
    }
    if (curl_multi_add_handle(m, e) != CURLM_OK) {
        curl_easy_cleanup(e);
        curl_slist_free_all(x->hdr);
        x->hdr = NULL;
        return false;
    }
    x->easy = e;
    x->it->attempts++;
    x->state = X_ACTIVE;
    return true;
}

/* An attempt ended with libcurl's result rc: publish, retry or fail. */
static void finish(run *r, xfer *x, CURLM *m, CURLcode rc) {
    hearth_dl_item *it = x->it;
    curl_multi_remove_handle(m, x->easy);
    curl_easy_cleanup(x->easy);
    curl_slist_free_all(x->hdr);
    x->easy = NULL;
    x->hdr = NULL;
    if (!x->why[0] && rc == CURLE_OK && !check_response(x, r->p)) { /* an empty body */ }
    if (!x->why[0] && rc == CURLE_OK) {
        if (x->offset == it->size) {
            publish(r, x);
            return;
        }
        say(x->why, sizeof x->why, "%s: the transfer ended after %lld of %lld bytes", it->name,
                 (long long)x->offset, (long long)it->size);
    } else if (!x->why[0]) {
        say(x->why, sizeof x->why, "%s: %s after %lld of %lld bytes", it->name, curl_easy_strerror(rc),
                 (long long)x->offset, (long long)it->size);
    }
    if (x->fatal) {
        fail_item(r, x, x->code == 401 || x->code == 403 ? HEARTH_E_INVALID
                        : x->code == 404                  ? HEARTH_E_NOTFOUND
                        : x->corrupt                      ? HEARTH_E_FORMAT
                                                          : HEARTH_E_IO,
                  x->why, x->corrupt);
        return;
    }
    if (x->corrupt && !truncate_part(x)) x->fatal = true;
    int retries = r->p->retries < 0 ? 3 : r->p->retries;
    if (x->fatal || it->attempts > retries) {
        char why[320];
        say(why, sizeof why, "%s%s", x->why, x->fatal ? "" : " (run again to resume)");
        fail_item(r, x, HEARTH_E_IO, why, false);
        return;
    }
    say(it->msg, sizeof it->msg, "%s", x->why);
    double delay = (r->p->retry_delay_ms > 0 ? r->p->retry_delay_ms : 500) / 1e3;
    for (int k = 1; k < it->attempts && k < 6; k++) delay *= 2;
    x->ready_at = now_s() + delay;
    x->state = X_READY;
    emit(r, HEARTH_DL_RETRY, it);
}

static void abort_all(run *r, CURLM *m) {
    for (size_t i = 0; i < r->n; i++) {
        xfer *x = &r->x[i];
        if (x->easy) {
            curl_multi_remove_handle(m, x->easy);
            curl_easy_cleanup(x->easy);
            curl_slist_free_all(x->hdr);
            x->easy = NULL;
            x->hdr = NULL;
        }
        if (x->state == X_DONE || x->state == X_FAILED) continue;
        x->it->status = HEARTH_E_CANCELLED;
        say(x->it->msg, sizeof x->it->msg, "%s: cancelled", x->it->name);
        close_item(x); /* the partial stays for the next run */
        x->state = X_FAILED;
        r->n_failed++;
    }
}

hearth_status hearth_dl_run(hearth_dl_item *items, size_t n, const hearth_dl_params *p, hearth_err *err) {
    static const hearth_dl_params defaults = {.retries = -1};
    if (!p) p = &defaults;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return hearth_err_set(err, HEARTH_E_IO, -1, "cannot start libcurl");
    run r = {.p = p, .n = n, .t_start = now_s()};
    r.x = calloc(n ? n : 1, sizeof *r.x);
    CURLM *m = curl_multi_init();
    if (!r.x || !m) {
        free(r.x);
        curl_multi_cleanup(m);
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        r.x[i] = (xfer){.it = &items[i], .p = p, .fd = -1, .lock = {.fd = -1}};
        items[i].status = HEARTH_OK;
        items[i].msg[0] = 0;
        items[i].present = items[i].resumed = items[i].restarted = false;
        items[i].attempts = items[i].stolen_from_pid = 0;
        items[i].done_bytes = items[i].fetched_bytes = 0;
        r.total_bytes += items[i].size;
    }
    int max_par = p->max_parallel > 0 ? p->max_parallel : 4;
    size_t next = 0;
    bool cancelled = false;
    while (r.n_done + r.n_failed < n) {
        if (p->cancel && *p->cancel) {
            abort_all(&r, m);
            cancelled = true;
            break;
        }
        int active = 0;
        for (size_t i = 0; i < n; i++) active += r.x[i].state == X_ACTIVE || r.x[i].state == X_READY;
        while (next < n && active < max_par) /* open new items up to the limit */
            if (open_item(&r, &r.x[next++])) active++;
        double t = now_s(), wake = t + 0.1;
        for (size_t i = 0; i < n; i++) {
            xfer *x = &r.x[i];
            if (x->state != X_READY) continue;
            if (x->ready_at <= t) {
                if (!attempt(&r, x, m)) fail_item(&r, x, HEARTH_E_NOMEM, "cannot start a transfer", false);
            } else if (x->ready_at < wake) wake = x->ready_at;
        }
        int running = 0;
        curl_multi_perform(m, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left))) {
            if (msg->msg != CURLMSG_DONE) continue;
            xfer *x = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
            if (x) finish(&r, x, m, msg->data.result);
        }
        tick(&r);
        int ms = (int)((wake - now_s()) * 1e3);
        if (running > 0) curl_multi_poll(m, NULL, 0, ms > 0 ? ms : 1, NULL);
        else if (r.n_done + r.n_failed < n && ms > 0) {
            struct timespec nap = {0, (long)(ms < 100 ? ms : 100) * 1000000L};
            nanosleep(&nap, NULL);
        }
    }
    r.last_tick = 0;
    tick(&r);
    curl_multi_cleanup(m);
    hearth_status st = HEARTH_OK;
    if (cancelled) st = hearth_err_set(err, HEARTH_E_CANCELLED, -1, "cancelled; partial downloads are kept for the next run");
    else if (r.n_failed) {
        for (size_t i = 0; i < n; i++)
            if (items[i].status) {
                st = hearth_err_set(err, items[i].status, -1, "%zu of %zu file%s failed: %s", r.n_failed, n,
                                    n == 1 ? "" : "s", items[i].msg);
                break;
            }
    }
    free(r.x);
    return st;
}
