/*
 * test_constrain_text.c - the regex and GBNF compilers (src/constrain/regex.c, gbnf.c) and
 * the code point sets under their character classes (charset.c).
 *
 * - accept / reject tables per construct (whole strings: every byte fits and the grammar can
 *   end there);
 * - malformed and unsupported input refused with its error code and a message that names
 *   the position;
 * - random walks through regex grammars, every string checked by the C library's POSIX
 *   extended regex engine (regcomp), an implementation independent of the compiler;
 * - code point classes against a per-code-point check of the set, over every code point.
 */
#include "base/utf8.h"
#include "constrain/charset.h"
#include "constrain/gbnf.h"
#include "constrain/matcher.h"
#include "constrain/regex.h"
#include "cx_walk.h"
#include "test.h"

#include <regex.h>

static hearth_status last_code;
static char          last_msg[300];

/* Compile text as a regex (gbnf false) or GBNF; NULL with last_code / last_msg on failure. */
static hearth_cx_grammar *compile(const char *text, bool gbnf) {
    hearth_cx_builder *b = hearth_cx_builder_create(hearth_cx_limits_default());
    int root = gbnf ? hearth_cx_gbnf(b, text, strlen(text)) : hearth_cx_regex(b, text, strlen(text));
    hearth_err err = {0};
    hearth_cx_grammar *g = hearth_cx_build(b, root < 0 ? 0 : root, &err);
    last_code = err.code;
    snprintf(last_msg, sizeof last_msg, "%s", err.msg);
    hearth_cx_builder_destroy(b);
    return g;
}

static bool matches(const char *text, bool gbnf, const char *s) {
    hearth_cx_matcher *m = hearth_cx_matcher_create(compile(text, gbnf), NULL);
    if (!m) return false;
    bool ok = hearth_cx_matcher_feed(m, s, strlen(s)) && hearth_cx_matcher_can_end(m);
    hearth_cx_matcher_destroy(m);
    return ok;
}

typedef struct {
    const char *text;
    const char *yes[8];
    const char *no[8];
} row;

static void run_table(const row *t, size_t n, bool gbnf) {
    for (size_t i = 0; i < n; i++) {
        hearth_cx_grammar *g = compile(t[i].text, gbnf);
        if (!g) fprintf(stderr, "  %s: %s\n", t[i].text, last_msg);
        CHECK(g != NULL);
        hearth_cx_grammar_destroy(g);
        for (int k = 0; k < 8 && t[i].yes[k]; k++)
            if (!matches(t[i].text, gbnf, t[i].yes[k])) {
                fprintf(stderr, "  %s should match '%s'\n", t[i].text, t[i].yes[k]);
                CHECK(0);
            }
        for (int k = 0; k < 8 && t[i].no[k]; k++)
            if (matches(t[i].text, gbnf, t[i].no[k])) {
                fprintf(stderr, "  %s should not match '%s'\n", t[i].text, t[i].no[k]);
                CHECK(0);
            }
    }
}

static const row REGEX[] = {
    {"abc", {"abc"}, {"ab", "abcd", "", "xabc"}},
    {"^a|b$", {"a", "b"}, {"ab", ""}},
    {"(yes|no|maybe)", {"yes", "no", "maybe"}, {"ye", "yesno", "Yes"}},
    {"[a-c]+x?", {"a", "abcx", "cc"}, {"x", "ad", ""}},
    {"[^0-9]{2}", {"ab", "\xc3\xa9z", "--"}, {"a1", "a", "abc"}},
    {"\\d{3}-\\d{4}", {"555-1234"}, {"55-1234", "5551234", "abc-defg"}},
    {"\\w+\\s\\w+", {"hello world", "a_1\tb"}, {"hello  world", "hello", "hé llo"}},
    {"\\D\\W\\S", {"a!x", "\xc3\xa9 \xe2\x82\xac"}, {"1!x", "aax", "a! "}},
    {"a.c", {"abc", "a\xe2\x82\xac" "c", "a c"}, {"a\nc", "ac"}},
    {"(?:ab){2,3}", {"abab", "ababab"}, {"ab", "abababab"}},
    {"x{2}y{,2}z{1,}", {"xxz", "xxyyzzz"}, {"xz", "xxyyyz", "xxyy"}},
    {"(?P<year>[0-9]{4})-(?<m>0[1-9]|1[0-2])", {"2024-01", "1999-12"}, {"2024-13", "2024-1"}},
    {"[\\]\\-a]+", {"]-a", "a"}, {"b"}},
    {"\\.\\*\\$\\\\", {".*$\\"}, {"a*$\\"}},
    {"caf\xc3\xa9|\\u00e9t\\xe9", {"caf\xc3\xa9", "\xc3\xa9t\xc3\xa9"}, {"cafe"}},
    {"a*?b+?", {"b", "aab"}, {"a", ""}},
    {"(a*)*b", {"b", "aaab"}, {"a"}},
    {"a{", {"a{"}, {"a"}},
    {"()|x", {"", "x"}, {"xx"}},
};

TEST(regex_accept_reject) { run_table(REGEX, sizeof REGEX / sizeof REGEX[0], false); }

static void refused(const char *text, bool gbnf, hearth_status code, const char *needle) {
    hearth_cx_grammar *g = compile(text, gbnf);
    CHECK(g == NULL);
    hearth_cx_grammar_destroy(g);
    if (last_code != code || !strstr(last_msg, needle)) {
        fprintf(stderr, "  '%s': got %d '%s', want %d with '%s'\n", text, last_code, last_msg, code, needle);
        CHECK(0);
    }
}

TEST(regex_refusals) {
    refused("(a)\\1", false, HEARTH_E_UNSUPPORTED, "position 3: backreferences");
    refused("a(?=b)", false, HEARTH_E_UNSUPPORTED, "position 1: lookahead");
    refused("(?<!a)b", false, HEARTH_E_UNSUPPORTED, "lookahead and lookbehind");
    refused("a\\bc", false, HEARTH_E_UNSUPPORTED, "word boundaries");
    refused("(?i)abc", false, HEARTH_E_UNSUPPORTED, "inline flags");
    refused("a++", false, HEARTH_E_UNSUPPORTED, "possessive");
    refused("a^b", false, HEARTH_E_UNSUPPORTED, "anchors");
    refused("\\p{L}", false, HEARTH_E_UNSUPPORTED, "property");
    refused("(ab", false, HEARTH_E_INVALID, "position 0: an unclosed parenthesis");
    refused("ab)", false, HEARTH_E_INVALID, "position 2: an unbalanced parenthesis");
    refused("*a", false, HEARTH_E_INVALID, "nothing to repeat");
    refused("a**", false, HEARTH_E_INVALID, "repetition of a repetition");
    refused("[abc", false, HEARTH_E_INVALID, "unterminated character class");
    refused("[z-a]", false, HEARTH_E_INVALID, "bad range");
    refused("a{3,2}", false, HEARTH_E_INVALID, "m > n");
    refused("\\q", false, HEARTH_E_INVALID, "unknown escape");
    refused("a{99999}", false, HEARTH_E_LIMIT, "repetition count");
    refused("\xc3(", false, HEARTH_E_INVALID, "UTF-8");
}

static const row GBNF[] = {
    {"root ::= \"yes\" | \"no\"", {"yes", "no"}, {"y", "yesno", ""}},
    {"root ::= answer \".\"\nanswer ::= [0-9]+ # digits\n", {"42.", "0."}, {"42", ".", "4a."}},
    {"# a list\nroot ::= \"[\" item (\",\" item)* \"]\"\nitem ::= [a-z]{1,3}\n",
     {"[a]", "[ab,cde,f]"}, {"[]", "[abcd]", "[a,]"}},
    {"root ::= digits\ndigits ::= [0-9] digits | [0-9]", {"7", "123456"}, {"", "12a"}},
    {"root ::= (\n  \"a\" |\n  \"b\"\n) \"!\"?", {"a", "b!"}, {"ab", "!"}},
    {"root ::= \"x\" |\n  \"y\"", {"x", "y"}, {"xy"}},
    {"root ::= [^\"\\\\\\n]* \"\\\"\"", {"abc\"", "\xe2\x82\xac\""}, {"a\"b\"", "a\\\""}},
    {"root ::= . . \"\\x41\\u00e9\"", {"ab" "A\xc3\xa9", "\n\xf0\x9f\x98\x80" "A\xc3\xa9"}, {"a" "A\xc3\xa9"}},
    {"root ::= \"a\"{2} \"b\"{1,} \"c\"{,1} \"d\"{0,2}", {"aab", "aabbbcdd"}, {"ab", "aabccd", "aabddd"}},
    {"root   ::=   ws \"{\" ws \"}\"\nws ::= [ \\t\\n]*", {"{}", " {\n\t}"}, {"{ }x"}},
};

TEST(gbnf_accept_reject) { run_table(GBNF, sizeof GBNF / sizeof GBNF[0], true); }

TEST(gbnf_refusals) {
    refused("rot ::= \"a\"", true, HEARTH_E_INVALID, "no 'root' rule");
    refused("root ::= item\n", true, HEARTH_E_INVALID, "line 1, column 10: rule 'item' is not defined");
    refused("root ::= \"a\"\nroot ::= \"b\"", true, HEARTH_E_INVALID, "line 2, column 1: rule 'root' is defined twice");
    refused("root ::= \"a", true, HEARTH_E_INVALID, "line 1, column 10: an unterminated literal");
    refused("root ::= [a-", true, HEARTH_E_INVALID, "unterminated character class");
    refused("root ::= (\"a\"", true, HEARTH_E_INVALID, "an unclosed parenthesis");
    refused("root ::= \"a\")", true, HEARTH_E_INVALID, "unbalanced");
    refused("root = \"a\"", true, HEARTH_E_INVALID, "line 1, column 6: expected '::='");
    refused("root ::= \"a\" @", true, HEARTH_E_INVALID, "line 1, column 14: unexpected '@'");
    refused("root ::= \"a\"{2,1}", true, HEARTH_E_INVALID, "m > n");
    refused("root ::= \"a\"{x}", true, HEARTH_E_INVALID, "malformed repetition");
    refused("root ::= \"\\q\"", true, HEARTH_E_INVALID, "unknown escape");
    refused("root ::= <think>", true, HEARTH_E_UNSUPPORTED, "token references");
    /* recursion other than a rule's own tail call */
    refused("root ::= \"(\" root \")\" | \"x\"", true, HEARTH_E_UNSUPPORTED, "rule 'root' is recursive");
    refused("root ::= a\na ::= \"x\" b\nb ::= \"y\" a | \"z\"", true, HEARTH_E_UNSUPPORTED,
            "line 3, column 11: rule 'a' is recursive");
    refused("root ::= (\"x\" root)?", true, HEARTH_E_UNSUPPORTED, "rule 'root' is recursive");
    refused("root ::= \"x\" root*", true, HEARTH_E_UNSUPPORTED, "rule 'root' is recursive");
}

/* Many rules (the name table), and chains of references or groups past the bounds. */
TEST(gbnf_many_rules_and_deep_chains) {
    size_t cap = 1 << 20, n = 0;
    char *g = malloc(cap);
    n += (size_t)snprintf(g + n, cap - n, "root ::= r0");
    for (int k = 1; k < 400; k++) n += (size_t)snprintf(g + n, cap - n, " | r%d", k);
    n += (size_t)snprintf(g + n, cap - n, "\n");
    for (int k = 399; k >= 0; k--) n += (size_t)snprintf(g + n, cap - n, "r%d ::= \"<%d>\"\n", k, k);
    CHECK(matches(g, true, "<0>"));
    CHECK(matches(g, true, "<399>"));
    CHECK(!matches(g, true, "<400>"));
    /* a chain root -> c1 -> c2 ... of 200 rules */
    n = (size_t)snprintf(g, cap, "root ::= c1\n");
    for (int k = 1; k < 200; k++) n += (size_t)snprintf(g + n, cap - n, "c%d ::= \"x\" c%d\n", k, k + 1);
    n += (size_t)snprintf(g + n, cap - n, "c200 ::= \"y\"\n");
    refused(g, true, HEARTH_E_LIMIT, "too deeply");
    /* 200 nested groups */
    n = (size_t)snprintf(g, cap, "root ::= ");
    for (int k = 0; k < 200; k++) g[n++] = '(';
    g[n++] = '"', g[n++] = 'a', g[n++] = '"';
    for (int k = 0; k < 200; k++) g[n++] = ')';
    g[n] = 0;
    refused(g, true, HEARTH_E_LIMIT, "nested groups");
    free(g);
}

/* Walks through regex grammars; every output must match the same pattern under POSIX ERE. */
TEST(regex_walks_match_posix) {
    static const char *const pats[] = {
        "(ab|cd)*e?", "[a-f0-9]{2,4}(-[a-f0-9]{2,4}){0,3}", "x(y|z+)?w{1,2}", "(red|green|blue)( (red|green|blue))*",
        "[^a-z]{3}", "(0|[1-9][0-9]{0,5})(\\.[0-9]{1,3})?",
    };
    int produced = 0;
    for (size_t pi = 0; pi < sizeof pats / sizeof pats[0]; pi++) {
        char anchored[256];
        snprintf(anchored, sizeof anchored, "^(%s)$", pats[pi]);
        regex_t re;
        CHECK(regcomp(&re, anchored, REG_EXTENDED | REG_NOSUB) == 0);
        for (int rep = 0; rep < 200; rep++) {
            hearth_cx_matcher *m = hearth_cx_matcher_create(compile(pats[pi], false), NULL);
            CHECK(m != NULL);
            if (!m) break;
            char buf[512];
            buf[0] = 1; /* a walk that ends at once writes the terminator */
            size_t n = cx_walk(m, buf, sizeof buf, "", 3);
            hearth_cx_matcher_destroy(m);
            if (!n && !buf[0]) continue;
            /* [^a-z] may draw any UTF-8 character: the C locale's ERE sees bytes, so keep to ASCII */
            bool ascii = true;
            for (size_t k = 0; k < n; k++) ascii = ascii && (unsigned char)buf[k] < 0x80 && buf[k] != '\n' && buf[k];
            if (!ascii) continue;
            produced++;
            if (regexec(&re, buf, 0, NULL, 0)) {
                fprintf(stderr, "  walk of %s produced '%s', which POSIX does not match\n", pats[pi], buf);
                CHECK(0);
            }
        }
        regfree(&re);
    }
    CHECK(produced > 500);
}

/* Decode a whole UTF-8 string of one character; the code point or -1. */
static int64_t one_cp(const char *s, size_t n) {
    uint32_t cp;
    int len = (int)hearth_utf8_decode(s, n, &cp);
    return len > 0 && (size_t)len == n ? (int64_t)cp : -1;
}

/* Every code point's encoding is matched by a class's rule exactly when the set holds it. */
TEST(cpset_rules_match_every_code_point) {
    static const uint32_t ranges[][2] = {{'a', 'z'}, {0x7F, 0x81}, {0x7FF, 0x800}, {0xD7F0, 0xE010},
                                         {0xFFFE, 0x10002}, {0x10FFF0, 0x10FFFF}, {0x3B1, 0x3C9}};
    for (int neg = 0; neg < 2; neg++) {
        hearth_cx_cpset s = {0};
        for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) hearth_cx_cpset_add(&s, ranges[i][0], ranges[i][1]);
        if (neg) CHECK(hearth_cx_cpset_negate(&s));
        hearth_cx_builder *b = hearth_cx_builder_create(hearth_cx_limits_default());
        int r = hearth_cx_rule_cpset(b, &s);
        hearth_err err = {0};
        hearth_cx_grammar *g = hearth_cx_build(b, r, &err);
        hearth_cx_builder_destroy(b);
        CHECK(g != NULL);
        hearth_cx_matcher *m = hearth_cx_matcher_create(g, NULL);
        int bad = 0;
        for (uint32_t cp = 0; cp <= HEARTH_CX_CP_MAX && m; cp++) {
            if (cp >= 0xD800 && cp <= 0xDFFF) continue;
            char u[4];
            size_t n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
            /* encode by hand (the decoder checks it back) */
            if (n == 1) u[0] = (char)cp;
            else {
                for (size_t k = n - 1; k > 0; k--) u[k] = (char)(0x80 | ((cp >> (6 * (n - 1 - k))) & 0x3F));
                u[0] = (char)((n == 2 ? 0xC0 : n == 3 ? 0xE0 : 0xF0) | (cp >> (6 * (n - 1))));
            }
            CHECK(one_cp(u, n) == cp);
            bool in = false;
            for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) in = in || (cp >= ranges[i][0] && cp <= ranges[i][1]);
            if (neg) in = !in;
            bool got = hearth_cx_matcher_fits(m, u, n);
            if (got != in && bad++ < 5) fprintf(stderr, "  U+%04X: set %d, rule %d (negated %d)\n", cp, in, got, neg);
        }
        CHECK_EQ(bad, 0);
        /* a surrogate's encoding and a lone continuation byte are never characters */
        CHECK(!hearth_cx_matcher_fits(m, "\xed\xa0\x80", 3));
        CHECK(!hearth_cx_matcher_fits(m, "\x80", 1));
        hearth_cx_matcher_destroy(m);
        hearth_cx_cpset_free(&s);
    }
}

int main(int argc, char **argv) { return test_main(argc, argv); }
