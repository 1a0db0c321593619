/*
 * test_cuda_matmul.c - the CUDA backend's matmul against the CPU reference (each weight row
 * dequantized by quant_ref.c and dotted in double, or the scalar set's 8-bit dots), through the
 * backend interface: every weight type at decode and prefill sizes, matmul_n, the matrix-vector
 * layouts, the 8-bit activations written by the op before, gate/up fused with the GLU, the
 * tensor-core kernel of batched decode steps, and column views of a float weight.
 * Tolerances are cuda_test.h's table. Without a GPU (or in a build without CUDA) every test
 * skips. Run under `compute-sanitizer --tool memcheck` on the GPU host (docs/cuda.md).
 */
#include "cuda_test.h"

#include <sys/mman.h>
#include <unistd.h>

/* y = x W^T for each type at decode sizes (GEMV) and a prefill size (cuBLAS); widths whose rows
 * fall in 16-byte pieces (the fast kernels: short rows, long ones, few rows) and one whose do not */
TEST(matmul_every_type) {
    NEED_GPU();
    const int64_t shapes[][2] = {{70, 512}, {40, 4096}, {24, 16384}, {33, 480}}; /* rows, width */
    const int64_t toks[] = {1, 3, 8, 37};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int ti = 0; ti < N_TYPES; ti++) {
            const int64_t ne1 = shapes[si][0], ne0 = shapes[si][1];
            if (TYPES[ti].t >= HEARTH_TYPE_Q4_K && TYPES[ti].t <= HEARTH_TYPE_Q6_K && ne0 % 256) continue;
            tweight tw = *weight_of(ti, ne1, ne0);
            for (size_t k = 0; k < sizeof toks / sizeof toks[0]; k++) {
                int64_t T = toks[k], ldy = ne1 + 3;
                float *x = malloc(sizeof(float) * T * ne0), *ref = calloc((size_t)(T * ldy), sizeof(float)),
                      *got = calloc((size_t)(T * ldy), sizeof(float));
                fill(x, T * ne0, 2.0f);
                const char *op = matmul_ref(ti, &tw, x, T, ref, ldy);
                float *d_x = up(x, sizeof(float) * T * ne0), *d_y = hearth_buf_alloc(gpu(), sizeof(float) * T * ldy);
                hearth_op_matmul(gpu(), &tw.w, d_x, T, d_y, ldy);
                down(got, d_y, sizeof(float) * T * ldy);
                fprintf(stderr, "  %s [%lld x %lld] x %lld tokens\n", hearth_type_name(TYPES[ti].t), (long long)ne1,
                        (long long)ne0, (long long)T);
                CHECK_REL(got, ref, T * ldy, op);
                dfree(d_x);
                dfree(d_y);
                free(x);
                free(ref);
                free(got);
            }
        }
}

/* A view of some columns of a float weight (rows row_bytes apart, narrower than that: the Gemma
 * 4 assistant's pre-projection halves, models/gemma4_assistant.c): each half of a [40][2 x 256]
 * weight whose last byte is the last before an unmapped page, at decode and prefill sizes. The
 * right half's last row ends where the tensor does: a copy of rows x row_bytes from its start
 * would read into the unmapped page. */
TEST(matmul_column_view_of_a_float_weight) {
    NEED_GPU();
    const int64_t ne1 = 40, W = 256, toks[] = {1, 3, 8, 37};
    const int tis[] = {0, 1, 2}; /* F32, F16, BF16 */
    long pg = sysconf(_SC_PAGESIZE);
    for (size_t k = 0; k < sizeof tis / sizeof tis[0]; k++) {
        int ti = tis[k];
        size_t half = hearth_row_size(TYPES[ti].t, W), rb = 2 * half, bytes = rb * (size_t)ne1;
        size_t span = (bytes + (size_t)pg - 1) / (size_t)pg * (size_t)pg;
        /* never unmapped: the backend keys its copies by host address (cuda_test.h, weight_set) */
        char *map = mmap(NULL, span + (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(map != MAP_FAILED);
        if (map == MAP_FAILED) return;
        CHECK_EQ(mprotect(map + span, (size_t)pg, PROT_NONE), 0);
        char *data = map + span - bytes;
        float *row = malloc(sizeof(float) * (size_t)(2 * W)), *deq = malloc(sizeof(float) * (size_t)(2 * W * ne1));
        for (int64_t r = 0; r < ne1; r++) {
            fill(row, 2 * W, 1.0f);
            TYPES[ti].from(row, data + (size_t)r * rb, 2 * W);
            TYPES[ti].to(data + (size_t)r * rb, deq + r * 2 * W, 2 * W);
        }
        for (int side = 0; side < 2; side++) {
            tweight tw = {.w = {.type = TYPES[ti].t, .ne0 = W, .ne1 = ne1, .row_bytes = rb,
                                .data = data + (size_t)side * half},
                          .deq = malloc(sizeof(float) * (size_t)(W * ne1))};
            for (int64_t r = 0; r < ne1; r++) memcpy(tw.deq + r * W, deq + r * 2 * W + side * W, sizeof(float) * W);
            for (size_t it = 0; it < sizeof toks / sizeof toks[0]; it++) {
                int64_t T = toks[it], ldy = ne1;
                float *x = malloc(sizeof(float) * (size_t)(T * W)), *ref = calloc((size_t)(T * ldy), sizeof(float)),
                      *got = calloc((size_t)(T * ldy), sizeof(float));
                fill(x, T * W, 2.0f);
                const char *op = matmul_ref(ti, &tw, x, T, ref, ldy);
                float *d_x = up(x, sizeof(float) * (size_t)(T * W)),
                      *d_y = hearth_buf_alloc(gpu(), sizeof(float) * (size_t)(T * ldy));
                hearth_op_matmul(gpu(), &tw.w, d_x, T, d_y, ldy);
                down(got, d_y, sizeof(float) * (size_t)(T * ldy));
                fprintf(stderr, "  %s %s half of [%lld x %lld] x %lld tokens\n", hearth_type_name(TYPES[ti].t),
                        side ? "right" : "left", (long long)ne1, (long long)(2 * W), (long long)T);
                CHECK_REL(got, ref, T * ldy, op);
                dfree(d_x);
                dfree(d_y);
                free(x);
                free(ref);
                free(got);
            }
            free(tw.deq);
        }
        free(row);
        free(deq);
    }
}

/* matmul_n: three weights that share the input (one launch at decode sizes), each against its
 * own reference, written with its own row stride, and equal bit for bit to its own matmul */
TEST(matmul_n_shares_one_launch) {
    NEED_GPU();
    const int64_t rows[3] = {64, 16, 24}, widths[] = {512, 4096};
    const int64_t toks[] = {1, 5, 12};
    for (size_t wi = 0; wi < 2; wi++)
        for (int ti = 0; ti < N_TYPES; ti++) {
            const int64_t ne0 = widths[wi];
            const hearth_weight *w[3];
            tweight *tw[3];
            for (int i = 0; i < 3; i++) {
                tw[i] = weight_of(ti, rows[i], ne0);
                w[i] = &tw[i]->w;
            }
            for (size_t k = 0; k < sizeof toks / sizeof toks[0]; k++) {
                int64_t T = toks[k], ldy[3];
                float *x = malloc(sizeof(float) * T * ne0), *d_y[3], *ref[3], *got[3];
                fill(x, T * ne0, 2.0f);
                float *d_x = up(x, sizeof(float) * T * ne0);
                for (int i = 0; i < 3; i++) {
                    ldy[i] = rows[i] + i;
                    ref[i] = calloc((size_t)(T * ldy[i]), sizeof(float));
                    got[i] = calloc((size_t)(T * ldy[i]), sizeof(float));
                    d_y[i] = hearth_buf_alloc(gpu(), sizeof(float) * T * ldy[i]);
                }
                hearth_op_matmul_n(gpu(), w, d_y, ldy, 3, d_x, T);
                for (int i = 0; i < 3; i++) {
                    const char *op = matmul_ref(ti, tw[i], x, T, ref[i], ldy[i]);
                    down(got[i], d_y[i], sizeof(float) * T * ldy[i]);
                    fprintf(stderr, "  matmul_n %s width %lld, weight %d x %lld tokens\n",
                            hearth_type_name(TYPES[ti].t), (long long)ne0, i, (long long)T);
                    CHECK_REL(got[i], ref[i], T * ldy[i], op);
                    /* the weight alone gives the same bits (above decode sizes the shared
                     * activations are rounded once for the three GEMMs) */
                    float *alone = calloc((size_t)(T * ldy[i]), sizeof(float));
                    hearth_op_matmul(gpu(), w[i], d_x, T, d_y[i], ldy[i]);
                    down(alone, d_y[i], sizeof(float) * T * ldy[i]);
                    CHECK(!memcmp(alone, got[i], sizeof(float) * T * ldy[i]));
                    free(alone);
                    dfree(d_y[i]);
                    free(ref[i]);
                    free(got[i]);
                }
                dfree(d_x);
                free(x);
            }
        }
}

/* Each token's row of an n-token product against the one-token launch of that token alone, bit
 * for bit: speculative decoding's verify step relies on it. glu: through ffn_glu (y[1] for up). */
static void check_tokens_alone(const tweight *tw, const tweight *tu, const float *x, int64_t T, int64_t ne0,
                               const float *got, int64_t ne1, int64_t ldy, int kind, const char *what) {
    float *d_x = hearth_buf_alloc(gpu(), sizeof(float) * ne0), *d_y = hearth_buf_alloc(gpu(), sizeof(float) * ldy),
          *d_u = tu ? hearth_buf_alloc(gpu(), sizeof(float) * ldy) : NULL, *one = malloc(sizeof(float) * ldy);
    for (int64_t t = 0; t < T && T > 1; t++) {
        hearth_buf_upload(gpu(), d_x, x + t * ne0, sizeof(float) * ne0);
        if (tu) hearth_op_ffn_glu(gpu(), &tw->w, &tu->w, d_x, 1, d_y, d_u, (hearth_glu_kind)kind);
        else hearth_op_matmul(gpu(), &tw->w, d_x, 1, d_y, ldy);
        down(one, d_y, sizeof(float) * ldy);
        if (memcmp(one, got + t * ldy, sizeof(float) * (size_t)ne1)) {
            fprintf(stderr, "  %s: token %lld of %lld differs from its one-token launch\n", what, (long long)t,
                    (long long)T);
            CHECK(0);
        }
    }
    dfree(d_x);
    dfree(d_y);
    if (d_u) dfree(d_u);
    free(one);
}

/* The matrix-vector layouts (gemv.cu) at decode sizes, against the reference: the waves, the
 * persistent grid as chosen, the default mix of the two, and the persistent grid capped to one
 * or three blocks at each thread count per row, so that every row group streams many rows and
 * its loads run across row ends (rows of 1 to 4 slots per thread, P up to 256); and every token
 * of 2..8 equal to its one-token launch in each layout (rows not a multiple of a row group's). */
TEST(matmul_gemv_layouts) {
    NEED_GPU();
    const int64_t shapes[][2] = {{70, 512}, {37, 4096}, {9, 16384}};
    const int64_t toks[] = {1, 2, 3, 4, 5, 6, 7, 8};
    const int types[] = {0, 1, 2, 3, 4, 7}; /* f32 f16 bf16 q4_0 q4_1 q8_0 */
    const int cfg[][4] = {{HC_MV_WAVES, 0, 0, 4}, {HC_MV_WAVES, 0, 0, 1}, {HC_MV_PERSIST, 0, 0, 4},
                          {HC_MV_AUTO, 0, 0, 4},  {HC_MV_PERSIST, 1, 0, 4}, {HC_MV_PERSIST, 1, 16, 4},
                          {HC_MV_PERSIST, 3, 32, 4}, {HC_MV_PERSIST, 1, 64, 4}, {HC_MV_PERSIST, 3, 128, 4},
                          {HC_MV_PERSIST, 1, 256, 4}}; /* layout, blocks, P, rows per waves group */
    for (size_t si = 0; si < 3; si++)
        for (size_t k = 0; k < 6; k++) {
            const int ti = types[k];
            const int64_t ne1 = shapes[si][0], ne0 = shapes[si][1];
            tweight tw = *weight_of(ti, ne1, ne0);
            for (size_t tk = 0; tk < sizeof toks / sizeof toks[0]; tk++) {
                int64_t T = toks[tk], ldy = ne1 + 1;
                float *x = malloc(sizeof(float) * T * ne0), *ref = calloc((size_t)(T * ldy), sizeof(float)),
                      *got = calloc((size_t)(T * ldy), sizeof(float));
                fill(x, T * ne0, 2.0f);
                const char *op = matmul_ref(ti, &tw, x, T, ref, ldy);
                float *d_x = up(x, sizeof(float) * T * ne0), *d_y = hearth_buf_alloc(gpu(), sizeof(float) * T * ldy);
                for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
                    hc_mv_configure(cfg[c][0], cfg[c][1], cfg[c][2]);
                    hc_mv_rows_configure(cfg[c][3]);
                    hearth_op_matmul(gpu(), &tw.w, d_x, T, d_y, ldy);
                    down(got, d_y, sizeof(float) * T * ldy);
                    fprintf(stderr, "  %s [%lld x %lld] x %lld tokens, layout %d, %d blocks, P %d, rows %d\n",
                            hearth_type_name(TYPES[ti].t), (long long)ne1, (long long)ne0, (long long)T, cfg[c][0],
                            cfg[c][1], cfg[c][2], cfg[c][3]);
                    CHECK_REL(got, ref, T * ldy, op);
                    check_tokens_alone(&tw, NULL, x, T, ne0, got, ne1, ldy, 0, "matmul_gemv_layouts");
                    memset(got, 0, sizeof(float) * T * ldy);
                    hearth_buf_upload(gpu(), d_y, got, sizeof(float) * T * ldy); /* no result carries over */
                }
                hc_mv_configure(HC_MV_AUTO, 0, 0);
                hc_mv_rows_configure(4);
                dfree(d_x);
                dfree(d_y);
                free(x);
                free(ref);
                free(got);
            }
        }
}

/* 8-bit activations quantized inside the one-token persistent kernel (HEARTH_CUDA_FUSE_Q8):
 * the product against the reference and against the product with that off, and the in-kernel
 * path taken exactly for one token (its count moves). */
static void q8_inside_case(int ti, int64_t width, int64_t T) {
    const int64_t rows = 40, n = T * width, ldy = rows;
    tweight tw = *weight_of(ti, rows, width);
    float *a = malloc(sizeof(float) * n), *y[2], *ref = malloc(sizeof(float) * T * ldy);
    fill(a, n, 3.0f);
    const char *op = matmul_ref(ti, &tw, a, T, ref, ldy);
    for (int fused = 1; fused >= 0; fused--) {
        hc_q8_fuse_configure(fused);
        y[fused] = malloc(sizeof(float) * T * ldy);
        float *da = up(a, sizeof(float) * n), *dy = hearth_buf_alloc(gpu(), sizeof(float) * T * ldy);
        long before = hc_q8_fused_count();
        hearth_op_matmul(gpu(), &tw.w, da, T, dy, ldy);
        down(y[fused], dy, sizeof(float) * T * ldy);
        CHECK_EQ(hc_q8_fused_count() - before, fused && T == 1);
        fprintf(stderr, "  %s width %lld x %lld tokens, quantized %s\n", hearth_type_name(TYPES[ti].t),
                (long long)width, (long long)T, fused && T == 1 ? "inside" : "by its own launch");
        CHECK_REL(y[fused], ref, T * ldy, op);
        dfree(da);
        dfree(dy);
    }
    CHECK_REL(y[0], y[1], T * ldy, "matmul_gemv_q8");
    hc_q8_fuse_configure(false); /* the default */
    free(a);
    free(ref);
    free(y[0]);
    free(y[1]);
}

TEST(matmul_gemv_q8_quantized_inside) {
    NEED_GPU();
    const int types[] = {3, 4, 7}; /* q4_0 q4_1 q8_0 */
    const int64_t widths[] = {1024, 4096}, toks[] = {1, 3, 8};
    for (int k = 0; k < 3; k++)
        for (int wi = 0; wi < 2; wi++)
            for (int tk = 0; tk < 3; tk++) q8_inside_case(types[k], widths[wi], toks[tk]);
}

/* The fused op ffn_glu (backend.h): one launch at decode sizes for 16-bit and f32 weights (the
 * up output is then left as it was, as the op's contract allows: the test sees which path
 * ran), also with the grid capped (many gate/up row pairs per thread), against the reference
 * products through the reference activation; with the fusion off, the two products and the
 * GLU; and matmul_n, a download, then glu: the products as asked. The fused result equals the
 * unfused one bit for bit (compiled-activations is an A/B lever of the same bits). */
TEST(matmul_gemv_gate_up_then_glu) {
    NEED_GPU();
    const int types[] = {0, 1, 2, 3}; /* f32 f16 bf16, and q4_0 (never fused) */
    const int64_t rows = 70, widths[] = {512, 4096}, toks[] = {1, 3, 8};
    for (int k = 0; k < 4; k++)
        for (int wi = 0; wi < 2; wi++)
            for (int tk = 0; tk < 3; tk++)
                for (int kind = 0; kind < 3; kind++)
                    for (int fused = 3; fused >= 0; fused--) { /* 1: as chosen, 2 and 3: capped grids */
                        const int ti = types[k];
                        const int64_t ne0 = widths[wi], T = toks[tk], n = T * rows;
                        tweight *tg = weight_of(ti, rows, ne0), *tu = up_weight_of(ti, rows, ne0);
                        const hearth_weight *w[2] = {&tg->w, &tu->w};
                        float *x = malloc(sizeof(float) * T * ne0), *rg = malloc(sizeof(float) * n),
                              *ru = malloc(sizeof(float) * n), *got = malloc(sizeof(float) * n);
                        fill(x, T * ne0, 2.0f);
                        const char *op = matmul_ref(ti, tg, x, T, rg, rows);
                        matmul_ref(ti, tu, x, T, ru, rows);
                        float *d_x = up(x, sizeof(float) * T * ne0), *dy[2];
                        dy[0] = hearth_buf_alloc(gpu(), sizeof(float) * n);
                        dy[1] = hearth_buf_alloc(gpu(), sizeof(float) * n);
                        const int64_t ld[2] = {rows, rows};
                        hc_glu_fuse_configure(fused != 0);
                        hc_mv_configure(HC_MV_PERSIST, fused == 2 ? 1 : fused == 3 ? 3 : 0, fused == 3 ? 256 : 0);
                        const bool flushed = kind == 0 && fused <= 1; /* matmul_n, a download, glu */
                        if (flushed) { /* the products themselves */
                            hearth_op_matmul_n(gpu(), w, dy, ld, 2, d_x, T);
                            down(got, dy[1], sizeof(float) * n);
                            CHECK_REL(got, ru, n, op);
                            down(got, dy[0], sizeof(float) * n);
                            CHECK_REL(got, rg, n, op);
                            hearth_op_glu(gpu(), dy[0], dy[1], n, (hearth_glu_kind)kind);
                        } else {
                            hearth_op_ffn_glu(gpu(), &tg->w, &tu->w, d_x, T, dy[0], dy[1], (hearth_glu_kind)kind);
                        }
                        down(got, dy[0], sizeof(float) * n);
                        if (!flushed) /* each token as its own launch gives (as in a verify step) */
                            check_tokens_alone(tg, tu, x, T, ne0, got, rows, rows, kind, "ffn_glu");
                        if (fused == 1 && !flushed) { /* the same bits as the unfused path */
                            float *plain_g = malloc(sizeof(float) * n);
                            float *dz[2] = {hearth_buf_alloc(gpu(), sizeof(float) * n),
                                            hearth_buf_alloc(gpu(), sizeof(float) * n)};
                            hc_glu_fuse_configure(false);
                            hearth_op_ffn_glu(gpu(), &tg->w, &tu->w, d_x, T, dz[0], dz[1], (hearth_glu_kind)kind);
                            hc_glu_fuse_configure(true);
                            down(plain_g, dz[0], sizeof(float) * n);
                            CHECK_EQ(memcmp(plain_g, got, sizeof(float) * (size_t)n), 0);
                            dfree(dz[0]);
                            dfree(dz[1]);
                            free(plain_g);
                        }
                        if (kind == 0) hearth_swiglu_ref(rg, ru, n);
                        else if (kind == 1) hearth_geglu_ref(rg, ru, n);
                        else hearth_geglu_f16_ref(rg, ru, n);
                        const bool plain = ti < 3;
                        fprintf(stderr, "  %s width %lld x %lld tokens, glu %d, fusion %d\n",
                                hearth_type_name(TYPES[ti].t), (long long)ne0, (long long)T, kind, fused);
                        CHECK_REL(got, rg, n, kind == 2 ? "glu_f16" : plain ? "matmul_glu" : "matmul_gemv_q8");
                        down(got, dy[1], sizeof(float) * n);
                        bool zero = true;
                        for (int64_t i = 0; i < n; i++) zero = zero && got[i] == 0.0f;
                        /* the fused launch (SwiGLU rows only) leaves up's output unwritten */
                        CHECK_EQ(zero, fused && plain && !flushed && kind == 0);
                        hc_glu_fuse_configure(true);
                        hc_mv_configure(HC_MV_AUTO, 0, 0);
                        dfree(d_x);
                        dfree(dy[0]);
                        dfree(dy[1]);
                        free(x);
                        free(rg);
                        free(ru);
                        free(got);
                    }
}

/* Batched-decode sizes on 16-bit, Q8_0, Q4_0, Q4_K and Q6_K weights (skinny.cu's tensor-core kernel,
 * 9 to 128 tokens; the quantized rows dequantized in its load path): each count of 8-token tiles, rows that are not whole 128-row blocks, widths split into slices and not,
 * against the reference; the same call twice gives the same bits (the slices are added in order);
 * a width that is not a multiple of 64 still gets the right answer (from cuBLAS) */
TEST(matmul_skinny_batched_decode) {
    NEED_GPU();
    const int64_t shapes[][2] = {{200, 4096}, {70, 512}, {1000, 2048}, {24, 480}}; /* rows, width */
    const int64_t toks[] = {9, 16, 17, 40, 64, 65, 128};
    const int     types[] = {1, 2, 7, 3, 8, 10}; /* f16, bf16, q8_0, q4_0, q4_K, q6_K */
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (size_t ki = 0; ki < sizeof types / sizeof types[0]; ki++) {
            const int ti = types[ki];
            const int64_t ne1 = shapes[si][0], ne0 = shapes[si][1];
            if (TYPES[ti].t >= HEARTH_TYPE_Q4_K && TYPES[ti].t <= HEARTH_TYPE_Q6_K && ne0 % 256) continue;
            tweight tw = *weight_of(ti, ne1, ne0);
            for (size_t k = 0; k < sizeof toks / sizeof toks[0]; k++) {
                int64_t T = toks[k], ldy = ne1 + 5;
                float *x = malloc(sizeof(float) * T * ne0), *ref = calloc((size_t)(T * ldy), sizeof(float)),
                      *got = calloc((size_t)(T * ldy), sizeof(float)), *again = calloc((size_t)(T * ldy), sizeof(float));
                fill(x, T * ne0, 2.0f);
                const char *op = matmul_ref(ti, &tw, x, T, ref, ldy);
                float *d_x = up(x, sizeof(float) * T * ne0), *d_y = hearth_buf_alloc(gpu(), sizeof(float) * T * ldy);
                hearth_buf_upload(gpu(), d_y, got, sizeof(float) * T * ldy); /* zeros between the rows */
                hearth_op_matmul(gpu(), &tw.w, d_x, T, d_y, ldy);
                down(got, d_y, sizeof(float) * T * ldy);
                hearth_op_matmul(gpu(), &tw.w, d_x, T, d_y, ldy);
                down(again, d_y, sizeof(float) * T * ldy);
                fprintf(stderr, "  skinny %s [%lld x %lld] x %lld tokens\n", hearth_type_name(TYPES[ti].t),
                        (long long)ne1, (long long)ne0, (long long)T);
                CHECK_REL(got, ref, T * ldy, op);
                CHECK(!memcmp(got, again, sizeof(float) * T * ldy));
                for (int64_t t = 0; t < T; t++) /* the gaps between rows of y are not written */
                    for (int64_t o = ne1; o < ldy; o++) CHECK(got[t * ldy + o] == 0.0f);
                dfree(d_x);
                dfree(d_y);
                free(x);
                free(ref);
                free(got);
                free(again);
            }
        }
}

int main(int argc, char **argv) {
    int rc = test_main(argc, argv);
    if (gpu()) hearth_backend_destroy(gpu());
    return rc;
}
