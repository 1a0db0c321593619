/*
 * embed_attn.c - one (sequence, head) of attention for the embedding forwards that keep it in
 * plain C (modernbert.c, qwen3_embed.c), whose key ranges vary by layer.
 *
 * Query row i attends the keys j in [j0, j1): every key, keys 0..i (causal), or the keys with
 * |i - j| <= window (a sliding layer). Scores are q.k in float over the head in order, times
 * scale; the softmax subtracts the row's maximum and uses expf; the output is the weighted sum
 * of the value rows in key order. The layouts differ only in strides, so the rows are given as
 * base pointers and a leading dimension.
 */
#include "models/bert_internal.h"

#include <math.h>

void hearth_embed_attn_head(const float *q, const float *k, const float *v, int64_t ld, float *o, int64_t ldo,
                            int64_t n, int32_t hd, float scale, bool causal, int32_t window, float *sc) {
    for (int64_t i = 0; i < n; i++) {
        int64_t j0 = 0, j1 = causal ? i + 1 : n;
        if (window >= 0) {
            j0 = i - window > 0 ? i - window : 0;
            j1 = i + window + 1 < j1 ? i + window + 1 : j1;
        }
        const float *qi = q + i * ld;
        float mx = -INFINITY, sum = 0;
        for (int64_t j = j0; j < j1; j++) {
            const float *kj = k + j * ld;
            float dot = 0;
            for (int32_t c = 0; c < hd; c++) dot += qi[c] * kj[c];
            sc[j] = dot * scale;
            if (sc[j] > mx) mx = sc[j];
        }
        for (int64_t j = j0; j < j1; j++) sum += sc[j] = expf(sc[j] - mx);
        float *oi = o + i * ldo;
        for (int32_t c = 0; c < hd; c++) oi[c] = 0;
        for (int64_t j = j0; j < j1; j++) {
            const float w = sc[j] / sum, *vj = v + j * ld;
            for (int32_t c = 0; c < hd; c++) oi[c] += w * vj[c];
        }
    }
}
