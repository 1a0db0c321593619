/*
 * fuzz_responses.c - libFuzzer entry point for the OpenAI Responses API: each input is the JSON
 * body of one POST /v1/responses, sent with the API key, Host, Origin and Content-Type a client
 * sends, through the in-process server of fuzz/http_harness.h (libmicrohttpd, the router, the
 * body checks, the Responses parser, its mapping onto a chat body and the response store
 * (responses.c, chatmap.c, resp_store.c), the chat template, the tokenizer, the stub engine, the
 * writers). The harness checks that exactly one well-framed response comes back, never a 5xx,
 * JSON that parses (every stream event's too), errors in the API's error shape.
 *
 * Built by CMake (fuzz/fuzz.cmake): replayed over fuzz/corpus/responses in every build
 * (fuzz_responses_replay), fuzzed under libFuzzer in build-fuzz/ (`make fuzz`, scripts/fuzz.sh
 * build-fuzz 60 responses) with fuzz/responses.dict. Seeds, written by hand: ok_* are requests
 * the server should answer 2xx, bad_* ones it should refuse (the names say what is meant; the
 * harness does not hold the server to them). Run from the repository root (the server loads
 * tests/golden/tiny/tiny-qwen2.gguf).
 */
#include "fuzz/http_harness.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_http_post_json("/v1/responses", data, size);
    return 0;
}
