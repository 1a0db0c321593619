/*
 * chat.c - chat messages -> template context -> prompt tokens (see chat.h).
 *
 * The context is built as a cJSON tree and printed once: the template interpreter takes JSON
 * (template.h), so the server never touches its value model. Values copied from the request
 * (tool schemas, tool-call arguments, kwargs) go in as cJSON raw items holding the request's
 * own text (jraw.h) when the caller has it, so `tojson` prints 1.0 as 1.0, as transformers
 * does; a parsed number would come back as 1. BOS: templates such as Llama 3's
 * write the BOS token text themselves while the tokenizer may add one too; when the encoded
 * prompt starts with two BOS tokens the second is dropped (llama.cpp warns and does the same).
 * With --no-special-in-content, user and tool text is marked in the context and tokenized
 * with special-token text as plain text (chat_plain.h).
 */
#include "server/chat.h"
#include "server/chat_plain.h"
#include "base/buf.h"
#include "server/structured.h"
#include "base/log.h"
#include "server/chatmap.h"
#include "server/jraw.h"
#include "server/media.h"
#include "server/reqjson.h"
#include "server/toolcall_internal.h"
#include "server/vision_prompt.h"
#include "template/template.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MESSAGES 4096

/* The text of a message's content: a string, null, or an array of parts; image and audio
 * parts go to media (media.h) and take no place in the text. */
static bool content_text(const cJSON *c, int im, hearth_media_list *media, size_t max_media, cJSON **out,
                         hearth_api_err *e) {
    char param[48];
    snprintf(param, sizeof param, "messages[%d].content", im);
    if (!c || cJSON_IsNull(c)) {
        *out = cJSON_CreateString("");
        return *out != NULL || hearth_api_oom(e);
    }
    if (cJSON_IsString(c)) {
        *out = cJSON_CreateString(c->valuestring);
        return *out != NULL || hearth_api_oom(e);
    }
    if (!cJSON_IsArray(c))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", param, "'%s' must be a string or a list of parts",
                               param);
    int  ip = 0;
    bool after_text = false;
    hearth_buf buf = {0};
    for (const cJSON *p = c->child; p; p = p->next, ip++) {
        const cJSON *type = cJSON_IsObject(p) ? cJSON_GetObjectItemCaseSensitive(p, "type") : NULL;
        const cJSON *text = cJSON_IsObject(p) ? cJSON_GetObjectItemCaseSensitive(p, "text") : NULL;
        bool ok = true;
        if (!cJSON_IsString(type)) {
            ok = hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", param, "each part of '%s' needs a string 'type'",
                                 param);
        } else if (hearth_media_is_part(type->valuestring)) {
            char pp[96], mk[64];
            snprintf(pp, sizeof pp, "%s[%d]", param, ip);
            ok = hearth_media_parse(p, im, pp, max_media, media, e);
            size_t k = ok ? hearth_media_marker(media, media->n - 1, mk, sizeof mk) : 0;
            if (k && !hearth_buf_put(&buf, mk, k)) ok = hearth_api_oom(e);
            after_text = after_text && !k; /* an image sits between its neighbours, no newline */
        } else if (strcmp(type->valuestring, "text") && strcmp(type->valuestring, "input_text")) {
            ok = hearth_api_fail(e, HEARTH_E_UNSUPPORTED, "unsupported", param,
                                 "content parts of type '%.40s' are not supported yet (text only)", type->valuestring);
        } else if (!cJSON_IsString(text)) {
            ok = hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", param, "a text part of '%s' needs a string 'text'",
                                 param);
        } else { /* text parts joined by newlines, as vLLM does */
            if ((after_text && buf.len && !hearth_buf_putc(&buf, '\n')) || !hearth_buf_puts(&buf, text->valuestring))
                ok = hearth_api_oom(e);
            after_text = true;
        }
        if (!ok) {
            hearth_buf_fini(&buf);
            return false;
        }
    }
    *out = cJSON_CreateString(buf.len ? buf.p : "");
    hearth_buf_fini(&buf);
    return *out != NULL || hearth_api_oom(e);
}

static bool oom(hearth_api_err *e) { return hearth_api_oom(e); }

static hearth_span raw_child(hearth_span rv, const cJSON *v, const cJSON *c) {
    return hearth_chatmap_raw_child(rv, v, c);
}

/* A copy of v for the context: its raw text verbatim when known (numbers as sent), else a
 * copy of the tree. */
static cJSON *copy_val(const cJSON *v, hearth_span raw) {
    if (!raw.len) return cJSON_Duplicate(v, true);
    char *t = malloc(raw.len + 1);
    if (!t) return NULL;
    memcpy(t, raw.ptr, raw.len);
    t[raw.len] = 0;
    cJSON *r = cJSON_CreateRaw(t);
    free(t);
    return r;
}

static bool add_copy(cJSON *obj, const char *key, const cJSON *v, hearth_span raw, hearth_api_err *e) {
    cJSON *c = copy_val(v, raw);
    if (!c || !cJSON_AddItemToObject(obj, key, c)) {
        cJSON_Delete(c);
        return oom(e);
    }
    return true;
}

/* An assistant message's tool_calls -> [{id, type: "function", function: {name, arguments}}]
 * with arguments as an object (what templates iterate over; a string holding a JSON object is
 * parsed, as mlx-bun and vLLM do; another string is kept as is). */
static bool tool_calls(const cJSON *tc, hearth_span raw, cJSON *nm, const char *param, hearth_api_err *e) {
    if (!cJSON_IsArray(tc))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", param, "'%s.tool_calls' must be a list", param);
    cJSON *out = cJSON_AddArrayToObject(nm, "tool_calls");
    if (!out) return oom(e);
    hearth_jraw_it it;
    bool have_raw = raw.len && hearth_jraw_iter(raw, &it);
    for (const cJSON *c = tc->child; c; c = c->next) {
        hearth_span rc = {NULL, 0};
        if (have_raw && !hearth_jraw_next(&it, NULL, &rc)) rc.len = 0;
        const cJSON *f = cJSON_IsObject(c) ? cJSON_GetObjectItemCaseSensitive(c, "function") : NULL;
        const cJSON *name = cJSON_IsObject(f) ? cJSON_GetObjectItemCaseSensitive(f, "name") : NULL;
        const cJSON *args = cJSON_IsObject(f) ? cJSON_GetObjectItemCaseSensitive(f, "arguments") : NULL;
        const cJSON *id = cJSON_IsObject(c) ? cJSON_GetObjectItemCaseSensitive(c, "id") : NULL;
        if (!cJSON_IsString(name))
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", param,
                                   "each of '%s.tool_calls' needs a 'function' with a string 'name'", param);
        cJSON *nc = cJSON_CreateObject(), *nf = NULL;
        if (!nc || !cJSON_AddItemToArray(out, nc)) {
            cJSON_Delete(nc);
            return oom(e);
        }
        if ((cJSON_IsString(id) && !cJSON_AddStringToObject(nc, "id", id->valuestring)) ||
            !cJSON_AddStringToObject(nc, "type", "function") || !(nf = cJSON_AddObjectToObject(nc, "function")) ||
            !cJSON_AddStringToObject(nf, "name", name->valuestring))
            return oom(e);
        if (cJSON_IsString(args)) {
            cJSON *parsed = hearth_tc_parse_exact(args->valuestring, strlen(args->valuestring));
            bool obj = cJSON_IsObject(parsed);
            cJSON_Delete(parsed);
            hearth_span as = hearth_span_cstr(args->valuestring);
            if (!add_copy(nf, "arguments", args, obj ? as : (hearth_span){NULL, 0}, e)) return false;
        } else if (args && !cJSON_IsNull(args)) {
            hearth_span ra = raw_child(raw_child(rc, c, f), f, args);
            if (!add_copy(nf, "arguments", args, ra, e)) return false;
        } else if (!cJSON_AddObjectToObject(nf, "arguments")) {
            return oom(e);
        }
    }
    return true;
}

/* messages -> a normalized cJSON array (added to ctx). */
static bool normalize_msgs(hearth_server *s, const cJSON *root, hearth_span raw, cJSON *ctx,
                           hearth_media_list *media, hearth_api_err *e) {
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (!msgs || cJSON_IsNull(msgs))
        return hearth_api_fail(e, HEARTH_E_INVALID, "missing_required_parameter", "messages", "'messages' is required");
    if (!cJSON_IsArray(msgs))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "messages",
                               "'messages' must be a list of messages");
    int n = cJSON_GetArraySize(msgs);
    if (n == 0)
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "messages",
                               "'messages' must hold at least one message");
    if (n > MAX_MESSAGES)
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "messages", "at most %d messages are allowed",
                               MAX_MESSAGES);
    cJSON *out = cJSON_AddArrayToObject(ctx, "messages");
    if (!out) return oom(e);
    hearth_span raw_msgs = raw_child(raw, root, msgs);
    hearth_jraw_it it;
    bool have_raw = raw_msgs.len && hearth_jraw_iter(raw_msgs, &it);
    int im = 0;
    for (const cJSON *m = msgs->child; m; m = m->next, im++) {
        char param[48];
        hearth_span rm = {NULL, 0};
        if (have_raw && !hearth_jraw_next(&it, NULL, &rm)) rm.len = 0;
        snprintf(param, sizeof param, "messages[%d]", im);
        if (!cJSON_IsObject(m)) return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", param,
                                                       "'%s' must be an object", param);
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (!cJSON_IsString(role))
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", param, "'%s.role' must be a string", param);
        const char *r = role->valuestring;
        if (!strcmp(r, "developer")) r = "system";
        if (strcmp(r, "system") && strcmp(r, "user") && strcmp(r, "assistant") && strcmp(r, "tool"))
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", param,
                                   "'%s.role' must be system, developer, user, assistant or tool (got '%.40s')",
                                   param, role->valuestring);
        cJSON *nm = cJSON_CreateObject(), *text = NULL;
        if (!nm || !cJSON_AddItemToArray(out, nm) || !cJSON_AddStringToObject(nm, "role", r)) return oom(e);
        if (!content_text(cJSON_GetObjectItemCaseSensitive(m, "content"), im, media, hearth_media_max(s), &text, e))
            return false;
        cJSON_AddItemToObject(nm, "content", text);
        /* passed through for templates that render them (tool results, names, past reasoning) */
        static const char *const keep[] = {"name", "tool_call_id", "reasoning_content", "thinking"};
        for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, keep[k]);
            if (v && !cJSON_IsNull(v) && !add_copy(nm, keep[k], v, raw_child(rm, m, v), e)) return false;
        }
        const cJSON *tc = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
        if (tc && !cJSON_IsNull(tc) && !(cJSON_IsArray(tc) && !tc->child) &&
            !tool_calls(tc, raw_child(rm, m, tc), nm, param, e))
            return false;
    }
    return true;
}

size_t hearth_media_max(const hearth_server *s) {
    return s->p.media.max_bytes ? s->p.media.max_bytes : HEARTH_MEDIA_MAX_BYTES;
}

bool hearth_server_media_admit(const hearth_server *s, const hearth_media_list *l, hearth_api_err *e) {
    return hearth_media_admit(l, s->model_id, s->media_caps, e) &&
           hearth_media_admit_runs(l, s->model_id, s->media_runs, s->media_source, e);
}

/* The messages of root into ctx; then every media part must be one the model can use. */
static bool normalize(hearth_server *s, const cJSON *root, hearth_span raw, cJSON *ctx, hearth_media_list *media,
                      hearth_api_err *e) {
    return normalize_msgs(s, root, raw, ctx, media, e) && hearth_server_media_admit(s, media, e);
}

enum { FORCE_ANY = 1, FORCE_ONE = 2 }; /* tool_choice "required" / a named function */

/* tools + tool_choice -> ctx.tools (null when none apply); *parse: replies are parsed for calls;
 * *force: a call is required (FORCE_*), else 0. */
static bool add_tools(const cJSON *root, hearth_span raw, cJSON *ctx, bool *parse, int *force, hearth_api_err *e) {
    const cJSON *tools = hearth_req_field(root, "tools"), *choice = hearth_req_field(root, "tool_choice");
    const char *only = NULL; /* a named function */
    *parse = false;
    *force = 0;
    if (tools && !cJSON_IsArray(tools))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "tools", "'tools' must be a list of tools");
    for (const cJSON *t = tools ? tools->child : NULL; t; t = t->next) {
        const cJSON *type = cJSON_IsObject(t) ? cJSON_GetObjectItemCaseSensitive(t, "type") : NULL;
        const cJSON *f = cJSON_IsObject(t) ? cJSON_GetObjectItemCaseSensitive(t, "function") : NULL;
        const cJSON *name = cJSON_IsObject(f) ? cJSON_GetObjectItemCaseSensitive(f, "name") : NULL;
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "function") || !cJSON_IsString(name) ||
            !*name->valuestring)
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "tools",
                                   "each tool must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
    }
    if (choice) {
        const cJSON *f = cJSON_IsObject(choice) ? cJSON_GetObjectItemCaseSensitive(choice, "function") : NULL;
        const cJSON *name = cJSON_IsObject(f) ? cJSON_GetObjectItemCaseSensitive(f, "name") : NULL;
        if (cJSON_IsString(choice) && !strcmp(choice->valuestring, "none")) tools = NULL;
        else if (cJSON_IsString(choice) &&
                 (!strcmp(choice->valuestring, "auto") || !strcmp(choice->valuestring, "required"))) {
            if (!strcmp(choice->valuestring, "required") && (!tools || !tools->child))
                return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "tool_choice",
                                       "tool_choice 'required' needs at least one tool in 'tools'");
            if (!strcmp(choice->valuestring, "required")) *force = FORCE_ANY;
        } else if (cJSON_IsString(name)) {
            only = name->valuestring;
            *force = FORCE_ONE;
        } else {
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "tool_choice",
                                   "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": "
                                   "\"function\", \"function\": {\"name\": ...}}");
        }
    }
    cJSON *out = NULL;
    if (tools && tools->child) {
        hearth_span rt = raw_child(raw, root, tools);
        hearth_jraw_it it;
        bool have_raw = rt.len && hearth_jraw_iter(rt, &it);
        if (!(out = cJSON_AddArrayToObject(ctx, "tools"))) return oom(e);
        for (const cJSON *t = tools->child; t; t = t->next) {
            hearth_span r1 = {NULL, 0};
            if (have_raw && !hearth_jraw_next(&it, NULL, &r1)) r1.len = 0;
            const char *name = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t, "function"),
                                                                "name")->valuestring;
            if (only && strcmp(only, name)) continue;
            cJSON *c = copy_val(t, r1);
            if (!c || !cJSON_AddItemToArray(out, c)) {
                cJSON_Delete(c);
                return oom(e);
            }
        }
        if (only && !out->child)
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "tool_choice",
                                   "tool_choice names the function '%.60s', which is not in 'tools'", only);
        *parse = true;
    } else if (only) {
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "tool_choice",
                               "tool_choice names the function '%.60s', which is not in 'tools'", only);
    } else if (!cJSON_AddNullToObject(ctx, "tools")) {
        return oom(e);
    }
    return true;
}

static bool add_token_text(cJSON *ctx, const char *key, const hearth_tok *tok, int32_t id) {
    if (id < 0) return true; /* transformers leaves a token the tokenizer lacks out of the context */
    hearth_span t = hearth_tok_text(tok, id);
    char *s = malloc(t.len + 1);
    if (!s) return false;
    memcpy(s, t.ptr, t.len);
    s[t.len] = 0;
    bool ok = cJSON_AddStringToObject(ctx, key, s) != NULL;
    free(s);
    return ok;
}

/* enable_thinking: chat_template_kwargs (added later, wins) > reasoning_effort > --thinking. */
static bool add_thinking(hearth_server *s, const cJSON *root, cJSON *ctx, hearth_api_err *e) {
    static const char *const efforts[] = {"none", "minimal", "low", "medium", "high", "xhigh"};
    const char *effort = NULL;
    if (hearth_req_str(root, "reasoning_effort", &effort, e) < 0) return false;
    int think = s->p.enable_thinking;
    if (effort) {
        bool known = false;
        for (size_t i = 0; i < sizeof efforts / sizeof efforts[0]; i++) known |= !strcmp(effort, efforts[i]);
        if (!known)
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "reasoning_effort",
                                   "'reasoning_effort' must be none, minimal, low, medium, high or xhigh");
        think = strcmp(effort, "none") != 0;
        /* templates with effort levels (gpt-oss) read the variable itself */
        if (think && !cJSON_AddStringToObject(ctx, "reasoning_effort", effort)) return oom(e);
    }
    if (think >= 0 && !cJSON_AddBoolToObject(ctx, "enable_thinking", think)) return oom(e);
    return true;
}

/* Build the template context of a request, in transformers' order (later keys win):
 * {messages, tools, documents, add_generation_prompt, bos_token, eos_token, enable_thinking,
 * reasoning_effort, ...chat_template_kwargs}; NULL with e filled on failure. */
/* The final message's content when it is to be continued (mode: hearth_chat_opts.
 * continue_final), else NULL; *bad when mode 1 asks for one that cannot be. */
static const cJSON *final_to_continue(const cJSON *ctx, int mode, bool *bad) {
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(ctx, "messages");
    const cJSON *last = msgs && msgs->child ? msgs->child->prev : NULL; /* cJSON keeps the tail there */
    const cJSON *role = last ? cJSON_GetObjectItemCaseSensitive(last, "role") : NULL;
    const cJSON *text = last ? cJSON_GetObjectItemCaseSensitive(last, "content") : NULL;
    bool has_text = false;
    for (const char *c = cJSON_IsString(text) ? text->valuestring : ""; *c && !has_text; c++)
        has_text = !strchr(" \t\r\n", *c);
    bool ok = cJSON_IsString(role) && !strcmp(role->valuestring, "assistant") && has_text &&
              (mode == 1 || !cJSON_GetObjectItemCaseSensitive(last, "tool_calls"));
    *bad = mode == 1 && !ok;
    return mode && ok ? text : NULL;
}

static cJSON *build_context(hearth_server *s, const cJSON *root, hearth_span raw, bool *tools, int *force, int cont,
                            const cJSON **final, hearth_media_list *media, hearth_api_err *e) {
    cJSON *ctx = cJSON_CreateObject();
    bool bad = false;
    if (!ctx) {
        oom(e);
        return NULL;
    }
    if (!normalize(s, root, raw, ctx, media, e) || !add_tools(root, raw, ctx, tools, force, e)) goto fail;
    *final = final_to_continue(ctx, cont, &bad);
    if (bad) {
        hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "messages",
                        "continuing the final message needs it to be an assistant message with text");
        goto fail;
    }
    const cJSON *docs = hearth_req_field(root, "documents");
    if (docs && !cJSON_IsArray(docs)) {
        hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "documents", "'documents' must be a list");
        goto fail;
    }
    if (docs ? !add_copy(ctx, "documents", docs, raw_child(raw, root, docs), e) : !cJSON_AddNullToObject(ctx, "documents"))
        goto fail;
    const hearth_tok *tok = hearth_model_tok(s->m);
    if (!cJSON_AddBoolToObject(ctx, "add_generation_prompt", !*final) ||
        !add_token_text(ctx, "bos_token", tok, hearth_tok_bos(tok)) ||
        !add_token_text(ctx, "eos_token", tok, hearth_tok_eos(tok))) {
        oom(e);
        goto fail;
    }
    if (!add_thinking(s, root, ctx, e)) goto fail;
    const cJSON *kw = cJSON_GetObjectItemCaseSensitive(root, "chat_template_kwargs");
    if (kw && !cJSON_IsNull(kw)) {
        if (!cJSON_IsObject(kw)) {
            hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "chat_template_kwargs",
                            "'chat_template_kwargs' must be an object");
            goto fail;
        }
        hearth_span rk = raw_child(raw, root, kw);
        for (const cJSON *it = kw->child; it; it = it->next) {
            if (!strcmp(it->string, "messages")) continue; /* the request's own messages win */
            if (*final && !strcmp(it->string, "add_generation_prompt")) continue; /* a continued turn has none */
            cJSON_DeleteItemFromObjectCaseSensitive(ctx, it->string);
            if (!add_copy(ctx, it->string, it, raw_child(rk, kw, it), e)) goto fail;
        }
    }
    return ctx;
fail:
    cJSON_Delete(ctx);
    return NULL;
}

/* The last occurrence of needle[0..n) in text[0..len), or NULL. */
static const char *last_of(const char *text, size_t len, const char *needle, size_t n) {
    if (!n || n > len) return NULL;
    for (size_t i = len - n + 1; i-- > 0;)
        if (text[i] == needle[0] && !memcmp(text + i, needle, n)) return text + i;
    return NULL;
}

/* Cut the rendered text right after the last occurrence of the final message's content, or of
 * the content without its surrounding whitespace (transformers' continue_final_message); *kept:
 * the part of the content the prompt ends with. */
static bool cut_after_final(char *text, size_t *n_text, const char *content, hearth_span *kept) {
    hearth_span c = hearth_span_cstr(content);
    const char *at = last_of(text, *n_text, c.ptr, c.len);
    if (!at) {
        while (c.len && strchr(" \t\r\n", c.ptr[0])) c.ptr++, c.len--;
        while (c.len && strchr(" \t\r\n", c.ptr[c.len - 1])) c.len--;
        at = last_of(text, *n_text, c.ptr, c.len);
    }
    if (!at) return false;
    *kept = c;
    *n_text = (size_t)(at - text) + c.len;
    text[*n_text] = 0;
    return true;
}

bool hearth_chat_prompt(hearth_server *s, const cJSON *root, int32_t **ids, size_t *n_ids, hearth_api_err *e) {
    return hearth_chat_prompt_opts(s, root, NULL, ids, n_ids, e);
}

bool hearth_chat_prompt_opts(hearth_server *s, const cJSON *root, hearth_chat_opts *opts, int32_t **ids,
                             size_t *n_ids, hearth_api_err *e) {
    *ids = NULL;
    *n_ids = 0;
    bool tools = false;
    int force = 0;
    hearth_span raw = opts ? opts->raw : (hearth_span){NULL, 0};
    const cJSON *final = NULL;
    /* the media parts: the dialect's, or those of the messages here (vision_prompt.h) */
    hearth_media_list own = {0}, *media = opts && opts->media ? opts->media : &own;
    int32_t *order = NULL, n_order = 0;
    if (media == &own) hearth_vprompt_list_init(s, &own);
    if (opts) opts->images = NULL, opts->n_images = 0;
    /* validate the messages even when chat cannot run */
    cJSON *ctx = build_context(s, root, raw, &tools, &force, opts ? opts->continue_final : 0, &final, media, e);
    if (!ctx) {
        hearth_media_list_fini(&own);
        return false;
    }
    bool ok = false;
    char *json = NULL, *text = NULL;
    size_t n_text = 0, *plain = NULL, n_plain = 0;
    hearth_plain_marks marks;
    bool keep_plain = s->p.no_special_in_content;
    if (opts) opts->constraint = NULL;
    if (!s->tmpl) {
        /* the model has a template hearth cannot run, or none at all (the request asks for chat) */
        hearth_api_fail(e, s->m && hearth_model_chat_template(s->m) ? HEARTH_E_NOT_IMPLEMENTED : HEARTH_E_INVALID,
                        "chat_template_unavailable", "messages", "%s", s->tmpl_error);
        goto out;
    }
    if (keep_plain) {
        char nonce[40];
        hearth_server_new_id(s, "", nonce, sizeof nonce);
        hearth_plain_marks_init(&marks, nonce);
        if (!hearth_plain_mark(&marks, ctx, e)) goto out;
    }
    json = cJSON_PrintUnformatted(ctx);
    if (!json) {
        hearth_api_oom(e);
        goto out;
    }
    hearth_err herr = {0};
    hearth_status st = hearth_chat_render(s, json, strlen(json), &text, &n_text, &herr);
    if (st) {
        hearth_api_fail(e, st == HEARTH_E_NOMEM ? HEARTH_E_NOMEM : HEARTH_E_INVALID, "chat_template_error", "messages",
                        "the chat template failed: %s", herr.msg);
        goto out;
    }
    if (keep_plain && !hearth_plain_strip(&marks, text, &n_text, &plain, &n_plain, e)) goto out;
    hearth_span kept = {"", 0};
    if (final && !cut_after_final(text, &n_text, final->valuestring, &kept)) {
        hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "messages",
                        "the final assistant message cannot be continued: "
                        "the chat template does not render its text");
        goto out;
    }
    if (media->n && keep_plain) {
        hearth_api_fail(e, HEARTH_E_UNSUPPORTED, "unsupported", "messages",
                        "images are not supported together with --no-special-in-content yet");
        goto out;
    }
    if (!hearth_vprompt_expand(s, media, &text, &n_text, &order, &n_order, e)) goto out;
    const hearth_tok *tok = hearth_model_tok(s->m);
    hearth_plain_clip(plain, &n_plain, n_text);
    if (keep_plain ? hearth_tok_encode_plain(tok, text, n_text, true, plain, n_plain, ids, n_ids)
                   : hearth_tok_encode(tok, text, n_text, true, true, ids, n_ids)) {
        hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "messages", "the rendered prompt could not be tokenized");
        goto out;
    }
    if (opts && opts->want_images &&
        !hearth_vprompt_encode(s, media, order, n_order, *ids, *n_ids, &opts->images, &opts->n_images, e))
        goto out;
    if (opts) {
        size_t tail = n_text > 64 ? n_text - 64 : 0; /* the generation prompt's end */
        opts->tools = tools ? s->tc_format : HEARTH_TC_NONE;
        opts->reasoning = s->rs_format;
        opts->reasoning_open = hearth_rs_prompt_open(s->rs_format, text + tail, n_text - tail);
        opts->continued = final != NULL;
        /* the forced shape, after closing a reasoning block the prompt opened */
        const char *prefix = hearth_structured_prefix(s->rs_format, opts->reasoning_open);
        /* the output constraint (response_format, guided_*, grammar...: structured.h) */
        const char *which = hearth_structured_requested(root);
        /* a prefill continues the constraint's output (the constraint takes its text in first);
         * a forced call, or a prompt that opened a reasoning block, cannot be continued */
        bool formatted = which != NULL;
        if (force && formatted) {
            hearth_api_fail(e, HEARTH_E_UNSUPPORTED, "unsupported", which,
                            "'%s' cannot be combined with a tool_choice that forces "
                            "a tool call", which);
            goto out;
        }
        if (final && (force || (formatted && prefix))) {
            hearth_api_fail(e, HEARTH_E_UNSUPPORTED, "unsupported", force ? "tool_choice" : which,
                            force ? "a forced tool call cannot continue a final assistant message"
                                     : "an output constraint cannot continue a final assistant message inside an "
                                       "open reasoning block");
            goto out;
        }
        if (force) { /* the call's grammar, over the tools the template sees */
            const cJSON *fn = cJSON_GetObjectItemCaseSensitive(hearth_req_field(root, "tool_choice"), "function");
            const cJSON *only = cJSON_GetObjectItemCaseSensitive(fn, "name"); /* checked by add_tools */
            bool several = false; /* llama-server's default: one call unless parallel calls are asked for */
            if (hearth_req_bool(root, "parallel_tool_calls", &several, e) < 0) goto out;
            if (!hearth_structured_tools((hearth_tc_format)s->tc_format, hearth_req_field(root, "tools"),
                                         force == FORCE_ONE ? only->valuestring : NULL, several && force == FORCE_ANY,
                                         prefix, &opts->constraint, e))
                goto out;
        } else {
            if (!hearth_structured_request(root, prefix, &opts->constraint, e)) goto out;
            if (opts->constraint && final && !(opts->constraint_fed = strndup(kept.ptr, kept.len))) {
                hearth_api_oom(e);
                goto out;
            }
        }
    }
    int32_t bos = hearth_tok_bos(tok);
    if (*n_ids >= 2 && bos >= 0 && (*ids)[0] == bos && (*ids)[1] == bos) {
        memmove(*ids, *ids + 1, (*n_ids - 1) * sizeof **ids);
        (*n_ids)--;
    }
    if (opts && opts->want_text) {
        opts->text = text;
        opts->n_text = n_text;
        text = NULL;
    }
    ok = true;
out:
    if (!ok) {
        free(*ids);
        *ids = NULL;
        *n_ids = 0;
        if (opts) {
            hearth_cx_grammar_destroy(opts->constraint);
            opts->constraint = NULL;
            free(opts->constraint_fed);
            opts->constraint_fed = NULL;
            hearth_vprompt_free(opts->images, opts->n_images);
            opts->images = NULL;
            opts->n_images = 0;
        }
    }
    free(order);
    hearth_media_list_fini(&own);
    free(text);
    free(plain);
    cJSON_free(json);
    cJSON_Delete(ctx);
    return ok;
}
