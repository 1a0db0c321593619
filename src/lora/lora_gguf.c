/*
 * lora_gguf.c - GGUF LoRA adapters as llama.cpp's convert_lora_to_gguf.py writes them (lora.h).
 *
 * Keys: general.type = "adapter", adapter.type = "lora", adapter.lora.alpha, and
 * general.architecture, which must be the base model's. Tensors: blk.<N>.<name>.weight.lora_a
 * (ggml ne [n_in, r]: r rows of n_in) and .lora_b (ne [r, n_out]: n_out rows of r), f32, f16,
 * bf16 or any type hearth dequantizes. The weights are in the base GGUF's own row order (the
 * converter permutes llama's q and k as the base converter did), so a GGUF adapter applies to
 * a GGUF base as it is; on a safetensors base it is refused.
 */
#include "lora/lora.h"

#include "model/model_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const gguf_mods[][2] = {
    {"attn_q", "q_proj"},      {"attn_k", "k_proj"},   {"attn_v", "v_proj"},      {"attn_output", "o_proj"},
    {"ffn_gate", "gate_proj"}, {"ffn_up", "up_proj"},  {"ffn_down", "down_proj"},
};

hearth_status hearth_lora_load_gguf(hearth_lora_builder *L, const char *path) {
    hearth_gguf *g = NULL;
    hearth_status s = hearth_gguf_open(path, &g, L->err);
    if (s) return s;
    hearth_span v = {0};
    const hearth_arch_info *ai = hearth_arch_info_of(L->m->hp.arch);
    float alpha = 0;
    if (!hearth_gguf_get_str(g, "general.type", &v) || v.len != 7 || memcmp(v.ptr, "adapter", 7)) {
        s = hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "%s: general.type is not \"adapter\"", path);
        goto done;
    }
    if (!hearth_gguf_get_str(g, "adapter.type", &v) || v.len != 4 || memcmp(v.ptr, "lora", 4)) {
        s = hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "%s: adapter.type is not \"lora\"", path);
        goto done;
    }
    if (!hearth_gguf_get_str(g, "general.architecture", &v) || !ai || !ai->gguf_name ||
        strlen(ai->gguf_name) != v.len || memcmp(v.ptr, ai->gguf_name, v.len)) {
        s = hearth_err_set(L->err, HEARTH_E_INVALID, -1, "%s: the adapter is for architecture '%.*s' but the base "
                           "model is '%s'", path, (int)v.len, v.ptr ? v.ptr : "", ai && ai->gguf_name ? ai->gguf_name : "?");
        goto done;
    }
    if (!L->m->gguf) {
        s = hearth_err_set(L->err, HEARTH_E_INVALID, -1, "%s: a GGUF adapter applies to a GGUF base model (its q and "
                           "k rows are in the GGUF order); use the PEFT adapter with a safetensors base", path);
        goto done;
    }
    if (!hearth_gguf_get_f32(g, "adapter.lora.alpha", &alpha)) {
        s = hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "%s: no adapter.lora.alpha", path);
        goto done;
    }
    for (int64_t i = 0; i < hearth_gguf_n_tensors(g); i++) {
        const hearth_gguf_tensor *t = hearth_gguf_tensor_at(g, i);
        size_t n = strlen(t->name);
        int il = -1, off = 0;
        if (sscanf(t->name, "blk.%d.%n", &il, &off) != 1 || off == 0 || n < 7 ||
            (strcmp(t->name + n - 7, ".lora_a") && strcmp(t->name + n - 7, ".lora_b"))) {
            s = hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "adapter tensor '%s' is not a LoRA matrix of a "
                               "decoder layer (blk.N.<name>.weight.lora_a / lora_b)", t->name);
            goto done;
        }
        if (t->name[n - 1] == 'b') continue; /* read with its lora_a */
        char base[256], other[300];
        snprintf(base, sizeof base, "%.*s", (int)(n - 7), t->name);
        snprintf(other, sizeof other, "%s.lora_b", base);
        const hearth_gguf_tensor *b = hearth_gguf_find_tensor(g, other);
        if (!b) {
            s = hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "adapter tensor '%s' has no '%s'", t->name, other);
            goto done;
        }
        const char *mod = NULL, *kind = base + off; /* "attn_q.weight" */
        for (size_t k = 0; k < sizeof gguf_mods / sizeof gguf_mods[0]; k++) {
            size_t lk = strlen(gguf_mods[k][0]);
            if (!strncmp(kind, gguf_mods[k][0], lk) && !strcmp(kind + lk, ".weight")) mod = gguf_mods[k][1];
        }
        if (!mod) {
            s = hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "adapter tensor '%s' adapts '%s': hearth applies "
                               "adapters to attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up and ffn_down only",
                               t->name, kind);
            goto done;
        }
        if (t->n_dims != 2 || b->n_dims != 2 || t->ne[1] != b->ne[0]) {
            s = hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "adapter tensors '%s' / '%s' are not [n_in, r] / [r, n_out]",
                               t->name, b->name);
            goto done;
        }
        int64_t r = t->ne[1], n_in = t->ne[0], n_out = b->ne[1];
        float *pa, *pb;
        if ((s = hearth_lora_add(L, t->name, il, mod, r, n_in, n_out, alpha / (float)r,
                                   hearth_lora_half_types(t->type, b->type), &pa, &pb))) goto done;
        if (!hearth_lora_to_f32(t->type, t->data, pa, r * n_in) || !hearth_lora_to_f32(b->type, b->data, pb, n_out * r)) {
            s = hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "adapter tensor '%s' or '%s' has a type hearth cannot "
                               "read (%s / %s)", t->name, b->name, hearth_type_name(t->type), hearth_type_name(b->type));
            goto done;
        }
    }
    s = HEARTH_OK;
done:
    hearth_gguf_close(g);
    return s;
}
