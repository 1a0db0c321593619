/*
 * cx_walk.h - random walks through a grammar for the structured-output tests: bytes drawn
 * among those a matcher allows until it can end. Header-only, test code.
 */
#pragma once
#include <stdint.h>
#include <string.h>

#include "constrain/matcher.h"

static uint64_t cx_walk_rng = 0x853c49e6748fea9bull;

static inline uint32_t cx_walk_rnd(void) {
    cx_walk_rng = cx_walk_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(cx_walk_rng >> 33);
}

/* Feed m random allowed bytes into out (NUL-terminated) until it can end (and then stop with
 * chance 1 in stop_one_in, always when nothing may follow). Bytes of prefer (closing brackets,
 * quotes) are taken half the time when allowed, so walks end. Returns the length, 0 when the
 * walk ran past cap or died. */
static inline size_t cx_walk(hearth_cx_matcher *m, char *out, size_t cap, const char *prefer, uint32_t stop_one_in) {
    size_t n = 0;
    while (n + 1 < cap) {
        if (hearth_cx_matcher_can_end(m) && (hearth_cx_matcher_done(m) || cx_walk_rnd() % stop_one_in == 0)) {
            out[n] = 0;
            return n;
        }
        char ok[256], pref[16];
        int n_ok = 0, n_pref = 0;
        for (int c = 0; c < 256; c++) {
            char ch = (char)c;
            if (!hearth_cx_matcher_fits(m, &ch, 1)) continue;
            ok[n_ok++] = ch;
            if (c && strchr(prefer, c) && n_pref < 16) pref[n_pref++] = ch;
        }
        if (!n_ok) return 0;
        char ch = n_pref && cx_walk_rnd() % 2 ? pref[cx_walk_rnd() % (uint32_t)n_pref] : ok[cx_walk_rnd() % (uint32_t)n_ok];
        if (!hearth_cx_matcher_feed(m, &ch, 1)) return 0;
        out[n++] = ch;
    }
    return 0;
}
