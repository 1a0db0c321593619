/*
 * test_bert.c - encoder embeddings (models/bert.h) against sentence-transformers.
 *
 * Goldens (tools/embed_golden.py, tests/golden/embed/NAME.json) hold, for the sentences of
 * tests/golden/embed/sentences.txt, the token ids and the float32 embeddings that
 * sentence-transformers computes on the CPU, and for each query the three nearest corpus
 * sentences. Checked here:
 *   - tiny-bert (committed: a random 2-layer BertModel, CLS pooling, normalized): the ids, and
 *     every embedding's cosine with the golden >= 0.99999; the nearest neighbour of each query
 *     where the golden's top two are more than 1e-3 apart;
 *   - tiny-roberta (committed: a random 2-layer RobertaModel, byte-level BPE, mean pooling, not
 *     normalized): the same checks;
 *   - tiny-xlmr (committed: a random 2-layer XLMRobertaModel, a Unigram tokenizer, CLS pooling,
 *     normalized): the same checks;
 *   - tiny-modernbert (committed: a random 3-layer ModernBertModel with sliding windows shorter
 *     than the sentences, mean pooling, normalized): the same checks;
 *   - tiny-qwen3 (committed: a random 2-layer Qwen3Model, causal with grouped-query attention,
 *     last-token pooling, normalized): the same checks;
 *   - tiny-gemma (committed: a random 3-layer EmbeddingGemma, bidirectional with sliding windows,
 *     mean pooling, two Dense modules, normalized): the same checks;
 *   - tiny-nomic (committed: a random 2-layer NomicBERT, against tools/nomic_ref.py's PyTorch
 *     reference, itself checked against llama.cpp by tools/embed_gguf.py): the same checks;
 *   - all-MiniLM-L6-v2 (HEARTH_MINILM, the folder scripts/model-path.sh minilm prints; skipped
 *     when unset): the same, and the same nearest neighbour for every query;
 *   - batching: the whole set in one forward, one by one, and cut into forwards of at most 40
 *     tokens give the same bits;
 *   - errors: an empty input, one past the model's limit, an id outside the vocabulary (each
 *     naming the input's index), and hearth_bert_truncate keeping the closing [SEP];
 *   - loading: a folder without config.json, another model_type, and an unsupported pooling
 *     fail with a message naming the problem;
 *   - f16 and bf16 checkpoints: tiny-bert rewritten with every tensor in f16 (then bf16) loads
 *     and stays close to the golden (cosine >= 0.9999 and 0.99: the weights' own rounding).
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "embed_harness.h"
#include "golden_json.h"
#include "model/safetensors.h"
#include "models/bert.h"
#include "tensor/dtype.h"
#include "test.h"

#define TINY "tests/golden/embed/tiny-bert"

TEST(tiny_bert_parity) {
    golden g;
    CHECK(golden_load("tiny-bert", &g));
    hearth_bert *b = load(TINY, 0);
    CHECK(b != NULL);
    if (b) {
        CHECK_EQ(hearth_bert_pooling(b), HEARTH_POOLING_CLS);
        CHECK(hearth_bert_normalizes(b));
        CHECK_EQ(hearth_bert_max_tokens(b), 64);
        check_parity(b, &g, false);
    }
    hearth_bert_destroy(b);
    golden_free(&g);
}

/* RoBERTa: positions from pad_token_id + 1, a byte-level BPE tokenizer, mean pooling, no
 * normalization. */
TEST(tiny_roberta_parity) {
    golden g;
    CHECK(golden_load("tiny-roberta", &g));
    hearth_bert *b = load("tests/golden/embed/tiny-roberta", 0);
    CHECK(b != NULL);
    if (b) {
        CHECK_EQ(hearth_bert_pooling(b), HEARTH_POOLING_MEAN);
        CHECK(!hearth_bert_normalizes(b));
        CHECK_EQ(hearth_bert_max_tokens(b), 64);
        CHECK(strstr(hearth_bert_desc(b), "roberta") != NULL);
        check_parity(b, &g, false);
    }
    hearth_bert_destroy(b);
    golden_free(&g);
}

/* XLM-R: the RoBERTa layout with a SentencePiece-style Unigram tokenizer, CLS pooling,
 * normalized. */
TEST(tiny_xlmr_parity) {
    golden g;
    CHECK(golden_load("tiny-xlmr", &g));
    hearth_bert *b = load("tests/golden/embed/tiny-xlmr", 0);
    CHECK(b != NULL);
    if (b) {
        CHECK_EQ(hearth_bert_pooling(b), HEARTH_POOLING_CLS);
        CHECK(hearth_bert_normalizes(b));
        CHECK(strstr(hearth_bert_desc(b), "xlm-roberta") != NULL);
        check_parity(b, &g, false);
    }
    hearth_bert_destroy(b);
    golden_free(&g);
}

/* ModernBERT: pre-LN, rotary positions (two bases), a GLU, sliding windows of 4 tokens each way
 * in layers 1 and 2 that the sentences are longer than, mean pooling, normalized. */
TEST(tiny_modernbert_parity) {
    golden g;
    CHECK(golden_load("tiny-modernbert", &g));
    hearth_bert *b = load("tests/golden/embed/tiny-modernbert", 0);
    CHECK(b != NULL);
    if (b) {
        CHECK_EQ(hearth_bert_pooling(b), HEARTH_POOLING_MEAN);
        CHECK(hearth_bert_normalizes(b));
        CHECK(strstr(hearth_bert_desc(b), "modernbert") != NULL);
        check_parity(b, &g, false);
    }
    hearth_bert_destroy(b);
    golden_free(&g);
}

/* Qwen3 as an embedding model: causal, grouped-query attention, q/k norms, last-token pooling,
 * normalized. */
TEST(tiny_qwen3_parity) {
    golden g;
    CHECK(golden_load("tiny-qwen3", &g));
    hearth_bert *b = load("tests/golden/embed/tiny-qwen3", 0);
    CHECK(b != NULL);
    if (b) {
        CHECK_EQ(hearth_bert_pooling(b), HEARTH_POOLING_LAST);
        CHECK(hearth_bert_normalizes(b));
        CHECK(strstr(hearth_bert_desc(b), "qwen3") != NULL);
        check_parity(b, &g, false);
    }
    hearth_bert_destroy(b);
    golden_free(&g);
}

/* EmbeddingGemma: a bidirectional Gemma 3 with sliding layers shorter than the sentences, mean
 * pooling, then two Dense projections (32 -> 64 -> 32) and the normalization. */
TEST(tiny_gemma_parity) {
    golden g;
    CHECK(golden_load("tiny-gemma", &g));
    hearth_bert *b = load("tests/golden/embed/tiny-gemma", 0);
    CHECK(b != NULL);
    if (b) {
        CHECK_EQ(hearth_bert_pooling(b), HEARTH_POOLING_MEAN);
        CHECK(hearth_bert_normalizes(b));
        CHECK(strstr(hearth_bert_desc(b), "gemma3_text") != NULL);
        check_parity(b, &g, false);
    }
    hearth_bert_destroy(b);
    golden_free(&g);
}

/* NomicBERT: BERT's post-LN layers with rotary positions, a fused Wqkv, SwiGLU and no biases;
 * the golden is tools/nomic_ref.py's float64 reference forward. */
TEST(tiny_nomic_parity) {
    golden g;
    CHECK(golden_load("tiny-nomic", &g));
    hearth_bert *b = load("tests/golden/embed/tiny-nomic", 0);
    CHECK(b != NULL);
    if (b) {
        CHECK_EQ(hearth_bert_pooling(b), HEARTH_POOLING_MEAN);
        CHECK(hearth_bert_normalizes(b));
        CHECK(strstr(hearth_bert_desc(b), "nomic_bert") != NULL);
        check_parity_min(b, &g, false, 0.99999, "the NomicBERT reference");
    }
    hearth_bert_destroy(b);
    golden_free(&g);
}

TEST(minilm_parity) {
    const char *dir = getenv("HEARTH_MINILM");
    if (!dir || !*dir) TEST_SKIP("HEARTH_MINILM is not set (scripts/model-path.sh minilm)");
    golden g;
    CHECK(golden_load("minilm", &g));
    hearth_bert *b = load(dir, 0);
    CHECK(b != NULL);
    if (b) {
        CHECK_EQ(hearth_bert_pooling(b), HEARTH_POOLING_MEAN);
        CHECK(hearth_bert_normalizes(b));
        CHECK_EQ(hearth_bert_max_tokens(b), 256);
        check_parity(b, &g, true);
    }
    hearth_bert_destroy(b);
    golden_free(&g);
}

/* One forward, one by one, and forwards cut at 40 tokens: the same bits. */
TEST(batching_changes_no_bits) {
    golden g;
    CHECK(golden_load("tiny-bert", &g));
    hearth_bert *b = load(TINY, 0), *cut = load(TINY, 40);
    CHECK(b && cut);
    if (b && cut) {
        const int n = g.n_texts, d = g.dim;
        float *all = malloc((size_t)n * d * sizeof *all), *one = malloc((size_t)n * d * sizeof *one),
              *parts = malloc((size_t)n * d * sizeof *parts);
        hearth_err err = {0};
        CHECK_EQ(hearth_bert_embed(b, (const int32_t *const *)g.ids, g.n_ids, n, all, &err), HEARTH_OK);
        for (int i = 0; i < n; i++)
            CHECK_EQ(hearth_bert_embed(b, (const int32_t *const *)g.ids + i, g.n_ids + i, 1, one + i * d, &err),
                     HEARTH_OK);
        CHECK_EQ(hearth_bert_embed(cut, (const int32_t *const *)g.ids, g.n_ids, n, parts, &err), HEARTH_OK);
        CHECK(memcmp(all, one, (size_t)n * d * sizeof *all) == 0);
        CHECK(memcmp(all, parts, (size_t)n * d * sizeof *all) == 0);
        free(all), free(one), free(parts);
    }
    hearth_bert_destroy(b);
    hearth_bert_destroy(cut);
    golden_free(&g);
}

TEST(bad_inputs_name_the_index) {
    hearth_bert *b = load(TINY, 0);
    CHECK(b != NULL);
    if (!b) return;
    float out[3 * 32];
    int32_t ok[] = {2, 5, 3}, big[70], bad_id[] = {2, 100000, 3};
    for (int i = 0; i < 70; i++) big[i] = 5;
    const int32_t *seqs[3] = {ok, ok, ok};
    size_t n[3] = {3, 0, 3};
    hearth_err err = {0};
    CHECK_EQ(hearth_bert_embed(b, seqs, n, 3, out, &err), HEARTH_E_INVALID);
    CHECK(strstr(err.msg, "input 1") != NULL);
    seqs[2] = big;
    n[1] = 3, n[2] = 70;
    CHECK_EQ(hearth_bert_embed(b, seqs, n, 3, out, &err), HEARTH_E_INVALID);
    CHECK(strstr(err.msg, "input 2") && strstr(err.msg, "64"));
    seqs[2] = bad_id;
    n[2] = 3;
    CHECK_EQ(hearth_bert_embed(b, seqs, n, 3, out, &err), HEARTH_E_INVALID);
    CHECK(strstr(err.msg, "input 2") && strstr(err.msg, "100000"));
    /* truncation keeps [CLS] first and [SEP] last */
    int32_t *ids = NULL;
    size_t n_ids = 0;
    const char *text = "the cat sat on the mat the cat sat on the mat the cat sat on the mat";
    CHECK_EQ(hearth_bert_tokenize(b, text, strlen(text), &ids, &n_ids), HEARTH_OK);
    CHECK(n_ids > 8);
    int32_t sep = ids[n_ids - 1], cls = ids[0];
    size_t m = hearth_bert_truncate(b, ids, n_ids, 8);
    CHECK_EQ(m, 8);
    CHECK_EQ(ids[0], cls);
    CHECK_EQ(ids[7], sep);
    CHECK_EQ(hearth_bert_truncate(b, ids, m, 64), m);
    free(ids);
    hearth_bert_destroy(b);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

TEST(load_errors_say_what) {
    char dir[] = "/tmp/hearth_bert_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    hearth_bert *b = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_bert_load(dir, NULL, &b, &err), HEARTH_E_NOTFOUND);
    CHECK(strstr(err.msg, "config.json") != NULL);
    CHECK(!hearth_bert_probe(dir));
    snprintf(path, sizeof path, "%s/config.json", dir);
    write_file(path, "{\"model_type\": \"t5\", \"hidden_size\": 32}");
    CHECK_EQ(hearth_bert_load(dir, NULL, &b, &err), HEARTH_E_UNSUPPORTED);
    CHECK(strstr(err.msg, "t5") != NULL);
    CHECK(!hearth_bert_probe(dir));
    write_file(path, "{\"model_type\": \"nomic_bert\", \"n_embd\": 32, \"prenorm\": true}");
    CHECK_EQ(hearth_bert_load(dir, NULL, &b, &err), HEARTH_E_UNSUPPORTED);
    CHECK(strstr(err.msg, "prenorm") != NULL);
    CHECK(hearth_bert_probe(TINY));
    CHECK(hearth_bert_probe("tests/golden/embed/tiny-qwen3"));
    write_file(path, "{\"model_type\": \"qwen3\", \"hidden_size\": 32}"); /* a chat Qwen3: no modules.json */
    CHECK(!hearth_bert_probe(dir));
    write_file(path, "{\"model_type\": \"bert\", \"hidden_size\": 32, \"num_hidden_layers\": 1, "
                     "\"num_attention_heads\": 4, \"intermediate_size\": 64, \"vocab_size\": 10}");
    char mods[256];
    snprintf(mods, sizeof mods, "%s/modules.json", dir);
    write_file(mods, "[{\"type\": \"sentence_transformers.models.Pooling\", \"path\": \"p\"}]");
    snprintf(path, sizeof path, "%s/p", dir);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/p/config.json", dir);
    write_file(path, "{\"pooling_mode_max_tokens\": true}");
    CHECK_EQ(hearth_bert_load(dir, NULL, &b, &err), HEARTH_E_UNSUPPORTED);
    CHECK(strstr(err.msg, "pooling") != NULL);
    CHECK(b == NULL);
    unlink(path);
    snprintf(path, sizeof path, "%s/p", dir);
    rmdir(path);
    unlink(mods);
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    rmdir(dir);
}

/* dir/model.safetensors: every tensor of src converted to dtype (F16 or BF16); the other files
 * of tiny-bert linked beside it. */
static bool write_converted(const char *dir, const char *dtype) {
    hearth_st *st = NULL;
    hearth_err err = {0};
    if (hearth_st_open(TINY "/model.safetensors", &st, &err)) return false;
    cJSON *hdr = cJSON_CreateObject();
    size_t off = 0;
    int64_t n = hearth_st_n_tensors(st);
    for (int64_t i = 0; i < n; i++) {
        const hearth_st_tensor *t = hearth_st_tensor_at(st, i);
        cJSON *e = cJSON_AddObjectToObject(hdr, t->name);
        cJSON_AddStringToObject(e, "dtype", t->dtype == HEARTH_ST_F32 ? dtype : hearth_st_dtype_name(t->dtype));
        cJSON *shape = cJSON_AddArrayToObject(e, "shape");
        for (int d = 0; d < t->n_dims; d++) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->shape[d]));
        size_t nb = t->dtype == HEARTH_ST_F32 ? (size_t)t->n_elem * 2 : t->n_bytes;
        cJSON *offs = cJSON_AddArrayToObject(e, "data_offsets");
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)(off + nb)));
        off += nb;
    }
    char *json = cJSON_PrintUnformatted(hdr);
    size_t hl = (strlen(json) + 7) / 8 * 8;
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *f = fopen(path, "wb");
    bool ok = f != NULL;
    if (ok) {
        uint8_t len8[8];
        for (int b = 0; b < 8; b++) len8[b] = (uint8_t)((uint64_t)hl >> (8 * b));
        fwrite(len8, 1, 8, f);
        fwrite(json, 1, strlen(json), f);
        for (size_t p = strlen(json); p < hl; p++) fputc(' ', f);
        for (int64_t i = 0; i < n; i++) {
            const hearth_st_tensor *t = hearth_st_tensor_at(st, i);
            if (t->dtype != HEARTH_ST_F32) {
                fwrite(t->data, 1, t->n_bytes, f);
                continue;
            }
            for (int64_t k = 0; k < t->n_elem; k++) {
                float v;
                memcpy(&v, (const char *)t->data + 4 * k, 4);
                uint16_t h = !strcmp(dtype, "F16") ? hearth_fp32_to_fp16(v) : hearth_fp32_to_bf16(v);
                uint8_t b2[2] = {(uint8_t)h, (uint8_t)(h >> 8)};
                fwrite(b2, 1, 2, f);
            }
        }
        ok = fclose(f) == 0;
    }
    free(json);
    cJSON_Delete(hdr);
    hearth_st_close(st);
    char cwd[1024];
    if (!getcwd(cwd, sizeof cwd)) return false;
    const char *links[] = {"config.json", "tokenizer.json", "modules.json", "sentence_bert_config.json", "1_Pooling"};
    for (size_t i = 0; ok && i < sizeof links / sizeof links[0]; i++) {
        char src[1536], dst[600];
        snprintf(src, sizeof src, "%s/" TINY "/%s", cwd, links[i]);
        snprintf(dst, sizeof dst, "%s/%s", dir, links[i]);
        ok = symlink(src, dst) == 0;
    }
    return ok;
}

static void remove_converted(const char *dir) {
    const char *names[] = {"model.safetensors", "config.json", "tokenizer.json", "modules.json",
                           "sentence_bert_config.json", "1_Pooling"};
    char path[600];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

TEST(f16_and_bf16_checkpoints) {
    golden g;
    CHECK(golden_load("tiny-bert", &g));
    const char *dtypes[] = {"F16", "BF16"};
    const double min_cos[] = {0.9999, 0.99}; /* bf16 keeps 8 bits: about 0.3% here */
    for (int k = 0; k < 2; k++) {
        char dir[] = "/tmp/hearth_bert16_XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        CHECK(write_converted(dir, dtypes[k]));
        hearth_bert *b = load(dir, 0);
        CHECK(b != NULL);
        if (b) {
            CHECK(strstr(hearth_bert_desc(b), k ? "bf16" : "f16") != NULL);
            int bad_ids;
            float *out = embed_all(b, &g, &bad_ids);
            double worst = 1;
            for (int i = 0; i < g.n_texts; i++) {
                double c = cosine(out + i * g.dim, g.emb + i * g.dim, g.dim);
                if (c < worst) worst = c;
            }
            fprintf(stderr, "  %s: worst cosine with the f32 golden 1 - %.3g\n", dtypes[k], 1 - worst);
            CHECK(worst >= min_cos[k]);
            CHECK(worst < 1 - 1e-9); /* the rounding is there: the weights were really converted */
            free(out);
        }
        hearth_bert_destroy(b);
        remove_converted(dir);
    }
    golden_free(&g);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
