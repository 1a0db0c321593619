/*
 * openai_out.c - OpenAI's response shapes for a generation (generate.h's writer): the
 * chat.completion and text_completion bodies and their stream chunks.
 *
 * Stream grammar: for chat a first chunk with delta {"role":"assistant","content":""}, then
 * content deltas ({"content"}, {"reasoning_content"}, or "tool_calls" as OpenAI streams them:
 * a call's first delta [{"index", "id", "type": "function", "function": {"name", "arguments":
 * ""}}], then [{"index", "function": {"arguments": piece}}] as the model writes them, the
 * pieces concatenating to the arguments), then a chunk with an empty delta and finish_reason, then (with
 * stream_options.include_usage) a chunk with "choices":[] and usage - every other chunk then
 * carries "usage":null - and finally data: [DONE]. Completions stream text_completion chunks
 * with "text" the same way. An engine failure mid-stream is one data: {"error":{...}} frame.
 * llama-server's extras: with return_progress, chunks with "choices":[] and "prompt_progress"
 * {total, cache, processed, time_ms} while the prompt is prefilled (after the role chunk);
 * "timings" {cache_n, prompt_n, prompt_ms, ..., predicted_per_second} in the body and the
 * finish chunk with --timings, in every chunk with timings_per_token.
 *
 * Several choices (n): every chunk carries one choice, by its "index"; chunks of different
 * choices interleave as their tokens come, each choice has its own role chunk and its own
 * finish chunk, and the usage chunk and [DONE] follow the last one. A body lists the choices
 * in order; usage counts the prompt once and the tokens of every sequence run (best_of's too).
 */
#include "server/openai.h"
#include "server/sse.h"

#include <stdlib.h>

/* A reply that called tools ends with "tool_calls", whatever ended the generation. */
static const char *finish_reason(const hearth_gen_out *g) {
    if (g->n_calls > 0) return "tool_calls";
    return g->end == HEARTH_GEN_END_LENGTH ? "length" : "stop";
}

/* {"id", "type": "function", "function": {"name", "arguments"}} */
static void call_json(hearth_jw *w, const hearth_tool_call *c) {
    hearth_jw_obj(w);
    hearth_jw_key(w, "id");
    hearth_jw_cstr(w, c->id);
    hearth_jw_key(w, "type");
    hearth_jw_cstr(w, "function");
    hearth_jw_key(w, "function");
    hearth_jw_obj(w);
    hearth_jw_key(w, "name");
    hearth_jw_cstr(w, c->name);
    hearth_jw_key(w, "arguments");
    hearth_jw_cstr(w, c->arguments);
    hearth_jw_obj_end(w);
    hearth_jw_obj_end(w);
}

static bool is_chat(const hearth_gen_out *g) { return g->spec->dialect == &hearth_openai_chat_out; }

static hearth_span piece_of(const hearth_gen_out *g, int32_t id) {
    return hearth_tok_piece(hearth_model_tok(g->srv->m), id, true);
}

/* {"token", "logprob", "bytes"[, "top_logprobs": [...]]} of chat's logprobs.content. */
static void chat_lp_entry(const hearth_gen_out *g, hearth_jw *w, int32_t id, float lp, const hearth_token_logprobs *top) {
    hearth_span t = piece_of(g, id);
    hearth_jw_obj(w);
    hearth_jw_key(w, "token");
    hearth_jw_str(w, t.ptr, t.len);
    hearth_jw_key(w, "logprob");
    hearth_jw_num(w, lp);
    hearth_jw_key(w, "bytes");
    hearth_jw_arr(w);
    for (size_t i = 0; i < t.len; i++) hearth_jw_int(w, (unsigned char)t.ptr[i]);
    hearth_jw_arr_end(w);
    if (top) {
        hearth_jw_key(w, "top_logprobs");
        hearth_jw_arr(w);
        for (int32_t j = 0; j < top->n_top; j++) chat_lp_entry(g, w, top->top_id[j], top->top_logprob[j], NULL);
        hearth_jw_arr_end(w);
    }
    hearth_jw_obj_end(w);
}

/* The "logprobs" of a choice for entries [from, to): chat's {"content": [...], "refusal": null}
 * or completions' {"tokens", "token_logprobs", "top_logprobs", "text_offset"}; null when the
 * request did not ask. *offset: text_offset of entry `from` (advanced). */
static void logprobs_json(const hearth_gen_out *g, hearth_jw *w, int32_t from, int32_t to, int64_t *offset) {
    hearth_jw_key(w, "logprobs");
    if (!g->spec->logprobs) {
        hearth_jw_null(w);
        return;
    }
    const hearth_gen_logprob *e = g->logprobs;
    hearth_jw_obj(w);
    if (is_chat(g)) {
        hearth_jw_key(w, "content");
        hearth_jw_arr(w);
        for (int32_t i = from; i < to; i++) chat_lp_entry(g, w, e[i].token, e[i].lp.logprob, &e[i].lp);
        hearth_jw_arr_end(w);
        hearth_jw_key(w, "refusal");
        hearth_jw_null(w);
    } else {
        hearth_jw_key(w, "tokens");
        hearth_jw_arr(w);
        for (int32_t i = from; i < to; i++) {
            hearth_span t = piece_of(g, e[i].token);
            hearth_jw_str(w, t.ptr, t.len);
        }
        hearth_jw_arr_end(w);
        hearth_jw_key(w, "token_logprobs");
        hearth_jw_arr(w);
        for (int32_t i = from; i < to; i++) hearth_jw_num(w, e[i].lp.logprob);
        hearth_jw_arr_end(w);
        hearth_jw_key(w, "top_logprobs");
        hearth_jw_arr(w);
        for (int32_t i = from; i < to; i++) {
            hearth_jw_obj(w);
            for (int32_t j = 0; j < e[i].lp.n_top; j++) {
                hearth_span t = piece_of(g, e[i].lp.top_id[j]);
                hearth_jw_keyn(w, t.ptr, t.len);
                hearth_jw_num(w, e[i].lp.top_logprob[j]);
            }
            hearth_jw_obj_end(w);
        }
        hearth_jw_arr_end(w);
        hearth_jw_key(w, "text_offset");
        hearth_jw_arr(w);
        for (int32_t i = from; i < to; i++) {
            hearth_jw_int(w, *offset);
            *offset += (int64_t)piece_of(g, e[i].token).len;
        }
        hearth_jw_arr_end(w);
    }
    hearth_jw_obj_end(w);
}

static void usage_json(const hearth_gen_out *g, hearth_jw *w) {
    int64_t n_gen = 0, n_reasoning = 0;
    for (int32_t i = 0; i < g->n_all; i++) {
        n_gen += g->all[i].n_gen;
        n_reasoning += g->all[i].n_reasoning;
    }
    hearth_jw_key(w, "usage");
    hearth_jw_obj(w);
    hearth_jw_key(w, "prompt_tokens");
    hearth_jw_int(w, (int64_t)g->spec->n_prompt);
    hearth_jw_key(w, "completion_tokens");
    hearth_jw_int(w, n_gen);
    hearth_jw_key(w, "total_tokens");
    hearth_jw_int(w, (int64_t)g->spec->n_prompt + n_gen);
    hearth_jw_key(w, "prompt_tokens_details");
    hearth_jw_obj(w);
    hearth_jw_key(w, "cached_tokens");
    hearth_jw_int(w, g->all[0].n_cached); /* the prompt's, once */
    hearth_jw_obj_end(w);
    hearth_jw_key(w, "completion_tokens_details");
    hearth_jw_obj(w);
    hearth_jw_key(w, "reasoning_tokens");
    hearth_jw_int(w, n_reasoning);
    hearth_jw_obj_end(w);
    hearth_gen_speculation_json(g, w);
    hearth_jw_obj_end(w);
}

/* llama-server's "timings": the prompt's part (the tokens the cache did not serve, from the
 * request's arrival to the first token, so time queued counts) and the generation's (from the
 * first token to the latest). */
static void timings_json(const hearth_gen_out *g, hearth_jw *w) {
    double now = hearth_now_ms();
    double first = g->t_first_ms > 0 ? g->t_first_ms : now;
    double prompt_ms = first - g->t0_ms, gen_ms = g->t_last_ms > 0 ? g->t_last_ms - first : 0;
    int64_t prompt_n = (int64_t)g->spec->n_prompt - g->n_cached;
    hearth_jw_key(w, "timings");
    hearth_jw_obj(w);
    hearth_jw_key(w, "cache_n");
    hearth_jw_int(w, g->n_cached);
    hearth_jw_key(w, "prompt_n");
    hearth_jw_int(w, prompt_n);
    hearth_jw_key(w, "prompt_ms");
    hearth_jw_num(w, prompt_ms);
    hearth_jw_key(w, "prompt_per_token_ms");
    hearth_jw_num(w, prompt_n > 0 ? prompt_ms / (double)prompt_n : 0);
    hearth_jw_key(w, "prompt_per_second");
    hearth_jw_num(w, prompt_ms > 0 ? 1e3 * (double)prompt_n / prompt_ms : 0);
    hearth_jw_key(w, "predicted_n");
    hearth_jw_int(w, g->n_gen);
    hearth_jw_key(w, "predicted_ms");
    hearth_jw_num(w, gen_ms);
    hearth_jw_key(w, "predicted_per_token_ms");
    hearth_jw_num(w, g->n_gen > 0 ? gen_ms / (double)g->n_gen : 0);
    hearth_jw_key(w, "predicted_per_second");
    hearth_jw_num(w, gen_ms > 0 ? 1e3 * (double)g->n_gen / gen_ms : 0);
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

/* What one stream chunk carries (chat: in its delta). */
typedef struct {
    bool                    role;      /* the first chunk: role and empty content */
    const hearth_span      *text;      /* content / completion text */
    const hearth_span      *reasoning; /* chat: reasoning_content */
    const hearth_tc_delta  *tool;      /* chat: a tool call's first delta or a piece of its arguments */
    const char             *finish;
} delta;

static void chunk(const hearth_gen_out *g, hearth_jw *w, const delta *dl) {
    hearth_openai_out *o = g->ctx;
    bool role = dl->role;
    const hearth_span *text = dl->text;
    const char *finish = dl->finish;
    bool chat = is_chat(g);
    hearth_sse_begin(w);
    head_json(g, w, chat ? "chat.completion.chunk" : "text_completion");
    hearth_jw_obj(w);
    hearth_jw_key(w, "index");
    hearth_jw_int(w, g->index);
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
        if (dl->reasoning) {
            hearth_jw_key(w, "reasoning_content");
            hearth_jw_str(w, dl->reasoning->ptr, dl->reasoning->len);
        }
        if (dl->tool) {
            const hearth_tc_delta *d = dl->tool;
            bool first = d->kind == HEARTH_TC_BEGIN;
            hearth_jw_key(w, "tool_calls");
            hearth_jw_arr(w);
            hearth_jw_obj(w);
            hearth_jw_key(w, "index");
            hearth_jw_int(w, d->index);
            if (first) {
                hearth_jw_key(w, "id");
                hearth_jw_cstr(w, d->id);
                hearth_jw_key(w, "type");
                hearth_jw_cstr(w, "function");
            }
            hearth_jw_key(w, "function");
            hearth_jw_obj(w);
            if (first) {
                hearth_jw_key(w, "name");
                hearth_jw_cstr(w, d->name);
            }
            hearth_jw_key(w, "arguments");
            hearth_jw_str(w, first ? "" : d->args.ptr, first ? 0 : d->args.len);
            hearth_jw_obj_end(w);
            hearth_jw_obj_end(w);
            hearth_jw_arr_end(w);
        }
        hearth_jw_obj_end(w);
    } else {
        hearth_jw_key(w, "text");
        hearth_jw_str(w, text ? text->ptr : "", text ? text->len : 0);
    }
    /* the entries of the tokens since the last chunk (the role chunk has none) */
    int32_t *sent = &o->lp_sent[g->index];
    int32_t upto = dl->role ? *sent : g->n_logprobs;
    logprobs_json(g, w, *sent, upto, &o->lp_offset[g->index]);
    *sent = upto;
    hearth_jw_key(w, "finish_reason");
    hearth_jw_cstr(w, finish);
    hearth_jw_obj_end(w);
    hearth_jw_arr_end(w);
    if (o->include_usage) {
        hearth_jw_key(w, "usage");
        hearth_jw_null(w);
    }
    if (o->timings_per_token || (o->timings && finish)) timings_json(g, w);
    hearth_jw_obj_end(w);
    hearth_sse_end(w);
}

/* llama-server's return_progress: a chunk without choices carrying "prompt_progress". */
static void stream_progress(hearth_gen_out *g, hearth_jw *w) {
    hearth_sse_begin(w);
    head_json(g, w, is_chat(g) ? "chat.completion.chunk" : "text_completion");
    hearth_jw_arr_end(w);
    hearth_jw_key(w, "prompt_progress");
    hearth_jw_obj(w);
    hearth_jw_key(w, "total");
    hearth_jw_int(w, (int64_t)g->spec->n_prompt);
    hearth_jw_key(w, "cache");
    hearth_jw_int(w, g->n_cached);
    hearth_jw_key(w, "processed");
    hearth_jw_int(w, g->n_prompt_done);
    hearth_jw_key(w, "time_ms");
    hearth_jw_num(w, hearth_now_ms() - g->t0_ms);
    hearth_jw_obj_end(w);
    hearth_jw_obj_end(w);
    hearth_sse_end(w);
}

static void stream_start(hearth_gen_out *g, hearth_jw *w) {
    if (is_chat(g)) chunk(g, w, &(delta){.role = true});
}

static void stream_text(hearth_gen_out *g, hearth_jw *w, hearth_span piece) { chunk(g, w, &(delta){.text = &piece}); }

static void stream_reasoning(hearth_gen_out *g, hearth_jw *w, hearth_span piece) {
    chunk(g, w, &(delta){.reasoning = &piece});
}

static void stream_tool(hearth_gen_out *g, hearth_jw *w, const hearth_tc_delta *d) {
    if (d->kind != HEARTH_TC_END) chunk(g, w, &(delta){.tool = d});
}

static void stream_end(hearth_gen_out *g, hearth_jw *w) {
    const hearth_openai_out *o = g->ctx;
    chunk(g, w, &(delta){.finish = finish_reason(g)});
    if (!g->last) return; /* other choices are still running */
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
    hearth_sse_begin(w); /* OpenAI's in-stream error event, then the end of the stream */
    hearth_api_err_json(w, e);
    hearth_sse_end(w);
    hearth_sse_done(w);
}

/* One choice of a body: {"index", "message" | "text", "logprobs", "finish_reason"}. */
static void body_choice(const hearth_gen_out *g, hearth_jw *w, int32_t index) {
    bool chat = is_chat(g);
    hearth_jw_obj(w);
    hearth_jw_key(w, "index");
    hearth_jw_int(w, index);
    if (chat) {
        hearth_jw_key(w, "message");
        hearth_jw_obj(w);
        hearth_jw_key(w, "role");
        hearth_jw_cstr(w, "assistant");
        hearth_jw_key(w, "content");
        if (g->n_calls && !g->text.len) hearth_jw_null(w); /* OpenAI: null when only tools were called */
        else hearth_jw_str(w, g->text.ptr, g->text.len);
        if (g->reasoning.len) {
            hearth_jw_key(w, "reasoning_content");
            hearth_jw_str(w, g->reasoning.ptr, g->reasoning.len);
        }
        if (g->n_calls) {
            hearth_jw_key(w, "tool_calls");
            hearth_jw_arr(w);
            for (int i = 0; i < g->n_calls; i++) call_json(w, &g->calls[i]);
            hearth_jw_arr_end(w);
        }
        hearth_jw_key(w, "refusal");
        hearth_jw_null(w);
        hearth_jw_obj_end(w);
    } else {
        hearth_jw_key(w, "text");
        hearth_jw_str(w, g->text.ptr, g->text.len);
    }
    int64_t offset = 0;
    logprobs_json(g, w, 0, g->n_logprobs, &offset);
    hearth_jw_key(w, "finish_reason");
    hearth_jw_cstr(w, finish_reason(g));
    hearth_jw_obj_end(w);
}

static void body(hearth_gen_out *g, hearth_jw *w) {
    head_json(g, w, is_chat(g) ? "chat.completion" : "text_completion");
    for (int32_t k = 0; k < g->n_order; k++) body_choice(&g->all[g->order[k]], w, k);
    hearth_jw_arr_end(w);
    usage_json(g, w);
    if (((const hearth_openai_out *)g->ctx)->timings) timings_json(g, w);
    hearth_jw_obj_end(w);
}

static void ctx_free(void *ctx) { free(ctx); }

const hearth_gen_dialect hearth_openai_chat_out = {
    .id_prefix = "chatcmpl-", .start = stream_start, .text = stream_text, .end = stream_end,
    .error = stream_error, .body = body, .reasoning = stream_reasoning, .tool_delta = stream_tool,
    .progress = stream_progress, .ctx_free = ctx_free,
};

const hearth_gen_dialect hearth_openai_text_out = {
    .id_prefix = "cmpl-", .start = stream_start, .text = stream_text, .end = stream_end,
    .error = stream_error, .body = body, .progress = stream_progress, .ctx_free = ctx_free,
};
