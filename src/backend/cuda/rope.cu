/* rope.cu - rotary embedding in place (twin of hearth_rope_ref): one thread per rotated pair.
 * The llama.cpp recipe's angle is freq_scale * pos * theta_scale^i, computed with powf rather
 * than the reference's running product (they differ in the last bits).
 *
 * hc_rope_store does a layer's whole RoPE and cache store in one launch (q and k rotated, k
 * and v written to the paged cache as kv_store.cu does): at decode those are four launches of
 * a few microseconds each that would otherwise run one after another. With a quantized cache
 * (q8_0 / q4_0 keys and values) it goes by warps instead: a key head is rotated whole before
 * its blocks are quantized. */
#include "backend/cuda/common.cuh"

/* rotate pair k of head vector v (the same arithmetic for both launchers) */
static __device__ __forceinline__ void rope_pair(float *v, int32_t k, int32_t half, float p, const float *inv_freq,
                                                 float theta_scale, float freq_scale, float mscale, bool neox,
                                                 int32_t *ia, int32_t *ib) {
    float theta = inv_freq ? p * inv_freq[k] : freq_scale * p * powf(theta_scale, (float)k);
    float s, c;
    sincosf(theta, &s, &c);
    s *= mscale;
    c *= mscale;
    int32_t a = neox ? k : 2 * k, b = neox ? k + half : 2 * k + 1;
    float x0 = v[a], x1 = v[b];
    v[a] = x0 * c - x1 * s;
    v[b] = x0 * s + x1 * c;
    *ia = a;
    *ib = b;
}

static __global__ void rope_k(float *x, int64_t n_tok, int32_t n_head, int32_t head_dim, int32_t n_rot,
                              const int32_t *pos, const float *inv_freq, float theta_scale, float freq_scale,
                              float mscale, bool neox) {
    hc_pdl_begin();
    int32_t half = n_rot / 2;
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_tok * n_head * half) return;
    int32_t k = (int32_t)(i % half), a, b;
    int64_t th = i / half, t = th / n_head;
    rope_pair(x + th * head_dim, k, half, (float)pos[t], inv_freq, theta_scale, freq_scale, mscale, neox, &a, &b);
}

void hc_rope(float *x, int64_t n_tok, int32_t n_head, int32_t head_dim, int32_t n_rot, const int32_t *pos,
             const float *inv_freq, float theta_scale, float freq_scale, float mscale, bool neox, void *stream) {
    int64_t n = n_tok * n_head * (n_rot / 2);
    if (n <= 0) return;
    hc_launch(rope_k, hc_blocks(n, 256), 256, 0, stream, x, n_tok, n_head, head_dim, n_rot, pos, inv_freq,
              theta_scale, freq_scale, mscale, neox);
}

/* element e of a cache row of width w for token t */
static __device__ __forceinline__ void store(void *cache, int type, const hc_rope_store_args &a, int64_t t,
                                             int64_t w, int64_t e, float v) {
    int32_t p = a.pos[t];
    int32_t blk = a.table[(int64_t)a.seq[t] * a.max_blocks + p / a.block_size];
    int64_t dst = ((int64_t)blk * a.block_size + p % a.block_size) * w + e;
    if (type == HC_F16) ((uint16_t *)cache)[dst] = hc_f2h(v);
    else ((float *)cache)[dst] = v;
}

/* one thread each: a pair of q, a pair of k (rotated, then stored), an unrotated element of k,
 * an element of v */
static __global__ void rope_store_k(hc_rope_store_args a) {
    hc_pdl_begin();
    const int32_t half = a.n_rot / 2, D = a.head_dim;
    const int64_t kw = (int64_t)a.n_head_kv * D;
    const int64_t nq = a.n_tok * a.n_head * half, nk = a.n_tok * a.n_head_kv * half,
                  nr = a.n_tok * a.n_head_kv * (D - a.n_rot), nv = a.n_tok * a.v_width;
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int32_t ia, ib;
    if (i < nq) {
        int64_t th = i / half, t = th / a.n_head;
        rope_pair(a.q + th * D, (int32_t)(i % half), half, (float)a.pos[t], a.inv_freq, a.theta_scale, a.freq_scale,
                  a.mscale, a.neox, &ia, &ib);
        return;
    }
    i -= nq;
    if (i < nk) {
        int64_t th = i / half, t = th / a.n_head_kv;
        float *v = a.k + th * D;
        rope_pair(v, (int32_t)(i % half), half, (float)a.pos[t], a.inv_freq, a.theta_scale, a.freq_scale, a.mscale,
                  a.neox, &ia, &ib);
        int64_t e0 = (th % a.n_head_kv) * D;
        store(a.k_cache, a.k_type, a, t, kw, e0 + ia, v[ia]);
        store(a.k_cache, a.k_type, a, t, kw, e0 + ib, v[ib]);
        return;
    }
    i -= nk;
    if (i < nr) {
        int64_t rest = D - a.n_rot, th = i / rest, t = th / a.n_head_kv;
        int64_t d = a.n_rot + i % rest, e = (th % a.n_head_kv) * D + d;
        store(a.k_cache, a.k_type, a, t, kw, e, a.k[t * kw + e]);
        return;
    }
    i -= nr;
    if (i < nv) store(a.v_cache, a.v_type, a, i / a.v_width, a.v_width, i % a.v_width, a.v[i]);
}

/* Both caches quantized: one warp per item, a head of q rotated; a head of k rotated, then its
 * blocks quantized into the cache (the rotated values read back after __syncwarp, which orders
 * the warp's memory); a block of v quantized. The rotation is rope_pair's, so the stored bytes
 * are those of hc_rope then hc_kv_store. */
static __global__ void rope_store_quant_k(hc_rope_store_args a) {
    hc_pdl_begin();
    const int lane = threadIdx.x % HC_WARP;
    const int32_t half = a.n_rot / 2, D = a.head_dim;
    const int64_t nq = a.n_tok * a.n_head, nk = a.n_tok * a.n_head_kv, nvb = a.v_width / 32;
    int64_t w = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / HC_WARP;
    int32_t ia, ib;
    if (w < nq) {
        const int64_t t = w / a.n_head;
        for (int32_t k = lane; k < half; k += HC_WARP)
            rope_pair(a.q + w * D, k, half, (float)a.pos[t], a.inv_freq, a.theta_scale, a.freq_scale, a.mscale,
                      a.neox, &ia, &ib);
        return;
    }
    w -= nq;
    if (w < nk) {
        const int64_t t = w / a.n_head_kv, hkv = w % a.n_head_kv, nb = (int64_t)a.n_head_kv * D / 32;
        const int32_t p = a.pos[t];
        float *v = a.k + w * D;
        for (int32_t k = lane; k < half; k += HC_WARP)
            rope_pair(v, k, half, (float)p, a.inv_freq, a.theta_scale, a.freq_scale, a.mscale, a.neox, &ia, &ib);
        __syncwarp();
        const int32_t blk = a.table[(int64_t)a.seq[t] * a.max_blocks + p / a.block_size];
        const int bb = hc_kv_block_bytes(a.k_type);
        uint8_t *row = (uint8_t *)a.k_cache + ((int64_t)blk * a.block_size + p % a.block_size) * nb * bb;
        for (int32_t b = 0; b < D / 32; b++)
            hc_kv_quant_block(v[b * 32 + lane], row + (hkv * (D / 32) + b) * bb, a.k_type, lane);
        return;
    }
    w -= nk;
    if (w >= a.n_tok * nvb) return;
    const int64_t t = w / nvb, b = w % nvb;
    const int32_t pv = a.pos[t], blk = a.table[(int64_t)a.seq[t] * a.max_blocks + pv / a.block_size];
    const int bb = hc_kv_block_bytes(a.v_type);
    uint8_t *dst = (uint8_t *)a.v_cache + (((int64_t)blk * a.block_size + pv % a.block_size) * nvb + b) * bb;
    hc_kv_quant_block(a.v[t * a.v_width + b * 32 + lane], dst, a.v_type, lane);
}

void hc_rope_store(const hc_rope_store_args *a, void *stream) {
    if (hc_kv_quantized(a->k_type) || hc_kv_quantized(a->v_type) || hc_kv_turbo(a->k_type) ||
        hc_kv_turbo(a->v_type)) {
        /* one of each, or a turbo cache (stored by turbo.cu): the ops one by one */
        if (!hc_kv_quantized(a->k_type) || !hc_kv_quantized(a->v_type)) {
            hc_rope(a->q, a->n_tok, a->n_head, a->head_dim, a->n_rot, a->pos, a->inv_freq, a->theta_scale,
                    a->freq_scale, a->mscale, a->neox, stream);
            hc_rope(a->k, a->n_tok, a->n_head_kv, a->head_dim, a->n_rot, a->pos, a->inv_freq, a->theta_scale,
                    a->freq_scale, a->mscale, a->neox, stream);
            hc_kv_store(a->k, a->n_tok, (int64_t)a->n_head_kv * a->head_dim, a->seq, a->pos, a->k_cache, a->table,
                        a->max_blocks, a->block_size, a->k_type, stream);
            hc_kv_store(a->v, a->n_tok, a->v_width, a->seq, a->pos, a->v_cache, a->table, a->max_blocks,
                        a->block_size, a->v_type, stream);
            return;
        }
        const int64_t warps = a->n_tok * ((int64_t)a->n_head + a->n_head_kv + a->v_width / 32);
        if (warps <= 0) return;
        hc_launch(rope_store_quant_k, hc_blocks(warps * HC_WARP, 256), 256, 0, stream, *a);
        return;
    }
    int64_t n = a->n_tok * ((int64_t)(a->n_head + a->n_head_kv) * (a->n_rot / 2) +
                            (int64_t)a->n_head_kv * (a->head_dim - a->n_rot) + a->v_width);
    if (n <= 0) return;
    hc_launch(rope_store_k, hc_blocks(n, 256), 256, 0, stream, *a);
}
