/*
 * tok_gguf_ugm.c - the Unigram tokenizer of a GGUF file (tokenizer.ggml.model "t5": llama.cpp's
 * UGM, what its converter writes for XLM-RoBERTa and T5-style SentencePiece vocabularies).
 *
 * As tok_gguf_wpm.c does for WordPiece, the vocabulary is described as the tokenizer.json of the
 * same model would be and built by the tokenizer.json front end, so one Unigram (Viterbi over
 * the piece scores) serves both formats:
 *   normalizer     NFKC when the file has tokenizer.ggml.precompiled_charsmap (SentencePiece's
 *                  nmt_nfkc map, which hearth does not interpret byte for byte: NFKC is its
 *                  core, and equal to it on text without control or odd space characters),
 *                  nothing otherwise, as llama.cpp; then, with .remove_extra_whitespaces (on by
 *                  default), runs of spaces collapsed to one and the ends trimmed;
 *   pre-tokenizer  Metaspace: spaces become U+2581, one put in front when .add_space_prefix
 *                  (on by default);
 *   model          Unigram with .tokens and .scores (float32) in id order, .unknown_token_id
 *                  (token_type 2 when the key is absent);
 *   post-processor .bos_token_id in front when .add_bos_token, .eos_token_id at the end when
 *                  .add_eos_token (llama.cpp's UGM defaults: no BOS, EOS on);
 *   added tokens   control (3) and unknown (2) tokens special, user-defined (4) ones plain, all
 *                  matched in the input as tokenizers matches them.
 *
 * Thread rule: any thread; g is only read.
 */
#include "model/tok_gguf.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY(k) "tokenizer.ggml." k

enum { TYPE_NORMAL = 1, TYPE_UNKNOWN = 2, TYPE_CONTROL = 3, TYPE_USER = 4 };

static int32_t read_id(const hearth_gguf *g, const char *key, int32_t dflt, uint64_t n) {
    uint32_t v;
    if (!hearth_gguf_get_u32(g, key, &v)) return dflt;
    return v < n ? (int32_t)v : -1;
}

static cJSON *added_token(int64_t id, const char *content, bool special) {
    cJSON *a = cJSON_CreateObject();
    cJSON_AddNumberToObject(a, "id", (double)id);
    cJSON_AddStringToObject(a, "content", content);
    cJSON_AddBoolToObject(a, "single_word", false);
    cJSON_AddBoolToObject(a, "lstrip", false);
    cJSON_AddBoolToObject(a, "rstrip", false);
    cJSON_AddBoolToObject(a, "normalized", !special);
    cJSON_AddBoolToObject(a, "special", special);
    return a;
}

/* {"type": "SpecialToken", ...} of the template, by name. */
static void template_special(cJSON *single, const char *name) {
    cJSON *st = cJSON_CreateObject(), *in = cJSON_AddObjectToObject(st, "SpecialToken");
    cJSON_AddStringToObject(in, "id", name);
    cJSON_AddNumberToObject(in, "type_id", 0);
    cJSON_AddItemToArray(single, st);
}

hearth_status hearth_tok_ugm_from_gguf(const hearth_gguf *g, hearth_tok **out, hearth_err *err) {
    *out = NULL;
    hearth_gguf_type et, st_type, tt = HEARTH_GGUF_INT32;
    uint64_t n = 0, n_scores = 0, n_types = 0;
    if (!hearth_gguf_get_arr(g, KEY("tokens"), &et, &n) || et != HEARTH_GGUF_STRING || n == 0 || n > (1u << 24))
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, KEY("tokens") " is missing, empty or not strings");
    const uint8_t *scores = NULL, *types = NULL;
    if (!hearth_gguf_get_arr(g, KEY("scores"), &st_type, &n_scores) || st_type != HEARTH_GGUF_FLOAT32 ||
        n_scores != n || !(scores = hearth_gguf_arr_data(g, KEY("scores"))))
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, KEY("scores") " is missing or does not match the tokens "
                              "(a Unigram vocabulary needs one float32 score per token)");
    if (hearth_gguf_get_arr(g, KEY("token_type"), &tt, &n_types)) {
        if (n_types != n || (tt != HEARTH_GGUF_INT32 && tt != HEARTH_GGUF_UINT32) ||
            !(types = hearth_gguf_arr_data(g, KEY("token_type"))))
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, KEY("token_type") " does not match the tokens");
    }
    int32_t unk = read_id(g, KEY("unknown_token_id"), -1, n);
    for (uint64_t j = 0; unk < 0 && types && j < n; j++) {
        int32_t t;
        memcpy(&t, types + j * 4, 4);
        if (t == TYPE_UNKNOWN) unk = (int32_t)j;
    }
    const int32_t bos = read_id(g, KEY("bos_token_id"), -1, n), eos = read_id(g, KEY("eos_token_id"), -1, n);
    bool add_bos = false, add_eos = true, space_prefix = true, trim_spaces = true;
    hearth_gguf_get_bool(g, KEY("add_bos_token"), &add_bos);
    hearth_gguf_get_bool(g, KEY("add_eos_token"), &add_eos);
    hearth_gguf_get_bool(g, KEY("add_space_prefix"), &space_prefix);
    hearth_gguf_get_bool(g, KEY("remove_extra_whitespaces"), &trim_spaces);
    if (unk < 0 || (add_bos && bos < 0) || (add_eos && eos < 0))
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "the Unigram vocabulary of %llu tokens has no %s inside it",
                              (unsigned long long)n, unk < 0 ? "unknown token" : add_bos && bos < 0
                              ? KEY("bos_token_id") : KEY("eos_token_id"));
    hearth_gguf_type ct;
    uint64_t n_cm = 0;
    const bool charsmap = hearth_gguf_get_arr(g, KEY("precompiled_charsmap"), &ct, &n_cm) && n_cm > 0;

    hearth_status st = HEARTH_OK;
    char *text = NULL;
    cJSON *root = cJSON_CreateObject(), *added = cJSON_AddArrayToObject(root, "added_tokens");
    cJSON *vocab = cJSON_CreateArray();
    char name_bos[512] = "", name_eos[512] = "";
    for (uint64_t j = 0; j < n && root && added && vocab; j++) {
        hearth_span t;
        char buf[512];
        if (!hearth_gguf_arr_str(g, KEY("tokens"), j, &t) || t.len >= sizeof buf || memchr(t.ptr, 0, t.len)) {
            st = hearth_err_set(err, HEARTH_E_FORMAT, -1, KEY("tokens") "[%llu] is not a usable token",
                                (unsigned long long)j);
            goto done;
        }
        memcpy(buf, t.ptr, t.len);
        buf[t.len] = 0;
        float score;
        memcpy(&score, scores + j * 4, 4);
        if (!isfinite(score)) score = -1e30f;
        cJSON *piece = cJSON_CreateArray();
        cJSON_AddItemToArray(piece, cJSON_CreateString(buf));
        cJSON_AddItemToArray(piece, cJSON_CreateNumber((double)score));
        cJSON_AddItemToArray(vocab, piece);
        int32_t type = TYPE_NORMAL;
        if (types) memcpy(&type, types + j * 4, 4);
        if (type == TYPE_CONTROL || type == TYPE_UNKNOWN || (int32_t)j == unk || (int32_t)j == bos ||
            (int32_t)j == eos)
            cJSON_AddItemToArray(added, added_token((int64_t)j, buf, true));
        else if (type == TYPE_USER)
            cJSON_AddItemToArray(added, added_token((int64_t)j, buf, false));
        if ((int32_t)j == bos) snprintf(name_bos, sizeof name_bos, "%s", buf);
        if ((int32_t)j == eos) snprintf(name_eos, sizeof name_eos, "%s", buf);
    }
    if (!root || !added || !vocab) {
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        goto done;
    }
    cJSON *norm = cJSON_AddObjectToObject(root, "normalizer");
    cJSON_AddStringToObject(norm, "type", "Sequence");
    cJSON *norms = cJSON_AddArrayToObject(norm, "normalizers");
    if (charsmap) {
        cJSON *nfkc = cJSON_CreateObject();
        cJSON_AddStringToObject(nfkc, "type", "NFKC");
        cJSON_AddItemToArray(norms, nfkc);
    }
    if (trim_spaces) {
        cJSON *rep = cJSON_CreateObject(), *pat = cJSON_AddObjectToObject(rep, "pattern");
        cJSON_AddStringToObject(rep, "type", "Replace");
        cJSON_AddStringToObject(pat, "Regex", " {2,}");
        cJSON_AddStringToObject(rep, "content", " ");
        cJSON_AddItemToArray(norms, rep);
        cJSON *strip = cJSON_CreateObject();
        cJSON_AddStringToObject(strip, "type", "Strip");
        cJSON_AddBoolToObject(strip, "strip_left", true);
        cJSON_AddBoolToObject(strip, "strip_right", true);
        cJSON_AddItemToArray(norms, strip);
    }
    cJSON *pre = cJSON_AddObjectToObject(root, "pre_tokenizer");
    cJSON_AddStringToObject(pre, "type", "Metaspace");
    cJSON_AddStringToObject(pre, "replacement", "\xe2\x96\x81");
    cJSON_AddStringToObject(pre, "prepend_scheme", space_prefix ? "always" : "never");
    cJSON_AddBoolToObject(pre, "split", true);
    cJSON *post = cJSON_AddObjectToObject(root, "post_processor");
    cJSON_AddStringToObject(post, "type", "TemplateProcessing");
    cJSON *single = cJSON_AddArrayToObject(post, "single");
    cJSON *specials = cJSON_AddObjectToObject(post, "special_tokens");
    if (add_bos) template_special(single, name_bos);
    cJSON *seq = cJSON_CreateObject(), *seq_in = cJSON_AddObjectToObject(seq, "Sequence");
    cJSON_AddStringToObject(seq_in, "id", "A");
    cJSON_AddNumberToObject(seq_in, "type_id", 0);
    cJSON_AddItemToArray(single, seq);
    if (add_eos) template_special(single, name_eos);
    for (int k = 0; k < 2; k++) {
        const bool on = k == 0 ? add_bos : add_eos;
        const char *name = k == 0 ? name_bos : name_eos;
        if (!on || cJSON_GetObjectItemCaseSensitive(specials, name)) continue;
        cJSON *sp = cJSON_AddObjectToObject(specials, name), *ids = cJSON_AddArrayToObject(sp, "ids");
        cJSON *toks = cJSON_AddArrayToObject(sp, "tokens");
        cJSON_AddStringToObject(sp, "id", name);
        cJSON_AddItemToArray(ids, cJSON_CreateNumber(k == 0 ? bos : eos));
        cJSON_AddItemToArray(toks, cJSON_CreateString(name));
    }
    cJSON_AddItemToObject(post, "pair", cJSON_Duplicate(single, true)); /* unused: one text per input */
    cJSON *dec = cJSON_AddObjectToObject(root, "decoder");
    cJSON_AddStringToObject(dec, "type", "Metaspace");
    cJSON_AddStringToObject(dec, "replacement", "\xe2\x96\x81");
    cJSON_AddStringToObject(dec, "prepend_scheme", space_prefix ? "always" : "never");
    cJSON_AddBoolToObject(dec, "split", true);
    cJSON *model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(model, "type", "Unigram");
    cJSON_AddNumberToObject(model, "unk_id", unk);
    cJSON_AddItemToObject(model, "vocab", vocab);
    cJSON_AddBoolToObject(model, "byte_fallback", false);
    vocab = NULL;
    if (!(text = cJSON_PrintUnformatted(root))) {
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        goto done;
    }
    st = hearth_tok_from_json(text, strlen(text), out, err);
done:
    free(text);
    cJSON_Delete(vocab);
    cJSON_Delete(root);
    return st;
}
