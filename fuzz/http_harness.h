/*
 * http_harness.h - one hearth server, in process, for the fuzz targets of the HTTP front door
 * (fuzz_http, fuzz_chat, fuzz_completions, fuzz_messages, fuzz_responses).
 *
 * The server is the real one (hearth_server_create: libmicrohttpd, the router, the header and
 * body checks, the API handlers, the writers) serving the committed tiny model's tokenizer
 * with a ChatML template that has tools and reasoning, on the stub engine of
 * fuzz/stub_engine.c (a reply that repeats the prompt's tail, no weights, no thread). It is
 * started once per process, driven (hearth_server_create_driven: libmicrohttpd without threads
 * of its own, run by the harness from the fuzzing thread; the server's code is the same, only
 * where its callbacks run differs). Each request goes in over one end of a socketpair whose
 * other end is handed to the daemon with MHD_add_connection, so libmicrohttpd parses the very
 * bytes written - no network, no port is connected to - and the exchange returns only once the
 * daemon has closed that connection, so one input's work never runs into the next.
 *
 * Two ways in:
 *
 *   fz_http_framed   the harness writes the request line and a Content-Length that matches the
 *                    body, so the request is complete; it reads exactly one response, then
 *                    closes. Promises checked (a broken one aborts):
 *                    - a response arrives (within FZ_TIMEOUT_MS) and is well framed: a status
 *                      line with a code in 100..599, a body as long as Content-Length says or a
 *                      complete chunked body; the one exception, a big head that left
 *                      libmicrohttpd no room for the response head (it closes with nothing
 *                      sent and says so in its log), is told apart exactly (http_harness.c,
 *                      head_fills_memory);
 *                    - no 5xx: with the stub engine nothing on the server's side can fail
 *                      (505, libmicrohttpd's answer to an HTTP version it does not speak, aside);
 *                    - a JSON response (Content-Type application/json) parses, and an error
 *                      status carries an "error" object (OpenAI's and Anthropic's shapes);
 *                    - a text/event-stream body is made of events whose data lines are JSON
 *                      (or OpenAI's closing [DONE]).
 *   fz_http_raw      the bytes are written as they are and the write side is shut; the daemon
 *                    must close the connection (within FZ_TIMEOUT_MS) whatever it answered.
 *
 * The process's model store, Hugging Face cache and home are pointed at a fresh temporary
 * directory, $TMPDIR/hearth-fuzz-PID-* (removed at exit, or by a later run once PID is gone),
 * and the Hub endpoint at a closed local port, so /library,
 * /fit and /downloads see an empty store and a download fails at once. The model file is
 * HEARTH_FUZZ_MODEL, default tests/golden/tiny/tiny-qwen2.gguf (run from the repository root).
 * The API key is FZ_API_KEY; CORS allows FZ_ORIGIN; the admin key is random, so that no input
 * can drain the server. With HEARTH_FUZZ_VERBOSE set, each
 * response's status, type and body start go to stderr (for writing seeds).
 */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define FZ_API_KEY    "fuzz-key"
#define FZ_ORIGIN     "http://app.example"
#define FZ_TIMEOUT_MS 10000

/* Start the server on first use; later calls do nothing. Aborts when it cannot start. */
void fz_http_init(void);

/* One complete request: method and target as given, version NULL for HTTP/1.1, head: header
 * lines each ending in "\r\n" (no Content-Length, no Transfer-Encoding: the harness adds the
 * length), then body[0..n_body). */
void fz_http_framed(const char *method, const char *target, const char *version, const char *head,
                    const uint8_t *body, size_t n_body);

/* The bytes as they are, then end of input. */
void fz_http_raw(const uint8_t *data, size_t n);

/* The body-only targets: POST path with a JSON body, the API key, Host and Origin. */
void fz_http_post_json(const char *path, const uint8_t *body, size_t n_body);
