/*
 * fuzz_completions.c - libFuzzer entry point for OpenAI text completions: each input is the JSON
 * body of one POST /v1/completions, sent with the API key, Host, Origin and Content-Type a client
 * sends, through the in-process server of fuzz/http_harness.h (libmicrohttpd, the router, the
 * body checks, the completions request parser (openai.c), the chat template, the tokenizer, the
 * stub engine, the writers). The harness checks that exactly one well-framed response comes back,
 * never a 5xx, JSON that parses (every stream event's too), errors in the API's error shape.
 *
 * Built by CMake (fuzz/fuzz.cmake): replayed over fuzz/corpus/completions in every build
 * (fuzz_completions_replay), fuzzed under libFuzzer in build-fuzz/ (`make fuzz`, scripts/fuzz.sh
 * build-fuzz 60 completions) with fuzz/completions.dict. Seeds, written by hand: ok_* are
 * requests the server should answer 2xx, bad_* ones it should refuse (the names say what is
 * meant; the harness does not hold the server to them). Run from the repository root (the server
 * loads tests/golden/tiny/tiny-qwen2.gguf).
 */
#include "fuzz/http_harness.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_http_post_json("/v1/completions", data, size);
    return 0;
}
