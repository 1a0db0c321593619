/*
 * tok_pipe.h - the tokenizer.json pipeline: Hugging Face tokenizers' encode and decode as data.
 *
 * A tokenizer built from tokenizer.json (tok_json.c) is an ordinary hearth_tok (vocab strings,
 * attributes, pieces, the string map and merge table of the core) plus a tok_pipe that says
 * how text becomes ids, the way tokenizers' Tokenizer::encode does it:
 *
 *   text ─(invalid UTF-8 -> U+FFFD)─> added tokens, raw match (normalized = false tokens)
 *        ─> each remaining segment: normalizer chain ─> added tokens, normalized match
 *        ─> each remaining segment: pre-tokenizer chain ─> pieces
 *        ─> model (BPE / WordPiece / Unigram) per piece ─> ids
 *        ─> post-processor (TemplateProcessing, Bert, Roberta) when add_special
 *
 * and decode is tokens -> decoder chain -> joined string. Every stage is a list of small
 * tagged structs filled by the loader (tok_json.c, tok_json_parts.c); the files that run
 * them are hf_norm.c (normalizers), hf_pretok.c (pre-tokenizers and regexes), hf_model.c
 * (models), hf_decode.c (decoders), pipe.c (added tokens, orchestration, post-processing);
 * hf_unicode.[ch] hold the character classes tokenizers uses (tables probed from it).
 * Names follow tokenizers' JSON ("MergedWithPrevious", "prepend_scheme", ...) so a reader can
 * hold the two side by side. Everything is immutable after load; encode keeps its scratch in
 * a pipe_work owned by the call, so any number of threads may encode at once.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "tokenizer/tok_internal.h"

/* ------------------------------------------------------------------ byte buffers (base/buf.h) */


/* Append s[0..n) to out with each maximal invalid UTF-8 subpart replaced by U+FFFD (Rust's
 * String::from_utf8_lossy, Python's decode("utf-8", "replace")). */
bool tok_utf8_lossy(const char *s, size_t n, hearth_buf *out);

/* ------------------------------------------------------------------ regexes */

/* A pattern as tokenizers' JSON gives it: {"String": s} (literal) or {"Regex": r} (Oniguruma
 * syntax, translated to PCRE2: \s \S \w \W \d \D \h get Oniguruma's meaning). */
typedef struct tok_regex tok_regex;

hearth_status tok_regex_compile(const char *pat, size_t n, bool literal, tok_regex **out,
                                hearth_err *err);
void          tok_regex_destroy(tok_regex *re);
/* Leftmost match in s[0..n) starting at or after byte start: true with [*ms, *me).
 * md is scratch from tok_regex_md (one per call chain, not shared between threads). */
bool          tok_regex_find(const tok_regex *re, const char *s, size_t n, size_t start,
                             void *md, size_t *ms, size_t *me);
/* Append s[0..n) to out with every match of re replaced by rep[0..rep_n) (tokenizers' Replace:
 * an empty match copies the next character and moves on). *lead_cut (optional) is set when
 * a non-empty match at offset 0 is replaced by nothing. */
bool          tok_regex_replace(const tok_regex *re, const char *s, size_t n, const char *rep,
                                size_t rep_n, void *md, hearth_buf *out, bool *lead_cut);
void         *tok_regex_md_create(void);
void          tok_regex_md_free(void *md);

/* ------------------------------------------------------------------ normalizers */

typedef enum {
    NORM_NFC, NORM_NFD, NORM_NFKC, NORM_NFKD, NORM_LOWERCASE, NORM_PREPEND, NORM_REPLACE,
    NORM_STRIP, NORM_STRIP_ACCENTS, NORM_BERT,
} tok_norm_kind;

typedef struct {
    tok_norm_kind kind;
    char      *str;     /* owned: Prepend's text, Replace's content */
    size_t     str_n;
    tok_regex *re;      /* owned: Replace's pattern */
    bool       left, right;                          /* Strip */
    bool       clean_text, chinese, accents, lower;  /* BertNormalizer */
} tok_norm;

/* Apply norms[0..n) to in[0..len) (valid UTF-8) into *out (reset first); tmp and mid are
 * scratch. *lead_cut is set
 * when the first output character does not come from the first input one (Strip or
 * clean_text removed the start), which tokenizers' offsets see and Metaspace's "first"
 * prepend scheme depends on. */
bool tok_norm_apply(const tok_norm *norms, int n, const char *in, size_t len, hearth_buf *out,
                    hearth_buf *tmp, hearth_buf *mid, void *md, bool *lead_cut);

/* ------------------------------------------------------------------ pre-tokenizers */

typedef enum {
    SPLIT_REMOVED, SPLIT_ISOLATED, SPLIT_MERGED_PREV, SPLIT_MERGED_NEXT, SPLIT_CONTIGUOUS,
} tok_split_beh;

typedef enum {
    PT_BYTELEVEL, PT_SPLIT, PT_METASPACE, PT_WHITESPACE, PT_WHITESPACE_SPLIT, PT_DIGITS,
    PT_PUNCTUATION, PT_BERT,
} tok_pt_kind;

enum { PREPEND_ALWAYS = 0, PREPEND_FIRST = 1, PREPEND_NEVER = 2 };

typedef struct {
    tok_pt_kind   kind;
    tok_regex    *re;            /* owned: Split / ByteLevel (use_regex) / Whitespace */
    tok_split_beh beh;           /* Split, Punctuation */
    bool          invert;        /* Split */
    bool          add_prefix;    /* ByteLevel add_prefix_space */
    bool          individual;    /* Digits individual_digits */
    char          repl[8];       /* Metaspace replacement, UTF-8 */
    size_t        repl_n;
    int           prepend;       /* Metaspace PREPEND_* */
    bool          split;         /* Metaspace split */
} tok_pt;

/* A piece of the pre-tokenized text: bytes [off, off + len) of the work buffer. first: it
 * starts at offset 0 of the original text (Metaspace "first"). After a ByteLevel
 * pre-tokenizer the bytes stay raw; the model maps them to the alphabet (byte_level). */
typedef struct {
    uint32_t off, len;
    bool     first;
} tok_piece;

typedef struct {
    tok_piece *v;   /* owned */
    size_t     n, cap;
} tok_pieces;

bool tok_pieces_push(tok_pieces *p, uint32_t off, uint32_t len, bool first);

/* Run pts[0..n) over the pieces in *cur, whose bytes live in *buf (transforms append new
 * bytes to *buf). The result replaces *cur. */
bool tok_pt_apply(const tok_pt *pts, int n, hearth_buf *buf, tok_pieces *cur, tok_pieces *tmp,
                  void *md);

/* ------------------------------------------------------------------ models */

typedef enum { MODEL_BPE, MODEL_WORDPIECE, MODEL_UNIGRAM } tok_model_kind;

typedef struct {
    uint64_t key;   /* (node << 8 | byte) + 1; 0 = empty */
    int32_t  child;
} tok_trie_edge;

typedef struct {
    tok_model_kind kind;
    int32_t  unk_id;           /* -1 = none */
    bool     byte_fallback;    /* BPE, Unigram: <0xXX> tokens for unknown characters */
    bool     fuse_unk;         /* BPE, Unigram */
    bool     ignore_merges;    /* BPE */
    bool     byte_level;       /* BPE: pieces arrive as raw bytes to map to GPT-2's alphabet */
    char    *prefix;           /* owned: continuing_subword_prefix (BPE, WordPiece) or NULL */
    size_t   prefix_n;
    char    *suffix;           /* owned: end_of_word_suffix (BPE) or NULL */
    size_t   suffix_n;
    int32_t  max_chars;        /* WordPiece max_input_chars_per_word */
    double   min_score;        /* Unigram: lowest piece score */
    double  *uscores;          /* owned: Unigram: [n_vocab] piece scores (f64 as tokenizers) */
    /* Unigram: a byte trie over every piece, edges in an open-addressing table */
    tok_trie_edge *edges;      /* owned: [edge_mask + 1] */
    uint32_t edge_mask;
    int32_t *node_tok;         /* owned: [n_nodes] token id ending at the node, -1 = none */
    int32_t  n_nodes;
    int32_t  char_id[0x800];   /* BPE: id of the one-character string of each code point below
                                  U+0800, -1 = none (saves a hash lookup per character) */
} tok_model;

/* Scratch of the models, owned by one encode call and reused from piece to piece. */
typedef struct {
    hearth_buf  scratch;      /* strings being looked up */
    tok_sym *sym;          /* owned: BPE symbols */
    size_t   n_sym, cap_sym;
    tok_heap heap;         /* BPE merge queue */
    void    *best;         /* owned: Unigram best paths */
    size_t   cap_best;     /* entries */
    tok_vec  seg;          /* Unigram segments */
} tok_model_work;

void tok_model_work_free(tok_model_work *w);
/* Encode one piece; append ids to *out. */
bool tok_model_encode(const hearth_tok *tok, const tok_model *m, const char *s, size_t n,
                      tok_vec *out, tok_model_work *w);
/* Build the Unigram trie over the vocab. */
hearth_status tok_model_unigram_build(const hearth_tok *tok, tok_model *m, hearth_err *err);

/* ------------------------------------------------------------------ post-processors */

/* A template item: a special token's ids (n_ids of ids[]), or sequence A (seq = 0) / B (1). */
typedef struct {
    int      seq;        /* -1: special token */
    int32_t *ids;        /* owned */
    int32_t  n_ids;
} tok_tmpl_item;

typedef struct {
    tok_tmpl_item *single, *pair; /* owned */
    int            n_single, n_pair;
} tok_post;

/* ------------------------------------------------------------------ decoders */

typedef enum {
    DEC_BYTELEVEL, DEC_METASPACE, DEC_BYTEFALLBACK, DEC_FUSE, DEC_STRIP, DEC_WORDPIECE,
    DEC_REPLACE, DEC_BPE,
} tok_dec_kind;

typedef struct {
    tok_dec_kind kind;
    char      *str;          /* owned: Metaspace replacement, WordPiece prefix, Replace content,
                                BPEDecoder suffix, Strip content */
    size_t     str_n;
    tok_regex *re;           /* owned: Replace pattern */
    int        prepend;      /* Metaspace PREPEND_* */
    bool       cleanup;      /* WordPiece */
    int        start, stop;  /* Strip */
} tok_dec;

/* ------------------------------------------------------------------ added tokens */

typedef struct {
    int32_t id;
    bool    special, lstrip, rstrip, single_word, normalized;
} tok_added;

/* A byte trie for leftmost-longest matching of added tokens (tokenizers uses Aho-Corasick in
 * LeftmostLongest mode: the same matches). */
typedef struct {
    tok_trie_node *nodes;    /* owned; node 0 is the root; rank = index into pipe->added */
    int32_t        n_nodes;
    size_t         cap_nodes;
    int32_t        root[256];
} tok_atrie;

/* ------------------------------------------------------------------ the pipeline */

struct tok_pipe {
    tok_norm  *norms;   int n_norms;   /* owned */
    tok_pt    *pts;     int n_pts;     /* owned */
    tok_model  model;
    tok_post   post;
    bool       has_post;
    tok_dec   *decs;    int n_decs;    /* owned */
    bool       has_decoder;            /* "decoder": null joins tokens with spaces */
    tok_added *added;   int n_added;   /* owned */
    char      *added_norm;             /* owned: normalized contents of normalized tokens */
    tok_atrie  raw, norm;              /* tries over non-normalized / normalized contents */
    /* [n_vocab] or NULL: the text decode gives for an id, where it is not the vocab text. A
     * normalized added token whose content the normalizer changes ("<Think>" lowercased)
     * decodes as its normalized text in tokenizers, and is then no longer found among the
     * special tokens (which are looked up by text) */
    tok_str   *dec_text;               /* owned; offsets into dec_blob */
    char      *dec_blob;               /* owned */
};
typedef struct tok_pipe tok_pipe;

void          tok_pipe_destroy(tok_pipe *p);
hearth_status tok_pipe_encode(const hearth_tok *tok, const char *a, size_t na, const char *b,
                              size_t nb, bool pair, bool add_special, bool parse_special,
                              const tok_plain *plain, int32_t **ids, size_t *n_ids);
char         *tok_pipe_decode(const hearth_tok *tok, const int32_t *ids, size_t n_ids,
                              bool special);
/* Build the added-token tries (after tok->pipe's added list and normalizers are set). */
hearth_status tok_pipe_build_added(hearth_tok *tok, hearth_err *err);
/* The piece of one token as the decoder renders it in the middle of a text (for
 * hearth_tok_piece and the streaming decoder): appended to *out. */
bool          tok_pipe_piece(const hearth_tok *tok, int32_t id, hearth_buf *out);

/* ------------------------------------------------------------------ loader parts */

/* tok_json_parts.c: the component sections of tokenizer.json, filling p. j is a cJSON node
 * (the section's value; may be JSON null). Errors name the component and option. */
struct cJSON;
hearth_status tokjson_normalizer(const struct cJSON *j, tok_pipe *p, hearth_err *err);
hearth_status tokjson_pre_tokenizer(const struct cJSON *j, tok_pipe *p, hearth_err *err);
hearth_status tokjson_post_processor(const struct cJSON *j, const hearth_tok *tok, tok_pipe *p,
                                     hearth_err *err);
hearth_status tokjson_decoder(const struct cJSON *j, tok_pipe *p, hearth_err *err);
/* Every key of object j other than those in keys (NULL-terminated) is an error naming it. */
hearth_status tokjson_keys(const struct cJSON *j, const char *what, const char *const *keys,
                           hearth_err *err);
/* Typed getters: absent or null gives def / NULL; a wrong type is an error (*st set). */
const char   *tokjson_str(const struct cJSON *j, const char *key, const char *what,
                          hearth_status *st, hearth_err *err);
bool          tokjson_bool(const struct cJSON *j, const char *key, bool def, const char *what,
                           hearth_status *st, hearth_err *err);
double        tokjson_num(const struct cJSON *j, const char *key, double def, const char *what,
                          hearth_status *st, hearth_err *err);
