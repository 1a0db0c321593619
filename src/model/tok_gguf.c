/*
 * tok_gguf.c - tokenizer.ggml.* metadata -> hearth_tok_spec -> hearth_tok.
 *
 * The front end owns the policy that lives in llama.cpp's llama_vocab::impl::load: which
 * model names we take, the defaults of missing keys, and the shape checks of the arrays (a
 * scores or token_type array shorter than the token list is a format error, as there). The
 * tokenizer core copies what it keeps, so the spans into the mapping and the temporary
 * arrays here live only for the duration of the call.
 */
#include "model/tok_gguf.h"

#include <stdlib.h>
#include <string.h>

#include "base/log.h"

#define KEY(k) "tokenizer.ggml." k

/* Pre-tokenizer names for which llama.cpp adds BOS by default (Llama-3 style vocabs). */
static bool pre_adds_bos(const char *pre) {
    static const char *const names[] = {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1",
                                        "pixtral", "midm-2.0", "lfm2", "tekken", "chameleon"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(pre, names[i]) == 0) return true;
    return false;
}

/* A string array of at least min_n elements as spans into the mapping (malloc'ed). */
static hearth_status read_str_array(const hearth_gguf *g, const char *key, uint64_t *n,
                                    hearth_span **out, hearth_err *err) {
    hearth_gguf_type et;
    *out = NULL;
    if (!hearth_gguf_get_arr(g, key, &et, n))
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s is missing", key);
    if (et != HEARTH_GGUF_STRING)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s is not an array of strings", key);
    if (*n > INT32_MAX / 2)
        return hearth_err_set(err, HEARTH_E_LIMIT, -1, "%s has %llu entries", key,
                              (unsigned long long)*n);
    hearth_span *a = malloc((*n ? *n : 1) * sizeof *a);
    if (!a) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    for (uint64_t j = 0; j < *n; j++)
        if (!hearth_gguf_arr_str(g, key, j, &a[j])) {
            free(a);
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s[%llu] is unreadable", key,
                                  (unsigned long long)j);
        }
    *out = a;
    return HEARTH_OK;
}

/* An optional numeric array of >= n elements of type want (or int32 converted for scores). */
static hearth_status read_num_array(const hearth_gguf *g, const char *key, uint64_t n, bool scores,
                                    void **out, hearth_err *err) {
    hearth_gguf_type et;
    uint64_t m;
    *out = NULL;
    if (!hearth_gguf_get_arr(g, key, &et, &m)) return HEARTH_OK;
    bool ok = et == HEARTH_GGUF_INT32 || (scores && et == HEARTH_GGUF_FLOAT32);
    if (!ok) return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s has the wrong element type", key);
    if (m < n)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s has %llu entries for %llu tokens", key,
                              (unsigned long long)m, (unsigned long long)n);
    const uint8_t *data = hearth_gguf_arr_data(g, key);
    void *a = malloc(n ? n * 4 : 4);
    if (!a) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    if (n && !data) {
        free(a);
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s has no data", key);
    }
    if (scores && et == HEARTH_GGUF_INT32) {
        float *f = a;
        for (uint64_t i = 0; i < n; i++) {
            int32_t v;
            memcpy(&v, data + 4 * i, 4);
            f[i] = (float)v;
        }
    } else if (n) {
        memcpy(a, data, n * 4); /* the mapping may be unaligned */
    }
    *out = a;
    return HEARTH_OK;
}

static int32_t read_id(const hearth_gguf *g, const char *key, int32_t dflt, uint64_t n_vocab) {
    uint32_t v;
    if (dflt >= 0 && (uint64_t)dflt >= n_vocab) dflt = -1;
    if (!hearth_gguf_get_u32(g, key, &v)) return dflt;
    if (v >= n_vocab) {
        hearth_log(HEARTH_LOG_WARN, "tokenizer: %s = %u is out of range, using %d", key, v, dflt);
        return dflt;
    }
    return (int32_t)v;
}

hearth_status hearth_tok_from_gguf(const hearth_gguf *g, hearth_tok **out, hearth_err *err) {
    hearth_status st;
    hearth_span model, pre_span;
    hearth_span *tokens = NULL, *merges = NULL;
    float *scores = NULL;
    int32_t *types = NULL;
    uint64_t n = 0, n_merges = 0;
    char pre[64] = "default";
    hearth_tok_spec spec = {0};
    if (out) *out = NULL;
    if (!g || !out) return hearth_err_set(err, HEARTH_E_INVALID, -1, "no gguf");

    if (!hearth_gguf_get_str(g, KEY("model"), &model))
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, KEY("model") " is missing");
    if (hearth_span_eq(model, "llama")) {
        spec.kind = HEARTH_TOK_SPM;
    } else if (hearth_span_eq(model, "gpt2")) {
        spec.kind = HEARTH_TOK_BPE_BYTES;
    } else if (hearth_span_eq(model, "bert")) {
        return hearth_tok_wpm_from_gguf(g, out, err);
    } else if (hearth_span_eq(model, "t5")) {
        return hearth_tok_ugm_from_gguf(g, out, err);
    } else {
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "unsupported tokenizer model '%.*s'",
                              (int)(model.len > 64 ? 64 : model.len), model.ptr);
    }
    if (hearth_gguf_get_str(g, KEY("pre"), &pre_span)) {
        if (pre_span.len >= sizeof pre || memchr(pre_span.ptr, 0, pre_span.len))
            return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "unsupported pre-tokenizer '%.*s'",
                                  (int)(pre_span.len > 64 ? 64 : pre_span.len), pre_span.ptr);
        memcpy(pre, pre_span.ptr, pre_span.len);
        pre[pre_span.len] = 0;
    } else if (spec.kind == HEARTH_TOK_BPE_BYTES) {
        hearth_log(HEARTH_LOG_WARN, "tokenizer: no %s, using 'default'", KEY("pre"));
    }

    if ((st = read_str_array(g, KEY("tokens"), &n, &tokens, err))) goto done;
    if (n == 0) {
        st = hearth_err_set(err, HEARTH_E_FORMAT, -1, KEY("tokens") " is empty");
        goto done;
    }
    if ((st = read_num_array(g, KEY("scores"), n, true, (void **)&scores, err))) goto done;
    if ((st = read_num_array(g, KEY("token_type"), n, false, (void **)&types, err))) goto done;
    if (spec.kind == HEARTH_TOK_BPE_BYTES &&
        (st = read_str_array(g, KEY("merges"), &n_merges, &merges, err)))
        goto done;

    bool spm = spec.kind == HEARTH_TOK_SPM;
    spec.pre = pre;
    spec.n_vocab = (int32_t)n;
    spec.tokens = tokens;
    spec.scores = scores;
    spec.token_types = types;
    spec.merges = merges;
    spec.n_merges = (int32_t)n_merges;
    spec.bos_id = read_id(g, KEY("bos_token_id"), spm ? 1 : -1, n);
    spec.eos_id = read_id(g, KEY("eos_token_id"), spm ? 2 : -1, n);
    spec.eot_id = read_id(g, KEY("eot_token_id"), -1, n);
    spec.unk_id = read_id(g, KEY("unknown_token_id"), spm ? 0 : -1, n);
    spec.pad_id = read_id(g, KEY("padding_token_id"), -1, n);
    /* fill-in-the-middle ids; the older prefix/suffix/middle keys when the newer are absent */
    static const char *const fim_keys[HEARTH_TOK_FIM_COUNT][2] = {
        {KEY("fim_pre_token_id"), KEY("prefix_token_id")}, {KEY("fim_suf_token_id"), KEY("suffix_token_id")},
        {KEY("fim_mid_token_id"), KEY("middle_token_id")}, {KEY("fim_pad_token_id"), NULL},
        {KEY("fim_rep_token_id"), NULL},                   {KEY("fim_sep_token_id"), NULL},
    };
    int32_t fim[HEARTH_TOK_FIM_COUNT];
    for (int k = 0; k < HEARTH_TOK_FIM_COUNT; k++) {
        fim[k] = read_id(g, fim_keys[k][0], -1, n);
        if (fim[k] < 0 && fim_keys[k][1]) fim[k] = read_id(g, fim_keys[k][1], -1, n);
    }
    spec.fim_ids = fim;
    spec.add_bos = spm || pre_adds_bos(pre);
    spec.add_eos = false;
    spec.add_space_prefix = spm;
    bool b;
    if (hearth_gguf_get_bool(g, KEY("add_bos_token"), &b)) spec.add_bos = b;
    if (hearth_gguf_get_bool(g, KEY("add_eos_token"), &b)) spec.add_eos = b;
    if (hearth_gguf_get_bool(g, KEY("add_space_prefix"), &b)) spec.add_space_prefix = b;
    if (spm && !scores) {
        hearth_log(HEARTH_LOG_WARN, "tokenizer: SentencePiece vocab without scores");
        /* llama.cpp reads missing scores as 0: give the core an explicit zero array */
        scores = calloc(n, sizeof *scores);
        if (!scores) {
            st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
            goto done;
        }
        spec.scores = scores;
    }
    st = hearth_tok_create(&spec, out, err);
done:
    free(tokens);
    free(merges);
    free(scores);
    free(types);
    return st;
}
