/*
 * test_sched_fake.c - the scheduler, KV pool and prefix cache under thousands of randomized
 * add / step / cancel sequences, with a scripted model instead of weights.
 *
 * The model (hearth_fwd_create_scripted) stores each token's id and position as its key row in
 * the paged cache, and the logits of a token are one-hot at a hash of every token id it reads
 * back through its block table (positions 0..pos, each row checked to hold its own position).
 * So a request's greedy output is a known function of its whole token history, and any block
 * handed to the wrong sequence, shared before it was complete, freed while in use, or lost by
 * preemption changes the tokens. After every step the test checks the pool's invariants (free
 * list sound, reference counts equal block-table references plus the cache's, free + used =
 * total); every finished request is compared with the script run directly; at idle no
 * sequence holds a block and evicting the cache frees the whole pool.
 * Some requests come as groups of choices (one prompt, hearth_engine_submit_n's fork): each
 * choice must give the script's tokens too, whether it forked off the first choice's KV or
 * was queued on its own; seeded choices must give what the same seed gives alone, and the
 * prompt must be computed once.
 * With speculative decoding (spec.h), a scripted draft source proposes runs of drafts that are
 * the script's tokens three times in four and random ones otherwise: every rejected draft's row
 * is written into the cache and must be rolled back (a stale row read later changes the tokens,
 * a block reserved for drafts and not handed back breaks the reference counts), and every
 * accepted one must land as the request's next token.
 * With an SSD tier under the prefix cache (ssd_tier.h) and a cache cap of a few blocks, evicted
 * blocks go to disk and come back through restores: a restored block holding another block's
 * rows changes the tokens (and the per-row position check) as any other misplaced block does.
 * With LoRA adapters (engine.h lora, lora_id), a request runs on one of two stand-in adapters or
 * none: the script writes the token's adapter into its key row and shifts the scripted token by
 * it, so a block shared across adapters (the prefix cache must key them apart) is a bad row.
 * As a hybrid model (hybrid), layer 0 is a linear-attention layer whose state per slot is a
 * running hash of the tokens fed and their count, copied to the snapshot rows the step asks for
 * (hearth_batch's snap_at / snap_to); every logits row checks that hash against the history it
 * reads back from the cache. A prefix hit that restores a stale snapshot (another position,
 * another sequence's, one freed and reused) or none is a bad row, and the forward's own check
 * refuses a state that does not stand where the sequence resumes.
 */
#include "support/kv.h"
#include "engine/prefix_cache.h"
#include "engine/request.h"
#include "engine/sched.h"
#include "engine/ssd_tier.h"
#include "lora/lora.h"
#include "model/model_internal.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { V = 61, N_CTX = 64, MAX_LIVE = 14 };

enum { N_ADAPTERS = 3 }; /* 0: none, then two stand-ins (the scripted forward never reads them) */

/* The scripted token after toks[0..n) on adapter ad. */
static int32_t next_on(const int32_t *toks, int32_t n, int32_t ad);

typedef struct {
    const hearth_model *m;
    const hearth_lora  *adapters[N_ADAPTERS]; /* [0] NULL */
    int32_t toks[N_CTX];
    int64_t bad;            /* rows that did not hold their own position (or token) */
    float   hot;            /* the logit of the scripted token (0: 1) */
    int32_t row_seq[256], row_pos[256]; /* the last step's logits rows: slot and position */
    int32_t n_rows;
    int64_t snaps_taken;    /* hybrid: snapshots the steps copied */
} script;

/* The hybrid script's state hash after token tok (24 bits: exact in a float). */
static float state_next(float h, int32_t tok) { return (float)(((uint32_t)h * 31u + (uint32_t)tok + 1u) & 0xffffffu); }

static int32_t next_of(const int32_t *toks, int32_t n) {
    uint64_t h = 1469598103934665603ull;
    for (int32_t i = 0; i < n; i++) h = (h ^ (uint64_t)(toks[i] + 1)) * 1099511628211ull;
    return (int32_t)(h % V);
}

static int32_t next_on(const int32_t *toks, int32_t n, int32_t ad) { return (next_of(toks, n) + 7 * ad) % V; }

/* The index of token t's adapter in sc->adapters. */
static int32_t adapter_of(const script *sc, const hearth_batch *b, int32_t t) {
    for (int32_t a = 1; b->lora && a < N_ADAPTERS; a++)
        if (b->lora[t] == sc->adapters[a]) return a;
    return 0;
}

/* The key row of position j in layer il (NULL when the table has no block there). */
static float *row_at(const hearth_kv_view *kv, int32_t il, int32_t seq, int32_t j) {
    hearth_kv_blocks bl = hearth_kv_view_blocks(kv, il);
    int32_t blk = bl.table[seq * bl.max_blocks + j / bl.block_size];
    if (blk < 0 || blk >= kv->n_blocks) return NULL;
    return (float *)kv->k[il] + ((int64_t)blk * bl.block_size + j % bl.block_size) * 2;
}

static hearth_status script_fwd(void *ctx, const hearth_batch *b, const hearth_kv_view *kv, float *logits) {
    script *sc = ctx;
    const hearth_hparams *hp = &sc->m->hp;
    float st_hash[256]; /* hybrid: each token's state hash after it */
    if (hp->lin_n_v > 0) { /* layer 0's states advance token by token; snapshots after the tokens asked */
        int64_t sf = hearth_hparams_lin_state_floats(hp);
        for (int32_t t = 0, k = 0; t < b->n_tokens; t++) {
            float *st = kv->lin_state[0] + (int64_t)b->seq[t] * sf;
            if (b->pos[t] == 0) st[0] = st[1] = 0;
            sc->bad += st[1] != (float)b->pos[t]; /* the state stands where the sequence resumes */
            st[0] = state_next(st[0], b->token[t]);
            st[1] = (float)(b->pos[t] + 1);
            if (t < 256) st_hash[t] = st[0];
            for (; k < b->n_snap && b->snap_at[k] == t; k++, sc->snaps_taken++)
                memcpy(kv->lin_state[0] + (int64_t)b->snap_to[k] * sf, st, (size_t)sf * sizeof(float));
        }
    }
    for (int32_t il = 0; il < hp->n_layer; il++) /* every layer stores first ... */
        for (int32_t t = 0; t < b->n_tokens; t++) {
            if (hearth_hparams_is_linear(hp, il)) break;
            float *row = row_at(kv, il, b->seq[t], b->pos[t]);
            row[0] = (float)(b->token[t] + 1000 * adapter_of(sc, b, t)); /* the adapter is in the KV */
            row[1] = (float)b->pos[t];
        }
    int32_t n_out = 0;
    sc->n_rows = 0;
    for (int32_t t = 0; t < b->n_tokens; t++) { /* ... then reads */
        if (!b->want_logits[t]) continue;
        /* the full layers read 0..pos: the history; the sliding ones their window, which must agree */
        for (int32_t il = hp->n_layer - 1; il >= 0; il--) {
            if (hearth_hparams_is_linear(hp, il)) continue;
            bool swa = hearth_hparams_is_swa(hp, il);
            int32_t j0 = swa && b->pos[t] >= hp->n_swa ? b->pos[t] - hp->n_swa + 1 : 0;
            for (int32_t j = j0; j <= b->pos[t]; j++) {
                const float *row = row_at(kv, il, b->seq[t], j);
                if (!row) {
                    sc->bad++;
                    sc->toks[j] = 0;
                    continue;
                }
                sc->bad += row[1] != (float)j;
                sc->bad += (int32_t)row[0] / 1000 != adapter_of(sc, b, t); /* KV of another adapter */
                if (!swa) sc->toks[j] = (int32_t)row[0] % 1000;
                else sc->bad += sc->toks[j] != (int32_t)row[0] % 1000;
            }
        }
        if (hp->lin_n_v > 0 && t < 256) { /* the state holds exactly the history the cache gives back */
            float h = 0;
            for (int32_t j = 0; j <= b->pos[t]; j++) h = state_next(h, sc->toks[j] % 1000);
            sc->bad += h != st_hash[t];
        }
        if (n_out < 256) {
            sc->row_seq[n_out] = b->seq[t];
            sc->row_pos[n_out] = b->pos[t];
        }
        sc->n_rows = n_out + 1;
        float *lg = logits + (int64_t)n_out++ * V;
        for (int32_t i = 0; i < V; i++) lg[i] = 0;
        lg[next_on(sc->toks, b->pos[t] + 1, adapter_of(sc, b, t))] = sc->hot > 0 ? sc->hot : 1;
    }
    return HEARTH_OK;
}

typedef struct {
    hearth_request *r;
    int32_t         all[N_CTX]; /* prompt, then the script's continuation */
    int32_t         n_prompt, max_tokens, n_got;
    int32_t         got[N_CTX];
} live;

/* Each run starts from this seed (rnd_reset), so that a test's requests do not depend on how many
 * numbers an earlier test drew: with the SSD tier that count depends on the writer's timing. */
#define RNG_SEED 0x2545f4914f6cdd1dull
static uint64_t rng = RNG_SEED;
static void     rnd_reset(void) { rng = RNG_SEED; }
static uint32_t rnd(uint32_t n) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

typedef struct {
    int32_t block_size, n_blocks, batch, max_step;
    int64_t cache_blocks; /* -1: no prefix cache */
    int32_t n_swa;        /* > 0: layers 0 and 1 of 3 slide over n_swa tokens (three layer groups) */
    bool    ssd;          /* an SSD tier (in a temporary directory) under the prefix cache */
    int32_t n_draft;      /* > 0: speculative decoding with the scripted draft source below */
    bool    draft_fixed;
    bool    adapters;     /* requests on adapter 0 (none), 1 or 2 at random */
    int32_t hybrid_snaps; /* > 0: layer 0 is a linear-attention layer, with this many state snapshots */
} config;

/* The scripted draft source: the script's continuation, each draft wrong one time in four. It
 * asks to be told which logits row made each sequence's newest token (produced, as the Gemma 4
 * assistant does to take that row's hidden state): the row must be of the sequence's slot at
 * the position before the token's, also after a round that accepted drafts. */
typedef struct {
    hearth_drafter base;
    const script  *sc;
    int64_t        jobs, releases, bad_slots, produced, bad_rows;
    bool           live[16];  /* slots seen since their last release */
} fake_drafter;

static void fake_produced(hearth_drafter *d, int32_t slot, int32_t row, int32_t n_toks) {
    fake_drafter *f = (fake_drafter *)d;
    f->produced++;
    f->bad_rows += row < 0 || row >= f->sc->n_rows || row >= 256 || f->sc->row_seq[row] != slot ||
                   f->sc->row_pos[row] != n_toks - 2;
}

static void fake_propose(hearth_drafter *d, hearth_draft_job *jobs, int32_t n_jobs) {
    fake_drafter *f = (fake_drafter *)d;
    for (int32_t j = 0; j < n_jobs; j++) {
        hearth_draft_job *jb = &jobs[j];
        int32_t hist[N_CTX * 2];
        memcpy(hist, jb->toks, (size_t)jb->n_toks * sizeof *hist);
        f->bad_slots += jb->slot < 0 || jb->slot >= 16;
        if (jb->slot >= 0 && jb->slot < 16) f->live[jb->slot] = true;
        jb->n = rnd(5) == 0 ? 0 : 1 + (int32_t)rnd((uint32_t)jb->k); /* now and then no proposal */
        for (int32_t i = 0; i < jb->n; i++) {
            int32_t t = rnd(4) == 0 ? (int32_t)rnd(V) : next_of(hist, jb->n_toks + i);
            hist[jb->n_toks + i] = jb->draft[i] = t;
        }
        jb->q_set = false;
        f->jobs++;
    }
}

static void fake_release(hearth_drafter *d, int32_t slot) {
    fake_drafter *f = (fake_drafter *)d;
    f->releases++;
    if (slot >= 0 && slot < 16) f->live[slot] = false;
}

static void fake_destroy(hearth_drafter *d) { (void)d; }

static hearth_model fake_model(int32_t n_swa, bool hybrid) {
    hearth_model m = {0};
    m.hp.n_layer = n_swa > 0 ? 3 : hybrid ? 2 : 1;
    if (hybrid) { /* layer 0 linear: a state of 4 floats per slot (hash, count, 2 unused) */
        m.hp.lin_n_k = m.hp.lin_n_v = m.hp.lin_k_dim = m.hp.lin_v_dim = 1;
        m.hp.lin_conv = 2;
        m.hp.lin_layer[0] = 1;
    }
    m.hp.n_swa = n_swa;
    m.hp.swa_pattern = 3;
    m.hp.n_head = m.hp.n_head_kv = 1;
    m.hp.head_dim = m.hp.head_dim_v = 2; /* K rows of 2 f32 values: token, position */
    m.hp.n_vocab = V;
    m.hp.n_ctx_train = N_CTX;
    return m;
}

/* Drain r's events; true when it is done (and checked). */
static bool drain(live *l, int64_t *n_done) {
    hearth_event ev;
    while (hearth_request_next(l->r, &ev, 0) == HEARTH_OK) {
        if (ev.kind == HEARTH_EV_TOKEN) {
            if (l->n_got < N_CTX) l->got[l->n_got] = ev.token;
            l->n_got++;
            continue;
        }
        CHECK(ev.finish == HEARTH_FINISH_LENGTH || ev.finish == HEARTH_FINISH_CANCELLED);
        if (ev.finish == HEARTH_FINISH_LENGTH) CHECK_EQ(l->n_got, l->max_tokens);
        CHECK(l->n_got <= l->max_tokens);
        int diff = 0;
        for (int32_t i = 0; i < l->n_got && i < N_CTX; i++) diff += l->got[i] != l->all[l->n_prompt + i];
        CHECK_EQ(diff, 0);
        CHECK(ev.n_cached >= 0 && ev.n_cached < l->n_prompt);
        hearth_req_unref(l->r);
        (*n_done)++;
        return true;
    }
    return false;
}

static void run_config(const config *c, int iters, hearth_engine_stats *out) {
    rnd_reset();
    hearth_model m = fake_model(c->n_swa, c->hybrid_snaps > 0);
    hearth_lora stand_in[N_ADAPTERS] = {{.n_layer = m.hp.n_layer}, {.n_layer = m.hp.n_layer}, {.n_layer = m.hp.n_layer}};
    for (int a = 0; a < N_ADAPTERS; a++) atomic_init(&stand_in[a].refs, 1); /* the test's: never freed */
    script sc = {.m = &m, .adapters = {NULL, &stand_in[1], &stand_in[2]}};
    hearth_fwd *fwd = hearth_fwd_create_scripted(&m, c->max_step, script_fwd, &sc);
    hearth_kv_pool *pool = NULL;
    hearth_err err;
    hearth_kv_layout lay = hearth_kv_layout_of(&m, false);
    hearth_kv_pool_params pp = {.budget_bytes = hearth_kv_layout_block_bytes(&lay, &m, HEARTH_KV_SCHEME_F32, c->block_size) *
                                                (size_t)c->n_blocks,
                                .block_size = c->block_size, .n_seqs = c->batch, .max_seq_len = N_CTX, .kv = HEARTH_KV_SCHEME_F32,
                                .n_snaps = c->hybrid_snaps};
    CHECK_EQ(hearth_kv_pool_create(&m, &pp, &pool, &err), HEARTH_OK);
    CHECK(fwd != NULL && pool != NULL);
    if (!fwd || !pool) return;
    CHECK_EQ(hearth_kv_pool_n_blocks(pool), c->n_blocks);
    size_t bb = hearth_kv_pool_block_bytes(pool);
    hearth_prefix_cache *pc = c->cache_blocks < 0 ? NULL : hearth_prefix_cache_create(pool, (size_t)c->cache_blocks * bb);
    hearth_ssd_tier *tier = NULL;
    char dir[256] = "";
    if (c->ssd && pc) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/hearth_sched_ssd_XXXXXX", tmp && *tmp ? tmp : "/tmp");
        CHECK(mkdtemp(dir) != NULL);
        hearth_ssd_tier_params tp = {.dir = dir, .max_bytes = (int64_t)(bb + 400) * 60, .model_id = "fake",
                                     .scheme = "f32", .block_tokens = c->block_size, .block_bytes = bb,
                                     .verify = true};
        CHECK_EQ(hearth_ssd_tier_open(&tp, &tier, &err), HEARTH_OK);
        hearth_prefix_cache_set_tier(pc, tier);
    }
    fake_drafter fd = {.base = {.kind = "fake", .n_vocab = V, .propose = fake_propose, .release = fake_release,
                                .produced = fake_produced, .destroy = fake_destroy},
                       .sc = &sc};
    hearth_sched_params sp = {.batch = c->batch, .max_step = c->max_step, .n_ctx = N_CTX,
                              .draft = c->n_draft > 0 ? &fd.base : NULL, .n_draft = c->n_draft,
                              .draft_fixed = c->draft_fixed};
    hearth_sched *s = hearth_sched_create(&m, fwd, pool, pc, &sp);
    CHECK(s != NULL);
    /* three shared stems, so prompts share prefixes of several blocks */
    int32_t stem[3][40];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 40; j++) stem[i][j] = (int32_t)rnd(V);
    live lv[MAX_LIVE];
    int n_live = 0;
    int64_t n_added = 0, n_done = 0, bad_checks = 0, bad_sum = 0, bad_window = 0, n_groups = 0;
    int32_t max_live = 0, window_blocks = (c->n_swa + 2 * c->block_size - 3) / c->block_size;
    for (int it = 0; it < iters || n_live > 0; it++) {
        bool adding = it < iters;
        if (adding && n_live < MAX_LIVE && rnd(3) != 0) { /* add */
            live *l = &lv[n_live];
            l->n_prompt = 1 + (int32_t)rnd(36);
            l->max_tokens = 1 + (int32_t)rnd(N_CTX - l->n_prompt < 24 ? (uint32_t)(N_CTX - l->n_prompt) : 24);
            int32_t k = (int32_t)rnd(3), shared = (int32_t)rnd((uint32_t)l->n_prompt + 1);
            int32_t ad = c->adapters ? (int32_t)rnd(N_ADAPTERS) : 0;
            for (int32_t i = 0; i < l->n_prompt; i++) l->all[i] = i < shared ? stem[k][i] : (int32_t)rnd(V);
            for (int32_t i = l->n_prompt; i < l->n_prompt + l->max_tokens; i++) l->all[i] = next_on(l->all, i, ad);
            l->n_got = 0;
            hearth_sampler_params smp = hearth_sampler_params_default();
            smp.temperature = 0;
            hearth_request_params rp = {.prompt = l->all, .n_prompt = (size_t)l->n_prompt,
                                        .max_tokens = l->max_tokens, .sampling = smp, .ignore_eog = true,
                                        .no_spec = rnd(5) == 0, .lora = sc.adapters[ad],
                                        .lora_id = (uint64_t)ad};
            l->r = hearth_req_create(&rp);
            CHECK(l->r != NULL);
            if (!l->r) break;
            n_live++;
            n_added++;
            /* a group of choices now and then: the same prompt, each its own max_tokens */
            int32_t n_choices = rnd(4) == 0 ? 2 + (int32_t)rnd(3) : 1;
            hearth_request *prev = l->r;
            for (int32_t ch = 1; ch < n_choices && n_live < MAX_LIVE; ch++) {
                live *f = &lv[n_live];
                *f = *l;
                f->max_tokens = 1 + (int32_t)rnd((uint32_t)l->max_tokens);
                rp.max_tokens = f->max_tokens;
                f->r = hearth_req_create(&rp);
                CHECK(f->r != NULL);
                if (!f->r) break;
                prev->fork_next = f->r;
                prev = f->r;
                n_live++;
                n_added++;
                n_groups++;
            }
            hearth_sched_add(s, l->r); /* the scheduler takes the second reference (of the group) */
        }
        if (adding && n_live > 0 && rnd(9) == 0) atomic_store(&lv[rnd((uint32_t)n_live)].r->cancelled, true);
        hearth_sched_step(s);
        if (tier) hearth_ssd_tier_drain(tier); /* every write done before the next step: the same run at any load */
        bad_checks += !hearth_sched_check(s);
        int32_t used = 0;
        for (int32_t b = 0; b < c->n_blocks; b++) used += hearth_kv_pool_refs(pool, b) > 0;
        bad_sum += used + hearth_kv_pool_n_free(pool) != c->n_blocks;
        /* between steps a window group's row holds only the blocks that the W - 1 keys before the
         * next query span: at most ceil((W - 1 + bs - 1) / bs) */
        for (int32_t g = lay.n_full; g < hearth_kv_pool_n_groups(pool); g++)
            for (int32_t slot = 0; slot < c->batch; slot++) {
                int32_t held = hearth_kv_pool_seq_blocks(pool, g, slot) - hearth_kv_pool_seq_dead(pool, g, slot);
                bad_window += held > window_blocks;
                max_live = held > max_live ? held : max_live;
            }
        for (int i = 0; i < n_live;)
            if (drain(&lv[i], &n_done)) lv[i] = lv[--n_live];
            else i++;
        if (it > iters + 100000) break; /* a hang: the checks below fail */
    }
    CHECK_EQ(bad_checks, 0);
    CHECK_EQ(bad_sum, 0);
    CHECK_EQ(bad_window, 0);
    if (c->n_swa > 0) CHECK_EQ(max_live, window_blocks); /* reached, never more */
    CHECK_EQ(sc.bad, 0);
    CHECK_EQ(n_live, 0);
    if (c->hybrid_snaps > 0) {
        fprintf(stderr, "  hybrid: %lld snapshots taken, %lld taken from evictable blocks, %d kept at idle\n",
                (long long)sc.snaps_taken, pc ? (long long)hearth_prefix_cache_snap_steals(pc) : 0LL,
                pc ? hearth_prefix_cache_n_snaps(pc) : 0);
        CHECK(sc.snaps_taken > 0);
    }
    CHECK_EQ(n_done, n_added);
    CHECK(hearth_sched_idle(s));
    /* idle: no sequence holds a block; only the cache's evictable blocks are not free */
    for (int32_t g = 0; g < hearth_kv_pool_n_groups(pool); g++)
        for (int32_t slot = 0; slot < c->batch; slot++) CHECK_EQ(hearth_kv_pool_seq_blocks(pool, g, slot), 0);
    int32_t evictable = pc ? hearth_prefix_cache_n_evictable(pc) : 0;
    CHECK_EQ(hearth_kv_pool_n_free(pool) + evictable, c->n_blocks);
    if (pc) {
        CHECK_EQ(hearth_prefix_cache_n_cached(pc), evictable);
        CHECK(evictable <= c->cache_blocks);
        hearth_prefix_cache_evict(pc, c->n_blocks);
    }
    CHECK_EQ(hearth_kv_pool_n_free(pool), c->n_blocks);
    CHECK_EQ(hearth_kv_pool_n_snap_free(pool), hearth_kv_pool_n_snaps(pool)); /* evicted with their blocks */
    *out = *hearth_sched_stats(s);
    if (c->n_draft > 0) { /* drafts were made, some rejected, and every slot was released at the end */
        fprintf(stderr, "  speculation: %lld rounds, %lld drafted, %lld accepted\n", (long long)out->spec_rounds,
                (long long)out->spec_drafted, (long long)out->spec_accepted);
        CHECK(out->spec_accepted > 0 && out->spec_drafted > out->spec_accepted);
        CHECK(out->spec_rounds > 0 && out->spec_rounds <= fd.jobs);
        CHECK_EQ(fd.bad_slots, 0);
        CHECK(fd.produced > 0);
        CHECK_EQ(fd.bad_rows, 0);
        for (int32_t i = 0; i < 16; i++) CHECK(!fd.live[i]);
    } else {
        CHECK_EQ(out->spec_drafted, 0);
    }
    fprintf(stderr, "  %lld requests (%lld forked choices), %lld steps, %lld preemptions, %lld cache hits, "
            "%lld evictions\n", (long long)n_added, (long long)n_groups, (long long)out->steps,
            (long long)out->preemptions, (long long)out->cache_hits, (long long)out->cache_evictions);
    CHECK(n_groups > 0);
    if (tier) {
        hearth_ssd_tier_stats ts;
        hearth_ssd_tier_drain(tier); /* the writer may lag on a busy machine: count what it was given */
        hearth_ssd_tier_stats_get(tier, &ts);
        fprintf(stderr, "  ssd: %lld writes, %lld restores, %lld files evicted past the cap\n", (long long)ts.writes,
                (long long)hearth_prefix_cache_restores(pc), (long long)ts.evictions);
        CHECK(hearth_prefix_cache_restores(pc) > 0);
        CHECK(ts.evictions > 0);
        CHECK_EQ(ts.verify_failures, 0);
    }
    hearth_sched_destroy(s);
    hearth_prefix_cache_destroy(pc);
    hearth_ssd_tier_close(tier);
    if (dir[0]) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK_EQ(system(cmd), 0);
    }
    hearth_kv_pool_destroy(pool);
    hearth_fwd_destroy(fwd);
}

static int iters(void) { return getenv("HEARTH_TEST_SANITIZED") ? 3000 : 20000; }

TEST(random_sequences_with_prefix_cache_and_preemption) {
    config c = {.block_size = 4, .n_blocks = 20, .batch = 6, .max_step = 16, .cache_blocks = 20};
    hearth_engine_stats st;
    run_config(&c, iters(), &st);
    CHECK(st.preemptions > 0);
    CHECK(st.cache_hits > 0 && st.cache_hit_tokens > 0);
    CHECK(st.cache_evictions > 0);
}

TEST(random_sequences_on_a_hybrid_model_restore_state_snapshots) {
    /* plenty of snapshots, then so few that new ones take those of evictable blocks */
    config a = {.block_size = 4, .n_blocks = 20, .batch = 6, .max_step = 16, .cache_blocks = 20, .hybrid_snaps = 40};
    config b = {.block_size = 3, .n_blocks = 30, .batch = 5, .max_step = 7, .cache_blocks = 12, .hybrid_snaps = 4,
                .adapters = true};
    hearth_engine_stats st;
    run_config(&a, iters(), &st);
    CHECK(st.preemptions > 0);
    CHECK(st.cache_hits > 0 && st.cache_hit_tokens > 0);
    CHECK(st.cache_evictions > 0);
    run_config(&b, iters() / 2, &st);
    CHECK(st.preemptions > 0);
    CHECK(st.cache_hits > 0);
}

TEST(random_sequences_with_adapters) {
    config c = {.block_size = 4, .n_blocks = 20, .batch = 6, .max_step = 16, .cache_blocks = 20, .adapters = true};
    hearth_engine_stats st;
    run_config(&c, iters(), &st);
    CHECK(st.preemptions > 0);
    CHECK(st.cache_hits > 0 && st.cache_hit_tokens > 0);
}

TEST(random_sequences_with_a_small_cache_cap) {
    config c = {.block_size = 8, .n_blocks = 14, .batch = 4, .max_step = 9, .cache_blocks = 3};
    hearth_engine_stats st;
    run_config(&c, iters() / 2, &st);
    CHECK(st.preemptions > 0);
    CHECK(st.cache_hits > 0);
}

TEST(random_sequences_without_prefix_cache) {
    config c = {.block_size = 1, .n_blocks = 70, .batch = 8, .max_step = 7, .cache_blocks = -1};
    hearth_engine_stats st;
    run_config(&c, iters() / 2, &st);
    CHECK(st.preemptions > 0);
    CHECK_EQ(st.cache_hits, 0);
}

TEST(random_sequences_with_sliding_window_groups) {
    /* 3 layers (2 sliding over 8 tokens, 1 full): 3 groups; windows of 3 blocks release the rest */
    config c = {.block_size = 4, .n_blocks = 48, .batch = 6, .max_step = 16, .cache_blocks = 40, .n_swa = 8};
    hearth_engine_stats st;
    run_config(&c, iters(), &st);
    CHECK(st.preemptions > 0);
    CHECK(st.cache_hits > 0 && st.cache_hit_tokens > 0);
    CHECK(st.cache_evictions > 0);
}

TEST(random_sequences_with_sliding_windows_across_block_edges) {
    config a = {.block_size = 3, .n_blocks = 40, .batch = 5, .max_step = 7, .cache_blocks = 12, .n_swa = 5};
    config b = {.block_size = 1, .n_blocks = 90, .batch = 8, .max_step = 5, .cache_blocks = -1, .n_swa = 6};
    hearth_engine_stats st;
    run_config(&a, iters() / 2, &st);
    CHECK(st.preemptions > 0);
    CHECK(st.cache_hits > 0);
    run_config(&b, iters() / 2, &st);
    CHECK(st.preemptions > 0);
}

TEST(random_sequences_with_an_ssd_tier) {
    config a = {.block_size = 4, .n_blocks = 20, .batch = 6, .max_step = 16, .cache_blocks = 3, .ssd = true};
    config b = {.block_size = 4, .n_blocks = 48, .batch = 6, .max_step = 16, .cache_blocks = 6, .n_swa = 8,
                .ssd = true};
    hearth_engine_stats st;
    run_config(&a, iters() / 4, &st);
    CHECK(st.preemptions > 0);
    CHECK(st.cache_hits > 0);
    run_config(&b, iters() / 4, &st);
    CHECK(st.cache_hits > 0);
}

TEST(random_sequences_with_speculative_drafts) {
    /* adaptive and fixed draft runs, with preemption, the prefix cache, small blocks and windows */
    config a = {.block_size = 4, .n_blocks = 20, .batch = 6, .max_step = 16, .cache_blocks = 20, .n_draft = 4};
    config b = {.block_size = 1, .n_blocks = 70, .batch = 8, .max_step = 7, .cache_blocks = -1, .n_draft = 5,
                .draft_fixed = true};
    config w = {.block_size = 4, .n_blocks = 48, .batch = 6, .max_step = 16, .cache_blocks = 40, .n_swa = 8,
                .n_draft = 6, .draft_fixed = true};
    config d = {.block_size = 4, .n_blocks = 20, .batch = 6, .max_step = 16, .cache_blocks = 3, .ssd = true,
                .n_draft = 3};
    hearth_engine_stats st;
    run_config(&a, iters() / 2, &st);
    CHECK(st.preemptions > 0);
    CHECK(st.cache_hits > 0);
    run_config(&b, iters() / 2, &st);
    CHECK(st.preemptions > 0);
    run_config(&w, iters() / 2, &st);
    CHECK(st.cache_hits > 0);
    run_config(&d, iters() / 4, &st);
    CHECK(st.cache_hits > 0);
}

/* Run one group of n choices of prompt (choice i samples with seed + i at temperature temp;
 * n == 1: a lone request with that seed) to the end on a fresh scheduler; toks[i] gets choice
 * i's tokens. Returns the scheduler's counters. */
enum { G_MAX = 4, G_TOKENS = 12 };
static hearth_engine_stats run_group(const config *c, const int32_t *prompt, int32_t n_prompt, int32_t n,
                                     float temp, uint64_t seed, int32_t toks[][G_TOKENS]) {
    hearth_engine_stats st = {0};
    hearth_model m = fake_model(c->n_swa, c->hybrid_snaps > 0);
    script sc = {.m = &m, .hot = 3};
    hearth_fwd *fwd = hearth_fwd_create_scripted(&m, c->max_step, script_fwd, &sc);
    hearth_kv_pool *pool = NULL;
    hearth_err err;
    hearth_kv_layout lay = hearth_kv_layout_of(&m, false);
    hearth_kv_pool_params pp = {.budget_bytes = hearth_kv_layout_block_bytes(&lay, &m, HEARTH_KV_SCHEME_F32, c->block_size) *
                                                (size_t)c->n_blocks,
                                .block_size = c->block_size, .n_seqs = c->batch, .max_seq_len = N_CTX, .kv = HEARTH_KV_SCHEME_F32};
    CHECK_EQ(hearth_kv_pool_create(&m, &pp, &pool, &err), HEARTH_OK);
    hearth_prefix_cache *pc = c->cache_blocks < 0 ? NULL
                              : hearth_prefix_cache_create(pool, (size_t)c->cache_blocks * hearth_kv_pool_block_bytes(pool));
    hearth_sched_params sp = {.batch = c->batch, .max_step = c->max_step, .n_ctx = N_CTX};
    hearth_sched *s = hearth_sched_create(&m, fwd, pool, pc, &sp);
    CHECK(s != NULL);
    hearth_request *r[G_MAX] = {0};
    for (int32_t i = 0; i < n; i++) {
        hearth_sampler_params smp = hearth_sampler_params_default();
        smp.temperature = temp;
        smp.seed = seed + (uint64_t)i;
        hearth_request_params rp = {.prompt = prompt, .n_prompt = (size_t)n_prompt, .max_tokens = G_TOKENS,
                                    .sampling = smp, .ignore_eog = true};
        r[i] = hearth_req_create(&rp);
        CHECK(r[i] != NULL);
        if (i > 0) r[i - 1]->fork_next = r[i];
    }
    hearth_sched_add(s, r[0]);
    int64_t bad_checks = 0;
    for (int it = 0; it < 1000 && !hearth_sched_idle(s); it++) {
        hearth_sched_step(s);
        bad_checks += !hearth_sched_check(s);
    }
    CHECK(hearth_sched_idle(s));
    CHECK_EQ(bad_checks, 0);
    CHECK_EQ(sc.bad, 0);
    for (int32_t i = 0; i < n; i++) {
        hearth_event ev;
        int32_t k = 0;
        while (hearth_request_next(r[i], &ev, 0) == HEARTH_OK && ev.kind == HEARTH_EV_TOKEN)
            if (k < G_TOKENS) toks[i][k++] = ev.token;
        CHECK_EQ(ev.kind, HEARTH_EV_DONE);
        CHECK_EQ(ev.finish, HEARTH_FINISH_LENGTH);
        CHECK_EQ(k, G_TOKENS);
        hearth_req_unref(r[i]);
    }
    st = *hearth_sched_stats(s);
    hearth_sched_destroy(s);
    if (pc) hearth_prefix_cache_evict(pc, c->n_blocks);
    CHECK_EQ(hearth_kv_pool_n_free(pool), c->n_blocks);
    hearth_prefix_cache_destroy(pc);
    hearth_kv_pool_destroy(pool);
    hearth_fwd_destroy(fwd);
    return st;
}

TEST(choices_prefill_once_and_sample_as_their_seeds_alone) {
    rnd_reset();
    int32_t prompt[10];
    for (int i = 0; i < 10; i++) prompt[i] = (int32_t)rnd(V);
    /* blocks of 4: the prompt's third block is partial (2 rows), copied for each fork */
    config cfgs[] = {
        {.block_size = 4, .n_blocks = 40, .batch = 4, .max_step = 16, .cache_blocks = -1},
        {.block_size = 4, .n_blocks = 40, .batch = 4, .max_step = 3, .cache_blocks = 20}, /* chunked prefill */
        {.block_size = 5, .n_blocks = 40, .batch = 4, .max_step = 16, .cache_blocks = 20}, /* no partial block */
        {.block_size = 3, .n_blocks = 60, .batch = 4, .max_step = 16, .cache_blocks = 20, .n_swa = 4},
    };
    for (size_t ci = 0; ci < sizeof cfgs / sizeof cfgs[0]; ci++) {
        const config *c = &cfgs[ci];
        int32_t group[G_MAX][G_TOKENS], alone[1][G_TOKENS];
        hearth_engine_stats st = run_group(c, prompt, 10, 3, 0.9f, 1234, group);
        /* the prompt once, then each choice's tokens but its last */
        CHECK_EQ(st.step_tokens, 10 + 3 * (G_TOKENS - 1));
        int same01 = 0;
        for (int32_t i = 0; i < 3; i++) {
            run_group(c, prompt, 10, 1, 0.9f, 1234 + (uint64_t)i, alone);
            CHECK(memcmp(group[i], alone[0], sizeof alone[0]) == 0);
        }
        same01 = memcmp(group[0], group[1], sizeof group[0]) == 0;
        CHECK(!same01); /* the seeds differ, so do the choices */
        /* greedy: every choice is the script's continuation */
        run_group(c, prompt, 10, 3, 0, 1, group);
        int32_t all[10 + G_TOKENS];
        memcpy(all, prompt, sizeof prompt);
        for (int32_t i = 10; i < 10 + G_TOKENS; i++) all[i] = next_of(all, i);
        for (int32_t i = 0; i < 3; i++) CHECK(memcmp(group[i], all + 10, sizeof group[i]) == 0);
    }
}

TEST(choices_beyond_the_batch_queue_on_their_own) {
    rnd_reset();
    int32_t prompt[10];
    for (int i = 0; i < 10; i++) prompt[i] = (int32_t)rnd(V);
    config c = {.block_size = 4, .n_blocks = 40, .batch = 2, .max_step = 16, .cache_blocks = 20};
    int32_t group[G_MAX][G_TOKENS], alone[1][G_TOKENS];
    hearth_engine_stats st = run_group(&c, prompt, 10, 4, 0.9f, 77, group);
    /* two forks found no slot: each prefilled later, past the cached full blocks (8 tokens) */
    CHECK_EQ(st.step_tokens, 10 + 4 * (G_TOKENS - 1) + 2 * 2);
    for (int32_t i = 0; i < 4; i++) {
        run_group(&c, prompt, 10, 1, 0.9f, 77 + (uint64_t)i, alone);
        CHECK(memcmp(group[i], alone[0], sizeof alone[0]) == 0);
    }
}

TEST(scripted_forward_keeps_the_batch_checks) {
    hearth_model m = fake_model(0, false);
    script sc = {.m = &m};
    hearth_fwd *fwd = hearth_fwd_create_scripted(&m, 4, script_fwd, &sc);
    hearth_kv_pool *pool = NULL;
    hearth_err err;
    hearth_kv_pool_params pp = {.budget_bytes = hearth_kv_bytes_per_token(&m, HEARTH_KV_SCHEME_F32) * 16, .block_size = 4,
                                .n_seqs = 1, .max_seq_len = 16, .kv = HEARTH_KV_SCHEME_F32};
    CHECK_EQ(hearth_kv_pool_create(&m, &pp, &pool, &err), HEARTH_OK);
    int32_t tok[1] = {3}, pos[1] = {0}, seq[1] = {0};
    int8_t want[1] = {1};
    float logits[V];
    hearth_batch b = {.n_tokens = 1, .token = tok, .pos = pos, .seq = seq, .want_logits = want};
    /* no block for position 0 yet: refused before the script runs */
    CHECK_EQ(hearth_forward(fwd, &b, hearth_kv_pool_view(pool), logits), HEARTH_E_INVALID);
    CHECK(hearth_kv_pool_seq_reserve(pool, 0, 1));
    CHECK_EQ(hearth_forward(fwd, &b, hearth_kv_pool_view(pool), logits), HEARTH_OK);
    CHECK_EQ(logits[next_of(tok, 1)], 1);
    tok[0] = V; /* outside the vocabulary */
    CHECK_EQ(hearth_forward(fwd, &b, hearth_kv_pool_view(pool), logits), HEARTH_E_INVALID);
    hearth_kv_pool_destroy(pool);
    hearth_fwd_destroy(fwd);
}

/* Scoring (score_from, `hearth perplexity`): random prompts, some of whose tokens follow the
 * script, scored from random positions by several sequences at once, through chunked steps, the
 * prefix cache and preemption. The script's logits are `hot` at its token and 0 elsewhere, so
 * the log-probability of prompt token t is known: hot or 0, minus log(V - 1 + e^hot). */
static void score_config(const config *c, int n_requests, hearth_engine_stats *out) {
    rnd_reset();
    hearth_model m = fake_model(c->n_swa, c->hybrid_snaps > 0);
    script sc = {.m = &m, .hot = 2.5f};
    hearth_fwd *fwd = hearth_fwd_create_scripted(&m, c->max_step, script_fwd, &sc);
    hearth_kv_pool *pool = NULL;
    hearth_err err;
    hearth_kv_layout lay = hearth_kv_layout_of(&m, false);
    hearth_kv_pool_params pp = {.budget_bytes = hearth_kv_layout_block_bytes(&lay, &m, HEARTH_KV_SCHEME_F32, c->block_size) *
                                                (size_t)c->n_blocks,
                                .block_size = c->block_size, .n_seqs = c->batch, .max_seq_len = N_CTX, .kv = HEARTH_KV_SCHEME_F32};
    CHECK_EQ(hearth_kv_pool_create(&m, &pp, &pool, &err), HEARTH_OK);
    size_t bb = pool ? hearth_kv_pool_block_bytes(pool) : 0;
    hearth_prefix_cache *pc = c->cache_blocks < 0 || !pool ? NULL
                                                           : hearth_prefix_cache_create(pool, (size_t)c->cache_blocks * bb);
    hearth_sched_params sp = {.batch = c->batch, .max_step = c->max_step, .n_ctx = N_CTX};
    hearth_sched *s = fwd && pool ? hearth_sched_create(&m, fwd, pool, pc, &sp) : NULL;
    CHECK(s != NULL);
    if (!s) return;
    double lse = log((double)(V - 1) + exp(2.5));
    int32_t stem[40];
    for (int j = 0; j < 40; j++) stem[j] = (int32_t)rnd(V);
    enum { LIVE = 8 };
    struct { hearth_request *r; int32_t all[N_CTX], n_prompt, from; } lv[LIVE];
    int n_live = 0, added = 0, done = 0, bad = 0, nan = 0, scored = 0, followed = 0;
    for (int it = 0; (added < n_requests || n_live > 0) && it < 100000; it++) {
        if (added < n_requests && n_live < LIVE && rnd(2) == 0) {
            int k = n_live++;
            added++;
            lv[k].n_prompt = 2 + (int32_t)rnd(50);
            int32_t shared = (int32_t)rnd(lv[k].n_prompt < 40 ? (uint32_t)lv[k].n_prompt : 40);
            for (int32_t i = 0; i < lv[k].n_prompt; i++)
                lv[k].all[i] = i < shared ? stem[i] : rnd(2) ? next_of(lv[k].all, i) : (int32_t)rnd(V);
            lv[k].from = 1 + (int32_t)rnd((uint32_t)lv[k].n_prompt - 1);
            hearth_sampler_params smp = hearth_sampler_params_default();
            smp.temperature = 0;
            hearth_request_params rp = {.prompt = lv[k].all, .n_prompt = (size_t)lv[k].n_prompt,
                                        .max_tokens = 1 + (int32_t)rnd(N_CTX - lv[k].n_prompt < 6 ? 1 : 6),
                                        .sampling = smp, .ignore_eog = true, .score_from = lv[k].from};
            lv[k].r = hearth_req_create(&rp);
            CHECK(lv[k].r != NULL);
            if (!lv[k].r) break;
            hearth_sched_add(s, lv[k].r);
        }
        hearth_sched_step(s);
        CHECK(hearth_sched_check(s));
        for (int k = 0; k < n_live;) {
            hearth_event ev;
            bool fin = false;
            while (hearth_request_next(lv[k].r, &ev, 0) == HEARTH_OK)
                if (ev.kind == HEARTH_EV_DONE) {
                    fin = true;
                    break;
                }
            if (!fin) {
                k++;
                continue;
            }
            CHECK_EQ(ev.finish, HEARTH_FINISH_LENGTH);
            int32_t n = -1;
            const double *sv = hearth_request_scores(lv[k].r, &n);
            CHECK(sv != NULL);
            CHECK_EQ(n, lv[k].n_prompt - lv[k].from);
            for (int32_t i = 0; sv && i < n; i++) {
                int32_t t = lv[k].from + i;
                bool hit = lv[k].all[t] == next_of(lv[k].all, t);
                double want = (hit ? 2.5 : 0.0) - lse;
                nan += sv[i] != sv[i];
                bad += !(fabs(sv[i] - want) < 1e-12);
                followed += hit;
                scored++;
            }
            hearth_req_unref(lv[k].r);
            done++;
            lv[k] = lv[--n_live];
        }
    }
    CHECK_EQ(done, n_requests);
    CHECK_EQ(nan, 0);
    CHECK_EQ(bad, 0);
    CHECK_EQ(sc.bad, 0);
    CHECK(followed > 0 && followed < scored); /* both kinds of token were scored */
    *out = *hearth_sched_stats(s);
    fprintf(stderr, "  %d scored requests, %d tokens scored, %lld steps, %lld preemptions, %lld cache hits\n",
            done, scored, (long long)out->steps, (long long)out->preemptions, (long long)out->cache_hits);
    hearth_sched_destroy(s);
    hearth_prefix_cache_destroy(pc);
    hearth_kv_pool_destroy(pool);
    hearth_fwd_destroy(fwd);
}

TEST(scores_are_the_log_softmax_of_each_prompt_position) {
    config c = {.block_size = 4, .n_blocks = 24, .batch = 4, .max_step = 11, .cache_blocks = 12};
    hearth_engine_stats st;
    score_config(&c, getenv("HEARTH_TEST_SANITIZED") ? 300 : 1500, &st);
    CHECK(st.preemptions > 0);
    CHECK(st.cache_hits > 0);
}

TEST(scores_with_sliding_window_groups_and_no_cache) {
    config c = {.block_size = 3, .n_blocks = 60, .batch = 3, .max_step = 64, .cache_blocks = -1, .n_swa = 5};
    hearth_engine_stats st;
    score_config(&c, getenv("HEARTH_TEST_SANITIZED") ? 200 : 800, &st);
}

TEST(a_request_that_does_not_score_has_no_scores) {
    int32_t prompt[3] = {1, 2, 3}, n = -1;
    hearth_sampler_params smp = hearth_sampler_params_default();
    hearth_request_params rp = {.prompt = prompt, .n_prompt = 3, .max_tokens = 1, .sampling = smp};
    hearth_request *r = hearth_req_create(&rp);
    CHECK(r != NULL);
    CHECK(hearth_request_scores(r, &n) == NULL);
    CHECK_EQ(n, 0);
    hearth_req_unref(r);
    hearth_req_unref(r);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
