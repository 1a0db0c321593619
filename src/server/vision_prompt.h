/*
 * vision_prompt.h - images of a chat request into the prompt of a vision model (models/vision.h).
 *
 * The dialects write a marker (media.h hearth_media_marker: a per-request nonce and the item's
 * index between two U+FFFC) into a message's text where an image part sat; the chat template
 * renders it like any text. Then, as transformers' Gemma3Processor does with the template's
 * <start_of_image>, each marker becomes the image's full form
 *
 *     "\n\n" <start_of_image> mm_tokens x <image_soft_token> <end_of_image> "\n\n"
 *
 * and the text is tokenized (special tokens parsed). The k-th run of soft tokens of the ids is
 * the k-th marker's image: it is fetched (media_fetch.h, for a URL) or taken from the request's
 * bytes, decoded (image_decode.h), resized and normalized, encoded by the tower (one encode at a
 * time, on the server's vision pool), and handed to the engine as a hearth_image_input whose
 * digest is an XXH3 of its decoded pixels and size. A template that drops a message drops its
 * images with it; ids whose soft-token runs do not line up with the markers (text that spelled
 * out the image tokens itself) are a 400.
 *
 * Thread rule: any connection thread; the tower is shared under the server's vision mutex.
 */
#pragma once
#include "engine/engine.h"
#include "server/media.h"
#include "server/server_internal.h"

/* Load the served checkpoint's vision tower when it has one hearth runs (hearth_vision_probe)
 * and the engine computes on the CPU; sets s->media_caps' image bit. A tower that probes but
 * fails to load fails the server (err says why). Nothing for other models. */
hearth_status hearth_vprompt_init(hearth_server *s, hearth_err *err);
void          hearth_vprompt_fini(hearth_server *s);

/* Give l a fresh nonce when the model takes images (its dialect then writes markers). */
void hearth_vprompt_list_init(hearth_server *s, hearth_media_list *l);

/* Replace the markers of l in *text (malloc'ed, replaced by a new one; *n_text updated) by the
 * images' full forms; *order (malloc'ed, caller frees; NULL when none) gets the item index of
 * each marker in text order, *n_order their count. False with e filled (503 out of memory). */
bool hearth_vprompt_expand(hearth_server *s, const hearth_media_list *l, char **text, size_t *n_text,
                           int32_t **order, int32_t *n_order, hearth_api_err *e);

/* The images of ids (tokenized from an expanded text) for the engine: *out (caller frees with
 * hearth_vprompt_free) [*n_out]. 400 when the soft-token runs do not match order, when an image
 * cannot be fetched or decoded (naming its part); 503 out of memory. */
bool hearth_vprompt_encode(hearth_server *s, const hearth_media_list *l, const int32_t *order, int32_t n_order,
                           const int32_t *ids, size_t n_ids, hearth_image_input **out, int32_t *n_out,
                           hearth_api_err *e);
void hearth_vprompt_free(hearth_image_input *im, int32_t n);
