/*
 * test_store_registry.c - the model registry (store/registry.h) over synthetic hub caches:
 * indexing, canonical rows, filters, query resolution, incremental rescans, reaping, schema
 * rebuilds; the model facts (store/facts.h) of GGUF and safetensors; units and hub helpers.
 */
#include "test.h"
#include "gguf_write.h"
#include "store_cache.h"

#include "support/kv.h"
#include "model/model.h"
#include "store/facts.h"
#include "store/hub.h"
#include "store/registry.h"
#include "store/units.h"

#include <sqlite3.h>

/* A small llama-like GGUF image: n_layer layers of n_head_kv kv heads of head_dim 16. */
static uint8_t *make_gguf(const char *arch, int n_layer, int n_head_kv, int swa, size_t *n, bool tmpl) {
    gw w;
    gw_init(&w);
    char key[128];
    gw_str(&w, "general.architecture", arch);
    gw_str(&w, "general.name", "Test Model");
    gw_str(&w, "general.license", "apache-2.0");
#define K(s) (snprintf(key, sizeof key, "%s.%s", arch, s), key)
    gw_u32(&w, K("block_count"), (uint32_t)n_layer);
    gw_u32(&w, K("embedding_length"), 64);
    gw_u32(&w, K("feed_forward_length"), 128);
    gw_u32(&w, K("attention.head_count"), 4);
    gw_u32(&w, K("attention.head_count_kv"), (uint32_t)n_head_kv);
    gw_u32(&w, K("context_length"), 2048);
    if (swa) gw_u32(&w, K("attention.sliding_window"), (uint32_t)swa);
#undef K
    const char *toks[] = {"a", "b", "c"};
    gw_arr_str(&w, "tokenizer.ggml.tokens", toks, 3);
    if (tmpl) gw_str(&w, "tokenizer.chat_template", "{% for m in messages %}{{ m.content }}{% endfor %}{{ tools }}");
    gw_tensor(&w, "token_embd.weight", HEARTH_TYPE_F32, 2, (int64_t[]){64, 3}, NULL);
    gw_tensor(&w, "output.weight", HEARTH_TYPE_F16, 2, (int64_t[]){64, 3}, NULL);
    gw_tensor(&w, "blk.0.attn_q.weight", HEARTH_TYPE_Q8_0, 2, (int64_t[]){64, 64}, NULL);
    gw_tensor(&w, "output_norm.weight", HEARTH_TYPE_F32, 1, (int64_t[]){64}, NULL);
    uint8_t *img = gw_finish(&w, n);
    gw_free(&w);
    return img;
}

/* A vision projector's header as llama.cpp's convert_hf_to_gguf.py --mmproj writes it. */
static uint8_t *make_projector(size_t *n) {
    gw w;
    gw_init(&w);
    gw_str(&w, "general.architecture", "clip");
    gw_str(&w, "general.type", "mmproj");
    gw_bool(&w, "clip.has_vision_encoder", true);
    gw_tensor(&w, "v.patch_embd.weight", HEARTH_TYPE_F32, 2, (int64_t[]){4, 2}, NULL);
    uint8_t *img = gw_finish(&w, n);
    gw_free(&w);
    return img;
}

TEST(units) {
    char b[32];
    hearth_fmt_bytes(98362432, b, sizeof b);
    CHECK_STR(b, "98.4 MB");
    hearth_fmt_bytes(512, b, sizeof b);
    CHECK_STR(b, "512 B");
    hearth_fmt_bytes(1234567890, b, sizeof b);
    CHECK_STR(b, "1.23 GB");
    hearth_fmt_count(134515008, b, sizeof b);
    CHECK_STR(b, "135M");
    int64_t v = 0;
    CHECK(hearth_parse_bytes("10GB", &v) && v == 10000000000LL);
    CHECK(hearth_parse_bytes("500 mb", &v) && v == 500000000LL);
    CHECK(hearth_parse_bytes("1.5GiB", &v) && v == 1610612736LL);
    CHECK(hearth_parse_bytes("4096", &v) && v == 4096);
    CHECK(!hearth_parse_bytes("-1GB", &v));
    CHECK(!hearth_parse_bytes("ten GB", &v));
    CHECK(!hearth_parse_bytes("10 parsecs", &v));
    CHECK(!hearth_parse_bytes("1e30", &v));
}

TEST(hub_names) {
    char b[256];
    CHECK(hearth_hub_repo_folder("QuantFactory/SmolLM2-135M", b, sizeof b));
    CHECK_STR(b, "models--QuantFactory--SmolLM2-135M");
    CHECK(hearth_hub_repo_id_of(b, b, sizeof b));
    CHECK_STR(b, "QuantFactory/SmolLM2-135M");
    CHECK(hearth_hub_repo_folder("gpt2", b, sizeof b));
    CHECK_STR(b, "models--gpt2");
    CHECK(!hearth_hub_valid_repo_id("a/b/c"));
    CHECK(!hearth_hub_valid_repo_id("a--b/c"));
    CHECK(!hearth_hub_valid_repo_id("../etc"));
    CHECK(!hearth_hub_valid_repo_id("org/"));
    CHECK(!hearth_hub_valid_repo_id("org/na me"));
    CHECK(!hearth_hub_repo_folder("x/..", b, sizeof b));
    CHECK(!hearth_hub_repo_id_of("datasets--x--y", b, sizeof b));
    CHECK(hearth_hub_match("Org/Model-GGUF/q4.gguf", "model-gguf"));
    CHECK(!hearth_hub_match("Org/Model", "other"));
}

TEST(facts_gguf) {
    size_t n;
    uint8_t *img = make_gguf("llama", 3, 2, 0, &n, true);
    hearth_gguf *g = NULL;
    CHECK(hearth_gguf_open_mem(img, n, &g, NULL) == HEARTH_OK);
    hearth_model_facts f;
    CHECK(hearth_facts_from_gguf(g, &f, NULL) == HEARTH_OK);
    CHECK_STR(f.arch, "llama");
    CHECK_STR(f.name, "Test Model");
    CHECK_STR(f.license, "apache-2.0");
    CHECK_STR(f.quant, "q8_0");
    CHECK_EQ(f.n_params, 64 * 3 * 2 + 64 * 64 + 64);
    CHECK_EQ(f.n_ctx_train, 2048);
    CHECK_EQ(f.n_vocab, 3);
    /* n_layer * n_head_kv * (head_dim + head_dim_v) * 2 bytes, head_dim = 64 / 4 */
    CHECK_EQ(f.kv_bytes_per_token, 3 * 2 * (16 + 16) * 2);
    CHECK_EQ(f.kv_swa_bytes_per_token, 0);
    CHECK_EQ(f.weight_bytes, 64 * 3 * 4 + 64 * 3 * 2 + 64 * 68 + 64 * 4);
    CHECK_EQ(f.weight_read_bytes, f.weight_bytes - 64 * 3 * 4); /* untied: the embedding is a lookup */
    CHECK(f.caps & HEARTH_CAP_SUPPORTED);
    CHECK(f.caps & HEARTH_CAP_CHAT);
    CHECK(f.caps & HEARTH_CAP_TOOLS);
    CHECK(!(f.caps & HEARTH_CAP_THINKING));
    hearth_gguf_close(g);
    free(img);

    /* gemma3: five of every six layers slide over the window */
    img = make_gguf("gemma3", 12, 1, 512, &n, false);
    CHECK(hearth_gguf_open_mem(img, n, &g, NULL) == HEARTH_OK);
    CHECK(hearth_facts_from_gguf(g, &f, NULL) == HEARTH_OK);
    CHECK_EQ(f.n_layer_swa, 10);
    CHECK_EQ(f.n_swa, 512);
    CHECK_EQ(f.kv_bytes_per_token, 12 * 1 * 32 * 2);
    CHECK_EQ(f.kv_swa_bytes_per_token, 10 * 1 * 32 * 2);
    CHECK(!(f.caps & HEARTH_CAP_CHAT));
    hearth_gguf_close(g);
    free(img);

    char caps[64];
    hearth_facts_caps_str(HEARTH_CAP_SUPPORTED | HEARTH_CAP_VISION, caps, sizeof caps);
    CHECK_STR(caps, "supported,vision");
    CHECK_EQ(hearth_facts_caps_parse(caps), HEARTH_CAP_SUPPORTED | HEARTH_CAP_VISION);
}

/* The facts agree with the engine's own KV arithmetic on a real model. */
TEST(facts_real_model) {
    const char *path = getenv("HEARTH_SMOLLM2_GGUF");
    if (!path) TEST_SKIP("HEARTH_SMOLLM2_GGUF is not set");
    hearth_model_facts f;
    hearth_err err = {0};
    CHECK(hearth_facts_gguf(path, &f, &err) == HEARTH_OK);
    hearth_model *m = NULL;
    CHECK(hearth_model_load(path, &m, &err) == HEARTH_OK);
    if (!m) return;
    CHECK_EQ(f.kv_bytes_per_token, (int64_t)hearth_kv_bytes_per_token(m, HEARTH_KV_SCHEME_F16));
    CHECK_EQ(f.kv_bytes_per_token, 30 * 3 * 128 * 2);
    CHECK_EQ(f.weight_bytes, (int64_t)hearth_model_weight_bytes(m));
    CHECK_EQ(f.n_ctx_train, hearth_model_hparams(m)->n_ctx_train);
    CHECK_STR(f.quant, "q4_1");
    hearth_model_destroy(m);
}

static void write_safetensors(const char *path) {
    const char *hdr = "{\"__metadata__\":{\"format\":\"mlx\"},"
                      "\"model.embed_tokens.weight\":{\"dtype\":\"U32\",\"shape\":[4,8],\"data_offsets\":[0,128]},"
                      "\"model.norm.weight\":{\"dtype\":\"BF16\",\"shape\":[64],\"data_offsets\":[128,256]}}";
    size_t hl = strlen(hdr);
    uint8_t *buf = calloc(1, 8 + hl + 256);
    uint64_t l = hl;
    memcpy(buf, &l, 8);
    memcpy(buf + 8, hdr, hl);
    sc_write(path, buf, 8 + hl + 256);
    free(buf);
}

TEST(facts_safetensors) {
    char dir[512], p[700];
    sc_tmpdir(dir, sizeof dir, "st");
    snprintf(p, sizeof p, "%s/config.json", dir);
    const char *cfg = "{\"model_type\":\"qwen3\",\"num_hidden_layers\":4,\"num_attention_heads\":8,"
                      "\"num_key_value_heads\":2,\"hidden_size\":64,\"head_dim\":32,\"intermediate_size\":128,"
                      "\"max_position_embeddings\":32768,\"vocab_size\":100,"
                      "\"quantization\":{\"group_size\":64,\"bits\":4}}";
    sc_write(p, cfg, strlen(cfg));
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    write_safetensors(p);
    hearth_model_facts f;
    hearth_err err = {0};
    CHECK(hearth_facts_safetensors(dir, &f, &err) == HEARTH_OK);
    CHECK_STR(f.format, "safetensors");
    CHECK_STR(f.arch, "qwen3");
    CHECK_STR(f.quant, "4-bit g64");
    CHECK_EQ(f.n_params, 4 * 8 * 8 + 64); /* packed u32 words hold 8 4-bit values */
    CHECK_EQ(f.weight_bytes, 256);
    CHECK_EQ(f.kv_bytes_per_token, 4 * 2 * 32 * 2 * 2);
    CHECK_EQ(f.n_ctx_train, 32768);
    CHECK(!(f.caps & HEARTH_CAP_SUPPORTED));
    /* a hostile header length is refused, not followed */
    FILE *fp = fopen(p, "r+b");
    uint64_t huge = (uint64_t)1 << 40;
    fwrite(&huge, 8, 1, fp);
    fclose(fp);
    CHECK(hearth_facts_safetensors(dir, &f, &err) == HEARTH_E_FORMAT);
    sc_rmrf(dir);
}

/* A hub with: org/one (two snapshots, refs/main on the newer), org/multi (two GGUF files and a
 * projector), org/split (three shards), org/gone (a dangling link), org/noref (no refs). */
static void build_hub(const char *hub) {
    size_t n, n2;
    uint8_t *img = make_gguf("llama", 2, 2, 0, &n, true);
    sc_blob(hub, "org/one", "b-old", img, n);
    sc_link(hub, "org/one", "rev-old", "one.gguf", "b-old");
    uint8_t *img2 = make_gguf("qwen2", 2, 2, 0, &n2, false);
    sc_blob(hub, "org/one", "b-new", img2, n2);
    sc_link(hub, "org/one", "rev-new", "one.gguf", "b-new");
    sc_ref(hub, "org/one", "main", "rev-new");
    sc_blob(hub, "org/multi", "q4", img, n);
    sc_blob(hub, "org/multi", "q8", img2, n2);
    size_t n3 = 0;
    uint8_t *proj = make_projector(&n3);
    sc_blob(hub, "org/multi", "proj", proj, n3);
    free(proj);
    sc_link(hub, "org/multi", "r1", "multi-q4.gguf", "q4");
    sc_link(hub, "org/multi", "r1", "sub/multi-q8.gguf", "q8");
    sc_link(hub, "org/multi", "r1", "mmproj-f16.gguf", "proj");
    sc_ref(hub, "org/multi", "main", "r1");
    sc_blob(hub, "org/split", "s1", img, n);
    sc_blob(hub, "org/split", "s2", "0123456789", 10);
    sc_blob(hub, "org/split", "s3", "01234", 5);
    sc_link(hub, "org/split", "r1", "big-00001-of-00003.gguf", "s1");
    sc_link(hub, "org/split", "r1", "big-00002-of-00003.gguf", "s2");
    sc_link(hub, "org/split", "r1", "big-00003-of-00003.gguf", "s3");
    sc_ref(hub, "org/split", "main", "r1");
    sc_link(hub, "org/gone", "r1", "gone.gguf", "missing-blob");
    sc_ref(hub, "org/gone", "main", "r1");
    sc_blob(hub, "org/noref", "x", "not a gguf file", 15);
    sc_link(hub, "org/noref", "r1", "broken.gguf", "x");
    free(img);
    free(img2);
}

static int count_rows(hearth_registry *r, const hearth_registry_filter *f) {
    hearth_registry_row *rows;
    size_t n;
    if (hearth_registry_list(r, f, &rows, &n, NULL)) return -1;
    free(rows);
    return (int)n;
}

TEST(registry_scan_list_resolve) {
    char tmp[512], hub[600], db[600];
    sc_tmpdir(tmp, sizeof tmp, "reg");
    snprintf(hub, sizeof hub, "%s/hub", tmp);
    snprintf(db, sizeof db, "%s/state/registry.sqlite", tmp);
    build_hub(hub);
    hearth_registry *r = NULL;
    hearth_err err = {0};
    CHECK(hearth_registry_open(db, &r, &err) == HEARTH_OK);
    if (!r) return;
    hearth_scan_stats s;
    CHECK(hearth_registry_scan(r, hub, NULL, &s, &err) == HEARTH_OK);
    CHECK_EQ(s.n_repos, 5);
    CHECK_EQ(s.n_models, 6); /* one x2, multi x2, split, noref */
    CHECK_EQ(s.n_added, 6);
    CHECK_EQ(s.n_errors, 1);

    hearth_registry_row *rows;
    size_t n;
    CHECK(hearth_registry_list(r, NULL, &rows, &n, &err) == HEARTH_OK);
    CHECK_EQ(n, 5);
    if (n == 5) {
        CHECK_STR(rows[0].repo_id, "org/multi");
        CHECK_STR(rows[0].file, "multi-q4.gguf");
        CHECK(rows[0].f.caps & HEARTH_CAP_VISION);
        CHECK_STR(rows[1].file, "sub/multi-q8.gguf");
        CHECK(rows[1].f.caps & HEARTH_CAP_VISION); /* the projector at the snapshot's top */
        CHECK_STR(rows[2].repo_id, "org/noref");
        CHECK(rows[2].error[0] != 0);
        CHECK_STR(rows[3].repo_id, "org/one");
        CHECK_STR(rows[3].revision, "rev-new");
        CHECK_STR(rows[3].f.arch, "qwen2");
        CHECK_STR(rows[4].repo_id, "org/split");
        CHECK(!(rows[4].f.caps & HEARTH_CAP_SUPPORTED));
        CHECK_EQ(rows[4].f.file_bytes, rows[0].f.file_bytes + 15);
        CHECK(rows[4].scanned_at > 0);
    }
    free(rows);

    hearth_registry_filter f = {.all_revisions = true};
    CHECK_EQ(count_rows(r, &f), 6);
    f = (hearth_registry_filter){.query = "MULTI"};
    CHECK_EQ(count_rows(r, &f), 2);
    f = (hearth_registry_filter){.max_bytes = 100};
    CHECK_EQ(count_rows(r, &f), 1); /* only the 15-byte non-GGUF */

    hearth_registry_row row;
    CHECK(hearth_registry_resolve(r, "org/one", &row, &err) == HEARTH_OK);
    CHECK_STR(row.revision, "rev-new");
    CHECK(hearth_registry_resolve(r, "split", &row, &err) == HEARTH_OK);
    CHECK(hearth_registry_resolve(r, "org/multi/multi-q4.gguf", &row, &err) == HEARTH_OK);
    CHECK(hearth_registry_resolve(r, "multi", &row, &err) == HEARTH_E_AMBIGUOUS);
    CHECK(strstr(err.msg, "multi-q4.gguf") && strstr(err.msg, "sub/multi-q8.gguf"));
    CHECK(hearth_registry_resolve(r, "org/", &row, &err) == HEARTH_E_AMBIGUOUS);
    CHECK(hearth_registry_resolve(r, "nothing-like-it", &row, &err) == HEARTH_E_NOTFOUND);

    /* a rescan with nothing changed re-reads nothing */
    CHECK(hearth_registry_scan(r, hub, NULL, &s, &err) == HEARTH_OK);
    CHECK_EQ(s.n_added + s.n_updated + s.n_removed, 0);
    CHECK_EQ(s.n_models, 6);

    /* refs/main moves back: canonical flips, both rows update */
    sc_ref(hub, "org/one", "main", "rev-old");
    CHECK(hearth_registry_scan(r, hub, NULL, &s, &err) == HEARTH_OK);
    CHECK_EQ(s.n_updated, 2);
    CHECK(hearth_registry_resolve(r, "org/one", &row, &err) == HEARTH_OK);
    CHECK_STR(row.revision, "rev-old");
    CHECK_STR(row.f.arch, "llama");

    /* a snapshot deleted elsewhere is reaped; a repo-limited scan reaps only that repo */
    char p[700];
    snprintf(p, sizeof p, "%s/models--org--multi/snapshots/r1/multi-q4.gguf", hub);
    unlink(p);
    snprintf(p, sizeof p, "%s/models--org--split", hub);
    sc_rmrf(p);
    CHECK(hearth_registry_scan(r, hub, "org/multi", &s, &err) == HEARTH_OK);
    CHECK_EQ(s.n_removed, 1);
    CHECK_EQ(s.n_repos, 1);
    f = (hearth_registry_filter){.query = "split"};
    CHECK_EQ(count_rows(r, &f), 1);
    CHECK(hearth_registry_scan(r, hub, NULL, &s, &err) == HEARTH_OK);
    CHECK_EQ(s.n_removed, 1);
    CHECK_EQ(count_rows(r, &f), 0);
    hearth_registry_close(r);

    /* a registry written by another schema is dropped and rebuilt */
    sqlite3 *db3;
    CHECK(sqlite3_open(db, &db3) == SQLITE_OK);
    CHECK(sqlite3_exec(db3, "PRAGMA user_version=999", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db3);
    CHECK(hearth_registry_open(db, &r, &err) == HEARTH_OK);
    CHECK_EQ(count_rows(r, NULL), 0);
    CHECK(hearth_registry_scan(r, hub, NULL, &s, &err) == HEARTH_OK);
    CHECK_EQ(s.n_added, 4);
    hearth_registry_close(r);
    sc_rmrf(tmp);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
