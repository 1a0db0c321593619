/*
 * attn_paged_ref.h - one attention head of one query over a paged KV cache (ARCHITECTURE 4).
 *
 * The cache of a layer is a pool of blocks, each block_size rows of kv_stride elements; a
 * sequence's position j lives in row j % block_size of block table_row[j / block_size]. The
 * arithmetic is hearth_attn_head_ref's, operation for operation (the same query rounding, the
 * same order of every sum), so a paged cache gives bit-identical outputs to a contiguous one:
 * a contiguous slot is the special case of one block of n_ctx rows.
 */
#pragma once
#include <stdbool.h>
#include <stdint.h>

/* k, v point at this head's first element in block 0 of the layer's pool (f16 or f32 as
 * kv_f16 says); keys j0..j1-1 are attended; scores: [j1] scratch; out: [head_dim]. */
void hearth_attn_head_paged_ref(const float *q, const void *k, const void *v, int64_t kv_stride,
                                const int32_t *table_row, int32_t block_size, bool kv_f16, int64_t head_dim,
                                int64_t j0, int64_t j1, float scale, float softcap, float *scores, float *out);
/* The same with an attention sink (gpt-oss): a learned logit `sink` that joins the softmax's
 * maximum and denominator but has no value, so the weights of the keys sum to less than 1:
 *   m = max(sink, s_j0..s_j1-1),  out = sum_j e^(s_j - m) v_j / (e^(sink - m) + sum_j e^(s_j - m)).
 * sink = -INFINITY is no sink: bit for bit hearth_attn_head_paged_ref. */
void hearth_attn_head_paged_sink_ref(const float *q, const void *k, const void *v, int64_t kv_stride,
                                     const int32_t *table_row, int32_t block_size, bool kv_f16, int64_t head_dim,
                                     int64_t j0, int64_t j1, float scale, float softcap, float sink, float *scores,
                                     float *out);
