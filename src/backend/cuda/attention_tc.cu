/*
 * attention_tc.cu - prefill attention on tensor cores (f16, q8_0 or q4_0 cache): the path hc_attention takes
 * for steps of many query tokens; same contract as attention.cu (twin of
 * hearth_attn_head_paged_ref), never materializing a score matrix.
 *
 * One block of 4 warps per (tile of 64 query tokens, query head); warp w owns query rows
 * 16w..16w+15. Keys go by tiles of 64: the tile's keys and values are gathered from the paged
 * cache into shared memory by asynchronous 16-byte copies (the values into the keys' buffer,
 * arriving while the softmax runs; rows padded so fragment loads meet no bank twice), S = Q K^T comes from wmma 16x16x16 f16 products
 * with f32 sums, each warp runs the online softmax on its 16 rows (two lanes a row: running
 * maximum m and sum l), writes the weights exp(s - m) as f16, rescales its f32 output rows in
 * shared memory and adds P V with wmma again. Tiles late in the prompt (more keys under the
 * causal mask) are started first.
 *
 * Tokens of one tile may belong to different sequences: the keys are walked once per run of
 * equal sequence, with the rows outside the run masked (their state is left as it was).
 * Roundings: the query is rounded to f16 as the reference does; the weights are rounded to f16
 * before normalization rather than after, within the op test's f16 tolerance.
 *
 * A quantized cache (q8_0 / q4_0) takes this kernel too: its keys and values are dequantized
 * as they are gathered (plain loads instead of the asynchronous copies) and rounded to f16 for
 * the products, the query rounded to f16 as for an f16 cache (where the CUDA-core kernel and
 * the CPU take it through q8_0): within the f16 tolerance of the CPU's quantized attention.
 */
#include "backend/cuda/common.cuh"

#include <mma.h>

using namespace nvcuda;

#define BQ 64  /* query rows per block */
#define BK 64  /* keys per tile */
#define NW 4   /* warps */

/* 16 bytes global -> shared without a register stop; zeros when !valid (nothing is read) */
static __device__ __forceinline__ void cp16(void *dst, const void *src, bool valid) {
    unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(d), "l"(src), "r"(valid ? 16 : 0));
}
static __device__ __forceinline__ void cp_commit(void) { asm volatile("cp.async.commit_group;"); }
template <int N>
static __device__ __forceinline__ void cp_wait(void) { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

/* 8 cache elements (from element offset row + d) into shared memory as f16: an f16 cache by
 * an asynchronous copy, a q8_0 / q4_0 one dequantized (common.cuh) and rounded to f16 here;
 * zeros when row < 0 (nothing is read) */
static __device__ __forceinline__ void stage8(__half *dst, const void *base, int64_t row, int d, int type) {
    if (type == HC_F16) {
        cp16(dst, (const uint16_t *)base + (row >= 0 ? row + d : 0), row >= 0);
        return;
    }
    float o[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    if (row >= 0) hc_kv_load8_quant(base, row + d, type, o);
    uint4 u;
    __half2 *h = (__half2 *)&u;
#pragma unroll
    for (int k = 0; k < 4; k++) h[k] = __floats2half2_rn(o[2 * k], o[2 * k + 1]);
    *(uint4 *)dst = u;
}

static bool tc_type(int t) { return t == HC_F16 || t == HC_Q8_0 || t == HC_Q4_0; }

bool hc_attention_tc_ok(const hc_attn *a) {
    return tc_type(a->k_type) && tc_type(a->v_type) && a->n_tok >= 32 &&
           (a->head_dim == 64 || a->head_dim == 128 || a->head_dim == 256);
}

/* Row strides in shared memory, padded by 16 bytes so that the 8 rows one tensor-core fragment
 * load reads at a time fall in different banks. */
#define QL(D) ((D) + 8) /* q, k, v rows (halves) */
#define SL (BK + 4)     /* score rows (floats) */
#define PL (BK + 8)     /* weight rows (halves) */
#define OL(D) ((D) + 4) /* output rows (floats) */

static size_t tc_smem(int D) {
    return (size_t)BQ * QL(D) * 2 + (size_t)BK * QL(D) * 2 /* q, then k or v (f16) */
           + (size_t)NW * 16 * SL * 4 + (size_t)NW * 16 * PL * 2  /* s (f32), p (f16) per warp */
           + (size_t)BQ * OL(D) * 4                               /* o (f32) */
           + (size_t)BK * 8 + (size_t)BQ * 4 * 3;                /* key rows, query pos/lo/seq */
}

template <int D>
static __global__ void __launch_bounds__(NW * 32) attn_tc_k(hc_attn a) {
    hc_pdl_begin();
    extern __shared__ __align__(128) uint8_t smraw[];
    __half *qs = (__half *)smraw;              /* [BQ][D] */
    __half *kvs = qs + BQ * QL(D);                 /* [BK][QL] the keys, then the values */
    float *ss = (float *)(kvs + BK * QL(D));       /* [NW][16][SL] */
    __half *ps = (__half *)(ss + NW * 16 * SL);    /* [NW][16][PL] */
    float *os = (float *)(ps + NW * 16 * PL);      /* [BQ][OL] */
    int64_t *krow = (int64_t *)(os + BQ * OL(D));  /* [BK] element offset of each key row, -1 = none */
    int32_t *qpos = (int32_t *)(krow + BK), *qlo = qpos + BQ, *qseq = qlo + BQ;

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int n_tiles = (int)((a.n_tok + BQ - 1) / BQ);
    const int tile = n_tiles - 1 - (int)(blockIdx.x % n_tiles), h = (int)(blockIdx.x / n_tiles);
    const int G = a.n_head / a.n_head_kv, hkv = h / G;
    const int64_t t0 = (int64_t)tile * BQ, nq = min((int64_t)BQ, a.n_tok - t0);
    const int64_t stride = (int64_t)a.n_head_kv * D;

    for (int r = tid; r < BQ; r += NW * 32) {
        bool in = r < nq;
        int32_t p = in ? a.pos[t0 + r] : -1;
        qpos[r] = p;
        qlo[r] = in && a.n_swa > 0 && p - a.n_swa + 1 > 0 ? p - a.n_swa + 1 : 0;
        qseq[r] = in ? a.seq[t0 + r] : -1;
    }
#pragma unroll
    for (int k = 0; k < BQ * D / 4 / (NW * 32); k++) { /* every load of the loop in flight at once */
        const int i = (tid + k * NW * 32) * 4, r = i / D;
        float4 v = r < nq ? __ldg((const float4 *)(a.q + ((t0 + r) * a.n_head + h) * D + i % D))
                          : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        __half *qd = qs + r * QL(D) + i % D;
        *(__half2 *)qd = __floats2half2_rn(v.x, v.y);
        *(__half2 *)(qd + 2) = __floats2half2_rn(v.z, v.w);
        *(float4 *)(os + r * OL(D) + i % D) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    __syncthreads();

    /* this lane's row of the warp's 16 and its half of the key tile */
    const int lr = lane / 2, half = lane % 2, row = warp * 16 + lr;
    float m = -INFINITY, l = 0.0f;
    float *sw = ss + warp * 16 * SL;
    __half *pw = ps + warp * 16 * PL;

    for (int r0 = 0; r0 < nq;) {
        const int32_t sq = qseq[r0];
        int r1 = r0 + 1;
        while (r1 < nq && qseq[r1] == sq) r1++;
        int32_t lo = 0x7fffffff, hi = 0;
        for (int r = r0; r < r1; r++) {
            lo = min(lo, qlo[r]);
            hi = max(hi, qpos[r] + 1);
        }
        const bool mine = row >= r0 && row < r1;
        const int32_t *trow = a.table + (int64_t)sq * a.max_blocks;
        for (int32_t j0 = lo / BK * BK; j0 < hi; j0 += BK) {
            __syncthreads(); /* the previous tile's k, v are no longer read */
            if (tid < BK) {
                int32_t j = j0 + tid;
                krow[tid] = j >= lo && j < hi
                                ? ((int64_t)trow[j / a.block_size] * a.block_size + j % a.block_size) * stride +
                                      (int64_t)hkv * D
                                : -1;
            }
            __syncthreads();
            /* the keys by asynchronous copies; the values follow into the same buffer once the
             * scores are made, arriving while the softmax runs */
#pragma unroll
            for (int k = 0; k < BK * D / 8 / (NW * 32); k++) {
                const int i = tid + k * NW * 32, r = i / (D / 8), d = i % (D / 8) * 8;
                stage8(kvs + r * QL(D) + d, a.k, krow[r], d, a.k_type);
            }
            cp_commit();
            cp_wait<0>();
            __syncthreads();
            /* S = Q K^T for the warp's 16 rows */
#pragma unroll
            for (int n = 0; n < BK / 16; n++) {
                wmma::fragment<wmma::accumulator, 16, 16, 16, float> sf;
                wmma::fill_fragment(sf, 0.0f);
#pragma unroll
                for (int k = 0; k < D / 16; k++) {
                    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> qf;
                    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> kf;
                    wmma::load_matrix_sync(qf, qs + warp * 16 * QL(D) + k * 16, QL(D));
                    wmma::load_matrix_sync(kf, kvs + n * 16 * QL(D) + k * 16, QL(D));
                    wmma::mma_sync(sf, qf, kf, sf);
                }
                wmma::store_matrix_sync(sw + n * 16, sf, SL, wmma::mem_row_major);
            }
            __syncthreads(); /* every warp is done with the keys */
#pragma unroll
            for (int k = 0; k < BK * D / 8 / (NW * 32); k++) {
                const int i = tid + k * NW * 32, r = i / (D / 8), d = i % (D / 8) * 8;
                stage8(kvs + r * QL(D) + d, a.v, krow[r], d, a.v_type);
            }
            cp_commit();
            /* online softmax: this lane's 32 keys of its row, taken in a rotated order so the 32
             * lanes read 32 different banks */
            const int32_t p = qpos[row], qj = qlo[row];
            float s[BK / 2], mt = -INFINITY;
#pragma unroll
            for (int c = 0; c < BK / 2; c++) {
                int kc = half * (BK / 2) + ((c + lr + 16 * half) & (BK / 2 - 1));
                int32_t j = j0 + kc;
                float v = sw[lr * SL + kc] * a.scale;
                if (a.softcap > 0.0f) v = a.softcap * tanhf(v / a.softcap);
                if (!mine || krow[kc] < 0 || j > p || j < qj) v = -INFINITY;
                s[c] = v;
                mt = fmaxf(mt, v);
            }
            mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 1));
            const float mn = fmaxf(m, mt);
            const float corr = mn == -INFINITY ? 1.0f : __expf(m - mn);
            float sum = 0.0f;
#pragma unroll
            for (int c = 0; c < BK / 2; c++) {
                float e = s[c] == -INFINITY ? 0.0f : __expf(s[c] - mn);
                __half eh = __float2half_rn(e);
                pw[lr * PL + half * (BK / 2) + ((c + lr + 16 * half) & (BK / 2 - 1))] = eh;
                sum += __half2float(eh);
            }
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            l = l * corr + sum;
            m = mn;
            /* rescale the row's output, then O += P V */
            float *orow = os + row * OL(D);
#pragma unroll 8
            for (int i = 0; i < D / 2; i++) orow[(2 * (i + lr) + half) & (D - 1)] *= corr; /* rotated: no bank twice */
            cp_wait<0>();
            __syncthreads(); /* the values are in */
#pragma unroll
            for (int n = 0; n < D / 16; n++) {
                wmma::fragment<wmma::accumulator, 16, 16, 16, float> of;
                wmma::load_matrix_sync(of, os + warp * 16 * OL(D) + n * 16, OL(D), wmma::mem_row_major);
#pragma unroll
                for (int k = 0; k < BK / 16; k++) {
                    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> pf;
                    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> vf;
                    wmma::load_matrix_sync(pf, pw + k * 16, PL);
                    wmma::load_matrix_sync(vf, kvs + k * 16 * QL(D) + n * 16, QL(D));
                    wmma::mma_sync(of, pf, vf, of);
                }
                wmma::store_matrix_sync(os + warp * 16 * OL(D) + n * 16, of, OL(D), wmma::mem_row_major);
            }
            __syncwarp();
        }
        r0 = r1;
    }
    /* out = O / l */
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    if (row < nq)
        for (int i = 0; i < D / 2; i++) {
            const int d = (2 * (i + lr) + half) & (D - 1);
            a.out[((t0 + row) * a.n_head + h) * D + d] = os[row * OL(D) + d] * inv;
        }
}

template <int D>
static void launch_d(const hc_attn *a, cudaStream_t s) {
    static bool attr_set;
    size_t sm = tc_smem(D);
    if (!attr_set) {
        cudaFuncSetAttribute(attn_tc_k<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm);
        attr_set = true;
    }
    unsigned grid = (unsigned)((a->n_tok + BQ - 1) / BQ * a->n_head);
    hc_launch(attn_tc_k<D>, grid, NW * 32, sm, s, *a);
}

void hc_attention_tc(const hc_attn *a, void *stream) {
    cudaStream_t s = (cudaStream_t)stream;
    switch (a->head_dim) {
    case 64: launch_d<64>(a, s); break;
    case 128: launch_d<128>(a, s); break;
    case 256: launch_d<256>(a, s); break;
    default: break; /* hc_attention_tc_ok said no */
    }
}
