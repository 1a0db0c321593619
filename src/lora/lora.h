/*
 * lora.h - a LoRA adapter loaded against one base model (ARCHITECTURE 4, "LoRA adapters").
 *
 * An adapter adds a low-rank update to some of a decoder layer's projections:
 *
 *   y = x W^T + scale * (x A^T) B^T        A: [r][n_in], B: [n_out][r]
 *
 * Three formats are read (lora_load.c, lora_gguf.c), all into the same per-layer table:
 *   PEFT     adapter_config.json (r, lora_alpha, use_rslora, target_modules) and
 *            adapter_model.safetensors (base_model.model.<module>.lora_A.weight [r][in],
 *            .lora_B.weight [out][r]); scale = lora_alpha / r, or lora_alpha / sqrt(r) (rsLoRA)
 *   mlx-lm   adapter_config.json (lora_parameters.rank / scale) and adapters.safetensors
 *            (<module>.lora_a [in][r], .lora_b [r][out], transposed here); scale as given
 *   GGUF     general.type = adapter, adapter.type = lora, adapter.lora.alpha; tensors
 *            blk.N.<attn_q|attn_k|attn_v|attn_output|ffn_gate|ffn_up|ffn_down>.weight.lora_a
 *            (ggml [in, r] = rows [r][in]) and .lora_b ([r, out] = [out][r]) as llama.cpp's
 *            convert_lora_to_gguf.py writes them; scale = alpha / r
 * Phi-3's fused qkv_proj / gate_up_proj: the one A is shared and B's rows are cut at the same
 * boundaries as the base model's fused weight (q|k|v, gate|up), which is exact.
 *
 * Matrices are kept in the adapter's arena as f16 when both the A and the B source are f16 or
 * bf16 (the kernel reads half the bytes of f32 and sums in f32, kernels/ref/lora_ref.h): f16
 * keeps its values, bf16 is rounded to nearest even (exact in f16's normal range, 6.1e-5 ..
 * 65504; a value beyond 65504 is refused naming the layer and projection). f32 sources (and
 * dequantized GGUF types) stay f32: rounding them to f16 moves the tiny test models' logits by
 * up to 7e-2 against peft, far past the 1e-4 the parity tests hold. The loaders write f32 (into
 * a staging arena for the f16 ones: transposes, phi3's cuts, the q/k permutation), and
 * hearth_lora_finish rounds. Everything is checked
 * against the base model at load: the architecture (GGUF), every module name, layer index and
 * shape; the first mismatch is the error, naming the tensor and what the base model has. Only
 * the seven projections of a decoder layer are adapted; an adapter that touches anything else
 * (embeddings, lm_head, norms, biases, DoRA, modules_to_save) is refused, never half applied.
 *
 * Thread rule: immutable after load; any thread may read it. Reference-counted (atomic): the
 * loader's reference, one per engine request using it (taken at submit, dropped when the
 * request is freed), so an adapter unmounted while requests use it lives until they end.
 */
#pragma once
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/status.h"
#include "kernels/ref/lora_ref.h"
#include "model/model.h"

/* The projections of a decoder layer an adapter may touch, in hearth_layer's terms. */
typedef enum {
    HEARTH_LORA_Q = 0, HEARTH_LORA_K, HEARTH_LORA_V, HEARTH_LORA_O,
    HEARTH_LORA_GATE, HEARTH_LORA_UP, HEARTH_LORA_DOWN,
    HEARTH_LORA_N_MOD,
} hearth_lora_mod;

typedef struct {
    int32_t      r;        /* rank; 0 = this projection is not adapted */
    int64_t      n_in;     /* the base weight's ne0 */
    int64_t      n_out;    /* the base weight's ne1 */
    float        scale;
    bool         half;     /* a and b hold f16 values, else f32 */
    const void  *a;        /* [r][n_in], in the adapter's arena */
    const void  *b;        /* [n_out][r], in the arena (a row slice of a fused B for phi3) */
    float       *a32, *b32; /* the f32 matrices while loading; NULL after hearth_lora_finish */
} hearth_lora_mat;

typedef struct hearth_lora {
    _Atomic int      refs;
    hearth_arena     arena;     /* owned: the matrices and strings */
    int32_t          n_layer;   /* the base model's */
    int32_t          max_rank;
    int32_t          n_mats;    /* adapted projections over all layers */
    hearth_lora_mat (*mats)[HEARTH_LORA_N_MOD]; /* [n_layer][module], in arena */
    const char      *format;    /* "peft", "mlx", "gguf" (static) */
    const char      *path;      /* in arena */
    size_t           bytes;     /* of the matrices as kept (f16 or f32) */
} hearth_lora;

/* Load the adapter at path (one reference, the caller's) (a PEFT or mlx-lm folder, or a GGUF LoRA file) for base model m
 * (borrowed; only read during the call). Errors: HEARTH_E_NOTFOUND (no adapter there),
 * HEARTH_E_FORMAT (malformed files), HEARTH_E_UNSUPPORTED (a feature hearth does not apply),
 * HEARTH_E_INVALID (made for another base model), each with a message naming the first problem. */
hearth_status hearth_lora_load(const char *path, const hearth_model *m, hearth_lora **out, hearth_err *err);
/* Take / drop a reference (any thread); the last drop frees it. Both accept NULL. */
const hearth_lora *hearth_lora_retain(const hearth_lora *a);
void          hearth_lora_release(const hearth_lora *a);
/* Is the caller's reference the only one left (no mount table, no request holds it)? Only a
 * holder can take a new reference, so the answer cannot turn false again afterwards. */
bool          hearth_lora_sole_ref(const hearth_lora *a);

/* Merge a into the weights of m, a Hugging Face checkpoint loaded from folder src_dir, and
 * write the merged checkpoint to out_dir (created if missing): src_dir's other files and one
 * model.safetensors in the source dtypes, each adapted W replaced by W + scale B A
 * (lora_fuse.c). HEARTH_E_UNSUPPORTED for a GGUF or MLX-quantized base; HEARTH_E_IO. */
hearth_status hearth_lora_fuse(const hearth_model *m, const hearth_lora *a, const char *src_dir, const char *out_dir,
                               hearth_err *err);

/* Merge a into m, a GGUF model, and write the merged GGUF to out_path (lora_fuse_gguf.c): the
 * base's metadata and tensors, each adapted tensor replaced by W + scale B A (F16 when the
 * base's is quantized; F32, F16 and BF16 kept). HEARTH_E_UNSUPPORTED naming the tensor for a
 * projection that is not a tensor of the file or a value beyond f16's range; HEARTH_E_IO. */
hearth_status hearth_lora_fuse_gguf(const hearth_model *m, const hearth_lora *a, const char *out_path,
                                    hearth_err *err);

/* The matrices of layer il's projection mod (r == 0 when not adapted). */
static inline const hearth_lora_mat *hearth_lora_get(const hearth_lora *a, int32_t il, hearth_lora_mod mod) {
    return &a->mats[il][mod];
}
/* Does any layer adapt mod? */
bool hearth_lora_touches(const hearth_lora *a, hearth_lora_mod mod);
/* "q_proj", ... (the Hugging Face module name). */
const char *hearth_lora_mod_name(hearth_lora_mod mod);

/* Internal to lora/ (lora_load.c, lora_gguf.c): the adapter being built for m. */
typedef struct {
    hearth_lora        *a;
    const hearth_model *m;
    hearth_err         *err;
    hearth_arena        staging; /* the f32 matrices until hearth_lora_finish */
} hearth_lora_builder;
/* Check an A of [r][n_in] and a B of [n_out][r] (as they are after any transpose) for layer
 * il's projection `module` (a Hugging Face name: q_proj .. down_proj, or phi3's fused qkv_proj
 * and gate_up_proj) against the base model, and make room for them: *a_out ([r][n_in]) and
 * *b_out ([n_out][r]) are f32 buffers the caller fills (staging ones when half: both sources are f16
 * or bf16, kept as f16). name names the tensor in messages. */
hearth_status hearth_lora_add(hearth_lora_builder *L, const char *name, int32_t il, const char *module, int64_t r,
                              int64_t n_in, int64_t n_out, float scale, bool half, float **a_out, float **b_out);
/* Are both types (HEARTH_TYPE_*) f16 or bf16, the sources an adapter keeps as f16? */
bool hearth_lora_half_types(int type_a, int type_b);
/* Convert n values of a float tensor's dtype (HEARTH_TYPE_F32/F16/BF16, or any type with a
 * dequantizer) to f32. False when the type cannot be converted. */
bool hearth_lora_to_f32(int type, const void *src, float *dst, int64_t n);
/* Round every half matrix's staged f32 to its f16 copy in the adapter's arena (phi3's shared A
 * once); HEARTH_E_UNSUPPORTED naming the layer and projection for a value beyond f16's range. */
hearth_status hearth_lora_finish(hearth_lora_builder *L);
hearth_status hearth_lora_load_gguf(hearth_lora_builder *L, const char *path);
