/*
 * bench_constrain.c - what structured outputs cost on a real vocabulary: building the matcher's
 * vocabulary, compiling a schema, one token check and one full mask in four states of a JSON
 * document (its start, inside a string, after a key, inside an array). Prints one line per
 * figure; `make bench-constrain` runs it on the starter models. Not a test: numbers only.
 */
#include "constrain/matcher.h"
#include "constrain/schema.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static const char SCHEMA[] = "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}, \"age\": "
                             "{\"type\": \"integer\"}, \"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}},"
                             " \"required\": [\"name\", \"age\", \"tags\"]}";

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_constrain MODEL.gguf\n");
        return 2;
    }
    hearth_model *m = NULL;
    hearth_err err = {0};
    if (hearth_model_load(argv[1], &m, &err)) {
        fprintf(stderr, "%s: %s\n", argv[1], err.msg);
        return 1;
    }
    const hearth_tok *tok = hearth_model_tok(m);
    int32_t n = hearth_tok_n_vocab(tok);
    hearth_span *pieces = calloc((size_t)n, sizeof *pieces);
    bool *eog = calloc((size_t)n, sizeof *eog), *ok = malloc((size_t)n);
    for (int32_t i = 0; i < n; i++) {
        pieces[i] = hearth_tok_is_control(tok, i) ? (hearth_span){"", 0} : hearth_tok_piece(tok, i, false);
        eog[i] = hearth_tok_is_eog(tok, i);
    }
    double t0 = now_ms();
    hearth_cx_vocab *v = hearth_cx_vocab_create(n, pieces, eog);
    printf("%s: vocabulary of %d tokens built in %.1f ms\n", hearth_model_name(m), n, now_ms() - t0);
    cJSON *doc = cJSON_Parse(SCHEMA);
    t0 = now_ms();
    hearth_cx_builder *b = hearth_cx_builder_create(hearth_cx_limits_default());
    hearth_cx_json j;
    hearth_cx_json_init(&j, b, doc);
    int root = hearth_cx_json_value(&j, doc);
    hearth_cx_grammar *g = hearth_cx_build(b, root, &err);
    hearth_cx_builder_destroy(b);
    printf("schema compiled in %.3f ms: %d grammar states\n", now_ms() - t0, hearth_cx_grammar_n_items(g));
    hearth_cx_matcher *mt = hearth_cx_matcher_create(g, v);
    static const char *const states[] = {"", "{\"name\": \"", "{\"name\": \"Tom\", \"age\": ",
                                         "{\"name\": \"Tom\", \"age\": 3, \"tags\": [\"a\", "};
    size_t fed = 0;
    for (size_t s = 0; s < sizeof states / sizeof states[0]; s++) {
        hearth_cx_matcher_feed(mt, states[s] + fed, strlen(states[s]) - fed);
        fed = strlen(states[s]);
        enum { CHECKS = 200000, MASKS = 5 };
        int allowed = 0;
        t0 = now_ms();
        for (int r = 0; r < CHECKS; r++)
            allowed += hearth_cx_matcher_allows(mt, (int32_t)(((int64_t)r * 7919) % n));
        double check_us = (now_ms() - t0) / CHECKS * 1e3;
        t0 = now_ms();
        int32_t n_ok = 0;
        for (int r = 0; r < MASKS; r++) n_ok = hearth_cx_matcher_allowed(mt, ok);
        printf("after %-46s check %.2f us, mask %.2f ms (%d of %d allowed)\n", states[s][0] ? states[s] : "(start)",
               check_us, (now_ms() - t0) / MASKS, n_ok, n);
        (void)allowed;
    }
    hearth_cx_matcher_destroy(mt);
    hearth_cx_vocab_destroy(v);
    cJSON_Delete(doc);
    free(pieces);
    free(eog);
    free(ok);
    hearth_model_destroy(m);
    return 0;
}
