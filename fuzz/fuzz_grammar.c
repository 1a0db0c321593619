/*
 * fuzz_grammar.c - libFuzzer entry point for the regex and GBNF compilers (constrain/regex.h,
 * constrain/gbnf.h) and the matcher that runs what they build.
 *
 * The first byte of an input picks the compiler (even: regex, odd: GBNF); the rest is the
 * pattern or grammar. A refusal must leave the builder failed with a message; a success must
 * build (or be refused by the build with a message), and then a walk through the grammar (the
 * lowest allowed byte at each step, for at most 256 bytes) must only feed bytes that fit, and
 * stop only where the grammar can end or nothing fits.
 *
 * Built by CMake (fuzz/fuzz.cmake) like the other targets: replayed over fuzz/corpus/grammar
 * by the test fuzz_grammar_replay in every build, run with libFuzzer by `make fuzz`.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "constrain/gbnf.h"
#include "constrain/matcher.h"
#include "constrain/regex.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PROMISE(x)                                                                   \
    do {                                                                             \
        if (!(x)) {                                                                  \
            fprintf(stderr, "fuzz_grammar: broken promise: %s (line %d)\n", #x, __LINE__); \
            abort();                                                                 \
        }                                                                            \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > 8192) return 0;
    bool gbnf = data[0] & 1;
    const char *text = (const char *)data + 1;
    hearth_cx_builder *b = hearth_cx_builder_create(hearth_cx_limits_default());
    PROMISE(b != NULL);
    int root = gbnf ? hearth_cx_gbnf(b, text, size - 1) : hearth_cx_regex(b, text, size - 1);
    const char *msg = NULL;
    hearth_status st = hearth_cx_builder_status(b, &msg);
    if (root < 0) {
        PROMISE(st != HEARTH_OK && msg && msg[0]);
        hearth_cx_builder_destroy(b);
        return 0;
    }
    PROMISE(st == HEARTH_OK);
    hearth_err err = {0};
    hearth_cx_grammar *g = hearth_cx_build(b, root, &err);
    hearth_cx_builder_destroy(b);
    if (!g) {
        PROMISE(err.code != HEARTH_OK && err.msg[0]);
        return 0;
    }
    hearth_cx_matcher *m = hearth_cx_matcher_create(g, NULL);
    PROMISE(m != NULL);
    for (int step = 0; step < 256 && !hearth_cx_matcher_done(m); step++) {
        int c = 0;
        while (c < 256 && !hearth_cx_matcher_fits(m, &(char){(char)c}, 1)) c++;
        if (c == 256) {
            /* nothing fits: the grammar must be complete here (or the path was dropped) */
            PROMISE(hearth_cx_matcher_can_end(m) || hearth_cx_matcher_n_dropped(m) > 0);
            break;
        }
        PROMISE(hearth_cx_matcher_feed(m, &(char){(char)c}, 1));
    }
    hearth_cx_matcher_destroy(m);
    return 0;
}
