/*
 * kv_config.h - a per-layer KV cache scheme from a model's kv_config.json (`--kv-quant config`).
 *
 * mlx-optiq ships kv_config.json beside a model it has measured: which layers can keep their
 * keys and values in 4 or 8 bits and which need 16. hearth reads the shapes mlx-optiq and
 * mlx-bun write, and maps each layer's bits onto its own cache types (backend/kv_type.h):
 *
 *   8 -> q8_0, 4 -> q4_0, 16 or null -> f16; any other value is refused, naming the layer
 *
 * Accepted shapes (a layer not named takes the default: "bits" at the top, else 16):
 *
 *   [{"layer_idx": 3, "bits": 4, "group_size": 64}, ...]          a list of layer entries
 *   [8, 4, 4, 16, ...]                                            one entry per layer
 *   {"bits": 8, "group_size": 64, "layers": {"3": 4, "7": {"bits": 4}}}  a default and a map
 *   {"layers": [{"layer_idx": 3, "bits": 4}, ...]}                a default and a list
 *
 * group_size, where given, must be 32 or 64 (or null); other values are refused, naming the
 * layer. The kernels quantize blocks of 32 elements with an f16 scale (llama.cpp's q8_0 /
 * q4_0), and both values give that cache: 32 is it exactly, and 64, mlx's default, is the
 * group whose f16 scale and f16 bias take the same bytes per element (8.5 bits at 8, 4.5 at 4),
 * so a file measured with mlx's groups of 64 costs here what it cost there. Coarser groups
 * (128: fewer bytes) and other sizes would need block formats the kernels do not have.
 *
 * Where the file is (hearth_kv_config_find): for a checkpoint folder, DIR/kv_config.json; for a
 * GGUF file F, F.kv_config.json, else kv_config.json in F's folder.
 * Thread rule: any thread (pure functions of their arguments and the file).
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/kv_type.h"
#include "base/status.h"

/* The kv_config.json that belongs to the model at model_path (a folder or a .gguf file) into
 * out; false when there is none (or model_path is NULL). */
bool hearth_kv_config_find(const char *model_path, char *out, size_t cap);

/* Parse the text of a kv_config.json (len bytes) for a model of n_layer layers into out
 * [n_layer]. HEARTH_E_FORMAT with a message naming the layer and value on anything wrong. */
hearth_status hearth_kv_config_parse(const char *text, size_t len, int32_t n_layer, hearth_kv_scheme *out,
                                     hearth_err *err);
/* The same from the file at path (HEARTH_E_IO when it cannot be read). */
hearth_status hearth_kv_config_load(const char *path, int32_t n_layer, hearth_kv_scheme *out, hearth_err *err);
