/*
 * numerics.h - which arithmetic a forward computes, as one value chosen once (ARCHITECTURE 5:
 * "Numerics are a value, not a global").
 *
 * The tier names the float order a step reproduces bit for bit:
 *
 *   l1   llama.cpp's x86 order on GGUF models (the default): 8-bit activations for quantized
 *        weights, an f16 KV cache, llama.cpp's RoPE angle recurrence, GELU from an f16 table,
 *        Gemma's queries scaled before the KQ product.
 *   l2   l1 with an 8-bit quantized KV cache (llama.cpp -ctk q8_0 -ctv q8_0). Parsed and named,
 *        but refused where an engine is made: the quantized KV cache does not exist yet.
 *   ref  the f32 specification that transformers computes (the reference kernel set's
 *        numerics: precomputed angles, exact GELU, scale on the scores, an f32 KV cache, f32
 *        activations on CUDA). The default when HEARTH_KERNELS=ref chose the reference kernels.
 *
 * Hugging Face checkpoints (hf_numerics) take transformers' angles and GELU in every tier.
 * Which SIMD code runs is a separate choice (the kernel set, kernels/kernels.h): the tier says
 * what is computed, the kernel set how fast.
 *
 * The switches are A/B levers: each selects a slower path of the same bits (tests check on ==
 * off). All on by default; the zero value of the struct is the default, switches included.
 *
 *   compiled-decode       CUDA: decode steps captured and replayed as one graph
 *   fused-sdpa            attention's multi-query kernels (CPU: the group kernels that run the
 *                         query heads sharing a kv head in one pass; CUDA: the CUDA-core
 *                         kernel's blocks serving a group of query heads, not one head)
 *   compiled-activations  CUDA: gate/up matmul and the GLU in one launch (ffn_glu)
 *
 * One switch changes bits on purpose, and is off by default:
 *
 *   batch-invariant       CPU: every token's row is computed as it would be alone in its step,
 *                         whatever else the step carries: matmuls take the one-row dot for every
 *                         row (not llama.cpp's gemm or tiled orders of steps of 4 or more rows),
 *                         attention the one-token order for every query. Batching, chunked
 *                         prefill and speculative decoding's verify steps then never change a
 *                         token (docs/engine.md, "Batch invariance"); steps of many tokens run
 *                         slower. Not available on CUDA.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>

typedef enum {
    HEARTH_NUMERICS_AUTO = 0, /* l1, or ref when the reference kernel set is active */
    HEARTH_NUMERICS_L1,
    HEARTH_NUMERICS_L2,
    HEARTH_NUMERICS_REF,
} hearth_numerics_tier;

typedef struct {
    hearth_numerics_tier tier;
    bool no_compiled_decode;      /* switches, stored inverted so that {0} is the default */
    bool no_fused_sdpa;
    bool no_compiled_activations;
    bool batch_invariant;         /* off by default (not inverted) */
} hearth_numerics;

/* tier AUTO resolved: ref when the active kernel set is the reference one, else l1. */
hearth_numerics      hearth_numerics_resolve(hearth_numerics nx);
/* "l1", "l2", "ref" ("auto" for AUTO). */
const char          *hearth_numerics_tier_name(hearth_numerics_tier t);
/* "l1", "l2", "ref" (also "L1", "L2") -> *out; false for anything else. */
bool                 hearth_numerics_tier_parse(const char *s, hearth_numerics_tier *out);
/* "on"/"off" and their spellings ("true"/"false", "1"/"0", "yes"/"no") -> *on; false else. */
bool                 hearth_switch_parse(const char *s, bool *on);
/* "l1, compiled-decode on, fused-sdpa on, compiled-activations on" into buf. */
void                 hearth_numerics_describe(const hearth_numerics *nx, char *buf, size_t cap);
