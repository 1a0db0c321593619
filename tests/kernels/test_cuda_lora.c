/*
 * test_cuda_lora.c - the CUDA backend's segmented LoRA update (backend/cuda/lora.cu) against the
 * reference (hearth_lora_ref, kernels/ref/lora_ref.h), through the backend's lora op.
 *
 * Random segments with gaps between them (rows in no segment must come back bit for bit as they
 * went in), ranks 1, 8, 16 and 64 (and 256, the largest taken), f16 and f32 storage, mixed in one
 * call, y wider than n_out, decode shapes (one row per segment) and prefill shapes (up to 70 rows,
 * partial row tiles), and more segments than one launch takes (HC_LORA_MAX_SEG, 32). Each result
 * is held to the "lora" line of cuda_test.h's table: max |cuda - ref| / max |ref| <= 2e-5 (f32 sums of the same
 * products in another order, as matmul_gemv; both sides widen the f16 values exactly). Then
 * forget: a matrix's host memory rewritten after forget is copied afresh (without it the old
 * copy would be used, which the second comparison would catch). Skips without a GPU.
 */
#include "cuda_test.h"

#include "kernels/ref/lora_ref.h"

/* n random matrix values in [-1, 1): f16 (as an adapter keeps f16 / bf16 sources) or f32. */
static void *rnd_mat(int64_t n, bool half) {
    if (!half) {
        float *v = malloc((size_t)n * sizeof *v);
        fill(v, n, 1.0f);
        return v;
    }
    uint16_t *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = hearth_fp32_to_fp16(frand());
    return v;
}

/* One call of n_seg segments over rows of n_in -> n_out (y rows of ldy); each segment n_rows
 * rows (0: 1..max_rows at random), rank ranks[s % n_ranks], f16 when (s + half0) is even. */
static void check_call(int n_seg, int64_t n_in, int64_t n_out, int64_t ldy, int64_t max_rows, const int32_t *ranks,
                       int n_ranks, int half0, const char *what) {
    hearth_lora_seg *segs = calloc((size_t)n_seg, sizeof *segs);
    int64_t rows = 0;
    for (int s = 0; s < n_seg; s++) {
        rows += (int64_t)(rng >> 61); /* a gap of 0..7 rows before each segment */
        frand();
        int64_t n = max_rows <= 1 ? 1 : 1 + (int64_t)((frand() + 1.0f) * 0.5f * (float)(max_rows - 1));
        int32_t r = ranks[s % n_ranks];
        bool half = (s + half0) % 2 == 0;
        segs[s] = (hearth_lora_seg){.t0 = rows, .n = n, .r = r, .scale = 0.25f + 0.125f * (float)(s % 5),
                                    .half = half, .a = rnd_mat((int64_t)r * n_in, half),
                                    .b = rnd_mat(n_out * r, half)};
        rows += n;
    }
    rows += 3; /* rows after the last segment */
    float *x = malloc(sizeof(float) * (size_t)(rows * n_in)), *y = malloc(sizeof(float) * (size_t)(rows * ldy));
    float *ref = malloc(sizeof(float) * (size_t)(rows * ldy)), *got = malloc(sizeof(float) * (size_t)(rows * ldy));
    fill(x, rows * n_in, 1.0f);
    fill(y, rows * ldy, 2.0f);
    memcpy(ref, y, sizeof(float) * (size_t)(rows * ldy));
    hearth_lora_ref(segs, n_seg, x, n_in, ref, ldy, n_out);
    float *dx = up(x, sizeof(float) * (size_t)(rows * n_in)), *dy = up(y, sizeof(float) * (size_t)(rows * ldy));
    hearth_op_lora(gpu(), segs, n_seg, dx, n_in, dy, ldy, n_out);
    down(got, dy, sizeof(float) * (size_t)(rows * ldy));
    double e = rel_err(got, ref, rows * ldy);
    int64_t untouched_bad = 0; /* rows in no segment, and the columns past n_out, exactly as given */
    for (int64_t t = 0; t < rows; t++) {
        bool in = false;
        for (int s = 0; s < n_seg; s++) in |= t >= segs[s].t0 && t < segs[s].t0 + segs[s].n;
        for (int64_t o = in ? n_out : 0; o < ldy; o++) untouched_bad += memcmp(&got[t * ldy + o], &y[t * ldy + o], 4) != 0;
    }
    fprintf(stderr, "  %s: %d segments, %lld rows, %lld -> %lld: relative error %.3g\n", what, n_seg, (long long)rows,
            (long long)n_in, (long long)n_out, e);
    CHECK_REL(got, ref, rows * ldy, "lora");
    CHECK_EQ(untouched_bad, 0);
    dfree(dx);
    dfree(dy);
    /* the matrices stay: the backend keeps copies keyed by their addresses until forgotten */
    for (int s = 0; s < n_seg; s++) {
        hearth_backend_forget(gpu(), segs[s].a);
        hearth_backend_forget(gpu(), segs[s].b);
        free((void *)segs[s].a);
        free((void *)segs[s].b);
    }
    free(segs);
    free(x);
    free(y);
    free(ref);
    free(got);
}

static const int32_t RANKS[] = {1, 8, 16, 64};

TEST(lora_decode_shapes) { /* one row per segment, as a batch of decodes on different adapters */
    NEED_GPU();
    for (int ri = 0; ri < 4; ri++) {
        check_call(1, 576, 576, 576, 1, &RANKS[ri], 1, 0, "one sequence, f16");
        check_call(1, 576, 1536, 1536, 1, &RANKS[ri], 1, 1, "one sequence, f32");
    }
    check_call(8, 1000, 77, 96, 1, RANKS, 4, 0, "eight sequences, mixed ranks and types");
}

TEST(lora_prefill_shapes) { /* many rows per segment: several row tiles, a partial last one */
    NEED_GPU();
    for (int ri = 0; ri < 4; ri++) check_call(3, 4096, 1024, 1024, 70, &RANKS[ri], 1, ri, "prefill");
    check_call(5, 333, 4100, 4100, 40, RANKS, 4, 1, "mixed prefill");
    const int32_t big = HEARTH_LORA_MAX_RANK;
    check_call(2, 256, 300, 300, 9, &big, 1, 0, "the largest rank");
}

TEST(lora_more_segments_than_one_launch) {
    NEED_GPU();
    check_call(70, 512, 384, 400, 3, RANKS, 4, 0, "70 segments");
}

/* forget drops the device copy: new contents at the same host address are read afresh */
TEST(lora_forget_copies_afresh) {
    NEED_GPU();
    const int64_t n_in = 128, n_out = 96;
    const int32_t r = 8;
    hearth_lora_seg sg = {.t0 = 0, .n = 2, .r = r, .scale = 0.5f, .half = true, .a = rnd_mat(r * n_in, true),
                          .b = rnd_mat(n_out * r, true)};
    float x[2 * 128], y0[2 * 96], ref[2 * 96], got[2 * 96];
    fill(x, 2 * n_in, 1.0f);
    fill(y0, 2 * n_out, 1.0f);
    float *dx = up(x, sizeof x), *dy = hearth_buf_alloc(gpu(), sizeof y0);
    for (int round = 0; round < 2; round++) {
        if (round == 1) { /* new values in the same memory, as a new adapter at a freed one's address */
            hearth_backend_forget(gpu(), sg.a);
            hearth_backend_forget(gpu(), sg.b);
            for (int64_t i = 0; i < r * n_in; i++) ((uint16_t *)sg.a)[i] = hearth_fp32_to_fp16(frand());
            for (int64_t i = 0; i < n_out * r; i++) ((uint16_t *)sg.b)[i] = hearth_fp32_to_fp16(frand());
        }
        memcpy(ref, y0, sizeof y0);
        hearth_lora_ref(&sg, 1, x, n_in, ref, n_out, n_out);
        hearth_buf_upload(gpu(), dy, y0, sizeof y0);
        hearth_op_lora(gpu(), &sg, 1, dx, n_in, dy, n_out, n_out);
        down(got, dy, sizeof got);
        double e = rel_err(got, ref, 2 * n_out);
        fprintf(stderr, "  round %d: relative error %.3g\n", round, e);
        CHECK_REL(got, ref, 2 * n_out, "lora");
    }
    hearth_backend_forget(gpu(), sg.a);
    hearth_backend_forget(gpu(), sg.b);
    hearth_backend_forget(gpu(), sg.a); /* nothing left: a no-op */
    free((void *)sg.a);
    free((void *)sg.b);
    dfree(dx);
    dfree(dy);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
