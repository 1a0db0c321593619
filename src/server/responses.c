/*
 * responses.c - Responses API requests -> a chat body and a hearth_gen_spec, and the
 * stored-response endpoints (see responses.h; the answer's shapes are in responses_out.c).
 *
 * Mapping onto the chat template's messages (chatmap.h):
 *
 *   instructions                          -> a first `system` message (this request only)
 *   input "text"                          -> one `user` message
 *   {role, content} items (type "message" or none): user / assistant / system / developer,
 *     content a string or input_text / output_text parts -> that role's message
 *   {type: "function_call", call_id, name, arguments}     -> a tool call of an `assistant`
 *                                                             message (consecutive calls join one)
 *   {type: "function_call_output", call_id, output}       -> a `tool` message
 *   {type: "reasoning"} items             -> reasoning_content of the assistant message that
 *                                            follows (its content's reasoning_text, else its
 *                                            summary texts, joined by newlines)
 *   tools [{type: "function", name, description, parameters}] -> function tools; other tool
 *                                            types (web_search, file_search...) are dropped
 *   tool_choice "none" / "auto" / "required" / {type: "function", name} -> the same choice
 *   the model's tool calls                -> function_call output items (responses_out.c)
 *   the model's reasoning                 -> a reasoning output item before the message
 *   reasoning.effort                      -> enable_thinking (false for "none"/"minimal")
 *
 * max_output_tokens (>= 1), temperature [0, 2], top_p [0, 1], stream, store (default true),
 * previous_response_id; text.format other than "text" and background mode are 400 "not
 * supported"; input_image / input_file parts are parsed into media items (media.h), a 400
 * naming the part ("input[0].content[1]") and the model unless the model can use them; so are fields that would change the output and that hearth
 * does not honour (lora: reqjson.h); other fields (truncation, include, user,
 * metadata...) are accepted and, where the response object has them, echoed. metadata is held
 * to OpenAI's documented bounds (16 pairs, keys up to 64 characters, string values up to 512),
 * since it is stored and echoed back.
 */
#include "server/vision_prompt.h"
#include "server/responses.h"
#include "server/structured.h"
#include "server/chat.h"
#include "server/chatmap.h"
#include "server/jraw.h"
#include "server/reqjson.h"
#include "server/resp_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ITEMS 4096

static const char *const text_types[] = {"input_text", "output_text", "text", NULL};

static bool oom(hearth_api_err *e) { return hearth_api_oom(e); }

static bool unsupported(hearth_api_err *e, const char *param, const char *what) {
    return hearth_api_fail(e, HEARTH_E_UNSUPPORTED, "unsupported", param, "%s is not supported by hearth yet", what);
}

/* The last message of body if it is an assistant turn (function calls join it). */
static cJSON *last_assistant(cJSON *body) {
    cJSON *msgs = cJSON_GetObjectItemCaseSensitive(body, "messages");
    cJSON *last = msgs->child ? msgs->child->prev : NULL; /* cJSON keeps the tail in head->prev */
    const cJSON *role = last ? cJSON_GetObjectItemCaseSensitive(last, "role") : NULL;
    return role && !strcmp(role->valuestring, "assistant") ? last : NULL;
}

/* The assistant message a reasoning item opened (no text or calls yet), or NULL. */
static cJSON *open_reasoning(cJSON *body) {
    cJSON *m = last_assistant(body);
    const cJSON *c = m ? cJSON_GetObjectItemCaseSensitive(m, "content") : NULL;
    if (!m || !cJSON_GetObjectItemCaseSensitive(m, "reasoning_content") ||
        cJSON_GetObjectItemCaseSensitive(m, "tool_calls") || !cJSON_IsString(c) || *c->valuestring)
        return NULL;
    return m;
}

/* A reasoning item: its text becomes reasoning_content of an assistant message that the next
 * assistant text or function calls join. */
static bool map_reasoning(cJSON *body, const cJSON *it, const char *param, hearth_api_err *e) {
    static const char *const rs_types[] = {"reasoning_text", "summary_text", "text", NULL};
    const cJSON *parts = hearth_req_field(it, "content");
    if (!cJSON_IsArray(parts) || !parts->child) parts = hearth_req_field(it, "summary");
    char *text = NULL;
    if (cJSON_IsArray(parts) && parts->child && !hearth_chatmap_text(parts, rs_types, param, &text, e)) return false;
    if (!text || !*text) {
        free(text);
        return true;
    }
    cJSON *m = open_reasoning(body);
    if (!m) m = hearth_chatmap_msg(body, "assistant", "", e);
    bool ok = m && (cJSON_DeleteItemFromObjectCaseSensitive(m, "reasoning_content"),
                    cJSON_AddStringToObject(m, "reasoning_content", text) || oom(e));
    free(text);
    return ok;
}

static bool map_item(cJSON *body, const cJSON *it, hearth_span raw, const char *param, int ii, hearth_media_list *media,
                     size_t max_media, hearth_api_err *e) {
    if (!cJSON_IsObject(it)) return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", param,
                                                    "'%s' must be an object", param);
    const char *type = NULL;
    if (hearth_req_str(it, "type", &type, e) < 0) return false;
    if (!type || !strcmp(type, "message")) {
        const char *role = NULL;
        if (hearth_req_str(it, "role", &role, e) < 0) return false;
        if (!role || (strcmp(role, "user") && strcmp(role, "assistant") && strcmp(role, "system") &&
                      strcmp(role, "developer")))
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", param,
                                   "'%s.role' must be user, assistant, system or developer", param);
        const cJSON *c = hearth_req_field(it, "content");
        if (!c) return hearth_api_fail(e, HEARTH_E_INVALID, "missing_required_parameter", param,
                                       "'%s.content' is required", param);
        char *text = NULL;
        if (!hearth_chatmap_content(c, text_types, param, ii, max_media, media, &text, e)) return false;
        cJSON *m = !strcmp(role, "assistant") ? open_reasoning(body) : NULL;
        bool ok = m ? cJSON_ReplaceItemInObjectCaseSensitive(m, "content", cJSON_CreateString(text)) || oom(e)
                    : hearth_chatmap_msg(body, !strcmp(role, "developer") ? "system" : role, text, e) != NULL;
        free(text);
        return ok;
    }
    if (!strcmp(type, "function_call")) {
        const char *id = NULL, *name = NULL;
        if (hearth_req_str(it, "call_id", &id, e) < 0 || hearth_req_str(it, "name", &name, e) < 0) return false;
        if (!id || !name)
            return hearth_api_fail(e, HEARTH_E_INVALID, "missing_required_parameter", param,
                                   "a function_call item needs 'call_id' and 'name'");
        cJSON *m = last_assistant(body);
        if (!m && !(m = hearth_chatmap_msg(body, "assistant", "", e))) return false;
        const cJSON *args = hearth_req_field(it, "arguments");
        return hearth_chatmap_tool_call(m, id, name, args, hearth_chatmap_raw_child(raw, it, args), param, e);
    }
    if (!strcmp(type, "function_call_output")) {
        const char *id = NULL;
        if (hearth_req_str(it, "call_id", &id, e) < 0) return false;
        if (!id) return hearth_api_fail(e, HEARTH_E_INVALID, "missing_required_parameter", param,
                                        "a function_call_output item needs 'call_id'");
        const cJSON *out = hearth_req_field(it, "output");
        char *text = NULL;
        if (out && !hearth_chatmap_text(out, text_types, param, &text, e)) return false;
        cJSON *m = hearth_chatmap_msg(body, "tool", text ? text : "", e);
        free(text);
        return m && (cJSON_AddStringToObject(m, "tool_call_id", id) || oom(e));
    }
    if (!strcmp(type, "reasoning")) return map_reasoning(body, it, param, e);
    return hearth_api_fail(e, HEARTH_E_UNSUPPORTED, "unsupported", param,
                           "input items of type '%.40s' are not supported by "
                           "hearth yet", type);
}

static bool map_input(const cJSON *root, hearth_span raw, cJSON *body, hearth_media_list *media, size_t max_media,
                      hearth_api_err *e) {
    const cJSON *in = hearth_req_field(root, "input");
    if (!in) return hearth_api_fail(e, HEARTH_E_INVALID, "missing_required_parameter", "input", "'input' is required");
    if (cJSON_IsString(in)) return hearth_chatmap_msg(body, "user", in->valuestring, e) != NULL;
    if (!cJSON_IsArray(in))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "input",
                               "'input' must be a string or a list of items");
    int n = cJSON_GetArraySize(in);
    if (n == 0) return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "input",
                                       "'input' must hold at least one item");
    if (n > MAX_ITEMS)
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "input", "at most %d input items are allowed",
                               MAX_ITEMS);
    int i = 0;
    hearth_jraw_it ri;
    bool have_raw = hearth_jraw_iter(hearth_chatmap_raw_child(raw, root, in), &ri);
    for (const cJSON *it = in->child; it; it = it->next, i++) {
        char param[32];
        hearth_span r1 = {NULL, 0};
        if (have_raw && !hearth_jraw_next(&ri, NULL, &r1)) have_raw = false;
        snprintf(param, sizeof param, "input[%d]", i);
        if (!map_item(body, it, r1, param, i, media, max_media, e)) return false;
    }
    return true;
}

static bool map_tools(const cJSON *root, hearth_span raw, cJSON *body, hearth_responses_out *o, hearth_api_err *e) {
    const cJSON *choice = hearth_req_field(root, "tool_choice");
    const cJSON *tools = hearth_req_field(root, "tools");
    if (tools && !cJSON_IsArray(tools))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "tools", "'tools' must be a list of tools");
    hearth_span rtools = hearth_chatmap_raw_child(raw, root, tools); /* echoed as sent */
    if (tools && cJSON_GetArraySize(tools) &&
        !(o->tools = rtools.len ? strndup(rtools.ptr, rtools.len) : cJSON_PrintUnformatted(tools)))
        return oom(e);
    /* The echo goes into SSE data lines, which a line break would end: in JSON text line
     * breaks can only be whitespace between tokens (strings hold them escaped), so spaces do. */
    for (char *c = o->tools; c && *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' ';
    if (choice) { /* Responses' spelling -> chat's: strings pass, {type: function, name} nests */
        const cJSON *name = cJSON_IsObject(choice) ? hearth_req_field(choice, "name") : NULL;
        cJSON *c = NULL, *f = NULL;
        if (cJSON_IsString(choice)) c = cJSON_CreateString(choice->valuestring);
        else if (cJSON_IsString(name) && (c = cJSON_CreateObject()) &&
                 (!cJSON_AddStringToObject(c, "type", "function") || !(f = cJSON_AddObjectToObject(c, "function")) ||
                  !cJSON_AddStringToObject(f, "name", name->valuestring))) {
            cJSON_Delete(c);
            return oom(e);
        } else if (!cJSON_IsString(name))
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "tool_choice",
                                   "'tool_choice' must be \"none\", \"auto\", \"required\" or "
                                   "{\"type\": \"function\", \"name\": ...}");
        if (!c || !cJSON_AddItemToObject(body, "tool_choice", c)) {
            cJSON_Delete(c);
            return oom(e);
        }
    }
    int i = 0;
    hearth_jraw_it it;
    bool have_raw = tools && hearth_jraw_iter(hearth_chatmap_raw_child(raw, root, tools), &it);
    for (const cJSON *t = tools ? tools->child : NULL; t; t = t->next, i++) {
        char param[32];
        hearth_span rt = {NULL, 0};
        if (have_raw && !hearth_jraw_next(&it, NULL, &rt)) have_raw = false;
        snprintf(param, sizeof param, "tools[%d]", i);
        const char *type = NULL, *name = NULL, *desc = NULL;
        if (!cJSON_IsObject(t))
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", param, "'%s' must be an object", param);
        if (hearth_req_str(t, "type", &type, e) < 0) return false;
        if (!type || strcmp(type, "function")) continue; /* built-in tools hearth does not have */
        if (hearth_req_str(t, "name", &name, e) < 0 || hearth_req_str(t, "description", &desc, e) < 0) return false;
        if (!name || !*name)
            return hearth_api_fail(e, HEARTH_E_INVALID, "missing_required_parameter", param,
                                   "a function tool needs a 'name'");
        const cJSON *params = hearth_req_field(t, "parameters");
        if (params && !cJSON_IsObject(params))
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", param, "'%s.parameters' must be an object",
                                   param);
        if (!hearth_chatmap_tool(body, name, desc, params, hearth_chatmap_raw_child(rt, t, params), e)) return false;
    }
    return true;
}

static bool map_options(const cJSON *root, cJSON *body, hearth_api_err *e) {
    const cJSON *text = hearth_req_field(root, "text");
    const cJSON *fmt = cJSON_IsObject(text) ? hearth_req_field(text, "format") : NULL;
    if (text && !cJSON_IsObject(text))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "text", "'text' must be an object");
    const cJSON *ft = cJSON_IsObject(fmt) ? hearth_req_field(fmt, "type") : NULL;
    if (fmt && !cJSON_IsString(ft))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "text.format",
                               "'text.format' needs a string 'type'");
    bool bg = false;
    if (hearth_req_bool(root, "background", &bg, e) < 0) return false;
    if (bg) return unsupported(e, "background", "background mode");
    const cJSON *rs = hearth_req_field(root, "reasoning");
    if (rs && !cJSON_IsObject(rs))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "reasoning", "'reasoning' must be an object");
    const char *effort = NULL;
    if (rs && hearth_req_str(rs, "effort", &effort, e) < 0) return false;
    if (effort)
        return hearth_chatmap_kwarg(body, "enable_thinking",
                                    cJSON_CreateBool(strcmp(effort, "none") && strcmp(effort, "minimal")), e);
    return true;
}

/* The earlier turns of previous_response_id into body. */
static bool resume(hearth_server *s, const cJSON *root, cJSON *body, hearth_responses_out *o, hearth_api_err *e) {
    const char *prev = NULL;
    if (hearth_req_str(root, "previous_response_id", &prev, e) < 0) return false;
    if (!prev) return true;
    char *conv = NULL;
    if (!hearth_resp_store_get(s->responses, prev, &conv, NULL))
        return hearth_api_fail(e, HEARTH_E_NOTFOUND, "previous_response_not_found", "previous_response_id",
                               "Previous response with id '%.100s' not found.", prev);
    cJSON *turns = cJSON_Parse(conv); /* the store wrote it: a failure is out of memory */
    free(conv);
    if (!turns || !cJSON_IsArray(turns) || !cJSON_ReplaceItemInObjectCaseSensitive(body, "messages", turns)) {
        cJSON_Delete(turns);
        return oom(e);
    }
    return (o->previous_id = strdup(prev)) != NULL || oom(e);
}

/* OpenAI's bounds on metadata: at most 16 pairs, keys up to 64 characters, values strings up
 * to 512 characters. */
static bool metadata_ok(const cJSON *md, hearth_api_err *e) {
    if (!cJSON_IsObject(md))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "metadata", "'metadata' must be an object");
    int n = 0;
    for (const cJSON *kv = md->child; kv; kv = kv->next) {
        if (++n > 16)
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "metadata",
                                   "'metadata' may hold at most 16 key-value pairs");
        if (hearth_utf8_count(kv->string, strlen(kv->string), NULL) > 64)
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "metadata",
                                   "'metadata' keys may be at most 64 characters long");
        if (!cJSON_IsString(kv))
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", "metadata",
                                   "'metadata' values must be strings (the value of '%.64s' is not)", kv->string);
        if (hearth_utf8_count(kv->valuestring, strlen(kv->valuestring), NULL) > 512)
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "metadata",
                                   "'metadata' values may be at most 512 characters long (the value of '%.64s' is longer)",
                                   kv->string);
    }
    return true;
}

static bool parse(hearth_server *s, const cJSON *root, hearth_span raw, hearth_gen_spec *g, hearth_api_err *e) {
    double d;
    int64_t i;
    int rc;
    const char *instr = NULL;
    hearth_responses_out *o = calloc(1, sizeof *o);
    hearth_gen_spec_init(s, g, &hearth_responses_writer, 0);
    g->ctx = o;
    g->prompt_param = "input";
    if (!o) return oom(e);
    o->store = true;
    o->msg_index = -1;
    o->rs_index = -1;
    hearth_server_new_id(s, "msg_", o->msg_id, sizeof o->msg_id);
    hearth_server_new_id(s, "rs_", o->rs_id, sizeof o->rs_id);
    if (!hearth_req_refuse_unhonoured(root, false, e)) return false;
    if ((rc = hearth_req_int(root, "max_output_tokens", -1e12, 1e12, &i, e)) < 0) return false;
    if (rc) {
        if (i < 1)
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "max_output_tokens",
                                   "'max_output_tokens' must be at least 1");
        g->max_tokens = o->max_output_tokens = i > INT32_MAX ? INT32_MAX : (int32_t)i;
        g->max_tokens_set = true;
    }
    if (hearth_req_bool(root, "stream", &g->stream, e) < 0 || hearth_req_bool(root, "store", &o->store, e) < 0)
        return false;
    if ((rc = hearth_req_num(root, "temperature", 0, 2, &d, e)) < 0) return false;
    if (rc) g->sampling.temperature = (float)d;
    if ((rc = hearth_req_num(root, "top_p", 0, 1, &d, e)) < 0) return false;
    if (rc) g->sampling.top_p = d <= 0 ? 1e-6f : (float)d;
    if (hearth_req_str(root, "instructions", &instr, e) < 0) return false;
    if (instr && !(o->instructions = strdup(instr))) return oom(e);
    const cJSON *md = hearth_req_field(root, "metadata");
    if (md && !metadata_ok(md, e)) return false;
    if (md && !(o->metadata = cJSON_PrintUnformatted(md))) return oom(e);

    cJSON *body = hearth_chatmap_new();
    if (!body) return oom(e);
    hearth_media_list media = {0};
    hearth_vprompt_list_init(s, &media);
    bool ok = resume(s, root, body, o, e) && map_input(root, raw, body, &media, hearth_media_max(s), e) &&
              map_tools(root, raw, body, o, e) && map_options(root, body, e) && hearth_server_media_admit(s, &media, e);
    if (ok) { /* the conversation to store excludes the instructions */
        cJSON *msgs = cJSON_GetObjectItemCaseSensitive(body, "messages");
        o->conv = cJSON_Duplicate(msgs, true);
        if (!o->conv) ok = oom(e);
        if (ok && instr) {
            cJSON *sys = cJSON_CreateObject();
            if (!sys || !cJSON_AddStringToObject(sys, "role", "system") ||
                !cJSON_AddStringToObject(sys, "content", instr) || !cJSON_InsertItemInArray(msgs, 0, sys)) {
                cJSON_Delete(sys);
                ok = oom(e);
            }
        }
    }
    hearth_chat_opts co = {.media = &media, .want_images = true};
    ok = ok && hearth_chat_prompt_opts(s, body, &co, &g->prompt, &g->n_prompt, e);
    hearth_media_list_fini(&media);
    g->images = co.images;
    g->n_images = co.n_images;
    g->tools = co.tools;
    g->reasoning = co.reasoning;
    g->reasoning_open = co.reasoning_open;
    g->constraint = co.constraint;
    g->constraint_fed = co.constraint_fed;
    /* text.format: JSON output, unless a tool call is forced */
    const cJSON *txt = hearth_req_field(root, "text");
    const cJSON *fmt = cJSON_IsObject(txt) ? hearth_req_field(txt, "format") : NULL;
    if (ok && fmt && !g->constraint)
        ok = hearth_structured_format(fmt, "text.format", hearth_structured_prefix(s->rs_format, co.reasoning_open),
                                      &g->constraint, e);
    cJSON_Delete(body);
    return ok;
}

void hearth_responses_create(hearth_http_req *r) { hearth_gen_handle(r, parse); }

static const char *id_of(hearth_http_req *r) { return r->path + strlen("/v1/responses/"); }

static void not_found(hearth_http_req *r) {
    hearth_api_err e;
    hearth_api_fail(&e, HEARTH_E_NOTFOUND, "not_found", NULL, "Response with id '%.100s' not found.", id_of(r));
    hearth_http_send_error(r, &e);
}

void hearth_responses_get(hearth_http_req *r) {
    char *resp = NULL;
    if (!hearth_resp_store_get(r->srv->responses, id_of(r), NULL, &resp)) {
        not_found(r);
        return;
    }
    hearth_http_send(r, 200, "application/json", resp, strlen(resp));
    free(resp);
}

void hearth_responses_delete(hearth_http_req *r) {
    if (!hearth_resp_store_del(r->srv->responses, id_of(r))) {
        not_found(r);
        return;
    }
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_jw_obj(&w);
    hearth_jw_key(&w, "id");
    hearth_jw_cstr(&w, id_of(r));
    hearth_jw_key(&w, "object");
    hearth_jw_cstr(&w, "response");
    hearth_jw_key(&w, "deleted");
    hearth_jw_bool(&w, true);
    hearth_jw_obj_end(&w);
    hearth_http_send_json(r, 200, &w);
    hearth_jw_fini(&w);
}
