/*
 * generate.h - run one parsed completion request on the engine and answer it, as one JSON
 * body or as an SSE stream, in the shapes of the dialect that parsed it.
 *
 * A dialect's parser (openai.c, anthropic.c, responses.c) fills a hearth_gen_spec: the prompt
 * tokens, sampling, stop strings, and a writer (hearth_gen_dialect) with its per-request
 * context. hearth_gen_run takes it over and does what every dialect shares: checks the
 * prompt against the context, submits to the engine, detokenizes incrementally (incomplete
 * UTF-8 held back), applies stop strings (stop.h), records the latency and token counters,
 * cancels the engine request when the client goes away or a stop string ends the text, splits
 * reasoning (reasoning.h) and tool calls (toolcall.h) off the text when the spec asks, and
 * calls the writer for each piece:
 *
 *   stream:      start, progress*, (text | reasoning | tool_delta)*, end  (or ..., error on an
 *                engine failure; progress frames only when the spec asks)
 *   non-stream:  body                       (errors go out through hearth_http_send_error)
 *   both:        finished, after a generation that completed (the responses store)
 *
 * Choices (spec.n_choices > 1, OpenAI's n): the engine runs them as one group
 * (hearth_engine_submit_n: the prompt prefilled once, choice i sampling with seed + i), each
 * with its own decoder, stop strings, splitters and constraint. A stream interleaves them as
 * their tokens come: start, pieces and end run per choice with that choice's out (out.index),
 * and out.last marks the end of the last choice to finish (the writer closes the stream
 * there). A body is written once, after every choice ended, from out.all and out.order.
 * best_of (spec.best_of > n_choices, not streamed) runs best_of choices and keeps the n with
 * the highest sum of token logprobs.
 *
 * Thread rule: the connection's thread.
 */
#pragma once
#include "engine/engine.h"
#include "server/reasoning.h"
#include "server/server_internal.h"
#include "server/stop.h"
#include "server/toolcall.h"

typedef enum {
    HEARTH_GEN_END_EOG = 0, /* the model ended its turn (an end-of-generation token) */
    HEARTH_GEN_END_STOP,    /* a stop string matched: hearth_gen_out.stop says which */
    HEARTH_GEN_END_LENGTH,  /* max_tokens (or the context) was reached */
} hearth_gen_end;

typedef struct hearth_gen_dialect hearth_gen_dialect;

typedef struct {
    const hearth_gen_dialect *dialect;    /* static; required */
    void                 *ctx;            /* owned: the dialect's per-request data (dialect->ctx_free) */
    bool                  stream;
    int32_t              *prompt;         /* owned (malloc) [n_prompt] */
    size_t                n_prompt;
    int32_t               max_tokens;     /* <= 0: the rest of the context */
    bool                  max_tokens_set; /* the request gave it (else a default, clamped to the KV pool) */
    bool                  ignore_eos;
    int32_t               min_tokens;     /* end-of-generation tokens masked until this many (0: off) */
    bool                  progress;       /* streams: the writer's progress frames during the prefill */
    const char           *prompt_param;   /* the request field named by a context error */
    hearth_sampler_params sampling;       /* .bias points at bias below */
    hearth_logit_bias    *bias;           /* owned (malloc) [sampling.n_bias] */
    char                 *stop_text[HEARTH_STOP_MAX]; /* owned (malloc) */
    hearth_span           stops[HEARTH_STOP_MAX];     /* views of stop_text */
    int                   n_stops;
    hearth_tc_format      tools;          /* parse tool calls in this format (NONE: off) */
    hearth_rs_format      reasoning;      /* split reasoning off in this format (NONE: off) */
    bool                  reasoning_open; /* the reply starts inside a reasoning block */
    bool                  logprobs;       /* collect each generated token's logprob ... */
    int32_t               top_logprobs;   /* ... and this many alternatives (<= HEARTH_TOP_LOGPROBS_MAX) */
    struct hearth_cx_grammar *constraint; /* owned, may be NULL: the reply's forced shape (structured.h);
                                           * each choice runs a copy */
    char                 *constraint_fed; /* owned, may be NULL: text the constraint takes in before
                                           * the reply (a continued assistant message) */
    int32_t               n_choices;      /* choices to answer (OpenAI's n); <= 1: one */
    int32_t               best_of;        /* sequences to run and rank (> n_choices; not streamed);
                                           * <= n_choices: n_choices */
    bool                  no_spec;        /* the request's "speculative": false (no drafts for it) */
    const struct hearth_lora *lora;       /* owned reference, NULL: the base model (adapters_api.h) */
    uint64_t              lora_id;        /* its mount's uid (engine.h lora_id) */
    hearth_image_input   *images;         /* owned [n_images] (rows too; hearth_vprompt_free): the
                                           * prompt's images (vision_prompt.h) */
    int32_t               n_images;
} hearth_gen_spec;

/* One generated token's log-probabilities (spec->logprobs). */
typedef struct {
    int32_t               token;
    hearth_token_logprobs lp;
} hearth_gen_logprob;

/* What a writer sees of its generation (of one choice). Fields are valid from `start` on
 * unless noted. */
typedef struct hearth_gen_out_s {
    hearth_server         *srv;      /* borrowed */
    const hearth_gen_spec *spec;
    void                  *ctx;      /* spec->ctx */
    const char            *id;       /* dialect->id_prefix + 24 hex digits */
    int64_t                created;  /* unix seconds */
    int32_t                n_cached; /* prompt tokens whose KV came from the prefix cache */
    int32_t                n_gen;    /* tokens generated so far */
    int32_t                n_reasoning; /* of them, those inside the reasoning (markers included) */
    hearth_gen_end         end;      /* in end, body and finished */
    hearth_span            stop;     /* END_STOP: the stop string that matched */
    hearth_span            text;     /* every piece of final content so far (all of it in end/body) */
    hearth_span            reasoning; /* every piece of reasoning so far (spec->reasoning) */
    const hearth_tool_call *calls;   /* every tool call so far [n_calls] (spec->tools) */
    int                    n_calls;
    const hearth_gen_logprob *logprobs; /* every generated token so far [n_logprobs] (spec->logprobs);
                                       * a streaming writer sends those it has not sent yet */
    int32_t                n_logprobs;
    double                 t0_ms;    /* hearth_now_ms() when the request's body was complete */
    double                 t_first_ms; /* ... when the first token came (0 before) */
    double                 t_last_ms;  /* ... when the latest token came (0 before) */
    int32_t                n_prompt_done; /* progress: prompt tokens whose KV is in place */
    int32_t                index;    /* this choice's (0 unless spec->n_choices > 1) */
    bool                   last;     /* in end: no other choice is still running */
    const struct hearth_gen_out_s *all; /* every sequence run [n_all] (usage sums them) */
    int32_t                n_all;
    const int32_t         *order;    /* in body: the choices to answer, as indices into all, in
                                      * answer order [n_order] (best_of ranks them) */
    int32_t                n_order;
    bool                   speculating; /* the server speculates and the request did not turn it off */
    int32_t                n_drafted, n_accepted; /* speculating: draft tokens verified for this
                                       * sequence and those accepted (set when it ended) */
} hearth_gen_out;

struct hearth_gen_dialect {
    const char *id_prefix;  /* "chatcmpl-", "msg_", "resp_" ... */
    /* Streaming: the first frames, once the engine's first event arrived (so n_cached is
     * known); a piece of final text (never empty); the last frames. */
    void (*start)(hearth_gen_out *g, hearth_jw *w);
    void (*text)(hearth_gen_out *g, hearth_jw *w, hearth_span piece);
    void (*end)(hearth_gen_out *g, hearth_jw *w);
    /* Streaming: the engine failed after the stream began (start has been written). */
    void (*error)(hearth_gen_out *g, hearth_jw *w, const hearth_api_err *e);
    /* Non-streaming: the whole response body. */
    void (*body)(hearth_gen_out *g, hearth_jw *w);
    /* (optional) streaming: a piece of reasoning (never empty); without it reasoning is only
     * in out.reasoning. */
    void (*reasoning)(hearth_gen_out *g, hearth_jw *w, hearth_span piece);
    /* Streaming with tools (spec->tools): a step of a tool call (toolcall.h's incremental
     * mode): BEGIN, ARGS pieces as the model writes them, END. out.calls has every call whose
     * markup closed. */
    void (*tool_delta)(hearth_gen_out *g, hearth_jw *w, const hearth_tc_delta *d);
    /* (optional) streaming with spec->progress: the prefill advanced (out.n_prompt_done of
     * the prompt's tokens, out.n_cached of them from the cache); after start. */
    void (*progress)(hearth_gen_out *g, hearth_jw *w);
    /* (optional) the generation completed, streamed or not; runs before end / body. */
    void (*finished)(hearth_gen_out *g);
    /* (optional) free spec->ctx. */
    void (*ctx_free)(void *ctx);
};

/* "speculation":{"drafted":N,"accepted":M} (a key and its object, for a usage object) when
 * g->speculating, summed over every sequence run (g->all); nothing otherwise. */
void hearth_gen_speculation_json(const hearth_gen_out *g, hearth_jw *w);

/* Start a spec: sampling defaults by precedence (sampling.h: the server's flags, then the
 * model's generation_config.json, then hearth's defaults), a fresh seed, and max_tokens from
 * --max-tokens, else generation_config's max_new_tokens, else default_max (0 = the rest of
 * the context). */
void hearth_gen_spec_init(hearth_server *s, hearth_gen_spec *spec, const hearth_gen_dialect *d, int32_t default_max);
/* Add one stop string (copied; empty strings are skipped). False with e filled (400 naming
 * param) when there are too many or it is too long. */
bool hearth_gen_add_stop(hearth_gen_spec *spec, const char *s, const char *param, hearth_api_err *e);
/* Free what spec owns (ctx included) and clear it. */
void hearth_gen_spec_free(hearth_gen_spec *spec);
/* Answer r by running spec; takes over spec's arrays and ctx (spec is cleared). */
void hearth_gen_run(hearth_http_req *r, hearth_gen_spec *spec);

/* A dialect's request parser: fill spec from the parsed body root (raw: the body's text, for
 * values copied into the template context with their spelling), or fill e and fail. */
struct cJSON;
typedef bool (*hearth_gen_parse_fn)(hearth_server *s, const struct cJSON *root, hearth_span raw,
                                    hearth_gen_spec *spec, hearth_api_err *e);
/* The fields every dialect shares, into spec: "speculative" (a boolean; false: no speculative
 * decoding for this request) and llama-server's "speculative.n_max" (0 means the same; other
 * values are accepted and change nothing). False with e filled (400 naming the field). */
bool hearth_gen_parse_common(const struct cJSON *root, hearth_gen_spec *spec, hearth_api_err *e);
/* The handler of a generating endpoint: check and parse r's body (reqjson.h), parse it into a
 * spec (the dialect's parser, then hearth_gen_parse_common), run it; any failure is answered as
 * the error (in the path's dialect). */
void hearth_gen_handle(hearth_http_req *r, hearth_gen_parse_fn parse);
