/*
 * golden_json.h - read the few fields the model tests need from the golden JSON files that the
 * tools/ scripts write (json.dump with indent): integer arrays by key, in file order. Not a
 * JSON parser: it finds `"key": [` and reads integers up to the closing bracket, which is all
 * those files contain under these keys. Header-only, test code.
 */
#pragma once
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Read a whole file into a malloc'ed NUL-terminated buffer; NULL when it cannot be read. */
static inline char *golden_slurp(const char *path, size_t *n_out) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) buf[n] = 0;
    if (buf && n_out) *n_out = (size_t)n;
    return buf;
}

/* The idx-th (0-based) integer array stored under key; malloc'ed, count in *n. NULL if absent. */
static inline int32_t *golden_int_array(const char *json, const char *key, int idx, int *n) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": [", key);
    const char *p = json;
    for (int i = 0; p && i <= idx; i++) {
        p = strstr(p, pat);
        if (p && i < idx) p += strlen(pat);
    }
    if (!p) return NULL;
    p += strlen(pat);
    int cap = 64, cnt = 0;
    int32_t *a = malloc((size_t)cap * sizeof *a);
    while (a) {
        while (*p == ' ' || *p == '\n' || *p == ',' || *p == '\r' || *p == '\t') p++;
        if (*p == ']' || !*p) break;
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) break;
        if (cnt == cap) {
            int32_t *b = realloc(a, (size_t)(cap *= 2) * sizeof *a);
            if (!b) { free(a); return NULL; }
            a = b;
        }
        a[cnt++] = (int32_t)v;
        p = end;
    }
    *n = cnt;
    return a;
}

/* Count of arrays stored under key. */
static inline int golden_count(const char *json, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": [", key);
    int c = 0;
    for (const char *p = strstr(json, pat); p; p = strstr(p + 1, pat)) c++;
    return c;
}
