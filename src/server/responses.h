/*
 * responses.h - the OpenAI Responses dialect: POST /v1/responses, GET and DELETE
 * /v1/responses/{id}, as the openai SDK's `responses` client and Codex-style agents call them.
 *
 * `input` (a string or a list of items) and `instructions` are mapped onto a chat body
 * (chatmap.h) and run like a chat completion (generate.h). A stored response (`store`
 * defaults to true) keeps its conversation in the server's store (resp_store.h), so a
 * request with `previous_response_id` continues it: the earlier turns, the earlier answer,
 * then the new input. Instructions are not carried over (the API's rule: each request
 * brings its own). An unknown or expired id is a 404 in OpenAI's error shape.
 *
 * Thread rule: handlers run on the connection's thread.
 */
#pragma once
#include <cjson/cJSON.h>

#include "server/generate.h"
#include "server/server_internal.h"

void hearth_responses_create(hearth_http_req *r);
void hearth_responses_get(hearth_http_req *r);    /* GET /v1/responses/{id} */
void hearth_responses_delete(hearth_http_req *r); /* DELETE /v1/responses/{id} */

/* The writer of the Responses shapes (responses_out.c) and its per-request context. */
typedef struct {
    cJSON  *conv;               /* owned: the conversation (chat messages) up to this input, no instructions */
    char   *instructions;       /* owned, NULL when none */
    char   *previous_id;        /* owned, NULL when none */
    char   *tools;              /* owned: the request's tools as JSON (echoed), NULL when none */
    char   *metadata;           /* owned: the request's metadata as JSON, NULL when none */
    int32_t max_output_tokens;  /* 0: not given */
    bool    store;
    char    msg_id[48];         /* the output message item's id */
    int64_t seq;                /* the next event's sequence_number */
    bool    item_open;          /* the message item was announced (stream) */
    int     msg_index;          /* stream: its output_index once announced */
    int     n_items;            /* stream: output items announced so far */
    int     call_at;            /* stream: output_index of the function_call item being streamed */
    char    rs_id[48];          /* the reasoning item's id */
    int     rs_index;           /* stream: its output_index once announced, else -1 */
    bool    rs_open;            /* stream: the reasoning item is announced and not done */
} hearth_responses_out;
extern const hearth_gen_dialect hearth_responses_writer;
