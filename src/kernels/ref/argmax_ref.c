/* argmax_ref.c - the index of the largest of n floats; see argmax_ref.h. */
#include "kernels/ref/argmax_ref.h"

int64_t hearth_argmax_ref(const float *x, int64_t n) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}
