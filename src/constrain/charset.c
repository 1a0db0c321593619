/*
 * charset.c - code point sets and their UTF-8 rules (see charset.h).
 *
 * A range whose ends encode to the same length is cut until, at every continuation position
 * i, either the two ends agree on everything above that position's 6*i low bits or the low
 * end has those bits all 0 and the high end all 1. Then the range is exactly the product of
 * its per-byte spans: byte k runs from the low end's byte k to the high end's byte k. The
 * one-byte ranges of a set share one alternative (one byte set).
 */
#include "constrain/charset.h"

#include <stdlib.h>

#include "base/buf.h"
#include "base/utf8.h"

void hearth_cx_cpset_free(hearth_cx_cpset *s) {
    free(s->r);
    *s = (hearth_cx_cpset){0};
}

bool hearth_cx_cpset_add(hearth_cx_cpset *s, uint32_t lo, uint32_t hi) {
    if (!hearth_buf_grow(&s->r, &s->cap, (size_t)s->n + 1, sizeof *s->r, 8)) return false;
    s->r[s->n][0] = lo;
    s->r[s->n][1] = hi;
    s->n++;
    return true;
}

static int cmp_range(const void *a, const void *b) {
    const uint32_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Sort and merge overlapping or touching ranges. */
static void normalize(hearth_cx_cpset *s) {
    if (s->n < 2) return;
    qsort(s->r, (size_t)s->n, sizeof *s->r, cmp_range);
    int32_t m = 0;
    for (int32_t i = 1; i < s->n; i++) {
        if (s->r[i][0] <= s->r[m][1] + 1) {
            if (s->r[i][1] > s->r[m][1]) s->r[m][1] = s->r[i][1];
        } else {
            m++;
            s->r[m][0] = s->r[i][0];
            s->r[m][1] = s->r[i][1];
        }
    }
    s->n = m + 1;
}

bool hearth_cx_cpset_negate(hearth_cx_cpset *s) {
    normalize(s);
    hearth_cx_cpset t = {0};
    uint32_t next = 0; /* the first code point not yet covered */
    for (int32_t i = 0; i < s->n; i++) {
        if (s->r[i][0] > next && !hearth_cx_cpset_add(&t, next, s->r[i][0] - 1)) goto oom;
        next = s->r[i][1] + 1;
    }
    if (next <= HEARTH_CX_CP_MAX && !hearth_cx_cpset_add(&t, next, HEARTH_CX_CP_MAX)) goto oom;
    hearth_cx_cpset_free(s);
    *s = t;
    return true;
oom:
    hearth_cx_cpset_free(&t);
    return false;
}

/* lo..hi (same encoded length L >= 2) as alternatives of rule r. */
static int emit(hearth_cx_builder *b, int r, uint32_t lo, uint32_t hi, int len) {
    for (int i = 1; i < len; i++) {
        uint32_t m = (1u << (6 * i)) - 1;
        if ((lo & ~m) == (hi & ~m)) continue;
        if (lo & m) return emit(b, r, lo, lo | m, len) || emit(b, r, (lo | m) + 1, hi, len) ? -1 : 0;
        if ((hi & m) != m) return emit(b, r, lo, (hi & ~m) - 1, len) || emit(b, r, hi & ~m, hi, len) ? -1 : 0;
    }
    uint8_t x[4], y[4];
    hearth_utf8_encode(lo, (char *)x);
    hearth_utf8_encode(hi, (char *)y);
    if (hearth_cx_alt(b, r)) return -1;
    for (int k = 0; k < len; k++)
        if (hearth_cx_range(b, r, x[k], y[k])) return -1;
    return 0;
}

int hearth_cx_rule_cpset(hearth_cx_builder *b, const hearth_cx_cpset *set) {
    hearth_cx_cpset s = {0};
    for (int32_t i = 0; i < set->n; i++) {
        uint32_t lo = set->r[i][0], hi = set->r[i][1] > HEARTH_CX_CP_MAX ? HEARTH_CX_CP_MAX : set->r[i][1];
        /* without the surrogates */
        if (lo <= hi && lo < 0xD800 && !hearth_cx_cpset_add(&s, lo, hi < 0xD7FF ? hi : 0xD7FF)) goto oom;
        if (lo <= hi && hi > 0xDFFF && !hearth_cx_cpset_add(&s, lo > 0xE000 ? lo : 0xE000, hi)) goto oom;
    }
    normalize(&s);
    if (!s.n) {
        hearth_cx_cpset_free(&s);
        return hearth_cx_fail(b, HEARTH_E_INVALID, "a character class that matches no character");
    }
    int r = hearth_cx_rule(b);
    uint8_t ascii[32] = {0};
    bool any_ascii = false;
    static const uint32_t bounds[] = {0x7F, 0x7FF, 0xFFFF, HEARTH_CX_CP_MAX};
    for (int32_t i = 0; i < s.n && r >= 0; i++) {
        uint32_t lo = s.r[i][0], hi = s.r[i][1];
        for (int len = 1; len <= 4 && lo <= hi; len++) {
            if (lo > bounds[len - 1]) continue;
            uint32_t top = hi < bounds[len - 1] ? hi : bounds[len - 1];
            if (len == 1) {
                for (uint32_t c = lo; c <= top; c++) ascii[c >> 3] |= (uint8_t)(1u << (c & 7));
                any_ascii = true;
            } else if (emit(b, r, lo, top, len)) {
                r = -1;
                break;
            }
            lo = top + 1;
        }
    }
    if (r >= 0 && any_ascii && (hearth_cx_alt(b, r) || hearth_cx_set(b, r, ascii))) r = -1;
    hearth_cx_cpset_free(&s);
    return r;
oom:
    hearth_cx_cpset_free(&s);
    return hearth_cx_fail(b, HEARTH_E_NOMEM, "out of memory building a grammar");
}
