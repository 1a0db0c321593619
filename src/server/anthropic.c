/*
 * anthropic.c - Anthropic Messages requests -> a chat body and a hearth_gen_spec (see
 * anthropic.h); the answer's shapes are in anthropic_out.c.
 *
 * Mapping onto the chat template's messages (chatmap.h):
 *
 *   system (string or text blocks)         -> a first `system` message
 *   user text / text blocks                -> `user`, blocks joined by newlines
 *   user tool_result blocks                -> one `tool` message each (tool_call_id =
 *                                             tool_use_id), before the user's text
 *   assistant text + tool_use blocks       -> one `assistant` message with tool_calls
 *   assistant thinking blocks              -> the message's reasoning_content (several joined
 *                                             by newlines), as chat's field; redacted_thinking
 *                                             blocks give their opaque `data`, so a template
 *                                             that renders past reasoning sees that there was
 *                                             some (this server never writes such blocks)
 *   tools [{name, description, input_schema}] -> function tools; server tools (a `type`
 *                                             other than "custom") are dropped, as mlx-bun does
 *   tool_choice none / auto / any / tool   -> "none" / "auto" / "required" / that function
 *   thinking {"type":"enabled"|"disabled"} -> chat_template_kwargs.enable_thinking
 *
 * The model's reply is parsed like a chat completion's (generate.h: reasoning and tool calls
 * in the family's markup); anthropic_out.c writes them as thinking and tool_use blocks.
 *
 * Validation follows the API: max_tokens is required (>= 1), messages must be a non-empty
 * list of user/assistant turns, temperature and top_p lie in [0, 1]; unknown fields
 * (metadata, service_tier, cache_control...) are ignored, but those that would change the
 * output and that hearth does not honour (lora: reqjson.h) are a 400 naming them.
 * Image blocks in user turns are parsed into media items (media.h): a 400 naming the block
 * ("messages.1.content.0") and the model unless the model can see; document blocks are a 400
 * "not supported".
 */
#include "server/vision_prompt.h"
#include "server/anthropic.h"
#include "server/chat.h"
#include "server/chatmap.h"
#include "server/jraw.h"
#include "server/reqjson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

#define MAX_MESSAGES 4096

static const char *const text_types[] = {"text", NULL};

static bool bad_type(hearth_api_err *e, const char *param, const char *what) {
    return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", param, "%s: %s", param, what);
}

/* One tool_result block -> a `tool` message. */
static bool map_tool_result(cJSON *body, const cJSON *b, const char *param, hearth_api_err *e) {
    const cJSON *id = hearth_req_field(b, "tool_use_id");
    if (!cJSON_IsString(id)) return bad_type(e, param, "a tool_result block needs a string 'tool_use_id'");
    const cJSON *c = hearth_req_field(b, "content");
    char *text = NULL;
    if (c && !hearth_chatmap_text(c, text_types, param, &text, e)) return false;
    cJSON *m = hearth_chatmap_msg(body, "tool", text ? text : "", e);
    free(text);
    if (!m) return false;
    return cJSON_AddStringToObject(m, "tool_call_id", id->valuestring) ||
           hearth_api_oom(e);
}

/* Append a text block to acc, newline-separated (acc->p is set once any block was seen). */
static bool append(hearth_buf *acc, const char *t, hearth_api_err *e) {
    if ((acc->len && !hearth_buf_putc(acc, '\n')) || !hearth_buf_puts(acc, t)) return hearth_api_oom(e);
    return true;
}

/* One message whose content is a list of blocks. */
static bool map_blocks(cJSON *body, bool user, const cJSON *content, hearth_span raw, const char *param,
                       int im, hearth_media_list *media, size_t max_media, hearth_api_err *e) {
    hearth_jraw_it it;
    bool have_raw = raw.len && hearth_jraw_iter(raw, &it);
    hearth_buf text = {0}, thought = {0};
    bool after_image = false; /* the next text block follows an image's marker: no newline */
    cJSON *calls = cJSON_CreateObject(); /* collects tool_calls of an assistant turn */
    bool ok = false, any_result = false;
    int  ib = 0;
    if (!calls) return hearth_api_oom(e);
    for (const cJSON *b = content->child; b; b = b->next, ib++) {
        hearth_span rb = {NULL, 0};
        if (have_raw && !hearth_jraw_next(&it, NULL, &rb)) have_raw = false;
        const cJSON *type = cJSON_IsObject(b) ? hearth_req_field(b, "type") : NULL;
        if (!cJSON_IsString(type)) {
            bad_type(e, param, "each content block needs a string 'type'");
            goto out;
        }
        const char *t = type->valuestring;
        if (!strcmp(t, "text")) {
            const cJSON *tx = hearth_req_field(b, "text");
            if (!cJSON_IsString(tx)) {
                bad_type(e, param, "a text block needs a string 'text'");
                goto out;
            }
            if (after_image && !hearth_buf_puts(&text, tx->valuestring)) {
                hearth_api_oom(e);
                goto out;
            }
            if (!after_image && !append(&text, tx->valuestring, e)) goto out;
            after_image = false;
        } else if (user && !strcmp(t, "image")) {
            char pb[96], mk[64];
            snprintf(pb, sizeof pb, "%s.content.%d", param, ib);
            if (!hearth_media_parse(b, im, pb, max_media, media, e)) goto out;
            size_t k = hearth_media_marker(media, media->n - 1, mk, sizeof mk);
            if (k && !hearth_buf_put(&text, mk, k)) {
                hearth_api_oom(e);
                goto out;
            }
            after_image = k > 0;
        } else if (user && !strcmp(t, "tool_result")) {
            if (!map_tool_result(body, b, param, e)) goto out;
            any_result = true;
        } else if (!user && !strcmp(t, "tool_use")) {
            const cJSON *id = hearth_req_field(b, "id"), *name = hearth_req_field(b, "name");
            if (!cJSON_IsString(id) || !cJSON_IsString(name)) {
                bad_type(e, param, "a tool_use block needs string 'id' and 'name'");
                goto out;
            }
            const cJSON *input = hearth_req_field(b, "input");
            if (!hearth_chatmap_tool_call(calls, id->valuestring, name->valuestring, input,
                                          hearth_chatmap_raw_child(rb, b, input), param, e))
                goto out;
        } else if (!user && (!strcmp(t, "thinking") || !strcmp(t, "redacted_thinking"))) {
            const char *k = t[0] == 't' ? "thinking" : "data";
            const cJSON *tx = hearth_req_field(b, k);
            if (!cJSON_IsString(tx)) {
                hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", param, "%s: a %s block needs a string '%s'",
                                param, t, k);
                goto out;
            }
            if (*tx->valuestring && !append(&thought, tx->valuestring, e)) goto out;
        } else {
            hearth_api_fail(e, HEARTH_E_UNSUPPORTED, "unsupported", param,
                            "%s: content blocks of type '%.40s' are not supported "
                            "%sby hearth", param, t, user ? "in a user turn " : "in an assistant turn ");
            goto out;
        }
    }
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(calls, "tool_calls");
    if (!user || text.p || !any_result) {
        cJSON *m = hearth_chatmap_msg(body, user ? "user" : "assistant", text.p ? text.p : "", e);
        if (!m) goto out;
        if (tc) cJSON_AddItemToObject(m, "tool_calls", cJSON_DetachItemViaPointer(calls, (cJSON *)tc));
        if (thought.p && !cJSON_AddStringToObject(m, "reasoning_content", thought.p)) {
            hearth_api_oom(e);
            goto out;
        }
    }
    ok = true;
out:
    hearth_buf_fini(&thought);
    hearth_buf_fini(&text);
    cJSON_Delete(calls);
    return ok;
}

static bool map_messages(const cJSON *root, hearth_span raw, cJSON *body, hearth_media_list *media, size_t max_media,
                         hearth_api_err *e) {
    const cJSON *sys = hearth_req_field(root, "system");
    if (sys) {
        char *text = NULL;
        if (!hearth_chatmap_text(sys, text_types, "system", &text, e)) return false;
        bool ok = !*text || hearth_chatmap_msg(body, "system", text, e);
        free(text);
        if (!ok) return false;
    }
    const cJSON *msgs = hearth_req_field(root, "messages");
    if (!msgs) return hearth_api_fail(e, HEARTH_E_INVALID, "missing_required_parameter", "messages",
                                      "messages: Field required");
    if (!cJSON_IsArray(msgs)) return bad_type(e, "messages", "must be a list of messages");
    int n = cJSON_GetArraySize(msgs);
    if (n == 0)
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "messages",
                               "messages: at least one message is required");
    if (n > MAX_MESSAGES)
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "messages",
                               "messages: at most %d messages are allowed", MAX_MESSAGES);
    int i = 0;
    hearth_jraw_it it;
    bool have_raw = hearth_jraw_iter(hearth_chatmap_raw_child(raw, root, msgs), &it);
    for (const cJSON *m = msgs->child; m; m = m->next, i++) {
        char param[48];
        hearth_span rm = {NULL, 0};
        if (have_raw && !hearth_jraw_next(&it, NULL, &rm)) have_raw = false;
        snprintf(param, sizeof param, "messages.%d", i);
        const cJSON *role = cJSON_IsObject(m) ? hearth_req_field(m, "role") : NULL;
        if (!cJSON_IsString(role) || (strcmp(role->valuestring, "user") && strcmp(role->valuestring, "assistant")))
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", param,
                                   "%s.role: must be 'user' or 'assistant'", param);
        bool user = !strcmp(role->valuestring, "user");
        const cJSON *c = hearth_req_field(m, "content");
        if (cJSON_IsString(c)) {
            if (!hearth_chatmap_msg(body, role->valuestring, c->valuestring, e)) return false;
        } else if (cJSON_IsArray(c)) {
            if (!map_blocks(body, user, c, hearth_chatmap_raw_child(rm, m, c), param, i, media, max_media, e))
                return false;
        } else {
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", param,
                                   "%s.content: must be a string or a list of content blocks", param);
        }
    }
    return true;
}

/* Anthropic's tool_choice -> the chat body's (OpenAI's spelling, which chat.c applies). */
static bool map_tool_choice(const cJSON *root, cJSON *body, hearth_api_err *e) {
    const cJSON *choice = hearth_req_field(root, "tool_choice");
    if (!choice) return true;
    const cJSON *t = cJSON_IsObject(choice) ? hearth_req_field(choice, "type") : NULL;
    if (!cJSON_IsString(t)) return bad_type(e, "tool_choice", "must be an object with a string 'type'");
    cJSON *c = NULL;
    if (!strcmp(t->valuestring, "none") || !strcmp(t->valuestring, "auto")) c = cJSON_CreateString(t->valuestring);
    else if (!strcmp(t->valuestring, "any")) c = cJSON_CreateString("required");
    else if (!strcmp(t->valuestring, "tool")) {
        const cJSON *name = hearth_req_field(choice, "name");
        if (!cJSON_IsString(name)) return bad_type(e, "tool_choice", "a tool_choice of type 'tool' needs a 'name'");
        cJSON *f = NULL;
        if ((c = cJSON_CreateObject()) && (!cJSON_AddStringToObject(c, "type", "function") ||
                                           !(f = cJSON_AddObjectToObject(c, "function")) ||
                                           !cJSON_AddStringToObject(f, "name", name->valuestring))) {
            cJSON_Delete(c);
            c = NULL;
        }
    } else {
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "tool_choice",
                               "tool_choice: type must be auto, any, tool or none (got '%.40s')", t->valuestring);
    }
    if (!c || !cJSON_AddItemToObject(body, "tool_choice", c)) {
        cJSON_Delete(c);
        return hearth_api_oom(e);
    }
    return true;
}

static bool map_tools(const cJSON *root, hearth_span raw, cJSON *body, hearth_api_err *e) {
    const cJSON *tools = hearth_req_field(root, "tools");
    if (!tools) return map_tool_choice(root, body, e);
    if (!cJSON_IsArray(tools)) return bad_type(e, "tools", "must be a list of tools");
    int i = 0;
    hearth_jraw_it it;
    bool have_raw = hearth_jraw_iter(hearth_chatmap_raw_child(raw, root, tools), &it);
    for (const cJSON *t = tools->child; t; t = t->next, i++) {
        hearth_span rt = {NULL, 0};
        if (have_raw && !hearth_jraw_next(&it, NULL, &rt)) have_raw = false;
        char param[32];
        snprintf(param, sizeof param, "tools.%d", i);
        if (!cJSON_IsObject(t)) return bad_type(e, param, "must be an object");
        const cJSON *type = hearth_req_field(t, "type");
        if (type && (!cJSON_IsString(type) || strcmp(type->valuestring, "custom"))) continue; /* a server tool */
        const cJSON *name = hearth_req_field(t, "name"), *desc = hearth_req_field(t, "description");
        const cJSON *schema = hearth_req_field(t, "input_schema");
        if (!cJSON_IsString(name) || !*name->valuestring) return bad_type(e, param, "a tool needs a string 'name'");
        if (desc && !cJSON_IsString(desc)) return bad_type(e, param, "'description' must be a string");
        if (!cJSON_IsObject(schema)) return bad_type(e, param, "a tool needs an object 'input_schema'");
        if (!hearth_chatmap_tool(body, name->valuestring, desc ? desc->valuestring : NULL, schema,
                                 hearth_chatmap_raw_child(rt, t, schema), e))
            return false;
    }
    return map_tool_choice(root, body, e);
}

static bool map_thinking(const cJSON *root, cJSON *body, hearth_api_err *e) {
    const cJSON *th = hearth_req_field(root, "thinking");
    if (!th) return true;
    const cJSON *t = cJSON_IsObject(th) ? hearth_req_field(th, "type") : NULL;
    if (!cJSON_IsString(t)) return bad_type(e, "thinking", "must be an object with a string 'type'");
    return hearth_chatmap_kwarg(body, "enable_thinking", cJSON_CreateBool(strcmp(t->valuestring, "disabled") != 0), e);
}

/* The prompt of a Messages request (shared by messages and count_tokens); co gets what the
 * reply parsing needs (tool-call and reasoning formats). */
static bool prompt_of(hearth_server *s, const cJSON *root, hearth_span raw, hearth_chat_opts *co, int32_t **ids,
                      size_t *n, hearth_api_err *e) {
    cJSON *body = hearth_chatmap_new();
    if (!body) return hearth_api_oom(e);
    hearth_media_list media = {0};
    hearth_vprompt_list_init(s, &media);
    co->media = &media;
    bool ok = map_messages(root, raw, body, &media, hearth_media_max(s), e) && map_tools(root, raw, body, e) &&
              map_thinking(root, body, e) && hearth_server_media_admit(s, &media, e) &&
              hearth_chat_prompt_opts(s, body, co, ids, n, e);
    co->media = NULL;
    hearth_media_list_fini(&media);
    cJSON_Delete(body);
    return ok;
}

static bool parse_sampling(hearth_server *s, const cJSON *root, hearth_gen_spec *g, hearth_api_err *e) {
    double d;
    int64_t i;
    int rc;
    hearth_anthropic_out *o = calloc(1, sizeof *o);
    hearth_gen_spec_init(s, g, &hearth_anthropic_writer, 0);
    g->ctx = o;
    if (!o) return hearth_api_oom(e);
    if ((rc = hearth_req_int(root, "max_tokens", -1e12, 1e12, &i, e)) < 0) return false;
    if (!rc) return hearth_api_fail(e, HEARTH_E_INVALID, "missing_required_parameter", "max_tokens",
                                    "max_tokens: Field required");
    if (i < 1) return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "max_tokens",
                                      "max_tokens: must be at least 1");
    g->max_tokens = i > INT32_MAX ? INT32_MAX : (int32_t)i;
    g->max_tokens_set = true;
    if (hearth_req_bool(root, "stream", &g->stream, e) < 0) return false;
    if ((rc = hearth_req_num(root, "temperature", 0, 1, &d, e)) < 0) return false;
    if (rc) g->sampling.temperature = (float)d;
    if ((rc = hearth_req_num(root, "top_p", 0, 1, &d, e)) < 0) return false;
    if (rc) g->sampling.top_p = d <= 0 ? 1e-6f : (float)d;
    if ((rc = hearth_req_int(root, "top_k", 0, 1 << 24, &i, e)) < 0) return false;
    if (rc) g->sampling.top_k = (int32_t)i;
    if (!hearth_req_refuse_unhonoured(root, false, e)) return false;
    const cJSON *st = hearth_req_field(root, "stop_sequences");
    if (st && !cJSON_IsArray(st)) return bad_type(e, "stop_sequences", "must be a list of strings");
    for (const cJSON *it = st ? st->child : NULL; it; it = it->next) {
        if (!cJSON_IsString(it)) return bad_type(e, "stop_sequences", "must be a list of strings");
        if (!hearth_gen_add_stop(g, it->valuestring, "stop_sequences", e)) return false;
    }
    return true;
}

static bool parse(hearth_server *s, const cJSON *root, hearth_span raw, hearth_gen_spec *g, hearth_api_err *e) {
    hearth_chat_opts co = {.continue_final = -1, .want_images = true}; /* a final assistant turn is a prefill */
    if (!parse_sampling(s, root, g, e) || !prompt_of(s, root, raw, &co, &g->prompt, &g->n_prompt, e)) return false;
    g->images = co.images;
    g->n_images = co.n_images;
    g->tools = co.tools;
    g->reasoning = co.reasoning;
    g->reasoning_open = co.reasoning_open;
    g->constraint = co.constraint;
    g->constraint_fed = co.constraint_fed;
    return true;
}

void hearth_anthropic_messages(hearth_http_req *r) { hearth_gen_handle(r, parse); }

void hearth_anthropic_count_tokens(hearth_http_req *r) {
    hearth_api_err e;
    int32_t *ids = NULL;
    size_t n = 0;
    cJSON *root = hearth_req_parse(r, &e);
    hearth_chat_opts co = {.continue_final = -1};
    if (!root || !prompt_of(r->srv, root, (hearth_span){r->body, r->n_body}, &co, &ids, &n, &e)) {
        cJSON_Delete(root);
        hearth_http_send_error(r, &e);
        return;
    }
    cJSON_Delete(root);
    free(ids);
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_jw_obj(&w);
    hearth_jw_key(&w, "input_tokens");
    hearth_jw_int(&w, (int64_t)n);
    hearth_jw_obj_end(&w);
    hearth_http_send_json(r, 200, &w);
    hearth_jw_fini(&w);
}
