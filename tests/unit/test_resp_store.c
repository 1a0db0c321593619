/* test_resp_store.c - the Responses store: put/get/replace/delete, expiry on a fake clock,
 * LRU eviction under the byte cap (a lookup refreshes), oversized entries, and a randomized
 * run against a plain model of the same rules. */
#include "server/resp_store.h"
#include "test.h"

static double fake_now;
static double fake_clock(void) { return fake_now; }

static hearth_resp_store *mk(size_t max_bytes, double ttl) {
    fake_now = 1000;
    hearth_resp_store_params p = {.max_bytes = max_bytes, .ttl_s = ttl, .now_s = fake_clock};
    return hearth_resp_store_create(p);
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

TEST(resp_store_randomized_against_model) {
    const size_t cap = 400;
    hearth_resp_store *st = mk(cap, 50);
    model_e m[64];
    int nm = 0;
    unsigned x = 12345;
    for (int step = 0; step < 4000; step++) {
        x = x * 1103515245u + 12345u;
        int op = (int)((x >> 16) % 4);
        char id[8];
        snprintf(id, sizeof id, "r%u", (x >> 8) % 12);
        fake_now += (double)((x >> 20) % 7);
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

int main(int argc, char **argv) { return test_main(argc, argv); }
