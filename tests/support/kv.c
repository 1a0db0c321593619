/* kv.c - contiguous per-slot KV storage for tests, benches and tools; see kv.h. */
#include "support/kv.h"
#include "base/size.h"

#include <stdlib.h>

struct hearth_kv {
    hearth_kv_view view;
    void          *mem;   /* owned: all layers' K then V */
    hearth_backend *be;   /* borrowed; NULL: mem is host memory */
    size_t         bytes;
    void         **ptrs;  /* owned: [2][n_layer], a KV-shared layer's alias its source's */
    int32_t       *table; /* owned: [n_slots][1], slot s is block s */
    void          *lin_mem; /* owned: the linear-attention layers' states [layer][n_slots][floats], or NULL */
    float        **lin_ptrs; /* owned [n_layer] */
    int32_t       *lin_len;  /* owned [n_slots] */
};

hearth_status hearth_kv_create(const hearth_model *m, int32_t n_slots, int32_t n_ctx, bool f16, hearth_kv **out,
                               hearth_err *err) {
    return hearth_kv_create_on(NULL, m, n_slots, n_ctx, f16, out, err);
}

hearth_status hearth_kv_create_on(hearth_backend *be, const hearth_model *m, int32_t n_slots, int32_t n_ctx, bool f16,
                                  hearth_kv **out, hearth_err *err) {
    return hearth_kv_create_scheme(be, m, n_slots, n_ctx, f16 ? HEARTH_KV_SCHEME_F16 : HEARTH_KV_SCHEME_F32, out, err);
}

hearth_status hearth_kv_create_scheme(hearth_backend *be, const hearth_model *m, int32_t n_slots, int32_t n_ctx,
                                      hearth_kv_scheme scheme, hearth_kv **out, hearth_err *err) {
    *out = NULL;
    const hearth_hparams *hp = hearth_model_hparams(m);
    if (n_slots <= 0 || n_ctx <= 0) return hearth_err_set(err, HEARTH_E_INVALID, -1, "empty KV cache");
    size_t kr = hearth_kv_row_bytes(scheme.k, (int64_t)hp->n_head_kv * hp->head_dim),
           vr = hearth_kv_row_bytes(scheme.v, (int64_t)hp->n_head_kv * hp->head_dim_v), per_layer_k, per_layer_v, total;
    if (!hearth_mul_size(kr, (size_t)n_ctx * (size_t)n_slots, &per_layer_k) ||
        !hearth_mul_size(vr, (size_t)n_ctx * (size_t)n_slots, &per_layer_v) ||
        !hearth_mul_size(per_layer_k + per_layer_v, (size_t)hearth_kv_n_cache_layers(m), &total))
        return hearth_err_set(err, HEARTH_E_LIMIT, -1, "KV cache size overflows");
    hearth_kv *kv = calloc(1, sizeof *kv);
    if (!kv) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    kv->ptrs = calloc(2 * (size_t)hp->n_layer, sizeof *kv->ptrs);
    kv->be = be;
    kv->mem = be ? hearth_buf_alloc(be, total) : aligned_alloc(64, (total + 63) & ~(size_t)63);
    kv->table = malloc((size_t)n_slots * sizeof *kv->table);
    if (!kv->ptrs || !kv->mem || !kv->table) {
        hearth_kv_destroy(kv);
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "cannot allocate %zu MiB of KV cache", total >> 20);
    }
    kv->bytes = total;
    char *p = kv->mem;
    for (int32_t il = 0; il < hp->n_layer; il++) {
        int32_t src = hearth_hparams_kv_layer(hp, il); /* below il when shared: already placed */
        if (hearth_hparams_is_linear(hp, il)) continue; /* a state slot instead (below) */
        if (src != il) {
            kv->ptrs[il] = kv->ptrs[src];
            kv->ptrs[hp->n_layer + il] = kv->ptrs[hp->n_layer + src];
            continue;
        }
        kv->ptrs[il] = p;
        p += per_layer_k;
        kv->ptrs[hp->n_layer + il] = p;
        p += per_layer_v;
    }
    for (int32_t s = 0; s < n_slots; s++) kv->table[s] = s;
    kv->view.n_slots = n_slots;
    kv->view.n_ctx = n_ctx;
    kv->view.n_blocks = n_slots;
    kv->view.blocks = (hearth_kv_blocks){.table = kv->table, .max_blocks = 1, .block_size = n_ctx};
    kv->view.k_type = scheme.k;
    kv->view.v_type = scheme.v;
    kv->view.k = kv->ptrs;
    kv->view.v = kv->ptrs + hp->n_layer;
    int64_t lf = hearth_hparams_lin_state_floats(hp), n_lin = 0;
    for (int32_t il = 0; il < hp->n_layer; il++) n_lin += hearth_hparams_is_linear(hp, il);
    if (lf > 0 && n_lin > 0) { /* a state slot per sequence slot in each linear-attention layer */
        size_t lb = (size_t)(lf * n_slots) * sizeof(float);
        kv->lin_mem = be ? hearth_buf_alloc(be, lb * (size_t)n_lin) : aligned_alloc(64, (lb * (size_t)n_lin + 63) & ~(size_t)63);
        kv->lin_ptrs = calloc((size_t)hp->n_layer, sizeof *kv->lin_ptrs);
        kv->lin_len = calloc((size_t)n_slots, sizeof *kv->lin_len);
        if (!kv->lin_mem || !kv->lin_ptrs || !kv->lin_len) {
            hearth_kv_destroy(kv);
            return hearth_err_set(err, HEARTH_E_NOMEM, -1, "cannot allocate the linear-attention states");
        }
        char *q = kv->lin_mem;
        for (int32_t il = 0; il < hp->n_layer; il++)
            if (hearth_hparams_is_linear(hp, il)) kv->lin_ptrs[il] = (float *)q, q += lb;
        kv->view.lin_state = kv->lin_ptrs;
        kv->view.lin_len = kv->lin_len;
        kv->bytes += lb * (size_t)n_lin;
    }
    *out = kv;
    return HEARTH_OK;
}

void hearth_kv_destroy(hearth_kv *kv) {
    if (!kv) return;
    if (kv->be) hearth_buf_free(kv->be, kv->mem);
    else free(kv->mem);
    if (kv->be) hearth_buf_free(kv->be, kv->lin_mem);
    else free(kv->lin_mem);
    free(kv->lin_ptrs);
    free(kv->lin_len);
    free(kv->ptrs);
    free(kv->table);
    free(kv);
}

const hearth_kv_view *hearth_kv_view_of(const hearth_kv *kv) { return &kv->view; }
size_t hearth_kv_bytes(const hearth_kv *kv) { return kv->bytes; }
