/*
 * lora_fuse.c - merge an adapter into a Hugging Face checkpoint's weights (lora.h,
 * hearth_lora_fuse): mlx-bun's `fuse` verb, PEFT's merge_and_unload.
 *
 * The merged checkpoint is the source folder's files (config, tokenizer, templates, ...) and one
 * model.safetensors holding every tensor of the source, in its dtype, with each adapted
 * projection W [out][in] replaced by W + scale B A (computed in f32 per row, then rounded back to
 * the tensor's dtype: f32, f16 or bf16). Which tensor and rows an adapted projection is comes
 * from where the loaded model's weight points into the mapping, so prefixes (multimodal
 * wrappers) and Phi-3's fused qkv_proj / gate_up_proj (row slices of one tensor) need no name
 * rules. MLX-quantized bases are refused (their weights are not stored as floats); a GGUF base
 * has its own writer (lora_fuse_gguf.c).
 *
 * Files are written as <name>.tmp and renamed, so a failed fuse leaves no half-written
 * model.safetensors behind.
 */
#include "lora/lora.h"

#include "base/buf.h"
#include "model/model_internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const hearth_weight *weight_of(const hearth_layer *l, int mod) {
    const hearth_weight *w[HEARTH_LORA_N_MOD] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down};
    return w[mod];
}

static hearth_status copy_file(const char *src, const char *dst, hearth_err *err) {
    FILE *in = fopen(src, "rb"), *out = in ? fopen(dst, "wb") : NULL;
    hearth_status st = HEARTH_OK;
    char buf[1 << 16];
    size_t n;
    if (!in || !out) st = hearth_err_set(err, HEARTH_E_IO, -1, "cannot copy %s to %s: %s", src, dst, strerror(errno));
    while (!st && (n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n) st = hearth_err_set(err, HEARTH_E_IO, -1, "cannot write %s", dst);
    if (in) fclose(in);
    if (out && fclose(out) != 0 && !st) st = hearth_err_set(err, HEARTH_E_IO, -1, "cannot write %s", dst);
    return st;
}

/* The st tensor whose data holds w's rows, and w's first row in it; NULL when none does. */
static const hearth_st_tensor *find_rows(const hearth_st *st, const hearth_weight *w, int64_t *row0) {
    for (int64_t i = 0; i < hearth_st_n_tensors(st); i++) {
        const hearth_st_tensor *t = hearth_st_tensor_at(st, i);
        const uint8_t *b = t->data, *p = w->data;
        if (t->n_dims != 2 || t->shape[1] != w->ne0 || p < b || p >= b + t->n_bytes) continue;
        size_t row_bytes = (size_t)t->shape[1] * hearth_st_dtype_size(t->dtype);
        if ((size_t)(p - b) % row_bytes || row_bytes != w->row_bytes) continue;
        *row0 = (int64_t)((size_t)(p - b) / row_bytes);
        return t;
    }
    return NULL;
}

static float get_elem(hearth_st_dtype dt, const uint8_t *p) {
    if (dt == HEARTH_ST_F32) {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, p, 2);
    return dt == HEARTH_ST_F16 ? hearth_fp16_to_fp32(h) : hearth_bf16_to_fp32(h);
}

static void put_elem(hearth_st_dtype dt, uint8_t *p, float f) {
    if (dt == HEARTH_ST_F32) {
        memcpy(p, &f, 4);
        return;
    }
    uint16_t h = dt == HEARTH_ST_F16 ? hearth_fp32_to_fp16(f) : hearth_fp32_to_bf16(f);
    memcpy(p, &h, 2);
}

/* Element i of an adapter matrix kept as f16 (half) or f32. */
static float elem(bool half, const void *m, int64_t i) {
    return half ? hearth_fp16_to_fp32(((const uint16_t *)m)[i]) : ((const float *)m)[i];
}

/* W[row0 + o][i] += scale sum_k B[o][k] A[k][i] over the mat's rows of tensor bytes dst. */
static void add_delta(uint8_t *dst, hearth_st_dtype dt, int64_t n_in, int64_t row0, const hearth_lora_mat *mt) {
    size_t es = hearth_st_dtype_size(dt);
    for (int64_t o = 0; o < mt->n_out; o++) {
        uint8_t *row = dst + (size_t)(row0 + o) * (size_t)n_in * es;
        for (int64_t i = 0; i < n_in; i++) {
            float s = 0.0f;
            for (int32_t k = 0; k < mt->r; k++) s += elem(mt->half, mt->b, o * mt->r + k) * elem(mt->half, mt->a, (int64_t)k * n_in + i);
            put_elem(dt, row + (size_t)i * es, get_elem(dt, row + (size_t)i * es) + mt->scale * s);
        }
    }
}

hearth_status hearth_lora_fuse(const hearth_model *m, const hearth_lora *a, const char *src_dir, const char *out_dir,
                               hearth_err *err) {
    if (!m->st)
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "this fuse takes a Hugging Face safetensors base; a GGUF "
                              "base is merged into a GGUF file (hearth_lora_fuse_gguf)");
    hearth_status st = HEARTH_OK;
    /* every adapted projection must be a float row slice of one tensor */
    for (int32_t il = 0; il < a->n_layer; il++)
        for (int mod = 0; mod < HEARTH_LORA_N_MOD; mod++) {
            int64_t row0;
            if (a->mats[il][mod].r && !find_rows(m->st, weight_of(&m->layers[il], mod), &row0))
                return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "layer %d's %s is not a float tensor of the "
                                      "checkpoint (MLX-quantized weights are not fused)", il,
                                      hearth_lora_mod_name((hearth_lora_mod)mod));
        }
    if (mkdir(out_dir, 0755) != 0 && errno != EEXIST)
        return hearth_err_set(err, HEARTH_E_IO, -1, "cannot create %s: %s", out_dir, strerror(errno));
    char sp[4096], dp[4096], tmp[4200];
    DIR *d = opendir(src_dir);
    if (!d) return hearth_err_set(err, HEARTH_E_IO, -1, "cannot read %s: %s", src_dir, strerror(errno));
    struct dirent *de;
    while (!st && (de = readdir(d))) { /* the checkpoint's other files, as they are */
        size_t n = strlen(de->d_name);
        struct stat sb;
        snprintf(sp, sizeof sp, "%s/%s", src_dir, de->d_name);
        if (de->d_name[0] == '.' || stat(sp, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        if ((n > 12 && !strcmp(de->d_name + n - 12, ".safetensors")) || !strcmp(de->d_name, "model.safetensors.index.json"))
            continue;
        snprintf(dp, sizeof dp, "%s/%s", out_dir, de->d_name);
        st = copy_file(sp, dp, err);
    }
    closedir(d);
    if (st) return st;
    /* header: every tensor, sorted by name, back to back */
    hearth_buf h = {0};
    hearth_buf_puts(&h, "{\"__metadata__\":{\"format\":\"pt\"}");
    size_t off = 0;
    for (int64_t i = 0; i < hearth_st_n_tensors(m->st); i++) {
        const hearth_st_tensor *t = hearth_st_tensor_at(m->st, i);
        char ent[1024];
        int k = snprintf(ent, sizeof ent, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t->name, hearth_st_dtype_name(t->dtype));
        for (int dd = 0; dd < t->n_dims && k < (int)sizeof ent; dd++)
            k += snprintf(ent + k, sizeof ent - (size_t)k, "%s%lld", dd ? "," : "", (long long)t->shape[dd]);
        if (k < (int)sizeof ent)
            snprintf(ent + k, sizeof ent - (size_t)k, "],\"data_offsets\":[%zu,%zu]}", off, off + t->n_bytes);
        hearth_buf_puts(&h, ent);
        off += t->n_bytes;
    }
    hearth_buf_puts(&h, "}");
    while (h.len % 8) hearth_buf_puts(&h, " ");
    if (h.oom) {
        hearth_buf_fini(&h);
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    }
    snprintf(dp, sizeof dp, "%s/model.safetensors", out_dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", dp);
    FILE *f = fopen(tmp, "wb");
    uint64_t hl = h.len;
    uint8_t le[8];
    for (int b = 0; b < 8; b++) le[b] = (uint8_t)(hl >> (8 * b));
    if (!f || fwrite(le, 1, 8, f) != 8 || fwrite(h.p, 1, h.len, f) != h.len)
        st = hearth_err_set(err, HEARTH_E_IO, -1, "cannot write %s", tmp);
    hearth_buf_fini(&h);
    for (int64_t i = 0; !st && i < hearth_st_n_tensors(m->st); i++) {
        const hearth_st_tensor *t = hearth_st_tensor_at(m->st, i);
        uint8_t *data = NULL;
        for (int32_t il = 0; il < a->n_layer; il++)
            for (int mod = 0; mod < HEARTH_LORA_N_MOD; mod++) {
                const hearth_lora_mat *mt = &a->mats[il][mod];
                int64_t row0 = 0;
                if (!mt->r || find_rows(m->st, weight_of(&m->layers[il], mod), &row0) != t) continue;
                if (t->dtype != HEARTH_ST_F32 && t->dtype != HEARTH_ST_F16 && t->dtype != HEARTH_ST_BF16) {
                    st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "tensor '%s' is %s: hearth fuses into f32, "
                                        "f16 and bf16 weights", t->name, hearth_st_dtype_name(t->dtype));
                    continue;
                }
                if (!data && (data = malloc(t->n_bytes))) memcpy(data, t->data, t->n_bytes);
                if (!data) {
                    st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory merging '%s'", t->name);
                    continue;
                }
                add_delta(data, t->dtype, t->shape[1], row0, mt);
            }
        if (!st && fwrite(data ? data : t->data, 1, t->n_bytes, f) != t->n_bytes)
            st = hearth_err_set(err, HEARTH_E_IO, -1, "cannot write %s", tmp);
        free(data);
    }
    if (f && fclose(f) != 0 && !st) st = hearth_err_set(err, HEARTH_E_IO, -1, "cannot write %s", tmp);
    if (!st && rename(tmp, dp) != 0) st = hearth_err_set(err, HEARTH_E_IO, -1, "cannot rename %s: %s", tmp, strerror(errno));
    if (st) remove(tmp);
    return st;
}
