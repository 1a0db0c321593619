/* test_server_toolcall_stream.c - the tool-call parser's incremental mode (streamed
 * arguments), driven with scripted reply text: every family's markup fed whole, split at
 * every byte boundary, and byte by byte. Each run must give the same transcript (content with
 * each call's BEGIN and END in place), the ARGS pieces of each call must concatenate to its
 * END arguments and to the recorded call, no content may be part of a call, and fed byte by
 * byte the arguments must arrive in several pieces before the markup closes. */
#include "server/toolcall.h"
#include "test.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char transcript[2048]; /* content, with "{B<i>:<name>}" and "{E<i>}" where calls begin and end */
    char calls[2048];      /* "name|args;" per call, from the concatenated ARGS pieces */
    char recorded[2048];   /* "name|args;" per call from hearth_tc_calls at the end */
    char args[8][512];     /* per call index: the ARGS pieces so far */
    int  n_args_pieces;    /* ARGS deltas seen */
    int  n_pieces_open;    /* ARGS deltas seen in pushes that did not close the call */
    bool bad_order;        /* ARGS or END without BEGIN, END args != the pieces, ids that change */
    char ids[8][48];
} run_result;

static void cat(char *dst, size_t cap, const char *s, size_t n) {
    size_t l = strlen(dst);
    if (l + n >= cap) n = cap - 1 - l;
    memcpy(dst + l, s, n);
    dst[l + n] = 0;
}

static void take(run_result *r, const hearth_tc_out *o) {
    size_t off = 0;
    bool ended[8] = {0};
    for (int i = 0; i < o->n_deltas; i++) {
        const hearth_tc_delta *d = &o->deltas[i];
        if (d->index < 0 || d->index >= 8 || d->at < off || d->at > o->content.len) {
            r->bad_order = true;
            continue;
        }
        cat(r->transcript, sizeof r->transcript, o->content.ptr + off, d->at - off);
        off = d->at;
        char tag[96];
        char *a = r->args[d->index];
        if (d->kind == HEARTH_TC_BEGIN) {
            snprintf(tag, sizeof tag, "{B%d:%s}", d->index, d->name);
            cat(r->transcript, sizeof r->transcript, tag, strlen(tag));
            if (r->ids[d->index][0]) r->bad_order = true; /* announced twice */
            snprintf(r->ids[d->index], sizeof r->ids[d->index], "%s", d->id);
        } else if (d->kind == HEARTH_TC_ARGS) {
            if (!r->ids[d->index][0] || strcmp(r->ids[d->index], d->id)) r->bad_order = true;
            cat(a, sizeof r->args[d->index], d->args.ptr, d->args.len);
            r->n_args_pieces++;
            r->n_pieces_open++; /* taken back below if this push also ended the call */
        } else {
            snprintf(tag, sizeof tag, "{E%d}", d->index);
            cat(r->transcript, sizeof r->transcript, tag, strlen(tag));
            if (strlen(a) != d->args.len || memcmp(a, d->args.ptr, d->args.len)) r->bad_order = true;
            cat(r->calls, sizeof r->calls, d->name, strlen(d->name));
            cat(r->calls, sizeof r->calls, "|", 1);
            cat(r->calls, sizeof r->calls, a, strlen(a));
            cat(r->calls, sizeof r->calls, ";", 1);
            ended[d->index] = true;
        }
    }
    for (int i = 0; i < o->n_deltas; i++)
        if (o->deltas[i].kind == HEARTH_TC_ARGS && o->deltas[i].index >= 0 && o->deltas[i].index < 8 &&
            ended[o->deltas[i].index])
            r->n_pieces_open--;
    cat(r->transcript, sizeof r->transcript, o->content.ptr + off, o->content.len - off);
}

static void run(hearth_tc_format f, const char *text, const size_t *cuts, int n_cuts, run_result *r) {
    memset(r, 0, sizeof *r);
    hearth_tc *p = hearth_tc_create(f, 42);
    hearth_tc_stream_args(p);
    hearth_tc_out o;
    size_t at = 0, n = strlen(text);
    for (int i = 0; i <= n_cuts; i++) {
        size_t to = i < n_cuts ? cuts[i] : n;
        CHECK_EQ(hearth_tc_push(p, text + at, to - at, &o), HEARTH_OK);
        take(r, &o);
        at = to;
    }
    CHECK_EQ(hearth_tc_finish(p, &o), HEARTH_OK);
    take(r, &o);
    int nc = 0;
    const hearth_tool_call *c = hearth_tc_calls(p, &nc);
    for (int i = 0; i < nc; i++) {
        cat(r->recorded, sizeof r->recorded, c[i].name, strlen(c[i].name));
        cat(r->recorded, sizeof r->recorded, "|", 1);
        cat(r->recorded, sizeof r->recorded, c[i].arguments, strlen(c[i].arguments));
        cat(r->recorded, sizeof r->recorded, ";", 1);
        if (i < 8 && strcmp(c[i].id, r->ids[i])) r->bad_order = true; /* the id streamed is the id kept */
    }
    hearth_tc_destroy(p);
}

/* Whole, every two-piece split and byte by byte give `transcript` and `calls`; byte by byte,
 * at least min_open ARGS pieces arrive before their call's markup closes. */
static void expect(hearth_tc_format f, const char *text, const char *transcript, const char *calls, int min_open) {
    run_result r;
    size_t n = strlen(text);
    run(f, text, NULL, 0, &r);
    CHECK_STR(r.transcript, transcript);
    CHECK_STR(r.calls, calls);
    CHECK_STR(r.recorded, calls);
    CHECK(!r.bad_order);
    int bad = 0;
    for (size_t cut = 1; cut < n; cut++) {
        run(f, text, &cut, 1, &r);
        if (strcmp(r.transcript, transcript) || strcmp(r.calls, calls) || strcmp(r.recorded, calls) || r.bad_order) {
            if (!bad++)
                fprintf(stderr, "  split at %zu: transcript \"%s\" calls \"%s\" recorded \"%s\"\n", cut, r.transcript,
                        r.calls, r.recorded);
        }
    }
    size_t *all = malloc(n * sizeof *all);
    for (size_t i = 0; i + 1 < n; i++) all[i] = i + 1;
    run(f, text, all, n > 0 ? (int)n - 1 : 0, &r);
    free(all);
    if (strcmp(r.transcript, transcript) || strcmp(r.calls, calls) || strcmp(r.recorded, calls) || r.bad_order) {
        bad++;
        fprintf(stderr, "  byte by byte: transcript \"%s\" calls \"%s\"\n", r.transcript, r.calls);
    }
    CHECK_EQ(bad, 0);
    if (r.n_pieces_open < min_open)
        fprintf(stderr, "  byte by byte: %d pieces before the close, want >= %d\n", r.n_pieces_open, min_open);
    CHECK(r.n_pieces_open >= min_open);
}

TEST(tcs_hermes_json) {
    expect(HEARTH_TC_HERMES, "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
           "{\"city\": \"Paris\", \"days\": 1.0}}\n</tool_call>\nDone.",
           "Let me check.\n{B0:get_weather}{E0}\nDone.", "get_weather|{\"city\": \"Paris\", \"days\": 1.0};", 20);
    /* arguments before the name: held until the name arrives, then sent from the start */
    expect(HEARTH_TC_HERMES, "<tool_call>{\"arguments\": {\"q\": \"x\"}, \"name\": \"f\"}</tool_call>",
           "{B0:f}{E0}", "f|{\"q\": \"x\"};", 0);
    /* arguments as a JSON string: not streamable, sent whole at the close */
    expect(HEARTH_TC_HERMES, "<tool_call>{\"name\":\"a\",\"arguments\":\"{\\\"x\\\": 1}\"}</tool_call>"
           "<tool_call>{\"name\":\"b\"}</tool_call>", "{B0:a}{E0}{B1:b}{E1}", "a|{\"x\": 1};b|{};", 0);
}

TEST(tcs_hermes_xml) {
    expect(HEARTH_TC_HERMES, "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
           "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>", "{B0:get_weather}{E0}",
           "get_weather|{\"city\":\"Paris\",\"days\":3};", 2);
}

TEST(tcs_llama3) {
    expect(HEARTH_TC_LLAMA3, "{\"name\": \"a\", \"parameters\": {\"n\": 12345}}; {\"name\": \"b\", \"parameters\": {}}",
           "{B0:a}{E0}{B1:b}{E1}", "a|{\"n\": 12345};b|{};", 8);
    expect(HEARTH_TC_LLAMA3, "<|python_tag|>{\"name\": \"f\", \"arguments\": {\"q\": \"long text here\"}}",
           "{B0:f}{E0}", "f|{\"q\": \"long text here\"};", 10);
}

TEST(tcs_mistral) {
    expect(HEARTH_TC_MISTRAL, "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, "
           "{\"name\": \"b\", \"arguments\": {\"k\": [1, 2]}}]", "{B0:get_weather}{E0}{B1:b}{E1}",
           "get_weather|{\"city\": \"Paris\"};b|{\"k\": [1, 2]};", 10);
    expect(HEARTH_TC_MISTRAL, "[TOOL_CALLS]get_weather[CALL_ID]abc123xyz[ARGS]{\"city\": \"Paris\"}"
           "[TOOL_CALLS]f[ARGS]{}", "{B0:get_weather}{E0}{B1:f}{E1}", "get_weather|{\"city\": \"Paris\"};f|{};", 8);
}

TEST(tcs_gemma) {
    expect(HEARTH_TC_GEMMA, "I'll look.\n```tool_code\nget_weather(city=\"Paris\", days=3, tags=['a', \"b\"])\n"
           "b(x=1)\n```\nDone", "I'll look.\n{B0:get_weather}{E0}{B1:b}{E1}\nDone",
           "get_weather|{\"city\":\"Paris\",\"days\":3,\"tags\":[\"a\",\"b\"]};b|{\"x\":1};", 2);
    expect(HEARTH_TC_GEMMA, "<start_function_call>call:get_weather{city:<escape>Paris, FR<escape>,days:3,"
           "o:{deep:true}}<end_function_call>", "{B0:get_weather}{E0}",
           "get_weather|{\"city\":\"Paris, FR\",\"days\":3,\"o\":{\"deep\":true}};", 2);
    expect(HEARTH_TC_GEMMA, "<|tool_call>call:f{q:<|\"|>a}b<|\"|>,n:-2.5e3}<tool_call|>", "{B0:f}{E0}",
           "f|{\"q\":\"a}b\",\"n\":-2.5e3};", 1);
}

/* harmony: a call is announced once its JSON is complete (the tail may still be <|call|>), so
 * its arguments come in one piece; without <|call|> (a decoder that stopped on it) too */
TEST(tcs_harmony) {
    expect(HEARTH_TC_HARMONY, "Checking.<|channel|>commentary to=functions.get_weather <|constrain|>json"
           "<|message|>{\"city\": \"Paris\"}<|call|>", "Checking.{B0:get_weather}{E0}",
           "get_weather|{\"city\": \"Paris\"};", 0);
    expect(HEARTH_TC_HARMONY, " to=functions.f<|channel|>commentary json<|message|>{\"n\": [1, 2]}", "{B0:f}{E0}",
           "f|{\"n\": [1, 2]};", 0);
}

TEST(tcs_not_calls_stay_content) {
    expect(HEARTH_TC_HERMES, "x <tool_call>{oops}</tool_call> y", "x <tool_call>{oops}</tool_call> y", "", 0);
    expect(HEARTH_TC_HERMES, "<tool_call>{\"arguments\":{}}</tool_call>", "<tool_call>{\"arguments\":{}}</tool_call>",
           "", 0);
    expect(HEARTH_TC_LLAMA3, "{\"answer\": 42}", "{\"answer\": 42}", "", 0);
    expect(HEARTH_TC_LLAMA3, "  The set {1, 2} has two elements.", "  The set {1, 2} has two elements.", "", 0);
    expect(HEARTH_TC_GEMMA, "```tool_code\nf(1)\n```", "```tool_code\nf(1)\n```", "", 0);
    expect(HEARTH_TC_MISTRAL, "Hi [TOOL_CALLS] [{\"nom\": 1}]", "Hi [TOOL_CALLS] [{\"nom\": 1}]", "", 0);
}

TEST(tcs_cut_off_call_keeps_what_was_sent) {
    /* max_tokens ended the reply inside the arguments: the announced call stands, as sent */
    expect(HEARTH_TC_HERMES, "a <tool_call>{\"name\":\"f\",\"arguments\":{\"a\":1", "a {B0:f}{E0}", "f|{\"a\":1;", 3);
    /* ...but markup cut off before the arguments began was never a call: content */
    expect(HEARTH_TC_HERMES, "a <tool_call>{\"name\":", "a <tool_call>{\"name\":", "", 0);
}

TEST(tcs_ids) {
    run_result r;
    run(HEARTH_TC_MISTRAL, "[TOOL_CALLS]f[CALL_ID]abc123xyz[ARGS]{}[TOOL_CALLS]g[ARGS]{}", NULL, 0, &r);
    CHECK_STR(r.ids[0], "abc123xyz"); /* the model's own id when it comes first */
    CHECK_EQ(strlen(r.ids[1]), 9);
    run(HEARTH_TC_HERMES, "<tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call>", NULL, 0, &r);
    CHECK(!strncmp(r.ids[0], "call_", 5) && strlen(r.ids[0]) == 29);
    CHECK(!r.bad_order);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
