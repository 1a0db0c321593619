/*
 * bench_tokjson.c - tokenizer.json tokenizers: load time and encode / decode throughput, one
 * thread. bench/bench_tokjson.py runs it next to Hugging Face tokenizers on the same corpus
 * and prints the ratio.
 *
 * Not built by CMake. From the repo root, against a built hearth_core:
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Isrc bench/bench_tokjson.c build/libhearth_core.a \
 *      -lpcre2-8 -lcjson -lutf8proc -lpthread -lm -o build/bench_tokjson
 *   build/bench_tokjson TOKENIZER.json [TEXT]   (TEXT defaults to tests/golden/tokjson/corpus.txt)
 *
 * Reports, as one JSON object per line (so that a script can read it) and readable text:
 *   load     hearth_tok_from_json of the file (min and median of 5),
 *   lines    encode of every line of TEXT on its own, add_special and parse_special on (the
 *            chat-message shape: tokenizers' Tokenizer.encode(line) per line),
 *   whole    encode of TEXT as one string,
 *   decode   hearth_tok_decode of the whole-text ids,
 * as MB/s of TEXT bytes (for decode too: its output may hold NULs, and strlen would lie), the median of repeated passes of at least ~0.3 s.
 * The ids' checksum (FNV-1a over int32 values) is printed with each line: it changes only when
 * the tokenization does. Measurements, never assertions.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tokenizer/tokenizer.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)len + 1);
    if (b && fread(b, 1, (size_t)len, f) != (size_t)len) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) b[len] = 0;
    *n = (size_t)len;
    return b;
}

/* One pass: encode every line (lines = 1) or the whole text; returns the ids checksum. */
static uint64_t encode_pass(const hearth_tok *tok, const char *text, size_t n, int lines,
                            size_t *n_tokens) {
    uint64_t h = 0xcbf29ce484222325ull;
    *n_tokens = 0;
    for (size_t s = 0; s < n;) {
        size_t e = n;
        if (lines) {
            const char *nl = memchr(text + s, '\n', n - s);
            e = nl ? (size_t)(nl - text) : n;
        }
        int32_t *ids;
        size_t k;
        if (hearth_tok_encode(tok, text + s, e - s, true, true, &ids, &k) != HEARTH_OK) {
            fprintf(stderr, "bench_tokjson: encode failed\n");
            exit(1);
        }
        for (size_t i = 0; i < k; i++) h = (h ^ (uint32_t)ids[i]) * 0x100000001b3ull;
        *n_tokens += k;
        free(ids);
        s = e + 1;
    }
    return h;
}

/* Median MB/s over passes of fn until >= 0.3 s and >= 3 passes. */
#define MAX_PASSES 64
static double measure(const hearth_tok *tok, const char *text, size_t n, int lines, uint64_t *sum,
                      size_t *n_tokens) {
    double mbs[MAX_PASSES], spent = 0;
    int k = 0;
    while (k < MAX_PASSES && (k < 3 || spent < 0.3)) {
        double t0 = now_s();
        *sum = encode_pass(tok, text, n, lines, n_tokens);
        double dt = now_s() - t0;
        spent += dt;
        mbs[k++] = (double)n / 1e6 / dt;
    }
    qsort(mbs, (size_t)k, sizeof *mbs, cmp_d);
    return mbs[k / 2];
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s TOKENIZER.json [TEXT]\n", argv[0]);
        return 2;
    }
    const char *text_path = argc > 2 ? argv[2] : "tests/golden/tokjson/corpus.txt";
    size_t n_json, n;
    char *json = read_file(argv[1], &n_json), *text = read_file(text_path, &n);
    if (!json || !text) {
        fprintf(stderr, "bench_tokjson: cannot read %s or %s\n", argv[1], text_path);
        return 1;
    }
    hearth_tok *tok = NULL;
    hearth_err e;
    double loads[5];
    for (int i = 0; i < 5; i++) {
        hearth_tok_destroy(tok);
        double t0 = now_s();
        if (hearth_tok_from_json(json, n_json, &tok, &e) != HEARTH_OK) {
            fprintf(stderr, "bench_tokjson: %s\n", e.msg);
            return 1;
        }
        loads[i] = (now_s() - t0) * 1e3;
    }
    qsort(loads, 5, sizeof *loads, cmp_d);
    uint64_t sum_lines, sum_whole;
    size_t tok_lines, tok_whole;
    double lines_mbs = measure(tok, text, n, 1, &sum_lines, &tok_lines);
    double whole_mbs = measure(tok, text, n, 0, &sum_whole, &tok_whole);

    int32_t *ids;
    size_t k;
    hearth_tok_encode(tok, text, n, true, true, &ids, &k);
    double dec[MAX_PASSES], spent = 0;
    int nd = 0;
    size_t out_bytes = 0;
    while (nd < MAX_PASSES && (nd < 3 || spent < 0.3)) {
        double t0 = now_s();
        char *d = hearth_tok_decode(tok, ids, k, true);
        double dt = now_s() - t0;
        out_bytes = d ? n : 0;
        free(d);
        spent += dt;
        dec[nd++] = (double)out_bytes / 1e6 / dt;
    }
    qsort(dec, (size_t)nd, sizeof *dec, cmp_d);
    free(ids);

    printf("hearth %s: %zu bytes, load %.1f ms (median %.1f)\n", argv[1], n, loads[0], loads[2]);
    printf("  lines  %8.2f MB/s  %zu tokens  ids %016llx\n", lines_mbs, tok_lines,
           (unsigned long long)sum_lines);
    printf("  whole  %8.2f MB/s  %zu tokens  ids %016llx\n", whole_mbs, tok_whole,
           (unsigned long long)sum_whole);
    printf("  decode %8.2f MB/s\n", dec[nd / 2]);
    printf("{\"bytes\": %zu, \"load_ms\": %.2f, \"lines_mbs\": %.3f, \"whole_mbs\": %.3f, "
           "\"decode_mbs\": %.3f, \"lines_tokens\": %zu, \"whole_tokens\": %zu}\n",
           n, loads[0], lines_mbs, whole_mbs, dec[nd / 2], tok_lines, tok_whole);
    hearth_tok_destroy(tok);
    free(json);
    free(text);
    return 0;
}
