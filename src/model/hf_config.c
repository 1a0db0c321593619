/*
 * hf_config.c - config.json / generation_config.json to hparams (see hf_config.h).
 *
 * The defaults are transformers' per-family defaults for keys a config may omit. Per-layer
 * lists become the two patterns the forward knows: which layers slide (swa_pattern, found by
 * trying every period; "every layer" is the period n_layer + 1) and which skip RoPE
 * (nope_interval).
 */
#include "model/hf_config.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A number under key (null and absent are "not there"). */
static bool jnum(const cJSON *o, const char *key, double *out) {
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    if (!cJSON_IsNumber(v)) return false;
    *out = v->valuedouble;
    return true;
}

static const char *jstr(const cJSON *o, const char *key) {
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int jbool(const cJSON *o, const char *key) { /* 1, 0, or -1 when absent */
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : -1;
}

/* A required positive integer key, at most max. */
static hearth_status need_int(const cJSON *o, const char *key, int32_t max, int32_t *out, hearth_err *err) {
    double d;
    if (!jnum(o, key, &d)) return hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json has no %s", key);
    if (!(d >= 1 && d <= max) || d != floor(d))
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json %s = %g is out of range (1..%d)", key, d, max);
    *out = (int32_t)d;
    return HEARTH_OK;
}

static hearth_status opt_int(const cJSON *o, const char *key, int32_t max, int32_t *out, hearth_err *err) {
    double d;
    if (!jnum(o, key, &d)) return HEARTH_OK;
    if (!(d >= 0 && d <= max) || d != floor(d))
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json %s = %g is out of range (0..%d)", key, d, max);
    *out = (int32_t)d;
    return HEARTH_OK;
}

void hearth_gen_add_eos(hearth_gen_defaults *gen, int32_t id) {
    if (id < 0 || gen->n_eos >= HEARTH_MAX_EOS) return;
    for (int i = 0; i < gen->n_eos; i++)
        if (gen->eos[i] == id) return;
    gen->eos[gen->n_eos++] = id;
}

/* eos_token_id: an integer or a list of integers. */
static void add_eos_of(hearth_gen_defaults *gen, const cJSON *o) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "eos_token_id");
    if (cJSON_IsNumber(v)) hearth_gen_add_eos(gen, (int32_t)v->valuedouble);
    const cJSON *e;
    if (cJSON_IsArray(v))
        cJSON_ArrayForEach(e, v) if (cJSON_IsNumber(e)) hearth_gen_add_eos(gen, (int32_t)e->valuedouble);
    double d;
    if (jnum(o, "bos_token_id", &d) && d >= 0 && d < 1e9) gen->bos = (int32_t)d;
}

/* A list of n numbers under key into out. */
static bool jfloats(const cJSON *o, const char *key, float *out, int n) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key), *e;
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != n) return false;
    int i = 0;
    cJSON_ArrayForEach(e, a) {
        if (!cJSON_IsNumber(e) || !(e->valuedouble > 0)) return false;
        out[i++] = (float)e->valuedouble;
    }
    return true;
}

/* longrope (Phi-3 128k): short and long factor lists and the attention factor, as
 * transformers' _compute_longrope_parameters reads them. The lists need the rotated width,
 * so they are read after it is known (rope_freq.c checks nothing more). */
static hearth_status read_longrope(const cJSON *sc, const cJSON *cfg, hearth_hparams *hp, hearth_err *err) {
    double orig = 0, factor = 0, af = 0;
    if (!jnum(sc, "original_max_position_embeddings", &orig) && !jnum(cfg, "original_max_position_embeddings", &orig))
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "longrope rope scaling without original_max_position_embeddings");
    if (!(orig >= 1 && orig < 1e9)) return hearth_err_set(err, HEARTH_E_FORMAT, -1, "longrope original context %g", orig);
    hp->rope_kind = HEARTH_ROPE_LONGROPE;
    hp->rope_orig_ctx = (int32_t)orig;
    /* transformers: factor = max_position_embeddings / original when the dict has none */
    if (!jnum(sc, "factor", &factor)) factor = (double)hp->n_ctx_train / orig;
    hp->rope_factor = (float)factor;
    if (jnum(sc, "attention_factor", &af)) hp->rope_mscale = (float)af;
    else hp->rope_mscale = factor <= 1.0 ? 1.0f : (float)sqrt(1 + log(factor) / log(orig));
    return HEARTH_OK;
}

/* One RoPE parameter dict (v5) or the top-level config (v4 with rope_scaling). */
static hearth_status read_rope(const cJSON *rp, const cJSON *scaling, const cJSON *cfg, hearth_hparams *hp,
                               bool global, hearth_err *err) {
    double d;
    const cJSON *src = rp ? rp : cfg;
    if (jnum(src, "rope_theta", &d) && d > 0) {
        if (global) hp->rope_base = (float)d;
        else hp->rope_base_swa = (float)d;
    }
    const cJSON *sc = rp ? rp : scaling;
    const char *type = sc ? jstr(sc, "rope_type") : NULL;
    if (!type && sc) type = jstr(sc, "type");
    if (!type || !strcmp(type, "default")) return HEARTH_OK;
    if (!global && strcmp(type, "default"))
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "rope scaling '%s' on sliding-window layers", type);
    double factor = 1;
    jnum(sc, "factor", &factor);
    if (!(factor > 0)) return hearth_err_set(err, HEARTH_E_FORMAT, -1, "rope scaling factor %g", factor);
    hp->rope_factor = (float)factor;
    double orig = 0;
    if (!jnum(cfg, "original_max_position_embeddings", &orig) || !(orig > 0))
        if (!jnum(sc, "original_max_position_embeddings", &orig)) orig = hp->n_ctx_train;
    if (!(orig >= 1 && orig < 1e9)) return hearth_err_set(err, HEARTH_E_FORMAT, -1, "original context %g", orig);
    hp->rope_orig_ctx = (int32_t)orig;
    if (!strcmp(type, "linear")) {
        hp->rope_kind = HEARTH_ROPE_LINEAR;
        hp->rope_scale = (float)factor;
    } else if (!strcmp(type, "dynamic")) {
        hp->rope_kind = HEARTH_ROPE_DYNAMIC;
    } else if (!strcmp(type, "proportional")) {
        hp->rope_kind = HEARTH_ROPE_PROPORTIONAL;
    } else if (!strcmp(type, "longrope")) {
        hearth_status st = read_longrope(sc, cfg, hp, err);
        if (st) return st;
    } else if (!strcmp(type, "llama3")) {
        hp->rope_kind = HEARTH_ROPE_LLAMA3;
        double lo = 1, hi = 4;
        jnum(sc, "low_freq_factor", &lo);
        jnum(sc, "high_freq_factor", &hi);
        if (!(hi > lo)) return hearth_err_set(err, HEARTH_E_FORMAT, -1, "llama3 rope: high_freq_factor <= low_freq_factor");
        hp->rope_lo_freq = (float)lo;
        hp->rope_hi_freq = (float)hi;
    } else if (!strcmp(type, "yarn")) {
        hp->rope_kind = HEARTH_ROPE_YARN;
        double bf = 0, bs = 0, af = 0, ms = 0, msa = 0;
        hp->yarn_beta_fast = jnum(sc, "beta_fast", &bf) && bf != 0 ? (float)bf : 32.0f;
        hp->yarn_beta_slow = jnum(sc, "beta_slow", &bs) && bs != 0 ? (float)bs : 1.0f;
        hp->yarn_no_truncate = jbool(sc, "truncate") == 0;
        if (jnum(sc, "attention_factor", &af)) {
            hp->rope_mscale = (float)af;
        } else {
#define GET_MSCALE(s, m) ((s) <= 1 ? 1.0 : 0.1 * (m) * log(s) + 1.0)
            jnum(sc, "mscale", &ms);
            jnum(sc, "mscale_all_dim", &msa);
            hp->rope_mscale = ms != 0 && msa != 0 ? (float)(GET_MSCALE(factor, ms) / GET_MSCALE(factor, msa))
                                                  : (float)GET_MSCALE(factor, 1.0);
#undef GET_MSCALE
        }
    } else {
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "rope scaling type '%s' is not supported", type);
    }
    return HEARTH_OK;
}

/* Which layers slide, as one period of the formula in arch.h. */
static hearth_status set_swa_pattern(hearth_hparams *hp, const bool *swa, hearth_err *err) {
    bool any = false;
    for (int il = 0; il < hp->n_layer; il++) any |= swa[il];
    if (!any || hp->n_swa <= 0) {
        hp->n_swa = 0;
        hp->swa_pattern = 0;
        return HEARTH_OK;
    }
    for (int p = 2; p <= hp->n_layer + 1; p++) {
        bool ok = true;
        for (int il = 0; il < hp->n_layer && ok; il++) ok = (il % p < p - 1) == swa[il];
        if (ok) {
            hp->swa_pattern = p;
            return HEARTH_OK;
        }
    }
    return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "config.json layer_types: this order of sliding and "
                          "full-attention layers is not supported");
}

static hearth_status read_layers(const cJSON *tc, const hearth_hf_config *cfg, hearth_hparams *hp, hearth_err *err) {
    bool *swa = calloc((size_t)hp->n_layer, sizeof *swa);
    if (!swa) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    hearth_status st = HEARTH_OK;
    double d;
    hp->n_swa = jnum(tc, "sliding_window", &d) && d >= 1 && d < 1e9 ? (int32_t)d : 0;
    bool hybrid = cfg->ai->arch == HEARTH_ARCH_QWEN3_5 || cfg->ai->arch == HEARTH_ARCH_QWEN3NEXT ||
                  cfg->ai->arch == HEARTH_ARCH_QWEN3_5MOE;
    if (cfg->ai->arch == HEARTH_ARCH_GEMMA4 && !jnum(tc, "sliding_window", &d)) hp->n_swa = 512;
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(tc, "layer_types");
    if (cJSON_IsArray(lt)) {
        if (cJSON_GetArraySize(lt) != hp->n_layer) {
            st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json layer_types has %d entries for %d layers",
                                cJSON_GetArraySize(lt), hp->n_layer);
            goto done;
        }
        int il = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, lt) {
            const char *s = cJSON_IsString(e) ? e->valuestring : "";
            if (!strcmp(s, "sliding_attention")) swa[il] = true;
            else if (!strcmp(s, "linear_attention") && hybrid) hp->lin_layer[il / 64] |= (uint64_t)1 << (il % 64);
            else if (strcmp(s, "full_attention")) {
                st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "config.json layer_types: '%s' layers", s);
                goto done;
            }
            il++;
        }
        if (cfg->ai->arch == HEARTH_ARCH_GEMMA4) swa[hp->n_layer - 1] = false; /* as transformers forces */
    } else {
        hearth_arch a = cfg->ai->arch;
        double pat = 6, mwl = 0, fai = 4;
        if (hybrid && jnum(tc, "full_attention_interval", &fai) && !(fai >= 1 && fai < 1e6)) {
            st = hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json full_attention_interval %g", fai);
            goto done;
        }
        for (int il = 0; hybrid && il < hp->n_layer; il++) /* transformers' default layer_types */
            if ((il + 1) % (int)fai) hp->lin_layer[il / 64] |= (uint64_t)1 << (il % 64);
        jnum(tc, "sliding_window_pattern", &pat);
        jnum(tc, "max_window_layers", &mwl);
        int use = jbool(tc, "use_sliding_window");
        for (int il = 0; il < hp->n_layer; il++)
            swa[il] = a == HEARTH_ARCH_MISTRAL                             ? true
                      : a == HEARTH_ARCH_GEMMA2                            ? il % 2 == 0
                      : a == HEARTH_ARCH_GEMMA3                            ? (il + 1) % (int)pat != 0
                      : a == HEARTH_ARCH_GEMMA4 ? (il + 1) % 6 != 0 && il < hp->n_layer - 1
                      : (a == HEARTH_ARCH_QWEN2 || a == HEARTH_ARCH_QWEN3) ? use == 1 && il >= (int)mwl
                      : a == HEARTH_ARCH_PHI3                              ? hp->n_swa > 0
                                                                           : false;
    }
    if ((st = set_swa_pattern(hp, swa, err))) goto done;
    /* smollm3: no_rope_layers[il] = 1 when layer il uses RoPE */
    const cJSON *nr = cJSON_GetObjectItemCaseSensitive(tc, "no_rope_layers");
    if (cfg->ai->arch == HEARTH_ARCH_SMOLLM3) {
        double iv = 4;
        jnum(tc, "no_rope_layer_interval", &iv);
        hp->nope_interval = iv >= 1 && iv < 1e6 ? (int32_t)iv : 0;
        if (cJSON_IsArray(nr)) {
            int il = 0;
            const cJSON *e;
            bool ok = cJSON_GetArraySize(nr) == hp->n_layer;
            cJSON_ArrayForEach(e, nr) {
                if (!ok) break;
                ok = cJSON_IsNumber(e) && (e->valuedouble != 0) == hearth_hparams_has_rope(hp, il);
                il++;
            }
            if (!ok) {
                st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "config.json no_rope_layers does not follow "
                                    "no_rope_layer_interval");
                goto done;
            }
        }
    }
done:
    free(swa);
    return st;
}

/* Gemma 4's per-layer shapes (transformers' Gemma4TextConfig): full-attention layers take
 * per_layer_config's head_dim / num_key_value_heads (older configs: global_head_dim, default
 * 512, and num_global_key_value_heads when attention_k_eq_v), the last num_kv_shared_layers
 * layers reuse the cache of the last earlier layer of their kind, per-layer inputs of
 * hidden_size_per_layer_input (default 256; 0 = none), and double-wide MLPs on the shared
 * layers, and the mixture-of-experts block (num_experts, top_k_experts, moe_intermediate_size).
 * Each kind must have one shape; bidirectional attention is refused. */
static hearth_status read_gemma4(const cJSON *tc, const cJSON *rp_full, hearth_hparams *hp, hearth_err *err) {
    double d;
    bool assistant = hp->n_embd_backbone > 0; /* every layer reads the target's cache */
    if (jbool(tc, "enable_moe_block") == 1) {
        if (need_int(tc, "num_experts", 1024, &hp->n_expert, err) ||
            need_int(tc, "top_k_experts", hp->n_expert, &hp->n_expert_used, err) ||
            need_int(tc, "moe_intermediate_size", 1 << 20, &hp->n_ff_exp, err))
            return HEARTH_E_FORMAT;
    }
    const char *bidi = jstr(tc, "use_bidirectional_attention");
    if (bidi && !strcmp(bidi, "all"))
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "use_bidirectional_attention = 'all' is not supported");
    bool k_eq_v = jbool(tc, "attention_k_eq_v") == 1;
    int32_t hd = hp->head_dim, nkv = hp->n_head_kv;
    int32_t shape[2][2] = {{0, 0}, {0, 0}}; /* [swa][head_dim, kv heads] */
    const cJSON *plc = cJSON_GetObjectItemCaseSensitive(tc, "per_layer_config");
    for (int32_t il = 0; il < hp->n_layer; il++) {
        bool swa = hearth_hparams_is_swa(hp, il);
        int32_t lhd = hd, lkv = nkv;
        if (cJSON_IsObject(plc)) {
            char key[16];
            snprintf(key, sizeof key, "%d", il);
            const cJSON *o = cJSON_GetObjectItemCaseSensitive(plc, key);
            if (jnum(o, "head_dim", &d)) lhd = (int32_t)d;
            if (jnum(o, "num_key_value_heads", &d)) lkv = (int32_t)d;
        } else if (!swa) {
            lhd = jnum(tc, "global_head_dim", &d) ? (int32_t)d : 512;
            if (k_eq_v && jnum(tc, "num_global_key_value_heads", &d)) lkv = (int32_t)d;
        }
        if (lhd <= 0 || lhd > 512 || lhd % 2 || lkv <= 0 || hp->n_head % lkv)
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json: layer %d has head dim %d and %d kv heads "
                                  "for %d heads", il, lhd, lkv, hp->n_head);
        if (shape[swa][0] && (shape[swa][0] != lhd || shape[swa][1] != lkv))
            return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "config.json per_layer_config: %s layers of "
                                  "different shapes", swa ? "sliding" : "full-attention");
        shape[swa][0] = lhd;
        shape[swa][1] = lkv;
    }
    hp->head_dim_full = shape[0][0] ? shape[0][0] : hd;
    hp->n_head_kv_full = shape[0][1] ? shape[0][1] : nkv;
    hp->head_dim_swa = shape[1][0] ? shape[1][0] : hd;
    hp->n_head_kv_swa = shape[1][1] ? shape[1][1] : nkv;
    hp->head_dim = hp->head_dim_v = hp->head_dim_full > hp->head_dim_swa ? hp->head_dim_full : hp->head_dim_swa;
    hp->n_head_kv = hp->n_head_kv_full > hp->n_head_kv_swa ? hp->n_head_kv_full : hp->n_head_kv_swa;
    hp->n_rot = hp->head_dim;
    hp->k_eq_v = k_eq_v;
    hp->attn_scale = 1.0f; /* q and k are RMS-normed per head */
    hp->attn_softcap = 0;
    /* full layers: proportional RoPE (the default kind rotates every dim of the head) */
    double prf = 1;
    if (hp->rope_kind == HEARTH_ROPE_PROPORTIONAL) {
        if (rp_full) jnum(rp_full, "partial_rotary_factor", &prf);
    } else if (hp->rope_kind == HEARTH_ROPE_DEFAULT) {
        hp->rope_kind = HEARTH_ROPE_PROPORTIONAL;
        hp->rope_factor = 1.0f;
    } else {
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "Gemma 4 full-attention layers with this rope scaling");
    }
    if (!(prf > 0 && prf <= 1)) return hearth_err_set(err, HEARTH_E_FORMAT, -1, "partial_rotary_factor %g", prf);
    hp->n_rot_freq = 2 * (int32_t)floor(prf * hp->head_dim_full / 2);
    if (!(hp->rope_factor > 0)) hp->rope_factor = 1.0f;
    int32_t n_shared = 0;
    if (opt_int(tc, "num_kv_shared_layers", hp->n_layer, &n_shared, err)) return HEARTH_E_FORMAT;
    if (assistant) { /* transformers' Gemma4AssistantConfig.validate_architecture */
        if (n_shared != 0 && n_shared != hp->n_layer)
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "gemma4_assistant: every layer must share the target's "
                                  "KV (num_kv_shared_layers %d of %d layers)", n_shared, hp->n_layer);
        if (jbool(tc, "enable_moe_block") == 1 || jbool(tc, "use_double_wide_mlp") == 1)
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "gemma4_assistant: enable_moe_block and "
                                  "use_double_wide_mlp must be false");
        if (jnum(tc, "hidden_size_per_layer_input", &d) && d != 0)
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "gemma4_assistant: hidden_size_per_layer_input must "
                                  "be 0, got %g", d);
        if (hp->n_centroids > 0 && hp->n_vocab % hp->n_centroids)
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "gemma4_assistant: %d tokens do not split into %d "
                                  "centroids", hp->n_vocab, hp->n_centroids);
        hp->final_softcap = 0; /* its logits are lm_head's, never soft-capped */
        return HEARTH_OK;
    }
    if (n_shared >= hp->n_layer && n_shared > 0)
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "num_kv_shared_layers = num_hidden_layers");
    hp->n_layer_kv = n_shared > 0 ? hp->n_layer - n_shared : 0;
    for (int32_t il = 0; il < hp->n_layer; il++)
        if (hearth_hparams_kv_layer(hp, il) < 0)
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json: KV-shared layer %d has no earlier layer of "
                                  "its kind to share", il);
    hp->n_embd_ple = 256;
    hp->n_vocab_ple = 262144;
    const cJSON *ple = cJSON_GetObjectItemCaseSensitive(tc, "hidden_size_per_layer_input");
    if (cJSON_IsNull(ple)) hp->n_embd_ple = 0;
    if (opt_int(tc, "hidden_size_per_layer_input", 1 << 16, &hp->n_embd_ple, err) ||
        opt_int(tc, "vocab_size_per_layer_input", 1 << 24, &hp->n_vocab_ple, err))
        return HEARTH_E_FORMAT;
    if (jbool(tc, "use_double_wide_mlp") == 1 && n_shared > 0) {
        hp->n_ff_kv = hp->n_ff;
        hp->n_ff = 2 * hp->n_ff; /* the widest layer sizes the scratch */
    }
    return HEARTH_OK;
}

/* Qwen3 MoE (transformers' Qwen3MoeConfig): num_experts (or num_local_experts) experts of moe_intermediate_size,
 * num_experts_per_tok per token, renormalized when norm_topk_prob; layer il routes when
 * (il + 1) % decoder_sparse_step == 0 and il is not in mlp_only_layers, else it has a dense MLP
 * of intermediate_size. */
static hearth_status read_qwen3moe(const cJSON *tc, hearth_hf_config *cfg, hearth_err *err) {
    hearth_hparams *hp = &cfg->hp;
    int32_t step = 1;
    /* transformers 5 writes the count as num_local_experts, the released configs as num_experts */
    const char *count = cJSON_GetObjectItemCaseSensitive(tc, "num_experts") ? "num_experts" : "num_local_experts";
    if (need_int(tc, count, 1024, &hp->n_expert, err) ||
        need_int(tc, "num_experts_per_tok", hp->n_expert, &hp->n_expert_used, err) ||
        need_int(tc, "moe_intermediate_size", 1 << 20, &hp->n_ff_exp, err) ||
        opt_int(tc, "decoder_sparse_step", hp->n_layer, &step, err))
        return HEARTH_E_FORMAT;
    if (step < 1) return hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json decoder_sparse_step = 0");
    hp->moe_norm_topk = jbool(tc, "norm_topk_prob") == 1;
    for (int32_t il = 0; il < hp->n_layer; il++)
        if ((il + 1) % step == 0) cfg->moe_layer[il / 64] |= (uint64_t)1 << (il % 64);
    const cJSON *only = cJSON_GetObjectItemCaseSensitive(tc, "mlp_only_layers"), *e;
    if (only && !cJSON_IsNull(only) && !cJSON_IsArray(only))
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json mlp_only_layers is not a list");
    cJSON_ArrayForEach(e, only) {
        if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 0 ||
            e->valuedouble >= hp->n_layer)
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json mlp_only_layers has an entry that is not a "
                                  "layer index (0..%d)", hp->n_layer - 1);
        int32_t il = (int32_t)e->valuedouble;
        cfg->moe_layer[il / 64] &= ~((uint64_t)1 << (il % 64));
    }
    return HEARTH_OK;
}

/* gpt-oss (transformers' GptOssConfig): every layer routes to num_experts_per_tok of
 * num_local_experts experts of intermediate_size (softmax over the chosen logits: the same
 * weights as renormalizing the top k of the whole softmax), attention sinks, biases on the
 * attention and the experts. The clamped SwiGLU is computed with transformers' defaults
 * (alpha 1.702, limit 7); other values are refused. */
static hearth_status read_gpt_oss(const cJSON *tc, hearth_hf_config *cfg, hearth_err *err) {
    hearth_hparams *hp = &cfg->hp;
    double d;
    const char *count = cJSON_GetObjectItemCaseSensitive(tc, "num_local_experts") ? "num_local_experts" : "num_experts";
    if (need_int(tc, count, 1024, &hp->n_expert, err) ||
        need_int(tc, "num_experts_per_tok", hp->n_expert, &hp->n_expert_used, err))
        return HEARTH_E_FORMAT;
    if ((jnum(tc, "swiglu_limit", &d) && d != 7.0) || (jnum(tc, "swiglu_alpha", &d) && fabs(d - 1.702) > 1e-9))
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "config.json swiglu_limit / swiglu_alpha other than 7 "
                              "and 1.702 are not supported");
    hp->n_ff_exp = hp->n_ff;
    hp->moe_norm_topk = true;
    hp->attn_sinks = true;
    if (jbool(tc, "attention_bias") == 0)
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "config.json attention_bias = false on gpt_oss");
    hp->qkv_bias = true;
    cfg->attn_out_bias = true;
    for (int32_t il = 0; il < hp->n_layer; il++) cfg->moe_layer[il / 64] |= (uint64_t)1 << (il % 64);
    return HEARTH_OK;
}

/* Qwen3.5 / Qwen3-Next / Qwen3.5 MoE (transformers' Qwen3_5TextConfig, Qwen3NextConfig,
 * Qwen3_5MoeTextConfig): the gated DeltaNet shapes (linear_*), the gated attention with
 * zero-centred norms ((1 + w), as gemma's), and the routed layers' mixture: Qwen3 MoE's keys
 * (Qwen3-Next: decoder_sparse_step, mlp_only_layers, norm_topk_prob default true; Qwen3.5 MoE:
 * every layer, always renormalized) plus a shared expert of shared_expert_intermediate_size. */
static hearth_status read_hybrid(const cJSON *tc, hearth_hf_config *cfg, hearth_err *err) {
    hearth_hparams *hp = &cfg->hp;
    hp->lin_conv = 4, hp->lin_k_dim = 128, hp->lin_v_dim = 128, hp->lin_n_k = 16, hp->lin_n_v = 32;
    if (opt_int(tc, "linear_conv_kernel_dim", 64, &hp->lin_conv, err) ||
        opt_int(tc, "linear_key_head_dim", 4096, &hp->lin_k_dim, err) ||
        opt_int(tc, "linear_value_head_dim", 4096, &hp->lin_v_dim, err) ||
        opt_int(tc, "linear_num_key_heads", 1024, &hp->lin_n_k, err) ||
        opt_int(tc, "linear_num_value_heads", 1024, &hp->lin_n_v, err))
        return HEARTH_E_FORMAT;
    if (hp->lin_conv < 2 || hp->lin_k_dim <= 0 || hp->lin_v_dim <= 0 || hp->lin_n_k <= 0 ||
        hp->lin_n_v % hp->lin_n_k)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json: linear attention of %d key heads, %d value "
                              "heads (a multiple of the key heads), head dims %d / %d, conv width %d (>= 2) do not fit",
                              hp->lin_n_k, hp->lin_n_v, hp->lin_k_dim, hp->lin_v_dim, hp->lin_conv);
    bool any = false;
    for (int32_t il = 0; il < hp->n_layer; il++) any |= hearth_hparams_is_linear(hp, il);
    if (!any) hp->lin_n_v = 0; /* no linear layer: a plain gated-attention model */
    hp->attn_out_gate = true;
    cfg->norm_plus_one = true;
    if (cfg->ai->arch == HEARTH_ARCH_QWEN3_5MOE) { /* every layer routes; the chosen k always renormalized */
        const char *count = cJSON_GetObjectItemCaseSensitive(tc, "num_experts") ? "num_experts" : "num_local_experts";
        if (need_int(tc, count, 1024, &hp->n_expert, err) ||
            need_int(tc, "num_experts_per_tok", hp->n_expert, &hp->n_expert_used, err) ||
            need_int(tc, "moe_intermediate_size", 1 << 20, &hp->n_ff_exp, err))
            return HEARTH_E_FORMAT;
        hp->moe_norm_topk = true;
        for (int32_t il = 0; il < hp->n_layer; il++) cfg->moe_layer[il / 64] |= (uint64_t)1 << (il % 64);
    } else if (cfg->ai->arch == HEARTH_ARCH_QWEN3NEXT) {
        int32_t n_exp = 0;
        if (opt_int(tc, "num_experts", 1 << 16, &n_exp, err)) return HEARTH_E_FORMAT;
        hearth_status st;
        if (n_exp > 0 && (st = read_qwen3moe(tc, cfg, err))) return st; /* its routing keys are Qwen3 MoE's */
        if (n_exp > 0 && jbool(tc, "norm_topk_prob") < 0) hp->moe_norm_topk = true; /* Qwen3NextConfig's default */
    }
    if (hp->n_expert > 0) {
        if (need_int(tc, "shared_expert_intermediate_size", 1 << 20, &hp->n_ff_shexp, err)) return HEARTH_E_FORMAT;
        if (hp->n_ff_shexp <= 0)
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json shared_expert_intermediate_size = %d",
                                  hp->n_ff_shexp);
        if (hp->n_ff <= 0) hp->n_ff = hp->n_ff_shexp; /* qwen3_5_moe has no dense MLP */
    }
    return HEARTH_OK;
}

static hearth_status parse_text(const cJSON *root, const cJSON *tc, hearth_hf_config *cfg, hearth_err *err) {
    hearth_hparams *hp = &cfg->hp;
    const hearth_arch_info *ai = cfg->ai;
    hearth_status st;
    hp->arch = ai->arch;
    if ((st = need_int(tc, "hidden_size", 1 << 16, &hp->n_embd, err)) ||
        (st = need_int(tc, "num_hidden_layers", 1024, &hp->n_layer, err)) ||
        (st = (ai->arch == HEARTH_ARCH_QWEN3_5MOE ? opt_int : need_int)(tc, "intermediate_size", 1 << 20, &hp->n_ff,
                                                                         err)) ||
        (st = need_int(tc, "num_attention_heads", 1024, &hp->n_head, err)) ||
        (st = need_int(tc, "vocab_size", 1 << 24, &hp->n_vocab, err)))
        return st;
    hp->n_head_kv = hp->n_head;
    hp->head_dim = hp->n_embd / hp->n_head;
    hp->n_ctx_train = 4096;
    if ((st = opt_int(tc, "num_key_value_heads", 1024, &hp->n_head_kv, err)) ||
        (st = opt_int(tc, "head_dim", 512, &hp->head_dim, err)) ||
        (st = opt_int(tc, "max_position_embeddings", 1 << 30, &hp->n_ctx_train, err)))
        return st;
    hp->head_dim_v = hp->head_dim;
    if (hp->n_head_kv <= 0 || hp->n_head % hp->n_head_kv || hp->head_dim <= 0 || hp->head_dim % 2)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json: %d heads, %d kv heads, head dim %d do not fit",
                              hp->n_head, hp->n_head_kv, hp->head_dim);
    double d;
    hp->norm_eps = 1e-6f;
    if (jnum(tc, "rms_norm_eps", &d) && d > 0) hp->norm_eps = (float)d;
    hp->rope_base = 10000.0f;
    hp->rope_scale = 1.0f;
    hp->rope_mscale = 1.0f;
    hp->hf_numerics = true;
    hp->rope_neox = true; /* transformers' rotate_half; only GGUF llama files have permuted q/k */
    hp->qkv_bias = ai->qkv_bias;
    hp->qk_norm = ai->qk_norm;
    hp->post_norms = ai->post_norms;
    hp->ffn = ai->ffn;
    hp->embd_scale = ai->embd_scaled ? sqrtf((float)hp->n_embd) : 1.0f;
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    if (jnum(tc, "query_pre_attn_scalar", &d) && d > 0) hp->attn_scale = (float)(1.0 / sqrt(d));
    if (jnum(tc, "attn_logit_softcapping", &d) && d > 0) hp->attn_softcap = (float)d;
    if (jnum(tc, "final_logit_softcapping", &d) && d > 0) hp->final_softcap = (float)d;
    cfg->norm_plus_one = ai->embd_scaled && ai->arch != HEARTH_ARCH_GEMMA4; /* gemma 2 and 3: (1 + w) */
    cfg->fused_qkv = ai->arch == HEARTH_ARCH_PHI3;

    int bias = jbool(tc, "attention_bias");
    if (bias == 1) {
        if (ai->arch == HEARTH_ARCH_GEMMA2 || ai->arch == HEARTH_ARCH_GEMMA3 || ai->arch == HEARTH_ARCH_GEMMA4)
            return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "config.json attention_bias on gemma");
        hp->qkv_bias = true;
        cfg->attn_out_bias = true;
    }
    if (jbool(tc, "mlp_bias") == 1)
        return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "config.json mlp_bias = true is not supported");
    const char *act = jstr(tc, "hidden_activation");
    if (!act) act = jstr(tc, "hidden_act");
    if (act) {
        bool gelu_tanh = !strcmp(act, "gelu_pytorch_tanh") || !strcmp(act, "gelu_new");
        bool silu = !strcmp(act, "silu") || !strcmp(act, "swish");
        if ((hp->ffn == HEARTH_FFN_GEGLU && !gelu_tanh) || (hp->ffn == HEARTH_FFN_SWIGLU && !silu))
            return hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "config.json activation '%s' for %s", act, ai->hf_type);
    }
    int tied = jbool(tc, "tie_word_embeddings");
    if (tied < 0) tied = jbool(root, "tie_word_embeddings");
    cfg->tied = tied >= 0 ? tied == 1
                          : (ai->arch == HEARTH_ARCH_GEMMA2 || ai->arch == HEARTH_ARCH_GEMMA3 ||
                             ai->arch == HEARTH_ARCH_GEMMA4 || ai->arch == HEARTH_ARCH_SMOLLM3);

    /* RoPE: v5 rope_parameters (flat, or per layer type), else v4 keys */
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(tc, "rope_parameters");
    const cJSON *rp_full = NULL, *rp_swa = NULL;
    if (cJSON_IsObject(rp)) {
        rp_full = cJSON_GetObjectItemCaseSensitive(rp, "full_attention");
        rp_swa = cJSON_GetObjectItemCaseSensitive(rp, "sliding_attention");
        if (!cJSON_IsObject(rp_full)) rp_full = rp;
        if (!cJSON_IsObject(rp_swa)) rp_swa = NULL;
    } else {
        rp = NULL;
    }
    const cJSON *scaling = cJSON_GetObjectItemCaseSensitive(tc, "rope_scaling");
    if (!cJSON_IsObject(scaling)) scaling = NULL;
    if ((st = read_rope(rp_full, scaling, tc, hp, true, err))) return st;
    hp->rope_base_swa = ai->rope_base_swa > 0 ? ai->rope_base_swa : hp->rope_base;
    if (jnum(tc, "rope_local_base_freq", &d) && d > 0) hp->rope_base_swa = (float)d;
    if (rp_swa && (st = read_rope(rp_swa, NULL, tc, hp, false, err))) return st;
    double prf = ai->arch == HEARTH_ARCH_QWEN3_5 || ai->arch == HEARTH_ARCH_QWEN3NEXT || ai->arch == HEARTH_ARCH_QWEN3_5MOE
                     ? 0.25 : 1; /* their default */
    if (!(rp_full && jnum(rp_full, "partial_rotary_factor", &prf))) jnum(tc, "partial_rotary_factor", &prf);
    if (!(prf > 0 && prf <= 1))
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json partial_rotary_factor %g", prf);
    hp->n_rot = (int32_t)(hp->head_dim * prf);
    hp->n_rot -= hp->n_rot % 2;
    if (hp->n_rot <= 0) return hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json: no rotated dimensions");
    if (hp->rope_kind == HEARTH_ROPE_LONGROPE) {
        const cJSON *sc = rp_full ? rp_full : scaling;
        int n = hp->n_rot / 2;
        if (n > HEARTH_LONGROPE_MAX || !jfloats(sc, "short_factor", hp->longrope_short, n) ||
            !jfloats(sc, "long_factor", hp->longrope_long, n))
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "longrope short_factor and long_factor must be lists of %d "
                                  "positive numbers (rotated dims / 2)", n);
    }
    if ((st = read_layers(tc, cfg, hp, err))) return st;
    if (ai->arch == HEARTH_ARCH_QWEN3MOE) return read_qwen3moe(tc, cfg, err);
    if (ai->arch == HEARTH_ARCH_GPT_OSS) return read_gpt_oss(tc, cfg, err);
    if (ai->arch == HEARTH_ARCH_QWEN3_5 || ai->arch == HEARTH_ARCH_QWEN3NEXT || ai->arch == HEARTH_ARCH_QWEN3_5MOE)
        return read_hybrid(tc, cfg, err);
    return ai->arch == HEARTH_ARCH_GEMMA4 ? read_gemma4(tc, rp_full, hp, err) : HEARTH_OK;
}

/* The Gemma 4 assistant drafter's own keys (transformers' Gemma4AssistantConfig): a gemma4_text
 * text_config, the target's hidden size (backbone_hidden_size) and, with use_ordered_embeddings,
 * num_centroids centroids of which centroid_intermediate_top_k keep their tokens' logits. The
 * rest of its shape is read as Gemma 4's (read_gemma4). */
static hearth_status read_assistant(const cJSON *root, const cJSON *tc, hearth_hf_config *cfg, hearth_err *err) {
    hearth_hparams *hp = &cfg->hp;
    if (tc == root || cfg->ai->arch != HEARTH_ARCH_GEMMA4)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "gemma4_assistant: config.json needs a gemma4_text "
                              "text_config");
    hp->n_embd_backbone = 1536; /* transformers' default */
    if (opt_int(root, "backbone_hidden_size", 1 << 20, &hp->n_embd_backbone, err)) return HEARTH_E_FORMAT;
    if (hp->n_embd_backbone <= 0)
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "gemma4_assistant: backbone_hidden_size must be positive");
    if (jbool(root, "use_ordered_embeddings") == 1) {
        hp->n_centroids = 2048;
        hp->centroid_top_k = 32;
        if (opt_int(root, "num_centroids", 1 << 20, &hp->n_centroids, err) ||
            opt_int(root, "centroid_intermediate_top_k", 1 << 20, &hp->centroid_top_k, err))
            return HEARTH_E_FORMAT;
        if (hp->n_centroids <= 0 || hp->centroid_top_k <= 0 || hp->centroid_top_k > hp->n_centroids)
            return hearth_err_set(err, HEARTH_E_FORMAT, -1, "gemma4_assistant: %d centroids, %d kept do not fit",
                                  hp->n_centroids, hp->centroid_top_k);
    }
    return HEARTH_OK;
}

hearth_status hearth_hf_config_parse(const char *json, size_t n, hearth_hf_config *cfg, hearth_err *err) {
    memset(cfg, 0, sizeof *cfg);
    cfg->gen.bos = -1;
    cJSON *root = cJSON_ParseWithLength(json, n);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "config.json is not a JSON object");
    }
    hearth_status st = HEARTH_OK;
    const cJSON *tc = root;
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(root, "text_config");
    if (cJSON_IsObject(text)) {
        tc = text;
        cfg->text_config = true;
    }
    const char *mt = jstr(tc, "model_type");
    if (!mt) mt = jstr(root, "model_type");
    if (mt && cfg->text_config && !strcmp(mt, "gemma3")) mt = "gemma3_text";
    if (mt && cfg->text_config && !strcmp(mt, "gemma4")) mt = "gemma4_text";
    if (mt && cfg->text_config && !strcmp(mt, "qwen3_5")) mt = "qwen3_5_text";
    if (mt && cfg->text_config && !strcmp(mt, "qwen3_5_moe")) mt = "qwen3_5_moe_text";
    cfg->ai = mt ? hearth_arch_by_hf_type(mt) : NULL;
    if (!cfg->ai) {
        st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "model_type '%s' is not supported (supported: llama, "
                            "mistral, qwen2, qwen3, qwen3_moe, qwen3_5, qwen3_5_moe, qwen3_next, gpt_oss, gemma2, gemma3, gemma4, phi3, "
                            "smollm3)", mt ? mt : "(none)");
        goto done;
    }
    const char *root_mt = jstr(root, "model_type");
    if (root_mt && !strcmp(root_mt, "gemma4_assistant") && (st = read_assistant(root, tc, cfg, err))) goto done;
    if ((st = parse_text(root, tc, cfg, err))) goto done;
    add_eos_of(&cfg->gen, root);
    if (tc != root) add_eos_of(&cfg->gen, tc);
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(root, "quantization");
    if (!cJSON_IsObject(q)) q = cJSON_GetObjectItemCaseSensitive(root, "quantization_config");
    const char *method = cJSON_IsObject(q) ? jstr(q, "quant_method") : NULL;
    if (method && !strcmp(method, "mxfp4") && cfg->ai->arch == HEARTH_ARCH_GPT_OSS) {
        cfg->mxfp4 = true; /* the experts' *_blocks / *_scales (model_st.c); nothing else is quantized */
        q = NULL;
    }
    if (cJSON_IsObject(q)) {
        double bits = 0, gs = 0;
        jnum(q, "bits", &bits);
        jnum(q, "group_size", &gs);
        const char *mode = jstr(q, "mode");
        if ((mode && strcmp(mode, "affine")) || (bits != 4 && bits != 8) || (gs != 32 && gs != 64)) {
            st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1, "quantization %s %g-bit group %g is not supported "
                                "(MLX affine 4 or 8 bits, group 32 or 64)", mode ? mode : "affine", bits, gs);
            goto done;
        }
        cfg->quant = (hearth_mlx_quant){(int32_t)bits, (int32_t)gs};
        if (!(cfg->quant_json = cJSON_PrintUnformatted(q))) {
            st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
            goto done;
        }
    }
done:
    cJSON_Delete(root);
    return st;
}

void hearth_hf_config_fini(hearth_hf_config *cfg) {
    if (!cfg) return;
    cJSON_free(cfg->quant_json);
    cfg->quant_json = NULL;
}

hearth_mlx_quant hearth_hf_config_quant_of(const hearth_hf_config *cfg, const char *module) {
    hearth_mlx_quant r = cfg->quant;
    if (!cfg->quant_json) return r;
    cJSON *q = cJSON_Parse(cfg->quant_json);
    const cJSON *o = q ? cJSON_GetObjectItemCaseSensitive(q, module) : NULL;
    double d;
    if (cJSON_IsFalse(o)) r = (hearth_mlx_quant){0, 0};
    if (cJSON_IsObject(o)) {
        if (jnum(o, "bits", &d)) r.bits = (int32_t)d;
        if (jnum(o, "group_size", &d)) r.group_size = (int32_t)d;
    }
    cJSON_Delete(q);
    return r;
}

hearth_status hearth_hf_gen_config_parse(const char *json, size_t n, hearth_hf_config *cfg, hearth_err *err) {
    cJSON *root = cJSON_ParseWithLength(json, n);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "generation_config.json is not a JSON object");
    }
    hearth_gen_defaults *g = &cfg->gen;
    double d;
    if (jnum(root, "temperature", &d) && d >= 0) g->has_temperature = true, g->temperature = (float)d;
    if (jnum(root, "top_p", &d) && d > 0 && d <= 1) g->has_top_p = true, g->top_p = (float)d;
    if (jnum(root, "top_k", &d) && d >= 0 && d < 1e9) g->has_top_k = true, g->top_k = (int32_t)d;
    if (jnum(root, "min_p", &d) && d >= 0 && d <= 1) g->has_min_p = true, g->min_p = (float)d;
    if (jnum(root, "repetition_penalty", &d) && d > 0) g->has_repetition_penalty = true, g->repetition_penalty = (float)d;
    if (jnum(root, "max_new_tokens", &d) && d > 0 && d < 1e9) g->has_max_new_tokens = true, g->max_new_tokens = (int32_t)d;
    int ds = jbool(root, "do_sample");
    if (ds >= 0) g->has_do_sample = true, g->do_sample = ds == 1;
    add_eos_of(g, root);
    cJSON_Delete(root);
    return HEARTH_OK;
}
