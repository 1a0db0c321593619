/*
 * tok_json.c - the tokenizer.json front end: Hugging Face tokenizers' serialized Tokenizer
 * -> a hearth_tok with a pipeline (tok_pipe.h).
 *
 * Load order:
 *   1. parse (cJSON) and check the top-level keys;
 *   2. the vocab: the model's vocab (an object token -> id for BPE / WordPiece, a list of
 *      [piece, score] for Unigram) and the added tokens (their "id" and "content") become one
 *      id -> string table, built by the core's tok_create_vocab (string map, attributes). An
 *      added token marked special is CONTROL + TOK_ATTR_SPECIAL, another added token
 *      USER_DEFINED, the model's unk UNKNOWN, <0xXX> tokens of a byte-fallback model BYTE;
 *   3. the model's tables: BPE merges into the core's merge table ((left id, right id) ->
 *      (rank, merged id); a duplicate pair keeps its last rank, as tokenizers' HashMap does;
 *      every merge side and result must be a vocab token, as tokenizers requires), the
 *      byte-level alphabet and <0xXX> tables, the Unigram trie;
 *   4. normalizer, pre-tokenizer, post-processor and decoder (tok_json_parts.c), then the
 *      added-token tries (pipe.c) and each token's decoded piece (hf_decode.c).
 *
 * Not supported (each a load error naming it): models WordLevel and BPE dropout; normalizers
 * Precompiled, Nmt, ByteLevel; pre-tokenizers CharDelimiterSplit, UnicodeScripts, a
 * ByteLevel that is not the last pre-tokenizer; decoders CTC; any unknown option. "truncation"
 * and "padding" are read for shape only and not applied (see tokenizer.h).
 * A gap in the ids (no token has id k) becomes an empty UNUSED token, which encodes to nothing.
 */
#include "tokenizer/tok_pipe.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

#define MAX_ID (1 << 26)

/* cJSON strings end at their first NUL, so "\u0000" (a vocab piece of a tokenizer trained on
 * text with NULs) would cut the string short. hearth_tok_from_json rewrites each \u0000 escape
 * as \uDBFF\uDFFF (U+10FFFF, a noncharacter no tokenizer has), and spans read from the tree
 * turn that back into NUL bytes. */
#define NUL_MARK "\xF4\x8F\xBF\xBF"

typedef struct {
    char **v;    /* owned: strings rebuilt with their NULs */
    size_t n, cap;
} owned_strs;

static void owned_free(owned_strs *o) {
    for (size_t i = 0; i < o->n; i++) free(o->v[i]);
    free(o->v);
}

/* The text of a JSON string, NULs restored. NULL on out of memory. */
static const char *jtext(const char *s, size_t *n, owned_strs *o) {
    if (!strstr(s, NUL_MARK)) {
        *n = strlen(s);
        return s;
    }
    if (!hearth_buf_grow(&o->v, &o->cap, o->n + 1, sizeof *o->v, 16)) return NULL;
    size_t len = strlen(s), k = 0;
    char *d = malloc(len + 1);
    if (!d) return NULL;
    for (size_t i = 0; i < len;) {
        if (i + 4 <= len && !memcmp(s + i, NUL_MARK, 4)) {
            d[k++] = 0;
            i += 4;
        } else {
            d[k++] = s[i++];
        }
    }
    d[k] = 0;
    o->v[o->n++] = d;
    *n = k;
    return d;
}

typedef struct {
    hearth_span *tokens; /* [n] borrowed from the cJSON tree */
    int32_t     *types;
    float       *scores;
    int32_t      n;
} vocab_tab;

static hearth_status nomem(hearth_err *err) {
    return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
}

static hearth_status set_token(vocab_tab *v, int32_t id, const char *js, int32_t type,
                               owned_strs *o, hearth_err *err) {
    size_t n;
    const char *s = jtext(js, &n, o);
    if (!s) return nomem(err);
    if (v->tokens[id].ptr) {
        if (v->tokens[id].len == n && !memcmp(v->tokens[id].ptr, s, n)) {
            v->types[id] = type;
            return HEARTH_OK;
        }
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, id,
                              "id %d is both '%.*s' and '%.*s'", id,
                              (int)(v->tokens[id].len > 60 ? 60 : v->tokens[id].len),
                              v->tokens[id].ptr, (int)(n > 60 ? 60 : n), s);
    }
    v->tokens[id] = (hearth_span){s, n};
    v->types[id] = type;
    return HEARTH_OK;
}

static int32_t json_id(const cJSON *c) {
    if (!cJSON_IsNumber(c) || c->valuedouble < 0 || c->valuedouble >= MAX_ID ||
        c->valuedouble != (double)(int32_t)c->valuedouble)
        return -1;
    return (int32_t)c->valuedouble;
}

/* Highest id of the model vocab and the added tokens, checking shapes. */
static hearth_status max_id(const cJSON *model_vocab, bool unigram, const cJSON *added,
                            int32_t *out, hearth_err *err) {
    int32_t mx = -1, k = 0;
    for (const cJSON *c = model_vocab->child; c; c = c->next, k++) {
        int32_t id = unigram ? k : json_id(c);
        if (unigram ? (!cJSON_IsArray(c) || !cJSON_IsString(cJSON_GetArrayItem(c, 0)) ||
                       !cJSON_IsNumber(cJSON_GetArrayItem(c, 1)))
                    : id < 0)
            return hearth_err_set(err, HEARTH_E_FORMAT, k, "model vocab entry %d is malformed", k);
        if (id >= MAX_ID) return hearth_err_set(err, HEARTH_E_LIMIT, k, "vocab too large");
        if (id > mx) mx = id;
    }
    for (const cJSON *c = added ? added->child : NULL; c; c = c->next) {
        int32_t id = json_id(cJSON_GetObjectItemCaseSensitive(c, "id"));
        if (id < 0 || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, "content")))
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "added token without id / content");
        if (id > mx) mx = id;
    }
    *out = mx;
    return mx >= 0 ? HEARTH_OK : hearth_err_set(err, HEARTH_E_FORMAT, -1, "empty vocab");
}

/* ------------------------------------------------------------------ numbers */

/* Unigram scores as tokenizers has them. serde_json's default float parser (tokenizers does not
 * enable its float_roundtrip feature) is not correctly rounded: it reads the digits into an
 * integer significand, converts that to f64 and multiplies or divides by an f64 power of ten.
 * With a 16-17 digit significand above 2^53 that rounds twice, and the score can be one ulp
 * away from the correctly rounded value cJSON gives, enough to break Viterbi ties the other
 * way. The files' numbers are shortest round-trip representations (ryu, Python repr), so we
 * regenerate those digits from the correctly rounded double and redo serde's arithmetic. */
static double serde_f64(double v, const double *pow10) {
    if (v == 0 || v != v || v - v != 0) return v;
    char buf[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, v);
        if (strtod(buf, NULL) == v) break;
    }
    const char *s = buf + (buf[0] == '-');
    uint64_t sig = 0;
    int nd = 0;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9') sig = sig * 10 + (uint64_t)(*s - '0'), nd++;
    int e = (*s ? atoi(s + 1) : 0) - (nd - 1);
    double f = (double)sig;
    for (;;) {
        int a = e < 0 ? -e : e;
        if (a <= 308) {
            f = e >= 0 ? f * pow10[a] : f / pow10[a];
            break;
        }
        if (f == 0 || e > 0) break;
        f /= 1e308;
        e += 308;
    }
    return buf[0] == '-' ? -f : f;
}

/* ------------------------------------------------------------------ BPE merges */

static hearth_status build_merges(hearth_tok *tok, const tok_model *m, const cJSON *merges,
                                  owned_strs *o, hearth_err *err) {
    int n = cJSON_GetArraySize(merges);
    if (!tok_merges_init(tok, (size_t)(n > 0 ? n : 0))) return nomem(err);
    hearth_buf cat = {0};
    hearth_status st = HEARTH_OK;
    int rank = 0;
    for (const cJSON *c = merges ? merges->child : NULL; c; c = c->next, rank++) {
        const char *a, *b;
        size_t na, nb;
        if (cJSON_IsString(c)) {
            const char *s = c->valuestring, *sp = strchr(s, ' ');
            if (!sp || strchr(sp + 1, ' ')) {
                st = hearth_err_set(err, HEARTH_E_FORMAT, rank, "merge %d '%.60s' is not 'a b'",
                                    rank, s);
                break;
            }
            a = s, na = (size_t)(sp - s), b = sp + 1, nb = strlen(sp + 1);
        } else if (cJSON_IsArray(c) && cJSON_GetArraySize(c) == 2 &&
                   cJSON_IsString(c->child) && cJSON_IsString(c->child->next)) {
            a = jtext(c->child->valuestring, &na, o);
            b = jtext(c->child->next->valuestring, &nb, o);
            if (!a || !b) {
                st = nomem(err);
                break;
            }
        } else {
            st = hearth_err_set(err, HEARTH_E_FORMAT, rank, "merge %d is malformed", rank);
            break;
        }
        size_t skip = m->prefix && nb >= m->prefix_n ? m->prefix_n : 0;
        cat.len = 0;
        if (!hearth_buf_put(&cat, a, na) || !hearth_buf_put(&cat, b + skip, nb - skip)) {
            st = nomem(err);
            break;
        }
        int32_t l = hearth_tok_find(tok, a, na), r = hearth_tok_find(tok, b, nb);
        int32_t res = hearth_tok_find(tok, cat.p, cat.len);
        if (l < 0 || r < 0 || res < 0) {
            st = hearth_err_set(err, HEARTH_E_FORMAT, rank,
                                "merge %d '%.*s %.*s': %s is not in the vocab", rank,
                                (int)(na > 40 ? 40 : na), a, (int)(nb > 40 ? 40 : nb), b,
                                l < 0 ? "the left side" : r < 0 ? "the right side" : "the result");
            break;
        }
        tok_merges_add(tok, l, r, rank, res, false); /* a later duplicate wins */
    }
    hearth_buf_fini(&cat);
    return st;
}

/* ------------------------------------------------------------------ the model section */

static hearth_status dup_opt(const char *s, char **out, size_t *n, hearth_err *err) {
    if (!s || !*s) return HEARTH_OK;
    *n = strlen(s);
    if (!(*out = malloc(*n + 1))) return nomem(err);
    memcpy(*out, s, *n + 1);
    return HEARTH_OK;
}

/* Options of the model (after the vocab exists). */
static hearth_status model_opts(const cJSON *j, hearth_tok *tok, tok_model *m, owned_strs *o,
                                hearth_err *err) {
    hearth_status st = HEARTH_OK;
    const char *what = m->kind == MODEL_BPE ? "model BPE" : m->kind == MODEL_WORDPIECE
                                                            ? "model WordPiece" : "model Unigram";
    if (m->kind == MODEL_BPE) {
        static const char *const k[] = {"type", "dropout", "unk_token",
                                        "continuing_subword_prefix", "end_of_word_suffix",
                                        "fuse_unk", "byte_fallback", "ignore_merges", "vocab",
                                        "merges", NULL};
        double drop = tokjson_num(j, "dropout", 0, what, &st, err);
        const char *unk = tokjson_str(j, "unk_token", what, &st, err);
        const char *pre = tokjson_str(j, "continuing_subword_prefix", what, &st, err);
        const char *suf = tokjson_str(j, "end_of_word_suffix", what, &st, err);
        m->fuse_unk = tokjson_bool(j, "fuse_unk", false, what, &st, err);
        m->byte_fallback = tokjson_bool(j, "byte_fallback", false, what, &st, err);
        m->ignore_merges = tokjson_bool(j, "ignore_merges", false, what, &st, err);
        if (!st) st = tokjson_keys(j, what, k, err);
        if (st) return st;
        if (drop > 0)
            return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "%s: dropout %g", what, drop);
        m->unk_id = unk ? hearth_tok_find(tok, unk, strlen(unk)) : -1;
        if (unk && m->unk_id < 0)
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: unk_token '%.60s' not in vocab",
                                  what, unk);
        if ((st = dup_opt(pre, &m->prefix, &m->prefix_n, err))) return st;
        if ((st = dup_opt(suf, &m->suffix, &m->suffix_n, err))) return st;
        const cJSON *merges = cJSON_GetObjectItemCaseSensitive(j, "merges");
        if (merges && !cJSON_IsArray(merges))
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: 'merges' is not a list", what);
        return build_merges(tok, m, merges, o, err);
    }
    if (m->kind == MODEL_WORDPIECE) {
        static const char *const k[] = {"type", "unk_token", "continuing_subword_prefix",
                                        "max_input_chars_per_word", "vocab", NULL};
        const char *unk = tokjson_str(j, "unk_token", what, &st, err);
        const char *pre = tokjson_str(j, "continuing_subword_prefix", what, &st, err);
        double mx = tokjson_num(j, "max_input_chars_per_word", 100, what, &st, err);
        if (!st) st = tokjson_keys(j, what, k, err);
        if (st) return st;
        if (!unk) unk = "[UNK]";
        if (!pre) pre = "##";
        m->unk_id = hearth_tok_find(tok, unk, strlen(unk));
        if (m->unk_id < 0)
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: unk_token '%.60s' not in vocab",
                                  what, unk);
        m->max_chars = mx < 0 ? 0 : mx > 1e9 ? 1000000000 : (int32_t)mx;
        if (!(m->prefix = malloc(strlen(pre) + 1))) return nomem(err);
        m->prefix_n = strlen(pre);
        memcpy(m->prefix, pre, m->prefix_n + 1);
        return HEARTH_OK;
    }
    static const char *const k[] = {"type", "unk_id", "vocab", "byte_fallback", NULL};
    double unk = tokjson_num(j, "unk_id", -1, what, &st, err);
    m->byte_fallback = tokjson_bool(j, "byte_fallback", false, what, &st, err);
    m->fuse_unk = true;
    if (!st) st = tokjson_keys(j, what, k, err);
    if (st) return st;
    if (unk < 0 || unk >= tok->n_vocab)
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "%s without a valid unk_id", what);
    m->unk_id = (int32_t)unk;
    return tok_model_unigram_build(tok, m, err);
}

/* ------------------------------------------------------------------ pieces */

static hearth_status build_pieces(hearth_tok *tok, hearth_err *err) {
    hearth_buf all = {0};
    tok->pieces = malloc((size_t)tok->n_vocab * sizeof *tok->pieces);
    if (!tok->pieces) return nomem(err);
    for (int32_t id = 0; id < tok->n_vocab; id++) {
        size_t start = all.len;
        if (tok->strs[id].len && !tok_pipe_piece(tok, id, &all)) {
            hearth_buf_fini(&all);
            return nomem(err);
        }
        if (all.len > UINT32_MAX) {
            hearth_buf_fini(&all);
            return hearth_err_set(err, HEARTH_E_LIMIT, -1, "pieces exceed 4 GiB");
        }
        tok->pieces[id] = (tok_str){(uint32_t)start, (uint32_t)(all.len - start)};
        if (all.len - start > tok->max_piece_bytes) tok->max_piece_bytes = all.len - start;
    }
    if (!hearth_buf_put(&all, "", 1)) {
        hearth_buf_fini(&all);
        return nomem(err);
    }
    tok->piece_blob = all.p;
    return HEARTH_OK;
}

/* ------------------------------------------------------------------ the loader */

static hearth_status load(const cJSON *root, hearth_tok **out, hearth_err *err) {
    static const char *const top[] = {"version", "truncation", "padding", "added_tokens",
                                      "normalizer", "pre_tokenizer", "model", "post_processor",
                                      "decoder", NULL};
    hearth_status st;
    if (!cJSON_IsObject(root))
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "tokenizer.json is not an object");
    if ((st = tokjson_keys(root, "tokenizer.json", top, err))) return st;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    const cJSON *mtype = cJSON_GetObjectItemCaseSensitive(model, "type");
    const cJSON *mvocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    if (!cJSON_IsString(mtype))
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "model without a 'type'");
    tok_model_kind kind;
    if (!strcmp(mtype->valuestring, "BPE")) kind = MODEL_BPE;
    else if (!strcmp(mtype->valuestring, "WordPiece")) kind = MODEL_WORDPIECE;
    else if (!strcmp(mtype->valuestring, "Unigram")) kind = MODEL_UNIGRAM;
    else return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "model '%s' is not supported",
                               mtype->valuestring);
    if (kind == MODEL_UNIGRAM ? !cJSON_IsArray(mvocab) : !cJSON_IsObject(mvocab))
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "model 'vocab' has the wrong shape");
    if (added && !cJSON_IsNull(added) && !cJSON_IsArray(added))
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "'added_tokens' is not a list");
    if (added && !cJSON_IsArray(added)) added = NULL;
    for (const char *const *k = top + 1; k < top + 3; k++) { /* truncation, padding */
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, *k);
        if (v && !cJSON_IsNull(v) && !cJSON_IsObject(v))
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "'%s' is not an object", *k);
        if (v && cJSON_IsObject(v))
            hearth_log(HEARTH_LOG_DEBUG, "tokenizer.json: '%s' is not applied", *k);
    }

    int32_t mx;
    if ((st = max_id(mvocab, kind == MODEL_UNIGRAM, added, &mx, err))) return st;
    int32_t n = mx + 1;
    vocab_tab v = {calloc((size_t)n, sizeof *v.tokens), calloc((size_t)n, sizeof *v.types),
                   calloc((size_t)n, sizeof *v.scores), n};
    double *uscores = kind == MODEL_UNIGRAM ? calloc((size_t)n, sizeof *uscores) : NULL;
    hearth_tok *tok = NULL;
    tok_pipe *p = NULL;
    owned_strs owned = {0};
    if (!v.tokens || !v.types || !v.scores || (kind == MODEL_UNIGRAM && !uscores)) {
        st = nomem(err);
        goto fail;
    }
    double pow10[309]; /* Rust's 1e0..1e308 literals: correctly rounded, as strtod gives */
    for (int i = 0; kind == MODEL_UNIGRAM && i < 309; i++) {
        char lit[8];
        snprintf(lit, sizeof lit, "1e%d", i);
        pow10[i] = strtod(lit, NULL);
    }
    int32_t k = 0;
    for (const cJSON *c = mvocab->child; c; c = c->next, k++) {
        const char *s = kind == MODEL_UNIGRAM ? c->child->valuestring : c->string;
        int32_t id = kind == MODEL_UNIGRAM ? k : json_id(c);
        if (!s) {
            st = hearth_err_set(err, HEARTH_E_FORMAT, k, "vocab entry %d has no text", k);
            goto fail;
        }
        if ((st = set_token(&v, id, s, HEARTH_TOKTYPE_NORMAL, &owned, err))) goto fail;
        if (uscores) {
            uscores[id] = serde_f64(c->child->next->valuedouble, pow10);
            v.scores[id] = (float)uscores[id];
        }
    }
    for (const cJSON *c = added ? added->child : NULL; c; c = c->next) {
        static const char *const ka[] = {"id", "content", "single_word", "lstrip", "rstrip",
                                         "normalized", "special", NULL};
        if ((st = tokjson_keys(c, "added token", ka, err))) goto fail;
        bool special = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "special"));
        if ((st = set_token(&v, json_id(cJSON_GetObjectItemCaseSensitive(c, "id")),
                            cJSON_GetObjectItemCaseSensitive(c, "content")->valuestring,
                            special ? HEARTH_TOKTYPE_CONTROL : HEARTH_TOKTYPE_USER_DEFINED,
                            &owned, err)))
            goto fail;
    }
    for (int32_t id = 0; id < n; id++)
        if (!v.tokens[id].ptr) {
            v.tokens[id] = (hearth_span){"", 0};
            v.types[id] = HEARTH_TOKTYPE_UNUSED;
        }

    hearth_tok_spec spec = {0};
    spec.kind = kind == MODEL_BPE ? HEARTH_TOK_BPE_BYTES : HEARTH_TOK_SPM;
    spec.n_vocab = n;
    spec.tokens = v.tokens;
    spec.scores = v.scores;
    spec.token_types = v.types;
    spec.bos_id = spec.eos_id = spec.eot_id = spec.unk_id = spec.pad_id = -1;
    if ((st = tok_create_vocab(&spec, kind == MODEL_UNIGRAM, &tok, err))) goto fail;
    if (!(p = tok->pipe = calloc(1, sizeof *p))) {
        st = nomem(err);
        goto fail;
    }
    p->model.kind = kind;
    p->model.unk_id = -1;
    p->model.uscores = uscores;
    uscores = NULL;
    if (kind == MODEL_UNIGRAM) {
        p->model.min_score = 1e300;
        for (int32_t id = 0; id < n; id++)
            if (tok->strs[id].len && p->model.uscores[id] < p->model.min_score)
                p->model.min_score = p->model.uscores[id];
    }
    if ((st = model_opts(model, tok, &p->model, &owned, err))) goto fail;
    for (uint32_t cp = 0; cp < 0x800; cp++) {
        char u[4];
        p->model.char_id[cp] = hearth_tok_find(tok, u, hearth_utf8_encode(cp, u));
    }

    /* attributes the pipeline relies on */
    int n_added = cJSON_GetArraySize(added);
    if (!(p->added = calloc((size_t)n_added + 1, sizeof *p->added))) {
        st = nomem(err);
        goto fail;
    }
    for (const cJSON *c = added ? added->child : NULL; c; c = c->next) {
        tok_added *a = &p->added[p->n_added++];
        hearth_status bst = HEARTH_OK;
        a->id = json_id(cJSON_GetObjectItemCaseSensitive(c, "id"));
        a->special = tokjson_bool(c, "special", false, "added token", &bst, err);
        a->lstrip = tokjson_bool(c, "lstrip", false, "added token", &bst, err);
        a->rstrip = tokjson_bool(c, "rstrip", false, "added token", &bst, err);
        a->single_word = tokjson_bool(c, "single_word", false, "added token", &bst, err);
        a->normalized = tokjson_bool(c, "normalized", !a->special, "added token", &bst, err);
        if ((st = bst)) goto fail;
        if (a->special) tok->attr[a->id] |= TOK_ATTR_SPECIAL | TOK_ATTR_CONTROL;
    }
    if (kind == MODEL_UNIGRAM) {
        /* tokenizers skips special tokens by their text: a piece repeated in the vocab is
         * special at every id when one of them is (the map finds the last of a text) */
        for (int32_t id = 0; id < n; id++) {
            int32_t last = hearth_tok_find(tok, tok->blob + tok->strs[id].off, tok->strs[id].len);
            if (last >= 0 && (tok->attr[id] & TOK_ATTR_SPECIAL))
                tok->attr[last] |= TOK_ATTR_SPECIAL | TOK_ATTR_CONTROL;
        }
        for (int32_t id = 0; id < n; id++) {
            int32_t last = hearth_tok_find(tok, tok->blob + tok->strs[id].off, tok->strs[id].len);
            if (last >= 0 && (tok->attr[last] & TOK_ATTR_SPECIAL))
                tok->attr[id] |= TOK_ATTR_SPECIAL | TOK_ATTR_CONTROL;
        }
    }
    if (p->model.unk_id >= 0 && !(tok->attr[p->model.unk_id] & TOK_ATTR_SPECIAL))
        tok->attr[p->model.unk_id] = TOK_ATTR_UNKNOWN | (tok->attr[p->model.unk_id] & TOK_ATTR_EOG);
    for (int b = 0; b < 256; b++) {
        char name[8], u[4];
        snprintf(name, sizeof name, "<0x%02X>", b);
        tok->byte_tok[b] = p->model.byte_fallback ? hearth_tok_find(tok, name, 6) : -1;
        if (tok->byte_tok[b] >= 0 && !(tok->attr[tok->byte_tok[b]] & TOK_ATTR_SPECIAL))
            tok->attr[tok->byte_tok[b]] = TOK_ATTR_BYTE;
        tok->byte_sym[b] = hearth_tok_find(tok, u, hearth_utf8_encode(tok_byte_to_cp((uint8_t)b), u));
    }

    if ((st = tokjson_normalizer(cJSON_GetObjectItemCaseSensitive(root, "normalizer"), p, err)) ||
        (st = tokjson_pre_tokenizer(cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), p,
                                    err)) ||
        (st = tokjson_post_processor(cJSON_GetObjectItemCaseSensitive(root, "post_processor"), tok,
                                     p, err)) ||
        (st = tokjson_decoder(cJSON_GetObjectItemCaseSensitive(root, "decoder"), p, err)))
        goto fail;
    if (p->n_pts && p->pts[p->n_pts - 1].kind == PT_BYTELEVEL) {
        if (kind != MODEL_BPE) {
            st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1,
                                "pre_tokenizer ByteLevel with a %s model", mtype->valuestring);
            goto fail;
        }
        p->model.byte_level = true;
    }
    if ((st = tok_pipe_build_added(tok, err))) goto fail;

    /* the special ids the rest of hearth asks for: the single template's specials around A */
    for (int i = 0, seen_a = 0; p->has_post && i < p->post.n_single; i++) {
        const tok_tmpl_item *it = &p->post.single[i];
        if (it->seq >= 0) seen_a = 1;
        else if (it->n_ids && !seen_a && tok->bos_id < 0) tok->bos_id = it->ids[0];
        else if (it->n_ids && seen_a && tok->eos_id < 0) tok->eos_id = it->ids[0];
    }
    if (!p->has_decoder) tok->add_space_prefix = true; /* tokens joined by spaces */
    for (int i = 0; i < p->n_decs; i++) {
        const tok_dec *d = &p->decs[i];
        if ((d->kind == DEC_METASPACE && d->prepend != PREPEND_NEVER) || d->kind == DEC_WORDPIECE ||
            (d->kind == DEC_STRIP && d->start > 0 && d->str_n == 1 && d->str[0] == ' '))
            tok->add_space_prefix = true; /* the streaming decoder drops the first space */
    }
    if ((st = build_pieces(tok, err))) goto fail;
    free(v.tokens);
    free(v.types);
    free(v.scores);
    owned_free(&owned);
    *out = tok;
    return HEARTH_OK;
fail:
    free(v.tokens);
    free(v.types);
    free(v.scores);
    free(uscores);
    owned_free(&owned);
    hearth_tok_destroy(tok);
    return st;
}

hearth_status hearth_tok_from_json(const char *json, size_t n, hearth_tok **out, hearth_err *err) {
    if (out) *out = NULL;
    if (!out || (!json && n)) return hearth_err_set(err, HEARTH_E_INVALID, -1, "bad arguments");
    const char *end = NULL;
    char *marked = NULL; /* json with \u0000 escapes rewritten (see NUL_MARK) */
    if (json && memmem(json, n, "\\u0000", 6)) {
        size_t k = 0;
        if (!(marked = calloc(n * 2 + 1, 1))) return nomem(err);
        for (size_t i = 0; i < n;) {
            if (json[i] == '\\' && i + 5 < n && !memcmp(json + i + 1, "u0000", 5)) {
                memcpy(marked + k, "\\uDBFF\\uDFFF", 12);
                k += 12;
                i += 6;
            } else if (json[i] == '\\' && i + 1 < n) {
                marked[k++] = json[i++];
                marked[k++] = json[i++];
            } else {
                marked[k++] = json[i++];
            }
        }
        json = marked;
        n = k;
    }
    cJSON *root = cJSON_ParseWithLengthOpts(json ? json : "", n, &end, false);
    if (!root) {
        int64_t pos = end && !marked ? (int64_t)(end - json) : -1;
        free(marked);
        return hearth_err_set(err, HEARTH_E_FORMAT, pos, "tokenizer.json is not valid JSON "
                              "(near byte %lld)", (long long)pos);
    }
    hearth_status st = load(root, out, err);
    cJSON_Delete(root);
    free(marked);
    return st;
}
