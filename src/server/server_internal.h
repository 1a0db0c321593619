/*
 * server_internal.h - what the server's files share: the server object, one HTTP exchange as
 * a handler sees it, and the helpers of http.c that answer it.
 *
 * Flow: http.c collects a request (headers, body under the size cap) and calls hearth_route
 * (router.c) on the connection's own thread. The route's handler (openai.c, or the small ones
 * in router.c) answers exactly once through hearth_http_send* or, for a stream, through
 * hearth_sse_start (sse.c); generate.c runs generations for both.
 */
#pragma once
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/errors.h"
#include "server/json_out.h"
#include "server/server.h"
#include "server/stats.h"

struct MHD_Daemon;
struct MHD_Connection;
struct hearth_tmpl;

/* The memory libmicrohttpd gives each connection (MHD_OPTION_CONNECTION_MEMORY_LIMIT; its own
 * default too). The request head, parsed, and the response head both live in it: a head that
 * leaves no room for the answer's head ends without an answer (http.c, "Request heads"). */
#define HEARTH_MHD_CONN_MEMORY (32 * 1024)

struct hearth_server {
    hearth_server_params p;       /* its strings point at the owned copies below */
    char                *host, *model_id, *api_key, *cors, *admin_key; /* owned */
    char                *allowed_hosts; /* owned, NULL: none */
    char                *model_path;  /* owned: the served file's real path, NULL if unknown */
    struct hearth_downloads *dl;      /* owned: POST /downloads jobs (downloads.h) */
    struct hearth_resp_store *responses; /* owned: the Responses API's store (resp_store.h) */
    struct hearth_adapters *adapters; /* owned: mounted LoRA adapters (adapters.h); NULL without a model */
    const hearth_model  *m;       /* borrowed */
    unsigned             media_caps; /* HEARTH_MEDIA_CAP_* the served model has towers for
                                   * (media.h), from store/modality.h: what /v1/models and /props
                                   * report and what an image or audio part is admitted against */
    unsigned             media_runs; /* of those, what the server encodes (images: a Gemma 3 tower
                                   * loaded by hearth_vprompt_init, CPU only); a part the model
                                   * has a tower for but that does not run here is a 400 saying so */
    char                 media_source[192]; /* the modality probe's evidence, for messages */
    struct hearth_vision *vision;  /* owned, NULL: the model's vision tower (vision_prompt.h) */
    struct hearth_pool  *vision_pool; /* owned: the tower's compute threads */
    pthread_mutex_t      vision_mu;  /* one encode at a time (with vision) */
    hearth_engine       *e;       /* borrowed; NULL with an embedder or engines */
    struct hearth_engines *engines; /* borrowed, NULL: in-process (engines.h) */
    struct hearth_tmpl  *tmpl;    /* owned: the parsed chat template, NULL when none */
    char                 tmpl_error[512]; /* why chat is unavailable when tmpl is NULL */
    char                *tmpl_src;    /* owned: p.chat_template's copy, NULL: the model's template */
    int                  tc_format;   /* hearth_tc_format of the model's replies (toolcall.h) */
    int                  rs_format;   /* hearth_rs_format (reasoning.h) */
    struct MHD_Daemon   *d;       /* owned */
    hearth_stats        *stats;   /* owned */
    hearth_stats_info    info;    /* strings borrowed from the fields above */
    int                  port;
    _Atomic uint64_t     n_ids;   /* response ids: a counter mixed with id_salt */
    pthread_mutex_t      cx_mu;   /* guards cx_vocab's creation */
    struct hearth_cx_vocab *cx_vocab; /* a reference, built on first use: structured.c */
    uint64_t             id_salt;
    struct hearth_conns *conns;   /* owned: deadlines and caps of the connections (conns.h) */
    pthread_mutex_t      drain_mu; /* guards the drain's start and its thread (drain.c) */
    pthread_cond_t       drain_cv;
    _Atomic bool         draining, drained;
    bool                 drain_thread_on;
    pthread_t            drain_thread;
    int                  listen_fd; /* the quiesced listening socket, -1: none; closed after MHD stops */
    bool                 unix_listening; /* serving on p.unix_path (removed when the server stops) */
    char                *unix_path;  /* owned copy of p.unix_path, NULL: TCP */
    bool                 driven;  /* MHD has no threads: the owner runs it (hearth_server_create_driven) */
};

/* One HTTP request from first header to the end of its response. */
typedef struct {
    hearth_server         *srv;     /* borrowed */
    struct MHD_Connection *conn;    /* borrowed: MHD's */
    const char            *method;  /* borrowed from MHD, valid for the request */
    const char            *path;
    char                  *body;    /* owned, NUL-terminated, [n_body] */
    size_t                 n_body, cap_body;
    size_t                 n_over;  /* body bytes dropped past max_body_bytes */
    double                 t_done_ms; /* monotonic ms when the body was complete */
    hearth_endpoint        ep;      /* for the request counters */
    int                    http;    /* the status queued, 0 before */
    bool                   nul_in_target; /* the raw request target held %00 */
    char                   allow[48]; /* "" or the Allow header of a 405 */
    int                    retry_after_s; /* > 0: the answer carries Retry-After */
    bool                   close;   /* the answer carries Connection: close */
} hearth_http_req;

/* Monotonic milliseconds. */
double hearth_now_ms(void);

/* A request header (case-insensitive name), or NULL. */
const char *hearth_http_header(hearth_http_req *r, const char *name);
/* Answer with a copy of body[0..n). Returns false when MHD refused the response. */
bool hearth_http_send(hearth_http_req *r, int http, const char *ctype, const char *body, size_t n);
bool hearth_http_send_json(hearth_http_req *r, int http, const hearth_jw *w);
/* The OpenAI error body for e (its HTTP status). */
bool hearth_http_send_error(hearth_http_req *r, const hearth_api_err *e);
/* 204 for a CORS preflight. */
bool hearth_http_send_preflight(hearth_http_req *r);

/* A response of unknown length whose bytes come from reader (MHD's content-reader contract:
 * bytes written, or -1 end of stream, -2 abort); free_fn(cls) runs once when it is done,
 * however it ends. On false free_fn has already run. */
typedef long (*hearth_http_reader)(void *cls, char *buf, size_t max);
bool hearth_http_send_reader(hearth_http_req *r, int http, const char *ctype, hearth_http_reader reader,
                             void (*free_fn)(void *cls), void *cls);

/* The connection's socket, for hearth_fd_peer_gone; -1 when MHD does not say. */
int  hearth_http_fd(hearth_http_req *r);
/* Has the peer of socket fd closed or reset its side? Never blocks. */
bool hearth_fd_peer_gone(int fd);

/* Does the request carry the server's API key (or is there none)? */
bool hearth_http_authorized(hearth_http_req *r);
/* Does it carry key (Bearer or x-api-key; NULL/"": true)? Compared in constant time. */
bool hearth_http_key_ok(hearth_http_req *r, const char *key);
/* Is the peer on a loopback address (127.0.0.0/8, ::1, ::ffff:127.x)? */
bool hearth_http_peer_loopback(hearth_http_req *r);

/* Start MHD on s->host:s->p.port (sets s->d, s->port) / stop it, ending every connection. */
hearth_status hearth_http_start(hearth_server *s, hearth_err *err);
void          hearth_http_stop(hearth_server *s);

/* The front door's checks on r's head (guard.h: framing, Host, Origin), before its body is
 * read; false with e filled when r must be refused. */
bool hearth_guard_request(hearth_http_req *r, const char *version, hearth_api_err *e);
/* The drain's end, for hearth_server_destroy (drain.c): stop its thread. */
void hearth_drain_fini(hearth_server *s);

/* May r call the admin routes? When not, r has been answered 401 or 403 (admin.c). */
bool hearth_admin_allowed(hearth_http_req *r);
/* POST /admin/drain and POST /admin/cache/flush (admin.c). */
void hearth_admin_drain(hearth_http_req *r);
void hearth_admin_cache_flush(hearth_http_req *r);

/*
 * hearth_server_create with libmicrohttpd started without threads of its own (no listening
 * thread, no thread per connection): the caller's thread drives the daemon with MHD_run(s->d),
 * and every callback - the front door's checks, the router, the handlers, the content readers -
 * runs inside MHD_run. Everything else is the same code as hearth_server_create's. For the
 * fuzz harness (fuzz/http_harness.h), which hands connections to the daemon with
 * MHD_add_connection and runs one request after the other on the fuzzing thread; the handlers
 * may block (they wait for the engine), so it suits an engine that never waits.
 */
hearth_status hearth_server_create_driven(const hearth_server_params *p, const hearth_model *m, hearth_engine *e,
                                          hearth_server **out, hearth_err *err);

/* Dispatch a complete request to its handler (router.c). */
void hearth_route(hearth_http_req *r);

/* A fresh response id: prefix + 24 hex digits ("chatcmpl-..."). */
void hearth_server_new_id(hearth_server *s, const char *prefix, char *out, size_t cap);
