/*
 * openai.h - the OpenAI dialect: /v1/chat/completions, /v1/completions, /v1/models, /v1.
 *
 * Request semantics follow api.openai.com where it defines them, mlx_lm.server and mlx-bun
 * where it does not (see docs/server.md): fields that do not change the output and that hearth
 * does not know are ignored, wrong types and values out of range are 400 with the field in
 * "param", and a field that would change the output but that hearth does not honour (suffix,
 * ...) is a 400 naming it rather than being dropped.
 *
 * Thread rule: handlers run on the connection's thread.
 */
#pragma once
#include "server/generate.h"
#include "server/server_internal.h"

/* The writers of OpenAI's chat.completion(.chunk) and text_completion shapes (openai_out.c);
 * their per-request context is a hearth_openai_out. */
#define HEARTH_CHOICES_MAX 128 /* n and best_of (OpenAI's bound on n) */
typedef struct {
    bool    include_usage; /* stream_options.include_usage (streams only) */
    int32_t lp_sent[HEARTH_CHOICES_MAX];   /* streaming, per choice: logprob entries already written */
    int64_t lp_offset[HEARTH_CHOICES_MAX]; /* streaming completions, per choice: text_offset of the next entry */
    bool    timings;       /* llama-server's "timings" in the body / the last chunk (--timings) */
    bool    timings_per_token; /* ... and in every chunk (the request's timings_per_token) */
} hearth_openai_out;
extern const hearth_gen_dialect hearth_openai_chat_out;
extern const hearth_gen_dialect hearth_openai_text_out;

void hearth_openai_chat(hearth_http_req *r);
void hearth_openai_completions(hearth_http_req *r);
void hearth_openai_models(hearth_http_req *r);
void hearth_openai_model(hearth_http_req *r);  /* GET /v1/models/<id> */
void hearth_openai_index(hearth_http_req *r);  /* GET /v1 */
