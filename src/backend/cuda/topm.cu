/* topm.cu - sampling on the device: each logits row summarized as kernels/ref/topm_ref.h specifies
 * (max, the two normalizers, the HEARTH_TOPM best entries sorted, and an optional draw over the
 * whole row in id order), so a few KB per row cross to the host instead of the row.
 *
 * One block of 1024 threads per row, the row read from global memory in passes (it stays in L2):
 *   1. max; 2. the two sums (z_t with float terms as the host sampler adds them, z_1 in double);
 *   3. the HEARTH_TOPM-th largest value by a radix select over order-preserving 32-bit keys
 *      (four 8-bit histogram passes), then the entries above it gathered (any order) and the
 *      ties at it taken lowest ids first (each thread owns a contiguous chunk of ids; a block
 *      scan of per-chunk counts gives each its rank); a bitonic sort puts them in order;
 *   4. the draw: per-chunk sums of p, a block scan, and the chunk where u * total falls walked
 *      in id order.
 * Sums run in another association than the reference's sequential loops: z_t, z_1 and the
 * draw's running sums differ from it by double rounding (tests/kernels/test_cuda_ops.c compares
 * with a tolerance; the best entries and their order are exact). */
#include "backend/cuda/common.cuh"
#include "kernels/ref/topm_ref.h"

enum { TPB = 1024, NW = TPB / 32 };

static __device__ __forceinline__ uint32_t okey(float f) { /* larger float, larger key */
    uint32_t b = __float_as_uint(f);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

static __device__ __forceinline__ bool better(float a, int32_t ia, float b, int32_t ib) {
    return a > b || (a == b && ia < ib);
}

static __device__ float blk_max(float v, float *sh) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
    __syncthreads();
    float r = sh[0];
    for (int w = 1; w < NW; w++) r = fmaxf(r, sh[w]);
    __syncthreads();
    return r;
}

static __device__ double blk_sum(double v, double *sh) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
    __syncthreads();
    double r = 0;
    for (int w = 0; w < NW; w++) r += sh[w];
    __syncthreads();
    return r;
}

/* exclusive prefix over the block in thread order; *total gets the whole sum */
template <typename T> static __device__ T blk_scan(T v, T *sh, T *total) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    T inc = v;
    for (int o = 1; o < 32; o <<= 1) {
        T t = __shfl_up_sync(0xffffffffu, inc, o);
        if (lane >= o) inc += t;
    }
    if (lane == 31) sh[w] = inc;
    __syncthreads();
    T before = 0, all = 0;
    for (int i = 0; i < NW; i++) {
        if (i < w) before += sh[i];
        all += sh[i];
    }
    __syncthreads();
    *total = all;
    return before + inc - v;
}

static __global__ void __launch_bounds__(TPB) topm_k(const float *x, int64_t n, const hearth_topm_req *rq,
                                                      hearth_topm *out) {
    hc_pdl_begin();
    __shared__ float shf[NW];
    __shared__ double shd[NW];
    __shared__ uint32_t shu[NW];
    __shared__ uint32_t hist[256];
    __shared__ uint32_t s_prefix, s_remain, s_count;
    __shared__ int32_t s_drawn, s_last;
    __shared__ float cx[HEARTH_TOPM];
    __shared__ int32_t cid[HEARTH_TOPM];
    const float *r = x + (int64_t)blockIdx.x * n;
    hearth_topm *o = out + blockIdx.x;
    const hearth_topm_req q = rq[blockIdx.x];
    const int tid = threadIdx.x;

    /* 1-2: max and normalizers */
    float mx = -INFINITY;
    for (int64_t i = tid; i < n; i += TPB) mx = fmaxf(mx, r[i]);
    mx = blk_max(mx, shf);
    double zt = 0, z1 = 0;
    for (int64_t i = tid; i < n; i += TPB) {
        zt += (double)expf((r[i] - mx) / q.temperature);
        z1 += exp((double)r[i] - (double)mx);
    }
    zt = blk_sum(zt, shd);
    z1 = blk_sum(z1, shd);

    /* 3: the m-th largest key K; remain = how many entries equal to K belong to the best m */
    const uint32_t m = n < HEARTH_TOPM ? (uint32_t)n : HEARTH_TOPM;
    uint32_t prefix = 0, mask = 0, remain = m;
    for (int shift = 24; shift >= 0 && m > 0; shift -= 8) {
        for (int i = tid; i < 256; i += TPB) hist[i] = 0;
        __syncthreads();
        for (int64_t i = tid; i < n; i += TPB) {
            uint32_t k = okey(r[i]);
            if ((k & mask) == prefix) atomicAdd(&hist[(k >> shift) & 255u], 1u);
        }
        __syncthreads();
        if (tid == 0) {
            uint32_t acc = 0;
            int b = 255;
            for (; b > 0; b--) {
                if (acc + hist[b] >= remain) break;
                acc += hist[b];
            }
            s_prefix = prefix | ((uint32_t)b << shift);
            s_remain = remain - acc;
        }
        __syncthreads();
        prefix = s_prefix;
        remain = s_remain;
        mask |= 255u << shift;
    }
    if (tid == 0) s_count = 0;
    __syncthreads();
    for (int64_t i = tid; i < n && m > 0; i += TPB) {
        float v = r[i];
        if (okey(v) > prefix) {
            uint32_t slot = atomicAdd(&s_count, 1u);
            cx[slot] = v;
            cid[slot] = (int32_t)i;
        }
    }
    __syncthreads();
    const uint32_t g = s_count;
    const int64_t chunk = (n + TPB - 1) / TPB, c0 = tid * chunk, c1 = c0 + chunk < n ? c0 + chunk : n;
    uint32_t eq = 0, all_eq;
    for (int64_t i = c0; i < c1; i++) eq += m > 0 && okey(r[i]) == prefix;
    uint32_t rank = blk_scan<uint32_t>(eq, shu, &all_eq);
    for (int64_t i = c0; i < c1 && rank < remain && m > 0; i++)
        if (okey(r[i]) == prefix) {
            cx[g + rank] = r[i];
            cid[g + rank] = (int32_t)i;
            rank++;
        }
    for (int i = (int)m + tid; i < HEARTH_TOPM; i += TPB) {
        cx[i] = -INFINITY;
        cid[i] = 0x7fffffff;
    }
    __syncthreads();
    for (int k = 2; k <= HEARTH_TOPM; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1) {
            if (tid < HEARTH_TOPM) {
                int ixj = tid ^ j;
                if (ixj > tid) {
                    bool first = (tid & k) == 0; /* this half sorts best first */
                    bool swap = first ? better(cx[ixj], cid[ixj], cx[tid], cid[tid])
                                      : better(cx[tid], cid[tid], cx[ixj], cid[ixj]);
                    if (swap) {
                        float tv = cx[tid];
                        int32_t ti = cid[tid];
                        cx[tid] = cx[ixj];
                        cid[tid] = cid[ixj];
                        cx[ixj] = tv;
                        cid[ixj] = ti;
                    }
                }
            }
            __syncthreads();
        }
    for (int i = tid; i < (int)m; i += TPB) {
        o->x[i] = cx[i];
        o->id[i] = cid[i];
    }

    /* 4: the draw, in id order */
    int32_t drawn = -1;
    float drawn_x = 0;
    if (q.u >= 0 && n > 0) {
        const float top = (float)(1.0 / zt), floor = q.min_p > 0 ? q.min_p * top : -1.0f;
        double part = 0, total;
        for (int64_t i = c0; i < c1; i++) {
            float p = (float)(expf((r[i] - mx) / q.temperature) / zt);
            if (p >= floor) part += p;
        }
        double cum = blk_scan<double>(part, shd, &total);
        const double target = q.u * total;
        if (tid == 0) {
            s_drawn = 0x7fffffff;
            s_last = -1;
        }
        __syncthreads();
        int32_t last = -1;
        for (int64_t i = c0; i < c1; i++) {
            float p = (float)(expf((r[i] - mx) / q.temperature) / zt);
            if (p < floor) continue;
            last = (int32_t)i;
            cum += p;
            if (target < cum) {
                atomicMin(&s_drawn, (int32_t)i);
                break;
            }
        }
        if (last >= 0) atomicMax(&s_last, last);
        __syncthreads();
        drawn = s_drawn != 0x7fffffff ? s_drawn : s_last;
        drawn_x = drawn >= 0 ? r[drawn] : 0.0f;
    }
    if (tid == 0) {
        o->max = mx;
        o->n = (int32_t)m;
        o->z_t = zt;
        o->z_1 = z1;
        o->drawn = drawn;
        o->drawn_x = drawn_x;
    }
}

void hc_topm(const float *x, int64_t n_rows, int64_t n, const hearth_topm_req *rq, hearth_topm *out, void *stream) {
    if (n_rows > 0) hc_launch(topm_k, (unsigned)n_rows, TPB, 0, stream, x, n, rq, out);
}

/* one block per row, a thread per edit: the tokens of a row's edits are distinct. Division,
 * product and difference rounded as the host's (no contraction into a fused multiply-add). */
static __global__ void topm_edit_k(float *x, int64_t n, const hearth_topm_req *rq, const hearth_topm_edit *ed) {
    hc_pdl_begin();
    const hearth_topm_req q = rq[blockIdx.x];
    float *r = x + (int64_t)blockIdx.x * n;
    for (int32_t i = threadIdx.x; i < q.n_edit; i += blockDim.x) {
        const hearth_topm_edit e = ed[q.edit0 + i];
        float v = r[e.token];
        if (e.flags & HEARTH_TOPM_ADD) v = __fadd_rn(v, e.add);
        if (e.flags & HEARTH_TOPM_REP) v = v > 0 ? __fdiv_rn(v, e.rp) : __fmul_rn(v, e.rp);
        if (e.flags & HEARTH_TOPM_SUB) v = __fsub_rn(v, e.sub);
        r[e.token] = v;
    }
}

void hc_topm_edit(float *x, int64_t n_rows, int64_t n, const hearth_topm_req *rq, const hearth_topm_edit *ed,
                  void *stream) {
    if (n_rows > 0) hc_launch(topm_edit_k, (unsigned)n_rows, 128, 0, stream, x, n, rq, ed);
}
