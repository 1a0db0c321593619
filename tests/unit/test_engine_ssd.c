/*
 * test_engine_ssd.c - the prompt cache's disk tier in the engine (docs/engine.md "SSD tier"),
 * with the committed tiny qwen2 model: a long prompt, the engine destroyed, a new engine on the
 * same directory restores the prefix from disk (fewer tokens computed) and gives the greedy
 * tokens of a cold run; blocks evicted while running come back; idle blocks are demoted;
 * corrupted files are dropped and recomputed; a second engine on one directory is refused.
 */
#include "backend/backend.h"
#include "engine/engine.h"
#include "../models/model_harness.h"
#include "test.h"

#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#define TINY "tests/golden/tiny/tiny-qwen2.gguf"

enum { PLEN = 100, GEN = 16 };

static uint32_t lcg(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static void make_prompt(int32_t *p, int n, uint32_t seed) {
    for (int i = 0; i < n; i++) p[i] = 1 + (int32_t)(lcg(&seed) % 1999);
}

/* Greedy tokens by the forward pass alone. */
static void reference_of(const int32_t *p, int n_p, int32_t *out, int n) {
    harness *h = harness_open(TINY, 128, 256, true, 1);
    CHECK(h != NULL);
    if (!h) return;
    float *logits = malloc((size_t)h->n_vocab * sizeof(float));
    harness_run(h, p, n_p, 0, false, logits);
    for (int s = 0; s < n; s++) {
        out[s] = argmax_f(logits, h->n_vocab);
        harness_run(h, &out[s], 1, n_p + s, false, logits);
    }
    free(logits);
    harness_close(h);
}

static void make_dir(char *dir, size_t cap) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, cap, "%s/hearth_essd_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) dir[0] = 0;
}

static void rm_dir(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "  cannot remove %s\n", dir);
}

static int g_device = HEARTH_DEVICE_CPU; /* where engine() computes */
static hearth_kvq_mode g_kvq = HEARTH_KVQ_OFF; /* the KV scheme engine() asks for */
static const char *g_path = TINY;              /* the model's file (its identity) */

/* An engine with the tier in dir (NULL: none); pool_tokens of KV, prompt_cache bytes. */
static hearth_engine *engine(hearth_model *m, const char *dir, int32_t pool_tokens, int64_t prompt_cache,
                             int32_t demote, bool verify, hearth_status want) {
    hearth_engine_params ep = hearth_engine_params_default();
    ep.device = g_device;
    ep.kv_quant.mode = g_kvq;
    ep.n_threads = 2;
    ep.n_ctx = 256;
    ep.kv_f16 = 1;
    ep.debug_checks = true;
    ep.prompt_cache = prompt_cache;
    ep.kv_budget = (int64_t)hearth_kv_bytes_per_token(m, HEARTH_KV_SCHEME_F16) * pool_tokens;
    ep.ssd_cache_dir = dir;
    ep.ssd_model_path = g_path;
    ep.ssd_demote_idle = demote;
    ep.ssd_cache_verify = verify;
    hearth_engine *e = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_engine_create(m, &ep, &e, &err), want);
    if (want != HEARTH_OK) CHECK(strstr(err.msg, "in use by another hearth") != NULL);
    return e;
}

static int run_one(hearth_engine *e, const int32_t *p, int n_p, int32_t *toks, hearth_event *done) {
    hearth_request_params rp = {.prompt = p, .n_prompt = (size_t)n_p, .max_tokens = GEN,
                                .sampling = hearth_sampler_params_default(), .ignore_eog = true};
    hearth_request *r = NULL;
    hearth_err err;
    CHECK_EQ(hearth_engine_submit(e, &rp, &r, &err), HEARTH_OK);
    if (!r) return -1;
    int n = 0;
    for (;;) {
        hearth_event ev;
        CHECK_EQ(hearth_request_next(r, &ev, 20000), HEARTH_OK);
        if (ev.kind == HEARTH_EV_DONE) {
            *done = ev;
            break;
        }
        if (n < GEN) toks[n] = ev.token;
        n++;
    }
    hearth_request_release(r);
    return n;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Counters once the engine is idle and the tier has written at least `writes` blocks. */
static hearth_engine_stats settle(hearth_engine *e, int64_t writes) {
    hearth_engine_stats st = {0};
    for (int i = 0; i < 5000; i++) {
        hearth_engine_stats_get(e, &st);
        if (st.running == 0 && st.waiting == 0 && st.ssd_writes >= writes) break;
        sleep_ms(1);
    }
    return st;
}

/* The block files in dir, up to cap paths. */
static int block_files(const char *dir, char paths[][600], int cap) {
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;
    while (d && (de = readdir(d)) && n < cap)
        if (strstr(de->d_name, ".kv") && !strstr(de->d_name, ".tmp"))
            snprintf(paths[n++], 600, "%s/%s", dir, de->d_name);
    if (d) closedir(d);
    return n;
}

static void flip(const char *path, long off) {
    int fd = open(path, O_RDWR);
    unsigned char c = 0;
    if (fd < 0) return;
    if (off < 0) off += lseek(fd, 0, SEEK_END);
    if (pread(fd, &c, 1, off) == 1) {
        c ^= 0x10;
        if (pwrite(fd, &c, 1, off) != 1) c = 0;
    }
    close(fd);
}

TEST(restart_restores_the_prefix_and_the_tokens) {
    hearth_model *m = NULL;
    hearth_err err;
    CHECK_EQ(hearth_model_load(TINY, &m, &err), HEARTH_OK);
    if (!m) return;
    char dir[256];
    make_dir(dir, sizeof dir);
    int32_t p[PLEN], want[GEN], got[GEN];
    make_prompt(p, PLEN, 11);
    reference_of(p, PLEN, want, GEN);
    hearth_event done;
    /* a cold run, then the engine goes away: its cached blocks go to disk */
    hearth_engine *e = engine(m, dir, 512, -1, 0, false, HEARTH_OK);
    if (!e) return;
    CHECK_EQ(run_one(e, p, PLEN, got, &done), GEN);
    CHECK(memcmp(got, want, sizeof got) == 0);
    CHECK_EQ(done.n_cached, 0);
    hearth_engine_stats cold = settle(e, 0);
    CHECK_EQ(cold.ssd_state, 1);
    CHECK_EQ(cold.ssd_restores, 0);
    /* a second engine on the directory is refused while the first holds it */
    CHECK(engine(m, dir, 512, -1, 0, false, HEARTH_E_BUSY) == NULL);
    hearth_engine_destroy(e);
    /* a new engine: the prompt's 6 full blocks (all but its last token's) come from disk */
    e = engine(m, dir, 512, -1, 0, false, HEARTH_OK);
    if (!e) return;
    hearth_engine_stats st = settle(e, 0);
    CHECK(st.ssd_blocks >= 6);
    CHECK_EQ(run_one(e, p, PLEN, got, &done), GEN);
    CHECK(memcmp(got, want, sizeof got) == 0);
    CHECK_EQ(done.n_cached, 96);
    st = settle(e, 0);
    CHECK_EQ(st.ssd_restores, 6);
    CHECK_EQ(st.ssd_verify_failures, 0);
    CHECK(st.step_tokens < cold.step_tokens - 90); /* 96 prompt tokens not computed again */
    CHECK_EQ(st.check_failures, 0);
    hearth_engine_destroy(e);
    /* damaged files: a header byte (always caught) in one, a payload byte (caught with verify)
     * in another; each is dropped, the rest is recomputed, the tokens stay right */
    char files[16][600];
    int n = block_files(dir, files, 16);
    CHECK(n >= 6);
    for (int k = 0; k < n; k++) flip(files[k], -5); /* every payload */
    e = engine(m, dir, 512, -1, 0, true, HEARTH_OK);
    if (!e) return;
    CHECK_EQ(run_one(e, p, PLEN, got, &done), GEN);
    CHECK(memcmp(got, want, sizeof got) == 0);
    CHECK_EQ(done.n_cached, 0); /* the first block failed: nothing after it is reachable */
    st = settle(e, 0);
    CHECK_EQ(st.ssd_verify_failures, 1);
    CHECK_EQ(st.ssd_restores, 0);
    hearth_engine_destroy(e); /* writes the recomputed blocks back */
    n = block_files(dir, files, 16);
    for (int k = 0; k < n; k++) flip(files[k], 30); /* every header */
    e = engine(m, dir, 512, -1, 0, false, HEARTH_OK);
    if (!e) return;
    CHECK_EQ(run_one(e, p, PLEN, got, &done), GEN);
    CHECK(memcmp(got, want, sizeof got) == 0);
    st = settle(e, 0);
    CHECK_EQ(st.ssd_verify_failures, 1);
    CHECK_EQ(done.n_cached, 0);
    hearth_engine_destroy(e);
    rm_dir(dir);
    hearth_model_destroy(m);
}

TEST(evicted_blocks_come_back_from_disk) {
    hearth_model *m = NULL;
    hearth_err err;
    CHECK_EQ(hearth_model_load(TINY, &m, &err), HEARTH_OK);
    if (!m) return;
    char dir[256];
    make_dir(dir, sizeof dir);
    int32_t p[2][PLEN], want[GEN], got[GEN];
    make_prompt(p[0], PLEN, 21);
    make_prompt(p[1], PLEN, 22);
    reference_of(p[0], PLEN, want, GEN);
    hearth_event done;
    /* 8 blocks of pool: the second prompt evicts the first's blocks, which go to disk */
    hearth_engine *e = engine(m, dir, 128, -1, 0, false, HEARTH_OK);
    if (!e) return;
    CHECK_EQ(run_one(e, p[0], PLEN, got, &done), GEN);
    CHECK(memcmp(got, want, sizeof got) == 0);
    CHECK_EQ(run_one(e, p[1], PLEN, got, &done), GEN);
    hearth_engine_stats st = settle(e, 6);
    CHECK(st.cache_evictions >= 6);
    CHECK(st.ssd_writes >= 6);
    CHECK_EQ(run_one(e, p[0], PLEN, got, &done), GEN);
    CHECK(memcmp(got, want, sizeof got) == 0);
    CHECK_EQ(done.n_cached, 96);
    st = settle(e, 0);
    CHECK(st.ssd_restores >= 6);
    CHECK(st.ssd_hits >= 6);
    CHECK_EQ(st.check_failures, 0);
    CHECK_EQ(st.blocks_free + st.blocks_evictable, st.blocks_total);
    /* a flush drops the RAM copies and writes nothing */
    int64_t writes = -1;
    for (int i = 0; i < 100 && writes != st.ssd_writes; i++) { /* queued writes done */
        writes = st.ssd_writes;
        sleep_ms(50);
        hearth_engine_stats_get(e, &st);
    }
    CHECK(hearth_engine_cache_flush(e) > 0);
    sleep_ms(50);
    st = settle(e, 0);
    CHECK_EQ(st.ssd_writes, writes);
    CHECK_EQ(st.blocks_cached, 0);
    hearth_engine_destroy(e);
    rm_dir(dir);
    hearth_model_destroy(m);
}

TEST(idle_blocks_are_demoted) {
    hearth_model *m = NULL;
    hearth_err err;
    CHECK_EQ(hearth_model_load(TINY, &m, &err), HEARTH_OK);
    if (!m) return;
    char dir[256];
    make_dir(dir, sizeof dir);
    int32_t p[PLEN], want[GEN], got[GEN];
    make_prompt(p, PLEN, 31);
    reference_of(p, PLEN, want, GEN);
    hearth_event done;
    hearth_engine *e = engine(m, dir, 512, -1, 1, false, HEARTH_OK); /* demote after 1 s idle */
    if (!e) return;
    CHECK_EQ(run_one(e, p, PLEN, got, &done), GEN);
    hearth_engine_stats st = settle(e, 0);
    CHECK(st.blocks_cached >= 7);
    for (int i = 0; i < 100 && st.blocks_cached > 0; i++) { /* within 5 s */
        sleep_ms(50);
        hearth_engine_stats_get(e, &st);
    }
    CHECK_EQ(st.blocks_cached, 0);
    CHECK(st.ssd_demotions >= 7);
    CHECK_EQ(st.blocks_free, st.blocks_total);
    st = settle(e, st.ssd_demotions);
    CHECK_EQ(run_one(e, p, PLEN, got, &done), GEN);
    CHECK(memcmp(got, want, sizeof got) == 0);
    CHECK_EQ(done.n_cached, 96);
    hearth_engine_destroy(e);
    rm_dir(dir);
    hearth_model_destroy(m);
}

/* A quantized cache's blocks are their own namespace ("q8_0"): an f16 directory restores
 * nothing into it, and a q8_0 restart restores its own blocks and gives a cold q8_0 run's tokens. */
TEST(quantized_scheme_is_its_own_namespace) {
    g_path = "tests/golden/tiny/tiny-llama64.gguf"; /* heads of 64: q8_0 rows */
    hearth_model *m = NULL;
    hearth_err err;
    CHECK_EQ(hearth_model_load(g_path, &m, &err), HEARTH_OK);
    if (!m) return;
    char dir[256];
    make_dir(dir, sizeof dir);
    int32_t p[PLEN], f16[GEN], want[GEN], got[GEN];
    make_prompt(p, PLEN, 51);
    for (int i = 0; i < PLEN; i++) p[i] = 1 + p[i] % (hearth_model_hparams(m)->n_vocab - 1);
    hearth_event done;
    hearth_engine *e = engine(m, dir, 512, -1, 0, false, HEARTH_OK); /* f16 blocks on disk */
    if (!e) return;
    CHECK_EQ(run_one(e, p, PLEN, f16, &done), GEN);
    hearth_engine_destroy(e);
    g_kvq = HEARTH_KVQ_8;
    e = engine(m, dir, 512, -1, 0, false, HEARTH_OK);
    if (e) {
        hearth_engine_stats st = settle(e, 0);
        CHECK(st.ssd_blocks >= 6); /* the f16 files are there ... */
        CHECK_EQ(run_one(e, p, PLEN, want, &done), GEN);
        CHECK_EQ(done.n_cached, 0); /* ... and never restored into a q8_0 pool */
        st = settle(e, 0);
        CHECK_EQ(st.ssd_restores, 0);
        CHECK_EQ(st.ssd_verify_failures, 0);
        hearth_engine_destroy(e);
    }
    e = engine(m, dir, 512, -1, 0, true, HEARTH_OK);
    if (e) {
        CHECK_EQ(run_one(e, p, PLEN, got, &done), GEN);
        CHECK(memcmp(got, want, sizeof got) == 0);
        CHECK_EQ(done.n_cached, 96);
        hearth_engine_stats st = settle(e, 0);
        CHECK_EQ(st.ssd_restores, 6);
        hearth_engine_destroy(e);
    }
    g_kvq = HEARTH_KVQ_OFF;
    g_path = TINY;
    rm_dir(dir);
    hearth_model_destroy(m);
}

/* The same through a device pool (its blocks go to and from the disk through host copies): a
 * restart restores the prefix and gives the tokens the same engine gives when the prefix comes
 * from its RAM cache. Not the cold run's: on CUDA a step's arithmetic depends on its shape (a
 * prefill of the whole prompt takes the tensor-core attention and cuBLAS, the tail after a
 * cached prefix the CUDA-core kernels), and on the H200 the restored run parted from the cold
 * one; the RAM-cached run has the restored run's shape, so any difference is in the restored
 * bytes. Skipped without a GPU. */
TEST(restart_restores_on_cuda) {
    if (hearth_cuda_device_count() <= 0) TEST_SKIP("no CUDA device");
    hearth_model *m = NULL;
    hearth_err err;
    CHECK_EQ(hearth_model_load(TINY, &m, &err), HEARTH_OK);
    if (!m) return;
    g_device = HEARTH_DEVICE_CUDA;
    char dir[256], none[300];
    make_dir(dir, sizeof dir);
    snprintf(none, sizeof none, "%s/cold", dir);
    int32_t p[PLEN], want[GEN], got[GEN];
    make_prompt(p, PLEN, 41);
    hearth_event done;
    hearth_engine *e = engine(m, none, 512, -1, 0, false, HEARTH_OK); /* the device's cold tokens */
    if (e) {
        hearth_engine_device_info di;
        hearth_engine_device(e, &di);
        CHECK_STR(di.backend, "cuda");
        CHECK_EQ(run_one(e, p, PLEN, want, &done), GEN);
        hearth_engine_destroy(e);
    }
    e = engine(m, dir, 512, -1, 0, true, HEARTH_OK);
    if (e) {
        CHECK_EQ(run_one(e, p, PLEN, got, &done), GEN);
        CHECK(memcmp(got, want, sizeof got) == 0);
        CHECK_EQ(run_one(e, p, PLEN, want, &done), GEN); /* the prefix from RAM: the shape to match */
        CHECK_EQ(done.n_cached, 96);
        hearth_engine_destroy(e);
    }
    e = engine(m, dir, 512, -1, 0, true, HEARTH_OK);
    if (e) {
        CHECK_EQ(run_one(e, p, PLEN, got, &done), GEN);
        CHECK(memcmp(got, want, sizeof got) == 0);
        CHECK_EQ(done.n_cached, 96);
        hearth_engine_stats st = settle(e, 0);
        CHECK_EQ(st.ssd_restores, 6);
        CHECK_EQ(st.ssd_verify_failures, 0);
        hearth_engine_destroy(e);
    }
    g_device = HEARTH_DEVICE_CPU;
    rm_dir(dir);
    hearth_model_destroy(m);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
