/*
 * facts.c - model facts from a GGUF header; see facts.h. Safetensors snapshots are in
 * facts_st.c. Only metadata and the tensor table are read: a 10 GB file costs a few pages.
 */
#include "store/facts.h"
#include "store/modality.h"

#include "model/arch.h"
#include "model/gguf.h"

#include <stdio.h>
#include <string.h>

static bool arch_u32(const hearth_gguf *g, const char *arch, const char *suffix, uint32_t *out) {
    char key[160];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return hearth_gguf_get_u32(g, key, out);
}

static void span_copy(char *dst, size_t n, hearth_span s) {
    size_t k = s.len < n - 1 ? s.len : n - 1;
    memcpy(dst, s.ptr, k);
    dst[k] = 0;
    for (size_t i = 0; i < k; i++)
        if ((unsigned char)dst[i] < 0x20) dst[i] = ' '; /* keep tables and logs one line */
}

static bool span_has(hearth_span s, const char *needle) {
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= s.len; i++)
        if (!memcmp(s.ptr + i, needle, n)) return true;
    return false;
}

/* general.file_type: llama.cpp's llama_ftype, the label a quantizer gave the whole file
 * (Q4_K_M mixes q4_K, q6_K and q8_0 tensors). Index = value; NULL = unknown. */
static const char *ftype_names[] = {
    "f32", "f16", "q4_0", "q4_1", NULL, NULL, NULL, "q8_0", "q5_0", "q5_1", "q2_K", "q3_K_S", "q3_K_M",
    "q3_K_L", "q4_K_S", "q4_K_M", "q5_K_S", "q5_K_M", "q6_K", "iq2_xxs", "iq2_xs", "q2_K_S", "iq3_xs",
    "iq3_xxs", "iq1_s", "iq4_nl", "iq3_s", "iq3_m", "iq2_s", "iq2_m", "iq4_xs", "iq1_m", "bf16",
};

/* Embedding-only architectures (encoders); decoders with a pooling key count too. */
static bool is_embed_arch(const char *arch) {
    static const char *names[] = {"bert", "nomic-bert", "nomic-bert-moe", "jina-bert-v2", "t5encoder", "neo-bert"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(arch, names[i])) return true;
    return false;
}

hearth_status hearth_facts_from_gguf(const hearth_gguf *g, hearth_model_facts *f, hearth_err *err) {
    memset(f, 0, sizeof *f);
    snprintf(f->format, sizeof f->format, "gguf");
    hearth_span s;
    if (!hearth_gguf_get_str(g, "general.architecture", &s) || s.len == 0 || s.len >= sizeof f->arch)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "no general.architecture");
    span_copy(f->arch, sizeof f->arch, s);
    if (hearth_gguf_get_str(g, "general.name", &s)) span_copy(f->name, sizeof f->name, s);
    if (hearth_gguf_get_str(g, "general.license", &s)) span_copy(f->license, sizeof f->license, s);
    f->file_bytes = (int64_t)hearth_gguf_file_bytes(g);

    /* Tensors: parameters, weight bytes, the dominant type by bytes among matrices. */
    int64_t type_bytes[64] = {0}, embd_bytes = 0;
    bool untied_output = false;
    for (int64_t i = 0; i < hearth_gguf_n_tensors(g); i++) {
        const hearth_gguf_tensor *t = hearth_gguf_tensor_at(g, i);
        int64_t n = 1;
        for (int d = 0; d < t->n_dims; d++) n *= t->ne[d]; /* the reader checked this for overflow */
        f->n_params += n;
        f->weight_bytes += (int64_t)t->n_bytes;
        bool embd = !strcmp(t->name, "token_embd.weight");
        if (embd) embd_bytes = (int64_t)t->n_bytes;
        else if (t->n_dims >= 2 && (unsigned)t->type < 64) type_bytes[t->type] += (int64_t)t->n_bytes;
        if (!strcmp(t->name, "output.weight")) untied_output = true;
    }
    f->weight_read_bytes = f->weight_bytes - (untied_output ? embd_bytes : 0);
    int best = -1;
    for (int t = 0; t < 64; t++)
        if (type_bytes[t] > 0 && (best < 0 || type_bytes[t] > type_bytes[best])) best = t;
    uint32_t v;
    if (hearth_gguf_get_u32(g, "general.file_type", &v) && v < sizeof ftype_names / sizeof ftype_names[0] &&
        ftype_names[v])
        snprintf(f->quant, sizeof f->quant, "%s", ftype_names[v]);
    else /* the dominant type of the layer matrices */
        snprintf(f->quant, sizeof f->quant, "%s", best >= 0 ? hearth_gguf_tensor_type_name(best) : "-");

    /* Shape, with the loader's defaults. */
    hearth_hparams hp;
    memset(&hp, 0, sizeof hp);
    if (arch_u32(g, f->arch, "block_count", &v) && v <= 4096) hp.n_layer = (int32_t)v;
    if (arch_u32(g, f->arch, "embedding_length", &v) && v <= (1u << 20)) hp.n_embd = (int32_t)v;
    if (arch_u32(g, f->arch, "feed_forward_length", &v) && v <= (1u << 24)) hp.n_ff = (int32_t)v;
    if (arch_u32(g, f->arch, "attention.head_count", &v) && v <= 4096) hp.n_head = (int32_t)v;
    hp.n_head_kv = arch_u32(g, f->arch, "attention.head_count_kv", &v) && v <= 4096 ? (int32_t)v : hp.n_head;
    hp.head_dim = hp.n_head > 0 ? hp.n_embd / hp.n_head : 0;
    if (arch_u32(g, f->arch, "attention.key_length", &v) && v <= 4096) hp.head_dim = (int32_t)v;
    hp.head_dim_v = arch_u32(g, f->arch, "attention.value_length", &v) && v <= 4096 ? (int32_t)v : hp.head_dim;
    hp.n_ctx_train = arch_u32(g, f->arch, "context_length", &v) && v <= (1u << 30) ? (int32_t)v : 4096;
    const hearth_arch_info *ai = hearth_arch_by_gguf_name(f->arch);
    hp.swa_pattern = ai ? ai->swa_pattern : 0;
    if (arch_u32(g, f->arch, "attention.sliding_window", &v) && v <= (1u << 30)) hp.n_swa = (int32_t)v;
    if (arch_u32(g, f->arch, "attention.sliding_window_pattern", &v) && v <= 4096) hp.swa_pattern = (int32_t)v;

    f->n_layer = hp.n_layer;
    f->n_ctx_train = hp.n_ctx_train;
    f->n_swa = hp.n_swa;
    int64_t per_layer = (int64_t)hp.n_head_kv * (hp.head_dim + hp.head_dim_v) * 2;
    for (int32_t il = 0; il < hp.n_layer; il++) {
        f->kv_bytes_per_token += per_layer;
        if (hearth_hparams_is_swa(&hp, il)) {
            f->n_layer_swa++;
            f->kv_swa_bytes_per_token += per_layer;
        }
    }
    if (f->n_layer_swa == 0) f->n_swa = 0;
    /* models/forward.c's scratch: x, xb, q, k, v, attention out, gate, up (f32) per token */
    int64_t qw = (int64_t)hp.n_head * hp.head_dim, kw = (int64_t)hp.n_head_kv * hp.head_dim,
            vw = (int64_t)hp.n_head_kv * hp.head_dim_v, aw = (int64_t)hp.n_head * hp.head_dim_v;
    f->act_bytes_per_token = 4 * (2 * (int64_t)hp.n_embd + qw + kw + vw + aw + 2 * (int64_t)hp.n_ff + 1);

    hearth_gguf_type et;
    uint64_t n_tok = 0;
    if (hearth_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n_tok) && n_tok < (1u << 31)) f->n_vocab = (int32_t)n_tok;
    else if (arch_u32(g, f->arch, "vocab_size", &v) && v < (1u << 31)) f->n_vocab = (int32_t)v;

    if (ai) f->caps |= HEARTH_CAP_SUPPORTED;
    if (hearth_gguf_get_str(g, "tokenizer.chat_template", &s) && s.len) {
        f->caps |= HEARTH_CAP_CHAT;
        if (span_has(s, "tools")) f->caps |= HEARTH_CAP_TOOLS;
        if (span_has(s, "<think>") || span_has(s, "enable_thinking")) f->caps |= HEARTH_CAP_THINKING;
    }
    if (is_embed_arch(f->arch) || arch_u32(g, f->arch, "pooling_type", &v)) f->caps |= HEARTH_CAP_EMBED;
    return HEARTH_OK;
}

hearth_status hearth_facts_gguf(const char *path, hearth_model_facts *out, hearth_err *err) {
    hearth_gguf *g = NULL;
    hearth_status st = hearth_gguf_open(path, &g, err);
    if (st) {
        memset(out, 0, sizeof *out);
        return st;
    }
    st = hearth_facts_from_gguf(g, out, err);
    hearth_gguf_close(g);
    hearth_modality mo; /* a projector beside it (store/modality.h) */
    if (!st && hearth_modality_probe(path, &mo, NULL) == HEARTH_OK && mo.vision) out->caps |= HEARTH_CAP_VISION;
    return st;
}

static const char *cap_names[] = {"supported", "chat", "tools", "thinking", "vision", "embed"};

void hearth_facts_caps_str(uint32_t caps, char *buf, size_t n) {
    size_t off = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof cap_names / sizeof cap_names[0]; i++) {
        if (!(caps & (1u << i))) continue;
        int w = snprintf(buf + off, n - off, "%s%s", off ? "," : "", cap_names[i]);
        if (w < 0 || (size_t)w >= n - off) break;
        off += (size_t)w;
    }
}

uint32_t hearth_facts_caps_parse(const char *s) {
    uint32_t caps = 0;
    while (s && *s) {
        size_t len = strcspn(s, ",");
        for (size_t i = 0; i < sizeof cap_names / sizeof cap_names[0]; i++)
            if (strlen(cap_names[i]) == len && !strncmp(s, cap_names[i], len)) caps |= 1u << i;
        s += len;
        if (*s == ',') s++;
    }
    return caps;
}
