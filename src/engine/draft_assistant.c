/*
 * draft_assistant.c - the Gemma 4 assistant draft source of spec.h ("assistant"): transformers'
 * gemma4_assistant, a small head that drafts from the target's own state
 * (Gemma4AssistantCandidateGenerator in transformers' generation/candidate_generator.py).
 *
 * For a sequence of n tokens whose KV the target holds for positions 0 .. n - 2 (the last token
 * is fed in the coming verify step), a round of k drafts is k forwards of the assistant
 * (models/gemma4_assistant.c), one row per sequence, all sequences in one forward per draft:
 *
 *   draft 1   token = the last token, h = the target's final-normed hidden state of the row
 *             that produced it (in the step that made it: the prefill's last row, or the verify
 *             row of the last accepted draft)
 *   draft i   token = draft i - 1, h = the assistant's post-projected output of draft i - 1
 *
 * Every draft forward puts the queries at position n - 1 (transformers holds position_ids there
 * for the whole round) and attends to the target's cache of positions 0 .. n - 2, read through
 * the target's own pool: no KV of the assistant's own, so nothing to roll back when drafts are
 * rejected; the next round starts from the target's state again. The target's sliding layers
 * must keep one more position than their window for this (window_keep, kv_pool.h).
 *
 * The hidden states: the target's forward writes every logits row's hidden state into
 * step_hidden (hearth_fwd_set_hidden_out); the scheduler then says which row made each
 * sequence's newest token (produced), and the source copies that row to the slot with the token
 * count it belongs to. A job whose sequence has another count (a fork's first token, a round
 * after a release) gets no drafts until its next step.
 *
 * Picks: draft_pick.h (greedy argmax, or a draw from q for a sampled request), over the
 * tokenizer's ids.
 *
 * Memory: the assistant's activations for min(batch, max_step) rows, the logits of one forward
 * (host floats), per slot one hidden state of the target's width, max_step more for the step's.
 *
 * Thread rule: engine thread only (the target's forward and this one share its backend).
 */
#include "engine/draft_pick.h"
#include "engine/spec.h"
#include "models/forward.h"
#include "tokenizer/tokenizer.h"

#include <stdlib.h>
#include <string.h>

/* ---- the check ---- */

/* The target's layer the assistant's layers of kind swa read: the last one of that kind that
 * stores its own KV (transformers' kv_sharing_modes "store"), or -1. */
static int32_t target_source(const hearth_hparams *t, bool swa) {
    for (int32_t il = t->n_layer - 1; il >= 0; il--)
        if (hearth_hparams_kv_layer(t, il) == il && hearth_hparams_is_swa(t, il) == swa) return il;
    return -1;
}

hearth_status hearth_draft_assistant_check(const hearth_model *target, const hearth_model *asst, hearth_err *err) {
    const hearth_hparams *t = hearth_model_hparams(target), *a = hearth_model_hparams(asst);
    if (a->n_embd_backbone <= 0)
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "the draft model is not a Gemma 4 assistant "
                              "(config.json model_type gemma4_assistant)");
    if (t->arch != HEARTH_ARCH_GEMMA4 || t->n_embd_backbone > 0)
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "the Gemma 4 assistant drafts for a Gemma 4 target; the "
                              "target is another architecture");
    if (a->n_embd_backbone != t->n_embd)
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "the assistant's backbone_hidden_size is %d, the target's "
                              "hidden size %d", a->n_embd_backbone, t->n_embd);
    if (a->n_vocab != t->n_vocab)
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "the assistant's vocabulary has %d tokens, the target's %d",
                              a->n_vocab, t->n_vocab);
    if (!hearth_model_tok(target))
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "the target model has no tokenizer to draft for");
    for (int32_t il = 0; il < a->n_layer; il++) {
        bool swa = hearth_hparams_is_swa(a, il);
        const char *kind = swa ? "sliding-window" : "full-attention";
        int32_t src = target_source(t, swa);
        if (src < 0)
            return hearth_err_set(err, HEARTH_E_INVALID, il, "the assistant's layer %d is a %s layer; the target has "
                                  "none whose KV it could read", il, kind);
        int32_t ahd = hearth_hparams_head_dim(a, il), thd = hearth_hparams_head_dim(t, src);
        int32_t akv = hearth_hparams_n_head_kv(a, il), tkv = hearth_hparams_n_head_kv(t, src);
        if (ahd != thd || akv != tkv)
            return hearth_err_set(err, HEARTH_E_INVALID, il, "the assistant's layer %d (%s) reads %d kv heads of %d "
                                  "from the target's layer %d, which has %d of %d", il, kind, akv, ahd, src, tkv, thd);
        float ab = swa ? a->rope_base_swa : a->rope_base, tb = swa ? t->rope_base_swa : t->rope_base;
        if (ab != tb || (!swa && a->n_rot_freq != t->n_rot_freq))
            return hearth_err_set(err, HEARTH_E_INVALID, il, "the assistant's %s layers turn queries with RoPE base %g "
                                  "(%d dims), the target's keys with %g (%d)", kind, (double)ab,
                                  swa ? ahd : a->n_rot_freq, (double)tb, swa ? thd : t->n_rot_freq);
    }
    return HEARTH_OK;
}

int32_t hearth_draft_assistant_window(const hearth_model *asst) {
    const hearth_hparams *a = hearth_model_hparams(asst);
    for (int32_t il = 0; il < a->n_layer; il++)
        if (hearth_hparams_is_swa(a, il)) return a->n_swa + 2; /* window + 1 before the drafted position */
    return 0;
}

/* ---- the source ---- */

typedef struct {
    hearth_drafter         base;
    const hearth_model    *target, *asst; /* borrowed */
    hearth_fwd            *target_fwd;    /* borrowed: it writes step_hidden */
    const hearth_kv_pool  *pool;          /* borrowed: the target's */
    hearth_fwd            *fwd;           /* owned: the assistant's */
    int32_t                batch, rows, E, n_cand, nv; /* rows: per forward; E: the target's width */
    float                 *hid;           /* owned [batch][E]: each slot's hidden state ... */
    int32_t               *hid_at;        /* owned [batch]: ... and the token count it is for (0: none) */
    float                 *step_hidden;   /* owned [max_step][E]: the target step's logits rows' */
    float                 *job_h;         /* owned [batch][E]: each job's state between draft steps */
    float                 *in_h, *out_h;  /* owned [rows][E]: one forward's */
    int32_t               *tok, *pos, *sq, *row_job; /* owned [rows] */
    int8_t                *want;          /* owned [rows] */
    float                 *logits;        /* owned [rows][nv] */
    int32_t               *kk;            /* owned [batch]: drafts each job makes this round */
    uint64_t              *rng;           /* owned [batch] */
    hearth_draft_cand     *cands;         /* owned [n_cand] */
    /* the view of the target's cache the assistant reads: its layer il -> the target's source */
    hearth_kv_view         view;
    void                 **k, **v;        /* owned [n_layer of the assistant] */
    int32_t               *layer_group;   /* owned [n_layer] */
    hearth_kv_type        *kt, *vt;       /* owned [n_layer] */
    int32_t               *window;        /* owned [n_groups of the pool] */
} asst_src;

static void asst_release(hearth_drafter *base, int32_t slot) {
    asst_src *d = (asst_src *)base;
    if (slot >= 0 && slot < d->batch) d->hid_at[slot] = 0;
}

static void asst_produced(hearth_drafter *base, int32_t slot, int32_t row, int32_t n_toks) {
    asst_src *d = (asst_src *)base;
    if (slot < 0 || slot >= d->batch || row < 0 || row >= hearth_fwd_max_tokens(d->target_fwd)) return;
    memcpy(d->hid + (size_t)slot * (size_t)d->E, d->step_hidden + (size_t)row * (size_t)d->E,
           (size_t)d->E * sizeof(float));
    d->hid_at[slot] = n_toks;
}

/* The assistant's view of the target's cache, from the pool's current one. */
static const hearth_kv_view *borrowed_view(asst_src *d) {
    const hearth_kv_view *tv = hearth_kv_pool_view(d->pool);
    const hearth_hparams *a = hearth_model_hparams(d->asst), *t = hearth_model_hparams(d->target);
    d->view = *tv;
    for (int32_t il = 0; il < a->n_layer; il++) {
        int32_t src = target_source(t, hearth_hparams_is_swa(a, il));
        d->k[il] = tv->k[src];
        d->v[il] = tv->v[src];
        d->layer_group[il] = tv->layer_group ? tv->layer_group[src] : 0;
        d->kt[il] = hearth_kv_view_k_type(tv, src);
        d->vt[il] = hearth_kv_view_v_type(tv, src);
    }
    d->view.k = d->k;
    d->view.v = d->v;
    d->view.layer_group = tv->layer_group ? d->layer_group : NULL;
    d->view.layer_k_type = d->kt;
    d->view.layer_v_type = d->vt;
    if (tv->group_window) { /* the window the assistant's queries read (forward.c checks its blocks) */
        for (int32_t g = 0; g < (tv->n_groups > 1 ? tv->n_groups : 1); g++)
            d->window[g] = tv->group_window[g] > 0 ? a->n_swa + 1 : 0;
        d->view.group_window = d->window;
    }
    return &d->view;
}

static bool sampled(const hearth_draft_job *jb) { return jb->q && jb->sp && jb->sp->temperature > 0; }

static void asst_propose(hearth_drafter *base, hearth_draft_job *jobs, int32_t n_jobs) {
    asst_src *d = (asst_src *)base;
    size_t E = (size_t)d->E, nv = (size_t)d->nv;
    int32_t kmax = 0;
    for (int32_t j = 0; j < n_jobs; j++) {
        hearth_draft_job *jb = &jobs[j];
        jb->n = 0;
        jb->q_set = false;
        if (j >= d->batch) continue; /* slots are distinct: never more jobs than the batch */
        d->kk[j] = 0;
        int32_t s = jb->slot;
        if (s < 0 || s >= d->batch || jb->n_toks < 2 || jb->k <= 0 || d->hid_at[s] != jb->n_toks) continue;
        d->kk[j] = jb->k;
        d->rng[j] = jb->seed;
        memcpy(d->job_h + (size_t)j * E, d->hid + (size_t)s * E, E * sizeof(float));
        if (jb->k > kmax) kmax = jb->k;
    }
    if (n_jobs > d->batch) n_jobs = d->batch;
    if (kmax == 0) return;
    const hearth_kv_view *kv = borrowed_view(d);
    for (int32_t i = 0; i < kmax; i++) {
        for (int32_t j0 = 0; j0 < n_jobs;) { /* forwards of at most rows jobs */
            int32_t n = 0, j = j0;
            for (; j < n_jobs && n < d->rows; j++) {
                hearth_draft_job *jb = &jobs[j];
                if (d->kk[j] <= i || jb->n != i) continue;
                d->tok[n] = i == 0 ? jb->toks[jb->n_toks - 1] : jb->draft[i - 1];
                d->pos[n] = jb->n_toks - 2; /* the last position whose KV the target holds */
                d->sq[n] = jb->slot;
                d->want[n] = 1;
                memcpy(d->in_h + (size_t)n * E, d->job_h + (size_t)j * E, E * sizeof(float));
                d->row_job[n++] = j;
            }
            j0 = j;
            if (n == 0) continue;
            hearth_batch b = {.n_tokens = n, .token = d->tok, .pos = d->pos, .seq = d->sq, .want_logits = d->want};
            if (hearth_forward_assistant(d->fwd, d->target, &b, kv, d->in_h, d->logits, d->out_h)) {
                for (int32_t jj = 0; jj < n_jobs; jj++) { /* nothing of this round is to be trusted */
                    jobs[jj].n = 0;
                    jobs[jj].q_set = false;
                }
                return;
            }
            for (int32_t r = 0; r < n; r++) {
                int32_t jj = d->row_job[r];
                hearth_draft_job *jb = &jobs[jj];
                const float *row = d->logits + (size_t)r * nv;
                int32_t t;
                if (sampled(jb)) {
                    t = hearth_draft_draw(jb->sp, row, d->n_cand, d->base.n_vocab, &d->rng[jj], d->cands,
                                          jb->q + (size_t)i * (size_t)d->base.n_vocab);
                    jb->q_set = true;
                } else {
                    t = hearth_draft_argmax(row, d->n_cand);
                }
                jb->draft[i] = t;
                jb->n = i + 1;
                memcpy(d->job_h + (size_t)jj * E, d->out_h + (size_t)r * E, E * sizeof(float));
            }
        }
    }
}

static void asst_destroy(hearth_drafter *base) {
    asst_src *d = (asst_src *)base;
    if (!d) return;
    if (d->target_fwd) hearth_fwd_set_hidden_out(d->target_fwd, NULL);
    hearth_fwd_destroy(d->fwd);
    free(d->hid);
    free(d->hid_at);
    free(d->step_hidden);
    free(d->job_h);
    free(d->in_h);
    free(d->out_h);
    free(d->tok);
    free(d->pos);
    free(d->sq);
    free(d->row_job);
    free(d->want);
    free(d->logits);
    free(d->kk);
    free(d->rng);
    free(d->cands);
    free(d->k);
    free(d->v);
    free(d->layer_group);
    free(d->kt);
    free(d->vt);
    free(d->window);
    free(d);
}

hearth_status hearth_drafter_assistant(const hearth_model *target, const hearth_model *asst, hearth_backend *be,
                                       hearth_fwd *target_fwd, const hearth_kv_pool *pool, int32_t batch,
                                       int32_t max_step, hearth_drafter **out, hearth_err *err) {
    *out = NULL;
    hearth_status st = hearth_draft_assistant_check(target, asst, err);
    if (st) return st;
    if (batch <= 0 || max_step <= 0 || !target_fwd || !pool)
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "the assistant needs the target's forward, pool and batch");
    char why[160];
    if (!hearth_fwd_supported(asst, be, why, sizeof why))
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "the assistant cannot run on %s: %s",
                              hearth_backend_name(be), why);
    asst_src *d = calloc(1, sizeof *d);
    if (!d) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory creating the assistant source");
    const hearth_hparams *a = hearth_model_hparams(asst);
    d->target = target;
    d->asst = asst;
    d->pool = pool;
    d->batch = batch;
    d->rows = batch < max_step ? batch : max_step;
    d->E = hearth_model_hparams(target)->n_embd;
    d->n_cand = hearth_tok_n_vocab(hearth_model_tok(target));
    d->nv = a->n_vocab;
    d->base = (hearth_drafter){.kind = "assistant", .n_vocab = hearth_model_hparams(target)->n_vocab,
                               .propose = asst_propose, .release = asst_release, .produced = asst_produced,
                               .destroy = asst_destroy};
    size_t B = (size_t)batch, R = (size_t)d->rows, E = (size_t)d->E, L = (size_t)a->n_layer;
    size_t G = (size_t)hearth_kv_pool_n_groups(pool);
    hearth_numerics nx = hearth_backend_numerics(be); /* the target's arithmetic */
    d->fwd = hearth_fwd_create(asst, be, d->rows, &nx);
    d->hid = malloc(B * E * sizeof(float));
    d->hid_at = calloc(B, sizeof(int32_t));
    d->step_hidden = malloc((size_t)hearth_fwd_max_tokens(target_fwd) * E * sizeof(float));
    d->job_h = malloc(B * E * sizeof(float));
    d->in_h = malloc(R * E * sizeof(float));
    d->out_h = malloc(R * E * sizeof(float));
    d->tok = malloc(R * sizeof(int32_t));
    d->pos = malloc(R * sizeof(int32_t));
    d->sq = malloc(R * sizeof(int32_t));
    d->row_job = malloc(R * sizeof(int32_t));
    d->want = malloc(R);
    d->logits = malloc(R * (size_t)d->nv * sizeof(float));
    d->kk = calloc(B, sizeof(int32_t));
    d->rng = calloc(B, sizeof(uint64_t));
    d->cands = malloc((size_t)d->n_cand * sizeof *d->cands);
    d->k = calloc(L, sizeof *d->k);
    d->v = calloc(L, sizeof *d->v);
    d->layer_group = calloc(L, sizeof *d->layer_group);
    d->kt = calloc(L, sizeof *d->kt);
    d->vt = calloc(L, sizeof *d->vt);
    d->window = calloc(G ? G : 1, sizeof *d->window);
    if (!d->fwd || !d->hid || !d->hid_at || !d->step_hidden || !d->job_h || !d->in_h || !d->out_h || !d->tok ||
        !d->pos || !d->sq || !d->row_job || !d->want || !d->logits || !d->kk || !d->rng || !d->cands || !d->k ||
        !d->v || !d->layer_group || !d->kt || !d->vt || !d->window) {
        asst_destroy(&d->base);
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory creating the assistant source");
    }
    d->target_fwd = target_fwd;
    hearth_fwd_set_hidden_out(target_fwd, d->step_hidden);
    *out = &d->base;
    return HEARTH_OK;
}
