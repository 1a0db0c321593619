/*
 * tokenizer.c - building a hearth_tok from a spec, its getters, and encode.
 *
 * Build order (each step reads what the previous ones made):
 *   1. strings: every token's text copied into one blob, indexed by a hash table; a duplicate
 *      text is an error naming the token (llama.cpp refuses such vocabs too);
 *   2. attributes from the GGUF token types, then llama.cpp's name-based fix-ups:
 *      end-of-generation tokens (the list below) become CONTROL + EOG, gpt-oss's
 *      <|channel|>-style tokens become USER_DEFINED;
 *   3. the special-token matcher (special.c), the model's own tables (bpe.c merges or the SPM
 *      <0xXX> table) and the decoded piece of every token (decode.c serves them).
 *
 * Encode follows llama.cpp's llama_vocab::impl::tokenize for the two kinds we carry:
 *   [BOS if add_special && add_bos] + for each fragment of special.c's split: the special id,
 *   or the model's encoding of the raw text + [EOS if add_special && add_eos].
 * For SPM a raw fragment gets a " " prefix when add_space_prefix is set and it starts the text
 * or follows a special token.
 *
 * End of generation (hearth_tok_is_eog): the spec's eos and eot ids, and every token whose
 * text is one of
 *     <|eot_id|> <|eom_id|> <|im_end|> <|end|> <|return|> <|call|> <|flush|> <|calls|>
 *     <end_of_turn> <|endoftext|> </s> <|end_of_text|> <EOT> _<EOT> [EOT] [EOS]
 *     <end_of_utterance> <eos> <turn|> <|tool_response> <｜end▁of▁sentence｜> [e~[
 * and the fill-in-the-middle pad / repo / file-separator tokens llama.cpp also stops on:
 *     <|fim_pad|> <fim-pad> <fim_pad> <PAD> [PAD] <|fim_repo|> <|repo_name|> <fim-repo>
 *     <REPO> <reponame> <|file_sep|>
 * (llama.cpp's list as of llama-cpp-python 0.3.36, the oracle requirements/oracle.txt pins;
 * SmolLM2 gets {<|endoftext|>, <|im_end|>, <reponame>}, Gemma 3 {<eos>, <end_of_turn>}, both
 * checked against llama.cpp by the goldens). As in llama.cpp, <|end|> is not an end of
 * generation when <|return|> or <|flush|> comes with <|call|> or <|calls|> (gpt-oss, Solar
 * Open), and </s> is a normal token when <|tool_response> or <|plamo:eos|> ends generation
 * (Gemma 4, PLaMo). One difference: llama.cpp marks only the first FIM token of each kind it
 * finds, hearth every one of the list.
 */
#include "tokenizer/tok_internal.h"
#include "tokenizer/tok_pipe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/size.h"

#define MAX_VOCAB (1 << 26)

static const char *const eog_names[] = {
    "<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
    "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|end_of_text|>", "<EOT>", "_<EOT>",
    "[EOT]", "[EOS]", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "[e~[",
    /* <｜end▁of▁sentence｜> (DeepSeek) */
    ("<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"),
    "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", "<|fim_repo|>", "<|repo_name|>",
    "<fim-repo>", "<REPO>", "<reponame>", "<|file_sep|>",
};

/* gpt-oss: llama.cpp always renders these (USER_DEFINED). */
static const char *const user_names[] = {"<|channel|>", "<|message|>", "<|start|>",
                                          "<|constrain|>"};

void hearth_tok_destroy(hearth_tok *tok) {
    if (!tok) return;
    tok_pipe_destroy(tok->pipe);
    tok_pretok_destroy(tok->pre);
    tok_strmap_free(&tok->map);
    free(tok->blob);
    free(tok->strs);
    free(tok->scores);
    free(tok->attr);
    free(tok->piece_blob);
    free(tok->pieces);
    free(tok->specials);
    free(tok->trie);
    free(tok->merges);
    free(tok);
}

static int32_t find_str(const hearth_tok *tok, const char *s) {
    int32_t id = tok_strmap_find(&tok->map, tok->blob, tok->strs, s, strlen(s));
    return id < tok->n_vocab ? id : -1;
}

static bool is_eog_str(const hearth_tok *tok, const char *s) {
    int32_t id = find_str(tok, s);
    return id >= 0 && (tok->attr[id] & TOK_ATTR_EOG);
}

static uint8_t attr_of_type(int32_t type) {
    switch (type) {
    case HEARTH_TOKTYPE_NORMAL:       return TOK_ATTR_NORMAL;
    case HEARTH_TOKTYPE_UNKNOWN:      return TOK_ATTR_UNKNOWN;
    case HEARTH_TOKTYPE_CONTROL:      return TOK_ATTR_CONTROL;
    case HEARTH_TOKTYPE_USER_DEFINED: return TOK_ATTR_USER;
    case HEARTH_TOKTYPE_UNUSED:       return TOK_ATTR_UNUSED;
    case HEARTH_TOKTYPE_BYTE:         return TOK_ATTR_BYTE;
    default:                          return TOK_ATTR_UNDEFINED;
    }
}

static void mark_eog(hearth_tok *tok) {
    for (size_t i = 0; i < sizeof eog_names / sizeof eog_names[0]; i++) {
        int32_t id = find_str(tok, eog_names[i]);
        if (id < 0) continue;
        if (!(tok->attr[id] & TOK_ATTR_CONTROL)) {
            hearth_log(HEARTH_LOG_WARN, "tokenizer: token %d '%s' ends generation but is not a "
                       "control token; treating it as one", id, eog_names[i]);
            tok->attr[id] |= TOK_ATTR_CONTROL;
        }
        tok->attr[id] |= TOK_ATTR_EOG;
    }
    if (tok->eos_id >= 0) tok->attr[tok->eos_id] |= TOK_ATTR_EOG;
    if (tok->eot_id >= 0) tok->attr[tok->eot_id] |= TOK_ATTR_EOG;
    /* the fix-ups below look at what ends generation by now, as llama.cpp's look at its set */
    bool ret = is_eog_str(tok, "<|return|>"), flush = is_eog_str(tok, "<|flush|>");
    bool call = is_eog_str(tok, "<|call|>") || is_eog_str(tok, "<|calls|>");
    int32_t end = find_str(tok, "<|end|>");
    if (end >= 0 && (tok->attr[end] & TOK_ATTR_EOG) && call && (ret || flush)) tok->attr[end] = TOK_ATTR_USER;
    int32_t s = find_str(tok, "</s>");
    if (s >= 0 && (tok->attr[s] & TOK_ATTR_EOG) &&
        (is_eog_str(tok, "<|tool_response>") || is_eog_str(tok, "<|plamo:eos|>")))
        tok->attr[s] = TOK_ATTR_NORMAL;
    for (size_t i = 0; i < sizeof user_names / sizeof user_names[0]; i++) {
        int32_t id = find_str(tok, user_names[i]);
        if (id >= 0) tok->attr[id] = TOK_ATTR_USER | (tok->attr[id] & TOK_ATTR_EOG);
    }
}

static int32_t check_id(int32_t id, int32_t n_vocab, const char *what) {
    if (id >= -1 && id < n_vocab) return id;
    hearth_log(HEARTH_LOG_WARN, "tokenizer: %s id %d is out of range (n_vocab %d), ignored", what,
               id, n_vocab);
    return -1;
}

static int hex_digit(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Decoded piece of each token, as llama.cpp's token_to_piece with special = true. */
static hearth_status build_pieces(hearth_tok *tok, hearth_err *err) {
    size_t total = 0;
    for (int32_t id = 0; id < tok->n_vocab; id++) total += tok->strs[id].len;
    tok->piece_blob = malloc(total + 1);
    tok->pieces = malloc((size_t)tok->n_vocab * sizeof *tok->pieces);
    if (!tok->piece_blob || !tok->pieces)
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    size_t o = 0;
    for (int32_t id = 0; id < tok->n_vocab; id++) {
        const uint8_t *s = (const uint8_t *)tok->blob + tok->strs[id].off;
        size_t n = tok->strs[id].len, start = o;
        uint8_t a = tok->attr[id];
        char *dst = tok->piece_blob;
        if (a & (TOK_ATTR_CONTROL | TOK_ATTR_UNKNOWN | TOK_ATTR_USER)) {
            memcpy(dst + o, s, n);
            o += n;
        } else if ((a & TOK_ATTR_NORMAL) && tok->kind == HEARTH_TOK_SPM) {
            for (size_t i = 0; i < n;) {
                if (i + 3 <= n && memcmp(s + i, "\xE2\x96\x81", 3) == 0) {
                    dst[o++] = ' ';
                    i += 3;
                } else {
                    dst[o++] = (char)s[i++];
                }
            }
        } else if (a & TOK_ATTR_NORMAL) {
            /* byte-level: each character stands for one byte; a character outside the
             * alphabet (not from a GPT-2 style vocab) is kept as its UTF-8 bytes */
            for (size_t i = 0; i < n;) {
                uint32_t cp;
                size_t k = hearth_utf8_decode(s + i, n - i, &cp);
                int b = k ? tok_cp_to_byte(cp) : -1;
                if (b >= 0) {
                    dst[o++] = (char)b;
                } else {
                    if (!k) k = 1;
                    memcpy(dst + o, s + i, k);
                    o += k;
                }
                i += k;
            }
        } else if (a & TOK_ATTR_BYTE) {
            int hi = n == 6 ? hex_digit(s[3]) : -1, lo = n == 6 ? hex_digit(s[4]) : -1;
            if (hi >= 0 && lo >= 0 && memcmp(s, "<0x", 3) == 0 && s[5] == '>') {
                dst[o++] = (char)(hi * 16 + lo);
            } else {
                memcpy(dst + o, s, n);
                o += n;
            }
        }
        tok->pieces[id] = (tok_str){(uint32_t)start, (uint32_t)(o - start)};
        if (o - start > tok->max_piece_bytes) tok->max_piece_bytes = o - start;
    }
    return HEARTH_OK;
}

static void build_byte_tokens(hearth_tok *tok) {
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        int32_t id = find_str(tok, name);
        if (id < 0) {
            char raw[2] = {(char)b, 0};
            id = tok_strmap_find(&tok->map, tok->blob, tok->strs, raw, 1);
        }
        tok->byte_tok[b] = id;
    }
}

hearth_status tok_create_vocab(const hearth_tok_spec *spec, bool dup_last, hearth_tok **out,
                               hearth_err *err) {
    hearth_status st;
    if (out) *out = NULL;
    if (!spec || !out || !spec->tokens || spec->n_vocab <= 0)
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "tokenizer spec without tokens");
    if (spec->kind != HEARTH_TOK_BPE_BYTES && spec->kind != HEARTH_TOK_SPM)
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "unknown tokenizer kind %d",
                              (int)spec->kind);
    if (spec->n_vocab > MAX_VOCAB)
        return hearth_err_set(err, HEARTH_E_LIMIT, -1, "vocab of %d tokens exceeds %d",
                              spec->n_vocab, MAX_VOCAB);
    if (spec->kind == HEARTH_TOK_SPM && !spec->scores)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "SentencePiece vocab without scores");
    if (spec->n_merges < 0 || (spec->n_merges > 0 && !spec->merges) ||
        spec->n_merges > MAX_VOCAB * 4)
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "bad merge count %d", spec->n_merges);

    int32_t n = spec->n_vocab;
    size_t total = 0;
    uint64_t *hashes = NULL;
    for (int32_t i = 0; i < n; i++) {
        if (!spec->tokens[i].ptr && spec->tokens[i].len)
            return hearth_err_set(err, HEARTH_E_INVALID, i, "token %d has no text", i);
        if (!hearth_add_size(total, spec->tokens[i].len, &total) || total > UINT32_MAX)
            return hearth_err_set(err, HEARTH_E_LIMIT, i, "vocab text exceeds 4 GiB");
    }

    hearth_tok *tok = calloc(1, sizeof *tok);
    if (!tok) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    tok->kind = spec->kind;
    tok->n_vocab = tok->n_strs = n;
    tok->blob = malloc(total + 1);
    tok->strs = malloc((size_t)n * sizeof *tok->strs);
    tok->scores = calloc((size_t)n, sizeof *tok->scores);
    tok->attr = malloc((size_t)n);
    size_t n_map = (size_t)n;
    if (spec->kind == HEARTH_TOK_BPE_BYTES) n_map += 3 * (size_t)spec->n_merges;
    if (!tok->blob || !tok->strs || !tok->scores || !tok->attr ||
        !tok_strmap_init(&tok->map, n_map)) {
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        goto fail;
    }

    /* hashes first, so that each insert can prefetch the slot of a later one */
    hashes = malloc((size_t)n * sizeof *hashes);
    if (!hashes) {
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        goto fail;
    }
    size_t o = 0;
    for (int32_t i = 0; i < n; i++) {
        hearth_span t = spec->tokens[i];
        if (t.len) memcpy(tok->blob + o, t.ptr, t.len);
        tok->strs[i] = (tok_str){(uint32_t)o, (uint32_t)t.len};
        hashes[i] = tok_hash(tok->blob + o, t.len);
        o += t.len;
    }
    for (int32_t i = 0; i < n; i++) {
        hearth_span t = spec->tokens[i];
        if (i + 16 < n) tok_strmap_prefetch(&tok->map, hashes[i + 16]);
        if (t.len > tok->max_token_bytes) tok->max_token_bytes = t.len;
        if (t.len == 0) {
            hearth_log(HEARTH_LOG_WARN, "tokenizer: token %d is empty", i);
        } else {
            int32_t dup = tok_strmap_insert_h(&tok->map, tok->blob, tok->strs, t.ptr, t.len, i,
                                              hashes[i]);
            if (dup >= 0 && dup_last) {
                tok_strmap_replace(&tok->map, tok->blob, tok->strs, t.ptr, t.len, i, hashes[i]);
            } else if (dup >= 0) {
                st = hearth_err_set(err, HEARTH_E_FORMAT, i,
                                    "duplicate token '%.*s' (ids %d and %d)",
                                    (int)(t.len > 64 ? 64 : t.len), t.ptr, dup, i);
                goto fail;
            }
        }
        tok->attr[i] = spec->token_types ? attr_of_type(spec->token_types[i]) : TOK_ATTR_NORMAL;
        if (spec->scores) tok->scores[i] = spec->scores[i];
    }

    tok->bos_id = check_id(spec->bos_id, n, "bos");
    tok->eos_id = check_id(spec->eos_id, n, "eos");
    tok->eot_id = check_id(spec->eot_id, n, "eot");
    tok->unk_id = check_id(spec->unk_id, n, "unk");
    tok->pad_id = check_id(spec->pad_id, n, "pad");
    tok->add_bos = spec->add_bos;
    tok->add_eos = spec->add_eos;
    tok->add_space_prefix = spec->add_space_prefix;
    tok->spm_library = spec->spm_library;
    if (tok->add_bos && tok->bos_id < 0) {
        st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "add_bos is set but there is no bos token");
        goto fail;
    }
    if (tok->add_eos && tok->eos_id < 0) {
        st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "add_eos is set but there is no eos token");
        goto fail;
    }

    free(hashes);
    mark_eog(tok);
    tok_fim_init(tok, spec->fim_ids);
    *out = tok;
    return HEARTH_OK;
fail:
    free(hashes);
    hearth_tok_destroy(tok);
    return st;
}

hearth_status hearth_tok_create(const hearth_tok_spec *spec, hearth_tok **out, hearth_err *err) {
    hearth_tok *tok = NULL;
    if (out) *out = NULL;
    if (!out) return hearth_err_set(err, HEARTH_E_INVALID, -1, "tokenizer spec without tokens");
    hearth_status st = tok_create_vocab(spec, false, &tok, err);
    if (st) return st;
    if ((st = tok_special_build(tok, err))) goto fail;
    if (tok->kind == HEARTH_TOK_BPE_BYTES) {
        if ((st = tok_bpe_build(tok, spec, err))) goto fail;
    } else {
        build_byte_tokens(tok);
    }
    if ((st = build_pieces(tok, err))) goto fail;
    *out = tok;
    return HEARTH_OK;
fail:
    hearth_tok_destroy(tok);
    return st;
}

int32_t hearth_tok_n_vocab(const hearth_tok *tok) { return tok->n_vocab; }
int32_t hearth_tok_bos(const hearth_tok *tok) { return tok->bos_id; }

void hearth_tok_set_eos(hearth_tok *tok, int32_t id) {
    if (id < 0 || id >= tok->n_vocab) return;
    tok->eos_id = id;
    tok->attr[id] |= TOK_ATTR_EOG;
}

void hearth_tok_set_bos(hearth_tok *tok, int32_t id) {
    if (id >= 0 && id < tok->n_vocab) tok->bos_id = id;
}

void hearth_tok_mark_eog(hearth_tok *tok, int32_t id) {
    if (id >= 0 && id < tok->n_vocab) tok->attr[id] |= TOK_ATTR_EOG;
}
int32_t hearth_tok_eos(const hearth_tok *tok) { return tok->eos_id; }
size_t  hearth_tok_max_piece(const hearth_tok *tok) { return tok->max_piece_bytes; }

bool hearth_tok_is_eog(const hearth_tok *tok, int32_t id) {
    return id >= 0 && id < tok->n_vocab && (tok->attr[id] & TOK_ATTR_EOG);
}

bool hearth_tok_is_control(const hearth_tok *tok, int32_t id) {
    return id >= 0 && id < tok->n_vocab && (tok->attr[id] & TOK_ATTR_CONTROL);
}

int32_t hearth_tok_find(const hearth_tok *tok, const char *text, size_t n) {
    if (!text && n) return -1;
    int32_t id = tok_strmap_find(&tok->map, tok->blob, tok->strs, text ? text : "", n);
    return id < tok->n_vocab ? id : -1;
}

/* hearth_tok_encode, with plain ranges (NULL: none). */
static hearth_status encode(const hearth_tok *tok, const char *text, size_t n, bool add_special, bool parse_special,
                            const tok_plain *plain, int32_t **ids, size_t *n_ids) {
    if (ids) *ids = NULL;
    if (n_ids) *n_ids = 0;
    if (!tok || !ids || !n_ids || (!text && n)) return HEARTH_E_INVALID;
    if (n > INT32_MAX / 4) return HEARTH_E_LIMIT;
    if (tok->pipe)
        return tok_pipe_encode(tok, text, n, NULL, 0, false, add_special, parse_special, plain, ids, n_ids);

    tok_vec out = {0}, frags = {0};
    hearth_status st = HEARTH_E_NOMEM;
    if (!tok_vec_reserve(&out, n / 3 + 4)) goto done;
    if (add_special && tok->add_bos && !tok_vec_push(&out, tok->bos_id)) goto done;
    if (!tok_special_split(tok, text, n, parse_special, plain, &frags)) goto done;
    bool prev_special = true; /* the text start counts as "after a special token" */
    if (tok->spm_library && tok->add_space_prefix && frags.n && frags.v[2] >= 0 &&
        !tok_spm_encode(tok, "", 0, true, &out)) /* sentencepiece: the prefix precedes a leading symbol */
        goto done;
    for (size_t k = 0; k < frags.n; k += 3) {
        size_t s = (size_t)frags.v[k], e = (size_t)frags.v[k + 1];
        int32_t id = frags.v[k + 2];
        bool ok;
        if (id >= 0) {
            ok = tok_vec_push(&out, id);
        } else if (tok->kind == HEARTH_TOK_SPM) {
            bool prefix = tok->add_space_prefix && (tok->spm_library ? k == 0 : prev_special);
            ok = tok_spm_encode(tok, text + s, e - s, prefix, &out);
        } else {
            ok = tok_bpe_encode(tok, text + s, e - s, &out);
        }
        if (!ok) goto done;
        prev_special = id >= 0;
    }
    if (add_special && tok->add_eos && !tok_vec_push(&out, tok->eos_id)) goto done;
    *ids = out.v;
    *n_ids = out.n;
    out.v = NULL;
    st = HEARTH_OK;
done:
    tok_vec_free(&out);
    tok_vec_free(&frags);
    return st;
}

hearth_status hearth_tok_encode(const hearth_tok *tok, const char *text, size_t n, bool add_special,
                                bool parse_special, int32_t **ids, size_t *n_ids) {
    return encode(tok, text, n, add_special, parse_special, NULL, ids, n_ids);
}

hearth_status hearth_tok_encode_plain(const hearth_tok *tok, const char *text, size_t n, bool add_special,
                                      const size_t *plain, size_t n_plain, int32_t **ids, size_t *n_ids) {
    for (size_t i = 0; i < n_plain; i++) /* sorted, disjoint, inside the text */
        if (plain[2 * i] > plain[2 * i + 1] || plain[2 * i + 1] > n || (i && plain[2 * i] < plain[2 * i - 1])) {
            if (ids) *ids = NULL;
            if (n_ids) *n_ids = 0;
            return HEARTH_E_INVALID;
        }
    tok_plain pl = {plain, n_plain};
    return encode(tok, text, n, add_special, true, n_plain ? &pl : NULL, ids, n_ids);
}

hearth_status hearth_tok_encode_pair(const hearth_tok *tok, const char *a, size_t na, const char *b,
                                     size_t nb, bool add_special, bool parse_special,
                                     int32_t **ids, size_t *n_ids) {
    if (ids) *ids = NULL;
    if (n_ids) *n_ids = 0;
    if (!tok || !ids || !n_ids || (!a && na) || (!b && nb)) return HEARTH_E_INVALID;
    if (na > INT32_MAX / 8 || nb > INT32_MAX / 8) return HEARTH_E_LIMIT;
    if (!tok->pipe) return HEARTH_E_UNSUPPORTED;
    return tok_pipe_encode(tok, a, na, b, nb, true, add_special, parse_special, NULL, ids, n_ids);
}
