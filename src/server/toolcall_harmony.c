/*
 * toolcall_harmony.c - gpt-oss's tool calls in the harmony format (toolcall.h): after the
 * recipient "to=functions." come the function's name (up to whitespace or '<'), the rest of
 * the message header (a content type such as "<|constrain|>json", or "<|channel|>commentary
 * json" when the recipient stood in the header), "<|message|>", then the arguments as one JSON
 * object, ended by "<|call|>" (toolcall.c cuts the body there).
 *
 * A partial call is announced only once its JSON is complete: the body's tail may still be the
 * start of <|call|>, which is no part of the arguments.
 */
#include "server/jraw.h"
#include "server/toolcall_internal.h"

#include <string.h>

#define MESSAGE "<|message|>"

/* The name and the JSON text of a body s[0..n); false when it is not (yet) that shape. */
static bool split(const char *s, size_t n, hearth_span *name, hearth_span *json) {
    size_t i = 0;
    while (i < n && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '<') i++;
    if (i == 0 || i == n) return false;
    *name = (hearth_span){s, i};
    const char *m = memmem(s + i, n - i, MESSAGE, sizeof MESSAGE - 1);
    if (!m) return false;
    size_t at = (size_t)(m - s) + sizeof MESSAGE - 1;
    *json = hearth_jraw_trim(s + at, n - at);
    return true;
}

int hearth_tc_harmony_call(hearth_tc *p, const char *s, size_t n) {
    hearth_span name, json;
    if (!split(s, n, &name, &json)) return -1;
    cJSON *root = hearth_tc_parse_exact(json.ptr, json.len);
    bool ok = cJSON_IsObject(root);
    cJSON_Delete(root);
    if (!ok) return -1;
    return hearth_tc_add(p, name.ptr, name.len, json.ptr, json.len, NULL, 0) ? 1 : -2;
}

int hearth_tc_harmony_partial(const char *s, size_t n, hearth_tc_partial *pc) {
    hearth_span name, json;
    if (!split(s, n, &name, &json) || !json.len || json.ptr[0] != '{') return 0;
    size_t len = hearth_jraw_skip(json.ptr, json.len);
    if (!len) return 0;
    *pc = (hearth_tc_partial){.name = name, .id = {NULL, 0}, .args = {json.ptr, len}, .done = true};
    return 1;
}
