/*
 * cuda_ops.h - the CUDA kernels' launchers, callable from C (ARCHITECTURE 5): one .cu file per
 * op in this folder, each the twin of a reference kernel in kernels/ref/ (tests/kernels/
 * test_cuda_ops.c holds them to it). cuda_backend.c builds the backend's op table from these.
 *
 * Every pointer is device memory unless its comment says otherwise; every launcher queues work
 * on `stream` (a cudaStream_t) and returns without waiting. Shapes follow backend.h.
 * Thread rule: as the backend's, one thread drives a stream.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/ref/topm_ref.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Weight types, equal to hearth_type's ids (tensor/dtype.h; cuda_backend.c checks). */
enum {
    HC_F32 = 0, HC_F16 = 1, HC_Q4_0 = 2, HC_Q4_1 = 3, HC_Q5_0 = 6, HC_Q5_1 = 7, HC_Q8_0 = 8,
    HC_Q4_K = 12, HC_Q5_K = 13, HC_Q6_K = 14, HC_BF16 = 30,
};
bool hc_type_supported(int type);

/* get_rows.cu: out[t] = dequant(row ids[t] of w) * scale;  out: [n][ne0] */
void hc_get_rows(int type, const void *w, size_t row_bytes, int64_t ne0, const int32_t *ids, int64_t n,
                 float scale, float *out, void *stream);

/* rmsnorm.cu: y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w  (w may be NULL; y may alias x) */
void hc_rmsnorm(const float *x, const float *w, float *y, int64_t n_rows, int64_t dim, float eps, void *stream);

/* rmsnorm.cu: x += r, then y[r] = rmsnorm(x[r]) * w  (y may alias r) */
void hc_add_rmsnorm(float *x, const float *r, const float *w, float *y, int64_t n_rows, int64_t dim, float eps,
                    void *stream);

/* rope.cu: RoPE in place on x [n_tok][n_head][head_dim]; inv_freq (device, [n_rot/2]) selects the
 * transformers recipe, NULL the llama.cpp one (theta_scale, freq_scale); cos and sin are scaled
 * by mscale (1 = none); neox: rotate halves */
void hc_rope(float *x, int64_t n_tok, int32_t n_head, int32_t head_dim, int32_t n_rot, const int32_t *pos,
             const float *inv_freq, float theta_scale, float freq_scale, float mscale, bool neox, void *stream);

/* KV cache element types (backend/kv_type.h) are named by these ids too: HC_F32, HC_F16,
 * HC_Q8_0, HC_Q4_0 (llama.cpp's cache blocks; a row is whole 32-element blocks), and the turbo
 * types HC_TURBO0 + B for B = 2, 3, 4, 5, 8 bits (rows rotated by 64-element pieces, then
 * blocks of 32 B-bit codes under an f16 scale: kernels/ref/turbo_ref.h). */
enum { HC_TURBO0 = 40, HC_TURBO2 = 42, HC_TURBO8 = 48 };

/* rope.cu: a layer's RoPE of q and k and its cache store of k and v in one launch (hc_rope on
 * q and k, then hc_kv_store of k, width n_head_kv*head_dim, and of v, width v_width); with a
 * quantized type head_dim and v_width are multiples of 32 */
typedef struct {
    float         *q, *k;
    const float   *v;
    int64_t        n_tok, v_width;
    int32_t        n_head, n_head_kv, head_dim, n_rot;
    const int32_t *pos, *seq;
    const float   *inv_freq; /* as hc_rope */
    float          theta_scale, freq_scale, mscale;
    bool           neox;
    int            k_type, v_type; /* cache element types: HC_F32, HC_F16, HC_Q8_0, HC_Q4_0, turbo */
    void          *k_cache, *v_cache;
    const int32_t *table;
    int32_t        max_blocks, block_size;
} hc_rope_store_args;
void hc_rope_store(const hc_rope_store_args *a, void *stream);

/* kv_store.cu: rows x [n_tok][width] into cache at (seq[t], pos[t]) through the block table,
 * as type (HC_F32, HC_F16, or HC_Q8_0 / HC_Q4_0 quantized block by block: width a multiple of
 * 32; a turbo type rotated and quantized by turbo.cu: width a multiple of 64; the bytes the CPU
 * backend's kv_store writes for the same rows) */
void hc_kv_store(const float *x, int64_t n_tok, int64_t width, const int32_t *seq, const int32_t *pos,
                 void *cache, const int32_t *table, int32_t max_blocks, int32_t block_size, int type, void *stream);

/* attention.cu: paged attention, one online-softmax pass over each query's keys (no score
 * matrix), split over the keys when few queries meet a long context, then combined. */
typedef struct {
    int64_t        n_tok;
    int32_t        n_head, n_head_kv, head_dim; /* head_dim <= 256, n_head / n_head_kv <= 8 */
    const float   *q;       /* [n_tok][n_head*head_dim] */
    float         *out;     /* [n_tok][n_head*head_dim] */
    const int32_t *pos, *seq;
    const void    *k, *v;   /* [block][block_size] rows of n_head_kv*head_dim elements of k_type (v_type) */
    const int32_t *table;
    int32_t        max_blocks, block_size;
    int            k_type, v_type; /* HC_F32, HC_F16, HC_Q8_0, HC_Q4_0 (quantized: head_dim % 32 == 0),
                                    * or turbo keys and values (head_dim % 64 == 0): the query is
                                    * rotated in the kernel, the output rotated back after it */
    int32_t        n_swa;
    float          scale, softcap;
    int32_t        max_len; /* longest key range of the step (a hint for the split), 0 = unknown */
    int32_t        min_run; /* fewest consecutive tokens of one sequence (a hint), 0 = unknown */
    int32_t        max_run; /* most consecutive tokens of one sequence (a hint: 1 = a batch of
                             * decodes, one query per block), 0 = unknown */
    bool           per_head; /* one query head per block, not the group (--fused-sdpa off): same bits */
} hc_attn;
/* Floats of scratch hc_attention needs for a; it uses none when this is 0. */
size_t hc_attention_scratch(const hc_attn *a);
void   hc_attention(const hc_attn *a, float *scratch, void *stream);
bool   hc_attention_supported(int32_t head_dim, int32_t group);
/* attention_tc.cu: the tensor-core kernel hc_attention uses for long steps over an f16, q8_0 or
 * q4_0 cache */
bool   hc_attention_tc_ok(const hc_attn *a);
void   hc_attention_tc(const hc_attn *a, void *stream);

/* turbo.cu: the turbo cache's store (rows rotated by 64-element pieces, then quantized to
 * blocks of B-bit codes: hearth_turbo_quantize_row's bytes) and the inverse rotation of
 * n_pieces consecutive 64-element pieces of x in place (hearth_turbo_unrotate) */
void hc_kv_store_turbo(const float *x, int64_t n_tok, int64_t width, const int32_t *seq, const int32_t *pos,
                       void *cache, const int32_t *table, int32_t max_blocks, int32_t block_size, int bits,
                       void *stream);
void hc_turbo_unrotate(float *x, int64_t n_pieces, void *stream);

/* glu.cu: g = act(g) * u; kind as hearth_glu_kind (0 swiglu, 1 geglu, 2 geglu rounded to f16) */
void hc_glu(float *g, const float *u, int64_t n, int kind, void *stream);

/* encoder.cu: the encoder's ops (backend.h: layernorm, gelu_erf, attn_enc, pool_rows, l2norm);
 * the batch padded to L rows per sequence, len [n_seq] device memory */
void hc_layernorm(const float *x, const float *w, const float *b, float *y, int64_t n_rows, int64_t dim, float eps,
                  void *stream);
void hc_gelu_erf(float *x, int64_t n, void *stream);
bool hc_attn_enc_supported(int32_t L, int32_t head_dim);
void hc_attn_enc(const float *q, const float *k, const float *v, int64_t ld, float *out, int64_t ldo, int64_t n_seq,
                 int32_t L, const int32_t *len, int32_t n_head, int32_t head_dim, float scale, void *stream);
void hc_pool(const float *x, int64_t n_seq, int32_t L, int64_t dim, const int32_t *len, int kind, float *out,
             void *stream);
void hc_l2norm(float *x, int64_t n_rows, int64_t dim, void *stream);

/* elementwise.cu */
void hc_add(float *x, const float *y, int64_t n, void *stream);
void hc_add_rows(float *x, const float *b, int64_t n_rows, int64_t dim, void *stream);
void hc_scale(float *x, int64_t n, float s, void *stream);
void hc_softcap(float *x, int64_t n, float cap, void *stream);
/* hadamard.cu: rows [n_rows][n] rotated in place (hearth_hadamard_ref's bits) */
void hc_hadamard(float *x, int64_t n_rows, int64_t n, void *stream);
/* y[i] = x[rows[i]] for rows of dim floats */
void hc_copy_rows(const float *x, int64_t dim, const int32_t *rows, int64_t n, float *y, void *stream);

/* argmax.cu: out[r] = the first index of the largest of x[r][0..n) */
void hc_argmax(const float *x, int64_t n_rows, int64_t n, int32_t *out, void *stream);
/* topm.cu: out[r] = the summary of row r (kernels/ref/topm_ref.h) asked by rq[r]; rq and out in
 * device memory */
void hc_topm(const float *x, int64_t n_rows, int64_t n, const hearth_topm_req *rq, hearth_topm *out, void *stream);
/* row r of x edited in place by ed[rq[r].edit0 ..] (hearth_topm_edit_ref); rq, ed in device memory */
void hc_topm_edit(float *x, int64_t n_rows, int64_t n, const hearth_topm_req *rq, const hearth_topm_edit *ed,
                  void *stream);

/* lora.cu: the segmented LoRA update (hearth_lora_ref, kernels/ref/lora_ref.h): for each
 * segment, rows t of [t0, t0 + n) get y[t] += scale * B (A x[t]);  x: [..][n_in], y: [..][ldy]
 * (the first n_out of a row), a: [r][n_in], b: [n_out][r] (device memory, f16 when half, else
 * f32). segs is host memory (read before the call returns); h is scratch of at least
 * hc_lora_scratch(segs, n_seg) floats. One shrink and one expand launch per HC_LORA_MAX_SEG
 * segments. */
#define HC_LORA_MAX_SEG 32
#define HC_LORA_MAX_RANK 256 /* = HEARTH_LORA_MAX_RANK (cuda_backend.c checks) */
typedef struct {
    int64_t     t0, n;
    int32_t     r;
    float       scale;
    bool        half;
    const void *a, *b;
} hc_lora_seg;
size_t hc_lora_scratch(const hc_lora_seg *segs, int n_seg);
void   hc_lora(const hc_lora_seg *segs, int n_seg, const float *x, int64_t n_in, float *y, int64_t ldy,
               int64_t n_out, float *h, void *stream);

/* matmul.cu: y[t][o] = sum_i w[o][i] x[t][i]; a matrix-vector kernel per type for few tokens,
 * cuBLAS (weights dequantized to f16 first when quantized) for many. */
typedef struct hc_matmul_ctx hc_matmul_ctx;
hc_matmul_ctx *hc_matmul_create(void *stream); /* NULL on failure */
void           hc_matmul_destroy(hc_matmul_ctx *c);
/* 0 on success, else a CUDA or cuBLAS error code. exact: f32 activations for every type (the
 * reference kernel set's arithmetic), else Q4_0/Q4_1/Q8_0 rows meet 8-bit activations at
 * decode sizes (the default sets' arithmetic). */
int            hc_matmul(hc_matmul_ctx *c, int type, const void *w, size_t row_bytes, int64_t n_out, int64_t n_in,
                         const float *x, int64_t n_tok, float *y, int64_t ldy, bool exact);
/* The same for n weights of one type and width that share x (y[i] = x w[i]^T): one launch at
 * decode sizes when hc_matmul_n_ok, else one hc_matmul each. */
int            hc_matmul_n(hc_matmul_ctx *c, int type, const void *const *w, size_t row_bytes, const int64_t *n_out,
                           int n, int64_t n_in, const float *x, int64_t n_tok, float *const *y, const int64_t *ldy,
                           bool exact);
bool           hc_matmul_n_ok(int n, int64_t n_tok);
/* tokens at or below which the matrix-vector kernels run */
#define HC_GEMV_MAX_TOK 8

/* gemv.cu: how the matrix-vector kernels are laid out (HEARTH_CUDA_MV, docs/cuda.md): waves of
 * short blocks, one row group each, or persistent (one resident wave of blocks, each row group
 * streaming several rows; gate/up may then carry the GLU, hc_matmul_glu). AUTO, the default:
 * persistent for Q4_0/Q4_1/Q8_0 rows, waves for 16-bit and f32 rows (what measured faster on
 * the H200, bench/cuda-h200.md). For tests, max_blocks > 0 caps the persistent grid (many rows
 * per thread) and force_p > 0 fixes its threads per row (16..256, at most 32 for the 8-bit
 * kernels); 0, 0 is automatic. */
enum { HC_MV_AUTO = 0, HC_MV_PERSIST = 1, HC_MV_WAVES = 2 };
void hc_mv_configure(int mode, int max_blocks, int force_p);
/* Rows per row group of a waves launch of several tokens (1 or 4, the default; HEARTH_CUDA_MV_ROWS):
 * each token's activations are loaded once for that many rows. The same bits either way. */
void hc_mv_rows_configure(int rows);
/* skinny.cu, the tensor-core product matmul.cu takes at 9 to max_tok tokens for Q8_0 and Q4_0
 * weights, and for 16-bit weights of at most sixteen_mb MiB per launch (0: none; -1: the default,
 * HC_SKINNY_16_MB; HEARTH_CUDA_SKINNY_16_MB); max_tok 0: never (cuBLAS instead; at most
 * HC_SKINNY_MAX_TOK; -1: that; HEARTH_CUDA_SKINNY); blocks: how many blocks a launch aims for when
 * it splits the width (0: the default; HEARTH_CUDA_SKINNY_BLOCKS) */
#define HC_SKINNY_MAX_TOK 128
#define HC_SKINNY_16_MB 64L
void hc_skinny_configure(int max_tok, int blocks, long sixteen_mb);

/* matmul.cu: one-token products of Q4_0, Q4_1 or Q8_0 rows on the persistent layout may quantize their
 * activations inside the kernel, each block as it stages them, instead of in a launch of their
 * own (off unless HEARTH_CUDA_FUSE_Q8=1: it measured no faster, docs/cuda.md). Nothing is kept
 * between calls. hc_q8_fused_count: how many matmul launches did so (tests). */
void hc_q8_fuse_configure(bool on);
long hc_q8_fused_count(void);

/* matmul.cu: g[t][o] = act(x[t] . gate[o]) * (x[t] . up[o]) (hc_glu's kinds) in one launch at
 * decode sizes for F32/F16/BF16 weights of one shape (HEARTH_CUDA_FUSE_GLU, docs/cuda.md);
 * false when it cannot (nothing was queued: the caller runs hc_matmul_n, then hc_glu). */
void hc_glu_fuse_configure(bool on);
/* whether hc_matmul_glu can run at all now (the persistent layout, the fusion on) */
bool hc_matmul_glu_on(void);
bool hc_matmul_glu(hc_matmul_ctx *c, int type, const void *wg, const void *wu, size_t row_bytes, int64_t n_out,
                   int64_t n_in, const float *x, int64_t n_tok, float *g, int64_t ldg, int kind);

#ifdef __cplusplus
}
#endif
