/*
 * toolcall.c - the streaming tool-call parser (see toolcall.h).
 *
 * State: buf holds the text not yet handed out. In text mode the parser looks for the earliest
 * opening marker of its format (marks.h), releases the text before it, and holds back a tail
 * that may still become a marker. In call mode it waits until the markup is complete (its
 * closing marker, or the end of a balanced JSON value for formats without one), parses it
 * (toolcall_args.c turns Python-call and call:{} bodies into JSON), and either records the
 * calls or gives the markup back as content. Bodies are short, so re-scanning a growing body on
 * each push costs little.
 *
 * Incremental mode (streamed arguments): while markup is open, each push also reads its calls
 * as far as they are decided (toolcall_partial.c) and reports the difference since the last
 * push as deltas - a call's BEGIN once its name is known and its arguments began, ARGS pieces,
 * END when its arguments are complete. Calls announced this way are "open" until the markup
 * closes; the finished parse then supplies the rest of their arguments (it extends what was
 * sent: the partial readers only report final bytes), and if the markup turns out not to be
 * well-formed the open calls stand as sent and the markup is not returned as content (it was
 * already streamed as calls). Deltas of one push are stored in dtext and point there.
 */
#include "server/toolcall.h"
#include "server/jraw.h"
#include "server/json_out.h"
#include "server/marks.h"
#include "server/toolcall_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

enum {
    K_HERMES = HEARTH_TCK_HERMES,
    K_PYTAG = HEARTH_TCK_PYTAG,
    K_MISTRAL = HEARTH_TCK_MISTRAL,
    K_TOOL_CODE = HEARTH_TCK_TOOL_CODE,
    K_GEMMA_CALL = HEARTH_TCK_GEMMA_CALL,
    K_GEMMA4_CALL = HEARTH_TCK_GEMMA4_CALL,
    K_BARE = HEARTH_TCK_BARE,
    K_HARMONY = HEARTH_TCK_HARMONY,
};

typedef struct {
    const char *open, *close; /* close NULL: the body is JSON, complete when balanced */
    int         kind;
} trig;

static const trig T_HERMES[] = {{"<tool_call>", "</tool_call>", K_HERMES}};
static const trig T_LLAMA3[] = {{"<|python_tag|>", NULL, K_PYTAG}};
static const trig T_MISTRAL[] = {{"[TOOL_CALLS]", NULL, K_MISTRAL}};
static const trig T_GEMMA[] = {{"```tool_code", "```", K_TOOL_CODE},
                               {"<start_function_call>", "<end_function_call>", K_GEMMA_CALL},
                               {"<|tool_call>", "<tool_call|>", K_GEMMA4_CALL}};
static const trig T_HARMONY[] = {{"<|channel|>commentary to=functions.", "<|call|>", K_HARMONY},
                                 {" to=functions.", "<|call|>", K_HARMONY}};
#define MAX_TRIGS 3

static const struct {
    const char *name;
    const trig *t;
    int         n;
} FORMATS[HEARTH_TC_COUNT] = {
    [HEARTH_TC_NONE] = {"none", NULL, 0},
    [HEARTH_TC_HERMES] = {"hermes", T_HERMES, 1},
    [HEARTH_TC_LLAMA3] = {"llama3", T_LLAMA3, 1},
    [HEARTH_TC_MISTRAL] = {"mistral", T_MISTRAL, 1},
    [HEARTH_TC_GEMMA] = {"gemma", T_GEMMA, 3},
    [HEARTH_TC_HARMONY] = {"harmony", T_HARMONY, 2},
};

typedef struct {
    char     *id, *name; /* owned */
    hearth_jw args;      /* owned: the arguments sent so far */
    bool      ended;     /* END was sent */
} open_call;

typedef struct {
    hearth_tc_event kind;
    int             index;
    size_t          id, name, args, n_args; /* offsets into dtext (id, name NUL-terminated) */
    size_t          at;
} delta_rec;

struct hearth_tc {
    hearth_tc_format  f;
    const trig       *t;        /* borrowed: FORMATS[f] */
    const char       *opens[MAX_TRIGS];
    int               n_t;
    uint64_t          seed;
    hearth_jw         buf;      /* owned: text not handed out yet */
    hearth_jw         content;  /* owned: content released by the current push */
    int               cur;      /* -1 text mode, else the kind of the open markup */
    size_t            body;     /* call mode: offset in buf where the markup's body starts */
    bool              lead;     /* LLAMA3: only whitespace (and ';' after a call) so far */
    bool              finished, failed;
    hearth_tool_call *calls;    /* owned [n_calls] */
    int               n_calls;
    size_t            cap_calls;
    /* incremental mode */
    bool              incremental;
    open_call        *open;     /* owned [n_open]: calls announced from the open markup */
    int               n_open;
    size_t            cap_open;
    delta_rec        *dl;       /* owned [n_dl]: this push's deltas, offsets into dtext */
    int               n_dl;
    size_t            cap_dl;
    hearth_tc_delta  *deltas;   /* owned [cap_deltas]: dl resolved to pointers for the caller */
    size_t            cap_deltas;
    hearth_jw         dtext;    /* owned: the strings of this push's deltas */
    hearth_jw         scratch;  /* owned: converted arguments of a partial call */
};

const char *hearth_tc_format_name(hearth_tc_format f) {
    return f >= 0 && f < HEARTH_TC_COUNT ? FORMATS[f].name : "none";
}

hearth_tc_format hearth_tc_format_from_name(const char *name) {
    for (int f = 0; f < HEARTH_TC_COUNT; f++)
        if (name && !strcmp(name, FORMATS[f].name)) return (hearth_tc_format)f;
    return HEARTH_TC_COUNT;
}

bool hearth_tc_is_marker(hearth_tc_format f, const char *text, size_t n) {
    static const char *const extra[] = {"[ARGS]", "[CALL_ID]", "<|\"|>", "<escape>"};
    static const char *const harmony[] = {"<|channel|>", "<|message|>", "<|constrain|>", "<|call|>"};
    if (f <= HEARTH_TC_NONE || f >= HEARTH_TC_COUNT || !n) return false;
    hearth_span s = {text, n};
    for (size_t i = 0; f == HEARTH_TC_HARMONY && i < sizeof harmony / sizeof harmony[0]; i++)
        if (hearth_span_eq(s, harmony[i])) return true;
    for (int i = 0; i < FORMATS[f].n; i++)
        if (hearth_span_eq(s, FORMATS[f].t[i].open) || (FORMATS[f].t[i].close && hearth_span_eq(s, FORMATS[f].t[i].close)))
            return true;
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
        if (hearth_span_eq(s, extra[i])) return true;
    return false;
}

hearth_tc_format hearth_tc_detect(const char *tmpl, const char *arch) {
    if (tmpl) {
        if (strstr(tmpl, "to=functions.") && strstr(tmpl, "<|channel|>")) return HEARTH_TC_HARMONY;
        if (strstr(tmpl, "[TOOL_CALLS]")) return HEARTH_TC_MISTRAL;
        if (strstr(tmpl, "<tool_call>")) return HEARTH_TC_HERMES;
        if (strstr(tmpl, "<|python_tag|>") || strstr(tmpl, "\"parameters\": ")) return HEARTH_TC_LLAMA3;
        if (strstr(tmpl, "<|tool_call>") || strstr(tmpl, "<start_function_call>") || strstr(tmpl, "tool_code"))
            return HEARTH_TC_GEMMA;
    }
    if (arch) {
        if (!strncmp(arch, "gemma", 5)) return HEARTH_TC_GEMMA;
        if (!strcmp(arch, "gpt-oss") || !strcmp(arch, "gpt_oss")) return HEARTH_TC_HARMONY;
        if (strstr(arch, "mistral") || strstr(arch, "mixtral")) return HEARTH_TC_MISTRAL;
        if (tmpl && strstr(tmpl, "<|start_header_id|>")) return HEARTH_TC_LLAMA3;
    }
    return HEARTH_TC_HERMES;
}

hearth_tc *hearth_tc_create(hearth_tc_format f, uint64_t id_seed) {
    if (f < 0 || f >= HEARTH_TC_COUNT) return NULL;
    hearth_tc *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->f = f;
    p->t = FORMATS[f].t;
    p->n_t = FORMATS[f].n;
    for (int i = 0; i < p->n_t; i++) p->opens[i] = p->t[i].open;
    p->seed = id_seed;
    p->cur = -1;
    p->lead = f == HEARTH_TC_LLAMA3;
    hearth_jw_init(&p->buf);
    hearth_jw_init(&p->content);
    hearth_jw_init(&p->dtext);
    hearth_jw_init(&p->scratch);
    return p;
}

void hearth_tc_stream_args(hearth_tc *p) { p->incremental = true; }

void hearth_tc_destroy(hearth_tc *p) {
    if (!p) return;
    for (int i = 0; i < p->n_calls; i++) {
        free(p->calls[i].id);
        free(p->calls[i].name);
        free(p->calls[i].arguments);
    }
    free(p->calls);
    for (int i = 0; i < p->n_open; i++) {
        free(p->open[i].id);
        free(p->open[i].name);
        hearth_jw_fini(&p->open[i].args);
    }
    free(p->open);
    free(p->dl);
    free(p->deltas);
    hearth_jw_fini(&p->dtext);
    hearth_jw_fini(&p->scratch);
    hearth_jw_fini(&p->buf);
    hearth_jw_fini(&p->content);
    free(p);
}

const hearth_tool_call *hearth_tc_calls(const hearth_tc *p, int *n) {
    *n = p->n_calls;
    return p->calls;
}

static char *dupn(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

cJSON *hearth_tc_parse_exact(const char *s, size_t n) {
    const char *end = NULL;
    cJSON *v = n ? cJSON_ParseWithLengthOpts(s, n, &end, 0) : NULL;
    while (v && end < s + n && is_ws(*end)) end++;
    if (v && end != s + n) {
        cJSON_Delete(v);
        v = NULL;
    }
    return v;
}

static uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The id of call `index` when the model wrote none: "call_" + 24 hex digits, or 9
 * alphanumerics for Mistral. made: at least 40 bytes. */
static void make_id(const hearth_tc *p, int index, char *made) {
    uint64_t a = mix(p->seed ^ ((uint64_t)index << 32)), b = mix(a);
    if (p->f == HEARTH_TC_MISTRAL) {
        static const char al[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        for (int i = 0; i < 9; i++, a /= 62) made[i] = al[a % 62];
        made[9] = 0;
    } else {
        snprintf(made, 40, "call_%016llx%08llx", (unsigned long long)a, (unsigned long long)(b & 0xffffffffu));
    }
}

bool hearth_tc_add(hearth_tc *p, const char *name, size_t n_name, const char *args, size_t n_args, const char *id,
                   size_t n_id) {
    if (!hearth_buf_grow(&p->calls, &p->cap_calls, (size_t)p->n_calls + 1, sizeof *p->calls, 4)) return false;
    char made[40];
    if (!id || !n_id) {
        make_id(p, p->n_calls, made);
        id = made;
        n_id = strlen(made);
    }
    hearth_tool_call *c = &p->calls[p->n_calls];
    c->index = p->n_calls;
    c->id = dupn(id, n_id);
    c->name = dupn(name, n_name);
    c->arguments = dupn(args, n_args);
    if (!c->id || !c->name || !c->arguments) {
        free(c->id);
        free(c->name);
        free(c->arguments);
        return false;
    }
    p->n_calls++;
    return true;
}

/* A JSON object {"name": .., "arguments"|"parameters": {..} or "{..}", "id"?: ..} -> a call.
 * 1 added, -1 not a call, -2 OOM. */
static int json_call(hearth_tc *p, hearth_span obj) {
    cJSON *root = hearth_tc_parse_exact(obj.ptr, obj.len);
    int rc = -1;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
    hearth_span args = {"{}", 2}, id = {NULL, 0};
    if (!cJSON_IsObject(root) || !cJSON_IsString(name) || !*name->valuestring) goto out;
    const char *ak = cJSON_HasObjectItem(root, "arguments") ? "arguments" : "parameters";
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, ak);
    if (a && cJSON_IsString(a)) { /* arguments given as a JSON string holding the object */
        cJSON *inner = hearth_tc_parse_exact(a->valuestring, strlen(a->valuestring));
        bool ok = cJSON_IsObject(inner);
        cJSON_Delete(inner);
        if (!ok) goto out;
        args = hearth_jraw_trim(a->valuestring, strlen(a->valuestring));
    } else if (a && !cJSON_IsNull(a)) {
        if (!cJSON_IsObject(a) || !hearth_jraw_get(obj, ak, &args)) goto out;
    }
    const cJSON *jid = cJSON_GetObjectItemCaseSensitive(root, "id");
    if (cJSON_IsString(jid)) id = hearth_span_cstr(jid->valuestring);
    rc = hearth_tc_add(p, name->valuestring, strlen(name->valuestring), args.ptr, args.len, id.ptr, id.len) ? 1 : -2;
out:
    cJSON_Delete(root);
    return rc;
}


/* Mistral after [TOOL_CALLS]: a JSON array of calls, or name[CALL_ID]id[ARGS]{..}.
 * 1 done (*used bytes of body), 0 incomplete, -1 not a call, -2 OOM. */
static int mistral(hearth_tc *p, const char *b, size_t n, size_t *used) {
    size_t i = 0;
    while (i < n && is_ws(b[i])) i++;
    if (i == n) return 0;
    if (b[i] == '[') {
        size_t len = hearth_jraw_skip(b + i, n - i);
        if (!len) return 0;
        hearth_jraw_it it;
        hearth_span el;
        int before = p->n_calls, rc = 1;
        hearth_jraw_iter((hearth_span){b + i, len}, &it);
        while (rc == 1 && hearth_jraw_next(&it, NULL, &el)) rc = json_call(p, el);
        if (rc == 1 && (it.err || p->n_calls == before)) rc = -1;
        *used = i + len;
        return rc;
    }
    size_t ns = i;
    while (i < n && b[i] != '[' && !is_ws(b[i])) i++;
    if (i == n) return 0;
    if (b[i] != '[' || i == ns) return -1;
    size_t ne = i, is = 0, ie = 0;
    static const char cid[] = "[CALL_ID]", args[] = "[ARGS]";
    if (n - i < sizeof cid - 1 && !memcmp(b + i, cid, n - i)) return 0;
    if (n - i >= sizeof cid - 1 && !memcmp(b + i, cid, sizeof cid - 1)) {
        is = i += sizeof cid - 1;
        while (i < n && b[i] != '[') i++;
        if (i == n) return 0;
        ie = i;
    }
    if (n - i < sizeof args - 1) return memcmp(b + i, args, n - i) ? -1 : 0;
    if (memcmp(b + i, args, sizeof args - 1)) return -1;
    i += sizeof args - 1;
    size_t len = hearth_jraw_skip(b + i, n - i);
    if (!len) return 0;
    hearth_span a = hearth_jraw_trim(b + i, len);
    cJSON *v = hearth_tc_parse_exact(a.ptr, a.len);
    bool ok = cJSON_IsObject(v);
    cJSON_Delete(v);
    if (!ok) return -1;
    *used = i + len;
    return hearth_tc_add(p, b + ns, ne - ns, a.ptr, a.len, is ? b + is : NULL, ie - is) ? 1 : -2;
}

/* The body of the open markup at buf[p->body..]: 1 parsed (calls added), 0 needs more text,
 * -1 not a call, -2 OOM; *used: body bytes the markup took, its closing marker included. */
static int parse_markup(hearth_tc *p, bool final, size_t *used) {
    const char *b = p->buf.b.p + p->body;
    size_t n = p->buf.b.len - p->body;
    int kind = p->cur;
    if (kind == K_PYTAG || kind == K_BARE) {
        size_t i = 0;
        while (i < n && is_ws(b[i])) i++;
        if (i == n) return final ? -1 : 0;
        if (b[i] != '{') {
            *used = n;
            return -1;
        }
        size_t len = hearth_jraw_skip(b, n);
        if (!len) return final ? (*used = n, -1) : 0;
        *used = len;
        return json_call(p, hearth_jraw_trim(b, len));
    }
    if (kind == K_MISTRAL) {
        int rc = mistral(p, b, n, used);
        if (rc == 0 && final) rc = -1;
        if (rc == -1) *used = n;
        return rc;
    }
    const trig *t = NULL;
    for (int i = 0; i < p->n_t; i++)
        if (p->t[i].kind == kind) t = &p->t[i];
    const char *close = memmem(b, n, t->close, strlen(t->close));
    if (!close && !final) return 0;
    size_t nb = close ? (size_t)(close - b) : n;
    *used = close ? nb + strlen(t->close) : n;
    hearth_span body = hearth_jraw_trim(b, nb);
    switch (kind) {
    case K_HERMES:
        if (body.len && body.ptr[0] == '{') return json_call(p, body);
        return hearth_tc_xml_call(p, body.ptr, body.len);
    case K_TOOL_CODE: return hearth_tc_python_calls(p, body.ptr, body.len);
    case K_GEMMA_CALL: return hearth_tc_gemma_call(p, body.ptr, body.len, "<escape>");
    case K_HARMONY: return hearth_tc_harmony_call(p, b, nb);
    default: return hearth_tc_gemma_call(p, body.ptr, body.len, "<|\"|>");
    }
}

static void emit(hearth_tc *p, const char *s, size_t n) { hearth_jw_raw(&p->content, s, n); }

/* ---- incremental mode ---- */

static size_t dtext_put(hearth_tc *p, const char *s, size_t n) {
    size_t at = p->dtext.b.len;
    hearth_jw_raw(&p->dtext, s, n);
    hearth_jw_raw(&p->dtext, "", 1); /* NUL-terminated */
    return at;
}

static bool add_delta(hearth_tc *p, hearth_tc_event kind, int index, const char *id, const char *name,
                      const char *args, size_t n_args) {
    if (!hearth_buf_grow(&p->dl, &p->cap_dl, (size_t)p->n_dl + 1, sizeof *p->dl, 8)) return false;
    delta_rec *d = &p->dl[p->n_dl++];
    *d = (delta_rec){.kind = kind, .index = index, .at = p->content.b.len, .n_args = n_args};
    d->id = dtext_put(p, id, strlen(id));
    d->name = dtext_put(p, name, strlen(name));
    d->args = dtext_put(p, args ? args : "", n_args);
    return !p->dtext.b.oom;
}

/* Announce call j of the open markup (j == n_open). */
static bool begin(hearth_tc *p, const hearth_tc_partial *pc) {
    if (!hearth_buf_grow(&p->open, &p->cap_open, (size_t)p->n_open + 1, sizeof *p->open, 4)) return false;
    int index = p->n_calls + p->n_open;
    char made[40];
    if (!pc->id.len) make_id(p, index, made);
    open_call *o = &p->open[p->n_open];
    *o = (open_call){.id = pc->id.len ? dupn(pc->id.ptr, pc->id.len) : dupn(made, strlen(made)),
                     .name = dupn(pc->name.ptr, pc->name.len)};
    hearth_jw_init(&o->args);
    p->n_open++;
    if (!o->id || !o->name) return false;
    return add_delta(p, HEARTH_TC_BEGIN, index, o->id, o->name, NULL, 0);
}

/* Send what the open call o (call `index`) has not sent of args: the new bytes when args
 * extends what was sent (it always does unless a reader is wrong: then nothing). */
static bool send_args(hearth_tc *p, open_call *o, int index, hearth_span args) {
    size_t sent = o->args.b.len;
    if (args.len <= sent || (sent && memcmp(args.ptr, o->args.b.p, sent))) return true;
    hearth_jw_raw(&o->args, args.ptr + sent, args.len - sent);
    return add_delta(p, HEARTH_TC_ARGS, index, o->id, o->name, args.ptr + sent, args.len - sent);
}

static bool end_call(hearth_tc *p, open_call *o, int index) {
    o->ended = true;
    return add_delta(p, HEARTH_TC_END, index, o->id, o->name, o->args.b.p ? o->args.b.p : "", o->args.b.len);
}

/* The markup is still open: announce and extend its calls as far as they are decided. */
static bool advance(hearth_tc *p) {
    const char *b = p->buf.b.p + p->body;
    size_t n = p->buf.b.len - p->body;
    for (;;) {
        int j = p->n_open && !p->open[p->n_open - 1].ended ? p->n_open - 1 : p->n_open;
        hearth_tc_partial pc;
        if (!hearth_tc_partial_call(p->cur, b, n, j, &pc, &p->scratch)) return true;
        if (j == p->n_open && !begin(p, &pc)) return false;
        open_call *o = &p->open[j];
        int index = p->n_calls + j;
        if (!send_args(p, o, index, pc.args)) return false;
        if (!pc.done) return true;
        if (!end_call(p, o, index)) return false;
    }
}

/* The markup closed: rc 1 with its finished calls at calls[before..n_calls), or -1 (not
 * well-formed; its calls were taken back). Open calls are finished from the parse (or stand
 * as sent) and keep the id and name they were announced with; calls never announced are
 * sent whole. */
static bool settle(hearth_tc *p, int before, int rc) {
    int n_final = rc == 1 ? p->n_calls - before : 0;
    bool ok = true;
    for (int j = 0; j < p->n_open && ok; j++) {
        open_call *o = &p->open[j];
        hearth_tool_call *f = j < n_final ? &p->calls[before + j] : NULL;
        if (!o->ended) ok = (!f || send_args(p, o, before + j, hearth_span_cstr(f->arguments))) &&
                            end_call(p, o, before + j);
        if (!ok) break;
        if (f) {
            char *a = dupn(o->args.b.p ? o->args.b.p : "", o->args.b.len);
            if (!a) return false;
            free(f->id);
            free(f->name);
            free(f->arguments);
            f->id = o->id;
            f->name = o->name;
            f->arguments = a;
            o->id = o->name = NULL;
        } else {
            ok = hearth_tc_add(p, o->name, strlen(o->name), o->args.b.p ? o->args.b.p : "", o->args.b.len, o->id,
                               strlen(o->id));
        }
    }
    for (int j = p->n_open; j < n_final && ok; j++) {
        const hearth_tool_call *f = &p->calls[before + j];
        ok = add_delta(p, HEARTH_TC_BEGIN, before + j, f->id, f->name, NULL, 0) &&
             add_delta(p, HEARTH_TC_ARGS, before + j, f->id, f->name, f->arguments, strlen(f->arguments)) &&
             add_delta(p, HEARTH_TC_END, before + j, f->id, f->name, f->arguments, strlen(f->arguments));
    }
    for (int j = 0; j < p->n_open; j++) {
        free(p->open[j].id);
        free(p->open[j].name);
        hearth_jw_fini(&p->open[j].args);
    }
    p->n_open = 0;
    return ok;
}

/* Consume as much of buf as can be decided. */
static int run(hearth_tc *p, bool final) {
    size_t pos = 0;
    for (;;) {
        const char *s = p->buf.b.p + pos;
        size_t n = p->buf.b.len - pos;
        if (p->cur < 0) {
            if (p->lead) {
                size_t w = 0;
                while (w < n && (is_ws(s[w]) || (s[w] == ';' && p->n_calls))) w++;
                if (w == n) { /* whitespace only: hold (it is dropped if a call follows) */
                    if (final) {
                        if (!p->n_calls) emit(p, s, n);
                        pos += n;
                    }
                    break;
                }
                if (s[w] == '{') {
                    pos += w; /* whitespace before a call, or ';' between calls, is dropped */
                    p->cur = K_BARE;
                    p->body = pos;
                    continue;
                }
                p->lead = false;
            }
            size_t at = 0, hold = 0;
            int i = n ? hearth_marks_find(s, n, p->opens, p->n_t, &at, &hold) : -1;
            if (i < 0) {
                size_t r = final ? n : n - hold;
                emit(p, s, r);
                pos += r;
                break;
            }
            emit(p, s, at);
            pos += at;
            p->cur = p->t[i].kind;
            p->body = pos + strlen(p->t[i].open);
            continue;
        }
        size_t used = 0;
        int before = p->n_calls;
        int rc = parse_markup(p, final, &used);
        if (rc == 0) {
            if (p->incremental && !advance(p)) return -2;
            break;
        }
        if (rc == -2) return -2;
        if (rc == -1) {
            while (p->n_calls > before) { /* a half-parsed array: take its calls back */
                hearth_tool_call *c = &p->calls[--p->n_calls];
                free(c->id);
                free(c->name);
                free(c->arguments);
            }
            if (!p->n_open) emit(p, p->buf.b.p + pos, p->body + used - pos);
        }
        if (p->incremental && (p->n_open || rc == 1) && !settle(p, before, rc)) return -2;
        bool bare = p->cur == K_BARE || p->cur == K_PYTAG;
        pos = p->body + used;
        p->cur = -1;
        p->lead = bare && rc == 1;
    }
    memmove(p->buf.b.p, p->buf.b.p + pos, p->buf.b.len - pos);
    p->buf.b.len -= pos;
    if (p->cur >= 0) p->body -= pos;
    return p->content.b.oom || p->buf.b.oom ? -2 : 0;
}

static hearth_status step(hearth_tc *p, const char *text, size_t n, bool final, hearth_tc_out *out) {
    memset(out, 0, sizeof *out);
    out->content.ptr = "";
    if (p->failed) return HEARTH_E_NOMEM;
    if (p->finished) return HEARTH_OK;
    int before = p->n_calls;
    hearth_jw_reset(&p->content);
    hearth_jw_reset(&p->dtext);
    p->n_dl = 0;
    if (p->f == HEARTH_TC_NONE) {
        out->content = (hearth_span){text, n};
        p->finished = final;
        return HEARTH_OK;
    }
    hearth_jw_raw(&p->buf, text, n);
    if (run(p, final) < 0) {
        p->failed = true;
        return HEARTH_E_NOMEM;
    }
    p->finished = final;
    out->content = (hearth_span){p->content.b.p ? p->content.b.p : "", p->content.b.len};
    out->calls = p->calls ? p->calls + before : NULL; /* NULL + 0 is undefined */
    out->n_calls = p->n_calls - before;
    out->in_call = p->cur >= 0;
    if (!hearth_buf_grow(&p->deltas, &p->cap_deltas, (size_t)p->n_dl, sizeof *p->deltas, 8)) {
        p->failed = true;
        return HEARTH_E_NOMEM;
    }
    for (int i = 0; i < p->n_dl; i++) {
        const delta_rec *r = &p->dl[i];
        p->deltas[i] = (hearth_tc_delta){.kind = r->kind, .index = r->index, .id = p->dtext.b.p + r->id,
                                         .name = p->dtext.b.p + r->name,
                                         .args = {p->dtext.b.p + r->args, r->n_args}, .at = r->at};
    }
    out->deltas = p->deltas;
    out->n_deltas = p->n_dl;
    return HEARTH_OK;
}

hearth_status hearth_tc_push(hearth_tc *p, const char *text, size_t n, hearth_tc_out *out) {
    return step(p, text, n, false, out);
}

hearth_status hearth_tc_finish(hearth_tc *p, hearth_tc_out *out) { return step(p, "", 0, true, out); }
