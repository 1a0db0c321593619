/*
 * kv_type.h - the element types of the KV cache (ARCHITECTURE 4: a block is a block whether it
 * holds f16 or 8 bits).
 *
 * A cache row is the keys (or values) of one position in one layer: n_head_kv heads of
 * head_dim elements side by side. f32 and f16 rows are plain arrays; the quantized rows are
 * llama.cpp's q8_0 and q4_0 cache types, blocks of 32 elements with an f16 scale, one after
 * another along the row (a head of head_dim elements, a multiple of 32, is head_dim / 32 whole
 * blocks, so an attention kernel finds head h's blocks at h * head_dim / 32):
 *
 *   q8_0   34 bytes: f16 d, 32 x int8 q;        x = q * d
 *   q4_0   18 bytes: f16 d, 16 bytes of nibbles; x = (q - 8) * d, element i in the low nibble
 *          of byte i (i < 16), element i + 16 in the high nibble
 *
 * The turbo types (turbo2, turbo3, turbo4, turbo5, turbo8: `--kv-quant turbo:kXvY`) hold a row
 * rotated before it is quantized (kernels/ref/turbo_ref.h has the rotation and the codec):
 * every 64 elements of a head (HEARTH_KV_TURBO_ROT) go through a randomized Hadamard transform,
 * then each 32 rotated elements are one block of B-bit codes under an f16 scale s:
 *
 *   turboB  2 + 4 * B bytes: f16 s, 32 codes of B bits packed LSB first (element i at bit
 *           i * B of the packed bytes; 8 elements fill B bytes, nothing is wasted);
 *           x = level_B(q) * s: Lloyd-Max Gaussian levels for B = 2, 3, 4, uniform
 *           2q + 1 - 2^B for B = 5, 8
 *
 * A turbo cache is attended in the rotated space (the query is rotated the same way, the output
 * is rotated back once), kernels/cpu/attn_turbo_body.inc.
 *
 * Keys and values may differ in type (a scheme names both). Which scheme a cache uses is the
 * engine's choice (engine.h kv_quant); the ops take the types as arguments.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    HEARTH_KV_F32 = 0,
    HEARTH_KV_F16,
    HEARTH_KV_Q8_0,
    HEARTH_KV_Q4_0,
    HEARTH_KV_T2, /* turbo, 2 bits */
    HEARTH_KV_T3,
    HEARTH_KV_T4,
    HEARTH_KV_T5,
    HEARTH_KV_T8,
    HEARTH_KV_TYPE_COUNT,
} hearth_kv_type;

enum {
    HEARTH_KV_QBLOCK    = 32, /* elements per block of the quantized types (turbo too) */
    HEARTH_KV_TURBO_ROT = 64, /* elements of one turbo rotation; a head is whole rotations */
};

static inline bool hearth_kv_type_turbo(hearth_kv_type t) { return t >= HEARTH_KV_T2 && t <= HEARTH_KV_T8; }

/* Bits per element of a turbo type (0 for any other type). */
static inline int hearth_kv_turbo_bits(hearth_kv_type t) {
    static const int8_t bits[] = {2, 3, 4, 5, 8};
    return hearth_kv_type_turbo(t) ? bits[t - HEARTH_KV_T2] : 0;
}

/* The turbo type of b bits (2, 3, 4, 5 or 8); HEARTH_KV_TYPE_COUNT for any other b. */
static inline hearth_kv_type hearth_kv_turbo_type(int b) {
    switch (b) {
    case 2: return HEARTH_KV_T2;
    case 3: return HEARTH_KV_T3;
    case 4: return HEARTH_KV_T4;
    case 5: return HEARTH_KV_T5;
    case 8: return HEARTH_KV_T8;
    default: return HEARTH_KV_TYPE_COUNT;
    }
}

/* llama.cpp's q8_0 and q4_0 (the turbo types are hearth_kv_type_turbo) */
static inline bool hearth_kv_type_quantized(hearth_kv_type t) { return t == HEARTH_KV_Q8_0 || t == HEARTH_KV_Q4_0; }

/* Bytes of `width` elements of type t (a multiple of HEARTH_KV_QBLOCK for a quantized or turbo
 * type). */
static inline size_t hearth_kv_row_bytes(hearth_kv_type t, int64_t width) {
    switch (t) {
    case HEARTH_KV_F32: return (size_t)width * 4;
    case HEARTH_KV_F16: return (size_t)width * 2;
    case HEARTH_KV_Q8_0: return (size_t)(width / HEARTH_KV_QBLOCK) * 34;
    case HEARTH_KV_Q4_0: return (size_t)(width / HEARTH_KV_QBLOCK) * 18;
    case HEARTH_KV_T2:
    case HEARTH_KV_T3:
    case HEARTH_KV_T4:
    case HEARTH_KV_T5:
    case HEARTH_KV_T8: return (size_t)(width / HEARTH_KV_QBLOCK) * (size_t)(2 + 4 * hearth_kv_turbo_bits(t));
    default: return 0;
    }
}

/* "f32", "f16", "q8_0", "q4_0" (llama.cpp's cache type names), "turbo2" .. "turbo8". */
static inline const char *hearth_kv_type_name(hearth_kv_type t) {
    static const char *const names[HEARTH_KV_TYPE_COUNT] = {"f32",    "f16",    "q8_0",   "q4_0",  "turbo2",
                                                            "turbo3", "turbo4", "turbo5", "turbo8"};
    return (unsigned)t < HEARTH_KV_TYPE_COUNT ? names[t] : "?";
}

/* The types of a cache's keys and values. {0} is f32 keys and values. */
typedef struct {
    hearth_kv_type k, v;
} hearth_kv_scheme;

static inline hearth_kv_scheme hearth_kv_scheme_of(hearth_kv_type k, hearth_kv_type v) {
    hearth_kv_scheme s = {k, v};
    return s;
}
#define HEARTH_KV_SCHEME_F32 ((hearth_kv_scheme){HEARTH_KV_F32, HEARTH_KV_F32})
#define HEARTH_KV_SCHEME_F16 ((hearth_kv_scheme){HEARTH_KV_F16, HEARTH_KV_F16})
