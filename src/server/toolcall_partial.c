/*
 * toolcall_partial.c - the calls of tool-call markup that is still being written, for
 * streaming their arguments as the model writes them (toolcall.h, incremental mode).
 *
 * For each markup kind, hearth_tc_partial_call reads the body so far and says how much of a
 * call is decided: its name, the model's id if it came first, and a prefix of its arguments'
 * JSON text that the finished markup is certain to give (the finished parser in toolcall.c
 * and toolcall_args.c produces the same bytes). A call is announced only once its name is
 * known and its arguments began, so text that is not a call yet is never streamed as one.
 *
 *   JSON bodies (Hermes, Llama 3, Mistral): the members of {"name": .., "arguments": {..}}
 *   are read in place; the arguments object is the model's own text, so every byte of it
 *   that has arrived is final. Arguments given as a JSON string, or a name or id written
 *   with escapes, are not streamed: the call is delivered whole when its markup closes.
 *   Python calls, call:f{...} and <function=f> XML: converted to JSON argument by argument
 *   (toolcall_args.c), so an argument is streamed once its separator has arrived.
 */
#include "server/jraw.h"
#include "server/toolcall_internal.h"

#include <string.h>

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static size_t skip_ws(const char *b, size_t n, size_t i) {
    while (i < n && is_ws(b[i])) i++;
    return i;
}

/* The inside of a complete JSON string value v (with its quotes), when it has no escapes. */
static bool plain_string(hearth_span v, hearth_span *out) {
    if (v.len < 2 || v.ptr[0] != '"' || memchr(v.ptr, '\\', v.len)) return false;
    *out = (hearth_span){v.ptr + 1, v.len - 2};
    return true;
}

/* The call object whose text so far is b[0..n) (b[0] == '{'). */
static int json_partial(const char *b, size_t n, hearth_tc_partial *pc) {
    hearth_span name = {NULL, 0}, id = {NULL, 0}, args = {NULL, 0};
    bool done = false, closed = false;
    size_t i = 1;
    for (;;) {
        i = skip_ws(b, n, i);
        if (i == n) break;
        if (b[i] == '}') {
            closed = true;
            break;
        }
        if (b[i] == ',') {
            i++;
            continue;
        }
        if (b[i] != '"') return 0;
        size_t kl = hearth_jraw_skip(b + i, n - i);
        if (!kl) break;
        hearth_span key = {b + i + 1, kl - 2};
        i = skip_ws(b, n, i + kl);
        if (i == n) break;
        if (b[i] != ':') return 0;
        i = skip_ws(b, n, i + 1);
        if (i == n) break;
        size_t vl = hearth_jraw_skip(b + i, n - i);
        hearth_span v = {b + i, vl};
        bool is_args = hearth_span_eq(key, "arguments") || hearth_span_eq(key, "parameters");
        if (is_args && !args.ptr) {
            if (b[i] != '{') return 0; /* a string (or worse): delivered whole at the close */
            args = vl ? v : (hearth_span){b + i, n - i};
            done = vl > 0;
        } else if (vl && hearth_span_eq(key, "name") && !name.ptr) {
            if (!plain_string(v, &name) || !name.len) return 0;
        } else if (vl && hearth_span_eq(key, "id") && !id.ptr && !args.ptr) {
            if (!plain_string(v, &id)) return 0;
        }
        if (!vl) break;
        i += vl;
    }
    if (!name.ptr) return 0;
    if (!args.ptr) {
        if (!closed) return 0;
        args = (hearth_span){"{}", 2}; /* a call without arguments */
        done = true;
    }
    *pc = (hearth_tc_partial){.name = name, .id = id, .args = args, .done = done};
    return 1;
}

/* Element k of the array of calls whose text so far is b[0..n) (b[0] == '['). */
static int json_array_partial(const char *b, size_t n, int k, hearth_tc_partial *pc) {
    size_t i = 1;
    for (int j = 0;; j++) {
        i = skip_ws(b, n, i);
        if (j && i < n && b[i] == ',') i = skip_ws(b, n, i + 1);
        if (i == n || b[i] != '{') return 0;
        size_t len = hearth_jraw_skip(b + i, n - i);
        if (j == k) return json_partial(b + i, len ? len : n - i, pc);
        if (!len) return 0;
        i += len;
    }
}

/* Mistral v11: f[CALL_ID]id[ARGS]{...} (the [CALL_ID] part optional). */
static int mistral_tagged(const char *b, size_t n, hearth_tc_partial *pc) {
    static const char cid[] = "[CALL_ID]", tag[] = "[ARGS]";
    size_t i = 0, ns;
    while (i < n && b[i] != '[' && !is_ws(b[i])) i++;
    if (i == n || b[i] != '[' || i == 0) return 0;
    ns = i;
    hearth_span id = {NULL, 0};
    if (n - i >= sizeof cid - 1 && !memcmp(b + i, cid, sizeof cid - 1)) {
        size_t is = i += sizeof cid - 1;
        while (i < n && b[i] != '[') i++;
        if (i == n) return 0;
        id = (hearth_span){b + is, i - is};
    }
    if (n - i < sizeof tag - 1 || memcmp(b + i, tag, sizeof tag - 1)) return 0;
    i = skip_ws(b, n, i + sizeof tag - 1);
    if (i == n || b[i] != '{') return 0;
    size_t len = hearth_jraw_skip(b + i, n - i);
    *pc = (hearth_tc_partial){.name = {b, ns}, .id = id, .args = {b + i, len ? len : n - i}, .done = len > 0};
    return 1;
}

int hearth_tc_partial_call(int kind, const char *b, size_t n, int k, hearth_tc_partial *pc, hearth_jw *w) {
    size_t i = skip_ws(b, n, 0);
    if (i == n) return 0;
    b += i;
    n -= i;
    switch (kind) {
    case HEARTH_TCK_HERMES:
        if (k) return 0;
        if (b[0] == '{') return json_partial(b, n, pc);
        return hearth_tc_xml_partial(b, n, pc, w);
    case HEARTH_TCK_PYTAG:
    case HEARTH_TCK_BARE: return !k && b[0] == '{' ? json_partial(b, n, pc) : 0;
    case HEARTH_TCK_MISTRAL:
        if (b[0] == '[') return json_array_partial(b, n, k, pc);
        return k ? 0 : mistral_tagged(b, n, pc);
    case HEARTH_TCK_TOOL_CODE: return hearth_tc_python_partial(b, n, k, pc, w);
    case HEARTH_TCK_GEMMA_CALL: return k ? 0 : hearth_tc_gemma_partial(b, n, "<escape>", pc, w);
    case HEARTH_TCK_GEMMA4_CALL: return k ? 0 : hearth_tc_gemma_partial(b, n, "<|\"|>", pc, w);
    case HEARTH_TCK_HARMONY: return k ? 0 : hearth_tc_harmony_partial(b, n, pc);
    default: return 0;
    }
}
