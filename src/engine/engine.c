/*
 * engine.c - the engine thread and the request hand-off.
 *
 * Submitters push onto a mutex-guarded FIFO and signal the engine's condition variable; the
 * engine thread pops one request at a time and runs it: chunked prefill (max_step tokens per
 * forward, logits only for the last prompt token), then one forward per generated token,
 * sampling on the engine thread and appending a TOKEN event to the request's own queue.
 * Cancellation is an atomic flag checked before every step. Requests are reference counted
 * (submitter + engine) so either side may finish first.
 */
#include "engine/engine.h"
#include "backend/backend.h"
#include "base/log.h"
#include "engine/kv.h"
#include "kernels/kernels.h"
#include "models/forward.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct hearth_request {
    _Atomic int           refs;
    _Atomic bool          cancelled;
    hearth_request_params p;         /* prompt points at own copy */
    int32_t              *prompt;    /* owned */
    hearth_request       *next;      /* FIFO link, guarded by the engine's mu */
    pthread_mutex_t       mu;        /* guards the event queue below */
    pthread_cond_t        cv;
    hearth_event         *events;    /* owned ring-less queue: [head, n) unread */
    size_t                n_events, cap_events, head;
    bool                  done;
    hearth_event          done_ev;
};

struct hearth_engine {
    const hearth_model *m;      /* borrowed */
    hearth_engine_params p;
    hearth_backend     *be;     /* owned */
    hearth_fwd         *fwd;    /* owned */
    hearth_kv          *kv;     /* owned */
    float              *logits; /* owned [n_vocab] */
    int32_t            *step_tok, *step_pos, *step_seq; /* owned [max_step] */
    pthread_t           thread;
    pthread_mutex_t     mu;     /* guards the FIFO and stop */
    pthread_cond_t      cv;
    hearth_request     *head, *tail;
    bool                stop;
};

hearth_engine_params hearth_engine_params_default(void) {
    hearth_engine_params p = {.n_threads = 0, .n_ctx = 0, .max_step = 512, .kv_f16 = -1};
    return p;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void req_unref(hearth_request *r) {
    if (!r || atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) != 1) return;
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r->events);
    free(r->prompt);
    free((void *)r->p.sampling.bias);
    free(r);
}

/* Append an event for the reader. Returns false on OOM (the request is then failed). */
static bool push_event(hearth_request *r, const hearth_event *ev) {
    pthread_mutex_lock(&r->mu);
    bool ok = true;
    if (ev->kind == HEARTH_EV_DONE) {
        r->done = true;
        r->done_ev = *ev;
    } else {
        if (r->head > 0 && r->head == r->n_events) r->head = r->n_events = 0; /* all read: rewind */
        if (r->n_events == r->cap_events) {
            size_t cap = r->cap_events ? r->cap_events * 2 : 64;
            hearth_event *e = realloc(r->events, cap * sizeof *e);
            if (!e) ok = false;
            else {
                r->events = e;
                r->cap_events = cap;
            }
        }
        if (ok) r->events[r->n_events++] = *ev;
    }
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return ok;
}

static void finish(hearth_request *r, hearth_finish why, hearth_status st, const char *msg, int32_t n_gen,
                   double t0, double t_first) {
    hearth_event ev = {.kind = HEARTH_EV_DONE, .finish = why, .status = st};
    if (msg) snprintf(ev.msg, sizeof ev.msg, "%s", msg);
    ev.n_prompt = (int32_t)r->p.n_prompt;
    ev.n_generated = n_gen;
    double t1 = now_ms();
    ev.prefill_ms = t_first > 0 ? t_first - t0 : t1 - t0;
    ev.decode_ms = t_first > 0 ? t1 - t_first : 0;
    push_event(r, &ev);
}

/* Run forward over tokens [0, n) at positions pos0.. in slot 0; logits for the last one. */
static hearth_status step(hearth_engine *e, const int32_t *tokens, int32_t n, int32_t pos0) {
    for (int32_t i = 0; i < n; i++) {
        e->step_tok[i] = tokens[i];
        e->step_pos[i] = pos0 + i;
        e->step_seq[i] = 0;
    }
    hearth_batch b = {.n_tokens = n, .token = e->step_tok, .pos = e->step_pos, .seq = e->step_seq};
    return hearth_forward(e->fwd, &b, hearth_kv_view_of(e->kv), e->logits);
}

static void run_request(hearth_engine *e, hearth_request *r) {
    double t0 = now_ms(), t_first = 0;
    const hearth_tok *tok = hearth_model_tok(e->m);
    int32_t n_prompt = (int32_t)r->p.n_prompt, n_ctx = hearth_kv_view_of(e->kv)->n_ctx, n_gen = 0;
    char msg[160];
    if ((int64_t)n_prompt + r->p.max_tokens > n_ctx) {
        snprintf(msg, sizeof msg, "prompt (%d tokens) + max_tokens (%d) exceeds the context of %d tokens",
                 n_prompt, r->p.max_tokens, n_ctx);
        finish(r, HEARTH_FINISH_ERROR, HEARTH_E_LIMIT, msg, 0, t0, 0);
        return;
    }
    hearth_err err = {0};
    hearth_sampler *s = hearth_sampler_create(&r->p.sampling, hearth_model_hparams(e->m)->n_vocab, &err);
    if (!s) {
        finish(r, HEARTH_FINISH_ERROR, err.code, err.msg, 0, t0, 0);
        return;
    }
    hearth_status st = HEARTH_OK;
    for (int32_t done = 0; done < n_prompt && !st;) {
        if (atomic_load_explicit(&r->cancelled, memory_order_relaxed)) goto cancelled;
        int32_t n = n_prompt - done < e->p.max_step ? n_prompt - done : e->p.max_step;
        st = step(e, r->prompt + done, n, done);
        done += n;
    }
    int32_t pos = n_prompt;
    while (!st) {
        int32_t t = hearth_sampler_sample(s, e->logits);
        if (!t_first) t_first = now_ms();
        if (!r->p.ignore_eog && hearth_tok_is_eog(tok, t)) {
            finish(r, HEARTH_FINISH_STOP, HEARTH_OK, NULL, n_gen, t0, t_first);
            goto out;
        }
        hearth_sampler_accept(s, t);
        hearth_event ev = {.kind = HEARTH_EV_TOKEN, .token = t};
        if (!push_event(r, &ev)) {
            st = HEARTH_E_NOMEM;
            break;
        }
        if (++n_gen >= r->p.max_tokens) {
            finish(r, HEARTH_FINISH_LENGTH, HEARTH_OK, NULL, n_gen, t0, t_first);
            goto out;
        }
        if (atomic_load_explicit(&r->cancelled, memory_order_relaxed)) goto cancelled;
        st = step(e, &t, 1, pos++);
    }
    snprintf(msg, sizeof msg, "forward pass failed: %s", hearth_status_str(st));
    finish(r, HEARTH_FINISH_ERROR, st, msg, n_gen, t0, t_first);
    goto out;
cancelled:
    finish(r, HEARTH_FINISH_CANCELLED, HEARTH_E_CANCELLED, "cancelled", n_gen, t0, t_first);
out:
    hearth_sampler_destroy(s);
}

static void *engine_main(void *arg) {
    hearth_engine *e = arg;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        while (!e->head && !e->stop) pthread_cond_wait(&e->cv, &e->mu);
        hearth_request *r = e->head;
        if (r) {
            e->head = r->next;
            if (!e->head) e->tail = NULL;
        }
        bool stop = e->stop;
        pthread_mutex_unlock(&e->mu);
        if (!r) break;
        if (stop) atomic_store(&r->cancelled, true);
        run_request(e, r);
        req_unref(r); /* the engine's reference */
    }
    return NULL;
}

hearth_status hearth_engine_create(const hearth_model *m, const hearth_engine_params *p, hearth_engine **out,
                                   hearth_err *err) {
    *out = NULL;
    const hearth_hparams *hp = hearth_model_hparams(m);
    hearth_engine *e = calloc(1, sizeof *e);
    if (!e) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    e->m = m;
    e->p = *p;
    if (e->p.max_step <= 0) e->p.max_step = 512;
    if (e->p.n_ctx <= 0) e->p.n_ctx = hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096;
    if (e->p.max_step > e->p.n_ctx) e->p.max_step = e->p.n_ctx;
    bool f16 = e->p.kv_f16 < 0 ? hearth_kernels_isa() != HEARTH_ISA_REF : e->p.kv_f16 != 0;
    hearth_status st;
    int64_t width = hp->n_embd;
    int64_t cands[] = {hp->n_ff, (int64_t)hp->n_head * hp->head_dim_v};
    for (int i = 0; i < 2; i++) if (cands[i] > width) width = cands[i];
    e->be = hearth_backend_cpu_create(p->n_threads, e->p.max_step, width, e->p.n_ctx);
    e->fwd = e->be ? hearth_fwd_create(m, e->be, e->p.max_step) : NULL;
    e->logits = malloc((size_t)hp->n_vocab * sizeof(float));
    e->step_tok = malloc((size_t)e->p.max_step * sizeof(int32_t));
    e->step_pos = malloc((size_t)e->p.max_step * sizeof(int32_t));
    e->step_seq = malloc((size_t)e->p.max_step * sizeof(int32_t));
    if (!e->fwd || !e->logits || !e->step_tok || !e->step_pos || !e->step_seq) {
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory creating the engine");
        goto fail;
    }
    if ((st = hearth_kv_create(m, 1, e->p.n_ctx, f16, &e->kv, err))) goto fail;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    if (pthread_create(&e->thread, NULL, engine_main, e) != 0) {
        pthread_mutex_destroy(&e->mu);
        pthread_cond_destroy(&e->cv);
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "cannot start the engine thread");
        goto fail;
    }
    hearth_log(HEARTH_LOG_INFO, "engine: %d threads, kernels %s, context %d, KV %s %zu MiB",
               hearth_backend_cpu_threads(e->be), hearth_isa_name(hearth_kernels_isa()), e->p.n_ctx,
               f16 ? "f16" : "f32", hearth_kv_bytes(e->kv) >> 20);
    *out = e;
    return HEARTH_OK;
fail:
    hearth_kv_destroy(e->kv);
    hearth_fwd_destroy(e->fwd);
    hearth_backend_destroy(e->be);
    free(e->logits);
    free(e->step_tok);
    free(e->step_pos);
    free(e->step_seq);
    free(e);
    return st;
}

void hearth_engine_destroy(hearth_engine *e) {
    if (!e) return;
    pthread_mutex_lock(&e->mu);
    e->stop = true;
    for (hearth_request *r = e->head; r; r = r->next) atomic_store(&r->cancelled, true);
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->thread, NULL);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    hearth_kv_destroy(e->kv);
    hearth_fwd_destroy(e->fwd);
    hearth_backend_destroy(e->be);
    free(e->logits);
    free(e->step_tok);
    free(e->step_pos);
    free(e->step_seq);
    free(e);
}

int32_t hearth_engine_n_ctx(const hearth_engine *e) { return e->p.n_ctx; }

hearth_status hearth_engine_submit(hearth_engine *e, const hearth_request_params *p, hearth_request **out,
                                   hearth_err *err) {
    *out = NULL;
    int32_t n_vocab = hearth_model_hparams(e->m)->n_vocab;
    if (p->n_prompt == 0) return hearth_err_set(err, HEARTH_E_INVALID, -1, "the prompt is empty");
    if (p->max_tokens <= 0) return hearth_err_set(err, HEARTH_E_INVALID, -1, "max_tokens must be positive");
    for (size_t i = 0; i < p->n_prompt; i++)
        if (p->prompt[i] < 0 || p->prompt[i] >= n_vocab)
            return hearth_err_set(err, HEARTH_E_INVALID, (int64_t)i, "prompt token %d is outside the vocabulary",
                                  p->prompt[i]);
    hearth_request *r = calloc(1, sizeof *r);
    if (!r) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    r->prompt = malloc(p->n_prompt * sizeof(int32_t));
    if (!r->prompt) {
        free(r);
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    }
    memcpy(r->prompt, p->prompt, p->n_prompt * sizeof(int32_t));
    r->p = *p;
    r->p.prompt = r->prompt;
    r->p.sampling.bias = NULL; /* the sampler copies bias at create; keep ours */
    r->p.sampling.n_bias = 0;
    if (p->sampling.n_bias > 0) {
        hearth_logit_bias *b = malloc((size_t)p->sampling.n_bias * sizeof *b);
        if (!b) {
            free(r->prompt);
            free(r);
            return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
        }
        memcpy(b, p->sampling.bias, (size_t)p->sampling.n_bias * sizeof *b);
        r->p.sampling.bias = b; /* owned: freed by req_unref */
        r->p.sampling.n_bias = p->sampling.n_bias;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    atomic_store(&r->refs, 2); /* caller + engine */
    pthread_mutex_lock(&e->mu);
    if (e->stop) {
        pthread_mutex_unlock(&e->mu);
        atomic_store(&r->refs, 1);
        req_unref(r);
        return hearth_err_set(err, HEARTH_E_CANCELLED, -1, "the engine is shutting down");
    }
    if (e->tail) e->tail->next = r;
    else e->head = r;
    e->tail = r;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    *out = r;
    return HEARTH_OK;
}

void hearth_engine_cancel(hearth_engine *e, hearth_request *req) {
    (void)e;
    if (req) atomic_store_explicit(&req->cancelled, true, memory_order_relaxed);
}

hearth_status hearth_request_next(hearth_request *r, hearth_event *ev, int timeout_ms) {
    struct timespec deadline;
    if (timeout_ms >= 0) {
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += timeout_ms / 1000;
        deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&r->mu);
    while (r->head == r->n_events && !r->done) {
        if (timeout_ms < 0) pthread_cond_wait(&r->cv, &r->mu);
        else if (pthread_cond_timedwait(&r->cv, &r->mu, &deadline) == ETIMEDOUT) {
            pthread_mutex_unlock(&r->mu);
            return HEARTH_E_LIMIT;
        }
    }
    if (r->head < r->n_events) *ev = r->events[r->head++];
    else *ev = r->done_ev;
    pthread_mutex_unlock(&r->mu);
    return HEARTH_OK;
}

void hearth_request_release(hearth_request *req) {
    if (!req) return;
    atomic_store_explicit(&req->cancelled, true, memory_order_relaxed);
    req_unref(req);
}
