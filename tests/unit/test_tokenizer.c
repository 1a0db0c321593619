/*
 * test_tokenizer.c - the tokenizer core on hand-made vocabs, and both starter models against
 * llama.cpp's ids (tests/golden/tok/, written by tools/tok_golden.py).
 *
 * Synthetic tests build tiny vocabs through hearth_tok_spec: merges applied by rank (and the
 * leftmost on ties), SPM merges by score, byte fallback, special / user-defined tokens and
 * llama.cpp's longest-token-first split order, the streaming decoder holding back split UTF-8,
 * invalid UTF-8 input, end-of-generation detection, and build errors.
 *
 * Golden tests (skipped unless HEARTH_SMOLLM2_GGUF / HEARTH_GEMMA3_GGUF are set) require, for
 * every case of the golden (each corpus line without its newline, 16-line blocks, the whole
 * corpus, inline strings), identical ids in every recorded (add_special, parse_special) mode,
 * identical decodes, the streaming decoder's concatenated output equal to decode(), and the
 * same EOG set, control tokens and pieces as llama.cpp.
 */
#include "golden_json.h"
#include "base/log.h"
#include "model/gguf.h"
#include "model/tok_gguf.h"
#include "test.h"
#include "tokenizer/tok_internal.h"
#include "tokenizer/tokenizer.h"

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* ---------------------------------------------------------------- a tiny vocab builder */

typedef struct {
    hearth_span tokens[1024];
    float       scores[1024];
    int32_t     types[1024];
    hearth_span merges[64];
    char        store[1 << 16];
    size_t      used;
    int32_t     n, n_merges;
} vocab_b;

static const char *vb_str(vocab_b *v, const char *s, size_t n) {
    char *p = v->store + v->used;
    memcpy(p, s, n);
    v->used += n;
    return p;
}

static int32_t vb_add(vocab_b *v, const char *s, float score, int32_t type) {
    size_t n = strlen(s);
    v->tokens[v->n] = (hearth_span){vb_str(v, s, n), n};
    v->scores[v->n] = score;
    v->types[v->n] = type;
    return v->n++;
}

static void vb_merge(vocab_b *v, const char *m) {
    size_t n = strlen(m);
    v->merges[v->n_merges++] = (hearth_span){vb_str(v, m, n), n};
}

/* Byte-level vocab: ids 0..255 are the byte symbols in byte order. */
static vocab_b *vb_bytelevel(void) {
    vocab_b *v = calloc(1, sizeof *v);
    for (int b = 0; b < 256; b++) {
        char u[5] = {0};
        hearth_utf8_encode(tok_byte_to_cp((uint8_t)b), u);
        vb_add(v, u, 0, HEARTH_TOKTYPE_NORMAL);
    }
    return v;
}

/* SPM vocab: 0 <unk>, 1 <s>, 2 </s>, 3..258 <0x00>..<0xFF>. */
static vocab_b *vb_spm(void) {
    vocab_b *v = calloc(1, sizeof *v);
    vb_add(v, "<unk>", 0, HEARTH_TOKTYPE_UNKNOWN);
    vb_add(v, "<s>", 0, HEARTH_TOKTYPE_CONTROL);
    vb_add(v, "</s>", 0, HEARTH_TOKTYPE_CONTROL);
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        vb_add(v, name, 0, HEARTH_TOKTYPE_BYTE);
    }
    return v;
}
#define SPM_BYTE(b) (3 + (b))

static hearth_tok_spec vb_spec(vocab_b *v, hearth_tok_kind kind) {
    hearth_tok_spec s = {0};
    s.kind = kind;
    s.pre = kind == HEARTH_TOK_BPE_BYTES ? "gpt2" : NULL;
    s.n_vocab = v->n;
    s.tokens = v->tokens;
    s.scores = v->scores;
    s.token_types = v->types;
    s.merges = v->merges;
    s.n_merges = v->n_merges;
    s.bos_id = s.eos_id = s.eot_id = s.unk_id = s.pad_id = -1;
    if (kind == HEARTH_TOK_SPM) {
        s.unk_id = 0;
        s.bos_id = 1;
        s.eos_id = 2;
    }
    return s;
}

static hearth_tok *vb_build(hearth_tok_spec s) {
    hearth_tok *t = NULL;
    hearth_err e;
    hearth_status st = hearth_tok_create(&s, &t, &e);
    if (st) fprintf(stderr, "  create: %s\n", e.msg);
    return t;
}

/* encode and compare with want[0..n) */
static int enc_eq(const hearth_tok *t, const char *s, size_t len, bool add, bool parse,
                  const int32_t *want, size_t n) {
    int32_t *ids = NULL;
    size_t k = 0;
    if (hearth_tok_encode(t, s, len, add, parse, &ids, &k)) return 0;
    int ok = k == n && (n == 0 || memcmp(ids, want, n * sizeof *ids) == 0);
    if (!ok) {
        fprintf(stderr, "  encode(\"%.*s\") gave", (int)len, s);
        for (size_t i = 0; i < k; i++) fprintf(stderr, " %d", ids[i]);
        fprintf(stderr, "\n");
    }
    free(ids);
    return ok;
}
#define ENC_EQ(t, s, add, parse, ...)                                                        \
    do {                                                                                     \
        const int32_t want_[] = {__VA_ARGS__};                                               \
        CHECK(enc_eq(t, s, strlen(s), add, parse, want_, sizeof want_ / sizeof want_[0])); \
    } while (0)

/* ---------------------------------------------------------------- byte-level BPE */

TEST(bpe_merges_by_rank) {
    vocab_b *v = vb_bytelevel();
    int32_t bc = vb_add(v, "bc", 0, 1), ab = vb_add(v, "ab", 0, 1), aa = vb_add(v, "aa", 0, 1);
    vb_merge(v, "b c");
    vb_merge(v, "a b");
    vb_merge(v, "a a");
    hearth_tok *t = vb_build(vb_spec(v, HEARTH_TOK_BPE_BYTES));
    CHECK(t != NULL);
    ENC_EQ(t, "abc", false, false, 'a', bc);  /* "b c" has the better rank */
    ENC_EQ(t, "aaa", false, false, aa, 'a');  /* equal ranks: leftmost first */
    ENC_EQ(t, "ab", false, false, ab);
    hearth_tok_destroy(t);

    v->n_merges = 0; /* same vocab, ranks swapped */
    vb_merge(v, "a b");
    vb_merge(v, "b c");
    t = vb_build(vb_spec(v, HEARTH_TOK_BPE_BYTES));
    ENC_EQ(t, "abc", false, false, ab, 'c');
    /* gpt2 pre-tokenizer: " ab" is one word, its space is the byte-level symbol of 0x20 */
    ENC_EQ(t, "ab ab", false, false, ab, 0x20, ab);
    hearth_tok_destroy(t);
    free(v);
}

TEST(bpe_long_word_is_not_quadratic) {
    vocab_b *v = vb_bytelevel();
    char buf[1100] = "a", m[2300];
    int32_t id[11];
    id[0] = 'a';
    for (int k = 1; k <= 10; k++) { /* tokens of 2^k a's, merges "a^(2^(k-1)) a^(2^(k-1))" */
        size_t half = (size_t)1 << (k - 1);
        memset(buf, 'a', 2 * half);
        buf[2 * half] = 0;
        id[k] = vb_add(v, buf, 0, 1);
        memset(m, 'a', half);
        m[half] = ' ';
        memset(m + half + 1, 'a', half);
        m[2 * half + 1] = 0;
        vb_merge(v, m);
    }
    hearth_tok *t = vb_build(vb_spec(v, HEARTH_TOK_BPE_BYTES));
    size_t n = 100000;
    char *text = malloc(n);
    memset(text, 'a', n);
    int32_t *ids;
    size_t k;
    clock_t c0 = clock();
    CHECK_EQ(hearth_tok_encode(t, text, n, false, false, &ids, &k), HEARTH_OK);
    double ms = (double)(clock() - c0) * 1e3 / CLOCKS_PER_SEC;
    fprintf(stderr, "  100000-byte word: %.1f ms\n", ms);
    /* 97 x 1024 + 512 + 128 + 32 */
    CHECK_EQ(k, 100);
    CHECK_EQ(ids[0], id[10]);
    CHECK_EQ(ids[96], id[10]);
    CHECK_EQ(ids[97], id[9]);
    CHECK_EQ(ids[98], id[7]);
    CHECK_EQ(ids[99], id[5]);
    char *d = hearth_tok_decode(t, ids, k, false);
    CHECK(d && strlen(d) == n && d[0] == 'a' && d[n - 1] == 'a');
    free(d);
    free(ids);
    free(text);
    hearth_tok_destroy(t);
    free(v);
}

static int split_eq(const char *pre, const char *text, const char *const *want, size_t n_want) {
    tok_pretok *p;
    bool im;
    tok_vec b = {0};
    if (tok_pretok_create(pre, &p, &im, NULL)) return 0;
    int ok = tok_pretok_split(p, text, strlen(text), &b) && b.n == 2 * n_want;
    for (size_t i = 0; ok && i < n_want; i++) {
        size_t s = (size_t)b.v[2 * i], e = (size_t)b.v[2 * i + 1];
        ok = e - s == strlen(want[i]) && memcmp(text + s, want[i], e - s) == 0;
    }
    if (!ok) {
        fprintf(stderr, "  %s split of \"%s\":", pre, text);
        for (size_t i = 0; i + 1 < b.n; i += 2)
            fprintf(stderr, " [%.*s]", b.v[i + 1] - b.v[i], text + b.v[i]);
        fprintf(stderr, "\n");
    }
    tok_vec_free(&b);
    tok_pretok_destroy(p);
    return ok;
}
#define SPLIT_EQ(pre, text, ...)                                                  \
    do {                                                                          \
        const char *const w_[] = {__VA_ARGS__};                                   \
        CHECK(split_eq(pre, text, w_, sizeof w_ / sizeof w_[0]));                 \
    } while (0)

TEST(pretokenizers_by_name) {
    SPLIT_EQ("gpt2", "abc 123 def's  x\n", "abc", " 123", " def", "'s", " ", " x", "\n");
    SPLIT_EQ("smollm", "abc 123 def", "abc", " ", "1", "2", "3", " def");
    SPLIT_EQ("llama3", "I'VE 12345 words!!\n\n  x", "I", "'VE", " ", "123", "45", " words",
             "!!\n\n", " ", " x");
    SPLIT_EQ("qwen2", "ab 123", "ab", " ", "1", "2", "3");
    SPLIT_EQ("default", "a,b 1234", "a", ",", "b", " ", "123", "4");
    SPLIT_EQ("gpt2", "a\xC2\x85\xC2\x85" "b", "a", "\xC2\x85", "\xC2\x85", "b"); /* NEL is \s */
    /* every name we accept compiles (the DeepSeek lists have no oracle model here) */
    const char *names[] = {"gpt2", "gpt-2", "default", "smollm", "starcoder", "llama3", "llama-bpe",
                           "dbrx", "qwen2", "stablelm2", "deepseek-coder", "deepseek-v3"};
    tok_pretok *p = NULL;
    bool im;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        CHECK_EQ(tok_pretok_create(names[i], &p, &im, NULL), HEARTH_OK);
        CHECK_EQ(im, !strcmp(names[i], "llama3") || !strcmp(names[i], "llama-bpe"));
        tok_pretok_destroy(p);
    }
    SPLIT_EQ("deepseek-coder", "ab12\ncd", "ab", "1", "2", "\n", "cd");
    hearth_err e;
    CHECK_EQ(tok_pretok_create("nonesuch-7b", &p, &im, &e), HEARTH_E_UNSUPPORTED);
    CHECK(strstr(e.msg, "nonesuch-7b") != NULL);
    CHECK(p == NULL);
}

TEST(bpe_invalid_utf8_roundtrips) {
    vocab_b *v = vb_bytelevel();
    hearth_tok *t = vb_build(vb_spec(v, HEARTH_TOK_BPE_BYTES));
    uint32_t x = 12345;
    char text[512];
    for (int round = 0; round < 50; round++) {
        for (size_t i = 0; i < sizeof text; i++) {
            x = x * 1103515245u + 12345u;
            text[i] = (char)(x >> 16);
        }
        int32_t *ids;
        size_t k;
        CHECK_EQ(hearth_tok_encode(t, text, sizeof text, false, false, &ids, &k), HEARTH_OK);
        CHECK_EQ(k, sizeof text); /* no merges: one symbol per byte, none dropped */
        char *d = hearth_tok_decode(t, ids, k, false);
        CHECK(d && memcmp(d, text, sizeof text) == 0);
        free(d);
        free(ids);
    }
    hearth_tok_destroy(t);
    free(v);
}

/* ---------------------------------------------------------------- SentencePiece */

TEST(spm_merges_by_score_with_byte_fallback) {
    vocab_b *v = vb_spm();
    int32_t sp = vb_add(v, "\xE2\x96\x81", -1, 1);
    int32_t h = vb_add(v, "h", -2, 1), l = vb_add(v, "l", -2, 1), o = vb_add(v, "o", -2, 1);
    vb_add(v, "e", -2, 1);
    vb_add(v, "he", -5, 1);
    vb_add(v, "el", -1, 1);
    vb_add(v, "ll", -2, 1);
    int32_t lo = vb_add(v, "lo", -3, 1), hel = vb_add(v, "hel", -4, 1);
    hearth_tok_spec s = vb_spec(v, HEARTH_TOK_SPM);
    s.add_bos = true;
    hearth_tok *t = vb_build(s);
    /* el (-1) first, then lo (-3), then hel (-4): leftmost-first would have taken "he" */
    ENC_EQ(t, "hello", false, false, hel, lo);
    ENC_EQ(t, "hello", true, false, 1, hel, lo);
    ENC_EQ(t, "h lo", false, false, h, sp, lo);
    ENC_EQ(t, "h\xC3\xA9", false, false, h, SPM_BYTE(0xC3), SPM_BYTE(0xA9)); /* é: not in vocab */
    /* invalid lead 0xFF swallows 3 more bytes as one (unknown) symbol, as in llama.cpp */
    ENC_EQ(t, "\xFFhlo", false, false, SPM_BYTE(0xFF), SPM_BYTE('h'), SPM_BYTE('l'), SPM_BYTE('o'));
    ENC_EQ(t, "lo\xE2\x82", false, false, lo, SPM_BYTE(0xE2), SPM_BYTE(0x82));
    hearth_tok_destroy(t);

    s.add_space_prefix = true;
    t = vb_build(s);
    ENC_EQ(t, "hello", false, false, sp, hel, lo);
    int32_t ids[] = {sp, hel, lo, sp, l};
    char *d = hearth_tok_decode(t, ids, 5, false);
    CHECK_STR(d, "hello l"); /* the prefix space of the first token is dropped */
    free(d);
    hearth_tok_decoder dec;
    hearth_tok_decoder_init(&dec, t, false);
    char out[128];
    CHECK_EQ(hearth_tok_decoder_push(&dec, sp, out, sizeof out), 0);
    CHECK_EQ(hearth_tok_decoder_push(&dec, hel, out, sizeof out), 3);
    CHECK_STR(out, "hel");
    CHECK_EQ(hearth_tok_decoder_push(&dec, sp, out, sizeof out), 1);
    CHECK_STR(out, " ");
    (void)o;
    hearth_tok_destroy(t);
    free(v);
}

TEST(spm_invalid_utf8_roundtrips) {
    vocab_b *v = vb_spm();
    vb_add(v, "\xE2\x96\x81", -1, 1);
    vb_add(v, "a", -1, 1);
    hearth_tok *t = vb_build(vb_spec(v, HEARTH_TOK_SPM));
    uint32_t x = 777;
    char text[300];
    for (int round = 0; round < 50; round++) {
        for (size_t i = 0; i < sizeof text; i++) {
            x = x * 1103515245u + 12345u;
            text[i] = (char)(x >> 16);
            /* No spaces and no raw U+2581: an invalid lead byte swallows the next bytes into
             * one symbol (llama.cpp's cut), so the escaped "\xE2\x96\x81" of a space can end up
             * in byte fallback and decode as those three bytes, exactly as in llama.cpp. */
            if (text[i] == ' ' || (uint8_t)text[i] == 0xE2) text[i] = 'a';
        }
        int32_t *ids;
        size_t k;
        CHECK_EQ(hearth_tok_encode(t, text, sizeof text, false, false, &ids, &k), HEARTH_OK);
        char *d = hearth_tok_decode(t, ids, k, false);
        CHECK(d && memcmp(d, text, sizeof text) == 0);
        free(d);
        free(ids);
    }
    hearth_tok_destroy(t);
    free(v);
}

/* ---------------------------------------------------------------- specials */

TEST(special_tokens_split_first) {
    vocab_b *v = vb_spm();
    int32_t sp = vb_add(v, "\xE2\x96\x81", -1, 1), x = vb_add(v, "x", -1, 1);
    int32_t ctl = vb_add(v, "<|a|>", 0, HEARTH_TOKTYPE_CONTROL);
    int32_t usr = vb_add(v, "<u>", 0, HEARTH_TOKTYPE_USER_DEFINED);
    int32_t bcd = vb_add(v, "bcd", 0, HEARTH_TOKTYPE_USER_DEFINED);
    int32_t ab = vb_add(v, "ab", 0, HEARTH_TOKTYPE_USER_DEFINED);
    int32_t nn = vb_add(v, "\n\n", 0, HEARTH_TOKTYPE_USER_DEFINED);
    hearth_tok_spec s = vb_spec(v, HEARTH_TOK_SPM);
    s.add_bos = true;
    hearth_tok *t = vb_build(s);
    ENC_EQ(t, "x<|a|>x", false, true, x, ctl, x);
    /* parse_special off: control text is plain text, user-defined tokens still split */
    ENC_EQ(t, "<u><|a|>", false, false, usr, SPM_BYTE('<'), SPM_BYTE('|'), SPM_BYTE('a'),
           SPM_BYTE('|'), SPM_BYTE('>'));
    /* longest special first over the whole text, not longest match at each position */
    ENC_EQ(t, "abcd", false, false, SPM_BYTE('a'), bcd);
    ENC_EQ(t, "abab", false, false, ab, ab);
    ENC_EQ(t, "\n\n\n", false, false, nn, SPM_BYTE('\n')); /* leftmost, non-overlapping */
    ENC_EQ(t, "<|a|><|a|>", true, true, 1, ctl, ctl);
    hearth_tok_destroy(t);

    s.add_space_prefix = true; /* a fragment after a special token gets the prefix too */
    t = vb_build(s);
    ENC_EQ(t, "x<u>x", false, false, sp, x, usr, sp, x);
    CHECK(hearth_tok_is_control(t, ctl));
    CHECK(!hearth_tok_is_control(t, usr));
    CHECK_EQ(hearth_tok_piece(t, ctl, false).len, 0);
    CHECK_EQ(hearth_tok_piece(t, ctl, true).len, 5);
    CHECK_EQ(hearth_tok_piece(t, usr, false).len, 3); /* user-defined: always rendered */
    CHECK_EQ(hearth_tok_piece(t, 0, false).len, 0);   /* <unk> */
    CHECK_EQ(hearth_tok_piece(t, -1, true).len, 0);
    CHECK_EQ(hearth_tok_piece(t, v->n, true).len, 0);
    CHECK_EQ(hearth_tok_find(t, "<u>", 3), usr);
    CHECK_EQ(hearth_tok_find(t, "<v>", 3), -1);
    hearth_tok_destroy(t);
    free(v);
}

/* hearth_tok_encode_plain: control tokens are not matched where they touch a plain range;
 * outside them, and for USER_DEFINED tokens, nothing changes. */
static bool plain_eq(const hearth_tok *t, const char *s, const size_t *pl, size_t n_pl, const int32_t *want, size_t n) {
    int32_t *ids = NULL;
    size_t k = 0;
    bool ok = hearth_tok_encode_plain(t, s, strlen(s), false, pl, n_pl, &ids, &k) == HEARTH_OK && k == n &&
              (!n || !memcmp(ids, want, n * sizeof *ids));
    free(ids);
    return ok;
}
#define PLAIN_EQ(t, s, pl, n_pl, ...)                                                  \
    do {                                                                              \
        const int32_t want_[] = {__VA_ARGS__};                                        \
        CHECK(plain_eq(t, s, pl, n_pl, want_, sizeof want_ / sizeof want_[0]));       \
    } while (0)

TEST(special_tokens_kept_plain_in_ranges) {
    vocab_b *v = vb_spm();
    int32_t x = vb_add(v, "x", -1, 1);
    int32_t ctl = vb_add(v, "<|a|>", 0, HEARTH_TOKTYPE_CONTROL);
    int32_t usr = vb_add(v, "<u>", 0, HEARTH_TOKTYPE_USER_DEFINED);
    hearth_tok *t = vb_build(vb_spec(v, HEARTH_TOK_SPM));
    const char *text = "<|a|>x<|a|><u>x<|a|>"; /* [0,5) ctl, 5 x, [6,11) ctl, [11,14) usr, 14 x, [15,20) ctl */
    /* no ranges: as hearth_tok_encode with parse_special */
    PLAIN_EQ(t, text, NULL, 0, ctl, x, ctl, usr, x, ctl);
    /* the middle control token inside a range is text; the user-defined one still splits */
    const size_t mid[] = {5, 15};
    PLAIN_EQ(t, text, mid, 1, ctl, x, SPM_BYTE('<'), SPM_BYTE('|'), SPM_BYTE('a'), SPM_BYTE('|'), SPM_BYTE('>'),
             usr, x, ctl);
    /* a token with only some bytes in a range is text too */
    const size_t edge[] = {0, 1, 19, 20};
    PLAIN_EQ(t, text, edge, 2, SPM_BYTE('<'), SPM_BYTE('|'), SPM_BYTE('a'), SPM_BYTE('|'), SPM_BYTE('>'), x, ctl,
             usr, x, SPM_BYTE('<'), SPM_BYTE('|'), SPM_BYTE('a'), SPM_BYTE('|'), SPM_BYTE('>'));
    /* a range over everything is parse_special off */
    const size_t all[] = {0, 20};
    int32_t *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    CHECK_EQ(hearth_tok_encode_plain(t, text, 20, true, all, 1, &a, &na), HEARTH_OK);
    CHECK_EQ(hearth_tok_encode(t, text, 20, true, false, &b, &nb), HEARTH_OK);
    CHECK(na == nb && a && b && !memcmp(a, b, na * sizeof *a));
    free(a);
    free(b);
    /* ranges out of order or past the end */
    const size_t bad1[] = {6, 9, 2, 4}, bad2[] = {3, 2}, bad3[] = {0, 21};
    CHECK_EQ(hearth_tok_encode_plain(t, text, 20, false, bad1, 2, &a, &na), HEARTH_E_INVALID);
    CHECK_EQ(hearth_tok_encode_plain(t, text, 20, false, bad2, 1, &a, &na), HEARTH_E_INVALID);
    CHECK_EQ(hearth_tok_encode_plain(t, text, 20, false, bad3, 1, &a, &na), HEARTH_E_INVALID);
    CHECK(a == NULL && na == 0);
    hearth_tok_destroy(t);
    free(v);
}

TEST(eog_detection) {
    vocab_b *v = vb_bytelevel();
    int32_t eot = vb_add(v, "<|endoftext|>", 0, HEARTH_TOKTYPE_CONTROL);
    int32_t ims = vb_add(v, "<|im_start|>", 0, HEARTH_TOKTYPE_CONTROL);
    int32_t ime = vb_add(v, "<|im_end|>", 0, HEARTH_TOKTYPE_NORMAL); /* mistyped in the vocab */
    int32_t eos = vb_add(v, "</done>", 0, HEARTH_TOKTYPE_CONTROL);
    hearth_tok_spec s = vb_spec(v, HEARTH_TOK_BPE_BYTES);
    s.eos_id = eos;
    hearth_log_level lvl = hearth_log_get_level();
    hearth_log_set_level(HEARTH_LOG_ERROR); /* the promotion of <|im_end|> warns */
    hearth_tok *t = vb_build(s);
    hearth_log_set_level(lvl);
    CHECK(hearth_tok_is_eog(t, eot));
    CHECK(hearth_tok_is_eog(t, ime));
    CHECK(hearth_tok_is_eog(t, eos));
    CHECK(!hearth_tok_is_eog(t, ims));
    CHECK(!hearth_tok_is_eog(t, 'a'));
    CHECK(!hearth_tok_is_eog(t, -1));
    CHECK(hearth_tok_is_control(t, ime)); /* promoted, as llama.cpp does */
    ENC_EQ(t, "<|im_end|>", false, true, ime);
    CHECK_EQ(hearth_tok_eos(t), eos);
    CHECK_EQ(hearth_tok_bos(t), -1);
    CHECK_EQ(hearth_tok_n_vocab(t), v->n);
    hearth_tok_destroy(t);
    free(v);
}

/* Fill-in-the-middle ids: the spec's (the GGUF keys) win, absent kinds are found by name
 * (DeepSeek's and CodeLlama's spellings here), a name found that was not control becomes one. */
TEST(fim_tokens_by_key_then_name) {
    vocab_b *v = vb_bytelevel();
    int32_t beg = vb_add(v, "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>", 0, HEARTH_TOKTYPE_CONTROL);
    int32_t hole = vb_add(v, "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "hole\xEF\xBD\x9C>", 0, HEARTH_TOKTYPE_CONTROL);
    int32_t mid = vb_add(v, "\xE2\x96\x81<MID>", 0, HEARTH_TOKTYPE_NORMAL); /* CodeLlama's, mistyped */
    int32_t pad = vb_add(v, "<PAD>", 0, HEARTH_TOKTYPE_CONTROL);
    int32_t mine = vb_add(v, "<my_sep>", 0, HEARTH_TOKTYPE_CONTROL);
    hearth_tok_spec s = vb_spec(v, HEARTH_TOK_BPE_BYTES);
    int32_t given[HEARTH_TOK_FIM_COUNT] = {-1, -1, -1, -1, 1 << 20 /* out of range: ignored */, mine};
    s.fim_ids = given;
    hearth_tok *t = vb_build(s);
    CHECK(t != NULL);
    if (!t) return;
    CHECK_EQ(hearth_tok_fim(t, HEARTH_TOK_FIM_PRE), beg);
    CHECK_EQ(hearth_tok_fim(t, HEARTH_TOK_FIM_SUF), hole);
    CHECK_EQ(hearth_tok_fim(t, HEARTH_TOK_FIM_MID), mid);
    CHECK_EQ(hearth_tok_fim(t, HEARTH_TOK_FIM_PAD), pad);
    CHECK_EQ(hearth_tok_fim(t, HEARTH_TOK_FIM_REP), -1);
    CHECK_EQ(hearth_tok_fim(t, HEARTH_TOK_FIM_SEP), mine);
    CHECK_EQ(hearth_tok_fim(t, HEARTH_TOK_FIM_COUNT), -1);
    CHECK(hearth_tok_is_control(t, mid));
    CHECK(hearth_tok_is_eog(t, mine) && hearth_tok_is_eog(t, pad) && !hearth_tok_is_eog(t, beg));
    hearth_tok_destroy(t);
    s.fim_ids = NULL; /* no keys: the file separator has no known name here */
    t = vb_build(s);
    CHECK(t != NULL);
    if (t) {
        CHECK_EQ(hearth_tok_fim(t, HEARTH_TOK_FIM_SEP), -1);
        CHECK_EQ(hearth_tok_fim(t, HEARTH_TOK_FIM_PRE), beg);
    }
    hearth_tok_destroy(t);
    free(v);
}

/* llama.cpp 0.3.36's fix-ups of its end-of-generation set (llama-vocab.cpp, load). */
TEST(eog_fixups) {
    hearth_log_level lvl = hearth_log_get_level();
    hearth_log_set_level(HEARTH_LOG_ERROR);
    /* Solar Open: <|calls|> and <|flush|> with <|end|>: <|end|> is an ordinary token again */
    vocab_b *v = vb_bytelevel();
    int32_t end = vb_add(v, "<|end|>", 0, HEARTH_TOKTYPE_CONTROL);
    int32_t calls = vb_add(v, "<|calls|>", 0, HEARTH_TOKTYPE_CONTROL);
    int32_t flush = vb_add(v, "<|flush|>", 0, HEARTH_TOKTYPE_CONTROL);
    hearth_tok *t = vb_build(vb_spec(v, HEARTH_TOK_BPE_BYTES));
    CHECK(hearth_tok_is_eog(t, calls));
    CHECK(hearth_tok_is_eog(t, flush));
    CHECK(!hearth_tok_is_eog(t, end));
    hearth_tok_destroy(t);
    free(v);
    /* <|end|> with <|call|> alone stays an end (neither <|return|> nor <|flush|>) */
    v = vb_bytelevel();
    end = vb_add(v, "<|end|>", 0, HEARTH_TOKTYPE_CONTROL);
    vb_add(v, "<|call|>", 0, HEARTH_TOKTYPE_CONTROL);
    t = vb_build(vb_spec(v, HEARTH_TOK_BPE_BYTES));
    CHECK(hearth_tok_is_eog(t, end));
    hearth_tok_destroy(t);
    free(v);
    /* Gemma 4: <|tool_response> ends generation, </s> is a normal token */
    v = vb_bytelevel();
    int32_t s_end = vb_add(v, "</s>", 0, HEARTH_TOKTYPE_NORMAL);
    int32_t tr = vb_add(v, "<|tool_response>", 0, HEARTH_TOKTYPE_CONTROL);
    int32_t turn = vb_add(v, "<turn|>", 0, HEARTH_TOKTYPE_CONTROL);
    t = vb_build(vb_spec(v, HEARTH_TOK_BPE_BYTES));
    CHECK(hearth_tok_is_eog(t, tr));
    CHECK(hearth_tok_is_eog(t, turn));
    CHECK(!hearth_tok_is_eog(t, s_end));
    CHECK(!hearth_tok_is_control(t, s_end));
    hearth_tok_destroy(t);
    free(v);
    /* elsewhere </s> and [EOS] end generation and are promoted to control */
    v = vb_bytelevel();
    s_end = vb_add(v, "</s>", 0, HEARTH_TOKTYPE_NORMAL);
    int32_t keos = vb_add(v, "[EOS]", 0, HEARTH_TOKTYPE_CONTROL);
    t = vb_build(vb_spec(v, HEARTH_TOK_BPE_BYTES));
    CHECK(hearth_tok_is_eog(t, s_end));
    CHECK(hearth_tok_is_control(t, s_end));
    CHECK(hearth_tok_is_eog(t, keos));
    hearth_tok_destroy(t);
    free(v);
    hearth_log_set_level(lvl);
}

TEST(huge_runs_stay_linear) {
    /* Gemma-like user-defined runs of 2..31 spaces over a 1 MiB run of spaces */
    vocab_b *v = vb_spm();
    int32_t sp = vb_add(v, "\xE2\x96\x81", -1, 1), run31 = -1;
    char spaces[32];
    for (int k = 2; k <= 31; k++) {
        memset(spaces, ' ', (size_t)k);
        spaces[k] = 0;
        run31 = vb_add(v, spaces, 0, HEARTH_TOKTYPE_USER_DEFINED);
    }
    hearth_tok *t = vb_build(vb_spec(v, HEARTH_TOK_SPM));
    size_t n = (size_t)1 << 20;
    char *text = malloc(n);
    memset(text, ' ', n);
    int32_t *ids;
    size_t k;
    clock_t c0 = clock();
    CHECK_EQ(hearth_tok_encode(t, text, n, false, false, &ids, &k), HEARTH_OK);
    fprintf(stderr, "  1 MiB of spaces: %.1f ms\n", (double)(clock() - c0) * 1e3 / CLOCKS_PER_SEC);
    CHECK_EQ(k, n / 31 + 1); /* 33825 x 31 spaces, then one space as U+2581 */
    CHECK_EQ(ids[0], run31);
    CHECK_EQ(ids[k - 2], run31);
    CHECK_EQ(ids[k - 1], sp);
    free(ids);
    hearth_tok_destroy(t);
    free(v);

    /* one regex piece over a 1 MiB run of one class, for each class (JIT stack, backtracking) */
    const char *pres[] = {"gpt2", "llama3", "qwen2", "smollm"};
    const char fills[] = {'a', ' ', '!', '\n'};
    tok_vec b = {0};
    for (size_t i = 0; i < 4; i++) {
        tok_pretok *p;
        bool im;
        CHECK_EQ(tok_pretok_create(pres[i], &p, &im, NULL), HEARTH_OK);
        for (size_t j = 0; j < 4; j++) {
            memset(text, fills[j], n);
            b.n = 0;
            CHECK(tok_pretok_split(p, text, n, &b));
            CHECK_EQ(b.n, 2);
        }
        tok_pretok_destroy(p);
    }
    tok_vec_free(&b);
    free(text);
}

/* ---------------------------------------------------------------- streaming decoder */

TEST(decoder_holds_back_split_utf8) {
    vocab_b *v = vb_spm();
    int32_t a = vb_add(v, "A", -1, 1);
    hearth_tok *t = vb_build(vb_spec(v, HEARTH_TOK_SPM));
    int32_t euro[] = {SPM_BYTE(0xE2), SPM_BYTE(0x82), SPM_BYTE(0xAC)};
    ENC_EQ(t, "\xE2\x82\xAC", false, false, euro[0], euro[1], euro[2]);
    hearth_tok_decoder d;
    char out[80];
    hearth_tok_decoder_init(&d, t, false);
    CHECK_EQ(hearth_tok_decoder_push(&d, euro[0], out, sizeof out), 0);
    CHECK_EQ(hearth_tok_decoder_push(&d, euro[1], out, sizeof out), 0);
    CHECK_EQ(hearth_tok_decoder_push(&d, euro[2], out, sizeof out), 3);
    CHECK_STR(out, "\xE2\x82\xAC");
    CHECK_EQ(hearth_tok_decoder_flush(&d, out, sizeof out), 0);

    /* a lead byte followed by a non-continuation: released with what follows */
    CHECK_EQ(hearth_tok_decoder_push(&d, euro[0], out, sizeof out), 0);
    CHECK_EQ(hearth_tok_decoder_push(&d, a, out, sizeof out), 2);
    CHECK_STR(out, "\xE2" "A");
    /* an impossible second byte (E0 80 is overlong) is not held */
    CHECK_EQ(hearth_tok_decoder_push(&d, SPM_BYTE(0xE0), out, sizeof out), 0);
    CHECK_EQ(hearth_tok_decoder_push(&d, SPM_BYTE(0x80), out, sizeof out), 2);
    /* a stream that ends inside a character: flush releases the bytes as they are */
    CHECK_EQ(hearth_tok_decoder_push(&d, euro[0], out, sizeof out), 0);
    CHECK_EQ(hearth_tok_decoder_push(&d, euro[1], out, sizeof out), 0);
    CHECK_EQ(hearth_tok_decoder_push(&d, euro[1], out, 2), -1); /* too small: nothing changes */
    CHECK_EQ(hearth_tok_decoder_flush(&d, out, sizeof out), 2);
    CHECK(memcmp(out, "\xE2\x82", 3) == 0);
    /* a 4-byte character over four tokens */
    const uint8_t smile[] = {0xF0, 0x9F, 0x98, 0x80};
    for (int i = 0; i < 4; i++)
        CHECK_EQ(hearth_tok_decoder_push(&d, SPM_BYTE(smile[i]), out, sizeof out), i == 3 ? 4 : 0);
    CHECK(memcmp(out, smile, 4) == 0);
    hearth_tok_destroy(t);
    free(v);
}

/* ---------------------------------------------------------------- build errors */

TEST(create_errors_name_the_culprit) {
    hearth_err e;
    hearth_tok *t = (hearth_tok *)1;
    vocab_b *v = vb_bytelevel();
    vb_add(v, "dup", 0, 1);
    vb_add(v, "dup", 0, 1);
    hearth_tok_spec s = vb_spec(v, HEARTH_TOK_BPE_BYTES);
    CHECK_EQ(hearth_tok_create(&s, &t, &e), HEARTH_E_FORMAT);
    CHECK(t == NULL);
    CHECK(strstr(e.msg, "'dup'") != NULL);
    v->n--;
    vb_merge(v, "nospace");
    s = vb_spec(v, HEARTH_TOK_BPE_BYTES);
    CHECK_EQ(hearth_tok_create(&s, &t, &e), HEARTH_E_FORMAT);
    CHECK(strstr(e.msg, "nospace") != NULL);
    v->n_merges = 0;
    s = vb_spec(v, HEARTH_TOK_BPE_BYTES);
    s.pre = "mystery-pre";
    CHECK_EQ(hearth_tok_create(&s, &t, &e), HEARTH_E_UNSUPPORTED);
    CHECK(strstr(e.msg, "mystery-pre") != NULL);
    s = vb_spec(v, HEARTH_TOK_BPE_BYTES);
    s.add_bos = true;
    CHECK_EQ(hearth_tok_create(&s, &t, &e), HEARTH_E_FORMAT);
    s = vb_spec(v, HEARTH_TOK_SPM);
    s.scores = NULL;
    CHECK_EQ(hearth_tok_create(&s, &t, &e), HEARTH_E_FORMAT);
    hearth_tok_destroy(NULL);
    free(v);
}

/* ---------------------------------------------------------------- threads */

typedef struct {
    const hearth_tok *tok;
    const char       *text;
    size_t            n;
    uint64_t          sum; /* checksum of 50 encodes */
} enc_job;

static void *enc_thread(void *arg) {
    enc_job *j = arg;
    for (int r = 0; r < 50; r++) {
        int32_t *ids;
        size_t k;
        if (hearth_tok_encode(j->tok, j->text, j->n, true, true, &ids, &k)) return NULL;
        for (size_t i = 0; i < k; i++) j->sum = j->sum * 31 + (uint32_t)ids[i];
        free(ids);
    }
    return NULL;
}

TEST(encode_from_many_threads) {
    vocab_b *v = vb_bytelevel();
    vb_add(v, "ab", 0, 1);
    vb_add(v, "<|x|>", 0, HEARTH_TOKTYPE_CONTROL);
    vb_merge(v, "a b");
    hearth_tok *t = vb_build(vb_spec(v, HEARTH_TOK_BPE_BYTES));
    const char *text = "ab abab <|x|> 12345 caf\xC3\xA9 \xFF!!  \n\n tail's";
    enc_job jobs[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (enc_job){t, text, strlen(text), 0};
        CHECK_EQ(pthread_create(&th[i], NULL, enc_thread, &jobs[i]), 0);
    }
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    CHECK(jobs[0].sum != 0);
    for (int i = 1; i < 4; i++) CHECK(jobs[i].sum == jobs[0].sum);
    hearth_tok_destroy(t);
    free(v);
}

/* ---------------------------------------------------------------- GGUF front end */

/* A minimal GGUF v3 image writer: key/values only, no tensors (the front end reads none). */
typedef struct {
    uint8_t *p;
    size_t   n, cap;
    uint64_t n_kv;
} mini_gguf;

static void mg_put(mini_gguf *w, const void *s, size_t n) {
    if (w->n + n > w->cap) {
        w->cap = (w->n + n) * 2 + 256;
        w->p = realloc(w->p, w->cap);
    }
    memcpy(w->p + w->n, s, n);
    w->n += n;
}
static void mg_u32v(mini_gguf *w, uint32_t v) { mg_put(w, &v, 4); }
static void mg_strv(mini_gguf *w, const char *s) {
    uint64_t n = strlen(s);
    mg_put(w, &n, 8);
    mg_put(w, s, n);
}
static void mg_key(mini_gguf *w, const char *k, uint32_t type) {
    mg_strv(w, k);
    mg_u32v(w, type);
    w->n_kv++;
}
static void mg_str(mini_gguf *w, const char *k, const char *v) {
    mg_key(w, k, HEARTH_GGUF_STRING);
    mg_strv(w, v);
}
static void mg_u32(mini_gguf *w, const char *k, uint32_t v) {
    mg_key(w, k, HEARTH_GGUF_UINT32);
    mg_u32v(w, v);
}
static void mg_bool(mini_gguf *w, const char *k, bool v) {
    uint8_t b = v;
    mg_key(w, k, HEARTH_GGUF_BOOL);
    mg_put(w, &b, 1);
}
static void mg_arr_str(mini_gguf *w, const char *k, const char *const *v, uint64_t n) {
    mg_key(w, k, HEARTH_GGUF_ARRAY);
    mg_u32v(w, HEARTH_GGUF_STRING);
    mg_put(w, &n, 8);
    for (uint64_t i = 0; i < n; i++) mg_strv(w, v[i]);
}
static void mg_arr_4(mini_gguf *w, const char *k, uint32_t et, const void *v, uint64_t n) {
    mg_key(w, k, HEARTH_GGUF_ARRAY);
    mg_u32v(w, et);
    mg_put(w, &n, 8);
    mg_put(w, v, 4 * n);
}
/* the image, padded to the default alignment; caller frees */
static uint8_t *mg_finish(mini_gguf *w, size_t *n) {
    mini_gguf out = {0};
    uint64_t zero = 0;
    mg_put(&out, "GGUF", 4);
    mg_u32v(&out, 3);
    mg_put(&out, &zero, 8);
    mg_put(&out, &w->n_kv, 8);
    mg_put(&out, w->p, w->n);
    while (out.n % 32) mg_put(&out, "", 1);
    free(w->p);
    *n = out.n;
    return out.p;
}

static hearth_status tok_of(mini_gguf *w, hearth_tok **t, hearth_err *e) {
    size_t n;
    uint8_t *img = mg_finish(w, &n);
    hearth_gguf *g = NULL;
    hearth_status st = hearth_gguf_open_mem(img, n, &g, e);
    if (st == HEARTH_OK) st = hearth_tok_from_gguf(g, t, e);
    hearth_gguf_close(g);
    free(img);
    return st;
}

static const char *const spm_toks[] = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "h", "i",
                                       "\xE2\x96\x81h", "\xE2\x96\x81hi", "<end_of_turn>"};

static void spm_keys(mini_gguf *w, bool scores) {
    const float sc[9] = {0, 0, 0, -1, -2, -2, -3, -1, 0};
    const int32_t ty[9] = {2, 3, 3, 1, 1, 1, 1, 1, 3};
    mg_str(w, "tokenizer.ggml.model", "llama");
    mg_arr_str(w, "tokenizer.ggml.tokens", spm_toks, 9);
    if (scores) mg_arr_4(w, "tokenizer.ggml.scores", HEARTH_GGUF_FLOAT32, sc, 9);
    mg_arr_4(w, "tokenizer.ggml.token_type", HEARTH_GGUF_INT32, ty, 9);
}

TEST(gguf_front_end_defaults) {
    hearth_tok *t = NULL;
    hearth_err e;
    mini_gguf w = {0};
    spm_keys(&w, true); /* no ids, no add_* keys: llama.cpp's SPM defaults */
    CHECK_EQ(tok_of(&w, &t, &e), HEARTH_OK);
    if (!t) return;
    CHECK_EQ(hearth_tok_bos(t), 1);
    CHECK_EQ(hearth_tok_eos(t), 2);
    ENC_EQ(t, "hi", true, false, 1, 7); /* BOS, then "▁hi": add_space_prefix defaults on */
    CHECK(hearth_tok_is_eog(t, 2) && hearth_tok_is_eog(t, 8));
    char *d = hearth_tok_decode(t, (const int32_t[]){7, 7}, 2, false);
    CHECK_STR(d, "hi hi");
    free(d);
    hearth_tok_destroy(t);

    w = (mini_gguf){0};
    spm_keys(&w, true);
    mg_u32(&w, "tokenizer.ggml.bos_token_id", 8);
    mg_u32(&w, "tokenizer.ggml.eos_token_id", 99); /* out of range: keeps the default */
    mg_bool(&w, "tokenizer.ggml.add_space_prefix", false);
    mg_bool(&w, "tokenizer.ggml.add_eos_token", true);
    hearth_log_level lvl = hearth_log_get_level();
    hearth_log_set_level(HEARTH_LOG_ERROR);
    CHECK_EQ(tok_of(&w, &t, &e), HEARTH_OK);
    hearth_log_set_level(lvl);
    if (!t) return;
    CHECK_EQ(hearth_tok_eos(t), 2);
    ENC_EQ(t, "hi", true, false, 8, 4, 5, 2);
    hearth_tok_destroy(t);

    /* byte-level: "llama3" pre-tokenizers add BOS by default, others do not */
    const char *bl[] = {"a", "b", "ab", "<|begin_of_text|>"};
    const char *mg[] = {"a b"};
    for (int llama3 = 0; llama3 < 2; llama3++) {
        w = (mini_gguf){0};
        mg_str(&w, "tokenizer.ggml.model", "gpt2");
        mg_str(&w, "tokenizer.ggml.pre", llama3 ? "llama-bpe" : "smollm");
        mg_arr_str(&w, "tokenizer.ggml.tokens", bl, 4);
        mg_arr_str(&w, "tokenizer.ggml.merges", mg, 1);
        mg_u32(&w, "tokenizer.ggml.bos_token_id", 3);
        CHECK_EQ(tok_of(&w, &t, &e), HEARTH_OK);
        if (!t) return;
        if (llama3) {
            ENC_EQ(t, "ab", true, false, 3, 2);
        } else {
            ENC_EQ(t, "ab", true, false, 2);
        }
        hearth_tok_destroy(t);
    }
}

/* tokenizer.ggml.model "t5" (model/tok_gguf_ugm.c): a Unigram vocabulary with scores. With no
 * add_* keys it follows llama.cpp's UGM defaults (EOS at the end, no BOS); the space prefix and
 * remove_extra_whitespaces make runs of spaces and the ends' spaces change nothing; the best
 * segmentation by score wins; a missing scores array is an error naming it. */
TEST(gguf_unigram_t5) {
    static const char *const toks[] = {"<s>", "<pad>", "</s>", "<unk>", "\xE2\x96\x81", "h", "i",
                                       "\xE2\x96\x81h", "\xE2\x96\x81hi"};
    const float sc[9] = {0, 0, 0, 0, -3, -4, -4, -3, -1};
    const int32_t ty[9] = {3, 3, 3, 2, 1, 1, 1, 1, 1};
    hearth_tok *t = NULL;
    hearth_err e;
    for (int with_scores = 1; with_scores >= 0; with_scores--) {
        mini_gguf w = {0};
        mg_str(&w, "tokenizer.ggml.model", "t5");
        mg_arr_str(&w, "tokenizer.ggml.tokens", toks, 9);
        if (with_scores) mg_arr_4(&w, "tokenizer.ggml.scores", HEARTH_GGUF_FLOAT32, sc, 9);
        mg_arr_4(&w, "tokenizer.ggml.token_type", HEARTH_GGUF_INT32, ty, 9);
        mg_u32(&w, "tokenizer.ggml.bos_token_id", 0);
        mg_u32(&w, "tokenizer.ggml.eos_token_id", 2);
        hearth_status st = tok_of(&w, &t, &e);
        if (!with_scores) {
            CHECK(st != HEARTH_OK && t == NULL);
            CHECK(strstr(e.msg, "tokenizer.ggml.scores") != NULL);
            break;
        }
        CHECK_EQ(st, HEARTH_OK);
        if (!t) return;
        int32_t *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        CHECK_EQ(hearth_tok_encode(t, "hi hi", 5, true, false, &a, &na), HEARTH_OK);
        CHECK_EQ(hearth_tok_encode(t, "  hi    hi ", 11, true, false, &b, &nb), HEARTH_OK);
        CHECK(na == nb && a && b && !memcmp(a, b, na * sizeof *a));
        CHECK(na >= 2 && a[0] != 0 && a[na - 1] == 2); /* no BOS, EOS last */
        CHECK(na == 3 && a[0] == 8 && a[1] == 8);      /* "\u2581hi" (score -1) beats "\u2581h" + "i" */
        free(a);
        free(b);
        hearth_tok_destroy(t);
        t = NULL;
    }
}

TEST(gguf_front_end_errors) {
    hearth_tok *t = NULL;
    hearth_err e;
    mini_gguf w = {0};
    hearth_log_level lvl = hearth_log_get_level();
    hearth_log_set_level(HEARTH_LOG_ERROR); /* "no tokenizer.ggml.pre" warns */
    mg_str(&w, "general.architecture", "llama");
    CHECK_EQ(tok_of(&w, &t, &e), HEARTH_E_FORMAT); /* no tokenizer.ggml.model */
    CHECK(strstr(e.msg, "tokenizer.ggml.model") != NULL);

    w = (mini_gguf){0};
    mg_str(&w, "tokenizer.ggml.model", "rwkv");
    CHECK_EQ(tok_of(&w, &t, &e), HEARTH_E_UNSUPPORTED);
    CHECK(strstr(e.msg, "rwkv") != NULL);

    w = (mini_gguf){0}; /* WordPiece (model/tok_gguf_wpm.c) without its vocabulary */
    mg_str(&w, "tokenizer.ggml.model", "bert");
    CHECK_EQ(tok_of(&w, &t, &e), HEARTH_E_FORMAT);
    CHECK(strstr(e.msg, "tokenizer.ggml.tokens") != NULL);

    const char *bl[] = {"a", "b"};
    w = (mini_gguf){0};
    mg_str(&w, "tokenizer.ggml.model", "gpt2");
    mg_str(&w, "tokenizer.ggml.pre", "some-new-pre");
    mg_arr_str(&w, "tokenizer.ggml.tokens", bl, 2);
    mg_arr_str(&w, "tokenizer.ggml.merges", bl, 0);
    CHECK_EQ(tok_of(&w, &t, &e), HEARTH_E_UNSUPPORTED);
    CHECK(strstr(e.msg, "some-new-pre") != NULL);

    w = (mini_gguf){0}; /* byte-level without merges */
    mg_str(&w, "tokenizer.ggml.model", "gpt2");
    mg_arr_str(&w, "tokenizer.ggml.tokens", bl, 2);
    CHECK_EQ(tok_of(&w, &t, &e), HEARTH_E_FORMAT);
    CHECK(strstr(e.msg, "merges") != NULL);

    w = (mini_gguf){0}; /* scores shorter than the token list */
    const float sc[2] = {0, 0};
    mg_str(&w, "tokenizer.ggml.model", "llama");
    mg_arr_str(&w, "tokenizer.ggml.tokens", spm_toks, 9);
    mg_arr_4(&w, "tokenizer.ggml.scores", HEARTH_GGUF_FLOAT32, sc, 2);
    CHECK_EQ(tok_of(&w, &t, &e), HEARTH_E_FORMAT);
    CHECK(strstr(e.msg, "scores") != NULL);

    w = (mini_gguf){0}; /* tokens that are not strings */
    mg_str(&w, "tokenizer.ggml.model", "llama");
    mg_arr_4(&w, "tokenizer.ggml.tokens", HEARTH_GGUF_FLOAT32, sc, 2);
    CHECK_EQ(tok_of(&w, &t, &e), HEARTH_E_FORMAT);
    CHECK(t == NULL);
    hearth_log_set_level(lvl);
}

/* ---------------------------------------------------------------- llama.cpp goldens */

static uint64_t fnv(const void *p, size_t n, uint64_t h) {
    const uint8_t *s = p;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}
#define FNV0 0xcbf29ce484222325ull

static size_t unhex(const char *h, size_t n, char *out) {
    size_t k = 0;
    for (size_t i = 0; i + 1 < n; i += 2) {
        unsigned v;
        sscanf(h + i, "%2x", &v);
        out[k++] = (char)v;
    }
    return k;
}

typedef struct {
    int n_enc, bad_enc, n_dec, bad_dec, bad_stream, n_lines, bad_lines;
} golden_stats;

static void golden_model(const char *env, const char *golden) {
    const char *path = getenv(env);
    if (!path || !*path) TEST_SKIP("model path not set");
    size_t n_corpus = 0, n_gold = 0;
    char *corpus = golden_slurp("tests/golden/tok/corpus.txt", &n_corpus);
    char *gold = golden_slurp(golden, &n_gold);
    CHECK(corpus && gold);
    if (!corpus || !gold) return;
    hearth_gguf *g = NULL;
    hearth_tok *t = NULL;
    hearth_err e;
    CHECK_EQ(hearth_gguf_open(path, &g, &e), HEARTH_OK);
    if (!g) return;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_EQ(hearth_tok_from_gguf(g, &t, &e), HEARTH_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (!t) {
        fprintf(stderr, "  %s\n", e.msg);
        hearth_gguf_close(g);
        return;
    }
    double load_ms =
        (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;

    golden_stats st = {0};
    char *text = malloc(n_gold), *want = malloc(n_gold), *sbuf = malloc(n_gold + 4096);
    size_t text_n = 0, cap = 64 + hearth_tok_max_piece(t);
    char *piece = malloc(cap);
    int32_t *ids[2][2] = {{NULL, NULL}, {NULL, NULL}};
    size_t n_ids[2][2] = {{0}};
    bool is_line = false;
    for (char *line = gold; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        char *next = nl ? nl + 1 : NULL;
        char kw[16] = "";
        int off = 0;
        sscanf(line, "%15s %n", kw, &off);
        char *rest = line + off;
        if (!strcmp(kw, "corpus_fnv")) {
            unsigned long long h = strtoull(rest, NULL, 16);
            /* a stale golden: regenerate it after editing corpus.txt */
            CHECK(h == fnv(corpus, n_corpus, FNV0));
        } else if (!strcmp(kw, "vocab")) {
            int nv, bos, eos, add;
            sscanf(rest, "%d bos %d eos %d add_bos %d", &nv, &bos, &eos, &add);
            CHECK_EQ(hearth_tok_n_vocab(t), nv);
            CHECK_EQ(hearth_tok_bos(t), bos);
            CHECK_EQ(hearth_tok_eos(t), eos);
        } else if (!strcmp(kw, "eog")) {
            char *p = rest;
            long k = strtol(p, &p, 10), found = 0;
            for (long i = 0; i < k; i++) CHECK(hearth_tok_is_eog(t, (int32_t)strtol(p, &p, 10)));
            for (int32_t id = 0; id < hearth_tok_n_vocab(t); id++)
                found += hearth_tok_is_eog(t, id);
            CHECK_EQ(found, k);
        } else if (!strcmp(kw, "control")) {
            char *p = rest;
            long k = strtol(p, &p, 10), found = 0;
            uint64_t h = FNV0;
            for (int32_t id = 0; id < hearth_tok_n_vocab(t); id++)
                if (hearth_tok_is_control(t, id)) {
                    found++;
                    h = fnv(&id, 4, h);
                }
            CHECK_EQ(found, k);
            CHECK(h == strtoull(p, NULL, 16));
        } else if (!strcmp(kw, "pieces")) {
            char *p = rest;
            int sp = (int)strtol(p, &p, 10);
            uint64_t h = FNV0;
            for (int32_t id = 0; id < hearth_tok_n_vocab(t); id++) {
                hearth_span s = hearth_tok_piece(t, id, sp);
                uint32_t len = (uint32_t)s.len;
                h = fnv(s.ptr, s.len, fnv(&len, 4, h));
            }
            CHECK(h == strtoull(p, NULL, 16));
        } else if (!strcmp(kw, "case")) {
            for (int a = 0; a < 2; a++)
                for (int p = 0; p < 2; p++) {
                    free(ids[a][p]);
                    ids[a][p] = NULL;
                }
            if (!strncmp(rest, "span ", 5)) {
                long o, n;
                sscanf(rest + 5, "%ld %ld", &o, &n);
                memcpy(text, corpus + o, (size_t)n);
                text_n = (size_t)n;
                is_line = memchr(text, '\n', text_n) == NULL;
                st.n_lines += is_line;
            } else { /* "hex HEX"; the field is absent for the empty string */
                text_n = strlen(rest) > 4 ? unhex(rest + 4, strlen(rest + 4), text) : 0;
                is_line = false;
            }
        } else if (!strcmp(kw, "enc")) {
            char *p = rest;
            int a = (int)strtol(p, &p, 10), ps = (int)strtol(p, &p, 10);
            long k = strtol(p, &p, 10);
            CHECK_EQ(hearth_tok_encode(t, text, text_n, a, ps, &ids[a][ps], &n_ids[a][ps]),
                     HEARTH_OK);
            bool same = (long)n_ids[a][ps] == k;
            for (long i = 0; same && i < k; i++) same = ids[a][ps][i] == (int32_t)strtol(p, &p, 10);
            st.n_enc++;
            if (!same) {
                if (st.bad_enc++ < 5)
                    fprintf(stderr, "  ids differ (add %d parse %d) for \"%.*s\"\n", a, ps,
                            (int)(text_n > 120 ? 120 : text_n), text);
                if (is_line) st.bad_lines++;
            }
        } else if (!strcmp(kw, "dec")) {
            char *p = rest;
            int a = (int)strtol(p, &p, 10), ps = (int)strtol(p, &p, 10);
            int sp = (int)strtol(p, &p, 10);
            while (*p == ' ') p++;
            size_t wn = unhex(p, strlen(p), want);
            char *d = hearth_tok_decode(t, ids[a][ps], n_ids[a][ps], sp);
            st.n_dec++;
            if (!d || strlen(d) != wn || memcmp(d, want, wn)) {
                if (st.bad_dec++ < 5)
                    fprintf(stderr, "  decode differs: \"%s\" vs \"%.*s\"\n", d ? d : "(null)",
                            (int)wn, want);
            }
            /* the streaming decoder, token by token, gives decode()'s bytes */
            hearth_tok_decoder dc;
            hearth_tok_decoder_init(&dc, t, sp);
            size_t sn = 0;
            for (size_t i = 0; i < n_ids[a][ps]; i++) {
                int r = hearth_tok_decoder_push(&dc, ids[a][ps][i], piece, cap);
                CHECK(r >= 0);
                if (r > 0) memcpy(sbuf + sn, piece, (size_t)r), sn += (size_t)r;
            }
            int r = hearth_tok_decoder_flush(&dc, piece, cap);
            if (r > 0) memcpy(sbuf + sn, piece, (size_t)r), sn += (size_t)r;
            if (!d || sn != strlen(d) || memcmp(sbuf, d, sn)) st.bad_stream++;
            free(d);
        }
        line = next;
    }
    for (int a = 0; a < 2; a++)
        for (int p = 0; p < 2; p++) free(ids[a][p]);
    CHECK_EQ(st.bad_enc, 0);
    CHECK_EQ(st.bad_dec, 0);
    CHECK_EQ(st.bad_stream, 0);
    CHECK(st.n_enc > 1000);
    fprintf(stderr, "  load %.1f ms; lines identical in every mode: %d/%d; encodes %d/%d; "
            "decodes %d/%d; streamed %d/%d\n", load_ms, st.n_lines - st.bad_lines, st.n_lines,
            st.n_enc - st.bad_enc, st.n_enc, st.n_dec - st.bad_dec, st.n_dec,
            st.n_dec - st.bad_stream, st.n_dec);
    free(text);
    free(want);
    free(sbuf);
    free(piece);
    free(corpus);
    free(gold);
    hearth_tok_destroy(t);
    hearth_gguf_close(g);
}

TEST(golden_smollm2) { golden_model("HEARTH_SMOLLM2_GGUF", "tests/golden/tok/smollm2.txt"); }
TEST(golden_gemma3) { golden_model("HEARTH_GEMMA3_GGUF", "tests/golden/tok/gemma3.txt"); }

int main(int argc, char **argv) { return test_main(argc, argv); }
