/*
 * model_linear.h - binding a gated DeltaNet (linear-attention) layer's tensors, shared by the
 * safetensors loader (model_st.c) and the GGUF loader (model.c). Each loader hands over a small
 * weight source: how it binds a matrix, a float vector and the conv kernel by name; this module
 * knows which names each format gives the layer's tensors and what each format did to them on
 * the way (model_linear.c's head comment lists the transforms). Load-time only; any thread.
 */
#pragma once
#include "model/model_internal.h"

typedef enum {
    HEARTH_LIN_HF = 0, /* transformers' names under "<prefix>layers.N.linear_attn." */
    HEARTH_LIN_GGUF,   /* llama.cpp's convert_hf_to_gguf.py names under "blk.N." */
} hearth_lin_format;

/* A loader's binders. Each binds the tensor named `name` (matrices: the module name for the
 * safetensors loader, which adds ".weight" itself; the full tensor name for GGUF) or returns a
 * load error naming it. */
typedef struct {
    void       *ctx;
    hearth_err *err;
    hearth_arena *arena;  /* borrowed: the model's, for the copies this module makes */
    /* [out][in] matrix (any type the loader can multiply) */
    hearth_status (*mat)(void *ctx, const char *name, int64_t in, int64_t out, hearth_weight *w);
    /* n floats as an f32 copy in the arena */
    hearth_status (*vec)(void *ctx, const char *name, int64_t n, const float **out);
    /* the conv kernel: rows channels of cols taps, as an f32 copy [rows][cols] in the arena
     * (safetensors [rows][1][cols], GGUF ne [cols, rows]: the same bytes in memory) */
    hearth_status (*conv)(void *ctx, const char *name, int64_t rows, int64_t cols, const float **out);
} hearth_lin_src;

/* Bind linear-attention layer il of m (hp->lin_* shapes) from src; prefix is the HF loader's
 * "model." / "model.language_model." (ignored for GGUF). */
hearth_status hearth_linear_bind(const hearth_lin_src *src, hearth_lin_format fmt, hearth_model *m, const char *prefix,
                                 int il);
