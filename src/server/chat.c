/*
 * chat.c - chat messages -> template context -> prompt tokens (see chat.h).
 *
 * The context is built as a cJSON tree and printed once: the template interpreter takes JSON
 * (template.h), so the server never touches its value model. BOS: templates such as Llama 3's
 * write the BOS token text themselves while the tokenizer may add one too; when the encoded
 * prompt starts with two BOS tokens the second is dropped (llama.cpp warns and does the same).
 */
#include "server/chat.h"
#include "base/log.h"
#include "template/template.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MESSAGES 4096

/* The text of a message's content: a string, null, or an array of parts. */
static bool content_text(const cJSON *c, int im, cJSON **out, hearth_api_err *e) {
    char param[48];
    snprintf(param, sizeof param, "messages[%d].content", im);
    if (!c || cJSON_IsNull(c)) {
        *out = cJSON_CreateString("");
        return *out != NULL || hearth_api_err_set(e, 503, "out_of_memory", NULL, "out of memory");
    }
    if (cJSON_IsString(c)) {
        *out = cJSON_CreateString(c->valuestring);
        return *out != NULL || hearth_api_err_set(e, 503, "out_of_memory", NULL, "out of memory");
    }
    if (!cJSON_IsArray(c))
        return hearth_api_err_set(e, 400, "invalid_type", param, "'%s' must be a string or a list of parts", param);
    size_t n = 0;
    for (const cJSON *p = c->child; p; p = p->next) {
        const cJSON *type = cJSON_IsObject(p) ? cJSON_GetObjectItemCaseSensitive(p, "type") : NULL;
        const cJSON *text = cJSON_IsObject(p) ? cJSON_GetObjectItemCaseSensitive(p, "text") : NULL;
        if (!cJSON_IsString(type))
            return hearth_api_err_set(e, 400, "invalid_type", param, "each part of '%s' needs a string 'type'", param);
        if (strcmp(type->valuestring, "text") && strcmp(type->valuestring, "input_text"))
            return hearth_api_err_set(e, 400, "unsupported", param,
                                      "content parts of type '%.40s' are not supported yet (text only)",
                                      type->valuestring);
        if (!cJSON_IsString(text))
            return hearth_api_err_set(e, 400, "invalid_type", param, "a text part of '%s' needs a string 'text'", param);
        n += strlen(text->valuestring) + 1;
    }
    char *buf = malloc(n + 1), *q = buf;
    if (!buf) return hearth_api_err_set(e, 503, "out_of_memory", NULL, "out of memory");
    for (const cJSON *p = c->child; p; p = p->next) {
        const char *t = cJSON_GetObjectItemCaseSensitive(p, "text")->valuestring;
        if (q != buf) *q++ = '\n'; /* parts joined by newlines, as vLLM does */
        size_t k = strlen(t);
        memcpy(q, t, k);
        q += k;
    }
    *q = 0;
    *out = cJSON_CreateString(buf);
    free(buf);
    return *out != NULL || hearth_api_err_set(e, 503, "out_of_memory", NULL, "out of memory");
}

/* messages -> a normalized cJSON array (added to ctx). */
static bool normalize(const cJSON *root, cJSON *ctx, hearth_api_err *e) {
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (!msgs || cJSON_IsNull(msgs))
        return hearth_api_err_set(e, 400, "missing_required_parameter", "messages", "'messages' is required");
    if (!cJSON_IsArray(msgs))
        return hearth_api_err_set(e, 400, "invalid_type", "messages", "'messages' must be a list of messages");
    int n = cJSON_GetArraySize(msgs);
    if (n == 0)
        return hearth_api_err_set(e, 400, "invalid_value", "messages", "'messages' must hold at least one message");
    if (n > MAX_MESSAGES)
        return hearth_api_err_set(e, 400, "invalid_value", "messages", "at most %d messages are allowed", MAX_MESSAGES);
    cJSON *out = cJSON_AddArrayToObject(ctx, "messages");
    if (!out) return hearth_api_err_set(e, 503, "out_of_memory", NULL, "out of memory");
    int im = 0;
    for (const cJSON *m = msgs->child; m; m = m->next, im++) {
        char param[48];
        snprintf(param, sizeof param, "messages[%d]", im);
        if (!cJSON_IsObject(m)) return hearth_api_err_set(e, 400, "invalid_type", param, "'%s' must be an object", param);
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (!cJSON_IsString(role))
            return hearth_api_err_set(e, 400, "invalid_type", param, "'%s.role' must be a string", param);
        const char *r = role->valuestring;
        if (!strcmp(r, "developer")) r = "system";
        if (strcmp(r, "system") && strcmp(r, "user") && strcmp(r, "assistant") && strcmp(r, "tool"))
            return hearth_api_err_set(e, 400, "invalid_value", param,
                                      "'%s.role' must be system, developer, user, assistant or tool (got '%.40s')",
                                      param, role->valuestring);
        cJSON *nm = cJSON_CreateObject(), *text = NULL;
        if (!nm || !cJSON_AddItemToArray(out, nm) || !cJSON_AddStringToObject(nm, "role", r))
            return hearth_api_err_set(e, 503, "out_of_memory", NULL, "out of memory");
        if (!content_text(cJSON_GetObjectItemCaseSensitive(m, "content"), im, &text, e)) return false;
        cJSON_AddItemToObject(nm, "content", text);
        /* passed through for templates that render them (tool results, names) */
        static const char *const keep[] = {"name", "tool_call_id", "tool_calls"};
        for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, keep[k]);
            if (v && !cJSON_IsNull(v)) cJSON_AddItemToObject(nm, keep[k], cJSON_Duplicate(v, true));
        }
    }
    return true;
}

static void add_token_text(cJSON *ctx, const char *key, const hearth_tok *tok, int32_t id) {
    hearth_span t = id >= 0 ? hearth_tok_text(tok, id) : (hearth_span){"", 0};
    char *s = malloc(t.len + 1);
    if (!s) return;
    memcpy(s, t.ptr, t.len);
    s[t.len] = 0;
    cJSON_AddStringToObject(ctx, key, s);
    free(s);
}

/* Build the template context of a request; NULL with e filled on failure. */
static cJSON *build_context(hearth_server *s, const cJSON *root, hearth_api_err *e) {
    cJSON *ctx = cJSON_CreateObject();
    if (!ctx) {
        hearth_api_err_set(e, 503, "out_of_memory", NULL, "out of memory");
        return NULL;
    }
    if (!normalize(root, ctx, e)) goto fail;
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(root, "tools");
    if (cJSON_IsArray(tools) && cJSON_GetArraySize(tools) > 0)
        cJSON_AddItemToObject(ctx, "tools", cJSON_Duplicate(tools, true));
    cJSON_AddBoolToObject(ctx, "add_generation_prompt", 1);
    const hearth_tok *tok = hearth_model_tok(s->m);
    add_token_text(ctx, "bos_token", tok, hearth_tok_bos(tok));
    add_token_text(ctx, "eos_token", tok, hearth_tok_eos(tok));
    if (s->p.enable_thinking >= 0) cJSON_AddBoolToObject(ctx, "enable_thinking", s->p.enable_thinking);
    const cJSON *kw = cJSON_GetObjectItemCaseSensitive(root, "chat_template_kwargs");
    if (kw && !cJSON_IsNull(kw)) {
        if (!cJSON_IsObject(kw)) {
            hearth_api_err_set(e, 400, "invalid_type", "chat_template_kwargs", "'chat_template_kwargs' must be an object");
            goto fail;
        }
        for (const cJSON *it = kw->child; it; it = it->next) {
            if (!strcmp(it->string, "messages")) continue; /* the request's own messages win */
            cJSON_DeleteItemFromObjectCaseSensitive(ctx, it->string);
            cJSON_AddItemToObject(ctx, it->string, cJSON_Duplicate(it, true));
        }
    }
    return ctx;
fail:
    cJSON_Delete(ctx);
    return NULL;
}

bool hearth_chat_prompt(hearth_server *s, const cJSON *root, int32_t **ids, size_t *n_ids, hearth_api_err *e) {
    *ids = NULL;
    *n_ids = 0;
    cJSON *ctx = build_context(s, root, e); /* validate the messages even when chat cannot run */
    if (!ctx) return false;
    bool ok = false;
    char *json = NULL, *text = NULL;
    size_t n_text = 0;
    if (!s->tmpl) {
        hearth_api_err_set(e, s->m && hearth_model_chat_template(s->m) ? 501 : 400, "chat_template_unavailable",
                           "messages", "%s", s->tmpl_error);
        goto out;
    }
    json = cJSON_PrintUnformatted(ctx);
    if (!json) {
        hearth_api_err_set(e, 503, "out_of_memory", NULL, "out of memory");
        goto out;
    }
    hearth_err herr = {0};
    hearth_status st = hearth_chat_render(s, json, strlen(json), &text, &n_text, &herr);
    if (st) {
        hearth_api_err_set(e, st == HEARTH_E_NOMEM ? 503 : 400, "chat_template_error", "messages",
                           "the chat template failed: %s", herr.msg);
        goto out;
    }
    const hearth_tok *tok = hearth_model_tok(s->m);
    if (hearth_tok_encode(tok, text, n_text, true, true, ids, n_ids)) {
        hearth_api_err_set(e, 400, "invalid_value", "messages", "the rendered prompt could not be tokenized");
        goto out;
    }
    int32_t bos = hearth_tok_bos(tok);
    if (*n_ids >= 2 && bos >= 0 && (*ids)[0] == bos && (*ids)[1] == bos) {
        memmove(*ids, *ids + 1, (*n_ids - 1) * sizeof **ids);
        (*n_ids)--;
    }
    ok = true;
out:
    if (!ok) {
        free(*ids);
        *ids = NULL;
        *n_ids = 0;
    }
    free(text);
    cJSON_free(json);
    cJSON_Delete(ctx);
    return ok;
}
