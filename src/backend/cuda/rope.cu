/* rope.cu - rotary embedding in place (twin of hearth_rope_ref): one thread per rotated pair.
 * The llama.cpp recipe's angle is freq_scale * pos * theta_scale^i, computed with powf rather
 * than the reference's running product (they differ in the last bits). */
#include "backend/cuda/common.cuh"

static __global__ void rope_k(float *x, int64_t n_tok, int32_t n_head, int32_t head_dim, int32_t n_rot,
                              const int32_t *pos, const float *inv_freq, float theta_scale, float freq_scale,
                              float mscale, bool neox) {
    hc_pdl_begin();
    int32_t half = n_rot / 2;
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_tok * n_head * half) return;
    int32_t k = (int32_t)(i % half);
    int64_t th = i / half, t = th / n_head;
    float p = (float)pos[t];
    float theta = inv_freq ? p * inv_freq[k] : freq_scale * p * powf(theta_scale, (float)k);
    float s, c;
    sincosf(theta, &s, &c);
    s *= mscale;
    c *= mscale;
    float *v = x + th * head_dim;
    int32_t a = neox ? k : 2 * k, b = neox ? k + half : 2 * k + 1;
    float x0 = v[a], x1 = v[b];
    v[a] = x0 * c - x1 * s;
    v[b] = x0 * s + x1 * c;
}

void hc_rope(float *x, int64_t n_tok, int32_t n_head, int32_t head_dim, int32_t n_rot, const int32_t *pos,
             const float *inv_freq, float theta_scale, float freq_scale, float mscale, bool neox, void *stream) {
    int64_t n = n_tok * n_head * (n_rot / 2);
    if (n <= 0) return;
    hc_launch(rope_k, hc_blocks(n, 256), 256, 0, stream, x, n_tok, n_head, head_dim, n_rot, pos, inv_freq,
                                                                 theta_scale, freq_scale, mscale, neox);
}
