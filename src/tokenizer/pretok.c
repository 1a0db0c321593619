/*
 * pretok.c - byte-level BPE pre-tokenizers: the regexes llama.cpp applies for each
 * `tokenizer.ggml.pre` name, compiled once with PCRE2 (UTF + UCP, JIT when available).
 *
 * A pre-tokenizer is a list of regexes applied in sequence (llama.cpp unicode_regex_split):
 *
 *     text ──re[0]──> pieces ──re[1]──> finer pieces ── ... ──> words for BPE
 *
 * Each regex runs on every current piece on its own (the piece is the whole subject, so a
 * lookahead such as \s+(?!\S) sees the piece's end as the end of text); both its matches and
 * the unmatched gaps between them become the next pieces, in order. "smollm", for instance,
 * first isolates every \p{N} digit, then applies GPT-2's regex inside each piece.
 *
 * The patterns are written out here from the tokenizer definitions they implement (GPT-2's,
 * Llama 3's and Qwen2's tokenizer.json pre-tokenizer regexes; the digit/punctuation splits of
 * llama.cpp's "default" and DeepSeek lists). Where llama.cpp departs from textbook regex
 * semantics we follow llama.cpp, since hearth must give the ids the model was run with:
 *   - \s is Unicode White_Space (U+0009..U+000D, U+0020, U+0085, U+00A0, U+1680,
 *     U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000), spelled out as WS below
 *     because PCRE2's \s leaves out U+0085;
 *   - llama.cpp's GPT-2 splitter also takes whitespace runs that the original pattern leaves
 *     unmatched (it ends with \s+ as Llama 3's does), so we add that alternative.
 * Differences that remain (documented, not hidden): Unicode tables (PCRE2 10.42 is Unicode 14,
 * llama.cpp ships its own newer tables, so a code point assigned after Unicode 14 may split
 * differently), and llama.cpp's "collapsed" classes not counting '~' as \p{S} (DeepSeek-V3).
 *
 * Thread rule: immutable after create; tok_pretok_split may run on any thread (it allocates
 * its own match data).
 */
#include "tokenizer/tok_internal.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

#define WS                                                                          \
    "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}" \
    "\\x{3000}"
#define S_ "[" WS "]"
#define NS_ "[^" WS "]"

/* GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
#define RE_GPT2                                                                 \
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+|" S_ \
    "+(?!" NS_ ")|" S_ "+"

/* Llama 3 (case-insensitive contractions spelled out), Qwen2 differs only in \p{N}. */
#define RE_LLAMA3_LIKE(NUM)                                                      \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"                  \
    "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|" NUM "| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n]*|" S_ \
    "*[\\r\\n]+|" S_ "+(?!" NS_ ")|" S_ "+"

#define MAX_RE 6

typedef struct {
    const char *names;          /* NUL-separated list, double-NUL terminated */
    bool        ignore_merges;
    const char *re[MAX_RE];     /* NULL-terminated */
} pre_def;

static const pre_def pre_defs[] = {
    {"gpt2\0gpt-2\0phi-2\0mpt\0olmo\0jais\0exaone4\0trillion\0granite-docling\0roberta-bpe\0modern-bert\0", false,
     {RE_GPT2, NULL}},
    {"smollm\0starcoder\0refact\0command-r\0codeshell\0exaone\0minerva-7b\0", false,
     {"\\p{N}", RE_GPT2, NULL}},
    {"llama3\0llama-v3\0llama-bpe\0falcon3\0falcon-h1\0pixtral\0midm-2.0\0lfm2\0", true,
     {RE_LLAMA3_LIKE("\\p{N}{1,3}"), NULL}},
    {"dbrx\0smaug-bpe\0", false, {RE_LLAMA3_LIKE("\\p{N}{1,3}"), NULL}},
    {"qwen2\0deepseek-r1-qwen\0megrez\0stablelm2\0", false, {RE_LLAMA3_LIKE("\\p{N}"), NULL}},
    {"default\0", false,
     {"[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]", NULL}},
    {"deepseek-coder\0", false,
     {"[\\r\\n]", S_ "?\\p{L}+", S_ "?\\p{P}+",
      "[\\x{4E00}-\\x{9FA5}\\x{0800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+", "\\p{N}", NULL}},
    {"deepseek-v3\0", false,
     {"\\p{N}{1,3}", "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+"
      "|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|" S_ "*[\\r\\n]+|" S_
      "+(?!" NS_ ")|" S_ "+",
      NULL}},
};

struct tok_pretok {
    int         n_re;
    pcre2_code *re[MAX_RE];  /* owned */
    bool        jit[MAX_RE]; /* JIT-compiled */
};

static const pre_def *find_def(const char *name) {
    for (size_t i = 0; i < sizeof pre_defs / sizeof pre_defs[0]; i++)
        for (const char *n = pre_defs[i].names; *n; n += strlen(n) + 1)
            if (strcmp(n, name) == 0) return &pre_defs[i];
    return NULL;
}

void tok_pretok_destroy(tok_pretok *p) {
    if (!p) return;
    for (int i = 0; i < p->n_re; i++) pcre2_code_free(p->re[i]);
    free(p);
}

hearth_status tok_pretok_create(const char *name, tok_pretok **out, bool *ignore_merges,
                                hearth_err *err) {
    *out = NULL;
    const pre_def *def = find_def(name);
    if (!def)
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1,
                              "unsupported pre-tokenizer '%s' (tokenizer.ggml.pre)", name);
    tok_pretok *p = calloc(1, sizeof *p);
    if (!p) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    for (int i = 0; i < MAX_RE && def->re[i]; i++) {
        int ecode;
        PCRE2_SIZE eoff;
        p->re[i] = pcre2_compile((PCRE2_SPTR)def->re[i], PCRE2_ZERO_TERMINATED,
                                 PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &ecode, &eoff, NULL);
        if (!p->re[i]) {
            /* a bug in the table above, not in the input */
            PCRE2_UCHAR msg[128];
            pcre2_get_error_message(ecode, msg, sizeof msg);
            tok_pretok_destroy(p);
            return hearth_err_set(err, HEARTH_E_INVALID, (int64_t)eoff,
                                  "pre-tokenizer '%s' regex %d: %s", name, i, (const char *)msg);
        }
        p->n_re = i + 1;
        p->jit[i] = pcre2_jit_compile(p->re[i], PCRE2_JIT_COMPLETE) == 0;
        if (!p->jit[i])
            hearth_log(HEARTH_LOG_DEBUG, "tokenizer: PCRE2 JIT unavailable for '%s'", name);
    }
    *ignore_merges = def->ignore_merges;
    *out = p;
    return HEARTH_OK;
}

static int run_match(const tok_pretok *p, int i, const char *subj, size_t len, size_t start,
                     pcre2_match_data *md) {
    int rc = PCRE2_ERROR_NOMATCH;
    if (p->jit[i]) {
        rc = pcre2_jit_match(p->re[i], (PCRE2_SPTR)subj, len, start, 0, md, NULL);
        if (rc >= 0 || rc == PCRE2_ERROR_NOMATCH) return rc;
        /* JIT stack exhausted on a pathological piece: the interpreter keeps its frames on
         * the heap, retry there. */
    }
    return pcre2_match(p->re[i], (PCRE2_SPTR)subj, len, start, PCRE2_NO_UTF_CHECK, md, NULL);
}

static bool push_pair(tok_vec *v, size_t s, size_t e) {
    return tok_vec_push(v, (int32_t)s) && tok_vec_push(v, (int32_t)e);
}

bool tok_pretok_split(const tok_pretok *p, const char *text, size_t n, tok_vec *bounds) {
    if (n > INT32_MAX) return false;
    tok_vec cur = {0}, next = {0};
    bool ok = false;
    pcre2_match_data *md = pcre2_match_data_create(4, NULL);
    if (!md || !tok_vec_push(&cur, 0) || !tok_vec_push(&cur, (int32_t)n)) goto done;
    for (int i = 0; i < p->n_re; i++) {
        next.n = 0;
        for (size_t k = 0; k < cur.n; k += 2) {
            size_t s = (size_t)cur.v[k], e = (size_t)cur.v[k + 1];
            size_t pos = s, gap = s;
            while (pos < e) {
                int rc = run_match(p, i, text + s, e - s, pos - s, md);
                if (rc < 0) break; /* no more matches (or a limit error: keep the rest whole) */
                const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
                size_t ms = s + ov[0], me = s + ov[1];
                if (me <= ms) { /* empty match: step over one character, it stays in the gap */
                    pos = ms + hearth_utf8_len_lead((uint8_t)text[ms]);
                    if (pos > e) pos = e;
                    continue;
                }
                if (ms > gap && !push_pair(&next, gap, ms)) goto done;
                if (!push_pair(&next, ms, me)) goto done;
                pos = gap = me;
            }
            if (gap < e && !push_pair(&next, gap, e)) goto done;
        }
        tok_vec t = cur;
        cur = next;
        next = t;
    }
    if (!tok_vec_reserve(bounds, bounds->n + cur.n)) goto done;
    memcpy(bounds->v + bounds->n, cur.v, cur.n * sizeof *cur.v);
    bounds->n += cur.n;
    ok = true;
done:
    pcre2_match_data_free(md);
    tok_vec_free(&cur);
    tok_vec_free(&next);
    return ok;
}
