/*
 * fuzz_gguf.c - libFuzzer entry point for the GGUF reader (model/gguf.h).
 *
 * Each input goes to hearth_gguf_open_mem. When it opens, every key, value, array element and
 * tensor is read back through the public API and the reader's promises are checked: borrowed
 * pointers lie inside the input, lookups by name find the record they were listed at, tensor
 * bytes lie inside the data section, getters agree with the generic view. A broken promise
 * aborts, so logic bugs show up as crashes next to what ASan and UBSan find. When the open
 * fails, the error record must carry the same status, a message and a position inside the input.
 *
 * Built by CMake (fuzz/fuzz.cmake): in every build with a replay main() (fuzz/replay.c), and
 * the test fuzz_gguf_replay runs fuzz/corpus/gguf through it (sanitized in build-asan/);
 * `make fuzz` builds it with libFuzzer in build-fuzz/ (clang-14) and runs it for FUZZ_SECONDS
 * (scripts/fuzz.sh). A longer run of this target alone, once build-fuzz/ is built:
 *
 *   scripts/fuzz.sh build-fuzz 180 gguf      or, with libFuzzer's own flags:
 *   ./build-fuzz/fuzz_gguf -dict=fuzz/gguf.dict -max_len=8192 -max_total_time=180 \
 *       build-fuzz/corpus-gguf fuzz/corpus/gguf
 *
 * New inputs go to the first directory (scratch, not committed); fuzz/corpus/gguf holds the
 * committed seeds, made by tools/make_gguf_corpus.py. A crasher is fixed in the reader and then
 * copied into fuzz/corpus/gguf as crash_<what>.gguf, where the fuzz_corpus_replay test of
 * tests/unit/test_gguf.c runs it on every test run. `./build/fuzz_gguf FILE...` replays
 * single files.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/status.h"
#include "model/gguf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t *in_base; /* the current input, for inside() */
static size_t         in_size;
static volatile uint64_t sink; /* keeps the reads from being optimized away */

/* A promise of gguf.h is broken: say which and abort, so libFuzzer saves the input. */
#define PROMISE(c)                                                                   \
    do {                                                                             \
        if (!(c)) {                                                                  \
            fprintf(stderr, "fuzz_gguf: %s:%d: broken promise: %s\n", __FILE__, __LINE__, #c); \
            abort();                                                                 \
        }                                                                            \
    } while (0)

/* [p, p + n) lies inside the input. */
static int inside(const void *p, size_t n) {
    const uint8_t *b = p;
    return b >= in_base && (size_t)(b - in_base) <= in_size && n <= in_size - (size_t)(b - in_base);
}

/* Sum every byte of [p, p + n): ASan reports a read outside the input buffer. */
static uint64_t touch(const void *p, size_t n) {
    const uint8_t *b = p;
    uint64_t h = 0;
    for (size_t i = 0; i < n; i++) h = h * 31 + b[i];
    return h;
}

static size_t elem_size(hearth_gguf_type t) {
    static const uint8_t sz[HEARTH_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return (unsigned)t < HEARTH_GGUF_TYPE_COUNT ? sz[t] : 0;
}

static uint64_t walk_kv(const hearth_gguf *g, int64_t i) {
    const char *key = hearth_gguf_key(g, i);
    PROMISE(key != NULL && key[0] != 0);
    PROMISE(hearth_gguf_find_key(g, key) == i);
    hearth_gguf_type t = hearth_gguf_kv_type(g, i);
    PROMISE((unsigned)t < HEARTH_GGUF_TYPE_COUNT);
    PROMISE(strcmp(hearth_gguf_type_name(t), "unknown") != 0);
    hearth_gguf_value v;
    PROMISE(hearth_gguf_kv_value(g, i, &v));
    uint64_t h = strlen(key);

    uint32_t u32; int32_t i32; uint64_t u64; int64_t i64; float f32; double f64; bool b; hearth_span s;
    bool is_uint = t == HEARTH_GGUF_UINT8 || t == HEARTH_GGUF_UINT16 || t == HEARTH_GGUF_UINT32 ||
                   t == HEARTH_GGUF_UINT64;
    bool is_sint = t == HEARTH_GGUF_INT8 || t == HEARTH_GGUF_INT16 || t == HEARTH_GGUF_INT32 ||
                   t == HEARTH_GGUF_INT64;
    bool is_float = t == HEARTH_GGUF_FLOAT32 || t == HEARTH_GGUF_FLOAT64;
    PROMISE(hearth_gguf_get_u64(g, key, &u64) == (is_uint || (is_sint && v.i >= 0)));
    PROMISE(hearth_gguf_get_i64(g, key, &i64) == (is_sint || (is_uint && v.u <= (uint64_t)INT64_MAX)));
    PROMISE(hearth_gguf_get_f64(g, key, &f64) == (is_uint || is_sint || is_float));
    PROMISE(hearth_gguf_get_bool(g, key, &b) == (t == HEARTH_GGUF_BOOL));
    PROMISE(hearth_gguf_get_str(g, key, &s) == (t == HEARTH_GGUF_STRING));
    if (hearth_gguf_get_u32(g, key, &u32)) PROMISE((is_uint ? v.u : (uint64_t)v.i) == u32);
    if (hearth_gguf_get_i32(g, key, &i32)) PROMISE((is_sint ? v.i : (int64_t)v.u) == i32);
    h += hearth_gguf_get_f32(g, key, &f32);
    if (t == HEARTH_GGUF_BOOL) PROMISE(v.i == 0 || v.i == 1);

    if (t == HEARTH_GGUF_STRING) {
        PROMISE(s.len == v.str.len && s.ptr == v.str.ptr);
        PROMISE(s.len == 0 || inside(s.ptr, s.len));
        h += touch(s.ptr, s.len);
    }
    hearth_gguf_type et;
    uint64_t n;
    bool is_arr = hearth_gguf_get_arr(g, key, &et, &n);
    PROMISE(is_arr == (t == HEARTH_GGUF_ARRAY));
    if (!is_arr) {
        PROMISE(hearth_gguf_arr_data(g, key) == NULL);
        return h;
    }
    PROMISE(et == v.elem_type && n == v.n);
    PROMISE((unsigned)et < HEARTH_GGUF_TYPE_COUNT && et != HEARTH_GGUF_ARRAY);
    if (et == HEARTH_GGUF_STRING) {
        PROMISE(hearth_gguf_arr_data(g, key) == NULL);
        for (uint64_t j = 0; j < n; j++) {
            PROMISE(hearth_gguf_arr_str(g, key, j, &s));
            PROMISE(s.len == 0 || inside(s.ptr, s.len));
            h += touch(s.ptr, s.len);
        }
        PROMISE(!hearth_gguf_arr_str(g, key, n, &s));
    } else {
        const uint8_t *d = hearth_gguf_arr_data(g, key);
        size_t bytes = (size_t)n * elem_size(et);
        PROMISE(d != NULL && inside(d, bytes));
        h += touch(d, bytes);
        if (et == HEARTH_GGUF_BOOL)
            for (size_t j = 0; j < bytes; j++) PROMISE(d[j] <= 1);
        PROMISE(!hearth_gguf_arr_str(g, key, 0, &s));
    }
    return h;
}

static uint64_t walk_tensor(const hearth_gguf *g, int64_t i) {
    const hearth_gguf_tensor *t = hearth_gguf_tensor_at(g, i);
    PROMISE(t != NULL && t->name != NULL && t->name[0] != 0);
    PROMISE(hearth_gguf_find_tensor(g, t->name) == t);
    PROMISE(t->n_dims >= 1 && t->n_dims <= 4);
    for (int d = 0; d < 4; d++) PROMISE(t->ne[d] >= 1 && (d < t->n_dims || t->ne[d] == 1));
    PROMISE(strcmp(hearth_gguf_tensor_type_name((int)t->type), "unknown") != 0);
    PROMISE(t->n_bytes > 0 && inside(t->data, t->n_bytes));
    PROMISE(t->offset % hearth_gguf_alignment(g) == 0);
    PROMISE((size_t)((const uint8_t *)t->data - in_base) == hearth_gguf_data_offset(g) + t->offset);
    const hearth_type_traits *tr = hearth_type_traits_of((int)t->type);
    if (tr) { /* known to dtype.h: the byte size must agree with its row size */
        size_t row = hearth_row_size(t->type, t->ne[0]);
        PROMISE(row > 0 && t->n_bytes / row * row == t->n_bytes);
    }
    return touch(t->data, t->n_bytes) + strlen(t->name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int quiet;
    if (!quiet) {
        hearth_log_set_level(HEARTH_LOG_NONE);
        quiet = 1;
    }
    in_base = data;
    in_size = size;
    hearth_gguf *g = (hearth_gguf *)&quiet; /* must come back NULL on failure */
    hearth_err err;
    memset(&err, 0xAB, sizeof err);
    hearth_status st = hearth_gguf_open_mem(data, size, &g, &err);
    if (st != HEARTH_OK) {
        PROMISE(g == NULL);
        PROMISE(err.code == st && st < 0);
        PROMISE(memchr(err.msg, 0, sizeof err.msg) != NULL && err.msg[0] != 0);
        PROMISE(err.pos >= 0 && (uint64_t)err.pos <= size);
        return 0;
    }
    PROMISE(g != NULL && err.code == HEARTH_OK);
    size_t align = hearth_gguf_alignment(g);
    PROMISE(align > 0 && (align & (align - 1)) == 0);
    PROMISE(hearth_gguf_version(g) == 2 || hearth_gguf_version(g) == 3);
    PROMISE(hearth_gguf_file_bytes(g) == size);
    PROMISE(hearth_gguf_data_offset(g) % align == 0 && hearth_gguf_data_offset(g) <= size);
    uint64_t h = 0;
    int64_t n_kv = hearth_gguf_n_kv(g), n_t = hearth_gguf_n_tensors(g);
    PROMISE(n_kv >= 0 && n_t >= 0);
    for (int64_t i = 0; i < n_kv; i++) h += walk_kv(g, i);
    for (int64_t i = 0; i < n_t; i++) h += walk_tensor(g, i);
    for (int64_t i = 0; i < n_t && n_t <= 64; i++) /* no two tensors share a byte (quadratic: few) */
        for (int64_t j = i + 1; j < n_t; j++) {
            const hearth_gguf_tensor *x = hearth_gguf_tensor_at(g, i), *y = hearth_gguf_tensor_at(g, j);
            PROMISE(x->offset + x->n_bytes <= y->offset || y->offset + y->n_bytes <= x->offset);
        }
    PROMISE(hearth_gguf_key(g, n_kv) == NULL && hearth_gguf_key(g, -1) == NULL);
    PROMISE(hearth_gguf_tensor_at(g, n_t) == NULL && hearth_gguf_tensor_at(g, -1) == NULL);
    hearth_gguf_value v;
    PROMISE(!hearth_gguf_kv_value(g, n_kv, &v));
    PROMISE(hearth_gguf_find_key(g, "") == -1 && hearth_gguf_find_tensor(g, "") == NULL);
    sink += h;
    hearth_gguf_close(g);
    return 0;
}
