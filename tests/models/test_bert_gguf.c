/*
 * test_bert_gguf.c - embedding models from GGUF files (models/bert_gguf.c) against llama.cpp
 * and against hearth's own safetensors path of the same weights.
 *
 * The files (tests/golden/embed/gguf/, written by tools/embed_gguf.py with gguf-py from the
 * committed tiny-bert, tiny-roberta, tiny-xlmr, tiny-modernbert, tiny-qwen3, tiny-gemma and
 * tiny-nomic checkpoints) and their goldens (gguf-NAME.json:
 * llama-cpp-python's embed() and tokenize() of tests/golden/embed/sentences.txt). Checked:
 *   - every file is probed as an embedding model and loads;
 *   - hearth's token ids equal llama.cpp's (WordPiece from tokenizer.ggml.model "bert", and
 *     byte-level BPE with the end-of-text token added for qwen3, <s> and </s> for RoBERTa, Unigram from "t5" for XLM-R,
 *     [CLS] and [SEP] for ModernBERT);
 *   - each embedding's cosine with llama.cpp's >= 0.99999 for f32 files and qwen3's f16, and the
 *     nearest neighbour of each query where llama.cpp's top two are apart. Looser where llama.cpp
 *     rounds what hearth keeps in f32, on tiny-bert's deliberately sensitive random weights
 *     (initializer_range 0.6): BERT f16 >= 0.9999 (llama.cpp rounds the activations to f16 for
 *     f16 matmuls; measured 1 - 4e-5), q8_0 >= 0.98 / 0.995 (llama.cpp quantizes the activations
 *     to 8 bits; measured 1 - 0.012 and 1 - 0.0018, cosines only);
 *   - each embedding's cosine with hearth's embedding of the safetensors checkpoint: the same
 *     bits for f32 files, the weights' own rounding for f16 (>= 0.9999) and q8_0 (>= 0.97 and
 *     0.995; measured 1 - 0.019 and 1 - 0.0021);
 *   - the fused attn_qkv form gives the same bits as separate q, k, v;
 *   - load errors: pooling_type none and rank, causal attention, another architecture, a
 *     missing tensor, a modern-bert activation other than GELU, each named; a chat GGUF (the starter model, when set up) is not probed as
 *     an embedding model.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "embed_harness.h"
#include "gguf_write.h"
#include "models/bert.h"
#include "test.h"

#define GG "tests/golden/embed/gguf/"

/* The embeddings of every golden text by the model at path (ids checked against g's). */
static float *embed_path(const char *path, golden *g) {
    hearth_bert *b = load(path, 0);
    CHECK(b != NULL);
    if (!b) return NULL;
    int bad_ids;
    float *out = embed_all(b, g, &bad_ids);
    CHECK_EQ(bad_ids, 0);
    hearth_bert_destroy(b);
    return out;
}

static double worst_cosine(const float *a, const float *b, int n, int dim) {
    double worst = 1;
    for (int i = 0; i < n; i++) {
        double c = cosine(a + i * dim, b + i * dim, dim);
        if (c < worst) worst = c;
    }
    return worst;
}

/* One GGUF file against llama.cpp's golden and against hearth's safetensors embeddings st. */
static void check_file(const char *name, const char *st_dir, double min_llama, double min_st, hearth_pooling pool) {
    char path[256], gname[128];
    snprintf(path, sizeof path, GG "%s.gguf", name);
    snprintf(gname, sizeof gname, "gguf-%s", name);
    fprintf(stderr, "  %s\n", name);
    CHECK(hearth_bert_probe(path));
    golden g;
    if (!golden_load(gname, &g)) {
        CHECK(!"the golden is missing");
        return;
    }
    hearth_bert *b = load(path, 0);
    CHECK(b != NULL);
    if (b) {
        CHECK_EQ(hearth_bert_pooling(b), pool);
        CHECK(hearth_bert_normalizes(b));
        if (min_llama >= 0.99999) check_parity_min(b, &g, false, min_llama, "llama.cpp");
        else { /* q8_0: the quantization noise is larger than the golden's top-two margins */
            int bad_ids;
            float *out = embed_all(b, &g, &bad_ids);
            CHECK_EQ(bad_ids, 0);
            double w = worst_cosine(out, g.emb, g.n_texts, g.dim);
            fprintf(stderr, "  worst cosine with llama.cpp: 1 - %.6g over %d texts\n", 1 - w, g.n_texts);
            CHECK(w >= min_llama);
            free(out);
        }
    }
    hearth_bert_destroy(b);
    /* the same texts through the safetensors checkpoint: its own tokenizer.json gives the same
     * ids (checked against the GGUF golden's, which are llama.cpp's) */
    float *st = embed_path(st_dir, &g), *gg = embed_path(path, &g);
    if (st && gg) {
        double w = worst_cosine(st, gg, g.n_texts, g.dim);
        fprintf(stderr, "  worst cosine with hearth's safetensors embeddings: 1 - %.6g\n", 1 - w);
        CHECK(w >= min_st);
    }
    free(st);
    free(gg);
    golden_free(&g);
}

TEST(bert_f32_f16_q8_0) {
    check_file("tiny-bert-f32", "tests/golden/embed/tiny-bert", 0.99999, 0.99999, HEARTH_POOLING_CLS);
    check_file("tiny-bert-f16", "tests/golden/embed/tiny-bert", 0.9999, 0.9999, HEARTH_POOLING_CLS);
    check_file("tiny-bert-q8_0", "tests/golden/embed/tiny-bert", 0.98, 0.97, HEARTH_POOLING_CLS);
}

TEST(qwen3_f32_f16_q8_0) {
    check_file("tiny-qwen3-f32", "tests/golden/embed/tiny-qwen3", 0.99999, 0.99999, HEARTH_POOLING_LAST);
    check_file("tiny-qwen3-f16", "tests/golden/embed/tiny-qwen3", 0.99999, 0.9999, HEARTH_POOLING_LAST);
    check_file("tiny-qwen3-q8_0", "tests/golden/embed/tiny-qwen3", 0.995, 0.995, HEARTH_POOLING_LAST);
}

/* nomic-bert: rotary positions, fused attn_qkv, SwiGLU, no biases (bert.c's b->rope layers). */
TEST(nomic_bert_f32) {
    check_file("tiny-nomic-f32", "tests/golden/embed/tiny-nomic", 0.99999, 0.99999, HEARTH_POOLING_MEAN);
}

/* RoBERTa as the converter writes it: arch bert, the position table cut to start at
 * pad_token_id + 1, a byte-level BPE vocabulary (pre "roberta-bpe") with <s> and </s> added. */
TEST(roberta_f32) {
    check_file("tiny-roberta-f32", "tests/golden/embed/tiny-roberta", 0.99999, 0.99999, HEARTH_POOLING_MEAN);
}

/* XLM-R as the converter writes it: arch bert, positions cut as RoBERTa's, a "t5" (Unigram)
 * vocabulary with scores, Metaspace's space prefix, <s> and </s> added. */
TEST(xlmr_f32) {
    check_file("tiny-xlmr-f32", "tests/golden/embed/tiny-xlmr", 0.99999, 0.99999, HEARTH_POOLING_CLS);
}

/* modern-bert: pre-LN without biases, rotary positions with a global and a local base, sliding
 * layers (the window shorter than the sentences), the GELU GLU; "[CLS] $A [SEP]" from BPE. f16:
 * llama.cpp rounds activations into its f16 matmuls (measured 1 - 7e-5 against
 * sentence-transformers), so 0.9999 there. */
TEST(modernbert_f32_f16) {
    check_file("tiny-modernbert-f32", "tests/golden/embed/tiny-modernbert", 0.99999, 0.99999, HEARTH_POOLING_MEAN);
    check_file("tiny-modernbert-f16", "tests/golden/embed/tiny-modernbert", 0.9999, 0.9999, HEARTH_POOLING_MEAN);
}

/* gemma-embedding: EmbeddingGemma's layers attending both ways, the norms stored as 1 + w, a
 * sliding window shorter than the sentences, the Dense projections dense_2 and dense_3 after the
 * mean pooling (32 -> 64 -> 32). */
TEST(gemma_embedding_f32) {
    check_file("tiny-gemma-f32", "tests/golden/embed/tiny-gemma", 0.99999, 0.99999, HEARTH_POOLING_MEAN);
}

/* The fused attn_qkv tensor is packed as the three separate ones are: the same bits. */
TEST(fused_qkv_same_bits) {
    check_file("tiny-bert-qkv-f32", "tests/golden/embed/tiny-bert", 0.99999, 0.99999, HEARTH_POOLING_CLS);
    golden g;
    CHECK(golden_load("gguf-tiny-bert-qkv-f32", &g));
    float *fused = embed_path(GG "tiny-bert-qkv-f32.gguf", &g), *apart = embed_path(GG "tiny-bert-f32.gguf", &g);
    CHECK(fused && apart && !memcmp(fused, apart, (size_t)g.n_texts * (size_t)g.dim * sizeof *fused));
    free(fused);
    free(apart);
    golden_free(&g);
}

/* A small bert GGUF's metadata (no tensors unless the test adds them), with one setting
 * changed: which = 0 none, 1 pooling_type 0, 2 pooling_type 4, 3 causal, 4 another arch, 5 a
 * modern-bert with a SiLU GLU. */
static char *write_meta(int which) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/hearth_bert_gguf_%d_%d.gguf", (int)getpid(), which);
    const char *arch = which == 4 ? "gpt2" : which == 5 ? "modern-bert" : "bert";
    char key[64];
    gw w;
    gw_init(&w);
    gw_str(&w, "general.architecture", arch);
#define K(s) (snprintf(key, sizeof key, "%s." s, arch), key)
    gw_u32(&w, K("embedding_length"), 32);
    gw_u32(&w, K("block_count"), 1);
    gw_u32(&w, K("attention.head_count"), 4);
    gw_u32(&w, K("feed_forward_length"), 64);
    gw_u32(&w, K("context_length"), 16);
    gw_u32(&w, K("pooling_type"), which == 1 ? 0 : which == 2 ? 4 : 1);
    gw_bool(&w, K("attention.causal"), which == 3);
    if (which == 5) gw_str(&w, K("hidden_act"), "silu");
#undef K
    gw_align(&w, 32);
    static float zeros[32 * 64];
    gw_tensor(&w, "token_embd.weight", HEARTH_TYPE_F32, 2, (int64_t[]){32, 8}, zeros);
    gw_tensor(&w, "position_embd.weight", HEARTH_TYPE_F32, 2, (int64_t[]){32, 16}, zeros);
    gw_tensor(&w, "token_types.weight", HEARTH_TYPE_F32, 2, (int64_t[]){32, 2}, zeros);
    CHECK(gw_write_file(&w, path));
    gw_free(&w);
    return path;
}

TEST(load_errors_say_what) {
    static const char *const want[] = {"token_embd_norm.weight is missing", "pooling_type 0", "pooling_type 4",
                                       "causal", "'gpt2' is not an embedding model",
                                       "modern-bert.hidden_act 'silu' is not supported"};
    for (int which = 0; which < 6; which++) {
        char *path = write_meta(which);
        CHECK_EQ(hearth_bert_probe(path), which != 4);
        hearth_bert *b = NULL;
        hearth_err err = {0};
        CHECK(hearth_bert_load(path, NULL, &b, &err) != HEARTH_OK);
        CHECK(b == NULL);
        if (!strstr(err.msg, want[which])) fprintf(stderr, "  case %d: '%s'\n", which, err.msg);
        CHECK(strstr(err.msg, want[which]) != NULL);
        unlink(path);
    }
}

/* A chat model's GGUF is not an embedding model. */
TEST(chat_gguf_is_not_probed) {
    const char *path = getenv("HEARTH_SMOLLM2_GGUF");
    if (!path || !*path) TEST_SKIP("HEARTH_SMOLLM2_GGUF is not set (scripts/model-path.sh smollm2)");
    CHECK(!hearth_bert_probe(path));
}

int main(int argc, char **argv) { return test_main(argc, argv); }
