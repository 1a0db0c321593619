/*
 * schema.c - JSON Schema to grammar rules (see schema.h).
 *
 * The JSON pieces, as rules (| separates alternatives, {a,b} is a bounded repetition):
 *
 *   ws     := "" | " " | "\n" [ \t]{0,20}
 *   string := '"' char* '"'     char := [\x20-\x7f except " \] | '\' (["\/bfnrt] | 'u' hex{4})
 *                                       | a well-formed UTF-8 sequence of 2-4 bytes
 *   number := integer ('.' [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?
 *   integer:= '-'? ('0' | [1-9] [0-9]{0,15})
 *   object := '{' ws KV_1 (ws ',' ws KV_i)... ws '}'   KV := '"name"' ws ':' ws value
 *   array  := '[' ws (value (ws ',' ws value){min-1,max-1})? ws ']'
 *
 * Optional properties are a chain of rules OPT_i := (ws ',' ws KV_i)? OPT_i+1, each a tail
 * call, so an object with many optional properties costs a few states per property.
 */
#include "constrain/schema.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hearth_cx_builder *B(hearth_cx_json *j) { return j->b; }

static bool cx_has(const uint8_t *set, uint8_t c) { return (set[c >> 3] >> (c & 7)) & 1; }

void hearth_cx_json_init(hearth_cx_json *j, hearth_cx_builder *b, const cJSON *doc) {
    memset(j, 0, sizeof *j);
    j->b = b;
    j->doc = doc;
    j->ws = j->chr = j->rest = j->str = j->num = j->intg = j->nonneg = j->boolean = j->null = -1;
    for (int i = 0; i <= HEARTH_CX_ANY_DEPTH; i++) j->any[i] = j->any_obj[i] = -1;
}

int hearth_cx_json_ws(hearth_cx_json *j) {
    if (j->ws >= 0) return j->ws;
    hearth_cx_builder *b = B(j);
    int ind = hearth_cx_rule(b);
    if (ind < 0 || hearth_cx_alt(b, ind) || hearth_cx_lit(b, ind, " ", 1) || hearth_cx_alt(b, ind) ||
        hearth_cx_lit(b, ind, "\t", 1))
        return -1;
    int indent = hearth_cx_rule_repeat(b, ind, -1, 0, 20);
    int r = hearth_cx_rule(b);
    if (indent < 0 || r < 0 || hearth_cx_alt(b, r) || hearth_cx_alt(b, r) || hearth_cx_lit(b, r, " ", 1) ||
        hearth_cx_alt(b, r) || hearth_cx_lit(b, r, "\n", 1) || hearth_cx_ref(b, r, indent))
        return -1;
    return j->ws = r;
}

/* One character of a JSON string's body whose first byte is not an ASCII byte of excl (NULL:
 * none excluded). With j->avoid set, its first byte comes only as a pair with a next ASCII
 * byte other than avoid[1] (pair true; the pair then counts as one character), or not at all
 * (pair false: strings with length bounds). */
static int string_char_ex(hearth_cx_json *j, const uint8_t *excl, bool pair) {
    hearth_cx_builder *b = B(j);
    uint8_t plain[32] = {0};
    for (int c = 0x20; c < 0x80; c++)
        if (c != '"' && c != '\\' && !(excl && cx_has(excl, (uint8_t)c)) && c != (uint8_t)j->avoid[0])
            plain[c >> 3] |= (uint8_t)(1u << (c & 7));
    uint8_t esc[32] = {0};
    for (const char *e = j->python ? "\"\\nrt" : "\"\\/bfnrt"; *e; e++) esc[(uint8_t)*e >> 3] |= (uint8_t)(1u << (*e & 7));
    int hex = hearth_cx_rule(b);
    if (hex < 0 || hearth_cx_alt(b, hex) || hearth_cx_range(b, hex, '0', '9') || hearth_cx_alt(b, hex) ||
        hearth_cx_range(b, hex, 'a', 'f') || hearth_cx_alt(b, hex) || hearth_cx_range(b, hex, 'A', 'F'))
        return -1;
    int r = hearth_cx_rule(b);
    if (r < 0 || hearth_cx_alt(b, r) || hearth_cx_set(b, r, plain)) return -1;
    if (j->avoid[0] && pair && !(excl && cx_has(excl, (uint8_t)j->avoid[0]))) {
        uint8_t next[32] = {0};
        for (int c = 0x20; c < 0x80; c++)
            if (c != '"' && c != '\\' && c != (uint8_t)j->avoid[1]) next[c >> 3] |= (uint8_t)(1u << (c & 7));
        if (hearth_cx_alt(b, r) || hearth_cx_lit(b, r, j->avoid, 1) || hearth_cx_set(b, r, next)) return -1;
    }
    if (!(excl && cx_has(excl, '\\'))) {
        if (hearth_cx_alt(b, r) || hearth_cx_lit(b, r, "\\", 1) || hearth_cx_set(b, r, esc)) return -1;
        if (!j->python && (hearth_cx_alt(b, r) || hearth_cx_lit(b, r, "\\u", 2))) return -1;
        for (int i = 0; i < 4 && !j->python; i++)
            if (hearth_cx_ref(b, r, hex)) return -1;
    }
    /* UTF-8 (RFC 3629 table 3-7): no overlongs, no surrogates, nothing past U+10FFFF */
    static const uint8_t seqs[][4][2] = {
        {{0xC2, 0xDF}, {0x80, 0xBF}},
        {{0xE0, 0xE0}, {0xA0, 0xBF}, {0x80, 0xBF}},
        {{0xE1, 0xEC}, {0x80, 0xBF}, {0x80, 0xBF}},
        {{0xED, 0xED}, {0x80, 0x9F}, {0x80, 0xBF}},
        {{0xEE, 0xEF}, {0x80, 0xBF}, {0x80, 0xBF}},
        {{0xF0, 0xF0}, {0x90, 0xBF}, {0x80, 0xBF}, {0x80, 0xBF}},
        {{0xF1, 0xF3}, {0x80, 0xBF}, {0x80, 0xBF}, {0x80, 0xBF}},
        {{0xF4, 0xF4}, {0x80, 0x8F}, {0x80, 0xBF}, {0x80, 0xBF}},
    };
    for (size_t s = 0; s < sizeof seqs / sizeof seqs[0]; s++) {
        if (hearth_cx_alt(b, r)) return -1;
        for (int k = 0; k < 4 && seqs[s][k][0]; k++)
            if (hearth_cx_range(b, r, seqs[s][k][0], seqs[s][k][1])) return -1;
    }
    return r;
}

static int string_char(hearth_cx_json *j) {
    if (j->chr < 0) j->chr = string_char_ex(j, NULL, true);
    return j->chr;
}

static int string_rule(hearth_cx_json *j, int32_t min, int32_t max) {
    hearth_cx_builder *b = B(j);
    bool plain = min == 0 && max < 0;
    if (plain && j->str >= 0) return j->str;
    int ch = plain || !j->avoid[0] ? string_char(j) : string_char_ex(j, NULL, false);
    int body = ch < 0 ? -1 : hearth_cx_rule_repeat(b, ch, -1, min, max);
    int r = hearth_cx_rule(b);
    if (body < 0 || r < 0 || hearth_cx_alt(b, r) || hearth_cx_lit(b, r, "\"", 1) || hearth_cx_ref(b, r, body) ||
        hearth_cx_lit(b, r, "\"", 1))
        return -1;
    if (plain) j->str = r;
    return r;
}

static int digits(hearth_cx_json *j, int32_t min, int32_t max) {
    hearth_cx_builder *b = B(j);
    int d = hearth_cx_rule(b);
    if (d < 0 || hearth_cx_alt(b, d) || hearth_cx_range(b, d, '0', '9')) return -1;
    return hearth_cx_rule_repeat(b, d, -1, min, max);
}

static int integer_rule(hearth_cx_json *j, bool nonneg) {
    int *cache = nonneg ? &j->nonneg : &j->intg;
    if (*cache >= 0) return *cache;
    hearth_cx_builder *b = B(j);
    int more = digits(j, 0, 15);
    int mag = hearth_cx_rule(b);
    if (more < 0 || mag < 0 || hearth_cx_alt(b, mag) || hearth_cx_lit(b, mag, "0", 1) || hearth_cx_alt(b, mag) ||
        hearth_cx_range(b, mag, '1', '9') || hearth_cx_ref(b, mag, more))
        return -1;
    int r = hearth_cx_rule(b);
    if (r < 0 || hearth_cx_alt(b, r) || hearth_cx_ref(b, r, mag)) return -1;
    if (!nonneg && (hearth_cx_alt(b, r) || hearth_cx_lit(b, r, "-", 1) || hearth_cx_ref(b, r, mag))) return -1;
    return *cache = r;
}

static int number_rule(hearth_cx_json *j) {
    if (j->num >= 0) return j->num;
    hearth_cx_builder *b = B(j);
    int in = integer_rule(j, false), fd = digits(j, 1, 16), ed = digits(j, 1, 3);
    int frac = hearth_cx_rule(b);
    if (in < 0 || fd < 0 || ed < 0 || frac < 0 || hearth_cx_alt(b, frac) || hearth_cx_alt(b, frac) ||
        hearth_cx_lit(b, frac, ".", 1) || hearth_cx_ref(b, frac, fd))
        return -1;
    int ex = hearth_cx_rule(b);
    uint8_t e[32] = {0}, sg[32] = {0};
    e['e' >> 3] |= 1u << ('e' & 7);
    e['E' >> 3] |= 1u << ('E' & 7);
    sg['+' >> 3] |= 1u << ('+' & 7);
    sg['-' >> 3] |= 1u << ('-' & 7);
    if (ex < 0 || hearth_cx_alt(b, ex) || hearth_cx_alt(b, ex) || hearth_cx_set(b, ex, e) || hearth_cx_ref(b, ex, ed) ||
        hearth_cx_alt(b, ex) || hearth_cx_set(b, ex, e) || hearth_cx_set(b, ex, sg) || hearth_cx_ref(b, ex, ed))
        return -1;
    int seq[] = {in, frac, ex};
    return j->num = hearth_cx_rule_seq(b, seq, 3);
}

int hearth_cx_json_string_lit(hearth_cx_json *j, const char *s, size_t n) {
    /* escaped as cJSON and JSON.stringify write it: \" \\ \b \f \n \r \t, other controls \u00XX */
    size_t cap = 2 + 6 * n + 1;
    char *t = malloc(cap), *o = t;
    if (!t) return hearth_cx_fail(B(j), HEARTH_E_NOMEM, "out of memory");
    *o++ = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *e = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\b' ? "\\b" : c == '\f' ? "\\f"
                      : c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
        if (e) o += sprintf(o, "%s", e);
        else if (c < 0x20) o += sprintf(o, "\\u%04x", c);
        else *o++ = (char)c;
    }
    *o++ = '"';
    int r = hearth_cx_rule_lit(B(j), t, (size_t)(o - t));
    free(t);
    return r;
}

static int literal_rule(hearth_cx_json *j, const char *s) { return hearth_cx_rule_lit(B(j), s, strlen(s)); }

/* true / false / null, or Python's True / False / None */
static int keyword(hearth_cx_json *j, const char *kw) {
    if (j->python) kw = !strcmp(kw, "true") ? "True" : !strcmp(kw, "false") ? "False" : "None";
    return literal_rule(j, kw);
}

/* JSON text -> Python literal text in place: true / false / null outside strings (same
 * lengths but null -> None). */
static void pythonize(char *t) {
    bool in_str = false;
    for (char *p = t; *p; p++) {
        if (in_str) {
            if (*p == '\\' && p[1]) p++;
            else if (*p == '"') in_str = false;
        } else if (*p == '"') {
            in_str = true;
        } else if (!strncmp(p, "true", 4)) {
            *p = 'T';
        } else if (!strncmp(p, "false", 5)) {
            *p = 'F';
        } else if (!strncmp(p, "null", 4)) {
            memcpy(p, "None", 4);
        }
    }
}

/* A separator rule: ws ',' ws */
static int comma(hearth_cx_json *j) {
    int ws = hearth_cx_json_ws(j), c = literal_rule(j, ",");
    int seq[] = {ws, c, ws};
    return ws < 0 || c < 0 ? -1 : hearth_cx_rule_seq(B(j), seq, 3);
}

/* open ws (items)? ws close, items already a rule matching one or more members (or -1: none) */
static int bracketed(hearth_cx_json *j, const char *open, int items, bool may_empty, const char *close) {
    hearth_cx_builder *b = B(j);
    int ws = hearth_cx_json_ws(j);
    int r = hearth_cx_rule(b);
    if (ws < 0 || r < 0) return -1;
    if (items >= 0) {
        if (hearth_cx_alt(b, r) || hearth_cx_lit(b, r, open, 1) || hearth_cx_ref(b, r, ws) || hearth_cx_ref(b, r, items) ||
            hearth_cx_ref(b, r, ws) || hearth_cx_lit(b, r, close, 1))
            return -1;
    }
    if (may_empty || items < 0) {
        if (hearth_cx_alt(b, r) || hearth_cx_lit(b, r, open, 1) || hearth_cx_ref(b, r, ws) || hearth_cx_lit(b, r, close, 1))
            return -1;
    }
    return r;
}

/* "key" ws ':' ws value */
static int member(hearth_cx_json *j, int key, int value) {
    int ws = hearth_cx_json_ws(j), colon = literal_rule(j, ":");
    int seq[] = {key, ws, colon, ws, value};
    return ws < 0 || colon < 0 ? -1 : hearth_cx_rule_seq(B(j), seq, 5);
}

static int any_value(hearth_cx_json *j, int left);

static int any_object(hearth_cx_json *j, int left) {
    if (left < 0) left = 0;
    if (j->any_obj[left] >= 0) return j->any_obj[left];
    int str = string_rule(j, 0, -1), val = any_value(j, left - 1);
    if (str < 0 || val < 0) return -1;
    int kv = member(j, str, val), sep = comma(j);
    int items = kv < 0 || sep < 0 ? -1 : hearth_cx_rule_repeat(B(j), kv, sep, 1, -1);
    if (items < 0) return -1;
    return j->any_obj[left] = bracketed(j, "{", left > 0 ? items : -1, true, "}");
}

/* Any JSON value with containers nested at most `left` more levels. */
static int any_value(hearth_cx_json *j, int left) {
    if (left < 0) left = 0;
    if (j->any[left] >= 0) return j->any[left];
    int alts[7], n = 0;
    alts[n++] = string_rule(j, 0, -1);
    alts[n++] = number_rule(j);
    alts[n++] = keyword(j, "true");
    alts[n++] = keyword(j, "false");
    alts[n++] = keyword(j, "null");
    if (left > 0) {
        alts[n++] = any_object(j, left);
        int val = any_value(j, left - 1), sep = comma(j);
        int items = val < 0 || sep < 0 ? -1 : hearth_cx_rule_repeat(B(j), val, sep, 1, -1);
        alts[n++] = items < 0 ? -1 : bracketed(j, "[", items, true, "]");
    } else { /* at the bottom only empty containers */
        alts[n++] = literal_rule(j, "{}");
        alts[n++] = literal_rule(j, "[]");
    }
    for (int i = 0; i < n; i++)
        if (alts[i] < 0) return -1;
    return j->any[left] = hearth_cx_rule_any(B(j), alts, n);
}

int hearth_cx_json_object(hearth_cx_json *j) { return any_object(j, HEARTH_CX_ANY_DEPTH); }

static int any_depth_left(const hearth_cx_json *j) {
    int left = HEARTH_CX_SCHEMA_DEPTH - j->depth;
    return left < HEARTH_CX_ANY_DEPTH ? left : HEARTH_CX_ANY_DEPTH;
}

/* enum / const values as literals of their compact JSON text */
static int literals(hearth_cx_json *j, const cJSON *const *vals, int n) {
    hearth_cx_builder *b = B(j);
    if (n < 1) return hearth_cx_fail(b, HEARTH_E_INVALID, "'enum' must list at least one value");
    if (n > HEARTH_CX_MAX_ENUM)
        return hearth_cx_fail(b, HEARTH_E_LIMIT, "'enum' lists %d values; at most %d are supported", n,
                              HEARTH_CX_MAX_ENUM);
    char **texts = calloc((size_t)n, sizeof *texts);
    size_t *lens = calloc((size_t)n, sizeof *lens);
    int r = -1;
    if (!texts || !lens) {
        hearth_cx_fail(b, HEARTH_E_NOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        texts[i] = cJSON_PrintUnformatted(vals[i]);
        if (!texts[i]) {
            hearth_cx_fail(b, HEARTH_E_NOMEM, "out of memory");
            goto out;
        }
        if (j->python) pythonize(texts[i]);
        lens[i] = strlen(texts[i]);
        if (lens[i] > HEARTH_CX_MAX_LITERAL) {
            hearth_cx_fail(b, HEARTH_E_LIMIT, "an enum or const value is longer than %d bytes", HEARTH_CX_MAX_LITERAL);
            goto out;
        }
    }
    r = hearth_cx_rule_choice(b, (const char *const *)texts, lens, n);
out:
    for (int i = 0; texts && i < n; i++) cJSON_free(texts[i]);
    free(texts);
    free(lens);
    return r;
}

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

static bool in_required(const cJSON *req, const char *name) {
    for (const cJSON *r = req ? req->child : NULL; r; r = r->next)
        if (cJSON_IsString(r) && !strcmp(r->valuestring, name)) return true;
    return false;
}

/* Bounded non-negative integer keyword; -1 absent; -2 invalid (builder failed). */
static int32_t count_kw(hearth_cx_json *j, const cJSON *s, const char *k) {
    const cJSON *v = get(s, k);
    if (!v) return -1;
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble != floor(v->valuedouble)) {
        hearth_cx_fail(B(j), HEARTH_E_INVALID, "'%s' must be a non-negative integer", k);
        return -2;
    }
    if (v->valuedouble > HEARTH_CX_MAX_REPEAT) {
        hearth_cx_fail(B(j), HEARTH_E_LIMIT, "'%s' is %.0f; at most %d is supported", k, v->valuedouble,
                       HEARTH_CX_MAX_REPEAT);
        return -2;
    }
    return (int32_t)v->valuedouble;
}

/* The rest of a string after its opening quote: char* '"' */
static int string_rest(hearth_cx_json *j) {
    if (j->rest >= 0) return j->rest;
    int ch = string_char(j);
    int body = ch < 0 ? -1 : hearth_cx_rule_repeat(B(j), ch, -1, 0, -1);
    int q = literal_rule(j, "\"");
    int seq[] = {body, q};
    return j->rest = body < 0 || q < 0 ? -1 : hearth_cx_rule_seq(B(j), seq, 2);
}

/* After the opening quote of a key: any string except the names of keys[lo..hi) (sorted,
 * sharing their first d bytes). Only ASCII bytes other than '\\' are followed through the
 * names; a name that needs more is excluded only up to that byte (so it may come out as an
 * extra member: a loose spot). */
static int key_except(hearth_cx_json *j, const char *const *keys, int lo, int hi, size_t d) {
    hearth_cx_builder *b = B(j);
    int r = hearth_cx_rule(b);
    if (r < 0) return -1;
    uint8_t edges[32] = {0};
    bool complete = false;
    int i = lo;
    while (i < hi && !keys[i][d]) complete = true, i++;
    if (!complete && (hearth_cx_alt(b, r) || hearth_cx_lit(b, r, "\"", 1))) return -1;
    while (i < hi) {
        uint8_t c = (uint8_t)keys[i][d];
        int k = i;
        while (k < hi && (uint8_t)keys[k][d] == c) k++;
        if (c >= 0x80 || c < 0x20 || c == '\\' || c == '"') { /* not followed: anything goes from here */
            i = k;
            continue;
        }
        edges[c >> 3] |= (uint8_t)(1u << (c & 7));
        int sub = key_except(j, keys, i, k, d + 1);
        if (sub < 0 || hearth_cx_alt(b, r) || hearth_cx_range(b, r, c, c) || hearth_cx_ref(b, r, sub)) return -1;
        i = k;
    }
    int other = string_char_ex(j, edges, true), rest = string_rest(j);
    if (other < 0 || rest < 0 || hearth_cx_alt(b, r) || hearth_cx_ref(b, r, other) || hearth_cx_ref(b, r, rest)) return -1;
    return r;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static bool is_ident(const char *s) {
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return false;
    for (s++; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

/* (ident=value, ...) with any identifiers and values */
static int any_kwargs(hearth_cx_json *j) {
    hearth_cx_builder *b = B(j);
    int first = hearth_cx_rule(b), more = hearth_cx_rule(b);
    if (first < 0 || more < 0 || hearth_cx_alt(b, first) || hearth_cx_range(b, first, 'a', 'z') || hearth_cx_alt(b, first) ||
        hearth_cx_range(b, first, 'A', 'Z') || hearth_cx_alt(b, first) || hearth_cx_lit(b, first, "_", 1))
        return -1;
    if (hearth_cx_alt(b, more) || hearth_cx_ref(b, more, first) || hearth_cx_alt(b, more) ||
        hearth_cx_range(b, more, '0', '9'))
        return -1;
    int rest = hearth_cx_rule_repeat(b, more, -1, 0, 63), eq = literal_rule(j, "=");
    int val = any_value(j, any_depth_left(j) - 1), sep = comma(j);
    int kv = rest < 0 || eq < 0 || val < 0 ? -1 : hearth_cx_rule_seq(b, (int[]){first, rest, eq, val}, 4);
    int items = kv < 0 || sep < 0 ? -1 : hearth_cx_rule_repeat(b, kv, sep, 1, -1);
    return items < 0 ? -1 : bracketed(j, "(", items, true, ")");
}

/* An object, or (kw) the keyword arguments of a Python call. */
static int object_rule(hearth_cx_json *j, const cJSON *s, bool kw) {
    hearth_cx_builder *b = B(j);
    const cJSON *props = get(s, "properties"), *req = get(s, "required"), *add = get(s, "additionalProperties");
    if (props && !cJSON_IsObject(props)) return hearth_cx_fail(b, HEARTH_E_INVALID, "'properties' must be an object");
    if (req && !cJSON_IsArray(req)) return hearth_cx_fail(b, HEARTH_E_INVALID, "'required' must be a list of names");
    int n = props ? cJSON_GetArraySize(props) : 0;
    if (kw && !n) return any_kwargs(j);
    if (!props || (!n && add && !cJSON_IsFalse(add))) {
        if (!add || cJSON_IsTrue(add)) return any_object(j, any_depth_left(j));
    }
    if (n > HEARTH_CX_MAX_PROPS)
        return hearth_cx_fail(b, HEARTH_E_LIMIT, "an object lists %d properties; at most %d are supported", n,
                              HEARTH_CX_MAX_PROPS);
    for (const cJSON *r = req ? req->child : NULL; r; r = r->next)
        if (!cJSON_IsString(r)) return hearth_cx_fail(b, HEARTH_E_INVALID, "'required' must be a list of names");
    int kv[HEARTH_CX_MAX_PROPS], n_req = 0, k = 0;
    /* required first, then the optional ones, each in the schema's order */
    for (int pass = 0; pass < 2; pass++) {
        for (const cJSON *p = props ? props->child : NULL; p; p = p->next) {
            bool is_req = in_required(req, p->string);
            if (is_req != (pass == 0)) continue;
            size_t nk = strlen(p->string);
            if (nk > HEARTH_CX_MAX_LITERAL)
                return hearth_cx_fail(b, HEARTH_E_LIMIT, "a property name is longer than %d bytes", HEARTH_CX_MAX_LITERAL);
            if (kw && !is_ident(p->string))
                return hearth_cx_fail(b, HEARTH_E_UNSUPPORTED,
                                      "the parameter name '%.60s' cannot be a keyword argument of this model's tool-call syntax",
                                      p->string);
            int key = kw ? -1 : hearth_cx_json_string_lit(j, p->string, nk);
            if (kw) {
                char name[HEARTH_CX_MAX_LITERAL + 2];
                int ln = snprintf(name, sizeof name, "%s=", p->string);
                key = hearth_cx_rule_lit(b, name, (size_t)ln);
            }
            int val = key < 0 ? -1 : hearth_cx_json_value(j, p);
            if (val < 0) return -1;
            kv[k] = kw ? hearth_cx_rule_seq(b, (int[]){key, val}, 2) : member(j, key, val);
            if (kv[k] < 0) return -1;
            k++;
            n_req += is_req;
        }
    }
    for (const cJSON *r = req ? req->child : NULL; r; r = r->next)
        if (!props || !get(props, r->valuestring))
            return hearth_cx_fail(b, HEARTH_E_INVALID, "'required' names '%.60s', which is not in 'properties'",
                                  r->valuestring);
    /* extra members (additionalProperties true or a schema) */
    int extra = -1;
    if (!kw && add && !cJSON_IsFalse(add)) {
        const char *names[HEARTH_CX_MAX_PROPS];
        int nn = 0;
        for (const cJSON *p = props ? props->child : NULL; p; p = p->next) names[nn++] = p->string;
        qsort(names, (size_t)nn, sizeof *names, cmp_str);
        int ke = key_except(j, names, 0, nn, 0), q = literal_rule(j, "\"");
        int kq[] = {q, ke};
        int str = ke < 0 || q < 0 ? -1 : hearth_cx_rule_seq(b, kq, 2);
        int val = cJSON_IsTrue(add) ? any_value(j, any_depth_left(j) - 1) : hearth_cx_json_value(j, add);
        if (str < 0 || val < 0) return -1;
        extra = member(j, str, val);
        if (extra < 0) return -1;
    }
    int sep = comma(j);
    if (sep < 0) return -1;
    /* tail: (sep extra)* or nothing */
    int tail;
    if (extra >= 0) { /* repeat without sep: build (sep extra)* by hand */
        int se[] = {sep, extra};
        int one = hearth_cx_rule_seq(b, se, 2);
        tail = one < 0 ? -1 : hearth_cx_rule_repeat(b, one, -1, 0, -1);
    } else {
        tail = hearth_cx_rule(b);
        if (tail < 0 || hearth_cx_alt(b, tail)) return -1;
    }
    if (tail < 0) return -1;
    /* optional chain OPT_i := sep KV_i OPT_{i+1} | OPT_{i+1}, built from the end */
    int opt[HEARTH_CX_MAX_PROPS + 1];
    opt[k] = tail;
    for (int i = k - 1; i >= n_req; i--) {
        int r = hearth_cx_rule(b);
        if (r < 0 || hearth_cx_alt(b, r) || hearth_cx_ref(b, r, sep) || hearth_cx_ref(b, r, kv[i]) ||
            hearth_cx_ref(b, r, opt[i + 1]) || hearth_cx_alt(b, r) || hearth_cx_ref(b, r, opt[i + 1]))
            return -1;
        opt[i] = r;
    }
    int items = hearth_cx_rule(b);
    if (items < 0) return -1;
    if (n_req > 0) { /* KV_1 (sep KV_i)... OPT_{n_req} */
        if (hearth_cx_alt(b, items) || hearth_cx_ref(b, items, kv[0])) return -1;
        for (int i = 1; i < n_req; i++)
            if (hearth_cx_ref(b, items, sep) || hearth_cx_ref(b, items, kv[i])) return -1;
        if (hearth_cx_ref(b, items, opt[n_req])) return -1;
        return bracketed(j, kw ? "(" : "{", items, false, kw ? ")" : "}");
    }
    /* no required member: the first present one has no comma before it */
    for (int i = 0; i < k; i++)
        if (hearth_cx_alt(b, items) || hearth_cx_ref(b, items, kv[i]) || hearth_cx_ref(b, items, opt[i + 1])) return -1;
    if (extra >= 0 && (hearth_cx_alt(b, items) || hearth_cx_ref(b, items, extra) || hearth_cx_ref(b, items, tail)))
        return -1;
    if (k == 0 && extra < 0) return bracketed(j, kw ? "(" : "{", -1, true, kw ? ")" : "}");
    return bracketed(j, kw ? "(" : "{", items, true, kw ? ")" : "}");
}

static int array_rule(hearth_cx_json *j, const cJSON *s) {
    const cJSON *items = get(s, "items");
    int32_t min = count_kw(j, s, "minItems"), max = count_kw(j, s, "maxItems");
    if (min == -2 || max == -2) return -1;
    if (min < 0) min = 0;
    if (max >= 0 && max < min)
        return hearth_cx_fail(B(j), HEARTH_E_INVALID, "'maxItems' (%d) is below 'minItems' (%d)", max, min);
    int val = items && !cJSON_IsBool(items) ? hearth_cx_json_value(j, items)
            : cJSON_IsFalse(items)          ? -2
                                            : any_value(j, any_depth_left(j) - 1);
    if (val == -2) { /* items: false: only the empty array */
        if (min > 0) return hearth_cx_fail(B(j), HEARTH_E_INVALID, "'items': false with 'minItems' above 0");
        return bracketed(j, "[", -1, true, "]");
    }
    if (val < 0) return -1;
    if (max == 0) return bracketed(j, "[", -1, true, "]");
    int sep = comma(j);
    int rep = sep < 0 ? -1 : hearth_cx_rule_repeat(B(j), val, sep, min > 0 ? min : 1, max);
    if (rep < 0) return -1;
    return bracketed(j, "[", rep, min == 0, "]");
}

/* The rule for one type name under schema s. */
static int typed(hearth_cx_json *j, const cJSON *s, const char *t) {
    if (!strcmp(t, "object")) return object_rule(j, s, false);
    if (!strcmp(t, "array")) return array_rule(j, s);
    if (!strcmp(t, "string")) {
        int32_t min = count_kw(j, s, "minLength"), max = count_kw(j, s, "maxLength");
        if (min == -2 || max == -2) return -1;
        if (max >= 0 && min > max)
            return hearth_cx_fail(B(j), HEARTH_E_INVALID, "'maxLength' (%d) is below 'minLength' (%d)", max, min);
        return string_rule(j, min < 0 ? 0 : min, max);
    }
    if (!strcmp(t, "number")) return number_rule(j);
    if (!strcmp(t, "integer")) {
        const cJSON *lo = get(s, "minimum"), *xlo = get(s, "exclusiveMinimum");
        bool nonneg = (cJSON_IsNumber(lo) && lo->valuedouble >= 0) || (cJSON_IsNumber(xlo) && xlo->valuedouble >= -1);
        return integer_rule(j, nonneg);
    }
    if (!strcmp(t, "boolean")) {
        if (j->boolean >= 0) return j->boolean;
        int alts[] = {keyword(j, "true"), keyword(j, "false")};
        if (alts[0] < 0 || alts[1] < 0) return -1;
        return j->boolean = hearth_cx_rule_any(B(j), alts, 2);
    }
    if (!strcmp(t, "null")) return j->null >= 0 ? j->null : (j->null = keyword(j, "null"));
    return hearth_cx_fail(B(j), HEARTH_E_INVALID, "unknown type '%.40s'", t);
}

/* Resolve "#/$defs/a/b" (JSON pointer) in the document. */
static const cJSON *resolve(hearth_cx_json *j, const char *ref) {
    if (ref[0] != '#' || (ref[1] && ref[1] != '/')) {
        hearth_cx_fail(B(j), HEARTH_E_UNSUPPORTED, "'$ref' to '%.80s': only references inside the schema (#/...) are supported",
                       ref);
        return NULL;
    }
    const cJSON *at = j->doc;
    const char *p = ref + 1;
    char seg[256];
    while (at && *p == '/') {
        p++;
        size_t n = 0;
        while (*p && *p != '/' && n + 1 < sizeof seg) {
            if (p[0] == '~' && (p[1] == '0' || p[1] == '1')) {
                seg[n++] = p[1] == '0' ? '~' : '/';
                p += 2;
            } else {
                seg[n++] = *p++;
            }
        }
        seg[n] = 0;
        at = cJSON_IsArray(at) ? cJSON_GetArrayItem(at, atoi(seg)) : get(at, seg);
    }
    if (!at) hearth_cx_fail(B(j), HEARTH_E_INVALID, "'$ref' '%.80s' points at nothing in the schema", ref);
    return at;
}

static int value(hearth_cx_json *j, const cJSON *s) {
    hearth_cx_builder *b = B(j);
    if (cJSON_IsTrue(s)) return any_value(j, any_depth_left(j));
    if (cJSON_IsFalse(s)) return hearth_cx_fail(b, HEARTH_E_INVALID, "the schema false accepts no value");
    if (!cJSON_IsObject(s)) return hearth_cx_fail(b, HEARTH_E_INVALID, "a schema must be an object or a boolean");
    const cJSON *ref = get(s, "$ref");
    if (ref) {
        if (!cJSON_IsString(ref)) return hearth_cx_fail(b, HEARTH_E_INVALID, "'$ref' must be a string");
        for (int32_t i = 0; i < j->n_refs; i++)
            if (!strcmp(j->refs[i], ref->valuestring))
                return hearth_cx_fail(b, HEARTH_E_UNSUPPORTED, "recursive schemas ('$ref' '%.80s' inside itself) are not supported",
                                      ref->valuestring);
        if (j->n_refs == HEARTH_CX_MAX_REFS) return hearth_cx_fail(b, HEARTH_E_LIMIT, "too many nested '$ref's");
        const cJSON *target = resolve(j, ref->valuestring);
        if (!target) return -1;
        j->refs[j->n_refs++] = ref->valuestring;
        int r = hearth_cx_json_value(j, target);
        j->n_refs--;
        return r;
    }
    const cJSON *c = get(s, "const");
    if (c) return literals(j, &c, 1);
    const cJSON *en = get(s, "enum");
    if (en) {
        if (!cJSON_IsArray(en)) return hearth_cx_fail(b, HEARTH_E_INVALID, "'enum' must be a list");
        int n = cJSON_GetArraySize(en);
        if (n > HEARTH_CX_MAX_ENUM)
            return hearth_cx_fail(b, HEARTH_E_LIMIT, "'enum' lists %d values; at most %d are supported", n,
                                  HEARTH_CX_MAX_ENUM);
        const cJSON **vals = malloc((size_t)(n ? n : 1) * sizeof *vals);
        if (!vals) return hearth_cx_fail(b, HEARTH_E_NOMEM, "out of memory");
        int k = 0;
        for (const cJSON *v = en->child; v; v = v->next) vals[k++] = v;
        int r = literals(j, vals, k);
        free(vals);
        return r;
    }
    const cJSON *any = get(s, "anyOf");
    if (!any) any = get(s, "oneOf");
    if (any) {
        if (!cJSON_IsArray(any) || !any->child)
            return hearth_cx_fail(b, HEARTH_E_INVALID, "'anyOf' / 'oneOf' must be a non-empty list of schemas");
        int n = cJSON_GetArraySize(any);
        if (n > HEARTH_CX_MAX_PROPS)
            return hearth_cx_fail(b, HEARTH_E_LIMIT, "'anyOf' lists %d schemas; at most %d are supported", n,
                                  HEARTH_CX_MAX_PROPS);
        int alts[HEARTH_CX_MAX_PROPS], k = 0;
        for (const cJSON *a = any->child; a; a = a->next)
            if ((alts[k++] = hearth_cx_json_value(j, a)) < 0) return -1;
        return hearth_cx_rule_any(b, alts, k);
    }
    const cJSON *all = get(s, "allOf");
    if (all) {
        if (!cJSON_IsArray(all) || cJSON_GetArraySize(all) != 1)
            return hearth_cx_fail(b, HEARTH_E_UNSUPPORTED, "'allOf' with more than one schema is not supported");
        return hearth_cx_json_value(j, all->child);
    }
    const cJSON *type = get(s, "type");
    if (cJSON_IsString(type)) return typed(j, s, type->valuestring);
    if (cJSON_IsArray(type)) {
        int alts[8], k = 0;
        for (const cJSON *t = type->child; t; t = t->next) {
            if (!cJSON_IsString(t) || k == 8)
                return hearth_cx_fail(b, HEARTH_E_INVALID, "'type' must be a type name or a list of them");
            if ((alts[k++] = typed(j, s, t->valuestring)) < 0) return -1;
        }
        if (!k) return hearth_cx_fail(b, HEARTH_E_INVALID, "'type' lists no type");
        return hearth_cx_rule_any(b, alts, k);
    }
    if (type) return hearth_cx_fail(b, HEARTH_E_INVALID, "'type' must be a type name or a list of them");
    /* no type: what the keywords imply, else anything */
    if (get(s, "properties") || get(s, "additionalProperties") || get(s, "required")) return object_rule(j, s, false);
    if (get(s, "items") || get(s, "minItems") || get(s, "maxItems")) return array_rule(j, s);
    return any_value(j, any_depth_left(j));
}

int hearth_cx_json_value(hearth_cx_json *j, const cJSON *s) {
    if (hearth_cx_builder_status(j->b, NULL)) return -1;
    if (j->depth >= HEARTH_CX_SCHEMA_DEPTH)
        return hearth_cx_fail(j->b, HEARTH_E_LIMIT, "the schema nests deeper than %d levels", HEARTH_CX_SCHEMA_DEPTH);
    j->depth++;
    int r = value(j, s);
    j->depth--;
    return r;
}

int hearth_cx_json_kwargs(hearth_cx_json *j, const cJSON *s) {
    if (hearth_cx_builder_status(j->b, NULL)) return -1;
    if (!s || cJSON_IsTrue(s) || (cJSON_IsObject(s) && !get(s, "properties"))) return any_kwargs(j);
    if (!cJSON_IsObject(s)) return hearth_cx_fail(j->b, HEARTH_E_INVALID, "a tool's parameters must be an object schema");
    j->depth++;
    int r = object_rule(j, s, true);
    j->depth--;
    return r;
}
