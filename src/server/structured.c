/*
 * structured.c - request schemas to grammars, and the served model's matcher vocabulary (see
 * structured.h).
 *
 * The vocabulary holds each token's bytes as the reply's text sees them: a normal token's
 * piece; a control token's text only when it is part of the model's tool-call or reasoning markup (the
 * decoder drops the others, and the tool-call parser is fed those: generate.c), else nothing,
 * so the matcher never allows it; end-of-generation tokens are marked, allowed only where the
 * grammar is complete.
 */
#include "server/structured.h"
#include "constrain/gbnf.h"
#include "constrain/regex.h"
#include "constrain/schema.h"
#include "server/reasoning.h"
#include "server/reqjson.h"

#include <stdlib.h>
#include <string.h>

static bool refuse(hearth_api_err *e, const char *param, hearth_status st, const char *msg) {
    if (st == HEARTH_E_NOMEM) return hearth_api_oom(e);
    bool schema = !strcmp(param, "response_format") || !strcmp(param, "text.format") || strstr(param, "json");
    const char *code = st == HEARTH_E_UNSUPPORTED ? (schema ? "unsupported_schema" : "unsupported")
                                                  : (schema ? "invalid_schema" : "invalid_value");
    return hearth_api_fail(e, st == HEARTH_E_UNSUPPORTED ? HEARTH_E_UNSUPPORTED : HEARTH_E_INVALID, code, param,
                           "%s: %s", param, msg);
}

/* Build root into *out, or fill e from the builder's or the build's failure. */
static bool finish(hearth_cx_builder *b, int root, const char *param, hearth_cx_grammar **out, hearth_api_err *e) {
    const char *msg = "";
    hearth_status st = hearth_cx_builder_status(b, &msg);
    if (st || root < 0) {
        bool r = refuse(e, param, st ? st : HEARTH_E_INVALID, st ? msg : "the schema could not be compiled");
        hearth_cx_builder_destroy(b);
        return r;
    }
    hearth_err err = {0};
    *out = hearth_cx_build(b, root, &err);
    hearth_cx_builder_destroy(b);
    return *out ? true : refuse(e, param, err.code, err.msg);
}

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

/* One call's body for tool fn in format f (JSON or Python call), params its parameters. */
static int call_body(hearth_cx_json *j, hearth_tc_format f, const cJSON *fn, const cJSON *params) {
    hearth_cx_builder *b = j->b;
    const char *name = get(fn, "name")->valuestring;
    if (f == HEARTH_TC_GEMMA) {
        int nm = hearth_cx_rule_lit(b, name, strlen(name)), args = hearth_cx_json_kwargs(j, params);
        return nm < 0 || args < 0 ? -1 : hearth_cx_rule_seq(b, (int[]){nm, args}, 2);
    }
    int ws = hearth_cx_json_ws(j);
    int open = hearth_cx_rule_lit(b, "{", 1), close = hearth_cx_rule_lit(b, "}", 1);
    int colon = hearth_cx_rule_lit(b, ":", 1), comma = hearth_cx_rule_lit(b, ",", 1);
    int k_name = hearth_cx_json_string_lit(j, "name", 4);
    const char *ak = f == HEARTH_TC_LLAMA3 ? "parameters" : "arguments";
    int k_args = hearth_cx_json_string_lit(j, ak, strlen(ak));
    int v_name = hearth_cx_json_string_lit(j, name, strlen(name));
    int v_args = params ? hearth_cx_json_value(j, params) : hearth_cx_json_object(j);
    int seq[] = {open, ws, k_name, ws, colon, ws, v_name, ws, comma, ws, k_args, ws, colon, ws, v_args, ws, close};
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++)
        if (seq[i] < 0) return -1;
    return hearth_cx_rule_seq(b, seq, (int)(sizeof seq / sizeof seq[0]));
}

/* prefix then root, as a rule (root when there is no prefix) */
static int prefixed(hearth_cx_builder *b, const char *prefix, int root) {
    if (!prefix || root < 0) return root;
    int p = hearth_cx_rule_lit(b, prefix, strlen(prefix));
    return p < 0 ? -1 : hearth_cx_rule_seq(b, (int[]){p, root}, 2);
}

const char *hearth_structured_prefix(int rs, bool open) {
    return open && rs == HEARTH_RS_THINK ? "</think>\n\n" : NULL;
}

bool hearth_structured_tools(hearth_tc_format f, const cJSON *tools, const char *only, bool several,
                             const char *prefix, hearth_cx_grammar **out, hearth_api_err *e) {
    *out = NULL;
    if (f <= HEARTH_TC_NONE || f >= HEARTH_TC_COUNT)
        return hearth_api_fail(e, HEARTH_E_UNSUPPORTED, "unsupported", "tool_choice",
                               "this model has no tool-call format to force a call in");
    if (f == HEARTH_TC_HARMONY)
        return hearth_api_fail(e, HEARTH_E_UNSUPPORTED, "unsupported", "tool_choice",
                               "forcing a call is not supported for the harmony format (gpt-oss) yet");
    hearth_cx_builder *b = hearth_cx_builder_create(hearth_cx_limits_default());
    if (!b) return hearth_api_oom(e);
    hearth_cx_json j;
    hearth_cx_json_init(&j, b, NULL);
    j.python = f == HEARTH_TC_GEMMA;
    /* strings must not close the markup: the parser ends a block at its first closing marker */
    if (f == HEARTH_TC_HERMES) memcpy(j.avoid, "</", 3);
    if (f == HEARTH_TC_GEMMA) memcpy(j.avoid, "``", 3);
    int n = cJSON_GetArraySize(tools), k = 0;
    int *alts = malloc((size_t)(n ? n : 1) * sizeof *alts);
    if (!alts) {
        hearth_cx_builder_destroy(b);
        return hearth_api_oom(e);
    }
    for (const cJSON *t = tools ? tools->child : NULL; t; t = t->next) {
        if (only && strcmp(get(get(t, "function"), "name")->valuestring, only)) {
            n--;
            continue;
        }
        const cJSON *params = get(get(t, "function"), "parameters");
        /* a body rebuilt from another dialect holds the schema as raw JSON text (chatmap.c) */
        cJSON *parsed = cJSON_IsRaw(params) ? cJSON_Parse(params->valuestring) : NULL;
        if (parsed) params = parsed;
        j.doc = params; /* $refs resolve inside each tool's schema */
        j.depth = 0;
        alts[k++] = call_body(&j, f, get(t, "function"), params);
        cJSON_Delete(parsed);
        if (alts[k - 1] < 0) break;
    }
    int call = k == n && n > 0 ? hearth_cx_rule_any(b, alts, n) : -1;
    free(alts);
    int ws = hearth_cx_json_ws(&j), root = -1;
    switch (f) {
    case HEARTH_TC_HERMES: {
        int open = hearth_cx_rule_lit(b, "<tool_call>\n", 12), close = hearth_cx_rule_lit(b, "\n</tool_call>", 13);
        int one = call < 0 || open < 0 || close < 0 ? -1 : hearth_cx_rule_seq(b, (int[]){open, call, close}, 3);
        root = one < 0 ? -1 : hearth_cx_rule_repeat(b, one, ws, 1, several ? -1 : 1);
        break;
    }
    case HEARTH_TC_LLAMA3: {
        int semi = hearth_cx_rule_lit(b, ";", 1);
        int sep = semi < 0 ? -1 : hearth_cx_rule_seq(b, (int[]){ws, semi, ws}, 3);
        root = call < 0 || sep < 0 ? -1 : hearth_cx_rule_repeat(b, call, sep, 1, several ? -1 : 1);
        break;
    }
    case HEARTH_TC_MISTRAL: {
        int open = hearth_cx_rule_lit(b, "[TOOL_CALLS][", 13), close = hearth_cx_rule_lit(b, "]", 1);
        int c = hearth_cx_rule_lit(b, ",", 1);
        int sep = c < 0 ? -1 : hearth_cx_rule_seq(b, (int[]){ws, c, ws}, 3);
        int calls = call < 0 || sep < 0 ? -1 : hearth_cx_rule_repeat(b, call, sep, 1, several ? -1 : 1);
        root = calls < 0 || open < 0 || close < 0 ? -1 : hearth_cx_rule_seq(b, (int[]){open, calls, close}, 3);
        break;
    }
    default: { /* gemma */
        int open = hearth_cx_rule_lit(b, "```tool_code\n", 13), close = hearth_cx_rule_lit(b, "\n```", 4);
        int nl = hearth_cx_rule_lit(b, "\n", 1);
        int calls = call < 0 || nl < 0 ? -1 : hearth_cx_rule_repeat(b, call, nl, 1, several ? -1 : 1);
        root = calls < 0 || open < 0 || close < 0 ? -1 : hearth_cx_rule_seq(b, (int[]){open, calls, close}, 3);
        break;
    }
    }
    return finish(b, prefixed(b, prefix, root), "tools", out, e);
}

/* JSON valid for schema (NULL: any object), the value alone: the reply ends where it does. */
static bool schema_grammar(const cJSON *schema, const char *param, const char *prefix, hearth_cx_grammar **out,
                           hearth_api_err *e) {
    hearth_cx_builder *b = hearth_cx_builder_create(hearth_cx_limits_default());
    if (!b) return hearth_api_oom(e);
    hearth_cx_json j;
    hearth_cx_json_init(&j, b, schema);
    int root = schema ? hearth_cx_json_value(&j, schema) : hearth_cx_json_object(&j);
    return finish(b, prefixed(b, prefix, root), param, out, e);
}

bool hearth_structured_format(const cJSON *rf, const char *param, const char *prefix, hearth_cx_grammar **out,
                              hearth_api_err *e) {
    *out = NULL;
    const cJSON *t = cJSON_IsObject(rf) ? get(rf, "type") : NULL;
    if (!cJSON_IsString(t))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", param, "'%s' must be an object with a 'type'",
                               param);
    const char *type = t->valuestring;
    if (!strcmp(type, "text")) return true;
    const cJSON *schema = NULL;
    if (!strcmp(type, "json_schema")) {
        const cJSON *js = get(rf, "json_schema"); /* chat: {json_schema: {name, schema, strict}} */
        schema = get(cJSON_IsObject(js) ? js : rf, "schema");
        if (!schema)
            return hearth_api_fail(e, HEARTH_E_INVALID, "missing_required_parameter", param,
                                   "'%s' of type json_schema needs a 'schema'", param);
    } else if (strcmp(type, "json_object")) {
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", param,
                               "'%s.type' must be text, json_object or json_schema (got '%.40s')", param, type);
    }
    return schema_grammar(schema, param, prefix, out, e);
}

/* The request fields that constrain the output, in the order they are looked at. */
static const char *const constraint_fields[] = {"response_format", "guided_json", "json_schema", "guided_choice",
                                                "guided_regex", "guided_grammar", "grammar", "structured_outputs"};

/* Does field v (named k) constrain anything? (response_format {"type": "text"} does not.) */
static bool constrains(const char *k, const cJSON *v) {
    if (strcmp(k, "response_format")) return true;
    const cJSON *t = cJSON_IsObject(v) ? get(v, "type") : NULL;
    return !(cJSON_IsString(t) && !strcmp(t->valuestring, "text"));
}

const char *hearth_structured_requested(const cJSON *root) {
    for (size_t i = 0; i < sizeof constraint_fields / sizeof constraint_fields[0]; i++) {
        const cJSON *v = hearth_req_field(root, constraint_fields[i]);
        if (v && constrains(constraint_fields[i], v)) return constraint_fields[i];
    }
    return NULL;
}

/* A JSON Schema given as an object or as JSON text (vLLM takes both). */
static bool json_field(const cJSON *v, const char *param, const char *prefix, hearth_cx_grammar **out,
                       hearth_api_err *e) {
    if (cJSON_IsObject(v)) return schema_grammar(v, param, prefix, out, e);
    cJSON *doc = cJSON_IsString(v) ? cJSON_Parse(v->valuestring) : NULL;
    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", param,
                               "'%s' must be a JSON Schema (an object, or its JSON text)", param);
    }
    bool ok = schema_grammar(doc, param, prefix, out, e);
    cJSON_Delete(doc);
    return ok;
}

static bool choice_field(const cJSON *v, const char *param, const char *prefix, hearth_cx_grammar **out,
                         hearth_api_err *e) {
    int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
    if (n < 1) return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", param,
                                      "'%s' must be a non-empty list of strings", param);
    const char **lits = malloc((size_t)n * sizeof *lits);
    size_t *lens = malloc((size_t)n * sizeof *lens);
    if (!lits || !lens) {
        free(lits);
        free(lens);
        return hearth_api_oom(e);
    }
    int k = 0;
    for (const cJSON *c = v->child; c; c = c->next, k++) {
        if (!cJSON_IsString(c)) {
            free(lits);
            free(lens);
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", param,
                                   "'%s' must be a non-empty list of strings", param);
        }
        lits[k] = c->valuestring;
        lens[k] = strlen(c->valuestring);
    }
    hearth_cx_builder *b = hearth_cx_builder_create(hearth_cx_limits_default());
    int root = b ? hearth_cx_rule_choice(b, lits, lens, n) : -1;
    free(lits);
    free(lens);
    if (!b) return hearth_api_oom(e);
    return finish(b, prefixed(b, prefix, root), param, out, e);
}

/* A regex (gbnf false) or a GBNF grammar, as a string field. */
static bool text_field(const cJSON *v, bool gbnf, const char *param, const char *prefix, hearth_cx_grammar **out,
                       hearth_api_err *e) {
    if (!cJSON_IsString(v))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", param, "'%s' must be a string (%s)", param,
                               gbnf ? "a GBNF grammar" : "a regular expression");
    hearth_cx_builder *b = hearth_cx_builder_create(hearth_cx_limits_default());
    if (!b) return hearth_api_oom(e);
    size_t n = strlen(v->valuestring);
    int root = gbnf ? hearth_cx_gbnf(b, v->valuestring, n) : hearth_cx_regex(b, v->valuestring, n);
    return finish(b, prefixed(b, prefix, root), param, out, e);
}

/* vLLM's structured_outputs: exactly one of json, json_object, regex, choice, grammar. */
static bool structured_outputs(const cJSON *so, const char *prefix, hearth_cx_grammar **out, hearth_api_err *e) {
    if (!cJSON_IsObject(so))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "structured_outputs",
                               "'structured_outputs' must be an object");
    const cJSON *one = NULL;
    for (const cJSON *c = so->child; c; c = c->next) {
        const char *k = c->string;
        if (cJSON_IsNull(c) || !strcmp(k, "backend") || !strcmp(k, "disable_fallback")) continue;
        if (strcmp(k, "json") && strcmp(k, "json_object") && strcmp(k, "regex") && strcmp(k, "choice") &&
            strcmp(k, "grammar"))
            return hearth_api_fail(e, HEARTH_E_UNSUPPORTED, "unsupported", "structured_outputs",
                                   "'structured_outputs.%.40s' is not supported by hearth (supported: json, "
                                   "json_object, regex, choice, grammar)", k);
        if (!strcmp(k, "json_object") && cJSON_IsFalse(c)) continue;
        if (one)
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "structured_outputs",
                                   "'structured_outputs' may hold only one constraint (got '%.40s' and '%.40s')",
                                   one->string, k);
        one = c;
    }
    if (!one)
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "structured_outputs",
                               "'structured_outputs' needs one of json, json_object, regex, choice, grammar");
    const char *k = one->string;
    if (!strcmp(k, "json")) return json_field(one, "structured_outputs.json", prefix, out, e);
    if (!strcmp(k, "json_object")) {
        if (!cJSON_IsTrue(one))
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "structured_outputs.json_object",
                                   "'structured_outputs.json_object' must be a boolean");
        return schema_grammar(NULL, "structured_outputs.json_object", prefix, out, e);
    }
    if (!strcmp(k, "choice")) return choice_field(one, "structured_outputs.choice", prefix, out, e);
    return text_field(one, !strcmp(k, "grammar"), !strcmp(k, "grammar") ? "structured_outputs.grammar"
                                                                         : "structured_outputs.regex", prefix, out, e);
}

bool hearth_structured_request(const cJSON *root, const char *prefix, hearth_cx_grammar **out, hearth_api_err *e) {
    *out = NULL;
    const char *which = NULL;
    const cJSON *v = NULL;
    for (size_t i = 0; i < sizeof constraint_fields / sizeof constraint_fields[0]; i++) {
        const cJSON *f = hearth_req_field(root, constraint_fields[i]);
        if (!f || !constrains(constraint_fields[i], f)) continue;
        if (which)
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_request", constraint_fields[i],
                                   "only one output constraint may be given per request: '%s' and '%s' were both "
                                   "sent", which, constraint_fields[i]);
        which = constraint_fields[i];
        v = f;
    }
    if (hearth_req_field(root, "guided_whitespace_pattern"))
        return hearth_api_fail(e, HEARTH_E_UNSUPPORTED, "unsupported", "guided_whitespace_pattern",
                               "'guided_whitespace_pattern' is not supported by hearth");
    if (!which) {
        const cJSON *rf = hearth_req_field(root, "response_format"); /* "text": still checked */
        return !rf || hearth_structured_format(rf, "response_format", prefix, out, e);
    }
    if (!strcmp(which, "response_format")) return hearth_structured_format(v, which, prefix, out, e);
    if (!strcmp(which, "guided_json") || !strcmp(which, "json_schema")) return json_field(v, which, prefix, out, e);
    if (!strcmp(which, "guided_choice")) return choice_field(v, which, prefix, out, e);
    if (!strcmp(which, "guided_regex")) return text_field(v, false, which, prefix, out, e);
    if (!strcmp(which, "structured_outputs")) return structured_outputs(v, prefix, out, e);
    return text_field(v, true, which, prefix, out, e); /* guided_grammar, grammar */
}

/* The served model's vocabulary, built on first use (a pass over the tokens and a sort). */
static hearth_cx_vocab *vocab(hearth_server *s) {
    pthread_mutex_lock(&s->cx_mu);
    if (!s->cx_vocab) {
        const hearth_tok *tok = hearth_model_tok(s->m);
        int32_t n = hearth_tok_n_vocab(tok);
        hearth_span *pieces = calloc((size_t)n, sizeof *pieces);
        bool *eog = calloc((size_t)n, sizeof *eog);
        if (pieces && eog) {
            for (int32_t i = 0; i < n; i++) {
                hearth_span p = hearth_tok_piece(tok, i, false);
                if (hearth_tok_is_control(tok, i)) {
                    hearth_span t = hearth_tok_piece(tok, i, true);
                    bool marker = hearth_tc_is_marker(s->tc_format, t.ptr, t.len) ||
                                  hearth_rs_is_marker(s->rs_format, t.ptr, t.len);
                    p = marker ? t : (hearth_span){"", 0};
                }
                pieces[i] = p;
                eog[i] = hearth_tok_is_eog(tok, i);
            }
            s->cx_vocab = hearth_cx_vocab_create(n, pieces, eog);
        }
        free(pieces);
        free(eog);
    }
    hearth_cx_vocab *v = s->cx_vocab;
    pthread_mutex_unlock(&s->cx_mu);
    return v;
}

hearth_cx_matcher *hearth_structured_matcher(hearth_server *s, hearth_cx_grammar *g) {
    hearth_cx_vocab *v = vocab(s);
    if (!v) {
        hearth_cx_grammar_destroy(g);
        return NULL;
    }
    return hearth_cx_matcher_create(g, v);
}
