/*
 * safetensors.c - the safetensors reader (see safetensors.h for the format and the checks).
 *
 * Each file is mapped and its header parsed with cJSON into tensor records (names copied into
 * the handle's arena, data pointers into the mapping). After all files are read the records are
 * sorted by name, which gives lookup by binary search and the duplicate check in one pass; the
 * overlap check sorts each file's records by offset. Nothing of a half-read file escapes: on any
 * error the handle is freed and the caller gets NULL.
 */
#include "model/safetensors.h"

#include "base/arena.h"
#include "base/buf.h"
#include "base/size.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
    MAX_HEADER_BYTES = 100 << 20, /* the bound the reference implementation uses */
    MAX_SHARDS = 4096,
    MAX_INDEX_BYTES = 64 << 20,
};

typedef struct {
    const uint8_t *base;     /* the file's bytes (mapping or caller memory) */
    size_t         n_bytes;
    bool           mapped;   /* base is ours to munmap */
    const char    *name;     /* in arena: for messages */
} shard;

struct hearth_st {
    hearth_arena      arena;     /* owned: names, metadata strings */
    shard            *shards;    /* owned: [n_shards] */
    int               n_shards;
    hearth_st_tensor *tensors;   /* owned: [n_tensors], sorted by name */
    int64_t           n_tensors;
    size_t            cap_tensors;
    const char      **meta;      /* in arena: key, value, key, value ... of the first file */
    int               n_meta;
};

static const struct {
    const char *name;
    size_t      size;
    int         type;
} dtypes[HEARTH_ST_DTYPE_COUNT] = {
    [HEARTH_ST_BOOL] = {"BOOL", 1, -1},          [HEARTH_ST_U8] = {"U8", 1, -1},
    [HEARTH_ST_I8] = {"I8", 1, -1},              [HEARTH_ST_F8_E4M3] = {"F8_E4M3", 1, -1},
    [HEARTH_ST_F8_E5M2] = {"F8_E5M2", 1, -1},    [HEARTH_ST_I16] = {"I16", 2, -1},
    [HEARTH_ST_U16] = {"U16", 2, -1},            [HEARTH_ST_F16] = {"F16", 2, HEARTH_TYPE_F16},
    [HEARTH_ST_BF16] = {"BF16", 2, HEARTH_TYPE_BF16}, [HEARTH_ST_I32] = {"I32", 4, -1},
    [HEARTH_ST_U32] = {"U32", 4, -1},            [HEARTH_ST_F32] = {"F32", 4, HEARTH_TYPE_F32},
    [HEARTH_ST_I64] = {"I64", 8, -1},            [HEARTH_ST_U64] = {"U64", 8, -1},
    [HEARTH_ST_F64] = {"F64", 8, -1},
};

const char *hearth_st_dtype_name(hearth_st_dtype t) {
    return (unsigned)t < HEARTH_ST_DTYPE_COUNT ? dtypes[t].name : "unknown";
}
size_t hearth_st_dtype_size(hearth_st_dtype t) { return (unsigned)t < HEARTH_ST_DTYPE_COUNT ? dtypes[t].size : 0; }
int hearth_st_dtype_to_type(hearth_st_dtype t) { return (unsigned)t < HEARTH_ST_DTYPE_COUNT ? dtypes[t].type : -1; }

static int dtype_by_name(const char *s) {
    for (int i = 0; i < HEARTH_ST_DTYPE_COUNT; i++)
        if (!strcmp(dtypes[i].name, s)) return i;
    return -1;
}

/* A JSON number that is a non-negative integer below 2^53 (exact in a double). */
static bool json_u53(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsNumber(v)) return false;
    double d = v->valuedouble;
    if (!(d >= 0 && d < 9007199254740992.0) || d != (double)(uint64_t)d) return false;
    *out = (uint64_t)d;
    return true;
}

static hearth_st_tensor *push_tensor(hearth_st *s) {
    if (!hearth_buf_grow(&s->tensors, &s->cap_tensors, (size_t)s->n_tensors + 1, sizeof *s->tensors, 256))
        return NULL;
    hearth_st_tensor *t = &s->tensors[s->n_tensors++];
    memset(t, 0, sizeof *t);
    return t;
}

/* Parse one entry of the header object into a record. */
static hearth_status parse_entry(hearth_st *s, int ish, const cJSON *e, const uint8_t *data, size_t data_bytes,
                                 hearth_err *err) {
    const shard *sh = &s->shards[ish];
    const char *name = e->string;
    if (!cJSON_IsObject(e))
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: tensor '%.100s' is not an object", sh->name, name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    int dtype = cJSON_IsString(dt) ? dtype_by_name(dt->valuestring) : -1;
    if (dtype < 0)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: tensor '%.100s' has %s dtype %.20s", sh->name, name,
                              cJSON_IsString(dt) ? "unknown" : "no", cJSON_IsString(dt) ? dt->valuestring : "");
    if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) > HEARTH_ST_MAX_DIMS)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: tensor '%.100s' has no shape of at most %d dims",
                              sh->name, name, HEARTH_ST_MAX_DIMS);
    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: tensor '%.100s' has no data_offsets pair", sh->name,
                              name);
    hearth_st_tensor *t = push_tensor(s);
    if (!t) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    t->dtype = (hearth_st_dtype)dtype;
    t->shard = ish;
    size_t n_elem = 1;
    const cJSON *d;
    cJSON_ArrayForEach(d, shape) {
        uint64_t v;
        if (!json_u53(d, &v) || v > INT64_MAX / 2 || !hearth_mul_size(n_elem, (size_t)v, &n_elem))
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: tensor '%.100s' has a bad dimension", sh->name,
                                  name);
        t->shape[t->n_dims++] = (int64_t)v;
    }
    uint64_t begin, end;
    if (!json_u53(cJSON_GetArrayItem(offs, 0), &begin) || !json_u53(cJSON_GetArrayItem(offs, 1), &end) ||
        begin > end || end > data_bytes)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1,
                              "%s: tensor '%.100s' data_offsets are not inside the %zu-byte data section",
                              sh->name, name, data_bytes);
    size_t n_bytes;
    if (!hearth_mul_size(n_elem, dtypes[dtype].size, &n_bytes) || n_bytes != end - begin)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1,
                              "%s: tensor '%.100s' is %llu bytes, but %s x %zu elements need a different size",
                              sh->name, name, (unsigned long long)(end - begin), dtypes[dtype].name, n_elem);
    t->name = hearth_arena_strndup(&s->arena, name, strlen(name));
    if (!t->name) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    t->n_elem = (int64_t)n_elem;
    t->n_bytes = n_bytes;
    t->data = data + begin;
    return HEARTH_OK;
}

static int cmp_offset(const void *a, const void *b) {
    const hearth_st_tensor *x = a, *y = b;
    const uint8_t *px = x->data, *py = y->data;
    return px < py ? -1 : px > py ? 1 : (x->n_bytes > y->n_bytes) - (x->n_bytes < y->n_bytes);
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(((const hearth_st_tensor *)a)->name, ((const hearth_st_tensor *)b)->name);
}

/* Parse the header of shard ish (already mapped) and append its tensors. */
static hearth_status parse_shard(hearth_st *s, int ish, hearth_err *err) {
    const shard *sh = &s->shards[ish];
    if (sh->n_bytes < 8)
        return hearth_err_set(err, HEARTH_E_FORMAT, 0, "%s: %zu bytes is too short for a safetensors file", sh->name,
                              sh->n_bytes);
    uint64_t n_hdr = 0;
    for (int i = 7; i >= 0; i--) n_hdr = n_hdr << 8 | sh->base[i];
    if (n_hdr > MAX_HEADER_BYTES)
        return hearth_err_set(err, HEARTH_E_LIMIT, 0, "%s: header of %llu bytes is over the %d MiB bound", sh->name,
                              (unsigned long long)n_hdr, MAX_HEADER_BYTES >> 20);
    if (n_hdr < 2 || n_hdr > sh->n_bytes - 8)
        return hearth_err_set(err, HEARTH_E_FORMAT, 0, "%s: header length %llu does not fit the %zu-byte file",
                              sh->name, (unsigned long long)n_hdr, sh->n_bytes);
    const char *json = (const char *)sh->base + 8;
    const char *json_end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, (size_t)n_hdr, &json_end, 0);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return hearth_err_set(err, HEARTH_E_FORMAT, 8, "%s: the header is not a JSON object", sh->name);
    }
    hearth_status st = HEARTH_OK;
    /* after the object only padding spaces may follow */
    for (const char *p = json_end; p && p < json + n_hdr; p++)
        if (*p != ' ' && *p != '\n' && *p != '\t' && *p != '\r') {
            st = hearth_err_set(err, HEARTH_E_FORMAT, 8 + (p - json), "%s: bytes after the header object", sh->name);
            goto done;
        }
    const uint8_t *data = sh->base + 8 + n_hdr;
    size_t data_bytes = sh->n_bytes - 8 - (size_t)n_hdr;
    int64_t first = s->n_tensors;
    const cJSON *e;
    cJSON_ArrayForEach(e, root) {
        if (!e->string) continue;
        if (!strcmp(e->string, "__metadata__")) {
            if (!cJSON_IsObject(e)) {
                st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: __metadata__ is not an object", sh->name);
                goto done;
            }
            if (ish != 0) continue;
            int n = cJSON_GetArraySize(e);
            s->meta = hearth_arena_calloc(&s->arena, (size_t)n * 2 + 1, sizeof *s->meta);
            if (!s->meta) {
                st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
                goto done;
            }
            const cJSON *m;
            cJSON_ArrayForEach(m, e) {
                if (!cJSON_IsString(m)) {
                    st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: __metadata__ value '%.60s' is not a string",
                                        sh->name, m->string);
                    goto done;
                }
                s->meta[2 * s->n_meta] = hearth_arena_strndup(&s->arena, m->string, strlen(m->string));
                s->meta[2 * s->n_meta + 1] = hearth_arena_strndup(&s->arena, m->valuestring, strlen(m->valuestring));
                if (!s->meta[2 * s->n_meta] || !s->meta[2 * s->n_meta + 1]) {
                    st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
                    goto done;
                }
                s->n_meta++;
            }
            continue;
        }
        if ((st = parse_entry(s, ish, e, data, data_bytes, err))) goto done;
    }
    /* no two tensors of this file share a byte */
    int64_t n = s->n_tensors - first;
    if (n == 0) goto done; /* s->tensors may still be NULL */
    hearth_st_tensor *t = s->tensors + first;
    qsort(t, (size_t)n, sizeof *t, cmp_offset);
    for (int64_t i = 1; i < n; i++) {
        const uint8_t *prev_end = (const uint8_t *)t[i - 1].data + t[i - 1].n_bytes;
        if ((const uint8_t *)t[i].data < prev_end) {
            st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: tensors '%.80s' and '%.80s' overlap", sh->name,
                                t[i - 1].name, t[i].name);
            goto done;
        }
    }
done:
    cJSON_Delete(root);
    return st;
}

static hearth_status finish(hearth_st *s, hearth_err *err) {
    if (s->n_tensors == 0) return HEARTH_OK;
    qsort(s->tensors, (size_t)s->n_tensors, sizeof *s->tensors, cmp_name);
    for (int64_t i = 1; i < s->n_tensors; i++)
        if (!strcmp(s->tensors[i].name, s->tensors[i - 1].name))
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "tensor '%.100s' appears twice (%s, %s)",
                                  s->tensors[i].name, s->shards[s->tensors[i - 1].shard].name,
                                  s->shards[s->tensors[i].shard].name);
    return HEARTH_OK;
}

static hearth_st *st_new(int n_shards) {
    hearth_st *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    hearth_arena_init(&s->arena, 0);
    s->shards = calloc((size_t)n_shards, sizeof *s->shards);
    if (!s->shards) {
        free(s);
        return NULL;
    }
    return s;
}

hearth_status hearth_st_open_mem(const void *data, size_t n_bytes, hearth_st **out, hearth_err *err) {
    *out = NULL;
    hearth_st *s = st_new(1);
    if (!s) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    s->n_shards = 1;
    s->shards[0] = (shard){data, n_bytes, false, "<memory>"};
    hearth_status st = parse_shard(s, 0, err);
    if (!st) st = finish(s, err);
    if (st) {
        hearth_st_close(s);
        return st;
    }
    *out = s;
    return HEARTH_OK;
}

/* Map path into shard ish. */
static hearth_status map_shard(hearth_st *s, int ish, const char *path, hearth_err *err) {
    shard *sh = &s->shards[ish];
    const char *slash = strrchr(path, '/');
    sh->name = hearth_arena_strndup(&s->arena, slash ? slash + 1 : path, strlen(slash ? slash + 1 : path));
    if (!sh->name) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return hearth_err_set(err, HEARTH_E_IO, -1, "cannot open '%.160s': %s", path, strerror(errno));
    struct stat stt;
    if (fstat(fd, &stt) != 0 || !S_ISREG(stt.st_mode)) {
        close(fd);
        return hearth_err_set(err, HEARTH_E_IO, -1, "'%.160s' is not a regular file", path);
    }
    size_t n = (size_t)stt.st_size;
    void *map = n ? mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    int e = errno;
    close(fd);
    if (n && map == MAP_FAILED) return hearth_err_set(err, HEARTH_E_IO, -1, "cannot mmap '%.160s': %s", path, strerror(e));
    sh->base = map;
    sh->n_bytes = n;
    sh->mapped = n > 0;
    return parse_shard(s, ish, err);
}

static char *slurp(const char *path, size_t max, size_t *len) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    char *buf = NULL;
    struct stat stt;
    if (fstat(fileno(fp), &stt) == 0 && stt.st_size >= 0 && (size_t)stt.st_size <= max &&
        (buf = malloc((size_t)stt.st_size + 1)) != NULL) {
        if (fread(buf, 1, (size_t)stt.st_size, fp) != (size_t)stt.st_size) {
            free(buf);
            buf = NULL;
        } else {
            buf[stt.st_size] = 0;
            *len = (size_t)stt.st_size;
        }
    }
    fclose(fp);
    return buf;
}

static bool plain_file_name(const char *s) {
    return s[0] && s[0] != '.' && !strchr(s, '/') && strlen(s) < 256;
}

/* Sharded: open every file the index names, then check the map against what they hold. */
static hearth_status open_index(const char *dir, const char *index_path, hearth_st **out, hearth_err *err) {
    size_t len = 0;
    char *text = slurp(index_path, MAX_INDEX_BYTES, &len);
    if (!text) return hearth_err_set(err, HEARTH_E_IO, -1, "cannot read '%.160s'", index_path);
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    hearth_st *s = NULL;
    hearth_status st = HEARTH_OK;
    const cJSON *map = root ? cJSON_GetObjectItemCaseSensitive(root, "weight_map") : NULL;
    if (!cJSON_IsObject(map)) {
        st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "model.safetensors.index.json has no weight_map object");
        goto done;
    }
    /* distinct file names, in first-seen order */
    const char **files = NULL;
    int n_files = 0;
    size_t cap_files = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, map) {
        if (!cJSON_IsString(e) || !plain_file_name(e->valuestring)) {
            st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "weight_map entry '%.100s' does not name a file in the folder",
                                e->string ? e->string : "");
            goto done_files;
        }
        int j = 0;
        while (j < n_files && strcmp(files[j], e->valuestring)) j++;
        if (j < n_files) continue;
        if (n_files == MAX_SHARDS) {
            st = hearth_err_set(err, HEARTH_E_LIMIT, -1, "more than %d shards", MAX_SHARDS);
            goto done_files;
        }
        if (!hearth_buf_grow(&files, &cap_files, (size_t)n_files + 1, sizeof *files, 8)) {
            st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
            goto done_files;
        }
        files[n_files++] = e->valuestring;
    }
    if (n_files == 0) {
        st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "model.safetensors.index.json names no files");
        goto done_files;
    }
    s = st_new(n_files);
    if (!s) {
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        goto done_files;
    }
    for (int i = 0; i < n_files; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        s->n_shards = i + 1;
        if ((st = map_shard(s, i, path, err))) goto done_files;
    }
    if ((st = finish(s, err))) goto done_files;
    cJSON_ArrayForEach(e, map) {
        const hearth_st_tensor *t = hearth_st_find(s, e->string);
        if (!t) {
            st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "tensor '%.100s' of the index is not in %.100s", e->string,
                                e->valuestring);
            goto done_files;
        }
        if (strcmp(s->shards[t->shard].name, e->valuestring)) {
            st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "tensor '%.100s' is in %s, the index says %.100s",
                                e->string, s->shards[t->shard].name, e->valuestring);
            goto done_files;
        }
    }
done_files:
    free(files);
done:
    cJSON_Delete(root);
    if (st) {
        hearth_st_close(s);
        return st;
    }
    *out = s;
    return HEARTH_OK;
}

hearth_status hearth_st_open(const char *path, hearth_st **out, hearth_err *err) {
    *out = NULL;
    struct stat stt;
    if (stat(path, &stt) != 0) return hearth_err_set(err, HEARTH_E_IO, -1, "cannot open '%.160s': %s", path, strerror(errno));
    char file[4096];
    if (S_ISDIR(stt.st_mode)) {
        snprintf(file, sizeof file, "%s/model.safetensors.index.json", path);
        if (access(file, R_OK) == 0) return open_index(path, file, out, err);
        snprintf(file, sizeof file, "%s/model.safetensors", path);
        if (access(file, R_OK) != 0)
            return hearth_err_set(err, HEARTH_E_NOTFOUND, -1,
                                  "'%.160s' has neither model.safetensors nor model.safetensors.index.json", path);
        path = file;
    }
    hearth_st *s = st_new(1);
    if (!s) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    s->n_shards = 1;
    hearth_status st = map_shard(s, 0, path, err);
    if (!st) st = finish(s, err);
    if (st) {
        hearth_st_close(s);
        return st;
    }
    *out = s;
    return HEARTH_OK;
}

void hearth_st_close(hearth_st *s) {
    if (!s) return;
    for (int i = 0; i < s->n_shards; i++)
        if (s->shards[i].mapped) munmap((void *)s->shards[i].base, s->shards[i].n_bytes);
    free(s->shards);
    free(s->tensors);
    hearth_arena_fini(&s->arena);
    free(s);
}

int64_t hearth_st_n_tensors(const hearth_st *s) { return s->n_tensors; }

const hearth_st_tensor *hearth_st_tensor_at(const hearth_st *s, int64_t i) {
    return i >= 0 && i < s->n_tensors ? &s->tensors[i] : NULL;
}

const hearth_st_tensor *hearth_st_find(const hearth_st *s, const char *name) {
    int64_t lo = 0, hi = s->n_tensors;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int c = strcmp(s->tensors[mid].name, name);
        if (c == 0) return &s->tensors[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

const char *hearth_st_metadata(const hearth_st *s, const char *key) {
    for (int i = 0; i < s->n_meta; i++)
        if (!strcmp(s->meta[2 * i], key)) return s->meta[2 * i + 1];
    return NULL;
}

int hearth_st_n_shards(const hearth_st *s) { return s->n_shards; }

size_t hearth_st_file_bytes(const hearth_st *s) {
    size_t n = 0;
    for (int i = 0; i < s->n_shards; i++) n += s->shards[i].n_bytes;
    return n;
}
