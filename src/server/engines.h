/*
 * engines.h - `serve --isolate`: the engine children and the model pool (docs/isolation.md).
 *
 * Each model runs in a child process: hearth re-executed (`hearth _engine MODEL --unix SOCK
 * ...`), a complete server of that one model on a private unix socket. The serving process
 * keeps HTTP, the web app and the store and forwards each API request to a child (proxy.h).
 * This module starts, watches and stops the children:
 *
 *   WANTED --spawn--> STARTING --/health answers--> READY --LRU over the pool--> DRAINING
 *      ^                 |                            |                          | idle: SIGTERM
 *      |                 | exits: FAILED (said once   | dies / hangs: SIGKILL,   v
 *      |                 v  to the waiting requests)  | respawned (STARTING)   gone: slot free
 *      +-- a request for a model with no slot
 *
 * One supervisor thread does all process work: it spawns (a child's parent-death signal is
 * tied to the thread that spawned it, so never a connection's thread), reaps with waitpid,
 * probes each child's /health every second, and SIGKILLs (by pid) a child that has not
 * answered for hang_timeout_s. HTTP threads only take leases: hearth_engines_acquire waits
 * until the model's child is READY and counts the request in flight; release ends it. A
 * child over the pool's cap is chosen least recently used, drains (its running requests
 * finish, new ones for it wait), then gets SIGTERM and exits as `serve` does (its prompt
 * cache goes to the SSD tier when it has one); the waiting model then starts.
 *
 * Memory admission (with a memory budget): each slot holds an estimate of its child's resident
 * bytes (weights + KV pool + transients: the estimate function's before it starts, the child's
 * own /stats figures once it is READY). A model whose estimate is over the budget alone is
 * refused (400, type memory_admission); one that does not fit next to the resident children
 * makes the least recently used ones drain, as the count cap does, and is spawned only once
 * the processes still alive (draining ones included) leave room for it.
 *
 * Thread rule: any thread, except create/destroy (one thread, the owner's).
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/status.h"
#include "server/errors.h"
#include "server/json_out.h"

typedef struct hearth_engines hearth_engines;

/* Map a requested model name to a model the pool may start: its id (as /v1/models lists it)
 * and its path. Returns false when the name is not a model of the store. */
typedef bool (*hearth_engines_resolve_fn)(void *cls, const char *name, char *id, size_t id_cap, char *path,
                                          size_t path_cap);

/* What a model's child is expected to hold resident, in bytes. */
typedef struct {
    int64_t weights, kv, transient; /* total = their sum */
    int64_t kv_arg;                 /* > 0: the child is started with --kv-budget of this many bytes */
} hearth_engines_need;

/* Estimate the resident bytes of the model at path (engines.h hearth_engines_need); false with
 * why filled when its files cannot be read. */
typedef bool (*hearth_engines_estimate_fn)(void *cls, const char *path, hearth_engines_need *need, char *why,
                                           size_t why_cap);

typedef struct {
    const char        *exe;           /* the binary to re-execute (e.g. "/proc/self/exe") */
    const char *const *argv_common;   /* flags every child gets (copied) */
    int                n_common;
    const char *const *argv_default;  /* flags only the default model's child gets (copied) */
    int                n_default;
    const char        *model_id;      /* the default model: its id and path (copied) */
    const char        *model_path;
    int                pool_size;     /* children resident at once, >= 1 */
    int                hang_timeout_s; /* a READY child that has not answered /health this long
                                        * is killed and respawned; <= 0: 10 */
    int                start_timeout_s; /* a child must answer within this of its start; <= 0: 600 */
    hearth_engines_resolve_fn resolve; /* NULL: only the default model is served */
    void              *resolve_cls;
    int64_t            memory_budget;  /* bytes for all resident children; <= 0: no admission by memory */
    hearth_engines_estimate_fn estimate; /* required with a memory budget */
    void              *estimate_cls;
} hearth_engines_params;

/* A request's hold on a READY child. */
typedef struct {
    int      slot;
    unsigned gen;        /* the child's generation: its socket and pid */
    pid_t    pid;
    char     sock[108];  /* its unix socket */
    char     model_id[256];
} hearth_engine_lease;

/* Make the sockets' private directory, start the supervisor and the default model's child
 * (not waiting for it). Fails when the default model alone is over the memory budget. */
hearth_status hearth_engines_create(const hearth_engines_params *p, hearth_engines **out, hearth_err *err);
/* Wait until the default model's child answers (timeout_ms) or fails; the failure in err. */
hearth_status hearth_engines_wait_default(hearth_engines *g, int timeout_ms, hearth_err *err);
/* The default model's id (borrowed, lives as long as g). */
const char   *hearth_engines_default_id(const hearth_engines *g);
/* Lease the child of the model named `model` (NULL or "": the default one; another name only
 * when the pool resolves it), starting it when needed and waiting until it is READY.
 * false with e filled: no such model (404 model_not_found), it cannot fit the memory budget
 * even alone (400, type memory_admission, code model_over_budget), it failed to start (503),
 * or it did not become ready in time (503; *retry_after_s says when to retry). */
bool          hearth_engines_acquire(hearth_engines *g, const char *model, hearth_engine_lease *l,
                                     hearth_api_err *e, int *retry_after_s);
/* The request holding l is over. */
void          hearth_engines_release(hearth_engines *g, const hearth_engine_lease *l);
/* l's child failed while serving (its socket closed early): the supervisor is told at once
 * instead of at its next probe. */
void          hearth_engines_suspect(hearth_engines *g, const hearth_engine_lease *l);
/* /stats: "engine_pid" (the default model's child, 0 when none runs), "model_pool",
 * "memory_budget" (bytes, 0: no admission by memory) and "engines": one object per slot
 * {model, pid, state, in_flight, restarts, memory_bytes, memory_measured}. Written as keys of
 * the object w is in. */
void          hearth_engines_json(hearth_engines *g, hearth_jw *w);
/* Does a request's model name pick its engine (a resolver was given: --model-pool)? */
bool          hearth_engines_pooled(const hearth_engines *g);
/* Is a child of this model id resident (loaded) now? */
bool          hearth_engines_loaded(hearth_engines *g, const char *model_id);
/* A READY child's address, for the serving process's own requests to it (engine_get.h). */
typedef struct {
    char model_id[256];
    char sock[108];
} hearth_engine_addr;
/* The children READY now, the default model's first: up to cap into out; returns how many. */
int           hearth_engines_ready(hearth_engines *g, hearth_engine_addr *out, int cap);
/* Count n children that did not answer a /metrics scrape; returns the total so far. */
long long     hearth_engines_scrape_missed(hearth_engines *g, int n);
/* SIGTERM every child, wait for them (up to timeout_ms, then SIGKILL), stop the supervisor,
 * remove the sockets' directory, free. Accepts NULL. */
void          hearth_engines_destroy(hearth_engines *g, int timeout_ms);
