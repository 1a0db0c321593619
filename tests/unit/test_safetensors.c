/*
 * test_safetensors.c - the safetensors reader (model/safetensors.h): files built here byte by
 * byte as the format defines them, every truncation of a valid file, seeded random mutations
 * (each opened from an exact-size heap copy so ASan sees any read past its end), a table of
 * hostile headers whose errors must name the tensor and the problem, and sharded folders
 * (index checks, file names that try to leave the folder), and the replay of the fuzz corpus
 * (fuzz/fuzz_safetensors.c).
 * HEARTH_ST_MUTATIONS sets the number of mutated files (default 20000).
 */
#include "model/safetensors.h"
#include "test.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A file: 8-byte little-endian header length, header (padded with spaces to pad), data. */
static uint8_t *make_file(const char *header, const uint8_t *data, size_t n_data, size_t pad, size_t *n_out) {
    size_t h = strlen(header), hp = pad ? (h + pad - 1) / pad * pad : h;
    size_t n = 8 + hp + n_data;
    uint8_t *b = malloc(n ? n : 1);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)hp >> (8 * i));
    memcpy(b + 8, header, h);
    memset(b + 8 + h, ' ', hp - h);
    if (n_data) memcpy(b + 8 + hp, data, n_data);
    *n_out = n;
    return b;
}

static hearth_status open_copy(const uint8_t *img, size_t n, uint8_t **copy, hearth_st **s, hearth_err *err) {
    *copy = malloc(n ? n : 1);
    if (n) memcpy(*copy, img, n);
    return hearth_st_open_mem(*copy, n, s, err);
}

/* Touch everything an opened handle exposes; all data must lie inside [base, base + n). */
static uint64_t walk(const hearth_st *s, const uint8_t *base, size_t n) {
    uint64_t h = 0;
    for (int64_t i = 0; i < hearth_st_n_tensors(s); i++) {
        const hearth_st_tensor *t = hearth_st_tensor_at(s, i);
        CHECK(t && t->name);
        if (!t) continue;
        CHECK(hearth_st_find(s, t->name) == t);
        const uint8_t *p = t->data;
        CHECK(p >= base && (size_t)(p - base) <= n && t->n_bytes <= n - (size_t)(p - base));
        int64_t elems = 1;
        for (int d = 0; d < t->n_dims; d++) elems *= t->shape[d];
        CHECK_EQ(elems, t->n_elem);
        CHECK_EQ((size_t)elems * hearth_st_dtype_size(t->dtype), t->n_bytes);
        for (size_t k = 0; k < t->n_bytes; k++) h += p[k];
    }
    return h;
}

static const char *VALID =
    "{\"__metadata__\":{\"format\":\"pt\"},"
    "\"b\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[16,28]},"
    "\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
    "\"w\":{\"dtype\":\"U32\",\"shape\":[1,2],\"data_offsets\":[28,36]},"
    "\"empty\":{\"dtype\":\"F16\",\"shape\":[0,5],\"data_offsets\":[36,36]},"
    "\"s\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[36,44]}}";

static uint8_t *valid_file(size_t *n) {
    uint8_t data[44];
    for (int i = 0; i < 44; i++) data[i] = (uint8_t)(i * 7 + 1);
    float a[4] = {1.0f, -2.0f, 0.5f, 3.25f};
    memcpy(data, a, 16);
    return make_file(VALID, data, sizeof data, 8, n);
}

TEST(valid_file) {
    size_t n;
    uint8_t *img = valid_file(&n), *copy;
    hearth_st *s = NULL;
    hearth_err err = {0};
    CHECK_EQ(open_copy(img, n, &copy, &s, &err), HEARTH_OK);
    if (s) {
        CHECK_EQ(hearth_st_n_tensors(s), 5);
        CHECK_STR(hearth_st_tensor_at(s, 0)->name, "a"); /* sorted by name */
        const hearth_st_tensor *a = hearth_st_find(s, "a"), *b = hearth_st_find(s, "b");
        CHECK(a && a->dtype == HEARTH_ST_F32 && a->n_dims == 1 && a->shape[0] == 4 && a->n_bytes == 16);
        float f[4];
        if (a) memcpy(f, a->data, 16);
        CHECK(a && f[1] == -2.0f && f[3] == 3.25f);
        CHECK(b && b->dtype == HEARTH_ST_BF16 && b->n_dims == 2 && b->shape[1] == 3 && b->n_elem == 6);
        const hearth_st_tensor *sc = hearth_st_find(s, "s");
        CHECK(sc && sc->n_dims == 0 && sc->n_elem == 1 && sc->n_bytes == 8);
        const hearth_st_tensor *e = hearth_st_find(s, "empty");
        CHECK(e && e->n_bytes == 0 && e->n_elem == 0);
        CHECK(hearth_st_find(s, "missing") == NULL);
        CHECK_STR(hearth_st_metadata(s, "format"), "pt");
        CHECK(hearth_st_metadata(s, "nope") == NULL);
        CHECK_EQ(hearth_st_dtype_to_type(HEARTH_ST_BF16), HEARTH_TYPE_BF16);
        CHECK_EQ(hearth_st_dtype_to_type(HEARTH_ST_U32), -1);
        walk(s, copy, n);
    }
    hearth_st_close(s);
    free(copy);
    free(img);
}

TEST(every_truncation_fails_cleanly) {
    size_t n;
    uint8_t *img = valid_file(&n);
    for (size_t len = 0; len < n; len++) {
        uint8_t *copy;
        hearth_st *s = NULL;
        hearth_err err = {0};
        hearth_status st = open_copy(img, len, &copy, &s, &err);
        CHECK(st != HEARTH_OK && s == NULL);
        CHECK(err.msg[0] != 0);
        hearth_st_close(s);
        free(copy);
    }
    free(img);
}

TEST(random_mutations) {
    size_t n;
    uint8_t *img = valid_file(&n);
    const char *env = getenv("HEARTH_ST_MUTATIONS");
    long iters = env ? atol(env) : 20000;
    uint64_t x = 0x243f6a8885a308d3ull;
    int opened = 0;
    for (long it = 0; it < iters; it++) {
        uint8_t *m = malloc(n);
        memcpy(m, img, n);
        int flips = 1 + (int)(it % 4);
        for (int k = 0; k < flips; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t at = (size_t)(x % n);
            /* bias toward the header's digits and quotes, where mutations are interesting */
            uint8_t vals[] = {'0', '9', '"', ',', ']', '}', '[', '-', '1', (uint8_t)(x >> 32)};
            m[at] = vals[(x >> 40) % sizeof vals];
        }
        size_t len = it % 7 == 0 ? (size_t)(x >> 20) % (n + 1) : n;
        uint8_t *copy;
        hearth_st *s = NULL;
        hearth_err err = {0};
        if (open_copy(m, len, &copy, &s, &err) == HEARTH_OK) {
            opened++;
            walk(s, copy, len);
        } else {
            CHECK(s == NULL && err.msg[0]);
        }
        hearth_st_close(s);
        free(copy);
        free(m);
    }
    fprintf(stderr, "  %ld mutated files, %d opened\n", iters, opened);
    CHECK(opened > 0);
    free(img);
}

/* header -> expected status and a word the message must contain (the tensor or the problem) */
static const struct {
    const char   *header;
    size_t        n_data;
    hearth_status st;
    const char   *in_msg;
} hostile[] = {
    {"[]", 0, HEARTH_E_FORMAT, "not a JSON object"},
    {"{\"x\":", 0, HEARTH_E_FORMAT, "not a JSON object"},
    {"{}xyz", 0, HEARTH_E_FORMAT, "after the header"},
    {"{\"t\":{\"dtype\":\"Q4\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, HEARTH_E_FORMAT, "'t' has unknown dtype"},
    {"{\"t\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, HEARTH_E_FORMAT, "'t' has no dtype"},
    {"{\"t\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, HEARTH_E_FORMAT, "'t' has no shape"},
    {"{\"t\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, HEARTH_E_FORMAT, "'t' has no shape"},
    {"{\"t\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, HEARTH_E_FORMAT, "'t' has a bad dimension"},
    {"{\"t\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4, HEARTH_E_FORMAT, "'t' has a bad dimension"},
    {"{\"t\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,4]}}", 4,
     HEARTH_E_FORMAT, "'t' has a bad dimension"},
    {"{\"t\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, HEARTH_E_FORMAT, "'t' has no data_offsets"},
    {"{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4, HEARTH_E_FORMAT, "'t' data_offsets"},
    {"{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,8]}}", 4, HEARTH_E_FORMAT, "'t' data_offsets"},
    {"{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, HEARTH_E_FORMAT, "'t' is 4 bytes"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
     "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, HEARTH_E_FORMAT, "overlap"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
     "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, HEARTH_E_FORMAT, "'a' appears twice"},
    {"{\"__metadata__\":{\"k\":1}}", 0, HEARTH_E_FORMAT, "__metadata__ value 'k'"},
    {"{\"t\":[1,2]}", 0, HEARTH_E_FORMAT, "'t' is not an object"},
};

TEST(hostile_headers) {
    for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
        uint8_t data[16] = {0};
        size_t n;
        uint8_t *img = make_file(hostile[i].header, data, hostile[i].n_data, 0, &n), *copy;
        hearth_st *s = NULL;
        hearth_err err = {0};
        hearth_status st = open_copy(img, n, &copy, &s, &err);
        if (st != hostile[i].st || !strstr(err.msg, hostile[i].in_msg))
            fprintf(stderr, "  case %zu: status %d, message '%s'\n", i, st, err.msg);
        CHECK_EQ(st, hostile[i].st);
        CHECK(strstr(err.msg, hostile[i].in_msg) != NULL);
        CHECK(s == NULL);
        hearth_st_close(s);
        free(copy);
        free(img);
    }
    /* header length beyond the bound, and beyond the file */
    uint8_t big[16] = {0};
    big[3] = 0x10; /* 256 MiB */
    hearth_st *s = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_st_open_mem(big, sizeof big, &s, &err), HEARTH_E_LIMIT);
    memset(big, 0, sizeof big);
    big[0] = 200;
    CHECK_EQ(hearth_st_open_mem(big, sizeof big, &s, &err), HEARTH_E_FORMAT);
    CHECK(strstr(err.msg, "does not fit") != NULL);
}

/* ---- sharded folders ---------------------------------------------------------------------- */

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK_EQ(fwrite(p, 1, n, f), n);
    fclose(f);
}

static void write_shard(const char *dir, const char *file, const char *header, size_t n_data) {
    uint8_t data[64];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)i;
    size_t n;
    uint8_t *img = make_file(header, data, n_data, 8, &n);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    write_bytes(path, img, n);
    free(img);
}

static hearth_status open_with_index(const char *dir, const char *index, hearth_err *err) {
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    write_bytes(path, index, strlen(index));
    hearth_st *s = NULL;
    hearth_status st = hearth_st_open(dir, &s, err);
    if (!st) {
        CHECK_EQ(hearth_st_n_shards(s), 2);
        CHECK_EQ(hearth_st_n_tensors(s), 3);
        const hearth_st_tensor *c = hearth_st_find(s, "c");
        CHECK(c && c->shard == 1 && ((const uint8_t *)c->data)[0] == 8);
    }
    hearth_st_close(s);
    return st;
}

TEST(sharded) {
    char dir[] = "/tmp/hearth_st_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    write_shard(dir, "m-1.safetensors",
                "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                "\"b\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[8,12]}}", 12);
    write_shard(dir, "m-2.safetensors", "{\"c\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[8,11]}}", 16);
    hearth_err err = {0};
    CHECK_EQ(open_with_index(dir, "{\"metadata\":{},\"weight_map\":{\"a\":\"m-1.safetensors\","
                                  "\"b\":\"m-1.safetensors\",\"c\":\"m-2.safetensors\"}}", &err), HEARTH_OK);
    /* the index names a tensor no shard has / the wrong shard / a path out of the folder */
    CHECK_EQ(open_with_index(dir, "{\"weight_map\":{\"a\":\"m-1.safetensors\",\"z\":\"m-2.safetensors\"}}", &err),
             HEARTH_E_FORMAT);
    CHECK(strstr(err.msg, "'z'") != NULL);
    CHECK_EQ(open_with_index(dir, "{\"weight_map\":{\"a\":\"m-2.safetensors\",\"c\":\"m-1.safetensors\"}}", &err),
             HEARTH_E_FORMAT);
    CHECK(strstr(err.msg, "the index says") != NULL);
    CHECK_EQ(open_with_index(dir, "{\"weight_map\":{\"a\":\"../m-1.safetensors\"}}", &err), HEARTH_E_FORMAT);
    CHECK_EQ(open_with_index(dir, "{\"weight_map\":{\"a\":\"/etc/passwd\"}}", &err), HEARTH_E_FORMAT);
    CHECK_EQ(open_with_index(dir, "{\"weight_map\":[]}", &err), HEARTH_E_FORMAT);
    CHECK_EQ(open_with_index(dir, "{\"weight_map\":{\"a\":\"m-3.safetensors\"}}", &err), HEARTH_E_IO);
    /* the same tensor in two shards */
    write_shard(dir, "m-2.safetensors", "{\"a\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[8,11]}}", 16);
    CHECK_EQ(open_with_index(dir, "{\"weight_map\":{\"a\":\"m-1.safetensors\",\"b\":\"m-2.safetensors\"}}", &err),
             HEARTH_E_FORMAT);
    CHECK(strstr(err.msg, "appears twice") != NULL);
    char path[512];
    const char *files[] = {"m-1.safetensors", "m-2.safetensors", "model.safetensors.index.json"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    /* an empty folder: neither file */
    hearth_st *s = NULL;
    CHECK_EQ(hearth_st_open(dir, &s, &err), HEARTH_E_NOTFOUND);
    rmdir(dir);
}

/* ---- fuzz corpus ----------------------------------------------------------------------- */

/* Every seed and crasher of fuzz/corpus/safetensors (tools/make_st_corpus.py writes the seeds
 * with the safetensors library): ok_* must open and be walked, bad_* must be refused. */
TEST(fuzz_corpus_replay) {
    DIR *d = opendir("fuzz/corpus/safetensors");
    CHECK(d != NULL);
    if (!d) return;
    struct dirent *de;
    int n = 0, n_ok = 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char path[512];
        snprintf(path, sizeof path, "fuzz/corpus/safetensors/%s", de->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        uint8_t *buf = malloc(1 << 20);
        size_t len = fread(buf, 1, 1 << 20, f);
        fclose(f);
        uint8_t *copy;
        hearth_st *s = NULL;
        hearth_err err = {0};
        hearth_status st = open_copy(buf, len, &copy, &s, &err);
        if (!strncmp(de->d_name, "ok_", 3)) CHECK_EQ(st, HEARTH_OK);
        if (!strncmp(de->d_name, "bad_", 4)) CHECK(st != HEARTH_OK);
        if (s) {
            n_ok++;
            walk(s, copy, len);
        }
        hearth_st_close(s);
        free(copy);
        free(buf);
        n++;
    }
    closedir(d);
    fprintf(stderr, "  %d corpus files, %d open\n", n, n_ok);
    CHECK(n >= 10);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
