/*
 * attention.cu - causal (or sliding-window) attention over the paged KV cache, the twin of
 * hearth_attn_head_paged_ref.
 *
 * One block of 128 threads per (tile of up to QT consecutive query tokens, KV head, key split).
 * The block serves every query head of the group that shares the KV head, for every token of
 * the tile, so each key and value row is read once for up to 32 (token, head) pairs. Keys go
 * through in tiles of 32, staged in shared memory as f32 with 16-byte loads: warp w scores the
 * pairs w, w+4, ... (lane = key), keeps each pair's running maximum and sum (online softmax: no
 * score matrix is kept), and then every thread adds the tile's weighted values into its output
 * dimensions for all pairs. Tokens of a tile that belong to different sequences are taken one
 * run of equal sequence at a time, so a step whose every token is its own sequence's (a batch of
 * decodes, max_run 1) takes tiles of one token: one block per (sequence, KV head), all of them
 * in flight at once, instead of a block walking up to QT sequences in turn. With split > 1 (few queries, long contexts: decode) each
 * split writes (max, sum, unnormalized output) per pair and a second kernel combines them.
 * With per_head (--fused-sdpa off) a block serves one query head instead of the group: every
 * key is read once per head, slower, and each (token, head) pair's arithmetic is the same
 * (the tile of tokens and the key split are those of the grouped launch), so the same bits.
 *
 * Long steps over an f16 cache (prefill) take the tensor-core kernel of attention_tc.cu instead.
 *
 * A quantized cache (q8_0 / q4_0 keys and values, backend/kv_type.h) is read in place: the
 * staging loads dequantize 8 elements at a time (hc_kv_load8_quant, the CPU's to_float), so the
 * tiles in shared memory are f32 as for the other types and nothing else changes. Its long
 * steps go to the tensor-core kernel as an f16 cache's do (which dequantizes to f16).
 *
 * A turbo cache (rotated keys and values in blocks of B-bit codes, backend/kv_type.h) is read in
 * place too (hc_turbo_load8, the CPU's dequantizer) and attended in the rotated space, as the
 * CPU's kernels/cpu/attn_turbo_body.inc: the staged query is rotated in shared memory (signs,
 * butterflies, 1/8: the bits of hearth_turbo_rotate), and hc_attention rotates the finished
 * output back (turbo.cu hc_turbo_unrotate). The CPU rotates back before dividing by the
 * softmax's sum, here after: the same values up to rounding. Never on the tensor cores.
 *
 * Roundings: with an f16 cache the query is rounded to f16 as the reference does; the
 * reference's rounding of the normalized weights to f16 has no counterpart here (the weights
 * are never normalized before the end), so results agree to the tolerance of the op test. With
 * quantized keys the query goes through q8_0 and back (d = amax / 127 as f16, q rounded half
 * to even), as the CPU's quantized attention (kernels/cpu/attn_quant_body.inc) quantizes it for
 * its block dots: the same integers and scales meet, summed in f32 in another order.
 */
#include "backend/cuda/common.cuh"

#include <math.h>

#define TK 32
#define NT 128
#define MAX_P 32 /* (token, head) pairs per block */
#define MAX_G 8
#define MAX_D 256

bool hc_attention_supported(int32_t head_dim, int32_t group) {
    return head_dim > 0 && head_dim <= MAX_D && head_dim % 8 == 0 && group > 0 && group <= MAX_G;
}

static int qt_of(int G) { return MAX_P / G > 8 ? 8 : MAX_P / G; }

/* tokens per tile: one when no sequence has two tokens in the step (tiles could only hold
 * tokens of different sequences, which a block takes one after another) */
static int qt_for(const hc_attn *a) { return a->max_run == 1 ? 1 : qt_of(a->n_head / a->n_head_kv); }

static size_t smem_bytes(int D, int P) {
    return sizeof(float) * ((size_t)P * D + (size_t)TK * (D + 1) + (size_t)TK * D + (size_t)P * TK + 2 * MAX_P) +
           sizeof(int64_t) * TK + 3 * sizeof(int32_t) * 8;
}

/* 8 consecutive cache elements from element idx (a multiple of 8) as f32 */
static __device__ __forceinline__ void load8(const void *base, int64_t idx, int type, float *o) {
    if (hc_kv_quantized(type)) {
        hc_kv_load8_quant(base, idx, type, o);
    } else if (hc_kv_turbo(type)) {
        hc_turbo_load8(base, idx, hc_turbo_bits(type), o);
    } else if (type == HC_F16) {
        uint4 u = *(const uint4 *)((const uint16_t *)base + idx);
        const __half2 *h = (const __half2 *)&u;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            float2 f = __half22float2(h[k]);
            o[2 * k] = f.x;
            o[2 * k + 1] = f.y;
        }
    } else {
        const float4 *p = (const float4 *)((const float *)base + idx);
        float4 a = p[0], b = p[1];
        o[0] = a.x; o[1] = a.y; o[2] = a.z; o[3] = a.w; o[4] = b.x; o[5] = b.y; o[6] = b.z; o[7] = b.w;
    }
}

template <int DI> /* output dimensions per thread: head_dim <= 128 * DI */
static __global__ void __launch_bounds__(NT) attn_k(hc_attn a, int n_split, int QT, float *part) {
    hc_pdl_begin();
    extern __shared__ float sm[];
    const int D = a.head_dim, tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int G = a.per_head ? 1 : a.n_head / a.n_head_kv; /* query heads of this block */
    const int n_tiles = (int)((a.n_tok + QT - 1) / QT);
    const int tile = blockIdx.x % n_tiles, h0 = blockIdx.x / n_tiles * G, split = blockIdx.y;
    const int hkv = h0 / (a.n_head / a.n_head_kv);
    const int64_t t_begin = (int64_t)tile * QT, t_end = min(a.n_tok, t_begin + QT);
    const int64_t stride = (int64_t)a.n_head_kv * D;
    float *qs = sm;                              /* [P][D] */
    float *ks = qs + MAX_P * D;                  /* [TK][D+1] */
    float *vs = ks + TK * (D + 1);               /* [TK][D] */
    float *ps = vs + TK * D;                     /* [P][TK] */
    float *corr = ps + MAX_P * TK;               /* [P] */
    float *lsum = corr + MAX_P;                  /* [P] */
    int64_t *rows = (int64_t *)(lsum + MAX_P);   /* [TK] */
    int32_t *qp = (int32_t *)(rows + TK);        /* [8] positions of the run's tokens */
    int32_t *qj0 = qp + 8;                       /* [8] first key of each */

    for (int64_t r0 = t_begin; r0 < t_end;) {
        /* the run of tokens from r0 with the same sequence */
        const int32_t sq = a.seq[r0];
        int64_t r1 = r0 + 1;
        while (r1 < t_end && a.seq[r1] == sq) r1++;
        const int nq = (int)(r1 - r0), P = nq * G;
        __syncthreads();
        if (tid < nq) {
            int32_t p = a.pos[r0 + tid];
            qp[tid] = p;
            qj0[tid] = a.n_swa > 0 && p - a.n_swa + 1 > 0 ? p - a.n_swa + 1 : 0;
        }
        if (hc_kv_quantized(a.k_type)) {
            /* the query as q8_0 (the CPU's activation quantizer), dequantized: warp w takes
             * blocks w, w+4, ... of the pairs' queries */
            for (int c = warp; c < P * D / 32; c += NT / 32) {
                int i = c * 32 + lane, pair = i / D, qi = pair / G, g = pair % G;
                float v = a.q[((r0 + qi) * a.n_head + h0 + g) * D + i % D];
                float amax = hc_warp_max(fabsf(v)), id = amax != 0.0f ? 127.0f / amax : 0.0f;
                qs[i] = hc_round_h(amax / 127.0f) * (float)__float2int_rn(__fmul_rn(v, id));
            }
        } else {
            for (int i = tid; i < P * D; i += NT) {
                int pair = i / D, qi = pair / G, g = pair % G;
                float v = a.q[((r0 + qi) * a.n_head + h0 + g) * D + i % D];
                qs[i] = a.k_type == HC_F16 ? hc_round_h(v) : v;
            }
        }
        __syncthreads();
        if (hc_kv_turbo(a.k_type)) { /* rotate each 64-element piece of the queries (turbo_ref.c) */
            for (int i = tid; i < P * D; i += NT) qs[i] = __fmul_rn(qs[i], hc_turbo_sign(i % 64));
            __syncthreads();
            for (int len = 1; len < 64; len <<= 1) {
                for (int j = tid; j < P * D / 2; j += NT) {
                    const int i = j / 32 * 64 + (j % 32 / len) * 2 * len + j % 32 % len;
                    const float u = qs[i], v = qs[i + len];
                    qs[i] = __fadd_rn(u, v);
                    qs[i + len] = __fsub_rn(u, v);
                }
                __syncthreads();
            }
            for (int i = tid; i < P * D; i += NT) qs[i] = __fmul_rn(qs[i], 0.125f);
            __syncthreads();
        }
        int32_t lo = qj0[0], hi = 0;
        for (int i = 0; i < nq; i++) {
            lo = min(lo, qj0[i]);
            hi = max(hi, qp[i] + 1);
        }
        int32_t chunk = (hi - lo + n_split - 1) / n_split;
        chunk = (chunk + TK - 1) / TK * TK;
        const int32_t js = lo + split * chunk, je = min(hi, js + chunk);
        const int32_t *trow = a.table + (int64_t)sq * a.max_blocks;

        float m[MAX_P / 4], l[MAX_P / 4];
#pragma unroll
        for (int k = 0; k < MAX_P / 4; k++) m[k] = -INFINITY, l[k] = 0.0f;
        float acc[MAX_P][DI];
#pragma unroll
        for (int k = 0; k < MAX_P; k++)
#pragma unroll
            for (int di = 0; di < DI; di++) acc[k][di] = 0.0f;

        for (int32_t jt = js; jt < je; jt += TK) {
            __syncthreads();
            if (tid < TK) {
                int32_t j = jt + tid;
                rows[tid] = j < je ? ((int64_t)trow[j / a.block_size] * a.block_size + j % a.block_size) * stride +
                                         (int64_t)hkv * D
                                   : -1;
            }
            __syncthreads();
            for (int i = tid; i < TK * D / 8; i += NT) {
                int r = i / (D / 8), d = i % (D / 8) * 8;
                float kv8[8], vv8[8];
                if (rows[r] >= 0) {
                    load8(a.k, rows[r] + d, a.k_type, kv8);
                    load8(a.v, rows[r] + d, a.v_type, vv8);
                } else {
#pragma unroll
                    for (int e = 0; e < 8; e++) kv8[e] = vv8[e] = 0.0f;
                }
#pragma unroll
                for (int e = 0; e < 8; e++) {
                    ks[r * (D + 1) + d + e] = kv8[e];
                    vs[r * D + d + e] = vv8[e];
                }
            }
            __syncthreads();
            const int32_t j = jt + lane;
#pragma unroll
            for (int k = 0; k < MAX_P / 4; k++) {
                int pair = warp + 4 * k;
                if (pair >= P) break;
                int qi = pair / G;
                float s = 0.0f;
                const float *qr = qs + pair * D, *kr = ks + lane * (D + 1);
                for (int d = 0; d < D; d++) s += qr[d] * kr[d];
                s *= a.scale;
                if (a.softcap > 0.0f) s = a.softcap * tanhf(s / a.softcap);
                if (rows[lane] < 0 || j > qp[qi] || j < qj0[qi]) s = -INFINITY;
                float mt = hc_warp_max(s), mn = fmaxf(m[k], mt);
                float c = mn == -INFINITY ? 1.0f : expf(m[k] - mn);
                float e = s == -INFINITY ? 0.0f : expf(s - mn);
                l[k] = l[k] * c + hc_warp_sum(e);
                m[k] = mn;
                ps[pair * TK + lane] = e;
                if (lane == 0) corr[pair] = c;
            }
            __syncthreads();
#pragma unroll
            for (int di = 0; di < DI; di++) {
                int d = tid + di * NT;
                if (d >= D) break;
                float vcol[TK];
#pragma unroll
                for (int r = 0; r < TK; r++) vcol[r] = vs[r * D + d];
#pragma unroll
                for (int pair = 0; pair < MAX_P; pair++) {
                    if (pair >= P) break;
                    float s = 0.0f;
                    const float *pp = ps + pair * TK;
#pragma unroll
                    for (int r = 0; r < TK; r++) s += pp[r] * vcol[r];
                    acc[pair][di] = acc[pair][di] * corr[pair] + s;
                }
            }
        }
        __syncthreads();
        if (lane == 0) {
#pragma unroll
            for (int k = 0; k < MAX_P / 4; k++) {
                int pair = warp + 4 * k;
                if (pair >= P) break;
                lsum[pair] = l[k];
                if (n_split > 1) {
                    int64_t t = r0 + pair / G, h = (int64_t)h0 + pair % G;
                    float *pp = part + ((t * a.n_head + h) * n_split + split) * (D + 2);
                    pp[0] = m[k];
                    pp[1] = l[k];
                }
            }
        }
        __syncthreads();
#pragma unroll
        for (int di = 0; di < DI; di++) {
            int d = tid + di * NT;
            if (d >= D) break;
#pragma unroll
            for (int pair = 0; pair < MAX_P; pair++) {
                if (pair >= P) break;
                int64_t t = r0 + pair / G, h = (int64_t)h0 + pair % G;
                if (n_split > 1) part[((t * a.n_head + h) * n_split + split) * (D + 2) + 2 + d] = acc[pair][di];
                else a.out[(t * a.n_head + h) * D + d] = lsum[pair] > 0.0f ? acc[pair][di] / lsum[pair] : 0.0f;
            }
        }
        r0 = r1;
    }
}

/* One block per (token, head): out = sum_s e^(m_s - M) acc_s / sum_s e^(m_s - M) l_s. */
static __global__ void attn_combine_k(hc_attn a, int n_split, const float *part) {
    hc_pdl_begin();
    const int D = a.head_dim;
    const float *pp = part + (int64_t)blockIdx.x * n_split * (D + 2);
    float M = -INFINITY;
    for (int s = 0; s < n_split; s++) M = fmaxf(M, pp[s * (D + 2)]);
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float num = 0.0f, den = 0.0f;
        for (int s = 0; s < n_split; s++) {
            const float *q = pp + s * (D + 2);
            if (q[0] == -INFINITY) continue;
            float w = expf(q[0] - M);
            num += w * q[2 + d];
            den += w * q[1];
        }
        a.out[(int64_t)blockIdx.x * D + d] = den > 0.0f ? num / den : 0.0f;
    }
}

static int split_plain(const hc_attn *a) {
    int QT = qt_for(a);
    int64_t base = (a->n_tok + QT - 1) / QT * a->n_head_kv;
    if (a->max_len <= 64 || base >= 264) return 1;
    int64_t by_len = (a->max_len + 63) / 64, by_sm = (264 + base - 1) / base;
    int64_t s = by_len < by_sm ? by_len : by_sm;
    return (int)(s > 64 ? 64 : s < 1 ? 1 : s);
}

/* long steps over an f16 or quantized cache whose sequences come in long runs (prefill, not a
 * batch of decodes) go to the tensor-core kernel (attention_tc.cu), which never splits */
static bool use_tc(const hc_attn *a) {
    return hc_attention_tc_ok(a) && a->min_run >= 32 && (a->n_tok >= 128 || split_plain(a) == 1);
}

static int n_split_of(const hc_attn *a) { return use_tc(a) ? 1 : split_plain(a); }

size_t hc_attention_scratch(const hc_attn *a) {
    int s = n_split_of(a);
    return s > 1 ? (size_t)(a->n_tok * a->n_head) * (size_t)s * (size_t)(a->head_dim + 2) : 0;
}

void hc_attention(const hc_attn *a, float *scratch, void *stream) {
    if (a->n_tok <= 0) return;
    static bool attr_set;
    if (!attr_set) {
        int mx = (int)smem_bytes(MAX_D, MAX_P);
        cudaFuncSetAttribute(attn_k<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, mx);
        cudaFuncSetAttribute(attn_k<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, mx);
        attr_set = true;
    }
    cudaStream_t st = (cudaStream_t)stream;
    if (use_tc(a)) {
        hc_attention_tc(a, stream);
        return;
    }
    int s = n_split_of(a), QT = qt_for(a);
    int64_t n_tiles = (a->n_tok + QT - 1) / QT;
    dim3 grid((unsigned)(n_tiles * (a->per_head ? a->n_head : a->n_head_kv)), (unsigned)s);
    size_t sm = smem_bytes(a->head_dim, MAX_P);
    if (a->head_dim <= NT) hc_launch(attn_k<1>, grid, NT, sm, st, *a, s, QT, scratch);
    else hc_launch(attn_k<2>, grid, NT, sm, st, *a, s, QT, scratch);
    if (s > 1) hc_launch(attn_combine_k, (unsigned)(a->n_tok * a->n_head), 128, 0, st, *a, s, (const float *)scratch);
    if (hc_kv_turbo(a->v_type)) hc_turbo_unrotate(a->out, a->n_tok * a->n_head * a->head_dim / 64, stream);
}
