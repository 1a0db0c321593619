/*
 * generate.h - run one parsed completion request on the engine and answer it, as one JSON
 * body or as an SSE stream, in OpenAI's chat.completion or text_completion shapes.
 *
 * The dialect parser (openai.c) fills a hearth_gen_spec; hearth_gen_run takes it over:
 * checks the prompt against the context, submits to the engine, detokenizes incrementally
 * (incomplete UTF-8 held back), applies stop strings (stop.h), records the latency and token
 * counters, and cancels the engine request when the client goes away or a stop string ends
 * the text early.
 *
 * Thread rule: the connection's thread.
 */
#pragma once
#include "engine/engine.h"
#include "server/server_internal.h"
#include "server/stop.h"

typedef struct {
    bool                  chat;           /* chat.completion(.chunk), else text_completion */
    bool                  stream, include_usage;
    int32_t              *prompt;         /* owned (malloc) [n_prompt] */
    size_t                n_prompt;
    int32_t               max_tokens;     /* <= 0: the rest of the context */
    bool                  max_tokens_set; /* the request gave it (else a default, clamped to the KV pool) */
    bool                  ignore_eos;
    hearth_sampler_params sampling;       /* .bias points at bias below */
    hearth_logit_bias    *bias;           /* owned (malloc) [sampling.n_bias] */
    char                 *stop_text[HEARTH_STOP_MAX]; /* owned (malloc) */
    hearth_span           stops[HEARTH_STOP_MAX];     /* views of stop_text */
    int                   n_stops;
} hearth_gen_spec;

/* Free what spec owns and clear it. */
void hearth_gen_spec_free(hearth_gen_spec *spec);
/* Answer r by running spec; takes over spec's arrays (spec is cleared). */
void hearth_gen_run(hearth_http_req *r, hearth_gen_spec *spec);
