/*
 * stats.h - the server's counters and latency histograms, served as /stats (JSON) and
 * /metrics (Prometheus text exposition format 0.0.4).
 *
 * Everything is a relaxed atomic: HTTP threads add to counters and histogram buckets without
 * locks, and a reader may see a snapshot that is a few events apart between fields, which
 * monitoring tolerates. Histograms have fixed bucket bounds (seconds) chosen for local
 * inference: TTFT from 5 ms to 60 s, inter-token latency from 1 ms to 2.5 s.
 *
 * Thread rule: any thread.
 */
#pragma once
#include "engine/engine.h"
#include <stdint.h>

#include "server/json_out.h"

typedef enum {
    HEARTH_EP_CHAT = 0,
    HEARTH_EP_COMPLETIONS,
    HEARTH_EP_MODELS,
    HEARTH_EP_INDEX,
    HEARTH_EP_HEALTH,
    HEARTH_EP_STATS,
    HEARTH_EP_METRICS,
    HEARTH_EP_MESSAGES,   /* /v1/messages and count_tokens */
    HEARTH_EP_RESPONSES,
    HEARTH_EP_OTHER,
    HEARTH_EP_COUNT
} hearth_endpoint;

typedef enum {
    HEARTH_GEN_COMPLETED = 0, /* finished by stop, end of generation or length */
    HEARTH_GEN_CANCELLED,     /* the client went away */
    HEARTH_GEN_FAILED,        /* the engine reported an error */
    HEARTH_GEN_COUNT
} hearth_gen_outcome;

typedef struct hearth_stats hearth_stats;

/* What /stats reports about the server itself (borrowed strings). */
typedef struct {
    const char *model, *host, *version;
    int         port;
    int64_t     started_at; /* unix seconds */
    int32_t     n_ctx;
    const hearth_engine *engine; /* its counters and sizes are reported; may be NULL */
    struct hearth_conns *conns;  /* the connection guard's counts are reported; may be NULL */
    struct hearth_engines *engines; /* `serve --isolate`: its children are reported; may be NULL */
} hearth_stats_info;

hearth_stats *hearth_stats_create(void);
void          hearth_stats_destroy(hearth_stats *s); /* accepts NULL */

/* The `http` of a request whose client disconnected before its answer was complete: counted
 * as "cancelled", not as a server error. */
#define HEARTH_HTTP_CANCELLED (-1)

/* An HTTP request arrived / its response finished (http = status sent, 0 when none was: a
 * server error; HEARTH_HTTP_CANCELLED: the client left). */
void hearth_stats_request_begin(hearth_stats *s);
void hearth_stats_request_end(hearth_stats *s, hearth_endpoint ep, int http);
/* A generation ended: its outcome and token counts. */
void hearth_stats_generation(hearth_stats *s, hearth_gen_outcome how, int64_t n_prompt, int64_t n_completion);
/* A generation started / ended (the gauge of running generations). */
void hearth_stats_generation_begin(hearth_stats *s);
/* Latencies in milliseconds: request complete -> first token; token -> next token. */
void hearth_stats_ttft(hearth_stats *s, double ms);
void hearth_stats_itl(hearth_stats *s, double ms);

/* HTTP requests in flight now. */
int64_t hearth_stats_n_active(const hearth_stats *s);
/* Cancelled generations so far (for tests and /stats). */
int64_t hearth_stats_n_cancelled(const hearth_stats *s);

void hearth_stats_json(const hearth_stats *s, const hearth_stats_info *info, hearth_jw *w);
void hearth_stats_prometheus(const hearth_stats *s, const hearth_stats_info *info, hearth_jw *w);
