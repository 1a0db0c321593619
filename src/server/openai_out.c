/*
 * openai_out.c - OpenAI's response shapes for a generation (generate.h's writer): the
 * chat.completion and text_completion bodies and their stream chunks.
 *
 * Stream grammar: for chat a first chunk with delta {"role":"assistant","content":""}, then
 * content deltas, then a chunk with an empty delta and finish_reason, then (with
 * stream_options.include_usage) a chunk with "choices":[] and usage - every other chunk then
 * carries "usage":null - and finally data: [DONE]. Completions stream text_completion chunks
 * with "text" the same way. An engine failure mid-stream is one data: {"error":{...}} frame.
 */
#include "server/openai.h"
#include "server/sse.h"

#include <stdlib.h>

static const char *finish_reason(const hearth_gen_out *g) {
    return g->end == HEARTH_GEN_END_LENGTH ? "length" : "stop";
}

static bool is_chat(const hearth_gen_out *g) { return g->spec->dialect == &hearth_openai_chat_out; }

static void usage_json(const hearth_gen_out *g, hearth_jw *w) {
    hearth_jw_key(w, "usage");
    hearth_jw_obj(w);
    hearth_jw_key(w, "prompt_tokens");
    hearth_jw_int(w, (int64_t)g->spec->n_prompt);
    hearth_jw_key(w, "completion_tokens");
    hearth_jw_int(w, g->n_gen);
    hearth_jw_key(w, "total_tokens");
    hearth_jw_int(w, (int64_t)g->spec->n_prompt + g->n_gen);
    hearth_jw_key(w, "prompt_tokens_details");
    hearth_jw_obj(w);
    hearth_jw_key(w, "cached_tokens");
    hearth_jw_int(w, g->n_cached);
    hearth_jw_obj_end(w);
    hearth_jw_obj_end(w);
}

/* {"id":..,"object":..,"created":..,"model":..,"choices":[ -- the caller writes the choices. */
static void head_json(const hearth_gen_out *g, hearth_jw *w, const char *object) {
    hearth_jw_obj(w);
    hearth_jw_key(w, "id");
    hearth_jw_cstr(w, g->id);
    hearth_jw_key(w, "object");
    hearth_jw_cstr(w, object);
    hearth_jw_key(w, "created");
    hearth_jw_int(w, g->created);
    hearth_jw_key(w, "model");
    hearth_jw_cstr(w, g->srv->model_id);
    hearth_jw_key(w, "system_fingerprint");
    hearth_jw_cstr(w, "hearth-" HEARTH_VERSION);
    hearth_jw_key(w, "choices");
    hearth_jw_arr(w);
}

/* One stream chunk. role: write the role delta; text: content (may be NULL); finish or NULL. */
static void chunk(const hearth_gen_out *g, hearth_jw *w, bool role, const hearth_span *text, const char *finish) {
    const hearth_openai_out *o = g->ctx;
    bool chat = is_chat(g);
    hearth_sse_begin(w);
    head_json(g, w, chat ? "chat.completion.chunk" : "text_completion");
    hearth_jw_obj(w);
    hearth_jw_key(w, "index");
    hearth_jw_int(w, 0);
    if (chat) {
        hearth_jw_key(w, "delta");
        hearth_jw_obj(w);
        if (role) {
            hearth_jw_key(w, "role");
            hearth_jw_cstr(w, "assistant");
        }
        if (text || role) {
            hearth_jw_key(w, "content");
            hearth_jw_str(w, text ? text->ptr : "", text ? text->len : 0);
        }
        hearth_jw_obj_end(w);
    } else {
        hearth_jw_key(w, "text");
        hearth_jw_str(w, text ? text->ptr : "", text ? text->len : 0);
    }
    hearth_jw_key(w, "logprobs");
    hearth_jw_null(w);
    hearth_jw_key(w, "finish_reason");
    hearth_jw_cstr(w, finish);
    hearth_jw_obj_end(w);
    hearth_jw_arr_end(w);
    if (o->include_usage) {
        hearth_jw_key(w, "usage");
        hearth_jw_null(w);
    }
    hearth_jw_obj_end(w);
    hearth_sse_end(w);
}

static void stream_start(hearth_gen_out *g, hearth_jw *w) {
    if (is_chat(g)) chunk(g, w, true, NULL, NULL);
}

static void stream_text(hearth_gen_out *g, hearth_jw *w, hearth_span piece) { chunk(g, w, false, &piece, NULL); }

static void stream_end(hearth_gen_out *g, hearth_jw *w) {
    const hearth_openai_out *o = g->ctx;
    chunk(g, w, false, NULL, finish_reason(g));
    if (o->include_usage) {
        hearth_sse_begin(w);
        head_json(g, w, is_chat(g) ? "chat.completion.chunk" : "text_completion");
        hearth_jw_arr_end(w);
        usage_json(g, w);
        hearth_jw_obj_end(w);
        hearth_sse_end(w);
    }
    hearth_sse_done(w);
}

static void stream_error(hearth_gen_out *g, hearth_jw *w, const hearth_api_err *e) {
    (void)g;
    hearth_sse_begin(w); /* OpenAI's in-stream error event */
    hearth_api_err_json(w, e);
    hearth_sse_end(w);
}

static void body(hearth_gen_out *g, hearth_jw *w) {
    bool chat = is_chat(g);
    head_json(g, w, chat ? "chat.completion" : "text_completion");
    hearth_jw_obj(w);
    hearth_jw_key(w, "index");
    hearth_jw_int(w, 0);
    if (chat) {
        hearth_jw_key(w, "message");
        hearth_jw_obj(w);
        hearth_jw_key(w, "role");
        hearth_jw_cstr(w, "assistant");
        hearth_jw_key(w, "content");
        hearth_jw_str(w, g->text.ptr, g->text.len);
        hearth_jw_key(w, "refusal");
        hearth_jw_null(w);
        hearth_jw_obj_end(w);
    } else {
        hearth_jw_key(w, "text");
        hearth_jw_str(w, g->text.ptr, g->text.len);
    }
    hearth_jw_key(w, "logprobs");
    hearth_jw_null(w);
    hearth_jw_key(w, "finish_reason");
    hearth_jw_cstr(w, finish_reason(g));
    hearth_jw_obj_end(w);
    hearth_jw_arr_end(w);
    usage_json(g, w);
    hearth_jw_obj_end(w);
}

static void ctx_free(void *ctx) { free(ctx); }

const hearth_gen_dialect hearth_openai_chat_out = {
    .id_prefix = "chatcmpl-", .start = stream_start, .text = stream_text, .end = stream_end,
    .error = stream_error, .body = body, .ctx_free = ctx_free,
};

const hearth_gen_dialect hearth_openai_text_out = {
    .id_prefix = "cmpl-", .start = stream_start, .text = stream_text, .end = stream_end,
    .error = stream_error, .body = body, .ctx_free = ctx_free,
};
