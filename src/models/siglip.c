/*
 * siglip.c - the SigLIP vision tower (transformers' SiglipVisionTransformer, vision_use_head
 * off) and Gemma 3's multimodal projector (Gemma3MultiModalProjector), read top to bottom:
 *
 *   patches [N][3 P P]     each P x P patch, channel-major then row then column: the conv's
 *                          weight flattened the same way makes the conv one matmul
 *   x = patches W^T + b + pos                                       [N][D]
 *   per layer:  x += out_proj(attn(LN1(x)))    bidirectional over all N patches, D/H per head
 *               x += fc2(gelu_tanh(fc1(LN2(x))))
 *   x = post_LN(x)
 *   projector:  the (S/P) x (S/P) grid average-pooled by k x k windows to mm_tokens rows,
 *               RMSNorm with (1 + w), times mm_input_projection_weight [D][n_embd_out]
 *
 * The matmuls, the attention's two products per head included, are the encoder's packed f32
 * GEMM (kernels/gemm_f32.h), LayerNorm the encoder's kernel (kernels/encoder_ops.h), as
 * models/bert.c uses them; the tanh GELU, the softmax, the pooling and the RMSNorm are plain
 * loops here (a small share of the work).
 */
#include "models/vision_internal.h"
#include "kernels/encoder_ops.h"
#include "kernels/gemm_f32.h"

#include <math.h>
#include <string.h>

/* x[i] = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))): PyTorch's gelu(approximate="tanh")
 * ("gelu_pytorch_tanh"), in float. */
static void gelu_tanh(float *x, int64_t n) {
    const float beta = 0.7978845608028654f, kappa = 0.044715f;
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        x[i] = 0.5f * v * (1.0f + tanhf(beta * (v + kappa * v * v * v)));
    }
}

typedef struct {
    float  *s;     /* [n][n] scores, then probabilities */
    int64_t n;
    float   scale;
} softmax_job;

/* s[i] = softmax(scale * s[i]) per row, the maximum subtracted, the sum in float. */
static void softmax_fn(void *arg, int ith, int nth) {
    softmax_job *j = arg;
    for (int64_t i = j->n * ith / nth; i < j->n * (ith + 1) / nth; i++) {
        float *r = j->s + i * j->n, mx = -INFINITY, sum = 0.0f;
        for (int64_t k = 0; k < j->n; k++) mx = fmaxf(mx, r[k] * j->scale);
        for (int64_t k = 0; k < j->n; k++) sum += r[k] = expf(r[k] * j->scale - mx);
        for (int64_t k = 0; k < j->n; k++) r[k] /= sum;
    }
}

/* Bidirectional attention of every head over the N patches, qkv -> xb, as two GEMMs per head
 * (scores = Q K^T, out = P V, with K and V^T packed as the GEMM's weights): at 4096 patches the
 * products dominate, and the packed GEMM runs them on every thread. */
static void attention(hearth_vision *v, hearth_pool *pool) {
    const int64_t D = v->info.width, N = v->info.n_patches, hd = D / v->info.n_head;
    softmax_job sj = {v->scores, N, 1.0f / sqrtf((float)hd)};
    for (int64_t h = 0; h < v->info.n_head; h++) {
        const float *q = v->qkv + h * hd, *k = v->qkv + D + h * hd, *vv = v->qkv + 2 * D + h * hd;
        hearth_gemm_f32_pack(k, 3 * D, N, hd, v->pk);
        hearth_gemm_f32(pool, v->pk, N, hd, q, 3 * D, N, v->scores, N);
        hearth_pool_run(pool, softmax_fn, &sj);
        for (int64_t o = 0; o < hd; o++)
            for (int64_t t = 0; t < N; t++) v->vt[o * N + t] = vv[t * 3 * D + o];
        hearth_gemm_f32_pack(v->vt, N, hd, N, v->pk);
        hearth_gemm_f32(pool, v->pk, hd, N, v->scores, N, N, v->xb + h * hd, D);
    }
}

static void add_bias(float *y, const float *b, int64_t rows, int64_t w) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < w; i++) y[r * w + i] += b[i];
}

void hearth_siglip_forward(hearth_vision *v, hearth_pool *pool, const float *pixels, float *out) {
    const hearth_vision_info *in = &v->info;
    const int64_t D = in->width, N = in->n_patches, P = in->patch_size, S = in->image_size, side = S / P;
    const int64_t K = 3 * P * P, F = v->n_ff;
    hearth_layernorm_fn ln = hearth_kernels_layernorm();

    /* patches: row (py * side + px), column (c * P + y) * P + x */
    for (int64_t py = 0; py < side; py++)
        for (int64_t px = 0; px < side; px++) {
            float *row = v->patches + (py * side + px) * K;
            for (int64_t c = 0; c < 3; c++)
                for (int64_t y = 0; y < P; y++)
                    memcpy(row + (c * P + y) * P, pixels + (c * S + py * P + y) * S + px * P, (size_t)P * sizeof(float));
        }
    hearth_gemm_f32(pool, v->p_patch, D, K, v->patches, K, N, v->x, D);
    for (int64_t t = 0; t < N; t++)
        for (int64_t i = 0; i < D; i++) v->x[t * D + i] += v->b_patch[i] + v->pos[t * D + i];

    for (int32_t il = 0; il < in->n_layer; il++) {
        const hearth_vision_layer *l = &v->layers[il];
        ln(v->x, l->ln1_w, l->ln1_b, v->xb, N, D, v->eps);
        hearth_gemm_f32(pool, l->p_qkv, 3 * D, D, v->xb, D, N, v->qkv, 3 * D);
        add_bias(v->qkv, l->b_qkv, N, 3 * D);
        attention(v, pool); /* -> xb */
        hearth_gemm_f32(pool, l->p_o, D, D, v->xb, D, N, v->qkv, D);
        add_bias(v->qkv, l->b_o, N, D);
        for (int64_t i = 0; i < N * D; i++) v->x[i] += v->qkv[i];
        ln(v->x, l->ln2_w, l->ln2_b, v->xb, N, D, v->eps);
        hearth_gemm_f32(pool, l->p_fc1, F, D, v->xb, D, N, v->ff, F);
        add_bias(v->ff, l->b_fc1, N, F);
        gelu_tanh(v->ff, N * F);
        hearth_gemm_f32(pool, l->p_fc2, D, F, v->ff, F, N, v->xb, D);
        add_bias(v->xb, l->b_fc2, N, D);
        for (int64_t i = 0; i < N * D; i++) v->x[i] += v->xb[i];
    }
    ln(v->x, v->post_w, v->post_b, out, N, D, v->eps);
}

void hearth_gemma3_mm_project(hearth_vision *v, hearth_pool *pool, const float *x, float *out) {
    const hearth_vision_info *in = &v->info;
    const int64_t D = in->width, side = in->image_size / in->patch_size;
    const int64_t tps = (int64_t)lrint(sqrt((double)in->mm_tokens)), k = side / tps;
    float *pooled = v->xb; /* [mm_tokens][D] */
    for (int64_t ty = 0; ty < tps; ty++)
        for (int64_t tx = 0; tx < tps; tx++) {
            float *o = pooled + (ty * tps + tx) * D;
            for (int64_t i = 0; i < D; i++) {
                float s = 0.0f;
                for (int64_t y = 0; y < k; y++)
                    for (int64_t xx = 0; xx < k; xx++) s += x[((ty * k + y) * side + tx * k + xx) * D + i];
                o[i] = s / (float)(k * k);
            }
            float ss = 0.0f;
            for (int64_t i = 0; i < D; i++) ss += o[i] * o[i];
            float r = 1.0f / sqrtf(ss / (float)D + v->eps);
            for (int64_t i = 0; i < D; i++) o[i] = o[i] * r * v->mm_norm[i];
        }
    hearth_gemm_f32(pool, v->p_proj, in->n_embd_out, D, pooled, D, in->mm_tokens, out, in->n_embd_out);
}
