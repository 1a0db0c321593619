/*
 * bert_load.c - load a BERT-style encoder checkpoint folder (bert.h says which files and keys).
 *
 * config.json gives the shape (hidden_size, num_hidden_layers, num_attention_heads,
 * intermediate_size, vocab_size, max_position_embeddings, type_vocab_size, layer_norm_eps);
 * settings hearth does not compute (another hidden_act, relative position embeddings, another
 * model_type) are refused by name rather than run wrongly. model_type "roberta" and
 * "xlm-roberta" are the same layers with positions counted from pad_token_id + 1. Weights are
 * found by their transformers names, with or without the "bert." / "roberta." prefix a
 * ...For... head model adds. Matrices
 * and embedding tables are used in place in the mapping (copied when the writer left them
 * unaligned for their element type); bias and LayerNorm vectors become f32 copies. Every
 * tensor's shape is checked, and a missing or misshapen tensor is an error that names it. The
 * layers' matrices are then packed once, in f32 (f16 and bf16 converted exactly), for the
 * forward's GEMM (kernels/gemm_f32.h): query, key and value stacked into one weight.
 *
 * The sentence-transformers side: modules.json lists the modules; the Pooling module's folder
 * holds config.json with pooling_mode_cls_token / pooling_mode_mean_tokens /
 * pooling_mode_lasttoken (exactly one must be set; max and mean-sqrt-len pooling are refused), a
 * Normalize module turns L2 normalization on, and sentence_bert_config.json's max_seq_length
 * bounds the input (sentence-transformers truncates there).
 */
#include "models/bert_internal.h"

#include "base/file.h"
#include "base/log.h"
#include "base/size.h"
#include "kernels/gemm_f32.h"
#include "kernels/kernels.h"
#include "kernels/ref/ops_ref.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { MAX_JSON_BYTES = 4 << 20, MAX_TOKENIZER_BYTES = 64 << 20 };

hearth_bert_params hearth_bert_params_default(void) {
    return (hearth_bert_params){.n_threads = 0, .device = HEARTH_DEVICE_CPU, .max_batch_tokens = 8192};
}

static cJSON *read_json(const char *dir, const char *name) {
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) return NULL;
    char *text = hearth_file_read(path, MAX_JSON_BYTES, NULL);
    if (!text) return NULL;
    cJSON *j = cJSON_Parse(text);
    free(text);
    return j;
}

/* The model_type values this loader takes: BERT, and RoBERTa / XLM-R (the same layers; positions
 * counted from pad_token_id + 1, as their embeddings make position ids). */
static bool family_ok(const char *mt) {
    return !strcmp(mt, "bert") || !strcmp(mt, "roberta") || !strcmp(mt, "xlm-roberta") || !strcmp(mt, "modernbert") ||
           !strcmp(mt, "qwen3") || !strcmp(mt, "nomic_bert") || !strcmp(mt, "gemma3_text");
}

bool hearth_bert_probe(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return false;
    if (S_ISREG(st.st_mode)) return hearth_bert_probe_gguf(path);
    if (!S_ISDIR(st.st_mode)) return false;
    cJSON *cfg = read_json(path, "config.json");
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    bool ok = cJSON_IsString(mt) && family_ok(mt->valuestring);
    if (ok && (!strcmp(mt->valuestring, "qwen3") || !strcmp(mt->valuestring, "gemma3_text"))) {
        /* a chat model too: an embedding one only with modules.json */
        cJSON *mods = read_json(path, "modules.json");
        ok = cJSON_IsArray(mods);
        cJSON_Delete(mods);
    }
    cJSON_Delete(cfg);
    return ok;
}

typedef struct {
    hearth_bert *b;
    hearth_err  *err;
    const char  *pfx;   /* "" or "bert." */
} loader;

void *hearth_bert_keep(hearth_bert *b, void *p) {
    if (!p) return NULL;
    void **grown = realloc(b->owned, (size_t)(b->n_owned + 1) * sizeof *grown);
    if (!grown) {
        free(p);
        return NULL;
    }
    b->owned = grown;
    b->owned[b->n_owned++] = p;
    return p;
}

static const hearth_st_tensor *find(loader *L, const char *name) {
    char full[256];
    snprintf(full, sizeof full, "%s%s", L->pfx, name);
    return hearth_st_find(L->b->st, full);
}

/* Tensor name, shape [rows][cols] (rows 0: a vector of cols) into a matrix view or f32 vector. */
static hearth_status get_matrix(loader *L, const char *name, int64_t rows, int64_t cols, hearth_weight *w) {
    const hearth_st_tensor *t = find(L, name);
    if (!t) return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "tensor %s%s is missing", L->pfx, name);
    int type = hearth_st_dtype_to_type(t->dtype);
    if (type < 0)
        return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "tensor %s is %s (f32, f16 or bf16 only)", t->name,
                              hearth_st_dtype_name(t->dtype));
    if (t->n_dims != 2 || t->shape[0] != rows || t->shape[1] != cols)
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "tensor %s: shape is not [%lld, %lld]", t->name,
                              (long long)rows, (long long)cols);
    size_t esz = hearth_st_dtype_size(t->dtype);
    const void *data = t->data;
    if ((uintptr_t)data % esz) {
        void *copy = hearth_bert_keep(L->b, malloc(t->n_bytes));
        if (!copy) return hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory copying %s", t->name);
        memcpy(copy, data, t->n_bytes);
        data = copy;
    }
    *w = (hearth_weight){.type = (hearth_type)type, .ne0 = cols, .ne1 = rows, .row_bytes = (size_t)cols * esz,
                         .data = data};
    L->b->weight_bytes += t->n_bytes;
    return HEARTH_OK;
}

static hearth_status get_vector(loader *L, const char *name, int64_t n, const float **out) {
    const hearth_st_tensor *t = find(L, name);
    if (!t) return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "tensor %s%s is missing", L->pfx, name);
    int type = hearth_st_dtype_to_type(t->dtype);
    if (type < 0)
        return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "tensor %s is %s (f32, f16 or bf16 only)", t->name,
                              hearth_st_dtype_name(t->dtype));
    if (t->n_dims != 1 || t->shape[0] != n)
        return hearth_err_set(L->err, HEARTH_E_FORMAT, -1, "tensor %s: shape is not [%lld]", t->name, (long long)n);
    float *v = hearth_bert_keep(L->b, malloc((size_t)n * sizeof *v));
    if (!v) return hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory copying %s", t->name);
    size_t esz = hearth_st_dtype_size(t->dtype);
    const uint8_t *p = t->data;
    for (int64_t i = 0; i < n; i++) {
        if (t->dtype == HEARTH_ST_F32) memcpy(&v[i], p + i * esz, 4);
        else {
            uint16_t h;
            memcpy(&h, p + i * esz, 2);
            v[i] = t->dtype == HEARTH_ST_F16 ? hearth_fp16_to_fp32(h) : hearth_bf16_to_fp32(h);
        }
    }
    L->b->weight_bytes += t->n_bytes;
    *out = v;
    return HEARTH_OK;
}

static int64_t cfg_int(const cJSON *cfg, const char *key, int64_t dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : dflt;
}

static bool cfg_true(const cJSON *cfg, const char *key) {
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, key));
}

static double cfg_num(const cJSON *cfg, const char *key, double dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* Two rotary bases, full-attention and sliding layers: rope_parameters of transformers 5, else
 * the keys g_key / l_key of older configs (defaults g_dflt / l_dflt). */
static void read_rope_bases(hearth_bert *b, const cJSON *cfg, const char *g_key, double g_dflt, const char *l_key,
                            double l_dflt) {
    double g_theta = cfg_num(cfg, g_key, g_dflt), l_theta = cfg_num(cfg, l_key, l_dflt);
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(cfg, "rope_parameters");
    g_theta = cfg_num(cJSON_GetObjectItemCaseSensitive(rp, "full_attention"), "rope_theta", g_theta);
    l_theta = cfg_num(cJSON_GetObjectItemCaseSensitive(rp, "sliding_attention"), "rope_theta", l_theta);
    hearth_rope_inv_freq(b->inv_freq_global, b->head_dim, (float)g_theta, 1.0f);
    hearth_rope_inv_freq(b->inv_freq_local, b->head_dim, (float)l_theta, 1.0f);
}

/* The layers (allocated here) and which of them slide: layer_types when there, else (every > 0)
 * all but every every-th layer from 0; every <= 0 makes layer_types required. */
static hearth_status read_layer_types(hearth_bert *b, const cJSON *cfg, int64_t every, hearth_err *err) {
    if (!(b->layers = calloc((size_t)b->n_layer, sizeof *b->layers)))
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(cfg, "layer_types");
    if ((types || every <= 0) && cJSON_GetArraySize(types) != b->n_layer)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json: layer_types has %d entries for %lld layers",
                              cJSON_GetArraySize(types), (long long)b->n_layer);
    for (int64_t il = 0; il < b->n_layer; il++) {
        const cJSON *t = types ? cJSON_GetArrayItem(types, (int)il) : NULL;
        b->layers[il].sliding = t ? cJSON_IsString(t) && !strcmp(t->valuestring, "sliding_attention")
                                  : every > 0 && il % every != 0;
    }
    return HEARTH_OK;
}

/* ModernBERT's config.json: the shape, hidden_activation, which layers attend globally
 * (layer_types, else every global_attn_every_n_layers-th from layer 0) and the two rotary bases
 * (rope_parameters of transformers 5, else global_rope_theta / local_rope_theta). */
static hearth_status read_modern_shape(hearth_bert *b, const cJSON *cfg, hearth_err *err) {
    b->modern = true;
    b->d = cfg_int(cfg, "hidden_size", 0);
    b->n_layer = cfg_int(cfg, "num_hidden_layers", 0);
    b->n_head = (int32_t)cfg_int(cfg, "num_attention_heads", 0);
    b->d_ff = cfg_int(cfg, "intermediate_size", 0);
    b->n_vocab = (int32_t)cfg_int(cfg, "vocab_size", 0);
    b->n_pos = (int32_t)cfg_int(cfg, "max_position_embeddings", 8192);
    b->eps = (float)cfg_num(cfg, "norm_eps", 1e-5);
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(cfg, "hidden_activation");
    if (cJSON_IsString(act) && strcmp(act->valuestring, "gelu"))
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "hidden_activation '%.60s' is not supported (gelu only)",
                              act->valuestring);
    if (b->d <= 0 || b->d > 65536 || b->n_layer <= 0 || b->n_layer > 1024 || b->n_head <= 0 || b->d % b->n_head ||
        b->d_ff <= 0 || b->d_ff > (1 << 20) || b->n_vocab <= 0 || b->n_pos <= 0 || b->n_pos > (1 << 20) ||
        !(b->eps >= 0) || (b->d / b->n_head) % 2 || b->d / b->n_head > 512)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json: a missing or impossible ModernBERT shape");
    b->head_dim = (int32_t)(b->d / b->n_head);
    b->max_tokens = b->n_pos;
    b->window = (int32_t)(cfg_int(cfg, "local_attention", 128) / 2);
    read_rope_bases(b, cfg, "global_rope_theta", 160000.0, "local_rope_theta", 10000.0);
    const int64_t every = cfg_int(cfg, "global_attn_every_n_layers", 3);
    return read_layer_types(b, cfg, every > 0 ? every : 1, err);
}

/* Qwen3's config.json (a decoder used for embeddings, as Qwen3-Embedding is): the shape,
 * grouped-query heads, head_dim, rms_norm_eps, the rotary base; silu only, no sliding window. */
static hearth_status read_qwen3_shape(hearth_bert *b, const cJSON *cfg, hearth_err *err) {
    b->decoder = true;
    b->d = cfg_int(cfg, "hidden_size", 0);
    b->n_layer = cfg_int(cfg, "num_hidden_layers", 0);
    b->n_head = (int32_t)cfg_int(cfg, "num_attention_heads", 0);
    b->n_head_kv = (int32_t)cfg_int(cfg, "num_key_value_heads", b->n_head);
    b->head_dim = (int32_t)cfg_int(cfg, "head_dim", b->n_head > 0 ? b->d / b->n_head : 0);
    b->d_ff = cfg_int(cfg, "intermediate_size", 0);
    b->n_vocab = (int32_t)cfg_int(cfg, "vocab_size", 0);
    b->n_pos = (int32_t)cfg_int(cfg, "max_position_embeddings", 32768);
    b->eps = (float)cfg_num(cfg, "rms_norm_eps", 1e-6);
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(cfg, "hidden_act");
    if (cJSON_IsString(act) && strcmp(act->valuestring, "silu"))
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "hidden_act '%.60s' is not supported (silu only)",
                              act->valuestring);
    if (cfg_true(cfg, "use_sliding_window") || cfg_true(cfg, "attention_bias"))
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "Qwen3 with a sliding window or attention biases is not "
                              "supported");
    if (b->d <= 0 || b->d > 65536 || b->n_layer <= 0 || b->n_layer > 1024 || b->n_head <= 0 || b->n_head_kv <= 0 ||
        b->n_head % b->n_head_kv || b->head_dim <= 0 || b->head_dim > 512 || b->head_dim % 2 || b->d_ff <= 0 ||
        b->d_ff > (1 << 20) || b->n_vocab <= 0 || b->n_pos <= 0 || !(b->eps >= 0))
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json: a missing or impossible Qwen3 shape");
    b->max_tokens = b->n_pos;
    double theta = cfg_num(cfg, "rope_theta", 1000000.0);
    theta = cfg_num(cJSON_GetObjectItemCaseSensitive(cfg, "rope_parameters"), "rope_theta", theta);
    hearth_rope_inv_freq(b->inv_freq_global, b->head_dim, (float)theta, 1.0f);
    if (!(b->layers = calloc((size_t)b->n_layer, sizeof *b->layers)))
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    return HEARTH_OK;
}

/* EmbeddingGemma's config.json (transformers' gemma3_text with use_bidirectional_attention): the
 * Qwen3-like shape, query_pre_attn_scalar, sliding_window (a sliding layer's query i sees keys
 * with |i - j| < sliding_window / 2 + 1), layer_types, the two rotary bases (rope_parameters of
 * transformers 5, else rope_theta / rope_local_base_freq), hidden_activation gelu_pytorch_tanh.
 * A causal gemma3_text (a chat model) and soft-capped attention are refused. */
static hearth_status read_gemma_shape(hearth_bert *b, const cJSON *cfg, hearth_err *err) {
    b->decoder = b->gemma = true;
    b->d = cfg_int(cfg, "hidden_size", 0);
    b->n_layer = cfg_int(cfg, "num_hidden_layers", 0);
    b->n_head = (int32_t)cfg_int(cfg, "num_attention_heads", 0);
    b->n_head_kv = (int32_t)cfg_int(cfg, "num_key_value_heads", b->n_head);
    b->head_dim = (int32_t)cfg_int(cfg, "head_dim", 256);
    b->d_ff = cfg_int(cfg, "intermediate_size", 0);
    b->n_vocab = (int32_t)cfg_int(cfg, "vocab_size", 0);
    b->n_pos = (int32_t)cfg_int(cfg, "max_position_embeddings", 2048);
    b->eps = (float)cfg_num(cfg, "rms_norm_eps", 1e-6);
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(cfg, "hidden_activation");
    if (cJSON_IsString(act) && strcmp(act->valuestring, "gelu_pytorch_tanh"))
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "hidden_activation '%.60s' is not supported "
                              "(gelu_pytorch_tanh only)", act->valuestring);
    if (!cfg_true(cfg, "use_bidirectional_attention"))
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "gemma3_text without use_bidirectional_attention is a "
                              "chat model, not an embedding model");
    if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(cfg, "attn_logit_softcapping")))
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "gemma3_text with attn_logit_softcapping is not supported");
    if (b->d <= 0 || b->d > 65536 || b->n_layer <= 0 || b->n_layer > 1024 || b->n_head <= 0 || b->n_head_kv <= 0 ||
        b->n_head % b->n_head_kv || b->head_dim <= 0 || b->head_dim > 512 || b->head_dim % 2 || b->d_ff <= 0 ||
        b->d_ff > (1 << 20) || b->n_vocab <= 0 || b->n_pos <= 0 || !(b->eps >= 0))
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json: a missing or impossible Gemma 3 shape");
    b->max_tokens = b->n_pos;
    b->embed_scale = (float)sqrt((double)b->d);
    b->attn_scale = (float)(1.0 / sqrt(cfg_num(cfg, "query_pre_attn_scalar", (double)b->head_dim)));
    b->window = (int32_t)(cfg_int(cfg, "sliding_window", 512) / 2);
    read_rope_bases(b, cfg, "rope_theta", 1000000.0, "rope_local_base_freq", 10000.0);
    return read_layer_types(b, cfg, 0, err);
}

/* NomicBERT's config.json (nomic-embed-text's NomicBertConfig, GPT-2 style keys): n_embd,
 * n_layer, n_head, n_inner, n_positions, vocab_size, type_vocab_size, layer_norm_epsilon,
 * rotary_emb_base. The settings of the layout bert.c computes are required as they are: post-LN
 * (prenorm false), SwiGLU, rotary over the whole head (rotary_emb_fraction 1), rotate-half (not
 * interleaved), no q/k/v or MLP biases; anything else is refused by name. */
static hearth_status read_nomic_shape(hearth_bert *b, const cJSON *cfg, hearth_err *err) {
    b->rope = true;
    b->d = cfg_int(cfg, "n_embd", 0);
    b->n_layer = cfg_int(cfg, "n_layer", 0);
    b->n_head = (int32_t)cfg_int(cfg, "n_head", 0);
    b->d_ff = cfg_int(cfg, "n_inner", 4 * b->d);
    b->n_vocab = (int32_t)cfg_int(cfg, "vocab_size", 0);
    b->n_pos = (int32_t)cfg_int(cfg, "n_positions", 2048);
    b->n_type = (int32_t)cfg_int(cfg, "type_vocab_size", 2);
    b->eps = (float)cfg_num(cfg, "layer_norm_epsilon", 1e-12);
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(cfg, "activation_function");
    if (cJSON_IsString(act) && strcmp(act->valuestring, "swiglu"))
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "activation_function '%.60s' is not supported (swiglu "
                              "only)", act->valuestring);
    static const char *const off[] = {"prenorm", "rotary_emb_interleaved", "qkv_proj_bias", "mlp_fc1_bias",
                                      "mlp_fc2_bias"};
    for (int i = 0; i < 5; i++)
        if (cfg_true(cfg, off[i]))
            return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "NomicBERT with %s is not supported", off[i]);
    if (cfg_num(cfg, "rotary_emb_fraction", 1.0) != 1.0)
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "NomicBERT with rotary_emb_fraction %g is not supported "
                              "(1 only)", cfg_num(cfg, "rotary_emb_fraction", 1.0));
    if (b->d <= 0 || b->d > 65536 || b->n_layer <= 0 || b->n_layer > 1024 || b->n_head <= 0 || b->d % b->n_head ||
        (b->d / b->n_head) % 2 || b->d / b->n_head > 512 || b->d_ff <= 0 || b->d_ff > (1 << 20) || b->n_vocab <= 0 ||
        b->n_pos <= 0 || b->n_pos > (1 << 20) || b->n_type <= 0 || b->n_type > 1024 || !(b->eps >= 0))
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json: a missing or impossible NomicBERT shape");
    b->head_dim = (int32_t)(b->d / b->n_head);
    b->max_tokens = b->n_pos;
    hearth_rope_inv_freq(b->inv_freq_global, b->head_dim, (float)cfg_num(cfg, "rotary_emb_base", 10000.0), 1.0f);
    return HEARTH_OK;
}

static hearth_status read_shape(hearth_bert *b, const char *dir, hearth_err *err) {
    hearth_status st = HEARTH_OK;
    cJSON *cfg = read_json(dir, "config.json");
    if (!cfg) return hearth_err_set(err, HEARTH_E_NOTFOUND, -1, "'%.200s' has no readable config.json", dir);
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(cfg, "hidden_act");
    const cJSON *pe = cJSON_GetObjectItemCaseSensitive(cfg, "position_embedding_type");
    if (!cJSON_IsString(mt) || !family_ok(mt->valuestring)) {
        st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "model_type '%.60s' is not an encoder hearth embeds with "
                            "(bert, roberta, xlm-roberta, modernbert, qwen3, nomic_bert, gemma3_text)", cJSON_IsString(mt) ? mt->valuestring : "?");
        goto out;
    }
    snprintf(b->family, sizeof b->family, "%s", mt->valuestring);
    if (!strcmp(mt->valuestring, "modernbert")) {
        st = read_modern_shape(b, cfg, err);
        goto out;
    }
    if (!strcmp(mt->valuestring, "qwen3")) {
        st = read_qwen3_shape(b, cfg, err);
        goto out;
    }
    if (!strcmp(mt->valuestring, "nomic_bert")) {
        st = read_nomic_shape(b, cfg, err);
        goto out;
    }
    if (!strcmp(mt->valuestring, "gemma3_text")) {
        st = read_gemma_shape(b, cfg, err);
        goto out;
    }
    b->pos_offset = strcmp(mt->valuestring, "bert") ? (int32_t)cfg_int(cfg, "pad_token_id", 1) + 1 : 0;
    if (cJSON_IsString(act) && strcmp(act->valuestring, "gelu")) {
        st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "hidden_act '%.60s' is not supported (gelu only)",
                            act->valuestring);
        goto out;
    }
    if (cJSON_IsString(pe) && strcmp(pe->valuestring, "absolute")) {
        st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "position_embedding_type '%.60s' is not supported "
                            "(absolute only)", pe->valuestring);
        goto out;
    }
    b->d = cfg_int(cfg, "hidden_size", 0);
    b->n_layer = cfg_int(cfg, "num_hidden_layers", 0);
    b->n_head = (int32_t)cfg_int(cfg, "num_attention_heads", 0);
    b->d_ff = cfg_int(cfg, "intermediate_size", 0);
    b->n_vocab = (int32_t)cfg_int(cfg, "vocab_size", 0);
    b->n_pos = (int32_t)cfg_int(cfg, "max_position_embeddings", 512);
    b->n_type = (int32_t)cfg_int(cfg, "type_vocab_size", 2);
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(cfg, "layer_norm_eps");
    b->eps = cJSON_IsNumber(eps) ? (float)eps->valuedouble : 1e-12f;
    if (b->d <= 0 || b->d > 65536 || b->n_layer <= 0 || b->n_layer > 1024 || b->n_head <= 0 ||
        b->d % b->n_head || b->d_ff <= 0 || b->d_ff > (1 << 20) || b->n_vocab <= 0 || b->n_pos <= 0 ||
        b->n_pos > (1 << 20) || b->n_type <= 0 || b->n_type > 1024 || !(b->eps >= 0)) {
        st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json: a missing or impossible shape (hidden_size %lld, "
                            "layers %lld, heads %d, intermediate_size %lld, vocab %d)", (long long)b->d,
                            (long long)b->n_layer, b->n_head, (long long)b->d_ff, b->n_vocab);
        goto out;
    }
    b->head_dim = (int32_t)(b->d / b->n_head);
    if (b->pos_offset < 0 || b->pos_offset >= b->n_pos) {
        st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json: pad_token_id %d leaves no positions of %d",
                            b->pos_offset - 1, b->n_pos);
        goto out;
    }
    b->max_tokens = b->n_pos - b->pos_offset;
out:
    cJSON_Delete(cfg);
    return st;
}

/* modules.json, the Pooling module's config.json, sentence_bert_config.json. */
static hearth_status read_sentence_config(hearth_bert *b, const char *dir, hearth_err *err) {
    hearth_status st = HEARTH_OK;
    b->pooling = HEARTH_POOLING_MEAN;
    b->normalize = false;
    cJSON *mods = read_json(dir, "modules.json"), *pool = NULL, *sb = NULL;
    const cJSON *m;
    cJSON_ArrayForEach(m, mods) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(m, "type");
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(m, "path");
        if (!cJSON_IsString(type)) continue;
        const char *dot = strrchr(type->valuestring, '.');
        const char *kind = dot ? dot + 1 : type->valuestring;
        if (!strcmp(kind, "Normalize")) b->normalize = true;
        else if (!strcmp(kind, "Pooling") && cJSON_IsString(path)) {
            if (strstr(path->valuestring, "..") || path->valuestring[0] == '/') {
                st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "modules.json: pooling path '%.80s' leaves the folder",
                                    path->valuestring);
                goto out;
            }
            char name[512];
            snprintf(name, sizeof name, "%s/config.json", path->valuestring);
            cJSON_Delete(pool);
            pool = read_json(dir, name);
            if (!pool) {
                st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "modules.json names a Pooling module, but %.200s "
                                    "cannot be read", name);
                goto out;
            }
        } else if (strcmp(kind, "Transformer") && strcmp(kind, "Dense")) { /* Dense: load_dense */
            st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "modules.json: module %.80s is not supported "
                                "(Transformer, Pooling, Dense, Normalize)", type->valuestring);
            goto out;
        }
    }
    if (pool) {
        int n_set = 0;
        if (cfg_true(pool, "pooling_mode_mean_tokens")) { b->pooling = HEARTH_POOLING_MEAN; n_set++; }
        if (cfg_true(pool, "pooling_mode_cls_token")) { b->pooling = HEARTH_POOLING_CLS; n_set++; }
        if (cfg_true(pool, "pooling_mode_lasttoken")) { b->pooling = HEARTH_POOLING_LAST; n_set++; }
        const cJSON *mode = cJSON_GetObjectItemCaseSensitive(pool, "pooling_mode"); /* sentence-transformers 6.3 */
        if (cJSON_IsString(mode)) {
            const char *pm = mode->valuestring;
            if (!strcmp(pm, "mean")) { b->pooling = HEARTH_POOLING_MEAN; n_set++; }
            else if (!strcmp(pm, "cls")) { b->pooling = HEARTH_POOLING_CLS; n_set++; }
            else if (!strcmp(pm, "lasttoken")) { b->pooling = HEARTH_POOLING_LAST; n_set++; }
            else {
                st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "pooling: pooling_mode '%.40s' is not supported "
                                    "(mean, cls, lasttoken)", pm);
                goto out;
            }
        }
        if (cfg_true(pool, "pooling_mode_max_tokens") || cfg_true(pool, "pooling_mode_mean_sqrt_len_tokens") ||
            cfg_true(pool, "pooling_mode_weightedmean_tokens")) {
            st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "pooling: only mean, CLS and last-token pooling are "
                                "supported");
            goto out;
        }
        if (n_set != 1) {
            st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "pooling: exactly one of mean, CLS and last-token "
                                "pooling must be set (%d are)", n_set);
            goto out;
        }
        int64_t wd = cfg_int(pool, "word_embedding_dimension", cfg_int(pool, "embedding_dimension", b->d));
        if (wd != b->d) {
            st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "pooling: word_embedding_dimension %lld, the model has %lld",
                                (long long)wd, (long long)b->d);
            goto out;
        }
    }
    sb = read_json(dir, "sentence_bert_config.json");
    int64_t msl = cfg_int(sb, "max_seq_length", 0);
    if (msl > 0 && msl < b->max_tokens) b->max_tokens = (int32_t)msl;
out:
    cJSON_Delete(sb);
    cJSON_Delete(pool);
    cJSON_Delete(mods);
    return st;
}

/* An optional vector (a ModernBERT bias with norm_bias / mlp_bias off): NULL when absent. */
static hearth_status get_vector_opt(loader *L, const char *name, int64_t n, const float **out) {
    *out = NULL;
    return find(L, name) ? get_vector(L, name, n, out) : HEARTH_OK;
}

static hearth_status bind_modern(loader *L) {
    hearth_bert *b = L->b;
    hearth_status st;
    L->pfx = find(L, "embeddings.tok_embeddings.weight") ? "" : "model.";
    if ((st = get_matrix(L, "embeddings.tok_embeddings.weight", b->n_vocab, b->d, &b->word)) ||
        (st = get_vector(L, "embeddings.norm.weight", b->d, &b->emb_ln_w)) ||
        (st = get_vector_opt(L, "embeddings.norm.bias", b->d, &b->emb_ln_b)) ||
        (st = get_vector(L, "final_norm.weight", b->d, &b->final_w)) ||
        (st = get_vector_opt(L, "final_norm.bias", b->d, &b->final_b)))
        return st;
    for (int64_t il = 0; il < b->n_layer; il++) {
        bert_layer *l = &b->layers[il];
        char n[10][96];
        const char *parts[] = {"attn_norm.weight", "attn_norm.bias", "attn.Wqkv.weight", "attn.Wqkv.bias", "attn.Wo.weight",
                               "attn.Wo.bias", "mlp_norm.weight", "mlp_norm.bias", "mlp.Wi.weight", "mlp.Wo.weight"};
        for (int i = 0; i < 10; i++) snprintf(n[i], sizeof n[i], "layers.%lld.%s", (long long)il, parts[i]);
        hearth_weight wqkv;
        if ((il > 0 && (st = get_vector(L, n[0], b->d, &l->ln1_w))) ||
            (il > 0 && (st = get_vector_opt(L, n[1], b->d, &l->ln1_b))) ||
            (st = get_matrix(L, n[2], 3 * b->d, b->d, &wqkv)) || (st = get_vector_opt(L, n[3], 3 * b->d, &l->bq)) ||
            (st = get_matrix(L, n[4], b->d, b->d, &l->wo)) || (st = get_vector_opt(L, n[5], b->d, &l->bo)) ||
            (st = get_vector(L, n[6], b->d, &l->ln2_w)) || (st = get_vector_opt(L, n[7], b->d, &l->ln2_b)) ||
            (st = get_matrix(L, n[8], 2 * b->d_ff, b->d, &l->w_up)) || (st = get_matrix(L, n[9], b->d, b->d_ff, &l->w_down)))
            return st;
        if (find(L, "layers.0.mlp.Wi.bias") || find(L, "layers.0.mlp.Wo.bias"))
            return hearth_err_set(L->err, HEARTH_E_UNSUPPORTED, -1, "ModernBERT with mlp_bias is not supported");
        l->wq = wqkv; /* the fused [3d][d] weight, packed as one in pack_layers */
    }
    return HEARTH_OK;
}

/* A Gemma RMSNorm weight w, used as (1 + w): folded once into the f32 copy. */
static hearth_status get_gemma_norm(loader *L, const char *name, int64_t n, const float **out) {
    hearth_status st = get_vector(L, name, n, out);
    if (!st)
        for (int64_t i = 0; i < n; i++) ((float *)*out)[i] += 1.0f;
    return st;
}

/* Qwen3 and EmbeddingGemma: the same decoder names; Gemma's norms are (1 + w), with the
 * sandwich norms after attention and MLP and pre_feedforward_layernorm in
 * post_attention_layernorm's place. */
static hearth_status bind_decoder(loader *L) {
    hearth_bert *b = L->b;
    hearth_status st;
    const bool gemma = b->gemma;
    hearth_status (*norm)(loader *, const char *, int64_t, const float **) = gemma ? get_gemma_norm : get_vector;
    const int64_t qd = (int64_t)b->n_head * b->head_dim, kvd = (int64_t)b->n_head_kv * b->head_dim;
    L->pfx = find(L, "embed_tokens.weight") ? "" : "model.";
    if ((st = get_matrix(L, "embed_tokens.weight", b->n_vocab, b->d, &b->word)) ||
        (st = norm(L, "norm.weight", b->d, &b->final_w)))
        return st;
    for (int64_t il = 0; il < b->n_layer; il++) {
        bert_layer *l = &b->layers[il];
        char n[13][96];
        const char *parts[] = {"input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight",
                               "self_attn.v_proj.weight", "self_attn.o_proj.weight", "self_attn.q_norm.weight",
                               "self_attn.k_norm.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
                               "mlp.down_proj.weight", "post_attention_layernorm.weight",
                               "pre_feedforward_layernorm.weight", "post_feedforward_layernorm.weight"};
        for (int i = 0; i < 13; i++) snprintf(n[i], sizeof n[i], "layers.%lld.%s", (long long)il, parts[i]);
        if ((st = norm(L, n[0], b->d, &l->ln1_w)) || (st = get_matrix(L, n[1], qd, b->d, &l->wq)) ||
            (st = get_matrix(L, n[2], kvd, b->d, &l->wk)) || (st = get_matrix(L, n[3], kvd, b->d, &l->wv)) ||
            (st = get_matrix(L, n[4], b->d, qd, &l->wo)) || (st = norm(L, n[5], b->head_dim, &l->q_norm)) ||
            (st = norm(L, n[6], b->head_dim, &l->k_norm)) || (st = get_matrix(L, n[7], b->d_ff, b->d, &l->w_gate)) ||
            (st = get_matrix(L, n[8], b->d_ff, b->d, &l->w_up)) || (st = get_matrix(L, n[9], b->d, b->d_ff, &l->w_down)))
            return st;
        if (!gemma) st = get_vector(L, n[10], b->d, &l->ln2_w);
        else if (!(st = norm(L, n[10], b->d, &l->post_attn_w)) && !(st = norm(L, n[11], b->d, &l->ln2_w)))
            st = norm(L, n[12], b->d, &l->post_ffn_w);
        if (st) return st;
    }
    return HEARTH_OK;
}

/* NomicBERT's names (nomic-embed-text's NomicBertModel): a fused Wqkv, out_proj, fc11 (up),
 * fc12 (gate), fc2 (down), norm1 / norm2 after attention / MLP, emb_ln after the embeddings. */
static hearth_status bind_nomic(loader *L) {
    hearth_bert *b = L->b;
    hearth_status st;
    L->pfx = "";
    if ((st = get_matrix(L, "embeddings.word_embeddings.weight", b->n_vocab, b->d, &b->word)) ||
        (st = get_matrix(L, "embeddings.token_type_embeddings.weight", b->n_type, b->d, &b->type)) ||
        (st = get_vector(L, "emb_ln.weight", b->d, &b->emb_ln_w)) || (st = get_vector(L, "emb_ln.bias", b->d, &b->emb_ln_b)))
        return st;
    if (!(b->layers = calloc((size_t)b->n_layer, sizeof *b->layers)))
        return hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory");
    for (int64_t il = 0; il < b->n_layer; il++) {
        bert_layer *l = &b->layers[il];
        char n[9][96];
        const char *parts[] = {"attn.Wqkv.weight", "attn.out_proj.weight", "norm1.weight", "norm1.bias", "mlp.fc11.weight",
                               "mlp.fc12.weight", "mlp.fc2.weight", "norm2.weight", "norm2.bias"};
        for (int i = 0; i < 9; i++) snprintf(n[i], sizeof n[i], "encoder.layers.%lld.%s", (long long)il, parts[i]);
        if ((st = get_matrix(L, n[0], 3 * b->d, b->d, &l->wq)) || (st = get_matrix(L, n[1], b->d, b->d, &l->wo)) ||
            (st = get_vector(L, n[2], b->d, &l->ln1_w)) || (st = get_vector(L, n[3], b->d, &l->ln1_b)) ||
            (st = get_matrix(L, n[4], b->d_ff, b->d, &l->w_up)) || (st = get_matrix(L, n[5], b->d_ff, b->d, &l->w_gate)) ||
            (st = get_matrix(L, n[6], b->d, b->d_ff, &l->w_down)) || (st = get_vector(L, n[7], b->d, &l->ln2_w)) ||
            (st = get_vector(L, n[8], b->d, &l->ln2_b)))
            return st;
    }
    return HEARTH_OK;
}

static hearth_status bind_weights(loader *L) {
    hearth_bert *b = L->b;
    hearth_status st;
    if (b->rope) return bind_nomic(L);
    if (b->modern) return bind_modern(L);
    if (b->decoder) return bind_decoder(L);
    L->pfx = "";
    static const char *const pfx[] = {"bert.", "roberta."};
    for (int i = 0; i < 2 && !find(L, "embeddings.word_embeddings.weight"); i++) L->pfx = pfx[i];
    if ((st = get_matrix(L, "embeddings.word_embeddings.weight", b->n_vocab, b->d, &b->word)) ||
        (st = get_matrix(L, "embeddings.position_embeddings.weight", b->n_pos, b->d, &b->pos)) ||
        (st = get_matrix(L, "embeddings.token_type_embeddings.weight", b->n_type, b->d, &b->type)) ||
        (st = get_vector(L, "embeddings.LayerNorm.weight", b->d, &b->emb_ln_w)) ||
        (st = get_vector(L, "embeddings.LayerNorm.bias", b->d, &b->emb_ln_b)))
        return st;
    if (!(b->layers = calloc((size_t)b->n_layer, sizeof *b->layers)))
        return hearth_err_set(L->err, HEARTH_E_NOMEM, -1, "out of memory");
    for (int64_t il = 0; il < b->n_layer; il++) {
        bert_layer *l = &b->layers[il];
        char n[24][128];
        const char *parts[] = {
            "attention.self.query.weight", "attention.self.query.bias", "attention.self.key.weight",
            "attention.self.key.bias", "attention.self.value.weight", "attention.self.value.bias",
            "attention.output.dense.weight", "attention.output.dense.bias", "attention.output.LayerNorm.weight",
            "attention.output.LayerNorm.bias", "intermediate.dense.weight", "intermediate.dense.bias",
            "output.dense.weight", "output.dense.bias", "output.LayerNorm.weight", "output.LayerNorm.bias"};
        for (int i = 0; i < 16; i++) snprintf(n[i], sizeof n[i], "encoder.layer.%lld.%s", (long long)il, parts[i]);
        if ((st = get_matrix(L, n[0], b->d, b->d, &l->wq)) || (st = get_vector(L, n[1], b->d, &l->bq)) ||
            (st = get_matrix(L, n[2], b->d, b->d, &l->wk)) || (st = get_vector(L, n[3], b->d, &l->bk)) ||
            (st = get_matrix(L, n[4], b->d, b->d, &l->wv)) || (st = get_vector(L, n[5], b->d, &l->bv)) ||
            (st = get_matrix(L, n[6], b->d, b->d, &l->wo)) || (st = get_vector(L, n[7], b->d, &l->bo)) ||
            (st = get_vector(L, n[8], b->d, &l->ln1_w)) || (st = get_vector(L, n[9], b->d, &l->ln1_b)) ||
            (st = get_matrix(L, n[10], b->d_ff, b->d, &l->w_up)) || (st = get_vector(L, n[11], b->d_ff, &l->b_up)) ||
            (st = get_matrix(L, n[12], b->d, b->d_ff, &l->w_down)) ||
            (st = get_vector(L, n[13], b->d, &l->b_down)) || (st = get_vector(L, n[14], b->d, &l->ln2_w)) ||
            (st = get_vector(L, n[15], b->d, &l->ln2_b)))
            return st;
    }
    return HEARTH_OK;
}

/* Pack n_w matrices of the same width, stacked in order, into one f32 packed weight. */
static const float *pack(hearth_bert *b, const hearth_weight *const *w, int n_w, hearth_err *err) {
    int64_t n_out = 0;
    const int64_t n_in = w[0]->ne0;
    for (int i = 0; i < n_w; i++) n_out += w[i]->ne1;
    float *dense = malloc((size_t)n_out * (size_t)n_in * sizeof *dense);
    float *packed = hearth_bert_keep(b, malloc(hearth_gemm_f32_packed_floats(n_out, n_in) * sizeof *packed));
    if (!dense || !packed) {
        free(dense);
        hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory packing the weights");
        return NULL;
    }
    int64_t row = 0;
    for (int i = 0; i < n_w; i++)
        for (int64_t r = 0; r < w[i]->ne1; r++, row++) {
            const char *src = (const char *)w[i]->data + (size_t)r * w[i]->row_bytes;
            if (w[i]->type == HEARTH_TYPE_F32) memcpy(dense + row * n_in, src, (size_t)n_in * sizeof *dense);
            else hearth_kernels_traits_isa(w[i]->type, HEARTH_ISA_SCALAR)->to_float(src, dense + row * n_in, n_in);
        }
    hearth_gemm_f32_pack(dense, n_in, n_out, n_in, packed);
    free(dense);
    return packed;
}

/* Every layer's matrices in the packed f32 form the forward multiplies with. */
hearth_status hearth_bert_pack_layers(hearth_bert *b, hearth_err *err) {
    for (int64_t il = 0; il < b->n_layer; il++) {
        bert_layer *l = &b->layers[il];
        const hearth_weight *qkv[3] = {&l->wq, &l->wk, &l->wv}, *o[1] = {&l->wo}, *down[1] = {&l->w_down};
        const bool gated = l->w_gate.data != NULL; /* Qwen3, NomicBERT: gate | up */
        const hearth_weight *up[2] = {gated ? &l->w_gate : &l->w_up, &l->w_up};
        /* one fused [3d][d] weight (ModernBERT, a GGUF attn_qkv) has no separate key and value */
        if (!(l->p_qkv = pack(b, qkv, l->wk.data ? 3 : 1, err)) || !(l->p_o = pack(b, o, 1, err)) ||
            !(l->p_up = pack(b, up, gated ? 2 : 1, err)) ||
            !(l->p_down = pack(b, down, 1, err)))
            return HEARTH_E_NOMEM;
    }
    return HEARTH_OK;
}

/* One Dense module (folder sub of dir): config.json (in_features, out_features, bias,
 * activation_function Identity only) and model.safetensors' linear.weight [out][in] (and
 * linear.bias), copied to f32. */
static hearth_status load_one_dense(hearth_bert *b, const char *dir, const char *sub, int64_t n_in, hearth_err *err) {
    char folder[4096];
    if (strstr(sub, "..") || sub[0] == '/')
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "modules.json: Dense path '%.80s' leaves the folder", sub);
    snprintf(folder, sizeof folder, "%s/%s", dir, sub);
    cJSON *cfg = read_json(folder, "config.json");
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(cfg, "activation_function");
    const int64_t in = cfg_int(cfg, "in_features", -1), out = cfg_int(cfg, "out_features", -1);
    const bool has_bias = cfg_true(cfg, "bias");
    hearth_status st = HEARTH_OK;
    hearth_st *ds = NULL;
    if (!cfg) st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "Dense module %.80s has no readable config.json", sub);
    else if (cJSON_IsString(act) && !strstr(act->valuestring, "Identity"))
        st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "Dense module %.80s: activation %.80s is not supported "
                            "(Identity only)", sub, act->valuestring);
    else if (in != n_in || out <= 0 || out > 65536 || b->n_dense >= 4)
        st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "Dense module %.80s: in_features %lld, out_features %lld after "
                            "%lld numbers (at most 4 Dense modules)", sub, (long long)in, (long long)out,
                            (long long)n_in);
    else if (!(st = hearth_st_open(folder, &ds, err))) {
        const char *names[2] = {"linear.weight", "linear.bias"};
        float *dst[2] = {NULL, NULL};
        for (int k = 0; k < (has_bias ? 2 : 1) && !st; k++) {
            const hearth_st_tensor *t = hearth_st_find(ds, names[k]);
            const int64_t n = k ? out : out * in;
            int type = t ? hearth_st_dtype_to_type(t->dtype) : -1;
            if (!t || type < 0 || (k == 0 && (t->n_dims != 2 || t->shape[0] != out || t->shape[1] != in)) ||
                (k == 1 && (t->n_dims != 1 || t->shape[0] != out))) {
                st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "Dense module %.80s: %s is missing or not [%lld, %lld] "
                                    "f32/f16/bf16", sub, names[k], (long long)out, (long long)(k ? 1 : in));
                break;
            }
            if (!(dst[k] = hearth_bert_keep(b, malloc((size_t)n * sizeof(float))))) {
                st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
                break;
            }
            if (type == HEARTH_TYPE_F32) memcpy(dst[k], t->data, (size_t)n * sizeof(float));
            else hearth_kernels_traits_isa((hearth_type)type, HEARTH_ISA_SCALAR)->to_float(t->data, dst[k], n);
        }
        if (!st) {
            b->dense[b->n_dense].w = dst[0], b->dense[b->n_dense].bias = dst[1];
            b->dense[b->n_dense].n_in = in, b->dense[b->n_dense].n_out = out;
            b->n_dense++;
        }
    }
    hearth_st_close(ds);
    cJSON_Delete(cfg);
    return st;
}

/* sentence-transformers' Dense modules after the pooling, in modules.json's order (EmbeddingGemma's
 * 2_Dense and 3_Dense); sets out_dim. */
static hearth_status load_dense(hearth_bert *b, const char *dir, hearth_err *err) {
    b->out_dim = b->d;
    cJSON *mods = read_json(dir, "modules.json");
    const cJSON *m;
    hearth_status st = HEARTH_OK;
    cJSON_ArrayForEach(m, mods) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(m, "type"), *path = cJSON_GetObjectItemCaseSensitive(m, "path");
        if (!cJSON_IsString(type) || !cJSON_IsString(path)) continue;
        const char *dot = strrchr(type->valuestring, '.');
        if (strcmp(dot ? dot + 1 : type->valuestring, "Dense")) continue;
        if ((st = load_one_dense(b, dir, path->valuestring, b->out_dim, err))) break;
        b->out_dim = b->dense[b->n_dense - 1].n_out;
    }
    cJSON_Delete(mods);
    return st;
}

static hearth_status load_tokenizer(hearth_bert *b, const char *dir, hearth_err *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    size_t len = 0;
    char *text = hearth_file_read(path, MAX_TOKENIZER_BYTES, &len);
    if (!text) return hearth_err_set(err, HEARTH_E_NOTFOUND, -1, "'%.200s' has no readable tokenizer.json", dir);
    hearth_status st = hearth_tok_from_json(text, len, &b->tok, err);
    free(text);
    if (st) return st;
    if (hearth_tok_n_vocab(b->tok) > b->n_vocab)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "tokenizer.json has %d tokens but the model %d",
                              hearth_tok_n_vocab(b->tok), b->n_vocab);
    return HEARTH_OK;
}

/* The device of params.device (bert.h): b->be set, or left NULL for the CPU path. */
static hearth_status pick_device(hearth_bert *b, hearth_err *err) {
    const int dev = b->params.device;
    if (dev == HEARTH_DEVICE_CPU || (dev == HEARTH_DEVICE_AUTO && hearth_cuda_device_count() <= 0)) return HEARTH_OK;
    if (dev != HEARTH_DEVICE_AUTO && dev != HEARTH_DEVICE_CUDA)
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "unknown device %d", dev);
    hearth_err cerr = {0};
    char why[256];
    hearth_backend *be = hearth_backend_cuda_create(0, b->params.max_batch_tokens, NULL, &cerr);
    if (!be) snprintf(why, sizeof why, "%s", cerr.msg);
    else if (!hearth_bert_device_check(b, be, why, sizeof why)) {
        hearth_backend_destroy(be);
        be = NULL;
    }
    if (!be) {
        if (dev == HEARTH_DEVICE_CUDA)
            return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "--device cuda: %s", why);
        hearth_log(HEARTH_LOG_WARN, "embeddings: not on the GPU (%s); computing on the CPU", why);
        return HEARTH_OK;
    }
    b->be = be;
    return hearth_bert_device_prepare(b, err);
}

hearth_status hearth_bert_load(const char *path, const hearth_bert_params *p, hearth_bert **out, hearth_err *err) {
    *out = NULL;
    hearth_err_clear(err);
    hearth_kernels_init();
    hearth_bert *b = calloc(1, sizeof *b);
    if (!b) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    pthread_mutex_init(&b->mu, NULL);
    b->params = p ? *p : hearth_bert_params_default();
    if (b->params.max_batch_tokens <= 0) b->params.max_batch_tokens = 8192;
    hearth_status st;
    loader L = {.b = b, .err = err, .pfx = ""};
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) { /* a GGUF file */
        if ((st = hearth_bert_load_gguf(b, path, err)) || (st = hearth_bert_pack_layers(b, err))) goto fail;
        b->out_dim = b->n_dense ? b->dense[b->n_dense - 1].n_out : b->d; /* gemma-embedding's dense_2, dense_3 */
    } else if ((st = read_shape(b, path, err)) || (st = read_sentence_config(b, path, err)) ||
               (st = hearth_st_open(path, &b->st, err)) || (st = bind_weights(&L)) ||
               (st = hearth_bert_pack_layers(b, err)) || (st = load_tokenizer(b, path, err)) ||
               (st = load_dense(b, path, err)))
        goto fail;
    if (b->params.max_batch_tokens < b->max_tokens) b->params.max_batch_tokens = b->max_tokens;
    if (!(b->pool = hearth_pool_create(b->params.n_threads))) {
        st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "cannot start the compute threads");
        goto fail;
    }
    if ((st = pick_device(b, err))) goto fail;
    snprintf(b->desc, sizeof b->desc, "%s, %lld layers, %lld dims, %s, %s pooling%s, up to %d tokens, on %s",
             b->family, (long long)b->n_layer, (long long)b->out_dim, hearth_type_name(b->layers[0].wq.type),
             hearth_bert_pooling_name(b->pooling), b->normalize ? ", normalized" : "", b->max_tokens,
             b->be ? hearth_backend_name(b->be) : "cpu");
    *out = b;
    return HEARTH_OK;
fail:
    hearth_bert_destroy(b);
    return st;
}

void hearth_bert_destroy(hearth_bert *b) {
    if (!b) return;
    hearth_backend_destroy(b->be); /* its copies are keyed by the host memory freed below */
    hearth_pool_destroy(b->pool);
    for (int64_t i = 0; i < b->n_owned; i++) free(b->owned[i]);
    free(b->owned);
    free(b->layers);
    hearth_tok_destroy(b->tok);
    hearth_st_close(b->st);
    hearth_gguf_close(b->gg);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

int64_t        hearth_bert_dim(const hearth_bert *b) { return b->out_dim; }
int32_t        hearth_bert_max_tokens(const hearth_bert *b) { return b->max_tokens; }
int32_t        hearth_bert_n_vocab(const hearth_bert *b) { return b->n_vocab; }
hearth_pooling hearth_bert_pooling(const hearth_bert *b) { return b->pooling; }
bool           hearth_bert_normalizes(const hearth_bert *b) { return b->normalize; }
const char    *hearth_bert_desc(const hearth_bert *b) { return b->desc; }
size_t         hearth_bert_weight_bytes(const hearth_bert *b) { return b->weight_bytes; }

const char *hearth_bert_pooling_name(hearth_pooling p) {
    switch (p) {
    case HEARTH_POOLING_MEAN: return "mean";
    case HEARTH_POOLING_CLS: return "cls";
    case HEARTH_POOLING_LAST: return "last";
    default: return "?";
    }
}
