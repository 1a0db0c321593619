/*
 * gemv.cu - matrix-vector products for decode-sized steps (up to HC_GEMV_MAX_TOK tokens): the
 * fast path of hc_matmul, built to stream every weight byte once at close to copy bandwidth.
 *
 * A row is read by P threads (P = 16 to 256: more when the launch has few rows, so that one
 * wave of resident threads covers it with enough bytes in flight), each reading 16 bytes at a
 * time with loads that bypass L1 (which keeps the activations), consecutive threads reading
 * consecutive bytes. 16-bit and f32 rows go in batches of 8 such loads per thread, the next
 * batch in flight while the current one is used. Quantized rows go a group of whole blocks per
 * thread, the smallest group whose size is a multiple of 16 bytes (8 blocks of Q4_0 or Q8_0 =
 * 144 or 272 bytes, 4 of Q4_1 = 80), read coalesced and regrouped through shared memory; a
 * block's fields are cut out of the group's registers at byte offsets known at compile time. Each thread fetches its first
 * batch before hc_pdl_begin, so that fetch overlaps the kernel before it. The P partial sums
 * of a row meet through shuffles (and shared memory past a warp); activations come from L1.
 *
 * Q4_0, Q4_1 and Q8_0 rows meet 8-bit activations (hc_mv_quantize: per 32 values d = max|x| /
 * 127 rounded to f16, q = round(x / d), as the CPU's default kernels and llama.cpp) and are
 * dotted four bytes at a time with dp4a; the integer sums are exact.
 */
#include "backend/cuda/gemv.cuh"

/* 16 bytes of a weight, not kept in L1 */
static __device__ __forceinline__ uint4 ld_stream(const uint4 *p) {
    uint4 r;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
        : "l"(p));
    return r;
}

/* The output row r of a launch: its weight row, where its result goes, whether it exists. */
struct mv_row {
    const uint8_t *w;
    float         *y;
    int64_t        ldy, o;
    bool           live;
};

static __device__ __forceinline__ mv_row row_of(const hc_mv &m, int64_t r) {
    mv_row rr = {m.w[0], m.y[0], m.ldy[0], r, false};
    int64_t total = m.end[0];
#pragma unroll
    for (int k = 1; k < HC_MV_MAX; k++) {
        if (k >= m.n) break;
        total = m.end[k];
        if (r >= m.end[k - 1]) {
            rr.w = m.w[k];
            rr.y = m.y[k];
            rr.ldy = m.ldy[k];
            rr.o = r - m.end[k - 1];
        }
    }
    rr.live = r < total;
    if (!rr.live) rr.o = 0;
    rr.w += (size_t)rr.o * m.row_bytes;
    return rr;
}

/* Sum each token's partials over the P threads of a row and store them. */
template <int NT, int P>
static __device__ __forceinline__ void mv_store(float *acc, int n_tok, const mv_row &rr) {
    constexpr int W = P < 32 ? P : 32;
#pragma unroll
    for (int t = 0; t < NT; t++)
#pragma unroll
        for (int o = W / 2; o > 0; o >>= 1) acc[t] += __shfl_xor_sync(0xffffffffu, acc[t], o);
    if (P > 32) {
        __shared__ float red[8][NT];
        const int warp = threadIdx.x / 32;
        if (threadIdx.x % 32 == 0)
#pragma unroll
            for (int t = 0; t < NT; t++) red[warp][t] = acc[t];
        __syncthreads();
        if (threadIdx.x % P == 0)
#pragma unroll
            for (int t = 0; t < NT; t++) {
                float v = 0.0f;
#pragma unroll
                for (int k = 0; k < P / 32; k++) v += red[warp + k][t];
                acc[t] = v;
            }
    }
    if (threadIdx.x % P == 0 && rr.live)
#pragma unroll
        for (int t = 0; t < NT; t++)
            if (t < n_tok) rr.y[t * rr.ldy + rr.o] = acc[t];
}

/* ---- 16-bit and f32 rows ---- */

template <int T>
static __device__ __forceinline__ void to_f32(uint4 u, float *w) {
    if (T == HC_F32) {
        w[0] = __uint_as_float(u.x); w[1] = __uint_as_float(u.y);
        w[2] = __uint_as_float(u.z); w[3] = __uint_as_float(u.w);
        return;
    }
    const uint32_t p[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int k = 0; k < 4; k++) {
        if (T == HC_BF16) {
            w[2 * k] = __uint_as_float(p[k] << 16);
            w[2 * k + 1] = __uint_as_float(p[k] & 0xffff0000u);
        } else {
            w[2 * k] = hc_h2f((uint16_t)(p[k] & 0xffff));
            w[2 * k + 1] = hc_h2f((uint16_t)(p[k] >> 16));
        }
    }
}

template <int T, int NT, int P>
static __global__ void __launch_bounds__(256) mv_plain_k(hc_mv m, const float *__restrict__ x, int n_tok) {
    constexpr int E = T == HC_F32 ? 4 : 8, U = 8; /* elements per load, loads per batch */
    const mv_row rr = row_of(m, (int64_t)blockIdx.x * (256 / P) + threadIdx.x / P);
    const int64_t nch = rr.live ? m.n_in / E : 0;
    const uint4 *rp = (const uint4 *)rr.w;
    int64_t c = threadIdx.x % P;
    uint4 nxt[U];
#pragma unroll
    for (int u = 0; u < U; u++) nxt[u] = c + u * P < nch ? ld_stream(rp + c + u * P) : make_uint4(0, 0, 0, 0);
    hc_pdl_begin();
    float acc[NT];
#pragma unroll
    for (int t = 0; t < NT; t++) acc[t] = 0.0f;
    for (; c < nch; c += U * P) {
        uint4 cur[U];
#pragma unroll
        for (int u = 0; u < U; u++) cur[u] = nxt[u];
#pragma unroll
        for (int u = 0; u < U; u++)
            if (c + (U + u) * P < nch) nxt[u] = ld_stream(rp + c + (U + u) * P);
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t cu = c + u * P;
            if (cu >= nch) break;
            float w[E];
            to_f32<T>(cur[u], w);
#pragma unroll
            for (int t = 0; t < NT; t++) {
                if (t >= n_tok) break;
                const float4 *xp = (const float4 *)(x + t * m.n_in + cu * E);
                float4 a = __ldg(xp);
                float s = w[0] * a.x + w[1] * a.y + w[2] * a.z + w[3] * a.w;
                if (E == 8) {
                    float4 b = __ldg(xp + 1);
                    s += w[E > 4 ? 4 : 0] * b.x + w[E > 4 ? 5 : 1] * b.y + w[E > 4 ? 6 : 2] * b.z +
                         w[E > 4 ? 7 : 3] * b.w;
                }
                acc[t] += s;
            }
        }
    }
    mv_store<NT, P>(acc, n_tok, rr);
}

/* ---- Q4_0, Q4_1, Q8_0 rows and 8-bit activations ---- */

template <int T>
struct qgroup {
    static constexpr int BB = T == HC_Q4_0 ? 18 : T == HC_Q4_1 ? 20 : 34; /* bytes per block */
    static constexpr int G = T == HC_Q4_1 ? 4 : 8;                         /* blocks per group */
    static constexpr int V = BB * G / 16;                                  /* 16-byte loads */
};

/* 32 bits at an even byte offset of a group held in registers (off is a constant) */
static __device__ __forceinline__ int w32(const uint32_t *v, int off) {
    return (int)((off & 3) ? __byte_perm(v[off >> 2], v[(off >> 2) + 1], 0x5432) : v[off >> 2]);
}
static __device__ __forceinline__ float w16f(const uint32_t *v, int off) {
    return hc_h2f((uint16_t)(v[off >> 2] >> ((off & 3) * 8)));
}

/* Where token t's 8-bit activations are: in global memory (xq [tok][n_in], xd [tok][nb][2]) or,
 * for one token, copied into shared memory with 16 bytes of padding after every 8 blocks and one
 * float after every 8 scale pairs, so that the threads of a row, each on its own group of 8
 * blocks, read different banks. */
template <bool SM>
struct xsrc {
    const int8_t *q;
    const float  *d;
    int64_t       n_in, nb;
    __device__ __forceinline__ void get(int t, int64_t b, bool want_s1, int4 &x0, int4 &x1, float &dx,
                                        float &s1) const {
        if (SM) {
            const int4 *p = (const int4 *)(q + b * 32 + (b >> 3) * 16);
            x0 = p[0];
            x1 = p[1];
            dx = d[2 * b + (b >> 3)];
            s1 = want_s1 ? d[2 * b + 1 + (b >> 3)] : 0.0f;
        } else {
            const int4 *p = (const int4 *)(q + t * n_in + b * 32);
            x0 = __ldg(p);
            x1 = __ldg(p + 1);
            dx = __ldg(d + t * nb * 2 + 2 * b);
            s1 = want_s1 ? __ldg(d + t * nb * 2 + 2 * b + 1) : 0.0f;
        }
    }
};

/* bytes of shared memory for one token's activations of n_in values (see xsrc) */
static __host__ __device__ __forceinline__ int64_t xs_bytes(int64_t n_in) { return n_in + n_in / 256 * 16 + 16; }
static __host__ __device__ __forceinline__ int64_t xd_floats(int64_t n_in) { return n_in / 16 + n_in / 256 + 1; }

/* block k of the group in v against activation block (x0, x1) with scale dx (and scaled sum s1) */
template <int T>
static __device__ __forceinline__ float dot_blk(const uint32_t *v, int k, int4 x0, int4 x1, float dx, float s1) {
    const int xv[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
    const int off = k * qgroup<T>::BB;
    const float dw = w16f(v, off);
    if (T == HC_Q4_0) {
        int s = 0, sx = 0;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int q = w32(v, off + 2 + 4 * j);
            s = __dp4a(q & 0x0F0F0F0F, xv[j], s);
            s = __dp4a((q >> 4) & 0x0F0F0F0F, xv[4 + j], s);
            sx = __dp4a(0x01010101, xv[j], sx);
            sx = __dp4a(0x01010101, xv[4 + j], sx);
        }
        return dw * dx * (float)(s - 8 * sx);
    } else if (T == HC_Q4_1) {
        int s = 0;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int q = w32(v, off + 4 + 4 * j);
            s = __dp4a(q & 0x0F0F0F0F, xv[j], s);
            s = __dp4a((q >> 4) & 0x0F0F0F0F, xv[4 + j], s);
        }
        return dw * dx * (float)s + w16f(v, off + 2) * s1;
    } else {
        int s = 0;
#pragma unroll
        for (int j = 0; j < 8; j++) s = __dp4a(w32(v, off + 2 + 4 * j), xv[j], s);
        return dw * dx * (float)s;
    }
}

/* The P threads of a row read P groups at a time as one coalesced run of 16-byte loads, pass
 * them through shared memory (seg: [256 / P rows][P * V]; V is odd, so the reads of whole groups
 * do not collide in banks) and each takes its own group from there. P <= 32: a row's threads
 * are one warp or half of one. One token's activations are staged in shared memory too (xsrc):
 * read from L1 by every thread they would keep it busier than the weights do. */
template <int T, int NT, int P>
static __global__ void __launch_bounds__(256) mv_q8_k(hc_mv m, const int8_t *__restrict__ xq,
                                                      const float *__restrict__ xd, int n_tok) {
    using F = qgroup<T>;
    constexpr int V = F::V;
    constexpr bool SM = NT == 1;
    extern __shared__ uint4 seg[];
    const int li = threadIdx.x % P;
    const mv_row rr = row_of(m, (int64_t)blockIdx.x * (256 / P) + threadIdx.x / P);
    const int64_t nb = m.n_in / 32, ng = nb / F::G, nu = rr.live ? ng * V : 0;
    const uint4 *rp = (const uint4 *)rr.w;
    uint4 *sr = seg + (threadIdx.x / P) * P * V;
    uint4 nxt[V];
#pragma unroll
    for (int k = 0; k < V; k++) nxt[k] = li + k * P < nu ? ld_stream(rp + li + k * P) : make_uint4(0, 0, 0, 0);
    hc_pdl_begin();
    xsrc<SM> xs = {xq, xd, m.n_in, nb};
    if (SM) {
        int8_t *sq = (int8_t *)(seg + 256 * V);
        float *sd = (float *)(sq + xs_bytes(m.n_in));
        for (int64_t c = threadIdx.x; c < nb * 2; c += 256) {
            const int64_t b = c >> 1;
            *(int4 *)(sq + b * 32 + (b >> 3) * 16 + (c & 1) * 16) = __ldg((const int4 *)xq + c);
            sd[2 * b + (b >> 3) + (c & 1)] = __ldg(xd + c);
        }
        __syncthreads();
        xs.q = sq;
        xs.d = sd;
    }
    float acc[NT];
#pragma unroll
    for (int t = 0; t < NT; t++) acc[t] = 0.0f;
    for (int64_t g0 = 0; g0 < ng; g0 += P) { /* the same trip count for every row of the warp */
        __syncwarp();
#pragma unroll
        for (int k = 0; k < V; k++) sr[li + k * P] = nxt[k];
        __syncwarp();
        const int64_t u0 = (g0 + P) * V;
#pragma unroll
        for (int k = 0; k < V; k++)
            if (u0 + li + k * P < nu) nxt[k] = ld_stream(rp + u0 + li + k * P);
        const int64_t g = g0 + li;
        if (rr.live && g < ng) {
            uint32_t cur[4 * V];
#pragma unroll
            for (int i = 0; i < V; i++) {
                const uint4 u = sr[li * V + i];
                cur[4 * i] = u.x;
                cur[4 * i + 1] = u.y;
                cur[4 * i + 2] = u.z;
                cur[4 * i + 3] = u.w;
            }
#pragma unroll
            for (int k = 0; k < F::G; k++)
#pragma unroll
                for (int t = 0; t < NT; t++) {
                    if (t >= n_tok) break;
                    int4 x0, x1;
                    float dx, s1;
                    xs.get(t, g * F::G + k, T == HC_Q4_1, x0, x1, dx, s1);
                    acc[t] += dot_blk<T>(cur, k, x0, x1, dx, s1);
                }
        }
    }
    mv_store<NT, P>(acc, n_tok, rr);
}

/* One warp per 32-element block: q = round(x / d), d = max|x| / 127 rounded to f16 as stored by
 * the CPU's q8_0/q8_1; xd[2b] = d, xd[2b+1] = f16(d * sum q). */
static __global__ void quantize_q8_k(const float *x, int64_t n_blocks, int8_t *xq, float *xd) {
    hc_pdl_begin();
    int64_t b = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (b >= n_blocks) return;
    float v = x[b * 32 + lane];
    float amax = hc_warp_max(fabsf(v));
    float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    int q = (int)roundf(v * id);
    xq[b * 32 + lane] = (int8_t)q;
    float sum = hc_warp_sum((float)q);
    if (lane == 0) {
        xd[2 * b] = hc_round_h(d);
        xd[2 * b + 1] = hc_round_h(d * sum);
    }
}

void hc_mv_quantize(const float *x, int64_t n_blocks, int8_t *xq, float *xd, cudaStream_t s) {
    hc_launch(quantize_q8_k, hc_blocks(n_blocks * 32, 256), 256, 0, s, x, n_blocks, xq, xd);
}

/* ---- launch ---- */

static int64_t rows_of(const hc_mv *m) { return m->end[m->n - 1]; }

/* Warps the GPU can keep in flight: 48 per multiprocessor. */
static int64_t warps_in_flight(void) {
    static int n_sm;
    if (!n_sm) {
        int dev = 0;
        cudaGetDevice(&dev);
        if (cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n_sm <= 0) n_sm = 132;
    }
    return (int64_t)n_sm * 48;
}

/* Threads per row: a warp's worth (half of one for rows of fewer than 32 units of work: 16-byte
 * loads or block groups), doubled while the launch has fewer threads than the GPU keeps in flight
 * and each thread would still have four units. */
static int threads_per_row(int64_t rows, int64_t units, int max_p) {
    int P = units >= 32 ? 32 : 16;
    while (P < max_p && rows * P < warps_in_flight() * 32 && units >= 4 * P) P *= 2;
    return P;
}

#define HC_P_SWITCH(P, BODY)                                  \
    switch (P) {                                              \
    case 16: { constexpr int PP = 16; BODY; } break;          \
    case 32: { constexpr int PP = 32; BODY; } break;          \
    case 64: { constexpr int PP = 64; BODY; } break;          \
    case 128: { constexpr int PP = 128; BODY; } break;        \
    default: { constexpr int PP = 256; BODY; } break;         \
    }

bool hc_mv_fast_ok(int type, const hc_mv *m, bool q8) {
    bool aligned = m->row_bytes % 16 == 0;
    for (int i = 0; i < m->n; i++) aligned = aligned && ((uintptr_t)m->w[i] & 15) == 0;
    if (!aligned) return false;
    if (!q8) return (type == HC_F32 && m->n_in % 4 == 0) || ((type == HC_F16 || type == HC_BF16) && m->n_in % 8 == 0);
    int G = type == HC_Q4_1 ? 4 : 8;
    return (type == HC_Q4_0 || type == HC_Q4_1 || type == HC_Q8_0) && m->n_in % (32 * G) == 0;
}

template <int T, int NT>
static void plain_t(const hc_mv *m, const float *x, int n_tok, cudaStream_t s) {
    int64_t rows = rows_of(m);
    int P = threads_per_row(rows, m->n_in / (T == HC_F32 ? 4 : 8), 256);
    HC_P_SWITCH(P, (hc_launch(mv_plain_k<T, NT, PP>, hc_blocks(rows, 256 / PP), 256, 0, s, *m, x, n_tok)));
}

void hc_mv_plain(int type, const hc_mv *m, const float *x, int n_tok, cudaStream_t s) {
    if (n_tok == 1) {
        if (type == HC_F32) plain_t<HC_F32, 1>(m, x, n_tok, s);
        else if (type == HC_F16) plain_t<HC_F16, 1>(m, x, n_tok, s);
        else plain_t<HC_BF16, 1>(m, x, n_tok, s);
    } else {
        if (type == HC_F32) plain_t<HC_F32, HC_GEMV_MAX_TOK>(m, x, n_tok, s);
        else if (type == HC_F16) plain_t<HC_F16, HC_GEMV_MAX_TOK>(m, x, n_tok, s);
        else plain_t<HC_BF16, HC_GEMV_MAX_TOK>(m, x, n_tok, s);
    }
}

template <int T, int NT>
static void q8_t(const hc_mv *m, const int8_t *xq, const float *xd, int n_tok, cudaStream_t s) {
    int64_t rows = rows_of(m);
    int P = threads_per_row(rows, m->n_in / (32 * qgroup<T>::G), 32);
    size_t sm = (size_t)256 * qgroup<T>::V * 16;
    if (NT == 1) sm += (size_t)xs_bytes(m->n_in) + (size_t)xd_floats(m->n_in) * sizeof(float);
    static bool attr_set;
    if (!attr_set) { /* past the default 48 KB: Q8_0's groups, long rows' activations */
        int most = 0;
        cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
        cudaFuncSetAttribute(mv_q8_k<T, NT, 16>, cudaFuncAttributeMaxDynamicSharedMemorySize, most);
        cudaFuncSetAttribute(mv_q8_k<T, NT, 32>, cudaFuncAttributeMaxDynamicSharedMemorySize, most);
        attr_set = true;
    }
    if (P == 16) hc_launch(mv_q8_k<T, NT, 16>, hc_blocks(rows, 16), 256, sm, s, *m, xq, xd, n_tok);
    else hc_launch(mv_q8_k<T, NT, 32>, hc_blocks(rows, 8), 256, sm, s, *m, xq, xd, n_tok);
}

void hc_mv_q8(int type, const hc_mv *m, const int8_t *xq, const float *xd, int n_tok, cudaStream_t s) {
    if (n_tok == 1) {
        if (type == HC_Q4_0) q8_t<HC_Q4_0, 1>(m, xq, xd, n_tok, s);
        else if (type == HC_Q4_1) q8_t<HC_Q4_1, 1>(m, xq, xd, n_tok, s);
        else q8_t<HC_Q8_0, 1>(m, xq, xd, n_tok, s);
    } else {
        if (type == HC_Q4_0) q8_t<HC_Q4_0, HC_GEMV_MAX_TOK>(m, xq, xd, n_tok, s);
        else if (type == HC_Q4_1) q8_t<HC_Q4_1, HC_GEMV_MAX_TOK>(m, xq, xd, n_tok, s);
        else q8_t<HC_Q8_0, HC_GEMV_MAX_TOK>(m, xq, xd, n_tok, s);
    }
}
