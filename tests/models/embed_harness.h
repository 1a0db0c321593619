/*
 * embed_harness.h - the golden reader and parity checks shared by the embedding tests
 * (test_bert.c against sentence-transformers, test_bert_gguf.c against llama.cpp): a golden
 * of tools/embed_golden.py's JSON shape (texts, the oracle's token ids and embeddings, each
 * query's nearest corpus sentences), hearth's ids and embeddings of the same texts, the worst
 * cosine per vector and the nearest neighbours. Header-only test code.
 */
#pragma once
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden_json.h"
#include "models/bert.h"
#include "test.h"

typedef struct {
    cJSON   *root;
    int      n_texts, n_corpus, dim;
    int32_t **ids;
    size_t  *n_ids;
    float   *emb;        /* [n_texts][dim] */
} golden;

static inline bool golden_load(const char *name, golden *g) {
    memset(g, 0, sizeof *g);
    char path[256];
    snprintf(path, sizeof path, "tests/golden/embed/%s.json", name);
    char *text = golden_slurp(path, NULL);
    if (!text) return false;
    g->root = cJSON_Parse(text);
    free(text);
    if (!g->root) return false;
    const cJSON *texts = cJSON_GetObjectItem(g->root, "texts"), *ids = cJSON_GetObjectItem(g->root, "ids"),
                *emb = cJSON_GetObjectItem(g->root, "embeddings");
    g->n_texts = cJSON_GetArraySize(texts);
    g->n_corpus = cJSON_GetObjectItem(g->root, "n_corpus")->valueint;
    g->dim = cJSON_GetObjectItem(g->root, "dim")->valueint;
    g->ids = calloc((size_t)g->n_texts, sizeof *g->ids);
    g->n_ids = calloc((size_t)g->n_texts, sizeof *g->n_ids);
    g->emb = malloc((size_t)g->n_texts * (size_t)g->dim * sizeof *g->emb);
    for (int i = 0; i < g->n_texts; i++) {
        const cJSON *row = cJSON_GetArrayItem(ids, i), *e = cJSON_GetArrayItem(emb, i);
        g->n_ids[i] = (size_t)cJSON_GetArraySize(row);
        g->ids[i] = malloc(g->n_ids[i] * sizeof *g->ids[i]);
        for (size_t k = 0; k < g->n_ids[i]; k++) g->ids[i][k] = cJSON_GetArrayItem(row, (int)k)->valueint;
        for (int k = 0; k < g->dim; k++) g->emb[i * g->dim + k] = (float)cJSON_GetArrayItem(e, k)->valuedouble;
    }
    return true;
}

static inline void golden_free(golden *g) {
    for (int i = 0; i < g->n_texts; i++) free(g->ids[i]);
    free(g->ids);
    free(g->n_ids);
    free(g->emb);
    cJSON_Delete(g->root);
}

static inline double cosine(const float *a, const float *b, int64_t n) {
    double ab = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < n; i++) ab += (double)a[i] * b[i], aa += (double)a[i] * a[i], bb += (double)b[i] * b[i];
    return ab / sqrt(aa * bb);
}

/* Tokenize every golden text with hearth and embed them all in one call; checks the ids. */
static inline float *embed_all(hearth_bert *b, golden *g, int *bad_ids) {
    const cJSON *texts = cJSON_GetObjectItem(g->root, "texts");
    int32_t **ids = calloc((size_t)g->n_texts, sizeof *ids);
    size_t *n_ids = calloc((size_t)g->n_texts, sizeof *n_ids);
    *bad_ids = 0;
    for (int i = 0; i < g->n_texts; i++) {
        const char *t = cJSON_GetArrayItem(texts, i)->valuestring;
        CHECK_EQ(hearth_bert_tokenize(b, t, strlen(t), &ids[i], &n_ids[i]), HEARTH_OK);
        if (n_ids[i] != g->n_ids[i] || memcmp(ids[i], g->ids[i], n_ids[i] * sizeof *ids[i])) {
            fprintf(stderr, "  text %d (%s): hearth's ids differ from the tokenizer's\n", i, t);
            (*bad_ids)++;
        }
    }
    float *out = malloc((size_t)g->n_texts * (size_t)g->dim * sizeof *out);
    hearth_err err = {0};
    CHECK_EQ(hearth_bert_embed(b, (const int32_t *const *)ids, n_ids, g->n_texts, out, &err), HEARTH_OK);
    for (int i = 0; i < g->n_texts; i++) free(ids[i]);
    free(ids);
    free(n_ids);
    return out;
}

/* Cosine per vector and the nearest neighbours; all_queries: every query's top 1 must agree,
 * else only where the golden's top two are more than 1e-3 apart. */
static inline void check_parity_min(hearth_bert *b, golden *g, bool all_queries, double min_cos, const char *oracle) {
    CHECK_EQ(hearth_bert_dim(b), g->dim);
    int bad_ids;
    float *out = embed_all(b, g, &bad_ids);
    CHECK_EQ(bad_ids, 0);
    double worst = 1;
    for (int i = 0; i < g->n_texts; i++) {
        double c = cosine(out + i * g->dim, g->emb + i * g->dim, g->dim);
        if (c < worst) worst = c;
    }
    fprintf(stderr, "  worst cosine with %s: 1 - %.6g over %d texts\n", oracle, 1 - worst, g->n_texts);
    CHECK(worst >= min_cos);
    const cJSON *ranking = cJSON_GetObjectItem(g->root, "ranking"), *r;
    int n_checked = 0;
    cJSON_ArrayForEach(r, ranking) {
        int q = cJSON_GetObjectItem(r, "query")->valueint;
        const cJSON *top = cJSON_GetObjectItem(r, "top"), *sc = cJSON_GetObjectItem(r, "scores");
        double margin = cJSON_GetArrayItem(sc, 0)->valuedouble - cJSON_GetArrayItem(sc, 1)->valuedouble;
        if (!all_queries && margin <= 1e-3) continue;
        const float *qv = out + (g->n_corpus + q) * g->dim;
        int best = -1;
        double best_s = -2;
        for (int j = 0; j < g->n_corpus; j++) {
            double s = cosine(qv, out + j * g->dim, g->dim);
            if (s > best_s) best_s = s, best = j;
        }
        CHECK_EQ(best, cJSON_GetArrayItem(top, 0)->valueint);
        n_checked++;
    }
    CHECK(n_checked >= (all_queries ? cJSON_GetArraySize(ranking) : 3));
    free(out);
}

static inline hearth_bert *load(const char *dir, int64_t max_batch_tokens) {
    hearth_bert_params p = hearth_bert_params_default();
    p.n_threads = 2;
    if (max_batch_tokens) p.max_batch_tokens = max_batch_tokens;
    hearth_bert *b = NULL;
    hearth_err err = {0};
    if (hearth_bert_load(dir, &p, &b, &err)) fprintf(stderr, "  load %s: %s\n", dir, err.msg);
    return b;
}

static inline void check_parity(hearth_bert *b, golden *g, bool all_queries) {
    check_parity_min(b, g, all_queries, 0.99999, "sentence-transformers");
}
