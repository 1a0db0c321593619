/*
 * skinny.cu - y = x W^T on tensor cores for 16-bit weights when a step holds a few dozen tokens
 * (a batch of decodes: 9 to HC_SKINNY_MAX_TOK tokens), the case a general GEMM serves badly:
 * the weights are read once per step, so the product is bound by the weight read, and cuBLAS
 * picks tiles sized for large problems, a split-K reduce of its own and a tail of idle SMs.
 *
 * Shape of the kernel. A block of 8 warps takes 128 weight rows (16 per warp) over one slice of
 * the width; the grid's second dimension splits the width so that every SM holds a few blocks
 * (the slices' partial sums go to a scratch buffer, then one reduce kernel adds them in slice
 * order: the result does not depend on timing). Each warp streams its rows straight from global
 * memory into registers (16 bytes a lane, the next 64-element chunk loaded while this one is
 * multiplied), and the activations of all tokens for the chunk are staged once per block in
 * shared memory, rows padded to 96 elements so that the lanes' 16-byte reads hit distinct banks.
 * The product is mma.sync m16n8k16 (16 rows x 8 tokens x 16 of the width, f32 accumulators).
 *
 * The width order. An MMA's 16 width positions may be any 16 of the chunk as long as the weight
 * and activation fragments agree. Lane (g, t) of a warp loads 8 consecutive weights, positions
 * 8t..8t+7 of a 32-wide piece, for rows g and g+8; its first MMA over the piece takes positions
 * 8t+0..3, the second 8t+4..7, and it reads the activations at the same 8 positions with one
 * 16-byte load. Every position of the piece is used once, so the sums are the full dot products,
 * accumulated in an order of their own (the reference is the dequantized dot in double: the
 * tests' tolerance, as for cuBLAS).
 *
 * Weights: BF16 meets bf16 activations, F16 meets f16 ones (matmul.cu rounds them once per step,
 * shared by every weight that reads them). Rows must be 16-byte aligned and the width a multiple
 * of 64; other shapes stay on cuBLAS.
 */
#include "backend/cuda/common.cuh"
#include "backend/cuda/skinny.cuh"

#define SK_WARPS 8
#define SK_ROWS (16 * SK_WARPS) /* weight rows per block */
#define SK_CH 64                /* width per chunk */
#define SK_LD 96                /* staged activation row stride, elements (48 words: conflict-free) */

template <bool BF>
static __device__ __forceinline__ void mma16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                                uint32_t b0, uint32_t b1) {
    if (BF)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* Eight weights of a row as one MMA operand: positions 8t..8t+7 of the 32-wide piece p of the
 * row (p counts from the row's start), four 16-bit pairs. Raw<QT> is what is loaded ahead (the
 * bytes), frag<QT> turns it into the operand once the bytes are in. 16-bit rows: the values
 * themselves. The quantized rows: the piece's codes and scales, then each value computed as
 * hc_dequant32 computes it and rounded to f16: the values the dequantized copy of the cuBLAS path
 * holds. Q8_0, Q4_0: a piece is a block (q * d, (q - 8) * d in f16 arithmetic: d an f16 and the
 * code an integer of at most 8 bits, so the one rounding is the same). Q4_K, Q6_K: a piece is a
 * sub-block of a 256-element super-block (its 6-bit scale and minimum; its 8-bit scale). */
struct raw16 { uint4 v; };
struct rawq { uint32_t lo, hi; uint16_t d; };
struct raw4k { uint32_t dd, s0, s1, s2; uint2 q; };
struct raw6k { uint32_t l0, l1, h0, h1; uint16_t d; int16_t sc; };

template <int QT> struct raw_of { typedef rawq type; };
template <> struct raw_of<HC_BF16> { typedef raw16 type; };
template <> struct raw_of<HC_F16> { typedef raw16 type; };
template <> struct raw_of<HC_Q4_K> { typedef raw4k type; };
template <> struct raw_of<HC_Q6_K> { typedef raw6k type; };

/* 8 bytes at a 2-byte aligned address */
static __device__ __forceinline__ void ld8_2(const uint8_t *a, uint32_t *lo, uint32_t *hi) {
    const uint16_t *q = (const uint16_t *)a;
    *lo = (uint32_t)__ldg(q) | (uint32_t)__ldg(q + 1) << 16;
    *hi = (uint32_t)__ldg(q + 2) | (uint32_t)__ldg(q + 3) << 16;
}

template <int QT>
static __device__ __forceinline__ typename raw_of<QT>::type load_raw(const uint8_t *row, int64_t p, int t) {
    typename raw_of<QT>::type r;
    if constexpr (QT == HC_BF16 || QT == HC_F16) {
        r.v = __ldg((const uint4 *)(row + p * 64) + t);
    } else if constexpr (QT == HC_Q4_K) { /* 144-byte blocks: 16-byte aligned */
        const uint8_t  *b = row + (p >> 3) * 144;
        const uint32_t *u = (const uint32_t *)b;
        r.dd = __ldg(u);
        r.s0 = __ldg(u + 1);
        r.s1 = __ldg(u + 2);
        r.s2 = __ldg(u + 3);
        r.q = __ldg((const uint2 *)(b + 16 + 32 * ((p & 7) >> 1) + 8 * t));
    } else if constexpr (QT == HC_Q6_K) { /* 210-byte blocks: 2-byte aligned */
        const uint8_t *b = row + (p >> 3) * 210;
        const int      j = (int)(p & 7), half = j >> 2, k = j & 3;
        ld8_2(b + 64 * half + 32 * (k & 1) + 8 * t, &r.l0, &r.l1);
        ld8_2(b + 128 + 32 * half + 8 * t, &r.h0, &r.h1);
        r.d = __ldg((const uint16_t *)(b + 208));
        r.sc = (int8_t)__ldg(b + 192 + 8 * half + 2 * k + (t >> 1));
    } else {
        constexpr int bb = QT == HC_Q8_0 ? 34 : 18;
        const uint8_t *b = row + p * bb;
        r.d = __ldg((const uint16_t *)b);
        ld8_2(b + 2 + (QT == HC_Q8_0 ? 8 * t : 8 * (t & 1)), &r.lo, &r.hi);
    }
    return r;
}

static __device__ __forceinline__ uint32_t h2_bits(__half2 h) { return *(uint32_t *)&h; }
static __device__ __forceinline__ uint32_t f2_h2(float a, float b) { return h2_bits(__floats2half2_rn(a, b)); }

template <int QT>
static __device__ __forceinline__ uint4 frag(const typename raw_of<QT>::type &r, int t, int64_t p) {
    if constexpr (QT == HC_BF16 || QT == HC_F16) {
        return r.v;
    } else if constexpr (QT == HC_Q4_K) {
        const uint8_t s[12] = {(uint8_t)r.s0,         (uint8_t)(r.s0 >> 8), (uint8_t)(r.s0 >> 16), (uint8_t)(r.s0 >> 24),
                               (uint8_t)r.s1,         (uint8_t)(r.s1 >> 8), (uint8_t)(r.s1 >> 16), (uint8_t)(r.s1 >> 24),
                               (uint8_t)r.s2,         (uint8_t)(r.s2 >> 8), (uint8_t)(r.s2 >> 16), (uint8_t)(r.s2 >> 24)};
        const int j = (int)(p & 7), sh = 4 * (j & 1);
        float     sc, mn;
        hc_k_scale_min(s, j, &sc, &mn);
        const float dl = hc_h2f((uint16_t)r.dd) * sc, ml = hc_h2f((uint16_t)(r.dd >> 16)) * mn;
        uint32_t    o[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t w = i < 2 ? r.q.x : r.q.y;
            const int      b = 16 * (i & 1);
            o[i] = f2_h2(dl * (float)(w >> (b + sh) & 15) - ml, dl * (float)(w >> (b + 8 + sh) & 15) - ml);
        }
        return make_uint4(o[0], o[1], o[2], o[3]);
    } else if constexpr (QT == HC_Q6_K) {
        const int   k = (int)(p & 3), sl = 4 * (k >> 1), shh = 2 * k;
        const float s = hc_h2f(r.d) * (float)r.sc;
        uint32_t    o[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t l = i < 2 ? r.l0 : r.l1, h = i < 2 ? r.h0 : r.h1;
            const int      b = 16 * (i & 1);
            const int q0 = (int)((l >> (b + sl)) & 15) | (int)((h >> (b + shh)) & 3) << 4;
            const int q1 = (int)((l >> (b + 8 + sl)) & 15) | (int)((h >> (b + 8 + shh)) & 3) << 4;
            o[i] = f2_h2(s * (float)(q0 - 32), s * (float)(q1 - 32));
        }
        return make_uint4(o[0], o[1], o[2], o[3]);
    } else {
        const __half2 d = __half2half2(__ushort_as_half(r.d));
        uint32_t      o[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t w = i < 2 ? r.lo : r.hi;
            const int      s = 16 * (i & 1);
            int a, b;
            if (QT == HC_Q8_0) {
                a = (int8_t)(w >> s & 0xff);
                b = (int8_t)(w >> (s + 8) & 0xff);
            } else {
                const int sh = 4 * (t >> 1); /* pieces 16..31 are the high nibbles */
                a = (int)(w >> (s + sh) & 15) - 8;
                b = (int)(w >> (s + 8 + sh) & 15) - 8;
            }
            o[i] = h2_bits(__hmul2(__halves2half2(__int2half_rn(a), __int2half_rn(b)), d));
        }
        return make_uint4(o[0], o[1], o[2], o[3]);
    }
}

/* The weights of one launch: up to HC_SKINNY_MAX_W of one type and width, each starting on a
 * block of its own (blocks [end[i-1], end[i]) are weight i's). Weight i's width is cut in S[i]
 * slices of kslice[i] (chosen from its own shape, so that a weight gives the same bits alone or
 * beside others). One slice: its blocks write y[i][n * ldy[i] + o]; more: part[s][n][off[i] + o]
 * (the rows of all weights back to back), which skinny_reduce_k adds into y in slice order. */
struct sk_args {
    const uint8_t *w[HC_SKINNY_MAX_W];
    float         *y[HC_SKINNY_MAX_W];
    int64_t        ldy[HC_SKINNY_MAX_W], rows[HC_SKINNY_MAX_W], end[HC_SKINNY_MAX_W], off[HC_SKINNY_MAX_W + 1];
    int64_t        kslice[HC_SKINNY_MAX_W];
    int            S[HC_SKINNY_MAX_W];
    int            n;
    size_t         row_bytes;
    int64_t        K;
    int            N;
    float         *part; /* [max S][N][off[n]] */
};

/* the dot of weight row o and activation row n over slice blockIdx.y of the width, for the block's
 * 128 rows of its weight. NT: tiles of 8 tokens. */
template <int QT, int NT>
static __global__ void __launch_bounds__(32 * SK_WARPS) skinny_k(const __grid_constant__ sk_args a,
                                                                 const uint16_t *__restrict__ x) {
    constexpr bool BF = QT == HC_BF16;
    constexpr int  XV = NT * 8 * SK_CH / 8;                             /* 16-byte pieces of a staged chunk */
    constexpr int  XPT = (XV + 32 * SK_WARPS - 1) / (32 * SK_WARPS);   /* per thread */
    typedef typename raw_of<QT>::type raw;
    __shared__ __align__(16) uint16_t xs[NT * 8 * SK_LD];

    int wi = 0;
    while (wi + 1 < a.n && blockIdx.x >= a.end[wi]) wi++;
    if ((int)blockIdx.y >= a.S[wi]) return; /* the grid has the most slices of any weight */
    const int64_t b0 = wi ? a.end[wi - 1] : 0, M = a.rows[wi], K = a.K, N = a.N;
    const int     warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int64_t r0 = ((int64_t)blockIdx.x - b0) * SK_ROWS + 16 * warp;
    const int64_t kb = (int64_t)blockIdx.y * a.kslice[wi], ke = min(K, kb + a.kslice[wi]);
    /* rows past the end read the last row and are not stored */
    const uint8_t *wa = a.w[wi] + min(r0 + g, M - 1) * a.row_bytes, *wb = a.w[wi] + min(r0 + g + 8, M - 1) * a.row_bytes;
    const bool    split = a.S[wi] > 1;
    float        *out = split ? a.part + ((int64_t)blockIdx.y * N * a.off[a.n] + a.off[wi]) : a.y[wi];
    const int64_t ldo = split ? a.off[a.n] : a.ldy[wi];

    float acc[NT][4];
#pragma unroll
    for (int j = 0; j < NT; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;

    raw  wc[4], wn[4];
    uint4 xr[XPT];
    auto load_w = [&](int64_t k0, raw(&r)[4]) { /* rows g, g+8 of pieces k0/32 and k0/32 + 1 */
        const int64_t p = k0 >> 5;
        r[0] = load_raw<QT>(wa, p, t);
        r[1] = load_raw<QT>(wb, p, t);
        r[2] = load_raw<QT>(wa, p + 1, t);
        r[3] = load_raw<QT>(wb, p + 1, t);
    };
    auto load_x = [&](int64_t k0) {
#pragma unroll
        for (int j = 0; j < XPT; j++) {
            const int i = threadIdx.x + j * 32 * SK_WARPS, row = i >> 3, col = i & 7;
            xr[j] = make_uint4(0, 0, 0, 0);
            if (i < XV && row < N) xr[j] = __ldg((const uint4 *)(x + (int64_t)row * K + k0) + col);
        }
    };

    load_w(kb, wc);
    load_x(kb);
    for (int64_t k0 = kb; k0 < ke; k0 += SK_CH) {
        __syncthreads(); /* the last chunk's reads of xs are done */
#pragma unroll
        for (int j = 0; j < XPT; j++) {
            const int i = threadIdx.x + j * 32 * SK_WARPS;
            if (i < XV) *(uint4 *)(xs + (i >> 3) * SK_LD + (i & 7) * 8) = xr[j];
        }
        __syncthreads();
        const bool more = k0 + SK_CH < ke;
        if (more) {
            load_w(k0 + SK_CH, wn);
            load_x(k0 + SK_CH);
        }
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int64_t p = (k0 >> 5) + h;
            const uint4   A = frag<QT>(wc[2 * h], t, p), B = frag<QT>(wc[2 * h + 1], t, p); /* rows g, g+8 */
#pragma unroll
            for (int j = 0; j < NT; j++) {
                const uint4 v = *(const uint4 *)(xs + (j * 8 + g) * SK_LD + h * 32 + t * 8);
                mma16816<BF>(acc[j], A.x, B.x, A.y, B.y, v.x, v.y);
                mma16816<BF>(acc[j], A.z, B.z, A.w, B.w, v.z, v.w);
            }
        }
        if (more) {
#pragma unroll
            for (int i = 0; i < 4; i++) wc[i] = wn[i];
        }
    }

    const int64_t o0 = r0 + g, o1 = r0 + g + 8;
#pragma unroll
    for (int j = 0; j < NT; j++) {
        const int n0 = j * 8 + 2 * t, n1 = n0 + 1;
        if (o0 < M) {
            if (n0 < N) out[n0 * ldo + o0] = acc[j][0];
            if (n1 < N) out[n1 * ldo + o0] = acc[j][1];
        }
        if (o1 < M) {
            if (n0 < N) out[n0 * ldo + o1] = acc[j][2];
            if (n1 < N) out[n1 * ldo + o1] = acc[j][3];
        }
    }
}

/* y[i][n][o] = the sum over slices s = 0, 1, ... S[i] - 1 of part[s][n][off[i] + o], for the
 * weights of more than one slice */
static __global__ void skinny_reduce_k(const __grid_constant__ sk_args a) {
    const int64_t R = a.off[a.n], i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= R * a.N) return;
    const int64_t n = i / R, r = i % R;
    int wi = 0;
    while (wi + 1 < a.n && r >= a.off[wi + 1]) wi++;
    if (a.S[wi] < 2) return;
    float s = 0.0f;
    for (int k = 0; k < a.S[wi]; k++) s += a.part[(int64_t)k * R * a.N + i];
    a.y[wi][n * a.ldy[wi] + (r - a.off[wi])] = s;
}

static int  sk_max_tok = HC_SKINNY_MAX_TOK, sk_blocks = 264;
static long sk_16_bytes = 0;

void hc_skinny_configure(int max_tok, int blocks, long sixteen_mb) {
    sk_max_tok = max_tok < 0 ? HC_SKINNY_MAX_TOK : max_tok > HC_SKINNY_MAX_TOK ? HC_SKINNY_MAX_TOK : max_tok;
    sk_blocks = blocks > 0 ? blocks : 264;
    sk_16_bytes = sixteen_mb < 0 ? HC_SKINNY_16_MB << 20 : sixteen_mb << 20;
}

bool hc_skinny_ok(int type, const void *const *w, int n, size_t row_bytes, const int64_t *n_out, int64_t n_in,
                  int64_t n_tok) {
    if (n < 1 || n > HC_SKINNY_MAX_W || n_tok <= HC_GEMV_MAX_TOK || n_tok > sk_max_tok || n_in % SK_CH) return false;
    const bool q = type == HC_Q8_0 || type == HC_Q4_0 || type == HC_Q4_K || type == HC_Q6_K,
               sixteen = type == HC_BF16 || type == HC_F16;
    if ((type == HC_Q4_K || type == HC_Q6_K) && n_in % 256) return false;
    if (!q && !sixteen) return false;
    int64_t bytes = 0;
    for (int i = 0; i < n; i++) {
        bytes += (int64_t)row_bytes * n_out[i];
        if (((uintptr_t)w[i] & (type == HC_Q4_K ? 15 : q ? 1 : 15)) != 0) return false;
    }
    /* 16-bit weights: where cuBLAS was measured slower (small weights, bench/cuda-h200.md) */
    return q || (row_bytes % 16 == 0 && bytes <= sk_16_bytes);
}

/* Chunks per slice of a weight of n_out rows: enough blocks for sk_blocks for this weight alone,
 * each slice at least 4 chunks; *S the slices (none empty). */
static int64_t per_slice(int64_t n_out, int64_t n_in, int *S) {
    const int64_t chunks = n_in / SK_CH, rb = (n_out + SK_ROWS - 1) / SK_ROWS;
    int64_t       s = (sk_blocks + rb - 1) / rb;
    if (s > chunks / 4) s = chunks / 4;
    if (s < 1) s = 1;
    const int64_t per = (chunks + s - 1) / s;
    *S = (int)((chunks + per - 1) / per);
    return per;
}

size_t hc_skinny_scratch(const int64_t *n_out, int n, int64_t n_in, int64_t n_tok) {
    int64_t rows = 0;
    int     smax = 1;
    for (int i = 0; i < n; i++) {
        int S;
        per_slice(n_out[i], n_in, &S);
        if (S > smax) smax = S;
        rows += n_out[i];
    }
    return smax > 1 ? (size_t)(smax * rows * n_tok) * sizeof(float) : 0;
}

template <int QT>
static void launch(int nt, dim3 grid, cudaStream_t st, const sk_args &a, const uint16_t *x) {
    const unsigned th = 32 * SK_WARPS;
    switch (nt) {
    case 2: skinny_k<QT, 2><<<grid, th, 0, st>>>(a, x); break;
    case 4: skinny_k<QT, 4><<<grid, th, 0, st>>>(a, x); break;
    case 8: skinny_k<QT, 8><<<grid, th, 0, st>>>(a, x); break;
    default: skinny_k<QT, 16><<<grid, th, 0, st>>>(a, x); break;
    }
}

void hc_skinny(int type, const void *const *w, int n, size_t row_bytes, const int64_t *n_out, int64_t n_in,
               const void *x16, int64_t n_tok, float *const *y, const int64_t *ldy, float *scratch, void *stream) {
    cudaStream_t st = (cudaStream_t)stream;
    sk_args      a = {};
    a.n = n;
    a.row_bytes = row_bytes;
    a.K = n_in;
    a.N = (int)n_tok;
    a.part = scratch;
    int64_t end = 0;
    int     smax = 1;
    for (int i = 0; i < n; i++) {
        a.w[i] = (const uint8_t *)w[i];
        a.y[i] = y[i];
        a.ldy[i] = ldy[i];
        a.rows[i] = n_out[i];
        a.end[i] = end += (n_out[i] + SK_ROWS - 1) / SK_ROWS;
        a.off[i + 1] = a.off[i] + n_out[i];
        a.kslice[i] = per_slice(n_out[i], n_in, &a.S[i]) * SK_CH;
        if (a.S[i] > smax) smax = a.S[i];
    }
    const int       nt = n_tok <= 16 ? 2 : n_tok <= 32 ? 4 : n_tok <= 64 ? 8 : 16;
    const dim3      grid((unsigned)end, (unsigned)smax);
    const uint16_t *xp = (const uint16_t *)x16;
    switch (type) {
    case HC_BF16: launch<HC_BF16>(nt, grid, st, a, xp); break;
    case HC_F16: launch<HC_F16>(nt, grid, st, a, xp); break;
    case HC_Q8_0: launch<HC_Q8_0>(nt, grid, st, a, xp); break;
    case HC_Q4_K: launch<HC_Q4_K>(nt, grid, st, a, xp); break;
    case HC_Q6_K: launch<HC_Q6_K>(nt, grid, st, a, xp); break;
    default: launch<HC_Q4_0>(nt, grid, st, a, xp); break;
    }
    if (smax > 1) skinny_reduce_k<<<hc_blocks(a.off[n] * n_tok, 256), 256, 0, st>>>(a);
}
