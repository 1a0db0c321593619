/*
 * tokenize.c - /tokenize, /detokenize, /apply-template and /props (see tokenize.h).
 *
 * Two peers answer /tokenize with different bodies, and the request says which one a client
 * speaks: llama-server's carries `content` (defaults: add_special false, parse_special true),
 * vLLM's `prompt` (add_special_tokens true) or `messages` (rendered by the chat template as
 * /v1/chat/completions renders them; add_generation_prompt true, continue_final_message false,
 * as vLLM defaults them). Special-token text in the input is parsed into special tokens in
 * both (what llama-server's parse_special and Hugging Face tokenizers do by default).
 * /detokenize renders special tokens as both peers do, and answers with both peers' keys.
 *
 * Pieces (llama-server's with_pieces) are a token's bytes: a string when they are valid UTF-8,
 * else the list of byte values, as llama-server writes them. vLLM's token_strs are the
 * vocabulary's own strings ("Ġthe" in a byte-level BPE).
 */
#include "server/tokenize.h"
#include "server/media.h"
#include "base/utf8.h"
#include "server/chat.h"
#include "server/reqjson.h"
#include "server/sampling.h"
#include "server/structured.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void send_ids(hearth_jw *w, const int32_t *ids, size_t n) {
    hearth_jw_arr(w);
    for (size_t i = 0; i < n; i++) hearth_jw_int(w, ids[i]);
    hearth_jw_arr_end(w);
}

/* llama-server: {"tokens": [id...]} or, with pieces, [{"id", "piece"}...]. */
static bool tokenize_llama(hearth_server *s, const cJSON *root, hearth_jw *w, hearth_api_err *e) {
    const char *content = NULL;
    bool add_special = false, parse_special = true, pieces = false;
    if (hearth_req_str(root, "content", &content, e) < 0 || hearth_req_bool(root, "add_special", &add_special, e) < 0 ||
        hearth_req_bool(root, "parse_special", &parse_special, e) < 0 ||
        hearth_req_bool(root, "with_pieces", &pieces, e) < 0)
        return false;
    const hearth_tok *tok = hearth_model_tok(s->m);
    int32_t *ids = NULL;
    size_t n = 0;
    if (hearth_tok_encode(tok, content, strlen(content), add_special, parse_special, &ids, &n))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "content", "the content could not be tokenized");
    hearth_jw_obj(w);
    hearth_jw_key(w, "tokens");
    if (!pieces) send_ids(w, ids, n);
    else {
        hearth_jw_arr(w);
        for (size_t i = 0; i < n; i++) {
            hearth_span p = hearth_tok_piece(tok, ids[i], true);
            hearth_jw_obj(w);
            hearth_jw_key(w, "id");
            hearth_jw_int(w, ids[i]);
            hearth_jw_key(w, "piece");
            if (hearth_utf8_valid(p.ptr, p.len, NULL)) hearth_jw_str(w, p.ptr, p.len);
            else {
                hearth_jw_arr(w);
                for (size_t k = 0; k < p.len; k++) hearth_jw_int(w, (unsigned char)p.ptr[k]);
                hearth_jw_arr_end(w);
            }
            hearth_jw_obj_end(w);
        }
        hearth_jw_arr_end(w);
    }
    hearth_jw_obj_end(w);
    free(ids);
    return true;
}

/* The prompt of vLLM's chat form: the chat body, with add_generation_prompt false passed to the
 * template when asked (a copy of the body then carries it in chat_template_kwargs). */
/* The served template renders every prompt: a request's own is refused, not dropped. */
static bool own_template(const cJSON *root, hearth_api_err *e) {
    if (!hearth_req_field(root, "chat_template")) return false;
    hearth_api_fail(e, HEARTH_E_UNSUPPORTED, "unsupported", "chat_template",
                    "a per-request chat template is not supported by hearth (start the server with "
                    "--chat-template-file)");
    return true;
}

static bool vllm_chat_ids(hearth_server *s, const cJSON *root, hearth_span raw, int32_t **ids, size_t *n,
                          hearth_api_err *e) {
    bool gen = true, cont = false;
    if (own_template(root, e)) return false;
    if (hearth_req_bool(root, "add_generation_prompt", &gen, e) < 0 ||
        hearth_req_bool(root, "continue_final_message", &cont, e) < 0)
        return false;
    hearth_chat_opts co = {.raw = raw, .continue_final = cont};
    cJSON *copy = NULL;
    if (!gen) {
        cJSON *kw = NULL;
        if (!(copy = cJSON_Duplicate(root, true))) return hearth_api_oom(e);
        kw = cJSON_GetObjectItemCaseSensitive(copy, "chat_template_kwargs");
        if (!cJSON_IsObject(kw)) {
            cJSON_DeleteItemFromObjectCaseSensitive(copy, "chat_template_kwargs");
            kw = cJSON_AddObjectToObject(copy, "chat_template_kwargs");
        }
        cJSON_DeleteItemFromObjectCaseSensitive(kw, "add_generation_prompt");
        if (!kw || !cJSON_AddFalseToObject(kw, "add_generation_prompt")) {
            cJSON_Delete(copy);
            return hearth_api_oom(e);
        }
        co.raw = (hearth_span){NULL, 0}; /* the copy's numbers are cJSON's */
    }
    bool ok = hearth_chat_prompt_opts(s, copy ? copy : root, &co, ids, n, e);
    hearth_cx_grammar_destroy(co.constraint);
    free(co.constraint_fed);
    cJSON_Delete(copy);
    return ok;
}

/* vLLM: {"count", "max_model_len", "tokens", "token_strs"}. */
static bool tokenize_vllm(hearth_server *s, const cJSON *root, hearth_span raw, hearth_jw *w, hearth_api_err *e) {
    const hearth_tok *tok = hearth_model_tok(s->m);
    bool strs = false;
    int32_t *ids = NULL;
    size_t n = 0;
    if (hearth_req_bool(root, "return_token_strs", &strs, e) < 0) return false;
    if (hearth_req_field(root, "messages")) {
        bool add = false; /* the template writes the special tokens; a doubled BOS is dropped anyway */
        if (hearth_req_bool(root, "add_special_tokens", &add, e) < 0) return false;
        if (!vllm_chat_ids(s, root, raw, &ids, &n, e)) return false;
    } else {
        const char *prompt = NULL;
        bool add = true;
        if (hearth_req_str(root, "prompt", &prompt, e) < 0 || hearth_req_bool(root, "add_special_tokens", &add, e) < 0)
            return false;
        if (hearth_tok_encode(tok, prompt, strlen(prompt), add, true, &ids, &n))
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "prompt", "the prompt could not be tokenized");
    }
    hearth_jw_obj(w);
    hearth_jw_key(w, "count");
    hearth_jw_int(w, (int64_t)n);
    hearth_jw_key(w, "max_model_len");
    hearth_jw_int(w, hearth_engine_n_ctx(s->e));
    hearth_jw_key(w, "tokens");
    send_ids(w, ids, n);
    hearth_jw_key(w, "token_strs");
    if (!strs) hearth_jw_null(w);
    else {
        hearth_jw_arr(w);
        for (size_t i = 0; i < n; i++) {
            hearth_span t = hearth_tok_text(tok, ids[i]);
            hearth_jw_str(w, t.ptr, t.len);
        }
        hearth_jw_arr_end(w);
    }
    hearth_jw_obj_end(w);
    free(ids);
    return true;
}

static void answer(hearth_http_req *r, bool ok, hearth_jw *w, const hearth_api_err *e) {
    if (ok) hearth_http_send_json(r, 200, w);
    else hearth_http_send_error(r, e);
    hearth_jw_fini(w);
}

void hearth_tokenize(hearth_http_req *r) {
    hearth_api_err e;
    hearth_jw w;
    hearth_jw_init(&w);
    cJSON *root = hearth_req_parse(r, &e);
    bool ok = false;
    if (root) {
        if (hearth_req_field(root, "content")) ok = tokenize_llama(r->srv, root, &w, &e);
        else if (hearth_req_field(root, "prompt") || hearth_req_field(root, "messages"))
            ok = tokenize_vllm(r->srv, root, (hearth_span){r->body, r->n_body}, &w, &e);
        else
            hearth_api_fail(&e, HEARTH_E_INVALID, "missing_required_parameter", "content",
                            "send 'content' (llama-server's form) or 'prompt' / 'messages' (vLLM's)");
    }
    cJSON_Delete(root);
    answer(r, ok, &w, &e);
}

void hearth_detokenize(hearth_http_req *r) {
    hearth_api_err e;
    hearth_jw w;
    hearth_jw_init(&w);
    const hearth_tok *tok = hearth_model_tok(r->srv->m);
    int32_t n_vocab = hearth_tok_n_vocab(tok);
    int32_t *ids = NULL;
    char *text = NULL;
    bool ok = false;
    cJSON *root = hearth_req_parse(r, &e);
    const cJSON *t = root ? hearth_req_field(root, "tokens") : NULL;
    if (!root) goto out;
    if (!cJSON_IsArray(t)) {
        hearth_api_fail(&e, HEARTH_E_INVALID, t ? "invalid_type" : "missing_required_parameter", "tokens",
                        "'tokens' must be a list of token ids");
        goto out;
    }
    int n = cJSON_GetArraySize(t), i = 0;
    if (!(ids = malloc((size_t)(n ? n : 1) * sizeof *ids))) {
        hearth_api_oom(&e);
        goto out;
    }
    for (const cJSON *it = t->child; it; it = it->next, i++) {
        double v = cJSON_IsNumber(it) ? it->valuedouble : -1;
        if (v != (double)(int32_t)v || v < 0 || v >= n_vocab) {
            hearth_api_fail(&e, HEARTH_E_INVALID, "invalid_value", "tokens", "token ids must be integers in [0, %d)",
                            n_vocab);
            goto out;
        }
        ids[i] = (int32_t)v;
    }
    if (!(text = hearth_tok_decode(tok, ids, (size_t)n, true))) {
        hearth_api_oom(&e);
        goto out;
    }
    hearth_jw_obj(&w);
    hearth_jw_key(&w, "content");
    hearth_jw_cstr(&w, text);
    hearth_jw_key(&w, "prompt");
    hearth_jw_cstr(&w, text);
    hearth_jw_obj_end(&w);
    ok = true;
out:
    free(text);
    free(ids);
    cJSON_Delete(root);
    answer(r, ok, &w, &e);
}

void hearth_apply_template(hearth_http_req *r) {
    hearth_api_err e;
    hearth_jw w;
    hearth_jw_init(&w);
    int32_t *ids = NULL;
    size_t n = 0;
    hearth_chat_opts co = {.raw = {r->body, r->n_body}, .continue_final = -1, .want_text = true};
    cJSON *root = hearth_req_parse(r, &e);
    bool ok = root && !own_template(root, &e) && hearth_chat_prompt_opts(r->srv, root, &co, &ids, &n, &e);
    if (ok) {
        hearth_jw_obj(&w);
        hearth_jw_key(&w, "prompt");
        hearth_jw_str(&w, co.text, co.n_text);
        hearth_jw_obj_end(&w);
    }
    hearth_cx_grammar_destroy(co.constraint);
    free(co.constraint_fed);
    free(co.text);
    free(ids);
    cJSON_Delete(root);
    answer(r, ok, &w, &e);
}

/* A float setting as the decimal it was given as (0.7, not 0.69999998). */
static double round6(float v) { return round((double)v * 1e6) / 1e6; }

static void token_text(hearth_jw *w, const hearth_tok *tok, int32_t id) {
    hearth_span t = hearth_tok_piece(tok, id, true);
    if (id < 0) hearth_jw_null(w);
    else hearth_jw_str(w, t.ptr, t.len);
}

void hearth_props(hearth_http_req *r) {
    hearth_server *s = r->srv;
    const hearth_tok *tok = hearth_model_tok(s->m);
    hearth_engine_info ei;
    hearth_engine_info_get(s->e, &ei);
    const char *tmpl = s->tmpl_src ? s->tmpl_src : hearth_model_chat_template(s->m);
    int32_t max_tokens = 0;
    hearth_sampler_params sp = hearth_sampling_defaults(&s->p, hearth_model_gen_defaults(s->m), &max_tokens);
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_jw_obj(&w);
    hearth_jw_key(&w, "model_alias");
    hearth_jw_cstr(&w, s->model_id);
    hearth_jw_key(&w, "model_path");
    hearth_jw_cstr(&w, s->model_path ? s->model_path : s->model_id);
    hearth_jw_key(&w, "n_ctx");
    hearth_jw_int(&w, ei.n_ctx);
    hearth_jw_key(&w, "total_slots");
    hearth_jw_int(&w, ei.batch);
    hearth_jw_key(&w, "default_generation_settings");
    hearth_jw_obj(&w);
    hearth_jw_key(&w, "n_ctx");
    hearth_jw_int(&w, ei.n_ctx);
    hearth_jw_key(&w, "model");
    hearth_jw_cstr(&w, s->model_id);
    hearth_jw_key(&w, "params"); /* the server's defaults (a request's own fields win) */
    hearth_jw_obj(&w);
    hearth_jw_key(&w, "temperature");
    hearth_jw_num(&w, round6(sp.temperature));
    hearth_jw_key(&w, "top_p");
    hearth_jw_num(&w, round6(sp.top_p));
    hearth_jw_key(&w, "top_k");
    hearth_jw_int(&w, sp.top_k);
    hearth_jw_key(&w, "min_p");
    hearth_jw_num(&w, round6(sp.min_p));
    hearth_jw_key(&w, "seed");
    hearth_jw_int(&w, s->p.seed >= 0 ? s->p.seed : -1);
    hearth_jw_key(&w, "n_predict"); /* -1: no server-wide cap */
    hearth_jw_int(&w, max_tokens > 0 ? max_tokens : -1);
    hearth_jw_obj_end(&w);
    hearth_jw_obj_end(&w);
    hearth_jw_key(&w, "chat_template");
    hearth_jw_cstr(&w, tmpl ? tmpl : "");
    hearth_jw_key(&w, "chat_template_usable");
    hearth_jw_bool(&w, s->tmpl != NULL);
    hearth_jw_key(&w, "bos_token");
    token_text(&w, tok, hearth_tok_bos(tok));
    hearth_jw_key(&w, "eos_token");
    token_text(&w, tok, hearth_tok_eos(tok));
    hearth_jw_key(&w, "modalities");
    hearth_jw_obj(&w);
    hearth_jw_key(&w, "vision"); /* llama-server's shape: the model has the tower (store/modality.h) */
    hearth_jw_bool(&w, (s->media_caps & HEARTH_MEDIA_CAP_IMAGE) != 0);
    hearth_jw_key(&w, "audio");
    hearth_jw_bool(&w, (s->media_caps & HEARTH_MEDIA_CAP_AUDIO) != 0);
    hearth_jw_obj_end(&w);
    hearth_jw_key(&w, "build_info");
    hearth_jw_cstr(&w, "hearth " HEARTH_VERSION);
    hearth_jw_obj_end(&w);
    hearth_http_send_json(r, 200, &w);
    hearth_jw_fini(&w);
}
