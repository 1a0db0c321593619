/*
 * bench_tokenizer.c - tokenizer build time and encode / decode throughput, one thread.
 *
 * Not built by CMake. From the repo root, against a built hearth_core:
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Isrc bench/bench_tokenizer.c build/libhearth_core.a \
 *      -lpcre2-8 -lpthread -lm -o build/bench_tokenizer
 *   build/bench_tokenizer MODEL.gguf [TEXT]     (TEXT defaults to tests/golden/tok/corpus.txt)
 *
 * Reports, for one model:
 *   load     hearth_tok_from_gguf on an already open GGUF (the vocab build, median and min of 5),
 *   whole    encode of TEXT as one string (parse_special on, no BOS),
 *   lines    encode of every line of TEXT separately (the chat-message shape),
 *   decode   hearth_tok_decode of the whole-text ids,
 * as MB/s of input (or output) bytes, the median of repeated runs of at least ~0.3 s. A
 * checksum of the ids is printed with each line (SQLite speedtest1 --verify style): it must not
 * change between commits unless the tokenization did. Measurements, never assertions.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/gguf.h"
#include "model/tok_gguf.h"
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

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2];
}

static uint64_t mix(uint64_t h, const int32_t *ids, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ (uint32_t)ids[i]) * 0x100000001b3ull;
    return h;
}

/* encode every line (lines == 1) or the whole text once; returns ids checksum */
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
        if (hearth_tok_encode(tok, text + s, e - s, false, true, &ids, &k)) {
            fprintf(stderr, "encode failed\n");
            exit(1);
        }
        h = mix(h, ids, k);
        *n_tokens += k;
        free(ids);
        s = e + 1;
    }
    return h;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [TEXT]\n", argv[0]);
        return 2;
    }
    const char *text_path = argc > 2 ? argv[2] : "tests/golden/tok/corpus.txt";
    FILE *f = fopen(text_path, "rb");
    if (!f) {
        perror(text_path);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    size_t n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc(n + 1);
    if (!text || fread(text, 1, n, f) != n) return 1;
    fclose(f);

    hearth_gguf *g;
    hearth_err err;
    if (hearth_gguf_open(argv[1], &g, &err)) {
        fprintf(stderr, "%s: %s\n", argv[1], err.msg);
        return 1;
    }
    hearth_tok *tok = NULL;
    double t_load[5];
    for (int r = 0; r < 5; r++) {
        hearth_tok_destroy(tok);
        double t0 = now_s();
        if (hearth_tok_from_gguf(g, &tok, &err)) {
            fprintf(stderr, "tokenizer: %s\n", err.msg);
            return 1;
        }
        t_load[r] = now_s() - t0;
    }
    printf("model %s: n_vocab %d, text %zu bytes\n", argv[1], hearth_tok_n_vocab(tok), n);
    double t_min = t_load[0];
    for (int r = 1; r < 5; r++) t_min = t_load[r] < t_min ? t_load[r] : t_min;
    printf("load     %8.1f ms  (min %.1f ms)\n", median(t_load, 5) * 1e3, t_min * 1e3);

    for (int lines = 0; lines < 2; lines++) {
        double t[64];
        int runs = 0;
        size_t n_tok = 0;
        uint64_t h = 0;
        for (double start = now_s(); runs < 64 && (runs < 3 || now_s() - start < 0.3); runs++) {
            double t0 = now_s();
            h = encode_pass(tok, text, n, lines, &n_tok);
            t[runs] = now_s() - t0;
        }
        double s = median(t, runs);
        printf("%-8s %8.2f MB/s  %9.0f tokens/s  (%zu tokens, checksum %016llx)\n",
               lines ? "lines" : "whole", (double)n / s / 1e6, (double)n_tok / s, n_tok,
               (unsigned long long)h);
    }

    int32_t *ids;
    size_t k;
    hearth_tok_encode(tok, text, n, false, true, &ids, &k);
    double t[64];
    int runs = 0;
    size_t out_n = 0;
    for (double start = now_s(); runs < 64 && (runs < 3 || now_s() - start < 0.3); runs++) {
        double t0 = now_s();
        char *d = hearth_tok_decode(tok, ids, k, true);
        out_n = strlen(d);
        free(d);
        t[runs] = now_s() - t0;
    }
    printf("decode   %8.2f MB/s  (%zu bytes%s)\n", (double)out_n / median(t, runs) / 1e6, out_n,
           out_n == n ? ", same length as the input" : "");
    free(ids);
    hearth_tok_destroy(tok);
    hearth_gguf_close(g);
    free(text);
    return 0;
}
