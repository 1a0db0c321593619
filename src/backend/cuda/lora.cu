/*
 * lora.cu - the segmented LoRA update (twin of hearth_lora_ref, kernels/ref/lora_ref.h): rows
 * of y get scale * B (A x) added, each segment of rows its own adapter's A and B (f16 or f32).
 *
 * Two launches for all the segments of a call (S-LoRA / Punica's shrink and expand):
 *
 *   shrink  h[t][k] = A_s[k] . x[t]           grid (row tiles, rank groups); a warp per k, the
 *                                             tile's TM rows at once, so each A row is read
 *                                             once per tile; lanes stride the n_in elements
 *   expand  y[t][o] += scale_s * B_s[o] . h[t] grid (row tiles, output groups); a thread per o,
 *                                             the tile's h rows in shared memory
 *
 *   segments:  s0: rows [t0, t0+n)  s1: ...      (rows in no segment are left alone)
 *   row tiles: | s0 tile 0 | s0 tile 1 | s1 tile 0 | ...    TM rows each, one segment each
 *   h:         segment s at h0[s], row t at h0[s] + (t - t0) * r_s     (the caller's scratch)
 *
 * The segment table travels in the launch parameters (no copy to the device, nothing for a
 * captured graph to go stale on); more than HC_LORA_MAX_SEG segments take several launch pairs.
 * The sums are f32 in the lane order of a warp reduction, not the reference's 8-lane order, so
 * the result agrees with it within f32 rounding (tests/kernels/test_cuda_lora.c's tolerance).
 */
#include "backend/cuda/common.cuh"

enum { TM = 4, SHRINK_WARPS = 8, EXPAND_THREADS = 256 };

struct lora_table {
    int     n_seg;
    int     tile0[HC_LORA_MAX_SEG + 1]; /* first row tile of each segment; tile0[n_seg] = all tiles */
    int64_t h0[HC_LORA_MAX_SEG];        /* offset of each segment's h rows */
    hc_lora_seg seg[HC_LORA_MAX_SEG];
};

/* The segment of row tile `tile` (the segments are few: a linear scan). */
static __device__ __forceinline__ int seg_of(const lora_table &tb, int tile) {
    int s = 0;
    while (s + 1 < tb.n_seg && tb.tile0[s + 1] <= tile) s++;
    return s;
}

static __device__ __forceinline__ float ld(const void *p, int64_t i, bool half) {
    return half ? hc_h2f(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

static __global__ void shrink_k(lora_table tb, const float *x, int64_t n_in, float *h) {
    hc_pdl_begin();
    const int s = seg_of(tb, blockIdx.x);
    const hc_lora_seg &sg = tb.seg[s];
    const int k = blockIdx.y * SHRINK_WARPS + threadIdx.x / HC_WARP, lane = threadIdx.x % HC_WARP;
    if (k >= sg.r) return;
    const int64_t r0 = (int64_t)(blockIdx.x - tb.tile0[s]) * TM; /* the tile's first row in the segment */
    const int rows = (int)min((int64_t)TM, sg.n - r0);
    float acc[TM] = {0};
    for (int64_t i = lane; i < n_in; i += HC_WARP) {
        const float a = ld(sg.a, (int64_t)k * n_in + i, sg.half);
#pragma unroll
        for (int j = 0; j < TM; j++)
            if (j < rows) acc[j] += a * x[(sg.t0 + r0 + j) * n_in + i];
    }
#pragma unroll
    for (int j = 0; j < TM; j++) {
        const float v = hc_warp_sum(acc[j]);
        if (lane == 0 && j < rows) h[tb.h0[s] + (r0 + j) * sg.r + k] = v;
    }
}

static __global__ void expand_k(lora_table tb, const float *h, float *y, int64_t ldy, int64_t n_out) {
    __shared__ float hs[TM * HC_LORA_MAX_RANK];
    hc_pdl_begin();
    const int s = seg_of(tb, blockIdx.x);
    const hc_lora_seg &sg = tb.seg[s];
    const int64_t r0 = (int64_t)(blockIdx.x - tb.tile0[s]) * TM;
    const int rows = (int)min((int64_t)TM, sg.n - r0), r = sg.r;
    for (int i = threadIdx.x; i < rows * r; i += blockDim.x) hs[i] = h[tb.h0[s] + r0 * r + i];
    __syncthreads();
    const int64_t o = (int64_t)blockIdx.y * blockDim.x + threadIdx.x;
    if (o >= n_out) return;
    float acc[TM] = {0};
    for (int k = 0; k < r; k++) {
        const float b = ld(sg.b, o * r + k, sg.half);
#pragma unroll
        for (int j = 0; j < TM; j++)
            if (j < rows) acc[j] += b * hs[j * r + k];
    }
    for (int j = 0; j < rows; j++) y[(sg.t0 + r0 + j) * ldy + o] += sg.scale * acc[j];
}

size_t hc_lora_scratch(const hc_lora_seg *segs, int n_seg) {
    size_t n = 0;
    for (int s = 0; s < n_seg; s++) n += (size_t)segs[s].n * (size_t)segs[s].r;
    return n;
}

void hc_lora(const hc_lora_seg *segs, int n_seg, const float *x, int64_t n_in, float *y, int64_t ldy,
             int64_t n_out, float *h, void *stream) {
    for (int s0 = 0; s0 < n_seg; s0 += HC_LORA_MAX_SEG) {
        lora_table tb;
        tb.n_seg = 0;
        int tiles = 0, max_r = 0;
        int64_t h0 = 0;
        for (int s = s0; s < n_seg && s < s0 + HC_LORA_MAX_SEG; s++) {
            if (segs[s].n <= 0 || segs[s].r <= 0) continue;
            tb.tile0[tb.n_seg] = tiles;
            tb.h0[tb.n_seg] = h0;
            tb.seg[tb.n_seg++] = segs[s];
            tiles += (int)((segs[s].n + TM - 1) / TM);
            h0 += segs[s].n * segs[s].r;
            if (segs[s].r > max_r) max_r = segs[s].r;
        }
        if (tb.n_seg == 0) continue;
        tb.tile0[tb.n_seg] = tiles;
        const dim3 gs((unsigned)tiles, hc_blocks(max_r, SHRINK_WARPS)), ge((unsigned)tiles, hc_blocks(n_out, EXPAND_THREADS));
        hc_launch(shrink_k, gs, SHRINK_WARPS * HC_WARP, 0, stream, tb, x, n_in, h);
        hc_launch(expand_k, ge, EXPAND_THREADS, 0, stream, tb, (const float *)h, y, ldy, n_out);
    }
}
