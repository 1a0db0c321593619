/*
 * test_kv_pool_mixed.c - a KV scheme per layer (kv_config.json) in the block pool, on models of
 * several layer groups (sliding-window layers), where block ids are shared by every group.
 *
 * The figures are derived here from the layers alone, never from the pool's own plan: a block
 * holds the rows of one group's layers, so its bytes must equal the sum of the rows of the
 * layers of every group (each group alike); no layer may get a type narrower than the file
 * asks; the block must be the cheapest any placement of the layers allows (searched
 * exhaustively on a small model); and a mixed file must never cost more than its widest scheme
 * alone. Then the bytes themselves: no layer's rows overlap another's, and blocks round-trip
 * through host memory (the disk tier's form).
 */
#include "engine/kv_pool.h"
#include "model/model_internal.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

enum { W = 64 }; /* n_head_kv (1) x head_dim of the test models */

static hearth_model swa_model(int32_t n_layer, int32_t pattern) {
    hearth_model m = {0};
    m.hp.n_layer = n_layer;
    m.hp.n_swa = 8;
    m.hp.swa_pattern = pattern;
    m.hp.n_head = m.hp.n_head_kv = 1;
    m.hp.head_dim = m.hp.head_dim_v = W;
    m.hp.n_vocab = 16;
    m.hp.n_ctx_train = 64;
    return m;
}

static size_t rows(hearth_kv_scheme s) { return hearth_kv_row_bytes(s.k, W) + hearth_kv_row_bytes(s.v, W); }

static uint32_t lcg(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* The pool's checks that need no reference placement: every layer at least as wide as asked,
 * each group's layers summing to the block, and the pool's bytes n_blocks blocks. Returns the
 * block bytes (0 when the pool was refused). */
static size_t check_pool(const hearth_model *m, const hearth_kv_scheme *lk, int32_t bs, int32_t nb) {
    size_t block = hearth_kv_block_bytes_layers(m, false, lk[0], lk, bs);
    hearth_kv_pool_params pp = {.budget_bytes = block * (size_t)nb, .block_size = bs, .n_seqs = 2,
                                .max_seq_len = 32, .kv = lk[0], .layer_kv = lk};
    hearth_kv_pool *pool = NULL;
    hearth_err err;
    CHECK_EQ(hearth_kv_pool_create(m, &pp, &pool, &err), HEARTH_OK);
    if (!pool) return 0;
    const hearth_kv_view *v = hearth_kv_pool_view(pool);
    int32_t n_groups = hearth_kv_pool_n_groups(pool);
    CHECK(n_groups > 1);
    CHECK_EQ(hearth_kv_pool_block_bytes(pool), block);
    CHECK_EQ(hearth_kv_pool_n_blocks(pool), nb);
    CHECK_EQ(hearth_kv_pool_bytes(pool), block * (size_t)nb);
    hearth_kv_scheme *wide = malloc((size_t)m->hp.n_layer * sizeof *wide);
    memcpy(wide, lk, (size_t)m->hp.n_layer * sizeof *wide);
    CHECK(hearth_kv_layers_widen(m, false, wide) >= 0);
    for (int32_t g = 0; g < n_groups; g++) { /* a block is the rows of any one group's layers */
        size_t sum = 0;
        for (int32_t il = 0; il < m->hp.n_layer; il++) {
            if (v->layer_group[il] != g) continue;
            hearth_kv_scheme s = hearth_kv_scheme_of(hearth_kv_view_k_type(v, il), hearth_kv_view_v_type(v, il));
            sum += rows(s) * (size_t)bs;
        }
        CHECK_EQ(sum, block);
    }
    for (int32_t il = 0; il < m->hp.n_layer; il++) { /* never narrower; what widen says */
        CHECK(hearth_kv_row_bytes(hearth_kv_view_k_type(v, il), W) >= hearth_kv_row_bytes(lk[il].k, W));
        CHECK(hearth_kv_row_bytes(hearth_kv_view_v_type(v, il), W) >= hearth_kv_row_bytes(lk[il].v, W));
        CHECK_EQ(hearth_kv_view_k_type(v, il), wide[il].k);
        CHECK_EQ(hearth_kv_view_v_type(v, il), wide[il].v);
    }
    free(wide);
    hearth_kv_pool_destroy(pool);
    return block;
}

/* The cheapest block any placement allows: the full layers (2) over the 2 places of the full
 * group, the sliding ones (4) over the 2 places of 2 window groups, each place paying its widest
 * K and V rows. Exhaustive: 2 x 4! placements. */
static size_t best_block(const hearth_kv_scheme *lk, const int32_t *full, const int32_t *win, int32_t bs) {
    static const int32_t perm4[24][4] = {
        {0, 1, 2, 3}, {0, 1, 3, 2}, {0, 2, 1, 3}, {0, 2, 3, 1}, {0, 3, 1, 2}, {0, 3, 2, 1},
        {1, 0, 2, 3}, {1, 0, 3, 2}, {1, 2, 0, 3}, {1, 2, 3, 0}, {1, 3, 0, 2}, {1, 3, 2, 0},
        {2, 0, 1, 3}, {2, 0, 3, 1}, {2, 1, 0, 3}, {2, 1, 3, 0}, {2, 3, 0, 1}, {2, 3, 1, 0},
        {3, 0, 1, 2}, {3, 0, 2, 1}, {3, 1, 0, 2}, {3, 1, 2, 0}, {3, 2, 0, 1}, {3, 2, 1, 0}};
    size_t best = SIZE_MAX;
    for (int f = 0; f < 2; f++)
        for (int p = 0; p < 24; p++) {
            size_t cost = 0;
            for (int place = 0; place < 2; place++) {
                /* the full layer at this place, and the sliding layer of each window group here */
                int32_t at[3] = {full[(place + f) % 2], win[perm4[p][place]], win[perm4[p][2 + place]]};
                size_t k = 0, v = 0;
                for (int i = 0; i < 3; i++) {
                    size_t rk = hearth_kv_row_bytes(lk[at[i]].k, W), rv = hearth_kv_row_bytes(lk[at[i]].v, W);
                    k = rk > k ? rk : k;
                    v = rv > v ? rv : v;
                }
                cost += (k + v) * (size_t)bs;
            }
            best = cost < best ? cost : best;
        }
    return best;
}

/* Six layers, every third full (layers 2 and 5): one full group and two window groups of two
 * layers. Each file's block is the cheapest placement's, and at most its widest scheme's. */
TEST(mixed_schemes_cheapest_block) {
    hearth_model m = swa_model(6, 3);
    const int32_t full[2] = {2, 5}, win[4] = {0, 1, 3, 4};
    const hearth_kv_type pick[3] = {HEARTH_KV_Q8_0, HEARTH_KV_Q4_0, HEARTH_KV_F16};
    const int32_t bs = 4;
    uint32_t seed = 7;
    int n_cheaper_than_widest = 0;
    for (int trial = 0; trial < 200; trial++) {
        hearth_kv_scheme lk[6];
        for (int il = 0; il < 6; il++) {
            hearth_kv_type k = pick[lcg(&seed) % 3], v = trial % 2 ? pick[lcg(&seed) % 3] : k;
            lk[il] = hearth_kv_scheme_of(k, v);
        }
        size_t wk = 0, wv = 0; /* the widest K and V rows of the file: its widest scheme alone */
        for (int il = 0; il < 6; il++) {
            size_t rk = hearth_kv_row_bytes(lk[il].k, W), rv = hearth_kv_row_bytes(lk[il].v, W);
            wk = rk > wk ? rk : wk;
            wv = rv > wv ? rv : wv;
        }
        size_t widest = (wk + wv) * 2 * (size_t)bs; /* 2 layers a group */
        size_t block = check_pool(&m, lk, bs, 5), best = best_block(lk, full, win, bs);
        if (trial % 2 == 0) CHECK_EQ(block, best); /* one type for K and V: the cheapest */
        else CHECK(block >= best); /* K and V apart: ordered by their sum, a heuristic */
        CHECK(block <= widest);
        n_cheaper_than_widest += block < widest;
        if (test_cur_failed) {
            fprintf(stderr, "  trial %d\n", trial);
            return;
        }
    }
    CHECK(n_cheaper_than_widest > 20); /* the files do save memory, not only match the widest */
}

/* Gemma 3's shape (18 layers, every sixth full: 1 full and 5 window groups of 3). The file of
 * every third layer alike (q8_0, q4_0, f16) has f16 at every place of the full group, so it
 * costs f16's block and no more (before the widening it cost 1.81 x f16); full layers q8_0 and
 * sliding q4_0 cost q8_0's block; one whose ranks line up widens only what its place's full layer forces. */
TEST(mixed_schemes_gemma3_shape) {
    hearth_model m = swa_model(18, 6);
    const int32_t bs = 16;
    hearth_kv_scheme lk[18];
    for (int il = 0; il < 18; il++) {
        hearth_kv_type t = il % 3 == 0 ? HEARTH_KV_Q8_0 : il % 3 == 1 ? HEARTH_KV_Q4_0 : HEARTH_KV_F16;
        lk[il] = hearth_kv_scheme_of(t, t);
    }
    CHECK_EQ(check_pool(&m, lk, bs, 7), 3 * rows(HEARTH_KV_SCHEME_F16) * bs);
    for (int il = 0; il < 18; il++) {
        hearth_kv_type t = hearth_hparams_is_swa(&m.hp, il) ? HEARTH_KV_Q4_0 : HEARTH_KV_Q8_0;
        lk[il] = hearth_kv_scheme_of(t, t);
    }
    hearth_kv_scheme q8 = hearth_kv_scheme_of(HEARTH_KV_Q8_0, HEARTH_KV_Q8_0);
    CHECK_EQ(check_pool(&m, lk, bs, 7), 3 * rows(q8) * bs);
    /* full layers f16; of the sliding ones the first of each three q8_0, the rest q4_0: five of
     * each rank fill a place of the five window groups, and the full group's f16 sets the price
     * of all three places: the q8_0 and q4_0 layers become f16 */
    hearth_kv_scheme wide[18];
    for (int il = 0; il < 18; il++) {
        hearth_kv_type t = !hearth_hparams_is_swa(&m.hp, il) ? HEARTH_KV_F16 : il % 6 < 2 ? HEARTH_KV_Q8_0
                                                                                        : HEARTH_KV_Q4_0;
        lk[il] = wide[il] = hearth_kv_scheme_of(t, t);
    }
    CHECK_EQ(hearth_kv_layers_widen(&m, false, wide), 15);
    CHECK_EQ(check_pool(&m, lk, bs, 7), 3 * rows(HEARTH_KV_SCHEME_F16) * bs);
    /* full layers q8_0, sliding: 5 f16, 5 q8_0, 5 q4_0: one rank a place; the q4_0 layers are
     * widened to the full group's q8_0 and the full layer at the f16 place to f16 */
    for (int il = 0, k = 0; il < 18; il++) {
        hearth_kv_type t = HEARTH_KV_Q8_0;
        if (hearth_hparams_is_swa(&m.hp, il)) t = k < 5 ? HEARTH_KV_F16 : k < 10 ? HEARTH_KV_Q8_0 : HEARTH_KV_Q4_0, k++;
        lk[il] = wide[il] = hearth_kv_scheme_of(t, t);
    }
    CHECK_EQ(hearth_kv_layers_widen(&m, false, wide), 6);
    int n_f16 = 0;
    for (int il = 0; il < 18; il++) {
        CHECK(wide[il].k != HEARTH_KV_Q4_0);
        n_f16 += wide[il].k == HEARTH_KV_F16;
    }
    CHECK_EQ(n_f16, 6);
    CHECK_EQ(check_pool(&m, lk, bs, 7), (rows(HEARTH_KV_SCHEME_F16) + 2 * rows(q8)) * bs);
    /* swa_full (one group of every layer) and a model without sliding layers widen nothing */
    memcpy(wide, lk, sizeof wide);
    CHECK_EQ(hearth_kv_layers_widen(&m, true, wide), 0);
    CHECK(!memcmp(wide, lk, sizeof wide));
    hearth_model flat = swa_model(18, 0);
    CHECK_EQ(hearth_kv_layers_widen(&flat, false, wide), 0);
    CHECK(!memcmp(wide, lk, sizeof wide));
}

/* The bytes: block b belongs to group b % n_groups; fill each block through the layers of its
 * group with a byte of (layer, block), then read every one back: a layer's rows overwritten by
 * another's would show. A block's bytes round-trip through host memory. */
TEST(mixed_schemes_own_their_rows) {
    hearth_model m = swa_model(6, 3);
    const hearth_kv_type ty[6] = {HEARTH_KV_Q8_0, HEARTH_KV_F16, HEARTH_KV_Q4_0,
                                  HEARTH_KV_F16,  HEARTH_KV_Q8_0, HEARTH_KV_F32};
    hearth_kv_scheme lk[6];
    for (int i = 0; i < 6; i++) lk[i] = hearth_kv_scheme_of(ty[i], i == 3 ? HEARTH_KV_Q4_0 : ty[i]);
    const int32_t bs = 4, nb = 12;
    size_t block = hearth_kv_block_bytes_layers(&m, false, lk[0], lk, bs);
    hearth_kv_pool_params pp = {.budget_bytes = block * nb, .block_size = bs, .n_seqs = 2, .max_seq_len = 32,
                                .kv = lk[0], .layer_kv = lk};
    hearth_kv_pool *pool = NULL;
    hearth_err err;
    CHECK_EQ(hearth_kv_pool_create(&m, &pp, &pool, &err), HEARTH_OK);
    if (!pool) return;
    int32_t n_groups = hearth_kv_pool_n_groups(pool);
    CHECK_EQ(n_groups, 3);
    const hearth_kv_view *v = hearth_kv_pool_view(pool);
    for (int pass = 0; pass < 2; pass++)
        for (int32_t b = 0; b < nb; b++)
            for (int il = 0; il < 6; il++) {
                if (v->layer_group[il] != b % n_groups) continue;
                for (int kv = 0; kv < 2; kv++) {
                    hearth_kv_type t = kv ? hearth_kv_view_v_type(v, il) : hearth_kv_view_k_type(v, il);
                    size_t row = hearth_kv_row_bytes(t, W);
                    unsigned char *at = (unsigned char *)(kv ? v->v[il] : v->k[il]) + (size_t)b * bs * row;
                    unsigned char val = (unsigned char)(il * 29 + b * 7 + kv * 101 + 1);
                    for (size_t i = 0; i < bs * row; i++) {
                        if (pass == 0) at[i] = val;
                        else if (at[i] != val) {
                            CHECK(!"a layer's rows were overwritten by another layer's");
                            goto out;
                        }
                    }
                }
            }
    {
        unsigned char *a = malloc(block), *z = calloc(block, 1), *c = malloc(block);
        CHECK(a && z && c);
        if (a && z && c) {
            hearth_kv_pool_block_to_host(pool, 5, a);
            hearth_kv_pool_block_from_host(pool, 5, z);
            hearth_kv_pool_block_to_host(pool, 5, c);
            CHECK(!memcmp(c, z, block));
            hearth_kv_pool_block_from_host(pool, 5, a);
            hearth_kv_pool_block_to_host(pool, 5, c);
            CHECK(!memcmp(c, a, block));
        }
        free(a);
        free(z);
        free(c);
    }
out:
    hearth_kv_pool_destroy(pool);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
