/*
 * fuzz_safetensors.c - libFuzzer entry point for the safetensors reader (model/safetensors.h).
 *
 * Each input goes to hearth_st_open_mem. When it opens, every tensor is read back and the
 * reader's promises are checked: data lies inside the input, elements x dtype size = bytes,
 * lookup by name finds the record listed, no two tensors share a byte. When it fails, the error
 * record carries the same status and a message. A broken promise aborts.
 *
 * Built by CMake (fuzz/fuzz.cmake): in every build with a replay main() (fuzz/replay.c), and
 * the test fuzz_safetensors_replay runs fuzz/corpus/safetensors through it (sanitized in build-asan/);
 * `make fuzz` builds it with libFuzzer in build-fuzz/ (clang-14) and runs it for FUZZ_SECONDS
 * (scripts/fuzz.sh). A longer run of this target alone, once build-fuzz/ is built:
 *
 *   scripts/fuzz.sh build-fuzz 180 safetensors      or, with libFuzzer's own flags:
 *   ./build-fuzz/fuzz_safetensors -max_len=4096 -max_total_time=180 \
 *       build-fuzz/corpus-safetensors fuzz/corpus/safetensors
 *
 * fuzz/corpus/safetensors holds the committed seeds (tools/make_st_corpus.py, written with the
 * safetensors library): ok_* open, bad_* are refused; crash_* are inputs the fuzzer found
 * (fixed; they only must not crash). test_safetensors replays them all.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PROMISE(c)                                                                                \
    do {                                                                                          \
        if (!(c)) {                                                                               \
            fprintf(stderr, "fuzz_safetensors: %s:%d: broken promise: %s\n", __FILE__, __LINE__, #c); \
            abort();                                                                              \
        }                                                                                         \
    } while (0)

static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hearth_st *s = NULL;
    hearth_err err = {0};
    hearth_status st = hearth_st_open_mem(data, size, &s, &err);
    if (st != HEARTH_OK) {
        PROMISE(s == NULL && err.code == st && err.msg[0]);
        return 0;
    }
    uint64_t h = 0;
    for (int64_t i = 0; i < hearth_st_n_tensors(s); i++) {
        const hearth_st_tensor *t = hearth_st_tensor_at(s, i);
        PROMISE(t && t->name && hearth_st_find(s, t->name) == t);
        const uint8_t *p = t->data;
        PROMISE(p >= data && (size_t)(p - data) <= size && t->n_bytes <= size - (size_t)(p - data));
        int64_t n = 1;
        for (int d = 0; d < t->n_dims; d++) n *= t->shape[d];
        PROMISE(n == t->n_elem && (size_t)n * hearth_st_dtype_size(t->dtype) == t->n_bytes);
        for (size_t k = 0; k < t->n_bytes; k++) h = h * 31 + p[k];
        for (int64_t j = 0; j < i; j++) { /* no shared bytes */
            const hearth_st_tensor *u = hearth_st_tensor_at(s, j);
            const uint8_t *q = u->data;
            PROMISE(!t->n_bytes || !u->n_bytes || p + t->n_bytes <= q || q + u->n_bytes <= p);
        }
    }
    sink = h;
    hearth_st_close(s);
    return 0;
}
