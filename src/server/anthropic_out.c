/*
 * anthropic_out.c - Anthropic's Messages shapes for a generation (generate.h's writer).
 *
 * Non-streaming: {"id":"msg_...","type":"message","role":"assistant","model",
 * "content":[{"type":"text","text"}],"stop_reason","stop_sequence","usage"}.
 *
 * Streaming, each frame "event: NAME\ndata: {"type":"NAME",...}\n\n":
 *
 *   message_start (the message with empty content and the input usage), ping,
 *   per content block: content_block_start, content_block_delta*, content_block_stop,
 *   message_delta (stop_reason, stop_sequence, final usage), message_stop;
 *   an engine failure after the start is one `error` event.
 *
 * Block kinds: `thinking` (the model's reasoning, thinking_delta), `text` (text_delta) and
 * `tool_use` (a parsed tool call: content_block_start with "input": {} as soon as its name is
 * known, then input_json_delta events whose partial_json pieces are its arguments as the model
 * writes them, then content_block_stop when they are complete). A block opens when its first piece
 * arrives and closes when another kind begins, so a reply that is only a tool call has no
 * empty text block in front of it; a reply with tool calls stops with "tool_use". Usage follows Anthropic's split: input_tokens counts the
 * prompt tokens the prefix cache did not serve, cache_read_input_tokens the ones it did;
 * their sum is what count_tokens reports for the same request.
 */
#include "server/anthropic.h"
#include "server/sse.h"

#include <stdlib.h>
#include <string.h>

static const char *stop_reason(const hearth_gen_out *g) {
    if (g->n_calls > 0) return "tool_use";
    switch (g->end) {
    case HEARTH_GEN_END_STOP: return "stop_sequence";
    case HEARTH_GEN_END_LENGTH: return "max_tokens";
    default: return "end_turn";
    }
}

static void stop_sequence(const hearth_gen_out *g, hearth_jw *w) {
    hearth_jw_key(w, "stop_sequence");
    if (g->end == HEARTH_GEN_END_STOP) hearth_jw_str(w, g->stop.ptr, g->stop.len);
    else hearth_jw_null(w);
}

/* final: the output's (with the speculation counts), else message_start's. */
static void usage_json(const hearth_gen_out *g, hearth_jw *w, int32_t n_out, bool final) {
    hearth_jw_key(w, "usage");
    hearth_jw_obj(w);
    hearth_jw_key(w, "input_tokens");
    hearth_jw_int(w, (int64_t)g->spec->n_prompt - g->n_cached);
    hearth_jw_key(w, "cache_creation_input_tokens");
    hearth_jw_int(w, 0);
    hearth_jw_key(w, "cache_read_input_tokens");
    hearth_jw_int(w, g->n_cached);
    hearth_jw_key(w, "output_tokens");
    hearth_jw_int(w, n_out);
    if (final) hearth_gen_speculation_json(g, w);
    hearth_jw_obj_end(w);
}

/* {"type":"thinking","thinking":...,"signature":""}: hearth signs nothing, and thinking
 * blocks sent back are dropped, so an empty signature round-trips. */
static void thinking_json(hearth_jw *w, hearth_span text) {
    hearth_jw_obj(w);
    hearth_jw_key(w, "type");
    hearth_jw_cstr(w, "thinking");
    hearth_jw_key(w, "thinking");
    hearth_jw_str(w, text.ptr, text.len);
    hearth_jw_key(w, "signature");
    hearth_jw_cstr(w, "");
    hearth_jw_obj_end(w);
}

/* {"type":"tool_use","id","name","input"}: input the call's arguments (JSON text), {} when
 * streaming (they follow as input_json_delta). */
static void tool_use_json(hearth_jw *w, const char *id, const char *name, const char *input) {
    hearth_jw_obj(w);
    hearth_jw_key(w, "type");
    hearth_jw_cstr(w, "tool_use");
    hearth_jw_key(w, "id");
    hearth_jw_cstr(w, id);
    hearth_jw_key(w, "name");
    hearth_jw_cstr(w, name);
    hearth_jw_key(w, "input");
    hearth_jw_json(w, input, strlen(input));
    hearth_jw_obj_end(w);
}

/* The message object; final: with its content, stop reason and output usage. */
static void message_json(const hearth_gen_out *g, hearth_jw *w, bool final) {
    hearth_jw_obj(w);
    hearth_jw_key(w, "id");
    hearth_jw_cstr(w, g->id);
    hearth_jw_key(w, "type");
    hearth_jw_cstr(w, "message");
    hearth_jw_key(w, "role");
    hearth_jw_cstr(w, "assistant");
    hearth_jw_key(w, "model");
    hearth_jw_cstr(w, g->srv->model_id);
    hearth_jw_key(w, "content");
    hearth_jw_arr(w);
    if (final && g->reasoning.len) thinking_json(w, g->reasoning);
    if (final && g->text.len) {
        hearth_jw_obj(w);
        hearth_jw_key(w, "type");
        hearth_jw_cstr(w, "text");
        hearth_jw_key(w, "text");
        hearth_jw_str(w, g->text.ptr, g->text.len);
        hearth_jw_obj_end(w);
    }
    for (int i = 0; final && i < g->n_calls; i++) tool_use_json(w, g->calls[i].id, g->calls[i].name, g->calls[i].arguments);
    hearth_jw_arr_end(w);
    hearth_jw_key(w, "stop_reason");
    if (final) hearth_jw_cstr(w, stop_reason(g));
    else hearth_jw_null(w);
    if (final) stop_sequence(g, w);
    else {
        hearth_jw_key(w, "stop_sequence");
        hearth_jw_null(w);
    }
    usage_json(g, w, final ? g->n_gen : 0, final);
    hearth_jw_obj_end(w);
}

/* event: NAME / data: {"type":"NAME" -- the caller adds fields and closes with frame_end. */
static void frame(hearth_jw *w, const char *name) {
    hearth_sse_event(w, name);
    hearth_jw_obj(w);
    hearth_jw_key(w, "type");
    hearth_jw_cstr(w, name);
}

static void frame_end(hearth_jw *w) {
    hearth_jw_obj_end(w);
    hearth_sse_end(w);
}

static void block_stop(hearth_gen_out *g, hearth_jw *w) {
    hearth_anthropic_out *o = g->ctx;
    if (!o->open) return;
    o->open = 0;
    frame(w, "content_block_stop");
    hearth_jw_key(w, "index");
    hearth_jw_int(w, o->n_blocks - 1);
    frame_end(w);
}

/* content_block_start of a new block; the caller writes the block object. */
static void block_start(hearth_gen_out *g, hearth_jw *w, char kind) {
    hearth_anthropic_out *o = g->ctx;
    block_stop(g, w);
    frame(w, "content_block_start");
    hearth_jw_key(w, "index");
    hearth_jw_int(w, o->n_blocks++);
    hearth_jw_key(w, "content_block");
    o->open = kind;
}

/* content_block_delta {"type": type, key: piece} into the open block. */
static void block_delta(hearth_gen_out *g, hearth_jw *w, const char *type, const char *key, hearth_span piece) {
    hearth_anthropic_out *o = g->ctx;
    frame(w, "content_block_delta");
    hearth_jw_key(w, "index");
    hearth_jw_int(w, o->n_blocks - 1);
    hearth_jw_key(w, "delta");
    hearth_jw_obj(w);
    hearth_jw_key(w, "type");
    hearth_jw_cstr(w, type);
    hearth_jw_key(w, key);
    hearth_jw_str(w, piece.ptr, piece.len);
    hearth_jw_obj_end(w);
    frame_end(w);
}

static void stream_start(hearth_gen_out *g, hearth_jw *w) {
    frame(w, "message_start");
    hearth_jw_key(w, "message");
    message_json(g, w, false);
    frame_end(w);
    frame(w, "ping");
    frame_end(w);
}

static void stream_text(hearth_gen_out *g, hearth_jw *w, hearth_span piece) {
    hearth_anthropic_out *o = g->ctx;
    if (o->open != 't') {
        block_start(g, w, 't');
        hearth_jw_obj(w);
        hearth_jw_key(w, "type");
        hearth_jw_cstr(w, "text");
        hearth_jw_key(w, "text");
        hearth_jw_cstr(w, "");
        hearth_jw_obj_end(w);
        frame_end(w);
    }
    block_delta(g, w, "text_delta", "text", piece);
}

static void stream_reasoning(hearth_gen_out *g, hearth_jw *w, hearth_span piece) {
    hearth_anthropic_out *o = g->ctx;
    if (o->open != 'r') {
        block_start(g, w, 'r');
        thinking_json(w, (hearth_span){"", 0});
        frame_end(w);
    }
    block_delta(g, w, "thinking_delta", "thinking", piece);
}

static void stream_tool(hearth_gen_out *g, hearth_jw *w, const hearth_tc_delta *d) {
    switch (d->kind) {
    case HEARTH_TC_BEGIN:
        block_start(g, w, 'c');
        tool_use_json(w, d->id, d->name, "{}");
        frame_end(w);
        break;
    case HEARTH_TC_ARGS: block_delta(g, w, "input_json_delta", "partial_json", d->args); break;
    default: block_stop(g, w);
    }
}

static void stream_end(hearth_gen_out *g, hearth_jw *w) {
    block_stop(g, w);
    frame(w, "message_delta");
    hearth_jw_key(w, "delta");
    hearth_jw_obj(w);
    hearth_jw_key(w, "stop_reason");
    hearth_jw_cstr(w, stop_reason(g));
    stop_sequence(g, w);
    hearth_jw_obj_end(w);
    usage_json(g, w, g->n_gen, true);
    frame_end(w);
    frame(w, "message_stop");
    frame_end(w);
}

static void stream_error(hearth_gen_out *g, hearth_jw *w, const hearth_api_err *e) {
    (void)g;
    hearth_sse_event(w, "error");
    hearth_api_err_json_anthropic(w, e);
    hearth_sse_end(w);
}

static void body(hearth_gen_out *g, hearth_jw *w) { message_json(g, w, true); }

static void ctx_free(void *ctx) { free(ctx); }

const hearth_gen_dialect hearth_anthropic_writer = {
    .id_prefix = "msg_", .start = stream_start, .text = stream_text, .end = stream_end,
    .error = stream_error, .body = body, .reasoning = stream_reasoning, .tool_delta = stream_tool,
    .ctx_free = ctx_free,
};
