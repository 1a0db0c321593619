/*
 * chatmap.c - OpenAI chat bodies built from other dialects (see chatmap.h).
 */
#include "server/chatmap.h"
#include "server/jraw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool oom(hearth_api_err *e) { return hearth_api_oom(e); }

cJSON *hearth_chatmap_new(void) {
    cJSON *b = cJSON_CreateObject();
    if (b && !cJSON_AddArrayToObject(b, "messages")) {
        cJSON_Delete(b);
        b = NULL;
    }
    return b;
}

cJSON *hearth_chatmap_msg(cJSON *body, const char *role, const char *text, hearth_api_err *e) {
    cJSON *m = cJSON_CreateObject();
    if (!m || !cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(body, "messages"), m)) {
        cJSON_Delete(m);
        oom(e);
        return NULL;
    }
    if (!cJSON_AddStringToObject(m, "role", role) || !cJSON_AddStringToObject(m, "content", text)) {
        oom(e);
        return NULL;
    }
    return m;
}

hearth_span hearth_chatmap_raw_child(hearth_span rv, const cJSON *v, const cJSON *c) {
    hearth_span none = {NULL, 0}, val;
    hearth_jraw_it it;
    if (!rv.len || !v || !hearth_jraw_iter(rv, &it)) return none;
    for (const cJSON *x = v->child; x; x = x->next) {
        if (!hearth_jraw_next(&it, NULL, &val)) return none;
        if (x == c) return val;
    }
    return none;
}

/* A raw item holding text[0..n) (spliced verbatim when the body is printed). */
static cJSON *raw_item(const char *text, size_t n) {
    char *t = malloc(n + 1);
    if (!t) return NULL;
    memcpy(t, text, n);
    t[n] = 0;
    cJSON *r = cJSON_CreateRaw(t);
    free(t);
    return r;
}

bool hearth_chatmap_tool_call(cJSON *msg, const char *id, const char *name, const cJSON *args, hearth_span raw_args,
                              const char *param, hearth_api_err *e) {
    cJSON *a = NULL;
    if (cJSON_IsString(args)) {
        a = cJSON_Parse(args->valuestring);
        bool obj = cJSON_IsObject(a);
        cJSON_Delete(a);
        if (!obj)
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", param,
                                   "the arguments of tool call '%.60s' are not a "
                                   "JSON object", name);
        hearth_span t = hearth_jraw_trim(args->valuestring, strlen(args->valuestring));
        a = raw_item(t.ptr, t.len);
    } else if (cJSON_IsObject(args)) {
        a = raw_args.len ? raw_item(raw_args.ptr, raw_args.len) : cJSON_Duplicate(args, true);
    } else if (!args || cJSON_IsNull(args)) {
        a = cJSON_CreateObject();
    } else {
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", param,
                               "the arguments of tool call '%.60s' must be an "
                               "object", name);
    }
    if (!a) return oom(e);
    cJSON *calls = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
    if (!calls) calls = cJSON_AddArrayToObject(msg, "tool_calls");
    cJSON *c = cJSON_CreateObject(), *f = NULL;
    if (!calls || !c || !cJSON_AddItemToArray(calls, c)) {
        cJSON_Delete(c);
        cJSON_Delete(a);
        return oom(e);
    }
    if (!cJSON_AddStringToObject(c, "id", id) || !cJSON_AddStringToObject(c, "type", "function") ||
        !(f = cJSON_AddObjectToObject(c, "function")) || !cJSON_AddStringToObject(f, "name", name)) {
        cJSON_Delete(a);
        return oom(e);
    }
    cJSON_AddItemToObject(f, "arguments", a);
    return true;
}

bool hearth_chatmap_tool(cJSON *body, const char *name, const char *description, const cJSON *parameters,
                         hearth_span raw_params, hearth_api_err *e) {
    cJSON *tools = cJSON_GetObjectItemCaseSensitive(body, "tools");
    if (!tools) tools = cJSON_AddArrayToObject(body, "tools");
    cJSON *t = cJSON_CreateObject(), *f = NULL;
    if (!tools || !t || !cJSON_AddItemToArray(tools, t)) {
        cJSON_Delete(t);
        return oom(e);
    }
    cJSON *p = !parameters ? cJSON_Parse("{\"type\":\"object\",\"properties\":{}}")
               : raw_params.len ? raw_item(raw_params.ptr, raw_params.len)
                                : cJSON_Duplicate(parameters, true);
    if (!p || !cJSON_AddStringToObject(t, "type", "function") || !(f = cJSON_AddObjectToObject(t, "function")) ||
        !cJSON_AddStringToObject(f, "name", name) ||
        (description && !cJSON_AddStringToObject(f, "description", description))) {
        cJSON_Delete(p);
        return oom(e);
    }
    cJSON_AddItemToObject(f, "parameters", p);
    return true;
}

bool hearth_chatmap_kwarg(cJSON *body, const char *key, cJSON *value, hearth_api_err *e) {
    cJSON *kw = cJSON_GetObjectItemCaseSensitive(body, "chat_template_kwargs");
    if (!kw) kw = cJSON_AddObjectToObject(body, "chat_template_kwargs");
    if (!kw || !value) {
        cJSON_Delete(value);
        return oom(e);
    }
    cJSON_DeleteItemFromObjectCaseSensitive(kw, key);
    cJSON_AddItemToObject(kw, key, value);
    return true;
}

static bool type_in(const char *t, const char *const *types) {
    for (; *types; types++)
        if (!strcmp(t, *types)) return true;
    return false;
}

bool hearth_chatmap_text(const cJSON *content, const char *const *text_types, const char *param, char **out,
                         hearth_api_err *e) {
    return hearth_chatmap_content(content, text_types, param, 0, 0, NULL, out, e);
}

bool hearth_chatmap_content(const cJSON *content, const char *const *text_types, const char *param, int i_msg,
                            size_t max_media, hearth_media_list *media, char **out, hearth_api_err *e) {
    *out = NULL;
    if (cJSON_IsString(content)) {
        *out = strdup(content->valuestring);
        return *out || oom(e);
    }
    if (!cJSON_IsArray(content))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", param,
                               "'%s' must be a string or a list of content blocks", param);
    size_t n = 1;
    int    ip = 0;
    size_t first_item = media ? media->n : 0;
    for (const cJSON *p = content->child; p; p = p->next, ip++) {
        const cJSON *type = cJSON_IsObject(p) ? cJSON_GetObjectItemCaseSensitive(p, "type") : NULL;
        const cJSON *text = cJSON_IsObject(p) ? cJSON_GetObjectItemCaseSensitive(p, "text") : NULL;
        if (!cJSON_IsString(type))
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", param,
                                   "each block of '%s' needs a string 'type'", param);
        if (media && hearth_media_is_part(type->valuestring)) {
            char pp[96];
            snprintf(pp, sizeof pp, "%s.content[%d]", param, ip);
            if (!hearth_media_parse(p, i_msg, pp, max_media, media, e)) return false;
            n += 64; /* its marker (media.h), when the model takes images */
            continue;
        }
        if (!type_in(type->valuestring, text_types))
            return hearth_api_fail(e, HEARTH_E_UNSUPPORTED, "unsupported", param,
                                   "content blocks of type '%.40s' are not supported here by hearth (text only)",
                                   type->valuestring);
        if (!cJSON_IsString(text))
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", param,
                                   "a text block of '%s' needs a string 'text'", param);
        n += strlen(text->valuestring) + 1;
    }
    char *buf = malloc(n), *q = buf;
    if (!buf) return oom(e);
    bool first = true;
    size_t item = first_item;
    for (const cJSON *p = content->child; p; p = p->next) {
        if (media && hearth_media_is_part(cJSON_GetObjectItemCaseSensitive(p, "type")->valuestring)) {
            size_t k = hearth_media_marker(media, item++, q, 64); /* no newline around an image */
            q += k;
            if (k) first = true;
            continue;
        }
        const char *t = cJSON_GetObjectItemCaseSensitive(p, "text")->valuestring;
        if (!first) *q++ = '\n';
        first = false;
        size_t k = strlen(t);
        memcpy(q, t, k);
        q += k;
    }
    *q = 0;
    *out = buf;
    return true;
}
