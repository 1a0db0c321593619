/* test_base.c - arena, reader, size arithmetic, status, log sink, thread pool. */
#include "base/arena.h"
#include "base/log.h"
#include "base/rd.h"
#include "base/size.h"
#include "base/status.h"
#include "base/thread.h"
#include "test.h"

#include <stdatomic.h>
#include <stdint.h>

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

int main(int argc, char **argv) { return test_main(argc, argv); }
