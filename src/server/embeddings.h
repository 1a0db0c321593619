/*
 * embeddings.h - POST /v1/embeddings, OpenAI's shape, served by an encoder model (models/bert.h).
 *
 *   request   {"input": string | [string, ...] | [id, ...] | [[id, ...], ...],
 *              "model": string, "encoding_format": "float" | "base64", "dimensions": N,
 *              "truncate": bool (vLLM's), "user": string}
 *   answer    {"object": "list", "data": [{"object": "embedding", "index": i,
 *              "embedding": [floats] | "base64 of little-endian f32"}], "model": id,
 *              "usage": {"prompt_tokens": N, "total_tokens": N}}
 *
 * Strings are tokenized as the model's tokenizer does for sentence-transformers ([CLS] ...
 * [SEP]); token-id inputs go to the encoder as they are. All inputs of a request run through
 * the encoder together (one forward per max_batch_tokens; bert.h). `dimensions` keeps the first
 * N numbers and normalizes them again (Matryoshka). An input longer than the model's limit is a
 * 400 naming its index and the limit, unless "truncate": true cuts it. A server without an
 * encoder (a chat model) answers 400 saying so; docs/embeddings.md has the rest.
 *
 * Thread rule: runs on the connection's thread; the encoder serializes its forwards.
 */
#pragma once
#include "server/server_internal.h"

void hearth_embeddings(hearth_http_req *r);
/* Is the route handler fn served while the server has only an embedding model (no engine)? */
bool hearth_embeddings_only_route(void (*fn)(hearth_http_req *r));
