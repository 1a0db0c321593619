/* glu.cu - the gated activations (twins of hearth_swiglu_ref, hearth_geglu_ref and
 * hearth_geglu_f16_ref): g = act(g) * u elementwise. The f16 variant evaluates the tanh GELU
 * at g rounded to f16 and rounds the result to f16, which is what the reference's table holds. */
#include "backend/cuda/common.cuh"

static __global__ void glu_k(float *g, const float *u, int64_t n, int kind) {
    hc_pdl_begin();
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    g[i] = hc_glu1(g[i], u[i], kind);
}

void hc_glu(float *g, const float *u, int64_t n, int kind, void *stream) {
    if (n <= 0) return;
    hc_launch(glu_k, hc_blocks(n, 256), 256, 0, stream, g, u, n, kind);
}
