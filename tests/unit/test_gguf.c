/*
 * test_gguf.c - the GGUF reader (model/gguf.h) against files made by tests/gguf_write.h, the
 * real-model goldens made by tools/gguf_golden.py (gguf-py is the oracle), every truncation of
 * a valid file, seeded random mutations, a table of hostile files, and the fuzz corpus replay.
 *
 * Run from the repo root (ctest does): goldens and the corpus are found by relative path.
 * The real-model tests need HEARTH_SMOLLM2_GGUF / HEARTH_GEMMA3_GGUF, else they skip.
 * HEARTH_GGUF_MUTATIONS sets the number of mutated files (default 20000).
 * The fuzz seed files (fuzz/corpus/gguf/) are written by tools/make_gguf_corpus.py with gguf-py.
 */
#include "base/status.h"
#include "gguf_write.h"
#include "model/gguf.h"
#include "test.h"

#include <dirent.h>
#include <float.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- helpers --------------------------------------------------------------------------- */

/* Open an image from an exact-size heap copy, so ASan sees any read past its end. The copy is
 * returned in *copy (caller frees after closing). */
static hearth_status open_copy(const uint8_t *img, size_t n, uint8_t **copy, hearth_gguf **g, hearth_err *err) {
    *copy = malloc(n ? n : 1);
    if (n) memcpy(*copy, img, n);
    return hearth_gguf_open_mem(*copy, n, g, err);
}

static size_t value_size(hearth_gguf_type t) {
    static const uint8_t sz[HEARTH_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return (unsigned)t < HEARTH_GGUF_TYPE_COUNT ? sz[t] : 0;
}

/* Touch everything an opened handle exposes; every borrowed pointer must lie inside
 * [base, base + n). Returns a checksum so nothing is optimized away. */
static uint64_t walk(const hearth_gguf *g, const uint8_t *base, size_t n) {
#define INSIDE(p, len) ((const uint8_t *)(p) >= base && (size_t)((const uint8_t *)(p) - base) <= n && \
                        (len) <= n - (size_t)((const uint8_t *)(p) - base))
    uint64_t h = hearth_gguf_version(g) + hearth_gguf_alignment(g) + hearth_gguf_data_offset(g);
    CHECK_EQ(hearth_gguf_file_bytes(g), n);
    for (int64_t i = 0; i < hearth_gguf_n_kv(g); i++) {
        const char *key = hearth_gguf_key(g, i);
        CHECK(key != NULL);
        if (!key) continue;
        h += strlen(key);
        CHECK_EQ(hearth_gguf_find_key(g, key), i);
        hearth_gguf_value v;
        CHECK(hearth_gguf_kv_value(g, i, &v));
        hearth_gguf_type t = hearth_gguf_kv_type(g, i);
        uint32_t u32; int32_t i32; uint64_t u64; int64_t i64; float f32; double f64; bool b; hearth_span s;
        h += hearth_gguf_get_u32(g, key, &u32) + hearth_gguf_get_i32(g, key, &i32) + hearth_gguf_get_u64(g, key, &u64) +
             hearth_gguf_get_i64(g, key, &i64) + hearth_gguf_get_f32(g, key, &f32) + hearth_gguf_get_f64(g, key, &f64) +
             hearth_gguf_get_bool(g, key, &b);
        if (t == HEARTH_GGUF_STRING) {
            CHECK(hearth_gguf_get_str(g, key, &s) && s.len == v.str.len);
            CHECK(s.len == 0 || INSIDE(s.ptr, s.len));
            for (size_t k = 0; k < s.len; k++) h += (uint8_t)s.ptr[k];
        }
        if (t == HEARTH_GGUF_ARRAY) {
            hearth_gguf_type et;
            uint64_t cnt;
            CHECK(hearth_gguf_get_arr(g, key, &et, &cnt) && et == v.elem_type && cnt == v.n);
            if (et == HEARTH_GGUF_STRING) {
                CHECK(hearth_gguf_arr_data(g, key) == NULL);
                for (uint64_t j = 0; j < cnt; j++) {
                    CHECK(hearth_gguf_arr_str(g, key, j, &s));
                    CHECK(INSIDE(s.ptr, s.len));
                    if (s.len) h += (uint8_t)s.ptr[0] + (uint8_t)s.ptr[s.len - 1];
                }
                CHECK(!hearth_gguf_arr_str(g, key, cnt, &s));
            } else {
                const uint8_t *d = hearth_gguf_arr_data(g, key);
                size_t bytes = (size_t)cnt * value_size(et);
                CHECK(d != NULL && INSIDE(d, bytes));
                for (size_t k = 0; d && k < bytes; k++) h += d[k];
            }
        }
    }
    CHECK(hearth_gguf_key(g, hearth_gguf_n_kv(g)) == NULL);
    CHECK(hearth_gguf_tensor_at(g, -1) == NULL && hearth_gguf_tensor_at(g, hearth_gguf_n_tensors(g)) == NULL);
    for (int64_t i = 0; i < hearth_gguf_n_tensors(g); i++) {
        const hearth_gguf_tensor *t = hearth_gguf_tensor_at(g, i);
        CHECK(t && hearth_gguf_find_tensor(g, t->name) == t);
        CHECK(t->n_dims >= 1 && t->n_dims <= 4 && t->n_bytes > 0);
        CHECK(INSIDE(t->data, t->n_bytes));
        CHECK((size_t)((const uint8_t *)t->data - base) == hearth_gguf_data_offset(g) + t->offset);
        const uint8_t *d = t->data;
        h += d[0] + d[t->n_bytes - 1] + (uint64_t)t->ne[0];
    }
    return h;
#undef INSIDE
}

/* ---- builders shared by tests and the corpus writer ------------------------------------ */

static const char *const str_elems[] = {"", "a", "hello world", "\xe2\x96\x81tok", "<|im_start|>"};

/* Every scalar type once, in enum order, plus a few extras for the widening rules. */
static void add_scalars(gw *w) {
    gw_u8(w, "t.u8", 200);
    gw_i8(w, "t.i8", -5);
    gw_u16(w, "t.u16", 65535);
    gw_i16(w, "t.i16", -32768);
    gw_u32(w, "t.u32", 4000000000u);
    gw_i32(w, "t.i32", INT32_MIN);
    gw_f32(w, "t.f32", 1.5f);
    gw_bool(w, "t.bool", true);
    gw_str(w, "t.str", "hello");
    gw_u64(w, "t.u64", UINT64_MAX);
    gw_i64(w, "t.i64", -1);
    gw_f64(w, "t.f64", 0.1);
    gw_u64(w, "t.u64_small", 5);
    gw_i64(w, "t.i64_big", (int64_t)1 << 40);
    gw_f64(w, "t.f64_huge", 1e300);
    gw_strn(w, "t.str_empty", "", 0);
    gw_strn(w, "t.str_bytes", "a\0b\n", 4);
}

static void add_arrays(gw *w) {
    uint8_t u8[] = {0, 1, 255};
    int8_t i8[] = {-128, 0, 127};
    uint16_t u16[] = {1, 65535};
    int16_t i16[] = {-2, 2};
    uint32_t u32[] = {7, 8, 9, 4000000000u};
    int32_t i32[] = {-1, 0, 1};
    float f32[] = {0.5f, -2.0f};
    uint8_t bl[] = {1, 0, 1};
    uint64_t u64[] = {UINT64_MAX};
    int64_t i64[] = {INT64_MIN, 3};
    double f64[] = {3.25, -0.0};
    gw_arr(w, "a.u8", HEARTH_GGUF_UINT8, u8, 3);
    gw_arr(w, "a.i8", HEARTH_GGUF_INT8, i8, 3);
    gw_arr(w, "a.u16", HEARTH_GGUF_UINT16, u16, 2);
    gw_arr(w, "a.i16", HEARTH_GGUF_INT16, i16, 2);
    gw_arr(w, "a.u32", HEARTH_GGUF_UINT32, u32, 4);
    gw_arr(w, "a.i32", HEARTH_GGUF_INT32, i32, 3);
    gw_arr(w, "a.f32", HEARTH_GGUF_FLOAT32, f32, 2);
    gw_arr(w, "a.bool", HEARTH_GGUF_BOOL, bl, 3);
    gw_arr_str(w, "a.str", str_elems, 5);
    gw_arr(w, "a.u64", HEARTH_GGUF_UINT64, u64, 1);
    gw_arr(w, "a.i64", HEARTH_GGUF_INT64, i64, 2);
    gw_arr(w, "a.f64", HEARTH_GGUF_FLOAT64, f64, 2);
    gw_arr(w, "a.empty", HEARTH_GGUF_INT32, NULL, 0);
    gw_arr_str(w, "a.str_empty", NULL, 0);
}

static float f32_data[4 * 3];

static void add_tensors(gw *w) {
    for (int i = 0; i < 12; i++) f32_data[i] = (float)i * 0.25f - 1.0f;
    gw_tensor(w, "t.f32", HEARTH_TYPE_F32, 2, (int64_t[]){4, 3}, f32_data);
    gw_tensor(w, "t.f16", HEARTH_TYPE_F16, 1, (int64_t[]){5}, NULL);
    gw_tensor(w, "t.q8_0", HEARTH_TYPE_Q8_0, 3, (int64_t[]){32, 2, 2}, NULL);
    gw_tensor(w, "t.q4_K", HEARTH_TYPE_Q4_K, 4, (int64_t[]){256, 1, 1, 2}, NULL);
}

/* A valid file with every kind of record; the image is malloc'ed. */
static uint8_t *make_rich(size_t *n, uint32_t align) {
    gw w;
    gw_init(&w);
    if (align) gw_align(&w, align);
    add_scalars(&w);
    add_arrays(&w);
    add_tensors(&w);
    uint8_t *img = gw_finish(&w, n);
    gw_free(&w);
    return img;
}

/* ---- round trips ----------------------------------------------------------------------- */

TEST(scalars_round_trip_and_widening) {
    gw w;
    gw_init(&w);
    add_scalars(&w);
    size_t n;
    uint8_t *img = gw_finish(&w, &n), *copy;
    hearth_gguf *g;
    hearth_err err;
    CHECK_EQ(open_copy(img, n, &copy, &g, &err), HEARTH_OK);
    if (!g) { free(img); free(copy); gw_free(&w); return; }
    CHECK_EQ(hearth_gguf_version(g), 3);
    CHECK_EQ(hearth_gguf_n_kv(g), 17);
    CHECK_EQ(hearth_gguf_n_tensors(g), 0);
    CHECK_EQ(hearth_gguf_alignment(g), 32);
    for (int t = 0; t <= HEARTH_GGUF_FLOAT64; t++) /* the first 12 records are in enum order, minus array */
        if (t != HEARTH_GGUF_ARRAY) CHECK_EQ(hearth_gguf_kv_type(g, t < HEARTH_GGUF_ARRAY ? t : t - 1), t);
    CHECK_STR(hearth_gguf_key(g, 0), "t.u8");
    CHECK_EQ(hearth_gguf_kv_type(g, 99), HEARTH_GGUF_TYPE_COUNT);
    CHECK_EQ(hearth_gguf_find_key(g, "t.f64"), 11);
    CHECK_EQ(hearth_gguf_find_key(g, "t.nope"), -1);
    CHECK_EQ(hearth_gguf_find_key(g, NULL), -1);

    uint32_t u32 = 77; int32_t i32 = 77; uint64_t u64 = 77; int64_t i64 = 77;
    float f32 = 7.f; double f64 = 7.; bool b = false; hearth_span s = {0};
    /* uint8 200 fits everything numeric */
    CHECK(hearth_gguf_get_u32(g, "t.u8", &u32) && u32 == 200);
    CHECK(hearth_gguf_get_i32(g, "t.u8", &i32) && i32 == 200);
    CHECK(hearth_gguf_get_u64(g, "t.u8", &u64) && u64 == 200);
    CHECK(hearth_gguf_get_i64(g, "t.u8", &i64) && i64 == 200);
    CHECK(hearth_gguf_get_f32(g, "t.u8", &f32) && f32 == 200.f);
    CHECK(!hearth_gguf_get_bool(g, "t.u8", &b) && !hearth_gguf_get_str(g, "t.u8", &s));
    /* negatives never fit unsigned getters, and the output is left untouched */
    u32 = 77; u64 = 77;
    CHECK(!hearth_gguf_get_u32(g, "t.i8", &u32) && u32 == 77);
    CHECK(!hearth_gguf_get_u64(g, "t.i64", &u64) && u64 == 77);
    CHECK(hearth_gguf_get_i32(g, "t.i8", &i32) && i32 == -5);
    CHECK(hearth_gguf_get_f64(g, "t.i8", &f64) && f64 == -5.0);
    CHECK(hearth_gguf_get_u32(g, "t.u16", &u32) && u32 == 65535);
    CHECK(hearth_gguf_get_i32(g, "t.i16", &i32) && i32 == -32768);
    /* range limits */
    CHECK(hearth_gguf_get_u32(g, "t.u32", &u32) && u32 == 4000000000u);
    i32 = 77;
    CHECK(!hearth_gguf_get_i32(g, "t.u32", &i32) && i32 == 77);
    CHECK(hearth_gguf_get_i64(g, "t.u32", &i64) && i64 == 4000000000LL);
    CHECK(hearth_gguf_get_i32(g, "t.i32", &i32) && i32 == INT32_MIN);
    CHECK(!hearth_gguf_get_u32(g, "t.i32", &u32));
    CHECK(hearth_gguf_get_u64(g, "t.u64", &u64) && u64 == UINT64_MAX);
    CHECK(!hearth_gguf_get_u32(g, "t.u64", &u32) && !hearth_gguf_get_i64(g, "t.u64", &i64));
    CHECK(hearth_gguf_get_u32(g, "t.u64_small", &u32) && u32 == 5);
    CHECK(hearth_gguf_get_i32(g, "t.u64_small", &i32) && i32 == 5);
    CHECK(hearth_gguf_get_i64(g, "t.i64", &i64) && i64 == -1);
    CHECK(!hearth_gguf_get_u32(g, "t.i64_big", &u32) && !hearth_gguf_get_i32(g, "t.i64_big", &i32));
    CHECK(hearth_gguf_get_i64(g, "t.i64_big", &i64) && i64 == (int64_t)1 << 40);
    CHECK(hearth_gguf_get_u64(g, "t.i64_big", &u64) && u64 == (uint64_t)1 << 40);
    /* floats: no float to integer; float64 narrows to float32 unless it would overflow */
    CHECK(!hearth_gguf_get_u32(g, "t.f32", &u32) && !hearth_gguf_get_i64(g, "t.f32", &i64));
    CHECK(hearth_gguf_get_f32(g, "t.f32", &f32) && f32 == 1.5f);
    CHECK(hearth_gguf_get_f64(g, "t.f32", &f64) && f64 == 1.5);
    CHECK(hearth_gguf_get_f64(g, "t.f64", &f64) && f64 == 0.1);
    CHECK(hearth_gguf_get_f32(g, "t.f64", &f32) && f32 == 0.1f);
    f32 = 7.f;
    CHECK(!hearth_gguf_get_f32(g, "t.f64_huge", &f32) && f32 == 7.f);
    CHECK(hearth_gguf_get_f64(g, "t.f64_huge", &f64) && f64 == 1e300);
    CHECK(hearth_gguf_get_f32(g, "t.u64", &f32) && f32 == 18446744073709551616.0f);
    /* bool is not an integer */
    CHECK(hearth_gguf_get_bool(g, "t.bool", &b) && b);
    CHECK(!hearth_gguf_get_u32(g, "t.bool", &u32) && !hearth_gguf_get_f32(g, "t.bool", &f32));
    /* strings, including empty and embedded NUL */
    CHECK(hearth_gguf_get_str(g, "t.str", &s) && hearth_span_eq(s, "hello"));
    CHECK(hearth_gguf_get_str(g, "t.str_empty", &s) && s.len == 0);
    CHECK(hearth_gguf_get_str(g, "t.str_bytes", &s) && s.len == 4 && !memcmp(s.ptr, "a\0b\n", 4));
    CHECK(!hearth_gguf_get_u32(g, "t.str", &u32) && !hearth_gguf_get_arr(g, "t.str", NULL, NULL));
    /* missing keys */
    CHECK(!hearth_gguf_get_u32(g, "x", &u32) && !hearth_gguf_get_f32(g, "x", &f32) && !hearth_gguf_get_str(g, "x", &s));
    /* generic views */
    hearth_gguf_value v;
    CHECK(hearth_gguf_kv_value(g, 0, &v) && v.u == 200);
    CHECK(hearth_gguf_kv_value(g, 1, &v) && v.i == -5);
    CHECK(hearth_gguf_kv_value(g, 6, &v) && v.f == 1.5);
    CHECK(hearth_gguf_kv_value(g, 7, &v) && v.i == 1);
    CHECK(hearth_gguf_kv_value(g, 8, &v) && hearth_span_eq(v.str, "hello"));
    CHECK(hearth_gguf_kv_value(g, 9, &v) && v.u == UINT64_MAX);
    CHECK(!hearth_gguf_kv_value(g, 17, &v) && !hearth_gguf_kv_value(g, -1, &v));
    CHECK_STR(hearth_gguf_type_name(HEARTH_GGUF_FLOAT32), "float32");
    CHECK_STR(hearth_gguf_type_name(HEARTH_GGUF_TYPE_COUNT), "unknown");
    walk(g, copy, n);
    hearth_gguf_close(g);
    free(copy);
    free(img);
    gw_free(&w);
}

TEST(arrays_of_every_type) {
    gw w;
    gw_init(&w);
    add_arrays(&w);
    size_t n;
    uint8_t *img = gw_finish(&w, &n), *copy;
    hearth_gguf *g;
    CHECK_EQ(open_copy(img, n, &copy, &g, NULL), HEARTH_OK);
    if (!g) { free(img); free(copy); gw_free(&w); return; }
    static const struct { const char *key; hearth_gguf_type et; uint64_t n; } want[] = {
        {"a.u8", HEARTH_GGUF_UINT8, 3},   {"a.i8", HEARTH_GGUF_INT8, 3},     {"a.u16", HEARTH_GGUF_UINT16, 2},
        {"a.i16", HEARTH_GGUF_INT16, 2},  {"a.u32", HEARTH_GGUF_UINT32, 4},  {"a.i32", HEARTH_GGUF_INT32, 3},
        {"a.f32", HEARTH_GGUF_FLOAT32, 2}, {"a.bool", HEARTH_GGUF_BOOL, 3},  {"a.str", HEARTH_GGUF_STRING, 5},
        {"a.u64", HEARTH_GGUF_UINT64, 1}, {"a.i64", HEARTH_GGUF_INT64, 2},   {"a.f64", HEARTH_GGUF_FLOAT64, 2},
        {"a.empty", HEARTH_GGUF_INT32, 0}, {"a.str_empty", HEARTH_GGUF_STRING, 0},
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        hearth_gguf_type et = HEARTH_GGUF_TYPE_COUNT;
        uint64_t cnt = 99;
        CHECK(hearth_gguf_get_arr(g, want[k].key, &et, &cnt));
        CHECK_EQ(et, want[k].et);
        CHECK_EQ(cnt, want[k].n);
        CHECK_EQ(hearth_gguf_kv_type(g, (int64_t)k), HEARTH_GGUF_ARRAY);
        uint32_t u32;
        CHECK(!hearth_gguf_get_u32(g, want[k].key, &u32));
    }
    const uint8_t *d;
    uint32_t u32[4];
    CHECK((d = hearth_gguf_arr_data(g, "a.u32")) != NULL);
    if (d) memcpy(u32, d, sizeof u32);
    CHECK(u32[0] == 7 && u32[3] == 4000000000u);
    int64_t i64[2];
    CHECK((d = hearth_gguf_arr_data(g, "a.i64")) != NULL);
    if (d) memcpy(i64, d, sizeof i64);
    CHECK(i64[0] == INT64_MIN && i64[1] == 3);
    double f64[2];
    CHECK((d = hearth_gguf_arr_data(g, "a.f64")) != NULL);
    if (d) memcpy(f64, d, sizeof f64);
    CHECK(f64[0] == 3.25 && f64[1] == 0.0 && signbit(f64[1]));
    CHECK((d = hearth_gguf_arr_data(g, "a.bool")) != NULL && d[0] == 1 && d[1] == 0);
    CHECK((d = hearth_gguf_arr_data(g, "a.i8")) != NULL && (int8_t)d[0] == -128);
    CHECK(hearth_gguf_arr_data(g, "a.str") == NULL && hearth_gguf_arr_data(g, "nope") == NULL);
    for (uint64_t j = 0; j < 5; j++) {
        hearth_span s;
        CHECK(hearth_gguf_arr_str(g, "a.str", j, &s) && hearth_span_eq(s, str_elems[j]));
    }
    hearth_span s;
    CHECK(!hearth_gguf_arr_str(g, "a.str", 5, &s) && !hearth_gguf_arr_str(g, "a.u8", 0, &s));
    CHECK(!hearth_gguf_arr_str(g, "a.str_empty", 0, &s));
    walk(g, copy, n);
    hearth_gguf_close(g);
    free(copy);
    free(img);
    gw_free(&w);
}

static void check_tensors(uint32_t align) {
    size_t n;
    uint8_t *img = make_rich(&n, align), *copy;
    hearth_gguf *g;
    hearth_err err;
    CHECK_EQ(open_copy(img, n, &copy, &g, &err), HEARTH_OK);
    if (!g) { fprintf(stderr, "  %s\n", err.msg); free(img); free(copy); return; }
    size_t a = align ? align : 32;
    CHECK_EQ(hearth_gguf_alignment(g), a);
    CHECK_EQ(hearth_gguf_data_offset(g) % a, 0);
    CHECK_EQ(hearth_gguf_n_tensors(g), 4);
    static const struct { const char *name; hearth_type type; int n_dims; int64_t ne[4]; size_t n_bytes; } want[] = {
        {"t.f32", HEARTH_TYPE_F32, 2, {4, 3, 1, 1}, 48},
        {"t.f16", HEARTH_TYPE_F16, 1, {5, 1, 1, 1}, 10},
        {"t.q8_0", HEARTH_TYPE_Q8_0, 3, {32, 2, 2, 1}, 4 * 34},
        {"t.q4_K", HEARTH_TYPE_Q4_K, 4, {256, 1, 1, 2}, 2 * 144},
    };
    for (int i = 0; i < 4; i++) {
        const hearth_gguf_tensor *t = hearth_gguf_find_tensor(g, want[i].name);
        CHECK(t != NULL && t == hearth_gguf_tensor_at(g, i));
        if (!t) continue;
        CHECK_STR(t->name, want[i].name);
        CHECK_EQ(t->type, want[i].type);
        CHECK_EQ(t->n_dims, want[i].n_dims);
        for (int d = 0; d < 4; d++) CHECK_EQ(t->ne[d], want[i].ne[d]);
        CHECK_EQ(t->n_bytes, want[i].n_bytes);
        CHECK_EQ(t->offset % a, 0);
        CHECK((const uint8_t *)t->data == copy + hearth_gguf_data_offset(g) + t->offset);
    }
    const hearth_gguf_tensor *t = hearth_gguf_find_tensor(g, "t.f32");
    if (t) CHECK(!memcmp(t->data, f32_data, sizeof f32_data));
    CHECK(hearth_gguf_find_tensor(g, "t.nope") == NULL && hearth_gguf_find_tensor(g, NULL) == NULL);
    walk(g, copy, n);
    hearth_gguf_close(g);
    free(copy);
    free(img);
}

TEST(tensors_default_alignment_32) { check_tensors(0); }
TEST(tensors_custom_alignment_64) { check_tensors(64); }
TEST(tensors_alignment_1_and_4096) {
    check_tensors(1);
    check_tensors(4096);
}

TEST(version_2_and_unimplemented_types_open) {
    gw w;
    gw_init(&w);
    w.version = 2;
    gw_str(&w, "general.architecture", "llama");
    gw_tensor(&w, "q2k", HEARTH_TYPE_Q2_K, 2, (int64_t[]){256, 2}, NULL);       /* known, unsupported */
    gw_tensor(&w, "i32", HEARTH_TYPE_I32, 1, (int64_t[]){3}, NULL);             /* known, unsupported */
    gw_tensor_desc d = {.name = "iq2", .type = 16, .n_dims = 2, .ne = {256, 3}, .offset = -1, .n_bytes = 3 * 66};
    gw_tensor_ex(&w, &d); /* IQ2_XXS: not in dtype.h, layout known */
    gw_tensor_desc m = {.name = "mx", .type = 39, .n_dims = 1, .ne = {64}, .offset = -1, .n_bytes = 2 * 17};
    gw_tensor_ex(&w, &m); /* MXFP4 */
    size_t n;
    uint8_t *img = gw_finish(&w, &n), *copy;
    hearth_gguf *g;
    hearth_err err;
    CHECK_EQ(open_copy(img, n, &copy, &g, &err), HEARTH_OK);
    if (g) {
        CHECK_EQ(hearth_gguf_version(g), 2);
        const hearth_gguf_tensor *t = hearth_gguf_find_tensor(g, "q2k");
        CHECK(t && t->type == HEARTH_TYPE_Q2_K && t->n_bytes == 2 * 84);
        CHECK(t && !hearth_type_traits_of((int)t->type)->supported);
        t = hearth_gguf_find_tensor(g, "iq2");
        CHECK(t && (int)t->type == 16 && t->n_bytes == 3 * 66 && hearth_type_traits_of((int)t->type) == NULL);
        if (t) CHECK_STR(hearth_gguf_tensor_type_name((int)t->type), "iq2_xxs");
        t = hearth_gguf_find_tensor(g, "mx");
        CHECK(t && (int)t->type == 39 && t->n_bytes == 34);
        CHECK_STR(hearth_gguf_tensor_type_name(HEARTH_TYPE_Q4_K), "q4_K");
        CHECK_STR(hearth_gguf_tensor_type_name(4), "unknown");
        walk(g, copy, n);
        hearth_gguf_close(g);
    } else {
        fprintf(stderr, "  %s\n", err.msg);
    }
    free(copy);
    free(img);
    gw_free(&w);
}

TEST(open_from_path) {
    size_t n;
    uint8_t *img = make_rich(&n, 64);
    const char *tmp = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/hearth_test_gguf_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) { free(img); return; }
    CHECK(write(fd, img, n) == (ssize_t)n);
    close(fd);
    hearth_gguf *g;
    hearth_err err;
    CHECK_EQ(hearth_gguf_open(path, &g, &err), HEARTH_OK);
    if (g) {
        CHECK_EQ(hearth_gguf_file_bytes(g), n);
        const hearth_gguf_tensor *t = hearth_gguf_find_tensor(g, "t.f32");
        CHECK(t && !memcmp(t->data, f32_data, sizeof f32_data));
        CHECK(t && (uintptr_t)t->data % 64 == 0); /* the mapping is page-aligned */
        hearth_gguf_close(g);
    }
    FILE *f = fopen(path, "wb"); /* now empty */
    if (f) fclose(f);
    CHECK_EQ(hearth_gguf_open(path, &g, &err), HEARTH_E_FORMAT);
    CHECK(g == NULL && strstr(err.msg, "too short"));
    unlink(path);
    CHECK_EQ(hearth_gguf_open(path, &g, &err), HEARTH_E_IO);
    CHECK(g == NULL && strstr(err.msg, "cannot open"));
    CHECK_EQ(hearth_gguf_open(".", &g, &err), HEARTH_E_IO);
    CHECK(strstr(err.msg, "regular file") != NULL);
    hearth_gguf_close(NULL);
    free(img);
}

/* ---- robustness ------------------------------------------------------------------------ */

/* Every proper prefix of a valid file is refused with an error inside the prefix. Two files:
 * one with tensors (the cut lands in a header, key, value, tensor info, padding or tensor data)
 * and one without, whose only data-section content is the padding, which must be present too. */
static void check_truncations(const uint8_t *img, size_t n, const char *what) {
    int64_t failures = 0;
    uint8_t *copy;
    for (size_t len = 0; len <= n; len++) {
        hearth_gguf *g = (hearth_gguf *)1;
        hearth_err err;
        hearth_status st = open_copy(img, len, &copy, &g, &err);
        if (len < n) {
            CHECK(st != HEARTH_OK && g == NULL && err.msg[0] && err.code == st);
            CHECK(err.pos >= 0 && (size_t)err.pos <= len);
            if (st == HEARTH_OK) fprintf(stderr, "  %s: truncation at %zu of %zu opened\n", what, len, n);
            failures += st != HEARTH_OK;
        } else {
            CHECK_EQ(st, HEARTH_OK);
        }
        hearth_gguf_close(st == HEARTH_OK ? g : NULL);
        free(copy);
    }
    fprintf(stderr, "  %s, %zu bytes: %lld truncations all refused\n", what, n, (long long)failures);
}

TEST(truncation_at_every_byte) {
    size_t n;
    uint8_t *img = make_rich(&n, 64);
    check_truncations(img, n, "with tensors");
    free(img);
    gw w;
    gw_init(&w);
    add_scalars(&w);
    add_arrays(&w);
    img = gw_finish(&w, &n);
    check_truncations(img, n, "metadata only");
    free(img);
    gw_free(&w);
}

/* A cut inside a record names the record: the key, or the tensor, and the offset. */
TEST(truncation_names_the_record) {
    gw w;
    gw_init(&w);
    static const char pad[101] = "0123456789012345678901234567890123456789012345678901234567890123456789"
                                 "012345678901234567890123456789";
    gw_str(&w, "a.pad", pad); /* 125 bytes, so the header's count check passes at every cut below */
    gw_u64(&w, "k.count", 7);
    gw_arr_str(&w, "k.strs", str_elems, 5);
    gw_tensor(&w, "w.weight", HEARTH_TYPE_F32, 2, (int64_t[]){4, 2}, NULL);
    size_t n;
    uint8_t *img = gw_finish(&w, &n), *copy;
    /* k.count: record at 149, type at 164, value at 168; k.strs: record at 176, array header
     * at 194, elements at 206 ("" 206, "a" 214, "hello world" 223, 3rd 242, 4th 256, end 276) */
    static const struct { size_t len; const char *phrase; } cut[] = {
        {166, "offset 164 (size 166) reading the value type of key 'k.count'"},
        {171, "offset 168 (size 171) reading the uint64 value of key 'k.count'"},
        {199, "offset 194 (size 199) reading the array header of key 'k.strs'"},
        {217, "key 'k.strs': array count 5 at offset 198 needs more than the 11 bytes left"},
        {246, "offset 242 (size 246) reading string 3 of array 'k.strs'"},
        {270, "key 'k.strs': string 4 at offset 256 has length 12, more than the 6 bytes left"},
    };
    for (size_t k = 0; k < sizeof cut / sizeof cut[0]; k++) {
        hearth_gguf *g;
        hearth_err err;
        CHECK_EQ(open_copy(img, cut[k].len, &copy, &g, &err), HEARTH_E_FORMAT);
        CHECK(strstr(err.msg, cut[k].phrase) != NULL);
        if (!strstr(err.msg, cut[k].phrase)) fprintf(stderr, "  cut %zu: \"%s\"\n", cut[k].len, err.msg);
        free(copy);
    }
    /* the tensor info starts after both keys: cut inside its dims, then inside its type */
    size_t ti = 276;
    hearth_gguf *g;
    hearth_err err;
    CHECK_EQ(open_copy(img, ti + 8 + 8 + 4 + 8 + 3, &copy, &g, &err), HEARTH_E_FORMAT);
    CHECK(strstr(err.msg, "reading dimension 1 of tensor 'w.weight'") != NULL);
    free(copy);
    CHECK_EQ(open_copy(img, ti + 8 + 8 + 4 + 16 + 2, &copy, &g, &err), HEARTH_E_FORMAT);
    CHECK(strstr(err.msg, "reading the type and offset of tensor 'w.weight'") != NULL);
    CHECK_EQ(err.pos, ti + 8 + 8 + 4 + 16);
    free(copy);
    free(img);
    gw_free(&w);
}

static uint64_t rng_next(uint64_t *s) { /* xorshift64* */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

TEST(random_mutations_never_crash) {
    size_t n;
    uint8_t *img = make_rich(&n, 32), *mut = malloc(n);
    const char *env = getenv("HEARTH_GGUF_MUTATIONS");
    long n_mut = env && *env ? atol(env) : 20000;
    uint64_t seed = 0x9E3779B97F4A7C15ULL;
    long opened = 0;
    static const uint64_t bumps[] = {1, 2, 8, 32, 256, (uint64_t)1 << 32, (uint64_t)1 << 63, UINT64_MAX};
    for (long it = 0; it < n_mut; it++) {
        memcpy(mut, img, n);
        int n_edits = 1 + (int)(rng_next(&seed) % 3);
        for (int e = 0; e < n_edits; e++) {
            size_t p = (size_t)(rng_next(&seed) % n);
            uint64_t r = rng_next(&seed);
            switch (r % 5) {
            case 0: mut[p] ^= (uint8_t)(1u << (r >> 8) % 8); break;                /* bit flip */
            case 1: mut[p] = (uint8_t)(r >> 8); break;                            /* random byte */
            case 2: mut[p] = (r >> 8) & 1 ? 0xff : 0x00; break;
            default: {                                                            /* u64/u32 field bump */
                size_t w = (r % 5 == 3) ? 8 : 4;
                if (p + w > n) p = n - w;
                uint64_t v = 0;
                memcpy(&v, mut + p, w);
                uint64_t b = bumps[(r >> 8) % 8];
                v = (r >> 16) & 1 ? v + b : v - b;
                memcpy(mut + p, &v, w);
            }
            }
        }
        uint8_t *copy;
        hearth_gguf *g;
        hearth_err err;
        if (open_copy(mut, n, &copy, &g, &err) == HEARTH_OK) {
            opened++;
            walk(g, copy, n);
            hearth_gguf_close(g);
        } else {
            CHECK(g == NULL && err.msg[0] && err.pos >= 0 && (size_t)err.pos <= n);
        }
        free(copy);
    }
    fprintf(stderr, "  %ld mutations of a %zu-byte file: %ld opened, %ld refused\n", n_mut, n, opened, n_mut - opened);
    free(mut);
    free(img);
}

/* ---- hostile files --------------------------------------------------------------------- */

typedef struct {
    const char   *name;
    hearth_status want;
    const char   *phrase;
} hostile_case;

static void raw_kv_bytes(gw *w, const void *b, size_t n) { /* a record written byte by byte */
    gw_put(&w->kv, b, n);
    w->n_kv++;
}

/* Build hostile file `name` into w; returns false when name is unknown. Some post-edit the image
 * (cut), signalled through *cut (bytes to drop from the end). */
static bool build_hostile(const char *name, gw *w, size_t *cut, int *patch_magic) {
    uint64_t big[2];
    gw_tensor_desc d = {.name = "t", .type = HEARTH_TYPE_F32, .n_dims = 1, .ne = {16}, .offset = -1};
    *cut = 0;
    *patch_magic = 0;
    gw_str(w, "general.architecture", "llama");
    if (!strcmp(name, "bad_magic")) *patch_magic = 1;
    else if (!strcmp(name, "version_1")) w->version = 1;
    else if (!strcmp(name, "version_99")) w->version = 99;
    else if (!strcmp(name, "big_endian")) w->version = 0x03000000;
    else if (!strcmp(name, "n_tensors_huge")) w->n_tensors_override = INT64_MAX;
    else if (!strcmp(name, "n_kv_huge")) w->n_kv_override = (int64_t)1 << 62;
    else if (!strcmp(name, "string_length_huge")) {
        big[0] = (uint64_t)1 << 63;
        gw_kv_raw(w, "s", HEARTH_GGUF_STRING, big, 8);
    } else if (!strcmp(name, "key_length_huge")) {
        uint64_t len = UINT64_MAX - 3;
        raw_kv_bytes(w, &len, 8);
    } else if (!strcmp(name, "key_too_long")) {
        char *k = malloc(70001);
        memset(k, 'k', 70000);
        k[70000] = 0;
        gw_u8(w, k, 1);
        free(k);
    } else if (!strcmp(name, "key_empty")) gw_u8(w, "", 1);
    else if (!strcmp(name, "key_with_nul")) {
        uint8_t rec[] = {3, 0, 0, 0, 0, 0, 0, 0, 'a', 0, 'b', 0, 0, 0, 0, 7};
        raw_kv_bytes(w, rec, sizeof rec);
    } else if (!strcmp(name, "array_count_huge") || !strcmp(name, "string_array_count_huge")) {
        uint32_t et = name[0] == 'a' ? HEARTH_GGUF_UINT32 : HEARTH_GGUF_STRING;
        uint8_t p[12];
        uint64_t cnt = (uint64_t)1 << 62;
        memcpy(p, &et, 4);
        memcpy(p + 4, &cnt, 8);
        gw_kv_raw(w, "arr", HEARTH_GGUF_ARRAY, p, 12);
    } else if (!strcmp(name, "nested_array")) {
        uint8_t p[] = {9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7};
        gw_kv_raw(w, "nested", HEARTH_GGUF_ARRAY, p, sizeof p);
    } else if (!strcmp(name, "unknown_value_type")) {
        uint32_t v = 0;
        gw_kv_raw(w, "x", 13, &v, 4);
    } else if (!strcmp(name, "unknown_element_type")) {
        uint8_t p[] = {99, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0};
        gw_kv_raw(w, "x", HEARTH_GGUF_ARRAY, p, sizeof p);
    } else if (!strcmp(name, "bool_value_2")) {
        uint8_t two = 2;
        gw_kv_raw(w, "flag", HEARTH_GGUF_BOOL, &two, 1);
    } else if (!strcmp(name, "bool_array_element_2")) {
        uint8_t p[] = {7, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2};
        gw_kv_raw(w, "flags", HEARTH_GGUF_ARRAY, p, sizeof p);
    } else if (!strcmp(name, "duplicate_key")) gw_str(w, "general.architecture", "gemma3");
    else if (!strcmp(name, "alignment_0")) gw_align(w, 0);
    else if (!strcmp(name, "alignment_3")) gw_align(w, 3);
    else if (!strcmp(name, "alignment_string")) gw_str(w, "general.alignment", "32");
    else if (!strcmp(name, "alignment_negative")) gw_i32(w, "general.alignment", -32);
    else if (!strcmp(name, "data_section_past_eof")) { /* no tensors, padding cut short */
        gw_align(w, 64);
        *cut = 1;
        return true;
    }
    else if (!strcmp(name, "duplicate_tensor")) {
        gw_tensor_ex(w, &d);
        gw_tensor_ex(w, &d);
        return true;
    } else if (!strcmp(name, "n_dims_0")) d.n_dims = 0;
    else if (!strcmp(name, "n_dims_5")) { d.n_dims = 5; d.ne[1] = d.ne[2] = d.ne[3] = d.ne[4] = 1; }
    else if (!strcmp(name, "zero_dimension")) { d.n_dims = 2; d.ne[1] = 0; }
    else if (!strcmp(name, "dimension_too_big")) d.ne[0] = (uint64_t)1 << 63;
    else if (!strcmp(name, "dims_overflow")) { d.n_dims = 3; d.ne[0] = d.ne[1] = (uint64_t)1 << 32; d.ne[2] = 1; }
    else if (!strcmp(name, "bytes_overflow")) { d.type = HEARTH_TYPE_F64; d.ne[0] = (uint64_t)1 << 62; d.n_bytes = 8; }
    else if (!strcmp(name, "unknown_tensor_type")) { d.type = 4; d.n_bytes = 64; }
    else if (!strcmp(name, "unknown_tensor_type_200")) { d.type = 200; d.n_bytes = 64; }
    else if (!strcmp(name, "row_not_whole_blocks")) { d.type = HEARTH_TYPE_Q4_K; d.ne[0] = 100; d.n_bytes = 144; }
    else if (!strcmp(name, "misaligned_offset")) d.offset = 8;
    else if (!strcmp(name, "offset_overflow")) { d.offset = -32; d.n_bytes = 64; } /* (uint64)-32: aligned */
    else if (!strcmp(name, "data_past_eof")) *cut = 1;
    else if (!strcmp(name, "overlapping_tensors")) {
        gw_tensor_ex(w, &d); /* [0, 64) */
        gw_tensor_desc e = d;
        e.name = "u";
        e.offset = 32;
        gw_tensor_ex(w, &e);
        return true;
    } else if (!strcmp(name, "truncated_header")) *cut = (size_t)-1;
    else return false;
    if (d.offset == -32) { /* explicit offset the writer cannot back with data */
        d.offset = 0;
        uint64_t off = UINT64_MAX - 31;
        gw_tensor_ex(w, &d);
        memcpy(w->ti.p + w->ti.len - 8, &off, 8);
        return true;
    }
    gw_tensor_ex(w, &d);
    return true;
}

static const hostile_case hostile[] = {
    {"bad_magic", HEARTH_E_FORMAT, "bad magic"},
    {"version_1", HEARTH_E_UNSUPPORTED, "version 1 "},
    {"version_99", HEARTH_E_UNSUPPORTED, "version 99 "},
    {"big_endian", HEARTH_E_UNSUPPORTED, "big-endian"},
    {"truncated_header", HEARTH_E_FORMAT, "unexpected end of file"},
    {"n_tensors_huge", HEARTH_E_FORMAT, "n_tensors 9223372036854775807"},
    {"n_kv_huge", HEARTH_E_FORMAT, "n_kv 4611686018427387904"},
    {"string_length_huge", HEARTH_E_FORMAT, "key 's': string length 9223372036854775808"},
    {"key_length_huge", HEARTH_E_FORMAT, "key #1 at offset"},
    {"key_too_long", HEARTH_E_LIMIT, "exceeds the limit of 65536 bytes"},
    {"key_empty", HEARTH_E_FORMAT, "is empty"},
    {"key_with_nul", HEARTH_E_FORMAT, "NUL byte"},
    {"array_count_huge", HEARTH_E_FORMAT, "key 'arr': array count 4611686018427387904"},
    {"string_array_count_huge", HEARTH_E_FORMAT, "key 'arr': array count"},
    {"nested_array", HEARTH_E_UNSUPPORTED, "key 'nested': nested array"},
    {"unknown_value_type", HEARTH_E_FORMAT, "key 'x': unknown value type 13"},
    {"unknown_element_type", HEARTH_E_FORMAT, "unknown array element type 99"},
    {"bool_value_2", HEARTH_E_FORMAT, "key 'flag': bool value 2"},
    {"bool_array_element_2", HEARTH_E_FORMAT, "bool element 2 is 2"},
    {"duplicate_key", HEARTH_E_FORMAT, "duplicate key 'general.architecture'"},
    {"duplicate_tensor", HEARTH_E_FORMAT, "duplicate tensor name 't'"},
    {"n_dims_0", HEARTH_E_FORMAT, "tensor 't': n_dims 0"},
    {"n_dims_5", HEARTH_E_FORMAT, "tensor 't': n_dims 5"},
    {"zero_dimension", HEARTH_E_FORMAT, "dimension 1 is 0"},
    {"dimension_too_big", HEARTH_E_FORMAT, "dimension 0 is 9223372036854775808"},
    {"dims_overflow", HEARTH_E_FORMAT, "element count overflows"},
    {"bytes_overflow", HEARTH_E_FORMAT, "byte size overflows"},
    {"unknown_tensor_type", HEARTH_E_FORMAT, "tensor 't': unknown tensor type id 4"},
    {"unknown_tensor_type_200", HEARTH_E_FORMAT, "unknown tensor type id 200"},
    {"row_not_whole_blocks", HEARTH_E_FORMAT, "not a multiple of the q4_K block size 256"},
    {"misaligned_offset", HEARTH_E_FORMAT, "data offset 8 is not a multiple of the alignment 32"},
    {"offset_overflow", HEARTH_E_FORMAT, "overflows"},
    {"data_past_eof", HEARTH_E_FORMAT, "extends past end of file"},
    {"overlapping_tensors", HEARTH_E_FORMAT, "tensors 't' ["},
    {"alignment_0", HEARTH_E_FORMAT, "general.alignment 0 "},
    {"alignment_3", HEARTH_E_FORMAT, "general.alignment 3 "},
    {"alignment_string", HEARTH_E_FORMAT, "general.alignment at offset"},
    {"alignment_negative", HEARTH_E_FORMAT, "general.alignment -32 "},
    {"data_section_past_eof", HEARTH_E_FORMAT, "starts past end of file (size 127)"},
};

/* The hostile image for case c (malloc'ed). */
static uint8_t *hostile_image(const hostile_case *c, size_t *n) {
    gw w;
    gw_init(&w);
    size_t cut;
    int patch_magic;
    if (!build_hostile(c->name, &w, &cut, &patch_magic)) {
        gw_free(&w);
        return NULL;
    }
    uint8_t *img = gw_finish(&w, n);
    gw_free(&w);
    if (patch_magic) img[0] = 'X';
    if (cut == (size_t)-1) *n = 10;
    else *n -= cut;
    return img;
}

TEST(hostile_files) {
    for (size_t k = 0; k < sizeof hostile / sizeof hostile[0]; k++) {
        const hostile_case *c = &hostile[k];
        size_t n;
        uint8_t *img = hostile_image(c, &n), *copy;
        CHECK(img != NULL);
        if (!img) continue;
        hearth_gguf *g = (hearth_gguf *)1;
        hearth_err err;
        memset(&err, 0, sizeof err);
        hearth_status st = open_copy(img, n, &copy, &g, &err);
        bool ok = st == c->want && g == NULL && err.code == st && strstr(err.msg, c->phrase) && err.pos >= 0 &&
                  (size_t)err.pos <= n;
        CHECK(ok);
        if (!ok) fprintf(stderr, "  %s: got %s \"%s\" (pos %lld), want %s containing \"%s\"\n", c->name,
                         hearth_status_str(st), err.msg, (long long)err.pos, hearth_status_str(c->want), c->phrase);
        if (st == HEARTH_OK) hearth_gguf_close(g);
        free(copy);
        free(img);
    }
}

TEST(error_position_points_at_the_value) {
    gw w;
    gw_init(&w);
    uint8_t two = 2;
    gw_kv_raw(&w, "k", HEARTH_GGUF_BOOL, &two, 1);
    size_t n;
    uint8_t *img = gw_finish(&w, &n), *copy;
    hearth_gguf *g;
    hearth_err err;
    CHECK_EQ(open_copy(img, n, &copy, &g, &err), HEARTH_E_FORMAT);
    CHECK_EQ(err.pos, 24 + 8 + 1 + 4); /* header, key length, key, type */
    CHECK(strstr(err.msg, "at offset 37") != NULL);
    free(copy);
    free(img);
    gw_free(&w);
}

/* ---- real models vs gguf-py goldens ---------------------------------------------------- */

/* Decode the golden escaping (\xHH) of s in place; returns the length. */
static size_t unescape(char *s) {
    size_t o = 0;
    for (size_t i = 0; s[i]; i++) {
        if (s[i] == '\\' && s[i + 1] == 'x' && s[i + 2] && s[i + 3]) {
            char hex[3] = {s[i + 2], s[i + 3], 0};
            s[o++] = (char)strtoul(hex, NULL, 16);
            i += 3;
        } else {
            s[o++] = s[i];
        }
    }
    s[o] = 0;
    return o;
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001B3ULL;
    return h;
}

static void check_golden_line(const hearth_gguf *g, char *line, int64_t *ikv, int64_t *it) {
    char *save = NULL, *tok[10] = {0};
    int nt = 0;
    for (char *t = strtok_r(line, " \n", &save); t && nt < 10; t = strtok_r(NULL, " \n", &save)) tok[nt++] = t;
    if (nt == 0 || tok[0][0] == '#') return;
    if (nt == 2) {
        unsigned long long v = strtoull(tok[1], NULL, 10);
        if (!strcmp(tok[0], "version")) CHECK_EQ(hearth_gguf_version(g), v);
        else if (!strcmp(tok[0], "alignment")) CHECK_EQ(hearth_gguf_alignment(g), v);
        else if (!strcmp(tok[0], "data_offset")) CHECK_EQ(hearth_gguf_data_offset(g), v);
        else if (!strcmp(tok[0], "n_kv")) CHECK_EQ(hearth_gguf_n_kv(g), v);
        else if (!strcmp(tok[0], "n_tensors")) CHECK_EQ(hearth_gguf_n_tensors(g), v);
        else CHECK(!"unknown golden header line");
        return;
    }
    if (!strcmp(tok[0], "kv") && nt == 4) {
        unescape(tok[1]);
        CHECK_STR(hearth_gguf_key(g, *ikv), tok[1]);
        hearth_gguf_type t = hearth_gguf_kv_type(g, *ikv);
        CHECK_STR(hearth_gguf_type_name(t), tok[2]);
        hearth_gguf_value v;
        CHECK(hearth_gguf_kv_value(g, *ikv, &v));
        switch (t) {
        case HEARTH_GGUF_UINT8: case HEARTH_GGUF_UINT16: case HEARTH_GGUF_UINT32: case HEARTH_GGUF_UINT64:
            CHECK(v.u == strtoull(tok[3], NULL, 10));
            break;
        case HEARTH_GGUF_INT8: case HEARTH_GGUF_INT16: case HEARTH_GGUF_INT32: case HEARTH_GGUF_INT64:
        case HEARTH_GGUF_BOOL:
            CHECK(v.i == strtoll(tok[3], NULL, 10));
            break;
        case HEARTH_GGUF_FLOAT32: case HEARTH_GGUF_FLOAT64:
            CHECK(v.f == strtod(tok[3], NULL)); /* exact: repr round-trips */
            break;
        case HEARTH_GGUF_STRING: {
            size_t len = strlen(tok[3]);
            CHECK(len >= 2 && tok[3][0] == '"' && tok[3][len - 1] == '"');
            tok[3][len - 1] = 0;
            size_t n = unescape(tok[3] + 1);
            hearth_span s;
            CHECK(hearth_gguf_get_str(g, tok[1], &s) && s.len == n && !memcmp(s.ptr, tok[3] + 1, n));
            break;
        }
        default: CHECK(!"unexpected scalar type");
        }
        (*ikv)++;
    } else if (!strcmp(tok[0], "arr") && nt == 5) {
        unescape(tok[1]);
        CHECK_STR(hearth_gguf_key(g, *ikv), tok[1]);
        hearth_gguf_type et;
        uint64_t n;
        CHECK(hearth_gguf_get_arr(g, tok[1], &et, &n));
        CHECK_STR(hearth_gguf_type_name(et), tok[2]);
        CHECK(n == strtoull(tok[3], NULL, 10));
        uint64_t h = 0xCBF29CE484222325ULL;
        if (et == HEARTH_GGUF_STRING) {
            for (uint64_t j = 0; j < n; j++) {
                hearth_span s;
                CHECK(hearth_gguf_arr_str(g, tok[1], j, &s));
                uint64_t len = s.len;
                h = fnv1a(fnv1a(h, &len, 8), s.ptr, s.len);
            }
        } else {
            h = fnv1a(h, hearth_gguf_arr_data(g, tok[1]), (size_t)n * value_size(et));
        }
        CHECK(h == strtoull(tok[4], NULL, 16));
        (*ikv)++;
    } else if (!strcmp(tok[0], "tensor") && nt == 7) {
        unescape(tok[1]);
        const hearth_gguf_tensor *t = hearth_gguf_tensor_at(g, *it);
        CHECK(t != NULL);
        if (!t) return;
        CHECK_STR(t->name, tok[1]);
        CHECK(hearth_gguf_find_tensor(g, tok[1]) == t);
        CHECK_EQ(t->type, atoi(tok[2]));
        CHECK_EQ(t->n_dims, atoi(tok[3]));
        char *p = tok[4];
        for (int d = 0; d < t->n_dims; d++) {
            CHECK_EQ(t->ne[d], strtoll(p, &p, 10));
            if (*p == ',') p++;
        }
        CHECK(t->offset == strtoull(tok[5], NULL, 10));
        CHECK(t->n_bytes == strtoull(tok[6], NULL, 10));
        (*it)++;
    } else {
        CHECK(!"malformed golden line");
    }
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void check_golden(const char *env, const char *golden) {
    const char *path = getenv(env);
    if (!path || !*path) TEST_SKIP("model path variable not set");
    hearth_gguf *g;
    hearth_err err;
    double t0 = now_ms();
    CHECK_EQ(hearth_gguf_open(path, &g, &err), HEARTH_OK);
    double t1 = now_ms();
    if (!g) { fprintf(stderr, "  %s\n", err.msg); return; }
    FILE *f = fopen(golden, "r");
    CHECK(f != NULL);
    if (f) {
        char *line = NULL;
        size_t cap = 0;
        int64_t ikv = 0, it = 0;
        while (getline(&line, &cap, f) > 0) check_golden_line(g, line, &ikv, &it);
        free(line);
        fclose(f);
        CHECK_EQ(ikv, hearth_gguf_n_kv(g));
        CHECK_EQ(it, hearth_gguf_n_tensors(g));
        fprintf(stderr, "  %s: open %.2f ms, %lld keys, %lld tensors match %s\n", env, t1 - t0, (long long)ikv,
                (long long)it, golden);
    }
    hearth_gguf_close(g);
}

TEST(golden_smollm2) { check_golden("HEARTH_SMOLLM2_GGUF", "tests/golden/gguf/smollm2-135m-instruct-q4_1.txt"); }
TEST(golden_gemma3) { check_golden("HEARTH_GEMMA3_GGUF", "tests/golden/gguf/gemma-3-270m-q4_k_m.txt"); }

/* ---- fuzz corpus ----------------------------------------------------------------------- */

#define CORPUS_DIR "fuzz/corpus/gguf"

/* Replays every file of the fuzz corpus (SQLite fuzzcheck's idea): nothing may crash or read
 * outside the file (the buffer is an exact-size heap copy, so ASan sees it), and the name states
 * what must happen (tools/make_gguf_corpus.py): ok_* open and are walked, bad_* are refused
 * with an error record, anything else (crash_* inputs from fuzz/fuzz_gguf.c) may go either way. */
TEST(fuzz_corpus_replay) {
    DIR *dir = opendir(CORPUS_DIR);
    CHECK(dir != NULL);
    if (!dir) { fprintf(stderr, "  cannot open %s (run from the repo root)\n", CORPUS_DIR); return; }
    int n_files = 0, n_ok = 0, n_expect_ok = 0, n_expect_bad = 0;
    struct dirent *de;
    while ((de = readdir(dir))) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", CORPUS_DIR, de->d_name);
        struct stat st;
        if (de->d_name[0] == '.' || stat(path, &st) || !S_ISREG(st.st_mode)) continue;
        FILE *f = fopen(path, "rb");
        CHECK(f != NULL);
        uint8_t *buf = malloc(st.st_size ? (size_t)st.st_size : 1);
        size_t n = f ? fread(buf, 1, (size_t)st.st_size, f) : 0;
        if (f) fclose(f);
        CHECK_EQ(n, st.st_size);
        int failed_before = test_cur_failed;
        bool want_ok = !strncmp(de->d_name, "ok_", 3), want_bad = !strncmp(de->d_name, "bad_", 4);
        n_expect_ok += want_ok;
        n_expect_bad += want_bad;
        hearth_gguf *g = (hearth_gguf *)1;
        hearth_err err;
        hearth_status st_open = hearth_gguf_open_mem(buf, n, &g, &err);
        if (st_open == HEARTH_OK) {
            n_ok++;
            walk(g, buf, n);
            hearth_gguf_close(g);
        } else {
            CHECK(g == NULL && err.code == st_open && err.msg[0] && err.pos >= 0 && (size_t)err.pos <= n);
        }
        if (want_ok) CHECK_EQ(st_open, HEARTH_OK);
        if (want_bad) CHECK(st_open != HEARTH_OK);
        if (test_cur_failed != failed_before)
            fprintf(stderr, "  in %s: %s %s\n", path, hearth_status_str(st_open), st_open ? err.msg : "");
        free(buf);
        n_files++;
    }
    closedir(dir);
    CHECK(n_files > 0 && n_expect_ok > 0 && n_expect_bad > 0);
    fprintf(stderr, "  %d corpus files (%d ok_, %d bad_): %d open\n", n_files, n_expect_ok, n_expect_bad, n_ok);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
