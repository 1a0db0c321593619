/*
 * media.c - content parts of the three dialects -> hearth_media_item (see media.h).
 *
 * Validation happens here, before any capability check, so a malformed part is reported as
 * such whatever the model: missing or mistyped fields and bad base64 name the field
 * ("messages[0].content[1].image_url.url"), payloads over the cap are refused from their
 * encoded length before anything is decoded. A data: URL must be base64
 * (data:[type][;param]*;base64,PAYLOAD): media bytes are binary, and percent-encoded binary
 * is not something clients send.
 */
#include "server/media.h"
#include "base/base64.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const part_types[] = {"image_url", "input_audio", "audio_url", "image", "input_image",
                                         "input_file", NULL};

bool hearth_media_is_part(const char *type) {
    for (const char *const *t = part_types; *t; t++)
        if (!strcmp(type, *t)) return true;
    return false;
}

const char *hearth_media_kind_name(hearth_media_kind k) {
    return k == HEARTH_MEDIA_IMAGE ? "image" : k == HEARTH_MEDIA_AUDIO ? "audio" : "file";
}

size_t hearth_media_marker(const hearth_media_list *l, size_t i, char *out, size_t cap) {
    if (!l || !l->nonce[0]) return 0;
    int n = snprintf(out, cap, "\xEF\xBF\xBC%s:%zu\xEF\xBF\xBC", l->nonce, i);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

void hearth_media_list_fini(hearth_media_list *l) {
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].url);
        free(l->v[i].bytes);
    }
    free(l->v);
    *l = (hearth_media_list){0};
}

/* "param.a.b" into out (the field a message names). */
static const char *field(char *out, size_t n, const char *param, const char *a, const char *b) {
    snprintf(out, n, "%s.%s%s%s", param, a, b ? "." : "", b ? b : "");
    return out;
}

static bool missing(hearth_api_err *e, const char *f, const char *what) {
    return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", f, "'%s' %s", f, what);
}

/* Decode base64 b64[0..n) into it->bytes. */
static bool decode(hearth_media_item *it, const char *b64, size_t n, size_t max_bytes, const char *f,
                   hearth_api_err *e) {
    if (n == 0) return missing(e, f, "is empty");
    if (n / 4 * 3 > max_bytes)
        return hearth_api_fail(e, HEARTH_E_LIMIT, "media_too_large", f, "'%s' holds more than %zu bytes", f, max_bytes);
    uint8_t *b = malloc(hearth_base64_max_decoded(n));
    size_t got = 0, bad = 0;
    if (!b) return hearth_api_oom(e);
    if (!hearth_base64_decode(b64, n, b, &got, &bad)) {
        free(b);
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_base64", f,
                               "'%s' is not valid base64 (at character %zu)", f, bad);
    }
    if (got > max_bytes) {
        free(b);
        return hearth_api_fail(e, HEARTH_E_LIMIT, "media_too_large", f, "'%s' holds more than %zu bytes", f, max_bytes);
    }
    it->bytes = b;
    it->n_bytes = got;
    return true;
}

/* A data: URL's payload into it->bytes and its media type into it->format. */
static bool data_url(hearth_media_item *it, const char *u, size_t max_bytes, const char *f, hearth_api_err *e) {
    const char *p = u + 5, *comma = strchr(p, ',');
    if (!comma)
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_data_url", f, "'%s' is a data: URL without a ','", f);
    size_t type_len = strcspn(p, ";,");
    if (type_len >= sizeof it->format) type_len = sizeof it->format - 1;
    memcpy(it->format, p, type_len);
    it->format[type_len] = 0;
    size_t hdr = (size_t)(comma - p);
    if (hdr < 7 || strncasecmp(comma - 7, ";base64", 7))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_data_url", f,
                               "'%s' is a data: URL that is not base64 (';base64,' expected)", f);
    return decode(it, comma + 1, strlen(comma + 1), max_bytes, f, e);
}

/* A URL field: a data: URL is decoded, an http(s) URL kept for the fetcher. */
static bool url(hearth_media_item *it, const cJSON *v, size_t max_bytes, const char *f, hearth_api_err *e) {
    if (!v) return missing(e, f, "is required");
    if (!cJSON_IsString(v))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_type", f, "'%s' must be a string", f);
    const char *u = v->valuestring;
    if (!strncasecmp(u, "data:", 5)) return data_url(it, u, max_bytes, f, e);
    if (strncasecmp(u, "http://", 7) && strncasecmp(u, "https://", 8))
        return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_url", f,
                               "'%s' must be an http, https or data: URL (got '%.40s')", f, u);
    return (it->url = strdup(u)) || hearth_api_oom(e);
}

static bool detail(hearth_media_item *it, const cJSON *v, const char *f, hearth_api_err *e) {
    if (!v || cJSON_IsNull(v)) return true;
    const char *d = cJSON_IsString(v) ? v->valuestring : "";
    if (!strcmp(d, "auto")) it->detail = HEARTH_MEDIA_DETAIL_AUTO;
    else if (!strcmp(d, "low")) it->detail = HEARTH_MEDIA_DETAIL_LOW;
    else if (!strcmp(d, "high")) it->detail = HEARTH_MEDIA_DETAIL_HIGH;
    else return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", f, "'%s' must be auto, low or high", f);
    return true;
}

static const cJSON *obj_field(const cJSON *p, const char *k) { return cJSON_GetObjectItemCaseSensitive(p, k); }

static bool parse_openai(hearth_media_item *it, const cJSON *p, const char *t, const char *param, size_t max,
                         hearth_api_err *e) {
    char f[96];
    const cJSON *o = obj_field(p, t);
    if (!strcmp(t, "image_url") && cJSON_IsString(o)) /* some clients send the URL bare */
        return url(it, o, max, field(f, sizeof f, param, t, NULL), e);
    if (!cJSON_IsObject(o)) return missing(e, field(f, sizeof f, param, t, NULL), "must be an object");
    if (!strcmp(t, "input_audio")) {
        it->kind = HEARTH_MEDIA_AUDIO;
        const cJSON *d = obj_field(o, "data"), *fmt = obj_field(o, "format");
        if (!cJSON_IsString(d)) return missing(e, field(f, sizeof f, param, t, "data"), "must be a base64 string");
        if (!cJSON_IsString(fmt) || !*fmt->valuestring)
            return missing(e, field(f, sizeof f, param, t, "format"), "must name the audio format (wav, mp3, ...)");
        snprintf(it->format, sizeof it->format, "%s", fmt->valuestring);
        return decode(it, d->valuestring, strlen(d->valuestring), max, field(f, sizeof f, param, t, "data"), e);
    }
    it->kind = !strcmp(t, "audio_url") ? HEARTH_MEDIA_AUDIO : HEARTH_MEDIA_IMAGE;
    if (!url(it, obj_field(o, "url"), max, field(f, sizeof f, param, t, "url"), e)) return false;
    return it->kind == HEARTH_MEDIA_AUDIO || detail(it, obj_field(o, "detail"), field(f, sizeof f, param, t, "detail"), e);
}

static bool parse_anthropic(hearth_media_item *it, const cJSON *p, const char *param, size_t max, hearth_api_err *e) {
    char f[96];
    it->kind = HEARTH_MEDIA_IMAGE;
    const cJSON *src = obj_field(p, "source");
    if (!cJSON_IsObject(src)) return missing(e, field(f, sizeof f, param, "source", NULL), "must be an object");
    const cJSON *st = obj_field(src, "type");
    const char *s = cJSON_IsString(st) ? st->valuestring : "";
    if (!strcmp(s, "url")) return url(it, obj_field(src, "url"), max, field(f, sizeof f, param, "source", "url"), e);
    if (strcmp(s, "base64"))
        return missing(e, field(f, sizeof f, param, "source", "type"), "must be 'base64' or 'url'");
    const cJSON *mt = obj_field(src, "media_type"), *d = obj_field(src, "data");
    if (!cJSON_IsString(mt) || !*mt->valuestring)
        return missing(e, field(f, sizeof f, param, "source", "media_type"), "must be a string such as image/png");
    if (!cJSON_IsString(d)) return missing(e, field(f, sizeof f, param, "source", "data"), "must be a base64 string");
    snprintf(it->format, sizeof it->format, "%s", mt->valuestring);
    return decode(it, d->valuestring, strlen(d->valuestring), max, field(f, sizeof f, param, "source", "data"), e);
}

static bool parse_responses(hearth_media_item *it, const cJSON *p, const char *t, const char *param, size_t max,
                            hearth_api_err *e) {
    char f[96];
    if (obj_field(p, "file_id"))
        return hearth_api_fail(e, HEARTH_E_UNSUPPORTED, "unsupported", field(f, sizeof f, param, "file_id", NULL),
                               "'%s': hearth has no Files API; send the bytes or a URL", f);
    if (!strcmp(t, "input_image")) {
        it->kind = HEARTH_MEDIA_IMAGE;
        return url(it, obj_field(p, "image_url"), max, field(f, sizeof f, param, "image_url", NULL), e) &&
               detail(it, obj_field(p, "detail"), field(f, sizeof f, param, "detail", NULL), e);
    }
    it->kind = HEARTH_MEDIA_FILE;
    const cJSON *fd = obj_field(p, "file_data"), *fu = obj_field(p, "file_url");
    if (fu && !fd) return url(it, fu, max, field(f, sizeof f, param, "file_url", NULL), e);
    field(f, sizeof f, param, "file_data", NULL);
    if (!cJSON_IsString(fd)) return missing(e, f, "must be a string (a data: URL or base64) when no 'file_url' is given");
    if (!strncasecmp(fd->valuestring, "data:", 5)) return data_url(it, fd->valuestring, max, f, e);
    return decode(it, fd->valuestring, strlen(fd->valuestring), max, f, e);
}

bool hearth_media_parse(const cJSON *p, int i_msg, const char *param, size_t max_bytes, hearth_media_list *l,
                        hearth_api_err *e) {
    const cJSON *type = obj_field(p, "type");
    const char *t = type->valuestring;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        hearth_media_item *v = realloc(l->v, cap * sizeof *v);
        if (!v) return hearth_api_oom(e);
        l->v = v;
        l->cap = cap;
    }
    hearth_media_item *it = &l->v[l->n++];
    *it = (hearth_media_item){.i_msg = i_msg};
    snprintf(it->param, sizeof it->param, "%s", param);
    bool ok = !strcmp(t, "image")                                  ? parse_anthropic(it, p, param, max_bytes, e)
              : !strcmp(t, "input_image") || !strcmp(t, "input_file") ? parse_responses(it, p, t, param, max_bytes, e)
                                                                    : parse_openai(it, p, t, param, max_bytes, e);
    if (!ok && e->st != HEARTH_E_NOMEM) { /* say which kind of part the field belongs to */
        size_t n = strlen(e->msg);
        snprintf(e->msg + n, sizeof e->msg - n, " (a part of type '%s')", t);
    }
    return ok;
}

bool hearth_media_admit(const hearth_media_list *l, const char *model_id, unsigned caps, hearth_api_err *e) {
    for (size_t i = 0; i < l->n; i++) {
        const hearth_media_item *it = &l->v[i];
        unsigned need = it->kind == HEARTH_MEDIA_IMAGE ? HEARTH_MEDIA_CAP_IMAGE
                        : it->kind == HEARTH_MEDIA_AUDIO ? HEARTH_MEDIA_CAP_AUDIO
                                                         : 0; /* files: no model reads documents yet */
        if (need && (caps & need)) continue;
        return hearth_api_fail(e, HEARTH_E_UNSUPPORTED, "unsupported_media", it->param,
                               "'%s' is %s %s part, which the model '%.80s' cannot use (%s)", it->param,
                               it->kind == HEARTH_MEDIA_FILE ? "a" : "an", hearth_media_kind_name(it->kind), model_id ? model_id : "",
                               caps ? "not this kind" : "it takes text only");
    }
    return true;
}

bool hearth_media_admit_runs(const hearth_media_list *l, const char *model_id, unsigned runs, const char *source,
                             hearth_api_err *e) {
    for (size_t i = 0; i < l->n; i++) {
        const hearth_media_item *it = &l->v[i];
        unsigned need = it->kind == HEARTH_MEDIA_IMAGE ? HEARTH_MEDIA_CAP_IMAGE
                        : it->kind == HEARTH_MEDIA_AUDIO ? HEARTH_MEDIA_CAP_AUDIO
                                                         : 0;
        if (!need || (runs & need)) continue;
        return hearth_api_fail(e, HEARTH_E_UNSUPPORTED, "unsupported_media", it->param,
                               "'%s' is an %s part: the model '%.80s' has %s tower (%.120s), which hearth cannot "
                               "run yet", it->param, hearth_media_kind_name(it->kind), model_id ? model_id : "",
                               need == HEARTH_MEDIA_CAP_IMAGE ? "a vision" : "an audio", source ? source : "");
    }
    return true;
}
