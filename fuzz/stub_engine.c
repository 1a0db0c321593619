/*
 * stub_engine.c - the engine seam (engine/engine.h) without weights or a thread, for the fuzz
 * targets that drive the HTTP server (fuzz/http_harness.h).
 *
 * It is linked into those targets ahead of the hearth_core library, so the library's
 * engine.c is never pulled in: every function of engine.h that the server calls is defined
 * here. (A new engine function the server starts calling shows up as a duplicate-symbol link
 * error of the fuzz targets: define it here too.)
 *
 * A request is admitted with the real engine's checks (empty prompt, max_tokens, tokens
 * outside the vocabulary: HEARTH_E_INVALID) and its whole reply is decided at submit: it
 * repeats the prompt's last tokens (at most STUB_MAX_REPLY, at most max_tokens), so what the
 * request wrote - tool-call markup, reasoning tags, stop strings, partial UTF-8 - flows back
 * through the server's decoder, stop matching and writers. It ends with FINISH_LENGTH when
 * max_tokens cut it, else FINISH_STOP (an end-of-generation token, not emitted; with
 * min_tokens above the reply, FINISH_LENGTH instead, as masked end tokens would run on). A
 * request that asks for progress gets one PROGRESS event (the whole prompt) first. A request
 * whose prompt + max_tokens is over the context ends with DONE/error HEARTH_E_LIMIT, as the
 * real engine's does. The structured-output matcher is taken over and freed, unused.
 * The n choices of hearth_engine_submit_n are n such requests (the same reply each), read in
 * turns by hearth_request_next_any. Events come back at once; nothing ever waits. Any thread;
 * the only shared state is the counter naming submit_n's groups.
 */
#include "constrain/matcher.h"
#include "engine/engine.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { STUB_N_CTX = 2048, STUB_MAX_REPLY = 48 };

struct hearth_engine {
    const hearth_model *m;
    int32_t             n_ctx;
};

struct hearth_request {
    int32_t      *tokens; /* the reply */
    int32_t       n_tokens, next;
    bool          logprobs;
    int32_t       top_logprobs;
    bool          progress; /* a PROGRESS event is still to come */
    uint64_t      group;    /* the hearth_engine_submit_n call it came from (0: none) */
    atomic_bool   cancelled;
    hearth_event  done;
};

hearth_engine_params hearth_engine_params_default(void) {
    hearth_engine_params p = {0};
    p.kv_f16 = -1;
    p.prompt_cache = -1;
    return p;
}

hearth_status hearth_engine_create(const hearth_model *m, const hearth_engine_params *p, hearth_engine **out,
                                   hearth_err *err) {
    *out = NULL;
    hearth_engine *e = calloc(1, sizeof *e);
    if (!e) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    e->m = m;
    e->n_ctx = p && p->n_ctx > 0 ? p->n_ctx : STUB_N_CTX;
    *out = e;
    return HEARTH_OK;
}

void hearth_engine_destroy(hearth_engine *e) { free(e); }

int32_t hearth_engine_n_ctx(const hearth_engine *e) { return e->n_ctx; }

bool hearth_engine_lora_supported(const hearth_engine *e, char *why, size_t cap) {
    (void)e;
    snprintf(why, cap, "the fuzzing stub applies no adapters");
    return false;
}

void hearth_engine_stats_get(const hearth_engine *e, hearth_engine_stats *out) {
    (void)e;
    memset(out, 0, sizeof *out);
}

void hearth_engine_info_get(const hearth_engine *e, hearth_engine_info *out) {
    memset(out, 0, sizeof *out);
    out->n_ctx = e->n_ctx;
    out->batch = 1;
    out->block_size = 16;
    out->n_blocks = e->n_ctx / 16;
    out->max_step = 512;
    out->max_request_tokens = e->n_ctx;
}

void hearth_engine_device(const hearth_engine *e, hearth_engine_device_info *out) {
    (void)e;
    memset(out, 0, sizeof *out);
    snprintf(out->backend, sizeof out->backend, "cpu");
    snprintf(out->device, sizeof out->device, "stub engine");
}

hearth_status hearth_engine_submit(hearth_engine *e, const hearth_request_params *p, hearth_request **out,
                                   hearth_err *err) {
    *out = NULL;
    hearth_cx_matcher_destroy(p->constraint); /* taken over in every case, as the engine does */
    int32_t n_vocab = hearth_model_hparams(e->m)->n_vocab;
    if (p->n_prompt == 0) return hearth_err_set(err, HEARTH_E_INVALID, -1, "the prompt is empty");
    if (p->max_tokens <= 0) return hearth_err_set(err, HEARTH_E_INVALID, -1, "max_tokens must be positive");
    for (size_t i = 0; i < p->n_prompt; i++)
        if (p->prompt[i] < 0 || p->prompt[i] >= n_vocab)
            return hearth_err_set(err, HEARTH_E_INVALID, (int64_t)i, "prompt token %d is outside the vocabulary",
                                  p->prompt[i]);
    hearth_request *r = calloc(1, sizeof *r);
    if (!r) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    r->done.kind = HEARTH_EV_DONE;
    r->done.n_prompt = (int32_t)p->n_prompt;
    r->logprobs = p->logprobs;
    r->top_logprobs = p->top_logprobs < 0 ? 0
                      : p->top_logprobs > HEARTH_TOP_LOGPROBS_MAX ? HEARTH_TOP_LOGPROBS_MAX : p->top_logprobs;
    if ((int64_t)p->n_prompt + p->max_tokens > e->n_ctx) {
        r->done.finish = HEARTH_FINISH_ERROR;
        r->done.status = HEARTH_E_LIMIT;
        snprintf(r->done.msg, sizeof r->done.msg, "prompt (%zu) + max_tokens (%d) is over the context (%d)",
                 p->n_prompt, p->max_tokens, e->n_ctx);
        *out = r;
        return HEARTH_OK;
    }
    int32_t n = p->max_tokens < STUB_MAX_REPLY ? p->max_tokens : STUB_MAX_REPLY;
    if ((size_t)n > p->n_prompt) n = (int32_t)p->n_prompt;
    r->tokens = malloc((size_t)n * sizeof *r->tokens);
    if (!r->tokens) {
        free(r);
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    }
    memcpy(r->tokens, p->prompt + p->n_prompt - (size_t)n, (size_t)n * sizeof *r->tokens);
    r->n_tokens = n;
    r->done.finish = n == p->max_tokens || p->min_tokens > n ? HEARTH_FINISH_LENGTH : HEARTH_FINISH_STOP;
    r->progress = p->progress;
    r->done.n_generated = n;
    *out = r;
    return HEARTH_OK;
}

hearth_status hearth_engine_submit_n(hearth_engine *e, const hearth_request_params *p, int32_t n, hearth_request **out,
                                     hearth_err *err) {
    static atomic_uint_fast64_t groups;
    hearth_status st = HEARTH_OK;
    if (n < 1) st = hearth_err_set(err, HEARTH_E_INVALID, -1, "n must be at least 1");
    for (int32_t i = 1; i < n && !st; i++)
        if (p[i].n_prompt != p[0].n_prompt ||
            (p[0].n_prompt && memcmp(p[i].prompt, p[0].prompt, p[0].n_prompt * sizeof *p[0].prompt)))
            st = hearth_err_set(err, HEARTH_E_INVALID, -1, "the choices' prompts differ");
    if (st) {
        for (int32_t i = 0; i < n; i++) {
            hearth_cx_matcher_destroy(p[i].constraint);
            out[i] = NULL;
        }
        return st;
    }
    uint64_t group = atomic_fetch_add(&groups, 1) + 1;
    for (int32_t i = 0; i < n; i++) {
        if ((st = hearth_engine_submit(e, &p[i], &out[i], err))) { /* all or nothing */
            for (int32_t j = 0; j < i; j++) {
                hearth_request_release(out[j]);
                out[j] = NULL;
            }
            for (int32_t j = i + 1; j < n; j++) hearth_cx_matcher_destroy(p[j].constraint);
            out[i] = NULL;
            return st;
        }
        out[i]->group = group;
    }
    return HEARTH_OK;
}

hearth_status hearth_request_next_any(hearth_request *const *reqs, int32_t n, int32_t *which, hearth_event *ev,
                                      int timeout_ms) {
    const hearth_request *first = NULL;
    for (int32_t i = 0; i < n; i++) {
        if (!reqs[i]) continue;
        if (first && reqs[i]->group != first->group) return HEARTH_E_INVALID;
        if (!first) first = reqs[i];
    }
    if (!first) return HEARTH_E_INVALID;
    int32_t start = *which >= 0 && *which < n ? *which + 1 : 0;
    for (int32_t k = 0; k < n; k++) {
        int32_t i = (start + k) % n;
        if (!reqs[i]) continue;
        *which = i;
        return hearth_request_next(reqs[i], ev, timeout_ms);
    }
    return HEARTH_E_INVALID;
}

void hearth_engine_cancel(hearth_engine *e, hearth_request *req) {
    (void)e;
    if (req) atomic_store(&req->cancelled, true);
}

hearth_status hearth_request_next(hearth_request *r, hearth_event *ev, int timeout_ms) {
    (void)timeout_ms;
    if (r->next < r->n_tokens && atomic_load(&r->cancelled)) { /* the engine ends it at its next step */
        r->n_tokens = r->next;
        r->done.finish = HEARTH_FINISH_CANCELLED;
        r->done.n_generated = r->next;
    }
    if (r->progress) {
        r->progress = false;
        memset(ev, 0, sizeof *ev);
        ev->kind = HEARTH_EV_PROGRESS;
        ev->n_prompt = ev->n_done = r->done.n_prompt;
        return HEARTH_OK;
    }
    if (r->next >= r->n_tokens) {
        *ev = r->done;
        return HEARTH_OK;
    }
    memset(ev, 0, sizeof *ev);
    ev->kind = HEARTH_EV_TOKEN;
    ev->token = r->tokens[r->next++];
    if (r->logprobs) { /* made-up but well-formed: the chosen token first, then its neighbours */
        ev->has_logprobs = true;
        ev->lp.logprob = -0.25f * (float)r->next;
        ev->lp.n_top = r->top_logprobs;
        for (int32_t i = 0; i < r->top_logprobs; i++) {
            ev->lp.top_id[i] = i == 0 ? ev->token : (ev->token + i) % 1000;
            ev->lp.top_logprob[i] = ev->lp.logprob - (float)i;
        }
    }
    return HEARTH_OK;
}

bool hearth_request_admitted(const hearth_request *req) { (void)req; return true; /* never queued */ }

void hearth_engine_cancel_all(hearth_engine *e) { (void)e; /* replies are decided at submit, nothing runs */ }

int32_t hearth_engine_cache_flush(hearth_engine *e) { (void)e; return 0; /* no prefix cache */ }

void hearth_request_release(hearth_request *req) {
    if (!req) return;
    free(req->tokens);
    free(req);
}
