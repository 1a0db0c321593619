/*
 * facts.h - what the store knows about a model without loading it: format, architecture,
 * parameters, bytes, quantization, context, the memory-contract inputs of fit.h (KV bytes per
 * token, split into global and sliding-window layers, activation bytes per prefill token), and
 * capabilities. One struct, filled from a GGUF file's header (the metadata and tensor table;
 * no weight bytes are read) or from a safetensors snapshot's config.json and headers.
 *
 * The KV numbers follow the engine's cache: f16 keys and values,
 *   kv bytes per token = n_layer * n_head_kv * (head_dim + head_dim_v) * 2,
 * of which the share of sliding-window layers (model/arch.h hearth_hparams_is_swa) is
 * kv_swa_bytes_per_token: those layers never hold more than n_swa positions.
 *
 * NOTE(store): the hparams keys are read here with the loader's defaults (model/model.c
 * read_hparams is private to the loader); keep the two in step.
 * Plain data; the functions read files only; any thread.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct hearth_gguf hearth_gguf;

/* Capability bits (stored in the registry as words, see hearth_facts_caps_str). */
enum {
    HEARTH_CAP_SUPPORTED = 1 << 0, /* hearth has a forward pass for the architecture */
    HEARTH_CAP_CHAT      = 1 << 1, /* a chat template is present */
    HEARTH_CAP_TOOLS     = 1 << 2, /* the chat template handles tools */
    HEARTH_CAP_THINKING  = 1 << 3, /* the chat template has a reasoning switch or <think> */
    HEARTH_CAP_VISION    = 1 << 4, /* a vision tower: store/modality.h (weights, or an mmproj beside it) */
    HEARTH_CAP_EMBED     = 1 << 5, /* an embedding model (pooling, encoder architecture) */
};

typedef struct {
    char     format[16];   /* "gguf" or "safetensors" */
    char     arch[32];     /* general.architecture / config.json model_type */
    char     name[96];     /* general.name, or "" */
    char     quant[32];    /* dominant weight type by bytes ("q4_1", "bf16", "4-bit g64") */
    char     license[48];  /* general.license, or "" */
    uint32_t caps;         /* HEARTH_CAP_* */
    int64_t  n_params;     /* elements of all tensors (quantized: unpacked) */
    int64_t  file_bytes;   /* bytes on disk of every file of the model */
    int64_t  weight_bytes; /* bytes of tensor data: what mapping the weights costs */
    int64_t  weight_read_bytes; /* of those, bytes one decoded token reads (not the embedding
                                 * table when an untied output matrix exists) */
    int32_t  n_ctx_train;  /* tokens */
    int32_t  n_layer, n_layer_swa;
    int32_t  n_swa;        /* sliding window in tokens; 0 = none */
    int32_t  n_vocab;
    int64_t  kv_bytes_per_token;     /* all layers, f16, uncapped */
    int64_t  kv_swa_bytes_per_token; /* the part that lives on sliding-window layers */
    int64_t  act_bytes_per_token;    /* f32 activation scratch per token of a prefill chunk */
} hearth_model_facts;

/* Facts of the GGUF file at path (mapped, header parsed, closed again). */
hearth_status hearth_facts_gguf(const char *path, hearth_model_facts *out, hearth_err *err);
/* The same from an open handle (file_bytes is the handle's size). */
hearth_status hearth_facts_from_gguf(const hearth_gguf *g, hearth_model_facts *out, hearth_err *err);
/* Facts of a safetensors snapshot directory (config.json + *.safetensors headers). */
hearth_status hearth_facts_safetensors(const char *dir, hearth_model_facts *out, hearth_err *err);

/* Capabilities as comma-separated words ("supported,chat,tools") into buf; "" for none. */
void hearth_facts_caps_str(uint32_t caps, char *buf, size_t n);
uint32_t hearth_facts_caps_parse(const char *s);
