/*
 * reqjson.c - request-body checks and typed field readers (see reqjson.h).
 *
 * The depth check runs on the raw bytes before cJSON sees them: cJSON recurses once per
 * level (up to 1000) on the connection thread's stack, and a body of 20000 '[' must be
 * refused without that. The same pass refuses what cJSON would let through: raw control
 * bytes (JSON allows none inside strings, and only tab, LF, CR between tokens, where cJSON
 * skips every byte up to space) and the escape \u0000, which cJSON decodes into a NUL that
 * silently cuts the string short.
 */
#include "server/reqjson.h"

#include <math.h>
#include <string.h>

/* Deepest nesting of [ and { outside strings; *bad the offset of the first raw control byte
 * (in a string, or other than tab/LF/CR between tokens) or \u0000 escape, n when none, with
 * *nul telling which. */
static int json_scan(const char *s, size_t n, size_t *bad, bool *nul) {
    int d = 0, max = 0;
    bool str = false;
    *bad = n;
    *nul = false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 && (str || (c != '\t' && c != '\n' && c != '\r'))) {
            *bad = i;
            break;
        }
        if (str) {
            if (c == '\\') {
                if (i + 5 < n && s[i + 1] == 'u' && !memcmp(s + i + 2, "0000", 4)) {
                    *bad = i;
                    *nul = true;
                    break;
                }
                i++;
            } else if (c == '"') str = false;
        } else if (c == '"') str = true;
        else if (c == '[' || c == '{') {
            if (++d > max) max = d;
        } else if (c == ']' || c == '}') d--;
    }
    return max;
}

cJSON *hearth_req_parse(hearth_http_req *r, hearth_api_err *e) {
    size_t bad = 0;
    if (r->n_body == 0) {
        hearth_api_fail(e, HEARTH_E_FORMAT, "invalid_json", NULL, "the request body is empty: send a JSON object");
        return NULL;
    }
    if (!hearth_utf8_valid(r->body, r->n_body, &bad)) {
        hearth_api_fail(e, HEARTH_E_FORMAT, "invalid_encoding", NULL, "the request body is not valid UTF-8 (byte %zu)",
                        bad);
        return NULL;
    }
    bool nul = false;
    int depth = json_scan(r->body, r->n_body, &bad, &nul);
    if (bad < r->n_body) {
        if (nul)
            hearth_api_fail(e, HEARTH_E_FORMAT, "invalid_json", NULL,
                            "the request JSON holds \\u0000 (byte %zu): NUL characters are not accepted in text", bad);
        else
            hearth_api_fail(e, HEARTH_E_FORMAT, "invalid_json", NULL,
                            "the request JSON holds a raw control byte 0x%02x (byte %zu): escape it (\\n, \\u001f...)",
                            (unsigned)(unsigned char)r->body[bad], bad);
        return NULL;
    }
    if (depth > HEARTH_REQ_MAX_DEPTH) {
        hearth_api_fail(e, HEARTH_E_FORMAT, "invalid_json", NULL, "the request JSON nests deeper than %d levels",
                        HEARTH_REQ_MAX_DEPTH);
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(r->body, r->n_body, &end, 0);
    if (root && end) {
        while (end < r->body + r->n_body && (*end == ' ' || *end == '\n' || *end == '\r' || *end == '\t')) end++;
        if (end != r->body + r->n_body) {
            cJSON_Delete(root);
            root = NULL;
        }
    }
    if (!root) {
        size_t at = end && end >= r->body ? (size_t)(end - r->body) : 0;
        hearth_api_fail(e, HEARTH_E_FORMAT, "invalid_json", NULL,
                        "We could not parse the JSON body of your request (near byte %zu).", at);
        return NULL;
    }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        hearth_api_fail(e, HEARTH_E_FORMAT, "invalid_json", NULL, "the request body must be a JSON object");
        return NULL;
    }
    return root;
}

const cJSON *hearth_req_field(const cJSON *obj, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, k);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

int hearth_req_num(const cJSON *obj, const char *k, double lo, double hi, double *out, hearth_api_err *e) {
    const cJSON *v = hearth_req_field(obj, k);
    if (!v) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
        hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", k, "'%s' must be a number", k);
        return -1;
    }
    if (v->valuedouble < lo || v->valuedouble > hi) {
        hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", k, "'%s' must be between %g and %g (got %g)", k, lo, hi,
                        v->valuedouble);
        return -1;
    }
    *out = v->valuedouble;
    return 1;
}

int hearth_req_int(const cJSON *obj, const char *k, double lo, double hi, int64_t *out, hearth_api_err *e) {
    const cJSON *v = hearth_req_field(obj, k);
    if (!v) return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || !isfinite(v->valuedouble)) {
        hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", k, "'%s' must be an integer", k);
        return -1;
    }
    if (v->valuedouble < lo || v->valuedouble > hi) {
        hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", k, "'%s' must be between %.0f and %.0f (got %.0f)", k,
                        lo, hi, v->valuedouble);
        return -1;
    }
    *out = (int64_t)v->valuedouble;
    return 1;
}

int hearth_req_bool(const cJSON *obj, const char *k, bool *out, hearth_api_err *e) {
    const cJSON *v = hearth_req_field(obj, k);
    if (!v) return 0;
    if (!cJSON_IsBool(v)) {
        hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", k, "'%s' must be a boolean", k);
        return -1;
    }
    *out = cJSON_IsTrue(v);
    return 1;
}

int hearth_req_str(const cJSON *obj, const char *k, const char **out, hearth_api_err *e) {
    const cJSON *v = hearth_req_field(obj, k);
    if (!v) return 0;
    if (!cJSON_IsString(v)) {
        hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", k, "'%s' must be a string", k);
        return -1;
    }
    *out = v->valuestring;
    return 1;
}

/* What a field's neutral value is (its presence at that value changes nothing). */
enum { NEUTRAL_NONE, NEUTRAL_NUM, NEUTRAL_FALSE, NEUTRAL_TRUE, NEUTRAL_EMPTY };

typedef struct {
    const char *name;
    int         neutral;
    double      value; /* NEUTRAL_NUM */
    bool        extra; /* only with extras */
    const char *why;
} unhonoured;

static const unhonoured UNHONOURED[] = {
    {"lora", NEUTRAL_EMPTY, 0, false, "per-request LoRA scales ('lora') are not supported by hearth: mount adapters "
     "with POST /v1/adapters and pick one with 'adapter'"},
    {"hlg", NEUTRAL_NONE, 0, false, "'hlg' is not supported by hearth"},
    {"typical_p", NEUTRAL_NUM, 1, true, "locally typical sampling (typical_p) is not supported by hearth"},
    {"tfs_z", NEUTRAL_NUM, 1, true, "tail-free sampling (tfs_z) is not supported by hearth"},
    {"mirostat", NEUTRAL_NUM, 0, true, "mirostat sampling is not supported by hearth"},
    {"dry_multiplier", NEUTRAL_NUM, 0, true, "DRY sampling is not supported by hearth"},
    {"top_n_sigma", NEUTRAL_NUM, -1, true, "top-n-sigma sampling is not supported by hearth"},
    {"dynatemp_range", NEUTRAL_NUM, 0, true, "dynamic temperature is not supported by hearth"},
    {"length_penalty", NEUTRAL_NUM, 1, true, "length_penalty (beam search) is not supported by hearth"},
    {"use_beam_search", NEUTRAL_FALSE, 0, true, "beam search is not supported by hearth"},
    {"stop_token_ids", NEUTRAL_EMPTY, 0, true, "stop_token_ids is not supported by hearth (send 'stop' strings)"},
    {"bad_words", NEUTRAL_EMPTY, 0, true, "bad_words is not supported by hearth (send 'logit_bias')"},
    {"allowed_token_ids", NEUTRAL_EMPTY, 0, true, "allowed_token_ids is not supported by hearth (send 'logit_bias')"},
    {"logits_processors", NEUTRAL_EMPTY, 0, true, "logits_processors is not supported by hearth"},
    {"samplers", NEUTRAL_EMPTY, 0, true, "a custom sampler order (samplers) is not supported by hearth"},
    {"n_predict", NEUTRAL_NONE, 0, true, "n_predict is not read by hearth: send max_tokens"},
    {"include_stop_str_in_output", NEUTRAL_FALSE, 0, true, "include_stop_str_in_output is not supported by hearth"},
    {"skip_special_tokens", NEUTRAL_TRUE, 0, true, "special tokens are always left out of the text"},
    {"truncate_prompt_tokens", NEUTRAL_NONE, 0, true, "truncate_prompt_tokens is not supported by hearth"},
    {"prompt_logprobs", NEUTRAL_NUM, 0, true, "prompt_logprobs is not supported by hearth"},
    {"echo", NEUTRAL_FALSE, 0, true, "echo is not supported by hearth"},
    {"n_indent", NEUTRAL_NUM, 0, true, "n_indent is not supported by hearth"},
    {"t_max_predict_ms", NEUTRAL_NUM, 0, true, "t_max_predict_ms (a time limit) is not supported by hearth"},
    {"min_keep", NEUTRAL_NUM, 0, true, "min_keep is not supported by hearth"},
    {"post_sampling_probs", NEUTRAL_FALSE, 0, true, "post_sampling_probs is not supported by hearth (logprobs are "
     "before temperature and truncation)"},
    {"return_tokens", NEUTRAL_FALSE, 0, true, "return_tokens is not supported by hearth (send logprobs)"},
    {"response_fields", NEUTRAL_EMPTY, 0, true, "response_fields is not supported by hearth"},
    {"reasoning_control", NEUTRAL_FALSE, 0, true, "reasoning_control is not supported by hearth"},
    {"thinking_token_budget", NEUTRAL_NONE, 0, true, "a thinking token budget is not supported by hearth"},
    {"include_reasoning", NEUTRAL_TRUE, 0, true, "the reasoning is always returned (reasoning_content)"},
    {"add_generation_prompt", NEUTRAL_TRUE, 0, true,
     "add_generation_prompt false is not supported by hearth (send continue_final_message)"},
    {"spaces_between_special_tokens", NEUTRAL_TRUE, 0, true, "special tokens are always left out of the text"},
    {"return_tokens_as_token_ids", NEUTRAL_FALSE, 0, true, "return_tokens_as_token_ids is not supported by hearth"},
    {"return_token_ids", NEUTRAL_FALSE, 0, true, "return_token_ids is not supported by hearth (send logprobs)"},
    {"return_prompt_text", NEUTRAL_FALSE, 0, true, "return_prompt_text is not supported by hearth (POST "
     "/apply-template renders the prompt)"},
    {"logprob_token_ids", NEUTRAL_EMPTY, 0, true, "logprob_token_ids is not supported by hearth"},
    {"repetition_detection", NEUTRAL_EMPTY, 0, true, "repetition_detection is not supported by hearth"},
    {"watermarking", NEUTRAL_FALSE, 0, true, "watermarking is not supported by hearth"},
    {"cache_salt", NEUTRAL_NONE, 0, true, "cache_salt is not supported: the prefix cache is shared by every "
     "request of the server"},
    {"kv_transfer_params", NEUTRAL_EMPTY, 0, true, "KV transfer (disaggregated serving) is not supported by hearth"},
    {"vllm_xargs", NEUTRAL_EMPTY, 0, true, "vllm_xargs (custom extensions) are not supported by hearth"},
    {"mm_processor_kwargs", NEUTRAL_EMPTY, 0, true, "multimodal inputs are not supported yet"},
    {"chat_template", NEUTRAL_NONE, 0, true,
     "a per-request chat template is not supported by hearth (start the server with --chat-template-file)"},
};

bool hearth_req_refuse_unhonoured(const cJSON *root, bool extras, hearth_api_err *e) {
    for (size_t i = 0; i < sizeof UNHONOURED / sizeof UNHONOURED[0]; i++) {
        const unhonoured *u = &UNHONOURED[i];
        const cJSON *v = hearth_req_field(root, u->name);
        if (!v || (u->extra && !extras)) continue;
        bool neutral = false;
        switch (u->neutral) {
        case NEUTRAL_NUM: neutral = cJSON_IsNumber(v) && v->valuedouble == u->value; break;
        case NEUTRAL_FALSE: neutral = cJSON_IsFalse(v); break;
        case NEUTRAL_TRUE: neutral = cJSON_IsTrue(v); break;
        case NEUTRAL_EMPTY:
            neutral = ((cJSON_IsArray(v) || cJSON_IsObject(v)) && !v->child) || (cJSON_IsString(v) && !*v->valuestring);
            break;
        default: break;
        }
        if (!neutral) return hearth_api_fail(e, HEARTH_E_UNSUPPORTED, "unsupported", u->name, "'%s': %s", u->name,
                                             u->why);
    }
    return true;
}
