/*
 * kv_quant.h - the KV cache scheme a user asks for (`--kv-quant`), and how it becomes the
 * element types of the pool (backend/kv_type.h).
 *
 *   off           the f16 cache (f32 under the ref numerics), the default
 *   8             llama.cpp's q8_0 keys and values (-ctk q8_0 -ctv q8_0)
 *   4             llama.cpp's q4_0 keys and values
 *   turbo[:kXvY]  rotation-based quantization: K bits X in {2,4,5,8}, V bits Y in {2,3,4,5,8},
 *                 default k8v3
 *   config        a per-layer scheme from the model's kv_config.json, else off
 *
 * Parsing is plain string work (the CLI, the server and library callers share it); which
 * schemes an engine can run is decided where it is made (engine.c), which says why it refuses.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    HEARTH_KVQ_OFF = 0,
    HEARTH_KVQ_8,
    HEARTH_KVQ_4,
    HEARTH_KVQ_TURBO,
    HEARTH_KVQ_CONFIG,
} hearth_kvq_mode;

typedef struct {
    hearth_kvq_mode mode;
    int8_t          k_bits, v_bits; /* turbo only */
} hearth_kv_quant;

/* "off", "8", "4", "turbo", "turbo:k4v3", "config" (also "q8_0", "q4_0", "f16", "none") -> *out.
 * False with the reason in why (may be NULL) for anything else. */
bool hearth_kv_quant_parse(const char *s, hearth_kv_quant *out, char *why, size_t cap);
/* The canonical spelling: "off", "8", "4", "turbo:k8v3", "config". */
void hearth_kv_quant_name(const hearth_kv_quant *q, char *buf, size_t cap);
