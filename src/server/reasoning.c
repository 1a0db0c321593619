/*
 * reasoning.c - the reasoning splitter (see reasoning.h): a two-state scanner (content,
 * reasoning) over held text, cutting at the earliest marker of the format's table. In reasoning,
 * trailing whitespace is held until more text follows, so none is left before the close.
 */
#include "server/reasoning.h"
#include "server/json_out.h"
#include "server/marks.h"

#include <stdlib.h>
#include <string.h>

enum { OPEN, CLOSE, DROP };

typedef struct {
    const char *text;
    int         act;
} mark;

#define MAX_MARKS 5
static const mark M_THINK[] = {{"<think>", OPEN}, {"</think>", CLOSE}};
static const mark M_HARMONY[] = {{"<|channel|>analysis<|message|>", OPEN}, {"<|end|>", CLOSE},
                                 {"<|start|>assistant", DROP}, {"<|channel|>final<|message|>", DROP},
                                 {"<|return|>", DROP}};
static const mark M_GEMMA4[] = {{"<|channel>thought", OPEN}, {"<channel|>", CLOSE}};

static const struct {
    const mark *m;
    int         n;
} TABLE[HEARTH_RS_COUNT] = {
    [HEARTH_RS_NONE] = {NULL, 0},
    [HEARTH_RS_THINK] = {M_THINK, 2},
    [HEARTH_RS_HARMONY] = {M_HARMONY, 5},
    [HEARTH_RS_GEMMA4] = {M_GEMMA4, 2},
};

struct hearth_rs {
    hearth_rs_format f;
    const char      *marks[MAX_MARKS];
    int              n;
    bool             reasoning;   /* inside a block */
    bool             skip_ws;     /* drop whitespace before the next text */
    bool             finished, failed;
    hearth_jw        buf;         /* owned: held text */
    hearth_jw        out[2];      /* owned: [0] content, [1] reasoning released by this call */
};

hearth_rs_format hearth_rs_detect(const char *t) {
    if (!t) return HEARTH_RS_NONE;
    if (strstr(t, "<|channel|>")) return HEARTH_RS_HARMONY;
    if (strstr(t, "<|channel>")) return HEARTH_RS_GEMMA4;
    if (strstr(t, "<think>") || strstr(t, "</think>")) return HEARTH_RS_THINK;
    return HEARTH_RS_NONE;
}

bool hearth_rs_prompt_open(hearth_rs_format f, const char *text, size_t n) {
    if (f <= HEARTH_RS_NONE || f >= HEARTH_RS_COUNT) return false;
    const char *last_open = NULL, *last_close = NULL;
    for (int i = 0; i < TABLE[f].n; i++) {
        const mark *m = &TABLE[f].m[i];
        if (m->act == DROP) continue;
        size_t len = strlen(m->text);
        for (const char *p = text, *hit; (hit = memmem(p, (size_t)(text + n - p), m->text, len)); p = hit + 1) {
            if (m->act == OPEN) last_open = hit;
            else last_close = hit;
        }
    }
    return last_open && (!last_close || last_close < last_open);
}

bool hearth_rs_is_marker(hearth_rs_format f, const char *text, size_t n) {
    if (f <= HEARTH_RS_NONE || f >= HEARTH_RS_COUNT || n < 2 || text[0] != '<') return false;
    for (int i = 0; i < TABLE[f].n; i++)
        if (memmem(TABLE[f].m[i].text, strlen(TABLE[f].m[i].text), text, n)) return true;
    return false;
}

hearth_rs *hearth_rs_create(hearth_rs_format f, bool in_reasoning) {
    if (f < 0 || f >= HEARTH_RS_COUNT) return NULL;
    hearth_rs *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->f = f;
    s->n = TABLE[f].n;
    for (int i = 0; i < s->n; i++) s->marks[i] = TABLE[f].m[i].text;
    s->reasoning = in_reasoning && f != HEARTH_RS_NONE;
    s->skip_ws = s->reasoning;
    hearth_jw_init(&s->buf);
    hearth_jw_init(&s->out[0]);
    hearth_jw_init(&s->out[1]);
    return s;
}

void hearth_rs_destroy(hearth_rs *s) {
    if (!s) return;
    hearth_jw_fini(&s->buf);
    hearth_jw_fini(&s->out[0]);
    hearth_jw_fini(&s->out[1]);
    free(s);
}

bool hearth_rs_in_reasoning(const hearth_rs *s) { return s->reasoning; }

static void emit(hearth_rs *s, const char *p, size_t n) {
    if (s->skip_ws) {
        while (n && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++, n--;
        if (!n) return;
        s->skip_ws = false;
    }
    hearth_jw_raw(&s->out[s->reasoning], p, n);
}

static size_t trim_end(const char *p, size_t n) {
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\n' || p[n - 1] == '\r' || p[n - 1] == '\t')) n--;
    return n;
}

static hearth_status step(hearth_rs *s, const char *text, size_t n, bool final, hearth_rs_out *out) {
    out->content = out->reasoning = (hearth_span){"", 0};
    if (s->failed) return HEARTH_E_NOMEM;
    if (s->finished) return HEARTH_OK;
    s->finished = final;
    if (s->f == HEARTH_RS_NONE) {
        out->content = (hearth_span){text, n};
        return HEARTH_OK;
    }
    hearth_jw_reset(&s->out[0]);
    hearth_jw_reset(&s->out[1]);
    hearth_jw_raw(&s->buf, text, n);
    size_t pos = 0;
    for (;;) {
        const char *p = s->buf.b.p + pos;
        size_t left = s->buf.b.len - pos, at = 0, hold = 0;
        int i = left ? hearth_marks_find(p, left, s->marks, s->n, &at, &hold) : -1;
        if (i < 0) {
            size_t r = final ? left : left - hold;
            if (s->reasoning && !final) r = trim_end(p, r); /* whitespace waits: dropped at the close */
            emit(s, p, r);
            pos += r;
            break;
        }
        int act0 = TABLE[s->f].m[i].act;
        emit(s, p, s->reasoning && act0 == CLOSE ? trim_end(p, at) : at);
        pos += at + strlen(s->marks[i]);
        int act = TABLE[s->f].m[i].act;
        if (act == OPEN && !s->reasoning) s->reasoning = s->skip_ws = true;
        else if (act == CLOSE && s->reasoning) {
            s->reasoning = false;
            s->skip_ws = true;
        }
    }
    memmove(s->buf.b.p, s->buf.b.p + pos, s->buf.b.len - pos);
    s->buf.b.len -= pos;
    if (s->buf.b.oom || s->out[0].b.oom || s->out[1].b.oom) {
        s->failed = true;
        return HEARTH_E_NOMEM;
    }
    out->content = (hearth_span){s->out[0].b.p ? s->out[0].b.p : "", s->out[0].b.len};
    out->reasoning = (hearth_span){s->out[1].b.p ? s->out[1].b.p : "", s->out[1].b.len};
    return HEARTH_OK;
}

hearth_status hearth_rs_push(hearth_rs *s, const char *text, size_t n, hearth_rs_out *out) {
    return step(s, text, n, false, out);
}

hearth_status hearth_rs_finish(hearth_rs *s, hearth_rs_out *out) { return step(s, "", 0, true, out); }
