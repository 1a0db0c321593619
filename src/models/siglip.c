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
 * The matmuls are the encoder's packed f32 GEMM (kernels/gemm_f32.h), LayerNorm and the
 * attention the encoder's kernels (kernels/encoder_ops.h), as models/bert.c uses them; only the
 * tanh GELU, the pooling and the RMSNorm are plain loops here (a small share of the work).
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
    hearth_vision *v;
} attn_job;

/* Heads split over the pool's threads; each thread its own row of scores. */
static void attn_fn(void *arg, int ith, int nth) {
    hearth_vision *v = ((attn_job *)arg)->v;
    const int64_t D = v->info.width, N = v->info.n_patches;
    const int32_t H = v->info.n_head, hd = (int32_t)(D / H);
    hearth_attn_full_fn fn = hearth_kernels_attn_full();
    float *sc = v->scores + (int64_t)(ith < v->max_threads ? ith : 0) * N;
    if (ith >= v->max_threads) return;
    int eff = nth < v->max_threads ? nth : v->max_threads;
    for (int32_t h = ith; h < H; h += eff)
        fn(v->qkv + (int64_t)h * hd, v->qkv + D + (int64_t)h * hd, v->qkv + 2 * D + (int64_t)h * hd, 3 * D,
           v->xb + (int64_t)h * hd, D, N, 1, hd, 1.0f / sqrtf((float)hd), sc);
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
        attn_job aj = {v};
        hearth_pool_run(pool, attn_fn, &aj); /* -> xb */
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
