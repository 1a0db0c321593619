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
 * block's fields are cut out of the group's registers at byte offsets known at compile time.
 * Each thread fetches its first batch before hc_pdl_begin, so that fetch overlaps the kernel
 * before it. The P partial sums of a row meet through shuffles (and shared memory past a warp);
 * activations come from L1. A launch of several tokens would load each token's activations again
 * for every weight piece (more L1 traffic than weight bytes, growing with the tokens), so in the
 * waves layout a row group then takes HC_MV_ROWS rows and loads them once for all of them.
 *
 * A (row, token) result never depends on the launch's token count (speculative decoding's
 * verify step relies on it): P is what a one-token launch picks, each 16-byte piece is dotted
 * with explicit fused multiply-adds (piece_dot), its sums added in the piece order, and the P
 * partials reduced the same way, in every kernel.
 *
 * Two layouts of a launch: waves of short blocks (one row group each), or persistent (one wave
 * of resident blocks streaming many rows each; below). hc_mv_configure picks; by default the
 * 8-bit kernels run persistent and the 16-bit and f32 ones in waves, as measured faster on the
 * H200 (bench/cuda-h200.md).
 *
 * Q4_0, Q4_1 and Q8_0 rows meet 8-bit activations (hc_mv_quantize: per 32 values d = max|x| /
 * 127 rounded to f16, q = round(x / d), as the CPU's default kernels and llama.cpp) and are
 * dotted four bytes at a time with dp4a; the integer sums are exact.
 */
#include "backend/cuda/gemv.cuh"

/* Rows per row group of the waves layout at several tokens (mv_plain_k): each token's
 * activations are loaded once for this many rows (mv_rows: 1 compares, hc_mv_rows_configure).
 * One token keeps one row a group. */
#define HC_MV_ROWS 4

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

/* Sum each token's partials over the P threads of a row: the sums end in the row's first thread
 * (threadIdx.x % P == 0). Every thread of the block calls it together. */
template <int NT, int P>
static __device__ __forceinline__ void mv_reduce(float *acc) {
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
        __syncthreads(); /* red is reused by the next row of a persistent kernel */
    }
}

/* mv_reduce, then the row's first thread stores the sums */
template <int NT, int P>
static __device__ __forceinline__ void mv_store(float *acc, int n_tok, const mv_row &rr) {
    mv_reduce<NT, P>(acc);
    if (threadIdx.x % P == 0 && rr.live)
#pragma unroll
        for (int t = 0; t < NT; t++)
            if (t < n_tok) rr.y[t * rr.ldy + rr.o] = acc[t];
}

/* ---- persistent layout: one wave of blocks, each row group streaming several rows ----
 *
 * A launch of the kernels above is one or more waves of short blocks, and every block pays a
 * load latency at its start and a drain at its end. The persistent kernels below start only as
 * many blocks as stay resident (a grid sized from the kernel's occupancy) and give row group g
 * of G the rows g, g + G, g + 2G, ...; each thread's loads form one stream over all its rows, the
 * next ones in flight while the current ones are used, across row ends. Every thread goes
 * through the same number of rows (past the last, rows that do not exist), so the groups of a
 * block stay in step for their reductions. */

/* The 8-bit kernel's cursor: where a thread's next loads come from, row r (row group g + k G)
 * and its slot j (a run of P groups). */
struct mv_feed {
    const uint4 *p;
    int64_t      r, j;
    bool         live;
};

static __device__ __forceinline__ void feed_row(mv_feed &f, const hc_mv &m, int64_t total) {
    f.live = f.r < total;
    f.p = (const uint4 *)row_of(m, f.live ? f.r : 0).w;
}

/* after slot j of a row: the next slot, or the first of the group's next row (L slots a row) */
static __device__ __forceinline__ void feed_next(mv_feed &f, const hc_mv &m, int64_t total, int64_t L, int64_t G) {
    if (++f.j == L) {
        f.j = 0;
        f.r += G;
        feed_row(f, m, total);
    }
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

/* Token t's 8 activations of piece cu: x [t][cu E .. cu E + E - 1] (E = 4: b is not read) */
template <int E>
static __device__ __forceinline__ void x_piece(const float *__restrict__ x, int64_t n_in, int64_t cu, int t, float4 &a,
                                               float4 &b) {
    const float4 *xp = (const float4 *)(x + t * n_in + cu * E);
    a = __ldg(xp);
    if (E == 8) b = __ldg(xp + 1);
}

/* One piece's partial dot, its operations spelled out (no contraction left to the compiler), so
 * that a (row, token) sum has the same bits in every kernel and at every token count. */
template <int E>
static __device__ __forceinline__ float piece_dot(const float *w, float4 a, float4 b) {
    float s = __fmaf_rn(w[3], a.w, __fmaf_rn(w[2], a.z, __fmaf_rn(w[1], a.y, __fmul_rn(w[0], a.x))));
    if (E == 8)
        s = __fadd_rn(s, __fmaf_rn(w[7], b.w, __fmaf_rn(w[6], b.z, __fmaf_rn(w[5], b.y, __fmul_rn(w[4], b.x)))));
    return s;
}

/* acc[t] += the 16 bytes u of a row (its piece cu) against token t's matching activations */
template <int T, int NT>
static __device__ __forceinline__ void plain_dot(uint4 u, const float *__restrict__ x, int64_t n_in, int64_t cu,
                                                 int n_tok, float *acc) {
    constexpr int E = T == HC_F32 ? 4 : 8;
    float w[8];
    to_f32<T>(u, w);
#pragma unroll
    for (int t = 0; t < NT; t++) {
        if (t >= n_tok) break;
        float4 a, b = make_float4(0, 0, 0, 0);
        x_piece<E>(x, n_in, cu, t, a, b);
        acc[t] = __fadd_rn(acc[t], piece_dot<E>(w, a, b));
    }
}

/* plain_dot for R rows' pieces u[i] at the same cu: each token's activations are read once for
 * the R rows (the loads of x, not the weights, bound a launch of several tokens); row i's sums
 * go through the very operations plain_dot does. */
template <int T, int NT, int R>
static __device__ __forceinline__ void plain_dot_rows(const uint4 *u, const float *__restrict__ x, int64_t n_in,
                                                      int64_t cu, int n_tok, float (*acc)[NT]) {
    constexpr int E = T == HC_F32 ? 4 : 8;
    float w[R][8];
#pragma unroll
    for (int i = 0; i < R; i++) to_f32<T>(u[i], w[i]);
#pragma unroll
    for (int t = 0; t < NT; t++) {
        if (t >= n_tok) break;
        float4 a, b = make_float4(0, 0, 0, 0);
        x_piece<E>(x, n_in, cu, t, a, b);
#pragma unroll
        for (int i = 0; i < R; i++) acc[i][t] = __fadd_rn(acc[i][t], piece_dot<E>(w[i], a, b));
    }
}

/* The waves layout: a block's 256 / P row groups take R consecutive rows each (R > 1 for launches
 * of several tokens, see plain_dot_rows); the P threads of a group read pieces lane, lane + P,
 * ... of each of its rows, U / R pieces of every row per batch, so that a thread keeps U loads in
 * flight whatever R. A row's P partial sums and their order are those of R = 1. */
template <int T, int NT, int P, int R>
static __global__ void __launch_bounds__(256, R > 1 ? 2 : 1) mv_plain_k(hc_mv m, const float *__restrict__ x,
                                                                        int n_tok) {
    constexpr int E = T == HC_F32 ? 4 : 8, U = R == 1 ? 8 : 4 / R; /* elements per load, loads per row per batch */
    static_assert(U >= 1 && (R == 1 || U * R == 4), "R divides the batch");
    const int64_t r0 = ((int64_t)blockIdx.x * (256 / P) + threadIdx.x / P) * R;
    const uint4 *rp[R];
    bool live[R], any = false;
#pragma unroll
    for (int i = 0; i < R; i++) {
        const mv_row rr = row_of(m, r0 + i);
        rp[i] = (const uint4 *)rr.w;
        live[i] = rr.live;
        any = any || rr.live;
    }
    const int64_t nch = any ? m.n_in / E : 0;
    int64_t c = threadIdx.x % P;
    uint4 nxt[U][R];
#pragma unroll
    for (int u = 0; u < U; u++)
#pragma unroll
        for (int i = 0; i < R; i++)
            nxt[u][i] = live[i] && c + u * P < nch ? ld_stream(rp[i] + c + u * P) : make_uint4(0, 0, 0, 0);
    hc_pdl_begin();
    float acc[R][NT];
#pragma unroll
    for (int i = 0; i < R; i++)
#pragma unroll
        for (int t = 0; t < NT; t++) acc[i][t] = 0.0f;
    for (; c < nch; c += U * P) {
        uint4 cur[U][R];
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int i = 0; i < R; i++) cur[u][i] = nxt[u][i];
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int i = 0; i < R; i++)
                if (live[i] && c + (U + u) * P < nch) nxt[u][i] = ld_stream(rp[i] + c + (U + u) * P);
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t cu = c + u * P;
            if (cu >= nch) break;
            plain_dot_rows<T, NT, R>(cur[u], x, m.n_in, cu, n_tok, acc);
        }
    }
#pragma unroll
    for (int i = 0; i < R; i++) mv_store<NT, P>(acc[i], n_tok, row_of(m, r0 + i));
}

/* Row k of a persistent row group's sequence: rows g, g + G, ...; with a GLU, gate row g, up
 * row g, gate row g + G, up row g + G, ... (up rows are numbered after the gate's in m). live:
 * the logical row exists. */
template <bool GLU>
static __device__ __forceinline__ mv_row seq_row(const hc_mv &m, int64_t g, int64_t G, int64_t k, int64_t total) {
    const int64_t r = g + (GLU ? k >> 1 : k) * G;
    mv_row rr = row_of(m, r < total ? r + (GLU && (k & 1) ? m.end[0] : 0) : 0);
    rr.live = r < total;
    return rr;
}

/* The persistent twin of mv_plain_k: a row group goes through its rows as mv_plain_k through
 * one, batch by batch, and the batch after a row's last is the next row's first. GLU: the
 * launch holds two weights of equal rows (gate, up), the group takes gate row r then up row r,
 * and its first thread stores act(gate . x) * (up . x) into the gate's output. */
template <int T, int NT, int P, bool GLU>
static __global__ void __launch_bounds__(256) mv_plain_p(hc_mv m, const float *__restrict__ x, int n_tok, int kind) {
    constexpr int E = T == HC_F32 ? 4 : 8, U = 8;
    const int li = threadIdx.x % P;
    const int64_t G = (int64_t)gridDim.x * (256 / P), g = (int64_t)blockIdx.x * (256 / P) + threadIdx.x / P;
    const int64_t total = GLU ? m.end[0] : m.end[m.n - 1], nch = m.n_in / E;
    const int64_t n_seq = (total + G - 1) / G * (GLU ? 2 : 1); /* the same for every thread */
    mv_row rr = seq_row<GLU>(m, g, G, 0, total);
    const uint4 *rp = (const uint4 *)rr.w;
    uint4 nxt[U];
#pragma unroll
    for (int u = 0; u < U; u++) nxt[u] = rr.live && li + u * P < nch ? ld_stream(rp + li + u * P) : make_uint4(0, 0, 0, 0);
    hc_pdl_begin();
    float acc[NT], gate[NT];
#pragma unroll
    for (int t = 0; t < NT; t++) acc[t] = gate[t] = 0.0f;
    for (int64_t k = 0; k < n_seq; k++) {
        const mv_row nr = seq_row<GLU>(m, g, G, k + 1, total);
        const uint4 *np = (const uint4 *)nr.w;
        for (int64_t c = li; c < nch; c += U * P) {
            uint4 cur[U];
#pragma unroll
            for (int u = 0; u < U; u++) cur[u] = nxt[u];
            if (c + U * P < nch) {
#pragma unroll
                for (int u = 0; u < U; u++)
                    if (rr.live && c + (U + u) * P < nch) nxt[u] = ld_stream(rp + c + (U + u) * P);
            } else { /* the next row's first batch */
#pragma unroll
                for (int u = 0; u < U; u++)
                    if (nr.live && li + u * P < nch) nxt[u] = ld_stream(np + li + u * P);
            }
            if (rr.live)
#pragma unroll
                for (int u = 0; u < U; u++) {
                    const int64_t cu = c + u * P;
                    if (cu >= nch) break;
                    plain_dot<T, NT>(cur[u], x, m.n_in, cu, n_tok, acc);
                }
        }
        /* the row is done: every thread of the block is here together */
        if (GLU && !(k & 1)) { /* a gate row: keep its sums for the up row */
            mv_reduce<NT, P>(acc);
#pragma unroll
            for (int t = 0; t < NT; t++) gate[t] = acc[t];
        } else if (GLU) {
            mv_reduce<NT, P>(acc);
            if (threadIdx.x % P == 0 && rr.live)
#pragma unroll
                for (int t = 0; t < NT; t++)
                    if (t < n_tok) rr.y[t * rr.ldy + rr.o] = hc_glu1(gate[t], acc[t], kind);
        } else
            mv_store<NT, P>(acc, n_tok, rr);
#pragma unroll
        for (int t = 0; t < NT; t++) acc[t] = 0.0f;
        rr = nr;
        rp = np;
    }
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

/* Where token t's 8-bit activations are: in global memory (xq [tok][n_in], xd [tok][nb][2]) or
 * copied into shared memory (every token of the launch, each xs_bytes and xd_floats apart: tq,
 * td) with 16 bytes of padding after every 8 blocks and one float after every 8 scale pairs, so
 * that the threads of a row, each on its own group of 8 blocks, read different banks. The same
 * values either way: where they are read from never changes a sum. */
template <bool SM>
struct xsrc {
    const int8_t *q;
    const float  *d;
    int64_t       n_in, nb, tq, td;
    __device__ __forceinline__ void get(int t, int64_t b, bool want_s1, int4 &x0, int4 &x1, float &dx,
                                        float &s1) const {
        if (SM) {
            const int4 *p = (const int4 *)(q + t * tq + b * 32 + (b >> 3) * 16);
            x0 = p[0];
            x1 = p[1];
            dx = d[t * td + 2 * b + (b >> 3)];
            s1 = want_s1 ? d[t * td + 2 * b + 1 + (b >> 3)] : 0.0f;
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

/* The n_tok tokens' activations copied into shared memory at sq (SM), padded as xsrc reads
 * them, by the whole block; else read where they are. With xf (f32 activations of one token, SM
 * only) the block rounds them to 8 bits itself, warp w taking blocks w, w + 8, ... with
 * hc_mv_quantize's arithmetic, instead of copying what that kernel would have written. */
template <bool SM>
static __device__ __forceinline__ xsrc<SM> stage_x(const int8_t *xq, const float *xd, const float *xf, int64_t n_in,
                                                   int n_tok, int8_t *sq) {
    const int64_t nb = n_in / 32;
    xsrc<SM> xs = {xq, xd, n_in, nb, xs_bytes(n_in), xd_floats(n_in)};
    if (SM) {
        float *sd = (float *)(sq + (size_t)n_tok * xs_bytes(n_in));
        if (xf) {
            const int lane = threadIdx.x % 32;
            for (int64_t b = threadIdx.x / 32; b < nb; b += 8) { /* the same trips for a warp's lanes */
                const float v = xf[b * 32 + lane];
                const float amax = hc_warp_max(fabsf(v));
                const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
                const int q = (int)roundf(v * id);
                sq[b * 32 + (b >> 3) * 16 + lane] = (int8_t)q;
                const float sum = hc_warp_sum((float)q);
                if (lane == 0) {
                    sd[2 * b + (b >> 3)] = hc_round_h(d);
                    sd[2 * b + 1 + (b >> 3)] = hc_round_h(d * sum);
                }
            }
        } else
            for (int64_t c = threadIdx.x; c < n_tok * nb * 2; c += 256) { /* c: half-block c % (2 nb) of token t */
                const int64_t t = c / (nb * 2), h = c - t * nb * 2, b = h >> 1;
                *(int4 *)(sq + t * xs.tq + b * 32 + (b >> 3) * 16 + (h & 1) * 16) = __ldg((const int4 *)xq + c);
                sd[t * xs.td + 2 * b + (b >> 3) + (h & 1)] = __ldg(xd + c);
            }
        __syncthreads();
        xs.q = sq;
        xs.d = sd;
    }
    return xs;
}

/* acc[t] += group g of a row (its V 16-byte pieces at sg, in shared memory) against token t */
template <int T, int NT, bool SM>
static __device__ __forceinline__ void group_dot(const uint4 *sg, const xsrc<SM> &xs, int64_t g, int n_tok,
                                                 float *acc) {
    constexpr int V = qgroup<T>::V;
    uint32_t cur[4 * V];
#pragma unroll
    for (int i = 0; i < V; i++) {
        const uint4 u = sg[i];
        cur[4 * i] = u.x;
        cur[4 * i + 1] = u.y;
        cur[4 * i + 2] = u.z;
        cur[4 * i + 3] = u.w;
    }
#pragma unroll
    for (int k = 0; k < qgroup<T>::G; k++)
#pragma unroll
        for (int t = 0; t < NT; t++) {
            if (t >= n_tok) break;
            int4 x0, x1;
            float dx, s1;
            xs.get(t, g * qgroup<T>::G + k, T == HC_Q4_1, x0, x1, dx, s1);
            acc[t] += dot_blk<T>(cur, k, x0, x1, dx, s1);
        }
}

/* The P threads of a row read P groups at a time as one coalesced run of 16-byte loads, pass
 * them through shared memory (seg: [256 / P rows][P * V]; V is odd, so the reads of whole groups
 * do not collide in banks) and each takes its own group from there. P <= 32: a row's threads
 * are one warp or half of one. The tokens' activations are staged in shared memory too (SM, xsrc;
 * always for one token, for several where they fit): read from L1 by every thread, a thread's
 * 32 bytes of a block 256 bytes from its neighbour's, they keep it far busier than the weights
 * do, at every token again. */
template <int T, int NT, int P, bool SM>
static __global__ void __launch_bounds__(256) mv_q8_k(hc_mv m, const int8_t *__restrict__ xq,
                                                      const float *__restrict__ xd, int n_tok) {
    using F = qgroup<T>;
    constexpr int V = F::V;
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
    const xsrc<SM> xs = stage_x<SM>(xq, xd, NULL, m.n_in, n_tok, (int8_t *)(seg + 256 * V));
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
        if (rr.live && g < ng) group_dot<T, NT>(sr + li * V, xs, g, n_tok, acc);
    }
    mv_store<NT, P>(acc, n_tok, rr);
}

/* The persistent twin of mv_q8_k: slot j of a row is its run of groups j P .. j P + P - 1.
 * xf: one token's f32 activations, quantized by each block as it stages them (else xq, xd). */
template <int T, int NT, int P, bool SM>
static __global__ void __launch_bounds__(256) mv_q8_p(hc_mv m, const int8_t *__restrict__ xq,
                                                      const float *__restrict__ xd, const float *xf, int n_tok) {
    using F = qgroup<T>;
    constexpr int V = F::V;
    extern __shared__ uint4 seg[];
    const int li = threadIdx.x % P;
    const int64_t G = (int64_t)gridDim.x * (256 / P), g = (int64_t)blockIdx.x * (256 / P) + threadIdx.x / P;
    const int64_t total = m.end[m.n - 1], nb = m.n_in / 32, ng = nb / F::G, nu = ng * V, L = (ng + P - 1) / P;
    const int64_t S = (total + G - 1) / G * L;
    uint4 *sr = seg + (threadIdx.x / P) * P * V;
    mv_feed f = {NULL, g, 0, false};
    feed_row(f, m, total);
    uint4 nxt[V];
#pragma unroll
    for (int k = 0; k < V; k++) {
        const int64_t u = f.j * P * V + li + k * P;
        nxt[k] = f.live && u < nu ? ld_stream(f.p + u) : make_uint4(0, 0, 0, 0);
    }
    feed_next(f, m, total, L, G);
    hc_pdl_begin();
    const xsrc<SM> xs = stage_x<SM>(xq, xd, xf, m.n_in, n_tok, (int8_t *)(seg + 256 * V));
    int64_t cr = g, cj = 0;
    mv_row rr = row_of(m, cr);
    float acc[NT];
#pragma unroll
    for (int t = 0; t < NT; t++) acc[t] = 0.0f;
    for (int64_t s = 0; s < S; s++) { /* the same trip count for every thread */
        __syncwarp();
#pragma unroll
        for (int k = 0; k < V; k++) sr[li + k * P] = nxt[k];
        __syncwarp();
#pragma unroll
        for (int k = 0; k < V; k++) {
            const int64_t u = f.j * P * V + li + k * P;
            if (f.live && u < nu) nxt[k] = ld_stream(f.p + u);
        }
        feed_next(f, m, total, L, G);
        const int64_t gi = cj * P + li;
        if (rr.live && gi < ng) group_dot<T, NT>(sr + li * V, xs, gi, n_tok, acc);
        if (++cj == L) {
            mv_store<NT, P>(acc, n_tok, rr);
#pragma unroll
            for (int t = 0; t < NT; t++) acc[t] = 0.0f;
            cj = 0;
            cr += G;
            rr = row_of(m, cr);
        }
    }
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

static int mv_mode = HC_MV_AUTO; /* hc_mv_configure */
static int64_t mv_max_blocks;
static int mv_force_p;
static int mv_rows = HC_MV_ROWS;

void hc_mv_rows_configure(int rows) { mv_rows = rows == 1 ? 1 : HC_MV_ROWS; }

void hc_mv_configure(int mode, int max_blocks, int force_p) {
    mv_mode = mode;
    mv_max_blocks = max_blocks > 0 ? max_blocks : 0;
    mv_force_p = force_p;
}

static int n_sms(void) {
    static int n_sm;
    if (!n_sm) {
        int dev = 0;
        cudaGetDevice(&dev);
        if (cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n_sm <= 0) n_sm = 132;
    }
    return n_sm;
}

/* Warps the GPU can keep in flight: 48 per multiprocessor (the wave kernels' estimate). */
static int64_t warps_in_flight(void) { return (int64_t)n_sms() * 48; }

/* Threads per row: a warp's worth (half of one for rows of fewer than 32 units of work: 16-byte
 * loads or block groups), doubled while the launch has fewer threads than the GPU keeps in flight
 * and each thread would still have four units. */
static int threads_per_row(int64_t rows, int64_t units, int max_p) {
    int P = units >= 32 ? 32 : 16;
    while (P < max_p && rows * P < warps_in_flight() * 32 && units >= 4 * P) P *= 2;
    return P;
}

/* Blocks of 256 threads of kernel k (smem bytes of dynamic shared memory) that are resident at
 * once: the persistent grid. (Leaving one block per multiprocessor to the kernel queued next, so
 * that it could fetch its first weights meanwhile, measured much slower: the launch then has too
 * few loads in flight.) */
static int64_t resident_blocks(const void *k, size_t smem) {
    static struct { const void *k; size_t smem; int per; } memo[256]; /* kernels x token counts' smem */
    static int n_memo;
    int per = 0;
    for (int i = 0; i < n_memo && !per; i++)
        if (memo[i].k == k && memo[i].smem == smem) per = memo[i].per;
    if (!per) {
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k, 256, smem) != cudaSuccess || per < 1) {
            cudaGetLastError();
            per = 1;
        }
        if (n_memo < 256) memo[n_memo++] = {k, smem, per};
    }
    return (int64_t)per * n_sms();
}

/* The persistent grid of kernel k (smem bytes) at P threads a row: a block per 256 / P rows, at
 * most the resident ones and mv_max_blocks */
static unsigned persistent_grid(const void *k, int64_t rows, int P, size_t smem) {
    const int rpb = 256 / P;
    int64_t b = (rows + rpb - 1) / rpb, res = resident_blocks(k, smem);
    if (b > res) b = res;
    if (mv_max_blocks && b > mv_max_blocks) b = mv_max_blocks;
    return (unsigned)b;
}

/* The persistent layout of rows x units (16-byte loads or block groups) of work: the threads per
 * row P (of 16..max_p; ks[i] is the kernel for P = 16 << i) whose grid gives each thread the
 * fewest slots, a row's reduction counted as part of a slot (a block-wide one as two). A row's
 * bits depend on P, so every token count plans with the one-token kernels (ks, smem) and only
 * sizes its grid from its own. */
static int persistent_plan(const void *const *ks, int64_t rows, int64_t units, int max_p, size_t smem) {
    static const int order[] = {32, 64, 16, 128, 256};
    double best = 0;
    int bestP = 0;
    for (int oi = 0; oi < 5; oi++) {
        const int P = order[oi], rpb = 256 / P;
        if (P > max_p || (mv_force_p && P != (mv_force_p < max_p ? mv_force_p : max_p))) continue;
        const void *k = ks[P == 16 ? 0 : P == 32 ? 1 : P == 64 ? 2 : P == 128 ? 3 : 4];
        const int64_t G = (int64_t)persistent_grid(k, rows, P, smem) * rpb, n_iter = (rows + G - 1) / G,
                      L = (units + P - 1) / P;
        const double cost = (double)n_iter * ((double)L + (P > 32 ? 2.0 : 0.5));
        if (!bestP || cost < best) {
            best = cost;
            bestP = P;
        }
    }
    return bestP;
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

template <int T, int NT, bool GLU>
static void plain_t(const hc_mv *m, const float *x, int n_tok, int kind, cudaStream_t s) {
    int64_t rows = GLU ? m->end[0] : rows_of(m), units = m->n_in / (T == HC_F32 ? 4 : 8);
    if (!GLU && mv_mode != HC_MV_PERSIST) {
        int P = threads_per_row(rows, units, 256);
        if (NT == 1 || mv_rows == 1) {
            HC_P_SWITCH(P, (hc_launch(mv_plain_k<T, NT, PP, 1>, hc_blocks(rows, 256 / PP), 256, 0, s, *m, x, n_tok)));
        } else {
            HC_P_SWITCH(P, (hc_launch(mv_plain_k<T, NT, PP, HC_MV_ROWS>, hc_blocks(rows, 256 / PP * HC_MV_ROWS), 256, 0,
                                      s, *m, x, n_tok)));
        }
        return;
    }
    const void *ks[5] = {(const void *)mv_plain_p<T, 1, 16, GLU>, (const void *)mv_plain_p<T, 1, 32, GLU>,
                         (const void *)mv_plain_p<T, 1, 64, GLU>, (const void *)mv_plain_p<T, 1, 128, GLU>,
                         (const void *)mv_plain_p<T, 1, 256, GLU>};
    int P = persistent_plan(ks, rows, GLU ? 2 * units : units, 256, 0);
    HC_P_SWITCH(P, (hc_launch(mv_plain_p<T, NT, PP, GLU>, persistent_grid((const void *)mv_plain_p<T, NT, PP, GLU>,
                                                                            rows, PP, 0),
                              256, 0, s, *m, x, n_tok, kind)));
}

template <bool GLU>
static void plain_n(int type, const hc_mv *m, const float *x, int n_tok, int kind, cudaStream_t s) {
    if (n_tok == 1) {
        if (type == HC_F32) plain_t<HC_F32, 1, GLU>(m, x, n_tok, kind, s);
        else if (type == HC_F16) plain_t<HC_F16, 1, GLU>(m, x, n_tok, kind, s);
        else plain_t<HC_BF16, 1, GLU>(m, x, n_tok, kind, s);
    } else {
        if (type == HC_F32) plain_t<HC_F32, HC_GEMV_MAX_TOK, GLU>(m, x, n_tok, kind, s);
        else if (type == HC_F16) plain_t<HC_F16, HC_GEMV_MAX_TOK, GLU>(m, x, n_tok, kind, s);
        else plain_t<HC_BF16, HC_GEMV_MAX_TOK, GLU>(m, x, n_tok, kind, s);
    }
}

void hc_mv_plain(int type, const hc_mv *m, const float *x, int n_tok, cudaStream_t s) {
    plain_n<false>(type, m, x, n_tok, 0, s);
}

bool hc_mv_glu_layout(void) { return mv_mode == HC_MV_PERSIST; }

bool hc_mv_glu_ok(int type, const hc_mv *m) {
    return mv_mode == HC_MV_PERSIST && m->n == 2 && m->end[1] == 2 * m->end[0] && hc_mv_fast_ok(type, m, false);
}

void hc_mv_plain_glu(int type, const hc_mv *m, const float *x, int n_tok, int kind, cudaStream_t s) {
    plain_n<true>(type, m, x, n_tok, kind, s);
}

bool hc_mv_q8_quantizes(int n_tok) { return n_tok == 1 && mv_mode != HC_MV_WAVES; }

/* The most dynamic shared memory a block may take, every 8-bit kernel of type T allowed it (past
 * the default 48 KB: Q8_0's groups, long rows' activations, several tokens'). Once per T. */
template <int T>
static size_t q8_smem_most(void) {
    static int most = -1;
    if (most < 0) {
        int dev = 0;
        cudaGetDevice(&dev);
        if (cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) most = 48 << 10;
        constexpr int N = HC_GEMV_MAX_TOK;
        const void *ks[] = {(const void *)mv_q8_k<T, 1, 16, true>,   (const void *)mv_q8_k<T, 1, 32, true>,
                            (const void *)mv_q8_p<T, 1, 16, true>,   (const void *)mv_q8_p<T, 1, 32, true>,
                            (const void *)mv_q8_k<T, N, 16, true>,   (const void *)mv_q8_k<T, N, 32, true>,
                            (const void *)mv_q8_p<T, N, 16, true>,   (const void *)mv_q8_p<T, N, 32, true>,
                            (const void *)mv_q8_k<T, N, 16, false>,  (const void *)mv_q8_k<T, N, 32, false>,
                            (const void *)mv_q8_p<T, N, 16, false>,  (const void *)mv_q8_p<T, N, 32, false>};
        for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
            cudaFuncSetAttribute(ks[i], cudaFuncAttributeMaxDynamicSharedMemorySize, most);
        cudaGetLastError();
    }
    return (size_t)most;
}

/* One launch of the 8-bit kernels of T, NT, SM on the current layout; P as planned for one token
 * (a row's bits depend on P), sm bytes of shared memory, sm1 what one token's launch takes. */
template <int T, int NT, bool SM>
static void q8_launch(const hc_mv *m, const int8_t *xq, const float *xd, const float *xf, int n_tok, size_t sm,
                      size_t sm1, cudaStream_t s) {
    int64_t rows = rows_of(m), units = m->n_in / (32 * qgroup<T>::G);
    if (mv_mode == HC_MV_WAVES) {
        int P = threads_per_row(rows, units, 32);
        if (P == 16) hc_launch(mv_q8_k<T, NT, 16, SM>, hc_blocks(rows, 16), 256, sm, s, *m, xq, xd, n_tok);
        else hc_launch(mv_q8_k<T, NT, 32, SM>, hc_blocks(rows, 8), 256, sm, s, *m, xq, xd, n_tok);
        return;
    }
    const void *ks[5] = {(const void *)mv_q8_p<T, 1, 16, true>, (const void *)mv_q8_p<T, 1, 32, true>, NULL, NULL,
                         NULL};
    int P = persistent_plan(ks, rows, units, 32, sm1);
    if (P == 16)
        hc_launch(mv_q8_p<T, NT, 16, SM>, persistent_grid((const void *)mv_q8_p<T, NT, 16, SM>, rows, 16, sm), 256, sm,
                  s, *m, xq, xd, xf, n_tok);
    else
        hc_launch(mv_q8_p<T, NT, 32, SM>, persistent_grid((const void *)mv_q8_p<T, NT, 32, SM>, rows, 32, sm), 256, sm,
                  s, *m, xq, xd, xf, n_tok);
}

/* Shared memory: the groups (sm0) and each token's staged activations; several tokens are read
 * from global memory only where their staging would not fit. */
template <int T, int NT>
static void q8_t(const hc_mv *m, const int8_t *xq, const float *xd, const float *xf, int n_tok, cudaStream_t s) {
    const size_t sm0 = (size_t)256 * qgroup<T>::V * 16,
                 per = (size_t)xs_bytes(m->n_in) + (size_t)xd_floats(m->n_in) * sizeof(float), sm1 = sm0 + per,
                 smn = sm0 + (size_t)n_tok * per, most = q8_smem_most<T>();
    if constexpr (NT == 1) q8_launch<T, 1, true>(m, xq, xd, xf, n_tok, sm1, sm1, s);
    else if (smn <= most) q8_launch<T, NT, true>(m, xq, xd, NULL, n_tok, smn, sm1, s);
    else q8_launch<T, NT, false>(m, xq, xd, NULL, n_tok, sm0, sm1, s);
}

void hc_mv_q8(int type, const hc_mv *m, const int8_t *xq, const float *xd, const float *xf, int n_tok,
              cudaStream_t s) {
    if (n_tok == 1) {
        if (type == HC_Q4_0) q8_t<HC_Q4_0, 1>(m, xq, xd, xf, n_tok, s);
        else if (type == HC_Q4_1) q8_t<HC_Q4_1, 1>(m, xq, xd, xf, n_tok, s);
        else q8_t<HC_Q8_0, 1>(m, xq, xd, xf, n_tok, s);
    } else {
        if (type == HC_Q4_0) q8_t<HC_Q4_0, HC_GEMV_MAX_TOK>(m, xq, xd, NULL, n_tok, s);
        else if (type == HC_Q4_1) q8_t<HC_Q4_1, HC_GEMV_MAX_TOK>(m, xq, xd, NULL, n_tok, s);
        else q8_t<HC_Q8_0, HC_GEMV_MAX_TOK>(m, xq, xd, NULL, n_tok, s);
    }
}
