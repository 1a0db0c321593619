/*
 * chat_plain.c - marks around user and tool text, and finding them again (see chat_plain.h).
 *
 * The marks are U+E000 nonce U+E001 (open) and U+E002 nonce U+E001 (close). Private-use
 * characters are ordinary text to every template filter hearth runs, and a request that
 * contained the nonce could not know it: it is drawn per request.
 */
#include "server/chat_plain.h"
#include "base/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hearth_plain_marks_init(hearth_plain_marks *m, const char *nonce) {
    int a = snprintf(m->open, sizeof m->open, "\xEE\x80\x80%.32s\xEE\x80\x81", nonce);
    int b = snprintf(m->close, sizeof m->close, "\xEE\x80\x82%.32s\xEE\x80\x81", nonce);
    m->n_open = a > 0 ? (size_t)a : 0;
    m->n_close = b > 0 ? (size_t)b : 0;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* s with the marks inside its leading and trailing whitespace; malloc'ed, NULL when out of memory. */
static char *wrap(const hearth_plain_marks *m, const char *s) {
    size_t n = strlen(s), a = 0, b = n;
    while (a < n && is_space(s[a])) a++;
    while (b > a && is_space(s[b - 1])) b--;
    char *out = malloc(n + m->n_open + m->n_close + 1);
    if (!out) return NULL;
    char *p = out;
    memcpy(p, s, a), p += a;
    memcpy(p, m->open, m->n_open), p += m->n_open;
    memcpy(p, s + a, b - a), p += b - a;
    memcpy(p, m->close, m->n_close), p += m->n_close;
    memcpy(p, s + b, n - b), p += n - b;
    *p = 0;
    return out;
}

bool hearth_plain_mark(const hearth_plain_marks *m, cJSON *ctx, hearth_api_err *e) {
    cJSON *msgs = cJSON_GetObjectItemCaseSensitive(ctx, "messages");
    cJSON *it = NULL;
    cJSON_ArrayForEach(it, msgs) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(it, "role");
        cJSON *content = cJSON_GetObjectItemCaseSensitive(it, "content");
        if (!cJSON_IsString(role) || !cJSON_IsString(content) || !content->valuestring[0]) continue;
        if (strcmp(role->valuestring, "user") && strcmp(role->valuestring, "tool")) continue;
        char *w = wrap(m, content->valuestring);
        cJSON *v = w ? cJSON_CreateString(w) : NULL;
        free(w);
        if (!v || !cJSON_ReplaceItemInObjectCaseSensitive(it, "content", v)) {
            cJSON_Delete(v);
            return hearth_api_oom(e);
        }
    }
    return true;
}

static bool at(const char *text, size_t i, size_t n, const char *mark, size_t k) {
    return k && i + k <= n && !memcmp(text + i, mark, k);
}

bool hearth_plain_strip(const hearth_plain_marks *m, char *text, size_t *n, size_t **ranges, size_t *n_ranges,
                        hearth_api_err *e) {
    size_t *r = NULL, nr = 0, cap = 0, w = 0, start = 0, len = *n;
    bool in = false;
    *ranges = NULL;
    *n_ranges = 0;
    for (size_t i = 0; i < len;) {
        if (text[i] == m->open[0]) { /* both marks start with the same lead byte */
            bool o = at(text, i, len, m->open, m->n_open), c = !o && at(text, i, len, m->close, m->n_close);
            if ((o && in) || (c && !in)) {
                free(r);
                return hearth_api_fail(e, HEARTH_E_INVALID, "chat_template_error", "messages",
                                       "the chat template reorders or cuts message text, so --no-special-in-content "
                                       "cannot tell user text from the template's own");
            }
            if (o) {
                in = true;
                start = w;
                i += m->n_open;
                continue;
            }
            if (c) {
                in = false;
                if (w > start) {
                    if (!hearth_buf_grow(&r, &cap, 2 * nr + 2, sizeof *r, 16)) {
                        free(r);
                        return hearth_api_oom(e);
                    }
                    r[2 * nr] = start;
                    r[2 * nr + 1] = w;
                    nr++;
                }
                i += m->n_close;
                continue;
            }
        }
        text[w++] = text[i++];
    }
    if (in) {
        free(r);
        return hearth_api_fail(e, HEARTH_E_INVALID, "chat_template_error", "messages",
                               "the chat template cuts message text short, so --no-special-in-content cannot tell "
                               "user text from the template's own");
    }
    text[w] = 0;
    *n = w;
    *ranges = r;
    *n_ranges = nr;
    return true;
}

void hearth_plain_clip(size_t *ranges, size_t *n_ranges, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < *n_ranges; i++) {
        if (ranges[2 * i] >= n) break;
        ranges[2 * k] = ranges[2 * i];
        ranges[2 * k + 1] = ranges[2 * i + 1] < n ? ranges[2 * i + 1] : n;
        k++;
    }
    *n_ranges = k;
}
