/*
 * test_deltanet_kernel.c - the gated DeltaNet core (kernels/ref/deltanet_ref.h, kernels/deltanet.h):
 * the reference against a double-precision evaluation of its formula (the conv, then per head the
 * normalized q and k, the decay and the delta rule, S kept as a matrix of doubles; a tolerance
 * from the length of the sums), the row-by-row twin against the reference bit for bit (outputs
 * and states), and the CPU backend's op (1..3 threads: the conv split by channels, the heads by
 * value heads) against the reference bit for bit. Shapes: odd head widths, 1, 2 and 4 value
 * heads per key head, 2..5 conv taps, several sequences interleaved in one step and a sequence
 * restarting at position 0 in the middle of a step. The tiled order of the value heads (v_tiled,
 * as llama.cpp's GGUF files of Qwen3.5 hold them) against the grouped one on permuted inputs.
 */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "kernels/deltanet.h"
#include "kernels/kernels.h"
#include "test.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static float rnd(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}

typedef struct {
    hearth_deltanet_args a;
    float *qkv0, *state0;    /* the inputs, kept to run again */
    int32_t pos[64], seq[64];
    int64_t n_slots;
} dn_case;

/* A step of n_tok tokens over n_slots sequences: slot s's tokens at positions 0, 1, .. in order,
 * slots interleaved; the token at index restart (if >= 0) goes back to position 0. */
static void dn_make(dn_case *c, int32_t nk, int32_t nv, int32_t dk, int32_t dv, int32_t conv, int64_t n_tok,
                    int64_t n_slots, int64_t restart) {
    memset(c, 0, sizeof *c);
    int64_t C = 2 * (int64_t)nk * dk + (int64_t)nv * dv, V = (int64_t)nv * dv;
    int64_t sf = C * (conv - 1) + (int64_t)nv * dk * dv;
    c->n_slots = n_slots;
    int32_t next[8] = {0};
    for (int64_t t = 0; t < n_tok; t++) {
        c->seq[t] = (int32_t)(t % n_slots);
        c->pos[t] = t == restart ? 0 : next[c->seq[t]];
        next[c->seq[t]] = c->pos[t] + 1;
    }
    float *qkv = malloc((size_t)(n_tok * C) * sizeof(float)), *b = malloc((size_t)(n_tok * nv) * sizeof(float));
    float *a = malloc((size_t)(n_tok * nv) * sizeof(float)), *w = malloc((size_t)(C * conv) * sizeof(float));
    float *dt = malloc((size_t)nv * sizeof(float)), *an = malloc((size_t)nv * sizeof(float));
    c->qkv0 = malloc((size_t)(n_tok * C) * sizeof(float));
    c->state0 = malloc((size_t)(n_slots * sf) * sizeof(float));
    for (int64_t i = 0; i < n_tok * C; i++) c->qkv0[i] = 2.0f * rnd();
    for (int64_t i = 0; i < n_tok * nv; i++) b[i] = 2.0f * rnd(), a[i] = 2.0f * rnd();
    for (int64_t i = 0; i < C * conv; i++) w[i] = rnd();
    for (int64_t h = 0; h < nv; h++) dt[h] = rnd() - 1.0f, an[h] = -expf(rnd() - 1.0f);
    for (int64_t i = 0; i < n_slots * sf; i++) c->state0[i] = 0.5f * rnd(); /* earlier positions' states */
    memcpy(qkv, c->qkv0, (size_t)(n_tok * C) * sizeof(float));
    c->a = (hearth_deltanet_args){.n_tok = n_tok, .n_k = nk, .n_v = nv, .k_dim = dk, .v_dim = dv, .conv = conv,
                                  .qkv = qkv, .b = b, .a = a, .conv_w = w, .dt_bias = dt, .a_neg = an,
                                  .out = calloc((size_t)(n_tok * V), sizeof(float)), .pos = c->pos, .seq = c->seq,
                                  .state = malloc((size_t)(n_slots * sf) * sizeof(float)), .state_floats = sf};
    memcpy(c->a.state, c->state0, (size_t)(n_slots * sf) * sizeof(float));
}

static void dn_reset(dn_case *c) { /* the inputs again, outputs cleared */
    int64_t C = 2 * (int64_t)c->a.n_k * c->a.k_dim + (int64_t)c->a.n_v * c->a.v_dim;
    memcpy(c->a.qkv, c->qkv0, (size_t)(c->a.n_tok * C) * sizeof(float));
    memcpy(c->a.state, c->state0, (size_t)(c->n_slots * c->a.state_floats) * sizeof(float));
    memset(c->a.out, 0, (size_t)(c->a.n_tok * c->a.n_v * c->a.v_dim) * sizeof(float));
}

static void dn_free(dn_case *c) {
    free(c->a.qkv), free((void *)c->a.b), free((void *)c->a.a), free((void *)c->a.conv_w);
    free((void *)c->a.dt_bias), free((void *)c->a.a_neg), free(c->a.out), free(c->a.state);
    free(c->qkv0), free(c->state0);
}

/* The formula in double, on a copy of the case's inputs: out [n_tok][V]. */
static void dn_double(const dn_case *c, double *out) {
    const hearth_deltanet_args *a = &c->a;
    int64_t dk = a->k_dim, dv = a->v_dim, K = (int64_t)a->n_k * dk, V = (int64_t)a->n_v * dv, C = 2 * K + V;
    int64_t W = a->conv - 1, r = a->n_v / a->n_k, sf = a->state_floats;
    double *st = malloc((size_t)(c->n_slots * sf) * sizeof(double)), *x = malloc((size_t)C * sizeof(double));
    for (int64_t i = 0; i < c->n_slots * sf; i++) st[i] = c->state0[i];
    for (int64_t t = 0; t < a->n_tok; t++) {
        double *s = st + (int64_t)a->seq[t] * sf;
        if (a->pos[t] == 0) memset(s, 0, (size_t)sf * sizeof(double));
        for (int64_t ch = 0; ch < C; ch++) {
            double *win = s + ch * W, in = c->qkv0[t * C + ch], y = a->conv_w[ch * a->conv + W] * in;
            for (int64_t j = 0; j < W; j++) y += a->conv_w[ch * a->conv + j] * win[j];
            memmove(win, win + 1, (size_t)(W - 1) * sizeof(double));
            win[W - 1] = in;
            x[ch] = y / (1.0 + exp(-y));
        }
        for (int64_t h = 0; h < a->n_v; h++) {
            double *S = s + C * W + h * dk * dv, *q = x + (h / r) * dk, *k = x + K + (h / r) * dk, *v = x + 2 * K + h * dv;
            double qq = 0, kk = 0;
            for (int64_t i = 0; i < dk; i++) qq += q[i] * q[i], kk += k[i] * k[i];
            double qn = 1.0 / sqrt(qq + 1e-6) / sqrt((double)dk), kn = 1.0 / sqrt(kk + 1e-6);
            double beta = 1.0 / (1.0 + exp(-a->b[t * a->n_v + h])), z = a->a[t * a->n_v + h] + a->dt_bias[h];
            double decay = exp(a->a_neg[h] * (z > 20 ? z : log1p(exp(z))));
            for (int64_t i = 0; i < dk * dv; i++) S[i] *= decay;
            for (int64_t j = 0; j < dv; j++) {
                double m = 0, o = 0;
                for (int64_t i = 0; i < dk; i++) m += S[i * dv + j] * k[i] * kn;
                double d = (v[j] - m) * beta;
                for (int64_t i = 0; i < dk; i++) S[i * dv + j] += k[i] * kn * d, o += S[i * dv + j] * q[i] * qn;
                out[t * V + h * dv + j] = o;
            }
        }
    }
    free(st), free(x);
}

static const struct { int32_t nk, nv, dk, dv, conv; int64_t n_tok, n_slots, restart; } shapes[] = {
    {1, 1, 16, 16, 4, 5, 1, -1}, {2, 4, 16, 16, 4, 12, 3, 7}, {2, 2, 7, 9, 2, 9, 2, -1},
    {1, 4, 33, 17, 3, 11, 4, 5}, {3, 6, 8, 40, 5, 16, 2, 10}, {2, 8, 64, 64, 4, 6, 2, 3},
};

TEST(ref_against_double) {
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        dn_case c;
        dn_make(&c, shapes[s].nk, shapes[s].nv, shapes[s].dk, shapes[s].dv, shapes[s].conv, shapes[s].n_tok,
                shapes[s].n_slots, shapes[s].restart);
        int64_t n = c.a.n_tok * c.a.n_v * c.a.v_dim;
        double *want = malloc((size_t)n * sizeof(double)), worst = 0;
        dn_double(&c, want);
        hearth_deltanet_ref(&c.a);
        /* each output goes through the conv's sum of taps and two sums of dk products of unit-scale
         * terms: f32 rounding of about one ulp (6e-8) per term, growing like dk + taps; we allow 4
         * ulp per term (measured up to 1.2e-7 relative, the bound 3.6e-6..2.7e-5) */
        double tol = 1e-7 * (double)(c.a.k_dim + c.a.conv) * 4;
        for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs(c.a.out[i] - want[i]) / (1.0 + fabs(want[i])));
        if (worst > tol) fprintf(stderr, "  shape %zu: worst %.3g (tol %.3g)\n", s, worst, tol);
        CHECK(worst <= tol);
        free(want);
        dn_free(&c);
    }
}

TEST(rows_equal_ref) {
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        dn_case c;
        dn_make(&c, shapes[s].nk, shapes[s].nv, shapes[s].dk, shapes[s].dv, shapes[s].conv, shapes[s].n_tok,
                shapes[s].n_slots, shapes[s].restart);
        int64_t n_out = c.a.n_tok * c.a.n_v * c.a.v_dim, n_st = c.n_slots * c.a.state_floats;
        hearth_deltanet_ref(&c.a);
        float *out = malloc((size_t)n_out * sizeof(float)), *st = malloc((size_t)n_st * sizeof(float));
        memcpy(out, c.a.out, (size_t)n_out * sizeof(float));
        memcpy(st, c.a.state, (size_t)n_st * sizeof(float));
        dn_reset(&c);
        hearth_deltanet_conv_ref(&c.a, 0, 2 * (int64_t)c.a.n_k * c.a.k_dim + (int64_t)c.a.n_v * c.a.v_dim);
        hearth_deltanet_heads(&c.a, 0, c.a.n_v / 2); /* two calls over the heads, as threads split them */
        hearth_deltanet_heads(&c.a, c.a.n_v / 2, c.a.n_v);
        CHECK(memcmp(out, c.a.out, (size_t)n_out * sizeof(float)) == 0);
        CHECK(memcmp(st, c.a.state, (size_t)n_st * sizeof(float)) == 0);
        free(out), free(st);
        dn_free(&c);
    }
}

TEST(backend_op_equals_ref) {
    for (int nth = 1; nth <= 3; nth++) {
        hearth_backend *be = hearth_backend_cpu_create(nth, 8, 256, 64, NULL);
        CHECK(be != NULL);
        if (!be) continue;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            dn_case c;
            dn_make(&c, shapes[s].nk, shapes[s].nv, shapes[s].dk, shapes[s].dv, shapes[s].conv, shapes[s].n_tok,
                    shapes[s].n_slots, shapes[s].restart);
            int64_t n_out = c.a.n_tok * c.a.n_v * c.a.v_dim, n_st = c.n_slots * c.a.state_floats;
            hearth_deltanet_ref(&c.a);
            float *out = malloc((size_t)n_out * sizeof(float)), *st = malloc((size_t)n_st * sizeof(float));
            memcpy(out, c.a.out, (size_t)n_out * sizeof(float));
            memcpy(st, c.a.state, (size_t)n_st * sizeof(float));
            dn_reset(&c);
            CHECK(hearth_backend_has_deltanet(be));
            hearth_op_deltanet(be, &c.a);
            CHECK(memcmp(out, c.a.out, (size_t)n_out * sizeof(float)) == 0);
            CHECK(memcmp(st, c.a.state, (size_t)n_st * sizeof(float)) == 0);
            free(out), free(st);
            dn_free(&c);
        }
        hearth_backend_destroy(be);
    }
}

/* v_tiled (the value heads in llama.cpp's tiled order, value head j = i n_k + h the i-th of key
 * head h) on inputs whose value heads are a grouped case's, permuted: every output and state
 * equals the grouped run's at the grouped head h r + i, bit for bit, in the reference and in
 * the row-by-row twin. */
static int64_t grouped_of(int64_t j, int64_t nk, int64_t r) { return (j % nk) * r + j / nk; }

TEST(v_tiled_is_grouped_permuted) {
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        if (shapes[s].nv == shapes[s].nk) continue;
        dn_case c, d;
        dn_make(&c, shapes[s].nk, shapes[s].nv, shapes[s].dk, shapes[s].dv, shapes[s].conv, shapes[s].n_tok,
                shapes[s].n_slots, shapes[s].restart);
        dn_make(&d, shapes[s].nk, shapes[s].nv, shapes[s].dk, shapes[s].dv, shapes[s].conv, shapes[s].n_tok,
                shapes[s].n_slots, shapes[s].restart);
        int64_t nk = c.a.n_k, nv = c.a.n_v, r = nv / nk, dk = c.a.k_dim, dv = c.a.v_dim, K = nk * dk, V = nv * dv;
        int64_t C = 2 * K + V, W = c.a.conv - 1, sf = c.a.state_floats, T = c.a.n_tok;
        float *cw = (float *)d.a.conv_w, *b = (float *)d.a.b, *a = (float *)d.a.a;
        float *dt = (float *)d.a.dt_bias, *an = (float *)d.a.a_neg;
        for (int64_t ch = 0; ch < C; ch++) { /* channel ch of d is channel src of c */
            int64_t src = ch < 2 * K ? ch : 2 * K + grouped_of((ch - 2 * K) / dv, nk, r) * dv + (ch - 2 * K) % dv;
            for (int64_t t = 0; t < T; t++) d.qkv0[t * C + ch] = c.qkv0[t * C + src];
            memcpy(cw + ch * c.a.conv, c.a.conv_w + src * c.a.conv, (size_t)c.a.conv * sizeof(float));
            for (int64_t sl = 0; sl < c.n_slots; sl++)
                memcpy(d.state0 + sl * sf + ch * W, c.state0 + sl * sf + src * W, (size_t)W * sizeof(float));
        }
        for (int64_t j = 0; j < nv; j++) {
            int64_t g = grouped_of(j, nk, r);
            for (int64_t t = 0; t < T; t++) b[t * nv + j] = c.a.b[t * nv + g], a[t * nv + j] = c.a.a[t * nv + g];
            dt[j] = c.a.dt_bias[g], an[j] = c.a.a_neg[g];
            for (int64_t sl = 0; sl < c.n_slots; sl++)
                memcpy(d.state0 + sl * sf + C * W + j * dk * dv, c.state0 + sl * sf + C * W + g * dk * dv,
                       (size_t)(dk * dv) * sizeof(float));
        }
        d.a.v_tiled = true;
        for (int twin = 0; twin < 2; twin++) {
            dn_reset(&c);
            dn_reset(&d);
            hearth_deltanet_ref(&c.a);
            if (twin) {
                hearth_deltanet_conv_ref(&d.a, 0, C);
                hearth_deltanet_heads(&d.a, 0, nv);
            } else {
                hearth_deltanet_ref(&d.a);
            }
            int bad = 0;
            for (int64_t t = 0; t < T; t++)
                for (int64_t j = 0; j < nv; j++)
                    bad += memcmp(d.a.out + t * V + j * dv, c.a.out + t * V + grouped_of(j, nk, r) * dv,
                                  (size_t)dv * sizeof(float)) != 0;
            for (int64_t sl = 0; sl < c.n_slots; sl++)
                for (int64_t j = 0; j < nv; j++)
                    bad += memcmp(d.a.state + sl * sf + C * W + j * dk * dv,
                                  c.a.state + sl * sf + C * W + grouped_of(j, nk, r) * dk * dv,
                                  (size_t)(dk * dv) * sizeof(float)) != 0;
            if (bad) fprintf(stderr, "  shape %zu (%s): %d heads differ\n", s, twin ? "rows" : "ref", bad);
            CHECK_EQ(bad, 0);
        }
        /* and the order matters (with one key head both orders are the same): the same inputs
         * read as grouped give other outputs */
        dn_reset(&d);
        d.a.v_tiled = false;
        hearth_deltanet_ref(&d.a);
        CHECK(nk == 1 || memcmp(d.a.out, c.a.out, (size_t)(T * V) * sizeof(float)) != 0);
        dn_free(&c);
        dn_free(&d);
    }
}

int main(int argc, char **argv) {
    hearth_kernels_init();
    return test_main(argc, argv);
}
