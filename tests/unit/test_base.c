/* test_base.c - arena, reader, size arithmetic, status, log sink, thread pool, UTF-8 codec,
 * growable buffers. */
#include "base/arena.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/rd.h"
#include "base/size.h"
#include "base/status.h"
#include "base/thread.h"
#include "base/utf8.h"
#include "test.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

TEST(arena_alignment_and_reset) {
    hearth_arena a;
    hearth_arena_init(&a, 256);
    for (int i = 0; i < 100; i++) {
        unsigned char *p = hearth_arena_alloc_aligned(&a, (size_t)i * 7 + 1, 64);
        CHECK(p != NULL);
        CHECK(((uintptr_t)p & 63) == 0);
        memset(p, 0xab, (size_t)i * 7 + 1);
    }
    CHECK(hearth_arena_alloc(&a, SIZE_MAX - 8) == NULL);
    CHECK(hearth_arena_calloc(&a, SIZE_MAX / 2, 4) == NULL);
    char *s = hearth_arena_strndup(&a, "hello world", 5);
    CHECK_STR(s, "hello");
    hearth_arena_reset(&a);
    CHECK_EQ(a.used_bytes, 0);
    CHECK(a.head != NULL);
    void *q = hearth_arena_alloc(&a, 16);
    CHECK(q != NULL);
    hearth_arena_fini(&a);
}

TEST(reader_sticky_failure) {
    const uint8_t bytes[] = {1, 0, 0, 0, 0xff, 2, 3};
    hearth_rd r = hearth_rd_init(bytes, sizeof bytes);
    CHECK_EQ(hearth_rd_u32(&r), 1);
    CHECK_EQ(hearth_rd_u8(&r), 0xff);
    CHECK_EQ(hearth_rd_left(&r), 2);
    CHECK_EQ(hearth_rd_u32(&r), 0); /* runs past the end */
    CHECK(r.failed);
    CHECK_EQ(hearth_rd_u8(&r), 0);  /* stays failed even though a byte would fit */
    CHECK(hearth_rd_take(&r, 1) == NULL);
}

TEST(size_overflow) {
    size_t out = 7;
    CHECK(!hearth_mul_size(SIZE_MAX / 2 + 1, 2, &out));
    CHECK_EQ(out, 7);
    CHECK(hearth_mul_size(1 << 20, 1 << 10, &out) && out == (size_t)1 << 30);
    CHECK(!hearth_add_size(SIZE_MAX, 1, &out));
    CHECK(hearth_align_size(65, 32, &out) && out == 96);
    CHECK(!hearth_align_size(SIZE_MAX - 3, 32, &out));
    int64_t o64;
    CHECK(!hearth_mul_i64(INT64_MAX / 3, 4, &o64));
}

TEST(err_record) {
    hearth_err e;
    CHECK_EQ(hearth_err_set(&e, HEARTH_E_FORMAT, 42, "bad %s", "magic"), HEARTH_E_FORMAT);
    CHECK_STR(e.msg, "bad magic");
    CHECK_EQ(e.pos, 42);
    CHECK_STR(hearth_status_str(HEARTH_E_FORMAT), "format error");
    hearth_err_clear(&e);
    CHECK_EQ(e.code, HEARTH_OK);
}

static char last_log[128];
static void capture(hearth_log_level lv, const char *msg, void *user) {
    (void)user;
    snprintf(last_log, sizeof last_log, "%d:%s", (int)lv, msg);
}

TEST(log_sink_and_level) {
    hearth_log_set_sink(capture, NULL);
    hearth_log_set_level(HEARTH_LOG_INFO);
    hearth_log(HEARTH_LOG_DEBUG, "dropped");
    CHECK_STR(last_log, "");
    hearth_log(HEARTH_LOG_WARN, "x=%d", 3);
    CHECK_STR(last_log, "2:x=3");
    hearth_log_set_sink(NULL, NULL);
    hearth_log_set_level(HEARTH_LOG_WARN);
}

typedef struct {
    _Atomic long sum;
    long         parts[8];
    hearth_pool *pool;
} job;

static void job_fn(void *arg, int ith, int nth) {
    job *j = arg;
    long s = 0;
    for (long i = ith; i < 100000; i += nth) s += i;
    j->parts[ith] = s;
    hearth_pool_barrier(j->pool);
    if (ith == 0) { /* after the barrier every part is visible */
        long t = 0;
        for (int k = 0; k < nth; k++) t += j->parts[k];
        atomic_store(&j->sum, t);
    }
}

TEST(pool_fork_join_and_barrier) {
    for (int n = 1; n <= 4; n++) {
        hearth_pool *pool = hearth_pool_create(n);
        CHECK(pool != NULL);
        CHECK_EQ(hearth_pool_size(pool), n);
        for (int rep = 0; rep < 200; rep++) {
            job j = {.pool = pool};
            hearth_pool_run(pool, job_fn, &j);
            CHECK_EQ(atomic_load(&j.sum), 4999950000L);
        }
        hearth_pool_destroy(pool);
    }
}

/* ---- UTF-8 ---- */

static size_t dec(const char *s, size_t n, uint32_t *cp) { return hearth_utf8_decode(s, n, cp); }

TEST(utf8_decode_strict) {
    uint32_t cp = 0;
    CHECK_EQ(dec("A", 1, &cp), 1);
    CHECK_EQ(cp, 'A');
    CHECK_EQ(dec("\xC2\x80", 2, &cp), 2); /* smallest 2-byte */
    CHECK_EQ(cp, 0x80);
    CHECK_EQ(dec("\xE2\x82\xAC", 3, &cp), 3); /* euro sign */
    CHECK_EQ(cp, 0x20AC);
    CHECK_EQ(dec("\xEF\xBF\xBF", 3, &cp), 3);
    CHECK_EQ(cp, 0xFFFF);
    CHECK_EQ(dec("\xF0\x90\x80\x80", 4, &cp), 4); /* smallest 4-byte */
    CHECK_EQ(cp, 0x10000);
    CHECK_EQ(dec("\xF4\x8F\xBF\xBF", 4, &cp), 4); /* max code point */
    CHECK_EQ(cp, HEARTH_UTF8_MAX_CP);
    /* overlong forms */
    CHECK_EQ(dec("\xC0\x80", 2, &cp), 0);
    CHECK_EQ(dec("\xC1\xBF", 2, &cp), 0);
    CHECK_EQ(dec("\xE0\x9F\xBF", 3, &cp), 0);
    CHECK_EQ(dec("\xF0\x8F\xBF\xBF", 4, &cp), 0);
    /* surrogates, beyond U+10FFFF, invalid lead bytes, stray continuation, truncation */
    CHECK_EQ(dec("\xED\xA0\x80", 3, &cp), 0);
    CHECK_EQ(dec("\xED\xBF\xBF", 3, &cp), 0);
    CHECK_EQ(dec("\xED\x9F\xBF", 3, &cp), 3);
    CHECK_EQ(cp, 0xD7FF);
    CHECK_EQ(dec("\xF4\x90\x80\x80", 4, &cp), 0);
    CHECK_EQ(dec("\xF5\x80\x80\x80", 4, &cp), 0);
    CHECK_EQ(dec("\xFF", 1, &cp), 0);
    CHECK_EQ(dec("\x80", 1, &cp), 0);
    CHECK_EQ(dec("\xE2\x82", 2, &cp), 0);
    CHECK_EQ(dec("\xE2\x28\xAC", 3, &cp), 0);
    CHECK_EQ(dec("", 0, &cp), 0);
    /* WTF-8 takes surrogates and nothing else more */
    CHECK_EQ(hearth_utf8_decode_wtf8("\xED\xA0\x80", 3, &cp), 3);
    CHECK_EQ(cp, 0xD800);
    CHECK_EQ(hearth_utf8_decode_wtf8("\xC0\x80", 2, &cp), 0);
    CHECK_EQ(hearth_utf8_decode_wtf8("\xF4\x90\x80\x80", 4, &cp), 0);
}

TEST(utf8_encode_round_trip) {
    static const uint32_t cps[] = {0, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFD, 0xFFFF,
                                   0x10000, 0x1F600, HEARTH_UTF8_MAX_CP};
    static const size_t lens[] = {1, 1, 2, 2, 3, 3, 3, 3, 3, 4, 4, 4};
    for (size_t i = 0; i < sizeof cps / sizeof cps[0]; i++) {
        char u[4];
        uint32_t back = 0xFFFFFFFFu;
        size_t k = hearth_utf8_encode(cps[i], u);
        CHECK_EQ(k, lens[i]);
        CHECK_EQ(dec(u, k, &back), k);
        CHECK_EQ(back, cps[i]);
    }
    char u[4];
    CHECK_EQ(hearth_utf8_encode(0xDC00, u), 3); /* a lone surrogate is written as WTF-8 */
    CHECK(memcmp(u, "\xED\xB0\x80", 3) == 0);
}

TEST(utf8_validate_count_tail) {
    size_t bad = 99;
    CHECK(hearth_utf8_valid("a\xC3\xA9z", 4, &bad));
    CHECK(!hearth_utf8_valid("ab\xC3", 3, &bad));
    CHECK_EQ(bad, 2);
    CHECK(!hearth_utf8_valid("x\xED\xA0\x80", 4, &bad));
    CHECK_EQ(bad, 1);
    CHECK(!hearth_utf8_valid("\xF8\x88\x80\x80\x80", 5, NULL));
    bool ascii = true;
    CHECK_EQ(hearth_utf8_count("a\xC3\xA9\xF0\x9F\x98\x80", 7, &ascii), 3);
    CHECK(!ascii);
    CHECK_EQ(hearth_utf8_count("abc", 3, &ascii), 3);
    CHECK(ascii);
    CHECK_EQ(hearth_utf8_count("\xFF\xFE", 2, NULL), 2); /* invalid bytes count one each */
    CHECK_EQ(hearth_utf8_len_lead(0x41), 1);
    CHECK_EQ(hearth_utf8_len_lead(0x80), 1);
    CHECK_EQ(hearth_utf8_len_lead(0xC0), 2);
    CHECK_EQ(hearth_utf8_len_lead(0xE5), 3);
    CHECK_EQ(hearth_utf8_len_lead(0xF8), 4);
    CHECK_EQ(hearth_utf8_incomplete_tail("ab\xE2\x82", 4), 2);
    CHECK_EQ(hearth_utf8_incomplete_tail("ab\xF0", 3), 1);
    CHECK_EQ(hearth_utf8_incomplete_tail("ab\xE2\x82\xAC", 5), 0);
    CHECK_EQ(hearth_utf8_incomplete_tail("ab\xED\xA0", 4), 0); /* a surrogate never completes */
    CHECK_EQ(hearth_utf8_incomplete_tail("ab\xC0", 3), 0);
    CHECK_EQ(hearth_utf8_incomplete_tail("", 0), 0);
}

/* ---- growable buffers ---- */

TEST(buf_append_and_take) {
    hearth_buf b = {0};
    CHECK(hearth_buf_put(&b, NULL, 0));
    CHECK(b.p != NULL);
    CHECK_STR(b.p, "");
    for (int i = 0; i < 1000; i++) CHECK(hearth_buf_putc(&b, (char)('a' + i % 26)));
    CHECK_EQ(b.len, 1000);
    CHECK(b.cap > b.len);
    CHECK_EQ(b.p[1000], 0);
    CHECK_EQ(b.p[999], 'a' + 999 % 26);
    hearth_buf_reset(&b);
    CHECK_EQ(b.len, 0);
    CHECK(hearth_buf_printf(&b, "%d-%s", 42, "x"));
    CHECK(hearth_buf_puts(&b, "\xC3"));
    CHECK(hearth_buf_put_cp(&b, 0x20AC));
    CHECK_STR(b.p, "42-x\xC3\xE2\x82\xAC");
    char *t = hearth_buf_take(&b);
    CHECK_STR(t, "42-x\xC3\xE2\x82\xAC");
    CHECK(b.p == NULL && b.len == 0 && b.cap == 0);
    free(t);
    hearth_buf_fini(&b);
}

TEST(buf_growth_overflow) {
    hearth_buf b = {0};
    CHECK(hearth_buf_puts(&b, "abc"));
    CHECK(!hearth_buf_reserve(&b, SIZE_MAX - 1)); /* len + extra + NUL wraps */
    CHECK(b.oom);
    CHECK(!hearth_buf_puts(&b, "d")); /* sticky */
    CHECK_STR(b.p, "abc");
    hearth_buf_reset(&b);
    CHECK(hearth_buf_puts(&b, "d"));
    CHECK_STR(b.p, "d");
    hearth_buf_fini(&b);

    int   *a = NULL;
    size_t cap = 0;
    CHECK(hearth_buf_grow(&a, &cap, 5, sizeof *a, 4));
    CHECK_EQ(cap, 8);
    for (int i = 0; i < 8; i++) a[i] = i;
    CHECK(hearth_buf_grow(&a, &cap, 8, sizeof *a, 4)); /* already fits */
    CHECK_EQ(cap, 8);
    CHECK(hearth_buf_grow(&a, &cap, 9, sizeof *a, 4));
    CHECK_EQ(cap, 16);
    CHECK_EQ(a[7], 7);
    int *keep = a;
    CHECK(!hearth_buf_grow(&a, &cap, SIZE_MAX / 2, sizeof *a, 4)); /* bytes overflow */
    CHECK(!hearth_buf_grow(&a, &cap, SIZE_MAX, 1, 4));             /* doubling overflow */
    CHECK(a == keep);
    CHECK_EQ(cap, 16);
    free(a);
}

TEST(grow_cap_rule) {
    size_t c = 99;
    CHECK(hearth_grow_cap(0, 1, 8, 0, &c));
    CHECK_EQ(c, 1); /* at least one element */
    CHECK(hearth_grow_cap(0, 5, 8, 4, &c));
    CHECK_EQ(c, 8); /* doubled from first */
    CHECK(hearth_grow_cap(16, 17, 8, 4, &c));
    CHECK_EQ(c, 32); /* doubled from cap */
    CHECK(hearth_grow_cap(16, 100, 8, 4, &c));
    CHECK_EQ(c, 128); /* as often as it takes */
    CHECK(hearth_grow_cap(3, 4, 1, 0, &c));
    CHECK_EQ(c, 6); /* a cap that is no power of two doubles as it is */
    CHECK(hearth_grow_cap(1024, 2050, 24, 1024, &c));
    CHECK_EQ(c, 4096);
    c = 7;
    CHECK(!hearth_grow_cap(0, SIZE_MAX, 1, 1, &c));          /* the count overflows */
    CHECK(!hearth_grow_cap(0, SIZE_MAX / 4 + 2, 4, 1, &c));  /* the bytes overflow */
    CHECK(!hearth_grow_cap(SIZE_MAX / 2 + 1, SIZE_MAX / 2 + 2, 1, 0, &c));
    CHECK_EQ(c, 7); /* left as it was */
    CHECK(hearth_grow_cap(0, (size_t)1 << 40, 1, 1, &c));
    CHECK_EQ(c, (size_t)1 << 40);
}

TEST(arena_grow) {
    hearth_arena a;
    hearth_arena_init(&a, 256);
    int   *v = NULL;
    size_t cap = 0, n = 0;
    for (int i = 0; i < 1000; i++) {
        CHECK(hearth_arena_grow(&a, &v, &cap, n, n + 1, sizeof *v, 4));
        CHECK(cap >= n + 1);
        v[n++] = i * 3;
    }
    CHECK_EQ(cap, 1024);
    for (int i = 0; i < 1000; i++) CHECK_EQ(v[i], i * 3); /* every copy kept the elements */
    int *keep = v;
    CHECK(hearth_arena_grow(&a, &v, &cap, n, 1024, sizeof *v, 4)); /* fits: nothing moves */
    CHECK(v == keep);
    CHECK(hearth_arena_grow(&a, &v, &cap, n, 1025, sizeof *v, 4));
    CHECK_EQ(cap, 2048);
    CHECK(v != keep);
    CHECK_EQ(v[999], 2997);
    CHECK_EQ(v[1500], 0); /* new room is zeroed */
    keep = v;
    CHECK(!hearth_arena_grow(&a, &v, &cap, n, SIZE_MAX / 2, sizeof *v, 4)); /* bytes overflow */
    CHECK(!hearth_arena_grow(&a, &v, &cap, n, SIZE_MAX, 1, 4));             /* doubling overflow */
    CHECK(v == keep);
    CHECK_EQ(cap, 2048);
    char  *s = NULL;
    size_t cs = 0;
    CHECK(hearth_arena_grow(&a, &s, &cs, 0, 3, 1, 16));
    CHECK_EQ(cs, 16);
    CHECK(s != NULL && s[15] == 0);
    hearth_arena_fini(&a);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
