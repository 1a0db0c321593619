/*
 * generate.c - one generation from engine events to the OpenAI response (see generate.h).
 *
 *   engine TOKEN --decoder--> bytes (whole UTF-8 characters) --stop matcher--> final text
 *                                                                   |
 *                    non-streaming: appended to one buffer; streaming: one SSE chunk each
 *
 * Waiting uses hearth_request_next with a 50 ms timeout; each timeout and each token polls
 * the client's socket, so a client that disconnects is noticed within one decode step (or
 * 50 ms while queued) and its request is cancelled. A stop string cancels the engine request
 * at once; tokens the engine still produced are ignored.
 *
 * Stream grammar (OpenAI): for chat a first chunk with delta {"role":"assistant",
 * "content":""}, then content deltas, then a chunk with an empty delta and finish_reason,
 * then (with stream_options.include_usage) a chunk with "choices":[] and usage - every other
 * chunk then carries "usage":null - and finally data: [DONE]. Completions stream
 * text_completion chunks with "text" the same way.
 */
#include "server/generate.h"
#include "base/log.h"
#include "server/sse.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WAIT_MS 50

void hearth_gen_spec_free(hearth_gen_spec *spec) {
    free(spec->prompt);
    free(spec->bias);
    for (int i = 0; i < HEARTH_STOP_MAX; i++) free(spec->stop_text[i]);
    memset(spec, 0, sizeof *spec);
}

typedef struct {
    hearth_server    *srv;        /* borrowed */
    hearth_gen_spec   spec;       /* owned */
    hearth_request   *req;        /* owned reference */
    hearth_tok_decoder dec;
    hearth_stop       stop;       /* owned buffers */
    char             *piece;      /* owned [cap_piece]: decoder output */
    size_t            cap_piece;
    char              id[48];
    int64_t           created;
    int               fd;         /* the client's socket (valid while we are called) */
    double            t0_ms, t_last_ms;
    int32_t           n_gen;
    const char       *finish;     /* "stop" / "length" once over */
    hearth_api_err    err;        /* an engine error */
    bool              recorded;   /* stats written */
    bool              role_sent;
    hearth_jw         text;       /* non-streaming: the whole completion */
} gen;

static void record(gen *g, hearth_gen_outcome how) {
    if (g->recorded) return;
    g->recorded = true;
    hearth_stats_generation(g->srv->stats, how, (int64_t)g->spec.n_prompt, g->n_gen);
}

static void gen_free(gen *g) {
    if (!g) return;
    if (g->req && !g->recorded) { /* ended before the generation did: the client left */
        hearth_engine_cancel(g->srv->e, g->req);
        record(g, HEARTH_GEN_CANCELLED);
    }
    hearth_request_release(g->req);
    hearth_stop_fini(&g->stop);
    hearth_gen_spec_free(&g->spec);
    hearth_jw_fini(&g->text);
    free(g->piece);
    free(g);
}

static void gen_done_cb(void *ctx) { gen_free(ctx); }

/*
 * Wait for the next piece of final text. Returns 1 with *a (maybe empty) after a token;
 * 0 when the generation is over (*a and *b: the last text, either may be empty, g->finish
 * set); -1 when the client is gone (request cancelled); -2 on an engine error (g->err).
 */
static int next_text(gen *g, hearth_span *a, hearth_span *b) {
    static const hearth_span none = {"", 0};
    *a = *b = none;
    for (;;) {
        hearth_event ev;
        if (hearth_request_next(g->req, &ev, WAIT_MS) != HEARTH_OK) {
            if (hearth_fd_peer_gone(g->fd)) goto gone;
            continue;
        }
        if (ev.kind == HEARTH_EV_TOKEN) {
            double now = hearth_now_ms();
            if (g->n_gen == 0) hearth_stats_ttft(g->srv->stats, now - g->t0_ms);
            else hearth_stats_itl(g->srv->stats, now - g->t_last_ms);
            g->t_last_ms = now;
            g->n_gen++;
            int n = hearth_tok_decoder_push(&g->dec, ev.token, g->piece, g->cap_piece);
            if (hearth_stop_push(&g->stop, g->piece, n > 0 ? (size_t)n : 0, a)) {
                g->finish = "stop";
                hearth_engine_cancel(g->srv->e, g->req);
                record(g, HEARTH_GEN_COMPLETED);
                return 0;
            }
            if (hearth_fd_peer_gone(g->fd)) goto gone;
            return 1;
        }
        switch (ev.finish) {
        case HEARTH_FINISH_STOP: g->finish = "stop"; break;
        case HEARTH_FINISH_LENGTH: g->finish = "length"; break;
        case HEARTH_FINISH_CANCELLED:
            hearth_api_err_set(&g->err, 503, "cancelled", NULL, "the generation was cancelled (server shutting down)");
            record(g, HEARTH_GEN_FAILED);
            return -2;
        default:
            hearth_api_err_from_status(&g->err, ev.status ? ev.status : HEARTH_E_IO, NULL, ev.msg);
            record(g, HEARTH_GEN_FAILED);
            return -2;
        }
        int n = hearth_tok_decoder_flush(&g->dec, g->piece, g->cap_piece);
        if (hearth_stop_push(&g->stop, g->piece, n > 0 ? (size_t)n : 0, a)) g->finish = "stop";
        else *b = hearth_stop_flush(&g->stop);
        record(g, HEARTH_GEN_COMPLETED);
        return 0;
    }
gone:
    hearth_engine_cancel(g->srv->e, g->req);
    record(g, HEARTH_GEN_CANCELLED);
    hearth_log(HEARTH_LOG_INFO, "server: %s: client disconnected after %d tokens; cancelled", g->id, g->n_gen);
    return -1;
}

static void usage_json(const gen *g, hearth_jw *w) {
    hearth_jw_key(w, "usage");
    hearth_jw_obj(w);
    hearth_jw_key(w, "prompt_tokens");
    hearth_jw_int(w, (int64_t)g->spec.n_prompt);
    hearth_jw_key(w, "completion_tokens");
    hearth_jw_int(w, g->n_gen);
    hearth_jw_key(w, "total_tokens");
    hearth_jw_int(w, (int64_t)g->spec.n_prompt + g->n_gen);
    hearth_jw_key(w, "prompt_tokens_details");
    hearth_jw_obj(w);
    hearth_jw_key(w, "cached_tokens");
    hearth_jw_int(w, 0);
    hearth_jw_obj_end(w);
    hearth_jw_obj_end(w);
}

/* {"id":..,"object":..,"created":..,"model":..,"choices":[ -- the caller writes the choices. */
static void head_json(const gen *g, hearth_jw *w, const char *object) {
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
static void chunk(const gen *g, hearth_jw *w, bool role, const hearth_span *text, const char *finish) {
    hearth_sse_begin(w);
    head_json(g, w, g->spec.chat ? "chat.completion.chunk" : "text_completion");
    hearth_jw_obj(w);
    hearth_jw_key(w, "index");
    hearth_jw_int(w, 0);
    if (g->spec.chat) {
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
    if (g->spec.include_usage) {
        hearth_jw_key(w, "usage");
        hearth_jw_null(w);
    }
    hearth_jw_obj_end(w);
    hearth_sse_end(w);
}

static void stream_end(gen *g, hearth_jw *w, const hearth_span *a, const hearth_span *b) {
    if (a->len) chunk(g, w, false, a, NULL);
    if (b->len) chunk(g, w, false, b, NULL);
    chunk(g, w, false, NULL, g->finish);
    if (g->spec.include_usage) {
        hearth_sse_begin(w);
        head_json(g, w, g->spec.chat ? "chat.completion.chunk" : "text_completion");
        hearth_jw_arr_end(w);
        usage_json(g, w);
        hearth_jw_obj_end(w);
        hearth_sse_end(w);
    }
    hearth_sse_done(w);
}

static int stream_fill(void *ctx, hearth_jw *w) {
    gen *g = ctx;
    if (g->spec.chat && !g->role_sent) {
        g->role_sent = true;
        chunk(g, w, true, NULL, NULL);
        return 1;
    }
    for (;;) {
        hearth_span a, b;
        int rc = next_text(g, &a, &b);
        if (rc == 1) {
            if (!a.len) continue;
            chunk(g, w, false, &a, NULL);
            return 1;
        }
        if (rc == 0) {
            stream_end(g, w, &a, &b);
            return 0;
        }
        if (rc == -1) return -1;
        hearth_sse_begin(w); /* OpenAI's in-stream error event */
        hearth_api_err_json(w, &g->err);
        hearth_sse_end(w);
        return 0;
    }
}

static void run_sync(hearth_http_req *r, gen *g) {
    for (;;) {
        hearth_span a, b;
        int rc = next_text(g, &a, &b);
        if (rc == -1) return; /* nobody to answer: MHD closes the connection */
        if (rc == -2) {
            hearth_http_send_error(r, &g->err);
            return;
        }
        hearth_jw_raw(&g->text, a.ptr, a.len);
        if (rc == 0) {
            hearth_jw_raw(&g->text, b.ptr, b.len);
            break;
        }
    }
    hearth_jw w;
    hearth_jw_init(&w);
    head_json(g, &w, g->spec.chat ? "chat.completion" : "text_completion");
    hearth_jw_obj(&w);
    hearth_jw_key(&w, "index");
    hearth_jw_int(&w, 0);
    if (g->spec.chat) {
        hearth_jw_key(&w, "message");
        hearth_jw_obj(&w);
        hearth_jw_key(&w, "role");
        hearth_jw_cstr(&w, "assistant");
        hearth_jw_key(&w, "content");
        hearth_jw_str(&w, g->text.buf, g->text.len);
        hearth_jw_key(&w, "refusal");
        hearth_jw_null(&w);
        hearth_jw_obj_end(&w);
    } else {
        hearth_jw_key(&w, "text");
        hearth_jw_str(&w, g->text.buf, g->text.len);
    }
    hearth_jw_key(&w, "logprobs");
    hearth_jw_null(&w);
    hearth_jw_key(&w, "finish_reason");
    hearth_jw_cstr(&w, g->finish);
    hearth_jw_obj_end(&w);
    hearth_jw_arr_end(&w);
    usage_json(g, &w);
    hearth_jw_obj_end(&w);
    hearth_http_send_json(r, g->text.oom ? 500 : 200, &w);
    hearth_jw_fini(&w);
}

void hearth_gen_run(hearth_http_req *r, hearth_gen_spec *spec) {
    hearth_server *s = r->srv;
    hearth_api_err e;
    gen *g = calloc(1, sizeof *g);
    if (!g) {
        hearth_gen_spec_free(spec);
        hearth_api_err_set(&e, 503, "out_of_memory", NULL, "out of memory");
        hearth_http_send_error(r, &e);
        return;
    }
    g->srv = s;
    g->spec = *spec;
    memset(spec, 0, sizeof *spec);
    hearth_jw_init(&g->text);

    int32_t n_ctx = hearth_engine_n_ctx(s->e);
    int64_t room = (int64_t)n_ctx - (int64_t)g->spec.n_prompt;
    if (room < 1) {
        hearth_api_err_set(&e, 400, "context_length_exceeded", g->spec.chat ? "messages" : "prompt",
                           "This model's maximum context length is %d tokens. However, your prompt is %zu tokens, "
                           "which leaves no room for a completion. Shorten the prompt or start the server with a "
                           "larger --ctx.", n_ctx, g->spec.n_prompt);
        goto fail;
    }
    /* an unset max_tokens takes what the KV pool can hold, not only the context */
    hearth_engine_info ei;
    hearth_engine_info_get(s->e, &ei);
    int64_t pool_room = (int64_t)ei.max_request_tokens - (int64_t)g->spec.n_prompt;
    if (g->spec.max_tokens <= 0 || g->spec.max_tokens > room) g->spec.max_tokens = (int32_t)room;
    if (!g->spec.max_tokens_set && pool_room >= 1 && g->spec.max_tokens > pool_room)
        g->spec.max_tokens = (int32_t)pool_room;

    const hearth_tok *tok = hearth_model_tok(s->m);
    g->cap_piece = 64 + hearth_tok_max_piece(tok);
    g->piece = malloc(g->cap_piece);
    if (!g->piece || hearth_stop_init(&g->stop, g->spec.stops, g->spec.n_stops)) {
        hearth_api_err_set(&e, 503, "out_of_memory", NULL, "out of memory");
        goto fail;
    }
    hearth_tok_decoder_init(&g->dec, tok, false);
    hearth_server_new_id(s, g->spec.chat ? "chatcmpl-" : "cmpl-", g->id, sizeof g->id);
    g->created = (int64_t)time(NULL);
    g->fd = hearth_http_fd(r);
    g->t0_ms = r->t_done_ms;

    g->spec.sampling.bias = g->spec.bias;
    hearth_request_params rp = {.prompt = g->spec.prompt, .n_prompt = g->spec.n_prompt,
                                .max_tokens = g->spec.max_tokens, .sampling = g->spec.sampling,
                                .ignore_eog = g->spec.ignore_eos};
    hearth_err herr = {0};
    hearth_status st = hearth_engine_submit(s->e, &rp, &g->req, &herr);
    if (st == HEARTH_E_LIMIT) { /* the engine's admission: it could never fit the KV pool */
        hearth_api_err_set(&e, 400, "context_over_budget", "max_tokens", "%s", herr.msg);
        e.type = "memory_admission";
        goto fail;
    }
    if (st) {
        hearth_api_err_from_status(&e, st, NULL, herr.msg);
        goto fail;
    }
    hearth_stats_generation_begin(s->stats);
    if (g->spec.stream) {
        hearth_sse_start(r, stream_fill, gen_done_cb, g); /* gen_free runs when the stream ends */
        return;
    }
    run_sync(r, g);
    gen_free(g);
    return;
fail:
    hearth_http_send_error(r, &e);
    gen_free(g);
}
