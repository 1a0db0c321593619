/*
 * toolcall_args.c - tool-call bodies that are not JSON, turned into JSON arguments: Python call
 * syntax (Gemma's ```tool_code``` blocks), the call:f{k:v} syntax of FunctionGemma and Gemma 4
 * (strings between quote tokens), and Qwen3-Coder's <function=f><parameter=k> XML.
 *
 * Each converter is a small recursive-descent reader over the body with a depth limit; any
 * surprise makes the body "not a call" (it is then returned to the client as content). Each
 * also reads a body still being written (the *_partial functions, for streamed arguments): it
 * tracks how much of its JSON output is final - the object's '{' and every argument already
 * followed by its separator - so the partial output is always a prefix of the finished one.
 */
#include "server/json_out.h"
#include "server/toolcall_internal.h"

#include <cjson/cJSON.h>
#include <string.h>

#define MAX_DEPTH 32

typedef struct {
    const char *p, *e;
    hearth_jw  *w;
    const char *delim; /* gemma: the string quote token */
    size_t      n_delim;
    int         depth;
    bool        bad;
} rd;

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static void skip_ws(rd *r) {
    while (r->p < r->e && is_ws(*r->p)) r->p++;
}
static bool eat(rd *r, char c) {
    skip_ws(r);
    if (r->p < r->e && *r->p == c) {
        r->p++;
        return true;
    }
    return false;
}
static bool ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
}

/* A bare literal s[0..n): a JSON number, true/false/null, written as is; false otherwise. */
static bool json_scalar(hearth_jw *w, const char *s, size_t n) {
    cJSON *v = hearth_tc_parse_exact(s, n);
    bool ok = v && (cJSON_IsNumber(v) || cJSON_IsBool(v) || cJSON_IsNull(v));
    cJSON_Delete(v);
    if (ok) hearth_jw_json(w, s, n);
    return ok;
}

/* ---- Python literals ---- */

static void py_value(rd *r);

static void py_string(rd *r) {
    char q = *r->p++;
    hearth_jw s;
    hearth_jw_init(&s);
    while (r->p < r->e && *r->p != q) {
        char c = *r->p++;
        if (c == '\\' && r->p < r->e) {
            c = *r->p++;
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
        }
        hearth_jw_raw(&s, &c, 1);
    }
    if (r->p >= r->e || s.b.oom) r->bad = true;
    else {
        r->p++;
        hearth_jw_str(r->w, s.b.p ? s.b.p : "", s.b.len);
    }
    hearth_jw_fini(&s);
}

static void py_seq(rd *r, char close, bool dict) {
    r->p++;
    if (dict) hearth_jw_obj(r->w);
    else hearth_jw_arr(r->w);
    while (!r->bad && !eat(r, close)) {
        if (dict) {
            skip_ws(r);
            if (r->p >= r->e || (*r->p != '"' && *r->p != '\'')) {
                r->bad = true;
                break;
            }
            hearth_jw tmp; /* the key as a JSON string, then re-read as a key */
            hearth_jw_init(&tmp);
            hearth_jw *w = r->w;
            r->w = &tmp;
            py_string(r);
            r->w = w;
            cJSON *k = tmp.b.p ? cJSON_Parse(tmp.b.p) : NULL;
            if (cJSON_IsString(k)) hearth_jw_key(r->w, k->valuestring);
            else r->bad = true;
            cJSON_Delete(k);
            hearth_jw_fini(&tmp);
            if (r->bad || !eat(r, ':')) {
                r->bad = true;
                break;
            }
        }
        py_value(r);
        if (!eat(r, ',')) {
            if (!eat(r, close)) r->bad = true;
            break;
        }
    }
    if (dict) hearth_jw_obj_end(r->w);
    else hearth_jw_arr_end(r->w);
}

static void py_value(rd *r) {
    skip_ws(r);
    if (r->p >= r->e || ++r->depth > MAX_DEPTH) {
        r->bad = true;
        return;
    }
    char c = *r->p;
    if (c == '"' || c == '\'') py_string(r);
    else if (c == '[' || c == '(') py_seq(r, c == '[' ? ']' : ')', false);
    else if (c == '{') py_seq(r, '}', true);
    else {
        const char *s = r->p;
        while (r->p < r->e && ident_char(*r->p)) r->p++;
        size_t n = (size_t)(r->p - s);
        if (n == 4 && !memcmp(s, "True", 4)) hearth_jw_bool(r->w, true);
        else if (n == 5 && !memcmp(s, "False", 5)) hearth_jw_bool(r->w, false);
        else if (n == 4 && !memcmp(s, "None", 4)) hearth_jw_null(r->w);
        else if (!n || !json_scalar(r->w, s, n) || s[0] == 't' || s[0] == 'f' || s[0] == 'n') r->bad = true;
    }
    r->depth--;
}

/* One call at r->p, name(k=v, ...), written into w as a JSON object; print(name(...)) is
 * unwrapped. 1 when the call is complete, -1 when it is not a call or is cut off. Also for a
 * call still being written: *name once "name(" is read; *safe the bytes of w that are final
 * (0 until the first argument's '=' or the closing ')' is read, then the '{' and every argument
 * followed by ',' or ')'); *done when the call's ')' was read. */
static int py_call_json(rd *r, hearth_jw *w, hearth_span *name, size_t *safe, bool *done) {
    skip_ws(r);
    const char *s = r->p;
    while (r->p < r->e && ident_char(*r->p)) r->p++;
    const char *nm = s, *name_end = r->p;
    for (const char *q = s; q < name_end; q++)
        if (*q == '.') nm = q + 1; /* default_api.f -> f */
    if (nm == name_end || !eat(r, '(')) return -1;
    if (name_end - s == 5 && !memcmp(s, "print", 5)) {
        int rc = py_call_json(r, w, name, safe, done);
        return rc == 1 && !eat(r, ')') ? -1 : rc;
    }
    *name = (hearth_span){nm, (size_t)(name_end - nm)};
    r->w = w;
    hearth_jw_obj(w);
    for (;;) {
        if (eat(r, ')')) {
            *done = true;
            break;
        }
        skip_ws(r);
        const char *k = r->p;
        while (r->p < r->e && ident_char(*r->p)) r->p++;
        size_t kn = (size_t)(r->p - k);
        if (!kn || !eat(r, '=')) { /* positional arguments have no name to give */
            r->bad = true;
            break;
        }
        if (!*safe) *safe = w->b.len;
        hearth_jw_keyn(w, k, kn);
        py_value(r);
        if (r->bad) break;
        if (eat(r, ',')) {
            *safe = w->b.len;
            continue;
        }
        if (!eat(r, ')')) r->bad = true;
        else *done = true;
        break;
    }
    hearth_jw_obj_end(w);
    if (*done) *safe = w->b.len;
    return *done && !r->bad ? 1 : -1;
}

int hearth_tc_python_calls(hearth_tc *p, const char *s, size_t n) {
    rd r = {.p = s, .e = s + n};
    int rc = -1;
    skip_ws(&r);
    while (r.p < r.e) {
        hearth_jw w;
        hearth_jw_init(&w);
        hearth_span name = {NULL, 0};
        size_t safe = 0;
        bool done = false;
        rc = py_call_json(&r, &w, &name, &safe, &done);
        if (rc == 1 && w.b.oom) rc = -2;
        if (rc == 1 && !hearth_tc_add(p, name.ptr, name.len, w.b.p, w.b.len, NULL, 0)) rc = -2;
        hearth_jw_fini(&w);
        if (rc != 1) return rc;
        skip_ws(&r);
    }
    return rc;
}

int hearth_tc_python_partial(const char *s, size_t n, int k, hearth_tc_partial *pc, hearth_jw *w) {
    rd r = {.p = s, .e = s + n};
    for (int j = 0;; j++) {
        skip_ws(&r);
        if (r.p >= r.e) return 0;
        hearth_jw_reset(w);
        r.bad = false;
        r.depth = 0;
        hearth_span name = {NULL, 0};
        size_t safe = 0;
        bool done = false;
        int rc = py_call_json(&r, w, &name, &safe, &done);
        if (j < k) {
            if (rc != 1) return 0;
            continue;
        }
        if (!safe || w->b.oom) return 0;
        *pc = (hearth_tc_partial){.name = name, .args = {w->b.p, safe}, .done = done};
        return 1;
    }
}

/* ---- call:f{k:v} ---- */

static bool at_delim(const rd *r) {
    return (size_t)(r->e - r->p) >= r->n_delim && !memcmp(r->p, r->delim, r->n_delim);
}

static void g_container(rd *r, size_t *safe, bool *done);

static void g_value(rd *r) {
    skip_ws(r);
    if (r->p >= r->e || ++r->depth > MAX_DEPTH) {
        r->bad = true;
        return;
    }
    if (at_delim(r)) {
        const char *s = r->p + r->n_delim, *end = memmem(s, (size_t)(r->e - s), r->delim, r->n_delim);
        if (!end) r->bad = true;
        else {
            hearth_jw_str(r->w, s, (size_t)(end - s));
            r->p = end + r->n_delim;
        }
    } else if (*r->p == '{' || *r->p == '[') {
        g_container(r, NULL, NULL);
    } else {
        const char *s = r->p;
        while (r->p < r->e && *r->p != ',' && *r->p != '}' && *r->p != ']') r->p++;
        size_t n = (size_t)(r->p - s);
        while (n && is_ws(s[n - 1])) n--;
        if (!n) r->bad = true;
        else if (!json_scalar(r->w, s, n)) hearth_jw_str(r->w, s, n); /* an unquoted word */
    }
    r->depth--;
}

/* The object or array at r->p. safe (the call's top level only, else NULL): the bytes of r->w
 * that are final, set once the first key's ':' (or the close) is read and after each member
 * followed by ',' or the close; *done when the close was read. */
static void g_container(rd *r, size_t *safe, bool *done) {
    bool obj = *r->p++ == '{', closed = false;
    char close = obj ? '}' : ']';
    if (obj) hearth_jw_obj(r->w);
    else hearth_jw_arr(r->w);
    for (;;) {
        if (eat(r, close)) {
            closed = true;
            break;
        }
        if (obj) {
            skip_ws(r);
            const char *k = r->p;
            while (r->p < r->e && *r->p != ':' && *r->p != ',' && *r->p != '}') r->p++;
            size_t kn = (size_t)(r->p - k);
            while (kn && is_ws(k[kn - 1])) kn--;
            if (kn >= 2 * r->n_delim && !memcmp(k, r->delim, r->n_delim) &&
                !memcmp(k + kn - r->n_delim, r->delim, r->n_delim)) { /* a quoted key */
                k += r->n_delim;
                kn -= 2 * r->n_delim;
            }
            if (!kn || !eat(r, ':')) {
                r->bad = true;
                break;
            }
            if (safe && !*safe) *safe = r->w->b.len;
            hearth_jw_keyn(r->w, k, kn);
        }
        g_value(r);
        if (r->bad) break;
        if (eat(r, ',')) {
            if (safe) *safe = r->w->b.len;
            continue;
        }
        if (!eat(r, close)) r->bad = true;
        else closed = true;
        break;
    }
    if (obj) hearth_jw_obj_end(r->w);
    else hearth_jw_arr_end(r->w);
    if (closed && safe) *safe = r->w->b.len;
    if (done) *done = closed;
}

/* call:f{...} at s[0..n) written into w as a JSON object: 1 complete with nothing after it,
 * -1 otherwise; *name, *safe and *done as for py_call_json. */
static int gemma_call_json(const char *s, size_t n, const char *delim, hearth_jw *w, hearth_span *name, size_t *safe,
                           bool *done) {
    rd r = {.p = s, .e = s + n, .delim = delim, .n_delim = strlen(delim), .w = w};
    if (n < 5 || memcmp(s, "call:", 5)) return -1;
    r.p += 5;
    const char *nm = r.p;
    while (r.p < r.e && ident_char(*r.p)) r.p++;
    if (nm == r.p || r.p >= r.e || *r.p != '{') return -1;
    *name = (hearth_span){nm, (size_t)(r.p - nm)};
    r.depth = 1;
    g_container(&r, safe, done);
    skip_ws(&r);
    return r.bad || !*done || r.p != r.e ? -1 : 1;
}

int hearth_tc_gemma_call(hearth_tc *p, const char *s, size_t n, const char *delim) {
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_span name = {NULL, 0};
    size_t safe = 0;
    bool done = false;
    int rc = gemma_call_json(s, n, delim, &w, &name, &safe, &done);
    if (rc == 1 && w.b.oom) rc = -2;
    if (rc == 1 && !hearth_tc_add(p, name.ptr, name.len, w.b.p, w.b.len, NULL, 0)) rc = -2;
    hearth_jw_fini(&w);
    return rc;
}

int hearth_tc_gemma_partial(const char *s, size_t n, const char *delim, hearth_tc_partial *pc, hearth_jw *w) {
    hearth_jw_reset(w);
    hearth_span name = {NULL, 0};
    size_t safe = 0;
    bool done = false;
    gemma_call_json(s, n, delim, w, &name, &safe, &done);
    if (!safe || w->b.oom) return 0;
    *pc = (hearth_tc_partial){.name = name, .args = {w->b.p, safe}, .done = done};
    return 1;
}

/* ---- <function=f><parameter=k>v</parameter></function> ---- */

static const char *find(const char *s, const char *e, const char *what) {
    return memmem(s, (size_t)(e - s), what, strlen(what));
}

/* <function=f>...</function> at s[0..n) written into w as a JSON object: 1 complete, -1
 * otherwise; *name once "<function=f>" is read, *safe the bytes of w that are final (the '{'
 * and each complete parameter). */
static int xml_call_json(const char *s, size_t n, hearth_jw *w, hearth_span *name, size_t *safe) {
    const char *e = s + n, *q;
    if (n < 11 || memcmp(s, "<function=", 10)) return -1;
    const char *nm = s + 10, *name_end = memchr(nm, '>', (size_t)(e - nm));
    if (!name_end || name_end == nm) return -1;
    *name = (hearth_span){nm, (size_t)(name_end - nm)};
    const char *fend = find(name_end, e, "</function>"), *lim = fend ? fend : e;
    hearth_jw_obj(w);
    *safe = w->b.len;
    for (q = name_end + 1;;) {
        while (q < lim && is_ws(*q)) q++;
        if (q == lim) break;
        const char *k = q + 11, *ke = NULL, *ve = NULL;
        if ((size_t)(lim - q) < 11 || memcmp(q, "<parameter=", 11) || !(ke = memchr(k, '>', (size_t)(lim - k))) ||
            !(ve = find(ke, lim, "</parameter>")))
            return -1;
        const char *v = ke + 1;
        size_t vn = (size_t)(ve - v);
        if (vn && *v == '\n') v++, vn--; /* the template puts the value on its own line */
        if (vn && v[vn - 1] == '\n') vn--;
        hearth_jw_keyn(w, k, (size_t)(ke - k));
        cJSON *j = hearth_tc_parse_exact(v, vn);
        if (j && !cJSON_IsString(j)) hearth_jw_json(w, v, vn);
        else hearth_jw_str(w, v, vn);
        cJSON_Delete(j);
        *safe = w->b.len;
        q = ve + 12;
    }
    if (!fend) return -1;
    hearth_jw_obj_end(w);
    *safe = w->b.len;
    return 1;
}

int hearth_tc_xml_call(hearth_tc *p, const char *s, size_t n) {
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_span name = {NULL, 0};
    size_t safe = 0;
    int rc = xml_call_json(s, n, &w, &name, &safe);
    if (rc == 1 && w.b.oom) rc = -2;
    if (rc == 1 && !hearth_tc_add(p, name.ptr, name.len, w.b.p, w.b.len, NULL, 0)) rc = -2;
    hearth_jw_fini(&w);
    return rc;
}

int hearth_tc_xml_partial(const char *s, size_t n, hearth_tc_partial *pc, hearth_jw *w) {
    hearth_jw_reset(w);
    hearth_span name = {NULL, 0};
    size_t safe = 0;
    int rc = xml_call_json(s, n, w, &name, &safe);
    if (!name.len || !safe || w->b.oom) return 0;
    *pc = (hearth_tc_partial){.name = name, .args = {w->b.p, rc == 1 ? w->b.len : safe}, .done = rc == 1};
    return 1;
}
