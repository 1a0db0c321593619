/*
 * responses_out.c - the Responses API's shapes for a generation (generate.h's writer), and
 * what a completed response leaves in the store.
 *
 * The response object: {"id":"resp_...","object":"response","created_at","status",
 * "error","incomplete_details","instructions","max_output_tokens","model","output":[message
 * item],"previous_response_id","store","temperature","top_p","text","tool_choice","tools",
 * "truncation","usage","metadata",...}; status is "completed", or "incomplete" with
 * incomplete_details.reason "max_output_tokens" when the token limit ended it.
 *
 * Stream, each frame "event: TYPE\ndata: {"type":TYPE,"sequence_number":N,...}" with N
 * counting from 0:
 *
 *   response.created, response.in_progress              (the response, status in_progress)
 *   with reasoning (at its first piece): response.output_item.added (a reasoning item),
 *     response.content_part.added (reasoning_text), response.reasoning_text.delta*,
 *     response.reasoning_text.done, response.content_part.done, response.output_item.done
 *     (closed when the answer's first text or call begins)
 *   response.output_item.added, response.content_part.added   (at the first text)
 *   response.output_text.delta*
 *   per tool call: response.output_item.added (as soon as its name is known),
 *     response.function_call_arguments.delta* (its arguments as the model writes them),
 *     response.function_call_arguments.done, response.output_item.done
 *   response.output_text.done, response.content_part.done, response.output_item.done
 *   response.completed | response.incomplete            (the full response)
 *
 * Output items take their output_index in the order they begin; the message item (present
 * when there is text, or nothing else) stays open while calls are announced after it. The
 * model's reasoning is a `reasoning` item, {"id":"rs_...","type":"reasoning","summary":[],
 * "content":[{"type":"reasoning_text","text"}],"status"}: the raw reasoning as OpenAI returns
 * it for open-weight models (hearth writes no summaries), first in the output.
 *
 * An engine failure after the start is response.failed with the error.
 */
#include "server/responses.h"
#include "server/chatmap.h"
#include "server/resp_store.h"
#include "server/sse.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hearth_responses_out *ctx_of(const hearth_gen_out *g) { return g->ctx; }

/* A float sampling value as the request wrote it (0.7f is 0.69999998 as a double). */
static double round6(float v) { return round((double)v * 1e6) / 1e6; }

static const char *status_of(const hearth_gen_out *g) {
    return g->end == HEARTH_GEN_END_LENGTH ? "incomplete" : "completed";
}

static void raw_or_null(hearth_jw *w, const char *json, const char *dflt) {
    if (json) hearth_jw_json(w, json, strlen(json));
    else if (dflt) hearth_jw_json(w, dflt, strlen(dflt));
    else hearth_jw_null(w);
}

/* {"type":"output_text","text":...,"annotations":[],"logprobs":[]} */
static void part_json(hearth_jw *w, hearth_span text) {
    hearth_jw_obj(w);
    hearth_jw_key(w, "type");
    hearth_jw_cstr(w, "output_text");
    hearth_jw_key(w, "text");
    hearth_jw_str(w, text.ptr, text.len);
    hearth_jw_key(w, "annotations");
    hearth_jw_arr(w);
    hearth_jw_arr_end(w);
    hearth_jw_key(w, "logprobs");
    hearth_jw_arr(w);
    hearth_jw_arr_end(w);
    hearth_jw_obj_end(w);
}

/* The message item; done: completed with its text, else in progress and empty. */
static void item_json(const hearth_gen_out *g, hearth_jw *w, bool done) {
    hearth_jw_obj(w);
    hearth_jw_key(w, "id");
    hearth_jw_cstr(w, ctx_of(g)->msg_id);
    hearth_jw_key(w, "type");
    hearth_jw_cstr(w, "message");
    hearth_jw_key(w, "status");
    hearth_jw_cstr(w, done ? status_of(g) : "in_progress");
    hearth_jw_key(w, "role");
    hearth_jw_cstr(w, "assistant");
    hearth_jw_key(w, "content");
    hearth_jw_arr(w);
    if (done) part_json(w, g->text);
    hearth_jw_arr_end(w);
    hearth_jw_obj_end(w);
}

/* A function_call item: done with its arguments, else in progress with none yet. */
static void call_item_json(hearth_jw *w, const char *call_id, const char *name, hearth_span args, bool done) {
    char id[96];
    snprintf(id, sizeof id, "fc_%s", call_id);
    hearth_jw_obj(w);
    hearth_jw_key(w, "id");
    hearth_jw_cstr(w, id);
    hearth_jw_key(w, "type");
    hearth_jw_cstr(w, "function_call");
    hearth_jw_key(w, "status");
    hearth_jw_cstr(w, done ? "completed" : "in_progress");
    hearth_jw_key(w, "call_id");
    hearth_jw_cstr(w, call_id);
    hearth_jw_key(w, "name");
    hearth_jw_cstr(w, name);
    hearth_jw_key(w, "arguments");
    hearth_jw_str(w, done ? args.ptr : "", done ? args.len : 0);
    hearth_jw_obj_end(w);
}

/* {"type":"reasoning_text","text"} */
static void rs_part_json(hearth_jw *w, hearth_span text) {
    hearth_jw_obj(w);
    hearth_jw_key(w, "type");
    hearth_jw_cstr(w, "reasoning_text");
    hearth_jw_key(w, "text");
    hearth_jw_str(w, text.ptr, text.len);
    hearth_jw_obj_end(w);
}

/* The reasoning item; done: completed with the reasoning, else in progress and empty. */
static void rs_item_json(const hearth_gen_out *g, hearth_jw *w, bool done) {
    hearth_jw_obj(w);
    hearth_jw_key(w, "id");
    hearth_jw_cstr(w, ctx_of(g)->rs_id);
    hearth_jw_key(w, "type");
    hearth_jw_cstr(w, "reasoning");
    hearth_jw_key(w, "summary");
    hearth_jw_arr(w);
    hearth_jw_arr_end(w);
    hearth_jw_key(w, "content");
    hearth_jw_arr(w);
    if (done) rs_part_json(w, g->reasoning);
    hearth_jw_arr_end(w);
    hearth_jw_key(w, "status");
    hearth_jw_cstr(w, done ? "completed" : "in_progress");
    hearth_jw_obj_end(w);
}

/* The final output items in output_index order. */
static void output_json(const hearth_gen_out *g, hearth_jw *w) {
    const hearth_responses_out *o = ctx_of(g);
    int rs_at = !g->reasoning.len ? -1 : o->rs_index >= 0 ? o->rs_index : 0;
    int msg_at = o->item_open ? o->msg_index : (g->text.len || !g->n_calls) ? (rs_at == 0) : -1;
    int n = g->n_calls + (msg_at >= 0) + (rs_at >= 0), k = 0;
    for (int i = 0; i < n; i++) {
        if (i == rs_at) rs_item_json(g, w, true);
        else if (i == msg_at) item_json(g, w, true);
        else {
            const hearth_tool_call *c = &g->calls[k++];
            call_item_json(w, c->id, c->name, hearth_span_cstr(c->arguments), true);
        }
    }
}

static void usage_json(const hearth_gen_out *g, hearth_jw *w) {
    hearth_jw_obj(w);
    hearth_jw_key(w, "input_tokens");
    hearth_jw_int(w, (int64_t)g->spec->n_prompt);
    hearth_jw_key(w, "input_tokens_details");
    hearth_jw_obj(w);
    hearth_jw_key(w, "cached_tokens");
    hearth_jw_int(w, g->n_cached);
    hearth_jw_obj_end(w);
    hearth_jw_key(w, "output_tokens");
    hearth_jw_int(w, g->n_gen);
    hearth_jw_key(w, "output_tokens_details");
    hearth_jw_obj(w);
    hearth_jw_key(w, "reasoning_tokens");
    hearth_jw_int(w, g->n_reasoning);
    hearth_jw_obj_end(w);
    hearth_jw_key(w, "total_tokens");
    hearth_jw_int(w, (int64_t)g->spec->n_prompt + g->n_gen);
    hearth_gen_speculation_json(g, w);
    hearth_jw_obj_end(w);
}

/* The response object with status: "in_progress" (no output yet), "failed" (error e), or
 * the final one (NULL: completed / incomplete). */
static void response_json(const hearth_gen_out *g, hearth_jw *w, const char *status, const hearth_api_err *e) {
    const hearth_responses_out *o = ctx_of(g);
    bool final = !status;
    if (final) status = status_of(g);
    hearth_jw_obj(w);
    hearth_jw_key(w, "id");
    hearth_jw_cstr(w, g->id);
    hearth_jw_key(w, "object");
    hearth_jw_cstr(w, "response");
    hearth_jw_key(w, "created_at");
    hearth_jw_int(w, g->created);
    hearth_jw_key(w, "status");
    hearth_jw_cstr(w, status);
    hearth_jw_key(w, "background");
    hearth_jw_bool(w, false);
    hearth_jw_key(w, "error");
    if (e) hearth_api_err_json_response(w, e);
    else hearth_jw_null(w);
    hearth_jw_key(w, "incomplete_details");
    if (final && g->end == HEARTH_GEN_END_LENGTH) {
        hearth_jw_obj(w);
        hearth_jw_key(w, "reason");
        hearth_jw_cstr(w, "max_output_tokens");
        hearth_jw_obj_end(w);
    } else hearth_jw_null(w);
    hearth_jw_key(w, "instructions");
    hearth_jw_cstr(w, o->instructions);
    hearth_jw_key(w, "max_output_tokens");
    if (o->max_output_tokens) hearth_jw_int(w, o->max_output_tokens);
    else hearth_jw_null(w);
    hearth_jw_key(w, "model");
    hearth_jw_cstr(w, g->srv->model_id);
    hearth_jw_key(w, "output");
    hearth_jw_arr(w);
    if (final) output_json(g, w);
    hearth_jw_arr_end(w);
    hearth_jw_key(w, "parallel_tool_calls");
    hearth_jw_bool(w, true);
    hearth_jw_key(w, "previous_response_id");
    hearth_jw_cstr(w, o->previous_id);
    hearth_jw_key(w, "reasoning");
    raw_or_null(w, "{\"effort\":null,\"summary\":null}", NULL);
    hearth_jw_key(w, "store");
    hearth_jw_bool(w, o->store);
    hearth_jw_key(w, "temperature");
    hearth_jw_num(w, round6(g->spec->sampling.temperature));
    hearth_jw_key(w, "text");
    raw_or_null(w, "{\"format\":{\"type\":\"text\"}}", NULL);
    hearth_jw_key(w, "tool_choice");
    hearth_jw_cstr(w, "auto");
    hearth_jw_key(w, "tools");
    raw_or_null(w, o->tools, "[]");
    hearth_jw_key(w, "top_p");
    hearth_jw_num(w, round6(g->spec->sampling.top_p));
    hearth_jw_key(w, "truncation");
    hearth_jw_cstr(w, "disabled");
    hearth_jw_key(w, "usage");
    if (final) usage_json(g, w);
    else hearth_jw_null(w);
    hearth_jw_key(w, "user");
    hearth_jw_null(w);
    hearth_jw_key(w, "metadata");
    raw_or_null(w, o->metadata, "{}");
    hearth_jw_obj_end(w);
}

/* event: NAME / data: {"type":NAME,"sequence_number":N -- closed by frame_end. */
static void frame(const hearth_gen_out *g, hearth_jw *w, const char *name) {
    hearth_sse_event(w, name);
    hearth_jw_obj(w);
    hearth_jw_key(w, "type");
    hearth_jw_cstr(w, name);
    hearth_jw_key(w, "sequence_number");
    hearth_jw_int(w, ctx_of(g)->seq++);
}

static void frame_end(hearth_jw *w) {
    hearth_jw_obj_end(w);
    hearth_sse_end(w);
}

/* "item_id", "output_index", "content_index" of the one text part. */
static void part_ids(const hearth_gen_out *g, hearth_jw *w) {
    hearth_jw_key(w, "item_id");
    hearth_jw_cstr(w, ctx_of(g)->msg_id);
    hearth_jw_key(w, "output_index");
    hearth_jw_int(w, ctx_of(g)->msg_index);
    hearth_jw_key(w, "content_index");
    hearth_jw_int(w, 0);
}

/* "item_id", "output_index", "content_index" of the reasoning text. */
static void rs_ids(const hearth_gen_out *g, hearth_jw *w) {
    hearth_jw_key(w, "item_id");
    hearth_jw_cstr(w, ctx_of(g)->rs_id);
    hearth_jw_key(w, "output_index");
    hearth_jw_int(w, ctx_of(g)->rs_index);
    hearth_jw_key(w, "content_index");
    hearth_jw_int(w, 0);
}

/* The two items with one text part, the message and the reasoning: their events differ only
 * in names, ids and shapes, so one sequence writes both. */
typedef struct {
    void (*ids)(const hearth_gen_out *g, hearth_jw *w);
    void (*part)(hearth_jw *w, hearth_span text);
    void (*item)(const hearth_gen_out *g, hearth_jw *w, bool done);
    const char *delta_event, *done_event; /* response.output_text.delta / .done, ... */
    bool logprobs;                        /* the text events carry "logprobs":[] */
} text_item;

static const text_item MESSAGE = {part_ids, part_json, item_json,
                                  "response.output_text.delta", "response.output_text.done", true};
static const text_item REASONING = {rs_ids, rs_part_json, rs_item_json,
                                    "response.reasoning_text.delta", "response.reasoning_text.done", false};

/* response.output_item.added / .done frame up to its "item" key. */
static void item_frame(hearth_gen_out *g, hearth_jw *w, const char *name, int index) {
    frame(g, w, name);
    hearth_jw_key(w, "output_index");
    hearth_jw_int(w, index);
    hearth_jw_key(w, "item");
}

/* A text event: the delta or the full text, keyed `key`. */
static void text_event(hearth_gen_out *g, hearth_jw *w, const text_item *k, const char *name, const char *key,
                       hearth_span text) {
    frame(g, w, name);
    k->ids(g, w);
    hearth_jw_key(w, key);
    hearth_jw_str(w, text.ptr, text.len);
    if (k->logprobs) {
        hearth_jw_key(w, "logprobs");
        hearth_jw_arr(w);
        hearth_jw_arr_end(w);
    }
    frame_end(w);
}

static void part_event(hearth_gen_out *g, hearth_jw *w, const text_item *k, const char *name, hearth_span text) {
    frame(g, w, name);
    k->ids(g, w);
    hearth_jw_key(w, "part");
    k->part(w, text);
    frame_end(w);
}

static void open_text_item(hearth_gen_out *g, hearth_jw *w, const text_item *k, int index) {
    item_frame(g, w, "response.output_item.added", index);
    k->item(g, w, false);
    frame_end(w);
    part_event(g, w, k, "response.content_part.added", (hearth_span){"", 0});
}

static void close_text_item(hearth_gen_out *g, hearth_jw *w, const text_item *k, int index, hearth_span text) {
    text_event(g, w, k, k->done_event, "text", text);
    part_event(g, w, k, "response.content_part.done", text);
    item_frame(g, w, "response.output_item.done", index);
    k->item(g, w, true);
    frame_end(w);
}

static void stream_start(hearth_gen_out *g, hearth_jw *w) {
    static const char *const names[] = {"response.created", "response.in_progress"};
    for (int i = 0; i < 2; i++) {
        frame(g, w, names[i]);
        hearth_jw_key(w, "response");
        response_json(g, w, "in_progress", NULL);
        frame_end(w);
    }
}

static void stream_reasoning(hearth_gen_out *g, hearth_jw *w, hearth_span piece) {
    hearth_responses_out *o = ctx_of(g);
    if (o->rs_index < 0) {
        o->rs_open = true;
        o->rs_index = o->n_items++;
        open_text_item(g, w, &REASONING, o->rs_index);
    }
    if (!o->rs_open) return; /* reasoning after the answer began: kept for the final item only */
    text_event(g, w, &REASONING, REASONING.delta_event, "delta", piece);
}

/* The reasoning item is done once the answer begins. */
static void close_reasoning(hearth_gen_out *g, hearth_jw *w) {
    hearth_responses_out *o = ctx_of(g);
    if (!o->rs_open) return;
    o->rs_open = false;
    close_text_item(g, w, &REASONING, o->rs_index, g->reasoning);
}

static void open_item(hearth_gen_out *g, hearth_jw *w) {
    hearth_responses_out *o = ctx_of(g);
    close_reasoning(g, w);
    if (o->item_open) return;
    o->item_open = true;
    o->msg_index = o->n_items++;
    open_text_item(g, w, &MESSAGE, o->msg_index);
}

static void stream_text(hearth_gen_out *g, hearth_jw *w, hearth_span piece) {
    open_item(g, w);
    text_event(g, w, &MESSAGE, MESSAGE.delta_event, "delta", piece);
}

static void close_item(hearth_gen_out *g, hearth_jw *w) {
    close_text_item(g, w, &MESSAGE, ctx_of(g)->msg_index, g->text);
}

/* "item_id", "output_index" of the open function_call item. */
static void call_ids(const hearth_gen_out *g, hearth_jw *w, const char *call_id) {
    char id[96];
    snprintf(id, sizeof id, "fc_%s", call_id);
    hearth_jw_key(w, "item_id");
    hearth_jw_cstr(w, id);
    hearth_jw_key(w, "output_index");
    hearth_jw_int(w, ctx_of(g)->call_at);
}

static void stream_tool(hearth_gen_out *g, hearth_jw *w, const hearth_tc_delta *d) {
    hearth_responses_out *o = ctx_of(g);
    if (d->kind == HEARTH_TC_BEGIN) {
        close_reasoning(g, w);
        o->call_at = o->n_items++;
        item_frame(g, w, "response.output_item.added", o->call_at);
        call_item_json(w, d->id, d->name, d->args, false);
        frame_end(w);
        return;
    }
    if (d->kind == HEARTH_TC_ARGS) {
        frame(g, w, "response.function_call_arguments.delta");
        call_ids(g, w, d->id);
        hearth_jw_key(w, "delta");
        hearth_jw_str(w, d->args.ptr, d->args.len);
        frame_end(w);
        return;
    }
    frame(g, w, "response.function_call_arguments.done");
    call_ids(g, w, d->id);
    hearth_jw_key(w, "name");
    hearth_jw_cstr(w, d->name);
    hearth_jw_key(w, "arguments");
    hearth_jw_str(w, d->args.ptr, d->args.len);
    frame_end(w);
    item_frame(g, w, "response.output_item.done", o->call_at);
    call_item_json(w, d->id, d->name, d->args, true);
    frame_end(w);
}

static void stream_end(hearth_gen_out *g, hearth_jw *w) {
    hearth_responses_out *o = ctx_of(g);
    close_reasoning(g, w);
    if (g->text.len || !g->n_calls) open_item(g, w);
    if (o->item_open) close_item(g, w);
    frame(g, w, g->end == HEARTH_GEN_END_LENGTH ? "response.incomplete" : "response.completed");
    hearth_jw_key(w, "response");
    response_json(g, w, NULL, NULL);
    frame_end(w);
}


static void stream_error(hearth_gen_out *g, hearth_jw *w, const hearth_api_err *e) {
    frame(g, w, "response.failed");
    hearth_jw_key(w, "response");
    response_json(g, w, "failed", e);
    frame_end(w);
}

static void body(hearth_gen_out *g, hearth_jw *w) { response_json(g, w, NULL, NULL); }

/* Keep the conversation (this turn's answer appended) and the response for later requests. */
static void finished(hearth_gen_out *g) {
    hearth_responses_out *o = ctx_of(g);
    if (!o->store) return;
    cJSON *a = cJSON_CreateObject();
    char *text = malloc(g->text.len + 1);
    if (text) {
        memcpy(text, g->text.ptr, g->text.len);
        text[g->text.len] = 0;
    }
    char *rs = g->reasoning.len ? malloc(g->reasoning.len + 1) : NULL;
    if (rs) {
        memcpy(rs, g->reasoning.ptr, g->reasoning.len);
        rs[g->reasoning.len] = 0;
    }
    bool rs_ok = !g->reasoning.len || (rs && cJSON_AddStringToObject(a, "reasoning_content", rs));
    free(rs);
    if (!a || !text || !rs_ok || !cJSON_AddStringToObject(a, "role", "assistant") ||
        !cJSON_AddStringToObject(a, "content", text) || !cJSON_AddItemToArray(o->conv, a)) {
        cJSON_Delete(a);
        free(text);
        return;
    }
    free(text);
    hearth_api_err e;
    for (int i = 0; i < g->n_calls; i++) {
        cJSON *args = cJSON_CreateString(g->calls[i].arguments);
        bool ok = args && hearth_chatmap_tool_call(a, g->calls[i].id, g->calls[i].name, args, (hearth_span){NULL, 0},
                                                   "output", &e);
        cJSON_Delete(args);
        if (!ok) return;
    }
    char *conv = cJSON_PrintUnformatted(o->conv);
    hearth_jw w;
    hearth_jw_init(&w);
    response_json(g, &w, NULL, NULL);
    if (conv && !w.b.oom) hearth_resp_store_put(g->srv->responses, g->id, conv, w.b.p);
    hearth_jw_fini(&w);
    cJSON_free(conv);
}

static void ctx_free(void *ctx) {
    hearth_responses_out *o = ctx;
    cJSON_Delete(o->conv);
    free(o->instructions);
    free(o->previous_id);
    free(o->tools);
    free(o->metadata);
    free(o);
}

const hearth_gen_dialect hearth_responses_writer = {
    .id_prefix = "resp_", .start = stream_start, .text = stream_text, .end = stream_end,
    .error = stream_error, .body = body, .reasoning = stream_reasoning, .tool_delta = stream_tool, .finished = finished, .ctx_free = ctx_free,
};
