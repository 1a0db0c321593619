/* marks.c - marker search over streamed text (see marks.h). */
#include "server/marks.h"

#include <string.h>

int hearth_marks_find(const char *s, size_t n, const char *const *marks, int n_marks, size_t *at, size_t *hold) {
    int best = -1;
    size_t best_at = 0, best_len = 0;
    *hold = 0;
    for (int i = 0; i < n_marks; i++) {
        if (!marks[i] || !*marks[i]) continue;
        size_t len = strlen(marks[i]);
        const char *hit = memmem(s, n, marks[i], len);
        if (!hit) continue;
        size_t off = (size_t)(hit - s);
        if (best < 0 || off < best_at || (off == best_at && len > best_len)) {
            best = i;
            best_at = off;
            best_len = len;
        }
    }
    if (best >= 0) {
        *at = best_at;
        return best;
    }
    for (int i = 0; i < n_marks; i++) {
        if (!marks[i] || !*marks[i]) continue;
        size_t len = strlen(marks[i]);
        for (size_t k = len - 1 < n ? len - 1 : n; k > *hold; k--)
            if (memcmp(s + n - k, marks[i], k) == 0) {
                *hold = k;
                break;
            }
    }
    return -1;
}
