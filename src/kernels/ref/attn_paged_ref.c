/* attn_paged_ref.c - attention of one head over a paged KV cache; see attn_paged_ref.h. */
#include "kernels/ref/attn_paged_ref.h"
#include "kernels/ref/ops_ref.h"
#include "tensor/dtype.h"

#include <math.h>

/* Element offset of row j's first element (of this head) in the pool. */
static int64_t row_of(const int32_t *table_row, int32_t bs, int64_t j, int64_t kv_stride) {
    return ((int64_t)table_row[j / bs] * bs + j % bs) * kv_stride;
}

static float dot_row(const float *qr, const void *base, int64_t off, bool f16, int64_t n) {
    float s = 0.0f;
    if (f16) {
        const uint16_t *r = (const uint16_t *)base + off;
        for (int64_t d = 0; d < n; d++) s += qr[d] * hearth_fp16_to_fp32(r[d]);
    } else {
        const float *r = (const float *)base + off;
        for (int64_t d = 0; d < n; d++) s += qr[d] * r[d];
    }
    return s;
}

static void axpy_row(float *out, float p, const void *base, int64_t off, bool f16, int64_t n) {
    if (f16) {
        const uint16_t *r = (const uint16_t *)base + off;
        for (int64_t d = 0; d < n; d++) out[d] += p * hearth_fp16_to_fp32(r[d]);
    } else {
        const float *r = (const float *)base + off;
        for (int64_t d = 0; d < n; d++) out[d] += p * r[d];
    }
}

void hearth_attn_head_paged_ref(const float *q, const void *k, const void *v, int64_t kv_stride,
                                const int32_t *table_row, int32_t block_size, bool kv_f16, int64_t head_dim,
                                int64_t j0, int64_t j1, float scale, float softcap, float *scores, float *out) {
    hearth_attn_head_paged_sink_ref(q, k, v, kv_stride, table_row, block_size, kv_f16, head_dim, j0, j1, scale,
                                    softcap, -INFINITY, scores, out);
}

void hearth_attn_head_paged_sink_ref(const float *q, const void *k, const void *v, int64_t kv_stride,
                                     const int32_t *table_row, int32_t block_size, bool kv_f16, int64_t head_dim,
                                     int64_t j0, int64_t j1, float scale, float softcap, float sink, float *scores,
                                     float *out) {
    float qr[HEARTH_ATTN_MAX_HEAD_DIM]; /* the query as the dot sees it */
    for (int64_t d = 0; d < head_dim; d++)
        qr[d] = kv_f16 ? hearth_fp16_to_fp32(hearth_fp32_to_fp16(q[d])) : q[d];
    float max = -INFINITY;
    for (int64_t j = j0; j < j1; j++) {
        float s = dot_row(qr, k, row_of(table_row, block_size, j, kv_stride), kv_f16, head_dim);
        s *= scale;
        if (softcap > 0.0f) s = softcap * tanhf(s / softcap);
        scores[j] = s;
        if (s > max) max = s;
    }
    if (sink > max) max = sink;
    double sum = sink == -INFINITY ? 0.0 : (double)expf(sink - max); /* the sink's share of the denominator */
    for (int64_t j = j0; j < j1; j++) {
        scores[j] = expf(scores[j] - max);
        sum += scores[j];
    }
    float inv = (float)(1.0 / sum);
    for (int64_t d = 0; d < head_dim; d++) out[d] = 0.0f;
    for (int64_t j = j0; j < j1; j++) {
        float p = scores[j] * inv;
        if (kv_f16) p = hearth_fp16_to_fp32(hearth_fp32_to_fp16(p));
        axpy_row(out, p, v, row_of(table_row, block_size, j, kv_stride), kv_f16, head_dim);
    }
}
