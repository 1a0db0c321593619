/*
 * test_store_modality.c - store/modality.h over fixture files made here: safetensors snapshots
 * with and without a vision_config and tower weights (single file and sharded index), GGUF
 * models with llama.cpp-style projectors beside them (vision, audio-only, misnamed, corrupt,
 * two at once, in a hub snapshot's top folder), and the registry's vision capability built on
 * the same probe.
 */
#include "test.h"
#include "gguf_write.h"
#include "store_cache.h"

#include "base/file.h"
#include "store/facts.h"
#include "store/modality.h"
#include "store/registry.h"

/* A safetensors file at path holding one f32 scalar-row tensor per name. */
static void write_st(const char *path, const char *const *names, int n) {
    char hdr[4096];
    size_t off = 0;
    int w = snprintf(hdr, sizeof hdr, "{");
    for (int i = 0; i < n; i++)
        w += snprintf(hdr + w, sizeof hdr - (size_t)w, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[%zu,%zu]}",
                      i ? "," : "", names[i], off, off + 4), off += 4;
    w += snprintf(hdr + w, sizeof hdr - (size_t)w, "}");
    while (w % 8) hdr[w++] = ' ';
    FILE *f = fopen(path, "wb");
    uint64_t len = (uint64_t)w;
    float zero[64] = {0};
    CHECK(f && fwrite(&len, 8, 1, f) == 1 && fwrite(hdr, 1, (size_t)w, f) == (size_t)w &&
          fwrite(zero, 4, (size_t)n, f) == (size_t)n);
    if (f) fclose(f);
}

static void write_text(const char *dir, const char *name, const char *text) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    sc_write(p, text, strlen(text));
}

static const char *cfg_vision = "{\"architectures\":[\"Gemma3ForConditionalGeneration\"],\"model_type\":\"gemma3\","
                                "\"text_config\":{\"model_type\":\"gemma3_text\"},"
                                "\"vision_config\":{\"model_type\":\"siglip_vision_model\"}}";

/* A snapshot folder (dir) with config text and one safetensors file of names. */
static void make_snapshot(char *dir, size_t cap, const char *tag, const char *cfg, const char *const *names, int n) {
    sc_tmpdir(dir, cap, tag);
    write_text(dir, "config.json", cfg);
    char p[1024];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    write_st(p, names, n);
}

TEST(safetensors_vision_needs_config_and_tower) {
    char dir[512];
    hearth_modality m;
    hearth_err err = {0};
    /* Gemma 3: vision_config and "model.vision_tower..." weights */
    const char *g3[] = {"model.language_model.embed_tokens.weight",
                        "model.vision_tower.vision_model.embeddings.patch_embedding.weight",
                        "model.multi_modal_projector.mm_input_projection_weight"};
    make_snapshot(dir, sizeof dir, "mod-g3", cfg_vision, g3, 3);
    CHECK_EQ(hearth_modality_probe(dir, &m, &err), HEARTH_OK);
    CHECK(m.vision && !m.audio);
    CHECK(m.projector[0] == 0);
    CHECK(strstr(m.source, "vision tower weights") != NULL);
    hearth_model_facts f;
    CHECK_EQ(hearth_facts_safetensors(dir, &f, &err), HEARTH_OK);
    CHECK(f.caps & HEARTH_CAP_VISION); /* facts take the same answer */
    sc_rmrf(dir);

    /* a text-only conversion that kept the multimodal config: no tower, no vision */
    const char *text_only[] = {"language_model.model.embed_tokens.weight", "language_model.model.norm.weight"};
    make_snapshot(dir, sizeof dir, "mod-txt", cfg_vision, text_only, 2);
    CHECK_EQ(hearth_modality_probe(dir, &m, &err), HEARTH_OK);
    CHECK(!m.vision);
    CHECK(strstr(m.source, "no vision tower weights") != NULL);
    CHECK_EQ(hearth_facts_safetensors(dir, &f, &err), HEARTH_OK);
    CHECK(!(f.caps & HEARTH_CAP_VISION));
    sc_rmrf(dir);

    /* tower-like names without a vision_config: not a vision model */
    const char *visual[] = {"model.visual.blocks.0.attn.qkv.weight", "model.embed_tokens.weight"};
    make_snapshot(dir, sizeof dir, "mod-nocfg", "{\"model_type\":\"qwen2\"}", visual, 2);
    CHECK_EQ(hearth_modality_probe(dir, &m, &err), HEARTH_OK);
    CHECK(!m.vision);
    sc_rmrf(dir);

    /* a name component must match whole: "visualizer" is not "visual" */
    const char *near[] = {"model.visualizer.weight", "model.vision_towers2.weight"};
    make_snapshot(dir, sizeof dir, "mod-near", cfg_vision, near, 2);
    CHECK_EQ(hearth_modality_probe(dir, &m, &err), HEARTH_OK);
    CHECK(!m.vision);
    sc_rmrf(dir);

    /* audio: audio_config and audio tower weights; vision_config without a tower stays off */
    const char *audio[] = {"model.audio_tower.layers.0.weight", "model.language_model.embed_tokens.weight"};
    make_snapshot(dir, sizeof dir, "mod-audio",
                  "{\"model_type\":\"gemma3n\",\"audio_config\":{},\"vision_config\":{}}", audio, 2);
    CHECK_EQ(hearth_modality_probe(dir, &m, &err), HEARTH_OK);
    CHECK(m.audio && !m.vision);
    sc_rmrf(dir);
}

TEST(safetensors_sharded_index) {
    char dir[512];
    sc_tmpdir(dir, sizeof dir, "mod-idx");
    /* Qwen2.5-VL: the index names the tower; the shards themselves are not opened */
    write_text(dir, "config.json", "{\"model_type\":\"qwen2_5_vl\",\"vision_config\":{\"depth\":32}}");
    write_text(dir, "model.safetensors.index.json",
               "{\"metadata\":{},\"weight_map\":{\"model.language_model.embed_tokens.weight\":\"model-00001-of-00002.safetensors\","
               "\"model.visual.patch_embed.proj.weight\":\"model-00002-of-00002.safetensors\"}}");
    hearth_modality m;
    hearth_err err = {0};
    CHECK_EQ(hearth_modality_probe(dir, &m, &err), HEARTH_OK);
    CHECK(m.vision);
    /* an index without a weight_map is malformed, and the error names the file */
    write_text(dir, "model.safetensors.index.json", "{\"metadata\":{}}");
    CHECK_EQ(hearth_modality_probe(dir, &m, &err), HEARTH_E_FORMAT);
    CHECK(strstr(err.msg, "model.safetensors.index.json") != NULL);
    sc_rmrf(dir);
}

TEST(bad_input) {
    char dir[512];
    hearth_modality m;
    hearth_err err = {0};
    CHECK_EQ(hearth_modality_probe("/nonexistent/hearth-model.gguf", &m, &err), HEARTH_E_NOTFOUND);
    CHECK(strstr(err.msg, "/nonexistent/hearth-model.gguf") != NULL);
    CHECK_EQ(hearth_modality_probe(NULL, &m, &err), HEARTH_E_NOTFOUND);
    sc_tmpdir(dir, sizeof dir, "mod-bad");
    CHECK_EQ(hearth_modality_probe(dir, &m, &err), HEARTH_E_NOTFOUND); /* a folder without config.json */
    CHECK(strstr(err.msg, "config.json") != NULL);
    write_text(dir, "config.json", "[1, 2]");
    CHECK_EQ(hearth_modality_probe(dir, &m, &err), HEARTH_E_FORMAT);
    CHECK(strstr(err.msg, "not a JSON object") != NULL);
    /* a truncated safetensors file beside a vision_config: an error naming the file */
    write_text(dir, "config.json", cfg_vision);
    write_text(dir, "model.safetensors", "\x40\0\0\0\0\0\0\0{\"a\":");
    CHECK_EQ(hearth_modality_probe(dir, &m, &err), HEARTH_E_FORMAT);
    CHECK(strstr(err.msg, "model.safetensors") != NULL);
    CHECK(!m.vision);
    sc_rmrf(dir);
}

/* A minimal llama GGUF model at dir/name. */
static void write_model_gguf(const char *dir, const char *name) {
    gw w;
    gw_init(&w);
    gw_str(&w, "general.architecture", "llama");
    gw_u32(&w, "llama.block_count", 1);
    gw_u32(&w, "llama.embedding_length", 8);
    gw_tensor(&w, "token_embd.weight", HEARTH_TYPE_F32, 2, (int64_t[]){8, 2}, NULL);
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    CHECK(gw_write_file(&w, p));
    gw_free(&w);
}

/* A projector as llama.cpp's convert_hf_to_gguf.py --mmproj writes its header. */
static void write_projector(const char *dir, const char *name, bool vision, bool audio, bool typed) {
    gw w;
    gw_init(&w);
    gw_str(&w, "general.architecture", "clip");
    if (typed) gw_str(&w, "general.type", "mmproj");
    gw_bool(&w, "clip.has_vision_encoder", vision);
    gw_bool(&w, "clip.has_audio_encoder", audio);
    if (vision) gw_str(&w, "clip.projector_type", "gemma3");
    gw_tensor(&w, "v.patch_embd.weight", HEARTH_TYPE_F32, 2, (int64_t[]){4, 2}, NULL);
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    CHECK(gw_write_file(&w, p));
    gw_free(&w);
}

TEST(gguf_projector_beside) {
    char dir[512], model[1024], proj[1024];
    hearth_modality m;
    hearth_err err = {0};
    sc_tmpdir(dir, sizeof dir, "mod-gguf");
    write_model_gguf(dir, "gemma-3-4b-it-Q4_K_M.gguf");
    snprintf(model, sizeof model, "%s/gemma-3-4b-it-Q4_K_M.gguf", dir);
    CHECK_EQ(hearth_modality_probe(model, &m, &err), HEARTH_OK);
    CHECK(!m.vision && !m.audio && !m.projector[0]);

    /* a file named like a projector that is a model: the header decides, not the name */
    write_model_gguf(dir, "mmproj-not-really.gguf");
    CHECK_EQ(hearth_modality_probe(model, &m, &err), HEARTH_OK);
    CHECK(!m.vision);
    /* a corrupt one is skipped and said */
    write_text(dir, "mmproj-broken.gguf", "GGUF\x03");
    CHECK_EQ(hearth_modality_probe(model, &m, &err), HEARTH_OK);
    CHECK(!m.vision);
    CHECK(strstr(m.note, "mmproj-broken.gguf") != NULL);
    /* a projector with neither encoder gives nothing */
    write_projector(dir, "mmproj-none.gguf", false, false, true);
    CHECK_EQ(hearth_modality_probe(model, &m, &err), HEARTH_OK);
    CHECK(!m.vision && !m.audio && !m.projector[0]);
    /* an audio-only projector gives audio, not vision */
    write_projector(dir, "mmproj-audio.gguf", false, true, true);
    CHECK_EQ(hearth_modality_probe(model, &m, &err), HEARTH_OK);
    CHECK(m.audio && !m.vision);
    snprintf(proj, sizeof proj, "%s/mmproj-audio.gguf", dir);
    CHECK_STR(m.projector, proj);
    /* a vision projector beats the audio-only one although its name sorts later; the audio
     * projector still gives the model audio */
    write_projector(dir, "mmproj-model-f32.gguf", true, false, true);
    CHECK_EQ(hearth_modality_probe(model, &m, &err), HEARTH_OK);
    CHECK(m.vision && m.audio);
    snprintf(proj, sizeof proj, "%s/mmproj-model-f32.gguf", dir);
    CHECK_STR(m.projector, proj);
    /* two vision projectors (with and without general.type): the first by name wins */
    write_projector(dir, "MMPROJ-model-f16.gguf", true, false, false);
    CHECK_EQ(hearth_modality_probe(model, &m, &err), HEARTH_OK);
    CHECK(m.vision && m.audio);
    snprintf(proj, sizeof proj, "%s/MMPROJ-model-f16.gguf", dir);
    CHECK_STR(m.projector, proj);
    CHECK(strstr(m.source, "MMPROJ-model-f16.gguf") != NULL);
    bool v = false, a = true;
    CHECK(hearth_modality_is_projector(proj, &v, &a, &err) && v && !a);
    CHECK(!hearth_modality_is_projector(model, &v, &a, &err) && !v && !a);

    /* the facts of the GGUF say vision too */
    hearth_model_facts f;
    CHECK_EQ(hearth_facts_gguf(model, &f, &err), HEARTH_OK);
    CHECK(f.caps & HEARTH_CAP_VISION);
    /* a projector in another folder is not beside the model */
    char other[512];
    sc_tmpdir(other, sizeof other, "mod-other");
    write_model_gguf(other, "model.gguf");
    snprintf(model, sizeof model, "%s/model.gguf", other);
    CHECK_EQ(hearth_modality_probe(model, &m, &err), HEARTH_OK);
    CHECK(!m.vision);
    sc_rmrf(other);
    sc_rmrf(dir);
}

TEST(gguf_in_snapshot_subfolder) {
    char hub[512], snap[700], sub[800], model[1024];
    sc_tmpdir(hub, sizeof hub, "mod-hub");
    snprintf(snap, sizeof snap, "%s/models--org--m/snapshots/abc123", hub);
    snprintf(sub, sizeof sub, "%s/Q4_K_M", snap);
    sc_mkdirs(sub);
    write_model_gguf(sub, "m-Q4_K_M.gguf");
    snprintf(model, sizeof model, "%s/m-Q4_K_M.gguf", sub);
    hearth_modality m;
    hearth_err err = {0};
    CHECK_EQ(hearth_modality_probe(model, &m, &err), HEARTH_OK);
    CHECK(!m.vision);
    write_projector(snap, "mmproj-F16.gguf", true, false, true); /* at the snapshot's top */
    CHECK_EQ(hearth_modality_probe(model, &m, &err), HEARTH_OK);
    CHECK(m.vision);
    CHECK(strstr(m.projector, "/abc123/mmproj-F16.gguf") != NULL);
    sc_rmrf(hub);
}

/* A hub snapshot links its files into blobs/: the projector is found beside the link, not the
 * blob (a blob's folder holds hashes). */
TEST(gguf_hub_links) {
    char hub[512], tmp[600], model[1024];
    sc_tmpdir(hub, sizeof hub, "mod-links");
    snprintf(tmp, sizeof tmp, "%s/scratch", hub);
    sc_mkdirs(tmp);
    write_model_gguf(tmp, "m.gguf");
    write_projector(tmp, "p.gguf", true, false, true);
    char p[700];
    size_t n = 0;
    snprintf(p, sizeof p, "%s/m.gguf", tmp);
    char *bytes = hearth_file_read(p, 1 << 20, &n);
    sc_blob(hub, "org/m", "b-model", bytes, n);
    free(bytes);
    snprintf(p, sizeof p, "%s/p.gguf", tmp);
    bytes = hearth_file_read(p, 1 << 20, &n);
    sc_blob(hub, "org/m", "b-proj", bytes, n);
    free(bytes);
    sc_link(hub, "org/m", "r1", "m-Q8_0.gguf", "b-model");
    sc_link(hub, "org/m", "r1", "mmproj-m-f16.gguf", "b-proj");
    snprintf(model, sizeof model, "%s/models--org--m/snapshots/r1/m-Q8_0.gguf", hub);
    hearth_modality m;
    hearth_err err = {0};
    CHECK_EQ(hearth_modality_probe(model, &m, &err), HEARTH_OK);
    CHECK(m.vision);
    CHECK(strstr(m.projector, "/snapshots/r1/mmproj-m-f16.gguf") != NULL);
    snprintf(model, sizeof model, "%s/models--org--m/blobs/b-model", hub);
    CHECK_EQ(hearth_modality_probe(model, &m, &err), HEARTH_OK);
    CHECK(!m.vision); /* the blob itself has no projector beside it */
    sc_rmrf(hub);
}

TEST(registry_vision_from_probe) {
    char hub[512], db[700], snap[1024];
    sc_tmpdir(hub, sizeof hub, "mod-reg");
    snprintf(db, sizeof db, "%s/registry.sqlite", hub);
    snprintf(snap, sizeof snap, "%s/models--org--seer/snapshots/r1", hub);
    sc_mkdirs(snap);
    write_model_gguf(snap, "seer-Q4_0.gguf");
    write_model_gguf(snap, "mmproj-seer-f16.gguf"); /* named so, but a model: no vision yet */
    hearth_registry *r = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_registry_open(db, &r, &err), HEARTH_OK);
    if (!r) return;
    hearth_registry_filter vis = {.caps = HEARTH_CAP_VISION};
    hearth_registry_row *rows = NULL;
    size_t n = 0;
    CHECK_EQ(hearth_registry_scan(r, hub, NULL, NULL, &err), HEARTH_OK);
    CHECK_EQ(hearth_registry_list(r, &vis, &rows, &n, &err), HEARTH_OK);
    CHECK_EQ(n, 0);
    free(rows);
    /* a real projector arrives: the next scan marks the model, and lists no projector row */
    write_projector(snap, "mmproj-seer-f16.gguf", true, false, true);
    write_projector(snap, "vision-encoder.gguf", true, false, true); /* unusual name: not a model row */
    CHECK_EQ(hearth_registry_scan(r, hub, NULL, NULL, &err), HEARTH_OK);
    CHECK_EQ(hearth_registry_list(r, &vis, &rows, &n, &err), HEARTH_OK);
    CHECK_EQ(n, 1);
    if (n == 1) CHECK_STR(rows[0].file, "seer-Q4_0.gguf");
    free(rows);
    CHECK_EQ(hearth_registry_list(r, NULL, &rows, &n, &err), HEARTH_OK);
    CHECK_EQ(n, 1); /* the projectors are not models */
    free(rows);
    hearth_registry_close(r);
    sc_rmrf(hub);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
