/* test_cand_sort.c - the candidates' radix sort (engine/cand_sort.h) gives the comparison sort's
 * order exactly: probabilities descending, ties by the lower id, over rows with many ties, zeros,
 * tiny and subnormal values, at lengths around the switch between the two sorts. */
#include "engine/cand_sort.h"
#include "test.h"

#include <stdlib.h>

static uint64_t rs = 12345;
static uint32_t rnd(void) {
    rs = rs * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rs >> 33);
}

TEST(radix_order_is_the_comparison_order) {
    const int32_t lens[] = {1, 7, 511, 512, 513, 5000, 151936};
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
        int32_t n = lens[li];
        for (int kind = 0; kind < 4; kind++) {
            hearth_cand *a = malloc(sizeof *a * (size_t)n), *b = malloc(sizeof *b * (size_t)n),
                        *tmp = malloc(sizeof *tmp * (size_t)n);
            for (int32_t i = 0; i < n; i++) {
                float p = (float)rnd() / 4294967296.0f;
                if (kind == 1) p = (float)(rnd() % 8) / 8.0f;        /* few values: ties, zeros */
                if (kind == 2) p = p * 1e-40f;                        /* subnormals */
                if (kind == 3) p = (rnd() % 3) ? 1.0f / (float)n : 0; /* a flat row */
                a[i] = b[i] = (hearth_cand){i, p};
            }
            hearth_cand_sort_desc(a, tmp, n);
            qsort(b, (size_t)n, sizeof *b, hearth_cand_cmp_desc);
            int bad = 0;
            for (int32_t i = 0; i < n; i++) bad += a[i].id != b[i].id || a[i].p != b[i].p;
            if (bad) fprintf(stderr, "  n %d kind %d: %d entries out of place\n", n, kind, bad);
            CHECK_EQ(bad, 0);
            free(a);
            free(b);
            free(tmp);
        }
    }
}

int main(int argc, char **argv) { return test_main(argc, argv); }
