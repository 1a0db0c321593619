/*
 * test_kv_config.c - kv_config.json to per-layer cache types (engine/kv_config.h): every shape
 * mlx-optiq and mlx-bun write (a list of layer entries, one bits value per layer, a default
 * with a map or a list of layers), the layers a file leaves out, and every refusal naming what
 * is wrong (bits other than 8 / 4 / 16 / null, a layer that does not exist or is named twice, a
 * group size that is not whole 32-element blocks, malformed JSON); and where the file is found
 * beside a folder checkpoint and a GGUF file.
 */
#include "engine/kv_config.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { NL = 6 };
static hearth_kv_scheme got[NL];
static hearth_err err;

static hearth_status parse(const char *json) {
    memset(&err, 0, sizeof err);
    for (int i = 0; i < NL; i++) got[i] = hearth_kv_scheme_of(HEARTH_KV_T2, HEARTH_KV_T2); /* not a config type */
    return hearth_kv_config_parse(json, strlen(json), NL, got, &err);
}

/* got == the types of bits[] (8 / 4 / 16) per layer */
static void expect(const int bits[NL]) {
    for (int i = 0; i < NL; i++) {
        hearth_kv_type t = bits[i] == 8 ? HEARTH_KV_Q8_0 : bits[i] == 4 ? HEARTH_KV_Q4_0 : HEARTH_KV_F16;
        CHECK_EQ(got[i].k, t);
        CHECK_EQ(got[i].v, t);
    }
}

static void expect_refused(const char *json, const char *needle) {
    CHECK_EQ(parse(json), HEARTH_E_FORMAT);
    if (!strstr(err.msg, needle)) fprintf(stderr, "  message \"%s\" lacks \"%s\"\n", err.msg, needle);
    CHECK(strstr(err.msg, needle) != NULL);
}

TEST(optiq_layer_list) {
    CHECK_EQ(parse("[{\"layer_idx\": 1, \"bits\": 4, \"group_size\": 64}, {\"layer_idx\": 4, \"bits\": 8, "
                   "\"group_size\": 32}]"),
             HEARTH_OK);
    expect((const int[NL]){16, 4, 16, 16, 8, 16}); /* unnamed layers stay f16 */
}

TEST(one_bits_value_per_layer) {
    CHECK_EQ(parse("[8, 4, null, 16, 4, 8]"), HEARTH_OK);
    expect((const int[NL]){8, 4, 16, 16, 4, 8});
    expect_refused("[8, 4, 8]", "one entry per layer: 6, not 3");
}

TEST(default_and_map) {
    CHECK_EQ(parse("{\"bits\": 8, \"group_size\": 64, \"layers\": {\"0\": 4, \"5\": {\"bits\": 16}, \"2\": null}}"),
             HEARTH_OK);
    expect((const int[NL]){4, 8, 16, 8, 8, 16});
    CHECK_EQ(parse("{\"layers\": {\"3\": {\"bits\": 4}}}"), HEARTH_OK);
    expect((const int[NL]){16, 16, 16, 4, 16, 16});
    CHECK_EQ(parse("{\"bits\": 4}"), HEARTH_OK);
    expect((const int[NL]){4, 4, 4, 4, 4, 4});
}

TEST(default_and_list) {
    CHECK_EQ(parse("{\"bits\": 4, \"layers\": [{\"layer_idx\": 2, \"bits\": 8}]}"), HEARTH_OK);
    expect((const int[NL]){4, 4, 8, 4, 4, 4});
}

TEST(bits_refused_naming_layer_and_value) {
    expect_refused("[{\"layer_idx\": 3, \"bits\": 3}]", "layer 3: bits 3 is not supported");
    expect_refused("{\"layers\": {\"2\": 6}}", "layer 2: bits 6");
    expect_refused("[8, 4, 8, 2, 4, 8]", "layer 3: bits 2");
    expect_refused("{\"bits\": 5}", "the default: bits 5");
    expect_refused("[{\"layer_idx\": 1, \"bits\": \"8\"}]", "layer 1: bits must be a number");
    expect_refused("[{\"layer_idx\": 1}]", "layer 1: no \"bits\"");
}

TEST(layers_refused) {
    expect_refused("[{\"layer_idx\": 6, \"bits\": 8}]", "layer 6 does not exist (the model has 6 layers)");
    expect_refused("{\"layers\": {\"-1\": 8}}", "is not a layer index");
    expect_refused("{\"layers\": {\"x\": 8}}", "\"x\" is not a layer index");
    expect_refused("[{\"layer_idx\": 2, \"bits\": 8}, {\"layer_idx\": 2, \"bits\": 4}]", "layer 2 is named twice");
    expect_refused("[{\"bits\": 8}]", "no integer \"layer_idx\"");
    expect_refused("[{\"layer_idx\": 1.5, \"bits\": 8}]", "no integer \"layer_idx\"");
}

TEST(group_size_refused) {
    expect_refused("[{\"layer_idx\": 0, \"bits\": 8, \"group_size\": 48}]", "layer 0: group_size 48");
    expect_refused("{\"bits\": 8, \"group_size\": 16}", "the default: group_size 16");
    expect_refused("[{\"layer_idx\": 0, \"bits\": 8, \"group_size\": \"64\"}]", "group_size \"64\"");
    /* multiples of 32 other than 32 and 64: no block format of the kernels has those groups */
    expect_refused("[{\"layer_idx\": 2, \"bits\": 4, \"group_size\": 128}]",
                   "layer 2: group_size 128 is not supported: the cache quantizes blocks of 32 elements");
    expect_refused("{\"bits\": 8, \"group_size\": 96, \"layers\": {\"1\": 4}}", "the default: group_size 96");
    expect_refused("{\"layers\": {\"1\": {\"bits\": 4, \"group_size\": 65}}}", "layer 1: group_size 65");
}

TEST(group_size_accepted) {
    const int want[NL] = {4, 16, 8, 16, 16, 8};
    CHECK_EQ(parse("[{\"layer_idx\": 0, \"bits\": 4, \"group_size\": 64}, {\"layer_idx\": 2, \"bits\": 8, "
                   "\"group_size\": 32}, {\"layer_idx\": 5, \"bits\": 8, \"group_size\": null}]"),
             HEARTH_OK);
    expect(want);
}

TEST(malformed_refused) {
    expect_refused("[8, 4", "not valid JSON");
    expect_refused("\"8\"", "expected a JSON list or object");
    expect_refused("{\"layers\": 8}", "expected a list of layers");
    expect_refused("{}", "expected a list of layers");
    expect_refused("[8, {\"layer_idx\": 1, \"bits\": 4}, 8, 8, 8, 8]", "mixes numbers and objects");
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

TEST(found_beside_the_model) {
    char dir[] = "/tmp/hearth-kvcfg-XXXXXX", model[256], cfg[256], own[256], found[512];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(model, sizeof model, "%s/m.gguf", dir);
    snprintf(cfg, sizeof cfg, "%s/kv_config.json", dir);
    snprintf(own, sizeof own, "%s/m.gguf.kv_config.json", dir);
    write_file(model, "x");
    CHECK(!hearth_kv_config_find(model, found, sizeof found)); /* none yet */
    CHECK(!hearth_kv_config_find(dir, found, sizeof found));
    CHECK(!hearth_kv_config_find(NULL, found, sizeof found));
    write_file(cfg, "[]");
    CHECK(hearth_kv_config_find(model, found, sizeof found)); /* the folder's, for a GGUF in it */
    CHECK_STR(found, cfg);
    CHECK(hearth_kv_config_find(dir, found, sizeof found)); /* a checkpoint folder's */
    CHECK_STR(found, cfg);
    write_file(own, "[]");
    CHECK(hearth_kv_config_find(model, found, sizeof found)); /* the file's own comes first */
    CHECK_STR(found, own);
    /* the loader names the file in its errors */
    write_file(own, "[{\"layer_idx\": 0, \"bits\": 3}]");
    hearth_kv_scheme s[NL];
    hearth_err e = {0};
    CHECK_EQ(hearth_kv_config_load(own, NL, s, &e), HEARTH_E_FORMAT);
    CHECK(strstr(e.msg, own) != NULL && strstr(e.msg, "layer 0: bits 3") != NULL);
    CHECK_EQ(hearth_kv_config_load("/nonexistent/kv_config.json", NL, s, &e), HEARTH_E_IO);
    unlink(own);
    unlink(cfg);
    unlink(model);
    rmdir(dir);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
