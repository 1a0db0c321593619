/*
 * test_spm_model.c - SentencePiece tokenizer.model files (tokenizer/spm_model.c) against the
 * sentencepiece library (goldens by tools/make_spm_golden.py: three tiny BPE models trained
 * with sentencepiece's trainer, and SentencePieceProcessor.encode of a set of texts):
 *   - every text gives sentencepiece's ids (with and without the dummy prefix, byte fallback
 *     for unseen characters, <unk> without it, a user-defined symbol, runs of spaces and
 *     newlines, "<s>" as plain text), decode gives the text back, add_special puts BOS first;
 *   - a checkpoint folder with tokenizer.model and no tokenizer.json loads with it;
 *   - hostile files: every truncation and seeded byte mutations of a model give an error or
 *     a working tokenizer, never a crash (ASan in check-asan); refusals name what they refuse.
 */
#include "model/model.h"
#include "store_cache.h"
#include "test.h"
#include "tokenizer/tokenizer.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLD "tests/golden/tok/spm/"

static char *slurp(const char *path, size_t *n) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)len, fp) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    if (buf) buf[len] = 0, *n = (size_t)len;
    fclose(fp);
    return buf;
}

/* Every case of GOLD name.json against the tokenizer built from GOLD name.model. */
static void check_model(const char *name) {
    char path[256];
    size_t n_model = 0, n_json = 0;
    snprintf(path, sizeof path, GOLD "%s.model", name);
    char *model = slurp(path, &n_model);
    snprintf(path, sizeof path, GOLD "%s.json", name);
    char *json = slurp(path, &n_json);
    CHECK(model && json);
    cJSON *g = json ? cJSON_Parse(json) : NULL;
    hearth_tok *tok = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_tok_from_spm_model(model, n_model, &tok, &err), HEARTH_OK);
    if (!tok || !g) goto out;
    CHECK_EQ(hearth_tok_n_vocab(tok), cJSON_GetObjectItem(g, "vocab_size")->valueint);
    CHECK_EQ(hearth_tok_bos(tok), cJSON_GetObjectItem(g, "bos_id")->valueint);
    CHECK_EQ(hearth_tok_eos(tok), cJSON_GetObjectItem(g, "eos_id")->valueint);
    const cJSON *c;
    int n_cases = 0, n_ok = 0, n_dec_diff = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(g, "cases")) {
        const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
        const cJSON *want = cJSON_GetObjectItem(c, "ids");
        int32_t *ids = NULL;
        size_t n_ids = 0;
        CHECK_EQ(hearth_tok_encode(tok, text, strlen(text), false, false, &ids, &n_ids), HEARTH_OK);
        bool same = (int)n_ids == cJSON_GetArraySize(want);
        for (size_t i = 0; same && i < n_ids; i++) same = ids[i] == cJSON_GetArrayItem(want, (int)i)->valueint;
        if (!same) {
            fprintf(stderr, "  %s: '%s' gives", name, text);
            for (size_t i = 0; i < n_ids; i++) fprintf(stderr, " %d", ids[i]);
            fprintf(stderr, "\n");
        }
        n_ok += same;
        n_cases++;
        char *back = hearth_tok_decode(tok, ids, n_ids, false);
        /* sentencepiece writes <unk> as " \u2047 "; hearth's decode leaves unknown pieces out
         * (special = false), so those are taken out of its text before comparing */
        char dec[1024];
        size_t nd = 0;
        for (const char *q = cJSON_GetObjectItem(c, "decoded")->valuestring; *q && nd < sizeof dec - 1;) {
            if (!strncmp(q, " \xE2\x81\x87 ", 5)) q += 5;
            else dec[nd++] = *q++;
        }
        dec[nd] = 0;
        if (!back || strcmp(back, dec)) {
            fprintf(stderr, "  %s: '%s' decodes to '%s', sentencepiece '%s'\n", name, text, back ? back : "", dec);
            n_dec_diff++;
        }
        free(back);
        free(ids);
        ids = NULL;
        CHECK_EQ(hearth_tok_encode(tok, text, strlen(text), true, false, &ids, &n_ids), HEARTH_OK);
        CHECK(n_ids >= 1 && ids[0] == hearth_tok_bos(tok));
        free(ids);
    }
    fprintf(stderr, "  %-13s %d / %d texts give sentencepiece's ids\n", name, n_ok, n_cases);
    CHECK(n_cases >= 10);
    CHECK_EQ(n_ok, n_cases);
    CHECK_EQ(n_dec_diff, 0);
out:
    hearth_tok_destroy(tok);
    cJSON_Delete(g);
    free(model);
    free(json);
}

TEST(dummy_prefix) { check_model("bpe-prefix"); }
TEST(no_dummy_prefix) { check_model("bpe-noprefix"); }
TEST(no_byte_fallback) { check_model("bpe-288"); }

/* A checkpoint with tokenizer.model only: the tiny llama of test_hf_tiny with bpe-288. */
TEST(checkpoint_without_tokenizer_json) {
    char dir[512], src[512], dst[600];
    sc_tmpdir(dir, sizeof dir, "spm");
    static const char *const files[][2] = {{"tests/golden/hf/llama/config.json", "config.json"},
                                           {"tests/golden/hf/llama/model.safetensors", "model.safetensors"},
                                           {GOLD "bpe-288.model", "tokenizer.model"}};
    for (int i = 0; i < 3; i++) {
        size_t n = 0;
        snprintf(src, sizeof src, "%s", files[i][0]);
        char *bytes = slurp(src, &n);
        CHECK(bytes != NULL);
        snprintf(dst, sizeof dst, "%s/%s", dir, files[i][1]);
        FILE *fp = fopen(dst, "wb");
        CHECK(fp && bytes && fwrite(bytes, 1, n, fp) == n);
        if (fp) fclose(fp);
        free(bytes);
    }
    hearth_model *m = NULL;
    hearth_err err = {0};
    CHECK_EQ(hearth_model_load(dir, &m, &err), HEARTH_OK);
    if (m) {
        const hearth_tok *tok = hearth_model_tok(m);
        int32_t *ids = NULL;
        size_t n_ids = 0;
        CHECK_EQ(hearth_tok_encode(tok, "Once upon a time", 16, false, false, &ids, &n_ids), HEARTH_OK);
        size_t n_json = 0;
        char *json = slurp(GOLD "bpe-288.json", &n_json);
        cJSON *g = json ? cJSON_Parse(json) : NULL;
        const cJSON *want = g ? cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(g, "cases"), 0), "ids") : NULL;
        CHECK(want && (int)n_ids == cJSON_GetArraySize(want));
        for (size_t i = 0; want && i < n_ids && (int)i < cJSON_GetArraySize(want); i++)
            CHECK_EQ(ids[i], cJSON_GetArrayItem(want, (int)i)->valueint);
        cJSON_Delete(g);
        free(json);
        free(ids);
        hearth_model_destroy(m);
    }
    sc_rmrf(dir);
}

/* A small protobuf writer for hand-made files. */
typedef struct {
    uint8_t b[4096];
    size_t  n;
} pb;
static void pb_varint(pb *p, uint64_t v) {
    do {
        p->b[p->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
}
static void pb_key(pb *p, uint32_t num, int wt) { pb_varint(p, (uint64_t)num << 3 | (uint64_t)wt); }
static void pb_bytes(pb *p, uint32_t num, const void *d, size_t n) {
    pb_key(p, num, 2);
    pb_varint(p, n);
    memcpy(p->b + p->n, d, n);
    p->n += n;
}
static void pb_piece(pb *p, const char *s, float score, int type) {
    pb m = {.n = 0};
    pb_bytes(&m, 1, s, strlen(s));
    pb_key(&m, 2, 5);
    memcpy(m.b + m.n, &score, 4);
    m.n += 4;
    pb_key(&m, 3, 0);
    pb_varint(&m, (uint64_t)type);
    pb_bytes(p, 1, m.b, m.n);
}
/* A valid BPE model: pieces, then a trainer spec of model_type, a normalizer named norm. */
static void pb_model(pb *p, int model_type, const char *norm, bool remove_ws, int bad_type) {
    p->n = 0;
    pb_piece(p, "<unk>", 0, 2);
    pb_piece(p, "<s>", 0, 3);
    pb_piece(p, "</s>", 0, 3);
    pb_piece(p, "\xE2\x96\x81" "a", -1, bad_type ? bad_type : 1);
    pb_piece(p, "a", -2, 1);
    pb_piece(p, "b", -3, 1);
    pb t = {.n = 0};
    pb_key(&t, 3, 0);
    pb_varint(&t, (uint64_t)model_type);
    pb_key(&t, 43, 0);
    pb_varint(&t, (uint64_t)(int64_t)-1); /* pad_id -1: a 10-byte varint */
    pb_bytes(p, 2, t.b, t.n);
    pb nrm = {.n = 0};
    pb_bytes(&nrm, 1, norm, strlen(norm));
    pb_key(&nrm, 4, 0);
    pb_varint(&nrm, remove_ws);
    pb_bytes(p, 3, nrm.b, nrm.n);
}

TEST(hand_made_files_and_refusals) {
    pb p;
    hearth_tok *tok = NULL;
    hearth_err err = {0};
    pb_model(&p, 2, "identity", false, 0);
    CHECK_EQ(hearth_tok_from_spm_model(p.b, p.n, &tok, &err), HEARTH_OK);
    if (tok) {
        int32_t *ids = NULL;
        size_t n = 0;
        CHECK_EQ(hearth_tok_encode(tok, "ab a", 4, false, false, &ids, &n), HEARTH_OK);
        /* "▁ab▁a": ▁a (score -1) merges first, then b and ▁a stay */
        CHECK(n == 3 && ids[0] == 3 && ids[1] == 5 && ids[2] == 3);
        free(ids);
        hearth_tok_destroy(tok);
        tok = NULL;
    }
    static const struct {
        int model_type, bad_type;
        const char *norm;
        bool remove_ws;
        hearth_status st;
        const char *msg;
    } cases[] = {
        {1, 0, "identity", false, HEARTH_E_UNSUPPORTED, "models other than BPE (Unigram"},
        {2, 0, "nmt_nfkc", false, HEARTH_E_UNSUPPORTED, "normalization rules"},
        {2, 0, "identity", true, HEARTH_E_UNSUPPORTED, "remove_extra_whitespaces"},
        {2, 9, "identity", false, HEARTH_E_FORMAT, "piece 3 has an unknown type"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pb_model(&p, cases[i].model_type, cases[i].norm, cases[i].remove_ws, cases[i].bad_type);
        hearth_status st = hearth_tok_from_spm_model(p.b, p.n, &tok, &err);
        if (st != cases[i].st || !strstr(err.msg, cases[i].msg)) fprintf(stderr, "  case %zu: %d '%s'\n", i, st, err.msg);
        CHECK_EQ(st, cases[i].st);
        CHECK(strstr(err.msg, cases[i].msg) != NULL);
        CHECK(tok == NULL);
    }
    CHECK_EQ(hearth_tok_from_spm_model(p.b, 0, &tok, &err), HEARTH_E_FORMAT);
    CHECK(strstr(err.msg, "no pieces") != NULL);
    static const uint8_t group[] = {0x0b, 0x0c}; /* wire type 3 (start group) */
    CHECK_EQ(hearth_tok_from_spm_model(group, sizeof group, &tok, &err), HEARTH_E_FORMAT);
    static const uint8_t long_len[] = {0x0a, 0xff, 0xff, 0x03, 0x00}; /* a length past the end */
    CHECK_EQ(hearth_tok_from_spm_model(long_len, sizeof long_len, &tok, &err), HEARTH_E_FORMAT);
}

/* Every truncation and 3000 seeded mutations of a real model: an error, or a tokenizer that
 * encodes. */
TEST(hostile_bytes) {
    size_t n = 0;
    char *model = slurp(GOLD "bpe-prefix.model", &n);
    CHECK(model != NULL);
    if (!model) return;
    int n_ok = 0, n_err = 0;
    uint8_t *buf = malloc(n);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t len = 0; len <= n + 3000; len++) {
        size_t m = len <= n ? len : n;
        memcpy(buf, model, m);
        if (len > n) /* mutations: 1 to 4 random bytes */
            for (int k = 0, nk = 1 + (int)(len % 4); k < nk; k++) {
                s ^= s << 13, s ^= s >> 7, s ^= s << 17;
                buf[s % n] = (uint8_t)(s >> 32);
            }
        hearth_tok *tok = NULL;
        hearth_err err = {0};
        hearth_status st = hearth_tok_from_spm_model(buf, m, &tok, &err);
        if (st == HEARTH_OK) {
            int32_t *ids = NULL;
            size_t n_ids = 0;
            CHECK_EQ(hearth_tok_encode(tok, "Once upon a \xC3\xA9t\xC3\xA9", 15, true, true, &ids, &n_ids), HEARTH_OK);
            free(ids);
            hearth_tok_destroy(tok);
            n_ok++;
        } else {
            CHECK(st == HEARTH_E_FORMAT || st == HEARTH_E_UNSUPPORTED || st == HEARTH_E_LIMIT);
            CHECK(err.msg[0] != 0);
            n_err++;
        }
    }
    fprintf(stderr, "  %d files loaded, %d refused\n", n_ok, n_err);
    CHECK(n_err > 0 && n_ok > 0);
    free(buf);
    free(model);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
