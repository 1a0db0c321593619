/*
 * vision.h - the image side of a vision-language checkpoint: pixels in, one embedding row per
 * image soft token out, rows the text decoder takes in place of those tokens' embeddings.
 *
 * What loads today: Gemma 3 (transformers' Gemma3ForConditionalGeneration) from safetensors:
 * config.json with a vision_config of model_type "siglip_vision_model" and mm_tokens_per_image,
 * the SigLIP tower's tensors (under "vision_tower.vision_model.", "vision_tower.", or either
 * behind "model.") and the multimodal projector's ("multi_modal_projector.", or behind
 * "model."), f32, f16 or bf16; they are widened to f32 once at load. The pipeline, as
 * transformers runs it:
 *
 *   image (8-bit RGB, any size)
 *     -> resize to image_size x image_size, PIL's bilinear on 8-bit pixels (image_resize.c:
 *        transformers' Gemma3ImageProcessorPil gives the same bytes), pan-and-scan off
 *     -> pixels [3][S][S] = (u8 / 255 - 0.5) / 0.5 (mean and std 0.5)
 *     -> SigLIP (siglip.c): P x P patches as one matmul with the conv's weight, + bias, + the
 *        learned position rows; per layer x += attn(LN1(x)), x += fc2(gelu_tanh(fc1(LN2(x))))
 *        with bidirectional attention over the (S/P)^2 patches; post LayerNorm
 *     -> Gemma 3's projector: average pool of the patch grid down to mm_tokens_per_image
 *        tokens (a k x k window, k = (S/P) / sqrt(mm_tokens)), RMSNorm with (1 + w), matmul by
 *        mm_input_projection_weight [vision width][text width]
 *     -> rows [mm_tokens][text width], not scaled by sqrt(width) as token embeddings are
 *
 * The prompt holds, for each image, "\n\n" <start_of_image>, mm_tokens x <image_soft_token>,
 * <end_of_image> "\n\n" (the processor's full form); hearth_vision_expand writes it where the
 * template put <start_of_image>.
 *
 * Thread rule: load and free on one thread; hearth_vision_encode runs on the caller's thread
 * with the compute pool it is given (NULL: that thread alone); two encodes on one handle must
 * not overlap (they share its scratch). The getters read immutable state, any thread.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "base/thread.h"

typedef struct hearth_vision hearth_vision;

/* What the text side needs to know about a loaded tower. */
typedef struct {
    int32_t image_size;      /* S: pixels per side the tower takes */
    int32_t patch_size;      /* P */
    int32_t n_patches;       /* (S / P)^2 */
    int32_t width;           /* the tower's hidden size */
    int32_t n_layer, n_head;
    int32_t mm_tokens;       /* soft tokens (embedding rows) per image */
    int32_t n_embd_out;      /* the text decoder's hidden size: the width of each row */
    int32_t boi_id, eoi_id, image_id; /* <start_of_image>, <end_of_image>, <image_soft_token> */
    float   mean[3], std[3]; /* normalization per channel (after / 255) */
} hearth_vision_info;

/* Does the checkpoint folder at path have a vision tower hearth can load (its config.json has a
 * vision_config this module takes, with its weights present)? Reads config.json and the
 * safetensors header only. */
bool hearth_vision_probe(const char *path);

/* Load the tower and projector of the checkpoint folder at path. HEARTH_E_UNSUPPORTED (saying
 * what) for a vision config this module does not run, HEARTH_E_FORMAT for a missing or
 * misshapen tensor (named), HEARTH_E_NOMEM. */
hearth_status hearth_vision_load(const char *path, hearth_vision **out, hearth_err *err);
void          hearth_vision_free(hearth_vision *v); /* accepts NULL */
const hearth_vision_info *hearth_vision_get_info(const hearth_vision *v);
size_t        hearth_vision_weight_bytes(const hearth_vision *v);

/* Resize and normalize an 8-bit RGB image rgb [h][w][3] into pixels [3][S][S] (S =
 * image_size), as the model's image processor does. HEARTH_E_INVALID for an empty image,
 * HEARTH_E_NOMEM. */
hearth_status hearth_vision_preprocess(const hearth_vision *v, const uint8_t *rgb, int32_t w, int32_t h,
                                       float *pixels);

/* The tower and projector on pixels [3][S][S]: out [mm_tokens][n_embd_out]. HEARTH_E_NOMEM. */
hearth_status hearth_vision_encode(hearth_vision *v, hearth_pool *pool, const float *pixels, float *out);

/* The same, the tower's output before the projector: out [n_patches][width] (post LayerNorm). */
hearth_status hearth_vision_tower(hearth_vision *v, hearth_pool *pool, const float *pixels, float *out);

/* PIL's bilinear resample (Image.resize(..., BILINEAR) on an RGB image) of src [sh][sw][3]
 * into dst [dh][dw][3]: a triangle filter widened by the scale when shrinking, 22-bit
 * fixed-point weights, the horizontal pass first with its result rounded to 8 bits, a pass
 * skipped when that side keeps its size (image_resize.c). HEARTH_E_INVALID for a size < 1,
 * HEARTH_E_NOMEM. */
hearth_status hearth_image_resize_bilinear(const uint8_t *src, int32_t sw, int32_t sh, uint8_t *dst, int32_t dw,
                                           int32_t dh);
