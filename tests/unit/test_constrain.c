/*
 * test_constrain.c - the structured-output automaton (src/constrain/): JSON Schema -> grammar
 * -> matcher.
 *
 * - accept / reject tables for every supported schema feature (whole strings: accepted means
 *   every byte fits and the grammar can end there);
 * - hostile and unsupported schemas refused with their error codes;
 * - random walks: bytes drawn among those the matcher allows until it can end; every string
 *   produced must parse as JSON (cJSON) and satisfy the schema by this file's own validator,
 *   written from the JSON Schema spec independently of the compiler;
 * - the vocabulary mask (the sorted-trie walk) against checking each token on its own.
 */
#include "constrain/matcher.h"
#include "constrain/schema.h"
#include "cx_walk.h"
#include "test.h"

#include <cjson/cJSON.h>
#include <stdint.h>

static hearth_status last_code;
static char          last_msg[300];

/* Compile a schema (JSON text) into a grammar; NULL with last_code / last_msg on failure. */
static hearth_cx_grammar *compile(const char *schema) {
    cJSON *doc = cJSON_Parse(schema);
    if (!doc) {
        fprintf(stderr, "  bad test schema: %s\n", schema);
        return NULL;
    }
    hearth_cx_builder *b = hearth_cx_builder_create(hearth_cx_limits_default());
    hearth_cx_json j;
    hearth_cx_json_init(&j, b, doc);
    int v = hearth_cx_json_value(&j, doc);
    int ws = hearth_cx_json_ws(&j);
    int seq[] = {ws, v, ws};
    int root = v < 0 || ws < 0 ? -1 : hearth_cx_rule_seq(b, seq, 3);
    hearth_err err = {0};
    hearth_cx_grammar *g = hearth_cx_build(b, root < 0 ? 0 : root, &err);
    last_code = err.code;
    snprintf(last_msg, sizeof last_msg, "%s", err.msg);
    hearth_cx_builder_destroy(b);
    cJSON_Delete(doc);
    return g;
}

static bool matches(const char *schema, const char *text) {
    hearth_cx_matcher *m = hearth_cx_matcher_create(compile(schema), NULL);
    if (!m) return false;
    bool ok = hearth_cx_matcher_feed(m, text, strlen(text)) && hearth_cx_matcher_can_end(m);
    hearth_cx_matcher_destroy(m);
    return ok;
}

typedef struct {
    const char *schema;
    const char *yes[8];
    const char *no[8];
} table_row;

static const table_row TABLE[] = {
    {"{\"type\": \"string\"}",
     {"\"\"", "\"abc\"", "\"a\\\"b\\\\c\\n\"", "\"\\u00e9\"", "\"caf\xc3\xa9\"", " \"x\" ", "\"\xf0\x9f\x98\x80\""},
     {"abc", "\"abc", "\"a\nb\"", "\"\\x\"", "\"\xc3\"", "\"\xed\xa0\x80\"", "\"\xc0\xaf\"", "1"}},
    {"{\"type\": \"string\", \"minLength\": 2, \"maxLength\": 3}",
     {"\"ab\"", "\"abc\"", "\"\xc3\xa9\xc3\xa9\""},
     {"\"a\"", "\"abcd\"", "\"\""}},
    {"{\"type\": \"integer\"}",
     {"0", "-7", "123", "1234567890123456"},
     {"01", "1.5", "-", "+1", "1e3", "12345678901234567", "\"1\""}},
    {"{\"type\": \"integer\", \"minimum\": 0}", {"0", "42"}, {"-1"}},
    {"{\"type\": \"number\"}",
     {"0", "-0.5", "3.25", "1e10", "2.5E-3", "-12e+4"},
     {".5", "1.", "1e", "--1", "0x10", "NaN"}},
    {"{\"type\": \"boolean\"}", {"true", "false"}, {"True", "1", "null", "tru"}},
    {"{\"type\": \"null\"}", {"null"}, {"None", "\"null\"", "nul"}},
    {"{\"enum\": [\"red\", \"green\", \"gr\", 3, null, {\"a\": 1}]}",
     {"\"red\"", "\"green\"", "\"gr\"", "3", "null", "{\"a\":1}"},
     {"\"blue\"", "\"gre\"", "4", "\"Red\"", "{\"a\":2}"}},
    {"{\"const\": \"only\"}", {"\"only\""}, {"\"other\"", "\"onl\""}},
    {"{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}, \"b\": {\"type\": \"string\"}},"
     " \"required\": [\"a\"], \"additionalProperties\": false}",
     {"{\"a\": 1}", "{\"a\":1,\"b\":\"x\"}", "{\n  \"a\": 1,\n  \"b\": \"x\"\n}"},
     {"{}", "{\"b\": \"x\"}", "{\"a\": 1, \"c\": 2}", "{\"b\": \"x\", \"a\": 1}", "{\"a\": \"1\"}", "{\"a\": 1,}"}},
    {"{\"type\": \"object\", \"properties\": {\"x\": {\"type\": \"integer\"}, \"y\": {\"type\": \"integer\"}}}",
     {"{}", "{\"x\": 1}", "{\"y\": 2}", "{\"x\": 1, \"y\": 2}"},
     {"{\"z\": 1}", "{\"y\": 2, \"x\": 1}", "{,}", "{\"x\": 1,}"}},
    {"{\"type\": \"object\", \"properties\": {\"x\": {\"type\": \"integer\"}}, \"additionalProperties\": {\"type\": \"boolean\"}}",
     {"{}", "{\"x\": 1, \"k\": true}", "{\"k\": false}", "{\"k\": false, \"j\": true}"},
     {"{\"k\": 1}", "{\"x\": true}"}},
    {"{\"type\": \"object\"}",
     {"{}", "{\"a\": [1, {\"b\": null}], \"c\": \"d\"}"},
     {"[]", "{\"a\"}", "{\"a\": }"}},
    {"{\"type\": \"array\", \"items\": {\"type\": \"integer\"}, \"minItems\": 1, \"maxItems\": 3}",
     {"[1]", "[1, 2, 3]", "[ 1,2 ]"},
     {"[]", "[1, 2, 3, 4]", "[1,]", "[\"a\"]"}},
    {"{\"type\": \"array\"}", {"[]", "[1, \"a\", null, [true]]"}, {"[", "[,]"}},
    {"{\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"integer\"}]}", {"\"s\"", "5"}, {"true", "5.5"}},
    {"{\"oneOf\": [{\"type\": \"object\", \"properties\": {\"a\": {\"const\": 1}}, \"required\": [\"a\"]},"
     " {\"type\": \"object\", \"properties\": {\"a\": {\"const\": 2}, \"b\": {\"type\": \"null\"}}, \"required\": [\"a\", \"b\"]}]}",
     {"{\"a\": 1}", "{\"a\": 2, \"b\": null}"},
     {"{\"a\": 2}", "{\"a\": 1, \"b\": null}"}},
    {"{\"type\": [\"string\", \"null\"]}", {"\"x\"", "null"}, {"1"}},
    {"{\"$defs\": {\"p\": {\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"string\"}}, \"required\": [\"n\"]}},"
     " \"type\": \"array\", \"items\": {\"$ref\": \"#/$defs/p\"}}",
     {"[]", "[{\"n\": \"a\"}, {\"n\": \"b\"}]"},
     {"[{}]", "[{\"m\": \"a\"}]"}},
    {"{\"allOf\": [{\"type\": \"boolean\"}]}", {"true"}, {"1"}},
    {"{\"type\": \"string\", \"pattern\": \"^a+$\", \"format\": \"email\"}", {"\"b\""}, {"1"}},
    {"{}", {"1", "\"s\"", "{\"a\": [null]}", "[]"}, {"", "{", "nope"}},
    {"{\"properties\": {\"k\": {\"type\": \"string\"}}, \"required\": [\"k\"]}", {"{\"k\": \"v\"}"}, {"{}"}},
};

TEST(accept_reject_tables) {
    for (size_t i = 0; i < sizeof TABLE / sizeof TABLE[0]; i++) {
        const table_row *t = &TABLE[i];
        for (int k = 0; k < 8 && t->yes[k]; k++)
            if (!matches(t->schema, t->yes[k])) {
                fprintf(stderr, "  should accept %s under %s (%s)\n", t->yes[k], t->schema, last_msg);
                CHECK(0);
            }
        for (int k = 0; k < 8 && t->no[k]; k++)
            if (matches(t->schema, t->no[k])) {
                fprintf(stderr, "  should reject %s under %s\n", t->no[k], t->schema);
                CHECK(0);
            }
    }
}

TEST(prefixes_fit_and_complete_only_at_the_end) {
    const char *s = "{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"array\", \"items\": {\"type\": \"number\"}}},"
                    " \"required\": [\"a\"]}";
    const char *text = "{\"a\": [1.5, -2]}";
    hearth_cx_matcher *m = hearth_cx_matcher_create(compile(s), NULL);
    CHECK(m != NULL);
    if (!m) return;
    for (size_t i = 0; text[i]; i++) {
        CHECK(!hearth_cx_matcher_can_end(m));
        CHECK(hearth_cx_matcher_fits(m, text + i, 1));
        CHECK(!hearth_cx_matcher_fits(m, "x", 1));
        CHECK(hearth_cx_matcher_feed(m, text + i, 1));
    }
    CHECK(hearth_cx_matcher_can_end(m));
    CHECK(!hearth_cx_matcher_done(m)); /* trailing whitespace may still follow */
    CHECK(hearth_cx_matcher_feed(m, "\n", 1));
    CHECK(!hearth_cx_matcher_feed(m, "}", 1));
    hearth_cx_matcher_destroy(m);
}

/* Schemas refused, each with the code the server maps to a 400. */
TEST(hostile_and_unsupported_schemas) {
    char deep[4096] = "", big_enum[32768], props[32768];
    for (int i = 0; i < 40; i++) strcat(deep, "{\"type\":\"array\",\"items\":");
    strcat(deep, "{\"type\":\"integer\"}");
    for (int i = 0; i < 40; i++) strcat(deep, "}");
    CHECK(compile(deep) == NULL);
    CHECK_EQ(last_code, HEARTH_E_LIMIT);

    int o = sprintf(big_enum, "{\"enum\":[");
    for (int i = 0; i < 1500; i++) o += sprintf(big_enum + o, "%s%d", i ? "," : "", i);
    sprintf(big_enum + o, "]}");
    CHECK(compile(big_enum) == NULL);
    CHECK_EQ(last_code, HEARTH_E_LIMIT);

    o = sprintf(props, "{\"type\":\"object\",\"properties\":{");
    for (int i = 0; i < 200; i++) o += sprintf(props + o, "%s\"p%d\":{\"type\":\"integer\"}", i ? "," : "", i);
    sprintf(props + o, "}}");
    CHECK(compile(props) == NULL);
    CHECK_EQ(last_code, HEARTH_E_LIMIT);

    struct { const char *s; hearth_status code; } bad[] = {
        {"{\"type\": \"array\", \"maxItems\": 100000}", HEARTH_E_LIMIT},
        {"{\"type\": \"array\", \"minItems\": 3, \"maxItems\": 2}", HEARTH_E_INVALID},
        {"{\"$defs\": {\"n\": {\"type\": \"object\", \"properties\": {\"c\": {\"$ref\": \"#/$defs/n\"}}}}, \"$ref\": \"#/$defs/n\"}",
         HEARTH_E_UNSUPPORTED},
        {"{\"$ref\": \"https://example.com/s.json\"}", HEARTH_E_UNSUPPORTED},
        {"{\"$ref\": \"#/$defs/missing\"}", HEARTH_E_INVALID},
        {"{\"allOf\": [{\"type\": \"string\"}, {\"maxLength\": 3}]}", HEARTH_E_UNSUPPORTED},
        {"{\"type\": \"strin\"}", HEARTH_E_INVALID},
        {"{\"type\": 5}", HEARTH_E_INVALID},
        {"{\"enum\": []}", HEARTH_E_INVALID},
        {"{\"type\": \"object\", \"properties\": {\"a\": false}}", HEARTH_E_INVALID},
        {"{\"type\": \"object\", \"properties\": {\"a\": {}}, \"required\": [\"b\"]}", HEARTH_E_INVALID},
        {"[1]", HEARTH_E_INVALID},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hearth_cx_grammar *g = compile(bad[i].s);
        if (g || last_code != bad[i].code) {
            fprintf(stderr, "  %s: got %s code %d (%s), want %d\n", bad[i].s, g ? "a grammar" : "an error", last_code,
                    last_msg, bad[i].code);
            CHECK(0);
        }
        CHECK(!g || 1);
        hearth_cx_grammar_destroy(g);
        CHECK(last_msg[0] != 0);
    }
}

/* A pathological but legal schema stays bounded: the builder's state limit refuses it. */
TEST(state_limit) {
    char s[8192];
    int o = sprintf(s, "{\"type\":\"array\",\"maxItems\":2000,\"items\":");
    o += sprintf(s + o, "{\"type\":\"array\",\"maxItems\":2000,\"items\":{\"type\":\"string\",\"maxLength\":2000}}}");
    (void)o;
    CHECK(compile(s) == NULL);
    CHECK_EQ(last_code, HEARTH_E_LIMIT);
}

/* ---- an independent validator for the supported subset (JSON Schema 2020-12 semantics) ---- */

static const cJSON *vget(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

static int utf8_len(const char *s) {
    int n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static bool is_type(const cJSON *v, const char *t) {
    if (!strcmp(t, "object")) return cJSON_IsObject(v);
    if (!strcmp(t, "array")) return cJSON_IsArray(v);
    if (!strcmp(t, "string")) return cJSON_IsString(v);
    if (!strcmp(t, "number")) return cJSON_IsNumber(v);
    if (!strcmp(t, "integer")) return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble);
    if (!strcmp(t, "boolean")) return cJSON_IsBool(v);
    if (!strcmp(t, "null")) return cJSON_IsNull(v);
    return false;
}

static bool valid(const cJSON *v, const cJSON *s, const cJSON *doc) {
    if (cJSON_IsTrue(s)) return true;
    const cJSON *ref = vget(s, "$ref");
    if (ref) { /* "#/$defs/name" only, in these tests */
        const char *name = strrchr(ref->valuestring, '/') + 1;
        return valid(v, vget(vget(doc, "$defs"), name), doc);
    }
    const cJSON *k;
    if ((k = vget(s, "const")) && !cJSON_Compare(v, k, true)) return false;
    if ((k = vget(s, "enum"))) {
        bool any = false;
        for (const cJSON *e = k->child; e; e = e->next) any |= cJSON_Compare(v, e, true);
        if (!any) return false;
    }
    if ((k = vget(s, "anyOf")) || (k = vget(s, "oneOf"))) {
        int n = 0;
        for (const cJSON *e = k->child; e; e = e->next) n += valid(v, e, doc);
        if (vget(s, "oneOf") ? n != 1 : n < 1) return false;
    }
    if ((k = vget(s, "type"))) {
        bool ok = false;
        if (cJSON_IsString(k)) ok = is_type(v, k->valuestring);
        for (const cJSON *t = cJSON_IsArray(k) ? k->child : NULL; t; t = t->next) ok |= is_type(v, t->valuestring);
        if (!ok) return false;
    }
    if (cJSON_IsString(v)) {
        if ((k = vget(s, "minLength")) && utf8_len(v->valuestring) < k->valueint) return false;
        if ((k = vget(s, "maxLength")) && utf8_len(v->valuestring) > k->valueint) return false;
    }
    if (cJSON_IsNumber(v) && (k = vget(s, "minimum")) && v->valuedouble < k->valuedouble) return false;
    if (cJSON_IsArray(v)) {
        int n = cJSON_GetArraySize(v);
        if ((k = vget(s, "minItems")) && n < k->valueint) return false;
        if ((k = vget(s, "maxItems")) && n > k->valueint) return false;
        if ((k = vget(s, "items")))
            for (const cJSON *e = v->child; e; e = e->next)
                if (!valid(e, k, doc)) return false;
    }
    if (cJSON_IsObject(v)) {
        const cJSON *props = vget(s, "properties"), *add = vget(s, "additionalProperties");
        for (const cJSON *r = vget(s, "required") ? vget(s, "required")->child : NULL; r; r = r->next)
            if (!vget(v, r->valuestring)) return false;
        for (const cJSON *m = v->child; m; m = m->next) {
            const cJSON *ps = props ? vget(props, m->string) : NULL;
            if (ps ? !valid(m, ps, doc) : add && !valid(m, add, doc)) return false;
            if (!ps && cJSON_IsFalse(add)) return false;
        }
    }
    return true;
}

TEST(random_walks_parse_and_validate) {
    static const char *const schemas[] = {
        "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\", \"maxLength\": 8},"
        " \"age\": {\"type\": \"integer\"}, \"tags\": {\"type\": \"array\", \"items\": {\"enum\": [\"a\", \"b\", 1]},"
        " \"maxItems\": 4}, \"ok\": {\"type\": \"boolean\"}}, \"required\": [\"name\", \"age\"], \"additionalProperties\": false}",
        "{\"anyOf\": [{\"type\": \"number\"}, {\"type\": \"array\", \"items\": {\"type\": [\"string\", \"null\"]},"
        " \"minItems\": 2, \"maxItems\": 3}, {\"const\": {\"k\": [1, 2]}}]}",
        "{\"type\": \"object\", \"properties\": {\"x\": {\"type\": \"number\"}, \"y\": {\"type\": \"object\"}},"
        " \"additionalProperties\": {\"type\": \"integer\", \"minimum\": 0}}",
        "{\"$defs\": {\"pt\": {\"type\": \"object\", \"properties\": {\"x\": {\"type\": \"integer\"}},"
        " \"required\": [\"x\"], \"additionalProperties\": false}}, \"type\": \"array\","
        " \"items\": {\"$ref\": \"#/$defs/pt\"}, \"maxItems\": 3}",
        "{}",
        "{\"type\": \"string\", \"minLength\": 1, \"maxLength\": 5}",
    };
    int produced = 0;
    for (size_t si = 0; si < sizeof schemas / sizeof schemas[0]; si++) {
        cJSON *doc = cJSON_Parse(schemas[si]);
        for (int rep = 0; rep < 150; rep++) {
            hearth_cx_matcher *m = hearth_cx_matcher_create(compile(schemas[si]), NULL);
            CHECK(m != NULL);
            if (!m) break;
            char buf[4096];
            size_t n = cx_walk(m, buf, sizeof buf, "\"]}", 4);
            CHECK_EQ(hearth_cx_matcher_n_dropped(m), 0);
            hearth_cx_matcher_destroy(m);
            if (!n) continue;
            produced++;
            const char *end = NULL;
            cJSON *v = cJSON_ParseWithOpts(buf, &end, 1);
            if (!v || !valid(v, doc, doc)) {
                fprintf(stderr, "  walk under schema %zu produced %s (%s)\n", si, buf, v ? "invalid" : "not JSON");
                CHECK(0);
            }
            cJSON_Delete(v);
        }
        cJSON_Delete(doc);
    }
    CHECK(produced > 600); /* most walks end */
}

/* The trie walk over a sorted vocabulary equals checking every token alone. */
TEST(vocab_mask_equals_per_token_check) {
    static const char *const toks[] = {
        "{", "}", "\"", "\":", "\"a", "\"ab", "a", "ab", "abc", "b", ":", " ", "  ", "\n", ",", ", \"", "1", "12",
        "-", ".", "5.", "e", "true", "tr", "null", "[", "]", "[]", "{}", "\"}", "x", "é", "\xc3", "\xa9", "}}",
        "\"name\"", "\"age\":", "\":\"", "", "<eog>",
    };
    int32_t n = (int32_t)(sizeof toks / sizeof toks[0]);
    hearth_span pieces[64];
    bool eog[64] = {0};
    for (int32_t i = 0; i < n; i++) pieces[i] = (hearth_span){toks[i], strlen(toks[i])};
    pieces[n - 1].len = 0;
    eog[n - 1] = true;
    hearth_cx_vocab *v = hearth_cx_vocab_create(n, pieces, eog);
    CHECK(v != NULL);
    const char *schema = "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"},"
                         " \"age\": {\"type\": \"number\"}, \"l\": {\"type\": \"array\", \"items\": {\"type\": \"boolean\"}}}}";
    int steps = 0, mismatches = 0;
    for (int rep = 0; rep < 40; rep++) {
        hearth_cx_matcher *m = hearth_cx_matcher_create(compile(schema), v);
        for (int step = 0; step < 60; step++) {
            bool fast[64], slow[64];
            int32_t n_fast = hearth_cx_matcher_allowed(m, fast), n_slow = 0;
            for (int32_t t = 0; t < n; t++) {
                slow[t] = hearth_cx_matcher_allows(m, t);
                n_slow += slow[t];
                mismatches += slow[t] != fast[t];
            }
            CHECK_EQ(n_fast, n_slow);
            CHECK(!slow[n - 2]); /* the empty piece never */
            CHECK_EQ(slow[n - 1], hearth_cx_matcher_can_end(m));
            steps++;
            if (!n_slow || slow[n - 1]) break;
            int32_t pick;
            do pick = (int32_t)(cx_walk_rnd() % (uint32_t)n);
            while (!slow[pick]);
            CHECK(hearth_cx_matcher_accept(m, pick));
            float logits[64];
            for (int32_t t = 0; t < n; t++) logits[t] = 0;
            int32_t kept = hearth_cx_matcher_mask(m, logits);
            int32_t finite = 0;
            for (int32_t t = 0; t < n; t++) finite += isfinite(logits[t]) != 0;
            CHECK_EQ(kept, finite);
        }
        hearth_cx_matcher_destroy(m);
    }
    CHECK_EQ(mismatches, 0);
    CHECK(steps > 100);
    hearth_cx_vocab_destroy(v);
}

/* Literal wrapping (a tool-call syntax around arguments) and the trie of hearth_cx_rule_choice. */
TEST(wrapped_choice) {
    hearth_cx_builder *b = hearth_cx_builder_create(hearth_cx_limits_default());
    hearth_cx_json j;
    hearth_cx_json_init(&j, b, NULL);
    const char *names[] = {"\"get\"", "\"get_all\"", "\"put\""};
    size_t lens[] = {5, 9, 5};
    int pre = hearth_cx_rule_lit(b, "<call>", 6), ch = hearth_cx_rule_choice(b, names, lens, 3);
    int post = hearth_cx_rule_lit(b, "</call>", 7);
    int one = hearth_cx_rule_seq(b, (int[]){pre, ch, post}, 3);
    int root = hearth_cx_rule_repeat(b, one, hearth_cx_json_ws(&j), 1, -1);
    hearth_err err = {0};
    hearth_cx_grammar *g = hearth_cx_build(b, root, &err);
    hearth_cx_builder_destroy(b);
    CHECK(g != NULL);
    hearth_cx_matcher *m = hearth_cx_matcher_create(g, NULL);
    const char *ok = "<call>\"get_all\"</call>\n<call>\"get\"</call>";
    CHECK(hearth_cx_matcher_feed(m, ok, strlen(ok)));
    CHECK(hearth_cx_matcher_can_end(m));
    CHECK(!hearth_cx_matcher_fits(m, "x", 1));
    hearth_cx_matcher_destroy(m);
    CHECK(!matches("{\"const\": 1}", "<call>"));
}

int main(int argc, char **argv) { return test_main(argc, argv); }
