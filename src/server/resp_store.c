/*
 * resp_store.c - the Responses store (see resp_store.h): a doubly linked list in LRU order,
 * most recent first, searched linearly. A store of at most 32 MiB of conversations holds
 * hundreds to a few thousand entries, and a lookup compares ids only; a hash table would
 * buy nothing a person could measure next to a generation.
 */
#include "server/resp_store.h"
#include "server/resp_disk.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct entry {
    struct entry *prev, *next;
    char         *id, *conv, *resp; /* owned */
    size_t        bytes;
    double        expires_s;
} entry;

struct hearth_resp_store {
    hearth_resp_store_params p;
    char                    *dir;  /* owned copy of p.dir, NULL: in memory */
    pthread_mutex_t          mu;
    entry                   *head, *tail; /* head: most recently used */
    size_t                   bytes;
    int64_t                  n;
};

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double wall_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

hearth_resp_store *hearth_resp_store_create(hearth_resp_store_params p) {
    hearth_resp_store *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    if (p.dir && !(st->dir = strdup(p.dir))) {
        free(st);
        return NULL;
    }
    p.dir = st->dir;
    if (!p.max_bytes) p.max_bytes = 32u << 20;
    if (p.ttl_s <= 0) p.ttl_s = 3600;
    if (!p.now_s) p.now_s = p.dir ? wall_s : mono_s;
    st->p = p;
    pthread_mutex_init(&st->mu, NULL);
    return st;
}

static void unlink_entry(hearth_resp_store *st, entry *e) {
    if (e->prev) e->prev->next = e->next;
    else st->head = e->next;
    if (e->next) e->next->prev = e->prev;
    else st->tail = e->prev;
    e->prev = e->next = NULL;
}

static void push_front(hearth_resp_store *st, entry *e) {
    e->prev = NULL;
    e->next = st->head;
    if (st->head) st->head->prev = e;
    st->head = e;
    if (!st->tail) st->tail = e;
}

static void drop(hearth_resp_store *st, entry *e) {
    unlink_entry(st, e);
    st->bytes -= e->bytes;
    st->n--;
    free(e->id);
    free(e->conv);
    free(e->resp);
    free(e);
}

static entry *find(hearth_resp_store *st, const char *id) {
    for (entry *e = st->head; e; e = e->next)
        if (!strcmp(e->id, id)) return e;
    return NULL;
}

static void drop_expired(hearth_resp_store *st, double now) {
    for (entry *e = st->head, *nx; e; e = nx) {
        nx = e->next;
        if (e->expires_s <= now) drop(st, e);
    }
}

void hearth_resp_store_destroy(hearth_resp_store *st) {
    if (!st) return;
    while (st->head) drop(st, st->head);
    free(st->dir);
    pthread_mutex_destroy(&st->mu);
    free(st);
}

hearth_status hearth_resp_store_put(hearth_resp_store *st, const char *id, const char *conv, const char *resp) {
    if (st->dir) {
        pthread_mutex_lock(&st->mu);
        hearth_status s = hearth_resp_disk_put(st->dir, st->p.max_bytes, st->p.now_s(), st->p.ttl_s, id, conv, resp);
        pthread_mutex_unlock(&st->mu);
        return s;
    }
    size_t bytes = strlen(id) + strlen(conv) + strlen(resp) + 3;
    if (bytes > st->p.max_bytes) {
        hearth_resp_store_del(st, id);
        return HEARTH_E_LIMIT;
    }
    entry *e = calloc(1, sizeof *e);
    if (!e || !(e->id = strdup(id)) || !(e->conv = strdup(conv)) || !(e->resp = strdup(resp))) {
        if (e) {
            free(e->id);
            free(e->conv);
            free(e->resp);
        }
        free(e);
        return HEARTH_E_NOMEM;
    }
    e->bytes = bytes;
    pthread_mutex_lock(&st->mu);
    double now = st->p.now_s();
    e->expires_s = now + st->p.ttl_s;
    drop_expired(st, now);
    entry *old = find(st, id);
    if (old) drop(st, old);
    while (st->tail && st->bytes + bytes > st->p.max_bytes) drop(st, st->tail);
    push_front(st, e);
    st->bytes += bytes;
    st->n++;
    pthread_mutex_unlock(&st->mu);
    return HEARTH_OK;
}

bool hearth_resp_store_get(hearth_resp_store *st, const char *id, char **conv, char **resp) {
    if (conv) *conv = NULL;
    if (resp) *resp = NULL;
    pthread_mutex_lock(&st->mu);
    if (st->dir) {
        bool ok = hearth_resp_disk_get(st->dir, st->p.now_s(), id, conv, resp);
        pthread_mutex_unlock(&st->mu);
        return ok;
    }
    entry *e = find(st, id);
    bool ok = false;
    if (e && e->expires_s <= st->p.now_s()) drop(st, e);
    else if (e) {
        unlink_entry(st, e);
        push_front(st, e);
        ok = (!conv || (*conv = strdup(e->conv))) && (!resp || (*resp = strdup(e->resp)));
    }
    pthread_mutex_unlock(&st->mu);
    if (!ok) {
        if (conv) free(*conv), *conv = NULL;
        if (resp) free(*resp), *resp = NULL;
    }
    return ok;
}

bool hearth_resp_store_del(hearth_resp_store *st, const char *id) {
    pthread_mutex_lock(&st->mu);
    if (st->dir) {
        bool ok = hearth_resp_disk_del(st->dir, id);
        pthread_mutex_unlock(&st->mu);
        return ok;
    }
    entry *e = find(st, id);
    if (e) drop(st, e);
    pthread_mutex_unlock(&st->mu);
    return e != NULL;
}

void hearth_resp_store_usage(hearth_resp_store *st, int64_t *n_entries, int64_t *n_bytes) {
    pthread_mutex_lock(&st->mu);
    if (st->dir) {
        hearth_resp_disk_usage(st->dir, st->p.now_s(), n_entries, n_bytes);
        pthread_mutex_unlock(&st->mu);
        return;
    }
    drop_expired(st, st->p.now_s());
    *n_entries = st->n;
    *n_bytes = (int64_t)st->bytes;
    pthread_mutex_unlock(&st->mu);
}
