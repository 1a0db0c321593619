/* test_resp_store.c - the Responses store: put/get/replace/delete, expiry on a fake clock,
 * LRU eviction under the byte cap (a lookup refreshes), oversized entries, and a randomized
 * run against a plain model of the same rules; the same for the store in a shared folder
 * (resp_disk.h), plus two stores on one folder seeing each other's entries, as two engine
 * processes do, and ids that are not the server's refused. */
#include "server/resp_disk.h"
#include "server/resp_store.h"
#include "test.h"

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

static double fake_now;
static double fake_clock(void) { return fake_now; }

static hearth_resp_store *mk_in(const char *dir, size_t max_bytes, double ttl) {
    fake_now = 1000;
    hearth_resp_store_params p = {.max_bytes = max_bytes, .ttl_s = ttl, .now_s = fake_clock, .dir = dir};
    return hearth_resp_store_create(p);
}

static hearth_resp_store *mk(size_t max_bytes, double ttl) { return mk_in(NULL, max_bytes, ttl); }

/* A fresh empty folder for a disk store (tmp_dir_rm removes it with what is left in it). */
static char *tmp_dir(void) {
    char *d = strdup("/tmp/hearth-resp-XXXXXX");
    return d && mkdtemp(d) ? d : NULL;
}

/* Files left in dir (not . and ..). */
static int n_files(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *de; d && (de = readdir(d));) n += de->d_name[0] != '.' || (de->d_name[1] && strcmp(de->d_name, ".."));
    if (d) closedir(d);
    return n;
}

static void tmp_dir_rm(char *dir) {
    hearth_resp_disk_clear(dir);
    rmdir(dir);
    free(dir);
}

/* Bytes an entry costs: its three strings with their NULs. */
static size_t cost(const char *id, const char *conv, const char *resp) {
    return strlen(id) + strlen(conv) + strlen(resp) + 3;
}

TEST(resp_store_put_get_replace_del) {
    hearth_resp_store *st = mk(1 << 20, 60);
    char *c = NULL, *r = NULL;
    CHECK(!hearth_resp_store_get(st, "resp_a", &c, &r));
    CHECK(c == NULL && r == NULL);
    CHECK_EQ(hearth_resp_store_put(st, "resp_a", "[1]", "{\"id\":\"resp_a\"}"), HEARTH_OK);
    CHECK(hearth_resp_store_get(st, "resp_a", &c, &r));
    CHECK_STR(c, "[1]");
    CHECK_STR(r, "{\"id\":\"resp_a\"}");
    free(c);
    free(r);
    CHECK_EQ(hearth_resp_store_put(st, "resp_a", "[2]", "{}"), HEARTH_OK); /* replaces */
    CHECK(hearth_resp_store_get(st, "resp_a", &c, NULL));
    CHECK_STR(c, "[2]");
    free(c);
    int64_t n, b;
    hearth_resp_store_usage(st, &n, &b);
    CHECK_EQ(n, 1);
    CHECK_EQ(b, (long long)cost("resp_a", "[2]", "{}"));
    CHECK(hearth_resp_store_del(st, "resp_a"));
    CHECK(!hearth_resp_store_del(st, "resp_a"));
    hearth_resp_store_usage(st, &n, &b);
    CHECK_EQ(n, 0);
    CHECK_EQ(b, 0);
    hearth_resp_store_destroy(st);
}

TEST(resp_store_expiry) {
    hearth_resp_store *st = mk(1 << 20, 60);
    CHECK_EQ(hearth_resp_store_put(st, "a", "x", "y"), HEARTH_OK);
    fake_now += 30;
    CHECK_EQ(hearth_resp_store_put(st, "b", "x", "y"), HEARTH_OK);
    fake_now += 29.9;
    CHECK(hearth_resp_store_get(st, "a", NULL, NULL)); /* a lookup does not extend the TTL */
    fake_now += 0.2;
    CHECK(!hearth_resp_store_get(st, "a", NULL, NULL));
    CHECK(hearth_resp_store_get(st, "b", NULL, NULL));
    fake_now += 30;
    int64_t n, b;
    hearth_resp_store_usage(st, &n, &b);
    CHECK_EQ(n, 0);
    CHECK_EQ(b, 0);
    hearth_resp_store_destroy(st);
}

TEST(resp_store_lru_under_the_cap) {
    size_t one = cost("e0", "conv", "resp");
    hearth_resp_store *st = mk(3 * one, 60);
    CHECK_EQ(hearth_resp_store_put(st, "e0", "conv", "resp"), HEARTH_OK);
    CHECK_EQ(hearth_resp_store_put(st, "e1", "conv", "resp"), HEARTH_OK);
    CHECK_EQ(hearth_resp_store_put(st, "e2", "conv", "resp"), HEARTH_OK);
    CHECK(hearth_resp_store_get(st, "e0", NULL, NULL)); /* e0 is now the most recent: e1 goes next */
    CHECK_EQ(hearth_resp_store_put(st, "e3", "conv", "resp"), HEARTH_OK);
    CHECK(hearth_resp_store_get(st, "e0", NULL, NULL));
    CHECK(!hearth_resp_store_get(st, "e1", NULL, NULL));
    CHECK(hearth_resp_store_get(st, "e2", NULL, NULL));
    CHECK(hearth_resp_store_get(st, "e3", NULL, NULL));
    /* an entry larger than the whole store is refused, and the old one under its id is gone */
    char big[256];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    CHECK_EQ(hearth_resp_store_put(st, "e2", big, "r"), HEARTH_E_LIMIT);
    CHECK(!hearth_resp_store_get(st, "e2", NULL, NULL));
    int64_t n, b;
    hearth_resp_store_usage(st, &n, &b);
    CHECK_EQ(n, 2);
    CHECK_EQ(b, (long long)(2 * one));
    hearth_resp_store_destroy(st);
}

/* A model of the rules: arrays in LRU order (index 0 = most recent). */
typedef struct {
    char   id[8];
    size_t bytes;
    double expires;
} model_e;

static void randomized(const char *dir) {
    const size_t cap = 400;
    hearth_resp_store *st = mk_in(dir, cap, 50);
    model_e m[64];
    int nm = 0;
    unsigned x = 12345;
    for (int step = 0; step < 4000; step++) {
        x = x * 1103515245u + 12345u;
        int op = (int)((x >> 16) % 4);
        char id[8];
        snprintf(id, sizeof id, "r%u", (x >> 8) % 12);
        fake_now += (double)((x >> 20) % 7) + 0.001; /* never a tie in the LRU order of files */
        /* the model drops expired entries lazily; compare only live ones */
        if (op <= 1) {
            char conv[200];
            size_t len = (x >> 4) % 150;
            memset(conv, 'c', len);
            conv[len] = 0;
            hearth_status s = hearth_resp_store_put(st, id, conv, "r");
            size_t bytes = cost(id, conv, "r");
            for (int i = 0; i < nm; i++) { /* expired, and the same id */
                if (m[i].expires > fake_now && strcmp(m[i].id, id)) continue;
                memmove(&m[i], &m[i + 1], (size_t)(--nm - i) * sizeof *m);
                i--;
            }
            if (bytes > cap) {
                CHECK_EQ(s, HEARTH_E_LIMIT);
                continue;
            }
            CHECK_EQ(s, HEARTH_OK);
            size_t total = bytes;
            for (int i = 0; i < nm; i++) total += m[i].bytes;
            while (nm && total > cap) total -= m[--nm].bytes;
            memmove(&m[1], &m[0], (size_t)nm * sizeof *m);
            snprintf(m[0].id, sizeof m[0].id, "%s", id);
            m[0].bytes = bytes;
            m[0].expires = fake_now + 50;
            nm++;
        } else if (op == 2) {
            bool got = hearth_resp_store_get(st, id, NULL, NULL);
            int at = -1;
            for (int i = 0; i < nm; i++)
                if (!strcmp(m[i].id, id)) at = i;
            bool live = at >= 0 && m[at].expires > fake_now;
            CHECK_EQ(got, live);
            if (at >= 0 && !live) memmove(&m[at], &m[at + 1], (size_t)(--nm - at) * sizeof *m);
            else if (live) {
                model_e e = m[at];
                memmove(&m[1], &m[0], (size_t)at * sizeof *m);
                m[0] = e;
            }
        } else {
            int at = -1;
            for (int i = 0; i < nm; i++)
                if (!strcmp(m[i].id, id)) at = i;
            bool had = hearth_resp_store_del(st, id);
            CHECK_EQ(had, at >= 0); /* del drops expired entries too */
            if (at >= 0) memmove(&m[at], &m[at + 1], (size_t)(--nm - at) * sizeof *m);
        }
    }
    int64_t n, b;
    hearth_resp_store_usage(st, &n, &b);
    int live = 0;
    size_t bytes = 0;
    for (int i = 0; i < nm; i++)
        if (m[i].expires > fake_now) live++, bytes += m[i].bytes;
    CHECK_EQ(n, live);
    CHECK_EQ(b, (long long)bytes);
    hearth_resp_store_destroy(st);
}

TEST(resp_store_randomized_against_model) { randomized(NULL); }

TEST(resp_store_disk_randomized_against_model) {
    char *dir = tmp_dir();
    CHECK(dir != NULL);
    if (!dir) return;
    randomized(dir);
    tmp_dir_rm(dir);
}

TEST(resp_store_disk_shared_by_two_stores) {
    char *dir = tmp_dir();
    CHECK(dir != NULL);
    if (!dir) return;
    hearth_resp_store *a = mk_in(dir, 1 << 20, 60), *b = mk_in(dir, 1 << 20, 60);
    char *c = NULL, *r = NULL;
    CHECK_EQ(hearth_resp_store_put(a, "resp_a1", "[{\"role\":\"user\"}]\n", "{\"id\":\"resp_a1\"}"), HEARTH_OK);
    CHECK(hearth_resp_store_get(b, "resp_a1", &c, &r)); /* the other process finds it */
    CHECK_STR(c, "[{\"role\":\"user\"}]\n");
    CHECK_STR(r, "{\"id\":\"resp_a1\"}");
    free(c);
    free(r);
    CHECK_EQ(hearth_resp_store_put(b, "resp_a1", "[2]", ""), HEARTH_OK); /* replaced from there */
    CHECK(hearth_resp_store_get(a, "resp_a1", &c, &r));
    CHECK_STR(c, "[2]");
    CHECK_STR(r, "");
    free(c);
    free(r);
    int64_t n, bytes;
    hearth_resp_store_usage(a, &n, &bytes);
    CHECK_EQ(n, 1);
    CHECK_EQ(bytes, (long long)cost("resp_a1", "[2]", ""));
    CHECK(hearth_resp_store_del(b, "resp_a1"));
    CHECK(!hearth_resp_store_get(a, "resp_a1", NULL, NULL)); /* deleted for every process */
    CHECK(!hearth_resp_store_del(a, "resp_a1"));
    /* a store outlives its process: a new one on the folder finds the entries */
    CHECK_EQ(hearth_resp_store_put(a, "resp_a2", "[]", "{}"), HEARTH_OK);
    hearth_resp_store_destroy(a);
    hearth_resp_store_destroy(b);
    b = mk_in(dir, 1 << 20, 60);
    CHECK(hearth_resp_store_get(b, "resp_a2", NULL, NULL));
    hearth_resp_store_destroy(b);
    CHECK_EQ(n_files(dir), 1);
    tmp_dir_rm(dir);
}

TEST(resp_store_disk_refuses_ids_that_are_not_the_servers) {
    char *dir = tmp_dir();
    CHECK(dir != NULL);
    if (!dir) return;
    hearth_resp_store *st = mk_in(dir, 1 << 20, 60);
    static const char *const bad[] = {"", "../x", "a/b", "resp_x.resp", ".hidden", "resp x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_EQ(hearth_resp_store_put(st, bad[i], "[]", "{}"), HEARTH_E_INVALID);
        CHECK(!hearth_resp_store_get(st, bad[i], NULL, NULL));
        CHECK(!hearth_resp_store_del(st, bad[i]));
    }
    CHECK_EQ(n_files(dir), 0);
    hearth_resp_store_destroy(st);
    tmp_dir_rm(dir);
}

TEST(resp_store_disk_expiry_and_lru) {
    char *dir = tmp_dir();
    CHECK(dir != NULL);
    if (!dir) return;
    size_t one = cost("e0", "conv", "resp");
    hearth_resp_store *st = mk_in(dir, 3 * one, 60);
    CHECK_EQ(hearth_resp_store_put(st, "e0", "conv", "resp"), HEARTH_OK);
    fake_now += 1;
    CHECK_EQ(hearth_resp_store_put(st, "e1", "conv", "resp"), HEARTH_OK);
    fake_now += 1;
    CHECK_EQ(hearth_resp_store_put(st, "e2", "conv", "resp"), HEARTH_OK);
    fake_now += 1;
    CHECK(hearth_resp_store_get(st, "e0", NULL, NULL)); /* e0 is now the most recent: e1 goes next */
    fake_now += 1;
    CHECK_EQ(hearth_resp_store_put(st, "e3", "conv", "resp"), HEARTH_OK);
    CHECK(hearth_resp_store_get(st, "e0", NULL, NULL));
    CHECK(!hearth_resp_store_get(st, "e1", NULL, NULL));
    CHECK(hearth_resp_store_get(st, "e2", NULL, NULL));
    CHECK(hearth_resp_store_get(st, "e3", NULL, NULL));
    CHECK_EQ(n_files(dir), 3);
    fake_now = 1000 + 60 + 2.5; /* e0 (put at 1000) and e2 (1002) expired; e3 (1004) lives */
    CHECK(!hearth_resp_store_get(st, "e0", NULL, NULL));
    CHECK(hearth_resp_store_get(st, "e3", NULL, NULL));
    int64_t n, b;
    hearth_resp_store_usage(st, &n, &b);
    CHECK_EQ(n, 1);
    CHECK_EQ(n_files(dir), 1);
    hearth_resp_store_destroy(st);
    tmp_dir_rm(dir);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
