/*
 * tok_json_parts.c - reading the component sections of tokenizer.json into the pipeline:
 * "normalizer", "pre_tokenizer", "post_processor" and "decoder" (tok_json.c reads the rest).
 *
 * Each component is an object with a "type" and its options, spelled as tokenizers
 * serializes them; Sequence components are flattened into the pipeline's arrays. Strictness
 * is the point: an unknown type, an unknown option, or a known option with a value hearth does
 * not implement is HEARTH_E_UNSUPPORTED naming it (e.g. "pre_tokenizer Split: option
 * 'foo' is not supported"), so that a tokenizer.json hearth cannot follow exactly is refused
 * at load instead of giving different ids later.
 */
#include "tokenizer/tok_pipe.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PARTS 64 /* components per chain, nested sequences included */

hearth_status tokjson_keys(const cJSON *j, const char *what, const char *const *keys,
                           hearth_err *err) {
    for (const cJSON *c = j->child; c; c = c->next) {
        bool known = false;
        for (const char *const *k = keys; *k && !known; k++) known = c->string && !strcmp(*k, c->string);
        if (!known)
            return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "%s: option '%s' is not supported",
                                  what, c->string ? c->string : "?");
    }
    return HEARTH_OK;
}

const char *tokjson_str(const cJSON *j, const char *key, const char *what, hearth_status *st,
                        hearth_err *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!v || cJSON_IsNull(v)) return NULL;
    if (!cJSON_IsString(v)) {
        *st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: '%s' is not a string", what, key);
        return NULL;
    }
    return v->valuestring;
}

bool tokjson_bool(const cJSON *j, const char *key, bool def, const char *what, hearth_status *st,
                  hearth_err *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!v || cJSON_IsNull(v)) return def;
    if (!cJSON_IsBool(v)) {
        *st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: '%s' is not a boolean", what, key);
        return def;
    }
    return cJSON_IsTrue(v);
}

double tokjson_num(const cJSON *j, const char *key, double def, const char *what,
                   hearth_status *st, hearth_err *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!v || cJSON_IsNull(v)) return def;
    if (!cJSON_IsNumber(v)) {
        *st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: '%s' is not a number", what, key);
        return def;
    }
    return v->valuedouble;
}

static char *dup_str(const char *s, size_t *n) {
    size_t len = s ? strlen(s) : 0;
    char *d = malloc(len + 1);
    if (d) {
        if (len) memcpy(d, s, len);
        d[len] = 0;
    }
    if (n) *n = len;
    return d;
}

/* {"String": s} or {"Regex": r} */
static hearth_status pattern(const cJSON *j, const char *what, tok_regex **out, hearth_err *err) {
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(j, "pattern");
    const cJSON *s = pat ? cJSON_GetObjectItemCaseSensitive(pat, "String") : NULL;
    const cJSON *r = pat ? cJSON_GetObjectItemCaseSensitive(pat, "Regex") : NULL;
    if (cJSON_IsString(s)) return tok_regex_compile(s->valuestring, strlen(s->valuestring), true, out, err);
    if (cJSON_IsString(r)) {
        hearth_status st = tok_regex_compile(r->valuestring, strlen(r->valuestring), false, out, err);
        if (st == HEARTH_E_UNSUPPORTED) {
            char m[sizeof err->msg];
            snprintf(m, sizeof m, "%s", err ? err->msg : "");
            return hearth_err_set(err, st, -1, "%s: %s", what, m);
        }
        return st;
    }
    return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: 'pattern' is not {String|Regex}", what);
}

static const char *type_of(const cJSON *j, const char *section, hearth_status *st,
                           hearth_err *err) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "type");
    if (!cJSON_IsObject(j) || !cJSON_IsString(t)) {
        *st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: not an object with a 'type'", section);
        return NULL;
    }
    return t->valuestring;
}

/* ------------------------------------------------------------------ normalizers */

static hearth_status add_norm(const cJSON *j, tok_pipe *p, int depth, hearth_err *err) {
    hearth_status st = HEARTH_OK;
    const char *type = type_of(j, "normalizer", &st, err);
    if (!type) return st;
    char what[96];
    snprintf(what, sizeof what, "normalizer %s", type);
    if (!strcmp(type, "Sequence")) {
        static const char *const k[] = {"type", "normalizers", NULL};
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "normalizers");
        if ((st = tokjson_keys(j, what, k, err))) return st;
        if (!cJSON_IsArray(list) || depth > 4)
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: bad 'normalizers'", what);
        for (const cJSON *c = list->child; c; c = c->next)
            if ((st = add_norm(c, p, depth + 1, err))) return st;
        return HEARTH_OK;
    }
    if (p->n_norms >= MAX_PARTS)
        return hearth_err_set(err, HEARTH_E_LIMIT, -1, "more than %d normalizers", MAX_PARTS);
    tok_norm *nm = &p->norms[p->n_norms];
    memset(nm, 0, sizeof *nm);
    static const char *const k_type[] = {"type", NULL};
    if (!strcmp(type, "NFC") || !strcmp(type, "NFD") || !strcmp(type, "NFKC") ||
        !strcmp(type, "NFKD") || !strcmp(type, "Lowercase") || !strcmp(type, "StripAccents")) {
        nm->kind = !strcmp(type, "NFC") ? NORM_NFC : !strcmp(type, "NFD") ? NORM_NFD
                 : !strcmp(type, "NFKC") ? NORM_NFKC : !strcmp(type, "NFKD") ? NORM_NFKD
                 : !strcmp(type, "Lowercase") ? NORM_LOWERCASE : NORM_STRIP_ACCENTS;
        st = tokjson_keys(j, what, k_type, err);
    } else if (!strcmp(type, "Prepend")) {
        static const char *const k[] = {"type", "prepend", NULL};
        nm->kind = NORM_PREPEND;
        const char *s = tokjson_str(j, "prepend", what, &st, err);
        if (!st) st = tokjson_keys(j, what, k, err);
        if (!st && !s) st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: no 'prepend'", what);
        if (!st && !(nm->str = dup_str(s, &nm->str_n))) st = HEARTH_E_NOMEM;
    } else if (!strcmp(type, "Replace")) {
        static const char *const k[] = {"type", "pattern", "content", NULL};
        nm->kind = NORM_REPLACE;
        const char *s = tokjson_str(j, "content", what, &st, err);
        if (!st) st = tokjson_keys(j, what, k, err);
        if (!st && !s) st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: no 'content'", what);
        if (!st && !(nm->str = dup_str(s, &nm->str_n))) st = HEARTH_E_NOMEM;
        if (!st) st = pattern(j, what, &nm->re, err);
    } else if (!strcmp(type, "Strip")) {
        static const char *const k[] = {"type", "strip_left", "strip_right", NULL};
        nm->kind = NORM_STRIP;
        nm->left = tokjson_bool(j, "strip_left", false, what, &st, err);
        nm->right = tokjson_bool(j, "strip_right", false, what, &st, err);
        if (!st) st = tokjson_keys(j, what, k, err);
    } else if (!strcmp(type, "BertNormalizer")) {
        static const char *const k[] = {"type", "clean_text", "handle_chinese_chars",
                                        "strip_accents", "lowercase", NULL};
        nm->kind = NORM_BERT;
        nm->clean_text = tokjson_bool(j, "clean_text", true, what, &st, err);
        nm->chinese = tokjson_bool(j, "handle_chinese_chars", true, what, &st, err);
        nm->lower = tokjson_bool(j, "lowercase", true, what, &st, err);
        nm->accents = tokjson_bool(j, "strip_accents", nm->lower, what, &st, err);
        if (!st) st = tokjson_keys(j, what, k, err);
    } else {
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "normalizer '%s' is not supported",
                              type);
    }
    p->n_norms++; /* counted even on error, so that destroy frees what it holds */
    if (st == HEARTH_E_NOMEM) return hearth_err_set(err, st, -1, "out of memory");
    return st;
}

hearth_status tokjson_normalizer(const cJSON *j, tok_pipe *p, hearth_err *err) {
    if (!j || cJSON_IsNull(j)) return HEARTH_OK;
    if (!(p->norms = calloc(MAX_PARTS, sizeof *p->norms)))
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    return add_norm(j, p, 0, err);
}

/* ------------------------------------------------------------------ pre-tokenizers */

/* GPT-2's regex as tokenizers' ByteLevel writes it (Oniguruma syntax, translated on compile) */
static const char gpt2_re[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static int behaviour(const char *s) {
    static const char *const names[] = {"Removed", "Isolated", "MergedWithPrevious",
                                        "MergedWithNext", "Contiguous"};
    for (int i = 0; s && i < 5; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

static hearth_status metaspace_opts(const cJSON *j, const char *what, char *repl, size_t *repl_n,
                                    int *prepend, hearth_err *err) {
    hearth_status st = HEARTH_OK;
    const char *r = tokjson_str(j, "replacement", what, &st, err);
    const char *ps = tokjson_str(j, "prepend_scheme", what, &st, err);
    bool aps = tokjson_bool(j, "add_prefix_space", true, what, &st, err);
    if (st) return st;
    if (!r) r = "\xE2\x96\x81";
    size_t n = strlen(r);
    uint32_t cp;
    if (n == 0 || n > 4 || hearth_utf8_decode((const uint8_t *)r, n, &cp) != n)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: replacement must be one character",
                              what);
    memcpy(repl, r, n);
    *repl_n = n;
    if (!ps) *prepend = aps ? PREPEND_ALWAYS : PREPEND_NEVER;
    else if (!strcmp(ps, "always")) *prepend = PREPEND_ALWAYS;
    else if (!strcmp(ps, "first")) *prepend = PREPEND_FIRST;
    else if (!strcmp(ps, "never")) *prepend = PREPEND_NEVER;
    else return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "%s: prepend_scheme '%s'", what, ps);
    return HEARTH_OK;
}

static hearth_status add_pt(const cJSON *j, tok_pipe *p, int depth, hearth_err *err) {
    hearth_status st = HEARTH_OK;
    const char *type = type_of(j, "pre_tokenizer", &st, err);
    if (!type) return st;
    char what[96];
    snprintf(what, sizeof what, "pre_tokenizer %s", type);
    if (!strcmp(type, "Sequence")) {
        static const char *const k[] = {"type", "pretokenizers", NULL};
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "pretokenizers");
        if ((st = tokjson_keys(j, what, k, err))) return st;
        if (!cJSON_IsArray(list) || depth > 4)
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: bad 'pretokenizers'", what);
        for (const cJSON *c = list->child; c; c = c->next)
            if ((st = add_pt(c, p, depth + 1, err))) return st;
        return HEARTH_OK;
    }
    if (p->n_pts >= MAX_PARTS)
        return hearth_err_set(err, HEARTH_E_LIMIT, -1, "more than %d pre-tokenizers", MAX_PARTS);
    tok_pt *pt = &p->pts[p->n_pts];
    memset(pt, 0, sizeof *pt);
    static const char *const k_type[] = {"type", NULL};
    if (!strcmp(type, "ByteLevel")) {
        static const char *const k[] = {"type", "add_prefix_space", "trim_offsets", "use_regex",
                                        NULL};
        pt->kind = PT_BYTELEVEL;
        pt->add_prefix = tokjson_bool(j, "add_prefix_space", true, what, &st, err);
        bool use_regex = tokjson_bool(j, "use_regex", true, what, &st, err);
        tokjson_bool(j, "trim_offsets", true, what, &st, err); /* offsets only */
        if (!st) st = tokjson_keys(j, what, k, err);
        if (!st && use_regex) st = tok_regex_compile(gpt2_re, sizeof gpt2_re - 1, false, &pt->re, err);
    } else if (!strcmp(type, "Split")) {
        static const char *const k[] = {"type", "pattern", "behavior", "invert", NULL};
        pt->kind = PT_SPLIT;
        const char *b = tokjson_str(j, "behavior", what, &st, err);
        pt->invert = tokjson_bool(j, "invert", false, what, &st, err);
        if (!st) st = tokjson_keys(j, what, k, err);
        if (!st && behaviour(b) < 0)
            st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "%s: behavior '%s'", what,
                                b ? b : "(none)");
        if (!st) {
            pt->beh = (tok_split_beh)behaviour(b);
            st = pattern(j, what, &pt->re, err);
        }
    } else if (!strcmp(type, "Metaspace")) {
        static const char *const k[] = {"type", "replacement", "prepend_scheme", "split",
                                        "add_prefix_space", "str_rep", NULL};
        pt->kind = PT_METASPACE;
        pt->split = tokjson_bool(j, "split", true, what, &st, err);
        if (!st) st = tokjson_keys(j, what, k, err);
        if (!st) st = metaspace_opts(j, what, pt->repl, &pt->repl_n, &pt->prepend, err);
    } else if (!strcmp(type, "Whitespace")) {
        pt->kind = PT_WHITESPACE;
        st = tokjson_keys(j, what, k_type, err);
    } else if (!strcmp(type, "WhitespaceSplit") || !strcmp(type, "BertPreTokenizer")) {
        pt->kind = type[0] == 'W' ? PT_WHITESPACE_SPLIT : PT_BERT;
        st = tokjson_keys(j, what, k_type, err);
    } else if (!strcmp(type, "Digits")) {
        static const char *const k[] = {"type", "individual_digits", NULL};
        pt->kind = PT_DIGITS;
        pt->individual = tokjson_bool(j, "individual_digits", false, what, &st, err);
        if (!st) st = tokjson_keys(j, what, k, err);
    } else if (!strcmp(type, "Punctuation")) {
        static const char *const k[] = {"type", "behavior", NULL};
        pt->kind = PT_PUNCTUATION;
        const char *b = tokjson_str(j, "behavior", what, &st, err);
        if (!st) st = tokjson_keys(j, what, k, err);
        if (!st && b && behaviour(b) < 0)
            st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "%s: behavior '%s'", what, b);
        pt->beh = b ? (tok_split_beh)behaviour(b) : SPLIT_ISOLATED;
    } else {
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "pre_tokenizer '%s' is not supported",
                              type);
    }
    p->n_pts++;
    return st;
}

hearth_status tokjson_pre_tokenizer(const cJSON *j, tok_pipe *p, hearth_err *err) {
    if (!j || cJSON_IsNull(j)) return HEARTH_OK;
    if (!(p->pts = calloc(MAX_PARTS, sizeof *p->pts)))
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    hearth_status st = add_pt(j, p, 0, err);
    if (st) return st;
    for (int i = 0; i < p->n_pts; i++)
        if (p->pts[i].kind == PT_BYTELEVEL && i != p->n_pts - 1)
            return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1,
                                  "pre_tokenizer ByteLevel followed by another pre-tokenizer");
    return HEARTH_OK;
}

/* ------------------------------------------------------------------ post-processors */

static hearth_status item_ids(const cJSON *ids, tok_tmpl_item *it, const hearth_tok *tok,
                              const char *what, hearth_err *err) {
    int n = cJSON_GetArraySize(ids);
    if (!cJSON_IsArray(ids) || n > 64)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: bad special token ids", what);
    it->ids = malloc(((size_t)n + 1) * sizeof *it->ids);
    if (!it->ids) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    for (const cJSON *c = ids->child; c; c = c->next) {
        if (!cJSON_IsNumber(c) || c->valuedouble < 0 || c->valuedouble >= tok->n_vocab)
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: special token id out of range",
                                  what);
        it->ids[it->n_ids++] = (int32_t)c->valuedouble;
    }
    return HEARTH_OK;
}

static hearth_status template(const cJSON *tmpl, const cJSON *specials, const hearth_tok *tok,
                              tok_tmpl_item **out, int *n_out, const char *what, hearth_err *err) {
    int n = cJSON_GetArraySize(tmpl);
    if (!cJSON_IsArray(tmpl) || n > 64)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: template is not a list", what);
    if (!(*out = calloc((size_t)n + 1, sizeof **out)))
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    for (const cJSON *c = tmpl->child; c; c = c->next) {
        tok_tmpl_item *it = &(*out)[(*n_out)++];
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(c, "SpecialToken");
        const cJSON *sq = cJSON_GetObjectItemCaseSensitive(c, "Sequence");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(sp ? sp : sq, "id");
        if (!cJSON_IsString(id))
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: bad template item", what);
        if (sq) {
            it->seq = !strcmp(id->valuestring, "A") ? 0 : !strcmp(id->valuestring, "B") ? 1 : -2;
            if (it->seq < 0)
                return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: sequence '%s'", what,
                                      id->valuestring);
            continue;
        }
        it->seq = -1;
        const cJSON *def = cJSON_GetObjectItemCaseSensitive(specials, id->valuestring);
        if (!def)
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: special token '%s' undefined",
                                  what, id->valuestring);
        hearth_status st = item_ids(cJSON_GetObjectItemCaseSensitive(def, "ids"), it, tok, what, err);
        if (st) return st;
    }
    return HEARTH_OK;
}

/* cls A sep [sep2 B sep] for Bert ([CLS] A [SEP] B [SEP]) and Roberta (<s> A </s> </s> B </s>) */
static hearth_status cls_sep(const cJSON *j, const hearth_tok *tok, tok_pipe *p, bool roberta,
                             const char *what, hearth_err *err) {
    const cJSON *sep = cJSON_GetObjectItemCaseSensitive(j, "sep");
    const cJSON *cls = cJSON_GetObjectItemCaseSensitive(j, "cls");
    const cJSON *sid = cJSON_GetArrayItem(sep, 1), *cid = cJSON_GetArrayItem(cls, 1);
    if (!cJSON_IsNumber(sid) || !cJSON_IsNumber(cid) || sid->valuedouble < 0 ||
        cid->valuedouble < 0 || sid->valuedouble >= tok->n_vocab || cid->valuedouble >= tok->n_vocab)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: bad 'sep' / 'cls'", what);
    int32_t s = (int32_t)sid->valuedouble, c = (int32_t)cid->valuedouble;
    /* item codes: -1 cls, -2 sep, 0 A, 1 B */
    static const int single[] = {-1, 0, -2}, bert_pair[] = {-1, 0, -2, 1, -2},
                     rob_pair[] = {-1, 0, -2, -2, 1, -2};
    const int *pair = roberta ? rob_pair : bert_pair;
    int n_pair = roberta ? 6 : 5;
    p->post.single = calloc(3, sizeof *p->post.single);
    p->post.pair = calloc((size_t)n_pair, sizeof *p->post.pair);
    if (!p->post.single || !p->post.pair)
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    for (int pass = 0; pass < 2; pass++) {
        const int *codes = pass ? pair : single;
        int n = pass ? n_pair : 3;
        tok_tmpl_item *items = pass ? p->post.pair : p->post.single;
        for (int i = 0; i < n; i++) {
            items[i].seq = codes[i] >= 0 ? codes[i] : -1;
            if (codes[i] < 0) {
                if (!(items[i].ids = malloc(sizeof *items[i].ids)))
                    return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
                items[i].ids[0] = codes[i] == -1 ? c : s;
                items[i].n_ids = 1;
            }
            if (pass) p->post.n_pair++;
            else p->post.n_single++;
        }
    }
    return HEARTH_OK;
}

static hearth_status add_post(const cJSON *j, const hearth_tok *tok, tok_pipe *p, int depth,
                              hearth_err *err) {
    hearth_status st = HEARTH_OK;
    const char *type = type_of(j, "post_processor", &st, err);
    if (!type) return st;
    char what[96];
    snprintf(what, sizeof what, "post_processor %s", type);
    if (!strcmp(type, "Sequence")) {
        static const char *const k[] = {"type", "processors", NULL};
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "processors");
        if ((st = tokjson_keys(j, what, k, err))) return st;
        if (!cJSON_IsArray(list) || depth > 4)
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: bad 'processors'", what);
        for (const cJSON *c = list->child; c; c = c->next)
            if ((st = add_post(c, tok, p, depth + 1, err))) return st;
        return HEARTH_OK;
    }
    if (!strcmp(type, "ByteLevel")) { /* offsets only */
        static const char *const k[] = {"type", "add_prefix_space", "trim_offsets", "use_regex",
                                        NULL};
        return tokjson_keys(j, what, k, err);
    }
    if (p->has_post)
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1,
                              "%s: a second id-adding post-processor in a Sequence", what);
    p->has_post = true;
    if (!strcmp(type, "TemplateProcessing")) {
        static const char *const k[] = {"type", "single", "pair", "special_tokens", NULL};
        const cJSON *specials = cJSON_GetObjectItemCaseSensitive(j, "special_tokens");
        if ((st = tokjson_keys(j, what, k, err))) return st;
        if ((st = template(cJSON_GetObjectItemCaseSensitive(j, "single"), specials, tok,
                           &p->post.single, &p->post.n_single, what, err)))
            return st;
        return template(cJSON_GetObjectItemCaseSensitive(j, "pair"), specials, tok, &p->post.pair,
                        &p->post.n_pair, what, err);
    }
    if (!strcmp(type, "BertProcessing") || !strcmp(type, "RobertaProcessing")) {
        static const char *const kb[] = {"type", "sep", "cls", NULL};
        static const char *const kr[] = {"type", "sep", "cls", "trim_offsets", "add_prefix_space",
                                         NULL};
        bool rob = type[0] == 'R';
        if ((st = tokjson_keys(j, what, rob ? kr : kb, err))) return st;
        return cls_sep(j, tok, p, rob, what, err);
    }
    return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "post_processor '%s' is not supported",
                          type);
}

hearth_status tokjson_post_processor(const cJSON *j, const hearth_tok *tok, tok_pipe *p,
                                     hearth_err *err) {
    if (!j || cJSON_IsNull(j)) return HEARTH_OK;
    return add_post(j, tok, p, 0, err);
}

/* ------------------------------------------------------------------ decoders */

static hearth_status add_dec(const cJSON *j, tok_pipe *p, int depth, hearth_err *err) {
    hearth_status st = HEARTH_OK;
    const char *type = type_of(j, "decoder", &st, err);
    if (!type) return st;
    char what[96];
    snprintf(what, sizeof what, "decoder %s", type);
    if (!strcmp(type, "Sequence")) {
        static const char *const k[] = {"type", "decoders", NULL};
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "decoders");
        if ((st = tokjson_keys(j, what, k, err))) return st;
        if (!cJSON_IsArray(list) || depth > 4)
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: bad 'decoders'", what);
        for (const cJSON *c = list->child; c; c = c->next)
            if ((st = add_dec(c, p, depth + 1, err))) return st;
        return HEARTH_OK;
    }
    if (p->n_decs >= MAX_PARTS)
        return hearth_err_set(err, HEARTH_E_LIMIT, -1, "more than %d decoders", MAX_PARTS);
    tok_dec *d = &p->decs[p->n_decs];
    memset(d, 0, sizeof *d);
    static const char *const k_type[] = {"type", NULL};
    const char *s = NULL;
    if (!strcmp(type, "ByteLevel")) {
        static const char *const k[] = {"type", "add_prefix_space", "trim_offsets", "use_regex",
                                        NULL};
        d->kind = DEC_BYTELEVEL;
        st = tokjson_keys(j, what, k, err);
    } else if (!strcmp(type, "Metaspace")) {
        static const char *const k[] = {"type", "replacement", "prepend_scheme", "split",
                                        "add_prefix_space", "str_rep", NULL};
        char repl[8];
        d->kind = DEC_METASPACE;
        tokjson_bool(j, "split", true, what, &st, err);
        if (!st) st = tokjson_keys(j, what, k, err);
        if (!st) st = metaspace_opts(j, what, repl, &d->str_n, &d->prepend, err);
        if (!st && (d->str = malloc(d->str_n + 1))) memcpy(d->str, repl, d->str_n);
        else if (!st) st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    } else if (!strcmp(type, "ByteFallback") || !strcmp(type, "Fuse")) {
        d->kind = type[0] == 'B' ? DEC_BYTEFALLBACK : DEC_FUSE;
        st = tokjson_keys(j, what, k_type, err);
    } else if (!strcmp(type, "Strip")) {
        static const char *const k[] = {"type", "content", "start", "stop", NULL};
        d->kind = DEC_STRIP;
        s = tokjson_str(j, "content", what, &st, err);
        double a = tokjson_num(j, "start", 0, what, &st, err);
        double b = tokjson_num(j, "stop", 0, what, &st, err);
        if (!st) st = tokjson_keys(j, what, k, err);
        if (!st && (!s || !*s || a < 0 || b < 0 || a > 1e6 || b > 1e6))
            st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: bad content/start/stop", what);
        d->start = (int)a;
        d->stop = (int)b;
    } else if (!strcmp(type, "WordPiece")) {
        static const char *const k[] = {"type", "prefix", "cleanup", NULL};
        d->kind = DEC_WORDPIECE;
        s = tokjson_str(j, "prefix", what, &st, err);
        if (!s) s = "##";
        d->cleanup = tokjson_bool(j, "cleanup", true, what, &st, err);
        if (!st) st = tokjson_keys(j, what, k, err);
    } else if (!strcmp(type, "Replace")) {
        static const char *const k[] = {"type", "pattern", "content", NULL};
        d->kind = DEC_REPLACE;
        s = tokjson_str(j, "content", what, &st, err);
        if (!st) st = tokjson_keys(j, what, k, err);
        if (!st && !s) st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "%s: no 'content'", what);
        if (!st) st = pattern(j, what, &d->re, err);
    } else if (!strcmp(type, "BPEDecoder")) {
        static const char *const k[] = {"type", "suffix", NULL};
        d->kind = DEC_BPE;
        s = tokjson_str(j, "suffix", what, &st, err);
        if (!s) s = "</w>";
        if (!st) st = tokjson_keys(j, what, k, err);
    } else {
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "decoder '%s' is not supported", type);
    }
    p->n_decs++;
    if (!st && s && d->kind != DEC_METASPACE && !(d->str = dup_str(s, &d->str_n)))
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    return st;
}

hearth_status tokjson_decoder(const cJSON *j, tok_pipe *p, hearth_err *err) {
    if (!j || cJSON_IsNull(j)) return HEARTH_OK;
    p->has_decoder = true;
    if (!(p->decs = calloc(MAX_PARTS, sizeof *p->decs)))
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    return add_dec(j, p, 0, err);
}
