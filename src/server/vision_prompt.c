/*
 * vision_prompt.c - images of a chat request into the prompt of a vision model; see
 * vision_prompt.h for the flow.
 */
#include "server/vision_prompt.h"
#include "base/buf.h"
#include "base/log.h"
#include "models/vision.h"
#include "server/image_decode.h"
#include "server/media_fetch.h"
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

hearth_status hearth_vprompt_init(hearth_server *s, hearth_err *err) {
    struct stat st;
    if (!s->m || !s->e || !s->model_path || stat(s->model_path, &st) || !S_ISDIR(st.st_mode) ||
        !hearth_vision_probe(s->model_path))
        return HEARTH_OK;
    hearth_engine_device_info di;
    hearth_engine_device(s->e, &di);
    if (strcmp(di.backend, "cpu")) {
        hearth_log(HEARTH_LOG_WARN, "server: the model's vision tower is not served on %s yet (images: CPU only)",
                   di.backend);
        return HEARTH_OK;
    }
    hearth_err verr = {0};
    hearth_status rc = hearth_vision_load(s->model_path, &s->vision, &verr);
    if (rc) return hearth_err_set(err, rc, -1, "the model's vision tower: %s", verr.msg);
    const hearth_vision_info *in = hearth_vision_get_info(s->vision);
    if (in->n_embd_out != hearth_model_hparams(s->m)->n_embd) {
        hearth_vision_free(s->vision);
        s->vision = NULL;
        return hearth_err_set(err, HEARTH_E_FORMAT, -1, "the vision projector gives rows of %d; the text model's are %d",
                              in->n_embd_out, hearth_model_hparams(s->m)->n_embd);
    }
    s->vision_pool = hearth_pool_create(0);
    pthread_mutex_init(&s->vision_mu, NULL);
    s->media_caps |= HEARTH_MEDIA_CAP_IMAGE;
    s->media_runs |= HEARTH_MEDIA_CAP_IMAGE;
    hearth_log(HEARTH_LOG_INFO, "server: vision tower loaded (%d x %d images, %d tokens each)", in->image_size,
               in->image_size, in->mm_tokens);
    return HEARTH_OK;
}

void hearth_vprompt_fini(hearth_server *s) {
    if (!s->vision) return;
    hearth_vision_free(s->vision);
    hearth_pool_destroy(s->vision_pool);
    pthread_mutex_destroy(&s->vision_mu);
    s->vision = NULL;
}

void hearth_vprompt_list_init(hearth_server *s, hearth_media_list *l) {
    if (s->vision) hearth_server_new_id(s, "", l->nonce, sizeof l->nonce);
}

/* The full form of one image, as the processor writes it. */
static bool full_form(hearth_server *s, hearth_buf *b) {
    const hearth_vision_info *in = hearth_vision_get_info(s->vision);
    const hearth_tok *tok = hearth_model_tok(s->m);
    hearth_span boi = hearth_tok_text(tok, in->boi_id), img = hearth_tok_text(tok, in->image_id),
                eoi = hearth_tok_text(tok, in->eoi_id);
    if (!boi.len || !img.len || !eoi.len) return false;
    hearth_buf_puts(b, "\n\n");
    hearth_buf_put(b, boi.ptr, boi.len);
    for (int32_t i = 0; i < in->mm_tokens; i++) hearth_buf_put(b, img.ptr, img.len);
    hearth_buf_put(b, eoi.ptr, eoi.len);
    hearth_buf_puts(b, "\n\n");
    return true;
}

bool hearth_vprompt_expand(hearth_server *s, const hearth_media_list *l, char **text, size_t *n_text,
                           int32_t **order, int32_t *n_order, hearth_api_err *e) {
    *order = NULL;
    *n_order = 0;
    if (!s->vision || !l->nonce[0] || l->n == 0) return true;
    char head[40];
    int hn = snprintf(head, sizeof head, "\xEF\xBF\xBC%s:", l->nonce);
    hearth_buf b = {0};
    int32_t *ord = malloc(l->n * sizeof *ord), n_ord = 0;
    if (!ord) return hearth_api_oom(e);
    const char *p = *text, *end = *text + *n_text;
    while (p < end) {
        const char *m = memmem(p, (size_t)(end - p), head, (size_t)hn);
        if (!m) {
            hearth_buf_put(&b, p, (size_t)(end - p));
            break;
        }
        hearth_buf_put(&b, p, (size_t)(m - p));
        char *q = NULL;
        unsigned long idx = strtoul(m + hn, &q, 10);
        if (!q || q == m + hn || q + 3 > end || memcmp(q, "\xEF\xBF\xBC", 3) || idx >= l->n ||
            l->v[idx].kind != HEARTH_MEDIA_IMAGE || n_ord >= (int32_t)l->n) {
            hearth_buf_put(&b, m, (size_t)hn); /* not one of ours: kept as text */
            p = m + hn;
            continue;
        }
        if (!full_form(s, &b)) {
            free(ord);
            hearth_buf_fini(&b);
            return hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "messages",
                                   "the model's tokenizer lacks its image tokens");
        }
        ord[n_ord++] = (int32_t)idx;
        p = q + 3;
    }
    if (b.oom || !b.p) {
        free(ord);
        hearth_buf_fini(&b);
        return hearth_api_oom(e);
    }
    free(*text);
    *text = b.p;
    *n_text = b.len;
    *order = ord;
    *n_order = n_ord;
    return true;
}

void hearth_vprompt_free(hearth_image_input *im, int32_t n) {
    for (int32_t i = 0; im && i < n; i++) free((void *)im[i].rows);
    free(im);
}

/* Item it's pixels: its bytes, or the body fetched from its URL, decoded. */
static bool item_image(hearth_server *s, const hearth_media_item *it, hearth_image *img, hearth_api_err *e) {
    hearth_media_fetched f = {0};
    const uint8_t *bytes = it->bytes;
    size_t n = it->n_bytes;
    if (it->url) {
        char msg[200] = "";
        hearth_status st = hearth_media_fetch(it->url, HEARTH_MEDIA_IMAGE, &s->p.media, &f, msg, sizeof msg);
        if (st)
            return hearth_api_fail(e, st == HEARTH_E_NOMEM ? HEARTH_E_NOMEM : HEARTH_E_INVALID, "invalid_image_url",
                                   it->param, "'%s' could not be fetched: %s", it->param, msg[0] ? msg : "error");
        bytes = f.bytes;
        n = f.n_bytes;
    }
    hearth_err err = {0};
    hearth_status st = hearth_image_decode(bytes, n, 0, img, &err);
    free(f.bytes);
    if (st)
        return hearth_api_fail(e, st == HEARTH_E_NOMEM ? HEARTH_E_NOMEM : HEARTH_E_INVALID, "invalid_image", it->param,
                               "'%s' is not an image hearth can decode: %s", it->param, err.msg);
    return true;
}

bool hearth_vprompt_encode(hearth_server *s, const hearth_media_list *l, const int32_t *order, int32_t n_order,
                           const int32_t *ids, size_t n_ids, hearth_image_input **out, int32_t *n_out,
                           hearth_api_err *e) {
    *out = NULL;
    *n_out = 0;
    if (n_order == 0) return true;
    const hearth_vision_info *in = hearth_vision_get_info(s->vision);
    hearth_image_input *im = calloc((size_t)n_order, sizeof *im);
    float *px = malloc(3 * (size_t)in->image_size * (size_t)in->image_size * sizeof(float));
    if (!im || !px) {
        free(im), free(px);
        return hearth_api_oom(e);
    }
    /* the runs of soft tokens, one per marker, in order */
    int32_t k = 0;
    for (size_t t = 0; t < n_ids; t++) {
        if (ids[t] != in->image_id || (t > 0 && ids[t - 1] == in->image_id)) continue;
        size_t r = t;
        while (r < n_ids && ids[r] == in->image_id) r++;
        if (k >= n_order || (int64_t)(r - t) != in->mm_tokens) {
            k = -1;
            break;
        }
        im[k].pos = (int32_t)t;
        im[k].n = in->mm_tokens;
        im[k].width = in->n_embd_out;
        k++;
    }
    bool ok = k == n_order;
    if (!ok)
        hearth_api_fail(e, HEARTH_E_INVALID, "invalid_value", "messages",
                        "the prompt's image tokens do not line up with its images (does the text spell out image "
                        "tokens?)");
    for (int32_t i = 0; ok && i < n_order; i++) {
        const hearth_media_item *it = &l->v[order[i]];
        hearth_image img = {0};
        float *rows = malloc((size_t)in->mm_tokens * (size_t)in->n_embd_out * sizeof(float));
        ok = rows != NULL || hearth_api_oom(e);
        ok = ok && item_image(s, it, &img, e);
        if (ok && hearth_vision_preprocess(s->vision, img.rgb, img.w, img.h, px)) ok = hearth_api_oom(e);
        if (ok) {
            uint64_t size = (uint64_t)(uint32_t)img.w << 32 | (uint32_t)img.h;
            im[i].digest = XXH3_64bits_withSeed(img.rgb, (size_t)img.w * (size_t)img.h * 3, size);
            pthread_mutex_lock(&s->vision_mu);
            hearth_status st = hearth_vision_encode(s->vision, s->vision_pool, px, rows);
            pthread_mutex_unlock(&s->vision_mu);
            if (st) ok = hearth_api_oom(e);
        }
        hearth_image_fini(&img);
        im[i].rows = rows;
    }
    free(px);
    if (!ok) {
        hearth_vprompt_free(im, n_order);
        return false;
    }
    *out = im;
    *n_out = n_order;
    return true;
}
