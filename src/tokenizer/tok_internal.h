/*
 * tok_internal.h - the tokenizer's private layout, shared by the files of src/tokenizer/ and by
 * tests/unit/test_tokenizer.c. Nothing outside tokenizer/ may include it.
 *
 * One hearth_tok holds:
 *   - the strings: every vocab token's text (ids 0..n_vocab-1) and, for BPE, "extra" strings
 *     that merges mention but the vocab lacks (ids n_vocab..n_strs-1), all in one blob, found
 *     by an open-addressing hash table (tok_strmap) so that a 262144-token vocab loads in a
 *     few milliseconds and every lookup is O(token length);
 *   - per-token attributes (llama.cpp's token attrs: NORMAL/CONTROL/USER_DEFINED/... plus
 *     our EOG bit), scores, and the decoded piece of every token, precomputed;
 *   - the special-token matcher: a byte trie over CONTROL / USER_DEFINED / UNKNOWN tokens and
 *     their priority order (longest first), see special.c;
 *   - for BPE: the pre-tokenizer (pretok.c) and the merge table (pair of symbol ids -> rank
 *     and merged id); for SPM: the <0xXX> byte-token table.
 *
 * Everything is immutable after hearth_tok_create; encode keeps its scratch in a tok_work
 * owned by the call, so any number of threads may encode at once.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/utf8.h"
#include "tokenizer/tokenizer.h"

/* Token attribute bits (llama.cpp's llama_token_attr subset, plus EOG). */
enum {
    TOK_ATTR_UNDEFINED = 0,
    TOK_ATTR_UNKNOWN   = 1 << 0,
    TOK_ATTR_UNUSED    = 1 << 1,
    TOK_ATTR_NORMAL    = 1 << 2,
    TOK_ATTR_CONTROL   = 1 << 3,
    TOK_ATTR_USER      = 1 << 4, /* USER_DEFINED */
    TOK_ATTR_BYTE      = 1 << 5,
    TOK_ATTR_EOG       = 1 << 6, /* ends generation (hearth's own bit) */
    TOK_ATTR_SPECIAL   = 1 << 7, /* tokenizer.json: an added token with "special": true */
};

/* A byte range of a blob. */
typedef struct {
    uint32_t off; /* bytes into the blob */
    uint32_t len; /* bytes */
} tok_str;

/* A growable array of int32 (ids, offsets). Owned; free with tok_vec_free. */
typedef struct {
    int32_t *v;   /* owned */
    size_t   n, cap;
} tok_vec;

bool tok_vec_reserve(tok_vec *a, size_t n);
bool tok_vec_push(tok_vec *a, int32_t x);
void tok_vec_free(tok_vec *a);

/* String -> id hash table over a blob + tok_str table (not owning either). Slots hold
 * (hash high 32 bits << 32) | (id + 1); 0 is an empty slot. A one-hash Bloom filter of ~8 bits
 * per entry (small enough to stay in L2) answers most misses without touching the slots:
 * half of SPM's pair lookups are misses. */
typedef struct {
    uint64_t *slots; /* owned: [mask + 1] */
    uint32_t  mask;
    uint64_t *bloom; /* owned: [(bloom_mask + 1) / 64] bits */
    uint32_t  bloom_mask;
} tok_strmap;

uint64_t tok_hash(const void *p, size_t n);
bool     tok_strmap_init(tok_strmap *m, size_t n_expected);
void     tok_strmap_free(tok_strmap *m);
/* Insert id for s[0..n); returns the id already there (duplicate) or -1 when inserted. */
int32_t  tok_strmap_insert(tok_strmap *m, const char *blob, const tok_str *strs, const char *s,
                           size_t n, int32_t id);
/* The same with h = tok_hash(s, n) computed by the caller, who may have prefetched its slot
 * (a vocab build inserts 262144 strings into a table larger than the L2 cache). */
int32_t  tok_strmap_insert_h(tok_strmap *m, const char *blob, const tok_str *strs, const char *s,
                             size_t n, int32_t id, uint64_t h);
void     tok_strmap_prefetch(const tok_strmap *m, uint64_t h);
/* Point the entry of s[0..n) (present, h = its hash) at id instead. */
void     tok_strmap_replace(tok_strmap *m, const char *blob, const tok_str *strs, const char *s,
                            size_t n, int32_t id, uint64_t h);
int32_t  tok_strmap_find(const tok_strmap *m, const char *blob, const tok_str *strs, const char *s,
                         size_t n);

/* A symbol of the merge loops (bpe.c, spm.c): a span of the text being merged, linked to its
 * neighbours. len == 0 marks a symbol merged into its left neighbour. */
typedef struct {
    int32_t  prev, next; /* symbol indices, -1 = none */
    int32_t  id;         /* string id of the span, -1 when it is no vocab string */
    uint32_t start, len; /* bytes into the text being merged */
} tok_sym;

/* A candidate merge of symbols left and right. The heap pops the greatest key first (BPE:
 * -rank, SPM: score) and, on equal keys, the smallest left (leftmost), as llama.cpp does. */
typedef struct {
    double   key;
    int32_t  left, right;
    uint32_t size; /* bytes of left + right when pushed; a stale entry no longer matches */
    int32_t  id;   /* string id of the merged span */
} tok_bigram;

typedef struct {
    tok_bigram *v; /* owned */
    size_t      n, cap;
} tok_heap;

bool       tok_heap_push(tok_heap *h, tok_bigram b);
tok_bigram tok_heap_pop(tok_heap *h); /* h->n > 0 */
void       tok_heap_free(tok_heap *h);

/* Merge table: (left id, right id) -> (rank, merged id). */
typedef struct {
    uint64_t key;    /* (uint64)left << 32 | right; UINT64_MAX = empty */
    int32_t  rank;   /* index in the merges list */
    int32_t  result; /* string id of left+right */
} tok_merge_slot;

/* --- merges.c: the merge table of both front ends in tok->merges --- */
/* Size an empty table for n_merges pairs; false on out of memory or overflow. */
bool tok_merges_init(hearth_tok *tok, size_t n_merges);
/* Enter the pair (l, r) -> (rank, result); a repeated pair keeps its first entry when
 * keep_first, else the new one replaces it. The table has room (sized by tok_merges_init). */
void tok_merges_add(hearth_tok *tok, int32_t l, int32_t r, int32_t rank, int32_t result,
                    bool keep_first);
/* The entry of pair (l, r), or NULL (also when there is no table). */
const tok_merge_slot *tok_merges_find(const hearth_tok *tok, int32_t l, int32_t r);
/* The hash of a 64-bit key reduced to a table slot (mask = size - 1). */
uint32_t tok_hash_slot(uint64_t key, uint32_t mask);

/* Special-token trie node (special.c). */
typedef struct {
    int32_t first_child, next_sibling; /* node indices, -1 = none */
    int32_t rank;                      /* tok->specials index of the token ending here, or -1 */
    uint8_t byte;
} tok_trie_node;

typedef struct tok_pretok tok_pretok;
typedef struct tok_pipe tok_pipe;

struct hearth_tok {
    hearth_tok_kind kind;
    int32_t  n_vocab;
    int32_t  n_strs;          /* n_vocab + extra strings (BPE merge sides missing from the vocab) */
    char    *blob;            /* owned: all string bytes */
    tok_str *strs;            /* owned: [n_strs] */
    tok_strmap map;           /* string -> id over blob/strs */
    float   *scores;          /* owned: [n_vocab] */
    uint8_t *attr;            /* owned: [n_vocab] TOK_ATTR_* bits */
    size_t   max_token_bytes; /* longest vocab string */

    char    *piece_blob;      /* owned: decoded pieces */
    tok_str *pieces;          /* owned: [n_vocab] (rendered as with special = true) */
    size_t   max_piece_bytes;

    int32_t  bos_id, eos_id, eot_id, unk_id, pad_id;
    bool     add_bos, add_eos, add_space_prefix;
    bool     spm_library;     /* hearth_tok_spec.spm_library */
    int32_t  fim_ids[HEARTH_TOK_FIM_COUNT]; /* -1 = none (fim.c) */

    /* special tokens: ids sorted by text length descending, then id ascending */
    int32_t       *specials;     /* owned: [n_specials] */
    int32_t        n_specials;
    int32_t        n_user;       /* how many are matched without parse_special (USER_DEFINED) */
    tok_trie_node *trie;         /* owned: [n_trie]; node 0 is the root */
    int32_t        n_trie;
    int32_t        root_child[256]; /* fast first level of the trie, -1 = none */

    /* BPE_BYTES */
    tok_pretok     *pre;         /* owned */
    bool            ignore_merges; /* llama3: a piece that is a whole token skips merging */
    tok_merge_slot *merges;      /* owned: [merge_mask + 1] */
    uint32_t        merge_mask;
    int32_t         byte_sym[256]; /* byte -> string id of its byte-level symbol, or -1 */
    int32_t         fffd_ids[4];   /* the encoding of U+FFFD: stands for a byte the vocab lacks */
    int32_t         n_fffd;

    /* SPM */
    int32_t  byte_tok[256];      /* byte -> id of "<0xXX>", or -1 */

    /* tokenizer.json: the pipeline that encodes and decodes instead of the GGUF paths above
     * (kind, pre, the special-token trie and add_* flags are then unused); NULL for GGUF */
    tok_pipe *pipe;              /* owned */
};

/* --- tokenizer.c --- */
/* Steps 1-2 of hearth_tok_create: strings, string map, attributes, scores, special ids and the
 * end-of-generation marks; no model tables, no pieces. The tokenizer.json front end builds the
 * rest itself. dup_last: a repeated text is no error, its last id is the one found (Unigram
 * vocabs may repeat a piece; tokenizers' map keeps the last). */
hearth_status tok_create_vocab(const hearth_tok_spec *spec, bool dup_last, hearth_tok **out,
                               hearth_err *err);

/* --- fim.c --- */
/* Set tok->fim_ids from given ([HEARTH_TOK_FIM_COUNT] or NULL), looking absent kinds up by
 * text; marks tokens found by text as control. Needs the string map. */
void tok_fim_init(hearth_tok *tok, const int32_t *given);

/* --- unicode.c (UTF-8 itself is base/utf8.h) --- */
/* GPT-2 bytes_to_unicode: the code point that stands for byte b, and back (-1 if none). */
uint32_t tok_byte_to_cp(uint8_t b);
int      tok_cp_to_byte(uint32_t cp);

/* --- pretok.c --- */
/* Build the pre-tokenizer llama.cpp uses for vocab pre-type name. Unknown names give
 * HEARTH_E_UNSUPPORTED naming them. *ignore_merges is set as llama.cpp sets it. */
hearth_status tok_pretok_create(const char *name, tok_pretok **out, bool *ignore_merges,
                                hearth_err *err);
void          tok_pretok_destroy(tok_pretok *p);
/* Split valid UTF-8 text[0..n) into pieces, appended to *bounds as (start, end) byte offset
 * pairs covering text in order. false when out of memory. Any thread. */
bool          tok_pretok_split(const tok_pretok *p, const char *text, size_t n, tok_vec *bounds);

/* --- special.c --- */
/* Byte ranges of the input where special-token text is plain text (hearth_tok_encode_plain):
 * v[2i], v[2i+1] = start, end of range i, sorted and disjoint. NULL or n == 0: none. */
typedef struct {
    const size_t *v;
    size_t        n;
} tok_plain;
/* Does [s, e) overlap a range of pl (NULL: none)? */
bool          tok_plain_overlaps(const tok_plain *pl, size_t s, size_t e);
hearth_status tok_special_build(hearth_tok *tok, hearth_err *err);
/* Cut text into fragments: appends (start, end, id) triples to *frags where id >= 0 is a
 * special token and id == -1 a raw text span. parse_special = false matches USER_DEFINED
 * tokens only (llama.cpp's rule), as does an occurrence overlapping a range of plain. */
bool          tok_special_split(const hearth_tok *tok, const char *text, size_t n,
                                bool parse_special, const tok_plain *plain, tok_vec *frags);

/* --- bpe.c / spm.c --- */
hearth_status tok_bpe_build(hearth_tok *tok, const hearth_tok_spec *spec, hearth_err *err);
/* Encode one raw fragment; append ids to *out. false when out of memory. */
bool          tok_bpe_encode(const hearth_tok *tok, const char *text, size_t n, tok_vec *out);
bool          tok_spm_encode(const hearth_tok *tok, const char *text, size_t n, bool space_prefix,
                             tok_vec *out);
