/*
 * generate.c - one generation from engine events to a dialect's writer (see generate.h).
 *
 *   engine TOKEN --decoder--> bytes (whole UTF-8 characters) --stop matcher--> final text
 *                                                                   |
 *                         dialect writer: one stream frame per piece, or one body at the end
 *
 * Waiting uses hearth_request_next with a 50 ms timeout; each timeout and each token polls
 * the client's socket, so a client that disconnects is noticed within one decode step (or
 * 50 ms while queued) and its request is cancelled. A stop string cancels the engine request
 * at once; tokens the engine still produced are ignored.
 *
 * Admission: after submitting, the request waits until the engine admits it (its first
 * event held back for next_text) before any answer starts, so a request still queued when the
 * server begins to drain (drain.c) can be answered 503 with Retry-After - streams included,
 * whose 200 is not sent yet.
 *
 * The writer's `start` runs after the engine's first event, not at once: the first token
 * event says how much of the prompt the prefix cache served, which Anthropic's message_start
 * reports. Final text is also kept whole (out.text) for writers that repeat it at the end.
 */
#include "server/generate.h"
#include "base/buf.h"
#include "base/log.h"
#include "server/reqjson.h"
#include "server/sampling.h"
#include "server/sse.h"
#include "server/structured.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WAIT_MS 50

void hearth_gen_spec_init(hearth_server *s, hearth_gen_spec *g, const hearth_gen_dialect *d, int32_t default_max) {
    memset(g, 0, sizeof *g);
    g->dialect = d;
    g->prompt_param = "messages";
    int32_t max_default = 0;
    g->sampling = hearth_sampling_defaults(&s->p, hearth_model_gen_defaults(s->m), &max_default);
    g->max_tokens = max_default > 0 ? max_default : default_max;
    if (s->p.seed >= 0) {
        g->sampling.seed = (uint64_t)s->p.seed;
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    g->sampling.seed = ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^
                       atomic_fetch_add_explicit(&s->n_ids, 1, memory_order_relaxed) * 0x9E3779B97F4A7C15ull;
}

bool hearth_gen_add_stop(hearth_gen_spec *g, const char *s, const char *param, hearth_api_err *e) {
    size_t len = strlen(s);
    if (len > HEARTH_STOP_MAX_BYTES)
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", param, "a stop string is longer than %d bytes",
                               HEARTH_STOP_MAX_BYTES);
    if (!len) return true;
    if (g->n_stops == HEARTH_STOP_MAX)
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", param, "at most %d stop strings are allowed",
                               HEARTH_STOP_MAX);
    char *copy = strdup(s);
    if (!copy) return hearth_api_oom(e);
    g->stop_text[g->n_stops] = copy;
    g->stops[g->n_stops].ptr = copy;
    g->stops[g->n_stops].len = len;
    g->n_stops++;
    return true;
}

void hearth_gen_spec_free(hearth_gen_spec *spec) {
    free(spec->prompt);
    free(spec->bias);
    hearth_cx_grammar_destroy(spec->constraint);
    free(spec->constraint_fed);
    for (int i = 0; i < HEARTH_STOP_MAX; i++) free(spec->stop_text[i]);
    if (spec->ctx && spec->dialect && spec->dialect->ctx_free) spec->dialect->ctx_free(spec->ctx);
    memset(spec, 0, sizeof *spec);
}

typedef struct {
    hearth_server     *srv;        /* borrowed */
    hearth_gen_spec    spec;       /* owned */
    hearth_gen_out     out;        /* the writer's view */
    hearth_request    *req;        /* owned reference */
    hearth_tok_decoder dec;
    hearth_stop        stop;       /* owned buffers */
    char              *piece;      /* owned [cap_piece]: decoder output */
    size_t             cap_piece;
    char               id[48];
    int                fd;         /* the client's socket (valid while we are called) */
    double             t0_ms, t_last_ms;
    bool               over;       /* the generation ended (out.end set) */
    bool               recorded;   /* stats written */
    bool               started;    /* the writer's start ran */
    hearth_api_err     err;        /* an engine error */
    hearth_jw          text;       /* every piece of final content */
    hearth_jw          reasoning;  /* every piece of reasoning */
    hearth_rs         *rs;         /* owned: NULL when spec.reasoning is NONE */
    int32_t            rs_held;    /* tokens since the last content whose text the splitter holds */
    hearth_tc         *tc;         /* owned: NULL when spec.tools is NONE */
    hearth_gen_logprob *lps;       /* owned [cap_lps]: spec.logprobs */
    size_t             cap_lps;
    hearth_event       pend;       /* an event read while waiting for admission ... */
    bool               has_pend;   /* ... that next_text has not taken yet */
} gen;

static void record(gen *g, hearth_gen_outcome how) {
    if (g->recorded) return;
    g->recorded = true;
    hearth_stats_generation(g->srv->stats, how, (int64_t)g->spec.n_prompt, g->out.n_gen);
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
    hearth_jw_fini(&g->reasoning);
    hearth_rs_destroy(g->rs);
    hearth_tc_destroy(g->tc);
    free(g->lps);
    free(g->piece);
    free(g);
}

static void gen_done_cb(void *ctx) { gen_free(ctx); }

/* FNV-1a of the response id: the seed of the tool-call ids it makes (unique per response). */
static uint64_t id_hash(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static void deliver_reasoning(gen *g, hearth_span r, hearth_jw *w) {
    if (!r.len) return;
    hearth_jw_raw(&g->reasoning, r.ptr, r.len);
    g->out.reasoning = (hearth_span){g->reasoning.b.p ? g->reasoning.b.p : "", g->reasoning.b.len};
    if (w && g->spec.dialect->reasoning) g->spec.dialect->reasoning(&g->out, w, r);
}

static void deliver(gen *g, hearth_span c, hearth_jw *w) {
    if (!c.len) return;
    hearth_jw_raw(&g->text, c.ptr, c.len);
    g->out.text = (hearth_span){g->text.b.p ? g->text.b.p : "", g->text.b.len};
    if (w) g->spec.dialect->text(&g->out, w, c);
}

/* The tool-call parser's output: content, and (streams) the call steps in their places. */
static void take_calls(gen *g, const hearth_tc_out *o, hearth_jw *w) {
    g->out.calls = hearth_tc_calls(g->tc, &g->out.n_calls);
    size_t off = 0;
    for (int i = 0; i < o->n_deltas; i++) {
        const hearth_tc_delta *d = &o->deltas[i];
        deliver(g, (hearth_span){o->content.ptr + off, d->at - off}, w);
        off = d->at;
        if (w) g->spec.dialect->tool_delta(&g->out, w, d);
    }
    deliver(g, (hearth_span){o->content.ptr + off, o->content.len - off}, w);
}

/* Content -> tool-call parser (when on) -> the writer. */
static void content(gen *g, hearth_span c, bool final, hearth_jw *w) {
    if (!g->tc) {
        deliver(g, c, w);
        return;
    }
    hearth_tc_out o;
    hearth_tc_push(g->tc, c.ptr, c.len, &o);
    take_calls(g, &o, w);
    if (!final) return;
    hearth_tc_finish(g->tc, &o);
    take_calls(g, &o, w);
}

/* Final text (after stop strings) -> reasoning splitter (when on) -> content. Kept for the
 * writer's view and, when streaming (w), handed to the writer piece by piece. final: the
 * reply ended, the splitters release what they hold. */
static void split(gen *g, hearth_span t, bool final, hearth_jw *w) {
    if (!g->rs) {
        content(g, t, final, w);
        return;
    }
    hearth_rs_out o;
    hearth_rs_push(g->rs, t.ptr, t.len, &o);
    deliver_reasoning(g, o.reasoning, w);
    content(g, o.content, false, w);
    if (!final) return;
    hearth_rs_finish(g->rs, &o);
    deliver_reasoning(g, o.reasoning, w);
    content(g, o.content, true, w);
}

/* One generated token's text went through split(): it counts as reasoning when the reply was
 * inside its reasoning before or after it (the opening and closing markers included). Tokens
 * that gave no content while the splitter held their text (the first pieces of an opening
 * marker) count once the reasoning begins. */
static void count_reasoning(gen *g, bool was_in, size_t text_before) {
    if (!g->rs) return;
    if (was_in || hearth_rs_in_reasoning(g->rs)) {
        g->out.n_reasoning += 1 + g->rs_held;
        g->rs_held = 0;
    } else if (g->out.text.len == text_before) {
        g->rs_held++;
    } else {
        g->rs_held = 0;
    }
}

static bool in_reasoning(const gen *g) { return g->rs && hearth_rs_in_reasoning(g->rs); }

static void keep_logprobs(gen *g, const hearth_event *ev) {
    if (!hearth_buf_grow(&g->lps, &g->cap_lps, (size_t)g->out.n_logprobs + 1, sizeof *g->lps, 64))
        return; /* out of memory: the rest of the tokens go without */
    g->lps[g->out.n_logprobs] = (hearth_gen_logprob){.token = ev->token, .lp = ev->lp};
    g->out.logprobs = g->lps;
    g->out.n_logprobs++;
}

/* A control token the decoder drops whose text is part of the reply's tool-call or reasoning
 * markup ([TOOL_CALLS], <|channel|>...): its text, into g->piece. */
static int marker_text(gen *g, int32_t token) {
    const hearth_tok *tok = hearth_model_tok(g->srv->m);
    if (!hearth_tok_is_control(tok, token)) return 0;
    hearth_span t = hearth_tok_piece(tok, token, true);
    if (t.len >= g->cap_piece) return 0;
    if (!hearth_tc_is_marker(g->spec.tools, t.ptr, t.len) && !hearth_rs_is_marker(g->spec.reasoning, t.ptr, t.len))
        return 0;
    memcpy(g->piece, t.ptr, t.len);
    g->piece[t.len] = 0;
    return (int)t.len;
}

static void stopped_by_string(gen *g) {
    g->over = true;
    g->out.end = HEARTH_GEN_END_STOP;
    g->out.stop = g->stop.hit >= 0 ? g->stop.stops[g->stop.hit] : (hearth_span){"", 0};
}

/*
 * Wait for the next piece of final text. Returns 2 after a prefill progress event (spec.progress);
 * 1 with *a (maybe empty) after a token;
 * 0 when the generation is over (*a and *b: the last text, either may be empty, g->over
 * set); -1 when the client is gone (request cancelled); -2 on an engine error (g->err).
 */
static int next_text(gen *g, hearth_span *a, hearth_span *b) {
    static const hearth_span none = {"", 0};
    *a = *b = none;
    for (;;) {
        hearth_event ev;
        if (g->has_pend) {
            ev = g->pend;
            g->has_pend = false;
        } else if (hearth_request_next(g->req, &ev, WAIT_MS) != HEARTH_OK) {
            if (hearth_fd_peer_gone(g->fd)) goto gone;
            continue;
        }
        g->out.n_cached = ev.n_cached;
        if (ev.kind == HEARTH_EV_PROGRESS) {
            g->out.n_prompt_done = ev.n_done;
            if (hearth_fd_peer_gone(g->fd)) goto gone;
            return 2;
        }
        if (ev.kind == HEARTH_EV_TOKEN) {
            double now = hearth_now_ms();
            if (g->out.n_gen == 0) hearth_stats_ttft(g->srv->stats, now - g->t0_ms);
            else hearth_stats_itl(g->srv->stats, now - g->t_last_ms);
            g->t_last_ms = g->out.t_last_ms = now;
            if (!g->out.t_first_ms) g->out.t_first_ms = now;
            g->out.n_gen++;
            if (ev.has_logprobs) keep_logprobs(g, &ev);
            int n = hearth_tok_decoder_push(&g->dec, ev.token, g->piece, g->cap_piece);
            if (n <= 0 && (g->rs || g->tc)) n = marker_text(g, ev.token);
            if (hearth_stop_push(&g->stop, g->piece, n > 0 ? (size_t)n : 0, a)) {
                stopped_by_string(g);
                hearth_engine_cancel(g->srv->e, g->req);
                record(g, HEARTH_GEN_COMPLETED);
                return 0;
            }
            if (hearth_fd_peer_gone(g->fd)) goto gone;
            return 1;
        }
        switch (ev.finish) {
        case HEARTH_FINISH_STOP: g->out.end = HEARTH_GEN_END_EOG; break;
        case HEARTH_FINISH_LENGTH: g->out.end = HEARTH_GEN_END_LENGTH; break;
        case HEARTH_FINISH_CANCELLED:
            hearth_api_fail(&g->err, HEARTH_E_CANCELLED, "cancelled", NULL,
                            "the generation was cancelled (server shutting down)");
            record(g, HEARTH_GEN_FAILED);
            return -2;
        default:
            hearth_api_err_from_status(&g->err, ev.status ? ev.status : HEARTH_E_IO, NULL, ev.msg);
            record(g, HEARTH_GEN_FAILED);
            return -2;
        }
        g->over = true;
        int n = hearth_tok_decoder_flush(&g->dec, g->piece, g->cap_piece);
        if (hearth_stop_push(&g->stop, g->piece, n > 0 ? (size_t)n : 0, a)) stopped_by_string(g);
        else *b = hearth_stop_flush(&g->stop);
        record(g, HEARTH_GEN_COMPLETED);
        return 0;
    }
gone:
    hearth_engine_cancel(g->srv->e, g->req);
    record(g, HEARTH_GEN_CANCELLED);
    hearth_log(HEARTH_LOG_INFO, "server: %s: client disconnected after %d tokens; cancelled", g->id, g->out.n_gen);
    return -1;
}


/*
 * Wait until the engine admits g's request (or its first event comes). Returns 0 to go on;
 * 1 when the server began draining while it was queued (answered 503 + Retry-After); -1 when
 * the client went away (cancelled, nothing to answer).
 */
static int wait_admitted(hearth_http_req *r, gen *g) {
    while (!hearth_request_admitted(g->req)) {
        if (hearth_server_draining(g->srv)) {
            hearth_api_err e;
            hearth_engine_cancel(g->srv->e, g->req);
            record(g, HEARTH_GEN_CANCELLED);
            hearth_api_fail(&e, HEARTH_E_CANCELLED, "server_draining", NULL,
                            "the server is shutting down; this request was still queued and did not start");
            r->retry_after_s = 5;
            r->close = true;
            hearth_http_send_error(r, &e);
            return 1;
        }
        hearth_event ev;
        if (hearth_request_next(g->req, &ev, WAIT_MS) == HEARTH_OK) {
            g->pend = ev;
            g->has_pend = true;
            return 0;
        }
        if (hearth_fd_peer_gone(g->fd)) {
            hearth_engine_cancel(g->srv->e, g->req);
            record(g, HEARTH_GEN_CANCELLED);
            hearth_log(HEARTH_LOG_INFO, "server: %s: client disconnected while queued; cancelled", g->id);
            return -1;
        }
    }
    return 0;
}

static int stream_fill(void *ctx, hearth_jw *w) {
    gen *g = ctx;
    const hearth_gen_dialect *d = g->spec.dialect;
    for (;;) {
        hearth_span a, b;
        int rc = next_text(g, &a, &b);
        if (rc == -1) return -1;
        if (!g->started) {
            g->started = true;
            d->start(&g->out, w);
        }
        if (rc == 2) {
            if (d->progress) d->progress(&g->out, w);
            if (!w->b.len) continue;
            return 1;
        }
        if (rc == 1) {
            bool was = in_reasoning(g);
            size_t before = g->out.text.len;
            if (a.len) split(g, a, false, w);
            count_reasoning(g, was, before);
            if (!w->b.len) continue;
            return 1;
        }
        if (rc == -2) {
            d->error(&g->out, w, &g->err);
            return 0;
        }
        split(g, a, false, w);
        split(g, b, true, w);
        if (d->finished) d->finished(&g->out);
        d->end(&g->out, w);
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
        if (rc == 2) continue;
        bool was = in_reasoning(g);
        size_t before = g->out.text.len;
        split(g, a, false, NULL);
        if (rc == 0) {
            split(g, b, true, NULL);
            break;
        }
        count_reasoning(g, was, before);
    }
    if (g->spec.dialect->finished) g->spec.dialect->finished(&g->out);
    hearth_jw w;
    hearth_jw_init(&w);
    g->spec.dialect->body(&g->out, &w);
    if (g->text.b.oom || g->reasoning.b.oom) w.b.oom = true; /* a reply cut short: the out-of-memory answer */
    hearth_http_send_json(r, 200, &w);
    hearth_jw_fini(&w);
}

void hearth_gen_run(hearth_http_req *r, hearth_gen_spec *spec) {
    hearth_server *s = r->srv;
    hearth_api_err e;
    gen *g = calloc(1, sizeof *g);
    if (!g) {
        hearth_gen_spec_free(spec);
        hearth_api_oom(&e);
        hearth_http_send_error(r, &e);
        return;
    }
    g->srv = s;
    g->spec = *spec;
    memset(spec, 0, sizeof *spec);
    hearth_jw_init(&g->text);
    hearth_jw_init(&g->reasoning);
    g->out = (hearth_gen_out){.srv = s, .spec = &g->spec, .ctx = g->spec.ctx, .id = g->id, .text = {"", 0},
                              .reasoning = {"", 0}};

    int32_t n_ctx = hearth_engine_n_ctx(s->e);
    int64_t room = (int64_t)n_ctx - (int64_t)g->spec.n_prompt;
    if (room < 1) {
        hearth_api_fail(&e, HEARTH_E_LIMIT, "context_length_exceeded", g->spec.prompt_param,
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
        hearth_api_oom(&e);
        goto fail;
    }
    hearth_tok_decoder_init(&g->dec, tok, false);
    hearth_server_new_id(s, g->spec.dialect->id_prefix, g->id, sizeof g->id);
    if ((g->spec.reasoning && !(g->rs = hearth_rs_create(g->spec.reasoning, g->spec.reasoning_open))) ||
        (g->spec.tools && !(g->tc = hearth_tc_create(g->spec.tools, id_hash(g->id))))) {
        hearth_api_oom(&e);
        goto fail;
    }
    if (g->tc && g->spec.stream) hearth_tc_stream_args(g->tc); /* arguments streamed as they come */
    g->out.created = (int64_t)time(NULL);
    g->fd = hearth_http_fd(r);
    g->t0_ms = g->out.t0_ms = r->t_done_ms;

    g->spec.sampling.bias = g->spec.bias;
    hearth_request_params rp = {.prompt = g->spec.prompt, .n_prompt = g->spec.n_prompt,
                                .max_tokens = g->spec.max_tokens, .sampling = g->spec.sampling,
                                .ignore_eog = g->spec.ignore_eos, .min_tokens = g->spec.min_tokens,
                                .progress = g->spec.progress && g->spec.stream, .logprobs = g->spec.logprobs,
                                .top_logprobs = g->spec.top_logprobs};
    if (g->spec.constraint) { /* the engine takes the matcher over, even when submit fails */
        rp.constraint = hearth_structured_matcher(s, g->spec.constraint);
        g->spec.constraint = NULL;
        if (!rp.constraint) {
            hearth_api_oom(&e);
            goto fail;
        }
        const char *fed = g->spec.constraint_fed;
        if (fed && !hearth_cx_matcher_feed(rp.constraint, fed, strlen(fed))) {
            hearth_cx_matcher_destroy(rp.constraint);
            hearth_api_fail(&e, HEARTH_E_INVALID, "invalid_value", "messages",
                            "the final assistant message is not the start of a reply in the response_format");
            goto fail;
        }
    }
    hearth_err herr = {0};
    hearth_status st = hearth_engine_submit(s->e, &rp, &g->req, &herr);
    if (st == HEARTH_E_LIMIT) { /* the engine's admission: it could never fit the KV pool */
        hearth_api_fail(&e, HEARTH_E_LIMIT, "context_over_budget", "max_tokens", "%s", herr.msg);
        e.type = "memory_admission";
        goto fail;
    }
    if (st) {
        hearth_api_err_from_status(&e, st, NULL, herr.msg);
        goto fail;
    }
    hearth_stats_generation_begin(s->stats);
    if (wait_admitted(r, g) != 0) {
        gen_free(g);
        return;
    }
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

void hearth_gen_handle(hearth_http_req *r, hearth_gen_parse_fn parse) {
    hearth_api_err e;
    hearth_gen_spec g = {0};
    cJSON *root = hearth_req_parse(r, &e);
    bool ok = root && parse(r->srv, root, (hearth_span){r->body, r->n_body}, &g, &e);
    cJSON_Delete(root);
    if (ok) {
        hearth_gen_run(r, &g);
        return;
    }
    hearth_gen_spec_free(&g);
    hearth_http_send_error(r, &e);
}
