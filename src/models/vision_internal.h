/*
 * vision_internal.h - the layout of a loaded vision tower, shared by vision_load.c (which fills
 * it) and siglip.c (the forward). Immutable after load except the scratch, which one encode at
 * a time uses (vision.h's thread rule).
 */
#pragma once
#include "models/vision.h"

typedef struct {
    const float *ln1_w, *ln1_b, *ln2_w, *ln2_b; /* [width] */
    const float *p_qkv, *b_qkv;  /* packed (kernels/gemm_f32.h) [3 width][width]: q, k, v rows; bias [3 width] */
    const float *p_o, *b_o;      /* out_proj [width][width], [width] */
    const float *p_fc1, *b_fc1;  /* [ff][width], [ff] */
    const float *p_fc2, *b_fc2;  /* [width][ff], [width] */
} hearth_vision_layer;

struct hearth_vision {
    hearth_vision_info   info;
    int32_t              n_ff;      /* the MLP's inner width */
    float                eps;       /* layer_norm_eps: the tower's LayerNorms and the projector's RMSNorm */
    const float         *p_patch;   /* packed [width][3 P P]: the patch conv, input (channel, y, x) */
    const float         *b_patch;   /* [width] */
    const float         *pos;       /* [n_patches][width] */
    hearth_vision_layer *layers;    /* owned [n_layer] */
    const float         *post_w, *post_b; /* [width] */
    const float         *mm_norm;   /* [width]: 1 + mm_soft_emb_norm.weight */
    const float         *p_proj;    /* packed [n_embd_out][width]: mm_input_projection_weight transposed */
    void               **owned;     /* owned: every array above */
    int64_t              n_owned;
    size_t               weight_bytes;
    /* scratch of one encode (owned, one allocation) */
    float               *scratch;
    float               *patches;   /* [n_patches][3 P P] */
    float               *x, *xb;    /* [n_patches][width] */
    float               *qkv;       /* [n_patches][3 width] */
    float               *ff;        /* [n_patches][n_ff] */
    float               *scores;    /* [n_patches][n_patches]: one head's attention */
    float               *vt;        /* [head_dim][n_patches]: one head's values, transposed */
    float               *pk;        /* packed K or V^T of one head (kernels/gemm_f32.h) */
};

/* The forward (siglip.c): the tower into out [n_patches][width]. */
void hearth_siglip_forward(hearth_vision *v, hearth_pool *pool, const float *pixels, float *out);
/* Gemma 3's projector (siglip.c): the tower's output x [n_patches][width] -> out [mm_tokens][n_embd_out]. */
void hearth_gemma3_mm_project(hearth_vision *v, hearth_pool *pool, const float *x, float *out);
