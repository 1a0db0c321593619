/*
 * sched.c - continuous batching over the paged KV pool; see sched.h for the policy.
 *
 * A sequence's tokens are its prompt then what it generated; n_done of them have their KV in
 * the cache. The next token it feeds is toks[n_done]; when a step feeds up to its last known
 * token the logits of that row give the next one. Full blocks whose KV is computed are
 * indexed in the prefix cache right after the step that filled them, so a request sharing a
 * prefix with a running one reuses its blocks.
 *
 * Choices (hearth_engine_submit_n): the first request of a group is queued as usual and carries
 * the others as `forks`. In the step that ends its prefill (the KV of every prompt position is
 * in the cache, the logits of the last one are at hand) each fork takes a free slot and starts
 * where the first one stands:
 *
 *   first:  [ b0 | b1 | b2 (partial) ]          b0, b1 full: shared by reference
 *   fork:   [ b0 | b1 | b2' ]                   b2' a fresh block with b2's rows copied
 *
 * then draws its first token from a copy of the same logits with its own sampler. Full blocks
 * are never written again, and each sequence appends to its own last block, so nothing else
 * needs copy-on-write. A fork that finds no free slot or block then is queued as a request of
 * its own (prefilled later, through the prefix cache when it holds the prompt).
 *
 * Scoring (score_from > 0, `hearth perplexity`): the prompt positions score_from - 1 .. n_prompt
 * - 2 ask for logits too; each such row becomes the log-probability of the prompt token after
 * it, in double, straight into the request's scores. A step's rows follow the packing order: a
 * sequence's score rows, then its output row (the last known token) when it has one. The logits
 * buffer grows to the rows a step asks for (at most max_step); a preempted sequence computes
 * its rows again, with the same values.
 *
 * Hybrid models (linear-attention states, kv_pool.h) with a prefix cache: packing a sequence's
 * tokens also picks the block boundaries they cross where it keeps a state snapshot (want_snap:
 * its last full prompt block, its branch point, blocks 1, 2, 4, ...); the step's batch names
 * them (snap_at / snap_to) and the forward copies the states there; after the step each goes
 * with its cached block (keep_snaps), or back to the pool. take_prefix copies the snapshot at
 * the end of the match into the slot, so prefill (or a preempted sequence's recompute) resumes
 * from it; the match never ends at a block without one (prefix_cache.h).
 *
 * Images (request params images): a prefill chunk never ends inside an image, whose tokens
 * see each other both ways and so must be fed in one step (the chunk stops before the image,
 * or waits for a step with budget for all of it); their rows and reach (pos_end) go into the
 * batch. The prefix cache keys an image's positions by its digest (key_at), so a block holding
 * part of an image matches only the same image at the same place after the same prefix.
 */
#include "engine/sched.h"
#include "base/assert.h"
#include "base/log.h"
#include "engine/request.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct seq {
    hearth_request *r;        /* the engine's reference */
    hearth_sampler *smp;      /* owned, kept across preemption */
    hearth_cx_matcher *cx;    /* owned, may be NULL: the request's constraint, kept across preemption */
    int32_t        *toks;     /* owned [n_prompt + max_tokens] */
    uint64_t       *hashes;   /* owned [max_blocks]: hashes of the full blocks indexed so far */
    int32_t         n_toks, n_done, n_gen, n_cached, n_hashed, slot;
    int32_t         branch;   /* hybrid models: where the cached chain its prefix hit was cut from ended (a
                               * position; 0: none), a state snapshot is taken there (sched.c's head comment) */
    int32_t         take;     /* tokens fed in this step */
    int32_t         score_rows; /* of them, rows that score a prompt token (score_from) */
    bool            started;  /* admitted before (a preempted sequence comes back) */
    int32_t         k;        /* drafts in this step (spec.h), stored at toks[n_toks .. n_toks + k) */
    int32_t         k_next;   /* drafts the next round asks for (adaptive) */
    int32_t         backoff, missed; /* rounds to skip drafting after rounds that accepted nothing */
    double          alpha;    /* the sequence's acceptance rate (moving average over its rounds) */
    int32_t         skipped;  /* rounds the cost model left out since the last one it drafted */
    float          *q;        /* owned [n_draft][n_vocab] once a source gives distributions */
    bool            q_set;    /* this step's drafts have distributions in q */
    double          t0, t_first;
    struct seq     *next;     /* waiting list */
    struct seq     *forks;    /* owned list: the group's other choices, forked at the end of prefill */
    struct seq     *fork_next;
} seq;

struct hearth_sched {
    const hearth_model  *m;    /* borrowed */
    hearth_fwd          *fwd;  /* borrowed */
    hearth_kv_pool      *pool; /* borrowed */
    hearth_prefix_cache *pc;   /* borrowed, may be NULL */
    hearth_sched_params  p;
    int32_t              n_vocab, bs, max_blocks;
    seq                **run;  /* owned [batch], admission order */
    int32_t              n_run;
    seq                 *wait_head, *wait_tail;
    int32_t              n_wait;
    int32_t              n_forks;        /* choices waiting on their group's first sequence */
    float               *lg_fork;        /* owned [n_vocab]: the logits every fork draws from */
    int32_t             *free_slots; /* owned stack [batch] */
    int32_t              n_free_slots;
    int32_t             *tok, *pos, *sq; /* owned [max_step] */
    const float        **embd;           /* owned [max_step]: each token's image row, or NULL */
    int32_t             *pos_end;        /* owned [max_step]: the last position each token reads */
    int32_t              step_img;       /* tokens of the step with an image row */
    int32_t             *key_buf;        /* owned [bs]: one block's prefix-cache keys */
    int8_t              *want;           /* owned [max_step] */
    const hearth_lora  **lora;           /* owned [max_step]: each token's adapter (NULL = none) */
    int32_t              step_lora;      /* tokens of the step with an adapter */
    float               *logits;         /* owned [lg_rows][n_vocab] */
    hearth_topm_req     *topm_rq;        /* owned [batch] when a step sampled on the backend */
    hearth_topm         *topm;           /* owned [batch]: the summaries of that step's rows */
    hearth_topm_edit    *topm_ed;        /* owned [cap_ed]: their rows' edits (bias, penalties) */
    int32_t              n_ed, cap_ed;
    int32_t              lg_rows;        /* batch, more once a step scores a prompt */
    int32_t              step_rows;      /* logits rows the step being packed asks for */
    int32_t             *ids;            /* owned [batch]: greedy picks made on the device */
    int32_t             *eog;            /* owned [n_eog]: the end-of-generation ids (min_tokens) */
    int32_t              n_eog;
    hearth_draft_job    *jobs;           /* owned [batch] */
    /* the step cost model of speculation (hearth_spec_best_k): step time ~ c0 + c1 * tokens,
     * fitted by least squares over the recent steps (sums decayed by DECAY a step) */
    double               fit_w, fit_n, fit_t, fit_nn, fit_nt;
    int64_t              fit_steps;
    double               draft_ms;       /* the draft source's time per draft asked for (moving average) */
    seq                **job_seq;        /* owned [batch] */
    /* the step's state snapshots (hybrid models with a prefix cache): after batch token snap_at[i]
     * the states of slot snap_slot[i] (snap_pos[i] positions) go to snapshot snap_id[i] (-1 once
     * it is handed to the cache or freed), state row snap_to[i] */
    bool                 snaps;
    int32_t              n_snap;
    int32_t             *snap_at, *snap_to, *snap_id, *snap_slot, *snap_pos; /* owned [max_step] */
    hearth_engine_stats  st;
};

hearth_sched *hearth_sched_create(const hearth_model *m, hearth_fwd *fwd, hearth_kv_pool *pool,
                                  hearth_prefix_cache *pc, const hearth_sched_params *p) {
    hearth_sched *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->m = m;
    s->fwd = fwd;
    s->pool = pool;
    s->pc = pc;
    s->p = *p;
    s->n_vocab = hearth_model_hparams(m)->n_vocab;
    s->bs = hearth_kv_pool_block_size(pool);
    s->max_blocks = (p->n_ctx + s->bs - 1) / s->bs;
    size_t B = (size_t)p->batch, T = (size_t)p->max_step;
    s->run = calloc(B, sizeof *s->run);
    s->free_slots = malloc(B * sizeof(int32_t));
    s->tok = malloc(T * sizeof(int32_t));
    s->pos = malloc(T * sizeof(int32_t));
    s->sq = malloc(T * sizeof(int32_t));
    s->want = malloc(T);
    s->lora = malloc(T * sizeof *s->lora);
    s->embd = malloc(T * sizeof *s->embd);
    s->pos_end = malloc(T * sizeof(int32_t));
    s->key_buf = malloc((size_t)hearth_kv_pool_block_size(pool) * sizeof(int32_t));
    s->ids = malloc(B * sizeof(int32_t));
    s->jobs = calloc(B, sizeof *s->jobs);
    s->job_seq = calloc(B, sizeof *s->job_seq);
    s->logits = malloc(B * (size_t)s->n_vocab * sizeof(float));
    s->lg_rows = p->batch;
    s->lg_fork = malloc((size_t)s->n_vocab * sizeof(float));
    s->snap_at = malloc(5 * T * sizeof(int32_t));
    s->snaps = pc && hearth_kv_pool_n_snaps(pool) > 0;
    if (s->snap_at) {
        s->snap_to = s->snap_at + T;
        s->snap_id = s->snap_at + 2 * T;
        s->snap_slot = s->snap_at + 3 * T;
        s->snap_pos = s->snap_at + 4 * T;
    }
    if (!s->snap_at || !s->lg_fork || !s->run || !s->free_slots || !s->tok || !s->pos || !s->sq || !s->want || !s->lora || !s->logits || !s->ids ||
        !s->jobs || !s->job_seq || !s->embd || !s->pos_end || !s->key_buf) {
        hearth_sched_destroy(s);
        return NULL;
    }
    const hearth_tok *tk = hearth_model_tok(m); /* NULL for a scripted model without a vocabulary */
    for (int32_t t = 0; tk && t < s->n_vocab; t++) s->n_eog += hearth_tok_is_eog(tk, t);
    if (s->n_eog && !(s->eog = malloc((size_t)s->n_eog * sizeof(int32_t)))) {
        hearth_sched_destroy(s);
        return NULL;
    }
    for (int32_t t = 0, k = 0; t < s->n_vocab && k < s->n_eog; t++)
        if (hearth_tok_is_eog(tk, t)) s->eog[k++] = t;
    for (int32_t i = 0; i < p->batch; i++) s->free_slots[i] = p->batch - 1 - i;
    s->n_free_slots = p->batch;
    s->st.blocks_total = hearth_kv_pool_n_blocks(pool);
    return s;
}

/* Give every block of the sequence back (to the prefix cache's LRU when it indexes them),
 * last block first so that a chain's tail is evicted before its head. */
static void give_back(hearth_sched *s, int32_t b) {
    if (s->pc) hearth_prefix_cache_release(s->pc, b);
    else hearth_kv_pool_unref(s->pool, b);
}

static void release_blocks(hearth_sched *s, seq *q) {
    if (q->slot < 0) return;
    if (s->p.draft) s->p.draft->release(s->p.draft, q->slot);
    q->k = 0;
    int32_t b;
    for (int32_t g = 0; g < hearth_kv_pool_n_groups(s->pool); g++)
        while ((b = hearth_kv_pool_seq_pop(s->pool, g, q->slot)) >= 0) give_back(s, b);
    s->free_slots[s->n_free_slots++] = q->slot;
    q->slot = -1;
    q->n_done = 0;
    q->n_hashed = 0;
}

static void seq_free(hearth_sched *s, seq *q) {
    release_blocks(s, q);
    hearth_sampler_destroy(q->smp);
    hearth_cx_matcher_destroy(q->cx);
    hearth_req_unref(q->r);
    free(q->toks);
    free(q->hashes);
    free(q->q);
    free(q);
}

static void wait_push_back(hearth_sched *s, seq *q) {
    q->next = NULL;
    if (s->wait_tail) s->wait_tail->next = q;
    else s->wait_head = q;
    s->wait_tail = q;
    s->n_wait++;
}

static void wait_push_front(hearth_sched *s, seq *q) {
    q->next = s->wait_head;
    s->wait_head = q;
    if (!s->wait_tail) s->wait_tail = q;
    s->n_wait++;
}

static seq *wait_pop(hearth_sched *s) {
    seq *q = s->wait_head;
    if (!q) return NULL;
    s->wait_head = q->next;
    if (!s->wait_head) s->wait_tail = NULL;
    s->n_wait--;
    q->next = NULL;
    return q;
}

/* The forks of q go to the front of the queue, in order, as requests of their own. */
static void unfork(hearth_sched *s, seq *q) {
    seq *rev = NULL;
    for (seq *c = q->forks, *n; c; c = n) {
        n = c->fork_next;
        c->fork_next = rev;
        rev = c;
        s->n_forks--;
    }
    q->forks = NULL;
    for (seq *c = rev, *n; c; c = n) {
        n = c->fork_next;
        c->fork_next = NULL;
        wait_push_front(s, c);
    }
}

static void end(hearth_sched *s, seq *q, hearth_finish why, hearth_status st, const char *msg) {
    unfork(s, q); /* the other choices go on without it */
    hearth_req_finish(q->r, why, st, msg, q->n_gen, q->n_cached, q->t0, q->t_first);
    seq_free(s, q);
}

void hearth_sched_destroy(hearth_sched *s) {
    if (!s) return;
    for (int32_t i = 0; i < s->n_run; i++) end(s, s->run[i], HEARTH_FINISH_CANCELLED, HEARTH_E_CANCELLED, "cancelled");
    seq *q; /* popped one at a time: ending a group's first choice queues its forks at the front */
    while ((q = wait_pop(s))) end(s, q, HEARTH_FINISH_CANCELLED, HEARTH_E_CANCELLED, "cancelled");
    free(s->run);
    free(s->free_slots);
    free(s->tok);
    free(s->pos);
    free(s->sq);
    free(s->want);
    free(s->lora);
    free(s->embd);
    free(s->pos_end);
    free(s->key_buf);
    free(s->logits);
    free(s->topm_rq);
    free(s->topm);
    free(s->topm_ed);
    free(s->lg_fork);
    free(s->ids);
    free(s->eog);
    free(s->jobs);
    free(s->job_seq);
    free(s->snap_at);
    free(s);
}

/* A sequence for r (the scheduler's reference), or NULL with r finished (too long, OOM). */
static seq *seq_new(hearth_sched *s, hearth_request *r) {
    char msg[160];
    double t0 = hearth_now_mono_ms();
    int32_t n_prompt = (int32_t)r->p.n_prompt;
    if ((int64_t)n_prompt + r->p.max_tokens > s->p.n_ctx) {
        snprintf(msg, sizeof msg, "prompt (%d tokens) + max_tokens (%d) exceeds the context of %d tokens", n_prompt,
                 r->p.max_tokens, s->p.n_ctx);
        hearth_req_finish(r, HEARTH_FINISH_ERROR, HEARTH_E_LIMIT, msg, 0, 0, t0, 0);
        hearth_req_unref(r);
        return NULL;
    }
    hearth_err err = {0};
    seq *q = calloc(1, sizeof *q);
    if (q) {
        q->toks = malloc(((size_t)n_prompt + (size_t)r->p.max_tokens) * sizeof(int32_t));
        q->hashes = malloc((size_t)s->max_blocks * sizeof(uint64_t));
        q->smp = hearth_sampler_create(&r->p.sampling, s->n_vocab, &err);
    }
    if (!q || !q->toks || !q->hashes || !q->smp) {
        hearth_req_finish(r, HEARTH_FINISH_ERROR, q && !q->smp && err.code ? err.code : HEARTH_E_NOMEM,
                          q && !q->smp && err.code ? err.msg : "out of memory", 0, 0, t0, 0);
        hearth_req_unref(r);
        if (q) {
            hearth_sampler_destroy(q->smp);
            free(q->toks);
            free(q->hashes);
            free(q);
        }
        return NULL;
    }
    q->r = r;
    q->cx = r->p.constraint;
    r->p.constraint = NULL;
    memcpy(q->toks, r->prompt, (size_t)n_prompt * sizeof(int32_t));
    q->n_toks = n_prompt;
    q->slot = -1;
    q->t0 = t0;
    q->k_next = s->p.n_draft;
    q->alpha = 0.6;
    return q;
}

void hearth_sched_add(hearth_sched *s, hearth_request *r) {
    hearth_request *f = r->fork_next;
    r->fork_next = NULL;
    seq *q = seq_new(s, r), **tail = q ? &q->forks : NULL;
    for (hearth_request *n; f; f = n) { /* the group's other choices (hearth_engine_submit_n) */
        n = f->fork_next;
        f->fork_next = NULL;
        seq *c = seq_new(s, f);
        if (!c) continue;
        if (!q) { /* the first could not run: each goes on its own */
            wait_push_back(s, c);
            continue;
        }
        *tail = c;
        tail = &c->fork_next;
        s->n_forks++;
    }
    if (q) wait_push_back(s, q);
}

bool hearth_sched_idle(const hearth_sched *s) { return s->n_run == 0 && s->n_wait == 0; }

static void cancel_with_forks(seq *q) {
    for (seq *c = q; c; c = c == q ? q->forks : c->fork_next) atomic_store(&c->r->cancelled, true);
}

void hearth_sched_cancel_all(hearth_sched *s) {
    for (int32_t i = 0; i < s->n_run; i++) cancel_with_forks(s->run[i]);
    for (seq *q = s->wait_head; q; q = q->next) cancel_with_forks(q);
}


static void run_remove(hearth_sched *s, int32_t i) {
    memmove(s->run + i, s->run + i + 1, (size_t)(s->n_run - i - 1) * sizeof *s->run);
    s->n_run--;
}

/* Free blocks, evicting cached ones first; true when `need` are free. */
static bool make_room(hearth_sched *s, int32_t need) {
    if (hearth_kv_pool_n_free(s->pool) < need && s->pc) hearth_prefix_cache_evict(s->pc, need);
    return hearth_kv_pool_n_free(s->pool) >= need;
}

/* Preempt the youngest running sequence (recompute later). */
static seq *preempt_youngest(hearth_sched *s) {
    seq *v = s->run[s->n_run - 1];
    s->n_run--;
    release_blocks(s, v);
    wait_push_front(s, v);
    s->st.preemptions++;
    hearth_log(HEARTH_LOG_DEBUG, "engine: preempted a sequence at %d tokens", v->n_toks);
    return v;
}

/* The root of a sequence's block hashes (prefix_cache.h): 0 for the base model, a value of its
 * adapter's id otherwise, so two adapters (or an adapter and none) never share KV. */
static uint64_t lora_root(const seq *q) {
    uint64_t id = q->r->p.lora ? q->r->p.lora_id : 0;
    return id ? (id * 0x9e3779b97f4a7c15ull) ^ 0x4c6f526141646170ull : 0;
}

/* The image of q holding position i (and its row there), or NULL. */
static const hearth_image_input *image_at(const seq *q, int32_t i, int32_t *row) {
    const hearth_request_params *p = &q->r->p;
    for (int32_t k = 0; k < p->n_images && p->images[k].pos <= i; k++)
        if (i < p->images[k].pos + p->images[k].n) {
            *row = i - p->images[k].pos;
            return &p->images[k];
        }
    return NULL;
}

/* What the prefix cache keys position i of q by: its token, or for an image's soft token (whose
 * id every image shares) a negative value (no token's) mixed from the image's digest and the
 * row, so that two images never match. */
static int32_t key_at(const seq *q, int32_t i) {
    int32_t row;
    const hearth_image_input *im = image_at(q, i, &row);
    if (!im) return q->toks[i];
    uint64_t h = im->digest ^ ((uint64_t)row + 1) * 0x9e3779b97f4a7c15ull; /* splitmix64's finalizer */
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    h ^= h >> 31;
    return (int32_t)(-1 - (int64_t)(h & 0x7fffffff));
}

/* The keys of q's positions [from, from + n) into out (q's own tokens when it has no image). */
static const int32_t *keys_of(const seq *q, int32_t from, int32_t n, int32_t *out) {
    if (q->r->p.n_images == 0) return q->toks + from;
    for (int32_t i = 0; i < n; i++) out[i] = key_at(q, from + i);
    return out;
}

/* A prefill chunk of `take` tokens from q->n_done, cut so that it does not end inside an image:
 * before the image when it starts later, else 0 (the image waits for a step with room for the
 * rest of it). */
static int32_t image_cut(const seq *q, int32_t take) {
    const hearth_request_params *p = &q->r->p;
    int32_t end = q->n_done + take;
    for (int32_t k = 0; k < p->n_images; k++) {
        const hearth_image_input *im = &p->images[k];
        if (im->pos < end && end < im->pos + im->n) return im->pos > q->n_done ? im->pos - q->n_done : 0;
    }
    return take;
}

/* Take the longest cached prefix for a sequence getting a slot (never its last known token,
 * whose logits must be computed). */
static void take_prefix(hearth_sched *s, seq *q) {
    if (!s->pc) return;
    int32_t max = (q->n_toks - 1) / s->bs;
    if (q->r->p.score_from > 0 && (q->r->p.score_from - 1) / s->bs < max) /* scored rows are computed */
        max = (q->r->p.score_from - 1) / s->bs;
    int32_t *keys = q->r->p.n_images ? malloc(((size_t)max * (size_t)s->bs + 1) * sizeof(int32_t)) : NULL;
    if (q->r->p.n_images && !keys) return; /* no memory: no prefix taken (the prefill computes it all) */
    int32_t n = hearth_prefix_cache_match_root(s->pc, lora_root(q), keys_of(q, 0, max * s->bs, keys), max, q->slot,
                                               q->hashes);
    free(keys);
    if (s->snaps) { /* the states as they stood at the cut; a snapshot where the cached chain ended */
        int32_t chain = hearth_prefix_cache_chain(s->pc);
        q->branch = chain > n ? chain * s->bs : 0;
        if (n > 0) {
            int32_t id = hearth_prefix_cache_snap_of(s->pc, hearth_kv_pool_row(s->pool, 0, q->slot)[n - 1]);
            HEARTH_ASSERT(id >= 0 && hearth_kv_pool_snap_len(s->pool, id) == n * s->bs);
            hearth_kv_pool_snap_restore(s->pool, q->slot, id);
        }
    }
    q->n_done = q->n_hashed = n;
    q->n_done *= s->bs;
    if (!q->started) q->n_cached = q->n_done; /* a resumed sequence hits its own blocks: no prompt hit */
}

/* Index the sequence's newly completed full blocks (every group's block that is still held). */
static void index_blocks(hearth_sched *s, seq *q) {
    if (!s->pc) return;
    int32_t n_groups = hearth_kv_pool_n_groups(s->pool);
    for (int32_t i = q->n_hashed; (i + 1) * s->bs <= q->n_done; i++) {
        uint64_t parent = i > 0 ? q->hashes[i - 1] : lora_root(q);
        const int32_t *t = keys_of(q, i * s->bs, s->bs, s->key_buf);
        q->hashes[i] = hearth_prefix_hash(parent, t, s->bs);
        for (int32_t g = 0; g < n_groups; g++) {
            int32_t b = hearth_kv_pool_row(s->pool, g, q->slot)[i];
            if (b >= 0) hearth_prefix_cache_insert(s->pc, g, q->hashes[i], parent, t, b);
        }
        q->n_hashed = i + 1;
    }
}

/* Hand back the window groups' blocks that the sequence's next query no longer reads. */
static void release_window(hearth_sched *s, seq *q) {
    for (int32_t g = hearth_kv_pool_layout(s->pool)->n_full; g < hearth_kv_pool_n_groups(s->pool); g++) {
        int32_t first = hearth_kv_pool_first_needed(s->pool, g, q->n_done);
        while (hearth_kv_pool_seq_dead(s->pool, g, q->slot) < first)
            give_back(s, hearth_kv_pool_seq_take(s->pool, g, q->slot));
    }
}

/* Does position pos of q score the prompt token after it? */
static bool scores_at(const seq *q, int32_t pos) {
    int32_t from = q->r->p.score_from;
    return from > 0 && pos >= from - 1 && pos <= (int32_t)q->r->p.n_prompt - 2;
}

/* Does q keep a state snapshot at position p (a block boundary)? The last full block before its
 * last known token (where a request with the same prompt resumes), where its prefix hit's
 * cached chain ended (the branch point of another sequence sharing the prefix), and blocks
 * 1, 2, 4, 8, ... (a shared prefix of any length hits at least half of it): at most
 * log2(blocks) + 3 per sequence. */
static bool want_snap(const hearth_sched *s, const seq *q, int32_t p) {
    int32_t nb = p / s->bs;
    return p == (q->n_toks - 1) / s->bs * s->bs || p == q->branch || (nb & (nb - 1)) == 0;
}

/* The snapshots q takes in this step, whose tokens start at batch index n0 (hybrid models). */
static void plan_snaps(hearth_sched *s, seq *q, int32_t n0, int32_t take) {
    if (!s->snaps) return;
    for (int32_t p = (q->n_done / s->bs + 1) * s->bs; p <= q->n_done + take && p <= q->n_toks; p += s->bs) {
        if (!want_snap(s, q, p) || s->n_snap == s->p.max_step) continue;
        int32_t id = hearth_prefix_cache_snap_alloc(s->pc, p);
        if (id < 0) return; /* none to spare: this boundary ends no hit */
        int32_t k = s->n_snap++;
        s->snap_at[k] = n0 + p - q->n_done - 1;
        s->snap_to[k] = hearth_kv_pool_snap_row(s->pool, id);
        s->snap_id[k] = id;
        s->snap_slot[k] = q->slot;
        s->snap_pos[k] = p;
    }
}

/* After the step that filled them (and index_blocks): q's snapshots go with their cached blocks,
 * or back to the pool (ok false: the step failed). */
static void keep_snaps(hearth_sched *s, seq *q, bool ok) {
    for (int32_t k = 0; k < s->n_snap; k++) {
        if (s->snap_id[k] < 0 || s->snap_slot[k] != q->slot) continue;
        int32_t i = s->snap_pos[k] / s->bs - 1, id = s->snap_id[k];
        s->snap_id[k] = -1;
        if (ok && i < q->n_hashed &&
            hearth_prefix_cache_attach_snap(s->pc, q->hashes[i], i > 0 ? q->hashes[i - 1] : lora_root(q),
                                            q->toks + (size_t)i * (size_t)s->bs, id))
            continue;
        hearth_kv_pool_snap_free(s->pool, id);
    }
}

/* Append q's next `take` tokens to the step. */
static int32_t pack(hearth_sched *s, seq *q, int32_t n, int32_t take) {
    q->score_rows = 0;
    for (int32_t i = 0; i < take; i++, n++) {
        int32_t pos = q->n_done + i;
        s->tok[n] = q->toks[pos];
        s->pos[n] = pos;
        s->sq[n] = q->slot;
        bool score = scores_at(q, pos);
        s->want[n] = pos >= q->n_toks - 1 || score; /* the last known token and the drafts after it */
        s->lora[n] = q->r->p.lora;
        s->step_lora += q->r->p.lora != NULL;
        int32_t row;
        const hearth_image_input *im = q->r->p.n_images ? image_at(q, pos, &row) : NULL;
        s->embd[n] = im ? im->rows + (size_t)row * (size_t)im->width : NULL;
        s->pos_end[n] = im ? im->pos + im->n - 1 : pos;
        s->step_img += im != NULL;
        q->score_rows += score;
        s->step_rows += s->want[n];
    }
    q->take = take;
    plan_snaps(s, q, n - take, take);
    return n;
}

/* log p(tok) of a logits row: the log-softmax in double (the maximum taken first). */
static double row_logprob(const float *lg, int32_t n_vocab, int32_t tok) {
    float mx = lg[0];
    for (int32_t i = 1; i < n_vocab; i++) mx = lg[i] > mx ? lg[i] : mx;
    double sum = 0;
    for (int32_t i = 0; i < n_vocab; i++) sum += exp((double)lg[i] - (double)mx);
    return (double)lg[tok] - (double)mx - log(sum);
}

/* q's score rows of this step (rows[0..score_rows), from position p0 on) into its scores. */
static void score(hearth_sched *s, seq *q, int32_t p0, const float *rows) {
    int32_t from = q->r->p.score_from, pos = p0 > from - 1 ? p0 : from - 1;
    for (int32_t k = 0; k < q->score_rows; k++, pos++)
        q->r->scores[pos + 1 - from] = row_logprob(rows + (size_t)k * (size_t)s->n_vocab, s->n_vocab, q->toks[pos + 1]);
}

/* Room in the logits buffer for the step's rows; false on OOM. */
static bool logits_room(hearth_sched *s) {
    if (s->step_rows <= s->lg_rows) return true;
    float *lg = realloc(s->logits, (size_t)s->step_rows * (size_t)s->n_vocab * sizeof(float));
    if (!lg) return false;
    s->logits = lg;
    int32_t *ids = realloc(s->ids, (size_t)s->step_rows * sizeof(int32_t));
    if (!ids) return false;
    s->ids = ids;
    s->lg_rows = s->step_rows;
    return true;
}

/* Take t as q's next token (sampled from its logits row, or the device's argmax; logits is the
 * row, read for logprobs, or tm its summary when the backend sampled); false when q is finished
 * (and freed). */
static bool advance(hearth_sched *s, seq *q, int32_t t, const float *logits, const hearth_topm *tm) {
    const hearth_tok *tk = hearth_model_tok(s->m);
    if (!q->t_first) q->t_first = hearth_now_mono_ms();
    if (t < 0) { /* a constraint that no token satisfies (the grammar needs a byte no token has) */
        end(s, q, HEARTH_FINISH_ERROR, HEARTH_E_INVALID, "no token satisfies the output constraint here");
        return false;
    }
    if (!q->r->p.ignore_eog && hearth_tok_is_eog(tk, t)) {
        end(s, q, HEARTH_FINISH_STOP, HEARTH_OK, NULL);
        return false;
    }
    if (q->cx && !hearth_cx_matcher_accept(q->cx, t)) { /* only a token the sampler did not pick */
        end(s, q, HEARTH_FINISH_ERROR, HEARTH_E_INVALID, "no token satisfies the output constraint here");
        return false;
    }
    hearth_sampler_accept(q->smp, t);
    hearth_token_logprobs lp; /* opt-in per request: a pass over the vocab */
    if (q->r->p.logprobs && tm) hearth_sampler_logprobs_topm(tm, t, q->r->p.top_logprobs, &lp);
    else if (q->r->p.logprobs) hearth_sampler_logprobs(logits, s->n_vocab, t, q->r->p.top_logprobs, &lp);
    if (!hearth_req_token(q->r, t, q->n_cached, q->r->p.logprobs ? &lp : NULL)) {
        end(s, q, HEARTH_FINISH_ERROR, HEARTH_E_NOMEM, "out of memory queueing a token");
        return false;
    }
    q->toks[q->n_toks++] = t;
    if (++q->n_gen >= q->r->p.max_tokens) {
        end(s, q, HEARTH_FINISH_LENGTH, HEARTH_OK, NULL);
        return false;
    }
    return true;
}

static void reap_cancelled(hearth_sched *s) {
    for (int32_t i = 0; i < s->n_run;) {
        seq *q = s->run[i];
        if (hearth_req_cancelled(q->r)) {
            run_remove(s, i);
            end(s, q, HEARTH_FINISH_CANCELLED, HEARTH_E_CANCELLED, "cancelled");
        } else i++;
    }
    seq **link = &s->wait_head, *last = NULL;
    while (*link) {
        seq *q = *link;
        if (hearth_req_cancelled(q->r)) {
            *link = q->next;
            s->n_wait--;
            end(s, q, HEARTH_FINISH_CANCELLED, HEARTH_E_CANCELLED, "cancelled");
        } else {
            last = q;
            link = &q->next;
        }
    }
    s->wait_tail = last;
}

static void publish(hearth_sched *s) {
    s->st.running = s->n_run;
    s->st.waiting = s->n_wait + s->n_forks;
    s->st.blocks_free = hearth_kv_pool_n_free(s->pool);
    s->st.blocks_cached = s->pc ? hearth_prefix_cache_n_cached(s->pc) : 0;
    s->st.blocks_evictable = s->pc ? hearth_prefix_cache_n_evictable(s->pc) : 0;
    s->st.cache_evictions = s->pc ? hearth_prefix_cache_evictions(s->pc) : 0;
}

const hearth_engine_stats *hearth_sched_stats(hearth_sched *s) {
    publish(s);
    return &s->st;
}

/* Start fork c where q stands at the end of its prefill (sched.c's head comment): a free slot,
 * q's blocks by reference but its last partial one copied, q's hashes. False (nothing taken)
 * when no slot or block is free. */
static bool fork_blocks(hearth_sched *s, seq *q, seq *c) {
    int32_t n_groups = hearth_kv_pool_n_groups(s->pool), part = q->n_done % s->bs, need = 0;
    if (s->n_free_slots == 0 || s->n_run >= s->p.batch) return false;
    for (int32_t g = 0; g < n_groups && part; g++) {
        int32_t nb = hearth_kv_pool_seq_blocks(s->pool, g, q->slot);
        need += nb > 0 && hearth_kv_pool_row(s->pool, g, q->slot)[nb - 1] >= 0;
    }
    if (!make_room(s, need)) return false;
    c->slot = s->free_slots[--s->n_free_slots];
    for (int32_t g = 0; g < n_groups; g++) {
        const int32_t *row = hearth_kv_pool_row(s->pool, g, q->slot);
        int32_t nb = hearth_kv_pool_seq_blocks(s->pool, g, q->slot);
        for (int32_t i = 0; i < nb; i++) {
            int32_t b = row[i];
            if (b >= 0 && part && i == nb - 1) { /* the partial block: c writes its own copy */
                int32_t copy = hearth_kv_pool_alloc(s->pool);
                HEARTH_ASSERT(copy >= 0); /* make_room freed it */
                hearth_kv_pool_copy_block(s->pool, copy, b, part);
                b = copy;
            } else if (b >= 0) {
                hearth_kv_pool_ref(s->pool, b);
            }
            bool ok = hearth_kv_pool_seq_push(s->pool, g, c->slot, b);
            HEARTH_ASSERT(ok); /* c's row is as long as q's */
        }
    }
    memcpy(c->hashes, q->hashes, (size_t)q->n_hashed * sizeof *c->hashes);
    c->n_hashed = q->n_hashed;
    c->n_done = q->n_done;
    c->n_cached = q->n_cached; /* the prompt is counted once: as the first choice found it */
    c->started = true;
    hearth_kv_pool_copy_state(s->pool, c->slot, q->slot); /* a hybrid model's states, where q stands */
    atomic_store_explicit(&c->r->admitted, true, memory_order_relaxed);
    return true;
}

/* q's prefill just ended with logits lg: start its forks from it (in the run list, each with
 * its first token drawn), or queue them on their own. lg is left as it came. */
static void fork_choices(hearth_sched *s, seq *q, float *lg) {
    size_t bytes = (size_t)s->n_vocab * sizeof(float);
    memcpy(s->lg_fork, lg, bytes);
    seq *c, *queued = NULL, **qt = &queued;
    while ((c = q->forks)) {
        q->forks = c->fork_next;
        c->fork_next = NULL;
        s->n_forks--;
        if (hearth_req_cancelled(c->r)) {
            end(s, c, HEARTH_FINISH_CANCELLED, HEARTH_E_CANCELLED, "cancelled");
            continue;
        }
        if (!fork_blocks(s, q, c)) {
            *qt = c;
            qt = &c->fork_next;
            continue;
        }
        release_window(s, c);
        memcpy(lg, s->lg_fork, bytes); /* sampling shapes the logits in place */
        if (c->n_gen < c->r->p.min_tokens) /* end of generation not allowed yet */
            for (int32_t k = 0; k < s->n_eog; k++) lg[s->eog[k]] = -INFINITY;
        int32_t pick = c->cx ? hearth_sampler_sample_constrained(c->smp, lg, c->cx) : hearth_sampler_sample(c->smp, lg);
        if (advance(s, c, pick, lg, NULL)) s->run[s->n_run++] = c;
    }
    memcpy(lg, s->lg_fork, bytes);
    q->forks = queued; /* unfork queues them at the front, in order */
    for (seq *k = queued; k; k = k->fork_next) s->n_forks++;
    unfork(s, q);
}

enum { FIT_MIN_STEPS = 8 };
#define FIT_DECAY 0.97

/* Record a step of n tokens that took ms. */
static void cost_record(hearth_sched *s, int32_t n, double ms) {
    s->fit_w = s->fit_w * FIT_DECAY + 1;
    s->fit_n = s->fit_n * FIT_DECAY + n;
    s->fit_t = s->fit_t * FIT_DECAY + ms;
    s->fit_nn = s->fit_nn * FIT_DECAY + (double)n * n;
    s->fit_nt = s->fit_nt * FIT_DECAY + (double)n * ms;
    s->fit_steps++;
}

/* The fitted step cost c0 + c1 * tokens; false until enough steps of different sizes ran. */
static bool cost_model(const hearth_sched *s, double *c0, double *c1) {
    if (s->fit_steps < FIT_MIN_STEPS) return false;
    double mn = s->fit_n / s->fit_w, mt = s->fit_t / s->fit_w, var = s->fit_nn / s->fit_w - mn * mn;
    if (var < 0.25) return false; /* all steps of one size: the split is unknown */
    *c1 = (s->fit_nt / s->fit_w - mn * mt) / var;
    if (*c1 < 0) *c1 = 0;
    *c0 = mt - *c1 * mn;
    if (*c0 < 0) *c0 = 0;
    return true;
}

/* Drafts q may carry this step (0: none): a decoding sequence that may speculate, at most what
 * max_tokens and the context leave after the token the round makes in any case. */
static int32_t draft_room(const hearth_sched *s, const seq *q) {
    if (!s->p.draft || q->r->p.no_spec || q->r->p.score_from > 0 || q->forks || q->n_toks - q->n_done != 1) return 0;
    int32_t k = s->p.draft_fixed ? s->p.n_draft : q->k_next;
    int32_t left = q->r->p.max_tokens - q->n_gen - 1; /* also keeps the drafts inside toks */
    if (k > left) k = left;
    if (k > s->p.n_ctx - q->n_toks) k = s->p.n_ctx - q->n_toks;
    return k > 0 ? k : 0;
}

/* Ask the draft source for every running sequence's drafts (one call), into toks[n_toks ..). */
static void propose(hearth_sched *s) {
    int32_t n = 0;
    for (int32_t i = 0; i < s->n_run; i++) {
        seq *q = s->run[i];
        q->k = 0;
        q->q_set = false;
        int32_t k = draft_room(s, q);
        if (k == 0) continue;
        if (q->backoff > 0) { /* recent rounds accepted nothing: decode plainly for a while */
            q->backoff--;
            continue;
        }
        double c0, c1;
        if (!s->p.draft_fixed && s->p.draft_costed && cost_model(s, &c0, &c1)) { /* as far as it pays */
            int32_t best = hearth_spec_best_k(q->alpha, c0 / s->n_run, c1, s->draft_ms, s->p.n_draft);
            if (best == 0 && ++q->skipped >= 16) best = 1; /* one round in 16 drafts, to keep alpha fresh */
            if (best == 0) continue;
            if (best < k) k = best;
        }
        bool want_q = !q->cx && q->r->p.sampling.temperature > 0;
        if (want_q && !q->q) q->q = malloc((size_t)s->p.n_draft * (size_t)s->n_vocab * sizeof(float));
        s->jobs[n] = (hearth_draft_job){.slot = q->slot, .toks = q->toks, .n_toks = q->n_toks, .k = k,
                                        .sp = &q->r->p.sampling,
                                        .seed = q->r->p.sampling.seed ^ ((uint64_t)q->n_toks * 0x9e3779b97f4a7c15ull),
                                        .draft = q->toks + q->n_toks, .q = want_q ? q->q : NULL};
        s->job_seq[n++] = q;
    }
    if (n == 0) return;
    double t0 = hearth_now_mono_ms();
    s->p.draft->propose(s->p.draft, s->jobs, n);
    int32_t asked = 0;
    for (int32_t j = 0; j < n; j++) asked += s->jobs[j].k;
    s->draft_ms = 0.9 * s->draft_ms + 0.1 * (hearth_now_mono_ms() - t0) / asked;
    for (int32_t j = 0; j < n; j++) {
        const hearth_draft_job *jb = &s->jobs[j];
        seq *q = s->job_seq[j];
        int32_t k = jb->n < 0 ? 0 : jb->n > jb->k ? jb->k : jb->n;
        for (int32_t i = 0; i < k; i++) /* a source's token outside the vocabulary ends the run */
            if (jb->draft[i] < 0 || jb->draft[i] >= s->n_vocab) k = i;
        q->k = k;
        q->q_set = k > 0 && jb->q && jb->q_set;
    }
}

/* After a round that verified k drafts and accepted a: the next round's size (one more than
 * accepted; doubling while all are), and a pause that doubles (to 8 rounds) while rounds
 * accept nothing, so that speculation that does not pay costs little. */
static void adapt(const hearth_sched *s, seq *q, int32_t k, int32_t a) {
    if (s->p.draft_fixed) return;
    q->alpha = 0.8 * q->alpha + 0.2 * (double)a / (double)k;
    q->skipped = 0;
    int32_t next = a == k ? 2 * k : a + 1;
    q->k_next = next > s->p.n_draft ? s->p.n_draft : next;
    if (a > 0) q->missed = 0;
    else q->missed = q->missed ? (q->missed < 8 ? 2 * q->missed : 8) : 1;
    q->backoff = a > 0 ? 0 : q->missed;
}

/* Hand back q's blocks past the one its next token goes to: the drafts' rows beyond what was
 * committed (never indexed: the prefix cache stops at n_done). */
static void drop_draft_blocks(hearth_sched *s, seq *q) {
    int32_t keep = q->n_done / s->bs + 1;
    for (int32_t g = 0; g < hearth_kv_pool_n_groups(s->pool); g++)
        while (hearth_kv_pool_seq_blocks(s->pool, g, q->slot) > keep) {
            int32_t b = hearth_kv_pool_seq_pop(s->pool, g, q->slot);
            if (b < 0) break;
            give_back(s, b);
        }
}

/* Can every row of the packed step be sampled on the backend (sampler.h's topm)? Then each out
 * row's request and edits are filled in (a DRAW sampler draws its uniform now). Rows that score prompt
 * tokens, verify drafts, start forks, follow a constraint or hold back the end of generation
 * need their logits. */
static bool use_topm(hearth_sched *s, hearth_backend *be) {
    if (s->p.topm < 0 || !be || !hearth_backend_has_topm(be) || (s->p.topm == 0 && hearth_backend_host_memory(be)))
        return false;
    int32_t rows = 0, max_ed = 0;
    for (int32_t i = 0; i < s->n_run; i++) {
        seq *q = s->run[i];
        if (!q->take) continue;
        if (q->score_rows || q->k) return false;
        if (q->n_done + q->take != q->n_toks) continue; /* mid-prompt: no row */
        if (q->cx || q->forks || q->n_gen < q->r->p.min_tokens || hearth_sampler_topm_mode(q->smp) == HEARTH_TOPM_OFF)
            return false;
        rows++;
        max_ed += hearth_sampler_topm_edits_max(q->smp);
    }
    if (rows == 0) return false;
    if (max_ed > s->cap_ed) {
        hearth_topm_edit *g = realloc(s->topm_ed, (size_t)max_ed * 2 * sizeof *g);
        if (!g) return false;
        s->topm_ed = g;
        s->cap_ed = max_ed * 2;
    }
    if (!s->topm) {
        s->topm_rq = malloc((size_t)s->p.batch * sizeof *s->topm_rq);
        s->topm = malloc((size_t)s->p.batch * sizeof *s->topm);
        if (!s->topm_rq || !s->topm) {
            free(s->topm_rq);
            free(s->topm);
            s->topm_rq = NULL;
            s->topm = NULL;
            return false;
        }
    }
    s->n_ed = 0;
    for (int32_t i = 0, r = 0; i < s->n_run; i++) {
        seq *q = s->run[i];
        if (!q->take || q->n_done + q->take != q->n_toks) continue;
        hearth_topm_req *rq = &s->topm_rq[r++];
        hearth_sampler_topm_req(q->smp, rq);
        rq->edit0 = s->n_ed;
        rq->n_edit = hearth_sampler_topm_edits(q->smp, s->topm_ed + s->n_ed);
        s->n_ed += rq->n_edit;
    }
    return true;
}

/* q fed its last known token and k drafts (toks[n_toks ..)); lg[0..k] are the target's logits
 * at those positions, the step's rows row0 .. row0 + k (ids: the device's argmax of each, or
 * NULL). Commit the accepted drafts and the target's token after the last one, roll back the
 * rest. False when q ended (and is freed). */
static bool verify_drafts(hearth_sched *s, seq *q, int32_t k, float *lg, const int32_t *ids, int32_t row0) {
    size_t nv = (size_t)s->n_vocab;
    int32_t a = 0;
    q->r->n_drafted += k;
    s->st.spec_drafted += k;
    s->st.spec_rounds++;
    for (int32_t j = 0; j <= k; j++) {
        float *row = lg + (size_t)j * nv;
        int32_t d = j < k ? q->toks[q->n_toks] : -1, pick = ids ? ids[j] : -1;
        if (pick < 0) {
            if (q->n_gen < q->r->p.min_tokens) /* end of generation not allowed yet */
                for (int32_t e = 0; e < s->n_eog; e++) row[s->eog[e]] = -INFINITY;
            if (j < k) pick = hearth_sampler_verify(q->smp, row, q->cx, d, q->q_set ? q->q + (size_t)j * nv : NULL);
            else pick = q->cx ? hearth_sampler_sample_constrained(q->smp, row, q->cx) : hearth_sampler_sample(q->smp, row);
        }
        bool hit = j < k && pick == d;
        if (hit) {
            q->r->n_accepted++;
            s->st.spec_accepted++;
            a++;
        }
        if (!advance(s, q, pick, row, NULL)) return false;
        if (!hit) break;
        q->n_done++; /* the draft's KV, written in this step, is the committed token's */
    }
    adapt(s, q, k, a);
    if (s->p.draft->produced) s->p.draft->produced(s->p.draft, q->slot, row0 + a, q->n_toks); /* row a made the last */
    drop_draft_blocks(s, q);
    index_blocks(s, q);
    release_window(s, q);
    return true;
}

void hearth_sched_step(hearth_sched *s) {
    reap_cancelled(s);
    propose(s);
    int32_t budget = s->p.max_step, n = 0;
    s->n_snap = 0;
    s->step_rows = 0;
    s->step_lora = 0;
    s->step_img = 0;
    /* 1. running sequences, oldest first; the youngest give way when blocks run out */
    for (int32_t i = 0; i < s->n_run && budget > 0; i++) {
        seq *q = s->run[i];
        int32_t take = image_cut(q, q->n_toks - q->n_done < budget ? q->n_toks - q->n_done : budget);
        if (take == 0) continue; /* an image that needs more room than this step has left */
        int32_t need = hearth_kv_pool_seq_need(s->pool, q->slot, q->n_done + take);
        while (!make_room(s, need) && s->n_run - 1 > i) preempt_youngest(s);
        if (!make_room(s, need)) { /* q itself is the youngest: it waits */
            preempt_youngest(s);
            break;
        }
        int32_t k = q->k < budget - take ? q->k : budget - take; /* drafts: only where room is found */
        if (k > 0 && !make_room(s, hearth_kv_pool_seq_need(s->pool, q->slot, q->n_done + take + k))) k = 0;
        q->k = k;
        hearth_kv_pool_seq_reserve(s->pool, q->slot, q->n_done + take + k);
        n = pack(s, q, n, take + k);
        budget -= take + k;
    }
    /* 2. admit waiting requests in FIFO order while the batch, the budget and the pool allow */
    while (s->wait_head && s->n_run < s->p.batch && budget > 0) {
        seq *q = s->wait_head;
        q->slot = s->free_slots[--s->n_free_slots];
        take_prefix(s, q);
        /* admit only if the whole known sequence fits now, so admission does not thrash */
        int32_t need_all = hearth_kv_pool_seq_need_peak(s->pool, q->slot, q->n_toks, s->p.max_step);
        if (!make_room(s, need_all)) {
            bool never = s->n_run == 0; /* even an idle pool cannot hold it */
            release_blocks(s, q);
            if (!never) break;
            wait_pop(s);
            char msg[160];
            snprintf(msg, sizeof msg, "the request needs %lld KV blocks of %d tokens; the pool holds %d",
                     (long long)hearth_kv_layout_blocks(hearth_kv_pool_layout(s->pool), s->bs, q->n_toks,
                                                        s->p.max_step),
                     s->bs, hearth_kv_pool_n_blocks(s->pool));
            end(s, q, HEARTH_FINISH_ERROR, HEARTH_E_LIMIT, msg);
            continue;
        }
        wait_pop(s);
        if (!q->started) {
            q->started = true;
            atomic_store_explicit(&q->r->admitted, true, memory_order_relaxed);
            s->st.cache_hit_tokens += q->n_cached;
            s->st.cache_query_tokens += q->n_toks;
            if (s->pc) *(q->n_cached > 0 ? &s->st.cache_hits : &s->st.cache_misses) += 1;
        }
        int32_t take = image_cut(q, q->n_toks - q->n_done < budget ? q->n_toks - q->n_done : budget);
        hearth_kv_pool_seq_reserve(s->pool, q->slot, q->n_done + take);
        n = pack(s, q, n, take);
        budget -= take;
        s->run[s->n_run++] = q;
    }
    if (n == 0) {
        publish(s);
        return;
    }
    hearth_batch b = {.n_tokens = n, .token = s->tok, .pos = s->pos, .seq = s->sq, .want_logits = s->want,
                      .lora = s->step_lora ? s->lora : NULL, .n_snap = s->n_snap, .snap_at = s->snap_at,
                      .snap_to = s->snap_to, .embd = s->step_img ? s->embd : NULL,
                      .pos_end = s->step_img ? s->pos_end : NULL};
    /* on a device backend, when every sequence that gets a token this step picks greedily, only
     * the picks leave the device */
    hearth_backend *be = hearth_fwd_backend(s->fwd);
    bool argmax = be && !hearth_backend_host_memory(be);
    for (int32_t i = 0; i < s->n_run && argmax; i++) {
        seq *q = s->run[i];
        if (q->take && q->score_rows) argmax = false; /* the scores need whole rows */
        if (q->take && q->n_done + q->take - q->k == q->n_toks &&
            (!hearth_sampler_is_argmax(q->smp) || q->r->p.logprobs || q->cx || q->n_gen < q->r->p.min_tokens ||
             q->forks))
            argmax = false;
    }
    bool topm = !argmax && use_topm(s, be);
    double t_step = hearth_now_mono_ms();
    hearth_status st = !logits_room(s) ? HEARTH_E_NOMEM
                       : argmax ? hearth_forward_argmax(s->fwd, &b, hearth_kv_pool_view(s->pool), s->logits, s->ids)
                       : topm   ? hearth_forward_topm(s->fwd, &b, hearth_kv_pool_view(s->pool), s->logits, s->topm_rq,
                                                      s->topm_ed, s->n_ed, s->topm)
                                : hearth_forward(s->fwd, &b, hearth_kv_pool_view(s->pool), s->logits);
    if (s->p.draft && !st) cost_record(s, n, hearth_now_mono_ms() - t_step);
    s->st.steps++;
    s->st.step_tokens += n;
    /* 3. advance every sequence of the step; rows of logits follow the packing order */
    int32_t row = 0;
    for (int32_t i = 0; i < s->n_run;) {
        seq *q = s->run[i];
        if (q->take == 0) {
            i++;
            continue;
        }
        int32_t p0 = q->n_done, k = q->k;
        q->n_done += q->take - k; /* the drafts' positions count once verified */
        q->take = 0;
        q->k = 0;
        bool out = q->n_done == q->n_toks;
        if (!st && q->score_rows) score(s, q, p0, s->logits + (size_t)row * (size_t)s->n_vocab);
        row += q->score_rows;
        float *lg = s->logits + (size_t)row * (size_t)s->n_vocab;
        const int32_t *ids = argmax && out ? s->ids + row : NULL;
        const hearth_topm *tm = topm && out ? s->topm + row : NULL;
        int32_t pick = ids ? ids[0] : -1, out_row = row;
        row += out ? 1 + k : 0;
        if (st) {
            char msg[160];
            snprintf(msg, sizeof msg, "forward pass failed: %s", hearth_status_str(st));
            run_remove(s, i);
            end(s, q, HEARTH_FINISH_ERROR, st, msg);
            continue;
        }
        if (k > 0) { /* a speculative round */
            if (verify_drafts(s, q, k, lg, ids, out_row)) i++;
            else run_remove(s, i);
            continue;
        }
        index_blocks(s, q);
        keep_snaps(s, q, true);
        if (out && q->forks) fork_choices(s, q, lg);
        release_window(s, q);
        if (q->r->p.progress && q->n_gen == 0 && !hearth_req_progress(q->r, q->n_done, q->n_cached)) {
            run_remove(s, i);
            end(s, q, HEARTH_FINISH_ERROR, HEARTH_E_NOMEM, "out of memory queueing an event");
            continue;
        }
        if (out && pick < 0 && q->n_gen < q->r->p.min_tokens) /* end of generation not allowed yet */
            for (int32_t e = 0; e < s->n_eog; e++) lg[s->eog[e]] = -INFINITY;
        if (tm && (pick = hearth_sampler_sample_topm(q->smp, tm)) == -2) { /* the summary falls short */
            hearth_forward_row(s->fwd, out_row, lg); /* bias and penalties applied there */
            pick = hearth_sampler_sample_edited(q->smp, lg);
            tm = NULL;
            s->st.topm_short++;
        } else if (tm)
            s->st.topm_rows++;
        if (out && pick < 0)
            pick = q->cx ? hearth_sampler_sample_constrained(q->smp, lg, q->cx) : hearth_sampler_sample(q->smp, lg);
        if (out && !advance(s, q, pick, lg, tm)) {
            run_remove(s, i);
            continue;
        }
        if (out && s->p.draft && s->p.draft->produced) s->p.draft->produced(s->p.draft, q->slot, out_row, q->n_toks);
        i++;
    }
    for (int32_t k = 0; k < s->n_snap; k++) /* those of sequences that ended, or a failed step */
        if (s->snap_id[k] >= 0) hearth_kv_pool_snap_free(s->pool, s->snap_id[k]);
    s->n_snap = 0;
    publish(s);
}

bool hearth_sched_check(const hearth_sched *s) {
    if (!hearth_kv_pool_check(s->pool)) return false;
    int32_t nb = hearth_kv_pool_n_blocks(s->pool);
    int32_t *cnt = calloc((size_t)nb, sizeof(int32_t));
    if (!cnt) return false;
    for (int32_t g = 0; g < hearth_kv_pool_n_groups(s->pool); g++)
        for (int32_t slot = 0; slot < s->p.batch; slot++) {
            const int32_t *row = hearth_kv_pool_row(s->pool, g, slot);
            for (int32_t i = 0; i < hearth_kv_pool_seq_blocks(s->pool, g, slot); i++)
                if (row[i] >= 0) cnt[row[i]]++;
        }
    bool ok = true;
    for (int32_t b = 0; b < nb && ok; b++)
        ok = hearth_kv_pool_refs(s->pool, b) == cnt[b] + (s->pc && hearth_prefix_cache_holds(s->pc, b) ? 1 : 0);
    /* window groups hold no block that the sequence's next query does not read */
    for (int32_t i = 0; i < s->n_run && ok; i++)
        for (int32_t g = hearth_kv_pool_layout(s->pool)->n_full; g < hearth_kv_pool_n_groups(s->pool) && ok; g++)
            ok = hearth_kv_pool_seq_dead(s->pool, g, s->run[i]->slot) ==
                 hearth_kv_pool_first_needed(s->pool, g, s->run[i]->n_done);
    /* slots: each running sequence has one, the rest are free */
    ok = ok && s->n_free_slots + s->n_run == s->p.batch;
    /* snapshots: between steps each one is free or kept with one cached block */
    if (s->pc)
        ok = ok && hearth_kv_pool_n_snap_free(s->pool) + hearth_prefix_cache_n_snaps(s->pc) ==
                       hearth_kv_pool_n_snaps(s->pool);
    free(cnt);
    return ok;
}
