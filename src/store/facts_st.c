/*
 * facts_st.c - model facts of a safetensors snapshot (Hugging Face or MLX layout): shape and
 * context from config.json (or its text_config), parameters and bytes from each
 * *.safetensors header (u64 little-endian length, then a JSON object of
 * name -> {dtype, shape, data_offsets}). MLX affine-quantized weights are packed u32 words:
 * their element count is multiplied back by 32 / bits. The headers are read by the loader's
 * own reader (model/safetensors.h: its validation, its header size cap). See facts.h.
 *
 * MLX scales and biases are not counted as parameters, and a packed weight (a matrix, or
 * mlx-lm's 3-D stacked experts) is unpacked at its own module's bits (config.json overrides). Files are untrusted: the reader validates them;
 * config.json is bounded and goes through cJSON. A snapshot is marked supported when model/hf_config.c accepts its
 * config.json (the loader's own parser, which also gives the layer pattern for the KV numbers)
 * and a tokenizer.json (or a SentencePiece tokenizer.model) is present.
 */
#include "store/facts.h"
#include "store/modality.h"

#include "model/hf_config.h"
#include "model/safetensors.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

enum { MAX_CONFIG_BYTES = 4 << 20 };

/* Read a whole small file into a NUL-terminated malloc'ed buffer, or NULL. */
static char *slurp(const char *path, size_t max, size_t *len) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    char *buf = NULL;
    struct stat st;
    if (fstat(fileno(fp), &st) != 0 || st.st_size < 0 || (size_t)st.st_size > max) goto done;
    buf = malloc((size_t)st.st_size + 1);
    if (!buf) goto done;
    if (fread(buf, 1, (size_t)st.st_size, fp) != (size_t)st.st_size) {
        free(buf);
        buf = NULL;
        goto done;
    }
    buf[st.st_size] = 0;
    if (len) *len = (size_t)st.st_size;
done:
    fclose(fp);
    return buf;
}

static int64_t jint(const cJSON *o, const char *key, int64_t dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 9e15 ? (int64_t)v->valuedouble : dflt;
}

static const char *jstr(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* One safetensors header: add parameters and bytes; remember the embedding's bytes and the
 * dominant dtype. Returns false on a malformed file. */
typedef struct {
    int64_t n_params, data_bytes, embd_bytes;
    int64_t dtype_bytes[8];
    int     bits;                 /* default MLX bits, 0 = not quantized */
    const hearth_hf_config *hc;   /* borrowed: per-module bits (NULL when the loader refuses it) */
} st_sum;

static bool has_suffix(const char *s, const char *suf);

static const char *dtypes[8] = {"F32", "F16", "BF16", "U32", "I8", "U8", "F8_E4M3", "I32"};

/* Add one file's tensors to sum. The file goes through the loader's own reader
 * (model/safetensors.h), so facts and loading share one header parser and one size cap. */
static hearth_status read_header(const char *path, st_sum *sum, hearth_err *err) {
    hearth_st *f = NULL;
    hearth_status st = hearth_st_open(path, &f, err);
    if (st) return st;
    for (int64_t i = 0; i < hearth_st_n_tensors(f); i++) {
        const hearth_st_tensor *t = hearth_st_tensor_at(f, i);
        const char *dt = hearth_st_dtype_name(t->dtype), *nm = t->name;
        int64_t n = t->n_elem, nb = (int64_t)t->n_bytes;
        size_t ln = strlen(nm);
        if (t->dtype == HEARTH_ST_U32 && sum->bits > 0 && sum->bits < 32) { /* packed: the module's own bits */
            int bits = sum->bits;
            if (sum->hc && ln > 7 && ln < 200 && has_suffix(nm, ".weight")) {
                char mod[200];
                memcpy(mod, nm, ln - 7);
                mod[ln - 7] = 0;
                hearth_mlx_quant q = hearth_hf_config_quant_of(sum->hc, mod);
                if (q.bits > 0 && q.bits < 32) bits = q.bits;
            }
            n *= 32 / bits;
        }
        /* an MLX module's scales and biases describe its weight; they are not parameters */
        bool qmeta = sum->bits > 0 && (has_suffix(nm, ".scales") || has_suffix(nm, ".biases"));
        if (!qmeta) sum->n_params += n;
        for (int k = 0; k < 8; k++)
            if (!strcmp(dt, dtypes[k])) sum->dtype_bytes[k] += nb;
        if (ln >= 19 && !strcmp(nm + ln - 19, "embed_tokens.weight")) sum->embd_bytes += nb;
        sum->data_bytes += nb;
    }
    hearth_st_close(f);
    return HEARTH_OK;
}

static bool has_suffix(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static bool exists(const char *dir, const char *name) {
    char p[4352];
    struct stat st;
    return snprintf(p, sizeof p, "%s/%s", dir, name) < (int)sizeof p && stat(p, &st) == 0;
}

hearth_status hearth_facts_safetensors(const char *dir, hearth_model_facts *f, hearth_err *err) {
    memset(f, 0, sizeof *f);
    snprintf(f->format, sizeof f->format, "safetensors");
    char path[4352];
    snprintf(path, sizeof path, "%s/config.json", dir);
    size_t cfg_len = 0;
    char *cfg_text = slurp(path, MAX_CONFIG_BYTES, &cfg_len);
    if (!cfg_text) return hearth_err_set(err, HEARTH_E_NOTFOUND, -1, "no readable config.json in %s", dir);
    cJSON *cfg = cJSON_Parse(cfg_text);
    /* what the loader will make of it: supported families give the exact hparams */
    hearth_hf_config *hc = calloc(1, sizeof *hc);
    hearth_err hc_err = {0};
    bool runs = hc && hearth_hf_config_parse(cfg_text, cfg_len, hc, &hc_err) == HEARTH_OK;
    free(cfg_text);
    if (!cJSON_IsObject(cfg)) {
        cJSON_Delete(cfg);
        hearth_hf_config_fini(hc);
        free(hc);
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json in %s is not a JSON object", dir);
    }
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(cfg, "text_config");
    if (!cJSON_IsObject(tc)) tc = cfg;
    /* a vision tower: a vision_config and the tower's weights (store/modality.h) */
    hearth_modality mo;
    if (hearth_modality_probe(dir, &mo, NULL) == HEARTH_OK && mo.vision) f->caps |= HEARTH_CAP_VISION;
    const char *mt = jstr(tc, "model_type") ? jstr(tc, "model_type") : jstr(cfg, "model_type");
    snprintf(f->arch, sizeof f->arch, "%s", mt ? mt : "?");
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(cfg, "quantization");
    st_sum sum = {.hc = runs ? hc : NULL};
    if (cJSON_IsObject(q)) {
        sum.bits = (int)jint(q, "bits", 0);
        snprintf(f->quant, sizeof f->quant, "%d-bit g%d", sum.bits, (int)jint(q, "group_size", 0));
    }

    DIR *d = opendir(dir);
    hearth_status st = HEARTH_OK;
    if (!d) {
        st = hearth_err_set(err, HEARTH_E_IO, -1, "cannot read %s", dir);
        goto done;
    }
    struct dirent *de;
    int n_files = 0;
    while ((de = readdir(d))) {
        if (!has_suffix(de->d_name, ".safetensors")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        struct stat fs;
        if (stat(path, &fs) != 0) continue; /* a dangling link: the blob is gone */
        hearth_err e = {0};
        if (read_header(path, &sum, &e)) {
            st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "malformed safetensors file %s: %s", de->d_name, e.msg);
            break;
        }
        f->file_bytes += (int64_t)fs.st_size;
        n_files++;
    }
    closedir(d);
    if (st) goto done;
    if (n_files == 0) {
        st = hearth_err_set(err, HEARTH_E_NOTFOUND, -1, "no *.safetensors in %s", dir);
        goto done;
    }
    f->n_params = sum.n_params;
    f->weight_bytes = sum.data_bytes;
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(tc, "tie_word_embeddings");
    bool tied = runs ? hc->tied : !tie ? true : cJSON_IsTrue(tie);
    f->weight_read_bytes = sum.data_bytes - (tied ? 0 : sum.embd_bytes);
    if (!f->quant[0]) {
        int best = 0;
        for (int i = 1; i < 8; i++)
            if (sum.dtype_bytes[i] > sum.dtype_bytes[best]) best = i;
        snprintf(f->quant, sizeof f->quant, "%s", dtypes[best]);
        for (char *p = f->quant; *p; p++) *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
    }

    int64_t n_layer = jint(tc, "num_hidden_layers", 0), n_head = jint(tc, "num_attention_heads", 0);
    int64_t n_head_kv = jint(tc, "num_key_value_heads", n_head), n_embd = jint(tc, "hidden_size", 0);
    int64_t head_dim = jint(tc, "head_dim", n_head > 0 ? n_embd / n_head : 0);
    int64_t n_swa = jint(tc, "sliding_window", 0), pattern = jint(tc, "sliding_window_pattern", 0);
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(tc, "layer_types");
    if (n_layer > 4096 || n_head_kv > 4096 || head_dim > 4096) n_layer = 0;
    f->n_layer = (int32_t)n_layer;
    f->n_ctx_train = (int32_t)jint(tc, "max_position_embeddings", 4096);
    f->n_vocab = (int32_t)jint(tc, "vocab_size", 0);
    int64_t per_layer = n_head_kv * head_dim * 2 * 2;
    for (int64_t il = 0; il < n_layer; il++) {
        bool swa = false;
        const cJSON *lt = cJSON_IsArray(types) ? cJSON_GetArrayItem(types, (int)il) : NULL;
        if (n_swa > 0 && cJSON_IsString(lt)) swa = !strcmp(lt->valuestring, "sliding_attention");
        else if (n_swa > 0 && pattern > 0) swa = il % pattern < pattern - 1;
        f->kv_bytes_per_token += per_layer;
        if (swa) {
            f->n_layer_swa++;
            f->kv_swa_bytes_per_token += per_layer;
        }
    }
    f->n_swa = f->n_layer_swa ? (int32_t)n_swa : 0;
    if (runs) { /* the loader's view of the layers (model/hf_config.c) */
        const hearth_hparams *hp = &hc->hp;
        f->n_layer = hp->n_layer;
        f->n_layer_swa = 0;
        f->kv_bytes_per_token = f->kv_swa_bytes_per_token = 0;
        for (int32_t il = 0; il < hp->n_layer; il++) {
            /* f16 k and v of the layer's own shape; a KV-shared layer (Gemma 4) and a linear-attention
             * one (Qwen3.5: a fixed-size state per sequence instead) store none */
            int64_t pl = !hearth_hparams_stores_kv(hp, il) ? 0
                         : (int64_t)hearth_hparams_n_head_kv(hp, il) * hearth_hparams_head_dim(hp, il) * 2 * 2;
            f->kv_bytes_per_token += pl;
            if (hearth_hparams_is_swa(hp, il)) {
                f->n_layer_swa++;
                f->kv_swa_bytes_per_token += pl;
            }
        }
        f->n_swa = f->n_layer_swa ? hp->n_swa : 0;
        if (exists(dir, "tokenizer.json") || exists(dir, "tokenizer.model")) f->caps |= HEARTH_CAP_SUPPORTED;
    }
    int64_t n_ff = jint(tc, "intermediate_size", 0);
    f->act_bytes_per_token = 4 * (2 * n_embd + 2 * n_head * head_dim + 2 * n_head_kv * head_dim + 2 * n_ff + 1);
    if (exists(dir, "chat_template.jinja") || exists(dir, "chat_template.json")) f->caps |= HEARTH_CAP_CHAT;
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    char *tok = slurp(path, MAX_CONFIG_BYTES, NULL);
    if (tok && strstr(tok, "\"chat_template\"")) f->caps |= HEARTH_CAP_CHAT;
    if (tok && strstr(tok, "tools")) f->caps |= f->caps & HEARTH_CAP_CHAT ? HEARTH_CAP_TOOLS : 0;
    free(tok);
    snprintf(path, sizeof path, "%s/chat_template.jinja", dir);
    tok = slurp(path, MAX_CONFIG_BYTES, NULL);
    if (tok && strstr(tok, "tools")) f->caps |= HEARTH_CAP_TOOLS;
    if (tok && (strstr(tok, "<think>") || strstr(tok, "enable_thinking"))) f->caps |= HEARTH_CAP_THINKING;
    free(tok);
    if (exists(dir, "modules.json")) f->caps |= HEARTH_CAP_EMBED;
done:
    hearth_hf_config_fini(hc);
    free(hc);
    cJSON_Delete(cfg);
    return st;
}
