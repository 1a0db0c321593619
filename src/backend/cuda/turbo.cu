/* turbo.cu - the turbo KV cache's store and inverse rotation (backend/kv_type.h; the codec's
 * specification is kernels/ref/turbo_ref.{h,c}, the CPU backend runs it as written).
 *
 * Store: one block of 64 threads per (token, 64-element piece of the row). The piece goes
 * into shared memory times its signs (exact), through the six rounds of Walsh-Hadamard
 * butterflies (a + b, a - b: each output is one rounding of the same two inputs as in the C
 * loop, whatever the thread order, so the rotated values are the reference's bits), and times
 * 1/8 (exact). Then threads 0 and 1 each quantize one 32-element block as turbo_ref.c's
 * quantize_block does, serially and with every product, quotient and sum spelled as one
 * rounding (no fused multiply-add), so the scale chosen, the codes and the packed bytes are the
 * CPU's. The serial search (11 scales x 32 elements) is small next to the step: a store writes
 * one row per token and layer.
 *
 * Inverse rotation: one block of 64 threads per piece: the butterflies, then times 1/8 and the
 * sign (hearth_turbo_unrotate's order: (y * 0.125) * s, both exact).
 */
#include "backend/cuda/common.cuh"

#include <math.h>

/* the code of x under scale s (turbo_ref.c code_of): the nearest level, the lower on a tie */
static __device__ int turbo_code(float x, float s, int bits) {
    const int levels = 1 << bits;
    if (bits == 5 || bits == 8) { /* uniform: cells of width 2s */
        float t = __fadd_rn(floorf(__fdiv_rn(x, __fmul_rn(2.0f, s))), (float)(levels / 2));
        if (!(t >= 0.0f)) t = 0.0f;
        if (t > (float)(levels - 1)) t = (float)(levels - 1);
        return (int)t;
    }
    int best = 0;
    float bd = INFINITY;
    for (int q = 0; q < levels; q++) {
        const float d = fabsf(__fsub_rn(x, __fmul_rn(hc_turbo_level(bits, q), s)));
        if (d < bd) bd = d, best = q;
    }
    return best;
}

/* turbo_ref.c quantize_block: 32 rotated values x into the block at y */
static __device__ void turbo_quantize_block(const float *x, uint8_t *y, int bits) {
    const int levels = 1 << bits;
    const float top = hc_turbo_level(bits, levels - 1);
    float amax = 0.0f;
    for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[i]));
    uint16_t best = 0;
    float best_err = INFINITY;
    for (int k = 0; k <= 10 && amax > 0.0f; k++) {
        const uint16_t hs = hc_f2h(__fmul_rn(__fdiv_rn(amax, top), __fsub_rn(1.0f, __fmul_rn(0.05f, (float)k))));
        const float s = hc_h2f(hs);
        if (!(s > 0.0f) || isinf(s)) continue;
        float err = 0.0f;
        for (int i = 0; i < 32; i++) {
            const float d = __fsub_rn(x[i], __fmul_rn(hc_turbo_level(bits, turbo_code(x[i], s, bits)), s));
            err = __fadd_rn(err, __fmul_rn(d, d));
        }
        if (err < best_err) {
            best_err = err;
            best = hs;
        }
    }
    const float s = hc_h2f(best);
    y[0] = (uint8_t)(best & 0xff);
    y[1] = (uint8_t)(best >> 8);
    for (int g = 0; g < 4; g++) {
        unsigned long long w = 0;
        for (int k = 0; k < 8; k++) {
            const int c = s > 0.0f ? turbo_code(x[g * 8 + k], s, bits) : levels / 2;
            w |= (unsigned long long)c << (k * bits);
        }
        for (int b = 0; b < bits; b++) y[2 + g * bits + b] = (uint8_t)(w >> (8 * b));
    }
}

/* the six rounds of butterflies over r[0..64), thread i < 32 doing one per round */
static __device__ __forceinline__ void fwht64_shared(float *r, int i) {
    for (int len = 1; len < 64; len <<= 1) {
        float u = 0.0f, v = 0.0f;
        const int a = (i / len) * 2 * len + i % len;
        if (i < 32) {
            u = r[a];
            v = r[a + len];
        }
        __syncthreads();
        if (i < 32) {
            r[a] = __fadd_rn(u, v);
            r[a + len] = __fsub_rn(u, v);
        }
        __syncthreads();
    }
}

static __global__ void __launch_bounds__(64) kv_store_turbo_k(const float *x, int64_t width, const int32_t *seq,
                                                              const int32_t *pos, uint8_t *cache, const int32_t *table,
                                                              int32_t max_blocks, int32_t bs, int bits) {
    hc_pdl_begin();
    __shared__ float r[64];
    const int i = threadIdx.x;
    const int64_t np = width / 64, t = blockIdx.x / np, piece = blockIdx.x % np;
    r[i] = __fmul_rn(x[t * width + piece * 64 + i], hc_turbo_sign(i));
    __syncthreads();
    fwht64_shared(r, i);
    r[i] = __fmul_rn(r[i], 0.125f);
    __syncthreads();
    if (i < 2) {
        const int32_t blk = table[(int64_t)seq[t] * max_blocks + pos[t] / bs];
        const int64_t bb = 2 + 4 * bits, nb = width / 32;
        uint8_t *dst = cache + (((int64_t)blk * bs + pos[t] % bs) * nb + piece * 2 + i) * bb;
        turbo_quantize_block(r + 32 * i, dst, bits);
    }
}

static __global__ void __launch_bounds__(64) turbo_unrotate_k(float *x) {
    hc_pdl_begin();
    __shared__ float r[64];
    const int i = threadIdx.x;
    float *p = x + (int64_t)blockIdx.x * 64;
    r[i] = p[i];
    __syncthreads();
    fwht64_shared(r, i);
    p[i] = __fmul_rn(__fmul_rn(r[i], 0.125f), hc_turbo_sign(i));
}

void hc_kv_store_turbo(const float *x, int64_t n_tok, int64_t width, const int32_t *seq, const int32_t *pos,
                       void *cache, const int32_t *table, int32_t max_blocks, int32_t block_size, int bits,
                       void *stream) {
    if (n_tok <= 0 || width < 64) return;
    hc_launch(kv_store_turbo_k, (unsigned)(n_tok * (width / 64)), 64, 0, stream, x, width, seq, pos,
              (uint8_t *)cache, table, max_blocks, block_size, bits);
}

void hc_turbo_unrotate(float *x, int64_t n_pieces, void *stream) {
    if (n_pieces <= 0) return;
    hc_launch(turbo_unrotate_k, (unsigned)n_pieces, 64, 0, stream, x);
}
