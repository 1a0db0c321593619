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
 *
 * Several choices (generate.h) each have the pipeline above; one wait (hearth_request_next_any)
 * takes the next token of whichever choice has one, so a stream interleaves them as the
 * engine's steps produce them.
 */
#include "server/vision_prompt.h"
#include "server/generate.h"
#include "base/buf.h"
#include "base/log.h"
#include "server/adapters_api.h"
#include "server/reqjson.h"
#include "server/sampling.h"
#include "server/sse.h"
#include "constrain/grammar.h"
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
    hearth_lora_release(spec->lora);
    hearth_vprompt_free(spec->images, spec->n_images);
    for (int i = 0; i < HEARTH_STOP_MAX; i++) free(spec->stop_text[i]);
    if (spec->ctx && spec->dialect && spec->dialect->ctx_free) spec->dialect->ctx_free(spec->ctx);
    memset(spec, 0, sizeof *spec);
}

/* One choice's state: its engine request and the text pipeline from its tokens. */
typedef struct {
    hearth_request    *req;        /* owned reference */
    hearth_tok_decoder dec;
    hearth_stop        stop;       /* owned buffers */
    bool               over;       /* the choice ended (out.end set) */
    bool               started;    /* the writer's start ran for it */
    double             t_last_ms;
    hearth_jw          text;       /* every piece of final content */
    hearth_jw          reasoning;  /* every piece of reasoning */
    hearth_rs         *rs;         /* owned: NULL when spec.reasoning is NONE */
    int32_t            rs_held;    /* tokens since the last content whose text the splitter holds */
    hearth_tc         *tc;         /* owned: NULL when spec.tools is NONE */
    hearth_gen_logprob *lps;       /* owned [cap_lps]: spec.logprobs (or best_of's ranking) */
    size_t             cap_lps;
    double             sum_lp;     /* of the chosen tokens (best_of) */
} choice;

typedef struct {
    hearth_server     *srv;        /* borrowed */
    hearth_gen_spec    spec;       /* owned */
    int32_t            n;          /* sequences run: best_of, else n_choices */
    choice            *ch;         /* owned [n] */
    hearth_gen_out    *out;        /* owned [n]: the writer's views, one per choice */
    hearth_request   **live;       /* owned [n]: the requests of choices not over (NULL when over) */
    int32_t           *order;      /* owned [n]: the body's choices */
    int32_t            n_over, which;
    char              *piece;      /* owned [cap_piece]: decoder output */
    size_t             cap_piece;
    char               id[48];
    int                fd;         /* the client's socket (valid while we are called) */
    double             t0_ms;
    int32_t            n_tokens;   /* generated, all choices */
    bool               recorded;   /* stats written */
    hearth_api_err     err;        /* an engine error */
    hearth_event       pend;       /* an event read while waiting for admission ... */
    int32_t            pend_i;     /* ... of this choice ... */
    bool               has_pend;   /* ... that next_text has not taken yet */
} gen;

static void record(gen *g, hearth_gen_outcome how) {
    if (g->recorded) return;
    g->recorded = true;
    hearth_stats_generation(g->srv->stats, how, (int64_t)g->spec.n_prompt, g->n_tokens);
}

static void cancel_all(gen *g) {
    for (int32_t i = 0; i < g->n; i++)
        if (g->ch[i].req) hearth_engine_cancel(g->srv->e, g->ch[i].req);
}

static void gen_free(gen *g) {
    if (!g) return;
    if (g->ch && g->ch[0].req && !g->recorded) { /* ended before the generation did: the client left */
        cancel_all(g);
        record(g, HEARTH_GEN_CANCELLED);
    }
    for (int32_t i = 0; g->ch && i < g->n; i++) {
        choice *c = &g->ch[i];
        hearth_request_release(c->req);
        hearth_stop_fini(&c->stop);
        hearth_jw_fini(&c->text);
        hearth_jw_fini(&c->reasoning);
        hearth_rs_destroy(c->rs);
        hearth_tc_destroy(c->tc);
        free(c->lps);
    }
    hearth_gen_spec_free(&g->spec);
    free(g->ch);
    free(g->out);
    free(g->live);
    free(g->order);
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

static void deliver_reasoning(gen *g, int32_t i, hearth_span r, hearth_jw *w) {
    if (!r.len) return;
    choice *c = &g->ch[i];
    hearth_jw_raw(&c->reasoning, r.ptr, r.len);
    g->out[i].reasoning = (hearth_span){c->reasoning.b.p ? c->reasoning.b.p : "", c->reasoning.b.len};
    if (w && g->spec.dialect->reasoning) g->spec.dialect->reasoning(&g->out[i], w, r);
}

static void deliver(gen *g, int32_t i, hearth_span t, hearth_jw *w) {
    if (!t.len) return;
    choice *c = &g->ch[i];
    hearth_jw_raw(&c->text, t.ptr, t.len);
    g->out[i].text = (hearth_span){c->text.b.p ? c->text.b.p : "", c->text.b.len};
    if (w) g->spec.dialect->text(&g->out[i], w, t);
}

/* The tool-call parser's output: content, and (streams) the call steps in their places. */
static void take_calls(gen *g, int32_t i, const hearth_tc_out *o, hearth_jw *w) {
    g->out[i].calls = hearth_tc_calls(g->ch[i].tc, &g->out[i].n_calls);
    size_t off = 0;
    for (int k = 0; k < o->n_deltas; k++) {
        const hearth_tc_delta *d = &o->deltas[k];
        deliver(g, i, (hearth_span){o->content.ptr + off, d->at - off}, w);
        off = d->at;
        if (w) g->spec.dialect->tool_delta(&g->out[i], w, d);
    }
    deliver(g, i, (hearth_span){o->content.ptr + off, o->content.len - off}, w);
}

/* Content -> tool-call parser (when on) -> the writer. */
static void content(gen *g, int32_t i, hearth_span t, bool final, hearth_jw *w) {
    hearth_tc *tc = g->ch[i].tc;
    if (!tc) {
        deliver(g, i, t, w);
        return;
    }
    hearth_tc_out o;
    hearth_tc_push(tc, t.ptr, t.len, &o);
    take_calls(g, i, &o, w);
    if (!final) return;
    hearth_tc_finish(tc, &o);
    take_calls(g, i, &o, w);
}

/* Final text (after stop strings) -> reasoning splitter (when on) -> content. Kept for the
 * writer's view and, when streaming (w), handed to the writer piece by piece. final: the
 * reply ended, the splitters release what they hold. */
static void split(gen *g, int32_t i, hearth_span t, bool final, hearth_jw *w) {
    hearth_rs *rs = g->ch[i].rs;
    if (!rs) {
        content(g, i, t, final, w);
        return;
    }
    hearth_rs_out o;
    hearth_rs_push(rs, t.ptr, t.len, &o);
    deliver_reasoning(g, i, o.reasoning, w);
    content(g, i, o.content, false, w);
    if (!final) return;
    hearth_rs_finish(rs, &o);
    deliver_reasoning(g, i, o.reasoning, w);
    content(g, i, o.content, true, w);
}

/* One generated token's text went through split(): it counts as reasoning when the reply was
 * inside its reasoning before or after it (the opening and closing markers included). Tokens
 * that gave no content while the splitter held their text (the first pieces of an opening
 * marker) count once the reasoning begins. */
static void count_reasoning(gen *g, int32_t i, bool was_in, size_t text_before) {
    choice *c = &g->ch[i];
    if (!c->rs) return;
    if (was_in || hearth_rs_in_reasoning(c->rs)) {
        g->out[i].n_reasoning += 1 + c->rs_held;
        c->rs_held = 0;
    } else if (g->out[i].text.len == text_before) {
        c->rs_held++;
    } else {
        c->rs_held = 0;
    }
}

static bool in_reasoning(const gen *g, int32_t i) { return g->ch[i].rs && hearth_rs_in_reasoning(g->ch[i].rs); }

static void keep_logprobs(gen *g, int32_t i, const hearth_event *ev) {
    choice *c = &g->ch[i];
    hearth_gen_out *o = &g->out[i];
    c->sum_lp += ev->lp.logprob;
    if (!hearth_buf_grow(&c->lps, &c->cap_lps, (size_t)o->n_logprobs + 1, sizeof *c->lps, 64))
        return; /* out of memory: the rest of the tokens go without */
    c->lps[o->n_logprobs] = (hearth_gen_logprob){.token = ev->token, .lp = ev->lp};
    o->logprobs = c->lps;
    o->n_logprobs++;
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

/* Choice i ended (out.end set). */
static void choice_over(gen *g, int32_t i) {
    g->ch[i].over = true;
    g->live[i] = NULL;
    g->n_over++;
    g->out[i].last = g->n_over == g->n;
    if (g->out[i].last) record(g, HEARTH_GEN_COMPLETED);
}

/* The engine's DONE of choice i, for its speculation counts, when the generation ended early (a
 * stop string cancelled it): the rest of its events are skipped, within a bounded wait (a
 * cancelled request ends at the engine's next step). */
static void drain_to_done(gen *g, int32_t i) {
    hearth_gen_out *o = &g->out[i];
    if (!o->speculating || !g->ch[i].req) return;
    double until = hearth_now_ms() + 2000;
    hearth_event ev;
    while (hearth_now_ms() < until) {
        if (hearth_request_next(g->ch[i].req, &ev, 50) != HEARTH_OK || ev.kind != HEARTH_EV_DONE) continue;
        o->n_drafted = ev.n_drafted;
        o->n_accepted = ev.n_accepted;
        return;
    }
}

static void stopped_by_string(gen *g, int32_t i) {
    drain_to_done(g, i);
    hearth_stop *st = &g->ch[i].stop;
    g->out[i].end = HEARTH_GEN_END_STOP;
    g->out[i].stop = st->hit >= 0 ? st->stops[st->hit] : (hearth_span){"", 0};
    choice_over(g, i);
}

/*
 * Wait for the next piece of final text of any choice; *i: whose. Returns 2 after a prefill
 * progress event (spec.progress); 1 with *a (maybe empty) after a token; 0 when choice *i is over (*a and *b: its last text, either may be
 * empty); -1 when the client is gone (requests cancelled); -2 on an engine error (g->err).
 */
static int next_text(gen *g, int32_t *i, hearth_span *a, hearth_span *b) {
    static const hearth_span none = {"", 0};
    *a = *b = none;
    for (;;) {
        hearth_event ev;
        if (g->has_pend) {
            ev = g->pend;
            g->which = g->pend_i;
            g->has_pend = false;
        } else if (hearth_request_next_any(g->live, g->n, &g->which, &ev, WAIT_MS) != HEARTH_OK) {
            if (hearth_fd_peer_gone(g->fd)) goto gone;
            continue;
        }
        int32_t k = *i = g->which;
        choice *c = &g->ch[k];
        hearth_gen_out *o = &g->out[k];
        o->n_cached = ev.n_cached;
        if (ev.kind == HEARTH_EV_PROGRESS) {
            o->n_prompt_done = ev.n_done;
            if (hearth_fd_peer_gone(g->fd)) goto gone;
            return 2;
        }
        if (ev.kind == HEARTH_EV_TOKEN) {
            double now = hearth_now_ms();
            if (g->n_tokens == 0) hearth_stats_ttft(g->srv->stats, now - g->t0_ms);
            else if (o->n_gen > 0) hearth_stats_itl(g->srv->stats, now - c->t_last_ms);
            c->t_last_ms = o->t_last_ms = now;
            if (!o->t_first_ms) o->t_first_ms = now;
            o->n_gen++;
            g->n_tokens++;
            if (ev.has_logprobs) keep_logprobs(g, k, &ev);
            int n = hearth_tok_decoder_push(&c->dec, ev.token, g->piece, g->cap_piece);
            if (n <= 0 && (c->rs || c->tc)) n = marker_text(g, ev.token);
            if (hearth_stop_push(&c->stop, g->piece, n > 0 ? (size_t)n : 0, a)) {
                hearth_engine_cancel(g->srv->e, c->req);
                stopped_by_string(g, k);
                return 0;
            }
            if (hearth_fd_peer_gone(g->fd)) goto gone;
            return 1;
        }
        o->n_drafted = ev.n_drafted; /* DONE */
        o->n_accepted = ev.n_accepted;
        switch (ev.finish) {
        case HEARTH_FINISH_STOP: o->end = HEARTH_GEN_END_EOG; break;
        case HEARTH_FINISH_LENGTH: o->end = HEARTH_GEN_END_LENGTH; break;
        case HEARTH_FINISH_CANCELLED:
            hearth_api_fail(&g->err, HEARTH_E_CANCELLED, "cancelled", NULL,
                            "the generation was cancelled (server shutting down)");
            cancel_all(g);
            record(g, HEARTH_GEN_FAILED);
            return -2;
        default:
            hearth_api_err_from_status(&g->err, ev.status ? ev.status : HEARTH_E_IO, NULL, ev.msg);
            cancel_all(g);
            record(g, HEARTH_GEN_FAILED);
            return -2;
        }
        int n = hearth_tok_decoder_flush(&c->dec, g->piece, g->cap_piece);
        if (hearth_stop_push(&c->stop, g->piece, n > 0 ? (size_t)n : 0, a)) {
            stopped_by_string(g, k);
            return 0;
        }
        *b = hearth_stop_flush(&c->stop);
        choice_over(g, k);
        return 0;
    }
gone:
    cancel_all(g);
    record(g, HEARTH_GEN_CANCELLED);
    hearth_log(HEARTH_LOG_INFO, "server: %s: client disconnected after %d tokens; cancelled", g->id, g->n_tokens);
    return -1;
}


/*
 * Wait until the engine admits g's (first choice's) request (or an event comes). Returns 0 to go on;
 * 1 when the server began draining while it was queued (answered 503 + Retry-After); -1 when
 * the client went away (cancelled, nothing to answer).
 */
static int wait_admitted(hearth_http_req *r, gen *g) {
    while (!hearth_request_admitted(g->ch[0].req)) {
        if (hearth_server_draining(g->srv)) {
            hearth_api_err e;
            cancel_all(g);
            record(g, HEARTH_GEN_CANCELLED);
            hearth_api_fail(&e, HEARTH_E_CANCELLED, "server_draining", NULL,
                            "the server is shutting down; this request was still queued and did not start");
            r->retry_after_s = 5;
            r->close = true;
            hearth_http_send_error(r, &e);
            return 1;
        }
        hearth_event ev;
        if (hearth_request_next_any(g->live, g->n, &g->which, &ev, WAIT_MS) == HEARTH_OK) {
            g->pend = ev;
            g->pend_i = g->which;
            g->has_pend = true;
            return 0;
        }
        if (hearth_fd_peer_gone(g->fd)) {
            cancel_all(g);
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
        int32_t i = 0;
        int rc = next_text(g, &i, &a, &b);
        if (rc == -1) return -1;
        if (!g->ch[i].started) {
            g->ch[i].started = true;
            d->start(&g->out[i], w);
        }
        if (rc == 2) {
            if (d->progress) d->progress(&g->out[i], w);
            if (!w->b.len) continue;
            return 1;
        }
        if (rc == 1) {
            bool was = in_reasoning(g, i);
            size_t before = g->out[i].text.len;
            if (a.len) split(g, i, a, false, w);
            count_reasoning(g, i, was, before);
            if (!w->b.len) continue;
            return 1;
        }
        if (rc == -2) {
            d->error(&g->out[i], w, &g->err);
            return 0;
        }
        split(g, i, a, false, w);
        split(g, i, b, true, w);
        if (d->finished) d->finished(&g->out[i]);
        d->end(&g->out[i], w);
        if (g->out[i].last) return 0;
        if (w->b.len) return 1;
    }
}

/* best_of: the n_choices sequences with the highest sum of token logprobs, best first (ties:
 * the lower index); else every choice in order. */
static void rank(gen *g) {
    int32_t keep = g->spec.n_choices > 1 ? g->spec.n_choices : 1;
    for (int32_t i = 0; i < g->n; i++) g->order[i] = i;
    if (g->n > keep)
        for (int32_t i = 1; i < g->n; i++) /* insertion sort: n is small */
            for (int32_t j = i; j > 0 && g->ch[g->order[j]].sum_lp > g->ch[g->order[j - 1]].sum_lp; j--) {
                int32_t t = g->order[j];
                g->order[j] = g->order[j - 1];
                g->order[j - 1] = t;
            }
    for (int32_t i = 0; i < g->n; i++) g->out[i].n_order = g->n < keep ? g->n : keep;
}

static void run_sync(hearth_http_req *r, gen *g) {
    while (g->n_over < g->n) {
        hearth_span a, b;
        int32_t i = 0;
        int rc = next_text(g, &i, &a, &b);
        if (rc == -1) return; /* nobody to answer: MHD closes the connection */
        if (rc == -2) {
            hearth_http_send_error(r, &g->err);
            return;
        }
        if (rc == 2) continue;
        bool was = in_reasoning(g, i);
        size_t before = g->out[i].text.len;
        split(g, i, a, false, NULL);
        if (rc == 0) {
            split(g, i, b, true, NULL);
            if (g->spec.dialect->finished) g->spec.dialect->finished(&g->out[i]);
            continue;
        }
        count_reasoning(g, i, was, before);
    }
    rank(g);
    hearth_jw w;
    hearth_jw_init(&w);
    g->spec.dialect->body(&g->out[g->order[0]], &w);
    for (int32_t i = 0; i < g->n; i++)
        if (g->ch[i].text.b.oom || g->ch[i].reasoning.b.oom) w.b.oom = true; /* a reply cut short: the out-of-memory answer */
    hearth_http_send_json(r, 200, &w);
    hearth_jw_fini(&w);
}

/* The engine's params of every choice (constraints made, one per choice); false with e set. */
static bool choice_params(gen *g, hearth_request_params *rp, hearth_api_err *e) {
    hearth_server *s = g->srv;
    bool lp = g->spec.logprobs || g->n > (g->spec.n_choices > 1 ? g->spec.n_choices : 1);
    for (int32_t i = 0; i < g->n; i++) {
        rp[i] = (hearth_request_params){.prompt = g->spec.prompt, .n_prompt = g->spec.n_prompt,
                                        .max_tokens = g->spec.max_tokens, .sampling = g->spec.sampling,
                                        .ignore_eog = g->spec.ignore_eos, .min_tokens = g->spec.min_tokens,
                                        .progress = i == 0 && g->spec.progress && g->spec.stream, /* the prefill's */
                                        .logprobs = lp, .top_logprobs = g->spec.top_logprobs,
                                        .no_spec = g->spec.no_spec,
                                        .lora = g->spec.lora, .lora_id = g->spec.lora_id,
                                        .images = g->spec.images, .n_images = g->spec.n_images};
        rp[i].sampling.seed = g->spec.sampling.seed + (uint64_t)i; /* choice i: seed + i */
        if (!g->spec.constraint) continue;
        hearth_cx_grammar *gr = i + 1 < g->n ? hearth_cx_grammar_clone(g->spec.constraint) : g->spec.constraint;
        if (i + 1 == g->n) g->spec.constraint = NULL; /* the last choice takes the original */
        rp[i].constraint = gr ? hearth_structured_matcher(s, gr) : NULL; /* takes gr over */
        if (!rp[i].constraint) return hearth_api_oom(e);
        const char *fed = g->spec.constraint_fed;
        if (fed && !hearth_cx_matcher_feed(rp[i].constraint, fed, strlen(fed)))
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "messages",
                                   "the final assistant message is not the start of a reply in the response_format");
    }
    return true;
}

void hearth_gen_run(hearth_http_req *r, hearth_gen_spec *spec) {
    hearth_server *s = r->srv;
    hearth_api_err e;
    hearth_request_params *rp = NULL;
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
    int32_t n_choices = g->spec.n_choices > 1 ? g->spec.n_choices : 1;
    g->n = g->spec.best_of > n_choices ? g->spec.best_of : n_choices;
    g->ch = calloc((size_t)g->n, sizeof *g->ch);
    g->out = calloc((size_t)g->n, sizeof *g->out);
    g->live = calloc((size_t)g->n, sizeof *g->live);
    g->order = calloc((size_t)g->n, sizeof *g->order);
    rp = calloc((size_t)g->n, sizeof *rp);
    if (!g->ch || !g->out || !g->live || !g->order || !rp) {
        hearth_api_oom(&e);
        goto fail;
    }
    for (int32_t i = 0; i < g->n; i++) {
        hearth_jw_init(&g->ch[i].text);
        hearth_jw_init(&g->ch[i].reasoning);
        g->order[i] = i;
        g->out[i] = (hearth_gen_out){.srv = s, .spec = &g->spec, .ctx = g->spec.ctx, .id = g->id, .text = {"", 0},
                                     .reasoning = {"", 0}, .index = i, .all = g->out, .n_all = g->n,
                                     .order = g->order, .n_order = g->n};
    }

    hearth_engine_info ei;
    hearth_engine_info_get(s->e, &ei);
    for (int32_t i = 0; i < g->n; i++) g->out[i].speculating = ei.spec_kind[0] && !g->spec.no_spec;

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
    int64_t pool_room = (int64_t)ei.max_request_tokens - (int64_t)g->spec.n_prompt;
    if (g->spec.max_tokens <= 0 || g->spec.max_tokens > room) g->spec.max_tokens = (int32_t)room;
    if (!g->spec.max_tokens_set && pool_room >= 1 && g->spec.max_tokens > pool_room)
        g->spec.max_tokens = (int32_t)pool_room;

    const hearth_tok *tok = hearth_model_tok(s->m);
    g->cap_piece = 64 + hearth_tok_max_piece(tok);
    g->piece = malloc(g->cap_piece);
    if (!g->piece) {
        hearth_api_oom(&e);
        goto fail;
    }
    hearth_server_new_id(s, g->spec.dialect->id_prefix, g->id, sizeof g->id);
    for (int32_t i = 0; i < g->n; i++) {
        choice *c = &g->ch[i];
        if (hearth_stop_init(&c->stop, g->spec.stops, g->spec.n_stops) ||
            (g->spec.reasoning && !(c->rs = hearth_rs_create(g->spec.reasoning, g->spec.reasoning_open))) ||
            (g->spec.tools && !(c->tc = hearth_tc_create(g->spec.tools, id_hash(g->id) + (uint64_t)i)))) {
            hearth_api_oom(&e);
            goto fail;
        }
        hearth_tok_decoder_init(&c->dec, tok, false);
        if (c->tc && g->spec.stream) hearth_tc_stream_args(c->tc); /* arguments streamed as they come */
    }
    int64_t created = (int64_t)time(NULL);
    g->fd = hearth_http_fd(r);
    g->t0_ms = r->t_done_ms;
    for (int32_t i = 0; i < g->n; i++) {
        g->out[i].created = created;
        g->out[i].t0_ms = r->t_done_ms;
    }

    g->spec.sampling.bias = g->spec.bias;
    if (!choice_params(g, rp, &e)) {
        for (int32_t i = 0; i < g->n; i++) hearth_cx_matcher_destroy(rp[i].constraint);
        goto fail;
    }
    hearth_err herr = {0};
    hearth_request *reqs[1];
    hearth_status st = g->n == 1 ? hearth_engine_submit(s->e, rp, reqs, &herr)
                                 : hearth_engine_submit_n(s->e, rp, g->n, g->live, &herr);
    if (g->n == 1) g->live[0] = st ? NULL : reqs[0];
    if (st == HEARTH_E_LIMIT) { /* the engine's admission: it could never fit the KV pool */
        hearth_api_fail(&e, HEARTH_E_LIMIT, "context_over_budget", "max_tokens", "%s", herr.msg);
        e.type = "memory_admission";
        goto fail;
    }
    if (st) {
        hearth_api_err_from_status(&e, st, NULL, herr.msg);
        goto fail;
    }
    for (int32_t i = 0; i < g->n; i++) g->ch[i].req = g->live[i];
    free(rp);
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
    free(rp);
    hearth_http_send_error(r, &e);
    gen_free(g);
}

void hearth_gen_speculation_json(const hearth_gen_out *g, hearth_jw *w) {
    if (!g->speculating) return;
    int64_t drafted = 0, accepted = 0;
    for (int32_t i = 0; i < g->n_all; i++) {
        drafted += g->all[i].n_drafted;
        accepted += g->all[i].n_accepted;
    }
    hearth_jw_key(w, "speculation");
    hearth_jw_obj(w);
    hearth_jw_key(w, "drafted");
    hearth_jw_int(w, drafted);
    hearth_jw_key(w, "accepted");
    hearth_jw_int(w, accepted);
    hearth_jw_obj_end(w);
}

bool hearth_gen_parse_common(const cJSON *root, hearth_gen_spec *g, hearth_api_err *e) {
    bool on = true;
    if (hearth_req_bool(root, "speculative", &on, e) < 0) return false;
    int64_t n_max = 1;
    if (hearth_req_int(root, "speculative.n_max", 0, 1e9, &n_max, e) < 0) return false;
    g->no_spec = !on || n_max == 0;
    return true;
}

void hearth_gen_handle(hearth_http_req *r, hearth_gen_parse_fn parse) {
    hearth_api_err e;
    hearth_gen_spec g = {0};
    cJSON *root = hearth_req_parse(r, &e);
    bool ok = root && parse(r->srv, root, (hearth_span){r->body, r->n_body}, &g, &e) &&
              hearth_gen_parse_common(root, &g, &e) && hearth_adapters_pick(r->srv, root, &g.lora, &g.lora_id, &e);
    cJSON_Delete(root);
    if (ok) {
        hearth_gen_run(r, &g);
        return;
    }
    hearth_gen_spec_free(&g);
    hearth_http_send_error(r, &e);
}
