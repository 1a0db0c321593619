/* test_server_toolcall.c - the tool-call parser, the reasoning splitter and the in-place JSON
 * reader: each family's markup parsed into calls, markup that is not a call given back as
 * content unchanged, and every case fed whole, split at every byte boundary, and byte by byte,
 * which must all give the same content and calls. */
#include "server/jraw.h"
#include "server/reasoning.h"
#include "server/toolcall.h"
#include "test.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char content[2048];
    char calls[2048]; /* "name|args|id;" per call (id left out when want_ids is false) */
    bool in_call_seen;
} tc_result;

static void cat(char *dst, size_t cap, const char *s, size_t n) {
    size_t l = strlen(dst);
    if (l + n >= cap) n = cap - 1 - l;
    memcpy(dst + l, s, n);
    dst[l + n] = 0;
}

static void take(tc_result *r, const hearth_tc_out *o, bool ids) {
    cat(r->content, sizeof r->content, o->content.ptr, o->content.len);
    for (int i = 0; i < o->n_calls; i++) {
        const hearth_tool_call *c = &o->calls[i];
        cat(r->calls, sizeof r->calls, c->name, strlen(c->name));
        cat(r->calls, sizeof r->calls, "|", 1);
        cat(r->calls, sizeof r->calls, c->arguments, strlen(c->arguments));
        if (ids) {
            cat(r->calls, sizeof r->calls, "|", 1);
            cat(r->calls, sizeof r->calls, c->id, strlen(c->id));
        }
        cat(r->calls, sizeof r->calls, ";", 1);
    }
    r->in_call_seen |= o->in_call;
}

/* Feed text cut at the offsets cuts[0..n_cuts) (ascending). */
static bool tc_run(hearth_tc_format f, const char *text, const size_t *cuts, int n_cuts, bool ids, tc_result *r) {
    memset(r, 0, sizeof *r);
    hearth_tc *p = hearth_tc_create(f, 42);
    if (!p) return false;
    hearth_tc_out o;
    size_t at = 0, n = strlen(text);
    bool ok = true;
    for (int i = 0; i <= n_cuts && ok; i++) {
        size_t to = i < n_cuts ? cuts[i] : n;
        ok = hearth_tc_push(p, text + at, to - at, &o) == HEARTH_OK;
        take(r, &o, ids);
        at = to;
    }
    ok = ok && hearth_tc_finish(p, &o) == HEARTH_OK;
    take(r, &o, ids);
    hearth_tc_destroy(p);
    return ok;
}

/* Whole, every two-piece split, and byte by byte must agree with the expectation. */
static void tc_expect(hearth_tc_format f, const char *text, const char *content, const char *calls, bool ids) {
    tc_result r;
    size_t n = strlen(text);
    CHECK(tc_run(f, text, NULL, 0, ids, &r));
    CHECK_STR(r.content, content);
    CHECK_STR(r.calls, calls);
    int bad = 0;
    for (size_t cut = 1; cut < n; cut++) {
        tc_run(f, text, &cut, 1, ids, &r);
        if (strcmp(r.content, content) || strcmp(r.calls, calls)) {
            if (!bad++) fprintf(stderr, "  split at %zu: content \"%s\" calls \"%s\"\n", cut, r.content, r.calls);
        }
    }
    size_t *all = malloc(n * sizeof *all);
    for (size_t i = 0; i + 1 < n; i++) all[i] = i + 1;
    tc_run(f, text, all, n > 0 ? (int)n - 1 : 0, ids, &r);
    free(all);
    if (strcmp(r.content, content) || strcmp(r.calls, calls)) {
        bad++;
        fprintf(stderr, "  byte by byte: content \"%s\" calls \"%s\"\n", r.content, r.calls);
    }
    CHECK_EQ(bad, 0);
}

TEST(tc_hermes) {
    tc_expect(HEARTH_TC_HERMES, "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
              "{\"city\": \"Paris\", \"days\": 1.0}}\n</tool_call>",
              "Let me check.\n", "get_weather|{\"city\": \"Paris\", \"days\": 1.0};", false);
    /* two calls, arguments as a JSON string, "parameters" spelling, no closing tag at the end */
    tc_expect(HEARTH_TC_HERMES, "<tool_call>{\"name\":\"a\",\"arguments\":\"{\\\"x\\\": 1}\"}</tool_call>\n"
              "<tool_call>{\"name\":\"b\",\"parameters\":{}}</tool_call><tool_call>{\"name\":\"c\"}",
              "\n", "a|{\"x\": 1};b|{};c|{};", false);
    /* not calls: bad JSON, no name, an unclosed bad body: given back unchanged */
    tc_expect(HEARTH_TC_HERMES, "x <tool_call>{oops}</tool_call> y", "x <tool_call>{oops}</tool_call> y", "", false);
    tc_expect(HEARTH_TC_HERMES, "<tool_call>{\"arguments\":{}}</tool_call>", "<tool_call>{\"arguments\":{}}</tool_call>",
              "", false);
    tc_expect(HEARTH_TC_HERMES, "a <tool_call>{\"name\":", "a <tool_call>{\"name\":", "", false);
    tc_expect(HEARTH_TC_HERMES, "<tool_call>{\"name\":\"f\",\"arguments\":{}} trailing</tool_call>",
              "<tool_call>{\"name\":\"f\",\"arguments\":{}} trailing</tool_call>", "", false);
    /* a marker prefix that never completes is content; text without markup passes through */
    tc_expect(HEARTH_TC_HERMES, "a <tool_ca", "a <tool_ca", "", false);
    tc_expect(HEARTH_TC_HERMES, "plain <b>text</b> 1 < 2", "plain <b>text</b> 1 < 2", "", false);
}

TEST(tc_hermes_xml_body) {
    tc_expect(HEARTH_TC_HERMES, "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
              "<parameter=days>\n3\n</parameter>\n<parameter=opts>\n{\"unit\": \"c\"}\n</parameter>\n</function>\n"
              "</tool_call>", "", "get_weather|{\"city\":\"Paris\",\"days\":3,\"opts\":{\"unit\": \"c\"}};", false);
    tc_expect(HEARTH_TC_HERMES, "<tool_call><function=f><parameter=x>1</function></tool_call>",
              "<tool_call><function=f><parameter=x>1</function></tool_call>", "", false);
}

TEST(tc_llama3) {
    tc_expect(HEARTH_TC_LLAMA3, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", "",
              "get_weather|{\"city\": \"Paris\"};", false);
    tc_expect(HEARTH_TC_LLAMA3, "\n {\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {\"n\": 2}}",
              "", "a|{};b|{\"n\": 2};", false);
    tc_expect(HEARTH_TC_LLAMA3, "<|python_tag|>{\"name\": \"f\", \"arguments\": {\"q\": \"x\"}}", "", "f|{\"q\": \"x\"};",
              false);
    /* JSON that is not a call, and text with braces later, stay content */
    tc_expect(HEARTH_TC_LLAMA3, "{\"answer\": 42}", "{\"answer\": 42}", "", false);
    tc_expect(HEARTH_TC_LLAMA3, "  The set {1, 2} has two elements.", "  The set {1, 2} has two elements.", "", false);
    tc_expect(HEARTH_TC_LLAMA3, "Sure: {\"name\": \"f\", \"parameters\": {}}", "Sure: {\"name\": \"f\", \"parameters\": {}}",
              "", false);
    tc_expect(HEARTH_TC_LLAMA3, "<|python_tag|>brave_search.call(query=\"x\")",
              "<|python_tag|>brave_search.call(query=\"x\")", "", false);
    tc_expect(HEARTH_TC_LLAMA3, "   ", "   ", "", false);
}

TEST(tc_mistral) {
    tc_expect(HEARTH_TC_MISTRAL, "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, "
              "\"id\": \"abcDEF123\"}, {\"name\": \"b\", \"arguments\": {}}]",
              "", "get_weather|{\"city\": \"Paris\"};b|{};", false);
    tc_expect(HEARTH_TC_MISTRAL, "[TOOL_CALLS]get_weather[CALL_ID]abc123xyz[ARGS]{\"city\": \"Paris\"}"
              "[TOOL_CALLS]f[ARGS]{}", "", "get_weather|{\"city\": \"Paris\"};f|{};", false);
    tc_expect(HEARTH_TC_MISTRAL, "[TOOL_CALLS][{\"name\": \"g\", \"arguments\": {}, \"id\": \"abcDEF123\"}]"
              "[TOOL_CALLS]h[CALL_ID]abc123xyz[ARGS]{\"k\": [1]}", "", "g|{}|abcDEF123;h|{\"k\": [1]}|abc123xyz;", true);
    tc_expect(HEARTH_TC_MISTRAL, "Hi [TOOL_CALLS] [{\"nom\": 1}]", "Hi [TOOL_CALLS] [{\"nom\": 1}]", "", false);
    tc_expect(HEARTH_TC_MISTRAL, "[TOOL_CALLS]bad name[ARGS]{}", "[TOOL_CALLS]bad name[ARGS]{}", "", false);
    tc_expect(HEARTH_TC_MISTRAL, "[TOOL_CALLS]f[ARGS]{\"a\":", "[TOOL_CALLS]f[ARGS]{\"a\":", "", false);
}

TEST(tc_gemma) {
    tc_expect(HEARTH_TC_GEMMA, "I'll look.\n```tool_code\nget_weather(city=\"Paris\", days=3, metric=True, "
              "extra=None, tags=['a', \"b\"], o={'k': 1.5})\n```\nDone",
              "I'll look.\n\nDone",
              "get_weather|{\"city\":\"Paris\",\"days\":3,\"metric\":true,\"extra\":null,\"tags\":[\"a\",\"b\"],"
              "\"o\":{\"k\":1.5}};", false);
    tc_expect(HEARTH_TC_GEMMA, "```tool_code\nprint(default_api.a(x='it\\'s'))\nb()\n```", "",
              "a|{\"x\":\"it's\"};b|{};", false);
    tc_expect(HEARTH_TC_GEMMA, "<start_function_call>call:get_weather{city:<escape>Paris, FR<escape>,days:3,"
              "o:{deep:true},l:[1,<escape>x<escape>]}<end_function_call>",
              "", "get_weather|{\"city\":\"Paris, FR\",\"days\":3,\"o\":{\"deep\":true},\"l\":[1,\"x\"]};", false);
    tc_expect(HEARTH_TC_GEMMA, "<|tool_call>call:f{q:<|\"|>a}b<|\"|>,n:-2.5e3}<tool_call|>", "",
              "f|{\"q\":\"a}b\",\"n\":-2.5e3};", false);
    /* positional arguments, unbalanced code, bad call syntax: content */
    tc_expect(HEARTH_TC_GEMMA, "```tool_code\nf(1)\n```", "```tool_code\nf(1)\n```", "", false);
    tc_expect(HEARTH_TC_GEMMA, "```tool_code\nf(x=[1\n```", "```tool_code\nf(x=[1\n```", "", false);
    tc_expect(HEARTH_TC_GEMMA, "```python\nprint(1)\n```", "```python\nprint(1)\n```", "", false);
    tc_expect(HEARTH_TC_GEMMA, "<|tool_call>f{}<tool_call|>", "<|tool_call>f{}<tool_call|>", "", false);
}

/* gpt-oss's harmony calls: the recipient after the channel or in the header, <|call|> present
 * or not (it ends the turn, so a decoder may stop before it); a body that is not a JSON object
 * is content. */
TEST(tc_harmony) {
    tc_expect(HEARTH_TC_HARMONY, "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
              "{\"city\": \"Paris\", \"days\": 3}<|call|>", "",
              "get_weather|{\"city\": \"Paris\", \"days\": 3};", false);
    tc_expect(HEARTH_TC_HARMONY, " to=functions.lookup<|channel|>commentary json<|message|>{\"q\": \"a<b\"}", "",
              "lookup|{\"q\": \"a<b\"};", false);
    tc_expect(HEARTH_TC_HARMONY, "Checking.<|channel|>commentary to=functions.f<|message|>{}<|call|>", "Checking.",
              "f|{};", false);
    tc_expect(HEARTH_TC_HARMONY, "<|channel|>commentary to=functions.f<|message|>[1]<|call|>",
              "<|channel|>commentary to=functions.f<|message|>[1]<|call|>", "", false);
    tc_expect(HEARTH_TC_HARMONY, "plain answer", "plain answer", "", false);
}

TEST(tc_none_passes_everything) {
    tc_expect(HEARTH_TC_NONE, "<tool_call>{\"name\":\"f\"}</tool_call>", "<tool_call>{\"name\":\"f\"}</tool_call>", "",
              false);
}

TEST(tc_ids_and_in_call) {
    hearth_tc *p = hearth_tc_create(HEARTH_TC_HERMES, 7);
    hearth_tc_out o;
    CHECK_EQ(hearth_tc_push(p, "ok <tool_call>{\"name\"", 21, &o), HEARTH_OK);
    CHECK(o.in_call);
    CHECK_EQ(o.n_calls, 0);
    CHECK_EQ(o.content.len, 3);
    CHECK_EQ(hearth_tc_push(p, ":\"f\"}</tool_call>", 17, &o), HEARTH_OK);
    CHECK(!o.in_call);
    CHECK_EQ(o.n_calls, 1);
    CHECK_EQ(strlen(o.calls[0].id), 29); /* call_ + 24 hex */
    CHECK(!strncmp(o.calls[0].id, "call_", 5));
    CHECK_STR(o.calls[0].arguments, "{}");
    CHECK_EQ(hearth_tc_push(p, "<tool_call>{\"name\":\"g\"}</tool_call>", 35, &o), HEARTH_OK);
    CHECK_EQ(o.n_calls, 1);
    CHECK_EQ(o.calls[0].index, 1);
    int n = 0;
    const hearth_tool_call *all = hearth_tc_calls(p, &n);
    CHECK_EQ(n, 2);
    CHECK(strcmp(all[0].id, all[1].id) != 0);
    hearth_tc_destroy(p);
}

TEST(tc_mistral_made_ids) {
    hearth_tc *p = hearth_tc_create(HEARTH_TC_MISTRAL, 1);
    hearth_tc_out o;
    const char *t = "[TOOL_CALLS]f[ARGS]{}";
    CHECK_EQ(hearth_tc_push(p, t, strlen(t), &o), HEARTH_OK);
    CHECK_EQ(hearth_tc_finish(p, &o), HEARTH_OK);
    int n = 0;
    const hearth_tool_call *c = hearth_tc_calls(p, &n);
    CHECK_EQ(n, 1);
    CHECK_EQ(strlen(c[0].id), 9); /* Mistral's templates accept only 9 alphanumerics */
    for (int i = 0; i < 9; i++) CHECK(isalnum((unsigned char)c[0].id[i]));
    hearth_tc_destroy(p);
}

TEST(tc_detect) {
    CHECK_EQ(hearth_tc_detect("{{- '<tool_call>\\n{\"name\": \"' }}", "qwen2"), HEARTH_TC_HERMES);
    CHECK_EQ(hearth_tc_detect("{{- \"[TOOL_CALLS][\" }}", "llama"), HEARTH_TC_MISTRAL);
    CHECK_EQ(hearth_tc_detect("<|start_header_id|>{{- '\"parameters\": ' }}", "llama"), HEARTH_TC_LLAMA3);
    CHECK_EQ(hearth_tc_detect("{{ bos_token }}<start_of_turn>", "gemma3"), HEARTH_TC_GEMMA);
    CHECK_EQ(hearth_tc_detect(NULL, "gemma3"), HEARTH_TC_GEMMA);
    CHECK_EQ(hearth_tc_detect("<|im_start|>", "llama"), HEARTH_TC_HERMES);
    CHECK_EQ(hearth_tc_detect("{{- '<|channel|>commentary to=functions.' }}", "gpt_oss"), HEARTH_TC_HARMONY);
    CHECK_EQ(hearth_tc_detect(NULL, "gpt-oss"), HEARTH_TC_HARMONY);
    CHECK(hearth_tc_is_marker(HEARTH_TC_HARMONY, "<|call|>", 8));
    CHECK(hearth_tc_is_marker(HEARTH_TC_HARMONY, "<|message|>", 11));
    CHECK_EQ(hearth_tc_format_from_name("harmony"), HEARTH_TC_HARMONY);
    CHECK(hearth_tc_is_marker(HEARTH_TC_MISTRAL, "[TOOL_CALLS]", 12));
    CHECK(!hearth_tc_is_marker(HEARTH_TC_MISTRAL, "</s>", 4));
    CHECK_EQ(hearth_tc_format_from_name("gemma"), HEARTH_TC_GEMMA);
    CHECK_EQ(hearth_tc_format_from_name("x"), HEARTH_TC_COUNT);
}

/* ---- reasoning ---- */

typedef struct {
    char content[1024], reasoning[1024];
} rs_result;

static void rs_run(hearth_rs_format f, bool open, const char *text, const size_t *cuts, int n_cuts, rs_result *r) {
    memset(r, 0, sizeof *r);
    hearth_rs *s = hearth_rs_create(f, open);
    hearth_rs_out o;
    size_t at = 0, n = strlen(text);
    for (int i = 0; i <= n_cuts; i++) {
        size_t to = i < n_cuts ? cuts[i] : n;
        hearth_rs_push(s, text + at, to - at, &o);
        cat(r->content, sizeof r->content, o.content.ptr, o.content.len);
        cat(r->reasoning, sizeof r->reasoning, o.reasoning.ptr, o.reasoning.len);
        at = to;
    }
    hearth_rs_finish(s, &o);
    cat(r->content, sizeof r->content, o.content.ptr, o.content.len);
    cat(r->reasoning, sizeof r->reasoning, o.reasoning.ptr, o.reasoning.len);
    hearth_rs_destroy(s);
}

static void rs_expect(hearth_rs_format f, bool open, const char *text, const char *content, const char *reasoning) {
    rs_result r;
    size_t n = strlen(text);
    rs_run(f, open, text, NULL, 0, &r);
    CHECK_STR(r.content, content);
    CHECK_STR(r.reasoning, reasoning);
    int bad = 0;
    for (size_t cut = 1; cut < n; cut++) {
        rs_run(f, open, text, &cut, 1, &r);
        bad += strcmp(r.content, content) || strcmp(r.reasoning, reasoning);
    }
    size_t *all = malloc(n * sizeof *all);
    for (size_t i = 0; i + 1 < n; i++) all[i] = i + 1;
    rs_run(f, open, text, all, n > 0 ? (int)n - 1 : 0, &r);
    free(all);
    bad += strcmp(r.content, content) || strcmp(r.reasoning, reasoning);
    CHECK_EQ(bad, 0);
}

TEST(rs_think) {
    rs_expect(HEARTH_RS_THINK, false, "<think>\nThe user wants 2+2.\n</think>\n\nIt is 4.", "It is 4.",
              "The user wants 2+2.");
    rs_expect(HEARTH_RS_THINK, false, "<think> a \n b \n</think>", "", "a \n b");
    rs_expect(HEARTH_RS_THINK, true, "Hmm, 2+2.</think>4", "4", "Hmm, 2+2.");
    rs_expect(HEARTH_RS_THINK, false, "No thinking here.", "No thinking here.", "");
    rs_expect(HEARTH_RS_THINK, false, "<think>cut off", "", "cut off");
    rs_expect(HEARTH_RS_THINK, false, "a <thin", "a <thin", "");
    rs_expect(HEARTH_RS_THINK, false, "stray</think> end", "stray end", "");
    rs_expect(HEARTH_RS_NONE, false, "<think>x</think>y", "<think>x</think>y", "");
}

TEST(rs_harmony_and_gemma4) {
    rs_expect(HEARTH_RS_HARMONY, false, "<|channel|>analysis<|message|>Need the sum.<|end|><|start|>assistant"
              "<|channel|>final<|message|>4<|return|>", "4", "Need the sum.");
    rs_expect(HEARTH_RS_GEMMA4, false, "<|channel>thought\nSum it.<channel|>Four.", "Four.", "Sum it.");
}

TEST(rs_prompt_open_and_detect) {
    const char *p1 = "<|im_start|>assistant\n<think>\n";
    CHECK(hearth_rs_prompt_open(HEARTH_RS_THINK, p1, strlen(p1)));
    const char *p2 = "<|im_start|>assistant\n<think>\n\n</think>\n\n";
    CHECK(!hearth_rs_prompt_open(HEARTH_RS_THINK, p2, strlen(p2)));
    CHECK(!hearth_rs_prompt_open(HEARTH_RS_NONE, p1, strlen(p1)));
    CHECK_EQ(hearth_rs_detect("{%- if '</think>' in content %}"), HEARTH_RS_THINK);
    CHECK_EQ(hearth_rs_detect("<|start|>assistant<|channel|>analysis"), HEARTH_RS_HARMONY);
    CHECK_EQ(hearth_rs_detect("<|im_start|>"), HEARTH_RS_NONE);
    CHECK(hearth_rs_is_marker(HEARTH_RS_HARMONY, "<|channel|>", 11));
    CHECK(!hearth_rs_is_marker(HEARTH_RS_HARMONY, "<|im_end|>", 10));
}

/* ---- jraw ---- */

TEST(jraw_spans) {
    const char *j = " {\"a\": 1.0, \"b\": [1, {\"c\": \"x\\\"}\"}], \"d\": null, \"e\": 12345678901234567890} tail";
    size_t n = hearth_jraw_skip(j, strlen(j));
    CHECK_EQ(n, strlen(j) - 5);
    hearth_span v;
    CHECK(hearth_jraw_get((hearth_span){j, n}, "a", &v) && hearth_span_eq(v, "1.0"));
    CHECK(hearth_jraw_get((hearth_span){j, n}, "b", &v) && hearth_span_eq(v, "[1, {\"c\": \"x\\\"}\"}]"));
    CHECK(hearth_jraw_get((hearth_span){j, n}, "e", &v) && hearth_span_eq(v, "12345678901234567890"));
    CHECK_EQ(hearth_jraw_kind(v), 'n');
    CHECK(!hearth_jraw_get((hearth_span){j, n}, "z", &v));
    hearth_jraw_it it;
    hearth_span k;
    int count = 0;
    CHECK(hearth_jraw_iter((hearth_span){j, n}, &it));
    while (hearth_jraw_next(&it, &k, &v)) count++;
    CHECK_EQ(count, 4);
    CHECK(!it.err);
    /* incomplete or malformed values are 0 */
    const char *bad[] = {"{\"a\": 1", "[1, 2", "\"abc", "{\"a\" 1}", "[1,]x", "tru", "12", "{\"a\":\"\x01\"}", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK_EQ(hearth_jraw_skip(bad[i], strlen(bad[i])), 0);
    char deep[400];
    memset(deep, '[', 200);
    memset(deep + 200, ']', 200);
    CHECK_EQ(hearth_jraw_skip(deep, 400), 0); /* deeper than the limit */
    CHECK_EQ(hearth_jraw_skip(deep + 100, 200), 200);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
