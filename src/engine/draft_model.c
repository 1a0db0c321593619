/*
 * draft_model.c - the two-model draft source of spec.h: a second, smaller model with the
 * target's tokenizer proposes the drafts.
 *
 * The drafter runs its own forward of the draft model on the target's backend, with its own
 * paged KV pool (kv_pool.h): one slot per target slot, no prefix cache, and every layer keeps
 * every block (swa_full), so that rolling a slot back is popping the blocks past the rows kept.
 * Per slot it remembers the tokens whose KV it holds (held). A round (propose) serves all jobs
 * at once:
 *
 *   1. rollback  keep the longest common prefix of held and the job's tokens, never the last
 *                token (its logits give the first draft); the blocks past the kept rows go back
 *   2. reserve   blocks for the tokens to feed and the k - 1 drafts fed back (the last draft's
 *                KV is never needed); a job that finds no room gets fewer drafts, or none
 *   3. catch up  every job's missing tokens (one or two after a round whose drafts were
 *                accepted, the whole prompt the first time), packed across jobs into forwards
 *                of at most max_step tokens; the logits of each job's last token give its first
 *                draft
 *   4. draft     k - 1 more forwards of one token per job that still drafts: the previous draft
 *                goes in, the next comes out (all jobs in one forward per draft position)
 *
 * After a round, held is the job's tokens and its first k - 1 drafts, so the next round keeps
 * the KV of the drafts the target accepted and feeds only the target's own token after them.
 *
 * A draft is the argmax over the tokenizer's ids, or for a job of a sampled request that asks
 * for distributions (q) a draw from q (draft_pick.h), with a stream seeded with the job's seed.
 *
 * Memory: the draft pool holds batch full contexts of the draft model in the scheme given
 * (hearth_draft_model_pool_bytes; sliding-window layers count whole contexts too), capped at
 * max_pool_bytes. Besides it the drafter allocates the forward's activations for max_step
 * tokens (in the backend's memory), the logits of one forward (batch rows of the draft's
 * vocabulary, host floats), and per slot the n_ctx held tokens.
 *
 * Thread rule: engine thread only (the target's forward and this one share its backend).
 */
#include "engine/draft_pick.h"
#include "engine/kv_pool.h"
#include "engine/spec.h"
#include "models/forward.h"
#include "tokenizer/tokenizer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the vocabulary check ---- */

/* A token's text for a message: at most 40 bytes, control bytes as '?'. */
static const char *shown(const hearth_tok *tk, int32_t id, char *buf, size_t cap) {
    hearth_span s = hearth_tok_text(tk, id);
    size_t n = s.len < 40 ? s.len : 40, o = 0;
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        buf[o++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    if (s.len > n && o + 4 < cap) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = 0;
    return buf;
}

hearth_status hearth_draft_vocab_check(const hearth_model *target, const hearth_model *draft, hearth_err *err) {
    const hearth_tok *tt = hearth_model_tok(target), *td = hearth_model_tok(draft);
    if (!tt) return hearth_err_set(err, HEARTH_E_INVALID, -1, "the target model has no tokenizer to draft for");
    if (!td) return hearth_err_set(err, HEARTH_E_INVALID, -1, "the draft model has no tokenizer");
    int32_t nt = hearth_tok_n_vocab(tt), nd = hearth_tok_n_vocab(td);
    if (nt != nd)
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "the draft model's vocabulary has %d tokens, the target's %d",
                              nd, nt);
    int32_t rows_t = hearth_model_hparams(target)->n_vocab, rows_d = hearth_model_hparams(draft)->n_vocab;
    if (rows_t < nt || rows_d < nd)
        return hearth_err_set(err, HEARTH_E_INVALID, -1,
                              "the %s model's output has %d rows, fewer than its %d tokens",
                              rows_t < nt ? "target" : "draft", rows_t < nt ? rows_t : rows_d, nt);
    char a[48], b[48];
    if (hearth_tok_bos(tt) != hearth_tok_bos(td))
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "the BOS tokens differ: %d in the target, %d in the draft model",
                              hearth_tok_bos(tt), hearth_tok_bos(td));
    if (hearth_tok_eos(tt) != hearth_tok_eos(td))
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "the EOS tokens differ: %d in the target, %d in the draft model",
                              hearth_tok_eos(tt), hearth_tok_eos(td));
    for (int32_t id = 0; id < nt; id++) {
        hearth_span x = hearth_tok_text(tt, id), y = hearth_tok_text(td, id);
        if (x.len != y.len || (x.len && memcmp(x.ptr, y.ptr, x.len)))
            return hearth_err_set(err, HEARTH_E_INVALID, id, "token %d is '%s' in the target and '%s' in the draft model",
                                  id, shown(tt, id, a, sizeof a), shown(td, id, b, sizeof b));
        bool ct = hearth_tok_is_control(tt, id), cd = hearth_tok_is_control(td, id);
        if (ct != cd)
            return hearth_err_set(err, HEARTH_E_INVALID, id,
                                  "the control tokens differ: token %d ('%s') is one in the %s only", id,
                                  shown(tt, id, a, sizeof a), ct ? "target" : "draft model");
        bool et = hearth_tok_is_eog(tt, id), ed = hearth_tok_is_eog(td, id);
        if (et != ed)
            return hearth_err_set(err, HEARTH_E_INVALID, id,
                                  "the end-of-generation tokens differ: token %d ('%s') ends generation in the %s "
                                  "only",
                                  id, shown(tt, id, a, sizeof a), et ? "target" : "draft model");
    }
    return HEARTH_OK;
}

/* ---- the source ---- */

typedef struct {
    hearth_drafter  base;
    const hearth_model *m;       /* borrowed: the draft model */
    hearth_fwd     *fwd;         /* owned */
    hearth_kv_pool *pool;        /* owned */
    int32_t         batch, n_ctx, max_step;
    int32_t         n_cand;      /* ids a draft may take: the tokenizer's */
    int32_t         nv_draft;    /* columns of the draft model's logits */
    bool            device;      /* the backend's memory is not the host's: greedy picks stay there */
    int32_t        *held;        /* owned [batch][n_ctx]: the tokens whose KV the slot holds */
    int32_t        *n_held;      /* owned [batch] */
    int32_t        *tok, *pos, *sq; /* owned [max_step]: one forward's batch */
    int8_t         *want;        /* owned [max_step] */
    int32_t        *row_job;     /* owned [batch]: the job of each logits row of a forward */
    int32_t        *ids;         /* owned [batch]: the device's greedy picks */
    float          *logits;      /* owned [batch][nv_draft] */
    int32_t        *kk;          /* owned [batch]: drafts each job makes this round */
    uint64_t       *rng;         /* owned [batch]: each job's splitmix64 state */
    hearth_draft_cand *cands;    /* owned [n_cand] */
} draft_src;

static bool sampled(const hearth_draft_job *jb) { return jb->q && jb->sp && jb->sp->temperature > 0; }

/* Draft i of job j from logits row r (ids: the device's picks, or NULL). False when there is
 * none (a device pick outside the tokenizer's ids): the job's run ends there. */
static bool pick(draft_src *d, hearth_draft_job *jb, int32_t j, int32_t i, int32_t r, const int32_t *ids) {
    const float *row = d->logits + (size_t)r * (size_t)d->nv_draft;
    int32_t t;
    if (sampled(jb)) {
        t = hearth_draft_draw(jb->sp, row, d->n_cand, d->base.n_vocab, &d->rng[j], d->cands,
                              jb->q + (size_t)i * (size_t)d->base.n_vocab);
        jb->q_set = true;
    } else {
        t = ids ? ids[r] : hearth_draft_argmax(row, d->n_cand);
    }
    if (t < 0 || t >= d->n_cand) return false;
    jb->draft[i] = t;
    return true;
}

/* Hand back the slot's blocks past its first n_rows rows. */
static void trim(draft_src *d, int32_t slot, int32_t n_rows) {
    int32_t keep = (n_rows + hearth_kv_pool_block_size(d->pool) - 1) / hearth_kv_pool_block_size(d->pool);
    for (int32_t g = 0; g < hearth_kv_pool_n_groups(d->pool); g++)
        while (hearth_kv_pool_seq_blocks(d->pool, g, slot) > keep) {
            int32_t b = hearth_kv_pool_seq_pop(d->pool, g, slot);
            if (b < 0) break;
            hearth_kv_pool_unref(d->pool, b);
        }
    if (d->n_held[slot] > n_rows) d->n_held[slot] = n_rows;
}

static void model_release(hearth_drafter *base, int32_t slot) {
    draft_src *d = (draft_src *)base;
    if (slot >= 0 && slot < d->batch) trim(d, slot, 0);
}

/* One forward of the n tokens packed; rows logits rows. The device keeps greedy rows' picks
 * when every job of the round is greedy. */
static hearth_status run(draft_src *d, int32_t n, bool greedy, int32_t **ids) {
    hearth_batch b = {.n_tokens = n, .token = d->tok, .pos = d->pos, .seq = d->sq, .want_logits = d->want};
    const hearth_kv_view *kv = hearth_kv_pool_view(d->pool);
    *ids = NULL;
    if (d->device && greedy) {
        *ids = d->ids;
        return hearth_forward_argmax(d->fwd, &b, kv, d->logits, d->ids);
    }
    return hearth_forward(d->fwd, &b, kv, d->logits);
}

static void model_propose(hearth_drafter *base, hearth_draft_job *jobs, int32_t n_jobs) {
    draft_src *d = (draft_src *)base;
    bool greedy = true;
    int32_t kmax = 0;
    for (int32_t j = d->batch; j < n_jobs; j++) { /* slots are distinct: never more jobs than the batch */
        jobs[j].n = 0;
        jobs[j].q_set = false;
    }
    if (n_jobs > d->batch) n_jobs = d->batch;
    /* 1-2. roll back, reserve */
    for (int32_t j = 0; j < n_jobs; j++) {
        hearth_draft_job *jb = &jobs[j];
        jb->n = 0;
        jb->q_set = false;
        d->kk[j] = 0;
        int32_t s = jb->slot, n = jb->n_toks, k = jb->k;
        if (s < 0 || s >= d->batch || n <= 0 || n > d->n_ctx || k <= 0) continue;
        if (k > d->n_ctx - n + 1) k = d->n_ctx - n + 1;
        const int32_t *h = d->held + (size_t)s * (size_t)d->n_ctx;
        int32_t keep = 0, lim = d->n_held[s] < n - 1 ? d->n_held[s] : n - 1;
        while (keep < lim && h[keep] == jb->toks[keep]) keep++;
        trim(d, s, keep);
        while (k > 0 && !hearth_kv_pool_seq_reserve(d->pool, s, n + k - 1)) k--;
        d->kk[j] = k;
        if (k == 0) continue;
        d->rng[j] = jb->seed;
        greedy = greedy && !sampled(jb);
        if (k > kmax) kmax = k;
    }
    int32_t *ids;
    /* 3. catch up, in forwards of at most max_step tokens; a job's last token asks for logits */
    for (;;) {
        int32_t n = 0, rows = 0;
        for (int32_t j = 0; j < n_jobs && n < d->max_step; j++) {
            hearth_draft_job *jb = &jobs[j];
            if (!d->kk[j]) continue;
            int32_t s = jb->slot, from = d->n_held[s], take = jb->n_toks - from;
            if (take <= 0) continue;
            if (take > d->max_step - n) take = d->max_step - n;
            int32_t *h = d->held + (size_t)s * (size_t)d->n_ctx;
            for (int32_t t = from; t < from + take; t++, n++) {
                h[t] = d->tok[n] = jb->toks[t];
                d->pos[n] = t;
                d->sq[n] = s;
                d->want[n] = t == jb->n_toks - 1;
                if (d->want[n]) d->row_job[rows++] = j;
            }
            d->n_held[s] = from + take;
        }
        if (n == 0) break;
        if (run(d, n, greedy, &ids)) goto failed;
        for (int32_t r = 0; r < rows; r++) {
            int32_t j = d->row_job[r];
            if (!pick(d, &jobs[j], j, 0, r, ids)) d->kk[j] = 0;
            else jobs[j].n = 1;
        }
    }
    /* 4. the other drafts, one token per job and forward */
    for (int32_t i = 1; i < kmax; i++) {
        for (int32_t j0 = 0; j0 < n_jobs;) { /* chunks of max_step jobs (a batch larger than a step) */
            int32_t n = 0, j = j0;
            for (; j < n_jobs && n < d->max_step; j++) {
                hearth_draft_job *jb = &jobs[j];
                if (d->kk[j] <= i || jb->n != i) continue;
                int32_t s = jb->slot, p = jb->n_toks + i - 1;
                d->held[(size_t)s * (size_t)d->n_ctx + p] = d->tok[n] = jb->draft[i - 1];
                d->pos[n] = p;
                d->sq[n] = s;
                d->want[n] = 1;
                d->row_job[n++] = j;
                d->n_held[s] = p + 1;
            }
            j0 = j;
            if (n == 0) continue;
            if (run(d, n, greedy, &ids)) goto failed;
            for (int32_t r = 0; r < n; r++) {
                int32_t jj = d->row_job[r];
                if (pick(d, &jobs[jj], jj, i, r, ids)) jobs[jj].n = i + 1;
            }
        }
    }
    return;
failed: /* the KV of this round's rows is not to be trusted: the jobs' slots start over */
    for (int32_t j = 0; j < n_jobs; j++) {
        jobs[j].n = 0;
        jobs[j].q_set = false;
        if (d->kk[j]) trim(d, jobs[j].slot, 0);
    }
}

static void model_destroy(hearth_drafter *base) {
    draft_src *d = (draft_src *)base;
    if (!d) return;
    if (d->pool)
        for (int32_t s = 0; s < d->batch; s++) trim(d, s, 0);
    hearth_kv_pool_destroy(d->pool);
    hearth_fwd_destroy(d->fwd);
    free(d->held);
    free(d->n_held);
    free(d->tok);
    free(d->pos);
    free(d->sq);
    free(d->want);
    free(d->row_job);
    free(d->ids);
    free(d->logits);
    free(d->kk);
    free(d->rng);
    free(d->cands);
    free(d);
}

int64_t hearth_draft_model_pool_bytes(const hearth_model *draft, const hearth_draft_model_params *p) {
    int32_t bs = p->block_size > 0 ? p->block_size : 16;
    hearth_kv_layout lay = hearth_kv_layout_of(draft, true);
    int64_t block = (int64_t)hearth_kv_layout_block_bytes(&lay, draft, p->kv, bs);
    int64_t bytes = block * hearth_kv_layout_blocks(&lay, bs, p->n_ctx, p->max_step) * p->batch;
    if (p->max_pool_bytes > 0 && p->max_pool_bytes < bytes) bytes = p->max_pool_bytes / block * block;
    return bytes; /* whole blocks: what the pool allocates */
}

hearth_status hearth_drafter_model(const hearth_model *target, const hearth_model *draft, hearth_backend *be,
                                   const hearth_draft_model_params *p, hearth_drafter **out, hearth_err *err) {
    *out = NULL;
    hearth_status st = hearth_draft_vocab_check(target, draft, err);
    if (st) return st;
    if (p->batch <= 0 || p->n_ctx <= 0 || p->max_step <= 0)
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "the draft model needs a batch, a context and a step size");
    char why[160];
    if (!hearth_fwd_supported(draft, be, why, sizeof why))
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "the draft model cannot run on %s: %s",
                              hearth_backend_name(be), why);
    draft_src *d = calloc(1, sizeof *d);
    if (!d) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory creating the draft source");
    d->m = draft;
    d->batch = p->batch;
    d->n_ctx = p->n_ctx;
    d->max_step = p->max_step;
    d->n_cand = hearth_tok_n_vocab(hearth_model_tok(draft));
    d->nv_draft = hearth_model_hparams(draft)->n_vocab;
    d->device = !hearth_backend_host_memory(be);
    d->base = (hearth_drafter){.kind = "two-model", .n_vocab = hearth_model_hparams(target)->n_vocab,
                               .propose = model_propose, .release = model_release, .destroy = model_destroy};
    hearth_kv_pool_params pp = {.budget_bytes = (size_t)hearth_draft_model_pool_bytes(draft, p),
                                .block_size = p->block_size > 0 ? p->block_size : 16, .n_seqs = p->batch,
                                .max_seq_len = p->n_ctx, .kv = p->kv, .swa_full = true,
                                .be = d->device ? be : NULL};
    if ((st = hearth_kv_pool_create(draft, &pp, &d->pool, err))) {
        model_destroy(&d->base);
        return st;
    }
    size_t B = (size_t)p->batch, T = (size_t)p->max_step;
    hearth_numerics nx = hearth_backend_numerics(be); /* the target's arithmetic */
    d->fwd = hearth_fwd_create(draft, be, p->max_step, &nx);
    d->held = malloc(B * (size_t)p->n_ctx * sizeof(int32_t));
    d->n_held = calloc(B, sizeof(int32_t));
    d->tok = malloc(T * sizeof(int32_t));
    d->pos = malloc(T * sizeof(int32_t));
    d->sq = malloc(T * sizeof(int32_t));
    d->want = malloc(T);
    d->row_job = malloc(B * sizeof(int32_t));
    d->ids = malloc(B * sizeof(int32_t));
    d->logits = malloc(B * (size_t)d->nv_draft * sizeof(float));
    d->kk = calloc(B, sizeof(int32_t));
    d->rng = calloc(B, sizeof(uint64_t));
    d->cands = malloc((size_t)d->n_cand * sizeof *d->cands);
    if (!d->fwd || !d->held || !d->n_held || !d->tok || !d->pos || !d->sq || !d->want || !d->row_job || !d->ids ||
        !d->logits || !d->kk || !d->rng || !d->cands) {
        model_destroy(&d->base);
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory creating the draft source");
    }
    *out = &d->base;
    return HEARTH_OK;
}
