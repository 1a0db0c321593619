/*
 * lora_fuse_gguf.c - merge an adapter into a GGUF base (lora.h, hearth_lora_fuse_gguf): what
 * llama.cpp's export-lora does, for `hearth fuse` on a .gguf model.
 *
 * The merged file is the base's bytes with only the adapted tensors changed:
 *
 *   [0, kv_end)        header and metadata, copied as they are (architecture, vocab, template)
 *   tensor infos       the base's, in its order; an adapted tensor's type becomes F16 when the
 *                      base's is quantized (F32, F16 and BF16 stay), the offsets recomputed
 *   data               every tensor at the base's alignment: untouched ones copied byte for
 *                      byte, adapted ones row by row: dequantized to f32, + scale B A over
 *                      the rows the adapter covers, rounded to the new type
 *
 * Why F16 and not the base's quantized type: quantizing W + scale B A again to 4 bits adds
 * noise of the size of the update itself (export-lora writes F16 for the same reason). The
 * file grows by the adapted tensors' F16 size. Which tensor (and rows, for phi3's fused q|k|v)
 * an adapted projection is comes from where the loaded weight points into the mapping, as the
 * safetensors fuse does; the adapter's rows are already in the GGUF order (lora_load.c permutes
 * a PEFT adapter's q and k for a llama GGUF). A value beyond f16's range is refused, naming
 * the tensor. The file is written as <out>.tmp and renamed: a failed fuse leaves no half file.
 */
#include "lora/lora.h"

#include "model/model_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An adapted projection's rows in a tensor of the base. */
typedef struct {
    const hearth_lora_mat *mt;
    int64_t                row0;
} fuse_part;

typedef struct {
    const hearth_gguf_tensor *t;
    hearth_type               out;    /* the merged tensor's type */
    fuse_part                 part[3]; /* up to phi3's q, k, v */
    int                       n_part;
} fuse_tensor;

static const hearth_weight *weight_of(const hearth_layer *l, int mod) {
    const hearth_weight *w[HEARTH_LORA_N_MOD] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down};
    return w[mod];
}

static bool put(FILE *f, const void *p, size_t n) { return n == 0 || fwrite(p, 1, n, f) == n; }
static bool put_u32(FILE *f, uint32_t v) { return put(f, &v, 4); }
static bool put_u64(FILE *f, uint64_t v) { return put(f, &v, 8); }
static bool pad_to(FILE *f, uint64_t *pos, size_t align) {
    static const uint8_t zero[256];
    while (*pos % align) {
        size_t n = align - (size_t)(*pos % align);
        if (n > sizeof zero) n = sizeof zero;
        if (!put(f, zero, n)) return false;
        *pos += n;
    }
    return true;
}

static float elem(bool half, const void *m, int64_t i) {
    return half ? hearth_fp16_to_fp32(((const uint16_t *)m)[i]) : ((const float *)m)[i];
}

/* Row r of ft merged into dst (ne0 values of ft->out); false when a value does not fit f16. */
static bool merge_row(const fuse_tensor *ft, int64_t r, float *row, void *dst) {
    const hearth_gguf_tensor *t = ft->t;
    const int64_t ne0 = t->ne[0];
    const size_t rb = hearth_row_size(t->type, ne0);
    hearth_lora_to_f32(t->type, (const uint8_t *)t->data + (size_t)r * rb, row, ne0);
    for (int p = 0; p < ft->n_part; p++) {
        const hearth_lora_mat *mt = ft->part[p].mt;
        const int64_t o = r - ft->part[p].row0;
        if (o < 0 || o >= mt->n_out) continue;
        for (int64_t i = 0; i < ne0; i++) {
            float s = 0.0f;
            for (int32_t k = 0; k < mt->r; k++) s += elem(mt->half, mt->b, o * mt->r + k) * elem(mt->half, mt->a, (int64_t)k * ne0 + i);
            row[i] += mt->scale * s;
        }
    }
    for (int64_t i = 0; i < ne0; i++) {
        if (ft->out == HEARTH_TYPE_F32) ((float *)dst)[i] = row[i];
        else if (ft->out == HEARTH_TYPE_BF16) ((uint16_t *)dst)[i] = hearth_fp32_to_bf16(row[i]);
        else if (!(row[i] >= -65504.0f && row[i] <= 65504.0f)) return false;
        else ((uint16_t *)dst)[i] = hearth_fp32_to_fp16(row[i]);
    }
    return true;
}

hearth_status hearth_lora_fuse_gguf(const hearth_model *m, const hearth_lora *a, const char *out_path,
                                    hearth_err *err) {
    const hearth_gguf *g = m->gguf;
    if (!g) return hearth_err_set(err, HEARTH_E_INVALID, -1, "fuse_gguf takes a GGUF base");
    const int64_t n_t = hearth_gguf_n_tensors(g);
    fuse_tensor *ft = calloc((size_t)(n_t ? n_t : 1), sizeof *ft);
    if (!ft) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    hearth_status st = HEARTH_OK;
    for (int64_t i = 0; i < n_t; i++) ft[i].t = hearth_gguf_tensor_at(g, i), ft[i].out = ft[i].t->type;
    /* every adapted projection: a row slice of one tensor of the file */
    for (int32_t il = 0; il < a->n_layer && !st; il++)
        for (int mod = 0; mod < HEARTH_LORA_N_MOD && !st; mod++) {
            const hearth_lora_mat *mt = &a->mats[il][mod];
            if (!mt->r) continue;
            const hearth_weight *w = weight_of(&m->layers[il], mod);
            const uint8_t *p = w->data;
            int64_t i = 0;
            while (i < n_t && !(ft[i].t->ne[0] == w->ne0 && p >= (const uint8_t *)ft[i].t->data &&
                                p < (const uint8_t *)ft[i].t->data + ft[i].t->n_bytes))
                i++;
            if (i == n_t || ft[i].n_part == 3) {
                st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "layer %d's %s is not a tensor of the GGUF file",
                                    il, hearth_lora_mod_name((hearth_lora_mod)mod));
                break;
            }
            ft[i].part[ft[i].n_part++] = (fuse_part){mt, (int64_t)((size_t)(p - (const uint8_t *)ft[i].t->data) /
                                                                   w->row_bytes)};
            if (ft[i].out != HEARTH_TYPE_F32 && ft[i].out != HEARTH_TYPE_BF16) ft[i].out = HEARTH_TYPE_F16;
        }
    size_t plen = strlen(out_path);
    char *tmp = malloc(plen + 5);
    FILE *f = NULL;
    float *row = NULL;
    void *dst = NULL;
    if (!st && !tmp) st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    if (!st) {
        snprintf(tmp, plen + 5, "%s.tmp", out_path);
        f = fopen(tmp, "wb");
        if (!f) st = hearth_err_set(err, HEARTH_E_IO, -1, "cannot create %s: %s", tmp, strerror(errno));
    }
    const size_t align = hearth_gguf_alignment(g);
    bool ok = !st;
    /* header and metadata as they are, then the tensor infos with the new types and offsets */
    if (ok) ok = put(f, hearth_gguf_bytes(g), hearth_gguf_kv_end(g));
    uint64_t pos = hearth_gguf_kv_end(g), off = 0;
    int64_t widest = 1;
    for (int64_t i = 0; ok && i < n_t; i++) {
        const hearth_gguf_tensor *t = ft[i].t;
        size_t nl = strlen(t->name);
        ok = put_u64(f, nl) && put(f, t->name, nl) && put_u32(f, (uint32_t)t->n_dims);
        for (int d = 0; ok && d < t->n_dims; d++) ok = put_u64(f, (uint64_t)t->ne[d]);
        ok = ok && put_u32(f, (uint32_t)ft[i].out) && put_u64(f, off);
        pos += 8 + nl + 4 + 8 * (uint64_t)t->n_dims + 4 + 8;
        size_t bytes = ft[i].n_part ? hearth_row_size(ft[i].out, t->ne[0]) * (size_t)(t->ne[1] * t->ne[2] * t->ne[3])
                                    : t->n_bytes;
        off += (bytes + align - 1) / align * align;
        if (t->ne[0] > widest) widest = t->ne[0];
    }
    ok = ok && pad_to(f, &pos, align);
    row = ok ? malloc((size_t)widest * sizeof(float)) : NULL;
    dst = ok ? malloc((size_t)widest * sizeof(float)) : NULL;
    if (ok && (!row || !dst)) st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory"), ok = false;
    for (int64_t i = 0; ok && i < n_t; i++) {
        const hearth_gguf_tensor *t = ft[i].t;
        if (!ft[i].n_part) {
            ok = put(f, t->data, t->n_bytes);
            pos += t->n_bytes;
        } else {
            const size_t ob = hearth_row_size(ft[i].out, t->ne[0]);
            for (int64_t r = 0; ok && r < t->ne[1] * t->ne[2] * t->ne[3]; r++) {
                if (!merge_row(&ft[i], r, row, dst)) {
                    st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "fuse: merged tensor '%s' has a value beyond "
                                        "f16's range (65504) in row %lld", t->name, (long long)r);
                    ok = false;
                    break;
                }
                ok = put(f, dst, ob);
                pos += ob;
            }
        }
        ok = ok && pad_to(f, &pos, align);
    }
    if (f && fclose(f) != 0) ok = false;
    if (!ok && !st) st = hearth_err_set(err, HEARTH_E_IO, -1, "cannot write %s: %s", tmp, strerror(errno));
    if (!st && rename(tmp, out_path) != 0)
        st = hearth_err_set(err, HEARTH_E_IO, -1, "cannot rename %s to %s: %s", tmp, out_path, strerror(errno));
    if (st && tmp && f) remove(tmp);
    free(row);
    free(dst);
    free(tmp);
    free(ft);
    return st;
}
