/*
 * test_ssd_tier.c - the prompt cache's disk tier alone (engine/ssd_tier.h): a block written and
 * read back is the same bytes, across a reopen; the size cap deletes the least recently used;
 * flipped header bytes are always caught, flipped payload bytes only with verify; a truncated
 * file, and a file of another model or scheme under our name, are dropped; a second open of one
 * directory is refused; a directory that cannot be written serves nothing new and fails nothing.
 */
#include "engine/ssd_tier.h"
#include "test.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

enum { BS = 16, BYTES = 4096 };

static void make_dir(char *dir, size_t cap) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, cap, "%s/hearth_ssd_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) dir[0] = 0;
}

static void rm_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    char p[1024];
    while ((de = readdir(d)))
        if (de->d_name[0] != '.') {
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            unlink(p);
        }
    closedir(d);
    rmdir(dir);
}

static hearth_ssd_tier_params params(const char *dir, const char *model, const char *scheme) {
    return (hearth_ssd_tier_params){.dir = dir, .model_id = model, .scheme = scheme, .block_tokens = BS,
                                    .block_bytes = BYTES, .geometry = 7};
}

/* Block k's tokens and bytes (a pattern of its own). */
static void block_of(int k, int32_t *tok, uint8_t *bytes) {
    for (int i = 0; i < BS; i++) tok[i] = k * 100 + i;
    for (int i = 0; i < BYTES; i++) bytes[i] = (uint8_t)(k * 31 + i * 7);
}

static bool put(hearth_ssd_tier *t, int k) {
    int32_t tok[BS];
    uint8_t *b = malloc(BYTES);
    block_of(k, tok, b);
    return hearth_ssd_tier_put(t, 1000 + (uint64_t)k, k ? 999 + (uint64_t)k : 0, 0, tok, b, true);
}

/* Read block k back: 1 sound and equal, 0 not found or dropped, -1 found but different. */
static int get(hearth_ssd_tier *t, int k) {
    int32_t tok[BS];
    uint8_t want[BYTES], got[BYTES];
    block_of(k, tok, want);
    if (!hearth_ssd_tier_get(t, 1000 + (uint64_t)k, k ? 999 + (uint64_t)k : 0, 0, tok, got)) return 0;
    return memcmp(want, got, BYTES) == 0 ? 1 : -1;
}

/* The path of block k's file (the only one in dir with "-<hash>-0.kv"). */
static bool path_of(const char *dir, int k, char *out, size_t cap) {
    char tail[64];
    snprintf(tail, sizeof tail, "-%016llx-0.kv", (unsigned long long)(1000 + k));
    DIR *d = opendir(dir);
    struct dirent *de;
    bool found = false;
    while (d && (de = readdir(d)))
        if (strlen(de->d_name) > strlen(tail) && !strcmp(de->d_name + strlen(de->d_name) - strlen(tail), tail)) {
            snprintf(out, cap, "%s/%s", dir, de->d_name);
            found = true;
        }
    if (d) closedir(d);
    return found;
}

static void flip(const char *path, long off) {
    int fd = open(path, O_RDWR);
    uint8_t c = 0;
    if (fd < 0) return;
    if (off < 0) off += lseek(fd, 0, SEEK_END);
    if (pread(fd, &c, 1, off) == 1) {
        c ^= 0x40;
        if (pwrite(fd, &c, 1, off) != 1) c = 0;
    }
    close(fd);
}

TEST(round_trip_and_reopen) {
    char dir[256];
    make_dir(dir, sizeof dir);
    hearth_ssd_tier_params p = params(dir, "sha256:aa", "f16");
    hearth_ssd_tier *t = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_ssd_tier_open(&p, &t, &err), HEARTH_OK);
    if (!t) return;
    for (int k = 0; k < 4; k++) CHECK(put(t, k));
    hearth_ssd_tier_drain(t);
    CHECK(hearth_ssd_tier_has(t, 1002, 0));
    CHECK(!hearth_ssd_tier_has(t, 1002, 1));
    for (int k = 0; k < 4; k++) CHECK_EQ(get(t, k), 1);
    CHECK_EQ(get(t, 9), 0);
    hearth_ssd_tier_stats st;
    hearth_ssd_tier_stats_get(t, &st);
    CHECK_EQ(st.state, HEARTH_SSD_ON);
    CHECK_EQ(st.blocks, 4);
    CHECK_EQ(st.writes, 4);
    CHECK_EQ(st.restores, 4);
    CHECK_EQ(st.misses, 1);
    CHECK(st.bytes > 4 * BYTES);
    hearth_ssd_tier_close(t);
    /* a new process's view: the index is rebuilt from the directory */
    CHECK_EQ(hearth_ssd_tier_open(&p, &t, &err), HEARTH_OK);
    hearth_ssd_tier_stats_get(t, &st);
    CHECK_EQ(st.blocks, 4);
    for (int k = 0; k < 4; k++) CHECK_EQ(get(t, k), 1);
    /* tokens that differ under the same hash are not this block (a collision): a miss, kept */
    int32_t tok[BS];
    uint8_t buf[BYTES];
    block_of(1, tok, buf);
    tok[3]++;
    CHECK(!hearth_ssd_tier_get(t, 1001, 1000, 0, tok, buf));
    CHECK(hearth_ssd_tier_has(t, 1001, 0));
    hearth_ssd_tier_close(t);
    rm_dir(dir);
}

TEST(lru_eviction_under_max) {
    char dir[256];
    make_dir(dir, sizeof dir);
    hearth_ssd_tier_params p = params(dir, "sha256:aa", "f16");
    p.max_bytes = 3 * (BYTES + 400); /* three files (4096 bytes and a header under 400) */
    hearth_ssd_tier *t = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_ssd_tier_open(&p, &t, &err), HEARTH_OK);
    if (!t) return;
    for (int k = 0; k < 3; k++) {
        CHECK(put(t, k));
        hearth_ssd_tier_drain(t);
    }
    CHECK_EQ(get(t, 0), 1); /* 0 used again: 1 is now the least recently used */
    CHECK(put(t, 3));
    hearth_ssd_tier_drain(t);
    hearth_ssd_tier_stats st;
    hearth_ssd_tier_stats_get(t, &st);
    CHECK_EQ(st.blocks, 3);
    CHECK_EQ(st.evictions, 1);
    CHECK(st.bytes <= p.max_bytes);
    CHECK_EQ(get(t, 1), 0);
    CHECK_EQ(get(t, 0), 1);
    CHECK_EQ(get(t, 3), 1);
    char path[512];
    CHECK(!path_of(dir, 1, path, sizeof path));
    hearth_ssd_tier_close(t);
    rm_dir(dir);
}

TEST(flipped_bytes) {
    char dir[256];
    make_dir(dir, sizeof dir);
    hearth_ssd_tier_params p = params(dir, "sha256:aa", "f16");
    hearth_ssd_tier *t = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_ssd_tier_open(&p, &t, &err), HEARTH_OK);
    if (!t) return;
    for (int k = 0; k < 3; k++) CHECK(put(t, k));
    hearth_ssd_tier_drain(t);
    hearth_ssd_tier_close(t);
    char p0[512], p1[512], p2[512];
    CHECK(path_of(dir, 0, p0, sizeof p0) && path_of(dir, 1, p1, sizeof p1) && path_of(dir, 2, p2, sizeof p2));
    flip(p0, 20);  /* in the header (the model id): always caught */
    flip(p1, -10); /* in the payload: caught with verify only */
    flip(p2, -10);
    CHECK_EQ(hearth_ssd_tier_open(&p, &t, &err), HEARTH_OK); /* without verify */
    CHECK_EQ(get(t, 0), 0);
    CHECK_EQ(get(t, 1), -1); /* served: the payload's checksum is not read without verify */
    hearth_ssd_tier_stats st;
    hearth_ssd_tier_stats_get(t, &st);
    CHECK_EQ(st.verify_failures, 1);
    CHECK(access(p0, F_OK) != 0); /* dropped */
    CHECK_EQ(st.blocks, 2);
    hearth_ssd_tier_close(t);
    p.verify = true;
    CHECK_EQ(hearth_ssd_tier_open(&p, &t, &err), HEARTH_OK);
    CHECK_EQ(get(t, 2), 0);
    CHECK_EQ(get(t, 1), 0);
    hearth_ssd_tier_stats_get(t, &st);
    CHECK_EQ(st.verify_failures, 2);
    CHECK_EQ(st.blocks, 0);
    CHECK(access(p2, F_OK) != 0);
    hearth_ssd_tier_close(t);
    rm_dir(dir);
}

TEST(truncated_file_dropped) {
    char dir[256];
    make_dir(dir, sizeof dir);
    hearth_ssd_tier_params p = params(dir, "sha256:aa", "f16");
    hearth_ssd_tier *t = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_ssd_tier_open(&p, &t, &err), HEARTH_OK);
    if (!t) return;
    CHECK(put(t, 0));
    hearth_ssd_tier_drain(t);
    char p0[512];
    CHECK(path_of(dir, 0, p0, sizeof p0));
    CHECK_EQ(truncate(p0, 100 + BYTES / 2), 0);
    CHECK_EQ(get(t, 0), 0);
    hearth_ssd_tier_stats st;
    hearth_ssd_tier_stats_get(t, &st);
    CHECK_EQ(st.verify_failures, 1);
    CHECK_EQ(st.blocks, 0);
    CHECK(!hearth_ssd_tier_has(t, 1000, 0));
    /* a leftover temporary file of a killed writer goes at the next open */
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s/x.kv.5.tmp", dir);
    FILE *f = fopen(tmp, "w");
    if (f) fclose(f);
    hearth_ssd_tier_close(t);
    CHECK_EQ(hearth_ssd_tier_open(&p, &t, &err), HEARTH_OK);
    CHECK(access(tmp, F_OK) != 0);
    hearth_ssd_tier_close(t);
    rm_dir(dir);
}

TEST(other_model_or_scheme) {
    char dir[256];
    make_dir(dir, sizeof dir);
    hearth_ssd_tier_params pa = params(dir, "sha256:aa", "f16"), pb = params(dir, "sha256:bb", "f16"),
                           pc = params(dir, "sha256:aa", "q8_0");
    hearth_ssd_tier *t = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_ssd_tier_open(&pa, &t, &err), HEARTH_OK);
    if (!t) return;
    CHECK(put(t, 0));
    hearth_ssd_tier_close(t);
    char pa0[512];
    CHECK(path_of(dir, 0, pa0, sizeof pa0));
    /* another model, another scheme: not found (another namespace), and the file stays */
    const hearth_ssd_tier_params *others[2] = {&pb, &pc};
    for (int o = 0; o < 2; o++) {
        CHECK_EQ(hearth_ssd_tier_open(others[o], &t, &err), HEARTH_OK);
        CHECK_EQ(get(t, 0), 0);
        hearth_ssd_tier_stats st;
        hearth_ssd_tier_stats_get(t, &st);
        CHECK_EQ(st.blocks, 1); /* counted in the directory's size */
        CHECK_EQ(st.verify_failures, 0);
        /* A's file under the name B looks up: its header names model A, so it is dropped */
        CHECK(put(t, 0));
        hearth_ssd_tier_drain(t);
        char pb0[512] = "";
        DIR *d = opendir(dir);
        struct dirent *de;
        while (d && (de = readdir(d)))
            if (strstr(de->d_name, "-00000000000003e8-0.kv") && strcmp(de->d_name, strrchr(pa0, '/') + 1))
                snprintf(pb0, sizeof pb0, "%s/%s", dir, de->d_name);
        if (d) closedir(d);
        CHECK(pb0[0] != 0);
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "cp '%s' '%s'", pa0, pb0);
        CHECK_EQ(system(cmd), 0);
        CHECK_EQ(get(t, 0), 0);
        hearth_ssd_tier_stats_get(t, &st);
        CHECK_EQ(st.verify_failures, 1);
        CHECK(access(pb0, F_OK) != 0);
        CHECK(access(pa0, F_OK) == 0);
        hearth_ssd_tier_close(t);
    }
    CHECK_EQ(hearth_ssd_tier_open(&pa, &t, &err), HEARTH_OK);
    CHECK_EQ(get(t, 0), 1);
    hearth_ssd_tier_close(t);
    rm_dir(dir);
}

TEST(second_open_refused) {
    char dir[256];
    make_dir(dir, sizeof dir);
    hearth_ssd_tier_params p = params(dir, "sha256:aa", "f16");
    hearth_ssd_tier *t = NULL, *t2 = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_ssd_tier_open(&p, &t, &err), HEARTH_OK);
    CHECK_EQ(hearth_ssd_tier_open(&p, &t2, &err), HEARTH_E_BUSY);
    CHECK(t2 == NULL);
    CHECK(strstr(err.msg, "in use by another hearth") != NULL);
    char pid[32];
    snprintf(pid, sizeof pid, "pid %d", (int)getpid());
    CHECK(strstr(err.msg, pid) != NULL);
    hearth_ssd_tier_close(t);
    CHECK_EQ(hearth_ssd_tier_open(&p, &t2, &err), HEARTH_OK); /* free again */
    hearth_ssd_tier_close(t2);
    rm_dir(dir);
}

TEST(unwritable_dir_degrades) {
    char dir[256], sub[300];
    make_dir(dir, sizeof dir);
    /* a "directory" below a regular file can be neither made nor written */
    snprintf(sub, sizeof sub, "%s/file", dir);
    FILE *f = fopen(sub, "w");
    if (f) fclose(f);
    snprintf(sub, sizeof sub, "%s/file/cache", dir);
    hearth_ssd_tier_params p = params(sub, "sha256:aa", "f16");
    hearth_ssd_tier *t = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_ssd_tier_open(&p, &t, &err), HEARTH_OK);
    if (!t) return;
    hearth_ssd_tier_stats st;
    hearth_ssd_tier_stats_get(t, &st);
    CHECK_EQ(st.state, HEARTH_SSD_READ_ONLY);
    CHECK(!hearth_ssd_tier_writable(t));
    CHECK(!put(t, 0));
    CHECK_EQ(get(t, 0), 0);
    hearth_ssd_tier_close(t);
    /* a read-only directory (permissions bind only a user other than root) */
    char ro[300];
    snprintf(ro, sizeof ro, "%s/ro", dir);
    mkdir(ro, 0755);
    p = params(ro, "sha256:aa", "f16");
    CHECK_EQ(hearth_ssd_tier_open(&p, &t, &err), HEARTH_OK);
    CHECK(put(t, 0));
    hearth_ssd_tier_close(t);
    if (geteuid() != 0) {
        chmod(ro, 0555);
        CHECK_EQ(hearth_ssd_tier_open(&p, &t, &err), HEARTH_OK);
        hearth_ssd_tier_stats_get(t, &st);
        CHECK_EQ(st.state, HEARTH_SSD_READ_ONLY);
        CHECK_EQ(get(t, 0), 1); /* what is there is still read */
        CHECK(!put(t, 1));
        hearth_ssd_tier_close(t);
        chmod(ro, 0755);
    }
    /* the directory deleted while in use: the next write fails, the tier turns read-only */
    CHECK_EQ(hearth_ssd_tier_open(&p, &t, &err), HEARTH_OK);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", ro);
    CHECK_EQ(system(cmd), 0);
    CHECK(put(t, 1));
    hearth_ssd_tier_drain(t);
    hearth_ssd_tier_stats_get(t, &st);
    CHECK_EQ(st.state, HEARTH_SSD_READ_ONLY);
    CHECK_EQ(st.write_errors, 1);
    CHECK(!put(t, 2));
    CHECK_EQ(get(t, 0), 0); /* its file is gone: a miss, not a failure */
    hearth_ssd_tier_close(t);
    rm_dir(dir);
}

TEST(model_id) {
    char dir[256], path[400], id[HEARTH_SSD_MODEL_ID_MAX], id2[HEARTH_SSD_MODEL_ID_MAX];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/m.gguf", dir);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("weights", f);
        fclose(f);
    }
    hearth_err err = {0};
    double ms = -1;
    CHECK_EQ(hearth_ssd_model_id(path, id, &ms, &err), HEARTH_OK);
    CHECK(!strncmp(id, "xxh128:", 7) && strlen(id) == 7 + 32);
    CHECK(ms >= 0);
    f = fopen(path, "a");
    if (f) {
        fputs("!", f);
        fclose(f);
    }
    CHECK_EQ(hearth_ssd_model_id(path, id2, NULL, &err), HEARTH_OK);
    CHECK(strcmp(id, id2) != 0);
    /* a hub blob named by its sha256, through a symlink */
    char blob[500], link[500];
    snprintf(blob, sizeof blob, "%s/%s", dir, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    snprintf(link, sizeof link, "%s/model.gguf", dir);
    f = fopen(blob, "w");
    if (f) fclose(f);
    CHECK_EQ(symlink(blob, link), 0);
    CHECK_EQ(hearth_ssd_model_id(link, id, NULL, &err), HEARTH_OK);
    CHECK_STR(id, "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    CHECK(hearth_ssd_model_id("/nonexistent/model.gguf", id, NULL, &err) != HEARTH_OK);
    rm_dir(dir);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
