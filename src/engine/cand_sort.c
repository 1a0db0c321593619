/* cand_sort.c - the candidates' linear-time sort of cand_sort.h. */
#include "engine/cand_sort.h"

#include <stdlib.h>
#include <string.h>

int hearth_cand_cmp_desc(const void *a, const void *b) {
    const hearth_cand *x = a, *y = b;
    if (x->p != y->p) return x->p < y->p ? 1 : -1;
    return (x->id > y->id) - (x->id < y->id);
}

static uint32_t key(float p) {
    uint32_t u;
    memcpy(&u, &p, sizeof u);
    return ~u; /* p >= 0: larger p, larger bits; complemented: ascending = descending p */
}

void hearth_cand_sort_desc(hearth_cand *c, hearth_cand *tmp, int32_t n) {
    if (n < 512) {
        qsort(c, (size_t)n, sizeof *c, hearth_cand_cmp_desc);
        return;
    }
    enum { BITS = 11, BUCKETS = 1 << BITS };
    static _Thread_local uint32_t count[BUCKETS];
    hearth_cand *src = c, *dst = tmp;
    for (int shift = 0; shift < 32; shift += BITS) {
        memset(count, 0, sizeof count);
        for (int32_t i = 0; i < n; i++) count[(key(src[i].p) >> shift) & (BUCKETS - 1)]++;
        uint32_t sum = 0;
        for (int b = 0; b < BUCKETS; b++) {
            uint32_t k = count[b];
            count[b] = sum;
            sum += k;
        }
        for (int32_t i = 0; i < n; i++) dst[count[(key(src[i].p) >> shift) & (BUCKETS - 1)]++] = src[i];
        hearth_cand *t = src;
        src = dst;
        dst = t;
    }
    if (src != c) memcpy(c, src, (size_t)n * sizeof *c); /* 3 passes: the result is in tmp */
}
