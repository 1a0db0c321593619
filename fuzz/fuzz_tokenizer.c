/*
 * fuzz_tokenizer.c - libFuzzer entry point for the tokenizer.json front end and the pipeline
 * it builds (tokenizer/tokenizer.h: hearth_tok_from_json, encode, decode, streaming decode).
 *
 * Four synthetic tokenizers are built once, from tokenizer.json text this file writes itself,
 * together covering the pipeline's parts:
 *   0  byte-level BPE (GPT-2 alphabet + a few merges), ByteLevel pre-tokenizer and decoder,
 *      added tokens with lstrip / rstrip / single_word, a TemplateProcessing pair;
 *   1  Unigram with byte_fallback, NFKC + Lowercase + Replace(regex), Digits + Metaspace
 *      (first, split), Metaspace + ByteFallback + Fuse decoders, Roberta post-processor;
 *   2  WordPiece, BertNormalizer, BertPreTokenizer, Bert post-processor, WordPiece decoder;
 *   3  SentencePiece-style BPE with byte_fallback + fuse_unk, Prepend + Replace normalizers,
 *      Split behaviours, Replace + ByteFallback + Fuse + Strip decoders.
 * The first input byte picks one (mod 4), the rest is the text. Every (add_special,
 * parse_special) mode is encoded, the pair (first half, second half) too, the ids decoded both
 * ways and streamed; the promises checked: ids lie in [0, n_vocab), decode gives valid UTF-8
 * (tokenizers' decode returns a string), the streaming decoder never fails with a buffer of
 * 64 + max_piece bytes, and tokenizer 0 round-trips valid UTF-8 exactly. A first byte of 0xFF
 * instead feeds the rest to hearth_tok_from_json itself (it must fail cleanly or load a
 * tokenizer that then encodes "hello world").
 *
 * Built by CMake (fuzz/fuzz.cmake): in every build with a replay main() (fuzz/replay.c), and
 * the test fuzz_tokenizer_replay runs fuzz/corpus/tokenizer through it (sanitized in build-asan/);
 * `make fuzz` builds it with libFuzzer in build-fuzz/ (clang-14) and runs it for FUZZ_SECONDS
 * (scripts/fuzz.sh). A longer run of this target alone, once build-fuzz/ is built:
 *
 *   scripts/fuzz.sh build-fuzz 180 tokenizer      or, with libFuzzer's own flags:
 *   ./build-fuzz/fuzz_tokenizer -max_len=4096 -max_total_time=180 \
 *       build-fuzz/corpus-tokenizer fuzz/corpus/tokenizer
 *
 * New inputs go to the first directory (scratch); fuzz/corpus/tokenizer holds the committed
 * seeds (seed_*, written by tools/make_tokjson_corpus.py) and 250 inputs the fuzzer found in
 * ~8 minutes, kept by -merge=1 (gen_*). The fuzz_corpus_replay test of tests/unit/test_tokjson.c runs them all
 * through this same function (it includes this file, with TOKFUZZ_FAIL reporting a check
 * failure instead of aborting); a crasher, once fixed, joins them as crash_<what>.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/status.h"
#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifndef TOKFUZZ_FAIL
#define TOKFUZZ_FAIL(what)                                                          \
    do {                                                                            \
        fprintf(stderr, "fuzz_tokenizer: %s:%d: broken promise: %s\n", __FILE__, __LINE__, what); \
        abort();                                                                    \
    } while (0)
#endif
#define PROMISE(c) do { if (!(c)) TOKFUZZ_FAIL(#c); } while (0)

/* ------------------------------------------------------------------ the tokenizers */

typedef struct {
    char  *p;
    size_t n, cap;
} jbuf;

static void jput(jbuf *b, const char *s) {
    size_t k = strlen(s);
    if (b->n + k + 1 > b->cap) {
        b->cap = (b->n + k + 1) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    memcpy(b->p + b->n, s, k + 1);
    b->n += k;
}

/* GPT-2's byte -> code point map (bytes_to_unicode). */
static unsigned byte_cp(unsigned b) {
    if (b <= 0x20) return 0x100 + b;
    if (b >= 0x7F && b <= 0xA0) return 0x121 + (b - 0x7F);
    if (b == 0xAD) return 0x143;
    return b;
}

/* A JSON string literal of code point cp ("\uXXXX" for everything outside printable ASCII). */
static void jcp(jbuf *b, unsigned cp) {
    char s[16];
    if (cp >= 0x20 && cp < 0x7F && cp != '"' && cp != '\\') snprintf(s, sizeof s, "%c", (char)cp);
    else snprintf(s, sizeof s, "\\u%04X", cp);
    jput(b, s);
}

static char *json_bytelevel(void) {
    jbuf b = {0};
    char s[64];
    jput(&b, "{\"added_tokens\":[{\"id\":256,\"content\":\"<|x|>\",\"special\":true,"
             "\"normalized\":false},{\"id\":257,\"content\":\"<tool>\",\"lstrip\":true,"
             "\"rstrip\":true,\"normalized\":false},{\"id\":258,\"content\":\"mask\","
             "\"single_word\":true,\"normalized\":true}],\"normalizer\":{\"type\":\"NFC\"},"
             "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
             "\"use_regex\":true},\"decoder\":{\"type\":\"ByteLevel\"},\"post_processor\":"
             "{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<|x|>\","
             "\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],\"pair\":["
             "{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},{\"SpecialToken\":{\"id\":\"<|x|>\","
             "\"type_id\":0}},{\"Sequence\":{\"id\":\"B\",\"type_id\":1}}],\"special_tokens\":"
             "{\"<|x|>\":{\"id\":\"<|x|>\",\"ids\":[256],\"tokens\":[\"<|x|>\"]}}},"
             "\"model\":{\"type\":\"BPE\",\"vocab\":{");
    for (unsigned i = 0; i < 256; i++) {
        jput(&b, i ? ",\"" : "\"");
        jcp(&b, byte_cp(i));
        snprintf(s, sizeof s, "\":%u", i);
        jput(&b, s);
    }
    /* 259.. merged tokens */
    static const char *const merges[][2] = {{"\\u0120", "t"}, {"h", "e"}, {"\\u0120t", "he"},
                                            {"i", "n"}, {"\\u0120", "a"}, {"e", "r"},
                                            {"\\u0120a", "n"}, {"in", "g"}, {"\\u010a", "\\u010a"}};
    int nm = (int)(sizeof merges / sizeof merges[0]);
    for (int i = 0; i < nm; i++) {
        snprintf(s, sizeof s, ",\"%s%s\":%d", merges[i][0], merges[i][1], 259 + i);
        jput(&b, s);
    }
    jput(&b, ",\"<|x|>\":256,\"<tool>\":257,\"mask\":258},\"merges\":[");
    for (int i = 0; i < nm; i++) {
        snprintf(s, sizeof s, "%s[\"%s\",\"%s\"]", i ? "," : "", merges[i][0], merges[i][1]);
        jput(&b, s);
    }
    jput(&b, "]}}");
    return b.p;
}

static void byte_pieces(jbuf *b, const char *score) {
    char s[64];
    for (int i = 0; i < 256; i++) {
        snprintf(s, sizeof s, ",[\"<0x%02X>\",%s]", i, score);
        jput(b, s);
    }
}

static char *json_unigram(void) {
    jbuf b = {0};
    jput(&b, "{\"added_tokens\":[{\"id\":1,\"content\":\"<s>\",\"special\":true},"
             "{\"id\":2,\"content\":\"</s>\",\"special\":true}],\"normalizer\":{\"type\":"
             "\"Sequence\",\"normalizers\":[{\"type\":\"NFKC\"},{\"type\":\"Lowercase\"},"
             "{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"\\\\s+\"},\"content\":\" \"}]},"
             "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Digits\","
             "\"individual_digits\":true},{\"type\":\"Metaspace\",\"replacement\":"
             "\"\\u2581\",\"prepend_scheme\":\"first\",\"split\":true}]},\"decoder\":{\"type\":"
             "\"Sequence\",\"decoders\":[{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\","
             "\"prepend_scheme\":\"first\"},{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"}]},"
             "\"post_processor\":{\"type\":\"RobertaProcessing\",\"sep\":[\"</s>\",2],\"cls\":"
             "[\"<s>\",1]},\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"byte_fallback\":true,"
             "\"vocab\":[[\"<unk>\",0],[\"<s>\",0],[\"</s>\",0],[\"\\u2581\",-2],[\"a\",-3],"
             "[\"b\",-3.5],[\"c\",-4],[\"ab\",-4.25],[\"\\u2581a\",-3],[\"e\",-2.5],"
             "[\"\\u2581the\",-4],[\"th\",-5],[\"he\",-4.75],[\"\\u2581he\",-4.5],[\"1\",-6],"
             "[\"\\u00e9\",-7],[\"\\u6771\",-8],[\"\\u4eac\",-8]");
    byte_pieces(&b, "-20");
    jput(&b, "]}}");
    return b.p;
}

static char *json_wordpiece(void) {
    jbuf b = {0};
    jput(&b, "{\"added_tokens\":[{\"id\":0,\"content\":\"[PAD]\",\"special\":true},"
             "{\"id\":1,\"content\":\"[UNK]\",\"special\":true},{\"id\":2,\"content\":\"[CLS]\","
             "\"special\":true},{\"id\":3,\"content\":\"[SEP]\",\"special\":true},{\"id\":4,"
             "\"content\":\"[MASK]\",\"special\":true,\"lstrip\":true,\"single_word\":true}],"
             "\"normalizer\":{\"type\":\"BertNormalizer\",\"clean_text\":true,"
             "\"handle_chinese_chars\":true,\"strip_accents\":null,\"lowercase\":true},"
             "\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},\"post_processor\":{\"type\":"
             "\"BertProcessing\",\"sep\":[\"[SEP]\",3],\"cls\":[\"[CLS]\",2]},\"decoder\":"
             "{\"type\":\"WordPiece\",\"prefix\":\"##\",\"cleanup\":true},\"model\":{\"type\":"
             "\"WordPiece\",\"unk_token\":\"[UNK]\",\"max_input_chars_per_word\":20,\"vocab\":"
             "{\"[PAD]\":0,\"[UNK]\":1,\"[CLS]\":2,\"[SEP]\":3,\"[MASK]\":4,\"the\":5,\"a\":6,"
             "\"##s\":7,\"##ing\":8,\"hello\":9,\"world\":10,\".\":11,\",\":12,\"##e\":13,"
             "\"e\":14,\"\\u6771\":15,\"do\":16,\"n\":17,\"'\":18,\"t\":19,\"##a\":20}}}");
    return b.p;
}

static char *json_spm_bpe(void) {
    jbuf b = {0};
    jput(&b, "{\"added_tokens\":[{\"id\":0,\"content\":\"<unk>\",\"special\":true},"
             "{\"id\":1,\"content\":\"<bos>\",\"special\":true},{\"id\":2,\"content\":"
             "\"<start>\",\"special\":true}],\"normalizer\":{\"type\":\"Sequence\","
             "\"normalizers\":[{\"type\":\"Prepend\",\"prepend\":\"\\u2581\"},{\"type\":"
             "\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\\u2581\"}]},"
             "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\","
             "\"pattern\":{\"Regex\":\"\\\\d\"},\"behavior\":\"Contiguous\",\"invert\":false},"
             "{\"type\":\"Split\",\"pattern\":{\"String\":\"\\u2581\"},\"behavior\":"
             "\"MergedWithNext\",\"invert\":false},{\"type\":\"Split\",\"pattern\":{\"Regex\":"
             "\"[.,!?]\"},\"behavior\":\"MergedWithPrevious\",\"invert\":false}]},"
             "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":"
             "{\"id\":\"<bos>\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],"
             "\"pair\":[{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},{\"Sequence\":{\"id\":\"B\","
             "\"type_id\":1}}],\"special_tokens\":{\"<bos>\":{\"id\":\"<bos>\",\"ids\":[1],"
             "\"tokens\":[\"<bos>\"]}}},\"decoder\":{\"type\":\"Sequence\",\"decoders\":["
             "{\"type\":\"Replace\",\"pattern\":{\"String\":\"\\u2581\"},\"content\":\" \"},"
             "{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"},{\"type\":\"Strip\",\"content\":"
             "\" \",\"start\":1,\"stop\":0}]},\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\","
             "\"byte_fallback\":true,\"fuse_unk\":true,\"vocab\":{\"<unk>\":0,\"<bos>\":1,"
             "\"<start>\":2,\"\\u2581\":3,\"a\":4,\"b\":5,\"\\u2581a\":6,\"ab\":7,\"\\u2581ab\":8,"
             "\"1\":9,\"11\":10,\".\":11");
    char s[64];
    for (int i = 0; i < 256; i++) {
        snprintf(s, sizeof s, ",\"<0x%02X>\":%d", i, 12 + i);
        jput(&b, s);
    }
    jput(&b, "},\"merges\":[\"\\u2581 a\",\"a b\",\"\\u2581a b\",\"1 1\"]}}");
    return b.p;
}

static hearth_tok *toks[4];

static void init_once(void) {
    if (toks[0]) return;
    hearth_log_set_level(HEARTH_LOG_ERROR);
    char *(*make[4])(void) = {json_bytelevel, json_unigram, json_wordpiece, json_spm_bpe};
    for (int i = 0; i < 4; i++) {
        char *j = make[i]();
        hearth_err e;
        if (hearth_tok_from_json(j, strlen(j), &toks[i], &e) != HEARTH_OK) {
            fprintf(stderr, "fuzz_tokenizer: tokenizer %d does not load: %s\n", i, e.msg);
            abort();
        }
        free(j);
    }
}

/* ------------------------------------------------------------------ the checks */

static int valid_utf8(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        size_t k = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3
                 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
        if (!k || i + k > n) return 0;
        for (size_t j = 1; j < k; j++)
            if ((p[i + j] & 0xC0) != 0x80) return 0;
        if (k == 3 && ((c == 0xE0 && p[i + 1] < 0xA0) || (c == 0xED && p[i + 1] > 0x9F))) return 0;
        if (k == 4 && ((c == 0xF0 && p[i + 1] < 0x90) || (c == 0xF4 && p[i + 1] > 0x8F))) return 0;
        i += k;
    }
    return 1;
}

static void check_ids(const hearth_tok *t, const int32_t *ids, size_t n) {
    for (size_t i = 0; i < n; i++) PROMISE(ids[i] >= 0 && ids[i] < hearth_tok_n_vocab(t));
}

static void check_decode(const hearth_tok *t, const int32_t *ids, size_t n) {
    for (int sp = 0; sp < 2; sp++) {
        char *d = hearth_tok_decode(t, ids, n, sp);
        PROMISE(d != NULL);
        if (d) PROMISE(valid_utf8(d, strlen(d)));
        free(d);
    }
    size_t cap = 64 + hearth_tok_max_piece(t);
    char *piece = malloc(cap);
    hearth_tok_decoder dc;
    hearth_tok_decoder_init(&dc, t, true);
    for (size_t i = 0; i < n; i++) PROMISE(hearth_tok_decoder_push(&dc, ids[i], piece, cap) >= 0);
    PROMISE(hearth_tok_decoder_flush(&dc, piece, cap) >= 0);
    free(piece);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    init_once();
    const char *text = (const char *)data + 1;
    size_t n = size - 1;
    if (data[0] == 0xFF) { /* the loader itself */
        hearth_tok *t = (hearth_tok *)1;
        hearth_err e;
        hearth_status st = hearth_tok_from_json(text, n, &t, &e);
        PROMISE(st == HEARTH_OK ? t != NULL : t == NULL && e.code == st && e.msg[0]);
        if (st == HEARTH_OK) {
            int32_t *ids = NULL;
            size_t k = 0;
            PROMISE(hearth_tok_encode(t, "hello world", 11, true, true, &ids, &k) == HEARTH_OK);
            check_ids(t, ids, k);
            free(ids);
            hearth_tok_destroy(t);
        }
        return 0;
    }
    const hearth_tok *t = toks[data[0] % 4];
    for (int m = 0; m < 4; m++) {
        int32_t *ids = NULL;
        size_t k = 0;
        PROMISE(hearth_tok_encode(t, text, n, m >> 1, m & 1, &ids, &k) == HEARTH_OK);
        check_ids(t, ids, k);
        if (m == 3) check_decode(t, ids, k);
        if (m == 0 && data[0] % 4 == 0 && valid_utf8(text, n) && !memchr(text, 0, n) &&
            !memmem(text, n, "<tool>", 6)) {
            /* byte-level BPE, NFC: decode(encode(x)) is NFC(x); x that is already NFC (ASCII)
             * comes back exactly (but for <tool>, whose lstrip / rstrip eat spaces) */
            int ascii = 1;
            for (size_t i = 0; i < n && ascii; i++) ascii = (unsigned char)text[i] < 0x80;
            char *d = hearth_tok_decode(t, ids, k, true);
            if (ascii && d) PROMISE(strlen(d) == n && !memcmp(d, text, n));
            free(d);
        }
        free(ids);
    }
    int32_t *ids = NULL;
    size_t k = 0;
    PROMISE(hearth_tok_encode_pair(t, text, n / 2, text + n / 2, n - n / 2, true, true, &ids, &k) ==
            HEARTH_OK);
    check_ids(t, ids, k);
    free(ids);
    return 0;
}
