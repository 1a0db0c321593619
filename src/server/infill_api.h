/*
 * infill_api.h - fill-in-the-middle over HTTP: llama-server's POST /infill and the `suffix` of
 * POST /v1/completions, both through infill.h's prompt. A model without FIM prefix, suffix and
 * middle tokens answers 400 naming the missing ones.
 *
 * /infill takes llama-server's fields: input_prefix and input_suffix (required; a string, or a
 * list of strings and token ids), prompt (the text right before the cursor), input_extra
 * ([{"filename", "text"}], other files of the project), n_predict (or max_tokens; -1 = until
 * the context ends, 0 = no generation), temperature, top_k, top_p, min_p, seed (-1 = random),
 * stop, stream, repeat_penalty, repeat_last_n (-1 = the context), presence_penalty,
 * frequency_penalty, ignore_eos, response_fields (the final object's keys to send). Accepted
 * without effect, as docs/server.md lists: cache_prompt (the prefix cache is automatic),
 * samplers (hearth's order is fixed), n_indent, t_max_prompt_ms, t_max_predict_ms, id_slot.
 * It answers in llama-server's /completion shape: {"content", "stop": true, "stop_type": "eos" | "limit" | "word",
 * "stopping_word", "tokens_predicted", "tokens_evaluated", "tokens_cached", "prompt", ...};
 * a stream sends {"content": piece, "stop": false, ...} frames and that object last (with
 * "content": ""), without [DONE].
 *
 * /v1/completions with a non-empty suffix: the prompt (a string, token ids, or one of those in
 * a list) is the prefix, the suffix the suffix; no extra files, no cursor prompt. The answer
 * keeps OpenAI's text_completion shape.
 *
 * Thread rule: the connection's thread.
 */
#pragma once
#include <cjson/cJSON.h>

#include "server/generate.h"
#include "server/server_internal.h"

/* POST /infill */
void hearth_infill_handle(hearth_http_req *r);

/* The FIM prompt of a completion request with a suffix into g->prompt (root: the body). */
bool hearth_infill_completion_prompt(hearth_server *s, const cJSON *root, hearth_gen_spec *g, hearth_api_err *e);
