/*
 * test_store_fit.c - the memory contract (store/fit.h): the arithmetic on synthetic facts
 * (sliding-window capping, the largest safe context, the budget, the decode prediction), the
 * bandwidth cache, and the prediction checked against a real load: the bytes the process
 * actually maps and allocates for a model and an engine at a given context.
 */
#include "test.h"
#include "store_cache.h"

#include "base/thread.h"
#include "engine/engine.h"
#include "model/gguf.h"
#include "model/model.h"
#include "store/facts.h"
#include "store/fit.h"
#include "store/starter.h"

#include <limits.h>
#include <malloc.h>
#include <time.h>

static hearth_model_facts synthetic(void) {
    hearth_model_facts f;
    memset(&f, 0, sizeof f);
    f.weight_bytes = 1000000;
    f.weight_read_bytes = 900000;
    f.kv_bytes_per_token = 100;
    f.kv_swa_bytes_per_token = 60;
    f.n_swa = 10;
    f.n_ctx_train = 8192;
    f.act_bytes_per_token = 1000;
    f.n_vocab = 1000;
    return f;
}

TEST(fit_arithmetic) {
    hearth_model_facts f = synthetic();
    /* global layers grow with ctx, sliding ones stop at the window */
    CHECK_EQ(hearth_fit_kv_bytes(&f, 5), 5 * 100);
    CHECK_EQ(hearth_fit_kv_bytes(&f, 100), 40 * 100 + 60 * 10);
    CHECK_EQ(hearth_fit_kv_bytes(&f, 0), 0);
    int64_t runtime = (32LL << 20) + 64 * 1000 + 4 * 1000;
    CHECK_EQ(hearth_fit_transient_bytes(&f, 100), 100 * 1000 + runtime);
    CHECK_EQ(hearth_fit_transient_bytes(&f, 100000), 512 * 1000 + runtime); /* one prefill chunk */

    hearth_fit_params p = {.ctx = 4096, .budget_bytes = 1LL << 30, .bw_bytes_per_s = 10e9};
    hearth_fit r = hearth_fit_compute(&f, &p);
    CHECK_EQ(r.ctx, 4096);
    CHECK_EQ(r.kv_bytes, 40 * 4096 + 600);
    CHECK_EQ(r.total_bytes, r.weights_bytes + r.kv_bytes + r.transient_bytes);
    CHECK(r.fits);
    CHECK_EQ(r.max_ctx, 8192); /* capped by the training context */
    CHECK_EQ(r.read_bytes_per_token, 900000 + 40 * 2048 + 600);
    CHECK_NEAR(r.decode_tok_s, 0.82 * 10e9 / (double)r.read_bytes_per_token, 1e-6);

    /* a budget that allows exactly 1000 tokens */
    p.budget_bytes = f.weight_bytes + hearth_fit_kv_bytes(&f, 1000) + hearth_fit_transient_bytes(&f, 1000);
    r = hearth_fit_compute(&f, &p);
    CHECK(!r.fits);
    CHECK_EQ(r.max_ctx, 1000);
    p.ctx = 1000;
    r = hearth_fit_compute(&f, &p);
    CHECK(r.fits);
    p.ctx = 1001;
    CHECK(!hearth_fit_compute(&f, &p).fits);
    /* weights alone over the budget: no context fits */
    p.budget_bytes = 500000;
    r = hearth_fit_compute(&f, &p);
    CHECK(!r.fits);
    CHECK_EQ(r.max_ctx, 0);
    /* defaults: the engine's context, 0.75 x RAM, no speed without a bandwidth */
    hearth_fit_params d = {0};
    r = hearth_fit_compute(&f, &d);
    CHECK_EQ(r.ctx, 4096);
    CHECK(hearth_fit_ram_bytes() > 0);
    CHECK_NEAR((double)r.budget_bytes, 0.75 * (double)hearth_fit_ram_bytes(), 1.0);
    CHECK_EQ(r.decode_tok_s, 0);
    f.n_ctx_train = 2048;
    CHECK_EQ(hearth_fit_compute(&f, &d).ctx, 2048);
}

TEST(membw_cache) {
    char dir[512], path[700], date[16];
    sc_tmpdir(dir, sizeof dir, "bw");
    setenv("XDG_CACHE_HOME", dir, 1);
    snprintf(path, sizeof path, "%s/hearth", dir);
    sc_mkdirs(path);
    snprintf(path, sizeof path, "%s/hearth/membw", dir);
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%d", &tm);
    char text[256];
    int n = snprintf(text, sizeof text, "bytes_per_s=12345678900\nthreads=%d\nbuffer_bytes=1\ndate=%s\n",
                     hearth_cpu_count(), date);
    sc_write(path, text, (size_t)n);
    hearth_membw bw;
    CHECK(hearth_membw_get(false, &bw, NULL) == HEARTH_OK);
    CHECK(bw.from_cache);
    CHECK_NEAR(bw.bytes_per_s, 12345678900.0, 1);
    CHECK_STR(bw.date, date);
    CHECK_STR(bw.path, path);
    if (getenv("HEARTH_TEST_SANITIZED")) {
        unsetenv("XDG_CACHE_HOME");
        sc_rmrf(dir);
        TEST_SKIP("a real measurement is slow under sanitizers");
    }
    /* stale: measured again, and the cache rewritten with today's date */
    n = snprintf(text, sizeof text, "bytes_per_s=1\nthreads=%d\nbuffer_bytes=1\ndate=2001-01-01\n", hearth_cpu_count());
    sc_write(path, text, (size_t)n);
    CHECK(hearth_membw_get(false, &bw, NULL) == HEARTH_OK);
    CHECK(!bw.from_cache);
    CHECK(bw.bytes_per_s > 1e8); /* any machine reads faster than 100 MB/s */
    CHECK_STR(bw.date, date);
    hearth_membw again;
    CHECK(hearth_membw_get(false, &again, NULL) == HEARTH_OK);
    CHECK(again.from_cache);
    CHECK_NEAR(again.bytes_per_s, bw.bytes_per_s, 1);
    fprintf(stderr, "  memory read bandwidth: %.1f GB/s on %d threads\n", bw.bytes_per_s / 1e9, bw.n_threads);
    unsetenv("XDG_CACHE_HOME");
    sc_rmrf(dir);
}

/* Bytes of the process's mappings of path (from /proc/self/smaps). */
/* Bytes mapped from path's file. /proc/self/maps names the file the mapping resolved to (a hub
 * snapshot entry is a symlink to its blob), so match the resolved path. */
static int64_t mapped_bytes_of(const char *path) {
    char real[PATH_MAX];
    if (!realpath(path, real)) return -1;
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int64_t total = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long a, b;
        size_t n = strcspn(line, "\n");
        line[n] = 0;
        size_t rl = strlen(real);
        if (n >= rl && !strcmp(line + n - rl, real) && sscanf(line, "%lx-%lx", &a, &b) == 2)
            total += (int64_t)(b - a);
    }
    if (f) fclose(f);
    return total;
}

static int64_t status_kb(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int64_t v = -1;
    size_t n = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, n)) v = strtoll(line + n + 1, NULL, 10);
    if (f) fclose(f);
    return v;
}

static int64_t heap_bytes(void) {
    struct mallinfo2 mi = mallinfo2();
    return (int64_t)(mi.uordblks + mi.hblkhd);
}

/* The prediction against what a real load takes: the model's file mapping must match the
 * predicted weights, the heap the engine allocates for a context must match the predicted KV
 * + transient, and the peak resident set after generating must stay under the predicted total. */
TEST(fit_against_measured) {
    if (getenv("HEARTH_TEST_SANITIZED")) TEST_SKIP("sanitizers replace malloc and add shadow memory");
    const char *path = getenv("HEARTH_SMOLLM2_GGUF");
    if (!path) path = "tests/golden/tiny/tiny-qwen2.gguf";
    hearth_model_facts f;
    hearth_err err = {0};
    CHECK(hearth_facts_gguf(path, &f, &err) == HEARTH_OK);
    const int32_t ctx = 2048;
    hearth_fit_params fp = {.ctx = ctx, .budget_bytes = 1LL << 40};
    hearth_fit pred = hearth_fit_compute(&f, &fp);

    /* "5" resets the peak RSS to the current one (Linux 4.0), so earlier tests do not count */
    FILE *cr = fopen("/proc/self/clear_refs", "w");
    if (cr) {
        fputs("5", cr);
        fclose(cr);
    }
    int64_t heap0 = heap_bytes(), rss0 = status_kb("VmRSS:") * 1024;
    hearth_model *m = NULL;
    CHECK(hearth_model_load(path, &m, &err) == HEARTH_OK);
    if (!m) return;
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_ctx = ctx;
    ep.n_threads = 1;
    ep.kv_f16 = 1;
    hearth_engine *e = NULL;
    CHECK(hearth_engine_create(m, &ep, &e, &err) == HEARTH_OK);
    if (!e) {
        hearth_model_destroy(m);
        return;
    }
    int64_t mapped = mapped_bytes_of(path), heap = heap_bytes() - heap0;
    /* generate a few tokens: every weight page is read */
    int32_t prompt[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    hearth_request_params rp = {.prompt = prompt, .n_prompt = 8, .max_tokens = 8, .ignore_eog = true,
                                .sampling = hearth_sampler_params_default()};
    hearth_request *req = NULL;
    CHECK(hearth_engine_submit(e, &rp, &req, &err) == HEARTH_OK);
    hearth_event ev;
    do CHECK(hearth_request_next(req, &ev, 60000) == HEARTH_OK);
    while (ev.kind != HEARTH_EV_DONE);
    CHECK_EQ(ev.n_generated, 8);
    hearth_request_release(req);
    int64_t peak = status_kb("VmHWM:") * 1024 - rss0;

    fprintf(stderr,
            "  %s at ctx %d: weights predicted %.2f MB, mapped %.2f MB; kv + transient predicted %.2f MB, "
            "heap %.2f MB; total predicted %.2f MB, peak RSS growth %.2f MB\n",
            f.name[0] ? f.name : path, ctx, pred.weights_bytes / 1e6, mapped / 1e6,
            (pred.kv_bytes + pred.transient_bytes) / 1e6, heap / 1e6, pred.total_bytes / 1e6, peak / 1e6);
    /* the mapping is the whole file: the predicted tensor data plus the header (metadata and
     * vocab; large for a tiny model with a big vocab), to the page */
    hearth_gguf *g = NULL;
    CHECK(hearth_gguf_open(path, &g, &err) == HEARTH_OK);
    int64_t header = g ? (int64_t)hearth_gguf_data_offset(g) : 0;
    hearth_gguf_close(g);
    CHECK(mapped >= pred.weights_bytes + header);
    CHECK(mapped <= pred.weights_bytes + header + 2 * 4096);
    /* the KV cache is allocated up front: the heap holds at least it, and the predicted
     * transient covers the rest (scratch, tokenizer, logits) within its allowance */
    CHECK(heap >= pred.kv_bytes);
    CHECK(heap <= pred.kv_bytes + pred.transient_bytes);
    CHECK(heap >= pred.kv_bytes + (pred.transient_bytes - (32LL << 20)) / 2);
    /* the real peak stays under the prediction (the KV pages of unused positions are never
     * touched, so it is usually well under) */
    CHECK(peak <= pred.total_bytes);
    CHECK(peak >= pred.weights_bytes * 9 / 10);
    hearth_engine_destroy(e);
    hearth_model_destroy(m);
}

/* The starter table agrees with the real file where we have it, and the pick follows budget
 * and bandwidth. */
TEST(starter_pick) {
    size_t n;
    const hearth_starter *list = hearth_starter_list(&n);
    CHECK(n >= 2);
    for (size_t i = 1; i < n; i++) CHECK(list[i].file_bytes > list[i - 1].file_bytes);
    const char *path = getenv("HEARTH_SMOLLM2_GGUF");
    if (path) {
        hearth_model_facts real, table = hearth_starter_facts(&list[0]);
        CHECK(hearth_facts_gguf(path, &real, NULL) == HEARTH_OK);
        CHECK_EQ(table.kv_bytes_per_token, real.kv_bytes_per_token);
        CHECK_EQ(table.act_bytes_per_token, real.act_bytes_per_token);
        CHECK_EQ(table.n_ctx_train, real.n_ctx_train);
        CHECK_EQ(table.file_bytes, real.file_bytes);
        CHECK_EQ(table.n_vocab, real.n_vocab);
    }
    /* plenty of memory, unknown bandwidth: the largest */
    CHECK(hearth_starter_pick(64LL << 30, 0) == &list[n - 1]);
    /* plenty of memory, slow memory: the largest that still decodes >= 10 tok/s */
    const hearth_starter *s = hearth_starter_pick(64LL << 30, 5e9);
    CHECK(s != NULL && s != &list[n - 1]);
    if (s) {
        hearth_model_facts f = hearth_starter_facts(s);
        hearth_fit_params p = {.budget_bytes = 64LL << 30, .bw_bytes_per_s = 5e9};
        CHECK(hearth_fit_compute(&f, &p).decode_tok_s >= 10);
    }
    /* a small machine: SmolLM2 coexists */
    CHECK(hearth_starter_pick(600LL << 20, 0) == &list[0]);
    /* too small to coexist with anything, but SmolLM2 still fits */
    CHECK(hearth_starter_pick(300LL << 20, 0) == &list[0]);
    /* nothing fits */
    CHECK(hearth_starter_pick(100LL << 20, 0) == NULL);
}

TEST(starter_cached) {
    char hub[512];
    sc_tmpdir(hub, sizeof hub, "starter");
    CHECK(hearth_starter_find_cached(hub) == NULL);
    size_t n;
    const hearth_starter *list = hearth_starter_list(&n);
    sc_blob(hub, list[0].repo_id, "b", "x", 1);
    sc_link(hub, list[0].repo_id, list[0].revision, list[0].file, "b");
    sc_ref(hub, list[0].repo_id, "main", list[0].revision);
    char *p = hearth_starter_find_cached(hub);
    CHECK(p != NULL && strstr(p, list[0].file) != NULL);
    free(p);
    sc_rmrf(hub);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
