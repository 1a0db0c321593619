/* glu.cu - the gated activations (twins of hearth_swiglu_ref, hearth_geglu_ref and
 * hearth_geglu_f16_ref): g = act(g) * u elementwise. The f16 variant evaluates the tanh GELU
 * at g rounded to f16 and rounds the result to f16, which is what the reference's table holds.
 * hc_glu_q8 also rounds the result to the 8-bit blocks the next quantized matrix-vector product
 * reads (as rmsnorm.cu's hc_rmsnorm_q8 does), saving that product its quantization launch. */
#include "backend/cuda/common.cuh"

static __global__ void glu_k(float *g, const float *u, int64_t n, int kind) {
    hc_pdl_begin();
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    g[i] = hc_glu1(g[i], u[i], kind);
}

/* n % 32 == 0: a warp is one 32-value block of the result, rounded to 8 bits as hc_mv_quantize
 * rounds it (xq [n], xd [n / 32][2]) */
static __global__ void glu_q8_k(float *g, const float *u, int64_t n, int kind, int8_t *xq, float *xd) {
    hc_pdl_begin();
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i - threadIdx.x % 32 >= n) return; /* whole warps leave */
    const float v = hc_glu1(g[i], u[i], kind);
    g[i] = v;
    const float amax = hc_warp_max(fabsf(v));
    const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    const int q = (int)roundf(v * id);
    xq[i] = (int8_t)q;
    const float sum = hc_warp_sum((float)q);
    if (threadIdx.x % 32 == 0) {
        xd[i / 16] = hc_round_h(d);
        xd[i / 16 + 1] = hc_round_h(d * sum);
    }
}

void hc_glu(float *g, const float *u, int64_t n, int kind, void *stream) {
    if (n <= 0) return;
    hc_launch(glu_k, hc_blocks(n, 256), 256, 0, stream, g, u, n, kind);
}

void hc_glu_q8(float *g, const float *u, int64_t n, int kind, int8_t *xq, float *xd, void *stream) {
    if (n <= 0) return;
    hc_launch(glu_q8_k, hc_blocks(n, 256), 256, 0, stream, g, u, n, kind, xq, xd);
}
