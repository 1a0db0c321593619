/*
 * server.h - `hearth serve`: the HTTP server with the OpenAI-, Anthropic- and Responses-compatible APIs.
 *
 *   POST /v1/chat/completions   chat through the model's chat template (SSE when stream=true)
 *   POST /v1/completions        raw prompt (string or token ids), no template
 *   POST /v1/messages[/count_tokens]  the Anthropic Messages API (anthropic.h)
 *   POST /v1/responses, GET|DELETE /v1/responses/ID   the OpenAI Responses API (responses.h)
 *   GET  /v1/models[/ID], /v1, /health, /stats, /metrics
 *   GET  /library, /fit, /downloads; POST /downloads   the model store (store_api.h)
 *   POST /tokenize, /detokenize, /apply-template; GET /props   llama-server's and vLLM's
 *                               tokenizer and server-properties endpoints (tokenize.h)
 *
 * The server borrows a loaded model and a running engine and serves them on host:port with
 * libmicrohttpd, one thread per connection (http.c says why). It never exits or prints: it
 * logs through base/log.h, and the CLI owns the process.
 *
 * Thread rule: create and destroy from one thread; everything else happens on the server's
 * own threads.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "engine/engine.h"
#include "model/model.h"
#include "server/media_fetch.h"

struct hearth_bert;
struct hearth_engines;

typedef struct hearth_server hearth_server;

typedef struct {
    const char *host;           /* bind address, default "127.0.0.1" (copied) */
    int         port;           /* 0: any free port (see hearth_server_port) */
    const char *unix_path;      /* non-NULL: listen on this unix socket (mode 0600) instead of
                                 * host:port (copied; the socket file is removed at destroy) */
    const char *model_id;       /* the id /v1/models reports and responses echo (copied) */
    const char *model_path;     /* the served file, for /library's "serving" flag (NULL: unknown) */
    int         max_downloads;  /* POST /downloads running at once; <= 0: 2 */
    const char *api_key;        /* NULL/"": no auth; else Bearer or x-api-key (copied) */
    const char *cors;           /* NULL: no CORS headers; "*" or comma-separated origins (copied) */
    const char *allowed_hosts;  /* Host names answered besides the bind address, localhost and
                                 * the loopback addresses: comma-separated, "*" = any (copied);
                                 * others get 403 (guard.h) */
    /* Server-wide sampling defaults; a request's own fields win. Negative = unset. */
    double      temperature;    /* unset: 0.7 (mlx-bun's fallback) */
    double      top_p;          /* unset: 1 (off) */
    int32_t     top_k;          /* unset: 0 (off) */
    int32_t     max_tokens;     /* unset: the rest of the context for chat, 512 for completions */
    int64_t     seed;           /* unset: each request without a seed gets a fresh random one;
                                 * set: requests without a seed use this one (llama-server's --seed) */
    int         enable_thinking; /* -1 unset; 0/1 becomes the template's enable_thinking */
    const char *chat_template;  /* NULL: the model's own; else this template source (copied) */
    size_t      max_body_bytes; /* request bodies above this get 413; default 8 MiB */
    int         max_connections; /* open at once, default 256; past it: 503 (conns.h) */
    bool        no_special_in_content; /* special-token text in user and tool messages is
                                        * tokenized as plain text (chat_plain.h); default
                                        * false: as the model's tokenizer does */
    bool        timings;        /* llama-server's "timings" in every OpenAI chat/completions answer */
    int         max_conns_per_addr; /* open at once from one address, default 128 */
    int         header_timeout_s; /* a request's headers must arrive within this; default 10 */
    int         idle_timeout_s;   /* a keep-alive connection may idle this long; default 15 */
    int         drain_timeout_s;  /* a drain lets running requests finish this long; default 30 */
    const char *admin_key;      /* NULL/"": the /admin routes take api_key, else loopback only (copied) */
    hearth_media_fetch_opts media; /* fetching image and audio URLs of requests (media_fetch.h):
                                 * --allow-private-media and the test-only knobs */
    const char *adapter_path;   /* NULL: none; a LoRA adapter (folder, .gguf or hub repo id) mounted at
                                 * start as the default of requests that name none (adapters.h) */
    struct hearth_bert *embedder; /* borrowed, NULL: none; an encoder (models/bert.h) that serves
                                 * POST /v1/embeddings (embeddings.h). With it, m and e of
                                 * hearth_server_create may be NULL: the server then serves the
                                 * embedding model alone, and the generation routes answer 400 */
    struct hearth_engines *engines; /* borrowed, NULL: none; `serve --isolate` (engines.h): the
                                 * models run in engine children and this server forwards every
                                 * API request to them (proxy.h), serving only /health, /stats,
                                 * the web app and the store itself; m and e are then NULL */
    const char *responses_dir;  /* NULL: the Responses store is in memory; else its shared folder
                                 * (resp_disk.h; an engine child's, given by its serving process) */
    bool        engine_child;   /* this server is an engine child of `serve --isolate`: its serving
                                 * process has judged each request's model name already, so a name
                                 * of another model of the store is not refused here (pool_models.h) */
} hearth_server_params;

hearth_server_params hearth_server_params_default(void);

/* Bind and start serving m through e (both borrowed; they must outlive the server; both NULL
 * with p->embedder set: an embedding model alone). Fails with
 * HEARTH_E_IO when the address cannot be bound (err says why), HEARTH_E_FORMAT when the
 * model's chat template does not parse (chat then answers 400; the rest still works: the
 * error is only logged). */
hearth_status hearth_server_create(const hearth_server_params *p, const hearth_model *m, hearth_engine *e,
                                   hearth_server **out, hearth_err *err);
/* The port actually bound (useful with port 0). */
int           hearth_server_port(const hearth_server *s);
/*
 * Graceful drain (drain.c): stop accepting connections, close idle ones, answer requests still
 * queued in the engine 503 with Retry-After, let running ones finish for drain_timeout_s, then
 * cancel the rest (each stream ends with its API's error event). Idempotent; any thread
 * (POST /admin/drain starts it too). hearth_server_drained: it is over (nothing in flight).
 */
void          hearth_server_drain(hearth_server *s);
bool          hearth_server_draining(const hearth_server *s);
bool          hearth_server_drained(const hearth_server *s);
/* Stop accepting, end every connection (their generations are cancelled), join, free.
 * Accepts NULL. */
void          hearth_server_destroy(hearth_server *s);
