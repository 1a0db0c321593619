/*
 * modality.h - what a model can take besides text, from its files alone: does it carry a
 * vision (or audio) tower? The one answer the store (hearth ls --vision, the registry's
 * "vision" capability), the server (/v1/models, /props, the 400 for an image to a text-only
 * model) and the engine (which projector to load) share.
 *
 * The rules, by format:
 *
 *   safetensors snapshot (a folder with config.json)
 *     vision = config.json has a "vision_config" object (Gemma 3 / Gemma 4
 *              *ForConditionalGeneration, Qwen2.5-VL, Qwen3-VL, LLaVA, ...)
 *              AND the checkpoint holds the tower's weights: a tensor with a name component
 *              "vision_tower", "visual", "vision_model" or "vision_encoder"
 *              ("model.vision_tower.vision_model...", "model.visual.blocks...").
 *     audio  = the same with "audio_config" and "audio_tower" / "audio_model" / "audio_encoder".
 *     The weights are required because a text-only conversion keeps the multimodal config
 *     (mlx-lm's Qwen3.5 and Gemma 3 conversions drop the tower but not vision_config), and
 *     such a model cannot see. Names come from model.safetensors.index.json's weight_map when
 *     present, else from each *.safetensors header.
 *
 *   GGUF file
 *     vision = a projector GGUF beside it, as llama.cpp's convert_hf_to_gguf.py --mmproj writes
 *              them: general.type "mmproj" or general.architecture "clip", with
 *              clip.has_vision_encoder true (clip.has_audio_encoder for audio).
 *     "Beside" is the model's own folder, and, for a model in a subfolder of a hub snapshot
 *     (".../snapshots/<rev>/Q4_K_M/model.gguf"), the snapshot's top folder. Candidates are the
 *     *.gguf files whose name contains "mmproj" (any case: llama.cpp's and the hub's naming);
 *     the header, not the name, decides. The model has each tower some projector there has;
 *     its projector (for loading) is the first by name with a vision encoder, else the first
 *     with an audio one, so the answer does not depend on directory order.
 *
 * Files are untrusted: headers go through the loaders' own readers (model/gguf.h,
 * model/safetensors.h), config.json through cJSON with a size cap. An unreadable candidate
 * projector is skipped and said in .note; a missing model or a malformed config.json is an
 * error naming the file.
 *
 * Thread rule: pure functions of the files; any thread.
 */
#pragma once
#include <stdbool.h>

#include "base/status.h"

typedef struct {
    bool vision;          /* the model has a vision tower */
    bool audio;           /* the model has an audio tower */
    char projector[4096]; /* GGUF: the projector file that gives it; "" otherwise */
    char source[192];     /* the evidence, for messages: "config.json vision_config and
                           * vision tower weights", "projector mmproj-x.gguf", or why not */
    char note[256];       /* a candidate projector that could not be read, else "" */
} hearth_modality;

/* What the model at model_path (a GGUF file, or a safetensors snapshot folder) takes besides
 * text, into *out (always reset). HEARTH_E_NOTFOUND when model_path (or a folder's
 * config.json) is missing, HEARTH_E_FORMAT when config.json is not a JSON object or a
 * safetensors header is malformed; err names the file. */
hearth_status hearth_modality_probe(const char *model_path, hearth_modality *out, hearth_err *err);

/* Is the GGUF at path a projector (mmproj) rather than a model? *vision / *audio (may be NULL)
 * get its encoders. False for a model, or a file that cannot be read (err says why). */
bool hearth_modality_is_projector(const char *path, bool *vision, bool *audio, hearth_err *err);
