/*
 * kv.h - the KV cache storage: for every layer, n_slots contiguous runs of n_ctx rows of keys
 * and of values (f16, or f32 on the reference path). One allocation, made once. Its view is
 * the paged one with one block of n_ctx rows per slot; the engine itself runs on the paged
 * block pool (engine/kv_pool.h). A hybrid model's linear-attention layers also get a state slot
 * per sequence slot (forward.h's lin_state / lin_len). This serves direct forward runs of tests, benches and tools
 * and is not part of the hearth binary (CMake's hearth_test_support library).
 * Thread rule: engine thread only.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "model/model.h"
#include "engine/kv_pool.h" /* hearth_kv_bytes_per_token, hearth_kv_n_cache_layers */
#include "models/forward.h"

typedef struct hearth_kv hearth_kv;

hearth_status hearth_kv_create(const hearth_model *m, int32_t n_slots, int32_t n_ctx, bool f16, hearth_kv **out,
                               hearth_err *err);
/* The same in buffers of backend be (borrowed, must outlive the cache); NULL: host memory. */
hearth_status hearth_kv_create_on(hearth_backend *be, const hearth_model *m, int32_t n_slots, int32_t n_ctx, bool f16,
                                  hearth_kv **out, hearth_err *err);
/* The same with any cache scheme (backend/kv_type.h): quantized keys and values too. */
hearth_status hearth_kv_create_scheme(hearth_backend *be, const hearth_model *m, int32_t n_slots, int32_t n_ctx,
                                      hearth_kv_scheme scheme, hearth_kv **out, hearth_err *err);
void          hearth_kv_destroy(hearth_kv *kv); /* accepts NULL */
const hearth_kv_view *hearth_kv_view_of(const hearth_kv *kv);
size_t        hearth_kv_bytes(const hearth_kv *kv);
