/*
 * request.h - a request as the engine sees it (internal to engine/): the submitter's copy of
 * the params, the cancellation flag, and the event queue the reader drains.
 *
 * Thread rule: the engine thread appends events (hearth_req_token / hearth_req_finish) under
 * the request's own mutex, the submitter reads them (hearth_request_next); `cancelled` is an
 * atomic any thread may set. Two references (submitter + engine) so either side may end first.
 *
 * The choices of one hearth_engine_submit_n are linked by fork_next (the first is queued, the
 * scheduler takes the rest with it) and share a hearth_req_group: every event of any of them
 * also bumps the group's counter and wakes its condition variable, so that one reader can wait
 * on all of them at once (hearth_request_next_any).
 */
#pragma once
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "engine/engine.h"

/* The wake-up shared by the choices of one submit_n (reference-counted by its requests). */
typedef struct {
    _Atomic int     refs;
    pthread_mutex_t mu;       /* guards n_events */
    pthread_cond_t  cv;
    uint64_t        n_events; /* events pushed to any request of the group */
} hearth_req_group;

struct hearth_request {
    _Atomic int           refs;
    _Atomic bool          cancelled;
    _Atomic bool          admitted;  /* the scheduler took it from the waiting queue once */
    hearth_request_params p;         /* prompt points at own copy */
    int32_t              *prompt;    /* owned */
    hearth_image_input   *images;    /* owned [p.n_images], each rows owned (p.images points here) */
    double               *scores;    /* owned [n_prompt - p.score_from] when p.score_from > 0: written
                                      * by the engine thread, read by the submitter after DONE */
    hearth_request       *next;      /* submit FIFO link, guarded by the engine's mu */
    hearth_request       *fork_next; /* the next choice of a submit_n group (its first is queued
                                      * alone; the scheduler takes the chain at add) */
    hearth_req_group     *grp;       /* shared (one reference each); NULL for a lone request */
    pthread_mutex_t       mu;        /* guards the event queue below */
    pthread_cond_t        cv;
    hearth_event         *events;    /* owned queue: [head, n_events) unread */
    size_t                n_events, cap_events, head;
    bool                  done;
    hearth_event          done_ev;
    int32_t               n_drafted, n_accepted; /* speculative decoding (engine thread), for DONE */
};

double hearth_now_mono_ms(void);
/* A request for params p (prompt and logit bias copied; p is not checked) with two references
 * (submitter + engine). NULL on OOM. */
hearth_request *hearth_req_create(const hearth_request_params *p);
void   hearth_req_unref(hearth_request *r);
/* A group for n requests (n references). NULL on OOM. */
hearth_req_group *hearth_req_group_create(int n);
void   hearth_req_group_unref(hearth_req_group *g);
bool   hearth_req_cancelled(const hearth_request *r);
/* Append a TOKEN event (n_cached: prompt tokens the prefix cache served; lp: its logprobs, or
 * NULL). False on OOM (the caller then fails the request). */
bool   hearth_req_token(hearth_request *r, int32_t token, int32_t n_cached, const hearth_token_logprobs *lp);
/* Append a PROGRESS event: n_done of the prompt's tokens have their KV. False on OOM. */
bool   hearth_req_progress(hearth_request *r, int32_t n_done, int32_t n_cached);
/* Append the DONE event: counts and timings from t0 (admission) and t_first (first token, 0 if
 * none). msg may be NULL. */
void   hearth_req_finish(hearth_request *r, hearth_finish why, hearth_status st, const char *msg, int32_t n_gen,
                         int32_t n_cached, double t0, double t_first);
