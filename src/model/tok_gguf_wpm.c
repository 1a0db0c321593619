/*
 * tok_gguf_wpm.c - the WordPiece tokenizer of a BERT GGUF file (tokenizer.ggml.model "bert").
 *
 * llama.cpp's converter writes a WordPiece vocabulary in its own spelling: a word-initial piece
 * "hello" becomes "\u2581hello", a continuation "##lo" becomes "lo", and bracketed special
 * tokens ("[CLS]") stay as they are. This file spells the vocabulary back the Hugging Face way
 * and describes the tokenizer as the tokenizer.json of a BERT checkpoint would: BertNormalizer
 * (lowercasing and stripping accents as tokenizer.ggml.normalizer.lowercase and .strip_accents
 * say, both on by default, as llama.cpp reads them), BertPreTokenizer, WordPiece with "##", and
 * "[CLS] $A [SEP]" from tokenizer.ggml.bos_token_id and .seperator_token_id, the unknown piece
 * from .unknown_token_id (llama.cpp's defaults 101, 102 and 100 when a key is absent). It is
 * then built by the tokenizer.json front end, so one WordPiece implementation serves both
 * formats. Control tokens (token_type 3) become special added tokens, matched in the input as
 * `tokenizers` matches them.
 *
 * Thread rule: any thread; g is only read.
 */
#include "model/tok_gguf.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY(k) "tokenizer.ggml." k

static const char PHANTOM[] = "\xe2\x96\x81"; /* U+2581, the converter's word-start mark */

/* Token j of the GGUF vocabulary in Hugging Face spelling, into buf (NUL-terminated). */
static bool hf_spelling(hearth_span t, char *buf, size_t cap) {
    if (t.len + 3 >= cap || memchr(t.ptr, 0, t.len)) return false;
    if (t.len >= 3 && !memcmp(t.ptr, PHANTOM, 3)) {
        memcpy(buf, t.ptr + 3, t.len - 3);
        buf[t.len - 3] = 0;
    } else if (t.len >= 2 && t.ptr[0] == '[' && t.ptr[t.len - 1] == ']') {
        memcpy(buf, t.ptr, t.len);
        buf[t.len] = 0;
    } else {
        memcpy(buf, "##", 2);
        memcpy(buf + 2, t.ptr, t.len);
        buf[t.len + 2] = 0;
    }
    return true;
}

static int32_t read_id(const hearth_gguf *g, const char *key, uint32_t dflt, uint64_t n) {
    uint32_t v = dflt;
    hearth_gguf_get_u32(g, key, &v);
    return v < n ? (int32_t)v : -1;
}

hearth_status hearth_tok_wpm_from_gguf(const hearth_gguf *g, hearth_tok **out, hearth_err *err) {
    *out = NULL;
    hearth_gguf_type et;
    uint64_t n = 0;
    if (!hearth_gguf_get_arr(g, KEY("tokens"), &et, &n) || et != HEARTH_GGUF_STRING || n == 0 || n > (1u << 24))
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, KEY("tokens") " is missing, empty or not strings");
    hearth_gguf_type tt = HEARTH_GGUF_INT32;
    uint64_t n_types = 0;
    const uint8_t *types = NULL;
    if (hearth_gguf_get_arr(g, KEY("token_type"), &tt, &n_types)) {
        if (n_types != n || (tt != HEARTH_GGUF_INT32 && tt != HEARTH_GGUF_UINT32))
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, KEY("token_type") " does not match the tokens");
        types = hearth_gguf_arr_data(g, KEY("token_type"));
    }
    const int32_t cls = read_id(g, KEY("bos_token_id"), 101, n), sep = read_id(g, KEY("seperator_token_id"), 102, n),
                  unk = read_id(g, KEY("unknown_token_id"), 100, n);
    if (cls < 0 || sep < 0 || unk < 0)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "the WordPiece vocabulary of %llu tokens has no "
                              KEY("bos_token_id") ", " KEY("seperator_token_id") " or " KEY("unknown_token_id")
                              " inside it", (unsigned long long)n);
    bool lower = true, strip;
    hearth_gguf_get_bool(g, KEY("normalizer.lowercase"), &lower);
    strip = lower;
    hearth_gguf_get_bool(g, KEY("normalizer.strip_accents"), &strip);
    hearth_status st = HEARTH_OK;
    char *text = NULL;
    cJSON *root = cJSON_CreateObject(), *added = cJSON_AddArrayToObject(root, "added_tokens");
    cJSON *vocab = cJSON_CreateObject();
    char buf[1024], name_cls[1024] = "", name_sep[1024] = "", name_unk[1024] = "";
    for (uint64_t j = 0; j < n && root && added && vocab; j++) {
        hearth_span t;
        if (!hearth_gguf_arr_str(g, KEY("tokens"), j, &t) || !hf_spelling(t, buf, sizeof buf)) {
            st = hearth_err_set(err, HEARTH_E_FORMAT, -1, KEY("tokens") "[%llu] is not a usable token",
                                (unsigned long long)j);
            goto done;
        }
        if (cJSON_GetObjectItemCaseSensitive(vocab, buf)) continue; /* a duplicate spelling: the first id wins */
        cJSON_AddItemToObject(vocab, buf, cJSON_CreateNumber((double)j));
        int32_t type = 1;
        if (types) memcpy(&type, types + j * 4, 4);
        if (type == 3 || (int32_t)j == cls || (int32_t)j == sep || (int32_t)j == unk) { /* control */
            cJSON *a = cJSON_CreateObject();
            cJSON_AddNumberToObject(a, "id", (double)j);
            cJSON_AddStringToObject(a, "content", buf);
            cJSON_AddBoolToObject(a, "single_word", false);
            cJSON_AddBoolToObject(a, "lstrip", false);
            cJSON_AddBoolToObject(a, "rstrip", false);
            cJSON_AddBoolToObject(a, "normalized", false);
            cJSON_AddBoolToObject(a, "special", true);
            cJSON_AddItemToArray(added, a);
        }
        if ((int32_t)j == cls) snprintf(name_cls, sizeof name_cls, "%s", buf);
        if ((int32_t)j == sep) snprintf(name_sep, sizeof name_sep, "%s", buf);
        if ((int32_t)j == unk) snprintf(name_unk, sizeof name_unk, "%s", buf);
    }
    if (!root || !added || !vocab) {
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        goto done;
    }
    cJSON *norm = cJSON_AddObjectToObject(root, "normalizer");
    cJSON_AddStringToObject(norm, "type", "BertNormalizer");
    cJSON_AddBoolToObject(norm, "clean_text", true);
    cJSON_AddBoolToObject(norm, "handle_chinese_chars", true);
    cJSON_AddBoolToObject(norm, "strip_accents", strip);
    cJSON_AddBoolToObject(norm, "lowercase", lower);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(root, "pre_tokenizer"), "type", "BertPreTokenizer");
    cJSON *post = cJSON_AddObjectToObject(root, "post_processor");
    cJSON_AddStringToObject(post, "type", "BertProcessing");
    cJSON *s = cJSON_AddArrayToObject(post, "sep"), *c = cJSON_AddArrayToObject(post, "cls");
    cJSON_AddItemToArray(s, cJSON_CreateString(name_sep));
    cJSON_AddItemToArray(s, cJSON_CreateNumber(sep));
    cJSON_AddItemToArray(c, cJSON_CreateString(name_cls));
    cJSON_AddItemToArray(c, cJSON_CreateNumber(cls));
    cJSON *dec = cJSON_AddObjectToObject(root, "decoder");
    cJSON_AddStringToObject(dec, "type", "WordPiece");
    cJSON_AddStringToObject(dec, "prefix", "##");
    cJSON_AddBoolToObject(dec, "cleanup", true);
    cJSON *model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(model, "type", "WordPiece");
    cJSON_AddStringToObject(model, "unk_token", name_unk);
    cJSON_AddStringToObject(model, "continuing_subword_prefix", "##");
    cJSON_AddNumberToObject(model, "max_input_chars_per_word", 100);
    cJSON_AddItemToObject(model, "vocab", vocab);
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
