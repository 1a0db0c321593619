/*
 * toolcall_args.c - tool-call bodies that are not JSON, turned into JSON arguments: Python call
 * syntax (Gemma's ```tool_code``` blocks), the call:f{k:v} syntax of FunctionGemma and Gemma 4
 * (strings between quote tokens), and Qwen3-Coder's <function=f><parameter=k> XML.
 *
 * Each converter is a small recursive-descent reader over the body with a depth limit; any
 * surprise makes the body "not a call" (it is then returned to the client as content).
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
    if (r->p >= r->e || s.oom) r->bad = true;
    else {
        r->p++;
        hearth_jw_str(r->w, s.buf ? s.buf : "", s.len);
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
            cJSON *k = tmp.buf ? cJSON_Parse(tmp.buf) : NULL;
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

/* One call at r->p: name(k=v, ...); print(name(...)) is unwrapped. */
static int py_call(hearth_tc *p, rd *r) {
    skip_ws(r);
    const char *s = r->p;
    while (r->p < r->e && ident_char(*r->p)) r->p++;
    const char *name = s, *name_end = r->p;
    for (const char *q = s; q < name_end; q++)
        if (*q == '.') name = q + 1; /* default_api.f -> f */
    if (name == name_end || !eat(r, '(')) return -1;
    if (name_end - s == 5 && !memcmp(s, "print", 5)) {
        int rc = py_call(p, r);
        return rc == 1 && !eat(r, ')') ? -1 : rc;
    }
    hearth_jw w;
    hearth_jw_init(&w);
    r->w = &w;
    hearth_jw_obj(&w);
    while (!r->bad && !eat(r, ')')) {
        skip_ws(r);
        const char *k = r->p;
        while (r->p < r->e && ident_char(*r->p)) r->p++;
        size_t kn = (size_t)(r->p - k);
        if (!kn || !eat(r, '=')) { /* positional arguments have no name to give */
            r->bad = true;
            break;
        }
        hearth_jw_keyn(&w, k, kn);
        py_value(r);
        if (!eat(r, ',')) {
            if (!eat(r, ')')) r->bad = true;
            break;
        }
    }
    hearth_jw_obj_end(&w);
    int rc = r->bad ? -1 : w.oom ? -2 : 1;
    if (rc == 1 && !hearth_tc_add(p, name, (size_t)(name_end - name), w.buf, w.len, NULL, 0)) rc = -2;
    hearth_jw_fini(&w);
    return rc;
}

int hearth_tc_python_calls(hearth_tc *p, const char *s, size_t n) {
    rd r = {.p = s, .e = s + n};
    int rc = -1;
    skip_ws(&r);
    while (r.p < r.e) {
        rc = py_call(p, &r);
        if (rc != 1) return rc;
        skip_ws(&r);
    }
    return rc;
}

/* ---- call:f{k:v} ---- */

static bool at_delim(const rd *r) {
    return (size_t)(r->e - r->p) >= r->n_delim && !memcmp(r->p, r->delim, r->n_delim);
}

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
        bool obj = *r->p++ == '{';
        char close = obj ? '}' : ']';
        if (obj) hearth_jw_obj(r->w);
        else hearth_jw_arr(r->w);
        while (!r->bad && !eat(r, close)) {
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
                hearth_jw_keyn(r->w, k, kn);
            }
            g_value(r);
            if (!eat(r, ',')) {
                if (!eat(r, close)) r->bad = true;
                break;
            }
        }
        if (obj) hearth_jw_obj_end(r->w);
        else hearth_jw_arr_end(r->w);
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

int hearth_tc_gemma_call(hearth_tc *p, const char *s, size_t n, const char *delim) {
    rd r = {.p = s, .e = s + n, .delim = delim, .n_delim = strlen(delim)};
    if (n < 5 || memcmp(s, "call:", 5)) return -1;
    r.p += 5;
    const char *name = r.p;
    while (r.p < r.e && ident_char(*r.p)) r.p++;
    const char *name_end = r.p;
    if (name == name_end || r.p >= r.e || *r.p != '{') return -1;
    hearth_jw w;
    hearth_jw_init(&w);
    r.w = &w;
    g_value(&r);
    skip_ws(&r);
    int rc = r.bad || r.p != r.e ? -1 : w.oom ? -2 : 1;
    if (rc == 1 && !hearth_tc_add(p, name, (size_t)(name_end - name), w.buf, w.len, NULL, 0)) rc = -2;
    hearth_jw_fini(&w);
    return rc;
}

/* ---- <function=f><parameter=k>v</parameter></function> ---- */

static const char *find(const char *s, const char *e, const char *what) {
    return memmem(s, (size_t)(e - s), what, strlen(what));
}

int hearth_tc_xml_call(hearth_tc *p, const char *s, size_t n) {
    const char *e = s + n, *q;
    if (n < 11 || memcmp(s, "<function=", 10)) return -1;
    const char *name = s + 10, *name_end = memchr(name, '>', (size_t)(e - name));
    const char *fend = name_end ? find(name_end, e, "</function>") : NULL;
    if (!name_end || name_end == name || !fend) return -1;
    hearth_jw w;
    hearth_jw_init(&w);
    hearth_jw_obj(&w);
    int rc = 1;
    for (q = name_end + 1; rc == 1;) {
        while (q < fend && is_ws(*q)) q++;
        if (q == fend) break;
        const char *k = q + 11, *ke = NULL, *ve = NULL;
        if ((size_t)(fend - q) < 11 || memcmp(q, "<parameter=", 11) || !(ke = memchr(k, '>', (size_t)(fend - k))) ||
            !(ve = find(ke, fend, "</parameter>"))) {
            rc = -1;
            break;
        }
        const char *v = ke + 1;
        size_t vn = (size_t)(ve - v);
        if (vn && *v == '\n') v++, vn--; /* the template puts the value on its own line */
        if (vn && v[vn - 1] == '\n') vn--;
        hearth_jw_keyn(&w, k, (size_t)(ke - k));
        cJSON *j = hearth_tc_parse_exact(v, vn);
        if (j && !cJSON_IsString(j)) hearth_jw_json(&w, v, vn);
        else hearth_jw_str(&w, v, vn);
        cJSON_Delete(j);
        q = ve + 12;
    }
    hearth_jw_obj_end(&w);
    if (rc == 1 && w.oom) rc = -2;
    if (rc == 1 && !hearth_tc_add(p, name, (size_t)(name_end - name), w.buf, w.len, NULL, 0)) rc = -2;
    hearth_jw_fini(&w);
    return rc;
}
