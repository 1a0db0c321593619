/* get_rows.cu - embedding lookup: dequantize the rows named by ids (twin of the CPU backend's
 * get_rows over kernels/ref/quant_ref.c). One thread per 32-element chunk, or per element for
 * the plain types. */
#include "backend/cuda/common.cuh"

bool hc_type_supported(int type) {
    return type == HC_F32 || type == HC_F16 || type == HC_BF16 || hc_chunk_of(type).per_block != 0;
}

template <int T>
static __global__ void get_rows_plain(const uint8_t *w, size_t row_bytes, int64_t ne0, const int32_t *ids, int64_t n,
                                      float scale, float *out) {
    hc_pdl_begin();
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n * ne0) return;
    int64_t t = i / ne0, e = i % ne0;
    const uint8_t *row = w + (size_t)ids[t] * row_bytes;
    float v = T == HC_F32 ? ((const float *)row)[e]
            : T == HC_F16 ? hc_h2f(((const uint16_t *)row)[e]) : hc_bf2f(((const uint16_t *)row)[e]);
    out[i] = v * scale;
}

template <int T>
static __global__ void get_rows_quant(const uint8_t *w, size_t row_bytes, int64_t ne0, const int32_t *ids, int64_t n,
                                      float scale, float *out) {
    hc_pdl_begin();
    int64_t nc = ne0 / 32, i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n * nc) return;
    int64_t t = i / nc, c = i % nc;
    float y[32];
    hc_dequant32<T>(w + (size_t)ids[t] * row_bytes, c, y);
    float *o = out + t * ne0 + c * 32;
#pragma unroll
    for (int j = 0; j < 32; j++) o[j] = y[j] * scale;
}

void hc_get_rows(int type, const void *w, size_t row_bytes, int64_t ne0, const int32_t *ids, int64_t n,
                 float scale, float *out, void *stream) {
    cudaStream_t s = (cudaStream_t)stream;
    const uint8_t *wb = (const uint8_t *)w;
    if (n <= 0) return;
    if (type == HC_F32 || type == HC_F16 || type == HC_BF16) {
        unsigned g = hc_blocks(n * ne0, 256);
        if (type == HC_F32) hc_launch(get_rows_plain<HC_F32>, g, 256, 0, s, wb, row_bytes, ne0, ids, n, scale, out);
        else if (type == HC_F16) hc_launch(get_rows_plain<HC_F16>, g, 256, 0, s, wb, row_bytes, ne0, ids, n, scale, out);
        else hc_launch(get_rows_plain<HC_BF16>, g, 256, 0, s, wb, row_bytes, ne0, ids, n, scale, out);
        return;
    }
    unsigned g = hc_blocks(n * (ne0 / 32), 128);
    HC_QUANT_SWITCH(type, (hc_launch(get_rows_quant<QT>, g, 128, 0, s, wb, row_bytes, ne0, ids, n, scale, out)));
}
