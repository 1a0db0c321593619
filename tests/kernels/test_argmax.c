/*
 * test_argmax.c - hearth_kernels_argmax in every set against hearth_argmax_ref: random logits
 * of lengths 1..200 and a 262,144-entry vocabulary, ties (the earliest index wins), NaNs at the
 * front, middle and end, all -inf, and the maximum in the scalar tail.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "kernels/kernels.h"
#include "kernels/ref/argmax_ref.h"
#include "test.h"

static uint64_t rng = 0xda942042e4dd58b5ull;
static float rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)(rng >> 40) / (float)(1 << 24) * 20.0f - 10.0f;
}

static int mismatches(const float *x, int64_t n) {
    int bad = 0;
    const hearth_isa active = hearth_kernels_isa();
    for (int isa = 0; isa < HEARTH_ISA_COUNT; isa++) {
        if (!hearth_kernels_select((hearth_isa)isa)) continue;
        int64_t want = hearth_argmax_ref(x, n), got = hearth_kernels_argmax(x, n);
        if (want != got) {
            fprintf(stderr, "  %s n=%lld: %lld != %lld\n", hearth_isa_name((hearth_isa)isa), (long long)n,
                    (long long)got, (long long)want);
            bad++;
        }
    }
    hearth_kernels_select(active);
    return bad;
}

TEST(argmax_matches_reference) {
    enum { BIG = 262144 };
    float *x = malloc(BIG * sizeof(float));
    for (int64_t n = 1; n <= 200; n++) {
        for (int64_t i = 0; i < n; i++) x[i] = rnd();
        CHECK_EQ(mismatches(x, n), 0);
        x[n / 2] = 50.0f, x[n - 1] = 50.0f; /* a tie: the earlier wins */
        CHECK_EQ(mismatches(x, n), 0);
        x[n - 1] = NAN;
        CHECK_EQ(mismatches(x, n), 0);
        x[0] = NAN;
        CHECK_EQ(mismatches(x, n), 0);
        for (int64_t i = 0; i < n; i++) x[i] = -INFINITY;
        CHECK_EQ(mismatches(x, n), 0);
    }
    for (int64_t i = 0; i < BIG; i++) x[i] = rnd();
    CHECK_EQ(mismatches(x, BIG), 0);
    x[BIG - 3] = 99.0f; /* in the last vector */
    x[77777] = NAN;
    CHECK_EQ(mismatches(x, BIG), 0);
    CHECK_EQ(hearth_argmax_ref(x, BIG), BIG - 3);
    free(x);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
