/* glu.cu - the gated activations (twins of hearth_swiglu_ref, hearth_geglu_ref and
 * hearth_geglu_f16_ref): g = act(g) * u elementwise. The f16 variant evaluates the tanh GELU
 * at g rounded to f16 and rounds the result to f16, which is what the reference's table holds. */
#include "backend/cuda/common.cuh"

static __device__ __forceinline__ float gelu_tanh(float x) {
    const float c = 0.7978845608028654f;
    return 0.5f * x * (1.0f + tanhf(c * x * (1.0f + 0.044715f * x * x)));
}

static __global__ void glu_k(float *g, const float *u, int64_t n, int kind) {
    hc_pdl_begin();
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = g[i], r;
    if (kind == 0) r = x / (1.0f + expf(-x));
    else if (kind == 1) r = gelu_tanh(x);
    else r = x <= -10.0f ? 0.0f : x >= 10.0f ? x : hc_round_h(gelu_tanh(hc_round_h(x)));
    g[i] = r * u[i];
}

void hc_glu(float *g, const float *u, int64_t n, int kind, void *stream) {
    if (n <= 0) return;
    hc_launch(glu_k, hc_blocks(n, 256), 256, 0, stream, g, u, n, kind);
}
