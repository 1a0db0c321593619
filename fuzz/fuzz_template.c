/*
 * fuzz_template.c - libFuzzer entry point for the chat-template engine (template/template.h).
 *
 * Each input is a template: it is parsed, and when it parses it is rendered over a fixed
 * context shaped like a chat request (messages with a tool call and content parts, tools,
 * special tokens) under tight limits. The engine's promises are checked and a broken one
 * aborts, so logic bugs show up next to what ASan and UBSan find: a failure carries its status
 * in the error record with a message (and, for a parse error, a line and column inside the
 * input), produces no output; a success produces at most max_output_bytes, NUL-terminated.
 * Rendering twice must give the same bytes (the engine keeps no state between renders; the
 * template's time functions are not in the dictionary, so outputs are deterministic).
 *
 * Built by CMake (fuzz/fuzz.cmake): in every build with a replay main() (fuzz/replay.c), and
 * the test fuzz_template_replay runs fuzz/corpus/template through it (sanitized in build-asan/);
 * `make fuzz` builds it with libFuzzer in build-fuzz/ (clang-14) and runs it for FUZZ_SECONDS
 * (scripts/fuzz.sh). A longer run of this target alone, once build-fuzz/ is built:
 *
 *   scripts/fuzz.sh build-fuzz 180 template      or, with libFuzzer's own flags:
 *   ./build-fuzz/fuzz_template -dict=fuzz/template.dict -max_len=4096 -max_total_time=180 \
 *       build-fuzz/corpus-template fuzz/corpus/template
 *
 * New inputs go to the first directory (scratch, not committed); fuzz/corpus/template holds the
 * committed seeds (hand-written templates; ok_* must render). A crasher is fixed in the engine
 * and then copied into fuzz/corpus/template as crash_<what>.jinja, where the
 * fuzz_corpus_replay test of tests/unit/test_template.c runs it, with this context and these
 * limits, on every test run. `./build/fuzz_template FILE...` replays single files.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "template/template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Keep in step with FUZZ_CTX in tests/unit/test_template.c. */
static const char FUZZ_CTX[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"Hi <b> & 'q'\"},"
    " {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"type\": \"function\", \"function\": {\"name\": \"f\","
    " \"arguments\": {\"x\": 1, \"y\": [1.5, \"z\"]}}}]}, {\"role\": \"tool\", \"content\": \"42\"},"
    " {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"part\"}]}],"
    " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": \"object\"}}}],"
    " \"documents\": null, \"add_generation_prompt\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\","
    " \"enable_thinking\": false, \"s\": \"h\\u00e9llo\", \"n\": 3, \"f\": 0.5, \"d\": {\"k\": \"v\"}}";

#define PROMISE(x)                                                                   \
    do {                                                                             \
        if (!(x)) {                                                                  \
            fprintf(stderr, "fuzz_template: broken promise: %s (line %d)\n", #x, __LINE__); \
            abort();                                                                 \
        }                                                                            \
    } while (0)

static hearth_status render(const hearth_tmpl *t, const hearth_tmpl_limits *lim, char **out, size_t *n,
                            hearth_err *err) {
    *out = (char *)1;
    hearth_status st = hearth_tmpl_render(t, FUZZ_CTX, strlen(FUZZ_CTX), lim, out, n, err);
    if (st == HEARTH_OK) {
        PROMISE(*out != NULL && *n <= lim->max_output_bytes && (*out)[*n] == 0);
    } else {
        PROMISE(*out == NULL && err->code == st && err->msg[0] != 0);
    }
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hearth_tmpl *t = (hearth_tmpl *)1;
    hearth_err err;
    hearth_status st = hearth_tmpl_parse((const char *)data, size, &t, &err);
    if (st != HEARTH_OK) {
        PROMISE(t == NULL && err.code == st && err.msg[0] != 0);
        PROMISE(err.line >= 1 && err.col >= 1);
        PROMISE(err.pos < 0 || (size_t)err.pos <= size);
        return 0;
    }
    PROMISE(t != NULL);
    hearth_tmpl_limits lim = {.max_output_bytes = 1 << 16, .max_steps = 100000, .max_depth = 16,
                              .max_memory_bytes = 16 << 20};
    char *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    hearth_status s1 = render(t, &lim, &a, &na, &err);
    hearth_status s2 = render(t, &lim, &b, &nb, &err);
    if (!memmem(data, size, "strftime", 8)) { /* the clock is the one input that moves */
        PROMISE(s1 == s2);
        if (s1 == HEARTH_OK && s2 == HEARTH_OK) PROMISE(na == nb && memcmp(a, b, na) == 0);
    }
    if (s1 == HEARTH_OK) free(a);
    if (s2 == HEARTH_OK) free(b);
    hearth_tmpl_destroy(t);
    return 0;
}
