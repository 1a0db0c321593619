/*
 * tokenizer.h - one tokenizer core, fed by three front ends: GGUF metadata (model/tok_gguf.h
 * builds a hearth_tok_spec), Hugging Face tokenizer.json (hearth_tok_from_json below) and
 * SentencePiece tokenizer.model (hearth_tok_from_spm_model below).
 *
 * The core knows two model kinds:
 *   BPE_BYTES  gpt2-style byte-level BPE: text is split by the model's pre-tokenizer regex
 *              (PCRE2, chosen by name: "smollm", "llama3", "qwen2", "gpt2", ...), each piece's
 *              bytes are mapped to the byte-level alphabet and merged by rank.
 *   SPM        SentencePiece-style BPE (llama/gemma "llama" vocab): spaces become U+2581,
 *              pieces merge by score, unknown bytes fall back to <0xXX> tokens.
 * Special and added tokens (token type CONTROL / USER_DEFINED) are matched in the text before
 * the model runs, longest first (llama.cpp's order, see special.c): CONTROL tokens only when
 * parse_special is set, USER_DEFINED ones (Gemma's runs of spaces, HTML tags) always, as
 * llama.cpp and Hugging Face tokenizers do. The ids are llama.cpp's for the same GGUF.
 *
 * The front end (model/ for GGUF) fills a hearth_tok_spec whose arrays are borrowed for the
 * duration of hearth_tok_create only: the tokenizer copies what it keeps. tokenizer/ depends
 * on base/ only.
 *
 * Thread rule: immutable after create; encode/decode from any thread. A hearth_tok_decoder
 * belongs to one request (one thread at a time).
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/span.h"
#include "base/status.h"

typedef struct hearth_tok hearth_tok;

typedef enum {
    HEARTH_TOK_BPE_BYTES = 0,
    HEARTH_TOK_SPM = 1,
} hearth_tok_kind;

/* Token types, as GGUF's tokenizer.ggml.token_type stores them. */
typedef enum {
    HEARTH_TOKTYPE_UNDEFINED = 0,
    HEARTH_TOKTYPE_NORMAL = 1,
    HEARTH_TOKTYPE_UNKNOWN = 2,
    HEARTH_TOKTYPE_CONTROL = 3,
    HEARTH_TOKTYPE_USER_DEFINED = 4,
    HEARTH_TOKTYPE_UNUSED = 5,
    HEARTH_TOKTYPE_BYTE = 6,
} hearth_toktype;

typedef struct {
    hearth_tok_kind    kind;
    const char        *pre;          /* pre-tokenizer name (BPE_BYTES); NULL = "gpt2" */
    int32_t            n_vocab;
    const hearth_span *tokens;       /* [n_vocab] borrowed */
    const float       *scores;       /* [n_vocab] or NULL (SPM needs them) */
    const int32_t     *token_types;  /* [n_vocab] hearth_toktype, or NULL (all NORMAL) */
    const hearth_span *merges;       /* [n_merges] "a b" strings (BPE_BYTES), rank = index */
    int32_t            n_merges;
    int32_t            bos_id, eos_id, eot_id, unk_id, pad_id; /* -1 when absent */
    bool               add_bos, add_eos;
    bool               add_space_prefix; /* SPM: prepend U+2581 to the text */
    /* SPM as the sentencepiece library runs it (tokenizer.model) rather than llama.cpp (GGUF):
     * the space prefix goes once before the whole text, not again after each special token;
     * a run of characters that are no piece is one unk_id (without byte fallback) */
    bool               spm_library;
    /* fill-in-the-middle ids from the file ([HEARTH_TOK_FIM_COUNT], -1 where absent), or NULL;
     * kinds left absent are looked up by token text (fim.c) */
    const int32_t     *fim_ids;
} hearth_tok_spec;

/* Build a tokenizer; copies what it needs from spec. Errors name the bad token or merge. */
hearth_status hearth_tok_create(const hearth_tok_spec *spec, hearth_tok **out, hearth_err *err);

/*
 * Build a tokenizer from the bytes of a Hugging Face tokenizer.json (json[0..n), need not be
 * NUL-terminated; copied, not kept). Encode and decode then give the ids and strings of
 * tokenizers' Tokenizer.encode(text, add_special_tokens = add_special) with
 * encode_special_tokens = !parse_special, and of Tokenizer.decode(ids, skip_special_tokens =
 * !special). Supported (everything else is HEARTH_E_UNSUPPORTED naming the component or
 * option, never a silent difference; see tok_json.c for the list):
 *   models BPE (byte-level or with byte_fallback, ignore_merges, continuing_subword_prefix,
 *     end_of_word_suffix), WordPiece, Unigram; normalizers NFC NFD NFKC NFKD Lowercase Prepend
 *     Replace Strip StripAccents BertNormalizer Sequence; pre-tokenizers ByteLevel Split
 *     Metaspace Whitespace WhitespaceSplit Digits Punctuation BertPreTokenizer Sequence;
 *     post-processors TemplateProcessing BertProcessing RobertaProcessing ByteLevel Sequence;
 *     decoders ByteLevel Metaspace ByteFallback Fuse Strip WordPiece Replace BPEDecoder
 *     Sequence; added tokens with special / lstrip / rstrip / normalized / single_word.
 * Input text that is not valid UTF-8 is first decoded as Python's bytes.decode("utf-8",
 * "replace") does (each maximal invalid subpart becomes U+FFFD), since tokenizers only takes
 * strings. The file's "truncation" and "padding" are not applied (transformers overrides
 * them on every call; hearth callers truncate themselves).
 * Errors: HEARTH_E_FORMAT (not JSON, wrong shapes, unknown tokens), HEARTH_E_UNSUPPORTED,
 * HEARTH_E_NOMEM. Any thread.
 */
hearth_status hearth_tok_from_json(const char *json, size_t n, hearth_tok **out, hearth_err *err);
/* (A Unigram model needs an unk_id; tokenizers fails the encode of an unknown character
 * without one, hearth refuses the file.) */
/*
 * Build a tokenizer from a SentencePiece tokenizer.model (data[0..n), a ModelProto protobuf;
 * copied, not kept), for checkpoints without tokenizer.json (spm_model.c). Encode gives the
 * ids of sentencepiece's SentencePieceProcessor.encode(text) (BOS added with add_special when
 * the model has one). BPE models with identity normalization, kept and escaped whitespace
 * (Llama, Mistral, Gemma); other models and normalizers are HEARTH_E_UNSUPPORTED naming the
 * option, malformed files HEARTH_E_FORMAT. Any thread.
 */
hearth_status hearth_tok_from_spm_model(const void *data, size_t n, hearth_tok **out, hearth_err *err);
void          hearth_tok_destroy(hearth_tok *tok); /* accepts NULL */

int32_t hearth_tok_n_vocab(const hearth_tok *tok);
int32_t hearth_tok_bos(const hearth_tok *tok);
/* Loader-time settings from a checkpoint's other files (tokenizer_config.json,
 * generation_config.json): set the eos id when the tokenizer has none, mark an id as end of
 * generation. Only before the tokenizer is shared; ids out of range are ignored. */
void    hearth_tok_set_eos(hearth_tok *tok, int32_t id);
void    hearth_tok_set_bos(hearth_tok *tok, int32_t id);
void    hearth_tok_mark_eog(hearth_tok *tok, int32_t id);
int32_t hearth_tok_eos(const hearth_tok *tok);
/* Bytes of the longest piece (hearth_tok_piece with special = true): a decoder buffer of
 * 64 + this many bytes always suffices. */
size_t  hearth_tok_max_piece(const hearth_tok *tok);
/* Is id an end-of-generation token (eos, eot, or another CONTROL token the vocab marks as
 * ending a turn such as <|im_end|>, <end_of_turn>)? The list of names is in tokenizer.c. */
bool    hearth_tok_is_eog(const hearth_tok *tok, int32_t id);
/* Is id a control/special token (rendered only when asked)? */
bool    hearth_tok_is_control(const hearth_tok *tok, int32_t id);
/* The fill-in-the-middle tokens (fim.c): the file's ids, else found by their usual texts
 * (<|fim_prefix|>, <fim_prefix>, <PRE>, ...). */
typedef enum {
    HEARTH_TOK_FIM_PRE = 0, /* before the prefix */
    HEARTH_TOK_FIM_SUF,     /* before the suffix */
    HEARTH_TOK_FIM_MID,     /* the model writes the middle after it */
    HEARTH_TOK_FIM_PAD,
    HEARTH_TOK_FIM_REP,     /* before a repository name */
    HEARTH_TOK_FIM_SEP,     /* before each file of a repository-level prompt */
    HEARTH_TOK_FIM_COUNT
} hearth_tok_fim_kind;
/* Id of that FIM token, or -1 when the vocab has none. */
int32_t hearth_tok_fim(const hearth_tok *tok, hearth_tok_fim_kind kind);
/* Id of the exact token text, or -1. */
int32_t hearth_tok_find(const hearth_tok *tok, const char *text, size_t n);

/*
 * Encode text[0..n) into a malloc'ed array *ids of *n_ids tokens (caller frees). add_special
 * adds BOS/EOS as the vocab asks; parse_special lets special-token text in the input become
 * special tokens (otherwise it is encoded as plain text). Invalid UTF-8 is encoded byte-wise
 * (byte-level BPE) or through byte fallback (SPM), never dropped (a byte that a byte-level
 * vocab has no symbol for, such as 0xFF in SmolLM2's, becomes the tokens of U+FFFD).
 * Errors: HEARTH_E_INVALID (bad arguments), HEARTH_E_LIMIT (n > 512 MiB), HEARTH_E_NOMEM.
 */
hearth_status hearth_tok_encode(const hearth_tok *tok, const char *text, size_t n, bool add_special,
                                bool parse_special, int32_t **ids, size_t *n_ids);

/* hearth_tok_encode with parse_special, except inside the byte ranges of plain: n_plain pairs
 * plain[2i], plain[2i+1] = [start, end) offsets into text, sorted and disjoint. A special
 * token whose text has any byte inside a range is not matched there; its text is encoded as
 * plain text (USER_DEFINED tokens are matched as always). The server uses it to keep user
 * text from spelling control tokens. HEARTH_E_INVALID for ranges out of order or past n. */
hearth_status hearth_tok_encode_plain(const hearth_tok *tok, const char *text, size_t n, bool add_special,
                                      const size_t *plain, size_t n_plain, int32_t **ids, size_t *n_ids);

/* Encode a pair of texts (a, b) as tokenizers' encode((a, b)) does: each is encoded on its own,
 * then the post-processor's pair template joins them (plain concatenation without
 * add_special). tokenizer.json tokenizers only: HEARTH_E_UNSUPPORTED for GGUF ones. */
hearth_status hearth_tok_encode_pair(const hearth_tok *tok, const char *a, size_t na, const char *b,
                                     size_t nb, bool add_special, bool parse_special,
                                     int32_t **ids, size_t *n_ids);

/* The bytes token id stands for (byte-level symbols mapped back to bytes, U+2581 to a space,
 * <0xXX> to its byte). Control tokens give their text only when special is true, else empty.
 * The span is borrowed from the tokenizer. Out-of-range ids give an empty span. */
hearth_span hearth_tok_piece(const hearth_tok *tok, int32_t id, bool special);
/* The vocab string of id as stored (no mapping). */
hearth_span hearth_tok_text(const hearth_tok *tok, int32_t id);

/* Decode ids into a malloc'ed NUL-terminated string (caller frees). SPM drops the leading
 * space that add_space_prefix added when the first token starts the text. */
char *hearth_tok_decode(const hearth_tok *tok, const int32_t *ids, size_t n_ids, bool special);

/*
 * For tokenizer.json tokenizers a piece is the decoder chain run on that one token as if it
 * stood mid-text (up to a decoder that joins tokens, such as Fuse); streamed pieces then equal
 * decode() except where decode() replaces invalid UTF-8 with U+FFFD or a decoder looks at
 * whole runs of tokens (ByteFallback's invalid runs, WordPiece cleanup, Metaspace's first
 * token): test_tokjson reports how often, 99% of its corpus lines for most tokenizers.
 *
 * Incremental decoder for streaming: push one token, get the bytes that are now complete
 * UTF-8 (an incomplete trailing sequence is held back until the next token completes it, and
 * released as-is by flush). out is written NUL-terminated; returns the byte count or -1 when
 * cap is too small (cap of 64 + the longest token always suffices).
 */
typedef struct {
    const hearth_tok *tok;   /* borrowed */
    bool     special;        /* render control tokens */
    bool     first;          /* no token pushed yet (SPM leading-space rule) */
    uint8_t  pending[8];     /* held-back bytes of an incomplete UTF-8 sequence */
    int      n_pending;
} hearth_tok_decoder;

void hearth_tok_decoder_init(hearth_tok_decoder *d, const hearth_tok *tok, bool special);
int  hearth_tok_decoder_push(hearth_tok_decoder *d, int32_t id, char *out, size_t cap);
int  hearth_tok_decoder_flush(hearth_tok_decoder *d, char *out, size_t cap);
