/*
 * test.h - the C test framework (Redis testhelp.h in spirit).
 *
 *   TEST(name) { CHECK(x); CHECK_EQ(a, b); CHECK_NEAR(a, b, tol); }
 *   int main(int argc, char **argv) { return test_main(argc, argv); }
 *
 * TEST registers the function through a constructor. A test passes when none of its checks
 * fail; a failed check prints file:line and the values, and the test goes on. `--filter S`
 * runs tests whose name contains S. The last line is "N passed, N failed" (tests, not checks).
 * TEST_SKIP(reason) ends a test as skipped (counted on the line as ", N skipped").
 */
#pragma once
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*test_fn)(void);
typedef struct { const char *name; test_fn fn; } test_case;

static test_case test_cases[512];
static int test_n_cases, test_cur_failed, test_cur_skipped;

#define TEST(tname)                                                                \
    static void test_##tname(void);                                                \
    __attribute__((constructor)) static void test_reg_##tname(void) {              \
        test_cases[test_n_cases].name = #tname;                                    \
        test_cases[test_n_cases++].fn = test_##tname;                              \
    }                                                                              \
    static void test_##tname(void)

#define CHECK(c) do { if (!(c)) { test_cur_failed++;                               \
    fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c); } } while (0)
#define CHECK_EQ(a, b) do { long long va_ = (long long)(a), vb_ = (long long)(b);   \
    if (va_ != vb_) { test_cur_failed++; fprintf(stderr,                            \
    "  %s:%d: %s == %s failed: %lld != %lld\n", __FILE__, __LINE__, #a, #b, va_, vb_); } } while (0)
#define CHECK_NEAR(a, b, tol) do { double va_ = (double)(a), vb_ = (double)(b);     \
    if (!(fabs(va_ - vb_) <= (double)(tol))) { test_cur_failed++; fprintf(stderr,   \
    "  %s:%d: |%s - %s| <= %g failed: %.9g vs %.9g\n", __FILE__, __LINE__, #a, #b,  \
    (double)(tol), va_, vb_); } } while (0)
#define CHECK_STR(a, b) do { const char *sa_ = (a), *sb_ = (b);                      \
    if (!sa_ || !sb_ || strcmp(sa_, sb_)) { test_cur_failed++; fprintf(stderr,       \
    "  %s:%d: %s == %s failed: \"%s\" != \"%s\"\n", __FILE__, __LINE__, #a, #b,       \
    sa_ ? sa_ : "(null)", sb_ ? sb_ : "(null)"); } } while (0)
#define TEST_SKIP(why) do { test_cur_skipped = 1;                                   \
    fprintf(stderr, "  skipped: %s\n", why); return; } while (0)

static inline int test_main(int argc, char **argv) {
    const char *filter = NULL;
    for (int i = 1; i + 1 < argc; i++) if (!strcmp(argv[i], "--filter")) filter = argv[i + 1];
    int passed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < test_n_cases; i++) {
        if (filter && !strstr(test_cases[i].name, filter)) continue;
        test_cur_failed = test_cur_skipped = 0;
        fprintf(stderr, "[ RUN  ] %s\n", test_cases[i].name);
        test_cases[i].fn();
        if (test_cur_skipped && !test_cur_failed) { skipped++; continue; }
        if (test_cur_failed) failed++; else passed++;
        fprintf(stderr, "[ %s ] %s\n", test_cur_failed ? "FAIL" : " OK ", test_cases[i].name);
    }
    if (skipped) printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    else printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
