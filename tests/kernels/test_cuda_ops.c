/*
 * test_cuda_ops.c - every op of the CUDA backend against the CPU reference kernels
 * (kernels/ref/) on random inputs, through the backend interface (backend.h).
 *
 * Each comparison is held to the op's line of the tolerance table in cuda_test.h. The
 * references are the plain C kernels: attention against hearth_attn_head_paged_ref over the same
 * block table. Matmul has its own file (test_cuda_matmul.c). Without a GPU (or in a build
 * without CUDA) every test skips. Run under `compute-sanitizer --tool memcheck` on the GPU host
 * (docs/cuda.md).
 */
#include "cuda_test.h"
#include "kernels/ref/turbo_ref.h"

TEST(get_rows_every_type) {
    NEED_GPU();
    const int64_t ne0 = 512, ne1 = 40, n = 7;
    int32_t ids[7] = {0, 39, 5, 5, 17, 2, 30};
    for (int ti = 0; ti < N_TYPES; ti++) {
        tweight tw = *weight_of(ti, ne1, ne0);
        float *ref = malloc(sizeof(float) * n * ne0), *got = malloc(sizeof(float) * n * ne0);
        for (int64_t t = 0; t < n; t++)
            for (int64_t i = 0; i < ne0; i++) ref[t * ne0 + i] = tw.deq[ids[t] * ne0 + i] * 0.5f;
        int32_t *d_ids = up(ids, sizeof ids);
        float *d_out = hearth_buf_alloc(gpu(), sizeof(float) * n * ne0);
        hearth_op_get_rows(gpu(), &tw.w, d_ids, n, 0.5f, d_out);
        down(got, d_out, sizeof(float) * n * ne0);
        fprintf(stderr, "  %s\n", hearth_type_name(TYPES[ti].t));
        CHECK_REL(got, ref, n * ne0, "get_rows");
        dfree(d_ids);
        dfree(d_out);
        free(ref);
        free(got);
    }
}

/* add_rmsnorm: x += r, then the norm into r's place (as the model calls it); both results
 * against add + the reference norm, at a width of each kernel */
TEST(add_rmsnorm_residual_and_norm) {
    NEED_GPU();
    const int64_t rows = 5, dims[] = {1000, 4096};
    for (size_t di = 0; di < 2; di++) {
        const int64_t dim = dims[di], n = rows * dim;
        float *x = malloc(sizeof(float) * n), *r = malloc(sizeof(float) * n), *w = malloc(sizeof(float) * dim),
              *sum = malloc(sizeof(float) * n), *ref = malloc(sizeof(float) * n), *got = malloc(sizeof(float) * n);
        fill(x, n, 3.0f);
        fill(r, n, 2.0f);
        fill(w, dim, 1.5f);
        for (int64_t i = 0; i < n; i++) sum[i] = x[i] + r[i];
        for (int64_t k = 0; k < rows; k++) hearth_rmsnorm_ref(sum + k * dim, w, ref + k * dim, dim, 1e-5f);
        float *dx = up(x, sizeof(float) * n), *dr = up(r, sizeof(float) * n);
        hearth_op_add_rmsnorm(gpu(), dx, dr, w, dr, rows, dim, 1e-5f);
        down(got, dx, sizeof(float) * n);
        fprintf(stderr, "  width %lld\n", (long long)dim);
        CHECK_REL(got, sum, n, "elementwise");
        down(got, dr, sizeof(float) * n);
        CHECK_REL(got, ref, n, "rmsnorm");
        dfree(dx);
        dfree(dr);
        free(x);
        free(r);
        free(sum);
        free(ref);
        free(got); /* w stays: the backend keeps a copy keyed by its address */
    }
}

/* widths the plain kernel takes (1000) and the register kernel at each of its sizes (a partial
 * last piece at 4100); the norm weight lives as long as the backend (it keeps a device copy
 * keyed by the host address) */
TEST(rmsnorm_with_and_without_weight) {
    NEED_GPU();
    const int64_t rows = 9, dims[] = {1000, 2048, 4100, 16384};
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        const int64_t dim = dims[di];
        float *x = malloc(sizeof(float) * rows * dim), *w = malloc(sizeof(float) * dim),
              *ref = malloc(sizeof(float) * rows * dim), *got = malloc(sizeof(float) * rows * dim);
        fill(x, rows * dim, 3.0f);
        fill(w, dim, 1.5f);
        for (int k = 0; k < 2; k++) {
            const float *wk = k ? w : NULL;
            for (int64_t r = 0; r < rows; r++) hearth_rmsnorm_ref(x + r * dim, wk, ref + r * dim, dim, 1e-6f);
            float *d = up(x, sizeof(float) * rows * dim);
            hearth_op_rmsnorm(gpu(), d, wk, d, rows, dim, 1e-6f); /* in place, as the model does */
            down(got, d, sizeof(float) * rows * dim);
            fprintf(stderr, "  width %lld, %s weight\n", (long long)dim, k ? "with" : "without");
            CHECK_REL(got, ref, rows * dim, "rmsnorm");
            dfree(d);
        }
        free(x);
        free(ref);
        free(got); /* w stays: see above */
    }
}

TEST(rope_both_recipes_both_layouts) {
    NEED_GPU();
    const int64_t T = 5;
    const int32_t H = 3, D = 64, R = 64;
    int32_t pos[5] = {0, 1, 17, 400, 999};
    float inv[32];
    hearth_rope_inv_freq(inv, R, 10000.0f, 1.0f);
    for (int k = 0; k < 4; k++) {
        hearth_rope_params rp = {.inv_freq = k & 1 ? inv : NULL, .theta_scale = powf(10000.0f, -2.0f / R),
                                 .freq_scale = 1.0f, .neox = (k & 2) != 0};
        float *x = malloc(sizeof(float) * T * H * D), *ref = malloc(sizeof(float) * T * H * D),
              *got = malloc(sizeof(float) * T * H * D);
        fill(x, T * H * D, 1.0f);
        memcpy(ref, x, sizeof(float) * T * H * D);
        for (int64_t t = 0; t < T; t++)
            for (int32_t h = 0; h < H; h++) hearth_rope_ref(ref + (t * H + h) * D, R, pos[t], &rp);
        float *d = up(x, sizeof(float) * T * H * D);
        int32_t *d_pos = up(pos, sizeof pos);
        hearth_op_rope(gpu(), d, T, H, D, R, d_pos, &rp);
        down(got, d, sizeof(float) * T * H * D);
        CHECK_REL(got, ref, T * H * D, k & 1 ? "rope_inv_freq" : "rope");
        dfree(d);
        dfree(d_pos);
        free(x);
        free(ref);
        free(got);
    }
}

/* rope_store (one launch) against rope, rope, kv_store, kv_store (each held to its reference
 * above): the same q, k and caches bit for bit; partial rotary, both layouts and both recipes,
 * f32, f16, q8_0 and q4_0 caches, a value width unlike the key width */
TEST(rope_store_matches_rope_then_kv_store) {
    NEED_GPU();
    const int64_t T = 4, vw0 = 2 * 48;
    const int32_t H = 6, HKV = 2, D = 64, R = 32, bs = 16, max_blocks = 4, n_blocks = 6;
    int32_t pos[4] = {3, 17, 18, 40}, seq[4] = {0, 0, 1, 1}, table[8] = {5, 2, 0, 1, 3, 4, 0, 0};
    static float inv[16]; /* lives as long as the backend: it keeps a copy keyed by the address */
    hearth_rope_inv_freq(inv, R, 10000.0f, 1.0f);
    int32_t *dpos = up(pos, sizeof pos), *dseq = up(seq, sizeof seq), *dtable = up(table, sizeof table);
    hearth_kv_blocks bl = {.table = dtable, .max_blocks = max_blocks, .block_size = bs};
    /* a turbo cache too: rope_store runs the ops one by one for it (value rows of whole
     * 64-element pieces) */
    static const hearth_kv_type types[6] = {HEARTH_KV_F32, HEARTH_KV_F16, HEARTH_KV_Q8_0,
                                            HEARTH_KV_Q4_0, HEARTH_KV_T3,  HEARTH_KV_T8};
    for (int k = 0; k < 24; k++) {
        const hearth_kv_type ty = types[k >> 2];
        const int64_t vw = hearth_kv_type_turbo(ty) ? 2 * 64 : vw0;
        hearth_rope_params rp = {.inv_freq = k & 1 ? inv : NULL, .theta_scale = powf(10000.0f, -2.0f / R),
                                 .freq_scale = 1.0f, .neox = (k & 2) != 0};
        const size_t qn = (size_t)T * H * D, kn = (size_t)T * HKV * D, vn = (size_t)T * vw;
        const size_t kc = (size_t)n_blocks * bs * hearth_kv_row_bytes(ty, (int64_t)HKV * D),
                     vc = (size_t)n_blocks * bs * hearth_kv_row_bytes(ty, vw);
        float *q = malloc(sizeof(float) * qn), *kk = malloc(sizeof(float) * kn), *v = malloc(sizeof(float) * vn);
        fill(q, (int64_t)qn, 1.0f);
        fill(kk, (int64_t)kn, 1.0f);
        fill(v, (int64_t)vn, 1.0f);
        float *out[2][2];
        char *cache[2][2];
        for (int way = 0; way < 2; way++) {
            float *dq = up(q, sizeof(float) * qn), *dk = up(kk, sizeof(float) * kn), *dv = up(v, sizeof(float) * vn);
            void *dkc = hearth_buf_alloc(gpu(), kc), *dvc = hearth_buf_alloc(gpu(), vc);
            char *zero = calloc(1, kc > vc ? kc : vc); /* unwritten rows compare equal */
            hearth_buf_upload(gpu(), dkc, zero, kc);
            hearth_buf_upload(gpu(), dvc, zero, vc);
            free(zero);
            if (way == 0) {
                hearth_op_rope(gpu(), dq, T, H, D, R, dpos, &rp);
                hearth_op_rope(gpu(), dk, T, HKV, D, R, dpos, &rp);
                hearth_op_kv_store(gpu(), dk, T, (int64_t)HKV * D, dseq, dpos, dkc, &bl, ty);
                hearth_op_kv_store(gpu(), dv, T, vw, dseq, dpos, dvc, &bl, ty);
            } else {
                hearth_op_rope_store(gpu(), dq, dk, dv, T, H, HKV, D, R, vw, dpos, &rp, dseq, dkc, dvc, &bl, ty, ty);
            }
            out[way][0] = malloc(sizeof(float) * qn);
            out[way][1] = malloc(sizeof(float) * kn);
            cache[way][0] = malloc(kc);
            cache[way][1] = malloc(vc);
            down(out[way][0], dq, sizeof(float) * qn);
            down(out[way][1], dk, sizeof(float) * kn);
            down(cache[way][0], dkc, kc);
            down(cache[way][1], dvc, vc);
            void *bufs[] = {dq, dk, dv, dkc, dvc};
            for (int i = 0; i < 5; i++) dfree(bufs[i]);
        }
        fprintf(stderr, "  %s cache, %s, %s recipe\n", hearth_kv_type_name(ty), rp.neox ? "neox" : "interleaved",
                rp.inv_freq ? "inv_freq" : "theta_scale");
        CHECK(!memcmp(out[0][0], out[1][0], sizeof(float) * qn));
        CHECK(!memcmp(out[0][1], out[1][1], sizeof(float) * kn));
        CHECK(!memcmp(cache[0][0], cache[1][0], kc));
        CHECK(!memcmp(cache[0][1], cache[1][1], vc));
        CHECK(memcmp(out[1][1], kk, sizeof(float) * kn) != 0); /* k did rotate */
        for (int way = 0; way < 2; way++)
            for (int i = 0; i < 2; i++) {
                free(out[way][i]);
                free(cache[way][i]);
            }
        free(q);
        free(kk);
        free(v);
    }
    dfree(dpos);
    dfree(dseq);
    dfree(dtable);
}

TEST(glu_kinds) {
    NEED_GPU();
    const int64_t n = 5000;
    float *g = malloc(sizeof(float) * n), *u = malloc(sizeof(float) * n), *ref = malloc(sizeof(float) * n),
          *got = malloc(sizeof(float) * n);
    fill(g, n, 12.0f); /* past +-10, where the f16 variant switches formula */
    fill(u, n, 1.0f);
    for (int kind = 0; kind < 3; kind++) {
        memcpy(ref, g, sizeof(float) * n);
        if (kind == 0) hearth_swiglu_ref(ref, u, n);
        else if (kind == 1) hearth_geglu_ref(ref, u, n);
        else hearth_geglu_f16_ref(ref, u, n);
        float *dg = up(g, sizeof(float) * n), *du = up(u, sizeof(float) * n);
        hearth_op_glu(gpu(), dg, du, n, (hearth_glu_kind)kind);
        down(got, dg, sizeof(float) * n);
        CHECK_REL(got, ref, n, kind == 2 ? "glu_f16" : "glu");
        dfree(dg);
        dfree(du);
    }
    free(g);
    free(u);
    free(ref);
    free(got);
}

TEST(elementwise_add_add_rows_scale_softcap_copy_rows_argmax) {
    NEED_GPU();
    const int64_t rows = 6, dim = 333, n = rows * dim;
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * dim),
          *ref = malloc(sizeof(float) * n), *got = malloc(sizeof(float) * n);
    fill(x, n, 40.0f);
    fill(y, n, 1.0f);
    fill(b, dim, 1.0f);
    float *dx = up(x, sizeof(float) * n), *dy = up(y, sizeof(float) * n);
    /* add */
    for (int64_t i = 0; i < n; i++) ref[i] = x[i] + y[i];
    hearth_op_add(gpu(), dx, dy, n);
    down(got, dx, sizeof(float) * n);
    CHECK_REL(got, ref, n, "elementwise");
    /* add_rows */
    for (int64_t i = 0; i < n; i++) ref[i] += b[i % dim];
    hearth_op_add_rows(gpu(), dx, b, rows, dim);
    down(got, dx, sizeof(float) * n);
    CHECK_REL(got, ref, n, "elementwise");
    /* scale */
    for (int64_t i = 0; i < n; i++) ref[i] *= 0.125f;
    hearth_op_scale(gpu(), dx, n, 0.125f);
    down(got, dx, sizeof(float) * n);
    CHECK_REL(got, ref, n, "elementwise");
    /* softcap */
    for (int64_t i = 0; i < n; i++) ref[i] = 30.0f * tanhf(ref[i] / 30.0f);
    hearth_op_softcap(gpu(), dx, n, 30.0f);
    down(got, dx, sizeof(float) * n);
    CHECK_REL(got, ref, n, "elementwise");
    /* copy_rows and argmax, against the CPU backend's */
    int32_t rws[4] = {5, 0, 2, 2}, am_ref[4], am_got[4];
    int32_t *drows = up(rws, sizeof rws);
    float *dsel = hearth_buf_alloc(gpu(), sizeof(float) * 4 * dim), *sel = malloc(sizeof(float) * 4 * dim);
    hearth_op_copy_rows(gpu(), dx, dim, drows, 4, dsel);
    down(sel, dsel, sizeof(float) * 4 * dim);
    for (int r = 0; r < 4; r++) CHECK(!memcmp(sel + r * dim, got + rws[r] * dim, sizeof(float) * dim));
    hearth_backend *cpu = hearth_backend_cpu_create(1, 4, dim, 16, NULL);
    sel[dim + 7] = sel[dim + 9] = 1e6f; /* a tie: the first index wins */
    float *dsel2 = up(sel, sizeof(float) * 4 * dim);
    hearth_op_argmax(cpu, sel, 4, dim, am_ref);
    hearth_op_argmax(gpu(), dsel2, 4, dim, am_got);
    for (int r = 0; r < 4; r++) CHECK_EQ(am_got[r], am_ref[r]);
    CHECK_EQ(am_got[1], 7);
    hearth_backend_destroy(cpu);
    dfree(dx);
    dfree(dy);
    dfree(drows);
    dfree(dsel);
    dfree(dsel2);
    free(x);
    free(y);
    free(b);
    free(ref);
    free(got);
    free(sel);
}

TEST(hadamard_equals_ref_bit_for_bit) {
    NEED_GPU();
    const int64_t sizes[] = {64, 128, 256, 512};
    for (size_t k = 0; k < 4; k++) {
        const int64_t n = sizes[k], rows = 37, all = rows * n;
        float *x = malloc(sizeof(float) * all), *got = malloc(sizeof(float) * all);
        fill(x, all, 3.0f);
        float *dx = up(x, sizeof(float) * all);
        hearth_hadamard_ref(x, rows, n);
        hearth_op_hadamard(gpu(), dx, rows, n);
        down(got, dx, sizeof(float) * all);
        CHECK(memcmp(got, x, sizeof(float) * all) == 0);
        dfree(dx);
        free(x);
        free(got);
    }
}

/* Paged cache: keys/values stored by kv_store through a shuffled block table, then attention of
 * queries at several positions (decode-like, prefill-like, a long context that splits, a sliding
 * window, softcap, grouped heads), each against the reference head by head. */
/* argmax over vocabulary-sized rows (the 16-byte path), ties between threads and between loads
 * of one thread, the maximum in the last elements, against the CPU backend's */
TEST(argmax_vocabulary_rows) {
    NEED_GPU();
    const int64_t dim = 128258, rows = 3; /* rows 0 and 2 start 16-byte aligned, row 1 does not */
    float *x = malloc(sizeof(float) * rows * dim);
    fill(x, rows * dim, 10.0f);
    x[70001] = x[100003] = x[5] + 100.0f; /* row 0: a tie far apart */
    x[dim + dim - 1] = 500.0f;           /* row 1: the last element */
    x[2 * dim + 4096] = x[2 * dim + 4097] = 77.0f; /* row 2: neighbours tie */
    int32_t ref[3], got[3];
    hearth_backend *cpu = hearth_backend_cpu_create(1, 4, dim, 16, NULL);
    hearth_op_argmax(cpu, x, rows, dim, ref);
    float *dx = up(x, sizeof(float) * rows * dim);
    hearth_op_argmax(gpu(), dx, rows, dim, got);
    for (int r = 0; r < 3; r++) CHECK_EQ(got[r], ref[r]);
    CHECK_EQ(got[0], 70001);
    CHECK_EQ(got[1], (int32_t)dim - 1);
    CHECK_EQ(got[2], 4096);
    hearth_backend_destroy(cpu);
    dfree(dx);
    free(x);
}

/* Sampling on the device (topm.cu) against hearth_topm_row_ref: rows of a vocabulary's width
 * (unaligned too), a row shorter than HEARTH_TOPM, a row on a coarse grid (hundreds of ties at
 * the cut: the lowest ids must be taken), -inf entries (banned tokens), draws with and without
 * min-p. The best entries, their order and the max are exact; z_1 sums double exps in another
 * order (relative 1e-12), z_t the device's expf, which differs from glibc's in the last bit of
 * some terms (1e-8 measured; 1e-6 allowed); a draw may differ only where the running sum sits
 * that close to the target, which these rows do not hit. */
TEST(topm_summaries_match_the_reference) {
    NEED_GPU();
    const int64_t dims[] = {128258, 151936, 100, 32000};
    hearth_backend *cpu = hearth_backend_cpu_create(1, 4, 1024, 16, NULL);
    for (size_t di = 0; di < sizeof dims / sizeof *dims; di++) {
        const int64_t dim = dims[di], rows = 6;
        float *x = malloc(sizeof(float) * rows * dim);
        fill(x, rows * dim, 4.0f);
        for (int64_t i = 0; i < dim; i += 7) x[2 * dim + i] = -INFINITY; /* row 2: banned tokens */
        for (int64_t i = 0; i < dim; i++) x[3 * dim + i] = roundf(x[3 * dim + i]); /* row 3: ties */
        for (int k = 0; k < 30; k++) x[4 * dim + (k * 7919) % dim] += 12.0f; /* row 4: peaked */
        hearth_topm_req rq[6];
        for (int r = 0; r < rows; r++)
            rq[r] = (hearth_topm_req){.temperature = 0.5f + 0.25f * (float)r, .min_p = r == 5 ? 0.05f : 0.0f,
                                      .u = r % 2 ? 0.3 + 0.1 * r : -1.0};
        /* rows 1 and 4: bias and penalties edited in first (tokens within every width) */
        hearth_topm_edit e[] = {{7, HEARTH_TOPM_ADD, 9.0f, 1, 0}, {30, HEARTH_TOPM_REP | HEARTH_TOPM_SUB, 0, 1.3f, 0.7f},
                                {31, HEARTH_TOPM_ADD | HEARTH_TOPM_REP, -1.5f, 1.1f, 0}, {99, HEARTH_TOPM_SUB, 0, 1, 2.25f},
                                {5, HEARTH_TOPM_ADD, -INFINITY, 1, 0}, {12, HEARTH_TOPM_REP, 0, 2.0f, 0}};
        rq[1].edit0 = 0;
        rq[1].n_edit = 4;
        rq[4].edit0 = 4;
        rq[4].n_edit = 2;
        hearth_topm *ref = malloc(sizeof *ref * rows), *got = malloc(sizeof *got * rows);
        float *dx = up(x, sizeof(float) * rows * dim), *xe = malloc(sizeof(float) * rows * dim);
        hearth_op_topm(cpu, x, rows, dim, rq, e, 6, ref); /* x: edited in place */
        hearth_op_topm(gpu(), dx, rows, dim, rq, e, 6, got);
        down(xe, dx, sizeof(float) * rows * dim);
        CHECK(memcmp(xe, x, sizeof(float) * rows * dim) == 0); /* the edits, bit for bit */
        CHECK(x[dim + 7] > 100.0f || x[dim + 7] == ref[1].x[0]);
        free(xe);
        for (int r = 0; r < rows; r++) {
            CHECK_EQ(got[r].n, ref[r].n);
            CHECK(got[r].max == ref[r].max);
            CHECK_NEAR(got[r].z_t / ref[r].z_t, 1.0, 1e-6); /* the device's expf is not glibc's */
            CHECK_NEAR(got[r].z_1 / ref[r].z_1, 1.0, 1e-12);
            int bad = 0;
            for (int i = 0; i < ref[r].n; i++) bad += got[r].id[i] != ref[r].id[i] || got[r].x[i] != ref[r].x[i];
            if (bad) fprintf(stderr, "  width %lld row %d: %d of %d best entries differ\n", (long long)dim, r, bad,
                             ref[r].n);
            CHECK_EQ(bad, 0);
            CHECK_EQ(got[r].drawn, ref[r].drawn);
            if (ref[r].drawn >= 0) CHECK(got[r].drawn_x == ref[r].drawn_x);
        }
        CHECK(ref[1].drawn >= 0 && ref[0].drawn == -1);
        dfree(dx);
        free(x);
        free(ref);
        free(got);
    }
    hearth_backend_destroy(cpu);
}

/* A second backend with fused-sdpa off: its attention runs one query head per block and must
 * give the grouped launch's bits (the switch is a same-bits lever). */
static hearth_backend *gpu_per_head(void) {
    static hearth_backend *be;
    if (!be) {
        hearth_err err = {0};
        hearth_numerics nx = {.no_fused_sdpa = true};
        be = hearth_backend_cuda_create(0, 64, &nx, &err);
        if (!be) fprintf(stderr, "  (no second CUDA backend: %s)\n", err.msg);
    }
    return be;
}

/* Attention of n_q queries (the last positions of a ctx-token context) against a paged cache
 * filled through kv_store. With two sequences the second half of the queries belongs to a
 * second sequence with its own keys and blocks, so one step's query tiles mix sequences. The
 * stored cache must equal the CPU backend's kv_store of the same rows byte for byte; the
 * reference reads that cache: hearth_attn_head_paged_ref for f32 and f16, hearth_attn_quant_ref
 * (the plain twin of the CPU's quantized-cache attention) for q8_0 and q4_0. With holes, the
 * table entries of blocks wholly before every query's window are -1 when attention runs (the
 * pool frees blocks that slid out of a window): no kernel may read them. As DECODES, the step is
 * a batch of decodes: n_q = n_seq queries, query t the one token of sequence t, at a position a
 * few tokens short of the context's end that differs between neighbours (so sequences of
 * different lengths meet), with the hint max_run = 1 that a real batch of decodes carries. */
enum { PLAIN, HOLES, DECODES };
static void attention_case_h(hearth_kv_type type, int32_t n_head, int32_t n_head_kv, int32_t D, int32_t ctx,
                             int32_t n_swa, float softcap, int64_t n_q, int n_seq, int mode) {
    const bool holes = mode == HOLES, decodes = mode == DECODES;
    const int32_t bs = 16, max_blocks = (ctx + bs - 1) / bs, n_blocks = n_seq * max_blocks + 3;
    const int64_t kvw = (int64_t)n_head_kv * D, n_rows = (int64_t)n_seq * ctx;
    const bool quant = hearth_kv_type_quantized(type), turbo = hearth_kv_type_turbo(type);
    int32_t *table = malloc(sizeof(int32_t) * n_seq * max_blocks);
    for (int32_t i = 0; i < n_seq * max_blocks; i++) table[i] = (i * 7 + 3) % n_blocks; /* made distinct: */
    for (int32_t i = 0; i < n_seq * max_blocks; i++)
        for (int32_t j = 0; j < i; j++)
            if (table[j] == table[i]) table[i] = (table[i] + 1) % n_blocks, j = -1;
    float *kv = malloc(sizeof(float) * n_rows * kvw), *vv = malloc(sizeof(float) * n_rows * kvw);
    fill(kv, n_rows * kvw, 1.0f);
    fill(vv, n_rows * kvw, 1.0f);
    int32_t *pos = malloc(sizeof(int32_t) * n_rows), *seq = malloc(sizeof(int32_t) * n_rows);
    for (int64_t i = 0; i < n_rows; i++) pos[i] = (int32_t)(i % ctx), seq[i] = (int32_t)(i / ctx);
    const size_t row_bytes = hearth_kv_row_bytes(type, kvw), cache_bytes = (size_t)n_blocks * bs * row_bytes;
    void *dk = hearth_buf_alloc(gpu(), cache_bytes), *dv = hearth_buf_alloc(gpu(), cache_bytes);
    char *ek = calloc(1, cache_bytes), *ev = calloc(1, cache_bytes);
    hearth_buf_upload(gpu(), dk, ek, cache_bytes); /* rows never stored compare equal */
    hearth_buf_upload(gpu(), dv, ev, cache_bytes);
    int32_t *dtable = up(table, sizeof(int32_t) * n_seq * max_blocks), *dpos = up(pos, sizeof(int32_t) * n_rows),
            *dseq = up(seq, sizeof(int32_t) * n_rows);
    float *dkx = up(kv, sizeof(float) * n_rows * kvw), *dvx = up(vv, sizeof(float) * n_rows * kvw);
    hearth_kv_blocks bl = {.table = dtable, .max_blocks = max_blocks, .block_size = bs};
    hearth_op_kv_store(gpu(), dkx, n_rows, kvw, dseq, dpos, dk, &bl, type);
    hearth_op_kv_store(gpu(), dvx, n_rows, kvw, dseq, dpos, dv, &bl, type);
    /* the stored cache, checked against the CPU backend's store, then used by the reference */
    char *hk = malloc(cache_bytes), *hv = malloc(cache_bytes);
    down(hk, dk, cache_bytes);
    down(hv, dv, cache_bytes);
    hearth_backend *cpu = hearth_backend_cpu_create(2, 4, kvw, 16, NULL);
    CHECK(cpu != NULL);
    if (!cpu) return;
    hearth_kv_blocks hbl = {.table = table, .max_blocks = max_blocks, .block_size = bs};
    hearth_op_kv_store(cpu, kv, n_rows, kvw, seq, pos, ek, &hbl, type);
    hearth_op_kv_store(cpu, vv, n_rows, kvw, seq, pos, ev, &hbl, type);
    hearth_backend_destroy(cpu);
    CHECK(!memcmp(hk, ek, cache_bytes));
    CHECK(!memcmp(hv, ev, cache_bytes));
    /* queries: the last n_q positions, the second half in the second sequence when there is one */
    int64_t qw = (int64_t)n_head * D;
    float *q = malloc(sizeof(float) * n_q * qw), *ref = malloc(sizeof(float) * n_q * qw),
          *got = malloc(sizeof(float) * n_q * qw), *scores = malloc(sizeof(float) * ctx);
    fill(q, n_q * qw, 1.0f);
    int32_t *qpos = malloc(sizeof(int32_t) * n_q), *qseq = malloc(sizeof(int32_t) * n_q);
    for (int64_t t = 0; t < n_q; t++) {
        qpos[t] = decodes ? ctx - 1 - (int32_t)(t * 5 % 17) : ctx - (int32_t)n_q + (int32_t)t;
        qseq[t] = decodes ? (int32_t)t : n_seq > 1 && t >= n_q / 2 ? 1 : 0;
    }
    float scale = 1.0f / sqrtf((float)D);
    const hearth_type wt = type == HEARTH_KV_Q8_0 ? HEARTH_TYPE_Q8_0 : HEARTH_TYPE_Q4_0;
    int32_t lo = ctx; /* the earliest key any query reads */
    for (int64_t t = 0; t < n_q; t++)
        for (int32_t h = 0; h < n_head; h++) {
            int32_t hkv = h / (n_head / n_head_kv), p = qpos[t];
            int64_t j0 = n_swa > 0 && p - n_swa + 1 > 0 ? p - n_swa + 1 : 0;
            if (j0 < lo) lo = (int32_t)j0;
            float *o = ref + (t * n_head + h) * D;
            if (turbo) { /* the CPU's turbo twin: rotated query, dequantized blocks, output rotated back */
                hearth_attn_turbo_args ta = {
                    .k = hk + hearth_kv_row_bytes(type, (int64_t)hkv * D),
                    .v = hv + hearth_kv_row_bytes(type, (int64_t)hkv * D),
                    .k_row = row_bytes, .v_row = row_bytes, .k_bits = hearth_kv_turbo_bits(type),
                    .v_bits = hearth_kv_turbo_bits(type), .table_row = table + qseq[t] * max_blocks,
                    .block_size = bs, .head_dim = D, .head_dim_v = D, .j0 = j0, .j1 = p + 1, .scale = scale,
                    .softcap = softcap};
                const float *qp = q + (t * n_head + h) * D;
                hearth_attn_turbo_ref(1, &qp, &o, &ta);
            } else if (quant) {
                hearth_attn_quant_args qa = {
                    .k = hk + hearth_kv_row_bytes(type, (int64_t)hkv * D),
                    .v = hv + hearth_kv_row_bytes(type, (int64_t)hkv * D),
                    .k_row = row_bytes, .v_row = row_bytes, .k_type = wt, .v_type = wt,
                    .table_row = table + qseq[t] * max_blocks, .block_size = bs, .head_dim = D, .head_dim_v = D,
                    .j0 = j0, .j1 = p + 1, .scale = scale, .softcap = softcap};
                const float *qp = q + (t * n_head + h) * D;
                hearth_attn_quant_ref(1, &qp, &o, &qa);
            } else {
                size_t esz = type == HEARTH_KV_F16 ? 2 : 4;
                hearth_attn_head_paged_ref(q + (t * n_head + h) * D, hk + (size_t)hkv * D * esz,
                                           hv + (size_t)hkv * D * esz, kvw, table + qseq[t] * max_blocks, bs,
                                           type == HEARTH_KV_F16, D, j0, p + 1, scale, softcap, scores, o);
            }
        }
    int32_t *dtable_h = NULL;
    if (holes) {
        int32_t *ht = malloc(sizeof(int32_t) * n_seq * max_blocks), n_holes = 0;
        for (int32_t i = 0; i < n_seq * max_blocks; i++) {
            ht[i] = (i % max_blocks + 1) * bs <= lo ? -1 : table[i];
            n_holes += ht[i] < 0;
        }
        CHECK(n_holes > 0); /* the case has a window that slid */
        dtable_h = up(ht, sizeof(int32_t) * n_seq * max_blocks);
        bl.table = dtable_h;
        free(ht);
    }
    float *dq = up(q, sizeof(float) * n_q * qw), *dout = hearth_buf_alloc(gpu(), sizeof(float) * n_q * qw);
    int32_t *dqpos = up(qpos, sizeof(int32_t) * n_q), *dqseq = up(qseq, sizeof(int32_t) * n_q);
    hearth_attn_args a = {.n_tok = n_q, .n_head = n_head, .n_head_kv = n_head_kv, .head_dim = D, .head_dim_v = D,
                          .q = dq, .out = dout, .pos = dqpos, .seq = dqseq, .k = dk, .v = dv, .blocks = bl,
                          .k_type = type, .v_type = type, .n_swa = n_swa, .scale = scale, .softcap = softcap,
                          .max_len = ctx, .min_run = decodes ? 1 : (int32_t)(n_seq > 1 ? n_q / 2 : n_q),
                          .max_run = decodes ? 1 : 0};
    hearth_op_attention(gpu(), &a);
    down(got, dout, sizeof(float) * n_q * qw);
    fprintf(stderr, "  %s heads %d/%d dim %d ctx %d swa %d softcap %g queries %lld sequences %d%s\n",
            hearth_kv_type_name(type), n_head, n_head_kv, D, ctx, n_swa, softcap, (long long)n_q, n_seq,
            holes ? " holes" : decodes ? " decodes" : "");
    /* the steps the tensor-core kernel takes (attention.cu use_tc: long runs of one sequence;
     * every such case here is short enough, or long enough, not to split) */
    const int32_t min_run = decodes ? 1 : (int32_t)(n_seq > 1 ? n_q / 2 : n_q);
    const bool tc = n_q >= 32 && min_run >= 32 && (D == 64 || D == 128 || D == 256);
    CHECK_REL(got, ref, n_q * qw,
              turbo   ? "attention_turbo" /* never on the tensor cores */
              : quant ? (tc ? "attention_quant_tc" : "attention_quant")
                    : type == HEARTH_KV_F16 ? "attention_f16" : "attention_f32");
    hearth_backend *ph = gpu_per_head();
    CHECK(ph != NULL);
    if (ph) {
        float *got_ph = malloc(sizeof(float) * n_q * qw);
        float *dout_ph = hearth_buf_alloc(ph, sizeof(float) * n_q * qw);
        a.out = dout_ph;
        hearth_op_attention(ph, &a);
        hearth_buf_download(ph, got_ph, dout_ph, sizeof(float) * n_q * qw);
        CHECK(!memcmp(got_ph, got, sizeof(float) * n_q * qw)); /* fused-sdpa off: the same bits */
        hearth_buf_free(ph, dout_ph);
        free(got_ph);
    }
    if (dtable_h) dfree(dtable_h);
    void *dbufs[] = {dk, dv, dtable, dpos, dseq, dkx, dvx, dq, dout, dqpos, dqseq};
    for (size_t i = 0; i < sizeof dbufs / sizeof dbufs[0]; i++) dfree(dbufs[i]);
    void *hbufs[] = {table, kv, vv, pos, seq, hk, hv, ek, ev, q, ref, got, scores, qpos, qseq};
    for (size_t i = 0; i < sizeof hbufs / sizeof hbufs[0]; i++) free(hbufs[i]);
}

static void attention_case(hearth_kv_type type, int32_t n_head, int32_t n_head_kv, int32_t D, int32_t ctx,
                           int32_t n_swa, float softcap, int64_t n_q, int n_seq) {
    attention_case_h(type, n_head, n_head_kv, D, ctx, n_swa, softcap, n_q, n_seq, PLAIN);
}

TEST(attention_paged) {
    NEED_GPU();
    for (hearth_kv_type f = HEARTH_KV_F32; f <= HEARTH_KV_F16; f++) {
        attention_case(f, 8, 2, 64, 37, 0, 0, 37, 1);      /* prefill of a short prompt, GQA 4 */
        attention_case(f, 4, 4, 128, 3000, 0, 0, 1, 1);    /* decode over a long context: split keys */
        attention_case(f, 8, 1, 256, 700, 128, 0, 3, 1);   /* head_dim 256, sliding window, GQA 8 */
        attention_case(f, 4, 2, 32, 300, 0, 50.0f, 5, 1);  /* softcap */
        attention_case(f, 8, 2, 128, 3000, 0, 0, 2, 1);   /* decode, GQA 4, split keys */
        attention_case_h(f, 32, 8, 128, 200, 0, 0, 64, 64, DECODES); /* a batch of 64 decodes */
        attention_case_h(f, 8, 1, 256, 300, 64, 0, 20, 20, DECODES); /* decodes, window, GQA 8 */
    }
}

/* long steps over an f16 cache take the tensor-core kernel: several query tiles, a partial
 * last tile, queries after a cached prefix, tiles that mix two sequences */
TEST(attention_paged_tensor_cores) {
    NEED_GPU();
    attention_case(HEARTH_KV_F16, 8, 2, 128, 300, 0, 0, 300, 1);       /* whole prompt, GQA 4 */
    attention_case(HEARTH_KV_F16, 4, 1, 64, 500, 100, 30.0f, 170, 1);  /* sliding window, softcap, prefix */
    attention_case(HEARTH_KV_F16, 4, 2, 256, 200, 0, 0, 130, 1);       /* head_dim 256 */
    attention_case(HEARTH_KV_F16, 8, 8, 128, 260, 0, 0, 200, 2);       /* two sequences in the step */
    attention_case(HEARTH_KV_F16, 4, 2, 64, 90, 0, 0, 66, 2);          /* a short step, one tile, two runs */
}

/* The quantized cache (q8_0, q4_0): prefill (the tensor-core kernel: 37, 170 and 200 queries)
 * and decode, GQA up to 8, sliding windows (with the slid-out blocks' table entries gone),
 * softcap, two sequences in a step, head sizes 32 to 256; each against the CPU's plain
 * quantized-cache attention over the same stored bytes. */
TEST(attention_paged_quantized) {
    NEED_GPU();
    for (hearth_kv_type t = HEARTH_KV_Q8_0; t <= HEARTH_KV_Q4_0; t++) {
        attention_case(t, 8, 2, 64, 37, 0, 0, 37, 1);           /* prefill of a short prompt, GQA 4 */
        attention_case(t, 4, 4, 128, 3000, 0, 0, 1, 1);         /* decode over a long context: split keys */
        attention_case(t, 8, 2, 128, 3000, 0, 0, 2, 1);         /* decode, GQA 4, split keys */
        attention_case(t, 8, 1, 256, 700, 128, 0, 3, 1);        /* head_dim 256, window, GQA 8 */
        attention_case(t, 4, 2, 32, 300, 0, 50.0f, 5, 1);       /* softcap */
        attention_case(t, 8, 8, 128, 260, 0, 0, 200, 2);        /* a long step of two sequences */
        attention_case(t, 4, 1, 64, 500, 100, 30.0f, 170, 1);   /* window and softcap over a prefix */
        attention_case_h(t, 8, 2, 64, 900, 64, 0, 1, 1, HOLES);   /* decode, window, holes in the table */
        attention_case_h(t, 4, 2, 128, 400, 48, 0, 40, 2, HOLES); /* two sequences, windows, holes */
        attention_case_h(t, 32, 8, 128, 200, 0, 0, 48, 48, DECODES); /* a batch of 48 decodes */
    }
}

/* The turbo cache (turbo2 .. turbo8 keys and values: the CPU's kv_store bytes, then attention
 * against the CPU's plain turbo twin): prefill of a short prompt and long steps (which stay off
 * the tensor cores), decode with split keys, GQA up to 8, windows with holes in the table,
 * softcap, two sequences in a step, heads of 64 to 256. */
TEST(attention_paged_turbo) {
    NEED_GPU();
    for (hearth_kv_type t = HEARTH_KV_T2; t <= HEARTH_KV_T8; t++) {
        attention_case(t, 8, 2, 64, 37, 0, 0, 37, 1);            /* prefill of a short prompt, GQA 4 */
        attention_case(t, 4, 4, 128, 3000, 0, 0, 1, 1);          /* decode over a long context: split keys */
        attention_case(t, 8, 1, 256, 700, 128, 0, 3, 1);         /* head_dim 256, window, GQA 8 */
        attention_case(t, 4, 2, 64, 300, 0, 50.0f, 5, 1);        /* softcap */
        attention_case(t, 8, 8, 128, 260, 0, 0, 200, 2);         /* a long step of two sequences */
        attention_case_h(t, 8, 2, 64, 900, 64, 0, 1, 1, true);   /* decode, window, holes in the table */
    }
}

/* kv_store of turbo rows: the bytes hearth_turbo_quantize_row writes (the CPU backend's
 * kv_store), for every bit width, on random rows and on pieces made to hit the codec's edges:
 * all zeros (scale 0, the middle code), one heavy channel (the rotation spreads it), a row whose
 * rotated values are exactly the levels, and a constant row (all its energy in one rotated
 * element). */
TEST(kv_store_turbo_matches_cpu) {
    NEED_GPU();
    const int64_t width = 4 * 64, n_tok = 10;
    const int32_t bs = 4, max_blocks = 4, n_blocks = 7;
    int32_t table[8] = {6, 1, 4, 0, 2, 5, 3, 3}, pos[10], seq[10];
    float *x = malloc(sizeof(float) * n_tok * width);
    fill(x, n_tok * width, 2.0f);
    for (int64_t t = 0; t < n_tok; t++) pos[t] = (int32_t)(t % 6) * 2, seq[t] = (int32_t)(t / 6);
    for (int i = 0; i < 64; i++) x[i] = 0.0f;                 /* token 0, piece 0: zeros */
    x[64 + 17] = 40.0f;                                       /* piece 1: a heavy channel */
    for (int i = 0; i < 64; i++) x[128 + i] = 0.75f;          /* piece 2: constant */
    float *lev = x + width + 64;                              /* token 1, piece 1: the 3-bit levels */
    for (int i = 0; i < 64; i++) lev[i] = hearth_turbo_level(3, i % 8) * 0.5f;
    hearth_turbo_unrotate(lev, 64);                           /* so that its rotation is the levels */
    int32_t *dtable = up(table, sizeof table), *dpos = up(pos, sizeof pos), *dseq = up(seq, sizeof seq);
    float *dx = up(x, sizeof(float) * n_tok * width);
    hearth_backend *cpu = hearth_backend_cpu_create(1, 16, width, 16, NULL);
    CHECK(cpu != NULL);
    for (hearth_kv_type t = HEARTH_KV_T2; cpu && t <= HEARTH_KV_T8; t++) {
        const size_t bytes = (size_t)n_blocks * bs * hearth_kv_row_bytes(t, width);
        char *ref = calloc(1, bytes), *got = malloc(bytes);
        void *dc = up(ref, bytes);
        hearth_kv_blocks hb = {.table = table, .max_blocks = max_blocks, .block_size = bs};
        hearth_kv_blocks db = {.table = dtable, .max_blocks = max_blocks, .block_size = bs};
        hearth_op_kv_store(cpu, x, n_tok, width, seq, pos, ref, &hb, t);
        hearth_op_kv_store(gpu(), dx, n_tok, width, dseq, dpos, dc, &db, t);
        down(got, dc, bytes);
        fprintf(stderr, "  %s\n", hearth_kv_type_name(t));
        CHECK(!memcmp(got, ref, bytes));
        size_t first = 0;
        while (first < bytes && got[first] == ref[first]) first++;
        if (first < bytes) fprintf(stderr, "  first difference at byte %zu\n", first);
        dfree(dc);
        free(ref);
        free(got);
    }
    if (cpu) hearth_backend_destroy(cpu);
    void *dbufs[] = {dtable, dpos, dseq, dx};
    for (size_t i = 0; i < sizeof dbufs / sizeof dbufs[0]; i++) dfree(dbufs[i]);
    free(x);
}

/* kv_store of q8_0 / q4_0 rows: the bytes the CPU backend's kv_store writes for the same rows,
 * on random rows and on blocks made to hit the quantizers' edges: all zeros, a negative extreme,
 * two elements of the largest magnitude with opposite signs (the first one's sign is q4_0's),
 * products exactly half-way between integers (q8_0 rounds them to even), and a q4_0 element
 * that rounds past 15. */
TEST(kv_store_quantized_matches_cpu) {
    NEED_GPU();
    const int64_t width = 4 * 32, n_tok = 12;
    const int32_t bs = 4, max_blocks = 4, n_blocks = 7;
    int32_t table[8] = {6, 1, 4, 0, 2, 5, 3, 3}, pos[12], seq[12];
    float *x = malloc(sizeof(float) * n_tok * width);
    fill(x, n_tok * width, 3.0f);
    for (int64_t t = 0; t < n_tok; t++) pos[t] = (int32_t)(t % 7) * 2, seq[t] = (int32_t)(t / 7);
    float *b = x;                          /* token 0, block 0: zeros */
    for (int i = 0; i < 32; i++) b[i] = 0.0f;
    b = x + 32;                            /* block 1: amax 127 (q8_0 multiplier 1), halves */
    for (int i = 0; i < 32; i++) b[i] = (float)(i - 16) + 0.5f;
    b[5] = -127.0f;
    b = x + 64;                            /* block 2: -8 first, then 8 (q4_0: d = 1, 8 -> 16 -> 15) */
    for (int i = 0; i < 32; i++) b[i] = (float)(i % 16) - 7.5f;
    b[3] = -8.0f;
    b[20] = 8.0f;
    b = x + 96;                            /* block 3: a positive extreme, tiny values */
    for (int i = 0; i < 32; i++) b[i] = 1e-6f * (float)i;
    b[31] = 2.0f;
    int32_t *dtable = up(table, sizeof table), *dpos = up(pos, sizeof pos), *dseq = up(seq, sizeof seq);
    float *dx = up(x, sizeof(float) * n_tok * width);
    hearth_backend *cpu = hearth_backend_cpu_create(1, 16, width, 16, NULL);
    CHECK(cpu != NULL);
    for (hearth_kv_type t = HEARTH_KV_Q8_0; cpu && t <= HEARTH_KV_Q4_0; t++) {
        const size_t bytes = (size_t)n_blocks * bs * hearth_kv_row_bytes(t, width);
        char *ref = calloc(1, bytes), *got = malloc(bytes);
        void *dc = up(ref, bytes);
        hearth_kv_blocks hb = {.table = table, .max_blocks = max_blocks, .block_size = bs};
        hearth_kv_blocks db = {.table = dtable, .max_blocks = max_blocks, .block_size = bs};
        hearth_op_kv_store(cpu, x, n_tok, width, seq, pos, ref, &hb, t);
        hearth_op_kv_store(gpu(), dx, n_tok, width, dseq, dpos, dc, &db, t);
        down(got, dc, bytes);
        fprintf(stderr, "  %s\n", hearth_kv_type_name(t));
        CHECK(!memcmp(got, ref, bytes));
        size_t first = 0;
        while (first < bytes && got[first] == ref[first]) first++;
        if (first < bytes) fprintf(stderr, "  first difference at byte %zu\n", first);
        dfree(dc);
        free(ref);
        free(got);
    }
    if (cpu) hearth_backend_destroy(cpu);
    dfree(dtable);
    dfree(dpos);
    dfree(dseq);
    dfree(dx);
    free(x);
}

int main(int argc, char **argv) {
    int rc = test_main(argc, argv);
    if (gpu()) hearth_backend_destroy(gpu());
    return rc;
}
