/*
 * ssd_tier.c - KV blocks in files, with an in-memory index; see ssd_tier.h for the format and
 * the guarantees.
 *
 * The index is an array of entries (a free list threads the unused ones through `chain`), a
 * power-of-two bucket array of chain heads keyed by (namespace, hash, group), and a doubly
 * linked LRU list of the entries whose file is on disk (least recently used first). An entry
 * made by put is "pending" until the writer has renamed its file into place: has() sees it (no
 * second write is queued), get() treats it as a miss, the size and the LRU do not count it.
 *
 * Restores read with pread (measured against mmap on 368 KiB blocks: docs/engine.md) outside
 * the mutex; a file deleted meanwhile (evicted by the writer) is a miss.
 */
#include "engine/ssd_tier.h"
#include "base/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define MAGIC "HRTHKV01"

/* The fixed part of a file's header (no padding: every field is 8-byte aligned); the block's
 * tokens follow it, then an XXH3 of both. */
typedef struct {
    char     magic[8];
    uint64_t ns;
    char     model_id[HEARTH_SSD_MODEL_ID_MAX];
    char     scheme[HEARTH_SSD_SCHEME_MAX];
    uint64_t hash, parent;
    int32_t  group, block_tokens;
    uint64_t payload_bytes, payload_xxh3, geometry;
} disk_head;
_Static_assert(sizeof(disk_head) == 8 + 8 + HEARTH_SSD_MODEL_ID_MAX + HEARTH_SSD_SCHEME_MAX + 16 + 8 + 24,
               "disk_head has no padding");

typedef struct {
    uint64_t ns, hash;
    int32_t  group;
    int32_t  chain;      /* next entry of the bucket (or of the free list); -1 */
    int32_t  prev, next; /* LRU links; -2: not on the list */
    int64_t  bytes;      /* of its file */
    int64_t  mtime_ns;   /* scan order */
    bool     used, pending;
} entry;

typedef struct job {
    struct job *next;
    uint64_t    hash, parent;
    int32_t     group;
    int32_t    *tokens;  /* owned [block_tokens] */
    void       *payload; /* owned [block_bytes] */
} job;

struct hearth_ssd_tier {
    hearth_ssd_tier_params p;
    char             dir[PATH_MAX];
    char             model_id[HEARTH_SSD_MODEL_ID_MAX];
    char             scheme[HEARTH_SSD_SCHEME_MAX];
    uint64_t         ns;
    size_t           head_bytes; /* disk_head + tokens + checksum */
    int              lock_fd;    /* -1: not held (read-only) */
    pthread_mutex_t  mu;
    pthread_cond_t   cv_work, cv_room;
    entry           *e;
    int32_t          n_e, cap_e, free_e;
    int32_t         *bucket;
    uint32_t         mask;
    int32_t          n_used;
    int32_t          lru_head, lru_tail;
    job             *q_head, *q_tail;
    size_t           q_bytes, q_cap;
    bool             busy, stop, writer_on;
    pthread_t        writer;
    uint64_t         tmp_seq;
    hearth_ssd_tier_stats st; /* guarded by mu */
};

static uint64_t key_hash(uint64_t ns, uint64_t hash, int32_t group) {
    uint64_t k[3] = {ns, hash, (uint64_t)(uint32_t)group};
    return XXH3_64bits(k, sizeof k);
}

static void file_name(const hearth_ssd_tier *t, uint64_t ns, uint64_t hash, int32_t group, char *buf, size_t cap) {
    snprintf(buf, cap, "%s/%016" PRIx64 "-%016" PRIx64 "-%d.kv", t->dir, ns, hash, group);
}

/* ---- the index (mu held) ---- */

static int32_t find(const hearth_ssd_tier *t, uint64_t ns, uint64_t hash, int32_t group) {
    if (!t->bucket) return -1;
    for (int32_t i = t->bucket[key_hash(ns, hash, group) & t->mask]; i >= 0; i = t->e[i].chain)
        if (t->e[i].ns == ns && t->e[i].hash == hash && t->e[i].group == group) return i;
    return -1;
}

static bool grow(hearth_ssd_tier *t) {
    int32_t cap = t->cap_e ? t->cap_e * 2 : 256;
    entry *ne = realloc(t->e, (size_t)cap * sizeof *ne);
    if (!ne) return false;
    t->e = ne;
    uint32_t nb = 2u * (uint32_t)cap;
    int32_t *b = malloc(nb * sizeof(int32_t));
    if (!b) return false;
    for (uint32_t i = 0; i < nb; i++) b[i] = -1;
    free(t->bucket);
    t->bucket = b;
    t->mask = nb - 1;
    t->free_e = -1;
    for (int32_t i = cap - 1; i >= 0; i--) {
        if (i >= t->cap_e || !t->e[i].used) {
            t->e[i].used = false;
            t->e[i].chain = t->free_e;
            t->free_e = i;
            continue;
        }
        uint32_t h = (uint32_t)(key_hash(t->e[i].ns, t->e[i].hash, t->e[i].group) & t->mask);
        t->e[i].chain = t->bucket[h];
        t->bucket[h] = i;
    }
    t->cap_e = cap;
    return true;
}

static int32_t add(hearth_ssd_tier *t, uint64_t ns, uint64_t hash, int32_t group) {
    if (t->free_e < 0 && !grow(t)) return -1;
    int32_t i = t->free_e;
    t->free_e = t->e[i].chain;
    uint32_t h = (uint32_t)(key_hash(ns, hash, group) & t->mask);
    t->e[i] = (entry){.ns = ns, .hash = hash, .group = group, .chain = t->bucket[h], .prev = -2, .next = -2,
                      .used = true};
    t->bucket[h] = i;
    t->n_used++;
    return i;
}

static void lru_unlink(hearth_ssd_tier *t, int32_t i) {
    entry *x = &t->e[i];
    if (x->prev == -2) return;
    if (x->prev >= 0) t->e[x->prev].next = x->next;
    else t->lru_head = x->next;
    if (x->next >= 0) t->e[x->next].prev = x->prev;
    else t->lru_tail = x->prev;
    x->prev = x->next = -2;
}

static void lru_append(hearth_ssd_tier *t, int32_t i) {
    entry *x = &t->e[i];
    x->prev = t->lru_tail;
    x->next = -1;
    if (t->lru_tail >= 0) t->e[t->lru_tail].next = i;
    else t->lru_head = i;
    t->lru_tail = i;
}

/* Forget entry i (its file's bytes leave the count when it was on disk). */
static void drop(hearth_ssd_tier *t, int32_t i) {
    entry *x = &t->e[i];
    if (!x->pending) {
        t->st.bytes -= x->bytes;
        t->st.blocks--;
    }
    lru_unlink(t, i);
    int32_t *link = &t->bucket[key_hash(x->ns, x->hash, x->group) & t->mask];
    while (*link != i) link = &t->e[*link].chain;
    *link = x->chain;
    x->used = false;
    x->chain = t->free_e;
    t->free_e = i;
    t->n_used--;
}

/* Delete entry i's file and forget it. */
static void remove_file(hearth_ssd_tier *t, int32_t i) {
    char path[PATH_MAX + 64];
    file_name(t, t->e[i].ns, t->e[i].hash, t->e[i].group, path, sizeof path);
    unlink(path);
    drop(t, i);
}

/* Forget the least recently used files until the size is under the cap; their names go to
 * gone[0..*n_gone) (at most cap) for the caller to delete outside the mutex. */
static void evict_over_max(hearth_ssd_tier *t, uint64_t (*gone)[3], int *n_gone, int cap) {
    while (t->st.bytes > t->p.max_bytes && t->lru_head >= 0 && *n_gone < cap) {
        entry *x = &t->e[t->lru_head];
        gone[*n_gone][0] = x->ns;
        gone[*n_gone][1] = x->hash;
        gone[*n_gone][2] = (uint64_t)(uint32_t)x->group;
        (*n_gone)++;
        drop(t, t->lru_head);
        t->st.evictions++;
    }
}

static void unlink_gone(const hearth_ssd_tier *t, uint64_t (*gone)[3], int n) {
    char path[PATH_MAX + 64];
    for (int i = 0; i < n; i++) {
        file_name(t, gone[i][0], gone[i][1], (int32_t)gone[i][2], path, sizeof path);
        unlink(path);
    }
}

/* ---- writing ---- */

static void fill_head(const hearth_ssd_tier *t, disk_head *h, uint64_t hash, uint64_t parent, int32_t group,
                      const void *payload) {
    memset(h, 0, sizeof *h);
    memcpy(h->magic, MAGIC, 8);
    h->ns = t->ns;
    memcpy(h->model_id, t->model_id, sizeof h->model_id);
    memcpy(h->scheme, t->scheme, sizeof h->scheme);
    h->hash = hash;
    h->parent = parent;
    h->group = group;
    h->block_tokens = t->p.block_tokens;
    h->payload_bytes = t->p.block_bytes;
    h->payload_xxh3 = payload ? XXH3_64bits(payload, t->p.block_bytes) : 0;
    h->geometry = t->p.geometry;
}

static bool write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = EIO;
            return false;
        }
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Write j's file: a temporary name, then rename into place. errno says why on false. */
static bool write_block(hearth_ssd_tier *t, const job *j, uint64_t seq, int64_t *bytes) {
    char path[PATH_MAX + 64], tmp[PATH_MAX + 96];
    file_name(t, t->ns, j->hash, j->group, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.%" PRIu64 ".tmp", path, seq);
    size_t nt = (size_t)t->p.block_tokens * sizeof(int32_t);
    char *head = malloc(t->head_bytes);
    if (!head) {
        errno = ENOMEM;
        return false;
    }
    disk_head h;
    fill_head(t, &h, j->hash, j->parent, j->group, j->payload);
    memcpy(head, &h, sizeof h);
    memcpy(head + sizeof h, j->tokens, nt);
    uint64_t sum = XXH3_64bits(head, sizeof h + nt);
    memcpy(head + sizeof h + nt, &sum, sizeof sum);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    bool ok = fd >= 0 && write_all(fd, head, t->head_bytes) && write_all(fd, j->payload, t->p.block_bytes);
    int saved = errno;
    if (fd >= 0 && close(fd) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = false;
        saved = errno;
    }
    if (!ok && fd >= 0) unlink(tmp);
    free(head);
    errno = saved;
    *bytes = (int64_t)(t->head_bytes + t->p.block_bytes);
    return ok;
}

static void job_free(job *j) {
    free(j->tokens);
    free(j->payload);
    free(j);
}

static void *writer_main(void *arg) {
    hearth_ssd_tier *t = arg;
    pthread_setname_np(pthread_self(), "hearth-ssd");
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while (!t->q_head && !t->stop) pthread_cond_wait(&t->cv_work, &t->mu);
        job *j = t->q_head;
        if (!j) break;
        t->q_head = j->next;
        if (!t->q_head) t->q_tail = NULL;
        t->busy = true;
        bool on = t->st.state == HEARTH_SSD_ON;
        uint64_t seq = ++t->tmp_seq;
        pthread_mutex_unlock(&t->mu);
        int64_t bytes = 0;
        bool ok = on && write_block(t, j, seq, &bytes);
        int why = errno, n_gone = 0;
        uint64_t gone[64][3];
        pthread_mutex_lock(&t->mu);
        t->q_bytes -= t->p.block_bytes;
        int32_t i = find(t, t->ns, j->hash, j->group);
        if (ok && i >= 0 && t->e[i].pending) {
            t->e[i].pending = false;
            t->e[i].bytes = bytes;
            t->st.bytes += bytes;
            t->st.blocks++;
            t->st.writes++;
            lru_append(t, i);
            evict_over_max(t, gone, &n_gone, 64);
        } else if (!ok) {
            if (i >= 0 && t->e[i].pending) drop(t, i);
            if (!on) t->st.write_skipped++;
            else {
                t->st.write_errors++;
                t->st.state = HEARTH_SSD_READ_ONLY;
                hearth_log(HEARTH_LOG_WARN,
                           "ssd cache: cannot write a block to %s (%s); going on with the RAM prompt cache only",
                           t->dir, strerror(why));
            }
        }
        if (n_gone) { /* file system calls outside the mutex: the engine thread never waits on them */
            pthread_mutex_unlock(&t->mu);
            unlink_gone(t, gone, n_gone);
            pthread_mutex_lock(&t->mu);
        }
        t->busy = false;
        pthread_cond_broadcast(&t->cv_room);
        job_free(j);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* ---- open, close ---- */

static bool mkdirs(const char *dir) {
    char buf[PATH_MAX];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof buf) return false;
    memcpy(buf, dir, n + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return false;
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return false;
    struct stat sb;
    return stat(buf, &sb) == 0 && S_ISDIR(sb.st_mode);
}

typedef struct {
    uint64_t ns, hash;
    int32_t  group;
    int64_t  bytes, mtime_ns;
} found;

static int by_mtime(const void *a, const void *b) {
    const found *x = a, *y = b;
    return x->mtime_ns < y->mtime_ns ? -1 : x->mtime_ns > y->mtime_ns;
}

/* Index the directory's block files, oldest first; delete leftover temporary files when we hold
 * the lock. */
static void scan(hearth_ssd_tier *t) {
    DIR *d = opendir(t->dir);
    if (!d) return;
    found *f = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *name = de->d_name;
        size_t len = strlen(name);
        char path[PATH_MAX + 300];
        snprintf(path, sizeof path, "%s/%s", t->dir, name);
        if (len > 4 && !strcmp(name + len - 4, ".tmp")) {
            if (t->lock_fd >= 0) unlink(path);
            continue;
        }
        uint64_t ns, hash;
        int group, used = 0;
        if (sscanf(name, "%16" SCNx64 "-%16" SCNx64 "-%d.kv%n", &ns, &hash, &group, &used) != 3 ||
            (size_t)used != len || group < 0)
            continue;
        char canon[64];
        snprintf(canon, sizeof canon, "%016" PRIx64 "-%016" PRIx64 "-%d.kv", ns, hash, group);
        if (strcmp(canon, name) != 0) continue;
        struct stat sb;
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 256;
            found *nf = realloc(f, nc * sizeof *nf);
            if (!nf) break;
            f = nf;
            cap = nc;
        }
        f[n++] = (found){.ns = ns, .hash = hash, .group = group, .bytes = (int64_t)sb.st_size,
                         .mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000LL + sb.st_mtim.tv_nsec};
    }
    closedir(d);
    if (n) qsort(f, n, sizeof *f, by_mtime);
    for (size_t k = 0; k < n; k++) {
        int32_t i = add(t, f[k].ns, f[k].hash, f[k].group);
        if (i < 0) break;
        t->e[i].bytes = f[k].bytes;
        t->e[i].mtime_ns = f[k].mtime_ns;
        t->st.bytes += f[k].bytes;
        t->st.blocks++;
        lru_append(t, i);
    }
    free(f);
}

/* The namespace: what makes two blocks with one hash mean the same bytes. */
static uint64_t namespace_of(const hearth_ssd_tier *t) {
    XXH3_state_t *s = XXH3_createState();
    if (!s) return 0;
    XXH3_64bits_reset(s);
    XXH3_64bits_update(s, MAGIC, 8);
    XXH3_64bits_update(s, t->model_id, sizeof t->model_id);
    XXH3_64bits_update(s, t->scheme, sizeof t->scheme);
    uint64_t nums[3] = {(uint64_t)t->p.block_tokens, (uint64_t)t->p.block_bytes, t->p.geometry};
    XXH3_64bits_update(s, nums, sizeof nums);
    uint64_t h = XXH3_64bits_digest(s);
    XXH3_freeState(s);
    return h;
}

hearth_status hearth_ssd_tier_open(const hearth_ssd_tier_params *p, hearth_ssd_tier **out, hearth_err *err) {
    *out = NULL;
    if (!p->dir || !*p->dir || strlen(p->dir) >= PATH_MAX - 64)
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "the SSD cache needs a directory");
    if (!p->model_id || !*p->model_id || strlen(p->model_id) >= HEARTH_SSD_MODEL_ID_MAX)
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "the SSD cache needs the model's identity");
    if (!p->scheme || !*p->scheme || strlen(p->scheme) >= HEARTH_SSD_SCHEME_MAX)
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "the SSD cache needs the KV scheme's name");
    if (p->block_tokens <= 0 || p->block_bytes == 0)
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "the SSD cache needs the block's tokens and bytes");
    hearth_ssd_tier *t = calloc(1, sizeof *t);
    if (!t) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    t->p = *p;
    if (t->p.max_bytes <= 0) t->p.max_bytes = (int64_t)32e9;
    /* the queue holds queue_bytes of payloads, and at most 1024 blocks (small blocks would
     * otherwise queue more files than the writer makes in seconds), and at least one */
    t->q_cap = p->queue_bytes ? p->queue_bytes : (size_t)64 << 20;
    if (t->q_cap / p->block_bytes > 1024) t->q_cap = 1024 * p->block_bytes;
    if (t->q_cap < p->block_bytes) t->q_cap = p->block_bytes;
    snprintf(t->dir, sizeof t->dir, "%s", p->dir);
    size_t dl = strlen(t->dir);
    while (dl > 1 && t->dir[dl - 1] == '/') t->dir[--dl] = 0;
    snprintf(t->model_id, sizeof t->model_id, "%s", p->model_id);
    snprintf(t->scheme, sizeof t->scheme, "%s", p->scheme);
    t->p.dir = t->dir;
    t->p.model_id = t->model_id;
    t->p.scheme = t->scheme;
    t->ns = namespace_of(t);
    t->head_bytes = sizeof(disk_head) + (size_t)p->block_tokens * sizeof(int32_t) + sizeof(uint64_t);
    t->lock_fd = -1;
    t->lru_head = t->lru_tail = -1;
    t->free_e = -1;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv_work, NULL);
    pthread_cond_init(&t->cv_room, NULL);
    t->st.state = HEARTH_SSD_READ_ONLY;
    if (!mkdirs(t->dir)) {
        hearth_log(HEARTH_LOG_WARN, "ssd cache: cannot make the directory %s (%s); the prompt cache stays in RAM",
                   t->dir, strerror(errno));
        *out = t;
        return HEARTH_OK;
    }
    char lock[PATH_MAX + 16];
    snprintf(lock, sizeof lock, "%s/lock", t->dir);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = {0};
        ssize_t r = pread(fd, pid, sizeof pid - 1, 0);
        close(fd);
        int who = r > 0 ? atoi(pid) : 0;
        char holder[48] = "";
        if (who > 0) snprintf(holder, sizeof holder, " (pid %d)", who);
        hearth_ssd_tier_close(t);
        return hearth_err_set(err, HEARTH_E_BUSY, -1,
                              "the SSD cache directory %s is in use by another hearth%s: give each server its own "
                              "--ssd-cache directory",
                              p->dir, holder);
    }
    if (fd >= 0) {
        char pid[32];
        int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
        if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
            hearth_log(HEARTH_LOG_WARN, "ssd cache: cannot write to %s (%s); its blocks are only read", t->dir,
                       strerror(errno));
            close(fd);
            fd = -1;
        }
    } else {
        hearth_log(HEARTH_LOG_WARN, "ssd cache: cannot write to %s (%s); its blocks are only read", t->dir,
                   strerror(errno));
    }
    t->lock_fd = fd;
    scan(t);
    if (fd >= 0) {
        t->st.state = HEARTH_SSD_ON;
        uint64_t gone[64][3];
        int n_gone;
        do { /* the cap may have been lowered since the last run */
            n_gone = 0;
            evict_over_max(t, gone, &n_gone, 64);
            unlink_gone(t, gone, n_gone);
        } while (n_gone == 64);
        if (pthread_create(&t->writer, NULL, writer_main, t) != 0) {
            hearth_ssd_tier_close(t);
            return hearth_err_set(err, HEARTH_E_NOMEM, -1, "cannot start the SSD cache's writer thread");
        }
        t->writer_on = true;
    }
    *out = t;
    return HEARTH_OK;
}

void hearth_ssd_tier_close(hearth_ssd_tier *t) {
    if (!t) return;
    pthread_mutex_lock(&t->mu);
    t->stop = true;
    pthread_cond_broadcast(&t->cv_work);
    pthread_mutex_unlock(&t->mu);
    if (t->writer_on) pthread_join(t->writer, NULL);
    for (job *j = t->q_head, *n; j; j = n) {
        n = j->next;
        job_free(j);
    }
    if (t->lock_fd >= 0) {
        if (ftruncate(t->lock_fd, 0) != 0) { /* the pid stays: harmless, the flock is what counts */
        }
        close(t->lock_fd);
    }
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv_work);
    pthread_cond_destroy(&t->cv_room);
    free(t->e);
    free(t->bucket);
    free(t);
}

/* ---- the calls ---- */

bool hearth_ssd_tier_has(hearth_ssd_tier *t, uint64_t hash, int32_t group) {
    pthread_mutex_lock(&t->mu);
    bool has = find(t, t->ns, hash, group) >= 0;
    pthread_mutex_unlock(&t->mu);
    return has;
}

bool hearth_ssd_tier_writable(hearth_ssd_tier *t) {
    pthread_mutex_lock(&t->mu);
    bool on = t->st.state == HEARTH_SSD_ON && !t->stop, ok = on && t->q_bytes + t->p.block_bytes <= t->q_cap;
    if (on && !ok) t->st.write_skipped++;
    pthread_mutex_unlock(&t->mu);
    return ok;
}

bool hearth_ssd_tier_on(hearth_ssd_tier *t) {
    pthread_mutex_lock(&t->mu);
    bool on = t->st.state == HEARTH_SSD_ON && !t->stop;
    pthread_mutex_unlock(&t->mu);
    return on;
}

bool hearth_ssd_tier_put(hearth_ssd_tier *t, uint64_t hash, uint64_t parent, int32_t group, const int32_t *tokens,
                         void *payload, bool wait) {
    if (!payload) return false;
    pthread_mutex_lock(&t->mu);
    bool ok = false;
    if (t->st.state != HEARTH_SSD_ON || t->stop) {
        t->st.write_skipped++;
        goto out;
    }
    if (find(t, t->ns, hash, group) >= 0) { /* already there, or queued */
        ok = true;
        goto out;
    }
    while (t->q_bytes + t->p.block_bytes > t->q_cap && t->st.state == HEARTH_SSD_ON && !t->stop) {
        if (!wait) break;
        pthread_cond_wait(&t->cv_room, &t->mu);
    }
    if (t->q_bytes + t->p.block_bytes > t->q_cap || t->st.state != HEARTH_SSD_ON || t->stop) {
        t->st.write_skipped++;
        goto out;
    }
    job *j = calloc(1, sizeof *j);
    int32_t *tk = malloc((size_t)t->p.block_tokens * sizeof(int32_t));
    int32_t i = j && tk ? add(t, t->ns, hash, group) : -1;
    if (i < 0) {
        free(j);
        free(tk);
        t->st.write_skipped++;
        goto out;
    }
    t->e[i].pending = true;
    memcpy(tk, tokens, (size_t)t->p.block_tokens * sizeof(int32_t));
    *j = (job){.hash = hash, .parent = parent, .group = group, .tokens = tk, .payload = payload};
    payload = NULL;
    if (t->q_tail) t->q_tail->next = j;
    else t->q_head = j;
    t->q_tail = j;
    t->q_bytes += t->p.block_bytes;
    pthread_cond_signal(&t->cv_work);
    ok = true;
out:
    pthread_mutex_unlock(&t->mu);
    free(payload);
    return ok;
}

static bool read_all(int fd, void *buf, size_t n, off_t off) {
    char *p = buf;
    while (n > 0) {
        ssize_t r = pread(fd, p, n, off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= (size_t)r;
        off += r;
    }
    return true;
}

typedef enum { GOT_OK, GOT_MISS, GOT_BAD } got;

/* Read and check the file of (hash, group); outside the mutex. */
static got read_block(hearth_ssd_tier *t, uint64_t hash, uint64_t parent, int32_t group, const int32_t *tokens,
                      void *out) {
    char path[PATH_MAX + 64];
    file_name(t, t->ns, hash, group, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return GOT_MISS; /* evicted or deleted meanwhile */
    got g = GOT_BAD;
    size_t nt = (size_t)t->p.block_tokens * sizeof(int32_t);
    char *head = malloc(t->head_bytes);
    struct stat sb;
    disk_head h, want;
    if (!head) {
        g = GOT_MISS;
        goto done;
    }
    if (fstat(fd, &sb) != 0 || (uint64_t)sb.st_size != t->head_bytes + t->p.block_bytes) goto done; /* truncated */
    if (!read_all(fd, head, t->head_bytes, 0)) goto done;
    uint64_t sum;
    memcpy(&sum, head + sizeof h + nt, sizeof sum);
    if (XXH3_64bits(head, sizeof h + nt) != sum) goto done;
    memcpy(&h, head, sizeof h);
    fill_head(t, &want, hash, parent, group, NULL);
    want.payload_xxh3 = h.payload_xxh3;
    if (memcmp(&h, &want, sizeof h) != 0) { /* another model, scheme or geometry under our name */
        if (h.ns == want.ns && (h.hash != hash || h.parent != parent)) g = GOT_MISS; /* a hash collision */
        goto done;
    }
    if (memcmp(head + sizeof h, tokens, nt) != 0) { /* equal hashes, other tokens: not ours */
        g = GOT_MISS;
        goto done;
    }
    if (!read_all(fd, out, t->p.block_bytes, (off_t)t->head_bytes)) goto done;
    if (t->p.verify && XXH3_64bits(out, t->p.block_bytes) != h.payload_xxh3) goto done;
    (void)futimens(fd, NULL); /* the LRU order a restart reads back */
    g = GOT_OK;
done:
    free(head);
    close(fd);
    return g;
}

bool hearth_ssd_tier_get(hearth_ssd_tier *t, uint64_t hash, uint64_t parent, int32_t group, const int32_t *tokens,
                         void *out) {
    pthread_mutex_lock(&t->mu);
    int32_t i = find(t, t->ns, hash, group);
    if (i < 0 || t->e[i].pending) {
        t->st.misses++;
        pthread_mutex_unlock(&t->mu);
        return false;
    }
    t->st.hits++;
    pthread_mutex_unlock(&t->mu);
    got g = read_block(t, hash, parent, group, tokens, out);
    pthread_mutex_lock(&t->mu);
    i = find(t, t->ns, hash, group);
    if (g == GOT_OK) {
        t->st.restores++;
        if (i >= 0 && !t->e[i].pending) {
            lru_unlink(t, i);
            lru_append(t, i);
        }
    } else if (g == GOT_BAD) {
        t->st.verify_failures++;
        if (i >= 0 && !t->e[i].pending) {
            if (t->lock_fd >= 0) remove_file(t, i);
            else drop(t, i);
        }
        hearth_log(HEARTH_LOG_WARN, "ssd cache: a stored block failed its checks and was dropped (it is recomputed)");
    } else if (i >= 0 && !t->e[i].pending) {
        char path[PATH_MAX + 64];
        file_name(t, t->ns, hash, group, path, sizeof path);
        if (access(path, F_OK) != 0) drop(t, i); /* gone from the disk */
    }
    pthread_mutex_unlock(&t->mu);
    return g == GOT_OK;
}

void hearth_ssd_tier_drain(hearth_ssd_tier *t) {
    pthread_mutex_lock(&t->mu);
    while ((t->q_head || t->busy) && t->writer_on) pthread_cond_wait(&t->cv_room, &t->mu);
    pthread_mutex_unlock(&t->mu);
}

void hearth_ssd_tier_stats_get(hearth_ssd_tier *t, hearth_ssd_tier_stats *out) {
    pthread_mutex_lock(&t->mu);
    *out = t->st;
    pthread_mutex_unlock(&t->mu);
}

/* ---- the model's identity ---- */

static bool is_sha256_name(const char *s) {
    if (strlen(s) != 64) return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return false;
    return true;
}

static hearth_status hash_file(XXH3_state_t *s, const char *path, hearth_err *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return hearth_err_set(err, HEARTH_E_IO, -1, "cannot open %s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return hearth_err_set(err, HEARTH_E_IO, -1, "cannot stat %s: %s", path, strerror(errno));
    }
    uint64_t size = (uint64_t)sb.st_size;
    XXH3_128bits_update(s, &size, sizeof size);
    if (size == 0) {
        close(fd);
        return HEARTH_OK;
    }
    void *m = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return hearth_err_set(err, HEARTH_E_IO, -1, "cannot map %s: %s", path, strerror(errno));
    (void)madvise(m, (size_t)size, MADV_SEQUENTIAL);
    XXH3_128bits_update(s, m, (size_t)size);
    munmap(m, (size_t)size);
    return HEARTH_OK;
}

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

hearth_status hearth_ssd_model_id(const char *path, char *id, double *ms, hearth_err *err) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char real[PATH_MAX];
    if (!realpath(path, real))
        return hearth_err_set(err, HEARTH_E_IO, -1, "cannot resolve %s: %s", path, strerror(errno));
    const char *base = strrchr(real, '/');
    base = base ? base + 1 : real;
    hearth_status st = HEARTH_OK;
    if (is_sha256_name(base)) {
        snprintf(id, HEARTH_SSD_MODEL_ID_MAX, "sha256:%.64s", base); /* 64 hex digits (is_sha256_name) */
    } else {
        XXH3_state_t *s = XXH3_createState();
        if (!s) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        XXH3_128bits_reset(s);
        struct stat sb;
        if (stat(real, &sb) == 0 && S_ISDIR(sb.st_mode)) { /* a checkpoint folder: its files by name */
            struct dirent **names = NULL;
            int n = scandir(real, &names, NULL, by_name);
            if (n < 0) st = hearth_err_set(err, HEARTH_E_IO, -1, "cannot list %s: %s", real, strerror(errno));
            for (int k = 0; k < n; k++) {
                char f[PATH_MAX + 300];
                snprintf(f, sizeof f, "%s/%s", real, names[k]->d_name);
                struct stat fb;
                if (!st && names[k]->d_name[0] != '.' && stat(f, &fb) == 0 && S_ISREG(fb.st_mode)) {
                    XXH3_128bits_update(s, names[k]->d_name, strlen(names[k]->d_name) + 1);
                    st = hash_file(s, f, err);
                }
                free(names[k]);
            }
            free(names);
        } else {
            st = hash_file(s, real, err);
        }
        XXH128_hash_t h = XXH3_128bits_digest(s);
        XXH3_freeState(s);
        if (!st) snprintf(id, HEARTH_SSD_MODEL_ID_MAX, "xxh128:%016" PRIx64 "%016" PRIx64, h.high64, h.low64);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (ms) *ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    return st;
}
