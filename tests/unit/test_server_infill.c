/* test_server_infill.c - fill-in-the-middle: the FIM ids a vocabulary yields (file keys, then
 * names; GGUF and tokenizer.json) and the /infill prompt (server/infill.h) against
 * llama-server's construction, as tools/fim_golden.py recorded it for two tiny models
 * (tests/golden/fim); and the starter models, which have no FIM prefix/suffix/middle, refused
 * with a reason. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/assert.h"
#include "golden_json.h"
#include "model/gguf.h"
#include "model/tok_gguf.h"
#include "server/infill.h"
#include "test.h"

#define GOLDEN "tests/golden/fim/infill.json"

static hearth_tok *load_tok(const char *path) {
    hearth_gguf *g = NULL;
    hearth_tok *tok = NULL;
    if (hearth_gguf_open(path, &g, NULL)) return NULL;
    if (hearth_tok_from_gguf(g, &tok, NULL)) tok = NULL;
    hearth_gguf_close(g);
    return tok;
}

static cJSON *golden(void) {
    size_t n = 0;
    char *text = golden_slurp(GOLDEN, &n);
    cJSON *root = text ? cJSON_ParseWithLength(text, n) : NULL;
    free(text);
    return root;
}

/* tokenize_mixed of a case field: a string, or strings and ids; appended to *v. */
static void mixed(const hearth_tok *tok, const cJSON *x, int32_t **v, size_t *n) {
    bool one = cJSON_IsString(x);
    for (const cJSON *it = one ? x : x->child; it; it = one ? NULL : it->next) {
        int32_t *part = NULL, single;
        size_t n_part = 1;
        if (cJSON_IsString(it)) {
            HEARTH_ASSERT(!hearth_tok_encode(tok, it->valuestring, strlen(it->valuestring), false, false, &part,
                                             &n_part));
        } else {
            single = (int32_t)it->valuedouble;
        }
        *v = realloc(*v, (*n + n_part + 1) * sizeof **v);
        HEARTH_ASSERT(*v);
        memcpy(*v + *n, part ? part : &single, n_part * sizeof **v);
        *n += n_part;
        free(part);
    }
}

static void check_model(const char *name, const cJSON *m) {
    char path[256];
    snprintf(path, sizeof path, "tests/golden/fim/%s.gguf", name);
    hearth_tok *tok = load_tok(path);
    CHECK(tok != NULL);
    if (!tok) return;
    static const char *const kinds[] = {"pre", "suf", "mid", "pad", "rep", "sep"};
    const cJSON *fim = cJSON_GetObjectItem(m, "fim");
    for (int k = 0; k < HEARTH_TOK_FIM_COUNT; k++)
        CHECK_EQ(hearth_tok_fim(tok, (hearth_tok_fim_kind)k), cJSON_GetObjectItem(fim, kinds[k])->valueint);
    char why[96];
    CHECK(hearth_infill_supported(tok, why, sizeof why));
    int n_cases = 0;
    for (const cJSON *c = cJSON_GetObjectItem(m, "cases")->child; c; c = c->next, n_cases++) {
        int32_t *pre = NULL, *suf = NULL, *prompt = NULL, *ids = NULL;
        size_t n_pre = 0, n_suf = 0, n_prompt = 0, n_ids = 0;
        mixed(tok, cJSON_GetObjectItem(c, "input_prefix"), &pre, &n_pre);
        mixed(tok, cJSON_GetObjectItem(c, "input_suffix"), &suf, &n_suf);
        const cJSON *pr = cJSON_GetObjectItem(c, "prompt");
        if (pr) HEARTH_ASSERT(!hearth_tok_encode(tok, pr->valuestring, strlen(pr->valuestring), false, true, &prompt,
                                                 &n_prompt));
        hearth_infill_chunk chunks[16];
        size_t n_chunks = 0;
        const cJSON *x = cJSON_GetObjectItem(c, "input_extra");
        for (const cJSON *it = x ? x->child : NULL; it && n_chunks < 16; it = it->next, n_chunks++) {
            const cJSON *f = cJSON_GetObjectItem(it, "filename"), *t = cJSON_GetObjectItem(it, "text");
            chunks[n_chunks] = (hearth_infill_chunk){.filename = f ? f->valuestring : NULL,
                                                     .n_filename = f ? strlen(f->valuestring) : 0,
                                                     .text = t->valuestring, .n_text = strlen(t->valuestring)};
        }
        hearth_infill_parts p = {.prefix = pre, .n_prefix = n_pre, .suffix = suf, .n_suffix = n_suf,
                                 .prompt = prompt, .n_prompt = n_prompt, .extra = chunks, .n_extra = n_chunks,
                                 .n_batch = cJSON_GetObjectItem(c, "n_batch")->valueint,
                                 .n_ctx = cJSON_GetObjectItem(c, "n_ctx")->valueint,
                                 .n_predict = cJSON_GetObjectItem(c, "n_predict")->valueint,
                                 .spm = cJSON_IsTrue(cJSON_GetObjectItem(c, "spm"))};
        CHECK_EQ(hearth_infill_build(tok, &p, &ids, &n_ids), HEARTH_OK);
        const cJSON *want = cJSON_GetObjectItem(c, "ids");
        int n_want = cJSON_GetArraySize(want), bad = -1;
        for (int i = 0; i < n_want && i < (int)n_ids && bad < 0; i++)
            if (ids[i] != cJSON_GetArrayItem(want, i)->valueint) bad = i;
        if (bad >= 0 || n_want != (int)n_ids)
            fprintf(stderr, "  %s/%s: %zu ids, want %d; first difference at %d\n", name,
                    cJSON_GetObjectItem(c, "name")->valuestring, n_ids, n_want, bad);
        CHECK_EQ(n_ids, n_want);
        CHECK_EQ(bad, -1);
        free(pre);
        free(suf);
        free(prompt);
        free(ids);
    }
    CHECK(n_cases >= 8);
    hearth_tok_destroy(tok);
}

TEST(prompts_match_llama_server_starcoder_names) {
    cJSON *g = golden();
    CHECK(g != NULL);
    if (!g) return;
    check_model("fim-sc", cJSON_GetObjectItem(cJSON_GetObjectItem(g, "models"), "fim-sc"));
    cJSON_Delete(g);
}

TEST(prompts_match_llama_server_qwen_names) {
    cJSON *g = golden();
    CHECK(g != NULL);
    if (!g) return;
    check_model("fim-qwen", cJSON_GetObjectItem(cJSON_GetObjectItem(g, "models"), "fim-qwen"));
    cJSON_Delete(g);
}

TEST(found_by_name_are_control_tokens) {
    hearth_tok *tok = load_tok("tests/golden/fim/fim-qwen.gguf");
    CHECK(tok != NULL);
    if (!tok) return;
    /* the vocab's token types mark them control already; a found repo/sep/pad ends generation */
    CHECK(hearth_tok_is_control(tok, hearth_tok_fim(tok, HEARTH_TOK_FIM_MID)));
    CHECK(hearth_tok_is_eog(tok, hearth_tok_fim(tok, HEARTH_TOK_FIM_SEP)));
    CHECK(hearth_tok_is_eog(tok, hearth_tok_fim(tok, HEARTH_TOK_FIM_PAD)));
    CHECK(!hearth_tok_is_eog(tok, hearth_tok_fim(tok, HEARTH_TOK_FIM_PRE)));
    hearth_tok_destroy(tok);
}

TEST(bad_arguments) {
    hearth_tok *tok = load_tok("tests/golden/fim/fim-sc.gguf");
    CHECK(tok != NULL);
    if (!tok) return;
    int32_t *ids = (int32_t *)1;
    size_t n = 7;
    hearth_infill_parts p = {.n_batch = 0};
    CHECK_EQ(hearth_infill_build(tok, &p, &ids, &n), HEARTH_E_INVALID);
    CHECK(ids == NULL && n == 0);
    p.n_batch = 16;
    p.n_prefix = 3; /* no array */
    CHECK_EQ(hearth_infill_build(tok, &p, &ids, &n), HEARTH_E_INVALID);
    p.n_prefix = 0;
    CHECK_EQ(hearth_infill_build(tok, &p, &ids, &n), HEARTH_OK);
    CHECK_EQ(n, 3); /* PRE SUF MID, the repo tail cut by the budget */
    free(ids);
    hearth_tok_destroy(tok);
}

/* A tokenizer.json model: Qwen's added tokens are found by name the same way. */
TEST(tokenizer_json_names) {
    const char *json =
        "{\"added_tokens\":["
        "{\"id\":3,\"content\":\"<|fim_prefix|>\",\"special\":true},"
        "{\"id\":4,\"content\":\"<|fim_suffix|>\",\"special\":true},"
        "{\"id\":5,\"content\":\"<|fim_middle|>\",\"special\":true},"
        "{\"id\":6,\"content\":\"<|file_sep|>\",\"special\":true},"
        "{\"id\":7,\"content\":\"<|repo_name|>\",\"special\":true}],"
        "\"normalizer\":null,\"pre_tokenizer\":null,\"post_processor\":null,\"decoder\":null,"
        "\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\",\"vocab\":{\"[UNK]\":0,\"a\":1,\"b\":2}}}";
    hearth_tok *tok = NULL;
    CHECK_EQ(hearth_tok_from_json(json, strlen(json), &tok, NULL), HEARTH_OK);
    if (!tok) return;
    const int32_t want[HEARTH_TOK_FIM_COUNT] = {3, 4, 5, -1, 7, 6};
    for (int k = 0; k < HEARTH_TOK_FIM_COUNT; k++) CHECK_EQ(hearth_tok_fim(tok, (hearth_tok_fim_kind)k), want[k]);
    const int32_t pre[] = {1}, suf[] = {2};
    /* a budget that leaves no room for the repository part: PRE a SUF b MID */
    hearth_infill_parts p = {.prefix = pre, .n_prefix = 1, .suffix = suf, .n_suffix = 1, .n_batch = 16,
                             .n_ctx = 16, .n_predict = 0};
    int32_t *ids = NULL;
    size_t n = 0;
    CHECK_EQ(hearth_infill_build(tok, &p, &ids, &n), HEARTH_OK);
    const int32_t expect[] = {3, 1, 4, 2, 5};
    CHECK(n == 5 && ids && !memcmp(ids, expect, sizeof expect));
    free(ids);
    p.spm = true; /* suffix first: SUF b PRE a MID */
    CHECK_EQ(hearth_infill_build(tok, &p, &ids, &n), HEARTH_OK);
    const int32_t expect_spm[] = {4, 2, 3, 1, 5};
    CHECK(n == 5 && ids && !memcmp(ids, expect_spm, sizeof expect_spm));
    free(ids);
    hearth_tok_destroy(tok);
}

/* Without FIM tokens: llama.cpp finds SmolLM2's <reponame> (id 4) as the repo token, nothing
 * else; Gemma 3 has none. Both are refused with the missing kinds named. */
TEST(starter_models_have_no_fim) {
    const char *smol = getenv("HEARTH_SMOLLM2_GGUF"), *gemma = getenv("HEARTH_GEMMA3_GGUF");
    if (!smol || !*smol || !gemma || !*gemma) TEST_SKIP("HEARTH_SMOLLM2_GGUF / HEARTH_GEMMA3_GGUF not set");
    const char *paths[2] = {smol, gemma};
    for (int i = 0; i < 2; i++) {
        hearth_tok *tok = load_tok(paths[i]);
        CHECK(tok != NULL);
        if (!tok) continue;
        char why[96];
        CHECK(!hearth_infill_supported(tok, why, sizeof why));
        CHECK_STR(why, "no fill-in-the-middle prefix, suffix, middle token");
        CHECK_EQ(hearth_tok_fim(tok, HEARTH_TOK_FIM_REP), i == 0 ? 4 : -1);
        CHECK_EQ(hearth_tok_fim(tok, HEARTH_TOK_FIM_SEP), -1);
        int32_t *ids = NULL;
        size_t n = 0;
        hearth_infill_parts p = {.n_batch = 2048, .n_ctx = 2048, .n_predict = -1};
        CHECK_EQ(hearth_infill_build(tok, &p, &ids, &n), HEARTH_E_UNSUPPORTED);
        hearth_tok_destroy(tok);
    }
}

int main(int argc, char **argv) { return test_main(argc, argv); }
