/*
 * media.h - images and audio in requests: one representation for the content parts of all
 * three dialects, the check that the served model can use them, and content sniffing.
 *
 * Each dialect's parser hands every non-text part of a message to hearth_media_parse, which
 * understands the part shapes of all three APIs (their type names do not collide):
 *
 *   OpenAI chat   {"type":"image_url","image_url":{"url": URL | data: URL,"detail"?}}
 *                 {"type":"input_audio","input_audio":{"data": base64,"format":"wav"|"mp3"|...}}
 *                 {"type":"audio_url","audio_url":{"url": URL | data: URL}}
 *   Anthropic     {"type":"image","source":{"type":"base64","media_type","data"}
 *                                          | {"type":"url","url"}}
 *   Responses     {"type":"input_image","image_url": URL | data: URL,"detail"?}
 *                 {"type":"input_file","file_data": data: URL | base64,"filename"?}
 *                 {"type":"input_file","file_url": URL}
 *
 * and appends a hearth_media_item to the request's list: its kind, where it sits in the
 * request (the part's parameter path, as the dialect spells it), and either its bytes (inline
 * base64 and data: URLs are decoded here, so a bad payload is a 400 naming the field) or the
 * URL to fetch (media_fetch.h). Then hearth_media_admit checks that the model takes every
 * item's kind (the towers store/modality.h finds in its files), then hearth_media_admit_runs
 * that the engine runs that tower: a part it cannot use is a 400 naming the part and the model. Only after that
 * would URLs be fetched, so a text-only model never makes an outbound request.
 *
 * Thread rule: plain data and pure functions; any thread.
 */
#pragma once
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/errors.h"

typedef enum {
    HEARTH_MEDIA_IMAGE,
    HEARTH_MEDIA_AUDIO,
    HEARTH_MEDIA_FILE, /* Responses' input_file: a document of any type */
} hearth_media_kind;

typedef enum { HEARTH_MEDIA_DETAIL_AUTO, HEARTH_MEDIA_DETAIL_LOW, HEARTH_MEDIA_DETAIL_HIGH } hearth_media_detail;

/* What a model takes, as a bit set. */
enum { HEARTH_MEDIA_CAP_IMAGE = 1u << 0, HEARTH_MEDIA_CAP_AUDIO = 1u << 1 };

/* The default cap on one item's bytes, inline or fetched (mlx-bun's 64 MB). */
#define HEARTH_MEDIA_MAX_BYTES ((size_t)64 << 20)

typedef struct {
    hearth_media_kind   kind;
    hearth_media_detail detail;
    char               *url;       /* owned: an http(s) URL to fetch, or NULL when bytes holds it */
    uint8_t            *bytes;     /* owned: the decoded inline payload, or NULL */
    size_t              n_bytes;
    char                format[32]; /* declared type: input_audio's format, a data: URL's or
                                     * Anthropic's media type ("" unknown); the bytes decide */
    int                 i_msg;      /* the message (or input item) it belongs to */
    char                param[96];  /* the part: "messages[1].content[0]" */
} hearth_media_item;

typedef struct {
    hearth_media_item *v; /* owned */
    size_t             n, cap;
    char               nonce[24]; /* set by the server when its model takes images ("": never):
                                   * the dialects then write each image's marker into the
                                   * message text where the part sat (hearth_media_marker) */
} hearth_media_list;

/* The marker of item i of l: U+FFFC, the list's nonce, ':', i, U+FFFC (a request cannot forge
 * it: the nonce is fresh per request). Writes it NUL-terminated into out and returns its
 * length; 0 (nothing written) when l has no nonce or cap is too small. */
size_t hearth_media_marker(const hearth_media_list *l, size_t i, char *out, size_t cap);

void hearth_media_list_fini(hearth_media_list *l);

/* Is type the type of a media part in one of the dialects? */
bool hearth_media_is_part(const char *type);
/* Parse part p (an object whose type hearth_media_is_part) of message i_msg, at param, into a
 * new item of l. Inline payloads over max_bytes are refused before decoding. False with e
 * filled: 400 naming the field that is missing or malformed, 503 out of memory. */
bool hearth_media_parse(const cJSON *p, int i_msg, const char *param, size_t max_bytes, hearth_media_list *l,
                        hearth_api_err *e);
/* Can model (id model_id, taking caps, HEARTH_MEDIA_CAP_*) use every item of l? False with e
 * filled (400 naming the first part it cannot use, and the model). */
bool hearth_media_admit(const hearth_media_list *l, const char *model_id, unsigned caps, hearth_api_err *e);
/* Of the items the model has towers for, can the engine encode each (runs, HEARTH_MEDIA_CAP_*)?
 * False with e filled: 400 naming the first part, the model and why it has the tower (source,
 * store/modality.h's evidence), and that hearth cannot run that tower yet. */
bool hearth_media_admit_runs(const hearth_media_list *l, const char *model_id, unsigned runs, const char *source,
                             hearth_api_err *e);

/* The media type of bytes, from their leading magic (PNG, JPEG, WebP, GIF; WAV, FLAC, MP3,
 * OGG), never from what a header claims; NULL when none matches. *kind gets its kind. */
const char *hearth_media_sniff(const uint8_t *b, size_t n, hearth_media_kind *kind);
/* The name of a kind: "image", "audio", "file". */
const char *hearth_media_kind_name(hearth_media_kind k);
