/* request.c - the request's event queue and lifetime; see request.h. */
#include "engine/request.h"
#include "lora/lora.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"

double hearth_now_mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void images_free(hearth_request *r) {
    for (int32_t i = 0; r->images && i < r->p.n_images; i++) free((void *)r->images[i].rows);
    free(r->images);
    r->images = NULL;
}

/* r->images: a copy of p's images and their rows (r->p.images points at it); false on OOM,
 * nothing kept. */
static bool images_copy(hearth_request *r, const hearth_request_params *p) {
    r->p.images = NULL;
    r->p.n_images = 0;
    if (p->n_images <= 0) return true;
    if (!(r->images = calloc((size_t)p->n_images, sizeof *r->images))) return false;
    for (int32_t i = 0; i < p->n_images; i++) {
        size_t bytes = (size_t)p->images[i].n * (size_t)p->images[i].width * sizeof(float);
        float *rows = malloc(bytes ? bytes : 1);
        r->p.n_images = i;
        if (!rows) {
            images_free(r);
            r->p.n_images = 0;
            return false;
        }
        memcpy(rows, p->images[i].rows, bytes);
        r->images[i] = p->images[i];
        r->images[i].rows = rows;
    }
    r->p.images = r->images;
    r->p.n_images = p->n_images;
    return true;
}

hearth_request *hearth_req_create(const hearth_request_params *p) {
    hearth_request *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->prompt = malloc(p->n_prompt * sizeof(int32_t));
    /* the event queue's room, taken now so that the engine's steps do not allocate while the
     * reader keeps up (it grows only when the reader falls 64 events behind) */
    r->cap_events = 64;
    r->events = malloc(r->cap_events * sizeof *r->events);
    hearth_logit_bias *b = p->sampling.n_bias > 0 ? malloc((size_t)p->sampling.n_bias * sizeof *b) : NULL;
    size_t n_scores = p->score_from > 0 && (size_t)p->score_from < p->n_prompt ? p->n_prompt - (size_t)p->score_from : 0;
    if (n_scores) r->scores = malloc(n_scores * sizeof *r->scores);
    if (!r->prompt || !r->events || (p->sampling.n_bias > 0 && !b) || (n_scores && !r->scores)) {
        free(r->scores);
        free(r->prompt);
        free(r->events);
        free(b);
        free(r);
        return NULL;
    }
    memcpy(r->prompt, p->prompt, p->n_prompt * sizeof(int32_t));
    for (size_t i = 0; i < n_scores; i++) r->scores[i] = NAN; /* until its position is computed */
    r->p = *p;
    r->p.prompt = r->prompt;
    r->p.images = NULL;
    r->p.n_images = 0;
    if (!images_copy(r, p)) {
        free(r->scores);
        free(r->prompt);
        free(r->events);
        free(b);
        free(r);
        return NULL;
    }
    hearth_lora_retain(p->lora); /* dropped when the request is freed */
    r->p.sampling.bias = b; /* owned: freed by hearth_req_unref (the sampler copies it at create) */
    r->p.sampling.n_bias = b ? p->sampling.n_bias : 0;
    if (b) memcpy(b, p->sampling.bias, (size_t)p->sampling.n_bias * sizeof *b);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    atomic_store(&r->refs, 2);
    return r;
}

void hearth_req_unref(hearth_request *r) {
    if (!r || atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) != 1) return;
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r->events);
    free(r->prompt);
    free(r->scores);
    images_free(r);
    free((void *)r->p.sampling.bias);
    hearth_cx_matcher_destroy(r->p.constraint); /* NULL once the scheduler took it */
    hearth_lora_release(r->p.lora);
    hearth_req_group_unref(r->grp);
    free(r);
}

hearth_req_group *hearth_req_group_create(int n) {
    hearth_req_group *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    atomic_store(&g->refs, n);
    return g;
}

void hearth_req_group_unref(hearth_req_group *g) {
    if (!g || atomic_fetch_sub_explicit(&g->refs, 1, memory_order_acq_rel) != 1) return;
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g);
}

const double *hearth_request_scores(const hearth_request *req, int32_t *n) {
    *n = req && req->scores ? (int32_t)req->p.n_prompt - req->p.score_from : 0;
    return *n ? req->scores : NULL;
}

bool hearth_req_cancelled(const hearth_request *r) {
    return atomic_load_explicit(&r->cancelled, memory_order_relaxed);
}

static bool push_event(hearth_request *r, const hearth_event *ev) {
    pthread_mutex_lock(&r->mu);
    bool ok = true;
    if (ev->kind == HEARTH_EV_DONE) {
        r->done = true;
        r->done_ev = *ev;
    } else {
        if (r->head > 0 && r->head == r->n_events) r->head = r->n_events = 0; /* all read: rewind */
        if (r->n_events == r->cap_events)
            ok = hearth_buf_grow(&r->events, &r->cap_events, r->n_events + 1, sizeof *r->events, 64);
        if (ok) r->events[r->n_events++] = *ev;
    }
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (r->grp) { /* after the event is readable: a reader woken here finds it */
        pthread_mutex_lock(&r->grp->mu);
        r->grp->n_events++;
        pthread_cond_broadcast(&r->grp->cv);
        pthread_mutex_unlock(&r->grp->mu);
    }
    return ok;
}

bool hearth_req_token(hearth_request *r, int32_t token, int32_t n_cached, const hearth_token_logprobs *lp) {
    hearth_event ev = {.kind = HEARTH_EV_TOKEN, .token = token, .n_cached = n_cached, .has_logprobs = lp != NULL};
    if (lp) ev.lp = *lp;
    return push_event(r, &ev);
}

bool hearth_req_progress(hearth_request *r, int32_t n_done, int32_t n_cached) {
    hearth_event ev = {.kind = HEARTH_EV_PROGRESS, .n_prompt = (int32_t)r->p.n_prompt, .n_done = n_done,
                       .n_cached = n_cached};
    return push_event(r, &ev);
}

void hearth_req_finish(hearth_request *r, hearth_finish why, hearth_status st, const char *msg, int32_t n_gen,
                       int32_t n_cached, double t0, double t_first) {
    hearth_event ev = {.kind = HEARTH_EV_DONE, .finish = why, .status = st};
    if (msg) snprintf(ev.msg, sizeof ev.msg, "%s", msg);
    ev.n_prompt = (int32_t)r->p.n_prompt;
    ev.n_generated = n_gen;
    ev.n_drafted = r->n_drafted;
    ev.n_accepted = r->n_accepted;
    ev.n_cached = n_cached;
    double t1 = hearth_now_mono_ms();
    ev.prefill_ms = t_first > 0 ? t_first - t0 : t1 - t0;
    ev.decode_ms = t_first > 0 ? t1 - t_first : 0;
    push_event(r, &ev);
}
